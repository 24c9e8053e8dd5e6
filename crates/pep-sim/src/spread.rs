//! The results of many flows, written as distributions across the flows:
//! above [`PER_FLOW_LIMIT`] flows, `goodput.csv` and `cwnd.csv` have one
//! row per statistic and period instead of one per flow and period
//! (100,000 flows of 100 bins would be ten million rows, and a plot with a
//! line per flow says nothing), and `goodput_total.csv` the flows' total
//! per bin. The columns stay those of the per-flow files, the statistic's
//! name in the `flow` column, so every reader and plot of those files
//! works unchanged. `summary.json` keeps the distributions of the flows'
//! totals (`flow_stats`), and each flow's totals go to `flows.csv`, one
//! row per flow (a table loads where a million JSON objects do not).
//! `[output] per_flow = true` (or `--set output.per_flow=true`) keeps
//! every flow's rows and entries. Above [`LINK_LIMIT`] link directions,
//! their totals go to `link_totals.csv` too, and `summary.json` names the
//! busiest (`busiest_links`).

use std::borrow::Cow;

use pep_core::{Duration, Instant};

use crate::metrics::{CwndRow, GoodputRow};
use crate::output::{round6, FlowSummary, LinkSummary};
use crate::table::{Cell, Column, ColumnType, Table};
use ColumnType::{Float, Text, UInt};

/// Most flows whose per-flow rows are written by default.
pub const PER_FLOW_LIMIT: usize = 1000;

/// Most link directions `summary.json` lists (2 MB of it); above it they
/// are rows of `link_totals.csv` (a million users' access links are
/// 400 MB of JSON). The thesis's 750-user scenarios have 3,002.
pub const LINK_LIMIT: usize = 10_000;

/// The statistics across flows, in the order they are written.
pub const STATS: [&str; 7] = ["mean", "min", "p10", "p50", "p90", "p99", "max"];

/// `STATS` of `values` (sorted in place): the mean, then nearest-rank
/// percentiles (min and max are the 0th and 100th).
pub fn stats(values: &mut [u64]) -> [f64; 7] {
    values.sort_unstable();
    sorted_stats(values, |&v| v as f64)
}

/// [`stats`] of values that are not whole numbers.
pub fn stats_f64(values: &mut [f64]) -> [f64; 7] {
    values.sort_unstable_by(f64::total_cmp);
    sorted_stats(values, |&v| v)
}

fn sorted_stats<T>(sorted: &[T], value: impl Fn(&T) -> f64) -> [f64; 7] {
    let n = sorted.len();
    if n == 0 {
        return [0.0; 7];
    }
    let rank = |p: f64| value(&sorted[((p * n as f64).ceil() as usize).clamp(1, n) - 1]);
    let mean = sorted.iter().map(&value).sum::<f64>() / n as f64;
    [
        mean,
        value(&sorted[0]),
        rank(0.10),
        rank(0.50),
        rank(0.90),
        rank(0.99),
        value(&sorted[n - 1]),
    ]
}

/// Jain's fairness index of `values`: (sum x)^2 / (n sum x^2), 1 when all
/// are equal; 1 for none or all zero.
pub fn jain(values: &[u64]) -> f64 {
    let (s, s2) = values.iter().fold((0.0, 0.0), |(s, s2), &v| {
        let v = v as f64;
        (s + v, s2 + v * v)
    });
    if s2 == 0.0 {
        1.0
    } else {
        s * s / (values.len() as f64 * s2)
    }
}

/// Rows in time order (rows of one time together), sorted stably. The
/// engine writes them in order, so usually they are borrowed as they are:
/// a copy of 100,000 flows' rows is tens of MB (a cut run's merged rows
/// are sorted).
fn in_time_order<T: Copy>(rows: &[T], t: impl Fn(&T) -> Instant) -> Cow<'_, [T]> {
    if rows.is_sorted_by_key(&t) {
        return Cow::Borrowed(rows);
    }
    let mut sorted = rows.to_vec();
    sorted.sort_by_key(&t);
    Cow::Owned(sorted)
}

fn mbps_f(bytes: f64, bin: Duration) -> f64 {
    round6(bytes * 8.0 / bin.as_secs_f64() / 1e6)
}

