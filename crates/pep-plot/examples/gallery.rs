//! Writes one chart of each kind, as PNG and SVG, to a directory:
//! `cargo run -p pep-plot --example gallery -- /tmp/gallery`.
//! The data is synthetic (deterministic), shaped like pepkit results.

use pep_plot::{ci95, render, AckSample, Bins, Chart, CiSeries, FlowTrace, Samples, Series};

/// A tiny deterministic generator (64-bit LCG), so the example needs no RNG crate.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Exponential with the given mean.
    fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.next()).ln()
    }
}

fn charts() -> Vec<(&'static str, Chart)> {
    let mut r = Lcg(7);
    let goodput = ["no PEP", "split TCP", "ACK filter"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let cap = 10.0 - 2.0 * i as f64;
            let tau = [8.0, 1.5, 4.0][i];
            Series::new(
                *name,
                (1..=300).map(|k| {
                    let t = k as f64 * 0.1;
                    (t, cap * (1.0 - (-t / tau).exp()) + 0.3 * (t * 3.0).sin())
                }),
            )
        });
    let lines = Chart::lines(goodput)
        .title("Goodput over a 250 ms GEO path")
        .x_label("time (s)")
        .y_label("goodput (Mbit/s)");

    let losses = [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1];
    let ci = ["no PEP", "split TCP"].iter().enumerate().map(|(i, name)| {
        CiSeries::new(
            *name,
            losses.iter().map(|&p| {
                let base = if i == 0 {
                    9.0 / (1.0 + 400.0 * p)
                } else {
                    9.5 / (1.0 + 30.0 * p)
                };
                let runs: Vec<f64> = (0..10).map(|_| base * (0.85 + 0.3 * r.next())).collect();
                ci95(p, &runs).expect("finite runs")
            }),
        )
    });
    let error_bars = Chart::error_bars(ci.collect::<Vec<_>>())
        .title("Goodput vs loss (10 seeds, 95% CI)")
        .x_label("loss probability")
        .y_label("goodput (Mbit/s)")
        .x_log();

    let bursts = |mean: f64, r: &mut Lcg| -> Vec<f64> {
        (0..2000).map(|_| 1.0 + r.exp(mean).floor()).collect()
    };
    let no_pep = Samples::new("no PEP", bursts(6.0, &mut r));
    let pep = Samples::new("PEP", bursts(2.0, &mut r));
    let hist = Chart::histogram_fraction([no_pep.clone(), pep.clone()], Bins::Auto)
        .title("Burst sizes")
        .x_label("burst size (segments)");
    let cdf = Chart::cdf([no_pep, pep])
        .title("Burst sizes, CDF")
        .x_label("burst size (segments)");

    let scatter = Chart::scatter(["no PEP", "PEP"].iter().enumerate().map(|(i, name)| {
        Series::new(
            *name,
            (0..400).map(|_| (r.exp(5.0 + 10.0 * i as f64), 40.0 + r.next() * 1420.0)),
        )
    }))
    .title("Forward data: inter-arrival time vs size")
    .x_label("inter-arrival time (ms)")
    .y_label("segment size (bytes)");

    let mut flow = FlowTrace::new("bulk");
    let mss = 1448.0;
    let rtt = 0.5;
    let mut seq = 0.0;
    for round in 0..6 {
        let t0 = round as f64 * rtt;
        let n = 2usize.pow(round.min(4) as u32);
        for k in 0..n {
            let t = t0 + k as f64 * 0.004;
            if round == 4 && k == 3 {
                flow.retransmitted.push((t0 + rtt + 0.2, seq));
            }
            flow.sent.push((t, seq));
            seq += mss;
        }
        flow.acks.push(AckSample::new(t0 + rtt, seq, 65535.0));
    }
    let tseq = Chart::time_sequence([flow]).title("Time-sequence: bulk flow");

    vec![
        ("lines", lines),
        ("error_bars", error_bars),
        ("histogram", hist),
        ("cdf", cdf),
        ("scatter", scatter),
        ("time_sequence", tseq),
    ]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "gallery".into());
    std::fs::create_dir_all(&dir)?;
    for (name, chart) in charts() {
        for ext in ["png", "svg"] {
            let path = format!("{dir}/{name}.{ext}");
            let skipped = render(&chart, &path)?;
            println!("{path} (skipped {} points)", skipped.points());
        }
    }
    Ok(())
}
