//! Warnings: each setting that does nothing is named, at its field and
//! line, and the scenario still loads; clean scenarios have none.

use std::path::Path;

use super::tests::{base_plus, base_with, line_of, load, BASE};
use super::*;

/// The warnings of a valid scenario.
fn warnings(text: &str) -> Vec<Diagnostic> {
    match load(text) {
        Ok(sc) => sc.warnings.to_vec(),
        Err(e) => panic!("refused: {e}\n{text}"),
    }
}

/// The one warning, for `field`, on the line of `needle`, saying `says`.
#[track_caller]
fn expect_warning(text: &str, field: &str, needle: &str, says: &str) -> Diagnostic {
    let all = warnings(text);
    assert_eq!(all.len(), 1, "{all:#?}");
    let d = &all[0];
    assert_eq!(d.field, field, "{d}");
    assert_eq!(d.origin, "t.toml");
    assert_eq!(d.pos.map(|p| p.line), Some(line_of(text, needle)), "{d}");
    assert!(d.message.contains(says), "{d}\nshould say {says:?}");
    d.clone()
}

#[track_caller]
fn expect_none(text: &str) {
    let all = warnings(text);
    assert!(all.is_empty(), "{all:#?}\n{text}");
}

#[test]
fn a_sample_or_interval_longer_than_the_run() {
    let t = base_plus("\n[output]\nsample = \"20s\"\n");
    let d = expect_warning(&t, "output.sample", "sample =", "sampled once");
    let line = line_of(&t, "sample =");
    assert_eq!(
        d.to_string(),
        format!(
            "t.toml:{line}:10: output.sample: 20s is longer than the run (10s): queues, cwnd \
             and agents are sampled once, at 0s; use a sample of at most 10s"
        )
    );
    let t = base_plus("\n[output]\ninterval = \"11s\"\n");
    expect_warning(&t, "output.interval", "interval =", "a single bin");
    // The whole run is a deliberate choice: two samples, one bin.
    expect_none(&base_plus(
        "\n[output]\nsample = \"10s\"\ninterval = \"10s\"\n",
    ));
}

#[test]
fn rack_without_sack_recovery() {
    // NewReno, the built-in default.
    let t = base_plus("tcp.rack = true\n");
    let d = expect_warning(
        &t,
        "flow \"f1\".tcp.rack",
        "tcp.rack",
        "its recovery is newreno",
    );
    assert!(d.message.contains("(cc = \"newreno\")"), "{d}");
    let t = base_plus("tcp = { cc = \"cubic\", rack = true }\n");
    expect_warning(
        &t,
        "flow \"f1\".tcp.rack",
        "rack = true",
        "without sink.sack",
    );
    let t = base_plus("tcp = { recovery = \"reno\", rack = true }\nsink.sack = true\n");
    expect_warning(
        &t,
        "flow \"f1\".tcp.rack",
        "rack = true",
        "(recovery = \"reno\")",
    );
    // A default is warned about once, naming a flow it does nothing for.
    let t = base_with("[[node]]", "[defaults.tcp]\nrack = true\n\n[[node]]")
        + "\n[[flow]]\nname = \"f2\"\nfrom = \"a\"\nto = \"b\"\n";
    expect_warning(
        &t,
        "defaults.tcp.rack",
        "rack = true",
        "flow \"f1\"'s recovery",
    );
    // A default that one flow uses is no warning, whether that flow comes
    // before the one it does nothing for or after it.
    let sack = "tcp.cc = \"sack\"\nsink.sack = true\n";
    for (f1, f2) in [("", sack), (sack, "")] {
        let t = base_with("[[node]]", "[defaults.tcp]\nrack = true\n\n[[node]]") + f1;
        let t = t + "\n[[flow]]\nname = \"f2\"\nfrom = \"a\"\nto = \"b\"\n" + f2;
        expect_none(&t);
    }
    // With SACK recovery it acts; the linux profile's own RACK is not written.
    expect_none(&base_plus(
        "tcp = { cc = \"cubic\", rack = true }\nsink.sack = true\n",
    ));
    expect_none(&base_plus(
        "tcp = { cc = \"sack\", rack = true }\nsink.sack = true\n",
    ));
    expect_none(&base_plus("tcp.profile = \"linux\"\n"));
    expect_none(&base_plus("tcp.rack = false\n"));
}

/// `BASE` with `queue` on the 1 Mbit/s link.
fn red_on_link_1(queue: &str) -> String {
    base_with(
        "delay = \"10ms\"",
        &format!("delay = \"10ms\"\nqueue = {queue}"),
    )
}

