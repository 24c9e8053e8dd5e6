//! Tables tagged by `kind`: queue, loss, ack and source.
//!
//! A tagged value is a table `{ kind = "...", <fields of that kind> }`, or
//! just the kind's name when it needs no fields (`ack = "every"`). Layers
//! (defaults, link, direction, flow) combine by one rule: a table whose
//! `kind` is omitted or equal to the one below refines it field by field; a
//! different `kind` replaces it. New kinds (RED, Gilbert-Elliott, Pareto) are
//! a match arm and a field struct each.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::de::DeserializeOwned;
use toml::{Table, Value};

use super::error::{join, Ctx};
use super::model::{AckSpec, LossSpec, QueueSpec, SourceSpec};
use super::raw;
use pep_core::Duration;

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

pub(crate) fn queue(
    ctx: &mut Ctx,
    t: Table,
    field: &str,
    span: Option<Range<usize>>,
) -> Option<QueueSpec> {
    let (kind, rest) = take_kind(ctx, t, field, &span, &["droptail"])?;
    match kind.as_str() {
        "droptail" => {
            let q: raw::DropTail = fields(ctx, rest, field, &span)?;
            Some(QueueSpec::DropTail { limit: q.limit.0 })
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
    let (kind, rest) = take_kind(ctx, t, field, &span, &["none", "bernoulli", "drop"])?;
    match kind.as_str() {
        "none" => fields::<raw::NoFields>(ctx, rest, field, &span).map(|_| LossSpec::None),
        "bernoulli" => {
            let b: raw::Bernoulli = fields(ctx, rest, field, &span)?;
            if (0.0..=1.0).contains(&b.p) {
                Some(LossSpec::Bernoulli { p: b.p })
            } else {
                let msg = format!("a probability must be within [0, 1], got {}", b.p);
                ctx.err(span, join(field, "p"), msg);
                None
            }
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

/// ns-2's DelAckSink: an ACK every 2 segments, 100 ms timer.
const DELAYED_COUNT: u32 = 2;
const DELAYED_TIMEOUT: Duration = Duration::from_millis(100);

pub(crate) fn ack(
    ctx: &mut Ctx,
    t: Table,
    field: &str,
    span: Option<Range<usize>>,
) -> Option<AckSpec> {
    let (kind, rest) = take_kind(ctx, t, field, &span, &["every", "delayed"])?;
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
                let msg = "must be a number above 1 (the mean is infinite at 1 or below)";
                ctx.err(span, join(field, "shape"), msg);
                None
            } else {
                Some(SourceSpec::Pareto(cfg))
            }
        }
        _ => None,
    }
}
