//! The engine benchmark's workload: a dumbbell of N bulk flows.
//!
//! Each flow has its own sender and receiver host on 100 Mbit/s, 5 ms access
//! links; all share a 100 Mbit/s link with 250 ms one-way delay and a
//! 1000-packet DropTail queue; 1000-byte payloads plus 40-byte headers;
//! NewReno (or another `cc`, with the recovery it implies without SACK
//! blocks: NewReno's); receive windows large enough that the shared link, not the
//! window, limits the flows (so the run moves as many packets as it can).
//! With a mahimahi trace, the shared link's forward direction follows the
//! trace instead of 100 Mbit/s (a trace-driven bottleneck; one flow for
//! the trace-driven single flow).

use crate::scenario::{Scenario, ScenarioError};

/// Nodes of a dumbbell of `flows` flows: two routers, and a sender and a
/// receiver host per flow.
pub const fn node_count(flows: usize) -> usize {
    2 + 2 * flows
}

/// The most flows a dumbbell can have: a scenario's flow limit
/// ([`crate::scenario::MAX_FLOWS`]); routes and the engine have no node
/// limit of their own.
pub const MAX_FLOWS: usize = crate::scenario::MAX_FLOWS;

/// The longest run, in simulated seconds, the benchmark accepts: time is
/// kept in u64 nanoseconds (about 584 years); a billion seconds leaves
/// ample headroom.
pub const MAX_SECONDS: u64 = 1_000_000_000;

/// The dumbbell scenario's TOML text: the per-flow hosts, links and flow
/// written once in a `[[repeat]]`, so the text does not grow with `flows`.
pub fn dumbbell_toml(flows: usize, duration_s: u64) -> String {
    dumbbell_toml_cc(flows, duration_s, "newreno")
}

/// [`dumbbell_toml`] with the flows running congestion control `cc` (a
/// scenario `tcp.cc` name; the scenario's validation refuses others).
pub fn dumbbell_toml_cc(flows: usize, duration_s: u64, cc: &str) -> String {
    dumbbell_toml_trace(flows, duration_s, cc, None)
}

/// [`dumbbell_toml_cc`] whose shared link's forward direction (r1 -> r2)
/// follows the mahimahi trace at `trace` (a path as the scenario's
/// `trace` field takes it: relative to the scenario's directory, which for
/// this text is the working directory) when given.
pub fn dumbbell_toml_trace(flows: usize, duration_s: u64, cc: &str, trace: Option<&str>) -> String {
    let (mut name, mut label) = match cc {
        "newreno" => (format!("dumbbell-{flows}"), "NewReno".to_string()),
        _ => (format!("dumbbell-{flows}-{cc}"), cc.to_string()),
    };
    let mut forward = String::new();
    if let Some(t) = trace {
        name.push_str("-trace");
        label.push_str(" (trace-driven)");
        // A TOML basic string: quotes and backslashes in the path escaped.
        let quoted = toml::Value::String(t.to_string()).to_string();
        forward = format!("[link.forward]\ntrace = {quoted}\n");
    }
    format!(
        r#"[scenario]
name = "{name}"
description = "benchmark dumbbell: {flows} {label} flows over 100 Mbit/s, 250 ms"
duration = "{duration_s}s"
seed = 1

[defaults.tcp]
cc = "{cc}"
mss = "1000B"
header = "40B"
init_cwnd = 2
min_rto = "200ms"

[defaults.sink]
rwnd = "16MiB"

[defaults.queue]
limit = 100

[output]
series = []

[[node]]
name = "r1"
kind = "router"
[[node]]
name = "r2"
kind = "router"

[[link]]
between = ["r1", "r2"]
rate = "100Mbps"
delay = "250ms"
queue = {{ limit = 1000 }}
{forward}
# Staggered starts, 10 ms apart within 1 s, so flows do not synchronise
# their slow starts.
[[repeat]]
count = {flows}
[[repeat.node]]
name = "s{{i}}"
[[repeat.node]]
name = "d{{i}}"
[[repeat.link]]
between = ["s{{i}}", "r1"]
rate = "100Mbps"
delay = "5ms"
[[repeat.link]]
between = ["r2", "d{{i}}"]
rate = "100Mbps"
delay = "5ms"
[[repeat.flow]]
name = "f{{i}}"
from = "s{{i}}"
to = "d{{i}}"
start = "{{i * 10 % 1000}}ms"
"#
    )
}

