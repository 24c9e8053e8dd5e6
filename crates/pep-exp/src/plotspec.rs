//! `[[plot]]` tables of an experiment file: what to draw from its results.

use serde::Deserialize;

use crate::experiment::{Errs, ExpError};
use crate::measure::Measure;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPlot {
    name: String,
    kind: String,
    x: Option<String>,
    y: Option<String>,
    series: Option<String>,
    csv: Option<String>,
    select: Option<String>,
    title: Option<String>,
    x_label: Option<String>,
    y_label: Option<String>,
    x_log: Option<bool>,
    y_log: Option<bool>,
    formats: Option<Vec<String>>,
}

/// The kinds of plot an experiment can ask for.
pub const KINDS: &[&str] = &["measure", "over_time", "histogram", "cdf", "scatter"];
/// The per-run CSV files `over_time` reads, and the column it plots by default.
pub const CSVS: &[(&str, &str)] = &[
    ("goodput", "goodput_mbps"),
    ("links", "throughput_mbps"),
    ("queues", "packets"),
    ("cwnd", "cwnd_bytes"),
];

/// What a plot shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlotKind {
    /// Mean and 95% CI of measure `y` against parameter `x`; one line per
    /// value of `series` (or per combination of the other parameters).
    Measure {
        x: String,
        y: String,
        series: Option<String>,
    },
    /// One run's time series per point (first seed): column `y` of
    /// `<csv>.csv`, rows of flow/link `select` (default: the first).
    OverTime {
        csv: String,
        y: String,
        select: Option<String>,
    },
    /// Distribution of measure `y` over all runs, one series per value of
    /// `series` (or per point).
    Histogram {
        y: String,
        series: Option<String>,
    },
    Cdf {
        y: String,
        series: Option<String>,
    },
    /// Measure `y` against measure `x`, a dot per run.
    Scatter {
        x: String,
        y: String,
        series: Option<String>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlotSpec {
    /// File stem under `plots/`.
    pub name: String,
    pub kind: PlotKind,
    pub title: Option<String>,
    pub x_label: Option<String>,
    pub y_label: Option<String>,
    pub x_log: bool,
    pub y_log: bool,
    /// "svg" and/or "png".
    pub formats: Vec<String>,
}

impl PlotSpec {
    /// Needs each point's time series kept.
    pub fn needs_outputs(&self) -> bool {
        matches!(self.kind, PlotKind::OverTime { .. })
    }
}

pub(crate) fn validate(
    errs: &Errs,
    raw: Vec<RawPlot>,
    params: &[String],
    measures: &[Measure],
) -> Result<Vec<PlotSpec>, ExpError> {
    let mut out: Vec<PlotSpec> = Vec::new();
    for (i, r) in raw.into_iter().enumerate() {
        let f = |k: &str| format!("plot[{i}].{k}");
        let name = r.name.clone();
        // A field the plot leaves out is placed on the line that names it
        // (this text when that line cannot be found).
        let anchor = format!("\"{name}\"");
        let plain = !name.is_empty()
            && !name.starts_with('.')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !plain {
            let msg = format!("{name:?}: a plain file name (letters, digits, '_', '-', '.')");
            return Err(errs.at(&anchor, f("name"), msg));
        }
        if out.iter().any(|p| p.name == name) {
            return Err(errs.at(&anchor, f("name"), format!("two plots are named {name:?}")));
        }
        let need = |v: &Option<String>, k: &str| -> Result<String, ExpError> {
            v.clone().ok_or_else(|| {
                let msg = format!("a {} plot needs `{k}`", r.kind);
                errs.placed(&f("name"), &anchor, f(k), msg)
            })
        };
        let param = |v: &String, k: &str| -> Result<(), ExpError> {
            if params.contains(v) {
                return Ok(());
            }
            let msg = format!(
                "{v:?} is not a varied parameter; parameters are: {}",
                list(params)
            );
            Err(errs.at(v, f(k), msg))
        };
        let measure = |v: &String, k: &str| -> Result<(), ExpError> {
            let t = v.trim();
            if measures.iter().any(|m| m.text == t) {
                return Ok(());
            }
            let names: Vec<String> = measures.iter().map(|m| m.text.clone()).collect();
            let msg = format!(
                "{v:?} is not one of the experiment's measures: {}",
                list(&names)
            );
            Err(errs.at(v, f(k), msg))
        };
        let series = match &r.series {
            Some(s) => {
                param(s, "series")?;
                Some(s.clone())
            }
            None => None,
        };
        let kind = match r.kind.as_str() {
            "measure" => {
                let (x, y) = (need(&r.x, "x")?, need(&r.y, "y")?);
                param(&x, "x")?;
                measure(&y, "y")?;
                if series.as_ref() == Some(&x) {
                    return Err(errs.at(&x, f("series"), "is the x parameter already"));
                }
                PlotKind::Measure {
                    x,
                    y: y.trim().into(),
                    series,
                }
            }
            "over_time" => {
                let csv = need(&r.csv, "csv")?;
                let Some((_, col)) = CSVS.iter().find(|(c, _)| *c == csv) else {
                    let names: Vec<String> = CSVS.iter().map(|c| c.0.to_string()).collect();
                    let msg = format!("unknown series {csv:?}; series are: {}", list(&names));
                    return Err(errs.at(&csv, f("csv"), msg));
                };
                let y = r.y.clone().unwrap_or(col.to_string());
                // The value columns each file has (the time and the flow or
                // link name come first), as the simulator writes them.
                let columns: &[&str] = match csv.as_str() {
                    "goodput" => &["bytes", "goodput_mbps"],
                    "links" => &["bytes", "throughput_mbps", "utilisation"],
                    "queues" => &["packets", "bytes"],
                    _ => &["cwnd_bytes", "ssthresh_bytes"],
                };
                if !columns.contains(&y.as_str()) {
                    let names: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
                    let msg = format!(
                        "{csv}.csv has no column {y:?}; its columns are: {}",
                        list(&names)
                    );
                    return Err(errs.at(&y, f("y"), msg));
                }
                PlotKind::OverTime {
                    y,
                    csv,
                    select: r.select.clone(),
                }
            }
            "histogram" | "cdf" => {
                let y = need(&r.y, "y")?;
                measure(&y, "y")?;
                let y = y.trim().to_string();
                if r.kind == "cdf" {
                    PlotKind::Cdf { y, series }
                } else {
                    PlotKind::Histogram { y, series }
                }
            }
            "scatter" => {
                let (x, y) = (need(&r.x, "x")?, need(&r.y, "y")?);
                measure(&x, "x")?;
                measure(&y, "y")?;
                PlotKind::Scatter {
                    x: x.trim().into(),
                    y: y.trim().into(),
                    series,
                }
            }
            other => {
                let names: Vec<String> = KINDS.iter().map(|k| k.to_string()).collect();
                let msg = format!("unknown plot kind {other:?}; kinds are: {}", list(&names));
                return Err(errs.at(other, f("kind"), msg));
            }
        };
        let unused = match kind {
            PlotKind::OverTime { .. } => [("series", r.series.is_some()), ("x", r.x.is_some())],
            PlotKind::Measure { .. } | PlotKind::Scatter { .. } => {
                [("csv", r.csv.is_some()), ("select", r.select.is_some())]
            }
            _ => [("x", r.x.is_some()), ("csv", r.csv.is_some())],
        };
        if let Some((k, _)) = unused.iter().find(|(_, set)| *set) {
            let msg = format!("a {} plot does not use `{k}`", r.kind);
            return Err(errs.at(&anchor, f(k), msg));
        }
        let formats = r.formats.unwrap_or(vec!["svg".into(), "png".into()]);
        if formats.is_empty() || formats.iter().any(|x| x != "svg" && x != "png") {
            let msg = "expected a non-empty list of \"svg\" and/or \"png\"";
            return Err(errs.at("formats", f("formats"), msg));
        }
        out.push(PlotSpec {
            name,
            kind,
            title: r.title,
            x_label: r.x_label,
            y_label: r.y_label,
            x_log: r.x_log.unwrap_or(false),
            y_log: r.y_log.unwrap_or(false),
            formats,
        });
    }
    Ok(out)
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "(none)".into()
    } else {
        v.join(", ")
    }
}
