//! End-to-end TCP behaviour through the engine, checked against analytic
//! expectations: window/RTT, link rate, slow-start doubling, congestion
//! avoidance growth, and exact retransmission sequences for scripted drops.

use pep_core::{Duration, Instant};
use pep_sim::sim::Retransmission;
use pep_sim::tcp::TxKind;
use pep_sim::{Scenario, Simulation};

/// Two hosts joined by one link, one bulk flow.
fn two_hosts(
    rate: &str,
    delay: &str,
    queue: u32,
    extra_link: &str,
    tcp: &str,
    sink: &str,
) -> Scenario {
    let text = format!(
        r#"
[scenario]
name = "two-hosts"
duration = "60s"
seed = 1
[defaults.tcp]
mss = "1000B"
header = "40B"
min_rto = "200ms"
initial_rto = "1s"
clock_granularity = "1ms"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "{rate}"
delay = "{delay}"
queue = {{ limit = {queue} }}
{extra_link}
[[flow]]
name = "f"
from = "a"
to = "b"
tcp = {{ {tcp} }}
sink = {{ {sink} }}
[output]
interval = "1s"
sample = "100ms"
series = ["goodput"]
"#
    );
    Scenario::from_toml_str(&text, "test").unwrap_or_else(|e| panic!("{e}"))
}

/// Bytes delivered to the receiver between two instants.
fn delivered_between(sim: &mut Simulation, from_s: u64, to_s: u64) -> u64 {
    sim.run_until(Instant::ZERO + Duration::from_secs(from_s));
    let a = sim.sink(0).delivered_bytes();
    sim.run_until(Instant::ZERO + Duration::from_secs(to_s));
    sim.sink(0).delivered_bytes() - a
}

#[test]
fn window_limited_throughput_is_rwnd_over_rtt() {
    // 20 segments of 1000 B in flight, RTT = 2 x 50 ms + 1040 B and 40 B
    // serialized at 100 Mbit/s (83.2 us + 3.2 us).
    let sc = two_hosts(
        "100Mbps",
        "50ms",
        1000,
        "",
        "cc = \"newreno\", init_cwnd = 2",
        "rwnd = \"20000B\"",
    );
    let mut sim = Simulation::new(&sc);
    let bytes = delivered_between(&mut sim, 10, 40);
    let got = bytes as f64 * 8.0 / 30.0;
    let rtt = 0.1 + 1040.0 * 8.0 / 100e6 + 40.0 * 8.0 / 100e6;
    let want = 20_000.0 * 8.0 / rtt;
    assert!(
        (got / want - 1.0).abs() < 0.02,
        "got {got:.0} bit/s, want {want:.0}"
    );
    assert!(sim.retransmissions(0).is_empty());
}

#[test]
fn link_limited_throughput_is_link_rate_net_of_headers() {
    // 10 Mbit/s, RTT 20 ms: BDP is about 24 packets; a 60-segment window
    // keeps the link busy and the 100-packet queue never overflows. Counted
    // headers: 40 B of IPv4 + TCP per 1000 B payload (no link framing), so
    // goodput = 10 Mbit/s x 1000 / 1040.
    let sc = two_hosts(
        "10Mbps",
        "10ms",
        100,
        "",
        "cc = \"newreno\", init_cwnd = 2",
        "rwnd = \"60000B\"",
    );
    let mut sim = Simulation::new(&sc);
    let bytes = delivered_between(&mut sim, 5, 35);
    let got = bytes as f64 * 8.0 / 30.0;
    let want = 10e6 * 1000.0 / 1040.0;
    assert!(
        (got / want - 1.0).abs() < 0.02,
        "got {got:.0} bit/s, want {want:.0}"
    );
    let link = sim.link("a->b").expect("link");
    assert_eq!(link.queue.stats.dropped, 0);
}

#[test]
fn slow_start_doubles_cwnd_every_rtt() {
    // 1 Gbit/s so serialization is negligible against the 100 ms RTT. With
    // an ACK per segment and initial window 1, each round's ACKs arrive
    // within a few microseconds, so half-way through round k the window is
    // exactly 2^k segments.
    let sc = two_hosts(
        "1Gbps",
        "50ms",
        10_000,
        "",
        "cc = \"newreno\", init_cwnd = 1",
        "rwnd = \"64MiB\", ack = \"every\"",
    );
    let mut sim = Simulation::new(&sc);
    for k in 0..10u32 {
        sim.run_until(Instant::ZERO + Duration::from_millis(50 + 100 * k as u64));
        let cwnd = sim.sender(0).expect("started").cwnd();
        assert_eq!(cwnd, 1000u64 << k, "round {k}");
    }
}

#[test]
fn congestion_avoidance_adds_about_one_mss_per_rtt() {
    // One scripted drop ends slow start; then, with an ACK per segment and
    // no further loss, cwnd grows by about one MSS per RTT (RFC 5681 eq. 3).
    let sc = two_hosts(
        "1Gbps",
        "50ms",
        10_000,
        "loss = { kind = \"drop\", flow = \"f\", segments = [100] }",
        "cc = \"newreno\", init_cwnd = 1",
        "rwnd = \"64MiB\", ack = \"every\"",
    );
    let mut sim = Simulation::new(&sc);
    sim.run_until(Instant::ZERO + Duration::from_secs(3));
    let s = sim.sender(0).unwrap();
    assert!(!s.in_recovery());
    assert_eq!(sim.retransmissions(0).len(), 1);
    let mut prev = s.cwnd() as f64;
    for r in 1..=20u64 {
        sim.run_until(Instant::ZERO + Duration::from_secs(3) + Duration::from_millis(100 * r));
        let c = sim.sender(0).unwrap().cwnd() as f64;
        let growth = (c - prev) / 1000.0;
        assert!(
            (0.85..=1.15).contains(&growth),
            "round {r}: grew {growth:.3} MSS"
        );
        prev = c;
    }
}

