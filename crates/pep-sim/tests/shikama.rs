//! The split-connection agent (`split`) and Shikama's observations on the
//! paper's network (scenarios/shikama/): exact relaying, backpressure,
//! forward data bounded by the wireless window, bursts that follow forward
//! data, and the queue they build at the wired bottleneck.

use std::path::PathBuf;

use pep_sim::agent::split::Split;
use pep_sim::agent::split_stats::ks_distance;
use pep_sim::{Scenario, Simulation};

fn scenario(file: &str, overrides: &[(&str, toml::Value)]) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/shikama")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("scenario file");
    let o: Vec<(String, toml::Value)> = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    Scenario::from_toml_str_with(&text, file, &o).expect("valid scenario")
}

fn s(v: &str) -> toml::Value {
    toml::Value::String(v.into())
}

fn split(sim: &Simulation) -> &Split {
    sim.agent("pep")
        .expect("agent")
        .as_any()
        .downcast_ref::<Split>()
        .expect("split agent")
}

/// Time-averaged packets queued at n2 (toward n3), from the 10 ms samples,
/// after the first `skip` seconds.
fn n2_queue(sim: &Simulation, skip: f64) -> (f64, u32) {
    let q = &sim.metrics().queues;
    // Ports are in link order, forward then reverse: "wired" is link 2, so
    // n2->n3 is port 4.
    let rows: Vec<u32> = q
        .iter()
        .filter(|r| r.port == 4 && r.t.as_secs_f64() >= skip)
        .map(|r| r.packets)
        .collect();
    let mean = rows.iter().map(|&p| p as f64).sum::<f64>() / rows.len().max(1) as f64;
    (mean, rows.iter().copied().max().unwrap_or(0))
}

#[test]
fn every_byte_arrives_in_order_through_the_split() {
    // A finite transfer, no loss: the destination gets exactly what the
    // source sent, the relay passed every byte once, and the FIN follows.
    let sc = scenario(
        "pep.toml",
        &[
            ("scenario.duration", s("20s")),
            ("link[wireless].forward.loss.p", toml::Value::Float(0.01)),
            (
                "flow[f].source",
                toml::Value::Table(toml::toml! { kind = "finite"
                size = "3000000B" }),
            ),
        ],
    );
    let mut sim = Simulation::new(&sc);
    sim.run();
    let sink = sim.sink(0);
    assert_eq!(sink.delivered_bytes(), 3_000_000);
    assert!(sink.fin_received());
    assert_eq!(sink.stats().bytes_dropped, 0);
    let leg = &split(&sim).legs()[0];
    let r = leg.relay.stats();
    assert_eq!((r.bytes_in, r.bytes_out), (3_000_000, 3_000_000));
    assert_eq!(leg.written(), 3_000_000);
    // The wired leg never lost anything (unlimited queues): every
    // retransmission was on the wireless leg, by the source.
    let ws = leg.sender.as_ref().unwrap().stats();
    assert_eq!(ws.retransmitted_segments, 0);
    assert!(sim.sender(0).unwrap().stats().retransmitted_segments > 0);
    assert!(sim.sender(0).unwrap().is_complete());
}

#[test]
fn a_slow_second_leg_fills_the_relay_and_closes_the_first_legs_window() {
    // Wired bottleneck 1 Mbit/s against 5 Mbit/s wireless; relay and send
    // buffers of 30 KB each.
    let sc = scenario(
        "pep.toml",
        &[
            ("scenario.duration", s("30s")),
            ("link[wireless].forward.loss.p", toml::Value::Float(0.0)),
            ("link[wired].rate", s("1Mbit/s")),
            ("agent[0].buffer", s("30000B")),
            ("agent[0].sndbuf", s("30000B")),
        ],
    );
    let mut sim = Simulation::new(&sc);
    sim.run();
    let pep = split(&sim);
    let leg = &pep.legs()[0];
    let r = leg.relay.stats();
    assert!(r.max_held <= 30_000, "{}", r.max_held);
    assert!(r.fills > 0, "the relay never filled");
    // The window the PEP advertised fell from 128 KB to (nearly) nothing:
    // under two segments, where the receiver's window-update rule (BSD:
    // two segments opened) takes over, at some sample.
    let min_rwnd = sim
        .agent_rows()
        .iter()
        .filter(|row| row.name == "wireless_rwnd_bytes" && row.t.as_secs_f64() > 5.0)
        .map(|row| row.value)
        .fold(f64::INFINITY, f64::min);
    assert!(min_rwnd < 2.0 * 1460.0, "min window {min_rwnd}");
    // So the source is held to the second leg's rate, with nothing dropped
    // anywhere: 1 Mbit/s x 1460/1500 of payload, less the start-up.
    let sum = sim.summary();
    let g = sum.flows[0].goodput_mbps;
    assert!((0.85..=0.98).contains(&g), "goodput {g}");
    assert_eq!(sum.flows[0].retransmitted_segments, 0);
    // What the source has had acknowledged but the destination has not
    // received is bounded by the PEP's buffers: receive window, relay and
    // send buffer.
    let acked_by_pep = sim.sender(0).unwrap().bytes_acked();
    let at_dst = sim.sink(0).delivered_bytes();
    assert!(
        acked_by_pep - at_dst <= 128 * 1024 + 30_000 + 30_000,
        "{acked_by_pep} - {at_dst}"
    );
}

