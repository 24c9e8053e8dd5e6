//! The two-node PEP's tunnel beside end-to-end TCP on one bottleneck
//! (scenarios/examples/shared-split-pair.toml: the daemon's loss-free
//! test path, 100 Mbit/s, 125 ms each way, a 300-packet queue): the share
//! of the long link each side takes, for both tunnel controllers. A fair
//! tunnel carrying N flows beside M takes N / (N + M); `cubic-flows` takes
//! more than one flow's share and less than N flows' (docs/daemon.md,
//! "Default").
//!
//! `cargo test -p pep-sim --test sim shared_split_pair -- --include-ignored --nocapture`
//! prints the shares (the table over three seeds: about a minute).

use std::path::PathBuf;

use pep_sim::{Scenario, Simulation};

use crate::support::at_ms;

/// The scenario with `tun` flows through the tunnel running `cc` and
/// `e2e` end-to-end flows beside it, all bulk uploads from 0 s.
fn shared(cc: &str, tun: usize, e2e: usize) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/examples/shared-split-pair.toml");
    let mut sc = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let (t, e) = (sc.flows[0].clone(), sc.flows[1].clone());
    sc.flows.clear();
    for i in 0..tun {
        sc.flows.push(pep_sim::scenario::FlowSpec {
            name: format!("tun{i}"),
            ..t.clone()
        });
    }
    for i in 0..e2e {
        sc.flows.push(pep_sim::scenario::FlowSpec {
            name: format!("e2e{i}"),
            ..e.clone()
        });
    }
    let pair = &mut sc.agents[0];
    pair.flows = (0..tun).collect();
    pair.params
        .insert("tunnel_cc".into(), toml::Value::String(cc.into()));
    sc
}

/// The tunnel's and the end-to-end flows' goodput (Mbit/s) from `from`
/// to `to` seconds of a run with `seed`.
fn goodputs(cc: &str, tun: usize, e2e: usize, seed: u64, from: u64, to: u64) -> (f64, f64) {
    goodputs_of(shared(cc, tun, e2e), tun, e2e, seed, from, to)
}

/// [`goodputs`] of scenario `sc` (its first `tun` flows tunnelled).
fn goodputs_of(
    mut sc: Scenario,
    tun: usize,
    e2e: usize,
    seed: u64,
    from: u64,
    to: u64,
) -> (f64, f64) {
    sc.seed = seed;
    sc.duration = pep_core::Duration::from_secs(to);
    let mut sim = Simulation::new(&sc);
    sim.run_until(at_ms(from * 1000));
    let before: Vec<u64> = (0..tun + e2e)
        .map(|i| sim.sink(i).delivered_bytes())
        .collect();
    sim.run_until(at_ms(to * 1000));
    let mbps = |r: std::ops::Range<usize>| {
        r.map(|i| sim.sink(i).delivered_bytes() - before[i])
            .sum::<u64>() as f64
            * 8.0
            / (to - from) as f64
            / 1e6
    };
    (mbps(0..tun), mbps(tun..tun + e2e))
}

/// Measured from 20 s (the slow starts and the first CUBIC epochs over)
/// to 120 s.
const FROM: u64 = 20;
const TO: u64 = 120;

/// The tunnel's share of what the link delivered, seed 1, printed; the
/// link stays full (a split start that stops feeding the tunnel, as the
/// thesis's credit does here, fails this).
fn share(cc: &str, tun: usize, e2e: usize) -> f64 {
    let (t, e) = goodputs(cc, tun, e2e, 1, FROM, TO);
    let share = tunnel_share((t, e));
    eprintln!(
        "{cc}, {tun} tunnelled + {e2e} end to end: tunnel {t:.2} Mbit/s, end to end {e:.2} Mbit/s, \
         tunnel share {share:.3} (fair {:.3})",
        tun as f64 / (tun + e2e) as f64
    );
    assert!(t + e > 90.0, "the link carried {:.2} Mbit/s", t + e);
    share
}

/// One flow through a `bbr` tunnel beside one end-to-end CUBIC flow:
/// about half the link each (0.48-0.58 over seeds 1-3); the lab's `bbr`
/// takes more (0.56-0.73 in five runs, `pep-daemon`'s `tunnel_shared`).
#[test]
fn a_bbr_tunnel_with_one_flow_takes_about_one_flows_share() {
    let s = share("bbr", 1, 1);
    assert!((0.40..=0.65).contains(&s), "tunnel share {s:.3}");
}