fn kinds(r: &[Retransmission]) -> Vec<(u32, TxKind)> {
    r.iter().map(|x| (x.offset / 1000 + 1, x.kind)).collect()
}

#[test]
fn single_drop_is_one_fast_retransmit_without_rto() {
    for cc in ["reno", "newreno"] {
        let sc = two_hosts(
            "10Mbps",
            "20ms",
            1000,
            "loss = { kind = \"drop\", flow = \"f\", segments = [30] }",
            &format!("cc = \"{cc}\", init_cwnd = 2"),
            "rwnd = \"64KiB\", ack = \"every\"",
        );
        let mut sim = Simulation::new(&sc);
        sim.run_until(Instant::ZERO + Duration::from_secs(5));
        assert_eq!(
            kinds(sim.retransmissions(0)),
            vec![(30, TxKind::FastRetransmit)],
            "{cc}"
        );
        let st = sim.sender(0).unwrap().stats();
        assert_eq!(st.timeouts, 0, "{cc}");
    }
}

#[test]
fn newreno_repairs_three_drops_one_per_rtt_without_rto() {
    let sc = two_hosts(
        "10Mbps",
        "20ms",
        1000,
        "loss = { kind = \"drop\", flow = \"f\", segments = [30, 33, 36] }",
        "cc = \"newreno\", init_cwnd = 2",
        "rwnd = \"64KiB\", ack = \"every\"",
    );
    let mut sim = Simulation::new(&sc);
    sim.run_until(Instant::ZERO + Duration::from_secs(5));
    let r = sim.retransmissions(0).to_vec();
    assert_eq!(
        kinds(&r),
        vec![
            (30, TxKind::FastRetransmit),
            (33, TxKind::PartialAckRetransmit),
            (36, TxKind::PartialAckRetransmit),
        ]
    );
    assert_eq!(sim.sender(0).unwrap().stats().timeouts, 0);
    // Each partial ACK comes back one RTT (about 40 ms plus queueing) after
    // the retransmission it acknowledges.
    for w in r.windows(2) {
        let gap = (w[1].at - w[0].at).as_millis_f64();
        assert!((40.0..80.0).contains(&gap), "gap {gap} ms");
    }
}

#[test]
fn reno_leaves_recovery_early_and_times_out_with_a_small_window() {
    // An 8-segment window with three drops: after the first partial ACK Reno
    // deflates and leaves recovery; too few duplicate ACKs remain for the
    // other holes, so the retransmission timer repairs them.
    let sc = two_hosts(
        "10Mbps",
        "20ms",
        1000,
        "loss = { kind = \"drop\", flow = \"f\", segments = [30, 32, 34] }",
        "cc = \"reno\", init_cwnd = 2",
        "rwnd = \"8000B\", ack = \"every\"",
    );
    let mut sim = Simulation::new(&sc);
    sim.run_until(Instant::ZERO + Duration::from_secs(10));
    let k = kinds(sim.retransmissions(0));
    assert_eq!(k[0], (30, TxKind::FastRetransmit), "{k:?}");
    assert!(
        k.iter().any(|&(_, kind)| kind == TxKind::TimeoutRetransmit),
        "Reno should end in an RTO: {k:?}"
    );
    assert!(sim.sender(0).unwrap().stats().timeouts >= 1);
    // Same pattern, NewReno: no RTO.
    let sc = two_hosts(
        "10Mbps",
        "20ms",
        1000,
        "loss = { kind = \"drop\", flow = \"f\", segments = [30, 32, 34] }",
        "cc = \"newreno\", init_cwnd = 2",
        "rwnd = \"8000B\", ack = \"every\"",
    );
    let mut sim = Simulation::new(&sc);
    sim.run_until(Instant::ZERO + Duration::from_secs(10));
    assert_eq!(
        kinds(sim.retransmissions(0)),
        vec![
            (30, TxKind::FastRetransmit),
            (32, TxKind::PartialAckRetransmit),
            (34, TxKind::PartialAckRetransmit),
        ]
    );
}

#[test]
fn finite_transfer_completes_and_reports_its_time() {
    let text = two_hosts_text_finite();
    let sc = Scenario::from_toml_str(&text, "test").unwrap();
    let mut sim = Simulation::new(&sc);
    sim.run();
    assert_eq!(sim.sink(0).delivered_bytes(), 100_000);
    let s = sim.summary();
    let t = s.flows[0].completion_s.expect("completed");
    // 100 segments with initial window 2 in slow start: 2+4+8+16+32+38 is
    // six rounds of 40 ms RTT plus serialization; well under a second.
    assert!(t > 0.2 && t < 0.5, "completion {t}");
}

fn two_hosts_text_finite() -> String {
    r#"
[scenario]
name = "finite"
duration = "5s"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "100Mbps"
delay = "20ms"
[[flow]]
name = "f"
from = "a"
to = "b"
source = { kind = "finite", size = "100KB" }
tcp = { mss = "1000B", init_cwnd = 2 }
"#
    .to_string()
}
