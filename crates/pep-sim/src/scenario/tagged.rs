//! Tables tagged by `kind`: queue, loss, medium, ack and source.
//!
//! A tagged value is a table `{ kind = "...", <fields of that kind> }`, or
//! just the kind's name when it needs no fields (`ack = "every"`). Layers
//! (defaults, link, direction, flow) combine by one rule: a table whose
//! `kind` is omitted or equal to the one below refines it field by field; a
//! different `kind` replaces it. New kinds are a match arm and a field
//! struct each.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::de::DeserializeOwned;
use toml::{Table, Value};

use super::error::{join, Ctx};
use super::model::{
    AckSpec, AppReadSpec, ClassifySpec, LossSpec, MediumSpec, QueueSpec, RedSpec, SourceSpec,
};
use super::raw;
use pep_core::loss::GilbertElliott;
use pep_core::queue::QueueLimit;
use pep_core::{Duration, KindFilter};

/// The written value as a table with `kind` inside, if it is a table or a
/// kind name.
pub(crate) fn normalize(
    ctx: &mut Ctx,
    v: &Value,
    field: &str,
    span: Option<Range<usize>>,
) -> Option<Table> {
    match v {
        Value::String(kind) => {
            let mut t = Table::new();
            t.insert("kind".into(), Value::String(kind.clone()));
            Some(t)
        }
        Value::Table(t) => Some(t.clone()),
        other => {
            ctx.err(
                span,
                field,
                format!(
                    "expected a table like {{ kind = \"...\", ... }} or a kind name, found {}",
                    other.type_str()
                ),
            );
            None
        }
    }
}

/// `over` laid on `base` (see the module doc).
pub(crate) fn layer(base: Option<&Table>, over: &Table) -> Table {
    let kind = |t: &Table| t.get("kind").cloned();
    match base {
        Some(b) if kind(over).is_none() || kind(over) == kind(b) => {
            let mut t = b.clone();
            t.extend(over.iter().map(|(k, v)| (k.clone(), v.clone())));
            t
        }
        _ => over.clone(),
    }
}

