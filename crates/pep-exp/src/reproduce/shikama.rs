//! `shikama`: the split-connection PEP and the bursts it emits (Shikama,
//! "Burstiness of Output Traffic by a Split Connection TCP
//! Implementation"), and the mitigations the paper left open.
//!
//! The paper prints its results as figures without tables, so its claims
//! are checked as the qualitative statements it makes (who beats whom,
//! where the queue peaks, which distribution follows which), each
//! computed from our runs.

use super::{Claim, Kind, Paper};
use crate::results::Results;

pub(super) static PAPER: Paper = Paper {
    name: "shikama",
    title: "Burstiness of Output Traffic by a Split Connection TCP Implementation",
    citation: "T. Shikama, \"Burstiness of Output Traffic by a Split Connection TCP \
               Implementation\", Fukui University of Technology",
    about: "A PEP between a lossy 5 Mbit/s wireless link and a wired path with a 6 or \
            10 Mbit/s bottleneck terminates the sender's TCP and forwards its bytes on a \
            second connection. It beats end-to-end TCP under loss, but every repaired \
            loss releases the reassembled window at once: the forward data (up to the \
            128 KB window, ~90 segments) leave as back-to-back bursts that queue at the \
            bottleneck, most at P_L ~ 0.001-0.002. Beyond the paper: shaping between \
            the legs, maxburst and pacing (with RFC 7661 window validation) compared.",
    experiments: &["throughput.toml", "queue.toml", "mitigations.toml"],
    claims,
};

const LOSS: &str = "link[wireless].forward.loss.p";
const GOODPUT: &str = "total_goodput_mbps";
const QUEUE: &str = "link.n2->n3.mean_queue_packets";
/// The wireless window (128 KB) in 1460-byte segments.
const WINDOW_SEGMENTS: f64 = 128.0 * 1024.0 / 1460.0;

/// Mean of `measure` at the point whose parameters read as `at`.
fn mean(r: &Results, measure: &str, at: &[(&str, &str)]) -> Result<f64, String> {
    let m = r
        .measure_index(measure)
        .ok_or_else(|| format!("no measure {measure}"))?;
    let p = r
        .find_point(at)
        .ok_or_else(|| format!("no point at {at:?}"))?;
    r.stats(p, m)
        .mean
        .ok_or_else(|| format!("{measure} has no value at {at:?}"))
}

/// The loss rates of the experiment, as written, in increasing order.
fn losses(r: &Results) -> Result<Vec<String>, String> {
    let k = r
        .params
        .iter()
        .position(|p| p == LOSS)
        .ok_or("no loss parameter")?;
    let mut v: Vec<String> = (0..r.points.len()).map(|p| r.param_text(p, k)).collect();
    v.sort_by(|a, b| {
        let (x, y) = (a.parse::<f64>(), b.parse::<f64>());
        x.unwrap_or(0.0).total_cmp(&y.unwrap_or(0.0))
    });
    v.dedup();
    Ok(v)
}

fn at_least(p: &str, min: f64) -> bool {
    p.parse::<f64>().is_ok_and(|x| x >= min - 1e-12)
}

/// T1: with the PEP, throughput beats end-to-end NewReno at P_L >= 0.001.
fn pep_beats_newreno(r: &Results) -> Result<(bool, String), String> {
    let mut ok = true;
    let mut seen = Vec::new();
    for p in losses(r)?.iter().filter(|p| at_least(p, 0.001)) {
        let nr = [("defaults.tcp.cc", "newreno")];
        let pep = mean(
            r,
            GOODPUT,
            &[(LOSS, p), ("agent[0].bypass", "false"), nr[0]],
        )?;
        let e2e = mean(r, GOODPUT, &[(LOSS, p), ("agent[0].bypass", "true"), nr[0]])?;
        ok &= pep > e2e;
        seen.push(format!("{p}: {pep:.2} vs {e2e:.2}"));
    }
    Ok((ok, seen.join("; ")))
}

/// T2: end to end, Westwood beats NewReno (P_L >= 0.001, where loss rather
/// than the window limits both).
fn westwood_beats_newreno(r: &Results) -> Result<(bool, String), String> {
    let mut ok = true;
    let mut seen = Vec::new();
    for p in losses(r)?.iter().filter(|p| at_least(p, 0.001)) {
        let by = ("agent[0].bypass", "true");
        let ww = mean(
            r,
            GOODPUT,
            &[(LOSS, p), by, ("defaults.tcp.cc", "westwood")],
        )?;
        let nr = mean(r, GOODPUT, &[(LOSS, p), by, ("defaults.tcp.cc", "newreno")])?;
        ok &= ww > nr;
        seen.push(format!("{p}: {ww:.2} vs {nr:.2}"));
    }
    Ok((ok, seen.join("; ")))
}

