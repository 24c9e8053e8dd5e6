//! `johnson`: the extended ACK interval (S. R. Johnson, M.S. thesis, Ohio
//! University, 1995). A receiver that ACKs every N-th segment, on a shared
//! 10 Mbit/s Ethernet with a per-packet host cost, across a bridge, and
//! over a lossy distant path; plus an adaptive interval (beyond the thesis).
//!
//! Statistics as the thesis's section 3.0.6: runs grouped into batches of
//! 20, a 95% interval over the batch means; with fewer than two full
//! batches (short mode), the interval over the runs themselves.

use super::{Check, Claim, Kind, Paper};
use crate::results::{Results, Stats};

pub(super) static PAPER: Paper = Paper {
    name: "johnson",
    title: "Increasing TCP Throughput by Using an Extended Acknowledgement Interval",
    citation: "S. R. Johnson, M.S. thesis, Ohio University, June 1995 (advisor S. Ostermann)",
    about: "A receiver that acknowledges every N-th segment (N = 1..16) instead of every \
            2nd, on a 10 Mbit/s half-duplex Ethernet with a per-packet host cost (local), \
            across a bridge with background traffic (near), and over a 20-25 ms path with \
            ~1% loss (distant); windows 4, 32 and 51 KB. Beyond: an adaptive interval.",
    experiments: &[
        "local-windows.toml",
        "near-n.toml",
        "distant-n.toml",
        "adaptive-local.toml",
        "adaptive-near.toml",
        "adaptive-distant.toml",
    ],
    claims,
};

const BATCH: usize = 20;

/// Mean and 95% interval: over batch means of 20 when there are two
/// batches or more, else over the runs.
fn batched(v: &[f64]) -> Option<(f64, f64, f64)> {
    let batches = v.len() / BATCH;
    let s = if batches >= 2 {
        let means: Vec<f64> = v
            .chunks_exact(BATCH)
            .map(|c| c.iter().sum::<f64>() / BATCH as f64)
            .collect();
        Stats::of(&means)
    } else {
        Stats::of(v)
    };
    let (lo, hi) = s.ci95?;
    Some((s.mean?, lo, hi))
}

fn point(r: &Results, at: &[(&str, &str)]) -> Result<usize, String> {
    r.find_point(at)
        .ok_or_else(|| format!("no point at {at:?}"))
}

fn measure(r: &Results, m: &str) -> Result<usize, String> {
    r.measure_index(m).ok_or_else(|| format!("no measure {m}"))
}

const RWND: &str = "defaults.sink.rwnd";
const N: &str = "defaults.sink.ack.count";
const ACK: &str = "defaults.sink.ack";

fn mean(r: &Results, p: usize, m: usize) -> Result<f64, String> {
    r.stats(p, m).mean.ok_or_else(|| "no values".to_string())
}

/// 32 KB: ACKs per connection strictly fall with N, about as 1/N.
fn acks_fall(r: &Results) -> Result<(bool, String), String> {
    let m = measure(r, "flow.ttcp.acks_sent")?;
    let segs = measure(r, "flow.ttcp.segments_received")?;
    let mut ok = true;
    let mut seen = Vec::new();
    let mut prev = f64::INFINITY;
    for n in ["1", "2", "3", "4", "6", "8", "12", "16"] {
        let p = point(r, &[(RWND, "32KiB"), (N, n)])?;
        let (a, s) = (mean(r, p, m)?, mean(r, p, segs)?);
        let k: f64 = n.parse().unwrap_or(1.0);
        // Window updates and timer ACKs come on top of the 1/N.
        ok &= a < prev && a >= s / k * 0.95 && (k > 8.0 || a <= s / k * 1.5);
        prev = a;
        seen.push(format!("N={n}: {a:.0} (segs/N {:.0})", s / k));
    }
    Ok((ok, seen.join("; ")))
}

/// 4 KB, as the thesis states it: N = 3 beats N = 2 (intervals apart), and
/// no larger N is significantly above N = 3.
fn small_window_gain_stops(r: &Results) -> Result<(bool, String), String> {
    let g = measure(r, "flow.ttcp.goodput_mbps")?;
    let at = |n: &str| -> Result<(f64, f64, f64), String> {
        batched(&r.values(point(r, &[(RWND, "4KiB"), (N, n)])?, g))
            .ok_or_else(|| format!("too few runs at N = {n}"))
    };
    let (s2, s3) = (at("2")?, at("3")?);
    let mut ok = s3.1 > s2.2;
    let mut seen = vec![
        format!("N=2: {:.3} [{:.3}, {:.3}]", s2.0, s2.1, s2.2),
        format!("N=3: {:.3} [{:.3}, {:.3}]", s3.0, s3.1, s3.2),
    ];
    for n in ["4", "6", "10", "16"] {
        let s = at(n)?;
        ok &= s.1 <= s3.2;
        seen.push(format!("N={n}: {:.3} [{:.3}, {:.3}]", s.0, s.1, s.2));
    }
    Ok((ok, seen.join("; ")))
}

