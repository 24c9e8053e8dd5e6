//! Charts from results: a sweep's `[[plot]]` requests (or default plots),
//! and the standard plots of a single run's directory. Everything here
//! builds [`Chart`]s; [`write`] renders them.

use std::path::{Path, PathBuf};

use pep_plot::{tidy, Bins, Chart, CiPoint, CiSeries, Samples, Series};

use crate::experiment::{value_number, value_text};
use crate::plotspec::{PlotKind, PlotSpec, CSVS};
use crate::results::Results;

/// A chart ready to render, with its file stem and formats.
#[derive(Clone, Debug)]
pub struct Named {
    pub name: String,
    /// The file its data came from, named when it cannot be drawn.
    pub source: PathBuf,
    pub chart: Chart,
    pub formats: Vec<String>,
}

/// Renders each chart into `dir` (created if missing) in its formats;
/// returns the files written. What a chart could not show (points on a log
/// axis at or below zero, error bars cut at the axis) is printed to stderr
/// as a warning, once per chart.
pub fn write(charts: &[Named], dir: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for c in charts {
        for (i, f) in c.formats.iter().enumerate() {
            let path = dir.join(format!("{}.{f}", c.name));
            let skipped = pep_plot::render(&c.chart, &path)
                .map_err(|e| format!("plot {} (from {}): {e}", c.name, c.source.display()))?;
            if i == 0 {
                for note in skipped.notes() {
                    eprintln!("warning: plot {}: {note}", c.name);
                }
            }
            out.push(path);
        }
    }
    Ok(out)
}

/// An axis label for a measure, with its unit where the name says it.
pub fn measure_label(m: &str) -> String {
    let unit = if m.starts_with("jain(") {
        " (fairness index, 1 = equal)"
    } else if m.starts_with("count(") {
        " (count)"
    } else if m.contains("_mbps") {
        " (Mbit/s)"
    } else if m.contains("completion_s") || m.contains("duration_s") {
        " (s)"
    } else if m.contains("utilisation") {
        " (fraction of time busy)"
    } else if m.contains("bytes") {
        " (bytes)"
    } else if m.contains("packets") {
        " (packets)"
    } else if m.contains("segments") || m.contains("retransmits") {
        " (segments)"
    } else {
        ""
    };
    format!("{m}{unit}")
}

/// The charts a sweep asks for; with no `[[plot]]`, one measure-vs-parameter
/// chart per measure against the first numeric parameter.
pub fn sweep_charts(specs: &[PlotSpec], r: &Results, dir: &Path) -> Result<Vec<Named>, String> {
    let defaults;
    let specs = if specs.is_empty() {
        defaults = default_specs(r);
        &defaults
    } else {
        specs
    };
    specs
        .iter()
        .map(|s| {
            let chart = sweep_chart(s, r, dir)?;
            let source = match &s.kind {
                PlotKind::OverTime { csv, .. } => dir.join("points/*").join(format!("{csv}.csv")),
                _ => dir.join("results.csv"),
            };
            Ok(Named {
                name: s.name.clone(),
                source,
                chart,
                formats: s.formats.clone(),
            })
        })
        .collect()
}

fn default_specs(r: &Results) -> Vec<PlotSpec> {
    let x = (0..r.params.len()).find(|&k| {
        (0..r.points.len()).all(|p| {
            r.points[p].values[k]
                .as_ref()
                .is_some_and(|v| value_number(v).is_some())
        })
    });
    let Some(x) = x else { return Vec::new() };
    r.measures
        .iter()
        .enumerate()
        .map(|(i, m)| PlotSpec {
            name: format!("measure-{i}"),
            kind: PlotKind::Measure {
                x: r.params[x].clone(),
                y: m.clone(),
                series: None,
            },
            title: Some(m.clone()),
            x_label: None,
            y_label: None,
            x_log: false,
            y_log: false,
            formats: vec!["svg".into(), "png".into()],
        })
        .collect()
}

/// Labels each point by the parameter `series` names, or by every
/// parameter except `skip`.
fn group_label(r: &Results, p: usize, series: Option<&str>, skip: Option<&str>) -> String {
    let parts: Vec<String> = r
        .params
        .iter()
        .enumerate()
        .filter(|(_, k)| match series {
            Some(s) => k.as_str() == s,
            None => Some(k.as_str()) != skip,
        })
        .map(|(i, k)| (k, r.param_text(p, i)))
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| {
            if series.is_some() {
                v
            } else {
                format!("{k}={v}")
            }
        })
        .collect();
    if parts.is_empty() {
        "all runs".into()
    } else {
        parts.join(", ")
    }
}

