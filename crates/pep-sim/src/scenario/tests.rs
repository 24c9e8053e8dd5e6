//! Loading tests: the model built from good files, and one malformed
//! scenario per validation error, asserting the field path and the line.

use std::path::{Path, PathBuf};

use pep_core::queue::QueueLimit;
use pep_core::{Duration, Rate};

use super::*;

/// Three nodes in a line, one flow; mutated by each test.
pub(crate) const BASE: &str = r#"[scenario]
name = "t"
duration = "10s"

[[node]]
name = "a"
[[node]]
name = "r"
kind = "router"
[[node]]
name = "b"

[[link]]
between = ["a", "r"]
rate = "10Mbps"
delay = "1ms"

[[link]]
between = ["r", "b"]
rate = "1Mbps"
delay = "10ms"

[[flow]]
name = "f1"
from = "a"
to = "b"
"#;

pub(super) fn load(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::from_toml_str(text, "t.toml")
}

/// `BASE` with `from` replaced by `to` (which must occur).
pub(crate) fn base_with(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "BASE has no {from:?}");
    BASE.replacen(from, to, 1)
}

/// `BASE` with `b` a router and a host `c` behind it that `f1` goes to,
/// so a split pair can sit on `["r", "b"]`, between the flow's ends.
pub(crate) fn two_routers() -> String {
    base_with(
        "name = \"b\"\n",
        "name = \"b\"\nkind = \"router\"\n[[node]]\nname = \"c\"\n",
    )
    .replacen(
        "[[flow]]",
        "[[link]]\nbetween = [\"b\", \"c\"]\nrate = \"10Mbps\"\ndelay = \"1ms\"\n\n[[flow]]",
        1,
    )
    .replacen("to = \"b\"", "to = \"c\"", 1)
}

/// `BASE` with `extra` appended.
pub(super) fn base_plus(extra: &str) -> String {
    format!("{BASE}{extra}")
}

/// The 1-based line of the first occurrence of `needle`.
pub(super) fn line_of(text: &str, needle: &str) -> usize {
    let at = text.find(needle).unwrap_or_else(|| panic!("no {needle:?}"));
    text[..at].matches('\n').count() + 1
}

/// The diagnostics of an invalid scenario.
fn diags(text: &str) -> Vec<Diagnostic> {
    match load(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.diagnostics().to_vec(),
    }
}

/// The one diagnostic for `field`, checking it sits on the line of `needle`
/// and that its message contains `says`.
#[track_caller]
pub(super) fn expect(text: &str, field: &str, needle: &str, says: &str) -> Diagnostic {
    let all = diags(text);
    let d = all
        .iter()
        .find(|d| d.field == field)
        .unwrap_or_else(|| panic!("no error for {field:?} in {all:#?}"));
    assert_eq!(d.origin, "t.toml");
    let line = d.pos.map(|p| p.line);
    assert_eq!(line, Some(line_of(text, needle)), "{d}");
    assert!(d.message.contains(says), "{d}\nshould say {says:?}");
    d.clone()
}

#[test]
fn base_loads_with_builtin_defaults() {
    let s = load(BASE).unwrap();
    assert_eq!(s.duration, Duration::from_secs(10));
    assert_eq!(s.seed, 1);
    assert_eq!(s.nodes[1].kind, NodeKind::Router);
    assert_eq!(s.nodes[0].kind, NodeKind::Host);
    assert_eq!(s.links[0].name, "a-r");
    assert_eq!((s.links[1].a, s.links[1].b), (1, 2));
    let f = &s.flows[0];
    assert_eq!((f.src, f.dst, f.start), (0, 2, Duration::ZERO));
    assert_eq!(f.source, SourceSpec::Bulk);
    assert_eq!(
        f.tcp,
        TcpSpec {
            profile: None,
            cc: CcKind::NewReno,
            recovery: None,
            mss: 1460,
            header: 40,
            init_cwnd: 10,
            min_rto: Duration::from_millis(200),
            initial_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            clock_granularity: Duration::from_millis(1),
            handshake: false,
            max_burst: None,
            pacing: false,
            max_pacing_rate: None,
            sndbuf: None,
            rack: false,
        }
    );
    assert_eq!(
        f.sink,
        SinkSpec {
            rwnd: 1 << 20,
            ack: AckSpec::Every,
            sack: false,
            app: Default::default(),
        }
    );
    let q = QueueSpec::DropTail {
        limit: QueueLimit::Packets(100),
    };
    for l in &s.links {
        assert_eq!(l.forward, l.reverse);
        assert_eq!(l.forward.queue, q);
        assert_eq!(l.forward.loss, LossSpec::None);
    }
    assert_eq!(s.output.interval, Duration::from_secs(1));
    assert_eq!(s.output.sample, Duration::from_millis(100));
    assert_eq!(s.output.series, Series::ALL.to_vec());
    assert_eq!(s.routes.next_hop(0, 2), Some((0, Dir::Forward)));
    assert_eq!(s.routes.next_hop(1, 2), Some((1, Dir::Forward)));
    assert_eq!(s.routes.next_hop(2, 0), Some((1, Dir::Reverse)));
}

