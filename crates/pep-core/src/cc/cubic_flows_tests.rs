//! cubic-flows (`cubic_flows.rs`) under both recovery axes: QUIC's
//! recovery period ([`QuicCongestion`], what the daemon runs) and TCP's
//! SACK recovery ([`Congestion`], what the simulator's tunnel runs),
//! against RFC 9438's curve and the N-flow cut.

use super::cubic_flows::{MAX_FLOWS, SLOW_START_BETA};
use super::*;

const MTU: u16 = 1200;
const M: u64 = MTU as u64;
const RTT: Duration = Duration::from_millis(250);
const BETA: f64 = cubic_curve::BETA;
const C: f64 = cubic_curve::C;

fn at(t: Duration) -> Instant {
    Instant::ZERO + t
}

/// A window of `w` bytes in congestion avoidance without a loss behind
/// it, the curve starting at time zero with W_max = w.
fn at_window(w: u64) -> QuicCongestion {
    let mut c = QuicCongestion::new(Growth::CubicFlows, MTU, 2 * w);
    // Persistent congestion out of slow start: ssthresh w, the minimum
    // window, no curve; slow start back to w, then one ACK in congestion
    // avoidance starts the curve there.
    c.on_congestion_event(Instant::ZERO, Instant::ZERO, true);
    assert_eq!((c.window(), c.ssthresh()), (2 * M, w));
    c.on_ack(Instant::ZERO, Instant::ZERO, w - 2 * M, false, RTT);
    c.on_ack(Instant::ZERO, Instant::ZERO, 1, false, RTT);
    assert_eq!(c.window(), w);
    c
}

fn close(a: u64, b: f64, tol: f64) -> bool {
    (a as f64 - b).abs() <= tol
}

#[test]
fn one_loss_costs_one_flows_share() {
    for (flows, beta) in [(1, 0.7), (2, 0.85), (20, 0.985), (100, 1.0 - 0.3 / 32.0)] {
        let mut c = at_window(3_000_000);
        c.set_flows(flows);
        c.on_congestion_event(at(RTT), at(RTT), false);
        let want = 3_000_000.0 * beta;
        assert!(
            close(c.window(), want, 2.0),
            "{flows} flows: {} against {want}",
            c.window()
        );
        // A loss of a packet sent before the cut is the same event.
        c.on_congestion_event(at(RTT * 2), at(RTT / 2), false);
        c.on_congestion_event(at(RTT * 2), at(RTT), false);
        assert!(close(c.window(), want, 2.0));
        // A later one is another flow's: (1 - 0.3 / N) again.
        c.on_congestion_event(at(RTT * 3), at(RTT * 2), false);
        let want = want * beta;
        assert!(
            close(c.window(), want, 3.0),
            "{flows} flows, second event: {} against {want}",
            c.window()
        );
    }
    assert_eq!(MAX_FLOWS, 32);
}

/// Acks a window's worth per RTT, packet by packet, from `from` until the
/// window first reaches `target`; returns when, in seconds.
fn time_to_reach(c: &mut QuicCongestion, from: Instant, target: u64, limit: f64) -> f64 {
    let step = Duration::from_millis(10);
    let mut now = from;
    while c.window() < target {
        now += step;
        let packets = c.window() as f64 / M as f64 * step.as_secs_f64() / RTT.as_secs_f64();
        for _ in 0..packets.round().max(1.0) as u64 {
            c.on_ack(now, now, M, false, RTT);
        }
        let t = (now - from).as_secs_f64();
        assert!(t < limit, "window {} after {t} s", c.window());
    }
    (now - from).as_secs_f64()
}

#[test]
fn the_window_follows_the_cubic_curve_back_to_w_max() {
    // RFC 9438: W(t) = C (t - K)^3 + W_max, K = cbrt(W_max (1 - beta) / C)
    // in packets, so W_max - 1 packet is reached cbrt(1 / C) before K; the
    // curve is evaluated one RTT ahead and the window trails it by about
    // one: within two RTTs of that.
    let w = 2_000 * M;
    for flows in [1, 20] {
        let beta = (flows as f64 - 1.0 + BETA) / flows as f64;
        let k = libm::cbrt(2_000.0 * (1.0 - beta) / C);
        let want = k - libm::cbrt(1.0 / C);
        let mut c = at_window(w);
        c.set_flows(flows);
        let lost = at(RTT);
        c.on_congestion_event(lost, lost, false);
        let t = time_to_reach(&mut c, lost, w - M, 60.0);
        let rtt = RTT.as_secs_f64();
        assert!(
            (t - want).abs() < 2.0 * rtt,
            "{flows} flows: W_max - 1 after {t:.2} s, expected {want:.2} s (K = {k:.2} s)"
        );
    }
}

