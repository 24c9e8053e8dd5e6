//! Loading the queue, loss, medium and processing kinds of
//! `docs/queues-and-links.md`, and one malformed table per check.

use pep_core::host::HostCost;
use pep_core::queue::QueueLimit;
use pep_core::{Duration, KindFilter};

use super::tests::{base_plus, base_with, expect, load};
use super::*;

/// `BASE` with the second link's (r-b) extra fields.
fn on_link(fields: &str) -> String {
    base_with("delay = \"10ms\"", &format!("delay = \"10ms\"\n{fields}"))
}

#[test]
fn red_auto_and_explicit() {
    let s = load(&on_link(
        "queue = { kind = \"red\", auto = true, limit = 500 }",
    ))
    .unwrap();
    let QueueSpec::Red(auto) = s.links[1].forward.queue.clone() else {
        panic!("{:?}", s.links[1].forward.queue)
    };
    let r = &auto;
    assert_eq!((r.min_th, r.max_th, r.q_w), (None, None, None));
    assert_eq!(r.limit, QueueLimit::Packets(500));
    assert!(r.gentle && r.wait && r.bytes);
    assert_eq!((r.max_p, r.mean_pktsize), (0.1, 500));
    assert_eq!(r.target_delay, Duration::from_millis(5));

    let text = on_link(
        "queue = { kind = \"red\", min_th = 5, max_th = 15, q_w = 0.002, max_p = 0.02, \
         gentle = false, wait = false, bytes = false, mean_pktsize = \"1000B\" }",
    );
    let s = load(&text).unwrap();
    assert_eq!(
        s.links[1].reverse.queue,
        QueueSpec::Red(RedSpec {
            limit: QueueLimit::Packets(100),
            min_th: Some(5.0),
            max_th: Some(15.0),
            q_w: Some(0.002),
            max_p: 0.02,
            gentle: false,
            wait: false,
            bytes: false,
            mean_pktsize: 1000,
            target_delay: Duration::from_millis(5),
        })
    );
    // The built parameters: automatic values filled in from the link.
    let p = crate::build::red_params(&auto, pep_core::Rate::mbps(100), Duration::from_millis(250));
    assert_eq!((p.min_th, p.max_th), (62.5, 187.5));
    assert_eq!(format!("{:.2e}", p.q_w), "5.33e-6");
}

#[test]
fn red_checks() {
    let t = on_link("queue = { kind = \"red\", auto = true, min_th = 5 }");
    expect(&t, "link[1].queue.auto", "queue =", "remove min_th");
    let t = on_link("queue = { kind = \"red\" }");
    expect(&t, "link[1].queue.min_th", "queue =", "auto = true");
    let t = on_link("queue = { kind = \"red\", min_th = 15, max_th = 5 }");
    expect(&t, "link[1].queue.max_th", "queue =", "must exceed min_th");
    let t = on_link("queue = { kind = \"red\", auto = true, max_p = 2 }");
    expect(&t, "link[1].queue.max_p", "queue =", "within (0, 1]");
    let t = on_link("queue = { kind = \"red\", min_th = 5, q_w = 0 }");
    expect(&t, "link[1].queue.q_w", "queue =", "within (0, 1]");
    let t = on_link("queue = { kind = \"red\", auto = true, thresh = 5 }");
    expect(&t, "link[1].queue.thresh", "queue =", "unknown field");
}