/// Five flows through a `cubic-flows` tunnel beside five end to end:
/// fair is half, and the tunnel takes a third (0.34-0.38 over seeds 1-3;
/// the lab 0.31-0.52 in five runs): it backs off as five flows would but
/// grows as one, so it takes more than one flow's share (1/6) and less
/// than five flows'. (`bbr` takes 0.24-0.29 here; the lab's 0.43-0.60 was
/// of a tunnel that had carried one flow beside one first, see
/// [`a_bbr_tunnel_keeps_the_share_it_had_beside_one_flow`];
/// docs/daemon.md, "Default".)
#[test]
fn a_cubic_flows_tunnel_with_five_flows_takes_less_than_their_share() {
    let s = share("cubic-flows", 5, 5);
    assert!((0.28..=0.45).contains(&s), "tunnel share {s:.3}");
}

/// The tunnel's share of what the link delivered, from [`goodputs`].
fn tunnel_share((t, e): (f64, f64)) -> f64 {
    t / (t + e)
}

/// The lab's measure (`pep-daemon`'s `tunnel_shared`): 10 to 40 s of a
/// 40 s run.
const LAB_FROM: u64 = 10;
const LAB_TO: u64 = 40;

/// The table in docs/daemon.md: both controllers, seeds 1-3, over 20 to
/// 120 s and over the lab's 10 to 40 s.
#[test]
#[ignore = "about two minutes; prints the table in docs/daemon.md"]
fn full_scale_shares_over_seeds() {
    for (tun, e2e) in [(1, 1), (5, 5), (10, 1), (1, 10)] {
        for cc in ["cubic-flows", "bbr"] {
            for (from, to) in [(FROM, TO), (LAB_FROM, LAB_TO)] {
                let shares: Vec<String> = (1..=3)
                    .map(|seed| {
                        let (t, e) = goodputs(cc, tun, e2e, seed, from, to);
                        format!("{:.3} ({t:.1}+{e:.1})", tunnel_share((t, e)))
                    })
                    .collect();
                eprintln!(
                    "{cc:12} {tun:2} tunnelled + {e2e:2} end to end (fair {:.3}), {from}-{to} s: {}",
                    tun as f64 / (tun + e2e) as f64,
                    shares.join(", ")
                );
            }
        }
    }
}

/// Five flows through a `bbr` tunnel beside five end to end: the
/// tunnel's share shrinks as the run goes on, so the simulator's 20 to
/// 120 s (0.24-0.32 over seeds 1-5) is not the lab's 10 to 40 s of 40
/// (simulated 0.31-0.36, a fresh tunnel in the lab 0.31 and 0.35). A
/// lossy PROBE_BW round sets the window rule's loss-bounded cap
/// (`inflight_hi`) at 85 % of its flight, never below the BDP; the cap
/// grows by one datagram per eight-round PROBE_BW cycle (only the
/// probing round is held back by it, and its growth starts over at each
/// probe), so each overflow of the shared queue ratchets the tunnel's
/// window down towards BtlBw x minRTT, and BtlBw follows the window. The
/// daemon runs the same rule (traced in the lab: the cap set at 4.8 s
/// and 27.6 s, the window 1.0-1.25 MB, BtlBw 32-39 Mbit/s, share 0.345).
#[test]
fn a_bbr_tunnels_share_beside_five_cubic_flows_shrinks_over_the_run() {
    let early = tunnel_share(goodputs("bbr", 5, 5, 1, LAB_FROM, LAB_TO));
    let late = tunnel_share(goodputs("bbr", 5, 5, 1, 60, TO));
    eprintln!("bbr, 5 + 5: share {early:.3} from 10 to 40 s, {late:.3} from 60 to 120 s");
    assert!(early > late + 0.04, "early {early:.3}, late {late:.3}");
    assert!((0.28..=0.45).contains(&early), "early {early:.3}");
}