#[test]
fn red_that_can_never_drop_early() {
    // Packets: min_th at the limit.
    let t = red_on_link_1("{ kind = \"red\", min_th = 10, bytes = false, limit = 10 }");
    let d = expect_warning(
        &t,
        "link[1].queue.min_th",
        "kind = \"red\"",
        "acts as DropTail",
    );
    assert!(
        d.message.contains("on link \"r-b\" from \"r\" to \"b\", min_th (10) is at or above the limit of 10 packets"),
        "{d}"
    );
    expect_none(&red_on_link_1(
        "{ kind = \"red\", min_th = 9, bytes = false, limit = 10 }",
    ));
    // Bytes mode, byte limit: 20 x 500 B against 10000 B.
    let t = red_on_link_1("{ kind = \"red\", min_th = 20, limit = \"10000B\" }");
    expect_warning(
        &t,
        "link[1].queue.min_th",
        "kind = \"red\"",
        "= 10000B) is at or above the limit of 10000B",
    );
    // Bytes mode, packet limit: 10 packets of at most 1500 B hold 15000 B.
    let t = red_on_link_1("{ kind = \"red\", min_th = 30, limit = 10 }");
    expect_warning(
        &t,
        "link[1].queue.min_th",
        "kind = \"red\"",
        "10 packets of at most 1500B",
    );
    expect_none(&red_on_link_1(
        "{ kind = \"red\", min_th = 29, limit = 10 }",
    ));
    // Automatic: 1 Mbit/s gives ns-2's floor of 5, 2500 B, over 1 packet.
    let t = red_on_link_1("{ kind = \"red\", auto = true, limit = 1 }");
    expect_warning(
        &t,
        "link[1].queue.auto",
        "kind = \"red\"",
        "the automatic min_th (5 x",
    );
    expect_none(&red_on_link_1("{ kind = \"red\", auto = true }"));
    // A default queue: once, though every link direction has it.
    let t = base_with(
        "[[node]]",
        "[defaults]\nqueue = { kind = \"red\", min_th = 10, bytes = false, limit = 10 }\n\n[[node]]",
    );
    expect_warning(
        &t,
        "defaults.queue.min_th",
        "kind = \"red\"",
        "acts as DropTail",
    );
    // A direction's lower limit under the link's thresholds.
    let t = red_on_link_1(
        "{ kind = \"red\", min_th = 10, bytes = false, limit = 50 }\nforward = { queue = { limit = 10 } }",
    );
    expect_warning(
        &t,
        "link[1].queue.min_th",
        "kind = \"red\"",
        "from \"r\" to \"b\"",
    );
}

#[test]
fn processing_where_no_flow_starts_or_ends() {
    let t = base_with(
        "kind = \"router\"\n",
        "kind = \"router\"\nprocessing = { data = \"1ms\" }\n",
    );
    expect_warning(
        &t,
        "node[1].processing",
        "name = \"r\"",
        "not to those it forwards",
    );
    // On a host with no flow either.
    let t = base_plus(
        "\n[[node]]\nname = \"idle\"\nprocessing = { ack = \"1ms\" }\n\
         [[link]]\nbetween = [\"idle\", \"r\"]\nrate = \"1Mbps\"\ndelay = \"1ms\"\n",
    );
    expect_warning(&t, "node[3].processing", "name = \"idle\"", "node \"idle\"");
    // At an endpoint it costs; an all-zero cost is no cost.
    expect_none(&base_with(
        "name = \"a\"\n",
        "name = \"a\"\nprocessing = { data = \"1ms\" }\n",
    ));
    expect_none(&base_with(
        "kind = \"router\"\n",
        "kind = \"router\"\nprocessing = { data = \"0s\" }\n",
    ));
}

#[test]
fn every_warning_at_once_in_source_order() {
    let t = base_with(
        "kind = \"router\"\n",
        "kind = \"router\"\nprocessing = { data = \"1ms\" }\n",
    ) + "tcp.rack = true\n\n[output]\nsample = \"100s\"\n";
    let fields: Vec<String> = warnings(&t).into_iter().map(|d| d.field).collect();
    assert_eq!(
        fields,
        [
            "node[1].processing",
            "flow \"f1\".tcp.rack",
            "output.sample"
        ]
    );
}

#[test]
fn warnings_never_make_two_scenarios_differ() {
    let t = base_plus("\n[output]\nsample = \"20s\"\n");
    let a = Scenario::from_toml_str(&t, "a.toml").unwrap();
    let b = Scenario::from_toml_str(&t, "b.toml").unwrap();
    assert_ne!(a.warnings[0], b.warnings[0]);
    assert_eq!(a, b);
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}

#[test]
fn overrides_keep_the_line_of_an_untouched_setting() {
    let t = base_plus("\n[output]\nsample = \"20s\"\n");
    let ov = [("link[0].rate".to_string(), toml::Value::from("20Mbps"))];
    let sc = Scenario::from_toml_str_with(&t, "t.toml", &ov).unwrap();
    let line = sc.warnings[0].pos.map(|p| p.line);
    assert_eq!(line, Some(line_of(&t, "sample =")));
    // An override that causes one has no line to point at.
    let ov = [("output.sample".to_string(), toml::Value::from("30s"))];
    let sc = Scenario::from_toml_str_with(&t, "t.toml", &ov).unwrap();
    assert_eq!(sc.warnings[0].field, "output.sample");
    assert_eq!(sc.warnings[0].pos, None);
}

#[test]
fn clean_scenarios_have_no_warnings() {
    assert!(Scenario::builtin_default().warnings.is_empty());
    expect_none(BASE);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut dirs = vec![root];
    let (mut checked, mut said) = (0, Vec::new());
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "toml") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            if !has_table_without(&text, "scenario", "experiment") {
                continue;
            }
            let sc = Scenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
            said.extend(sc.warnings.iter().map(|w| w.to_string()));
            checked += 1;
        }
    }
    assert!(checked >= 4, "{checked}");
    assert!(said.is_empty(), "{}", said.join("\n"));
}