#[test]
fn a_loss_in_slow_start_halves_the_window() {
    let mut c = QuicCongestion::new(Growth::CubicFlows, MTU, 12_000);
    c.set_flows(20);
    c.on_ack(Instant::ZERO, Instant::ZERO, 1_000_000, false, RTT);
    let w = c.window();
    c.on_congestion_event(at(RTT), at(RTT), false);
    assert_eq!(c.window(), (w as f64 * SLOW_START_BETA) as u64);
    c.on_congestion_event(at(RTT), at(RTT / 2), false);
    assert_eq!(c.window(), w / 2);
    // Then congestion avoidance, where a loss is one flow's of 20.
    let w = c.window();
    c.on_congestion_event(at(RTT * 3), at(RTT * 2), false);
    assert_eq!(c.window(), (w as f64 * 0.985) as u64);
}

#[test]
fn persistent_congestion_restarts_from_the_minimum() {
    let mut c = at_window(1_000_000);
    c.set_flows(20);
    c.on_congestion_event(at(RTT), at(RTT), true);
    assert_eq!(c.window(), 2 * M);
    // Slow start again up to the ssthresh the loss set.
    assert_eq!(c.ssthresh(), (1_000_000.0 * 0.985) as u64);
}

#[test]
fn slow_start_doubles_per_round_and_recovery_acks_do_not_grow() {
    let mut c = QuicCongestion::new(Growth::CubicFlows, MTU, 12_000);
    let w0 = c.window();
    c.on_ack(Instant::ZERO, Instant::ZERO, w0, false, RTT);
    assert_eq!(c.window(), 2 * w0);
    // Application-limited ACKs do not grow the window.
    c.on_ack(Instant::ZERO, Instant::ZERO, w0, true, RTT);
    assert_eq!(c.window(), 2 * w0);
    // Nor do ACKs of packets sent before the recovery period began.
    c.on_congestion_event(at(RTT), at(RTT), false);
    let w = c.window();
    c.on_ack(at(RTT * 2), at(RTT), 10 * M, false, RTT);
    assert_eq!(c.window(), w);
    c.on_ack(at(RTT * 2), at(RTT * 2), 10 * M, false, RTT);
    assert!(c.window() >= w, "an ACK after the period may grow");
}

/// The simulator's tunnel: cubic-flows under TCP's SACK recovery. A loss
/// detected by duplicate ACKs cuts as QUIC's congestion event does, at the
/// time of the ACK that detected it, and the curve then grows the same.
#[test]
fn under_tcp_sack_recovery_the_cut_and_the_curve_are_quic_s() {
    let cfg = CcConfig {
        growth: Growth::CubicFlows,
        recovery: Recovery::Sack,
        initial_window: 12_000,
        ..CcConfig::new(MTU as u32)
    };
    let mut tcp = Congestion::new(&cfg, Seq(0));
    let mut quic = QuicCongestion::new(Growth::CubicFlows, MTU, 12_000);
    tcp.set_flows(8);
    quic.set_flows(8);
    tcp.on_rtt_sample(RTT, RTT);
    // Slow start to 60 segments.
    let mut una = Seq(0);
    for k in 0..48u64 {
        let now = at(Duration::from_millis(k));
        una += M as u32;
        tcp.on_new_ack(now, una, M as u32);
        quic.on_ack(now, now, M, false, RTT);
        assert_eq!(tcp.cwnd(), quic.window());
    }
    // A loss, found by the third duplicate ACK at 100 ms: slow start ends,
    // halved; recovery runs until all sent before it is acknowledged.
    let max = una + 60 * M as u32;
    let lost = at(Duration::from_millis(100));
    for _ in 0..3 {
        tcp.on_dupack(lost, una, max);
    }
    quic.on_congestion_event(lost, lost, false);
    assert_eq!(
        (tcp.cwnd(), tcp.ssthresh()),
        (quic.window(), quic.ssthresh())
    );
    tcp.on_new_ack(at(Duration::from_millis(300)), max, M as u32);
    assert!(!tcp.in_recovery());
    // Congestion avoidance: one ACK per segment, the same curve.
    let mut una = max;
    for k in 0..2_000u64 {
        let now = at(Duration::from_millis(400 + k));
        una += M as u32;
        tcp.on_new_ack(now, una, M as u32);
        quic.on_ack(now, now, M, false, RTT);
        assert_eq!(tcp.cwnd(), quic.window(), "ACK {k}");
    }
    // A second loss: one virtual flow of 8 backs off.
    let w = tcp.cwnd();
    let now = at(Duration::from_millis(2_500));
    for _ in 0..3 {
        tcp.on_dupack(now, una, una + 100 * M as u32);
    }
    assert_eq!(tcp.cwnd(), ((w as f64) * (7.0 + BETA) / 8.0) as u64);
}
