//! Sameness of split start's local queue and credit in the daemon and in
//! the simulator: one scripted stream of data segments (three flows, new
//! data, holes, retransmissions and duplicates, bursts past the queue's
//! limit) through the daemon's driver (`tunnel::localq::Gate`: raw IPv4
//! packets in, verdicts out, the relays' read counters every tick) and
//! through the simulator's (`split-pair`'s `SplitPair`, packets at split
//! start, its own tunnel carried by a fixed-delay loop) gives the same
//! decisions, at the same times, in the same order: what one lets into the
//! stack or drops, the other does too. Both run `pep_core::localq` with the
//! daemon's configuration (`LocalQueueSettings::core`: the stall-proof
//! credit, checks on events and every millisecond).
//!
//! The simulator's tunnel decides when a flow's bytes count as written
//! (its first transmission of them); the daemon learns the same totals
//! from its relays' counters, read at each of those instants and at each
//! poll. Each decision names its packet by flow and sequence number, so an
//! adapter that drops, adds or reorders an action gives another sequence.
//!
//! Nine seeded scripts. The simulator's tunnel sends (so writes a
//! flow's bytes) in the middle of a check, as each admitted packet goes
//! out, where the daemon reads its relays' counters only between checks:
//! each run of writes in the gate's trace is one reading of the counters
//! here (it was one reading per simulator step, with the step's last
//! totals). The script that parted at decision 1251 (drawn from an
//! unrecorded `Stream::derive(7, ..)`) is not reproduced; seed 7 here is
//! another. Seeds 6 and 10 once sent both sides into a loop of drops: a
//! hole's filler waited in the local queue behind credit its own hole held
//! (fixed in `pep_core::localq`, `pass_filled`).

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use pep_core::rng::Stream;
use pep_core::{Duration, Flags, FlowId, Instant, Segment, Seq};
use pep_daemon::tunnel::localq::{FlowKey, Gate, LocalQueueSettings, LqPolicy, Verdict};
use pep_sim::agent::split_pair::{FlowEnds, GateEvent, SplitPair};
use pep_sim::agent::{NodeAgent, Outbox};
use pep_sim::tcp::{SinkConfig, TcpConfig};
use pep_sim::Packet;

use super::rng;

const FLOWS: u32 = 3;
const PAYLOAD: u32 = 1460;
/// IPv4 and TCP headers without options.
const HDR: u16 = 40;
const START: u32 = 0;
const END: u32 = 1;
const TUNNEL: FlowId = FlowId(1000);
/// One way across the tunnel (odd, so its deliveries miss the poll grid).
const DELAY: Duration = Duration::from_nanos(20_000_003);

/// A decision: when, which packet (flow, sequence), let in (true) or
/// dropped.
type Decisions = Vec<(Instant, u32, u32, bool)>;

fn settings() -> LocalQueueSettings {
    LocalQueueSettings {
        policy: LqPolicy::DropTail,
        limit: 40,
        buffer_start: 20 * 1500,
        check_interval: std::time::Duration::from_millis(1),
        rate: 10_000_000,
        nfqueue: 0,
        stall_after: std::time::Duration::from_millis(200),
    }
}

/// (time, flow, sequence): new data in bursts at up to about 60 Mbit/s,
/// with a segment skipped now and then (a hole, sent [`RESEND`] later), an
/// old one sent again (a duplicate), and pauses. The simulator's run adds
/// the resends of what its local queue dropped.
fn script(seed: u64) -> Vec<(Instant, u32, u32)> {
    let mut next = rng(seed);
    let mut high = [1u32; FLOWS as usize];
    let mut t = Instant::ZERO;
    let mut v = vec![];
    for _ in 0..3000 {
        // Gaps off the millisecond grid of the polls.
        t += Duration::from_nanos(match next(20) {
            0 => 30_000_017,
            1..=3 => 1_009,
            _ => 100_003 + 1_000 * next(300),
        });
        let f = next(FLOWS as u64) as u32;
        let h = &mut high[f as usize];
        let seq = match next(25) {
            0 => {
                // A hole: the next segment comes later.
                v.push((t + RESEND, f, *h));
                *h += 2 * PAYLOAD;
                *h - PAYLOAD
            }
            1 if *h > 1 + 5 * PAYLOAD => *h - PAYLOAD * (1 + next(5) as u32),
            _ => {
                *h += PAYLOAD;
                *h - PAYLOAD
            }
        };
        if seq == 0 || seq > *h {
            continue;
        }
        v.push((t, f, seq));
    }
    v.sort_by_key(|s| s.0);
    v
}

