//! A link direction's service that changes over time, as written: a
//! `schedule` of steps, an `mm-link` `trace` file, or the `preset = "leo"`
//! with its `[link.leo]` overrides. The core's pieces
//! (`pep_core::link::{schedule, trace, leo}`) run them.

use std::path::Path;
use std::sync::Arc;

use pep_core::link::leo::LeoParams;
use pep_core::link::schedule::{Schedule, Step};
use pep_core::link::service::ServiceSpec;
use pep_core::link::trace::{MmTrace, OPPORTUNITY_BYTES};
use pep_core::{Duration, Rate};

use super::error::{join, Ctx};
use super::raw;
use super::span::S;
use super::validate::rate;

/// The LEO preset's rates when the link gives none: the downlink (the
/// forward direction) and the uplink.
pub(crate) const LEO_DOWN: Rate = Rate::mbps(100);
pub(crate) const LEO_UP: Rate = Rate::mbps(10);

/// The schedule `steps` (at `field`) on a direction of `rate` and `delay`.
pub(crate) fn schedule(
    ctx: &mut Ctx,
    steps: &[raw::Step],
    field: &str,
    base_rate: Rate,
    base_delay: Duration,
) -> Option<ServiceSpec> {
    let before = ctx.errors.len();
    let mut out = Vec::with_capacity(steps.len());
    let mut last: Option<Duration> = None;
    for (k, s) in steps.iter().enumerate() {
        let f = format!("{field}[{k}]");
        let at = s.at.get_ref().0;
        if last.is_some_and(|l| at <= l) {
            let msg = format!(
                "steps must be in time order: {at} is not after the previous step's {}",
                last.unwrap_or_default()
            );
            ctx.err(Some(s.at.span()), join(&f, "at"), msg);
        }
        last = Some(at);
        let r = s
            .rate
            .as_ref()
            .and_then(|r| rate(ctx, r, &join(&f, "rate")));
        if let Some(p) = &s.loss {
            if !(0.0..=1.0).contains(p.get_ref()) {
                let msg = format!("a probability in [0, 1]; got {}", p.get_ref());
                ctx.err(Some(p.span()), join(&f, "loss"), msg);
            }
        }
        if s.rate.is_none() && s.delay.is_none() && s.loss.is_none() {
            let msg = "a step changes something: give `rate`, `delay` or `loss`";
            ctx.err(Some(s.at.span()), f.clone(), msg);
        }
        if s.ramp == Some(true) && k == 0 && at == Duration::ZERO {
            let msg = "a ramp at 0s has nothing to ramp from";
            ctx.err(Some(s.at.span()), join(&f, "ramp"), msg);
        }
        out.push(Step {
            at,
            rate: r,
            delay: s.delay.as_ref().map(|d| d.get_ref().0),
            loss: s.loss.as_ref().map(|p| *p.get_ref()),
            ramp: s.ramp.unwrap_or(false),
        });
    }
    if steps.is_empty() {
        ctx.err(None, field, "an empty schedule: give at least one step");
    }
    (ctx.errors.len() == before)
        .then(|| ServiceSpec::Schedule(Arc::new(Schedule::new(base_rate, base_delay, &out))))
}

/// Reads the trace file `path` names (relative to the scenario's
/// directory); a bad file is refused naming it and the line.
pub(crate) fn trace(ctx: &mut Ctx, path: &S<String>, field: &str) -> Option<Arc<MmTrace>> {
    let dir = Path::new(ctx.origin())
        .parent()
        .unwrap_or(Path::new(""))
        .to_path_buf();
    let file = dir.join(path.get_ref());
    let shown = file.display().to_string();
    let text = match super::read::read_text(&file, "trace file") {
        Ok(t) => t,
        Err(e) => {
            ctx.err(Some(path.span()), field, e);
            return None;
        }
    };
    match MmTrace::parse(&text) {
        Ok(t) => Some(Arc::new(t)),
        Err(e) => {
            let at = match e.line {
                0 => shown,
                n => format!("{shown}:{n}"),
            };
            ctx.err(Some(path.span()), field, format!("{at}: {}", e.message));
            None
        }
    }
}

/// A trace's mean rate over one repetition.
pub(crate) fn mean_rate(t: &MmTrace) -> Rate {
    Rate::from_bytes_over(t.opportunities() * OPPORTUNITY_BYTES, t.period())
}

/// The LEO preset with the overrides of `[link.leo]` (at `field`).
pub(crate) fn leo(ctx: &mut Ctx, o: Option<&raw::Leo>, field: &str) -> Option<LeoParams> {
    let before = ctx.errors.len();
    let mut p = LeoParams::STARLINK;
    let Some(o) = o else { return Some(p) };
    let dur = |v: &Option<S<raw::Dur>>, d: &mut Duration| {
        if let Some(v) = v {
            *d = v.get_ref().0;
        }
    };
    dur(&o.interval, &mut p.interval);
    dur(&o.phase, &mut p.phase);
    dur(&o.min_delay, &mut p.min_delay);
    dur(&o.max_delay, &mut p.max_delay);
    dur(&o.burst_before, &mut p.burst_before);
    dur(&o.burst_after, &mut p.burst_after);
    for (v, name, slot) in [
        (&o.burst_loss, "burst_loss", &mut p.burst_loss),
        (&o.loss, "loss", &mut p.loss),
    ] {
        if let Some(v) = v {
            if (0.0..=1.0).contains(v.get_ref()) {
                *slot = *v.get_ref();
            } else {
                let msg = format!("a probability in [0, 1]; got {}", v.get_ref());
                ctx.err(Some(v.span()), join(field, name), msg);
            }
        }
    }
    let span = |v: &Option<S<raw::Dur>>| v.as_ref().map(|v| v.span());
    if p.interval == Duration::ZERO {
        ctx.err(
            span(&o.interval),
            join(field, "interval"),
            "must be positive",
        );
    }
    if p.min_delay > p.max_delay {
        let msg = format!(
            "min_delay {} is above max_delay {}",
            p.min_delay, p.max_delay
        );
        ctx.err(
            span(&o.min_delay).or(span(&o.max_delay)),
            join(field, "min_delay"),
            msg,
        );
    }
    if p.interval > Duration::ZERO && p.burst_before + p.burst_after > p.interval {
        let msg = format!(
            "burst_before + burst_after ({}) is longer than the interval ({})",
            p.burst_before + p.burst_after,
            p.interval
        );
        ctx.err(span(&o.burst_after), join(field, "burst_after"), msg);
    }
    (ctx.errors.len() == before).then_some(p)
}
