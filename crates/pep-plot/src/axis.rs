//! Axis tick selection: linear axes use plotters' nice numbers; log axes
//! get our own ticks (decades, or 1-2-5, or 1..9 within a decade, so a
//! range narrower than a decade still has labels), bound with
//! `with_key_points`.

use std::ops::Range;

use plotters::coord::combinators::{BindKeyPoints, IntoLogRange, LogCoord, WithKeyPoints};
use plotters::coord::ranged1d::{BoldPoints, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;

use crate::style::TickFormat;
use crate::PlotError;

/// One axis, before the number of ticks is chosen.
pub(crate) trait AxisKind {
    /// The plotters coordinate it becomes.
    type Spec: Ranged<ValueType = f64> + ValueFormatter<f64>;
    /// Whether labels use the log format.
    const LOG: bool;
    /// Tick values for at most about `n` ticks.
    fn keys(&self, n: usize) -> Vec<f64>;
    /// Pixel position of `v` along an axis of `room` pixels.
    fn pos(&self, v: f64, room: u32) -> i32;
    /// The coordinate, with `n` as the tick hint.
    fn build(&self, n: usize) -> Self::Spec;
}

pub(crate) struct LinAxis(pub Range<f64>);

impl AxisKind for LinAxis {
    type Spec = RangedCoordf64;
    const LOG: bool = false;
    fn keys(&self, n: usize) -> Vec<f64> {
        self.build(n).key_points(BoldPoints(n))
    }
    fn pos(&self, v: f64, room: u32) -> i32 {
        self.build(2).map(&v, (0, room as i32))
    }
    fn build(&self, _n: usize) -> RangedCoordf64 {
        self.0.clone().into()
    }
}

pub(crate) struct LogAxis(pub Range<f64>);

impl AxisKind for LogAxis {
    type Spec = WithKeyPoints<LogCoord<f64>>;
    const LOG: bool = true;
    fn keys(&self, n: usize) -> Vec<f64> {
        log_ticks(self.0.start, self.0.end, n).0
    }
    fn pos(&self, v: f64, room: u32) -> i32 {
        let (a, b) = (self.0.start.log10(), self.0.end.log10());
        ((v.log10() - a) / (b - a) * room as f64).round() as i32
    }
    fn build(&self, n: usize) -> Self::Spec {
        let (bold, light) = log_ticks(self.0.start, self.0.end, n);
        self.0
            .clone()
            .log_scale()
            .with_key_points(bold)
            .with_light_points(light)
    }
}

/// Ticks for a log axis over `[lo, hi]` (both positive), at most `max_n`
/// where possible, and light grid values. Preference: every decade (when
/// that gives 3 or more), every k-th decade (wide ranges), 1-2-5 (if 3 or
/// more), 1..9, 1-2-5,
/// and for ranges too narrow for any of these, linear nice numbers.
pub(crate) fn log_ticks(lo: f64, hi: f64, max_n: usize) -> (Vec<f64>, Vec<f64>) {
    let max_n = max_n.max(2);
    let (e0, e1) = (lo.log10().floor() as i32 - 1, hi.log10().ceil() as i32 + 1);
    let inside = |v: f64| v >= lo * (1.0 - 1e-12) && v <= hi * (1.0 + 1e-12);
    let gen = |mults: &[f64], every: i32| -> Vec<f64> {
        let mut out = Vec::new();
        for e in e0..=e1 {
            if e.rem_euclid(every) != 0 {
                continue;
            }
            for m in mults {
                // Build from an exact decimal so 2e-4 prints as 2e-4.
                let v: f64 = format!("{m}e{e}").parse().expect("a decimal number");
                if inside(v) {
                    out.push(v);
                }
            }
        }
        out
    };
    let decades = gen(&[1.0], 1);
    if (3..=max_n).contains(&decades.len()) {
        let minor = gen(&[2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], 1);
        return (decades, minor);
    }
    if decades.len() > max_n {
        let every = (2..)
            .find(|k| gen(&[1.0], *k).len() <= max_n)
            .expect("finite");
        return (gen(&[1.0], every), decades);
    }
    let one_two_five = gen(&[1.0, 2.0, 5.0], 1);
    if (3..=max_n).contains(&one_two_five.len()) {
        return (one_two_five, vec![]);
    }
    let all = gen(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], 1);
    if (2..=max_n).contains(&all.len()) {
        return (all, vec![]);
    }
    if (2..=max_n).contains(&one_two_five.len()) {
        return (one_two_five, vec![]);
    }
    if decades.len() >= 2 {
        return (decades, vec![]);
    }
    let lin: RangedCoordf64 = (lo..hi).into();
    let t = lin
        .key_points(BoldPoints(max_n))
        .into_iter()
        .filter(|v| *v > 0.0)
        .collect();
    (t, vec![])
}

/// Number of ticks and label format for one axis: the most ticks (up to
/// `max_n`, at least two) whose labels, `measure` pixels long, keep a gap
/// of 12 px between neighbours along an axis of `room` pixels. When even
/// two labels collide (very long labels on a tiny chart), the fewest ticks
/// that still give two labels are used.
pub(crate) fn choose_ticks<A: AxisKind>(
    axis: &A,
    max_n: usize,
    room: u32,
    measure: impl Fn(&str) -> Result<u32, PlotError>,
) -> Result<(usize, TickFormat), PlotError> {
    let mut fallback = None;
    for n in (1..=max_n.max(1)).rev() {
        let keys = axis.keys(n);
        let fmt = TickFormat::for_ticks(&keys, A::LOG);
        let mut placed = Vec::with_capacity(keys.len());
        for &k in &keys {
            placed.push((axis.pos(k, room), measure(&fmt.format(k))? as i32));
        }
        placed.sort();
        let fits = placed
            .windows(2)
            .all(|w| w[1].0 - w[0].0 >= (w[0].1 + w[1].1) / 2 + 12);
        if keys.len() >= 2 && fits {
            return Ok((n, fmt));
        }
        if keys.len() >= 2 || fallback.is_none() {
            fallback = Some((n, fmt));
        }
    }
    Ok(fallback.expect("max_n >= 1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_for_a_loss_sweep_are_decades() {
        let (t, minor) = log_ticks(0.8e-4, 0.12, 10);
        assert_eq!(t, vec![1e-4, 1e-3, 1e-2, 1e-1]);
        assert_eq!(minor.len(), 2 + 3 * 8); // 8e-5, 9e-5, then 2..9 x 1e-4..1e-2
    }

    #[test]
    fn narrow_log_ranges_still_get_ticks() {
        assert_eq!(log_ticks(1.5e-3, 9e-3, 10).0.len(), 8, "2e-3..9e-3");
        assert_eq!(log_ticks(1.5e-3, 9e-3, 4).0, vec![2e-3, 5e-3]);
        assert_eq!(log_ticks(0.9, 12.0, 10).0, vec![1.0, 2.0, 5.0, 10.0]);
        let t = log_ticks(2.1e-3, 2.9e-3, 10).0;
        assert!(
            t.len() >= 2 && t.iter().all(|v| (2.1e-3..=2.9e-3).contains(v)),
            "{t:?}"
        );
    }

    #[test]
    fn wide_log_ranges_skip_decades() {
        let (t, _) = log_ticks(1e-9, 1e9, 6);
        assert!(t.len() <= 6 && t.len() >= 3, "{t:?}");
        assert!(t.contains(&1.0));
    }
}