#[test]
fn builtin_default_is_the_geo_path() {
    let s = Scenario::builtin_default();
    assert_eq!(s.name, "geo-default");
    assert_eq!(s.duration, Duration::from_secs(60));
    let b = &s.links[s.link_index("r1-receiver").unwrap()];
    assert_eq!(b.forward.rate, Rate::mbps(10));
    assert_eq!(b.forward.delay, Duration::from_millis(250));
    assert_eq!(
        b.forward.queue,
        QueueSpec::DropTail {
            limit: QueueLimit::Packets(600)
        }
    );
    let f = &s.flows[0];
    assert_eq!((f.tcp.mss, f.tcp.header, f.tcp.init_cwnd), (1000, 40, 2));
    assert_eq!(f.sink.rwnd, 2 << 20);
    // The window must not limit: it exceeds BDP + bottleneck queue.
    let rtt = Duration::from_millis(2 * (1 + 250));
    let bdp = b.forward.rate.bytes_in(rtt);
    assert!(u64::from(f.sink.rwnd) > bdp + 600 * 1040);
    assert_eq!(Scenario::builtin_default().with_seed(9).seed, 9);
}

#[test]
fn every_file_in_scenarios_loads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files = Vec::new();
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    // Experiment files (pep-exp) live beside the scenarios they vary.
    let is_experiment = |f: &Path| {
        let text = std::fs::read_to_string(f).unwrap();
        text.lines().any(|l| l.trim() == "[experiment]")
    };
    for f in files.iter().filter(|f| !is_experiment(f)) {
        if let Err(e) = Scenario::load(f) {
            panic!("{e}");
        }
    }
}

#[test]
fn examples_mean_what_they_say() {
    let dir: PathBuf = [env!("CARGO_MANIFEST_DIR"), "../../scenarios/examples"]
        .iter()
        .collect();
    let d = Scenario::load(&dir.join("dumbbell.toml")).unwrap();
    assert_eq!(d.flows.len(), 50);
    assert_eq!(d.flows[11].name, "b.1");
    assert_eq!(d.flows[11].start, Duration::from_millis(120));
    // Every flow crosses the bottleneck.
    let bottleneck = d.link_index("bottleneck").unwrap();
    for f in &d.flows {
        let path = d.routes.path(f.src, f.dst).unwrap();
        assert_eq!(path.len(), 3);
        assert_eq!(path[1], (bottleneck, Dir::Forward));
    }

    let a = Scenario::load(&dir.join("asymmetric.toml")).unwrap();
    let l = &a.links[1];
    assert_eq!(l.forward.rate, Rate::mbps(8));
    assert_eq!(l.reverse.rate, Rate::kbps(64));
    assert_eq!(l.forward.delay, l.reverse.delay);
    assert_eq!(a.flows[0].sink.rwnd, 20_000);

    let s = Scenario::load(&dir.join("scripted-drops.toml")).unwrap();
    let drop = LossSpec::Drop {
        flow: 0,
        segments: vec![20, 22, 24],
    };
    assert_eq!(s.links[1].forward.loss, drop);
    assert_eq!(s.flows[0].source, SourceSpec::Finite { bytes: 100_000 });
}

