//! The engine benchmark's workload: a dumbbell of N bulk flows.
//!
//! Each flow has its own sender and receiver host on 100 Mbit/s, 5 ms access
//! links; all share a 100 Mbit/s link with 250 ms one-way delay and a
//! 1000-packet DropTail queue; 1000-byte payloads plus 40-byte headers;
//! NewReno; receive windows large enough that the shared link, not the
//! window, limits the flows (so the run moves as many packets as it can).

use std::fmt::Write as _;

use crate::scenario::{Scenario, ScenarioError, MAX_NODES};

/// Nodes of a dumbbell of `flows` flows: two routers, and a sender and a
/// receiver host per flow.
pub const fn node_count(flows: usize) -> usize {
    2 + 2 * flows
}

/// The most flows a dumbbell can have within the simulator's node limit
/// ([`MAX_NODES`]): 2047.
pub const MAX_FLOWS: usize = (MAX_NODES - 2) / 2;

/// The longest run, in simulated seconds, the benchmark accepts: time is
/// kept in u64 nanoseconds (about 584 years); a billion seconds leaves
/// ample headroom.
pub const MAX_SECONDS: u64 = 1_000_000_000;

/// The dumbbell scenario's TOML text.
pub fn dumbbell_toml(flows: usize, duration_s: u64) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        r#"[scenario]
name = "dumbbell-{flows}"
description = "benchmark dumbbell: {flows} NewReno flows over 100 Mbit/s, 250 ms"
duration = "{duration_s}s"
seed = 1

[defaults.tcp]
cc = "newreno"
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
"#
    );
    for i in 0..flows {
        let _ = write!(
            s,
            r#"
[[node]]
name = "s{i}"
[[node]]
name = "d{i}"
[[link]]
between = ["s{i}", "r1"]
rate = "100Mbps"
delay = "5ms"
[[link]]
between = ["r2", "d{i}"]
rate = "100Mbps"
delay = "5ms"
[[flow]]
name = "f{i}"
from = "s{i}"
to = "d{i}"
start = "{start}ms"
"#,
            // Staggered starts, 10 ms apart at most 1 s, so flows do not
            // synchronise their slow starts.
            start = (i * 10) % 1000
        );
    }
    s
}

/// The dumbbell scenario, validated. `flows` should be within
/// `1..=MAX_FLOWS` and `duration_s` within `1..=MAX_SECONDS` (callers check
/// their inputs first: the text grows with `flows`).
pub fn dumbbell(flows: usize, duration_s: u64) -> Result<Scenario, ScenarioError> {
    Scenario::from_toml_str(&dumbbell_toml(flows, duration_s), "<bench dumbbell>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flow_limit_is_the_node_limit() {
        assert_eq!(MAX_FLOWS, 2047);
        assert_eq!(node_count(MAX_FLOWS), MAX_NODES);
        assert!(node_count(MAX_FLOWS + 1) > MAX_NODES);
        assert!(dumbbell(MAX_FLOWS, 1).is_ok());
        let e = dumbbell(MAX_FLOWS + 1, 1).unwrap_err().to_string();
        assert!(e.contains("at most 4096"), "{e}");
        let sc = dumbbell(3, 1).unwrap();
        assert_eq!(sc.nodes.len(), node_count(3));
        assert_eq!(sc.flows.len(), 3);
    }
}
