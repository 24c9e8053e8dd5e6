//! `johnson`: the extended ACK interval (S. R. Johnson, M.S. thesis, Ohio
//! University, 1995). A receiver that ACKs every N-th segment, on a shared
//! 10 Mbit/s Ethernet with a per-packet host cost, across a bridge, and
//! over a lossy distant path; plus an adaptive interval (beyond the thesis).
//!
//! Statistics as the thesis's section 3.0.6: runs grouped into batches of
//! 20, a 95% interval over the batch means; with fewer than two full
//! batches (short mode), the interval over the runs themselves.

use super::{Check, Claim, Paper};
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

/// Gains over N = 2 at 32 KB within 1 point of the thesis's, intervals
/// apart.
fn local_gains(r: &Results) -> Result<(bool, String), String> {
    let g = measure(r, "flow.ttcp.goodput_mbps")?;
    let base = batched(&r.values(point(r, &[(RWND, "32KiB"), (N, "2")])?, g))
        .ok_or("too few runs at N=2")?;
    let mut ok = true;
    let mut seen = vec![format!("N=2: {:.3} [{:.3}, {:.3}]", base.0, base.1, base.2)];
    for (n, paper) in [("3", 2.0), ("6", 3.0), ("14", 4.0)] {
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

/// Distant network: every fixed N's interval overlaps N = 2's.
fn distant_no_gain(r: &Results) -> Result<(bool, String), String> {
    let g = measure(r, "flow.ftp.goodput_mbps")?;
    let s2 = batched(&r.values(point(r, &[(N, "2")])?, g)).ok_or("too few runs")?;
    let mut ok = true;
    let mut seen = vec![format!("N=2: {:.3} [{:.3}, {:.3}]", s2.0, s2.1, s2.2)];
    for n in ["4", "8", "15"] {
        let s = batched(&r.values(point(r, &[(N, n)])?, g)).ok_or("too few runs")?;
        ok &= s.1 <= s2.2 && s.2 >= s2.1;
        seen.push(format!("N={n}: {:.3} [{:.3}, {:.3}]", s.0, s.1, s.2));
    }
    Ok((ok, seen.join("; ")))
}

/// The adaptive point (the last of the `ack` values) is not significantly
/// worse than N = 2 (the first): its interval's top is at or above N = 2's
/// bottom.
fn adaptive_not_worse(r: &Results, flow: &str) -> Result<(bool, String), String> {
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
    Ok((
        sa.2 >= s2.1,
        format!(
            "N=2: {:.3} [{:.3}, {:.3}]; adaptive: {:.3} [{:.3}, {:.3}]",
            s2.0, s2.1, s2.2, sa.0, sa.1, sa.2
        ),
    ))
}

fn adaptive_local(r: &Results) -> Result<(bool, String), String> {
    adaptive_not_worse(r, "ttcp")
}
fn adaptive_near(r: &Results) -> Result<(bool, String), String> {
    adaptive_not_worse(r, "ttcp")
}
fn adaptive_distant(r: &Results) -> Result<(bool, String), String> {
    adaptive_not_worse(r, "ftp")
}

fn claims() -> Vec<Claim> {
    let pred = |id, statement, experiment, describe, eval, needs_full| Claim {
        id,
        statement,
        experiment,
        check: Check::Predicate { describe, eval },
        needs_full,
    };
    vec![
        pred(
            "A1",
            "The average number of ACKs per connection drops as the interval grows \
             (figure 3.4), about as 1/N with a 32 KB window.",
            "local-windows",
            "32 KB: mean ACKs strictly decreasing in N, >= 0.95 segs/N, <= 1.5 segs/N for N <= 8",
            acks_fall as fn(&Results) -> Result<(bool, String), String>,
            false,
        ),
        pred(
            "A2",
            "With a 4 KB window the gains stop after N = 3: the window holds too few \
             segments for the interval to be reached (figures 3.3, 3.5).",
            "local-windows",
            "4 KB, N >= 4: ACKs within 2% of N = 3, timer ACKs <= 2%, throughput >= 99% of N = 3",
            small_window_flat,
            false,
        ),
        pred(
            "G1",
            "Local network, 32 KB: N = 3 gains 2%, N = 6 3%, N = 14 4% over N = 2, \
             significantly (figure 3.8).",
            "local-windows",
            "gain within 1 point of the thesis's, 95% interval above N = 2's",
            local_gains,
            false,
        ),
        pred(
            "N1",
            "Near network: N = 6 is significantly better than the default (figure 3.11).",
            "near-n",
            "N = 6's 95% interval above N = 2's",
            near_gain,
            false,
        ),
        pred(
            "D1",
            "Distant network (~1% loss): no statistical difference between the \
             intervals (figure 3.12).",
            "distant-n",
            "every N's 95% interval overlaps N = 2's",
            distant_no_gain,
            false,
        ),
        pred(
            "X1",
            "Beyond: the adaptive interval is not worse than N = 2 on the local network.",
            "adaptive-local",
            "adaptive's 95% interval reaches N = 2's",
            adaptive_local,
            false,
        ),
        pred(
            "X2",
            "Beyond: ... nor on the near network.",
            "adaptive-near",
            "adaptive's 95% interval reaches N = 2's",
            adaptive_near,
            false,
        ),
        pred(
            "X3",
            "Beyond: ... nor on the distant network with ~1% loss.",
            "adaptive-distant",
            "adaptive's 95% interval reaches N = 2's",
            adaptive_distant,
            false,
        ),
    ]
}