#[test]
fn layering_defaults_links_directions_and_flows() {
    let text = base_with(
        "[[node]]\nname = \"a\"",
        r#"[defaults.tcp]
mss = "1000B"
[defaults.sink]
ack = { kind = "delayed", count = 3 }
[defaults.queue]
limit = "150KB"

[[node]]
name = "a""#,
    )
    .replacen(
        "delay = \"10ms\"",
        "delay = \"10ms\"\nqueue = { limit = 20 }\nloss = { kind = \"bernoulli\", p = 0.01 }\n[link.reverse]\nrate = \"64kbps\"\nloss = { p = 0.5 }\nqueue = { limit = \"5pkt\" }",
        1,
    ) + r#"tcp = { cc = "reno", init_cwnd = 1 }
sink = { rwnd = "64KiB", ack = { timeout = "40ms" } }
count = 3
start = "1s"
stagger = "500ms"
"#;
    let s = load(&text).unwrap();
    assert_eq!(
        s.links[0].forward.queue,
        QueueSpec::DropTail {
            limit: QueueLimit::Bytes(150_000)
        }
    );
    let l = &s.links[1];
    assert_eq!(
        l.forward.queue,
        QueueSpec::DropTail {
            limit: QueueLimit::Packets(20)
        }
    );
    assert_eq!(
        l.reverse.queue,
        QueueSpec::DropTail {
            limit: QueueLimit::Packets(5)
        }
    );
    assert_eq!(
        l.forward.loss,
        LossSpec::Bernoulli {
            p: 0.01,
            applies_to: pep_core::KindFilter::All
        }
    );
    assert_eq!(
        l.reverse.loss,
        LossSpec::Bernoulli {
            p: 0.5,
            applies_to: pep_core::KindFilter::All
        }
    );
    assert_eq!(
        (l.forward.rate, l.reverse.rate),
        (Rate::mbps(1), Rate::kbps(64))
    );
    assert_eq!(s.flows.len(), 3);
    let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["f1.0", "f1.1", "f1.2"]);
    assert_eq!(s.flows[2].start, Duration::from_secs(2));
    let f = &s.flows[1];
    assert_eq!(
        (f.tcp.cc, f.tcp.mss, f.tcp.init_cwnd),
        (CcKind::Reno, 1000, 1)
    );
    assert_eq!(f.sink.rwnd, 65_536);
    let ack = AckSpec::Delayed {
        count: 3,
        timeout: Duration::from_millis(40),
        tick: None,
    };
    assert_eq!(f.sink.ack, ack);
}

#[test]
fn shorthand_and_kind_replacement() {
    let text = base_plus(
        "source = { kind = \"finite\", size = \"1MiB\" }\nsink = { ack = \"delayed\" }\n",
    );
    let s = load(&text).unwrap();
    assert_eq!(s.flows[0].source, SourceSpec::Finite { bytes: 1 << 20 });
    let ack = AckSpec::Delayed {
        count: 2,
        timeout: Duration::from_millis(100),
        tick: None,
    };
    assert_eq!(s.flows[0].sink.ack, ack);
    // A different kind replaces the table below instead of refining it.
    let text = base_with(
        "delay = \"1ms\"",
        "delay = \"1ms\"\nloss = { kind = \"bernoulli\", p = 0.1 }\nforward = { loss = \"none\" }",
    );
    let s = load(&text).unwrap();
    assert_eq!(s.links[0].forward.loss, LossSpec::None);
    assert_eq!(
        s.links[0].reverse.loss,
        LossSpec::Bernoulli {
            p: 0.1,
            applies_to: pep_core::KindFilter::All
        }
    );
}

#[test]
fn dotted_keys_and_subtables_work() {
    // Tables made implicitly by dotted keys have no span in toml; they must
    // still load, and errors in them still name the field.
    let text = base_with(
        "delay = \"1ms\"",
        "delay = \"1ms\"\nloss.kind = \"bernoulli\"\nloss.p = 0.25\nforward.rate = \"2Mbps\"",
    ) + "tcp.cc = \"reno\"\nsink.ack.kind = \"delayed\"\n[flow.source]\nkind = \"finite\"\nsize = \"1KB\"\n";
    let s = load(&text).unwrap();
    assert_eq!(
        s.links[0].reverse.loss,
        LossSpec::Bernoulli {
            p: 0.25,
            applies_to: pep_core::KindFilter::All
        }
    );
    assert_eq!(s.links[0].forward.rate, Rate::mbps(2));
    assert_eq!(s.flows[0].tcp.cc, CcKind::Reno);
    assert!(matches!(s.flows[0].sink.ack, AckSpec::Delayed { .. }));
    assert_eq!(s.flows[0].source, SourceSpec::Finite { bytes: 1000 });
    let all = diags(&text.replace("p = 0.25", "p = 2.5"));
    assert_eq!(all[0].field, "link[0].loss.p");
}

