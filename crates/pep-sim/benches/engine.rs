//! Engine speed on the benchmark dumbbell (see `pep_sim::bench`) and on
//! the Gschwandtner split-PEP dumbbell (`scenarios/gschwandtner/ftp50-pep.toml`,
//! 50 SACK flows through a two-node PEP), short runs so criterion can repeat
//! them. The full-length figures come from `pep sim bench` (200 simulated
//! seconds, N = 10, 50, 500) and `pep sim run` (`run.json`).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pep_sim::Simulation;

fn dumbbell(c: &mut Criterion) {
    let mut g = c.benchmark_group("dumbbell");
    g.sample_size(10);
    for flows in [10usize, 50] {
        let sc = pep_sim::bench::dumbbell(flows, 10).expect("valid");
        // Events per run, for criterion's throughput line.
        let mut probe = Simulation::new(&sc);
        probe.run();
        g.throughput(Throughput::Elements(probe.engine_stats().events));
        g.bench_function(format!("{flows}-flows-10s"), |b| {
            b.iter(|| {
                let mut sim = Simulation::new(&sc);
                sim.run();
                sim.engine_stats().events
            })
        });
    }
    g.finish();
}

/// The Gschwandtner scenario, cut to `secs` simulated seconds.
fn gschwandtner(secs: u64) -> pep_sim::scenario::Scenario {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/gschwandtner/ftp50-pep.toml"
    );
    let text = std::fs::read_to_string(path).expect("scenario file");
    let text = text.replace("duration = \"2000s\"", &format!("duration = \"{secs}s\""));
    assert!(
        text.contains(&format!("duration = \"{secs}s\"")),
        "duration not found"
    );
    pep_sim::scenario::Scenario::from_toml_str(&text, path).expect("valid")
}

/// 10 s is mostly the tunnel's slow start (60 k events); 60 s (2.4 M
/// events) adds a loaded split link, closer to the per-event mix of the
/// 2000 s run. The scenario is cut at the split link: each run is timed
/// with its two sides on two threads and, `-one-thread`, alternately on
/// one (the same events and outputs).
fn split_pep(c: &mut Criterion) {
    let mut g = c.benchmark_group("gschwandtner");
    g.sample_size(10);
    for secs in [10, 60] {
        let sc = gschwandtner(secs);
        let mut probe = Simulation::new(&sc);
        probe.run();
        g.throughput(Throughput::Elements(probe.engine_stats().events));
        for (parallel, suffix) in [(true, ""), (false, "-one-thread")] {
            g.bench_function(format!("ftp50-pep-{secs}s{suffix}"), |b| {
                b.iter(|| {
                    let mut sim = Simulation::new(&sc);
                    sim.set_parallel(parallel);
                    sim.run();
                    sim.engine_stats().events
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, dumbbell, split_pep);
criterion_main!(benches);
