//! Small statistics used by the charts: bin edges, bin counts, empirical
//! CDF steps, and a 95% confidence interval helper for callers.

use crate::chart::CiPoint;

/// Mean and 95% Student-t confidence interval of `samples` (e.g. one
/// measurement over several seeds), as a [`CiPoint`] at `x`.
///
/// Non-finite samples are ignored. Returns `None` when no finite sample is
/// left. With one sample the interval is zero-width (nothing better can be
/// said; show it, but know it is one run).
pub fn ci95(x: f64, samples: &[f64]) -> Option<CiPoint> {
    let v: Vec<f64> = samples.iter().copied().filter(|s| s.is_finite()).collect();
    let n = v.len();
    if n == 0 {
        return None;
    }
    let mean = v.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return Some(CiPoint::new(x, mean, mean, mean));
    }
    let var = v.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>() / (n - 1) as f64;
    let half = t975(n - 1) * (var / n as f64).sqrt();
    Some(CiPoint::new(x, mean, mean - half, mean + half))
}

/// Two-sided 95% quantile of Student's t with `df` degrees of freedom
/// (`df >= 1`): exact table to 30, Cornish–Fisher expansion above (error
/// below 1e-3).
pub fn t975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        _ => {
            let z: f64 = 1.959_964;
            let d = df as f64;
            let z3 = z * z * z;
            let z5 = z3 * z * z;
            z + (z3 + z) / (4.0 * d) + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * d * d)
        }
    }
}

/// The `q` quantile (0..=1) of sorted data, linear interpolation.
fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let i = pos.floor() as usize;
    let frac = pos - i as f64;
    if i + 1 < sorted.len() {
        sorted[i] + frac * (sorted[i + 1] - sorted[i])
    } else {
        sorted[i]
    }
}

/// Automatic number of bins for pooled, sorted samples over `[lo, hi]`
/// (in the space bins are equal-width in).
pub(crate) fn auto_bin_count(sorted: &[f64], lo: f64, hi: f64) -> usize {
    let n = sorted.len().max(1) as f64;
    let sturges = (n.log2().ceil() + 1.0).max(1.0);
    let iqr = quantile_sorted(sorted, 0.75) - quantile_sorted(sorted, 0.25);
    let count = if iqr > 0.0 && hi > lo {
        let width = 2.0 * iqr / n.cbrt();
        ((hi - lo) / width).ceil()
    } else {
        sturges
    };
    (count as usize).clamp(1, 200)
}

/// `count` equal-width bin edges over `[lo, hi]`; in log10 space when `log`.
pub(crate) fn equal_edges(lo: f64, hi: f64, count: usize, log: bool) -> Vec<f64> {
    let count = count.max(1);
    let (a, b) = if log {
        (lo.log10(), hi.log10())
    } else {
        (lo, hi)
    };
    let (a, b) = if b > a {
        (a, b)
    } else {
        // All samples equal: one bin of width 1 (a decade on a log axis)
        // centred on the value.
        (a - 0.5, a + 0.5)
    };
    (0..=count)
        .map(|i| {
            let v = if i == count {
                b
            } else {
                a + (b - a) * i as f64 / count as f64
            };
            if log {
                10f64.powf(v)
            } else {
                v
            }
        })
        .collect()
}

/// Counts of `values` in bins `[e_i, e_{i+1})`, the last bin closed.
/// Returns the counts and how many values fell outside.
pub(crate) fn bin_counts(values: &[f64], edges: &[f64]) -> (Vec<usize>, usize) {
    let nb = edges.len() - 1;
    let mut counts = vec![0usize; nb];
    let mut outside = 0;
    let last = edges[nb];
    for &v in values {
        if v < edges[0] || v > last {
            outside += 1;
            continue;
        }
        // First edge strictly greater than v, minus one.
        let i = edges.partition_point(|&e| e <= v);
        counts[(i.max(1) - 1).min(nb - 1)] += 1;
    }
    (counts, outside)
}