/// Splits off `kind`, checking it names one of `kinds`.
fn take_kind(
    ctx: &mut Ctx,
    mut t: Table,
    field: &str,
    span: &Option<Range<usize>>,
    kinds: &[&str],
) -> Option<(String, Table)> {
    let expected = kinds
        .iter()
        .map(|k| format!("{k:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    match t.remove("kind") {
        Some(Value::String(k)) if kinds.contains(&k.as_str()) => Some((k, t)),
        Some(Value::String(k)) => {
            ctx.err(
                span.clone(),
                join(field, "kind"),
                format!("unknown kind {k:?}; expected one of {expected}"),
            );
            None
        }
        Some(v) => {
            ctx.err(
                span.clone(),
                join(field, "kind"),
                format!(
                    "expected a string, one of {expected}; found {}",
                    v.type_str()
                ),
            );
            None
        }
        None => {
            ctx.err(
                span.clone(),
                field,
                format!("missing field `kind` (one of {expected})"),
            );
            None
        }
    }
}

/// Reads the fields of one kind. Errors have no position of their own (the
/// table was taken apart), so they point at the table.
fn fields<T: DeserializeOwned>(
    ctx: &mut Ctx,
    t: Table,
    field: &str,
    span: &Option<Range<usize>>,
) -> Option<T> {
    match serde_path_to_error::deserialize(Value::Table(t)) {
        Ok(v) => Some(v),
        Err(e) => {
            ctx.serde_err(e, field, span.clone());
            None
        }
    }
}

/// The limit of a RED queue or of each band when none is written: the
/// built-in DropTail's.
const DEFAULT_LIMIT: QueueLimit = QueueLimit::Packets(100);

pub(crate) fn queue(
    ctx: &mut Ctx,
    t: Table,
    field: &str,
    span: Option<Range<usize>>,
    flows: &FlowNames,
) -> Option<QueueSpec> {
    let kinds = ["droptail", "red", "priority", "two-class", "sad"];
    let (kind, rest) = take_kind(ctx, t, field, &span, &kinds)?;
    match kind.as_str() {
        "droptail" => {
            let q: raw::DropTail = fields(ctx, rest, field, &span)?;
            Some(QueueSpec::DropTail { limit: q.limit.0 })
        }
        "red" => {
            let q: raw::Red = fields(ctx, rest, field, &span)?;
            red(ctx, q, field, span).map(QueueSpec::Red)
        }
        "priority" => {
            let q: raw::Priority = fields(ctx, rest, field, &span)?;
            priority(ctx, q, field, span, flows)
        }
        "two-class" => {
            let q: raw::TwoClass = fields(ctx, rest, field, &span)?;
            two_class(ctx, q.data_share, q.limit, field, span)
        }
        "sad" => {
            let q: raw::Sad = fields(ctx, rest, field, &span)?;
            let inner = match q.data_share {
                Some(share) => two_class(ctx, share, q.limit, field, span.clone())?,
                None => QueueSpec::DropTail {
                    limit: q.limit.map_or(DEFAULT_LIMIT, |l| l.0),
                },
            };
            let max_flows = q.max_flows.unwrap_or(4096);
            if max_flows == 0 {
                ctx.err(span, join(field, "max_flows"), "must be at least 1");
                return None;
            }
            Some(QueueSpec::Sad {
                inner: Box::new(inner),
                max_flows,
            })
        }
        _ => None,
    }
}

fn two_class(
    ctx: &mut Ctx,
    share: f64,
    limit: Option<raw::Limit>,
    field: &str,
    span: Option<Range<usize>>,
) -> Option<QueueSpec> {
    {
        {
            // Weights in millionths: the share as written, to 6 digits.
            let data = libm::round(share * 1e6) as u32;
            if !(share > 0.0 && share < 1.0) || data == 0 || data >= 1_000_000 {
                let msg = format!(
                    "the data class's share of the link must be within (0, 1) \
                     (the ACK class gets the rest), got {share}"
                );
                ctx.err(span, join(field, "data_share"), msg);
                return None;
            }
            Some(QueueSpec::TwoClass {
                data_weight: data,
                ack_weight: 1_000_000 - data,
                limit: limit.map_or(DEFAULT_LIMIT, |l| l.0),
            })
        }
    }
}

fn red(ctx: &mut Ctx, q: raw::Red, field: &str, span: Option<Range<usize>>) -> Option<RedSpec> {
    let auto = q.auto.unwrap_or(false);
    let given: Vec<&str> = [("min_th", q.min_th), ("max_th", q.max_th), ("q_w", q.q_w)]
        .iter()
        .filter(|(_, v)| v.is_some())
        .map(|(k, _)| *k)
        .collect();
    let mut ok = true;
    let mut bad = |ctx: &mut Ctx, key: &str, msg: String| {
        ctx.err(span.clone(), join(field, key), msg);
        ok = false;
    };
    if auto && !given.is_empty() {
        let msg = format!(
            "auto = true computes min_th, max_th and q_w from the link; remove {} or auto",
            given.join(", ")
        );
        bad(ctx, "auto", msg);
    } else if !auto && q.min_th.is_none() {
        let msg = "give the thresholds (min_th, and optionally max_th and q_w), \
                   or auto = true for ns-2's automatic ones"
            .to_string();
        bad(ctx, "min_th", msg);
    }
    let prob = |v: f64| v > 0.0 && v <= 1.0;
    if let Some(v) = q.min_th.filter(|v| !(v.is_finite() && *v > 0.0)) {
        bad(
            ctx,
            "min_th",
            format!("must be positive and finite, got {v}"),
        );
    }
    if let (Some(min), Some(max)) = (q.min_th, q.max_th) {
        if !max.is_finite() {
            bad(ctx, "max_th", format!("must be finite, got {max}"));
        } else if max <= min {
            bad(
                ctx,
                "max_th",
                format!("must exceed min_th ({min}), got {max}"),
            );
        }
    }
    if let Some(v) = q.q_w.filter(|v| !prob(*v)) {
        bad(
            ctx,
            "q_w",
            format!("a weight must be within (0, 1], got {v}"),
        );
    }
    let max_p = q.max_p.unwrap_or(pep_core::queue::red::NS2_MAX_P);
    if !prob(max_p) {
        bad(
            ctx,
            "max_p",
            format!("a probability must be within (0, 1], got {max_p}"),
        );
    }
    let mean = q.mean_pktsize.map_or(500, |s| s.0);
    if mean == 0 || mean > u32::MAX as u64 {
        bad(
            ctx,
            "mean_pktsize",
            format!("must be within 1B and 4GB, got {mean}B"),
        );
    }
    let target = q.target_delay.map_or(Duration::from_millis(5), |d| d.0);
    if target == Duration::ZERO {
        bad(ctx, "target_delay", "must be positive".to_string());
    }
    // The thresholds as the queue uses them (build.rs, pep-core's Red::new):
    // max_th defaults to 3 min_th, and bytes mode scales both by
    // mean_pktsize. An overflow to inf would silently turn RED off.
    if let Some(min) = q.min_th.filter(|v| v.is_finite() && *v > 0.0) {
        let unit = if q.bytes.unwrap_or(true) {
            mean as f64
        } else {
            1.0
        };
        let max = q.max_th.unwrap_or(3.0 * min);
        if q.max_th.is_none() && !max.is_finite() {
            let msg = format!(
                "the default max_th, 3 x min_th = {max}, is not a finite number: \
                 give a smaller min_th or max_th"
            );
            bad(ctx, "min_th", msg);
        } else if max.is_finite() {
            for (key, v) in [("min_th", min), ("max_th", max)] {
                if !(v * unit).is_finite() {
                    let msg = format!(
                        "in bytes mode the threshold is {key} x mean_pktsize = {v:e} x {mean}B, \
                         which is not a finite number"
                    );
                    bad(ctx, key, msg);
                    break;
                }
            }
        }
    }
    ok.then(|| RedSpec {
        limit: q.limit.map_or(DEFAULT_LIMIT, |l| l.0),
        min_th: q.min_th,
        max_th: q.max_th,
        q_w: q.q_w,
        max_p,
        gentle: q.gentle.unwrap_or(true),
        wait: q.wait.unwrap_or(true),
        bytes: q.bytes.unwrap_or(true),
        mean_pktsize: mean as u32,
        target_delay: target,
    })
}

/// Most bands a priority queue may have.
const MAX_BANDS: u8 = 16;

fn priority(
    ctx: &mut Ctx,
    q: raw::Priority,
    field: &str,
    span: Option<Range<usize>>,
    flows: &FlowNames,
) -> Option<QueueSpec> {
    let limit = q.limit.map_or(DEFAULT_LIMIT, |l| l.0);
    let classify = q.classify.as_deref().unwrap_or("acks-first");
    let by_kind = match classify {
        "acks-first" => Some(ClassifySpec::AcksFirst),
        "data-first" => Some(ClassifySpec::DataFirst),
        "flow" => None,
        other => {
            let msg = format!(
                "unknown classifier {other:?}; expected one of \"acks-first\", \"data-first\", \"flow\""
            );
            ctx.err(span, join(field, "classify"), msg);
            return None;
        }
    };
    if let Some(c) = by_kind {
        if q.flows.is_some() || q.bands.is_some() {
            let msg = format!("classify = {classify:?} has two bands and no flow list; use classify = \"flow\" to list flows");
            ctx.err(span, join(field, "classify"), msg);
            return None;
        }
        return Some(QueueSpec::Priority { classify: c, limit });
    }
    let Some(listed) = q.flows.filter(|f| !f.is_empty()) else {
        let msg = "classify = \"flow\" needs flows = { <flow name> = <band>, ... }";
        ctx.err(span, join(field, "flows"), msg);
        return None;
    };
    let top = listed.values().copied().max().unwrap_or(0);
    if q.bands.is_none() && u64::from(top) + 2 > u64::from(MAX_BANDS) {
        let msg = format!(
            "band {top} is too high for the default band count (the highest listed band + 2, \
             the last one for unlisted flows; at most {MAX_BANDS}): list bands up to {} or set \
             bands",
            MAX_BANDS - 2
        );
        ctx.err(span, join(field, "flows"), msg);
        return None;
    }
    let bands = q.bands.unwrap_or(top.saturating_add(2));
    if bands == 0 || bands > MAX_BANDS || top >= bands {
        let msg = format!(
            "bands must be within 1 and {MAX_BANDS} and above every listed band (highest {top}), got {bands}"
        );
        ctx.err(span, join(field, "bands"), msg);
        return None;
    }
    let mut out = Vec::new();
    for (name, band) in listed {
        if let Some(&i) = flows.by_name.get(&name) {
            out.push((i, band));
        } else if let Some(&n) = flows.groups.get(&name) {
            // A group name stands for all its copies.
            for k in 0..n {
                out.push((flows.by_name[&format!("{name}.{k}")], band));
            }
        } else {
            ctx.err(
                span.clone(),
                join(field, "flows"),
                format!("unknown flow {name:?}"),
            );
            return None;
        }
    }
    out.sort();
    Some(QueueSpec::Priority {
        classify: ClassifySpec::Flow { bands, flows: out },
        limit,
    })
}

pub(crate) fn medium(
    ctx: &mut Ctx,
    t: Table,
    field: &str,
    span: Option<Range<usize>>,
) -> Option<MediumSpec> {
    let (kind, rest) = take_kind(ctx, t, field, &span, &["full-duplex", "half-duplex"])?;
    match kind.as_str() {
        "full-duplex" => {
            fields::<raw::NoFields>(ctx, rest, field, &span).map(|_| MediumSpec::FullDuplex)
        }
        "half-duplex" => {
            let h: raw::HalfDuplex = fields(ctx, rest, field, &span)?;
            Some(MediumSpec::HalfDuplex {
                backoff: h.backoff.map_or(Duration::ZERO, |d| d.0),
            })
        }
        _ => None,
    }
}

/// Flow names a scripted drop may refer to.
pub(crate) struct FlowNames {
    /// Expanded flow name -> index.
    pub by_name: BTreeMap<String, usize>,
    /// Names written with `count > 1` -> count (to explain the miss).
    pub groups: BTreeMap<String, u32>,
}

pub(crate) fn loss(
    ctx: &mut Ctx,
    t: Table,
    field: &str,
    span: Option<Range<usize>>,
    flows: &FlowNames,
) -> Option<LossSpec> {
    let kinds = ["none", "bernoulli", "gilbert-elliott", "drop"];
    let (kind, rest) = take_kind(ctx, t, field, &span, &kinds)?;
    match kind.as_str() {
        "none" => fields::<raw::NoFields>(ctx, rest, field, &span).map(|_| LossSpec::None),
        "bernoulli" => {
            let b: raw::Bernoulli = fields(ctx, rest, field, &span)?;
            probability(ctx, b.p, field, "p", &span)?;
            Some(LossSpec::Bernoulli {
                p: b.p,
                applies_to: applies_to(b.applies_to),
            })
        }
        "gilbert-elliott" => {
            let g: raw::GilbertElliott = fields(ctx, rest, field, &span)?;
            gilbert_elliott(ctx, g, field, span)
        }
        "drop" => {
            let d: raw::ScriptedDrop = fields(ctx, rest, field, &span)?;
            let Some(&flow) = flows.by_name.get(&d.flow) else {
                let msg = match flows.groups.get(&d.flow) {
                    Some(n) => format!(
                        "flow {:?} has count = {n}: name one of its copies, {:?} to {:?}",
                        d.flow,
                        format!("{}.0", d.flow),
                        format!("{}.{}", d.flow, n - 1)
                    ),
                    None => format!("unknown flow {:?}", d.flow),
                };
                ctx.err(span, join(field, "flow"), msg);
                return None;
            };
            if d.segments.is_empty() || d.segments.contains(&0) {
                let msg = "list the segments to drop, numbered from 1 (the flow's first segment)";
                ctx.err(span, join(field, "segments"), msg);
                return None;
            }
            Some(LossSpec::Drop {
                flow,
                segments: d.segments,
            })
        }
        _ => None,
    }
}

fn applies_to(a: Option<raw::AppliesTo>) -> KindFilter {
    match a {
        None | Some(raw::AppliesTo::All) => KindFilter::All,
        Some(raw::AppliesTo::Data) => KindFilter::Data,
        Some(raw::AppliesTo::Acks) => KindFilter::Acks,
    }
}

/// Checks that `v` (written as `key`) is a probability.
fn probability(
    ctx: &mut Ctx,
    v: f64,
    field: &str,
    key: &str,
    span: &Option<Range<usize>>,
) -> Option<()> {
    if (0.0..=1.0).contains(&v) {
        Some(())
    } else {
        let msg = format!("a probability must be within [0, 1], got {v}");
        ctx.err(span.clone(), join(field, key), msg);
        None
    }
}

fn gilbert_elliott(
    ctx: &mut Ctx,
    g: raw::GilbertElliott,
    field: &str,
    span: Option<Range<usize>>,
) -> Option<LossSpec> {
    let loss_good = g.loss_good.unwrap_or(0.0);
    let loss_bad = g.loss_bad.unwrap_or(1.0);
    probability(ctx, loss_good, field, "loss_good", &span)?;
    probability(ctx, loss_bad, field, "loss_bad", &span)?;
    let (p, r) = match (g.p, g.r, g.mean_loss, g.mean_burst) {
        (Some(p), Some(r), None, None) => {
            probability(ctx, p, field, "p", &span)?;
            probability(ctx, r, field, "r", &span)?;
            if p + r == 0.0 {
                let msg = "p and r are both 0: the chain never moves; use bernoulli";
                ctx.err(span, join(field, "r"), msg);
                return None;
            }
            (p, r)
        }
        (None, None, Some(rate), Some(burst)) => {
            // inf or NaN would give a chain that never loses (r = p = 0).
            for (key, v) in [("mean_loss", rate), ("mean_burst", burst)] {
                if !v.is_finite() {
                    let msg = format!("must be a finite number, got {v}");
                    ctx.err(span, join(field, key), msg);
                    return None;
                }
            }
            if g.loss_good.is_some_and(|v| v != 0.0) || g.loss_bad.is_some_and(|v| v != 1.0) {
                let msg = "mean_loss and mean_burst describe Gilbert's model \
                           (loss_good = 0, loss_bad = 1); give p and r instead";
                ctx.err(span, join(field, "mean_loss"), msg);
                return None;
            }
            let Some(pr) = GilbertElliott::params_from_rate_and_burst(rate, burst) else {
                let msg = format!(
                    "no chain has mean_loss {rate} and mean_burst {burst}: need 0 < mean_loss < 1, \
                     mean_burst >= 1 and mean_loss <= mean_burst / (mean_burst + 1)"
                );
                ctx.err(span, join(field, "mean_loss"), msg);
                return None;
            };
            if pr.0 == 0.0 || pr.1 == 0.0 {
                let msg = format!(
                    "mean_loss {rate} and mean_burst {burst} give p = {} and r = {}: \
                     a chain that never changes state and so loses nothing",
                    pr.0, pr.1
                );
                let key = if pr.1 == 0.0 {
                    "mean_burst"
                } else {
                    "mean_loss"
                };
                ctx.err(span, join(field, key), msg);
                return None;
            }
            pr
        }
        _ => {
            let msg = "give either p and r (per-packet transition probabilities Good->Bad and \
                       Bad->Good) or mean_loss and mean_burst";
            ctx.err(span, field, msg);
            return None;
        }
    };
    Some(LossSpec::GilbertElliott {
        p,
        r,
        loss_good,
        loss_bad,
        applies_to: applies_to(g.applies_to),
    })
}

/// ns-2's DelAckSink: an ACK every 2 segments, 100 ms timer.
const DELAYED_COUNT: u32 = 2;
const DELAYED_TIMEOUT: Duration = Duration::from_millis(100);

pub(crate) fn ack(
    ctx: &mut Ctx,
    t: Table,
    field: &str,
    span: Option<Range<usize>>,
) -> Option<AckSpec> {
    let (kind, rest) = take_kind(ctx, t, field, &span, &["every", "delayed", "adaptive"])?;
    match kind.as_str() {
        "every" => fields::<raw::NoFields>(ctx, rest, field, &span).map(|_| AckSpec::Every),
        "delayed" => {
            let d: raw::DelayedAck = fields(ctx, rest, field, &span)?;
            let count = d.count.unwrap_or(DELAYED_COUNT);
            let timeout = d.timeout.map_or(DELAYED_TIMEOUT, |t| t.0);
            let tick = d.tick.map(|t| t.0);
            if count == 0 {
                let msg = "must be at least 1 (1 acknowledges every segment)";
                ctx.err(span, join(field, "count"), msg);
                None
            } else if tick == Some(Duration::ZERO) {
                ctx.err(
                    span,
                    join(field, "tick"),
                    "must be positive (omit it for an exact timer)",
                );
                None
            } else if timeout == Duration::ZERO && tick.is_none() {
                let msg =
                    "must be positive (zero is allowed only with a `tick`, as BSD's 200 ms timer)";
                ctx.err(span, join(field, "timeout"), msg);
                None
            } else {
                Some(AckSpec::Delayed {
                    count,
                    timeout,
                    tick,
                })
            }
        }
        "adaptive" => {
            let d: raw::AdaptiveAck = fields(ctx, rest, field, &span)?;
            let min = d.min.unwrap_or(DELAYED_COUNT);
            let max = d.max.unwrap_or(16);
            let timeout = d.timeout.map_or(DELAYED_TIMEOUT, |t| t.0);
            let tick = d.tick.map(|t| t.0);
            if min == 0 {
                ctx.err(span, join(field, "min"), "must be at least 1");
                None
            } else if max < min {
                let msg = format!("must be at least min ({min})");
                ctx.err(span, join(field, "max"), msg);
                None
            } else if tick == Some(Duration::ZERO) {
                let msg = "must be positive (omit it for an exact timer)";
                ctx.err(span, join(field, "tick"), msg);
                None
            } else if timeout == Duration::ZERO && tick.is_none() {
                let msg = "must be positive (zero is allowed only with a `tick`)";
                ctx.err(span, join(field, "timeout"), msg);
                None
            } else {
                Some(AckSpec::Adaptive {
                    min,
                    max,
                    timeout,
                    tick,
                })
            }
        }
        _ => None,
    }
}

/// ttcp's default read size.
const READ_CHUNK: u64 = 8192;

pub(crate) fn app_read(
    ctx: &mut Ctx,
    t: Table,
    field: &str,
    span: Option<Range<usize>>,
) -> Option<AppReadSpec> {
    let (kind, rest) = take_kind(ctx, t, field, &span, &["immediate", "reader"])?;
    match kind.as_str() {
        "immediate" => {
            fields::<raw::NoFields>(ctx, rest, field, &span).map(|_| AppReadSpec::Immediate)
        }
        "reader" => {
            let r: raw::Reader = fields(ctx, rest, field, &span)?;
            let chunk = r.chunk.map_or(READ_CHUNK, |c| c.0);
            if chunk == 0 {
                ctx.err(span, join(field, "chunk"), "must be at least 1B");
                return None;
            }
            Some(AppReadSpec::Reader {
                chunk,
                when: r.when.unwrap_or_default(),
                work: r.work.map_or(Duration::ZERO, |w| w.0),
            })
        }
        _ => None,
    }
}

pub(crate) fn source(
    ctx: &mut Ctx,
    t: Table,
    field: &str,
    span: Option<Range<usize>>,
) -> Option<SourceSpec> {
    let (kind, rest) = take_kind(ctx, t, field, &span, &["bulk", "finite", "pareto"])?;
    match kind.as_str() {
        "bulk" => fields::<raw::NoFields>(ctx, rest, field, &span).map(|_| SourceSpec::Bulk),
        "finite" => {
            let f: raw::Finite = fields(ctx, rest, field, &span)?;
            if f.size.0 == 0 {
                ctx.err(span, join(field, "size"), "must be at least 1B");
                return None;
            }
            Some(SourceSpec::Finite { bytes: f.size.0 })
        }
        "pareto" => {
            let p: raw::Pareto = fields(ctx, rest, field, &span)?;
            let d = crate::traffic::OnOffConfig::default();
            let cfg = crate::traffic::OnOffConfig {
                rate: p.rate.map_or(d.rate, |r| r.0),
                packet: p
                    .packet
                    .map_or(Ok(d.packet), |s| u32::try_from(s.0))
                    .unwrap_or(0),
                burst_time: p.burst_time.map_or(d.burst_time, |t| t.0),
                idle_time: p.idle_time.map_or(d.idle_time, |t| t.0),
                shape: p.shape.unwrap_or(d.shape),
            };
            if cfg.rate.as_bps() == 0 {
                ctx.err(span, join(field, "rate"), "must be positive");
                None
            } else if cfg.packet == 0 {
                ctx.err(span, join(field, "packet"), "must be between 1B and 4GiB");
                None
            } else if cfg.burst_time == Duration::ZERO {
                ctx.err(span, join(field, "burst_time"), "must be positive");
                None
            } else if !(cfg.shape > 1.0 && cfg.shape.is_finite()) {
                let msg = "must be a finite number above 1 (the mean is infinite at 1 or below)";
                ctx.err(span, join(field, "shape"), msg);
                None
            } else {
                Some(SourceSpec::Pareto(cfg))
            }
        }
        _ => None,
    }
}