/// The dumbbell scenario, validated. `flows` should be within
/// `1..=MAX_FLOWS` and `duration_s` within `1..=MAX_SECONDS` (callers check
/// their inputs first: the scenario grows with `flows`).
pub fn dumbbell(flows: usize, duration_s: u64) -> Result<Scenario, ScenarioError> {
    dumbbell_cc(flows, duration_s, "newreno")
}

/// [`dumbbell`] with congestion control `cc`; an unknown name is the
/// scenario's error, naming `tcp.cc`.
pub fn dumbbell_cc(flows: usize, duration_s: u64, cc: &str) -> Result<Scenario, ScenarioError> {
    dumbbell_trace(flows, duration_s, cc, None)
}

/// [`dumbbell_cc`] over [`dumbbell_toml_trace`]'s trace-driven shared link;
/// a missing or bad trace file is the scenario's error, naming the file
/// (and the line).
pub fn dumbbell_trace(
    flows: usize,
    duration_s: u64,
    cc: &str,
    trace: Option<&str>,
) -> Result<Scenario, ScenarioError> {
    let text = dumbbell_toml_trace(flows, duration_s, cc, trace);
    Scenario::from_toml_str(&text, "<bench dumbbell>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_old_node_limit() {
        // 2048 flows: 4098 nodes, past the 4096 the engine once refused.
        let sc = dumbbell(2048, 1).unwrap();
        assert_eq!(sc.nodes.len(), node_count(2048));
        assert!(sc.nodes.len() > 4096);
        assert_eq!(sc.flows.len(), 2048);
        assert_eq!(sc.flows[2047].name, "f2047");
        assert_eq!(sc.nodes[2 + 2 * 7].name, "s7");
        assert_eq!(sc.nodes[3 + 2 * 7].name, "d7");
        // The count is the scenario's flow limit, refused past it.
        let e = dumbbell(MAX_FLOWS + 1, 1).unwrap_err().to_string();
        assert!(e.contains(&format!("from 1 to {MAX_FLOWS}")), "{e}");
    }

    #[test]
    fn another_cc_is_named_in_the_scenario_and_checked() {
        use pep_core::cc::Growth;
        let sc = dumbbell_cc(3, 1, "bbr").unwrap();
        assert_eq!(sc.name, "dumbbell-3-bbr");
        let cfg = crate::build::tcp_config(&sc.flows[2].tcp, &sc.flows[2].sink);
        assert_eq!(cfg.growth, Growth::Bbr);
        // NewReno's text is unchanged by the option.
        assert_eq!(dumbbell_toml(3, 1), dumbbell_toml_cc(3, 1, "newreno"));
        assert!(dumbbell_toml(3, 1).contains("name = \"dumbbell-3\"\n"));
        let e = dumbbell_cc(3, 1, "bbr2").unwrap_err().to_string();
        assert!(e.contains("unknown variant `bbr2`"), "{e}");
    }

    #[test]
    fn a_trace_drives_the_shared_links_forward_direction_only() {
        let dir = std::env::temp_dir().join(format!("pep-bench-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // One 1500-byte opportunity every 2 ms: 6 Mbit/s.
        let good = dir.join("a \"b\".down");
        std::fs::write(&good, "2\n4\n").unwrap();
        let sc = dumbbell_trace(2, 1, "bbr", good.to_str()).unwrap();
        assert_eq!(sc.name, "dumbbell-2-bbr-trace");
        let l = &sc.links[sc.link_index("r1-r2").unwrap()];
        assert_eq!(l.forward.rate, pep_core::Rate::mbps(6));
        assert_eq!(l.reverse.rate, pep_core::Rate::mbps(100));
        // The access links keep their rate.
        let a = &sc.links[sc.link_index("s0-r1").unwrap()];
        assert_eq!(a.forward.rate, pep_core::Rate::mbps(100));
        // A bad line is refused naming the file and the line.
        let bad = dir.join("bad.down");
        std::fs::write(&bad, "2\nx\n").unwrap();
        let e = dumbbell_trace(1, 1, "newreno", bad.to_str())
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.down:2"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
