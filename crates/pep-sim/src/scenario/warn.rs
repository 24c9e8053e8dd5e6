//! Warnings: settings that are valid but do nothing, so that a run which
//! ignores them says so instead of quietly differing from what was meant.
//! Checked on a scenario that has passed every other check; never refused
//! (a long `sample` is how a lab test keeps its sampler quiet, say).
//!
//! `tcp.rack` without SACK recovery is checked in `validate.rs`, which
//! knows the layer each TCP setting came from.

use pep_core::queue::{QueueLimit, RedParams};

use super::error::{join, Ctx};
use super::links::written;
use super::model::{Dir, QueueSpec, Scenario};
use super::raw;

pub(crate) fn warn(doc: &raw::Doc, ctx: &mut Ctx, sc: &Scenario) {
    output(doc, ctx, sc);
    red(doc, ctx, sc);
    processing(doc, ctx, sc);
}

/// A sampling period or bin longer than the run: the first sample is at
/// 0s and the next would be after the end; the one bin is the whole run.
fn output(doc: &raw::Doc, ctx: &mut Ctx, sc: &Scenario) {
    let Some(o) = &doc.output else { return };
    let run = sc.duration;
    if let Some(s) = o.sample.as_ref().filter(|_| sc.output.sample > run) {
        let msg = format!(
            "{} is longer than the run ({run}): queues, cwnd and agents are sampled once, at \
             0s; use a sample of at most {run}",
            sc.output.sample
        );
        ctx.warn(Some(s.span()), "output.sample", msg);
    }
    if let Some(i) = o.interval.as_ref().filter(|_| sc.output.interval > run) {
        let msg = format!(
            "{} is longer than the run ({run}): goodput and link use get a single bin, the \
             whole run; use an interval of at most {run}",
            sc.output.interval
        );
        ctx.warn(Some(i.span()), "output.interval", msg);
    }
}

/// A RED queue whose `min_th` (written or automatic) the average queue
/// cannot reach before the queue is full: RED then never drops early and
/// is a DropTail queue.
fn red(doc: &raw::Doc, ctx: &mut Ctx, sc: &Scenario) {
    // What a packet limit holds in bytes, at most.
    let largest = sc
        .flows
        .iter()
        .map(|f| u64::from(f.tcp.mss) + u64::from(f.tcp.header))
        .max()
        .unwrap_or(0);
    let default_queue = doc.defaults.as_ref().and_then(|d| d.queue.as_ref());
    for (i, (l, spec)) in doc.links.iter().zip(&sc.links).enumerate() {
        for d in [Dir::Forward, Dir::Reverse] {
            let dir = spec.dir(d);
            let QueueSpec::Red(r) = &dir.queue else {
                continue;
            };
            let params = crate::build::red_params(r, dir.rate, dir.delay);
            let Some(why) = unreachable_min_th(&params, largest) else {
                continue;
            };
            let p = format!("link[{i}]");
            let (dname, raw_dir) = match d {
                Dir::Forward => ("forward", &l.forward),
                Dir::Reverse => ("reverse", &l.reverse),
            };
            let layers = [
                (
                    join(&join(&p, dname), "queue"),
                    raw_dir.as_ref().and_then(|x| x.queue.as_ref()),
                ),
                (join(&p, "queue"), l.queue.as_ref()),
                ("defaults.queue".to_string(), default_queue),
            ];
            // At the thresholds as written, else at the table that made
            // the queue RED.
            let key = if r.min_th.is_some() { "min_th" } else { "auto" };
            let Some((field, span)) = written(&layers, key)
                .map(|(f, s)| (join(&f, key), s))
                .or_else(|| {
                    let (f, v) = layers.iter().find(|(_, v)| v.is_some())?;
                    Some((f.clone(), v.and_then(|v| v.span.clone())))
                })
            else {
                continue;
            };
            let (from, to) = (
                &sc.nodes[spec.from_node(d)].name,
                &sc.nodes[spec.to_node(d)].name,
            );
            let (what, fix) = match r.min_th {
                Some(_) => ("min_th", "lower min_th or raise the limit"),
                None => ("the automatic min_th", "give min_th, or raise the limit"),
            };
            let msg = format!(
                "on link {:?} from {from:?} to {to:?}, {what} {why}: the average queue \
                 reaches it only when the queue is full, so RED never drops early and acts as \
                 DropTail; {fix}",
                spec.name
            );
            ctx.warn(span, field, msg);
        }
    }
}

/// How `min_th` is at or above the most the queue can hold, in the unit
/// of RED's average (packets, or bytes in bytes mode), if it is.
fn unreachable_min_th(p: &RedParams, largest: u64) -> Option<String> {
    let (min, mean) = (p.min_th, p.mean_pktsize);
    let th = min * f64::from(mean);
    let (m, t) = (show(min), show(th));
    match (p.bytes, p.limit) {
        (false, QueueLimit::Packets(n)) => {
            (min >= f64::from(n)).then(|| format!("({m}) is at or above the limit of {n} packets"))
        }
        (true, QueueLimit::Bytes(b)) => (th >= b as f64).then(|| {
            format!("({m} x mean_pktsize {mean}B = {t}B) is at or above the limit of {b}B")
        }),
        (true, QueueLimit::Packets(n)) => {
            let most = u64::from(n) * largest;
            (th >= most as f64).then(|| {
                format!(
                    "({m} x mean_pktsize {mean}B = {t}B) is at or above the most the queue \
                     holds, {n} packets of at most {largest}B (the largest packet a flow \
                     sends) = {most}B"
                )
            })
        }
        // Packets counted under a byte limit: only the smallest packet's
        // size bounds the count, and ACKs are small.
        (false, QueueLimit::Bytes(_)) => None,
    }
}

/// At most two decimals: automatic thresholds have many.
fn show(v: f64) -> String {
    (libm::round(v * 100.0) / 100.0).to_string()
}

/// A processing cost on a node where no flow starts or ends: the cost is
/// charged only to a flow endpoint's own packets (`Flow::src_cpu` and
/// `dst_cpu` in `build.rs`); forwarded packets and those an agent takes
/// never reach the node's processor.
fn processing(doc: &raw::Doc, ctx: &mut Ctx, sc: &Scenario) {
    let mut endpoint = vec![false; sc.nodes.len()];
    for f in &sc.flows {
        endpoint[f.src] = true;
        endpoint[f.dst] = true;
    }
    for (i, (n, raw_node)) in sc.nodes.iter().zip(&doc.nodes).enumerate() {
        if n.processing.is_none() || endpoint[i] {
            continue;
        }
        let agent = if sc.agents.iter().any(|a| a.nodes.contains(&i)) {
            ", nor to those its agent takes"
        } else {
            ""
        };
        let msg = format!(
            "no flow starts or ends at node {:?}: a processing cost applies only to the \
             packets a node sends or receives as a flow's endpoint, not to those it \
             forwards{agent}, so it does nothing here",
            n.name
        );
        // A table has no position of its own (see raw.rs): the node's name.
        ctx.warn(
            Some(raw_node.name.span()),
            format!("node[{i}].processing"),
            msg,
        );
    }
}
