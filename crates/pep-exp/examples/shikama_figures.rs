//! Shikama's per-run figures from single runs of scenarios/shikama/pep.toml
//! (seed 1): forward-data and burst-size distributions (Fig. 6), the
//! scatter of forward-data size against inter-arrival time (Figs. 9-10),
//! the wireless sender's cwnd (Figs. 11-12), the distribution of the queue
//! at n2 (Fig. 14) and the queue over time with and without shaping.
//!
//! cargo run --release -p pep-exp --example shikama_figures -- [duration] [out dir] [svg|png]
//! (defaults: 1500s, docs/shikama, svg)

use std::path::{Path, PathBuf};

use pep_plot::{render, Chart, Series};
use pep_sim::agent::split::Split;
use pep_sim::{Scenario, Simulation};

fn run(dir: &Path, duration: &str, p: f64, extra: &[(&str, &str)]) -> Simulation {
    let text = std::fs::read_to_string(dir.join("pep.toml")).expect("pep.toml");
    let mut o = vec![
        (
            "scenario.duration".to_string(),
            toml::Value::String(duration.into()),
        ),
        (
            "link[wireless].forward.loss.p".to_string(),
            toml::Value::Float(p),
        ),
    ];
    for (k, v) in extra {
        o.push((k.to_string(), toml::Value::String(v.to_string())));
    }
    let sc = Scenario::from_toml_str_with(&text, "pep.toml", &o).expect("scenario");
    let mut sim = Simulation::new(&sc);
    sim.run();
    sim
}

fn split(sim: &Simulation) -> &Split {
    sim.agent("pep")
        .unwrap()
        .as_any()
        .downcast_ref::<Split>()
        .unwrap()
}

/// (size, frequency) points of a histogram, empty bins left out (log axis).
fn freq(h: &[u64]) -> Vec<(f64, f64)> {
    h.iter()
        .enumerate()
        .filter(|&(k, &c)| k > 0 && c > 0)
        .map(|(k, &c)| (k as f64, c as f64))
        .collect()
}

/// Queue samples at n2 (port 4: the "wired" link's forward direction).
fn queue(sim: &Simulation) -> Vec<(f64, f64)> {
    sim.metrics()
        .queues
        .iter()
        .filter(|r| r.port == 4)
        .map(|r| (r.t.as_secs_f64(), r.packets as f64))
        .collect()
}

fn save(out: &Path, name: &str, chart: Chart) {
    let ext = std::env::args().nth(3).unwrap_or_else(|| "svg".into());
    let path = out.join(format!("{name}.{ext}"));
    render(&chart, &path).expect("render");
    println!("{}", path.display());
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let duration = args.get(1).cloned().unwrap_or_else(|| "1500s".into());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = args
        .get(2)
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("docs/shikama"));
    std::fs::create_dir_all(&out).unwrap();
    let dir = root.join("scenarios/shikama");

    let mut qdist = Vec::new();
    for p in [0.0001, 0.001, 0.01, 0.1] {
        let sim = run(&dir, &duration, p, &[]);
        let pep = split(&sim);
        let fwd = freq(&pep.forward().sizes);
        let bursts = freq(&pep.bursts().unwrap().sizes());
        save(
            &out,
            &format!("sizes-{p}"),
            Chart::scatter([
                Series::new("forward data", fwd),
                Series::new("bursts", bursts),
            ])
            .y_log()
            .title(format!(
                "Forward data and bursts, P_L = {p}, one connection"
            ))
            .x_label("size (segments of 1460 B)")
            .y_label("frequency"),
        );
        if p == 0.001 || p == 0.01 {
            let pts: Vec<(f64, f64)> = pep
                .forward()
                .scatter
                .iter()
                .map(|&(gap, n)| (gap.as_millis_f64(), n as f64 / 1460.0))
                .collect();
            save(
                &out,
                &format!("scatter-{p}"),
                Chart::scatter([Series::new("forward data > 1 segment", pts)])
                    .title(format!("Size against inter-arrival time, P_L = {p}"))
                    .x_label("inter-arrival time (ms)")
                    .y_label("forward data (segments)"),
            );
            let cwnd: Vec<(f64, f64)> = sim
                .metrics()
                .cwnd
                .iter()
                .filter(|r| r.flow == 0 && (100.0..200.0).contains(&r.t.as_secs_f64()))
                .map(|r| (r.t.as_secs_f64(), r.cwnd as f64 / 1460.0))
                .collect();
            save(
                &out,
                &format!("cwnd-{p}"),
                Chart::lines([Series::new("wireless sender cwnd", cwnd)])
                    .title(format!("cwnd of the source (wireless leg), P_L = {p}"))
                    .x_label("time (s)")
                    .y_label("cwnd (segments)"),
            );
        }
        let mut h = vec![0u64; 1];
        for (_, q) in queue(&sim) {
            let q = q as usize;
            if h.len() <= q {
                h.resize(q + 1, 0);
            }
            h[q] += 1;
        }
        let pts: Vec<(f64, f64)> = h
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(k, &c)| (k as f64, c as f64))
            .collect();
        qdist.push(Series::new(format!("P_L = {p}"), pts));
    }
    save(
        &out,
        "queue-distribution",
        Chart::scatter(qdist)
            .y_log()
            .title("Queue length at n2 (10 ms samples), one connection, 6 Mbit/s")
            .x_label("queue (packets)")
            .y_label("samples"),
    );
    let window = |s: Vec<(f64, f64)>| -> Vec<(f64, f64)> {
        s.into_iter()
            .filter(|(t, _)| (100.0..130.0).contains(t))
            .collect()
    };
    let plain = window(queue(&run(&dir, &duration, 0.001, &[])));
    let shaped = window(queue(&run(
        &dir,
        &duration,
        0.001,
        &[("agent[0].mitigation", "shape-6M")],
    )));
    save(
        &out,
        "queue-over-time",
        Chart::lines([
            Series::new("PEP", plain),
            Series::new("PEP, shaped at 6 Mbit/s", shaped),
        ])
        .title("Queue at n2, P_L = 0.001")
        .x_label("time (s)")
        .y_label("queue (packets)"),
    );
}
