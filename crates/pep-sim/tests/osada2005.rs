//! Osada et al. 2005 on the simulator: the watermark PEP's maximum
//! throughput against W, checked against the paper's figures.
//!
//! The network is `scenarios/osada2005/network.toml` (S -- 10 Mbit/s, d_S --
//! P -- 1 Mbit/s, d_D -- D, 1000-byte packets, initial window 1, windows of
//! 20 packets). Runs are 20 simulated seconds: every configuration here
//! reaches its steady maximum well within that (slow start with a window of
//! one takes at most about 3 s at d_S + d_D = 250 ms).

use pep_sim::agent::meter::Meter;
use pep_sim::{Scenario, Simulation};

const DURATION: &str = "20s";

fn scenario(d_s: u32, d_d: u32, n: usize, w: usize) -> Scenario {
    scenario_with(d_s, d_d, n, w, false)
}

fn scenario_with(d_s: u32, d_d: u32, n: usize, w: usize, adaptive: bool) -> Scenario {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/osada2005/network.toml"
    );
    let text = std::fs::read_to_string(path).expect("network.toml");
    let mut t: toml::Table = text.parse().expect("toml");
    t["scenario"]["duration"] = DURATION.into();
    let links = t["link"].as_array_mut().unwrap();
    links[0]["delay"] = format!("{d_s}ms").into();
    links[1]["delay"] = format!("{d_d}ms").into();
    let agents = t["agent"].as_array_mut().unwrap();
    agents[0]["buffer"] = (n as i64).into();
    agents[0]["watermark"] = (w as i64).into();
    if adaptive {
        let pep = agents[0].as_table_mut().unwrap();
        pep.insert("adaptive".into(), true.into());
    }
    Scenario::from_toml_str(&toml::to_string(&t).unwrap(), path).expect("valid")
}

/// The paper's throughput: the best 1-second interval of whole packets
/// arriving at D. Also asserts the paper's premise: nothing is dropped.
fn max_throughput(d_s: u32, d_d: u32, n: usize, w: usize) -> f64 {
    max_throughput_of(&scenario(d_s, d_d, n, w))
}

fn max_throughput_of(sc: &Scenario) -> f64 {
    let mut sim = Simulation::new(sc);
    sim.run();
    let s = sim.summary();
    for l in &s.links {
        assert_eq!(l.queue_drops + l.lost_packets, 0, "{} dropped", l.name);
    }
    let meter = sim.agent("atd").unwrap();
    let meter = meter.as_any().downcast_ref::<Meter>().unwrap();
    meter.series().into_iter().fold(0.0, f64::max)
}

fn sweep(d_s: u32, d_d: u32, n: usize, ws: impl Iterator<Item = usize>) -> Vec<(usize, f64)> {
    ws.map(|w| (w, max_throughput(d_s, d_d, n, w))).collect()
}

/// The first W past the peak where the maximum throughput drops more than
/// 5% below the peak: `Some` for the paper's case R-2, `None` for R-1.
fn fall_off(curve: &[(usize, f64)]) -> Option<usize> {
    let (peak_at, peak) = curve
        .iter()
        .copied()
        .fold((0, 0.0), |b, p| if p.1 > b.1 { p } else { b });
    curve
        .iter()
        .find(|&&(w, m)| w > peak_at && m < 0.95 * peak)
        .map(|p| p.0)
}

#[test]
fn w_zero_is_plain_tcp() {
    let with_pep = scenario(50, 100, 50, 0);
    let mut plain = with_pep.clone();
    plain.agents.retain(|a| a.kind != "watermark");
    assert_eq!(plain.agents.len(), 1, "the meter stays");
    let run = |sc: &Scenario| {
        let mut sim = Simulation::new(sc);
        sim.run();
        let m = sim.agent("atd").unwrap();
        let series = m.as_any().downcast_ref::<Meter>().unwrap().series();
        (sim.summary().flows, sim.metrics().goodput.clone(), series)
    };
    let (a, b) = (run(&with_pep), run(&plain));
    assert!(a.2.iter().any(|&x| x > 0.3), "traffic flowed: {:?}", a.2);
    assert_eq!(a, b);
}

