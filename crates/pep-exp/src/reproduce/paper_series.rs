//! The paper's numbers drawn beside ours: on every measure-against-
//! parameter chart whose measure a value claim compares with numbers the
//! paper reports, one series per source (its 95% bars collapsed to the
//! number), so a reader sees both on one axis.

use pep_plot::{CiPoint, CiSeries, Plot};

use super::{points_at, reported_at, Check, Claim};
use crate::experiment::{value_number, Experiment};
use crate::plots::Named;
use crate::plotspec::PlotKind;
use crate::results::Results;

/// Adds the paper's series to `charts` (those of experiment `stem`);
/// returns how many series it added.
pub fn add(
    charts: &mut [Named],
    exp: &Experiment,
    stem: &str,
    r: &Results,
    claims: &[Claim],
) -> usize {
    let mut added = 0;
    for spec in &exp.plots {
        let PlotKind::Measure { x, y, .. } = &spec.kind else {
            continue;
        };
        let Some(k) = r.params.iter().position(|p| p == x) else {
            continue;
        };
        let Some(named) = charts.iter_mut().find(|c| c.name == spec.name) else {
            continue;
        };
        let Plot::ErrorBars { series, .. } = &mut named.chart.plot else {
            continue;
        };
        let paper = paper_points(claims, stem, y, k, r);
        if paper.is_empty() {
            continue;
        }
        // Beside the paper's, a single series of ours says whose it is.
        for s in series.iter_mut().filter(|s| s.name == "all runs") {
            s.name = "ours".into();
        }
        added += paper.len();
        series.extend(paper);
    }
    added
}

/// Per figure source, the paper's number at each point a value claim on
/// `measure` names, at the point's value of parameter `k`.
fn paper_points(
    claims: &[Claim],
    stem: &str,
    measure: &str,
    k: usize,
    r: &Results,
) -> Vec<CiSeries> {
    let mut by_source: Vec<(String, Vec<CiPoint>)> = Vec::new();
    for c in claims.iter().filter(|c| c.experiment == stem) {
        let Check::Value {
            measure: m,
            at,
            figure,
            ..
        } = &c.check
        else {
            continue;
        };
        if *m != measure {
            continue;
        }
        for p in points_at(r, at) {
            let (Ok(Some(v)), Some(xv)) = (
                reported_at(figure, r, p),
                r.points[p].values[k].as_ref().and_then(value_number),
            ) else {
                continue;
            };
            let name = format!("paper: {}", figure_source(figure));
            let pt = CiPoint::new(xv.0, v, v, v);
            match by_source.iter_mut().find(|(n, _)| *n == name) {
                Some((_, pts)) => pts.push(pt),
                None => by_source.push((name, vec![pt])),
            }
        }
    }
    by_source
        .into_iter()
        .map(|(name, mut pts)| {
            pts.sort_by(|a, b| a.x.total_cmp(&b.x));
            pts.dedup_by(|a, b| a.x == b.x && a.mean == b.mean);
            CiSeries::new(name, pts)
        })
        .collect()
}

/// Legends a reader can follow: a series named by parameter paths
/// (`link[asym].reverse.queue.kind=sad, agent[ar].factor=2`) is renamed
/// by each path's last word (`queue kind = sad, factor = 2`).
pub fn human_legends(charts: &mut [Named]) {
    for c in charts {
        let names: Vec<&mut String> = match &mut c.chart.plot {
            Plot::ErrorBars { series, .. } => series.iter_mut().map(|s| &mut s.name).collect(),
            Plot::Lines(series) | Plot::Scatter(series) => {
                series.iter_mut().map(|s| &mut s.name).collect()
            }
            Plot::Histogram { series, .. } | Plot::Cdf { series, .. } => {
                series.iter_mut().map(|s| &mut s.name).collect()
            }
            Plot::TimeSequence(_) => vec![],
        };
        for n in names {
            *n = human(n);
        }
    }
}

