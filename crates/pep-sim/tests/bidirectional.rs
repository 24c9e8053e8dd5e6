//! Bidirectional transfers (`reverse` on a flow): data both ways on one
//! connection, ACKs piggybacked on data. Checked against window/RTT on a
//! symmetric path and against the AMP two-way table (`pep_core::amp`) on
//! the Shekhar et al. asymmetric path. docs/tcp.md lists the figures.

use pep_core::amp::{Path, TwoWay};
use pep_core::{Duration, Instant};
use pep_sim::{Scenario, Simulation};

fn scenario(text: &str) -> Scenario {
    crate::support::parse(text, "bidir")
}

fn at(secs: f64) -> Instant {
    Instant::ZERO + Duration::from_secs_f64(secs)
}

/// Forward and reverse delivered bytes at `t`.
fn delivered(sim: &mut Simulation, t: f64) -> (u64, u64) {
    sim.run_until(at(t));
    let fwd = sim.sink(0).delivered_bytes();
    let rev = sim
        .sender(0)
        .and_then(|s| s.reverse_sink())
        .map_or(0, |rx| rx.delivered_bytes());
    (fwd, rev)
}

/// Symmetric 10 Mbit/s, 20 ms each way; both ends window-limited at
/// `window_` 20 (ns-2 profile: 1000 B segments, 40 B headers), delayed
/// ACKs (2 segments, 100 ms). A held ACK goes out on the data the other
/// side's next ACK releases, and from then on each data segment arriving
/// frees one segment of the other side's window: the pure ACKs are a
/// handful at the start, and each direction gets W / RTT with RTT = 2 x 20
/// ms + two 1040 B serializations (the ACK travels in a data segment).
/// Tolerance 3%. (With an ACK per segment the two sides settle into the
/// other equilibrium, each ACK pure and sent before the window opens, as
/// real TCP would.)
#[test]
fn symmetric_path_piggybacks_nearly_every_ack_and_each_way_gets_window_over_rtt() {
    let text = r#"
[scenario]
name = "bidir-sym"
duration = "20s"
seed = 1
[defaults.tcp]
profile = "ns2"
[defaults.sink]
ack = "delayed"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "10Mbit/s"
delay = "20ms"
queue = { limit = 100 }
[[flow]]
name = "f"
from = "a"
to = "b"
source = "bulk"
reverse = "bulk"
[output]
series = []
"#;
    let mut sim = Simulation::new(&scenario(text));
    let (f0, r0) = delivered(&mut sim, 2.0);
    let (f1, r1) = delivered(&mut sim, 20.0);
    let secs = 18.0;
    let (fwd, rev) = ((f1 - f0) as f64 / secs, (r1 - r0) as f64 / secs);
    let wire = 1040.0 * 8.0 / 10e6;
    let rtt = 0.040 + 2.0 * wire;
    let expected = 20_000.0 / rtt;
    let sink = sim.sink(0).stats();
    let rx = *sim.sender(0).unwrap().reverse_sink().unwrap().stats();
    println!(
        "forward {:.4} reverse {:.4} of W/RTT = {expected:.0} B/s; \
         b: {} pure, {} piggybacked; a: {} pure, {} piggybacked",
        fwd / expected,
        rev / expected,
        sink.acks_sent,
        sink.acks_piggybacked,
        rx.acks_sent,
        rx.acks_piggybacked
    );
    for (dir, got) in [("forward", fwd), ("reverse", rev)] {
        assert!(
            (got / expected - 1.0).abs() < 0.03,
            "{dir}: {got:.0} B/s vs W/RTT {expected:.0} B/s"
        );
    }
    // Nearly every ACK rides on data, both ways.
    for (end, pure, piggy) in [
        ("b", sink.acks_sent, sink.acks_piggybacked),
        ("a", rx.acks_sent, rx.acks_piggybacked),
    ] {
        assert!(piggy > 5_000, "{end}: {piggy} piggybacked");
        assert!(
            (pure as f64) < 0.01 * piggy as f64,
            "{end}: {pure} pure ACKs vs {piggy} piggybacked"
        );
    }
}