// ---- One test per validation error ----

#[test]
fn toml_syntax_error() {
    let text = base_with("[[link]]", "[[link]");
    let all = diags(&text);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].field, "");
    assert_eq!(all[0].pos.map(|p| p.line), Some(line_of(&text, "[[link]")));
    assert!(
        all[0].message.contains("invalid table header"),
        "{}",
        all[0]
    );
}

#[test]
fn unknown_field_lists_the_valid_ones() {
    let text = base_with("rate = \"1Mbps\"", "rat = \"1Mbps\"");
    let d = expect(&text, "link[1].rat", "rat =", "unknown field `rat`");
    assert!(
        d.message.contains("`rate`") && d.message.contains("`between`"),
        "{d}"
    );
    let text = base_with("[scenario]", "[scenario]\nseeds = 3");
    expect(&text, "scenario.seeds", "seeds", "unknown field `seeds`");
    let text = base_plus("tcp = { ccc = \"reno\" }\n");
    expect(&text, "flow[0].tcp.ccc", "ccc", "expected one of `cc`");
    let text = base_with("[[node]]", "[nodes]\n[[node]]");
    expect(&text, "nodes", "[nodes]", "unknown field `nodes`");
}

#[test]
fn an_experiment_given_as_a_scenario_says_which_command_runs_it() {
    let text = "[experiment]\nname = \"x\"\nbase = \"b.toml\"\n";
    let e = Scenario::from_toml_str(text, "x.toml")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("x.toml"), "{e}");
    assert!(
        e.contains("this is an experiment") && e.contains("pep sim sweep"),
        "{e}"
    );
    // A scenario with a stray [experiment] is refused by field as before.
    let text = base_with("[scenario]", "[experiment]\n[scenario]");
    expect(
        &text,
        "experiment",
        "[experiment]",
        "unknown field `experiment`",
    );
}

#[test]
fn bad_unit() {
    let text = base_with("rate = \"1Mbps\"", "rate = \"1MB/s\"");
    let d = expect(&text, "link[1].rate", "1MB/s", "bytes per second");
    assert_eq!(
        d.to_string(),
        format!(
            "t.toml:{}:8: link[1].rate: expected a rate like \"10Mbps\" or \"64kbit/s\", got \
             \"1MB/s\": that is bytes per second; rates are in bits per second (8Mbps)",
            line_of(&text, "1MB/s")
        )
    );
    let text = base_with("delay = \"1ms\"", "delay = 1");
    expect(
        &text,
        "link[0].delay",
        "delay = 1",
        "bare number is ambiguous",
    );
    let text = base_plus("tcp = { mss = 1460 }\n");
    expect(
        &text,
        "flow[0].tcp.mss",
        "mss",
        "expected a size like \"1500B\"",
    );
    let text = base_plus("sink = { rwnd = \"64kb\" }\n");
    expect(&text, "flow[0].sink.rwnd", "rwnd", "lowercase b means bits");
    let text = base_plus("[output]\nseries = [\"goodput\", \"cwnds\"]\n");
    expect(
        &text,
        "output.series[1]",
        "cwnds",
        "unknown variant `cwnds`",
    );
}

#[test]
fn missing_required_field() {
    let text = base_with("to = \"b\"\n", "");
    expect(&text, "flow[0]", "[[flow]]", "missing field `to`");
    let text = base_with("rate = \"1Mbps\"\n", "");
    expect(
        &text,
        "link[1].rate",
        "between = [\"r\", \"b\"]",
        "missing field `rate`",
    );
    let text = base_with("delay = \"1ms\"\n", "forward = { delay = \"1ms\" }\n");
    expect(
        &text,
        "link[0].delay",
        "between = [\"a\", \"r\"]",
        "for the reverse direction",
    );
    let text = base_with("duration = \"10s\"\n", "");
    expect(&text, "scenario", "[scenario]", "missing field `duration`");
    let text = base_plus("[[link]]\nbetween = [\"a\", \"b\"]\nrate = \"1Mbps\"\ndelay = \"1ms\"\nloss = { p = 0.1 }\n");
    expect(&text, "link[2].loss", "loss =", "missing field `kind`");
}

