//! The distributed split-connection PEP (`split-pair`, Gschwandtner 2009)
//! on the thesis's dumbbell, scaled so each run fits in CI.

use pep_core::Instant;
use pep_sim::agent::split_pair::SplitPair;
use pep_sim::{Scenario, Simulation};

/// Senders s<i> -- a == b -- r<i>: access links `access` 5 ms DropTail
/// 100, split link `split` with `delay`, queue `split_queue`; `flows` is
/// the `[[flow]]` source per flow; `agent` is appended as written.
fn dumbbell(
    n: usize,
    split: &str,
    delay: &str,
    split_queue: &str,
    source: &dyn Fn(usize) -> String,
    duration: &str,
    agent: &str,
) -> Scenario {
    let mut t = format!(
        r#"
[scenario]
name = "gschwandtner"
duration = "{duration}"
seed = 7
[defaults.tcp]
profile = "ns2"
cc = "sack"
mss = "1000B"
[defaults.sink]
sack = true
rwnd = "100MB"
[[node]]
name = "a"
kind = "router"
[[node]]
name = "b"
kind = "router"
[[link]]
between = ["a", "b"]
rate = "{split}"
delay = "{delay}"
queue = {split_queue}
"#
    );
    for i in 0..n {
        t += &format!(
            r#"
[[node]]
name = "s{i}"
[[node]]
name = "r{i}"
[[link]]
between = ["s{i}", "a"]
rate = "100Mbit/s"
delay = "5ms"
queue = {{ kind = "droptail", limit = 100 }}
[[link]]
between = ["b", "r{i}"]
rate = "100Mbit/s"
delay = "5ms"
queue = {{ kind = "droptail", limit = 100 }}
[[flow]]
name = "f{i}"
from = "s{i}"
to = "r{i}"
source = {}
"#,
            source(i)
        );
    }
    t += agent;
    Scenario::from_toml_str(&t, "<gschwandtner>").unwrap_or_else(|e| panic!("{e}"))
}

fn pep(params: &str) -> String {
    format!("[[agent]]\nkind = \"split-pair\"\nname = \"pep\"\nnodes = [\"a\", \"b\"]\n{params}\n")
}

fn agent(sim: &Simulation) -> &SplitPair {
    sim.agent("pep")
        .unwrap()
        .as_any()
        .downcast_ref::<SplitPair>()
        .unwrap()
}

fn split_bytes(sim: &Simulation) -> u64 {
    let s = sim.summary();
    s.links.iter().find(|l| l.name == "a->b").unwrap().tx_bytes
}

fn size(i: usize) -> u64 {
    150_000 + 37_123 * i as u64
}

/// Eight finite flows of different sizes through a small local queue, so
/// it drops, the senders retransmit and the tunnel is shared unevenly.
fn finite(buffer_start: u32, check: &str) -> Scenario {
    dumbbell(
        8,
        "10Mbit/s",
        "50ms",
        "{ kind = \"droptail\", limit = 500 }",
        &|i| format!("{{ kind = \"finite\", size = \"{}B\" }}", size(i)),
        "30s",
        &pep(&format!(
            "local_queue = \"droptail\"\nlocal_queue_limit = 20\nbuffer_start = {buffer_start}\n{check}"
        )),
    )
}

#[test]
fn the_thesis_credit_stalls_when_held_out_of_order_data_exceeds_it() {
    // Credit is paid when a packet leaves the local queue and earned back
    // only when the tunnel sends. A packet admitted behind a hole (the
    // local queue dropped its predecessor) is held by split start's
    // receiver and writes nothing to the tunnel; a SYN writes nothing
    // either. Once such packets hold buffer_start - 1 packet of credit,
    // the tunnel drains, no output adds credit, and the retransmission
    // that would fill the hole waits in the local queue for good.
    let mut sim = Simulation::new(&finite(10, "check = \"event\""));
    sim.run();
    let a = agent(&sim);
    let accepted: u64 = (0..8).map(|i| a.accepted(i)).sum();
    let total: u64 = (0..8).map(size).sum();
    assert!(accepted < total / 2, "{accepted} of {total}");
    assert_eq!(a.in_tunnel(), 0);
    assert!(a.credit().buffer_count() < 1040);
    assert!(!a.local_queue().is_empty());
}

