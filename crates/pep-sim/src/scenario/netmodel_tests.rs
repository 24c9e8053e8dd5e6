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
