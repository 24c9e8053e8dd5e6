//! Sameness of ACK regeneration (`pep_core::ack_regen`) in the daemon and
//! in the simulator: one scripted ACK stream through the daemon's packet
//! engine (`[packet] ack_regen`, frames from side `a`: regenerated ACKs are
//! copies of the flow's latest ACK frame with their own ACK fields) and
//! through the simulator's agent (`kind = "ack-regen"`) gives the same
//! ACKs out, at the same times, in the same order, with the same fields.
//! Each scripted ACK carries its step number as TSval and every ACK of its
//! train carries it too, so an adapter that drops, adds or reorders an ACK
//! gives another sequence.
//!
//! The script's ACKs carry no SACK blocks: a regenerated ACK whose
//! template (a newer ACK of the flow) has no SACK option leaves without
//! them in the daemon (`packet::engine::build_ack`), by design.

use pep_core::ack_regen::AckRegenConfig;
use pep_core::{Flags, Instant, Seq};
use pep_daemon::packet::PacketSettings;

use super::{ack_step, assert_same, drive, rng, Daemon, Sim, Step};

/// A reproducible mix of what regeneration treats differently: ACKs that
/// advance by one to six segments (some by a part of one), duplicates,
/// older ACKs, data on the ACK path, ECE, gaps longer than `max_spacing`
/// and shorter than a train, three flows interleaved.
fn script(seed: u64) -> Vec<Step> {
    let mut next = rng(seed);
    let mut acks = [1000u32; 3];
    let mut t = Instant::ZERO;
    let mut v = vec![];
    for i in 0..800u32 {
        // Pauses past max_spacing.
        let (at, flow, mut seg) = ack_step(&mut next, t, i, (150_000, 100, 20_000));
        t = at;
        let f = flow as usize;
        seg.wnd = 20_000 + 100 * next(10) as u32;
        match next(12) {
            0 => {}                            // duplicate
            1 => seg.ack = Seq(acks[f] - 500), // older
            2 => {
                acks[f] += 1000;
                seg.len = 100; // data on the ACK path
            }
            3 => {
                acks[f] += 2000;
                seg.flags = Flags::ACK | Flags::ECE;
            }
            4 => acks[f] += 1000 * (1 + next(6) as u32) + 1 + next(999) as u32,
            _ => acks[f] += 1000 * (1 + next(6) as u32),
        }
        if seg.ack == Seq(0) {
            seg.ack = Seq(acks[f]);
        }
        v.push(Step::ack(t, flow, seg));
    }
    v
}

fn config() -> AckRegenConfig {
    AckRegenConfig {
        factor: 2,
        mss: 1000,
        spacing: true,
        max_spacing: pep_core::Duration::from_millis(100),
        max_flows: 4096,
    }
}

#[test]
fn the_daemon_and_the_simulator_regenerate_the_same_acks() {
    for seed in [0x9e37_79b9_7f4a_7c15, 7, 0xdead_beef] {
        let s = script(seed);
        let mut d = Daemon::new(PacketSettings {
            ack_regen: Some(config()),
            ..PacketSettings::new("a", "b")
        });
        let mut a = Sim::new(
            "ack-regen",
            "factor = 2\nspacing = true\nmax_spacing = \"100ms\"\nmss = \"1000B\"\nmax_flows = 4096",
        );
        let (on_daemon, on_sim) = (drive(&s, &mut d), drive(&s, &mut a));
        assert_same(&on_daemon, &on_sim, &format!("seed {seed:#x}"));
        let st = a.agent.stats();
        let regenerated = st["regenerated"].as_u64().unwrap();
        assert_eq!(d.0.stats().regenerated, regenerated);
        // The script exercises trains, their spacing and their flushing.
        let late = on_sim
            .iter()
            .filter(|o| o.at > s[o.ts.unwrap().0 as usize].at);
        let late = late.count();
        let flushed = st["flushed"].as_u64().unwrap();
        assert!(
            regenerated > 500 && late > 200 && flushed > 20,
            "seed {seed:#x}: {regenerated} regenerated, {late} late, {flushed} flushed"
        );
        assert_eq!(on_sim.len() as u64, s.len() as u64 + regenerated);
    }
}
