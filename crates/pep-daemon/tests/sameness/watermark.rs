//! Sameness of the watermark PEP (`pep_core::watermark`, premature ACKs)
//! in the daemon and in the simulator: one scripted exchange of three
//! connections (handshake, data from the server, ACKs from the client,
//! with stalls, duplicate ACKs and the sender's own retransmissions)
//! through the daemon's watermark stage (`[packet.watermark]`, data frames
//! from side `b`, ACK frames from `a`) and through the simulator's agent
//! (`kind = "watermark"`) gives the same packets out, at the same times,
//! in the same order, in the same direction, with the same fields: what
//! one forwards, resends from its buffer, ACKs prematurely, passes or
//! drops, the other does too.
//!
//! The receivers scale their windows (shift 0, 1 and 2): the daemon learns
//! the shift from the SYN-ACK and the core works in bytes, as the
//! simulator's segments carry them; both sides are compared as the frame
//! carries the window.
//!
//! Compared apart from one field: the TSval of a segment the daemon
//! resends from its buffer is raised to the sender's newest (the
//! receiver's PAWS check would discard it, `packet::watermark`); the
//! simulator's receiver has no PAWS check, so its copy keeps its own.

use pep_core::watermark::WatermarkConfig;
use pep_core::{Flags, FlowId, Instant, Segment, Seq, Timestamps};
use pep_daemon::packet::{PacketSettings, WatermarkSettings};

use super::{after, assert_same, drive, pure_ack, rng, Daemon, Seen, Sim, Step};

const N: usize = 12;
const W: usize = 6;
const MSS: u32 = 1000;

fn isn(f: usize) -> u32 {
    10_000 * (f as u32 + 1)
}

/// The receiver's window in bytes (a multiple of its scale).
fn rwnd(f: usize) -> u32 {
    40_000 << f
}

/// The script: each flow's handshake, then data from the server in
/// bursts and pauses (now and then a segment of its own sent again), and
/// ACKs from the client that trail the data, stall (duplicate ACKs) and
/// jump, and go quiet for longer than the PEP's timer.
fn script(seed: u64) -> Vec<Step> {
    let mut next = rng(seed);
    let mut v = vec![];
    let mut t = Instant::ZERO;
    let mut sent = [0u32; 3]; // bytes sent after the SYN
    let mut acked = [0u32; 3];
    let mut tsval = 1u32;
    let ts = |val: u32, ecr: u32| Some(Timestamps { val, ecr });
    for f in 0..3usize {
        let flow = f as u32;
        let syn = Segment {
            flow: FlowId(flow),
            seq: Seq(isn(f)),
            flags: Flags::SYN,
            wnd: 65535,
            ts: ts(tsval, 0),
            hdr_len: 60,
            ..Default::default()
        };
        v.push(Step {
            at: t,
            flow,
            seg: syn,
            from_client: false,
            wscale: Some(7),
        });
        t = after(t, 3_001);
        let syn_ack = Segment {
            flow: FlowId(flow),
            seq: Seq(5),
            ack: Seq(isn(f) + 1),
            flags: Flags::SYN | Flags::ACK,
            wnd: 65535,
            ts: ts(900, tsval),
            hdr_len: 60,
            ..Default::default()
        };
        v.push(Step {
            at: t,
            flow,
            seg: syn_ack,
            from_client: true,
            wscale: Some(f as u8),
        });
        t = after(t, 1_003);
    }
    for i in 0..2000u32 {
        t = after(
            t,
            match next(30) {
                0 => 700_000, // past the PEP's timer
                1..=4 => 0,
                _ => 50 + next(3_000),
            },
        );
        let f = next(3) as usize;
        let flow = f as u32;
        let base = isn(f) + 1;
        let from_client = next(2) != 0;
        let seg = if !from_client {
            // Data from the server: new, or now and then old.
            let seq = if next(30) == 0 && sent[f] > acked[f] {
                acked[f] + MSS * next(((sent[f] - acked[f]) / MSS).max(1) as u64) as u32
            } else {
                sent[f] += MSS;
                sent[f] - MSS
            };
            tsval += 1;
            Segment {
                seq: Seq(base + seq),
                ack: Seq(6),
                len: MSS,
                wnd: 65535,
                ts: ts(tsval, 900 + i),
                ..pure_ack(flow, 0)
            }
        } else {
            // An ACK from the client: stalled (a duplicate) or advanced.
            if next(4) != 0 && sent[f] > acked[f] {
                acked[f] += MSS * (1 + next(((sent[f] - acked[f]) / MSS) as u64) as u32);
            }
            Segment {
                seq: Seq(6),
                ack: Seq(base + acked[f]),
                wnd: rwnd(f),
                ts: ts(1000 + i, tsval),
                ..pure_ack(flow, 0)
            }
        };
        v.push(Step {
            at: t,
            flow,
            seg,
            from_client,
            wscale: from_client.then_some(f as u8),
        });
    }
    v
}

/// What left, with the TSval of data toward the client left out (see the
/// module's doc).
fn comparable(mut run: Vec<Seen>) -> Vec<Seen> {
    for s in &mut run {
        if !s.to_b && s.len > 0 {
            s.ts = s.ts.map(|(_, ecr)| (0, ecr));
        }
    }
    run
}

#[test]
fn the_daemon_and_the_simulator_premature_ack_forward_and_resend_the_same_packets() {
    for seed in [0x9e37_79b9_7f4a_7c15, 7, 0xdead_beef] {
        let s = script(seed);
        let mut d = Daemon::new(PacketSettings {
            watermark: Some(WatermarkSettings {
                core: WatermarkConfig::new(N, W),
                flows: 16,
            }),
            ..PacketSettings::new("a", "b")
        });
        let mut a = Sim::new("watermark", &format!("buffer = {N}\nwatermark = {W}"));
        a.scales = [0, 1, 2];
        let on_daemon = comparable(drive(&s, &mut d));
        let on_sim = comparable(drive(&s, &mut a));
        assert_same(&on_daemon, &on_sim, &format!("seed {seed:#x}"));
        // The script exercises every action.
        let st = a.agent.stats();
        let n = |k: &str| st[k].as_u64().unwrap();
        assert!(
            n("premature_acks") > 200
                && n("local_retransmits") > 20
                && n("dropped_acks") > 50
                && n("passed_acks") > 50
                && n("timeouts") > 10
                && n("fast_repairs") > 2
                && n("through") + n("held_back") > 0,
            "seed {seed:#x}: {st}"
        );
        let ds = d.0.stats().watermark;
        assert_eq!(ds.premature_acks, n("premature_acks"));
        assert_eq!(ds.local_retransmits, n("local_retransmits"));
    }
}
