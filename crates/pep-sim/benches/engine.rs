//! Engine speed on the benchmark dumbbell (see `pep_sim::bench`), short runs
//! so criterion can repeat them. The full-length figures come from
//! `pep sim bench` (200 simulated seconds, N = 10, 50, 500).

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

criterion_group!(benches, dumbbell);
criterion_main!(benches);