#[test]
fn priority_and_two_class() {
    let s = load(&on_link("queue = { kind = \"priority\", limit = 20 }")).unwrap();
    assert_eq!(
        s.links[1].forward.queue,
        QueueSpec::Priority {
            classify: ClassifySpec::AcksFirst,
            limit: QueueLimit::Packets(20),
        }
    );
    let text = base_plus(
        "[[flow]]\nname = \"g\"\nfrom = \"a\"\nto = \"b\"\ncount = 2\n",
    )
    .replacen(
        "delay = \"10ms\"",
        "delay = \"10ms\"\nqueue = { kind = \"priority\", classify = \"flow\", flows = { g = 0, f1 = 1 } }",
        1,
    );
    let s = load(&text).unwrap();
    assert_eq!(
        s.links[1].forward.queue,
        QueueSpec::Priority {
            classify: ClassifySpec::Flow {
                bands: 3,
                flows: vec![(0, 1), (1, 0), (2, 0)],
            },
            limit: QueueLimit::Packets(100),
        }
    );
    let s = load(&on_link(
        "queue = { kind = \"two-class\", data_share = 0.9 }",
    ))
    .unwrap();
    assert_eq!(
        s.links[1].forward.queue,
        QueueSpec::TwoClass {
            data_weight: 900_000,
            ack_weight: 100_000,
            limit: QueueLimit::Packets(100),
        }
    );
    // A direction refines the link's table (same kind).
    let text = on_link(
        "queue = { kind = \"two-class\", data_share = 0.9 }\n[link.reverse]\nqueue = { data_share = 0.1 }",
    );
    let s = load(&text).unwrap();
    assert!(matches!(
        s.links[1].reverse.queue,
        QueueSpec::TwoClass {
            data_weight: 100_000,
            ..
        }
    ));

    let t = on_link("queue = { kind = \"two-class\", data_share = 1.0 }");
    expect(&t, "link[1].queue.data_share", "queue =", "within (0, 1)");
    let t = on_link("queue = { kind = \"priority\", classify = \"size\" }");
    expect(
        &t,
        "link[1].queue.classify",
        "queue =",
        "unknown classifier",
    );
    let t = on_link("queue = { kind = \"priority\", classify = \"flow\", flows = { zz = 0 } }");
    expect(&t, "link[1].queue.flows", "queue =", "unknown flow \"zz\"");
    let t = on_link(
        "queue = { kind = \"priority\", classify = \"flow\", bands = 1, flows = { f1 = 1 } }",
    );
    expect(
        &t,
        "link[1].queue.bands",
        "queue =",
        "above every listed band",
    );
    // Without `bands`, band 15 leaves no band for the unlisted flows.
    let t = on_link("queue = { kind = \"priority\", classify = \"flow\", flows = { f1 = 15 } }");
    expect(
        &t,
        "link[1].queue.flows",
        "queue =",
        "band 15 is too high for the default band count",
    );
    let ok =
        "queue = { kind = \"priority\", classify = \"flow\", bands = 16, flows = { f1 = 15 } }";
    assert!(load(&on_link(ok)).is_ok());
    let t = on_link("queue = { kind = \"priority\", bands = 3 }");
    expect(
        &t,
        "link[1].queue.classify",
        "queue =",
        "use classify = \"flow\"",
    );
}

#[test]
fn loss_kinds_and_applies_to() {
    let s = load(&on_link(
        "loss = { kind = \"bernoulli\", p = 0.1, applies_to = \"acks\" }",
    ))
    .unwrap();
    assert_eq!(
        s.links[1].forward.loss,
        LossSpec::Bernoulli {
            p: 0.1,
            applies_to: KindFilter::Acks,
        }
    );
    let s = load(&on_link(
        "loss = { kind = \"gilbert-elliott\", p = 0.01, r = 0.5, loss_good = 0.001, \
         loss_bad = 0.3, applies_to = \"data\" }",
    ))
    .unwrap();
    assert_eq!(
        s.links[1].forward.loss,
        LossSpec::GilbertElliott {
            p: 0.01,
            r: 0.5,
            loss_good: 0.001,
            loss_bad: 0.3,
            applies_to: KindFilter::Data,
        }
    );
    let s = load(&on_link(
        "loss = { kind = \"gilbert-elliott\", mean_loss = 0.01, mean_burst = 4 }",
    ))
    .unwrap();
    let LossSpec::GilbertElliott {
        p,
        r,
        loss_good,
        loss_bad,
        applies_to,
    } = s.links[1].forward.loss
    else {
        panic!()
    };
    assert!((r - 0.25).abs() < 1e-15 && (p - 0.0025 / 0.99).abs() < 1e-15);
    assert_eq!(
        (loss_good, loss_bad, applies_to),
        (0.0, 1.0, KindFilter::All)
    );

    let t = on_link("loss = { kind = \"gilbert-elliott\", p = 0.1 }");
    expect(&t, "link[1].loss", "loss =", "either p and r");
    let t = on_link("loss = { kind = \"gilbert-elliott\", p = 0.1, r = 1.5 }");
    expect(&t, "link[1].loss.r", "loss =", "within [0, 1]");
    let t = on_link("loss = { kind = \"gilbert-elliott\", mean_loss = 0.6, mean_burst = 1 }");
    expect(&t, "link[1].loss.mean_loss", "loss =", "no chain has");
    let t = on_link(
        "loss = { kind = \"gilbert-elliott\", mean_loss = 0.1, mean_burst = 3, loss_bad = 0.5 }",
    );
    expect(
        &t,
        "link[1].loss.mean_loss",
        "loss =",
        "give p and r instead",
    );
    let t = on_link("loss = { kind = \"bernoulli\", p = 0.1, applies_to = \"syn\" }");
    expect(&t, "link[1].loss.applies_to", "loss =", "unknown variant");
}