/// T3: with the PEP, throughput beats end-to-end Westwood at P_L >= 0.001
/// (Fig. 5: the PEP's curve above both no-PEP curves).
fn pep_beats_westwood(r: &Results) -> Result<(bool, String), String> {
    let mut ok = true;
    let mut seen = Vec::new();
    for p in losses(r)?.iter().filter(|p| at_least(p, 0.001)) {
        let pep = mean(
            r,
            GOODPUT,
            &[
                (LOSS, p),
                ("agent[0].bypass", "false"),
                ("defaults.tcp.cc", "newreno"),
            ],
        )?;
        let ww = mean(
            r,
            GOODPUT,
            &[
                (LOSS, p),
                ("agent[0].bypass", "true"),
                ("defaults.tcp.cc", "westwood"),
            ],
        )?;
        ok &= pep > ww;
        seen.push(format!("{p}: {pep:.2} vs {ww:.2}"));
    }
    Ok((ok, seen.join("; ")))
}

/// Whether the queue's standard deviation is "about 2 times" its mean:
/// the ratio within 25% of 2.
pub fn about_twice(sd: f64, mean: f64) -> bool {
    mean > 0.0 && (sd / mean / 2.0 - 1.0).abs() <= 0.25
}

/// Q4: at P_L = 0.001 (one connection, 6 Mbit/s) the queue's standard
/// deviation is about twice its mean.
fn queue_sd_twice_mean(r: &Results) -> Result<(bool, String), String> {
    let at = [(LOSS, "0.001"), SIX, ONE];
    let (q, sd) = (
        mean(r, QUEUE, &at)?,
        mean(r, "link.n2->n3.sd_queue_packets", &at)?,
    );
    Ok((
        about_twice(sd, q),
        format!(
            "at P_L 0.001: mean {q:.2}, SD {sd:.2} packets (SD / mean {:.2}; paper about 2)",
            sd / q
        ),
    ))
}

/// Q1: without the PEP the queue at n2 stays (near) empty.
fn no_pep_no_queue(r: &Results) -> Result<(bool, String), String> {
    let mut worst: f64 = 0.0;
    for p in losses(r)? {
        for cc in ["newreno", "westwood"] {
            let at = [
                (LOSS, p.as_str()),
                ("agent[0].bypass", "true"),
                ("defaults.tcp.cc", cc),
            ];
            worst = worst.max(mean(r, QUEUE, &at)?);
        }
    }
    Ok((
        worst < 0.1,
        format!("largest mean queue without PEP: {worst:.3} packets"),
    ))
}

const ONE: (&str, &str) = ("flow[f].count", "1");
const SIX: (&str, &str) = ("link[wired].rate", "6Mbit/s");
const TEN: (&str, &str) = ("link[wired].rate", "10Mbit/s");

/// F1a: forward data never exceed the wireless window.
fn forward_bounded(r: &Results) -> Result<(bool, String), String> {
    let mut largest: f64 = 0.0;
    for p in losses(r)? {
        for rate in [SIX, TEN] {
            for n in ["1", "5"] {
                let at = [(LOSS, p.as_str()), rate, ("flow[f].count", n)];
                largest = largest.max(mean(r, "agent.pep.max_forward_segments", &at)?);
            }
        }
    }
    Ok((
        largest <= WINDOW_SEGMENTS,
        format!("largest forward data {largest:.1} segments (window {WINDOW_SEGMENTS:.1})"),
    ))
}

/// F1: at P_L = 0.001 (one connection) bursts of 30+ segments occur.
fn large_bursts(r: &Results) -> Result<(bool, String), String> {
    let at = [(LOSS, "0.001"), SIX, ONE];
    let big = mean(r, "agent.pep.bursts_30plus", &at)?;
    let max_burst = mean(r, "agent.pep.max_burst_packets", &at)?;
    Ok((
        big > 0.0,
        format!("at P_L 0.001: {big:.1} bursts of 30+ per run, largest {max_burst:.0}"),
    ))
}

