//! ACK thinning (`kind = "ack-thin"`, the daemon's packet-mode thinning)
//! on an asymmetric link whose uplink carries too few ACKs:
//! scenarios/examples/ack-thinning.toml. With an ACK per segment the
//! download is capped at the uplink's ACK rate times one segment; passing
//! every N-th ACK makes each stand for N segments, so the ACKs per data
//! segment fall to 1/N and the cap rises N-fold, while the window allows.

use pep_sim::{Scenario, Simulation};

const BASE: &str = include_str!("../../../scenarios/examples/ack-thinning.toml");

/// The example with `ack_thin = n`, `secs` long.
fn run(n: u32, secs: u32) -> pep_sim::output::Summary {
    let text = BASE
        .replace("ack_thin = 2", &format!("ack_thin = {n}"))
        .replace("duration = \"60s\"", &format!("duration = \"{secs}s\""));
    let sc = Scenario::from_toml_str(&text, "<ack-thin>").expect("valid");
    let mut sim = Simulation::new(&sc);
    sim.run();
    sim.summary()
}

fn stat(s: &pep_sim::output::Summary, name: &str) -> f64 {
    s.agents[0].stats[name].as_f64().unwrap()
}

#[test]
fn thinning_cuts_acks_per_segment_by_n_and_raises_an_ack_limited_download() {
    // 64 kbit/s of 40 B ACKs: 200 ACKs/s, each for N segments of 1000 B.
    let cap = |n: u32| n as f64 * 64_000.0 / (40.0 * 8.0) * 1000.0 * 8.0 / 1e6;
    let mut goodput = vec![];
    for n in [1, 2, 3] {
        let s = run(n, 30);
        let g = s.flows[0].goodput_mbps;
        let (arrived, passed) = (stat(&s, "arrived"), stat(&s, "passed"));
        eprintln!(
            "N {n}: {g:.3} Mbit/s (cap {:.2}), {passed} of {arrived} ACKs passed, {} by the timer",
            cap(n),
            stat(&s, "released_by_timer")
        );
        // The sink acknowledges every segment; of those ACKs 1/N pass
        // (plus the first and the few a pause released by the timer).
        let ratio = passed / arrived;
        assert!(
            ratio >= 1.0 / n as f64 && ratio < 1.0 / n as f64 + 0.01,
            "N {n}: {ratio} of the ACKs passed"
        );
        // Every ACK passed or was thinned, but the one still held.
        let held = arrived - passed - stat(&s, "thinned");
        assert!(held == 0.0 || held == 1.0, "N {n}: {held} held at the end");
        goodput.push(g);
        // ACK-limited: at the cap (one ACK's worth of rounding above it),
        // less the start-up.
        assert!(
            g <= 1.01 * cap(n) && g > 0.9 * cap(n),
            "N {n}: {g} Mbit/s against the cap {}",
            cap(n)
        );
    }
    assert!(goodput[1] > 1.8 * goodput[0], "{goodput:?}");
}

#[test]
fn bad_settings_are_named() {
    for (edit, field) in [
        ("ack_thin = 1001", "ack_thin"),
        ("ack_thin = 2\nmax_hold = \"0ms\"", "max_hold"),
        ("ack_thin = 2\nmax_flows = 0", "max_flows"),
        ("ack_thin = 2\nhold = \"1ms\"", "hold"),
    ] {
        let text = BASE.replace("ack_thin = 2\nmax_hold = \"20ms\"", edit);
        let e = Scenario::from_toml_str(&text, "<ack-thin>")
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("agent[0].{field}")), "{edit}: {e}");
    }
}