#[test]
fn half_duplex_medium() {
    let s = load(&on_link("medium = \"half-duplex\"")).unwrap();
    assert_eq!(
        s.links[1].medium,
        MediumSpec::HalfDuplex {
            backoff: Duration::ZERO
        }
    );
    assert_eq!(s.links[0].medium, MediumSpec::FullDuplex);
    let s = load(&on_link(
        "medium = { kind = \"half-duplex\", backoff = \"50us\" }",
    ))
    .unwrap();
    assert_eq!(
        s.links[1].medium,
        MediumSpec::HalfDuplex {
            backoff: Duration::from_micros(50)
        }
    );
    let t = on_link("medium = \"half-duplex\"\n[link.reverse]\nrate = \"64kbps\"");
    expect(&t, "link[1].medium", "medium =", "one rate");
    let t = on_link("medium = \"simplex\"");
    expect(&t, "link[1].medium.kind", "medium =", "unknown kind");
}

#[test]
fn node_processing_cost() {
    let text = base_with(
        "name = \"b\"",
        "name = \"b\"\nprocessing = { data = \"100us\", ack = \"20us\", jitter = \"5us\" }",
    );
    let s = load(&text).unwrap();
    assert_eq!(
        s.nodes[2].processing,
        Some(HostCost {
            data: Duration::from_micros(100),
            ack: Duration::from_micros(20),
            jitter: Duration::from_micros(5),
        })
    );
    assert_eq!(s.nodes[0].processing, None);
    let text = base_with(
        "name = \"b\"",
        "name = \"b\"\nprocessing = { data = \"0s\" }",
    );
    assert_eq!(load(&text).unwrap().nodes[2].processing, None);
    let text = base_with(
        "name = \"b\"",
        "name = \"b\"\nprocessing = { cpu = \"1ms\" }",
    );
    let e = load(&text).unwrap_err().to_string();
    assert!(e.contains("unknown field `cpu`"), "{e}");
}

/// `BASE` with a host `c` and a link r-c (link[2]) off f1's path, that
/// link's extra fields `fields`, and `flow` added to f1.
fn off_path(fields: &str, flow: &str) -> String {
    let link = format!(
        "[[node]]\nname = \"c\"\n[[link]]\nbetween = [\"r\", \"c\"]\nrate = \"1Mbps\"\n\
         delay = \"1ms\"\n{fields}\n\n[[flow]]\nname = \"f1\"\n{flow}"
    );
    base_with("[[flow]]\nname = \"f1\"\n", &link)
}