#[test]
fn unknown_node_name() {
    let text = base_with("between = [\"r\", \"b\"]", "between = [\"r\", \"c\"]");
    expect(
        &text,
        "link[1].between[1]",
        "\"c\"",
        "unknown node \"c\"; nodes are: a, r, b",
    );
    let text = base_with("from = \"a\"", "from = \"x\"");
    expect(&text, "flow \"f1\".from", "\"x\"", "unknown node \"x\"");
}

#[test]
fn duplicate_names() {
    let text = base_with("name = \"b\"", "name = \"a\"");
    expect(
        &text,
        "node[2].name",
        "name = \"a\"\n\n",
        "duplicate node name \"a\"",
    );
    let text = base_plus("[[flow]]\nname = \"f1\"\nfrom = \"b\"\nto = \"a\"\n");
    let all = diags(&text);
    let d = all.iter().find(|d| d.field == "flow \"f1\".name").unwrap();
    assert_eq!(d.pos.unwrap().line, text.lines().count() - 2);
    assert!(d.message.contains("duplicate flow name \"f1\""), "{d}");
    // A copy made by `count` collides with a written name.
    let text = base_with("name = \"f1\"", "name = \"g\"\ncount = 2")
        + "[[flow]]\nname = \"g.1\"\nfrom = \"b\"\nto = \"a\"\n";
    expect(
        &text,
        "flow \"g.1\".name",
        "name = \"g.1\"",
        "duplicate flow name \"g.1\"",
    );
    let text = base_with(
        "between = [\"r\", \"b\"]",
        "name = \"x\"\nbetween = [\"r\", \"b\"]",
    )
    .replacen(
        "between = [\"a\", \"r\"]",
        "name = \"x\"\nbetween = [\"a\", \"r\"]",
        1,
    );
    expect(
        &text,
        "link[1].name",
        "name = \"x\"\nbetween = [\"r\"",
        "duplicate link name",
    );
}

#[test]
fn link_to_itself() {
    let text = base_with("between = [\"a\", \"r\"]", "between = [\"a\", \"a\"]");
    expect(
        &text,
        "link[0].between[1]",
        "[\"a\", \"a\"]",
        "two different nodes",
    );
    let text = base_with("between = [\"a\", \"r\"]", "between = [\"a\"]");
    expect(
        &text,
        "link[0].between",
        "[\"a\"]",
        "expected two node names",
    );
}

#[test]
fn unreachable_destination() {
    // Make the middle node a host: hosts do not forward.
    let text = base_with("kind = \"router\"\n", "");
    let d = expect(&text, "flow \"f1\".to", "to = \"b\"", "unreachable");
    assert!(d.message.contains("\"b\" is unreachable from \"a\""), "{d}");
    // A node with no link at all.
    let text = base_plus(
        "[[node]]\nname = \"island\"\n[[flow]]\nname = \"f2\"\nfrom = \"a\"\nto = \"island\"\n",
    );
    expect(&text, "flow \"f2\".to", "to = \"island\"", "unreachable");
}

#[test]
fn negative_delay() {
    let text = base_with("delay = \"10ms\"", "delay = \"-10ms\"");
    expect(&text, "link[1].delay", "-10ms", "negative duration");
}

#[test]
fn zero_rate() {
    let text = base_with("rate = \"1Mbps\"", "rate = \"0Mbps\"");
    expect(&text, "link[1].rate", "\"0Mbps\"", "must be positive");
    let text = base_with(
        "delay = \"1ms\"",
        "delay = \"1ms\"\n[link.reverse]\nrate = \"0bps\"",
    );
    expect(&text, "link[0].reverse.rate", "0bps", "must be positive");
}

#[test]
fn zero_duration() {
    let text = base_with("duration = \"10s\"", "duration = \"0s\"");
    expect(&text, "scenario.duration", "0s", "must be positive");
    let text = base_plus("[output]\nsample = \"0ms\"\n");
    expect(&text, "output.sample", "\"0ms\"", "must be positive");
}