/// `goodput` as distributions: per bin, each statistic of the bytes the
/// flows delivered. Statistics are fractional, so `bytes` is a float here.
pub fn goodput<'a>(rows: &[GoodputRow]) -> Table<'a> {
    let mut out: Vec<(Instant, &'static str, f64, f64)> = Vec::new();
    for g in in_time_order(rows, |r| r.t).chunk_by(|a, b| a.t == b.t) {
        let bin = g[0].bin;
        let mut bytes: Vec<u64> = g.iter().map(|r| r.bytes).collect();
        for (name, v) in STATS.iter().zip(stats(&mut bytes)) {
            out.push((g[0].t, name, round6(v), mbps_f(v, bin)));
        }
    }
    let columns = columns(&[
        ("time_s", Float),
        ("flow", Text),
        ("bytes", Float),
        ("goodput_mbps", Float),
    ]);
    Table::new("goodput", columns, out.len(), move |i, v| {
        let (t, name, bytes, rate) = out[i];
        v.extend([
            Cell::Time(t),
            Cell::Text(name.into()),
            Cell::Float(bytes),
            Cell::Float(rate),
        ]);
    })
}

/// `goodput_total`: per bin, the bytes all flows delivered (flow `all`).
pub fn goodput_total<'a>(rows: &[GoodputRow]) -> Table<'a> {
    let out: Vec<(Instant, u64, f64)> = in_time_order(rows, |r| r.t)
        .chunk_by(|a, b| a.t == b.t)
        .map(|g| {
            let total: u64 = g.iter().map(|r| r.bytes).sum();
            (g[0].t, total, mbps_f(total as f64, g[0].bin))
        })
        .collect();
    let columns = columns(&[
        ("time_s", Float),
        ("flow", Text),
        ("bytes", UInt),
        ("goodput_mbps", Float),
    ]);
    Table::new("goodput_total", columns, out.len(), move |i, v| {
        let (t, total, rate) = out[i];
        v.extend([
            Cell::Time(t),
            Cell::Text("all".into()),
            Cell::UInt(total),
            Cell::Float(rate),
        ]);
    })
}

/// `cwnd` as distributions: per sample, each statistic of the congestion
/// windows of the flows that have started (no ssthresh).
pub fn cwnd<'a>(rows: &[CwndRow]) -> Table<'a> {
    let mut out: Vec<(Instant, &'static str, f64)> = Vec::new();
    for g in in_time_order(rows, |r| r.t).chunk_by(|a, b| a.t == b.t) {
        let mut cwnd: Vec<u64> = g.iter().map(|r| r.cwnd).collect();
        for (name, v) in STATS.iter().zip(stats(&mut cwnd)) {
            out.push((g[0].t, name, round6(v)));
        }
    }
    let columns = columns(&[
        ("time_s", Float),
        ("flow", Text),
        ("cwnd_bytes", Float),
        ("ssthresh_bytes", UInt),
    ]);
    Table::new("cwnd", columns, out.len(), move |i, v| {
        let (t, name, cwnd) = out[i];
        v.extend([
            Cell::Time(t),
            Cell::Text(name.into()),
            Cell::Float(cwnd),
            Cell::Null,
        ]);
    })
}

/// `flows`: each flow's totals, one row per flow, the columns named after
/// the fields of its `summary.json` entry (`name` is `flow`, as in the
/// series).
pub fn flows(flows: &[FlowSummary]) -> Table<'_> {
    let columns = columns(&[
        ("flow", Text),
        ("from", Text),
        ("to", Text),
        ("delivered_bytes", UInt),
        ("goodput_mbps", Float),
        ("segments_sent", UInt),
        ("retransmitted_segments", UInt),
        ("fast_retransmits", UInt),
        ("timeouts", UInt),
        ("local_drops", UInt),
        ("completion_s", Float),
        ("srtt_ms", Float),
    ]);
    Table::new("flows", columns, flows.len(), move |i, v| {
        let f = &flows[i];
        v.extend([
            Cell::Text(f.name.as_str().into()),
            Cell::Text(f.from.as_str().into()),
            Cell::Text(f.to.as_str().into()),
            Cell::UInt(f.delivered_bytes),
            Cell::Float(f.goodput_mbps),
            Cell::UInt(f.segments_sent),
            Cell::UInt(f.retransmitted_segments),
            Cell::UInt(f.fast_retransmits),
            Cell::UInt(f.timeouts),
            Cell::UInt(f.local_drops),
            optional(f.completion_s),
            optional(f.srtt_ms),
        ]);
    })
}

/// `link_totals`: each link direction's totals, one row per direction,
/// the columns named after the fields of its `summary.json` entry
/// (`name` is `link`, as in the series).
pub fn link_totals(links: &[LinkSummary]) -> Table<'_> {
    let columns = columns(&[
        ("link", Text),
        ("tx_packets", UInt),
        ("tx_bytes", UInt),
        ("utilisation", Float),
        ("queue_drops", UInt),
        ("lost_packets", UInt),
        ("max_queue_packets", UInt),
        ("mean_queue_packets", Float),
        ("sd_queue_packets", Float),
        ("p99_queue_packets", Float),
        ("p50_queue_delay_ms", Float),
        ("p95_queue_delay_ms", Float),
    ]);
    Table::new("link_totals", columns, links.len(), move |i, v| {
        let l = &links[i];
        v.extend([
            Cell::Text(l.name.as_str().into()),
            Cell::UInt(l.tx_packets),
            Cell::UInt(l.tx_bytes),
            Cell::Float(l.utilisation),
            Cell::UInt(l.queue_drops),
            Cell::UInt(l.lost_packets),
            Cell::UInt(l.max_queue_packets),
            optional(l.mean_queue_packets),
            optional(l.sd_queue_packets),
            optional(l.p99_queue_packets),
            optional(l.p50_queue_delay_ms),
            optional(l.p95_queue_delay_ms),
        ]);
    })
}