#[test]
fn scripted_drop_segments_stay_within_the_sequence_space() {
    let drop =
        |segs: &str| format!("loss = {{ kind = \"drop\", flow = \"f1\", segments = {segs} }}");
    // mss 1460: segment 2941759 starts at 4294966680, the last below 2^32.
    assert!(load(&on_link(&drop("[3, 2941759]"))).is_ok());
    let t = on_link(&drop("[3, 2941760]"));
    let d = expect(
        &t,
        "link[1].loss.segments[1]",
        "loss =",
        "32-bit sequence space",
    );
    assert!(d.message.contains("(2^32 bytes)"), "{d}");
    assert!(d.message.contains("segments go up to 2941759"), "{d}");
    // The fuzzer's: it would have dropped segment 1 (mss 1000).
    let fwd = format!("[link.forward]\n{}", drop("[536870913]"));
    let t = on_link(&fwd) + "tcp = { mss = \"1000B\" }\n";
    let field = "link[1].forward.loss.segments[0]";
    let d = expect(&t, field, "loss =", "32-bit sequence space");
    assert!(d.message.contains("= 536870912000"), "{d}");
    // (n - 1) x mss beyond even 64 bits.
    let t = on_link(&drop("[9223372036854775807]"));
    expect(
        &t,
        "link[1].loss.segments[0]",
        "loss =",
        "32-bit sequence space",
    );
}

#[test]
fn scripted_drop_must_sit_where_its_flows_data_goes() {
    let drop = "loss = { kind = \"drop\", flow = \"f1\", segments = [3] }";
    // On the link: the forward direction carries f1's data.
    assert!(load(&on_link(drop)).is_ok());
    assert!(load(&on_link(&format!("[link.forward]\n{drop}"))).is_ok());
    // The ACK direction only.
    let t = on_link(&format!("[link.reverse]\n{drop}"));
    let d = expect(&t, "link[1].reverse.loss.flow", "loss =", "sends no data");
    assert_eq!(
        d.message,
        "flow \"f1\" sends no data over link \"r-b\" from \"b\" to \"r\", so the drop would \
         never match (its data goes a -> r -> b)"
    );
    // On the link, but the forward direction has its own loss.
    let t = on_link(&format!("{drop}\n[link.forward]\nloss = \"none\""));
    expect(&t, "link[1].loss.flow", "loss =", "from \"b\" to \"r\"");
    // A link off the path.
    let t = off_path(drop, "");
    let says = "no data of flow \"f1\" crosses link \"r-c\"";
    let d = expect(&t, "link[2].loss.flow", "loss =", says);
    assert!(d.message.contains("(its data goes a -> r -> b)"), "{d}");
    // A bidirectional flow's data goes both ways, and a drop on the way
    // back drops the reverse data's segment (same flow, same numbering).
    let t = on_link(&format!("[link.reverse]\n{drop}")) + "reverse = \"bulk\"\n";
    let s = load(&t).unwrap();
    assert!(matches!(
        s.links[1].reverse.loss,
        LossSpec::Drop { flow: 0, .. }
    ));
    let t = off_path(drop, "reverse = \"bulk\"\n");
    let d = expect(&t, "link[2].loss.flow", "loss =", says);
    let path = "(its data goes a -> r -> b, and back b -> r -> a)";
    assert!(d.message.contains(path), "{d}");
}

#[test]
fn gilbert_elliott_means_must_be_finite() {
    let ge = |mean_loss: &str, mean_burst: &str| {
        on_link(&format!(
            "loss = {{ kind = \"gilbert-elliott\", mean_loss = {mean_loss}, \
             mean_burst = {mean_burst} }}"
        ))
    };
    let says = "must be a finite number, got";
    let d = expect(
        &ge("0.01", "inf"),
        "link[1].loss.mean_burst",
        "loss =",
        says,
    );
    assert!(d.message.ends_with("got inf"), "{d}");
    let d = expect(&ge("nan", "4"), "link[1].loss.mean_loss", "loss =", says);
    assert!(d.message.ends_with("got NaN"), "{d}");
    expect(
        &ge("0.01", "-nan"),
        "link[1].loss.mean_burst",
        "loss =",
        says,
    );
    // Finite, but p underflows to 0: the chain would never enter Bad.
    let t = ge("1e-320", "1e10");
    expect(
        &t,
        "link[1].loss.mean_loss",
        "loss =",
        "never changes state",
    );
}