#[test]
fn rwnd_below_mss() {
    let text = base_plus("sink = { rwnd = \"1000B\" }\n");
    let d = expect(
        &text,
        "flow \"f1\".sink.rwnd",
        "rwnd",
        "smaller than the MSS",
    );
    let says = "rwnd (1000B) is smaller than the MSS (1460B)";
    assert!(d.message.contains(says), "{d}");
    // In the defaults: reported once, at the defaults, not per flow.
    let text =
        base_with("[[node]]", "[defaults.sink]\nrwnd = \"1KiB\"\n\n[[node]]") + "count = 5\n";
    let all = diags(&text);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0].field, "defaults.sink.rwnd");
    // Raising the MSS in a flow against the default rwnd points at the MSS.
    let text = base_with("[[node]]", "[defaults.sink]\nrwnd = \"32KiB\"\n\n[[node]]")
        + "tcp = { mss = \"60000B\" }\n";
    expect(
        &text,
        "flow \"f1\".tcp.mss",
        "mss = ",
        "smaller than the MSS",
    );
    let text = base_plus("sink = { rwnd = \"4GiB\" }\n");
    expect(&text, "flow \"f1\".sink.rwnd", "rwnd", "32 bits");
}

#[test]
fn delayed_ack_tick_and_zero_timeout() {
    let text =
        base_plus("sink = { ack = { kind = \"delayed\", timeout = \"0ms\", tick = \"200ms\" } }\n");
    let s = load(&text).unwrap();
    let ack = AckSpec::Delayed {
        count: 2,
        timeout: Duration::ZERO,
        tick: Some(Duration::from_millis(200)),
    };
    assert_eq!(s.flows[0].sink.ack, ack);
    // Without a tick, a zero timeout would ACK at once: refused, named.
    let text = base_plus("sink = { ack = { kind = \"delayed\", timeout = \"0ms\" } }\n");
    let e = load(&text).unwrap_err().to_string();
    assert!(e.contains("sink.ack.timeout"), "{e}");
}

#[test]
fn delayed_ack_count_zero() {
    let text = base_plus("sink = { ack = { kind = \"delayed\", count = 0 } }\n");
    expect(&text, "flow \"f1\".sink.ack.count", "ack =", "at least 1");
    let text = base_plus("sink = { ack = { kind = \"delayed\", cnt = 2 } }\n");
    expect(
        &text,
        "flow \"f1\".sink.ack.cnt",
        "ack =",
        "unknown field `cnt`",
    );
    let text = base_plus("sink = { ack = \"sometimes\" }\n");
    expect(
        &text,
        "flow \"f1\".sink.ack.kind",
        "ack =",
        "expected one of \"every\", \"delayed\"",
    );
}

#[test]
fn bernoulli_p_outside_unit_interval() {
    for p in ["1.5", "-0.1", "nan"] {
        let text = base_with(
            "delay = \"1ms\"",
            &format!("delay = \"1ms\"\nloss = {{ kind = \"bernoulli\", p = {p} }}"),
        );
        expect(&text, "link[0].loss.p", "loss =", "within [0, 1]");
    }
}

#[test]
fn drop_names_an_unknown_flow() {
    let loss = "delay = \"1ms\"\nloss = { kind = \"drop\", flow = \"f9\", segments = [3] }";
    let text = base_with("delay = \"1ms\"", loss);
    expect(&text, "link[0].loss.flow", "loss =", "unknown flow \"f9\"");
    // A group name is ambiguous.
    let text = base_with("delay = \"1ms\"", &loss.replace("f9", "f1")) + "count = 2\n";
    expect(
        &text,
        "link[0].loss.flow",
        "loss =",
        "name one of its copies, \"f1.0\" to \"f1.1\"",
    );
    let text = base_with(
        "delay = \"1ms\"",
        &loss.replace("f9", "f1").replace("[3]", "[0, 3]"),
    );
    expect(&text, "link[0].loss.segments", "loss =", "numbered from 1");
}

#[test]
fn flow_to_itself() {
    let text = base_with("to = \"b\"", "to = \"a\"");
    expect(&text, "flow \"f1\".to", "to = \"a\"", "two different nodes");
}