/// The same path one way: every ACK is pure, none piggybacked (the
/// counters do not invent piggybacks).
#[test]
fn a_one_way_flow_sends_only_pure_acks() {
    let text = r#"
[scenario]
name = "oneway"
duration = "3s"
seed = 1
[defaults.tcp]
profile = "ns2"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "10Mbit/s"
delay = "20ms"
[[flow]]
name = "f"
from = "a"
to = "b"
[output]
series = []
"#;
    let mut sim = Simulation::new(&scenario(text));
    sim.run();
    let s = sim.sink(0).stats();
    assert_eq!(s.acks_piggybacked, 0);
    assert!(s.acks_sent > 1000);
    assert!(sim.sender(0).unwrap().reverse_sink().is_none());
}

/// Shekhar et al.'s path, 8 Mbit/s down / 64 kbit/s up, 10 ms, with the
/// two-class sharing the AMP two-way table assumes: data gets f = 0.997
/// of the downlink and g of the uplink. A bulk transfer each way on ONE
/// connection. The uplink's ACK class carries (1 - g) x 64 kbit/s / 320
/// bit ACKs per second, each releasing M = 1 packet (the 20-packet window
/// is full, so no growth), so the table predicts the downstream at
/// (1 - g) x Cr x M / P_ack packets/s; the upstream at g x Cr / P with P
/// the 1040 B wire packet. Tolerance 10% on both. With an ACK per segment
/// nothing is owed when the upstream window opens (the source's ACKs of the
/// upstream data arrive as pure ACKs, its own window being full), so the
/// destination's ACKs are all pure, as the table assumes.
#[test]
fn asymmetric_path_follows_the_amp_two_way_table() {
    let amp = |g: f64| TwoWay {
        path: Path {
            forward_bps: 8e6,
            reverse_bps: 64e3,
            data_bits: 1040.0 * 8.0,
            ack_bits: 320.0,
        },
        f: 0.997,
        g,
        m: 1.0,
    };
    let mut downs = vec![];
    for g in [0.25, 0.5, 0.75] {
        let text = format!(
            r#"
[scenario]
name = "bidir-amp"
duration = "60s"
seed = 1
[defaults.tcp]
profile = "ns2"
cc = "reno"
[[node]]
name = "src"
[[node]]
name = "dst"
[[link]]
name = "asym"
between = ["src", "dst"]
delay = "10ms"
[link.forward]
rate = "8Mbit/s"
queue = {{ kind = "two-class", data_share = 0.997, limit = 100 }}
[link.reverse]
rate = "64kbit/s"
queue = {{ kind = "two-class", data_share = {g}, limit = 100 }}
[[flow]]
name = "down"
from = "src"
to = "dst"
source = "bulk"
reverse = "bulk"
[output]
series = []
"#
        );
        let mut sim = Simulation::new(&scenario(&text));
        let (f0, r0) = delivered(&mut sim, 10.0);
        let (f1, r1) = delivered(&mut sim, 60.0);
        let secs = 50.0;
        // Packets/s of 1000 B payload.
        let down = (f1 - f0) as f64 / 1000.0 / secs;
        let up = (r1 - r0) as f64 / 1000.0 / secs;
        let r = amp(g).rates();
        let sink = sim.sink(0).stats();
        println!(
            "g = {g}: down {down:.1} pkt/s (AMP {:.1}, ratio {:.3}), up {up:.2} pkt/s \
             (AMP {:.2}, ratio {:.3}); dst sent {} pure ACKs, {} piggybacked",
            r.forward_packets,
            down / r.forward_packets,
            r.reverse_packets,
            up / r.reverse_packets,
            sink.acks_sent,
            sink.acks_piggybacked
        );
        assert!(
            (down / r.forward_packets - 1.0).abs() < 0.10,
            "g = {g}: downstream {down:.1} vs AMP {:.1} packets/s",
            r.forward_packets
        );
        assert!(
            (up / r.reverse_packets - 1.0).abs() < 0.10,
            "g = {g}: upstream {up:.2} vs AMP {:.2} packets/s",
            r.reverse_packets
        );
        downs.push(down);
    }
    // The reverse data competes with the ACKs: more uplink for data, less
    // downstream.
    assert!(downs.windows(2).all(|w| w[1] < w[0]), "{downs:?}");
}

