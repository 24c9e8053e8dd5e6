//! Sameness of ACK thinning in the daemon and in the simulator: one
//! scripted ACK stream (segments and times) through the daemon's packet
//! engine (frames on side `a`, `pep_daemon::packet::Engine`) and through
//! the simulator's agent (`kind = "ack-thin"`, packets at its node) gives
//! the same packets out, at the same times, in the same order: what one
//! forwards at once, holds, or drops, the other does too.
//!
//! Every scripted packet carries its step number as TSval, so each one
//! out is known by it: an adapter that drops, adds or reorders an action
//! gives another sequence.
//!
//! With more flows than `max_flows` the two differ: the daemon's flow
//! table (`FlowTable`, oldest first) and the machine (least recently seen
//! first) evict different flows. A flow the table evicted comes back under
//! a new id; its held ACK used to wait under the old one and leave after
//! the flow's newer ACKs (with this script, N = 4 and `max_flows` = 2: four
//! of the daemon's 564 ACKs out). The engine now lets an evicted id's held
//! ACK go at once (`packet::engine`'s
//! `a_connection_the_flow_table_evicts_keeps_its_acks_in_order`), so
//! nothing is reordered, but which ACKs are thinned still differs. The
//! script keeps to three flows, within every bound.

use pep_core::{Duration, Flags, Instant, SackBlocks, Seq};
use pep_daemon::packet::PacketSettings;

use super::{ack_step, drive, rng, Daemon, Seen, Sim, Step};

/// What left, when: (time, step number).
type Actions = Vec<(Instant, u32)>;

/// A reproducible mix of what thinning treats differently: advancing ACKs
/// (some held, some thinned, some the N-th), duplicates, window updates,
/// new SACK information, ECE, older ACKs, data on the ACK path, pauses
/// longer than `max_hold`, and three flows interleaved.
fn script() -> Vec<Step> {
    let mut next = rng(0x2545_f491_4f6c_dd1d);
    let mut acks = [1000u32; 3];
    let mut wnd = [5000u32; 3];
    let mut t = Instant::ZERO;
    let mut v = vec![];
    for i in 0..600u32 {
        // Pauses past max_hold.
        let (at, flow, mut seg) = ack_step(&mut next, t, i, (15_000, 50, 2_000));
        t = at;
        let f = flow as usize;
        match next(12) {
            0 => {} // duplicate
            1 => wnd[f] += 1000,
            2 => {
                let mut b = SackBlocks::new();
                b.push(Seq(acks[f] + 2000), Seq(acks[f] + 3000 + i));
                seg.sack = b;
            }
            3 => {
                acks[f] += 1000;
                seg.flags = Flags::ACK | Flags::ECE;
            }
            4 => {
                seg.ack = Seq(acks[f] - 500); // older
            }
            5 => {
                acks[f] += 1000;
                seg.len = 100; // data on the ACK path
            }
            _ => acks[f] += 1000 + 10 * next(50) as u32,
        }
        if seg.ack == Seq(0) {
            seg.ack = Seq(acks[f]);
        }
        seg.wnd = wnd[f];
        v.push(Step::ack(t, flow, seg));
    }
    v
}

/// The run's packets by step number (each carries its step as TSval).
fn ids(run: Vec<Seen>) -> Actions {
    run.into_iter().map(|s| (s.at, s.ts.unwrap().0)).collect()
}

fn daemon(n: u32, max_flows: usize) -> Daemon {
    Daemon::new(PacketSettings {
        ack_thin: Some(n),
        max_hold: Duration::from_millis(10),
        max_flows,
        ..PacketSettings::new("a", "b")
    })
}

/// The agent as the example scenario (three flows) builds it, with the
/// daemon's settings.
fn sim(n: u32, max_flows: usize) -> Sim {
    let params = format!("ack_thin = {n}\nmax_hold = \"10ms\"\nmax_flows = {max_flows}");
    Sim::new("ack-thin", &params)
}

#[test]
fn the_daemon_and_the_simulator_forward_hold_and_drop_the_same_acks() {
    let s = script();
    for (n, max_flows) in [(3, 16), (2, 16), (4, 3)] {
        let mut d = daemon(n, max_flows);
        let mut a = sim(n, max_flows);
        let (on_daemon, sim) = (ids(drive(&s, &mut d)), ids(drive(&s, &mut a)));
        assert_eq!(on_daemon, sim, "N {n}, max_flows {max_flows}");
        let thinned_s = a.agent.stats()["thinned"].as_u64().unwrap();
        assert_eq!(d.0.stats().thinned, thinned_s);
        // Each step leaves at most once; the rest were thinned.
        let mut ids: Vec<u32> = sim.iter().map(|a| a.1).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), sim.len());
        assert_eq!(sim.len() as u64 + thinned_s, s.len() as u64);
        // The script exercises holding: some left later than they came.
        let late = sim.iter().filter(|(t, i)| *t > s[*i as usize].at).count();
        assert!(
            late > 10 && thinned_s > 50,
            "N {n}: {late} late, {thinned_s} thinned"
        );
    }
}
