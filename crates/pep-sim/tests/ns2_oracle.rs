//! The ns-2 differential oracle: baseline scenarios (no PEP) run in ns-2
//! 2.35 (`ns`, Debian package `ns2`) and in the simulator's `ns2` profile;
//! goodput after a warm-up must agree. `#[ignore = "needs ns-2"]`: run them
//! with `-- --include-ignored` where `ns` is installed (`.ci/run` does);
//! without `ns` they then fail saying so.

use std::process::Command;

use pep_core::{Duration, Instant};
use pep_sim::{ns2, Scenario, Simulation};

const WARMUP_S: u64 = 5;

/// Fails the test, saying why, when `ns` is not installed.
fn require_ns(label: &str) {
    let found = Command::new("sh")
        .args(["-c", "command -v ns"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{label}: needs ns-2 (`ns`, Debian package ns2) on the PATH; \
         without it leave out --include-ignored"
    );
}

/// Goodput per flow (bit/s) after the warm-up, from ns-2.
fn ns_goodput(sc: &Scenario, seed: u64) -> Vec<f64> {
    let script = ns2::script(sc, Duration::from_secs(WARMUP_S), seed).expect("expressible");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.tcl");
    std::fs::write(&path, script).unwrap();
    let out = Command::new("ns").arg(&path).output().expect("run ns");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let recs = ns2::parse(&stdout, sc.flows.len())
        .unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(&out.stderr)));
    let secs = (sc.duration.as_secs_f64()) - WARMUP_S as f64;
    recs.iter()
        .map(|(a, b)| (b - a) as f64 * 8.0 / secs)
        .collect()
}

/// Goodput per flow (bit/s) after the warm-up, from the simulator.
fn sim_goodput(sc: &Scenario) -> Vec<f64> {
    sim_run(sc).0
}

/// [`sim_goodput`] and the simulation it ran, for its other counters.
fn sim_run(sc: &Scenario) -> (Vec<f64>, Simulation) {
    let mut sim = Simulation::new(sc);
    sim.run_until(Instant::ZERO + Duration::from_secs(WARMUP_S));
    let a: Vec<u64> = (0..sim.flow_count())
        .map(|i| sim.sender(i).map_or(0, |s| s.bytes_acked()))
        .collect();
    sim.run();
    let secs = (sc.duration.as_secs_f64()) - WARMUP_S as f64;
    let goodput = (0..sim.flow_count())
        .map(|i| (sim.sender(i).map_or(0, |s| s.bytes_acked()) - a[i]) as f64 * 8.0 / secs)
        .collect();
    (goodput, sim)
}

fn scenario(body: &str) -> Scenario {
    Scenario::from_toml_str(body, "ns2-oracle").unwrap_or_else(|e| panic!("{e}"))
}

fn two_hosts(rate: &str, delay: &str, queue: u32, loss: &str, tcp: &str, dur: u32) -> Scenario {
    scenario(&format!(
        r#"
[scenario]
name = "oracle"
duration = "{dur}s"
[defaults.tcp]
profile = "ns2"
{tcp}
[[node]]
name = "a"
[[node]]
name = "r"
kind = "router"
[[node]]
name = "b"
[[link]]
between = ["a", "r"]
rate = "100Mbps"
delay = "1ms"
queue = {{ limit = 1000 }}
[[link]]
between = ["r", "b"]
rate = "{rate}"
delay = "{delay}"
queue = {{ limit = {queue} }}
forward = {{ loss = {loss} }}
[[flow]]
name = "f"
from = "a"
to = "b"
[output]
series = []
"#
    ))
}

fn compare(label: &str, sc: &Scenario, seeds: &[u64], tol: f64) {
    require_ns(label);
    let mut ns_sum = 0.0;
    let mut sim_sum = 0.0;
    for &seed in seeds {
        let mut sc = sc.clone();
        sc.seed = seed;
        let n: f64 = ns_goodput(&sc, seed).iter().sum();
        let s: f64 = sim_goodput(&sc).iter().sum();
        println!(
            "{label} seed {seed}: ns-2 {:.4} Mbit/s, sim {:.4} Mbit/s",
            n / 1e6,
            s / 1e6
        );
        ns_sum += n;
        sim_sum += s;
    }
    let ratio = sim_sum / ns_sum;
    println!("{label}: sim/ns-2 = {ratio:.4} (tolerance {tol})");
    assert!((ratio - 1.0).abs() <= tol, "{label}: sim/ns-2 = {ratio:.4}");
}

