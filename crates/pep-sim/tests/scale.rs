//! No node limit: scenarios past the engine's old 4096 nodes load and run,
//! written with `[[repeat]]`.

use pep_sim::{Scenario, Simulation};

/// `hosts` clients behind one router, each sending 4 kB to one server:
/// `hosts + 2` nodes, `hosts` flows, starts spread over the first second.
fn star(hosts: usize) -> String {
    format!(
        r#"
[scenario]
name = "star-{hosts}"
duration = "3s"
seed = 1
[output]
series = []
[[node]]
name = "r"
kind = "router"
[[node]]
name = "srv"
[[link]]
between = ["r", "srv"]
rate = "1Gbps"
delay = "1ms"
queue = {{ limit = 10000 }}
[[repeat]]
count = {hosts}
[[repeat.node]]
name = "c{{i}}"
[[repeat.link]]
between = ["c{{i}}", "r"]
rate = "10Mbps"
delay = "10ms"
[[repeat.flow]]
name = "f{{i}}"
from = "c{{i}}"
to = "srv"
start = "{{i % 1000}}ms"
source = {{ kind = "finite", size = "4kB" }}
"#
    )
}

/// Loads and runs `star(hosts)`; checks every flow delivered all its bytes.
fn every_flow_completes(hosts: usize) {
    let sc = Scenario::from_toml_str(&star(hosts), "star").unwrap();
    assert_eq!(sc.nodes.len(), hosts + 2);
    assert_eq!(sc.flows.len(), hosts);
    let mut sim = Simulation::new(&sc);
    sim.run();
    let s = sim.summary();
    assert_eq!(s.flows.len(), hosts);
    for f in &s.flows {
        assert_eq!(f.delivered_bytes, 4000, "{}", f.name);
        // 4 kB over a 10 Mbit/s, 22 ms round trip path: a few round trips
        // (handshake, slow start), well within a second.
        let t = f
            .completion_s
            .unwrap_or_else(|| panic!("{} did not finish", f.name));
        assert!(t > 0.022 && t < 0.5, "{}: {t} s", f.name);
    }
    assert_eq!(s.total_delivered_bytes, 4000 * hosts as u64);
}

#[test]
fn one_node_past_the_old_limit() {
    // 4097 nodes: the last host (node 4096) was past the 4096-node table.
    every_flow_completes(4095);
}

#[test]
fn ten_thousand_nodes_load_and_run() {
    every_flow_completes(9998);
}
