//! `pep lab compare`'s table: per flow, the simulator and the lab, each
//! without and with the PEP, their goodput, retransmissions and RTT, the
//! PEP's gain in each world and the simulator-to-lab ratios. Repeated lab
//! runs give means with 95 % Student-t intervals. The caller fills the
//! samples from the simulator's and the lab's summaries.

use std::fmt::Write as _;

use pep_plot::t975;
use serde::Serialize;

/// Mean and 95 % interval of repeated measurements.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Estimate {
    pub mean: f64,
    /// Half-width of the 95 % interval (0 for one sample).
    pub ci95: f64,
    pub n: usize,
}

impl Estimate {
    /// `None` without a finite sample.
    pub fn of(samples: &[f64]) -> Option<Estimate> {
        let v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        let n = v.len();
        if n == 0 {
            return None;
        }
        let mean = v.iter().sum::<f64>() / n as f64;
        let ci95 = if n < 2 {
            0.0
        } else {
            let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            t975(n - 1) * (var / n as f64).sqrt()
        };
        Some(Estimate { mean, ci95, n })
    }

    fn text(self, digits: usize) -> String {
        if self.n > 1 {
            format!("{:.digits$}±{:.digits$}", self.mean, self.ci95)
        } else {
            format!("{:.digits$}", self.mean)
        }
    }
}

/// One run's numbers of one flow.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Sample {
    pub goodput_mbps: f64,
    pub retransmitted: f64,
    /// ms; NaN when not measured.
    pub rtt_ms: f64,
}

/// A world's runs of one flow, summarised.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct World {
    pub goodput_mbps: Estimate,
    pub retransmitted: Option<Estimate>,
    pub rtt_ms: Option<Estimate>,
}

impl World {
    pub fn of(runs: &[Sample]) -> Option<World> {
        let col = |f: fn(&Sample) -> f64| runs.iter().map(f).collect::<Vec<f64>>();
        Some(World {
            goodput_mbps: Estimate::of(&col(|s| s.goodput_mbps))?,
            retransmitted: Estimate::of(&col(|s| s.retransmitted)),
            rtt_ms: Estimate::of(&col(|s| s.rtt_ms)),
        })
    }
}

/// One flow in the four worlds (`None`: not run, e.g. a scenario without
/// a PEP has no "with PEP" worlds).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FlowComparison {
    pub flow: String,
    pub sim_without: Option<World>,
    pub sim_with: Option<World>,
    pub lab_without: Option<World>,
    pub lab_with: Option<World>,
    /// Goodput with the PEP over goodput without, in the simulator.
    pub sim_gain: Option<f64>,
    /// The same in the lab: the ratio of the mean goodputs, with the
    /// interval of the per-run ratios when the runs pair up.
    pub lab_gain: Option<Estimate>,
    /// The simulator's gain over the lab's.
    pub gain_ratio: Option<f64>,
    /// The simulator's goodput over the lab's, with and without the PEP.
    pub goodput_ratio_with: Option<f64>,
    pub goodput_ratio_without: Option<f64>,
}

impl FlowComparison {
    /// From each world's samples of this flow (`sim_*`: one per seed;
    /// `lab_*`: one per run, in run order, paired by index for the gain;
    /// an empty slice: the world did not run).
    pub fn new(
        flow: &str,
        sim_without: &[Sample],
        sim_with: &[Sample],
        lab_without: &[Sample],
        lab_with: &[Sample],
    ) -> FlowComparison {
        let (sw, sp) = (World::of(sim_without), World::of(sim_with));
        let (lw, lp) = (World::of(lab_without), World::of(lab_with));
        let g = |w: &Option<World>| w.map(|w| w.goodput_mbps.mean);
        let div = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        };
        let sim_gain = div(g(&sp), g(&sw));
        let per_run: Vec<f64> = lab_with
            .iter()
            .zip(lab_without)
            .filter(|(_, w)| w.goodput_mbps > 0.0)
            .map(|(p, w)| p.goodput_mbps / w.goodput_mbps)
            .collect();
        let lab_gain = div(g(&lp), g(&lw)).map(|mean| Estimate {
            mean,
            ..Estimate::of(&per_run).unwrap_or(Estimate {
                mean,
                ci95: 0.0,
                n: 1,
            })
        });
        FlowComparison {
            flow: flow.to_string(),
            gain_ratio: div(sim_gain, lab_gain.map(|e| e.mean)),
            goodput_ratio_with: div(g(&sp), g(&lp)),
            goodput_ratio_without: div(g(&sw), g(&lw)),
            sim_without: sw,
            sim_with: sp,
            lab_without: lw,
            lab_with: lp,
            sim_gain,
            lab_gain,
        }
    }
}

