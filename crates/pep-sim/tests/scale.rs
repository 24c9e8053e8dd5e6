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

/// The shipped 10,000-user gateway (scenarios/examples/gateway-10k.toml),
/// cut to its first `seconds`.
fn gateway(seconds: u64) -> Scenario {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/examples/gateway-10k.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let cut = text.replace("duration = \"100s\"", &format!("duration = \"{seconds}s\""));
    assert_ne!(cut, text, "the scenario's duration line moved");
    Scenario::from_toml_str(&cut, path).unwrap()
}

/// Bytes the server has sent on each flow, retransmissions not counted.
fn sent(sim: &Simulation) -> Vec<u64> {
    (0..sim.flow_count())
        .map(|i| {
            sim.sender(i)
                .map_or(0, |s| s.stats().bytes_sent - s.stats().retransmitted_bytes)
        })
        .collect()
}

#[test]
fn gateway_serves_every_user_fairly() {
    let sc = gateway(30);
    assert_eq!(sc.flows.len(), 10_000);
    assert_eq!(sc.nodes.len(), 10_003);
    let mut sim = Simulation::new(&sc);
    // The last users start at 9.99 s and the tunnel's slow start over the
    // GEO link takes about 12 s: look at 24 s and 30 s.
    sim.run_until(pep_core::Instant::ZERO + pep_core::Duration::from_secs(24));
    let early = sent(&sim);
    sim.run();
    let late = sent(&sim);
    let s = sim.summary();
    // Every user got service: its first burst's first message at least.
    for f in &s.flows {
        assert!(
            f.delivered_bytes >= 1000,
            "{}: {} B",
            f.name,
            f.delivered_bytes
        );
    }
    // Per-flow credit: a user's bytes past split start and not yet at the
    // user are at most end_buffer (64 packets), plus at most as much in
    // split start's terminating receiver, whose window is at most that.
    let bound = 2 * 64 * 1000;
    for (f, &sent) in s.flows.iter().zip(&late) {
        let held = sent - f.delivered_bytes;
        assert!(held <= bound, "{}: {held} B sent and not delivered", f.name);
    }
    // Fair service: what the server had sent by 24 s reached each user by
    // 30 s (ten GEO round trips later), or nearly; per user the share of
    // it delivered, capped at 1 (later bytes count too), has a Jain index
    // near 1 (a user starved behind the others' bursts would pull it down).
    let ratio: Vec<f64> = s
        .flows
        .iter()
        .zip(&early)
        .map(|(f, &sent)| (f.delivered_bytes as f64 / sent as f64).min(1.0))
        .collect();
    let (sum, sq) = ratio
        .iter()
        .fold((0.0, 0.0), |(s, q), r| (s + r, q + r * r));
    let jain = sum * sum / (ratio.len() as f64 * sq);
    assert!(
        jain > 0.99,
        "Jain index of the users' service ratios: {jain}"
    );
    // The users' goodput over the last 5 s: most of what they offer (145
    // Mbit/s on average, more while the backlog of the start drains), at
    // most the GEO link's 200 Mbit/s less the 40 B headers per 1000 B.
    let late_bytes: u64 = sim
        .metrics()
        .goodput
        .iter()
        .filter(|r| r.t > pep_core::Instant::ZERO + pep_core::Duration::from_secs(25))
        .map(|r| r.bytes)
        .sum();
    let mbps = late_bytes as f64 * 8.0 / 5.0 / 1e6;
    assert!(
        mbps > 100.0 && mbps < 200.0 * 1000.0 / 1040.0,
        "{mbps} Mbit/s"
    );
}

/// Runs `text` and writes its files into a fresh directory: the
/// simulation (for its in-memory summary), the directory, and the names.
fn written(text: &str) -> (Simulation, tempfile::TempDir, Vec<String>) {
    let sc = Scenario::from_toml_str(text, "star").unwrap();
    let mut sim = Simulation::new(&sc);
    sim.run();
    let dir = tempfile::tempdir().unwrap();
    let mut files = sim.write_outputs(dir.path()).unwrap();
    files.sort();
    (sim, dir, files)
}

