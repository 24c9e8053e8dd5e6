//! Sameness of cubic-flows in the daemon and in the simulator: one
//! scripted sequence of ACKs and losses, with times, through the daemon's
//! quinn adapter ([`Adapter`], QUIC's recovery period) and through the
//! core controller as the simulator's split-pair tunnel runs it
//! (`pep_core::cc::Congestion` with `Growth::CubicFlows` and SACK
//! recovery, driven with the calls the simulator's TCP sender makes),
//! gives the same window after every step.
//!
//! One test reaches both because both are here: the adapter is private to
//! the daemon, and the simulator's use is the core controller with the
//! tunnel's configuration (`pep-sim/src/agent/split_pair.rs`, `tunnel_cc
//! = "cubic-flows"`). The script is in each transport's own terms: a loss
//! is a congestion event for quinn and three duplicate ACKs for TCP; the
//! ACKs of packets sent before a loss are partial ACKs in TCP's recovery
//! (the last one ends it) and ACKs of packets sent before the recovery
//! period for quinn.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pep_core::cc::{CcConfig, Congestion, Growth, Recovery};
use pep_core::Seq;
use quinn::congestion::Controller;

use super::Adapter;
use crate::metrics::Metrics;

const MTU: u16 = 1200;
const M: u64 = MTU as u64;
const RTT: Duration = Duration::from_millis(100);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Step {
    /// A packet sent after any loss so far is acknowledged.
    Ack { ms: u64, bytes: u64 },
    /// A loss; `flows` are open on the tunnel.
    Loss { ms: u64, flows: i64 },
    /// A loss of a packet sent before the last one was found.
    SameLoss { ms: u64 },
    /// A packet sent before the last loss is acknowledged.
    OldAck { ms: u64, bytes: u64 },
}

/// Slow start, a loss that ends it, then congestion avoidance with losses
/// at 8, 1 and 50 (beyond the cap) flows, each with its same-event losses
/// and the ACKs still in flight.
fn script() -> Vec<Step> {
    let mut v = vec![];
    let mut ms = 0;
    let mut tick = |d: u64| {
        ms += d;
        ms
    };
    for k in 0..40 {
        v.push(Step::Ack {
            ms: tick(2),
            bytes: M + 7 * k,
        });
    }
    for flows in [4, 8, 1, 50] {
        v.push(Step::Loss { ms: tick(1), flows });
        v.push(Step::SameLoss { ms: tick(3) });
        for k in 0..5 {
            v.push(Step::OldAck {
                ms: tick(4),
                bytes: M * (k + 1),
            });
        }
        v.push(Step::SameLoss { ms: tick(1) });
        v.push(Step::OldAck {
            ms: tick(1),
            bytes: M,
        });
        // Sparse ACKs: the curve moves between them.
        for _ in 0..150 {
            v.push(Step::Ack {
                ms: tick(40),
                bytes: M,
            });
        }
    }
    v
}

/// The window after each step, through the daemon's quinn adapter.
fn through_quinn(script: &[Step]) -> Vec<u64> {
    let t0 = Instant::now();
    let metrics = Arc::new(Metrics::default());
    let mut a = Adapter::new(t0, MTU, metrics.clone());
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let mut lost_at = t0;
    let mut out = vec![];
    for s in script {
        match *s {
            Step::Ack { ms, bytes } => a.ack(at(ms), at(ms), bytes, false, RTT),
            Step::Loss { ms, flows } => {
                metrics.tunnel.flows_active.store(flows, Relaxed);
                a.on_congestion_event(at(ms), at(ms), false, M);
                lost_at = at(ms);
            }
            Step::SameLoss { ms } => a.on_congestion_event(at(ms), lost_at, false, M),
            Step::OldAck { ms, bytes } => a.ack(at(ms), lost_at, bytes, false, RTT),
        }
        out.push(a.window());
    }
    out
}