#[test]
fn red_thresholds_must_stay_finite() {
    let red = |fields: &str| on_link(&format!("queue = {{ kind = \"red\", {fields} }}"));
    let t = red("min_th = 1e308");
    let says = "the default max_th, 3 x min_th = inf, is not a finite number";
    expect(&t, "link[1].queue.min_th", "queue =", says);
    let t = red("min_th = inf");
    let says = "must be positive and finite, got inf";
    expect(&t, "link[1].queue.min_th", "queue =", says);
    let t = red("min_th = 5, max_th = inf");
    expect(
        &t,
        "link[1].queue.max_th",
        "queue =",
        "must be finite, got inf",
    );
    // Bytes mode (the default) scales them by mean_pktsize (500B).
    let t = red("min_th = 1e300, max_th = 1e306");
    let says = "max_th x mean_pktsize = 1e306 x 500B, which is not a finite number";
    expect(&t, "link[1].queue.max_th", "queue =", says);
    assert!(load(&red("min_th = 1e300, max_th = 1e306, bytes = false")).is_ok());
}

#[test]
fn a_byte_limit_must_hold_one_data_packet_of_each_flow_crossing() {
    let droptail = |limit: &str| format!("queue = {{ kind = \"droptail\", limit = \"{limit}\" }}");
    // mss 1460 + 40 B of headers.
    assert!(load(&on_link(&droptail("1500B"))).is_ok());
    let t = on_link(&droptail("1499B"));
    let d = expect(&t, "link[1].queue.limit", "queue =", "cannot hold");
    assert_eq!(
        d.message,
        "limit 1499B cannot hold one 1500B packet of flow \"f1\" (mss 1460B + 40B header), \
         whose data crosses link \"r-b\" from \"r\" to \"b\""
    );
    // Only pure ACKs (40 B) cross the reverse direction.
    let ok = on_link(&format!("[link.reverse]\n{}", droptail("100B")));
    assert!(load(&ok).is_ok());
    // Every kind's limit (each band's).
    for q in [
        "{ kind = \"red\", auto = true, limit = \"1KB\" }",
        "{ kind = \"priority\", limit = \"1KB\" }",
        "{ kind = \"two-class\", data_share = 0.5, limit = \"1KB\" }",
        "{ kind = \"sad\", limit = \"1KB\" }",
        "{ kind = \"sad\", data_share = 0.5, limit = \"1KB\" }",
    ] {
        let t = on_link(&format!("[link.forward]\nqueue = {q}"));
        let says = "limit 1000B cannot hold";
        expect(&t, "link[1].forward.queue.limit", "queue =", says);
    }
    // The fuzzer's: from [defaults.queue], reported once, at the default.
    let t = base_plus("[defaults.tcp]\nmss = \"1000B\"\n[defaults.queue]\nlimit = \"1039B\"\n");
    let d = expect(
        &t,
        "defaults.queue.limit",
        "[defaults.queue]",
        "cannot hold",
    );
    let says = "limit 1039B cannot hold one 1040B packet of flow \"f1\" (mss 1000B + 40B header)";
    assert!(d.message.starts_with(says), "{d}");
    assert_eq!(load(&t).unwrap_err().diagnostics().len(), 1);
    // The header the simulator puts on the wire (the linux profile's 52 B).
    let t = on_link(&droptail("1499B")) + "tcp = { profile = \"linux\" }\n";
    expect(
        &t,
        "link[1].queue.limit",
        "queue =",
        "(mss 1448B + 52B header)",
    );
    // A finite flow smaller than one segment sends one smaller packet.
    let finite = |size: &str| {
        on_link(&droptail("600B"))
            + &format!("source = {{ kind = \"finite\", size = \"{size}\" }}\n")
    };
    assert!(load(&finite("500B")).is_ok());
    let says = "(all its 700B of data + 40B header)";
    expect(&finite("700B"), "link[1].queue.limit", "queue =", says);
}