/// A float that may be absent: an empty cell then.
fn optional<'a>(x: Option<f64>) -> Cell<'a> {
    x.map_or(Cell::Null, Cell::Float)
}

fn columns(c: &[(&str, ColumnType)]) -> Vec<Column> {
    c.iter().map(|&(n, t)| Column::new(n, t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_of_one_to_a_hundred() {
        let mut v: Vec<u64> = (1..=100).rev().collect();
        let s = stats(&mut v);
        assert_eq!(s, [50.5, 1.0, 10.0, 50.0, 90.0, 99.0, 100.0]);
        assert_eq!(stats(&mut []), [0.0; 7]);
        let mut f: Vec<f64> = (1..=100).rev().map(|v| v as f64 / 4.0).collect();
        assert_eq!(
            stats_f64(&mut f),
            [12.625, 0.25, 2.5, 12.5, 22.5, 24.75, 25.0]
        );
    }

    #[test]
    fn jain_is_one_when_equal_and_one_over_n_for_one_taker() {
        assert_eq!(jain(&[5, 5, 5, 5]), 1.0);
        assert!((jain(&[8, 0, 0, 0]) - 0.25).abs() < 1e-12);
        assert_eq!(jain(&[]), 1.0);
    }

    #[test]
    fn goodput_rows_become_one_row_per_statistic_per_bin() {
        let bin = Duration::from_secs(1);
        let rows: Vec<GoodputRow> = (1..=2u64)
            .flat_map(|k| {
                (0..2000u32).map(move |f| GoodputRow {
                    t: Instant::ZERO + Duration::from_secs(k),
                    bin,
                    flow: f,
                    bytes: u64::from(f) * k,
                })
            })
            .collect();
        let text = goodput(&rows).csv();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + 2 * STATS.len());
        // Bin 2: flow f delivered 2f bytes; the median of 0, 2, .., 3998 by
        // nearest rank is the 1000th, 1998 B, 15984 bit/s.
        assert!(lines.contains(&"2,p50,1998,0.015984"), "{text}");
        assert!(lines.contains(&"1,max,1999,0.015992"), "{text}");
        // Rows out of time order (a cut run's merge) give the same table.
        let mut reversed = rows.clone();
        reversed.reverse();
        assert_eq!(goodput(&reversed).csv(), text);
        let text = goodput_total(&rows).csv();
        // Sum of 0..2000 is 1,999,000 B in bin 1.
        assert!(text.contains("\n1,all,1999000,15.992\n"), "{text}");
    }
}
