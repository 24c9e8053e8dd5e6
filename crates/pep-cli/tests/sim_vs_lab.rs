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