/// F2: for one connection the burst sizes follow the forward-data sizes,
/// over sizes of three segments and more (the tail the figure shows; over
/// all deliveries the single segments dominate both and the distance is
/// small by construction).
fn bursts_follow_forward_data(r: &Results) -> Result<(bool, String), String> {
    let mut worst: f64 = 0.0;
    let mut seen = Vec::new();
    for p in losses(r)? {
        let d = mean(
            r,
            "agent.pep.ks_forward_burst_tail",
            &[(LOSS, p.as_str()), SIX, ONE],
        )?;
        worst = worst.max(d);
        seen.push(format!("{p}: {d:.3}"));
    }
    Ok((
        worst < 0.1,
        format!("tail KS distance by P_L: {}", seen.join(", ")),
    ))
}

/// F3: for five connections at P_L = 0.0001 and 0.001 the burst sizes no
/// longer follow the forward-data sizes (self-clocking splits them): KS
/// distance over all deliveries at least 0.1, the line F2 uses.
fn five_connections_differ(r: &Results) -> Result<(bool, String), String> {
    let five = ("flow[f].count", "5");
    let mut ok = true;
    let mut seen = Vec::new();
    for p in ["0.0001", "0.001"] {
        let d = mean(r, "agent.pep.ks_forward_burst", &[(LOSS, p), SIX, five])?;
        ok &= d >= 0.1;
        seen.push(format!("{p}: {d:.3}"));
    }
    Ok((
        ok,
        format!("KS distance, 5 connections, by P_L: {}", seen.join(", ")),
    ))
}

/// Q2: with the PEP the mean queue peaks at P_L around 0.001-0.002 (one
/// connection, 6 Mbit/s).
fn queue_peaks(r: &Results) -> Result<(bool, String), String> {
    let mut best = (String::new(), f64::MIN);
    let mut seen = Vec::new();
    for p in losses(r)? {
        let q = mean(r, QUEUE, &[(LOSS, p.as_str()), SIX, ONE])?;
        seen.push(format!("{p}: {q:.2}"));
        if q > best.1 {
            best = (p.clone(), q);
        }
    }
    let x: f64 = best.0.parse().unwrap_or(0.0);
    Ok((
        (0.0005..=0.002).contains(&x),
        format!(
            "peak at P_L {} ({:.2} packets); {}",
            best.0,
            best.1,
            seen.join(", ")
        ),
    ))
}

/// Q3: the mean queue is smaller at 10 Mbit/s than at 6 Mbit/s.
fn faster_bottleneck_smaller_queue(r: &Results) -> Result<(bool, String), String> {
    let mut ok = true;
    let mut seen = Vec::new();
    for p in losses(r)?.iter().filter(|p| !at_least(p, 0.05)) {
        for n in ["1", "5"] {
            let c = ("flow[f].count", n);
            let q6 = mean(r, QUEUE, &[(LOSS, p), SIX, c])?;
            let q10 = mean(r, QUEUE, &[(LOSS, p), TEN, c])?;
            ok &= q10 < q6;
            seen.push(format!("{p}/{n}: {q10:.2} < {q6:.2}"));
        }
    }
    Ok((ok, seen.join("; ")))
}

/// S1: shaping at about the bottleneck rate cuts the mean queue >= 5x at
/// P_L = 0.001 (maxburst and pacing reported beside it).
fn shaping_cuts_queue(r: &Results) -> Result<(bool, String), String> {
    let m = "agent[0].mitigation";
    let at = |v| [(LOSS, "0.001"), (m, v)];
    let (q0, q1) = (
        mean(r, QUEUE, &at("none"))?,
        mean(r, QUEUE, &at("shape-6M"))?,
    );
    let mut others = Vec::new();
    for v in ["maxburst-4", "maxburst-2", "pacing", "pacing-cwv"] {
        others.push(format!("{v}: {:.2} pkts", mean(r, QUEUE, &at(v))?));
    }
    Ok((
        q1 * 5.0 <= q0,
        format!(
            "none: {q0:.2} pkts; shape-6M: {q1:.2} pkts; {}",
            others.join("; ")
        ),
    ))
}

/// S1b: shaping at 6 Mbit/s behind a 5 Mbit/s wireless link loses < 3%
/// throughput (true by construction: the shaper is faster than its input).
fn shaping_keeps_throughput(r: &Results) -> Result<(bool, String), String> {
    let m = "agent[0].mitigation";
    let at = |v| [(LOSS, "0.001"), (m, v)];
    let (g0, g1) = (
        mean(r, GOODPUT, &at("none"))?,
        mean(r, GOODPUT, &at("shape-6M"))?,
    );
    Ok((
        g1 >= 0.97 * g0,
        format!("none: {g0:.3} Mbit/s; shape-6M: {g1:.3} Mbit/s"),
    ))
}