/// 4 KB: ACKs per connection flat once N exceeds the segments a window
/// holds (2.8), throughput too (no timer stalls).
fn small_window_flat(r: &Results) -> Result<(bool, String), String> {
    let m = measure(r, "flow.ttcp.acks_sent")?;
    let t = measure(r, "flow.ttcp.acks_by_timer")?;
    let g = measure(r, "flow.ttcp.goodput_mbps")?;
    let p3 = point(r, &[(RWND, "4KiB"), (N, "3")])?;
    let (a3, g3) = (mean(r, p3, m)?, mean(r, p3, g)?);
    let mut ok = true;
    let mut seen = vec![format!("N=3: {a3:.0} ACKs, {g3:.3} Mbit/s")];
    for n in ["4", "6", "10", "16"] {
        let p = point(r, &[(RWND, "4KiB"), (N, n)])?;
        let (a, timer, gp) = (mean(r, p, m)?, mean(r, p, t)?, mean(r, p, g)?);
        ok &= (a / a3 - 1.0).abs() <= 0.02 && timer <= 0.02 * a && gp >= 0.99 * g3;
        seen.push(format!(
            "N={n}: {a:.0} ACKs ({timer:.0} by timer), {gp:.3} Mbit/s"
        ));
    }
    Ok((ok, seen.join("; ")))
}

/// The 95% half-width of the difference of two means, from their 95%
/// intervals (mean, low, high): the half-widths combined as independent
/// errors, √(h₁² + h₂²).
fn difference_half_width(a: (f64, f64, f64), b: (f64, f64, f64)) -> f64 {
    let (h1, h2) = ((a.2 - a.1) / 2.0, (b.2 - b.1) / 2.0);
    (h1 * h1 + h2 * h2).sqrt()
}

/// Whether `other`'s mean lies below `base`'s by more than the difference's
/// 95% half-width: significantly worse at the 5% level. (Overlapping
/// intervals are no such test: they allow a difference up to √2 times
/// larger, so "no difference" would pass too easily.)
pub fn significantly_below(other: (f64, f64, f64), base: (f64, f64, f64)) -> bool {
    base.0 - other.0 > difference_half_width(base, other)
}

/// Whether two means differ at the 5% level (either way).
pub fn significantly_apart(a: (f64, f64, f64), b: (f64, f64, f64)) -> bool {
    significantly_below(a, b) || significantly_below(b, a)
}

/// The smallest difference of means (as a share of `base`'s mean) that
/// runs with these 95% intervals detect with 80% power at the 5% level:
/// (1.96 + 0.84) × the standard error of the difference, the half-widths
/// standing for 1.96 standard errors each.
pub fn min_detectable(base: (f64, f64, f64), other: (f64, f64, f64)) -> f64 {
    (1.96 + 0.84) / 1.96 * difference_half_width(base, other) / base.0.abs()
}

/// "No difference" is decided only when the runs would have shown one of
/// this size (a share of N = 2's mean).
pub const NO_DIFFERENCE_MDE: f64 = 0.10;

/// Gains over N = 2 at 32 KB within 1 point of the thesis's, intervals
/// apart, at each of `at` (N, the thesis's gain in %).
fn local_gains(r: &Results, at: &[(&str, f64)]) -> Result<(bool, String), String> {
    let g = measure(r, "flow.ttcp.goodput_mbps")?;
    let base = batched(&r.values(point(r, &[(RWND, "32KiB"), (N, "2")])?, g))
        .ok_or("too few runs at N=2")?;
    let mut ok = true;
    let mut seen = vec![format!("N=2: {:.3} [{:.3}, {:.3}]", base.0, base.1, base.2)];
    for &(n, paper) in at {
        let s =
            batched(&r.values(point(r, &[(RWND, "32KiB"), (N, n)])?, g)).ok_or("too few runs")?;
        let gain = 100.0 * (s.0 / base.0 - 1.0);
        ok &= (gain - paper).abs() <= 1.0 && s.1 > base.2;
        seen.push(format!(
            "N={n}: {:.3} [{:.3}, {:.3}], {gain:+.2}% (thesis +{paper}%)",
            s.0, s.1, s.2
        ));
    }
    Ok((ok, seen.join("; ")))
}