/// Groups points by label, in order of first appearance.
fn groups(r: &Results, series: Option<&str>, skip: Option<&str>) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for p in 0..r.points.len() {
        let l = group_label(r, p, series, skip);
        match out.iter_mut().find(|(n, _)| *n == l) {
            Some((_, v)) => v.push(p),
            None => out.push((l, vec![p])),
        }
    }
    out
}

fn measure_idx(r: &Results, m: &str) -> Result<usize, String> {
    r.measure_index(m)
        .ok_or_else(|| format!("the results have no measure {m:?}"))
}

fn sweep_chart(s: &PlotSpec, r: &Results, dir: &Path) -> Result<Chart, String> {
    let (mut chart, x_default, y_default) = match &s.kind {
        PlotKind::Measure { x, y, series } => {
            let k = r
                .params
                .iter()
                .position(|p| p == x)
                .ok_or("no such parameter")?;
            let m = measure_idx(r, y)?;
            let mut unit = "";
            let mut out = Vec::new();
            for (label, pts) in groups(r, series.as_deref(), Some(x)) {
                let mut cis: Vec<CiPoint> = Vec::new();
                for p in pts {
                    let Some(v) = &r.points[p].values[k] else {
                        continue;
                    };
                    let (xv, u) = value_number(v).ok_or_else(|| {
                        format!(
                            "plot {}: {x} = {} is not a number or a quantity",
                            s.name,
                            value_text(v)
                        )
                    })?;
                    unit = u;
                    let st = r.stats(p, m);
                    let Some(mean) = st.mean else { continue };
                    let (lo, hi) = st.ci95.unwrap_or((mean, mean));
                    cis.push(CiPoint::new(xv, mean, lo, hi));
                }
                cis.sort_by(|a, b| a.x.total_cmp(&b.x));
                out.push(CiSeries::new(label, cis));
            }
            let xl = if unit.is_empty() {
                x.clone()
            } else {
                format!("{x} ({unit})")
            };
            (Chart::error_bars(out), xl, measure_label(y))
        }
        PlotKind::OverTime { csv, y, select } => {
            let group_col = if csv == "goodput" || csv == "cwnd" {
                "flow"
            } else {
                "link"
            };
            let mut out = Vec::new();
            for (p, pt) in r.points.iter().enumerate() {
                let file = dir.join("points").join(&pt.id).join(format!("{csv}.csv"));
                let t = tidy::load(&file).map_err(|e| e.to_string())?;
                let all = t
                    .series_by(group_col, "time_s", y)
                    .map_err(|e| e.to_string())?;
                let chosen = match select {
                    Some(sel) if sel == "*" => mean_series(all),
                    Some(sel) => all.into_iter().find(|s| &s.name == sel).ok_or_else(|| {
                        format!("{}: no {group_col} named {sel:?}", file.display())
                    })?,
                    None => all.into_iter().next().ok_or("empty series")?,
                };
                out.push(Series::new(group_label(r, p, None, None), chosen.points));
            }
            let unit = CSVS.iter().find(|c| c.0 == csv).map_or("", |c| c.1);
            let yl = match y.as_str() {
                "goodput_mbps" => "goodput (Mbit/s)".to_string(),
                "throughput_mbps" => "throughput (Mbit/s)".to_string(),
                "packets" => "queue length (packets)".to_string(),
                "cwnd_bytes" => "cwnd (bytes)".to_string(),
                other => format!("{other} ({unit})"),
            };
            (Chart::lines(out), "time (s)".to_string(), yl)
        }
        PlotKind::Histogram { y, series } | PlotKind::Cdf { y, series } => {
            let m = measure_idx(r, y)?;
            let samples: Vec<Samples> = groups(r, series.as_deref(), None)
                .into_iter()
                .map(|(label, pts)| Samples::new(label, pts.iter().flat_map(|&p| r.values(p, m))))
                .collect();
            if matches!(s.kind, PlotKind::Cdf { .. }) {
                (
                    Chart::cdf(samples),
                    measure_label(y),
                    "fraction of runs ≤ x".into(),
                )
            } else {
                (
                    Chart::histogram(samples, Bins::Auto),
                    measure_label(y),
                    "runs".into(),
                )
            }
        }
        PlotKind::Scatter { x, y, series } => {
            let (mx, my) = (measure_idx(r, x)?, measure_idx(r, y)?);
            let out: Vec<Series> = groups(r, series.as_deref(), None)
                .into_iter()
                .map(|(label, pts)| {
                    let dots = r
                        .rows
                        .iter()
                        .filter(|row| pts.contains(&row.point))
                        .filter_map(|row| Some((row.values[mx]?, row.values[my]?)));
                    Series::new(label, dots.collect::<Vec<_>>())
                })
                .collect();
            (Chart::scatter(out), measure_label(x), measure_label(y))
        }
    };
    chart = chart
        .x_label(s.x_label.clone().unwrap_or(x_default))
        .y_label(s.y_label.clone().unwrap_or(y_default));
    if let Some(t) = &s.title {
        chart = chart.title(t.clone());
    }
    if s.x_log {
        chart = chart.x_log();
    }
    if s.y_log {
        chart = chart.y_log();
    }
    Ok(chart)
}