fn claims() -> Vec<Claim> {
    vec![
        Claim::predicate(
            "T1",
            Kind::Reproduction,
            "With the PEP, throughput is higher than end-to-end NewReno under loss (Fig. 5).",
            "throughput",
            "mean PEP throughput > end-to-end NewReno at every P_L >= 0.001",
            pep_beats_newreno,
        ),
        Claim::predicate(
            "T2",
            Kind::Reproduction,
            "End to end, Westwood improves throughput over NewReno (Fig. 5).",
            "throughput",
            "mean Westwood > NewReno end to end at every P_L >= 0.001",
            westwood_beats_newreno,
        ),
        Claim::predicate(
            "T3",
            Kind::Reproduction,
            "With the PEP, throughput is also above end-to-end Westwood under loss \
             (Fig. 5: the PEP's curve above both no-PEP curves).",
            "throughput",
            "mean PEP throughput > end-to-end Westwood at every P_L >= 0.001",
            pep_beats_westwood,
        ),
        Claim::predicate(
            "Q1",
            Kind::Setup,
            "Without the PEP the queue at the bottleneck node n2 always takes the value 0.",
            "throughput",
            "mean n2 queue < 0.1 packets at every no-PEP point",
            no_pep_no_queue,
        ),
        Claim::predicate(
            "F1a",
            Kind::Setup,
            "The largest forward data is about 90 segments, the 128 KB wireless window \
             (Fig. 6).",
            "queue",
            "largest forward data <= 128 KB / 1460 B at every point",
            forward_bounded,
        ),
        Claim::predicate(
            "F1",
            Kind::Reproduction,
            "At P_L = 0.001 large bursts are generated (Fig. 6).",
            "queue",
            "bursts of 30+ packets at P_L = 0.001 (one connection)",
            large_bursts,
        ),
        Claim::predicate(
            "F2",
            Kind::Reproduction,
            "For one connection the burst-size distribution is consistent with the \
             forward-data distribution (Fig. 6).",
            "queue",
            "two-sample KS distance < 0.1 over sizes of 3 segments and more, at every P_L \
             (one connection, 6 Mbit/s)",
            bursts_follow_forward_data,
        ),
        Claim::predicate(
            "F3",
            Kind::Reproduction,
            "For five connections at small loss (P_L = 0.0001, 0.001) the burst-size \
             distribution differs from the forward-data one: bursts of more than one \
             packet are rarer (Fig. 7).",
            "queue",
            "5 connections, 6 Mbit/s: KS distance over all deliveries >= 0.1 at P_L = \
             0.0001 and 0.001",
            five_connections_differ,
        ),
        Claim::predicate(
            "Q2",
            Kind::Reproduction,
            "The mean queue at n2 is largest at P_L around 0.001-0.002 (Fig. 16).",
            "queue",
            "the P_L of the largest mean queue (one connection, 6 Mbit/s) is in \
             [0.0005, 0.002]",
            queue_peaks,
        ),
        Claim::predicate(
            "Q4",
            Kind::Reproduction,
            "At P_L around 0.001 the queue's standard deviation is about 2 times its \
             mean (Fig. 16, one connection, 6 Mbit/s).",
            "queue",
            "at P_L = 0.001: SD / mean of the n2 queue within 25% of 2",
            queue_sd_twice_mean,
        ),
        Claim::predicate(
            "Q3",
            Kind::Reproduction,
            "With a 10 Mbit/s bottleneck the mean queue is smaller than with 6 Mbit/s \
             (Figs. 16-19).",
            "queue",
            "mean queue at 10 Mbit/s < at 6 Mbit/s for every P_L < 0.05, 1 and 5 \
             connections",
            faster_bottleneck_smaller_queue,
        ),
        Claim::predicate(
            "S1",
            Kind::Beyond,
            "Beyond the paper: shaping between the two connections at about the wired \
             bottleneck rate removes the queue.",
            "mitigations",
            "at P_L = 0.001, shaping at 6 Mbit/s cuts the mean n2 queue >= 5x (maxburst \
             and pacing reported beside it)",
            shaping_cuts_queue,
        ),
        Claim::predicate(
            "S1b",
            Kind::Setup,
            "... while throughput holds (the shaper at 6 Mbit/s is faster than the 5 \
             Mbit/s wireless link that feeds it).",
            "mitigations",
            "at P_L = 0.001, shaping at 6 Mbit/s loses < 3% throughput",
            shaping_keeps_throughput,
        ),
    ]
}