fn local_gains_3_14(r: &Results) -> Result<(bool, String), String> {
    local_gains(r, &[("3", 2.0), ("14", 4.0)])
}

fn local_gain_6(r: &Results) -> Result<(bool, String), String> {
    local_gains(r, &[("6", 3.0)])
}

/// Near network: N = 6 significantly above N = 2.
fn near_gain(r: &Results) -> Result<(bool, String), String> {
    let g = measure(r, "flow.ttcp.goodput_mbps")?;
    let s2 = batched(&r.values(point(r, &[(N, "2")])?, g)).ok_or("too few runs")?;
    let s6 = batched(&r.values(point(r, &[(N, "6")])?, g)).ok_or("too few runs")?;
    Ok((
        s6.1 > s2.2,
        format!(
            "N=2: {:.3} [{:.3}, {:.3}]; N=6: {:.3} [{:.3}, {:.3}]",
            s2.0, s2.1, s2.2, s6.0, s6.1, s6.2
        ),
    ))
}

/// Distant network: no fixed N's mean differs from N = 2's at the 5%
/// level, decided
/// only when the runs would show a difference of [`NO_DIFFERENCE_MDE`].
fn distant_no_gain(r: &Results) -> Result<(Option<bool>, String), String> {
    let g = measure(r, "flow.ftp.goodput_mbps")?;
    let s2 = batched(&r.values(point(r, &[(N, "2")])?, g)).ok_or("too few runs")?;
    let mut ok = true;
    let mut mde: f64 = 0.0;
    let mut seen = vec![format!("N=2: {:.3} [{:.3}, {:.3}]", s2.0, s2.1, s2.2)];
    for n in ["4", "8", "15"] {
        let s = batched(&r.values(point(r, &[(N, n)])?, g)).ok_or("too few runs")?;
        ok &= !significantly_apart(s, s2);
        mde = mde.max(min_detectable(s2, s));
        seen.push(format!("N={n}: {:.3} [{:.3}, {:.3}]", s.0, s.1, s.2));
    }
    seen.push(format!("minimum detectable difference {:.1}%", mde * 100.0));
    let decided = mde <= NO_DIFFERENCE_MDE;
    Ok((decided.then_some(ok), seen.join("; ")))
}

/// The adaptive point (the last of the `ack` values) is not significantly
/// worse than N = 2 (the first) at the 5% level; decided only when the
/// runs would show a difference of
/// [`NO_DIFFERENCE_MDE`].
fn adaptive_not_worse(r: &Results, flow: &str) -> Result<(Option<bool>, String), String> {
    let g = measure(r, &format!("flow.{flow}.goodput_mbps"))?;
    let k = r
        .params
        .iter()
        .position(|p| p == ACK)
        .ok_or("no ack parameter")?;
    let find = |kind: &str, count: Option<&str>| {
        (0..r.points.len()).find(|&p| {
            let t = r.param_text(p, k);
            t.contains(kind) && count.is_none_or(|c| t.contains(&format!("count = {c}")))
        })
    };
    let p2 = find("delayed", Some("2")).ok_or("no N=2 point")?;
    let pa = find("adaptive", None).ok_or("no adaptive point")?;
    let s2 = batched(&r.values(p2, g)).ok_or("too few runs")?;
    let sa = batched(&r.values(pa, g)).ok_or("too few runs")?;
    let mde = min_detectable(s2, sa);
    Ok((
        (mde <= NO_DIFFERENCE_MDE).then_some(!significantly_below(sa, s2)),
        format!(
            "N=2: {:.3} [{:.3}, {:.3}]; adaptive: {:.3} [{:.3}, {:.3}]; minimum \
             detectable difference {:.1}%",
            s2.0,
            s2.1,
            s2.2,
            sa.0,
            sa.1,
            sa.2,
            mde * 100.0
        ),
    ))
}

type Decided = Result<(Option<bool>, String), String>;

fn adaptive_local(r: &Results) -> Decided {
    adaptive_not_worse(r, "ttcp")
}
fn adaptive_near(r: &Results) -> Decided {
    adaptive_not_worse(r, "ttcp")
}
fn adaptive_distant(r: &Results) -> Decided {
    adaptive_not_worse(r, "ftp")
}

