//! A run cut in two at a long link (`scenario.cut`) against the same run
//! uncut, with every kind of component on both sides.

use std::path::Path;

use pep_sim::{Scenario, Simulation};

/// Hosts with processing costs and a buffered reader on one side, a
/// half-duplex segment and a watermark PEP on the other, an asymmetric
/// RED satellite link between; a bulk flow, a bidirectional one, Pareto
/// web traffic, and a finite transfer the other way.
const SCENARIO: &str = r#"
[scenario]
name = "mixed"
duration = "40s"
seed = 3
[[node]]
name = "h1"
processing = { data = "50us", ack = "20us", jitter = "10us" }
[[node]]
name = "h2"
[[node]]
name = "r1"
kind = "router"
[[node]]
name = "r2"
kind = "router"
[[node]]
name = "d1"
processing = { data = "80us", ack = "20us" }
[[node]]
name = "d2"
[[link]]
between = ["h1", "r1"]
rate = "20Mbps"
delay = "2ms"
[[link]]
between = ["h2", "r1"]
rate = "20Mbps"
delay = "3ms"
loss = { kind = "bernoulli", p = 0.001 }
[[link]]
name = "sat"
between = ["r1", "r2"]
rate = "8Mbps"
delay = "120ms"
queue = { kind = "red", auto = true, limit = 200 }
[link.reverse]
rate = "1Mbps"
[[link]]
between = ["r2", "d1"]
rate = "10Mbps"
delay = "1ms"
medium = { kind = "half-duplex", backoff = "50us" }
[[link]]
between = ["r2", "d2"]
rate = "20Mbps"
delay = "4ms"
[[flow]]
name = "bulk"
from = "h1"
to = "d1"
sink = { app = { kind = "reader", chunk = "8KiB", when = "idle" } }
[[flow]]
name = "both"
from = "h2"
to = "d2"
tcp = { cc = "cubic" }
reverse = { kind = "finite", size = "2MB" }
[[flow]]
name = "web"
from = "h2"
to = "d1"
start = "1s"
source = { kind = "pareto", rate = "1Mbps", packet = "1000B" }
[[flow]]
name = "fin"
from = "d2"
to = "h1"
source = { kind = "finite", size = "3MB" }
[[agent]]
kind = "watermark"
node = "r2"
flows = ["bulk"]
buffer = 50
watermark = 20
"#;

fn run(text: &str, parallel: bool, dir: &Path) -> Vec<(String, Vec<u8>)> {
    let sc = Scenario::from_toml_str(text, "mixed.toml").unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulation::new(&sc);
    sim.set_parallel(parallel);
    sim.run();
    let names = sim.write_outputs(dir).unwrap();
    names
        .into_iter()
        .map(|n| {
            let body = std::fs::read(dir.join(&n)).unwrap();
            (n, body)
        })
        .collect()
}

#[test]
fn a_cut_run_writes_the_uncut_runs_bytes_when_nothing_ties_across_the_cut() {
    // Every output file, summary.json's event count included (the far
    // side's sampling events are not counted twice), whichever way the
    // sides run. Events at one nanosecond on both sides of the cut could
    // run in another order; in this scenario none do.
    let cut = SCENARIO.replacen("seed = 3\n", "seed = 3\ncut = \"sat\"\n", 1);
    let dir = tempfile::tempdir().unwrap();
    let whole = run(SCENARIO, false, &dir.path().join("whole"));
    for parallel in [false, true] {
        let halves = run(&cut, parallel, &dir.path().join(format!("cut-{parallel}")));
        assert_eq!(
            whole.iter().map(|f| &f.0).collect::<Vec<_>>(),
            halves.iter().map(|f| &f.0).collect::<Vec<_>>()
        );
        for ((name, a), (_, b)) in whole.iter().zip(&halves) {
            assert!(a == b, "{name} differs (parallel {parallel})");
        }
    }
    let summary = String::from_utf8_lossy(&whole.iter().find(|f| f.0 == "summary.json").unwrap().1)
        .into_owned();
    // Every part of the scenario carried data: each flow, and the data
    // sent back on the bidirectional one.
    let s: serde_json::Value = serde_json::from_str(&summary).unwrap();
    for f in s["flows"].as_array().unwrap() {
        assert!(f["delivered_bytes"].as_u64().unwrap() > 100_000, "{f}");
    }
    assert!(
        s["flows"][1]["reverse"]["delivered_bytes"]
            .as_u64()
            .unwrap()
            > 100_000
    );
}
