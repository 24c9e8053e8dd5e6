//! The engine benchmark's workload: a dumbbell of N bulk flows.
//!
//! Each flow has its own sender and receiver host on 100 Mbit/s, 5 ms access
//! links; all share a 100 Mbit/s link with 250 ms one-way delay and a
//! 1000-packet DropTail queue; 1000-byte payloads plus 40-byte headers;
//! NewReno; receive windows large enough that the shared link, not the
//! window, limits the flows (so the run moves as many packets as it can).

use std::fmt::Write as _;

use crate::scenario::{Scenario, ScenarioError};

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

/// The dumbbell scenario, validated.
pub fn dumbbell(flows: usize, duration_s: u64) -> Result<Scenario, ScenarioError> {
    Scenario::from_toml_str(&dumbbell_toml(flows, duration_s), "<bench dumbbell>")
}