/// The outline of a histogram as a closed step path starting and ending on
/// `baseline`: `(e0, base), (e0, h0), (e1, h0), (e1, h1), ..., (en, base)`.
pub(crate) fn step_outline(edges: &[f64], heights: &[f64], baseline: f64) -> Vec<(f64, f64)> {
    let mut pts = Vec::with_capacity(heights.len() * 2 + 2);
    pts.push((edges[0], baseline));
    for (i, &h) in heights.iter().enumerate() {
        pts.push((edges[i], h));
        pts.push((edges[i + 1], h));
    }
    pts.push((edges[heights.len()], baseline));
    pts
}

/// Empirical CDF of sorted samples as a step line: starts at `(v0, 0)`,
/// rises at each distinct value, ends at `(v_max, 1)`. With `complementary`
/// the heights are `1 - F` (and the line ends at `(v_max, 0)`).
pub(crate) fn ecdf_steps(sorted: &[f64], complementary: bool) -> Vec<(f64, f64)> {
    let n = sorted.len() as f64;
    let f = |k: usize| {
        let p = k as f64 / n;
        if complementary {
            1.0 - p
        } else {
            p
        }
    };
    let mut pts = Vec::new();
    let mut below = 0usize; // samples strictly below the current value
    let mut i = 0;
    while i < sorted.len() {
        let v = sorted[i];
        let mut j = i;
        while j < sorted.len() && sorted[j] == v {
            j += 1;
        }
        pts.push((v, f(below)));
        pts.push((v, f(j)));
        below = j;
        i = j;
    }
    pts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci95_of_known_samples() {
        // mean 2, sd 1, n 3: half-width = 4.303 * 1/sqrt(3) = 2.4844
        let p = ci95(0.1, &[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(p.mean, 2.0);
        assert!((p.hi - 2.0 - 2.484_34).abs() < 1e-4, "{p:?}");
        assert!((2.0 - p.lo - 2.484_34).abs() < 1e-4);
        assert_eq!(ci95(1.0, &[f64::NAN]), None);
        assert_eq!(ci95(1.0, &[5.0]), Some(CiPoint::new(1.0, 5.0, 5.0, 5.0)));
    }

    #[test]
    fn t_quantiles_are_continuous_past_the_table() {
        assert!((t975(31) - 2.0395).abs() < 1e-3);
        assert!((t975(120) - 1.9799).abs() < 1e-3);
        assert!(t975(30) > t975(31));
    }

    #[test]
    fn bins_put_edges_in_the_right_bin() {
        let edges = [0.0, 1.0, 2.0, 3.0];
        let (c, out) = bin_counts(&[0.0, 0.5, 1.0, 2.999, 3.0, 3.5, -1.0], &edges);
        assert_eq!(c, vec![2, 1, 2]);
        assert_eq!(out, 2);
    }

    #[test]
    fn log_edges_are_equal_in_log_space() {
        let e = equal_edges(1e-4, 1e-1, 3, true);
        assert_eq!(e.len(), 4);
        for (got, want) in e.iter().zip([1e-4, 1e-3, 1e-2, 1e-1]) {
            assert!((got / want - 1.0).abs() < 1e-12, "{e:?}");
        }
        // Degenerate: all samples equal still gives one bin around them.
        assert_eq!(equal_edges(5.0, 5.0, 1, false), vec![4.5, 5.5]);
    }

    #[test]
    fn ecdf_steps_handle_ties() {
        let s = ecdf_steps(&[1.0, 2.0, 2.0, 4.0], false);
        assert_eq!(
            s,
            vec![
                (1.0, 0.0),
                (1.0, 0.25),
                (2.0, 0.25),
                (2.0, 0.75),
                (4.0, 0.75),
                (4.0, 1.0)
            ]
        );
        let c = ecdf_steps(&[1.0, 2.0], true);
        assert_eq!(c, vec![(1.0, 1.0), (1.0, 0.5), (2.0, 0.5), (2.0, 0.0)]);
    }

    #[test]
    fn auto_bins_are_bounded() {
        let v: Vec<f64> = (0..10_000).map(|i| i as f64).collect();
        let n = auto_bin_count(&v, 0.0, 9999.0);
        assert!((10..=200).contains(&n), "{n}");
        assert_eq!(auto_bin_count(&[3.0; 8], 3.0, 3.0), 4); // Sturges
    }
}
