//! The simulator's `linux` profile against real Linux TCP in the lab:
//! single-flow CUBIC on a 10 Mbit/s, 50 ms one-way path, clean (goodput
//! within 5%) and with 1% Bernoulli loss on data (mean of 5 runs each,
//! within 14%). Needs root and `ip` (`#[ignore = "needs root"]`). Takes
//! about 80 s of real time. Figures: `cargo test -p pep-cli --test
//! sim_vs_lab -- --include-ignored --nocapture`.

use std::sync::{Mutex, MutexGuard};

use pep_core::{Duration, Instant, Rate};
use pep_lab::lab::{Lab, LabOptions};
use pep_lab::topology::{DirParams, LabTopology, LossParams, Role};
use pep_lab::traffic::{self, Amount, FlowSpec, TrafficOptions};
use pep_sim::{Scenario, Simulation};

/// One lab at a time in this binary, as in pep-lab's root tests (cargo
/// runs test binaries one after another).
static SERIAL: Mutex<()> = Mutex::new(());

/// The lock. The tests taking it are `#[ignore = "needs root"]`; run
/// anyway without root, they fail here saying why.
fn root_test(name: &str) -> MutexGuard<'static, ()> {
    pep_lab::error::require_root_for_test(name);
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const QUEUE: u32 = 100;

fn sim_scenario(secs: u64, loss: f64, seed: u64) -> Scenario {
    let loss = if loss > 0.0 {
        format!("forward = {{ loss = {{ kind = \"bernoulli\", p = {loss} }} }}")
    } else {
        String::new()
    };
    let text = format!(
        r#"
[scenario]
name = "sim-vs-lab"
duration = "{secs}s"
seed = {seed}
[defaults.tcp]
profile = "linux"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "10Mbps"
delay = "50ms"
queue = {{ limit = {QUEUE} }}
{loss}
[[flow]]
name = "bulk"
from = "a"
to = "b"
[output]
series = []
"#
    );
    Scenario::from_toml_str(&text, "sim-vs-lab").unwrap_or_else(|e| panic!("{e}"))
}

/// Receiver goodput in Mbit/s between `t0` and `t1` seconds.
fn sim_goodput(secs: u64, loss: f64, seed: u64, t0: u64, t1: u64) -> f64 {
    let mut sim = Simulation::new(&sim_scenario(secs, loss, seed));
    sim.run_until(Instant::ZERO + Duration::from_secs(t0));
    let a = sim.sink(0).delivered_bytes();
    sim.run_until(Instant::ZERO + Duration::from_secs(t1));
    let b = sim.sink(0).delivered_bytes();
    (b - a) as f64 * 8e-6 / (t1 - t0) as f64
}

fn lab_goodput(secs: u64, loss: f64, seed: u64, t0: u64, t1: u64) -> f64 {
    let d = DirParams::new(Rate::mbps(10), Duration::from_millis(50), QUEUE);
    let fwd = if loss > 0.0 {
        d.with_loss(LossParams::Bernoulli { p: loss })
    } else {
        d
    };
    let mut t = LabTopology::new("simlab", seed);
    t.node("a", Role::Host);
    t.node("b", Role::Host);
    t.link("a", "b", fwd, d);
    let lab = Lab::up(&t, &LabOptions::default()).expect("lab up");
    let (a, b) = (lab.endpoint("a").unwrap(), lab.endpoint("b").unwrap());
    let mut f = FlowSpec::new("bulk", a, b, Amount::For(Duration::from_secs(secs)));
    f.cc = "cubic".into();
    f.seed = seed;
    let opts = TrafficOptions {
        deadline: Duration::from_secs(secs + 30),
        ..TrafficOptions::default()
    };
    let r = traffic::run(&[f], &opts).expect("traffic");
    let flow = &r.flows[0];
    assert!(flow.byte_exact(), "not byte-exact");
    let g = flow
        .goodput_between(r.interval, Duration::from_secs(t0), Duration::from_secs(t1))
        .as_mbps_f64();
    lab.down().expect("lab down");
    g
}