/// The window after each step, through the core controller configured as
/// the simulator's split-pair tunnel with `tunnel_cc = "cubic-flows"`,
/// driven as its TCP sender drives it.
fn through_sim_tcp(script: &[Step]) -> Vec<u64> {
    let cfg = CcConfig {
        growth: Growth::CubicFlows,
        recovery: Recovery::Sack,
        initial_window: Adapter::new(Instant::now(), MTU, Arc::default()).initial_window(),
        ..CcConfig::new(MTU as u32)
    };
    let mut cc = Congestion::new(&cfg, Seq(0));
    let rtt = pep_core::Duration(RTT.as_nanos() as u64);
    cc.on_rtt_sample(rtt, rtt);
    let at = |ms: u64| pep_core::Instant::ZERO + pep_core::Duration::from_millis(ms);
    let mut una = Seq(0);
    let mut out = vec![];
    for (i, s) in script.iter().enumerate() {
        match *s {
            Step::Ack { ms, bytes } | Step::OldAck { ms, bytes } => {
                una += bytes as u32;
                cc.on_new_ack(at(ms), una, bytes as u32);
            }
            Step::Loss { ms, flows } => {
                cc.set_flows(flows as u32);
                // Recovery lasts until what was in flight at the loss is
                // acknowledged: the old ACKs that follow it.
                let in_flight: u64 = script[i + 1..]
                    .iter()
                    .take_while(|s| !matches!(s, Step::Ack { .. } | Step::Loss { .. }))
                    .map(|s| match s {
                        Step::OldAck { bytes, .. } => *bytes,
                        _ => 0,
                    })
                    .sum();
                for _ in 0..3 {
                    cc.on_dupack(at(ms), una, una + in_flight as u32);
                }
                assert!(cc.in_recovery());
            }
            Step::SameLoss { ms } => {
                cc.on_dupack(at(ms), una, una);
            }
        }
        out.push(cc.cwnd());
    }
    out
}

#[test]
fn the_daemon_and_the_simulator_run_the_same_windows() {
    let s = script();
    let quinn = through_quinn(&s);
    let sim = through_sim_tcp(&s);
    assert_eq!(quinn, sim);
    // The script exercises what it claims: slow start doubling, four cuts
    // (the first out of slow start by half, then (N - 1 + 0.7) / N with N
    // capped at 32), and growth after each.
    let cut = |i: usize| quinn[i] as f64 / quinn[i - 1] as f64;
    let losses: Vec<usize> = (0..s.len())
        .filter(|&i| matches!(s[i], Step::Loss { .. }))
        .collect();
    let betas: Vec<f64> = losses.iter().map(|&i| cut(i)).collect();
    let want = [0.5, 7.7 / 8.0, 0.7, 31.7 / 32.0];
    for (b, w) in betas.iter().zip(want) {
        assert!((b - w).abs() < 1e-3, "cuts {betas:?}, expected {want:?}");
    }
    for &i in &losses {
        assert!(
            quinn[i + 158] > quinn[i],
            "no growth after the loss at step {i}"
        );
    }
}

/// The comparison is sharp: an adapter that drops an event that moves
/// the window, or swaps an ACK with a loss, gives other windows.
#[test]
fn a_dropped_or_reordered_event_changes_the_windows() {
    let s = script();
    let sim = through_sim_tcp(&s);
    let mut checked = 0;
    for i in 0..s.len() {
        if i > 0 && sim[i] != sim[i - 1] {
            let mut dropped = s.clone();
            dropped.remove(i);
            assert_ne!(through_quinn(&dropped), sim, "dropping step {i}");
            checked += 1;
        }
        if i + 1 < s.len()
            && matches!(
                (s[i], s[i + 1]),
                (Step::Ack { .. }, Step::Loss { .. }) | (Step::Loss { .. }, Step::OldAck { .. })
            )
        {
            let mut swapped = s.clone();
            swapped.swap(i, i + 1);
            assert_ne!(
                through_quinn(&swapped),
                sim,
                "swapping steps {i} and {}",
                i + 1
            );
            checked += 1;
        }
        if let Step::Ack { .. } = s[i] {
            let mut added = s.clone();
            added.insert(i, s[i]);
            assert_ne!(through_quinn(&added), sim, "repeating step {i}");
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} mutations");
}