/// `select = "*"`: the mean over all flows (links) at each sample time
/// that any of them has (e.g. the average sender cwnd).
fn mean_series(all: Vec<Series>) -> Series {
    let mut at: std::collections::BTreeMap<u64, (f64, u32)> = Default::default();
    for s in &all {
        for &(t, v) in &s.points {
            let e = at.entry(t.to_bits()).or_default();
            e.0 += v;
            e.1 += 1;
        }
    }
    let mut points: Vec<(f64, f64)> = at
        .into_iter()
        .map(|(t, (sum, n))| (f64::from_bits(t), sum / n as f64))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    Series::new("mean", points)
}

/// The standard plots of a run's directory.
pub const RUN_KINDS: &[&str] = &[
    "goodput",
    "throughput",
    "utilisation",
    "queues",
    "queue_cdf",
    "cwnd",
    "tseq",
    "flow_cdf",
    "completion_cdf",
];

/// Most points a CDF across flows is drawn from: a million flows would be
/// a 30 MB SVG, and 2,000 quantiles put each step within 1/2000 of the
/// exact curve.
const CDF_POINTS: usize = 2000;

/// At most [`CDF_POINTS`] of `values` spread evenly by rank (all of them
/// when there are fewer): the nearest-rank quantiles k/m, k = 1..=m.
fn quantiles(mut values: Vec<f64>) -> Vec<f64> {
    let n = values.len();
    if n <= CDF_POINTS {
        return values;
    }
    values.sort_by(f64::total_cmp);
    (1..=CDF_POINTS)
        .map(|k| values[(k * n).div_ceil(CDF_POINTS) - 1])
        .collect()
}

/// Most lines drawn in one run chart; the busiest are kept.
const MAX_LINES: usize = 10;

/// Keeps the `MAX_LINES` series with the largest sums, in their order;
/// drops all-zero ones.
fn busiest(mut v: Vec<Series>) -> Vec<Series> {
    v.retain(|s| s.points.iter().any(|p| p.1 != 0.0));
    if v.len() > MAX_LINES {
        let mut sums: Vec<(f64, usize)> = v
            .iter()
            .enumerate()
            .map(|(i, s)| (s.points.iter().map(|p| p.1).sum(), i))
            .collect();
        sums.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let keep: Vec<usize> = sums[..MAX_LINES].iter().map(|x| x.1).collect();
        v = v
            .into_iter()
            .enumerate()
            .filter(|(i, _)| keep.contains(i))
            .map(|x| x.1)
            .collect();
    }
    v
}