#[test]
#[ignore = "needs ns-2"]
fn window_limited() {
    let sc = two_hosts("10Mbps", "50ms", 100, "\"none\"", "cc = \"newreno\"", 30);
    compare("window-limited", &sc, &[1], 0.02);
}

#[test]
#[ignore = "needs ns-2"]
fn link_limited_with_drops() {
    let sc = two_hosts("2Mbps", "30ms", 10, "\"none\"", "cc = \"newreno\"", 40);
    let mut sc = sc;
    for f in &mut sc.flows {
        f.sink.rwnd = 200 * f.tcp.mss;
    }
    compare("link-limited", &sc, &[1], 0.02);
}

#[test]
#[ignore = "needs ns-2"]
fn newreno_random_loss_mean_over_seeds() {
    // 1% Bernoulli loss on the bottleneck's data direction. ns-2's RNG and
    // ours draw different loss patterns: compare the mean over 16 seeds.
    let mut sc = two_hosts(
        "5Mbps",
        "40ms",
        100,
        "{ kind = \"bernoulli\", p = 0.01 }",
        "cc = \"newreno\"",
        60,
    );
    for f in &mut sc.flows {
        f.sink.rwnd = 200 * f.tcp.mss;
    }
    compare("newreno-1%-loss", &sc, &(1..=16).collect::<Vec<_>>(), 0.05);
}

#[test]
#[ignore = "needs ns-2"]
fn reno_and_sack_link_limited() {
    for cc in ["reno", "sack"] {
        let sink = if cc == "sack" {
            "\n[defaults.sink]\nsack = true"
        } else {
            ""
        };
        let mut sc = two_hosts(
            "2Mbps",
            "30ms",
            10,
            "\"none\"",
            &format!("cc = \"{cc}\"{sink}"),
            40,
        );
        for f in &mut sc.flows {
            f.sink.rwnd = 200 * f.tcp.mss;
        }
        compare(&format!("{cc}-link-limited"), &sc, &[1], 0.02);
    }
}

#[test]
#[ignore = "needs ns-2"]
fn five_flow_dumbbell() {
    let sc = scenario(
        r#"
[scenario]
name = "dumbbell"
duration = "60s"
[defaults.tcp]
profile = "ns2"
cc = "newreno"
[defaults.sink]
rwnd = "100000B"
[[node]]
name = "s"
[[node]]
name = "r1"
kind = "router"
[[node]]
name = "r2"
kind = "router"
[[node]]
name = "d"
[[link]]
between = ["s", "r1"]
rate = "100Mbps"
delay = "2ms"
queue = { limit = 1000 }
[[link]]
between = ["r1", "r2"]
rate = "10Mbps"
delay = "20ms"
queue = { limit = 50 }
[[link]]
between = ["r2", "d"]
rate = "100Mbps"
delay = "2ms"
queue = { limit = 1000 }
[[flow]]
name = "f"
from = "s"
to = "d"
count = 5
stagger = "100ms"
[output]
series = []
"#,
    );
    compare("5-flow-dumbbell", &sc, &[1], 0.02);
}

#[test]
#[ignore = "needs ns-2"]
fn timeouts_dominate_at_5_percent_loss() {
    // ns-2's window_ of 20 and 5% loss: many recoveries end in a timeout,
    // so the RTO arithmetic (10 ms ticks, minrto_ before backoff) and
    // limited transmit matter (without limited transmit the ratio is 0.83).
    // A known gap remains (0.93, docs/tcp.md): the tolerance is 10%.
    let sc = two_hosts(
        "10Mbps",
        "20ms",
        100,
        "{ kind = \"bernoulli\", p = 0.05 }",
        "cc = \"newreno\"",
        60,
    );
    compare("newreno-5%-loss", &sc, &(1..=16).collect::<Vec<_>>(), 0.10);
}

/// SACK flows through a RED link with ns-2's automatic parameters (bytes
/// mode, gentle), as in Gschwandtner's dumbbell without the PEP, scaled
/// down: 10 flows, 20 Mbit/s, 100 ms. RED draws its drops from each
/// simulator's own RNG, so the mean over seeds is compared.
#[test]
#[ignore = "needs ns-2"]
fn sack_flows_through_auto_red() {
    let sc = scenario(
        r#"
[scenario]
name = "red-dumbbell"
duration = "120s"
[defaults.tcp]
profile = "ns2"
cc = "sack"
mss = "1000B"
[defaults.sink]
sack = true
rwnd = "10MB"
[[node]]
name = "s"
[[node]]
name = "a"
kind = "router"
[[node]]
name = "b"
kind = "router"
[[node]]
name = "d"
[[link]]
between = ["s", "a"]
rate = "100Mbps"
delay = "5ms"
queue = { limit = 1000 }
[[link]]
between = ["a", "b"]
rate = "20Mbps"
delay = "100ms"
queue = { kind = "red", auto = true, limit = 400 }
[[link]]
between = ["b", "d"]
rate = "100Mbps"
delay = "5ms"
queue = { limit = 1000 }
[[flow]]
name = "f"
from = "s"
to = "d"
count = 10
stagger = "100ms"
[output]
series = []
"#,
    );
    compare("sack-auto-red", &sc, &[1, 2, 3, 4], 0.03);
}