/// Bad input is named: a Pareto reverse source is refused.
#[test]
fn a_pareto_reverse_source_is_a_named_error() {
    let text = r#"
[scenario]
name = "bad"
duration = "3s"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "10Mbit/s"
delay = "20ms"
[[flow]]
name = "f"
from = "a"
to = "b"
reverse = { kind = "pareto" }
"#;
    let e = Scenario::from_toml_str(text, "bad")
        .unwrap_err()
        .to_string();
    assert!(e.contains("flow \"f\".reverse"), "{e}");
    assert!(e.contains("pareto"), "{e}");
    let text = text.replace(
        "{ kind = \"pareto\" }",
        "{ kind = \"finite\", size = \"0B\" }",
    );
    let e = Scenario::from_toml_str(&text, "bad")
        .unwrap_err()
        .to_string();
    assert!(e.contains("flow \"f\".reverse.size"), "{e}");
}

/// PEP agents are written for one-way flows: one acting on a bidirectional
/// flow is a load-time error naming the agent's `flows`.
#[test]
fn an_agent_on_a_bidirectional_flow_is_a_named_error() {
    let text = r#"
[scenario]
name = "bad"
duration = "3s"
[[node]]
name = "a"
[[node]]
name = "r"
kind = "router"
[[node]]
name = "b"
[[link]]
between = ["a", "r"]
rate = "10Mbit/s"
delay = "5ms"
[[link]]
between = ["r", "b"]
rate = "10Mbit/s"
delay = "5ms"
[[flow]]
name = "f"
from = "a"
to = "b"
reverse = "bulk"
[[agent]]
kind = "meter"
node = "r"
"#;
    let e = Scenario::from_toml_str(text, "bad")
        .unwrap_err()
        .to_string();
    assert!(e.contains("agent[0].flows"), "{e}");
    assert!(e.contains("bidirectional"), "{e}");
}

/// Same scenario, same bytes; the summary's `reverse` matches the
/// endpoints, and a finite reverse transfer completes and closes while the
/// forward bulk transfer goes on (half-close).
#[test]
fn summaries_are_deterministic_and_report_the_reverse_direction() {
    let text = r#"
[scenario]
name = "bidir-summary"
duration = "5s"
seed = 7
[defaults.tcp]
profile = "linux"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "10Mbit/s"
delay = "10ms"
loss = { kind = "bernoulli", p = 0.01 }
[[flow]]
name = "f"
from = "a"
to = "b"
reverse = { kind = "finite", size = "200kB" }
[output]
series = []
"#;
    let run = || {
        let mut sim = Simulation::new(&scenario(text));
        sim.run();
        let json = serde_json::to_string(&sim.summary()).unwrap();
        (sim, json)
    };
    let (sim, a) = run();
    let (_, b) = run();
    assert_eq!(a, b);
    let s = sim.summary();
    let rev = s.flows[0].reverse.as_ref().expect("bidirectional");
    let rx = sim.sender(0).unwrap().reverse_sink().unwrap();
    assert_eq!(rev.delivered_bytes, 200_000);
    assert_eq!(rev.delivered_bytes, rx.delivered_bytes());
    assert!(rx.fin_received());
    assert!(sim.sink(0).reverse_sender().unwrap().is_closed());
    assert_eq!(rev.acks_piggybacked, rx.stats().acks_piggybacked);
    assert!(rev.acks_piggybacked > 0, "{rev:?}");
    // The forward transfer kept going after the reverse one ended.
    assert!(
        s.flows[0].delivered_bytes > 2_000_000,
        "{}",
        s.flows[0].delivered_bytes
    );
}