/// When a sender sends again what did not arrive (odd: off the poll grid).
const RESEND: Duration = Duration::from_nanos(50_000_011);

fn seg(f: u32, seq: u32) -> Segment {
    Segment {
        flow: FlowId(f),
        seq: Seq(seq),
        len: PAYLOAD,
        hdr_len: HDR,
        flags: Flags::ACK,
        wnd: 65535,
        ..Default::default()
    }
}

/// The simulator's side: the agent with the daemon's gate, the script at
/// split start, the tunnel's segments and ACKs carried across after
/// [`DELAY`], everything else left on the floor; a packet the local queue
/// drops is sent again [`RESEND`] later (as its sender would). Returns the
/// inputs in the order the gate saw them, and the decisions.
fn simulator(base: &[(Instant, u32, u32)]) -> (Vec<Input>, Decisions) {
    let flows = (0..FLOWS)
        .map(|f| FlowEnds {
            id: FlowId(f),
            src: 10 + f,
            dst: 20 + f,
            sink: SinkConfig {
                rwnd: 1 << 30,
                ..SinkConfig::default()
            },
            sender: TcpConfig::default(),
        })
        .collect();
    let gate = pep_core::localq::SplitStartQueue::new(
        settings().core(),
        Stream::derive(1, "localq"),
        Instant::ZERO,
    );
    let tunnel_sink = SinkConfig {
        rwnd: 1 << 30,
        sack: true,
        ..SinkConfig::default()
    };
    let mut pair = SplitPair::new(
        [START, END],
        flows,
        gate,
        TUNNEL,
        TcpConfig::default(),
        tunnel_sink,
    );
    pair.trace_gate();
    let mut flight: Vec<(Instant, u32, Packet)> = vec![];
    let mut out = Outbox::default();
    let mut steps: std::collections::BTreeSet<(Instant, u32, u32)> = base.iter().copied().collect();
    let mut inputs = vec![];
    let mut seen = 0;
    let mut totals = [0u64; 3];
    let end = base.last().unwrap().0 + Duration::from_secs(1);
    loop {
        let step = steps.first().map(|s| s.0);
        let wire = flight.iter().map(|f| f.0).min();
        let timer = pair.poll_timeout();
        let Some(now) = [step, wire, timer].into_iter().flatten().min() else {
            break;
        };
        if now > end {
            break;
        }
        if step == Some(now) {
            let (_, f, seq) = steps.pop_first().unwrap();
            inputs.push(Input::Segment(now, f, seq));
            let p = Packet {
                seg: seg(f, seq),
                src: 10 + f,
                dst: 20 + f,
            };
            pair.on_packet(now, START, p, &mut out);
        } else if wire == Some(now) {
            let i = flight.iter().position(|f| f.0 == now).unwrap();
            let (_, node, p) = flight.remove(i);
            pair.on_packet(now, node, p, &mut out);
        } else {
            pair.on_timeout(now, &mut out);
        }
        // Each run of writes is one reading of the relays' counters (a
        // check that follows it decides with them).
        let mut wrote = false;
        for e in &pair.gate_trace()[seen..] {
            if wrote && !matches!(e, GateEvent::Written(..)) {
                inputs.push(Input::Written(now, totals));
                wrote = false;
            }
            match *e {
                GateEvent::Dropped(t, f, s) => {
                    steps.insert((t + RESEND, f.0, s.0));
                }
                GateEvent::Written(_, f, n) => {
                    totals[f.0 as usize] += n;
                    wrote = true;
                }
                GateEvent::Admitted(..) => {}
            }
        }
        if wrote {
            inputs.push(Input::Written(now, totals));
        }
        seen = pair.gate_trace().len();
        for (from, p) in out.drain() {
            if p.seg.flow == TUNNEL {
                let to = if from == START { END } else { START };
                flight.push((now + DELAY, to, p));
            }
        }
    }
    let decided = pair
        .gate_trace()
        .iter()
        .filter_map(|e| match *e {
            GateEvent::Admitted(t, f, s) => Some((t, f.0, s.0, true)),
            GateEvent::Dropped(t, f, s) => Some((t, f.0, s.0, false)),
            GateEvent::Written(..) => None,
        })
        .collect();
    (inputs, decided)
}

/// What reached the gate, in order: a data segment (time, flow, sequence),
/// or the tunnel wrote bytes (time, each flow's total since the start).
#[derive(Clone, Copy, Debug)]
enum Input {
    Segment(Instant, u32, u32),
    Written(Instant, [u64; 3]),
}

