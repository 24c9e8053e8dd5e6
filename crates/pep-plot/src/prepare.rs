//! From a [`Chart`] to backend-independent drawing layers in data
//! coordinates: skip bad points, compute bins and CDF steps, fit the axes,
//! dodge error bars, clip to the axes. No drawing library here.

use crate::chart::{Bins, Chart, CiPoint, HistScale, Plot, Scale, Skipped};
use crate::clip;
use crate::stats;
use crate::style::{series_color, series_marker, Marker, Rgb};
use crate::PlotError;

/// One thing to draw, in data coordinates.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Layer {
    /// A polyline.
    Line {
        points: Vec<(f64, f64)>,
        color: Rgb,
        width: u32,
    },
    /// A filled polygon.
    Area {
        points: Vec<(f64, f64)>,
        color: Rgb,
        opacity: f64,
    },
    /// One marker per point; `size` is the radius in pixels.
    Markers {
        points: Vec<(f64, f64)>,
        marker: Marker,
        color: Rgb,
        size: u32,
        opacity: f64,
    },
    /// Vertical interval bars.
    Bars { bars: Vec<Bar>, color: Rgb },
}

/// A vertical interval bar, capped at the ends that are the interval's own
/// (not where it was cut at the axis).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bar {
    pub x: f64,
    /// `-inf` for an interval reaching zero or below on a log axis: the bar
    /// runs to the bottom of the plot (see [`crate::clip`]).
    pub lo: f64,
    pub hi: f64,
    pub lo_cap: bool,
    pub hi_cap: bool,
}

/// The sample drawn next to a legend entry's name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Swatch {
    Line(Rgb, u32),
    Marker(Marker, Rgb),
    LineMarker(Marker, Rgb),
    Area(Rgb),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LegendEntry {
    pub name: String,
    pub swatch: Swatch,
}

/// A fitted axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
}