/// The `bbr` tunnel's state every second of a 5 + 5 run (seed 1):
/// mode, BtlBw, min RTT, window, inflight_hi, pacing, flight, losses.
#[test]
#[ignore = "diagnostic trace; prints the tunnel's BBR state each second"]
fn full_scale_bbr_tunnel_trace() {
    let (tun, e2e) = (5, 5);
    let mut sc = shared("bbr", tun, e2e);
    sc.seed = 1;
    sc.duration = pep_core::Duration::from_secs(60);
    let mut sim = Simulation::new(&sc);
    let mut prev_rtx = 0;
    let mut prev_tx = (0u64, 0u64);
    for s in 1..=60u64 {
        sim.run_until(at_ms(s * 1000));
        let pair = crate::support::split_pair(&sim, "pair");
        let t = pair.tunnel();
        let cc = t.congestion();
        let pep_core::cc::GrowthView::Bbr(v) = cc.growth_view() else {
            panic!()
        };
        let st = t.stats();
        let flight = t.snd_max().bytes_since(t.snd_una());
        let tun_b: u64 = (0..tun).map(|i| sim.sink(i).delivered_bytes()).sum();
        let e2e_b: u64 = (tun..tun + e2e)
            .map(|i| sim.sink(i).delivered_bytes())
            .sum();
        eprintln!(
            "{s:3}s {:?} gain {} bw {:.1} Mb/s minrtt {:?} srtt {:?} cwnd {} hi {:?} pace {:.1} Mb/s flight {} rwnd {} queued {} rec {} rtx {} rto {} gate {} | tun {:.1} e2e {:.1} Mb/s",
            v.mode,
            v.pacing_gain,
            v.bw as f64 * 8e-6,
            v.min_rtt.map(|d| d.as_millis_f64() as u64),
            t.srtt().map(|d| d.as_millis_f64() as u64),
            t.cwnd(),
            cc.model_inflight_hi(),
            cc.pacing_rate().unwrap_or(0) as f64 * 8e-6,
            flight,
            t.rwnd(),
            t.queued(),
            t.in_recovery(),
            st.retransmitted_segments - prev_rtx,
            st.timeouts,
            pair.gate().len_bytes(),
            (tun_b - prev_tx.0) as f64 * 8e-6,
            (e2e_b - prev_tx.1) as f64 * 8e-6,
        );
        prev_rtx = st.retransmitted_segments;
        prev_tx = (tun_b, e2e_b);
    }
}

/// The lab's order: one tunnel connection carries one flow beside one
/// end-to-end flow for 40 s, then five beside five (`tunnel_shared`
/// builds the pair once per controller). Here the first flow of each side
/// keeps going and four more of each start at 40 s; the shares from 10
/// to 40 s after that start, beside the same run from a fresh tunnel.
fn after_one_each(cc: &str, seed: u64) -> (f64, f64) {
    let (tun, e2e) = (5, 5);
    let mut sc = shared(cc, tun, e2e);
    for (i, f) in sc.flows.iter_mut().enumerate() {
        if i % tun != 0 {
            f.start = pep_core::Duration::from_secs(LAB_TO);
        }
    }
    (
        tunnel_share(goodputs_of(
            sc,
            tun,
            e2e,
            seed,
            LAB_TO + LAB_FROM,
            2 * LAB_TO,
        )),
        tunnel_share(goodputs(cc, tun, e2e, seed, LAB_FROM, LAB_TO)),
    )
}

/// The lab's five-and-five `bbr` share (0.43-0.63) was measured on a
/// tunnel that had carried one flow beside one for 40 s: its BtlBw (about
/// 70 Mbit/s) and loss-bounded cap (about 2.4 MB) carried over, and a cap
/// only falls on a lossy PROBE_BW round. So does the simulator's: the
/// share after one-and-one is well above a fresh tunnel's (0.31-0.36).
#[test]
fn a_bbr_tunnel_keeps_the_share_it_had_beside_one_flow() {
    let (after, fresh) = after_one_each("bbr", 1);
    eprintln!("bbr, 5 + 5: share {after:.3} after 1 + 1, {fresh:.3} from a fresh tunnel");
    assert!(after > fresh + 0.08, "after {after:.3}, fresh {fresh:.3}");
}

/// [`after_one_each`] for both controllers, seeds 1-3.
#[test]
#[ignore = "about a minute; prints the five-and-five shares after one-and-one"]
fn full_scale_shares_after_one_each_over_seeds() {
    for cc in ["cubic-flows", "bbr"] {
        let v: Vec<String> = (1..=3)
            .map(|seed| {
                let (a, f) = after_one_each(cc, seed);
                format!("{a:.3} (fresh {f:.3})")
            })
            .collect();
        eprintln!(
            "{cc:12} 5 + 5 after 1 + 1, {LAB_FROM}-{LAB_TO} s: {}",
            v.join(", ")
        );
    }
}