#[test]
fn every_accepted_byte_reaches_the_right_receiver_once_in_order() {
    // Finite flows of different sizes through a small local queue and a
    // small credit, so the local queue drops, the end senders retransmit
    // and the tunnel is shared unevenly.
    for check in ["check = \"event\"", "check = \"poll\"\nsend_check_interval = \"3ms\""] {
        let mut sim = Simulation::new(&finite(200, check));
        sim.run();
        let a = agent(&sim);
        let stats = sim.summary().agents[0].stats.clone();
        eprintln!("{stats}");
        assert!(stats["local_dropped"].as_u64().unwrap() > 0, "{check}: {stats}");
        for i in 0..8 {
            // Split start took every byte exactly once (the sink's in-order
            // count), split end got exactly those bytes for this flow, and
            // the receiver's sink has them all in order.
            assert_eq!(a.accepted(i), size(i), "{check} flow {i}");
            assert_eq!(a.forwarded(i), size(i), "{check} flow {i}");
            assert_eq!(sim.sink(i).delivered_bytes(), size(i), "{check} flow {i}");
            assert_eq!(a.delivered(i), size(i), "{check} flow {i}");
            assert!(sim.sender(i).unwrap().is_complete(), "{check} flow {i}");
        }
        assert_eq!(a.in_tunnel(), 0);
    }
}

/// 50 FTP flows, thesis dumbbell at a tenth of the rate (10 Mbit/s split
/// link, 250 ms; BDP 325 packets) so a run fits in CI; queues scaled the
/// same way. Returns the split link's utilisation (Mbit/s) from `warm` to
/// the end.
fn ftp_util(pep_on: bool, q: u32, secs: u64) -> f64 {
    let warm = 20u64;
    let split_queue = if pep_on {
        "{ kind = \"droptail\", limit = 50 }".to_string()
    } else {
        format!("{{ kind = \"red\", auto = true, limit = {q} }}")
    };
    let agent = if pep_on {
        pep(&format!(
            "local_queue = \"red\"\nlocal_queue_limit = {q}\nbuffer_start = 20\nsend_check_interval = \"10ms\""
        ))
    } else {
        String::new()
    };
    let sc = dumbbell(
        50,
        "10Mbit/s",
        "250ms",
        &split_queue,
        &|_| "\"bulk\"".into(),
        &format!("{secs}s"),
        &agent,
    );
    let mut sim = Simulation::new(&sc);
    sim.run_until(Instant(warm * 1_000_000_000));
    let b0 = split_bytes(&sim);
    sim.run();
    let b1 = split_bytes(&sim);
    (b1 - b0) as f64 * 8.0 / (secs - warm) as f64 / 1e6
}

#[test]
fn pep_utilisation_is_flat_across_local_queue_sizes_and_beats_small_queues() {
    let secs = 80;
    let with: Vec<f64> = [30u32, 100, 300].iter().map(|&q| ftp_util(true, q, secs)).collect();
    let without: Vec<f64> = [50u32, 100].iter().map(|&q| ftp_util(false, q, secs)).collect();
    eprintln!("pep {with:?} no-pep {without:?}");
    let (lo, hi) = with.iter().fold((f64::MAX, 0f64), |(l, h), &u| (l.min(u), h.max(u)));
    assert!((hi - lo) / hi <= 0.02, "PEP utilisation across local queues {with:?}");
    for (w, q) in without.iter().zip([50, 100]) {
        assert!(lo >= *w, "PEP {lo} below no-PEP {w} at Q = {q}");
    }
}
