//! The simulator's BBR against the kernel's `tcp_bbr` (issue 35's test
//! "BBR against the kernel's"): scenarios/validation/bbr-clean.toml and
//! bbr-loss.toml (one BBR flow, 20 Mbit/s, 50 ms RTT, deep buffer; the
//! second with 1 % random loss), in the simulator (`linux` profile) and
//! in the lab through `pep lab run`. Mean of 3 runs of 15 s each: steady
//! goodput within 10 % and the smoothed RTT's median within 20 %, both
//! ways. Needs root and `ip` (`#[ignore = "needs root"]`); about 90 s of
//! real time. Figures: `cargo test -p pep-cli --test bbr_vs_kernel --
//! --include-ignored --nocapture`.

use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

use pep_core::{Duration, Instant};
use pep_sim::{Scenario, Simulation};

/// One lab at a time in this binary, as in pep-lab's root tests.
static SERIAL: Mutex<()> = Mutex::new(());

/// The lock. The tests taking it are `#[ignore = "needs root"]`; run
/// anyway without root, they fail here saying why.
fn root_test(name: &str) -> MutexGuard<'static, ()> {
    pep_lab::error::require_root_for_test(name);
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const SECS: u64 = 15;
/// Measured from here: BBR's startup and drain are over by then.
const FROM: u64 = 2;
const RUNS: u64 = 3;

/// One run's steady goodput (Mbit/s) and median smoothed RTT (ms).
#[derive(Clone, Copy, Debug)]
struct Run {
    goodput: f64,
    rtt_p50: f64,
}

fn scenario_path(file: &str) -> String {
    format!(
        "{}/../../scenarios/validation/{file}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty(), "no RTT sample");
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn sim_run(file: &str, seed: u64) -> Run {
    let path = scenario_path(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut sc = Scenario::from_toml_str(&text, &path).unwrap_or_else(|e| panic!("{e}"));
    sc.duration = Duration::from_secs(SECS);
    sc.seed = seed;
    let mut sim = Simulation::new(&sc);
    let at = |ms: u64| Instant::ZERO + Duration::from_millis(ms);
    sim.run_until(at(FROM * 1000));
    let b0 = sim.sink(0).delivered_bytes();
    let mut rtts = vec![];
    for ms in (FROM * 1000..SECS * 1000).step_by(100) {
        sim.run_until(at(ms));
        if let Some(s) = sim.sender(0).and_then(|s| s.srtt()) {
            rtts.push(s.as_millis_f64());
        }
    }
    sim.run_until(at(SECS * 1000));
    let b1 = sim.sink(0).delivered_bytes();
    Run {
        goodput: (b1 - b0) as f64 * 8e-6 / (SECS - FROM) as f64,
        rtt_p50: median(rtts),
    }
}

/// The rows of a CSV file with a header, as maps from column to value.
fn csv(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().expect("header").split(',').collect();
    lines
        .map(|l| {
            head.iter()
                .map(|h| h.to_string())
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect()
}

fn num(row: &std::collections::HashMap<String, String>, col: &str) -> f64 {
    row[col]
        .parse()
        .unwrap_or_else(|e| panic!("{col} = {:?}: {e}", row[col]))
}

fn lab_run(file: &str, seed: u64) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let id = format!("t{}-bbr{seed}", std::process::id());
    let o = Command::new(env!("CARGO_BIN_EXE_pep"))
        .args(["lab", "run", &scenario_path(file), "--id", &id])
        .args([
            "--duration",
            &format!("{SECS}s"),
            "--seed",
            &seed.to_string(),
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run pep");
    assert!(
        o.status.success(),
        "pep lab run {file}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let bytes: f64 = csv(&out.join("goodput.csv"))
        .iter()
        .filter(|r| {
            let t = num(r, "time_s");
            t > FROM as f64 + 1e-6 && t <= SECS as f64 + 1e-6
        })
        .map(|r| num(r, "bytes"))
        .sum();
    let rtts = csv(&out.join("tcpinfo.csv"))
        .iter()
        .filter(|r| num(r, "time_s") >= FROM as f64)
        .map(|r| num(r, "srtt_ms"))
        .collect();
    Run {
        goodput: bytes * 8e-6 / (SECS - FROM) as f64,
        rtt_p50: median(rtts),
    }
}

fn check(file: &str) {
    let mean = |v: &[Run], f: fn(&Run) -> f64| v.iter().map(f).sum::<f64>() / v.len() as f64;
    let (mut sims, mut labs) = (vec![], vec![]);
    for seed in 1..=RUNS {
        sims.push(sim_run(file, seed));
        labs.push(lab_run(file, seed));
    }
    println!("{file}: sim {sims:.3?}\n{file}: lab {labs:.3?}");
    let (sg, lg) = (mean(&sims, |r| r.goodput), mean(&labs, |r| r.goodput));
    let (sr, lr) = (mean(&sims, |r| r.rtt_p50), mean(&labs, |r| r.rtt_p50));
    println!(
        "{file}: goodput sim {sg:.3} lab {lg:.3} Mbit/s (lab/sim {:.3}); \
         RTT p50 sim {sr:.1} lab {lr:.1} ms (lab/sim {:.3})",
        lg / sg,
        lr / sr
    );
    assert!(
        (lg / sg - 1.0).abs() <= 0.10,
        "{file}: goodput sim {sg:.3} vs lab {lg:.3} Mbit/s"
    );
    assert!(
        (lr / sr - 1.0).abs() <= 0.20,
        "{file}: RTT p50 sim {sr:.1} vs lab {lr:.1} ms"
    );
}

#[test]
#[ignore = "needs root"]
fn clean_path_goodput_and_rtt_match_the_kernels_bbr() {
    let _g = root_test("clean_path_goodput_and_rtt_match_the_kernels_bbr");
    check("bbr-clean.toml");
}

#[test]
#[ignore = "needs root"]
fn lossy_path_goodput_and_rtt_match_the_kernels_bbr() {
    let _g = root_test("lossy_path_goodput_and_rtt_match_the_kernels_bbr");
    check("bbr-loss.toml");
}