fn opt(e: Option<Estimate>, digits: usize) -> String {
    e.map_or("-".to_string(), |e| e.text(digits))
}

fn ratio(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.3}"))
}

impl FlowComparison {
    /// The worlds that ran: name, goodput, retransmissions, RTT.
    fn rows(&self) -> Vec<[String; 4]> {
        [
            ("sim, no PEP", self.sim_without),
            ("sim, PEP", self.sim_with),
            ("lab, no PEP", self.lab_without),
            ("lab, PEP", self.lab_with),
        ]
        .into_iter()
        .filter_map(|(name, w)| {
            let w = w?;
            Some([
                name.to_string(),
                w.goodput_mbps.text(3),
                opt(w.retransmitted, 0),
                opt(w.rtt_ms, 1),
            ])
        })
        .collect()
    }
}

/// The table, one block per flow.
pub fn render(flows: &[FlowComparison]) -> String {
    let mut s = String::new();
    for f in flows {
        let _ = writeln!(s, "flow {}", f.flow);
        let head = ["", "goodput Mbit/s", "retx", "RTT ms"].map(String::from);
        for [a, b, c, d] in std::iter::once(head).chain(f.rows()) {
            let _ = writeln!(s, "  {a:<16} {b:>16} {c:>12} {d:>14}");
        }
        if f.sim_gain.is_some() || f.lab_gain.is_some() {
            let _ = writeln!(
                s,
                "  PEP gain (PEP / no PEP): sim {}, lab {}; sim/lab {}",
                ratio(f.sim_gain),
                opt(f.lab_gain, 3),
                ratio(f.gain_ratio)
            );
        }
        let _ = writeln!(
            s,
            "  goodput sim/lab: no PEP {}, PEP {}",
            ratio(f.goodput_ratio_without),
            ratio(f.goodput_ratio_with)
        );
    }
    s
}

/// The table in HTML (one `<table>` per flow).
pub fn render_html(title: &str, flows: &[FlowComparison]) -> String {
    let esc = |t: &str| t.replace('&', "&amp;").replace('<', "&lt;");
    let mut s = format!(
        "<!doctype html>\n<meta charset=\"utf-8\">\n<title>{0}</title>\n<h1>{0}</h1>\n",
        esc(title)
    );
    for f in flows {
        let _ = writeln!(
            s,
            "<h2>flow {}</h2>\n<table border=1>\n<tr><th></th><th>goodput Mbit/s</th><th>retx</th><th>RTT ms</th></tr>",
            esc(&f.flow)
        );
        for [a, b, c, d] in f.rows() {
            let _ = writeln!(
                s,
                "<tr><td>{a}</td><td>{b}</td><td>{c}</td><td>{d}</td></tr>"
            );
        }
        let _ = writeln!(
            s,
            "</table>\n<p>PEP gain: sim {}, lab {}, sim/lab {}; goodput sim/lab: no PEP {}, PEP {}</p>",
            ratio(f.sim_gain),
            opt(f.lab_gain, 3),
            ratio(f.gain_ratio),
            ratio(f.goodput_ratio_without),
            ratio(f.goodput_ratio_with)
        );
    }
    s
}