#[test]
fn r1_d80_100_n50_reaches_the_d_net_rate_and_never_falls() {
    let curve = sweep(80, 100, 50, (0..=50).step_by(5));
    for pair in curve.windows(2) {
        assert!(
            pair[1].1 >= pair[0].1 - 0.01,
            "falls from W={} to W={}: {curve:?}",
            pair[0].0,
            pair[1].0
        );
    }
    for &(w, m) in curve.iter().filter(|p| p.0 >= 30) {
        assert!(m >= 0.95, "W={w}: {m} Mbit/s");
    }
    // W = 0 is TCP's own: well below the link, which the PEP fills.
    assert!(curve[0].1 < 0.6, "{curve:?}");
}

#[test]
fn r1_d100_100_n50_plateaus_at_the_sender_window() {
    // 20 packets x 8000 bits per 2 x 100 ms: the sender's window over the
    // S-side round trip, however early the PEP acknowledges.
    let limit = 20.0 * 8000.0 / 0.2 / 1e6;
    let curve = sweep(100, 100, 50, (25..=50).step_by(5));
    for &(w, m) in &curve {
        assert!((m / limit - 1.0).abs() <= 0.05, "W={w}: {m} vs {limit}");
    }
}

#[test]
fn r2_cases_fall_where_the_paper_says() {
    // (d_S, d_D, N, the paper's first falling W if it gives one).
    let cases: [(u32, u32, usize, Option<f64>); 4] = [
        (50, 100, 50, Some(39.0)),
        (50, 200, 50, Some(32.0)),
        (80, 150, 50, None),
        (80, 100, 30, None),
    ];
    for (d_s, d_d, n, paper) in cases {
        let curve = sweep(d_s, d_d, n, 0..=n);
        let Some(w) = fall_off(&curve) else {
            panic!("({d_s}, {d_d}, {n}) is R-1 here: {curve:?}");
        };
        if let Some(p) = paper {
            let err = (w as f64 / p - 1.0).abs();
            assert!(err <= 0.2, "({d_s}, {d_d}, {n}) falls at W={w}, paper {p}");
        }
    }
}

#[test]
fn bad_parameters_are_named() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/osada2005/network.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let cases = [
        (
            "watermark = 30",
            "watermark = 51",
            "agent[0].watermark",
            "exceeds the buffer capacity 50",
        ),
        (
            "watermark = 30",
            "watermark = 30\nwindow = \"lots\"",
            "agent[0].window",
            "",
        ),
        (
            "watermark = 30",
            "watermark = 30\nwatermrk = 3",
            "agent[0].watermrk",
            "unknown field",
        ),
        ("buffer = 50", "buffer = 0", "agent[0].buffer", "at least 1"),
    ];
    for (from, to, field, message) in cases {
        let bad = text.replacen(from, to, 1);
        let err = Scenario::from_toml_str(&bad, "n.toml").unwrap_err();
        let d = &err.diagnostics()[0];
        assert_eq!(d.field, field, "{d}");
        assert!(d.message.contains(message), "{d}");
    }
}

/// The adaptive watermark (W learnt from N) against the best fixed W in
/// steps of 5, as Table 1's claim A1 compares them, on both kinds of path:
/// one where overflow pays (N = 30 cannot hold D-Net's 38-packet pipe at
/// d_D = 150 ms; the previous trial, judging phases by their best round,
/// gave overflow up here: 0.688 against 0.784) and Fig. 6's R-2 path,
/// where overflow stalls the sender.
#[test]
fn the_adaptive_watermark_is_within_5_percent_of_the_best_fixed_w() {
    for (d_s, d_d, n) in [(30, 150, 30), (50, 100, 50)] {
        let best = sweep(d_s, d_d, n, (0..=n).step_by(5))
            .into_iter()
            .fold(0.0, |b, p| p.1.max(b));
        let adaptive = max_throughput_of(&scenario_with(d_s, d_d, n, n, true));
        assert!(
            adaptive >= 0.95 * best,
            "({d_s}, {d_d}, {n}): adaptive {adaptive} against the best fixed W's {best}"
        );
    }
}