fn summary_json(dir: &tempfile::TempDir) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.path().join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn above_a_thousand_flows_their_entries_go_to_a_table_and_their_spread_to_the_summary() {
    let (sim, dir, files) = written(&star(1001));
    assert_eq!(files, ["flows.csv", "summary.json"]);
    let full = sim.summary();
    let json = summary_json(&dir);
    assert!(json.get("flows").is_none(), "summary.json lists the flows");
    assert_eq!(json["total_delivered_bytes"], 4000 * 1001);
    let st = &json["flow_stats"];
    assert_eq!(st["flows"], 1001);
    assert_eq!(st["completed"], 1001);
    // The spread of completion times, against the in-memory entries: the
    // nearest-rank median of 1001 values is the 501st smallest.
    let mut done: Vec<f64> = full.flows.iter().map(|f| f.completion_s.unwrap()).collect();
    done.sort_by(f64::total_cmp);
    let c = &st["completion_s"];
    assert_eq!(c["min"], done[0]);
    assert_eq!(c["p50"], done[500]);
    assert_eq!(c["p99"], done[990]);
    assert_eq!(c["max"], done[1000]);
    let mean = done.iter().sum::<f64>() / 1001.0;
    assert!((c["mean"].as_f64().unwrap() - mean).abs() < 1e-6, "{c}");
    assert!(done[0] < done[1000], "the starts spread the completions");
    assert_eq!(st["delivered_bytes"]["min"], 4000.0);
    assert_eq!(st["delivered_bytes"]["max"], 4000.0);
    // flows.csv: a header and one row per flow, each the flow's entry.
    let csv = std::fs::read_to_string(dir.path().join("flows.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 1001);
    assert!(lines[0].starts_with("flow,from,to,delivered_bytes,goodput_mbps,"));
    for (line, f) in lines[1..].iter().zip(&full.flows) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[..4], [f.name.as_str(), &f.from, "srv", "4000"]);
        assert_eq!(cells[10].parse::<f64>().unwrap(), f.completion_s.unwrap());
    }
}

#[test]
fn at_the_limits_or_asked_for_the_summary_lists_every_flow_and_link() {
    // 1,000 flows, and 1,001 links: at most the limits.
    let (sim, dir, files) = written(&star(1000));
    assert_eq!(files, ["summary.json"]);
    // The file is the in-memory summary, byte for byte.
    let text = std::fs::read_to_string(dir.path().join("summary.json")).unwrap();
    let own = serde_json::to_string_pretty(&sim.summary()).unwrap();
    assert_eq!(text, own + "\n");
    let asked = star(1001).replace("series = []", "series = []\nper_flow = true");
    let (_, dir, files) = written(&asked);
    assert_eq!(files, ["summary.json"]);
    assert_eq!(summary_json(&dir)["flows"].as_array().unwrap().len(), 1001);
    // 5,000 links: 10,000 directions, still listed.
    let (_, dir, files) = written(&star(4999));
    assert_eq!(files, ["flows.csv", "summary.json"]);
    let json = summary_json(&dir);
    assert_eq!(json["links"].as_array().unwrap().len(), 10_000);
    assert!(json.get("busiest_links").is_none());
}

#[test]
fn above_ten_thousand_link_directions_the_summary_names_the_busiest() {
    // 5,001 links: 10,002 directions.
    let (sim, dir, files) = written(&star(5000));
    assert_eq!(files, ["flows.csv", "link_totals.csv", "summary.json"]);
    let full = sim.summary();
    let json = summary_json(&dir);
    assert!(json.get("links").is_none(), "summary.json lists the links");
    let busiest = json["busiest_links"].as_array().unwrap();
    assert_eq!(busiest.len(), 20);
    // Every client's 4 kB crosses r->srv; each access link carries one.
    assert_eq!(busiest[0]["name"], "r->srv");
    let bytes: Vec<u64> = busiest
        .iter()
        .map(|l| l["tx_bytes"].as_u64().unwrap())
        .collect();
    assert!(bytes.windows(2).all(|w| w[0] >= w[1]), "{bytes:?}");
    let mut all: Vec<u64> = full.links.iter().map(|l| l.tx_bytes).collect();
    all.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(bytes, all[..20]);
    let csv = std::fs::read_to_string(dir.path().join("link_totals.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 10_002);
    assert!(lines[0].starts_with("link,tx_packets,tx_bytes,utilisation,"));
    for (line, l) in lines[1..].iter().zip(&full.links) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[0], l.name);
        assert_eq!(cells[2], l.tx_bytes.to_string());
        assert_eq!(cells[3].parse::<f64>().unwrap(), l.utilisation);
    }
}