/// One claim of `pep lab validate`: a quantity of one flow, simulator
/// against lab, with its tolerance.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub scenario: String,
    pub flow: String,
    pub what: &'static str,
    pub sim: f64,
    pub lab: f64,
    /// Largest allowed |lab / sim - 1|.
    pub tolerance: f64,
    pub pass: bool,
}

/// The claims of one scenario's table: with a PEP, its gain (15 %) and the
/// goodput with it; without, the goodput; goodput within 10 % on a clean
/// path, 15 % on a `lossy` one.
pub fn verdicts(scenario: &str, flows: &[FlowComparison], lossy: bool) -> Vec<Verdict> {
    let goodput_tol = if lossy { 0.15 } else { 0.10 };
    let mut out = vec![];
    let g = |w: &Option<World>| w.map(|w| w.goodput_mbps.mean);
    for f in flows {
        let mut claim = |what, sim: Option<f64>, lab: Option<f64>, tolerance: f64| {
            if let (Some(sim), Some(lab)) = (sim, lab) {
                out.push(Verdict {
                    scenario: scenario.to_string(),
                    flow: f.flow.clone(),
                    what,
                    sim,
                    lab,
                    tolerance,
                    pass: sim > 0.0 && (lab / sim - 1.0).abs() <= tolerance,
                });
            }
        };
        if f.sim_with.is_some() {
            claim("PEP gain", f.sim_gain, f.lab_gain.map(|e| e.mean), 0.15);
            claim(
                "goodput with PEP",
                g(&f.sim_with),
                g(&f.lab_with),
                goodput_tol,
            );
        } else {
            claim("goodput", g(&f.sim_without), g(&f.lab_without), goodput_tol);
        }
    }
    out
}

/// `validation.md`: every claim, simulator and lab side by side.
pub fn validation_report(rows: &[Verdict], runs: usize, wall_s: f64) -> String {
    let mut s = format!(
        "# Simulator against the lab\n\n{} claims, {} missed; lab runs per world: {runs}; \
         wall time {wall_s:.0} s.\n\n| scenario | flow | claim | simulator | lab | lab/sim | tolerance | verdict |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n",
        rows.len(),
        rows.iter().filter(|r| !r.pass).count()
    );
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} | ±{:.0} % | {} |",
            r.scenario,
            r.flow,
            r.what,
            r.sim,
            r.lab,
            r.lab / r.sim,
            r.tolerance * 100.0,
            if r.pass { "pass" } else { "MISS" }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(g: f64) -> Sample {
        Sample {
            goodput_mbps: g,
            retransmitted: 0.0,
            rtt_ms: f64::NAN,
        }
    }

    #[test]
    fn estimates_use_student_t() {
        let e = Estimate::of(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(e.mean, 2.0);
        // sd 1, n 3: 4.303 / sqrt(3).
        assert!((e.ci95 - 4.303 / 3f64.sqrt()).abs() < 1e-9, "{e:?}");
        assert_eq!(Estimate::of(&[5.0]).unwrap().ci95, 0.0);
        assert!(Estimate::of(&[f64::NAN]).is_none());
    }

    #[test]
    fn gains_and_ratios() {
        let c = FlowComparison::new(
            "f",
            &[s(2.0)],
            &[s(8.0)],
            &[s(2.0), s(3.0)],
            &[s(6.0), s(9.0)],
        );
        assert_eq!(c.sim_gain, Some(4.0));
        // Mean 7.5 over mean 2.5; both runs' ratios are 3.
        let g = c.lab_gain.unwrap();
        assert_eq!((g.mean, g.ci95, g.n), (3.0, 0.0, 2));
        assert!((c.gain_ratio.unwrap() - 4.0 / 3.0).abs() < 1e-12);
        assert!((c.goodput_ratio_with.unwrap() - 8.0 / 7.5).abs() < 1e-12);
        let t = render(&[c]);
        assert!(t.contains("lab, PEP") && t.contains("7.500±"), "{t}");
        assert!(
            t.contains("sim 4.000, lab 3.000±0.000; sim/lab 1.333"),
            "{t}"
        );
    }
}