fn claims() -> Vec<Claim> {
    let stat = |id, kind, statement, experiment, describe, eval: super::StatisticalEval| Claim {
        id,
        kind,
        statement,
        experiment,
        check: Check::Statistical { describe, eval },
        needs_full: false,
    };
    vec![
        Claim::predicate(
            "A1",
            Kind::Reproduction,
            "The average number of ACKs per connection drops as the interval grows \
             (figure 3.4), about as 1/N with a 32 KB window.",
            "local-windows",
            "32 KB: mean ACKs strictly decreasing in N, >= 0.95 segs/N, <= 1.5 segs/N for N <= 8",
            acks_fall,
        ),
        Claim::predicate(
            "A2",
            Kind::Reproduction,
            "With a 4 KB window N = 3 beats N = 2, and the gains stop after N = 3 \
             (figures 3.3, 3.5).",
            "local-windows",
            "4 KB: N = 3's 95% interval above N = 2's; no N >= 4 with its interval \
             above N = 3's",
            small_window_gain_stops,
        ),
        Claim::predicate(
            "A2s",
            Kind::Structural,
            "With a 4 KB window (2.8 segments) an interval N >= 3 is never reached: ACKs \
             and throughput are the same for every N >= 3.",
            "local-windows",
            "4 KB, N >= 4: ACKs within 2% of N = 3, timer ACKs <= 2%, throughput >= 99% of N = 3",
            small_window_flat,
        ),
        Claim::predicate(
            "G1",
            Kind::Reproduction,
            "Local network, 32 KB: N = 3 gains 2% and N = 14 4% over N = 2, \
             significantly (figure 3.8).",
            "local-windows",
            "gain within 1 point of the thesis's, 95% interval above N = 2's",
            local_gains_3_14,
        ),
        Claim::predicate(
            "G1-6",
            Kind::Fit(
                "the receiver's per-ACK host cost was calibrated to give N = 6's +3% \
                 (docs/johnson.md)",
            ),
            "Local network, 32 KB: N = 6 gains 3% over N = 2 (figure 3.8).",
            "local-windows",
            "gain within 1 point of the thesis's, 95% interval above N = 2's",
            local_gain_6,
        ),
        Claim::predicate(
            "N1",
            Kind::Reproduction,
            "Near network: N = 6 is significantly better than the default (figure 3.11).",
            "near-n",
            "N = 6's 95% interval above N = 2's",
            near_gain,
        ),
        stat(
            "D1",
            Kind::Reproduction,
            "Distant network (~1% loss): no statistical difference between the \
             intervals (figure 3.12).",
            "distant-n",
            "no N's mean differs from N = 2's at the 5% level (the difference's 95% \
             half-width from the two intervals); decided only when the runs detect a 10% \
             difference (80% power, 5% level)",
            distant_no_gain,
        ),
        stat(
            "X1",
            Kind::Beyond,
            "Beyond: the adaptive interval is not worse than N = 2 on the local network.",
            "adaptive-local",
            "adaptive not below N = 2 at the 5% level; decided only when the runs detect \
             a 10% difference",
            adaptive_local,
        ),
        stat(
            "X2",
            Kind::Beyond,
            "Beyond: ... nor on the near network.",
            "adaptive-near",
            "adaptive not below N = 2 at the 5% level; decided only when the runs detect \
             a 10% difference",
            adaptive_near,
        ),
        stat(
            "X3",
            Kind::Beyond,
            "Beyond: ... nor on the distant network with ~1% loss.",
            "adaptive-distant",
            "adaptive not below N = 2 at the 5% level; decided only when the runs detect \
             a 10% difference",
            adaptive_distant,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::{min_detectable, significantly_apart, significantly_below};

    #[test]
    fn minimum_detectable_difference_grows_with_the_intervals() {
        // Two intervals of half-width 1.96 (one standard error each) around
        // 100: the difference's standard error is √2, and 80% power at the
        // 5% level needs 2.8 of them.
        let a = (100.0, 98.04, 101.96);
        let m = min_detectable(a, a);
        assert!((m - 2.8 * 2f64.sqrt() / 100.0).abs() < 1e-9, "{m}");
        let narrow = (100.0, 99.0, 101.0);
        assert!(min_detectable(narrow, narrow) < m);
    }

    #[test]
    fn a_difference_counts_past_the_combined_half_width_not_the_overlap() {
        // Half-widths 3 and 4: the difference's is 5, where the intervals
        // stop overlapping only at 7.
        let base = (100.0, 97.0, 103.0);
        let at = |m: f64| (m, m - 4.0, m + 4.0);
        assert!(!significantly_below(at(95.01), base));
        assert!(significantly_below(at(94.99), base));
        assert!(significantly_apart(at(94.99), base) && significantly_apart(at(105.01), base));
        assert!(!significantly_apart(at(104.99), base));
        // Overlapping intervals, yet apart.
        assert!(significantly_apart(at(94.0), base));
    }
}