#[test]
fn other_checks() {
    let text = base_plus("start = \"10s\"\n");
    expect(
        &text,
        "flow \"f1\".start",
        "start",
        "but the scenario ends at 10s",
    );
    let text = base_plus("count = 0\n");
    expect(&text, "flow \"f1\".count", "count", "at least 1");
    let text = base_plus("count = 20000000\n");
    expect(&text, "flow \"f1\".count", "count", "too many flows");
    let text = base_with("name = \"b\"", "name = \"b c\"");
    expect(&text, "node[2].name", "b c", "invalid name");
    let text = base_plus("tcp = { min_rto = \"2s\", initial_rto = \"1s\" }\n");
    expect(
        &text,
        "flow \"f1\".tcp.initial_rto",
        "tcp =",
        "must lie within",
    );
    let text = base_plus("tcp = { cc = \"vegas\" }\n");
    expect(&text, "flow[0].tcp.cc", "vegas", "unknown variant `vegas`");
    let text = base_with("[[flow]]", "[defaults.queue]\nkind = \"codel\"\n[[flow]]");
    expect(
        &text,
        "defaults.queue.kind",
        "[defaults.queue]",
        "unknown kind \"codel\"",
    );
    let text = base_with("delay = \"1ms\"", "delay = \"1ms\"\nqueue = { limit = 0 }");
    expect(&text, "link[0].queue.limit", "queue =", "must be positive");
    let text = base_with("delay = \"1ms\"", "delay = \"1ms\"\nqueue = 50");
    expect(&text, "link[0].queue", "queue = 50", "expected a table");
    let text = base_with("[scenario]", "[scenario]\nseed = -1");
    expect(&text, "scenario.seed", "seed", "expected u64");
}

#[test]
fn several_errors_are_reported_in_source_order() {
    let text = base_with("rate = \"10Mbps\"", "rate = \"0bps\"")
        .replacen("to = \"b\"", "to = \"zz\"", 1)
        .replacen(
            "delay = \"10ms\"",
            "delay = \"10ms\"\nloss = { kind = \"bernoulli\", p = 2 }",
            1,
        );
    let all = diags(&text);
    let fields: Vec<&str> = all.iter().map(|d| d.field.as_str()).collect();
    assert_eq!(fields, ["link[0].rate", "link[1].loss.p", "flow \"f1\".to"]);
    let shown = ScenarioError::Invalid(all).to_string();
    assert_eq!(shown.lines().count(), 3);
    assert!(shown.starts_with("t.toml:15:8: link[0].rate: "), "{shown}");
}

#[test]
fn no_flows_is_an_error() {
    let text = &BASE[..BASE.find("[[flow]]").unwrap()];
    let all = diags(text);
    assert_eq!(all[0].field, "flow");
    assert!(all[0].message.contains("at least one flow"));
}

#[test]
fn unreadable_file_names_the_path() {
    let e = Scenario::load(Path::new("/nonexistent/x.toml")).unwrap_err();
    assert!(matches!(e, ScenarioError::Read { .. }));
    assert!(
        e.to_string()
            .starts_with("/nonexistent/x.toml: cannot read the scenario"),
        "{e}"
    );
}

#[test]
fn overrides_then_validate() {
    let mut doc = parse_document(BASE, "t.toml").unwrap();
    apply_override(&mut doc, "link[1].rate", "20Mbps".into()).unwrap();
    apply_override(&mut doc, "scenario.seed", 42.into()).unwrap();
    apply_override(&mut doc, "defaults.tcp.cc", "reno".into()).unwrap();
    let s = Scenario::from_table(doc, "t.toml").unwrap();
    assert_eq!(s.links[1].forward.rate, Rate::mbps(20));
    assert_eq!(s.seed, 42);
    assert_eq!(s.flows[0].tcp.cc, CcKind::Reno);

    // Errors after overrides have field paths; untouched fields keep their
    // line numbers, overridden ones have none.
    let bad = base_with("rate = \"1Mbps\"", "rate = \"0bps\"");
    let ov = [("link[0].rate".to_string(), toml::Value::from("0bps"))];
    let e = Scenario::from_toml_str_with(&bad, "t.toml", &ov).unwrap_err();
    let d = e.diagnostics();
    let kept = d.iter().find(|d| d.field == "link[1].rate").unwrap();
    assert_eq!(kept.pos.map(|p| p.line), Some(line_of(&bad, "0bps")));
    let new = d.iter().find(|d| d.field == "link[0].rate").unwrap();
    assert_eq!(new.pos, None);
    assert_eq!(
        new.to_string(),
        format!("t.toml: link[0].rate: {}", new.message)
    );

    let e = parse_document("[x", "t.toml").unwrap_err();
    assert_eq!(e.diagnostics()[0].pos, Some(Pos { line: 1, column: 3 }));
    let e = Scenario::from_toml_value(toml::Value::from(3), "v").unwrap_err();
    assert!(e.to_string().contains("expected a table"));
}