/// One SACK flow with `cc` for 300 s over [`two_hosts`]' path, its
/// receiver's window `rwnd` segments (so that only the path limits it).
fn one_sack_flow(cc: &str, rate: &str, delay: &str, q: u32, rwnd: u32) -> Scenario {
    let tcp = format!("cc = \"{cc}\"\n[defaults.sink]\nsack = true");
    let mut sc = two_hosts(rate, delay, q, "\"none\"", &tcp, 300);
    for f in &mut sc.flows {
        f.sink.rwnd = rwnd * f.tcp.mss;
    }
    sc
}

/// `cc = "cubic-ns2"` against ns-2's own `Agent/TCP/Linux` with
/// `select_ca cubic` (Linux 2.6.22's module, the Gschwandtner thesis's
/// tunnel): one SACK flow over a long link with a small DropTail queue,
/// where the beta decides how far below the pipe each loss leaves the
/// window. RFC 9438's CUBIC (beta 0.7) is run beside it to show the
/// comparison can tell them apart.
#[test]
#[ignore = "needs ns-2"]
fn linux_cubic_matches_ns2s_and_rfc_cubic_does_not() {
    require_ns("cubic-ns2");
    // (rate, one-way delay, queue): pipe 1200 packets and queue 50; pipe
    // 960 and queue 30.
    for (rate, delay, q) in [("50Mbps", "100ms", 50), ("20Mbps", "200ms", 30)] {
        let with = |cc: &str| one_sack_flow(cc, rate, delay, q, 100_000);
        let sc = with("cubic-ns2");
        let ns: f64 = ns_goodput(&sc, 1).iter().sum();
        let ours: f64 = sim_goodput(&sc).iter().sum();
        let rfc: f64 = sim_goodput(&with("cubic")).iter().sum();
        println!(
            "{rate} {delay} queue {q}: ns-2 {:.3} Mbit/s, cubic-ns2 {:.3} ({:.4}), \
             RFC 9438 cubic {:.3} ({:.4})",
            ns / 1e6,
            ours / 1e6,
            ours / ns,
            rfc / 1e6,
            rfc / ns
        );
        assert!(
            (ours / ns - 1.0).abs() < 0.01,
            "cubic-ns2/ns-2 = {}",
            ours / ns
        );
        assert!(rfc / ns < 0.97, "RFC 9438 cubic/ns-2 = {}", rfc / ns);
    }
}

/// `cubic-ns2` also runs ns-2's `Agent/TCP/Linux` recovery where it
/// decides the outcome: on a long fat pipe the first slow start
/// overshoots the queue by thousands of packets, and retransmissions are
/// lost in the same queue. The agent finds them by FACK's rule (data sent
/// after them is SACKed) and sends them again, and every ACK restarts its
/// timer; RFC 6675 recovery with an RFC 6298 timer left them to timeouts
/// here (27.5 Mbit/s, 12 RTOs, before either was modelled).
#[test]
#[ignore = "needs ns-2"]
fn linux_agent_repairs_lost_retransmissions_like_ns2s() {
    require_ns("cubic-ns2 recovery");
    // Pipe about 6,000 packets, queue 500: the Gschwandtner tunnel's path.
    let sc = one_sack_flow("cubic-ns2", "100Mbps", "250ms", 500, 1_000_000);
    let ns: f64 = ns_goodput(&sc, 1).iter().sum();
    let (ours, sim) = sim_run(&sc);
    let ours: f64 = ours.iter().sum();
    let timeouts = sim.sender(0).expect("sender").stats().timeouts;
    println!(
        "100Mbps 250ms queue 500: ns-2 {:.3} Mbit/s, cubic-ns2 {:.3} ({:.4}), {timeouts} timeouts",
        ns / 1e6,
        ours / 1e6,
        ours / ns
    );
    assert!(
        (ours / ns - 1.0).abs() < 0.03,
        "cubic-ns2/ns-2 = {}",
        ours / ns
    );
    assert_eq!(timeouts, 0);
}