impl Axis {
    pub(crate) fn t(&self, v: f64) -> f64 {
        if self.log {
            v.log10()
        } else {
            v
        }
    }
    pub(crate) fn inv(&self, v: f64) -> f64 {
        if self.log {
            10f64.powf(v)
        } else {
            v
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Prepared {
    pub x: Axis,
    pub y: Axis,
    pub layers: Vec<Layer>,
    pub legend: Vec<LegendEntry>,
    pub skipped: Skipped,
}

/// Fraction of the axis span added as padding on each side.
const PAD: f64 = 0.03;

/// Filters points for one chart, counting what it drops.
struct Filter {
    xlog: bool,
    ylog: bool,
    skipped: Skipped,
}

impl Filter {
    fn ok_x(&mut self, x: f64) -> bool {
        self.ok(x, self.xlog)
    }
    fn ok(&mut self, v: f64, log: bool) -> bool {
        if !v.is_finite() {
            self.skipped.non_finite += 1;
            false
        } else if log && v <= 0.0 {
            self.skipped.non_positive += 1;
            false
        } else {
            true
        }
    }
    fn ok_point(&mut self, (x, y): (f64, f64)) -> bool {
        if !x.is_finite() || !y.is_finite() {
            self.skipped.non_finite += 1;
            false
        } else if (self.xlog && x <= 0.0) || (self.ylog && y <= 0.0) {
            self.skipped.non_positive += 1;
            false
        } else {
            true
        }
    }
    fn points(&mut self, pts: &[(f64, f64)]) -> Vec<(f64, f64)> {
        pts.iter().copied().filter(|&p| self.ok_point(p)).collect()
    }
}

/// Build the layers of `chart`.
pub(crate) fn prepare(chart: &Chart) -> Result<Prepared, PlotError> {
    let name = chart.display_name();
    let invalid = |reason: String| PlotError::Invalid {
        chart: name.clone(),
        reason,
    };
    if chart.width < 200 || chart.height < 150 || chart.width > 10_000 || chart.height > 10_000 {
        return Err(invalid(format!(
            "size {}x{} is outside 200x150..10000x10000",
            chart.width, chart.height
        )));
    }
    let xlog = chart.x_scale == Scale::Log;
    let ylog = chart.y_scale == Scale::Log;
    for (axis, range, log) in [("x", chart.x_range, xlog), ("y", chart.y_range, ylog)] {
        if let Some((lo, hi)) = range {
            if !(lo.is_finite() && hi.is_finite() && lo < hi && (hi - lo).is_finite()) {
                return Err(invalid(format!(
                    "{axis} range {lo}..{hi} is empty or not finite"
                )));
            }
            if log && lo <= 0.0 {
                return Err(invalid(format!(
                    "{axis} range {lo}..{hi} starts at or below zero on a log axis"
                )));
            }
        }
    }
    let mut f = Filter {
        xlog,
        ylog,
        skipped: Skipped::default(),
    };
    let mut layers = Vec::new();
    let mut legend = Vec::new();
    // Per-layer horizontal offset (fraction of the x axis), for dodging.
    let mut dodge = Vec::new();
    let n_series;
    match &chart.plot {
        Plot::Lines(series) | Plot::Scatter(series) => {
            let scatter = matches!(chart.plot, Plot::Scatter(_));
            n_series = series.len();
            for (i, s) in series.iter().enumerate() {
                let points = f.points(&s.points);
                if points.is_empty() {
                    f.skipped.empty_series += 1;
                    continue;
                }
                let color = series_color(i);
                if scatter {
                    let marker = series_marker(i);
                    layers.push(Layer::Markers {
                        points,
                        marker,
                        color,
                        size: 3,
                        opacity: 0.75,
                    });
                    legend.push(entry(&s.name, Swatch::Marker(marker, color)));
                } else {
                    if points.len() == 1 {
                        // A lone point draws no line: mark it.
                        layers.push(Layer::Markers {
                            points: points.clone(),
                            marker: Marker::Circle,
                            color,
                            size: 3,
                            opacity: 1.0,
                        });
                    }
                    layers.push(Layer::Line {
                        points,
                        color,
                        width: 2,
                    });
                    legend.push(entry(&s.name, Swatch::Line(color, 2)));
                }
            }
        }
        Plot::ErrorBars {
            series,
            dodge: do_dodge,
        } => {
            n_series = series.len();
            let mut drawn = 0usize;
            let mut groups = Vec::new();
            for (i, s) in series.iter().enumerate() {
                let mut pts = Vec::new();
                for p in &s.points {
                    let vals = [p.mean, p.lo, p.hi];
                    if !p.x.is_finite() || vals.iter().any(|v| !v.is_finite()) {
                        f.skipped.non_finite += 1;
                    } else if (xlog && p.x <= 0.0) || (ylog && p.mean <= 0.0) {
                        f.skipped.non_positive += 1;
                    } else if p.lo > p.hi {
                        return Err(invalid(format!(
                            "series '{}': lo {} > hi {} at x = {}",
                            s.name, p.lo, p.hi, p.x
                        )));
                    } else {
                        // On a log axis an interval reaching zero or below
                        // (few runs, wide spread) keeps its mean and its
                        // upper part; the bar runs to the bottom of the plot.
                        let open = |v: f64| {
                            if ylog && v <= 0.0 {
                                f64::NEG_INFINITY
                            } else {
                                v
                            }
                        };
                        if ylog && p.lo <= 0.0 {
                            f.skipped.open_bars += 1;
                        }
                        pts.push(CiPoint {
                            lo: open(p.lo),
                            hi: open(p.hi),
                            ..*p
                        });
                    }
                }
                if pts.is_empty() {
                    f.skipped.empty_series += 1;
                    continue;
                }
                pts.sort_by(|a, b| a.x.total_cmp(&b.x));
                let color = series_color(i);
                let marker = series_marker(i);
                let means: Vec<_> = pts.iter().map(|p| (p.x, p.mean)).collect();
                let start = layers.len();
                if means.len() > 1 {
                    layers.push(Layer::Line {
                        points: means.clone(),
                        color,
                        width: 2,
                    });
                }
                layers.push(Layer::Bars {
                    bars: pts
                        .iter()
                        .map(|p| Bar {
                            x: p.x,
                            lo: p.lo,
                            hi: p.hi,
                            lo_cap: true,
                            hi_cap: true,
                        })
                        .collect(),
                    color,
                });
                layers.push(Layer::Markers {
                    points: means,
                    marker,
                    color,
                    size: 4,
                    opacity: 1.0,
                });
                groups.push((start, layers.len(), drawn));
                drawn += 1;
                legend.push(entry(&s.name, Swatch::LineMarker(marker, color)));
            }
            dodge = vec![0.0; layers.len()];
            if *do_dodge && drawn > 1 {
                let step = (0.05 / (drawn - 1) as f64).min(0.012);
                for (start, end, k) in groups {
                    let off = (k as f64 - (drawn - 1) as f64 / 2.0) * step;
                    dodge[start..end].iter_mut().for_each(|d| *d = off);
                }
            }
        }
        Plot::Histogram {
            series,
            bins,
            scale,
        } => {
            n_series = series.len();
            if ylog {
                return Err(invalid(
                    "a log y axis is not supported for histograms; use a CCDF".into(),
                ));
            }
            let cleaned: Vec<Vec<f64>> = series
                .iter()
                .map(|s| s.values.iter().copied().filter(|&v| f.ok_x(v)).collect())
                .collect();
            let mut pooled: Vec<f64> = cleaned.iter().flatten().copied().collect();
            if !pooled.is_empty() {
                pooled.sort_by(f64::total_cmp);
                let (lo, hi) = (pooled[0], pooled[pooled.len() - 1]);
                let edges = match bins {
                    Bins::Edges(e) => {
                        if e.len() < 2
                            || e.iter().any(|v| !v.is_finite())
                            || e.windows(2).any(|w| w[0] >= w[1])
                        {
                            return Err(invalid(
                                "bin edges must be at least two, finite and strictly increasing"
                                    .into(),
                            ));
                        }
                        if xlog && e[0] <= 0.0 {
                            return Err(invalid(
                                "bin edges must be positive on a log x axis".into(),
                            ));
                        }
                        e.clone()
                    }
                    Bins::Count(n) => stats::equal_edges(lo, hi, *n, xlog),
                    Bins::Auto => {
                        let count = if xlog {
                            let logs: Vec<f64> = pooled.iter().map(|v| v.log10()).collect();
                            stats::auto_bin_count(&logs, lo.log10(), hi.log10())
                        } else {
                            stats::auto_bin_count(&pooled, lo, hi)
                        };
                        stats::equal_edges(lo, hi, count, xlog)
                    }
                };
                for (i, (s, vals)) in series.iter().zip(&cleaned).enumerate() {
                    if vals.is_empty() {
                        f.skipped.empty_series += 1;
                        continue;
                    }
                    let (counts, outside) = stats::bin_counts(vals, &edges);
                    f.skipped.outside_bins += outside;
                    let total = vals.len() - outside;
                    let heights: Vec<f64> = counts
                        .iter()
                        .map(|&c| match scale {
                            HistScale::Count => c as f64,
                            HistScale::Fraction => c as f64 / total.max(1) as f64,
                        })
                        .collect();
                    let outline = stats::step_outline(&edges, &heights, 0.0);
                    let color = series_color(i);
                    layers.push(Layer::Area {
                        points: outline.clone(),
                        color,
                        opacity: 0.25,
                    });
                    layers.push(Layer::Line {
                        points: outline,
                        color,
                        width: 2,
                    });
                    legend.push(entry(&s.name, Swatch::Area(color)));
                }
            } else {
                f.skipped.empty_series += series.len();
            }
        }
        Plot::Cdf {
            series,
            complementary,
        } => {
            n_series = series.len();
            for (i, s) in series.iter().enumerate() {
                let mut vals: Vec<f64> = s.values.iter().copied().filter(|&v| f.ok_x(v)).collect();
                vals.sort_by(f64::total_cmp);
                let mut points = stats::ecdf_steps(&vals, *complementary);
                if ylog {
                    // The CCDF reaches 0 at the largest sample: not drawable
                    // on a log axis, and not a skipped data point either.
                    points.retain(|p| p.1 > 0.0);
                }
                if points.is_empty() {
                    f.skipped.empty_series += 1;
                    continue;
                }
                let color = series_color(i);
                layers.push(Layer::Line {
                    points,
                    color,
                    width: 2,
                });
                legend.push(entry(&s.name, Swatch::Line(color, 2)));
            }
        }
        Plot::TimeSequence(flows) => {
            n_series = flows.len();
            let single = flows.len() == 1;
            for (i, fl) in flows.iter().enumerate() {
                let c = series_color(i);
                // One flow: a colour per role. Several: a colour per flow,
                // roles told apart by marker and line width.
                let [c_sent, c_rtx, c_ack, c_win] = if single {
                    [
                        series_color(0),
                        series_color(1),
                        series_color(2),
                        series_color(4),
                    ]
                } else {
                    [c; 4]
                };
                let label = |role: &str| {
                    if fl.name.is_empty() {
                        role.to_string()
                    } else {
                        format!("{}: {role}", fl.name)
                    }
                };
                let mut acks: Vec<_> = fl
                    .acks
                    .iter()
                    .filter(|a| f.ok_point((a.t, a.ack)))
                    .copied()
                    .collect();
                acks.sort_by(|a, b| a.t.total_cmp(&b.t));
                // A NaN window means "unknown" (a capture without the SYNs'
                // scale): the ACK is drawn, the window line is not.
                let win_acks: Vec<_> = acks
                    .iter()
                    .filter(|a| !a.window.is_nan() && f.ok(a.ack + a.window, ylog))
                    .copied()
                    .collect();
                let step = |vals: Vec<(f64, f64)>| {
                    let mut out = Vec::with_capacity(vals.len() * 2);
                    for (k, &(t, v)) in vals.iter().enumerate() {
                        if k > 0 {
                            out.push((t, vals[k - 1].1));
                        }
                        out.push((t, v));
                    }
                    out
                };
                let ack_line = step(acks.iter().map(|a| (a.t, a.ack)).collect());
                let win_line = step(win_acks.iter().map(|a| (a.t, a.ack + a.window)).collect());
                let sent = f.points(&fl.sent);
                let rtx = f.points(&fl.retransmitted);
                let before = layers.len();
                // Drawn back to front (window, ACK, sent, retransmitted);
                // listed as sent, retransmitted, ACK, window.
                let mut entries = Vec::new();
                if !win_line.is_empty() {
                    layers.push(Layer::Line {
                        points: win_line,
                        color: c_win,
                        width: 1,
                    });
                    entries.push((3, entry(&label("ACK + window"), Swatch::Line(c_win, 1))));
                }
                if !ack_line.is_empty() {
                    layers.push(Layer::Line {
                        points: ack_line,
                        color: c_ack,
                        width: 2,
                    });
                    entries.push((2, entry(&label("ACK"), Swatch::Line(c_ack, 2))));
                }
                if !sent.is_empty() {
                    layers.push(Layer::Markers {
                        points: sent,
                        marker: Marker::Circle,
                        color: c_sent,
                        size: 2,
                        opacity: 1.0,
                    });
                    entries.push((
                        0,
                        entry(&label("sent"), Swatch::Marker(Marker::Circle, c_sent)),
                    ));
                }
                if !rtx.is_empty() {
                    layers.push(Layer::Markers {
                        points: rtx,
                        marker: Marker::Cross,
                        color: c_rtx,
                        size: 4,
                        opacity: 1.0,
                    });
                    entries.push((
                        1,
                        entry(
                            &label("retransmitted"),
                            Swatch::Marker(Marker::Cross, c_rtx),
                        ),
                    ));
                }
                entries.sort_by_key(|e| e.0);
                legend.extend(entries.into_iter().map(|e| e.1));
                if layers.len() == before {
                    f.skipped.empty_series += 1;
                }
            }
        }
    }
    if n_series == 0 {
        return Err(PlotError::NoData {
            chart: name,
            reason: "no series".into(),
        });
    }
    if layers.is_empty() {
        let s = f.skipped;
        return Err(PlotError::NoData {
            chart: name,
            reason: format!(
                "all {n_series} series are empty after skipping {} NaN/inf and {} non-positive-on-log-axis points",
                s.non_finite, s.non_positive
            ),
        });
    }
    dodge.resize(layers.len(), 0.0);

    let x = fit_axis(&layers, xlog, chart.x_range, |p| p.0, |b| [b.x, b.x])
        .map_err(|r| invalid(format!("x axis: {r}")))?;
    let y = fit_axis(&layers, ylog, chart.y_range, |p| p.1, |b| [b.lo, b.hi])
        .map_err(|r| invalid(format!("y axis: {r}")))?;
    for (layer, off) in layers.iter_mut().zip(&dodge) {
        if *off != 0.0 {
            shift_x(layer, &x, *off);
        }
    }
    let layers = layers
        .into_iter()
        .flat_map(|l| clip::clip(l, &x, &y))
        .collect();
    Ok(Prepared {
        x,
        y,
        layers,
        legend,
        skipped: f.skipped,
    })
}

fn entry(name: &str, swatch: Swatch) -> LegendEntry {
    LegendEntry {
        name: name.to_string(),
        swatch,
    }
}

/// Fit one axis to every coordinate the layers use, or take the fixed range.
/// Open bar ends (`-inf`, see [`Bar::lo`]) do not count. Fails (saying why) when the data span no drawable range: values so far
/// apart that the padded range, or its width, overflows to infinity.
fn fit_axis(
    layers: &[Layer],
    log: bool,
    fixed: Option<(f64, f64)>,
    coord: impl Fn(&(f64, f64)) -> f64,
    bar: impl Fn(&Bar) -> [f64; 2],
) -> Result<Axis, String> {
    if let Some((lo, hi)) = fixed {
        return Ok(Axis { lo, hi, log });
    }
    let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut see = |v: f64| {
        min = min.min(v);
        max = max.max(v);
    };
    for l in layers {
        match l {
            Layer::Line { points, .. }
            | Layer::Area { points, .. }
            | Layer::Markers { points, .. } => points.iter().for_each(|p| see(coord(p))),
            Layer::Bars { bars, .. } => bars
                .iter()
                .flat_map(&bar)
                .filter(|v| *v != f64::NEG_INFINITY)
                .for_each(&mut see),
        }
    }
    if !(min.is_finite() && max.is_finite()) {
        return Err(format!(
            "the data span {min:e}..{max:e}, which is not finite"
        ));
    }
    let (lo, hi) = auto_range(min, max, log);
    if !(lo.is_finite() && hi.is_finite() && lo < hi && (hi - lo).is_finite()) {
        return Err(format!(
            "the data span {min:e}..{max:e}: too wide to draw (the axis range {lo:e}..{hi:e} \
             overflows a 64-bit float)"
        ));
    }
    Ok(Axis { lo, hi, log })
}

/// Padded range around `[min, max]` (finite, positive on a log axis).
///
/// Linear: when all values are non-negative and the smallest is near zero
/// relative to the largest (`min <= 0.3 * max`), the axis starts at exactly
/// zero, so quantities like goodput and queue length are not exaggerated.
pub(crate) fn auto_range(min: f64, max: f64, log: bool) -> (f64, f64) {
    if log {
        let (a, b) = (min.log10(), max.log10());
        let (a, b) = if b > a { (a, b) } else { (a - 0.5, b + 0.5) };
        let pad = (b - a) * PAD;
        return (10f64.powf(a - pad), 10f64.powf(b + pad));
    }
    let (mut a, mut b) = (min, max);
    if b <= a {
        let half = if a == 0.0 { 0.5 } else { a.abs() * 0.1 };
        a -= half;
        b += half;
        if min >= 0.0 && a < 0.0 {
            a = 0.0;
        }
    }
    if a >= 0.0 && a <= 0.3 * b {
        (0.0, b + b * PAD)
    } else {
        let pad = (b - a) * PAD;
        (a - pad, b + pad)
    }
}

/// Move a layer right by `frac` of the x axis width (in axis space).
fn shift_x(layer: &mut Layer, x: &Axis, frac: f64) {
    let d = (x.t(x.hi) - x.t(x.lo)) * frac;
    let mv = |v: f64| x.inv(x.t(v) + d);
    match layer {
        Layer::Line { points, .. } | Layer::Area { points, .. } | Layer::Markers { points, .. } => {
            points.iter_mut().for_each(|p| p.0 = mv(p.0))
        }
        Layer::Bars { bars, .. } => bars.iter_mut().for_each(|b| b.x = mv(b.x)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_start_at_zero_for_non_negative_data() {
        assert_eq!(auto_range(0.5, 10.0, false), (0.0, 10.3));
        let (lo, hi) = auto_range(100.0, 110.0, false);
        assert!((lo - 99.7).abs() < 1e-9 && (hi - 110.3).abs() < 1e-9);
        assert_eq!(auto_range(0.0, 0.0, false), (0.0, 0.515));
        let (lo, hi) = auto_range(1e-4, 1e-1, true);
        assert!(
            lo < 1e-4 && lo > 0.5e-4 && hi > 1e-1 && hi < 0.2,
            "{lo} {hi}"
        );
    }
}