#[test]
#[ignore = "needs root"]
fn clean_path_goodput_within_5_percent() {
    let _g = root_test("clean_path");
    let (secs, t0, t1) = (25, 1, 24);
    let sim = sim_goodput(secs, 0.0, 1, t0, t1);
    let lab = lab_goodput(secs, 0.0, 1, t0, t1);
    println!(
        "clean 10 Mbit/s 50 ms: sim {sim:.3} Mbit/s, lab {lab:.3} Mbit/s, ratio {:.3}",
        sim / lab
    );
    assert!(
        (sim / lab - 1.0).abs() <= 0.05,
        "sim {sim:.3} vs lab {lab:.3}"
    );
}

/// The 14 %: the simulator (deterministic) gives 1.817 Mbit/s against the
/// lab's 1.808 (ratio 1.005: 0.5 % off, 2026-12-06), and the lab's own
/// mean of the same five seeds has ranged over 1.796-2.043 in seven runs
/// since 2026-11-27 (12.9 % of its middle; its seed 1 lands at 2.4 or at
/// 3.1 Mbit/s); 0.5 + 12.9, rounded up.
#[test]
#[ignore = "needs root"]
fn lossy_path_mean_of_5_within_14_percent() {
    let _g = root_test("lossy_path");
    let (secs, t0, t1) = (12, 1, 11);
    let mut sims = vec![];
    let mut labs = vec![];
    for seed in 1..=5 {
        sims.push(sim_goodput(secs, 0.01, seed, t0, t1));
        labs.push(lab_goodput(secs, 0.01, seed, t0, t1));
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (s, l) = (mean(&sims), mean(&labs));
    println!("1% loss, per run: sim {sims:.3?} lab {labs:.3?}");
    println!(
        "1% loss, mean of 5: sim {s:.3} Mbit/s, lab {l:.3} Mbit/s, ratio {:.3}",
        s / l
    );
    assert!((s / l - 1.0).abs() <= 0.14, "sim {s:.3} vs lab {l:.3}");
}

/// scenarios/validation/rate-step.toml: the forward rate steps 20 -> 5 ->
/// 20 Mbit/s at 8 and 16 s.
const STEP_FILE: &str = "rate-step.toml";
/// (from, to, link rate in Mbit/s) of the windows checked: each phase
/// from `SETTLE` after its step (the 200-packet queue is 480 ms at
/// 5 Mbit/s: up to one RTT) to its end (the lab's flow stops at 24 s).
const STEP_PHASES: [(f64, f64, f64); 3] = [(1.0, 8.0, 20.0), (8.5, 16.0, 5.0), (16.5, 23.5, 20.0)];
/// Delivery-timeline bin, s.
const STEP_BIN: f64 = 0.5;

fn step_scenario() -> (String, Scenario) {
    let path = format!(
        "{}/../../scenarios/validation/{STEP_FILE}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let sc = Scenario::from_toml_str(&text, &path).unwrap_or_else(|e| panic!("{e}"));
    (path, sc)
}

/// Delivered bytes per `STEP_BIN` from 0 to the run's end, in the
/// simulator.
fn sim_timeline(sc: &Scenario) -> Vec<u64> {
    let mut sim = Simulation::new(sc);
    let bins = (sc.duration.as_secs_f64() / STEP_BIN).round() as u64;
    let mut last = 0;
    (1..=bins)
        .map(|k| {
            sim.run_until(Instant::ZERO + Duration::from_millis(k * (STEP_BIN * 1e3) as u64));
            let d = sim.sink(0).delivered_bytes();
            std::mem::replace(&mut last, d).abs_diff(d)
        })
        .collect()
}

/// The same from `pep lab run`'s goodput.csv (100 ms bins, time at the
/// bin's end, zero when the flows and the link's schedule start).
fn lab_timeline(path: &str, secs: f64) -> Vec<u64> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let id = format!("t{}-step", std::process::id());
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_pep"))
        .args(["lab", "run", path, "--id", &id, "--out"])
        .arg(&out)
        .output()
        .expect("run pep");
    assert!(
        o.status.success(),
        "pep lab run {path}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(out.join("goodput.csv")).unwrap();
    let mut bins = vec![0u64; (secs / STEP_BIN).round() as usize];
    for line in text.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let t: f64 = cells[0].parse().unwrap();
        let bytes: u64 = cells[2].parse().unwrap();
        // The 100 ms bin ending at t lies in the STEP_BIN bin holding
        // its middle.
        let k = ((t - 0.05) / STEP_BIN) as usize;
        if let Some(b) = bins.get_mut(k) {
            *b += bytes;
        }
    }
    bins
}

/// Mean delivery rate (Mbit/s) of `bins` between `from` and `to` s.
fn rate_between(bins: &[u64], from: f64, to: f64) -> f64 {
    let (a, b) = ((from / STEP_BIN) as usize, (to / STEP_BIN) as usize);
    bins[a..b].iter().sum::<u64>() as f64 * 8e-6 / (to - from)
}

/// A rate step in both worlds (issue 35): real Linux CUBIC under `pep
/// lab run` and the simulator's `linux` profile on the same file.
/// * The step is followed at once: the first 0.5 s after each step
///   delivers the new rate's payload within 15 %, in both worlds.
/// * Each phase, from 0.5 s after its step (about one RTT with the queue
///   full at 5 Mbit/s) to its end, delivers the link's payload rate within
///   15 % in both worlds, and lab and simulator agree within 10 %.
/// * The timelines agree: the bytes delivered by each 0.5 s mark differ by
///   at most 0.8 MB. (Bin by bin they need not: after a loss, in-order
///   delivery stalls behind the hole and then catches up, and the two
///   worlds' CUBIC cycles lose at different moments. A step placed 0.4 s
///   off in one world would be 0.75 MB apart by itself.)
#[test]
#[ignore = "needs root"]
fn rate_step_is_followed_by_the_delivery_rate_in_both_worlds() {
    let _g = root_test("rate_step");
    let (path, sc) = step_scenario();
    let secs = sc.duration.as_secs_f64();
    let sim = sim_timeline(&sc);
    let lab = lab_timeline(&path, secs);
    let mbps = |b: u64| b as f64 * 8e-6 / STEP_BIN;
    println!(
        "rate step, Mbit/s per {STEP_BIN} s:\n  sim {:.2?}\n  lab {:.2?}",
        sim.iter().map(|&b| mbps(b)).collect::<Vec<_>>(),
        lab.iter().map(|&b| mbps(b)).collect::<Vec<_>>()
    );
    // Payload per packet on the wire: 1448 B of 1500 (the linux profile's
    // MSS with timestamps; the lab's packets are the same size).
    let payload = 1448.0 / 1500.0;
    let near = |world: &str, what: String, got: f64, want: f64| {
        assert!(
            (got / want - 1.0).abs() <= 0.15,
            "{world} {what}: {got:.2} Mbit/s, the link's payload rate {want:.2}"
        );
    };
    for (from, to, link) in STEP_PHASES {
        let want = link * payload;
        let (s, l) = (rate_between(&sim, from, to), rate_between(&lab, from, to));
        println!(
            "  {from}-{to} s at {link} Mbit/s: payload rate {want:.2}, sim {s:.2}, lab {l:.2}"
        );
        near("sim", format!("{from}-{to} s"), s, want);
        near("lab", format!("{from}-{to} s"), l, want);
        assert!(
            (l / s - 1.0).abs() <= 0.10,
            "{from}-{to} s: lab {l:.2} vs sim {s:.2} Mbit/s"
        );
        if from > 1.0 {
            // The first half second after the step.
            let step = from - 0.5;
            let (s, l) = (
                rate_between(&sim, step, from),
                rate_between(&lab, step, from),
            );
            println!("  {step}-{from} s, just after the step: sim {s:.2}, lab {l:.2}");
            near("sim", format!("{step}-{from} s"), s, want);
            near("lab", format!("{step}-{from} s"), l, want);
        }
    }
    let (mut cs, mut cl, mut worst) = (0i64, 0i64, (0i64, 0usize));
    for (k, (&s, &l)) in sim.iter().zip(&lab).enumerate() {
        cs += s as i64;
        cl += l as i64;
        if (cl - cs).abs() > worst.0.abs() {
            worst = (cl - cs, k);
        }
    }
    let at = (worst.1 + 1) as f64 * STEP_BIN;
    println!(
        "  delivered by the same mark, lab - sim: at most {} B (at {at} s)",
        worst.0
    );
    assert!(
        worst.0.abs() <= 800_000,
        "by {at} s the lab delivered {} B more than the simulator",
        worst.0
    );
}