/// `link[asym].reverse.queue.kind=sad` -> `queue kind = sad`, per
/// comma-separated part: the path's last word, after its owner when the
/// word alone says little (kind, rate, p); other text unchanged.
pub fn human(name: &str) -> String {
    const GENERIC: [&str; 7] = ["kind", "p", "rate", "limit", "delay", "count", "enabled"];
    name.split(", ")
        .map(|part| match part.split_once('=') {
            Some((path, value)) if !path.contains(' ') && !path.is_empty() => {
                // `link[wired]` is the link called wired; `agent[0]` is an agent.
                let words: Vec<String> = path
                    .split('.')
                    .map(|w| match w.split_once('[') {
                        Some((owner, rest)) => {
                            let id = rest.trim_end_matches(']');
                            if id.parse::<u64>().is_ok() {
                                owner.to_string()
                            } else {
                                id.to_string()
                            }
                        }
                        None => w.to_string(),
                    })
                    .collect();
                let n = words.len();
                let last = &words[n - 1];
                let label = if n >= 2 && GENERIC.contains(&last.as_str()) {
                    format!("{} {last}", words[n - 2])
                } else {
                    last.clone()
                };
                format!("{} = {value}", label.replace('_', " "))
            }
            _ => part.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn figure_source(f: &super::Figure) -> &'static str {
    match f {
        super::Figure::Reported { source, .. } | super::Figure::Table { source, .. } => source,
        super::Figure::Analytic { formula, .. } => formula,
    }
}

#[cfg(test)]
mod tests {
    use super::paper_points;
    use crate::experiment::Experiment;
    use crate::plotspec::PlotKind;
    use crate::reproduce::{default_scenarios_dir, points_at, registry, Check, Figure};
    use crate::results::Results;

    /// Every measure-against-parameter figure of every paper carries the
    /// paper's numbers where a value claim compares its measure with them:
    /// one point per claimed point, at the paper's value.
    #[test]
    fn legends_name_parameters_by_their_last_words() {
        use super::human;
        assert_eq!(
            human("link[asym].reverse.queue.kind=sad"),
            "queue kind = sad"
        );
        assert_eq!(human("agent[ar].factor=2"), "factor = 2");
        assert_eq!(
            human("link[asym].reverse.queue.data_share=0.5, defaults.tcp.cc=newreno"),
            "data share = 0.5, cc = newreno"
        );
        assert_eq!(human("link[wired].rate=6Mbit/s"), "wired rate = 6Mbit/s");
        assert_eq!(human("sad"), "sad");
        assert_eq!(human("paper: Table 1"), "paper: Table 1");
    }

    #[test]
    fn every_figure_carries_the_papers_numbers() {
        let mut drawn = 0;
        for paper in registry() {
            let claims = (paper.claims)();
            for file in paper.experiments {
                let path = default_scenarios_dir().join(paper.name).join(file);
                let exp = Experiment::load(&path).unwrap_or_else(|e| panic!("{e}"));
                let stem = file.trim_end_matches(".toml");
                // The points without runs: enough to place the paper's numbers.
                let r = Results {
                    params: exp.params.clone(),
                    points: exp.points.clone(),
                    measures: vec![],
                    rows: vec![],
                };
                for spec in &exp.plots {
                    let PlotKind::Measure { x, y, .. } = &spec.kind else {
                        continue;
                    };
                    let Some(k) = r.params.iter().position(|p| p == x) else {
                        continue;
                    };
                    let want: usize = claims
                        .iter()
                        .filter(|c| c.experiment == stem)
                        .filter_map(|c| match &c.check {
                            Check::Value {
                                measure,
                                at,
                                figure: Figure::Reported { .. } | Figure::Table { .. },
                                ..
                            } if measure == y => Some(points_at(&r, at).len()),
                            _ => None,
                        })
                        .sum();
                    let got: usize = paper_points(&claims, stem, y, k, &r)
                        .iter()
                        .map(|s| s.points.len())
                        .sum();
                    assert!(
                        got == want,
                        "{} {}: plot {} has {got} of the paper's {want} points",
                        paper.name,
                        stem,
                        spec.name
                    );
                    drawn += got;
                }
            }
        }
        // Shekhar's Table 1 (10) and Table 5 (9) at least.
        assert!(drawn >= 19, "{drawn} paper points drawn");
    }
}