#[test]
fn pep_forward_data_and_bursts_at_one_in_a_thousand() {
    // Forward data are bounded by the wireless window (128 KB: 89.8
    // segments); at P_L = 0.001 large ones occur, and leave as bursts of
    // the same sizes on the 100 Mbit/s interface.
    let sc = scenario("pep.toml", &[("scenario.duration", s("120s"))]);
    let mut sim = Simulation::new(&sc);
    sim.run();
    let pep = split(&sim);
    let fwd = pep.forward();
    let window_segments = 128.0 * 1024.0 / 1460.0;
    let max_fwd = fwd.max as f64 / 1460.0;
    assert!(max_fwd <= window_segments, "{max_fwd}");
    assert!(max_fwd > 30.0, "largest forward data {max_fwd} segments");
    let b = pep.bursts().expect("burst meter");
    let bursts = b.sizes();
    assert!(
        b.largest() as f64 <= window_segments + 1.0,
        "{}",
        b.largest()
    );
    let big: u64 = bursts.iter().skip(30).sum();
    assert!(big > 0, "no burst of 30+ segments");
    let d = ks_distance(&fwd.sizes, &bursts).unwrap();
    assert!(d < 0.1, "KS distance {d}");
    // Most forward data are single segments, which makes the distance
    // above small by construction: the tails (three segments and more;
    // pairs also come from the wired leg's slow start, two segments per
    // ACK) must match too.
    let tail = ks_distance(&fwd.sizes[3..], &bursts[3..]).unwrap();
    assert!(tail < 0.15, "KS distance of the tails {tail}");
}

#[test]
fn the_pep_queues_at_n2_and_end_to_end_does_not() {
    let run = |file: &str, p: f64, extra: &[(&str, toml::Value)]| {
        let mut o = vec![
            ("scenario.duration", s("150s")),
            ("link[wireless].forward.loss.p", toml::Value::Float(p)),
        ];
        o.extend_from_slice(extra);
        let mut sim = Simulation::new(&scenario(file, &o));
        sim.run();
        let (mean, max) = n2_queue(&sim, 5.0);
        (sim.summary().flows[0].goodput_mbps, mean, max)
    };
    let (g_e2e, q_e2e, max_e2e) = run("e2e.toml", 0.001, &[]);
    let (g_pep, q_pep, _) = run("pep.toml", 0.001, &[]);
    // End to end, the source is clocked by the 5 Mbit/s link: n2 sees at
    // most a packet or two.
    assert!(
        q_e2e < 0.1 && max_e2e <= 2,
        "e2e queue {q_e2e} max {max_e2e}"
    );
    assert!(q_pep > 5.0 * q_e2e.max(0.2), "pep queue {q_pep}");
    assert!(g_pep > g_e2e, "pep {g_pep} e2e {g_e2e}");
    // Shaping between the legs at the bottleneck's rate removes the queue
    // and keeps the throughput.
    let (g_shaped, q_shaped, _) = run("pep.toml", 0.001, &[("agent[0].shape_rate", s("6Mbit/s"))]);
    assert!(q_shaped * 5.0 <= q_pep, "shaped {q_shaped} vs {q_pep}");
    assert!(g_shaped >= 0.97 * g_pep, "shaped {g_shaped} vs {g_pep}");
}

#[test]
fn bad_agent_parameters_are_named() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/shikama/pep.toml");
    let text = std::fs::read_to_string(path).unwrap();
    for (field, value, expect) in [
        ("agent[0].shape_rate", s("fast"), "shape_rate"),
        ("agent[0].mitigation", s("magic"), "unknown mitigation"),
        (
            "agent[0].mitigation",
            s("shape-0M"),
            "agent[0].mitigation: \"shape-0M\": the shaping rate must be positive",
        ),
        ("agent[0].buffer", s("0B"), "must be positive"),
        ("agent[0].windw", s("1KB"), "windw"),
    ] {
        let err = Scenario::from_toml_str_with(&text, "pep.toml", &[(field.to_string(), value)])
            .unwrap_err()
            .to_string();
        assert!(err.contains(expect), "{field}: {err}");
        assert!(err.contains("agent[0]"), "{field}: {err}");
    }
}

#[test]
fn window_validation_keeps_the_application_limited_wired_window_small() {
    // The wired leg is fed at most 4.86 Mbit/s by the wireless leg and never
    // loses a packet, so without RFC 7661 its cwnd grows on every ACK, for
    // ever; with it, cwnd grows only while the data acknowledged per RTT
    // (pipeACK) is at least half of cwnd, which only the repair bursts
    // reach: it settles near the largest burst's flight.
    let cwnd = |m: &str, d: &str| {
        let sc = scenario(
            "pep.toml",
            &[("scenario.duration", s(d)), ("agent[0].mitigation", s(m))],
        );
        let mut sim = Simulation::new(&sc);
        sim.run();
        split(&sim).legs()[0].sender.as_ref().unwrap().cwnd() as f64
    };
    let (plain, plain_later) = (cwnd("pacing", "150s"), cwnd("pacing", "300s"));
    let (valid, valid_later) = (cwnd("pacing-cwv", "150s"), cwnd("pacing-cwv", "300s"));
    assert!(plain > 256.0 * 1024.0, "unvalidated cwnd {plain}");
    assert!(plain_later > 1.2 * plain, "{plain} -> {plain_later}");
    // Twice the wireless window bounds any flight a repaired block needs.
    assert!(valid < 2.0 * 128.0 * 1024.0, "validated cwnd {valid}");
    assert!(valid_later < 1.1 * valid, "{valid} -> {valid_later}");
}
