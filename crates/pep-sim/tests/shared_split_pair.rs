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
    let mut sc = shared(cc, tun, e2e);
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
    let share = t / (t + e);
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
/// than five flows'. (`bbr` takes 0.24-0.29 here, where the lab measured
/// 0.43-0.60: the simulated `bbr` tunnel beside other traffic is not yet
/// the daemon's; docs/daemon.md, "Default".)
#[test]
fn a_cubic_flows_tunnel_with_five_flows_takes_less_than_their_share() {
    let s = share("cubic-flows", 5, 5);
    assert!((0.28..=0.45).contains(&s), "tunnel share {s:.3}");
}

/// The table in docs/daemon.md: both controllers, seeds 1-3.
#[test]
#[ignore = "about a minute; prints the table in docs/daemon.md"]
fn shares_over_seeds() {
    for (tun, e2e) in [(1, 1), (5, 5), (10, 1), (1, 10)] {
        for cc in ["cubic-flows", "bbr"] {
            let shares: Vec<String> = (1..=3)
                .map(|seed| {
                    let (t, e) = goodputs(cc, tun, e2e, seed, FROM, TO);
                    format!("{:.3} ({t:.1}+{e:.1})", t / (t + e))
                })
                .collect();
            eprintln!(
                "{cc:12} {tun:2} tunnelled + {e2e:2} end to end (fair {:.3}): {}",
                tun as f64 / (tun + e2e) as f64,
                shares.join(", ")
            );
        }
    }
}