/// Charts of kinds `kinds` (all of [`RUN_KINDS`] if empty) from the files
/// found in a run's directory; kinds whose file is absent are left out.
pub fn run_charts(dir: &Path, kinds: &[String]) -> Result<Vec<Named>, String> {
    let want = |k: &str| kinds.is_empty() || kinds.iter().any(|x| x == k);
    for k in kinds {
        if !RUN_KINDS.contains(&k.as_str()) {
            return Err(format!(
                "unknown plot kind {k:?}; kinds are: {}",
                RUN_KINDS.join(", ")
            ));
        }
    }
    let load = |f: &str| -> Result<Option<tidy::Table>, String> {
        let p = dir.join(f);
        if !p.exists() {
            return Ok(None);
        }
        tidy::load(&p).map(Some).map_err(|e| e.to_string())
    };
    let mut out = Vec::new();
    let mut push = |name: &str, file: &str, chart: Chart| {
        out.push(Named {
            name: name.into(),
            source: dir.join(file),
            chart,
            formats: vec!["svg".into(), "png".into()],
        })
    };
    let e = |e: pep_plot::PlotError| e.to_string();
    if want("goodput") {
        if let Some(t) = load("goodput.csv")? {
            let s = busiest(t.series_by("flow", "time_s", "goodput_mbps").map_err(e)?);
            push(
                "goodput",
                "goodput.csv",
                Chart::lines(s)
                    .title("Goodput per flow")
                    .x_label("time (s)")
                    .y_label("goodput (Mbit/s)"),
            );
        }
    }
    if want("throughput") || want("utilisation") {
        if let Some(t) = load("links.csv")? {
            if want("throughput") {
                let s = busiest(
                    t.series_by("link", "time_s", "throughput_mbps")
                        .map_err(e)?,
                );
                push(
                    "throughput",
                    "links.csv",
                    Chart::lines(s)
                        .title("Throughput per link direction")
                        .x_label("time (s)")
                        .y_label("throughput on the wire (Mbit/s)"),
                );
            }
            if want("utilisation") {
                let s = busiest(t.series_by("link", "time_s", "utilisation").map_err(e)?);
                push(
                    "utilisation",
                    "links.csv",
                    Chart::lines(s)
                        .title("Link utilisation")
                        .x_label("time (s)")
                        .y_label("utilisation (fraction of time busy)")
                        .y_range(0.0, 1.05),
                );
            }
        }
    }
    if want("queues") || want("queue_cdf") {
        if let Some(t) = load("queues.csv")? {
            let s = busiest(t.series_by("link", "time_s", "packets").map_err(e)?);
            let names: Vec<String> = s.iter().map(|x| x.name.clone()).collect();
            if want("queue_cdf") && !s.is_empty() {
                let samples: Vec<Samples> = t
                    .samples_by("link", "packets")
                    .map_err(e)?
                    .into_iter()
                    .filter(|x| names.contains(&x.name))
                    .collect();
                push(
                    "queue_cdf",
                    "queues.csv",
                    Chart::cdf(samples)
                        .title("Queue length distribution (samples)")
                        .x_label("queue length (packets)")
                        .y_label("fraction of samples ≤ x"),
                );
            }
            if want("queues") && !s.is_empty() {
                push(
                    "queues",
                    "queues.csv",
                    Chart::lines(s)
                        .title("Queue length")
                        .x_label("time (s)")
                        .y_label("queue length (packets)"),
                );
            }
        }
    }
    if want("cwnd") {
        if let Some(t) = load("cwnd.csv")? {
            let s = busiest(t.series_by("flow", "time_s", "cwnd_bytes").map_err(e)?);
            push(
                "cwnd",
                "cwnd.csv",
                Chart::lines(s)
                    .title("Congestion window")
                    .x_label("time (s)")
                    .y_label("cwnd (bytes)"),
            );
        }
    }
    // Above the per-flow limit the flows' totals are a table of their own,
    // and a distribution across flows is the picture of them.
    if want("flow_cdf") || want("completion_cdf") {
        if let Some(t) = load("flows.csv")? {
            let cdfs = [
                (
                    "flow_cdf",
                    "goodput_mbps",
                    "goodput",
                    "Goodput across the {n} flows",
                    "goodput of a flow (Mbit/s), start to completion or end of run",
                    "fraction of flows ≤ x",
                ),
                (
                    "completion_cdf",
                    "completion_s",
                    "completion",
                    "Completion time of the {n} completed flows",
                    "start to last byte acknowledged (s)",
                    "fraction of completed flows ≤ x",
                ),
            ];
            for (kind, column, name, title, x, y) in cdfs {
                let values: Vec<f64> = t
                    .numbers(column)
                    .map_err(e)?
                    .into_iter()
                    .flatten()
                    .collect();
                if want(kind) && !values.is_empty() {
                    let title = title.replace("{n}", &values.len().to_string());
                    let chart = Chart::cdf([Samples::new(name, quantiles(values))]);
                    push(kind, "flows.csv", chart.title(title).x_label(x).y_label(y));
                }
            }
        }
    }
    let csv = dir.join("tseq.csv");
    if want("tseq") && csv.is_file() {
        let flows: Vec<_> = crate::tseq::from_csv(&csv)?.into_iter().take(4).collect();
        if !flows.is_empty() {
            push(
                "tseq",
                "tseq.csv",
                Chart::time_sequence(flows)
                    .title("Time-sequence graph (tseq.csv)")
                    .y_label("sequence number (bytes, relative)"),
            );
        }
    }
    if want("tseq") {
        let mut pcaps: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
            .collect();
        pcaps.sort();
        for p in pcaps {
            let flows = crate::tseq::from_pcap(&p)?;
            if flows.is_empty() {
                continue;
            }
            let stem = p
                .file_stem()
                .map_or("trace".into(), |s| s.to_string_lossy());
            let file = p
                .file_name()
                .map_or("trace.pcap".into(), |s| s.to_string_lossy());
            // More than a few flows on one graph is unreadable.
            let flows: Vec<_> = flows.into_iter().take(4).collect();
            push(
                &format!("tseq-{stem}"),
                &file,
                Chart::time_sequence(flows)
                    .title(format!("Time-sequence graph ({stem}.pcap)"))
                    .y_label("sequence number (bytes, relative)"),
            );
        }
    }
    if out.is_empty() {
        return Err(format!(
            "{}: nothing to plot (no goodput.csv, links.csv, queues.csv, cwnd.csv, tseq.csv, flows.csv or *.pcap)",
            dir.display()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_series_averages_whatever_is_present_at_each_time() {
        let a = Series::new("f0", [(0.0, 10.0), (1.0, 20.0)]);
        let b = Series::new("f1", [(0.0, 30.0), (1.0, 40.0), (2.0, 5.0)]);
        let m = mean_series(vec![b, a]);
        assert_eq!(m.points, vec![(0.0, 20.0), (1.0, 30.0), (2.0, 5.0)]);
    }

    #[test]
    fn quantiles_keep_the_extremes_and_spread_by_rank() {
        let few: Vec<f64> = (0..2000).map(f64::from).rev().collect();
        assert_eq!(quantiles(few.clone()), few, "up to the limit, all of them");
        let q = quantiles((1..=5000).rev().map(f64::from).collect());
        assert_eq!(q.len(), CDF_POINTS);
        // Rank ceil(k * 5000 / 2000): 3, 5, 8, ..., 5000.
        assert_eq!(q[..3], [3.0, 5.0, 8.0]);
        assert_eq!(q[CDF_POINTS - 1], 5000.0);
        assert_eq!(q[CDF_POINTS / 2 - 1], 2500.0, "the median");
    }

    /// The values of a CDF chart's one series.
    fn cdf_values(c: &Named) -> &[f64] {
        match &c.chart.plot {
            pep_plot::Plot::Cdf { series, .. } => &series[0].values,
            other => panic!("{}: not a CDF: {other:?}", c.name),
        }
    }

    #[test]
    fn a_run_with_a_flows_table_plots_the_flows_distributions() {
        let dir = tempfile::tempdir().unwrap();
        let mut csv = String::from("flow,from,to,delivered_bytes,goodput_mbps,segments_sent,retransmitted_segments,fast_retransmits,timeouts,local_drops,completion_s,srtt_ms\n");
        // 3,000 flows; every third unfinished (empty completion).
        for i in 0..3000 {
            let done = if i % 3 == 2 {
                String::new()
            } else {
                format!("{}", i as f64 / 100.0)
            };
            csv += &format!("f{i},a,b,1000,{},1,0,0,0,0,{done},20\n", i as f64 / 10.0);
        }
        std::fs::write(dir.path().join("flows.csv"), csv).unwrap();
        let charts = run_charts(dir.path(), &[]).unwrap();
        let names: Vec<&str> = charts.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["flow_cdf", "completion_cdf"]);
        let g = cdf_values(&charts[0]);
        assert_eq!(g.len(), CDF_POINTS);
        assert_eq!((g[0], g[CDF_POINTS - 1]), (0.1, 299.9));
        assert_eq!(charts[0].chart.title, "Goodput across the 3000 flows");
        let d = cdf_values(&charts[1]);
        assert_eq!(d.len(), 2000, "the 2,000 completed flows, all of them");
        assert_eq!(
            charts[1].chart.title,
            "Completion time of the 2000 completed flows"
        );
        let only = run_charts(dir.path(), &["completion_cdf".into()]).unwrap();
        assert_eq!(only.len(), 1);
    }
}