fn key(f: u32) -> FlowKey {
    (
        SocketAddr::V4(SocketAddrV4::new(
            Ipv4Addr::new(10, 0, 0, 1 + f as u8),
            40000,
        )),
        SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 1, 1), 80)),
    )
}

/// The first 128 bytes of segment (f, seq) as NFQUEUE copies them, and its
/// length on the wire.
fn packet(f: u32, seq: u32) -> (Vec<u8>, usize) {
    let total = HDR as usize + PAYLOAD as usize;
    let mut p = vec![0u8; 128];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 6;
    p[12..16].copy_from_slice(&[10, 0, 0, 1 + f as u8]);
    p[16..20].copy_from_slice(&[10, 0, 1, 1]);
    p[20..22].copy_from_slice(&40000u16.to_be_bytes());
    p[22..24].copy_from_slice(&80u16.to_be_bytes());
    p[24..28].copy_from_slice(&seq.to_be_bytes());
    p[32] = 5 << 4;
    p[33] = 0x10;
    (p, total)
}

/// The daemon's side: the simulator's inputs in its order, the segments
/// as packets, the written totals as the relays' counters read at a tick,
/// and a tick at every poll of the gate.
fn daemon(inputs: &[Input]) -> Decisions {
    let mut gate: Gate<(u32, u32)> =
        Gate::new(&settings(), Stream::derive(1, "localq"), Instant::ZERO);
    let mut decided = vec![];
    let mut out = vec![];
    let mut totals = [0u64; 3];
    let tick = |gate: &mut Gate<(u32, u32)>, now, totals: [u64; 3], out: &mut Vec<_>| {
        let reads: BTreeMap<FlowKey, u64> =
            (0..FLOWS).map(|f| (key(f), totals[f as usize])).collect();
        gate.on_tick(now, |k| reads.get(k).copied(), out);
    };
    let end = inputs.last().map_or(Instant::ZERO, |i| match *i {
        Input::Segment(t, ..) | Input::Written(t, _) => t,
    }) + Duration::from_secs(1);
    let mut inputs = inputs.iter().peekable();
    loop {
        let next = inputs.peek().map(|i| match **i {
            Input::Segment(t, ..) | Input::Written(t, _) => t,
        });
        let poll = gate.poll_timeout();
        let Some(now) = [next, poll].into_iter().flatten().min() else {
            break;
        };
        if now > end {
            break;
        }
        if poll == Some(now) {
            tick(&mut gate, now, totals, &mut out);
        } else {
            match *inputs.next().unwrap() {
                Input::Segment(_, f, seq) => {
                    let (bytes, wire) = packet(f, seq);
                    gate.on_packet(now, &bytes, wire, (f, seq), &mut out);
                }
                Input::Written(_, t) => {
                    totals = t;
                    tick(&mut gate, now, totals, &mut out);
                }
            }
        }
        for ((f, seq), v) in out.drain(..) {
            decided.push((now, f, seq, v == Verdict::Accept));
        }
    }
    decided
}

#[test]
fn the_daemon_and_the_simulator_decide_the_same_packets_the_same_way() {
    for seed in [0x9e37_79b9_7f4a_7c15, 1, 3, 4, 5, 6, 7, 9, 10] {
        same_decisions(seed);
    }
}

fn same_decisions(seed: u64) {
    let (inputs, sim) = simulator(&script(seed));
    let daemon = daemon(&inputs);
    let script: Vec<_> = inputs
        .iter()
        .filter_map(|i| match *i {
            Input::Segment(t, f, s) => Some((t, f, s)),
            Input::Written(..) => None,
        })
        .collect();
    let written = inputs.len() - script.len();
    // The script exercises what it should: drops, waits for credit,
    // passes of old data, bytes written while packets wait.
    let drops = sim.iter().filter(|d| !d.3).count();
    assert!(drops > 50, "seed {seed:#x}: {drops} drops");
    assert!(written > 100, "seed {seed:#x}: {written} writes");
    let late = sim
        .iter()
        .filter(|d| d.3 && !script.iter().any(|s| (s.0, s.1, s.2) == (d.0, d.1, d.2)))
        .count();
    assert!(late > 100, "seed {seed:#x}: {late} admitted after waiting");
    eprintln!(
        "seed {seed}: {} segments, {written} writes: {} decisions, {drops} drops, {late} admitted after waiting",
        script.len(),
        sim.len()
    );
    assert_eq!(sim.len(), script.len(), "every packet decided once");
    for (i, (s, d)) in sim.iter().zip(&daemon).enumerate() {
        assert_eq!(s, d, "seed {seed:#x}, decision {i}: simulator, daemon");
    }
    assert_eq!(sim.len(), daemon.len());
}