/// ns-2's run of `sc` with seed 1: goodput per flow after the warm-up
/// (bit/s) and its counters.
fn ns_run(sc: &Scenario) -> (Vec<f64>, ns2::Counters) {
    let script = ns2::script(sc, Duration::from_secs(WARMUP_S), 1).expect("expressible");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.tcl");
    std::fs::write(&path, script).unwrap();
    let out = Command::new("ns").arg(&path).output().expect("run ns");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    let recs = ns2::parse(&stdout, sc.flows.len()).unwrap_or_else(|e| panic!("{e}\n{err}"));
    let c = ns2::parse_counters(&stdout, sc.flows.len()).unwrap_or_else(|e| panic!("{e}\n{err}"));
    let secs = sc.duration.as_secs_f64() - WARMUP_S as f64;
    let goodput = recs
        .iter()
        .map(|(a, b)| (b - a) as f64 * 8.0 / secs)
        .collect();
    (goodput, c)
}

/// `a` within `tol` (relative) of `b`, or within `slack` absolutely.
fn close(a: f64, b: f64, tol: f64, slack: f64) -> bool {
    (a - b).abs() <= (tol * b.abs()).max(slack)
}

/// ns-2's `Sack1` after a large loss: one SACK flow (window_ 10,000)
/// whose first slow start overshoots a DropTail queue by tens to hundreds
/// of packets, on four paths. Compared with ns-2: goodput after the
/// warm-up (5%), packets retransmitted and dropped at the bottleneck over
/// the whole run (15% or 5 packets), and no more than two retransmissions
/// at one instant (ns-2's pipe counter lets at most a partial ACK's two
/// out). With RFC 6675 recovery in the profile instead, goodput is 9%
/// and 63% above ns-2's on two paths and six retransmissions left at
/// one instant on another (docs/tcp.md).
#[test]
#[ignore = "needs ns-2"]
fn sack1_recovery_after_a_slow_start_overshoot() {
    require_ns("sack1 overshoot");
    let mut parted = Vec::new();
    for (rate, delay, q, dur) in [
        ("20Mbps", "50ms", 100, 20),
        ("10Mbps", "30ms", 50, 20),
        ("5Mbps", "100ms", 30, 30),
        ("50Mbps", "100ms", 100, 30),
    ] {
        let tcp = "cc = \"sack\"\n[defaults.sink]\nsack = true";
        let mut sc = two_hosts(rate, delay, q, "\"none\"", tcp, dur);
        for f in &mut sc.flows {
            f.sink.rwnd = 10_000 * f.tcp.mss;
        }
        let (ns_g, c) = ns_run(&sc);
        let (g, sim) = sim_run(&sc);
        let s = sim.sender(0).expect("sender").stats();
        let ns_rexmit = c.retransmitted[0].1;
        // The bottleneck r->b is link 1, forward.
        let ns_drops = c
            .queue_drops
            .iter()
            .find(|(k, _)| *k == (1, 0))
            .map(|(_, v)| v.1)
            .expect("r->b monitored");
        let drops = sim.link("r->b").expect("link").queue.stats.dropped;
        // The most retransmissions sent at one instant.
        let rtx = sim.retransmissions(0);
        let burst = rtx
            .chunk_by(|a, b| a.at == b.at)
            .map(<[_]>::len)
            .max()
            .unwrap_or(0);
        println!(
            "{rate} {delay} queue {q}: goodput ns-2 {:.3} sim {:.3} Mbit/s; \
             retransmitted ns-2 {ns_rexmit} sim {}; drops ns-2 {ns_drops} sim {drops}; \
             sim timeouts {}, most retransmissions at one instant {burst}",
            ns_g[0] / 1e6,
            g[0] / 1e6,
            s.retransmitted_segments,
            s.timeouts
        );
        let mut check = |ok: bool, what: &str| {
            if !ok {
                parted.push(format!("{rate} {delay} queue {q}: {what}"));
            }
        };
        check(close(g[0], ns_g[0], 0.05, 0.0), "goodput");
        check(
            close(s.retransmitted_segments as f64, ns_rexmit as f64, 0.15, 5.0),
            "retransmissions",
        );
        check(close(drops as f64, ns_drops as f64, 0.15, 5.0), "drops");
        // ACK-clocked: an ACK releases at most two (a partial ACK's).
        check(burst <= 2, "retransmissions at one instant");
    }
    assert!(parted.is_empty(), "sim and ns-2 part: {parted:?}");
}
