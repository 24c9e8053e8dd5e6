//! `[[link]]` tables: endpoints, names, and per-direction values.
//!
//! Rate, delay, queue and loss given on the link apply to both directions;
//! `[link.forward]` / `[link.reverse]` override them for one direction (the
//! queue and loss tables refine the link's by the `kind` layering rule).
//! Once routes are known, [`check_on_paths`] checks scripted drops and byte
//! limits against the paths the flows' data takes.

use std::collections::BTreeMap;
use std::ops::Range;

use pep_core::link::service::ServiceSpec;
use pep_core::queue::QueueLimit;
use pep_core::{Duration, Rate};
use toml::{Table, Value};

use super::error::{join, Ctx};
use super::model::{
    Dir, LinkDirSpec, LinkSpec, LossSpec, MediumSpec, QueueSpec, Scenario, SourceSpec,
};
use super::raw;
use super::service;
use super::span::S;
use super::tagged::{self, FlowNames};
use super::validate::{check_name, rate, Nodes};

/// A layered tagged table and what it resolved to; `Err` once reported.
type Resolved<T> = Result<Option<(Table, T)>, ()>;

/// The links, `None` where invalid, and their endpoints for routing (an
/// out-of-range index where an endpoint is unknown, which routing ignores).
pub(crate) fn links(
    doc: &raw::Doc,
    ctx: &mut Ctx,
    nodes: &Nodes,
    default_queue: Option<&(Table, QueueSpec)>,
    flows: &FlowNames,
) -> (Vec<Option<LinkSpec>>, Vec<(usize, usize)>) {
    let mut out = Vec::new();
    let mut ends = Vec::new();
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    let default_queue: Resolved<QueueSpec> = default_queue.cloned().map(Some).ok_or(());
    for (i, l) in doc.links.iter().enumerate() {
        let p = format!("link[{i}]");
        let (a, b) = endpoints(ctx, nodes, &l.between, &join(&p, "between"));
        ends.push((a.unwrap_or(usize::MAX), b.unwrap_or(usize::MAX)));

        let name = match (&l.name, a, b) {
            (Some(n), _, _) => {
                let field = join(&p, "name");
                if check_name(ctx, n, &field) {
                    if let Some(first) = names.get(n.get_ref()) {
                        let msg = format!("duplicate link name {:?} (link[{first}])", n.get_ref());
                        ctx.err(Some(n.span()), field, msg);
                    }
                }
                n.get_ref().clone()
            }
            (None, Some(a), Some(b)) => {
                let auto = format!("{}-{}", nodes.specs[a].name, nodes.specs[b].name);
                // Parallel links get the index appended to stay distinct.
                if names.contains_key(&auto) {
                    format!("{auto}#{i}")
                } else {
                    auto
                }
            }
            _ => format!("link{i}"),
        };
        names.entry(name.clone()).or_insert(i);

        // Link-wide values, each checked once.
        let rate_all = l.rate.as_ref().map(|r| rate(ctx, r, &join(&p, "rate")));
        let delay_all = l.delay.as_ref().map(|d| d.get_ref().0);
        let queue = |c: &mut Ctx, t: Table, f: &str, s: Option<Range<usize>>| {
            tagged::queue(c, t, f, s, flows)
        };
        let queue_all = match &l.queue {
            Some(q) => resolve(ctx, default_queue.clone(), q, &join(&p, "queue"), queue),
            None => default_queue.clone(),
        };
        let medium = match &l.medium {
            Some(v) => resolve(ctx, Ok(None), v, &join(&p, "medium"), tagged::medium)
                .map(|m| m.map_or(MediumSpec::FullDuplex, |(_, m)| m)),
            None => Ok(MediumSpec::FullDuplex),
        };
        let loss_all = match &l.loss {
            Some(v) => resolve(ctx, Ok(None), v, &join(&p, "loss"), |c, t, f, s| {
                tagged::loss(c, t, f, s, flows)
            }),
            None => Ok(None),
        };

        // The LEO preset: `Some(Err(()))` once reported.
        let leo = l.preset.as_ref().map(|name| {
            if name.get_ref() != "leo" {
                let msg = format!("unknown preset {:?}; presets are: \"leo\"", name.get_ref());
                ctx.err(Some(name.span()), join(&p, "preset"), msg);
                return Err(());
            }
            service::leo(ctx, l.leo.as_ref(), &join(&p, "leo")).ok_or(())
        });
        if let (None, Some(_)) = (&leo, &l.leo) {
            let msg = "[link.leo] sets the LEO preset's values: add preset = \"leo\"";
            ctx.err(Some(l.between.span()), join(&p, "leo"), msg);
        }
        let mut missing: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        let mut dir = |ctx: &mut Ctx, d: &Option<raw::LinkDir>, dname: &'static str| {
            let dp = join(&p, dname);
            let empty = raw::LinkDir::default();
            let d = d.as_ref().unwrap_or(&empty);
            // A direction's own schedule or trace replaces the link's.
            let (sched, trace, sp) = if d.schedule.is_some() || d.trace.is_some() {
                (&d.schedule, &d.trace, dp.clone())
            } else {
                (&l.schedule, &l.trace, p.clone())
            };
            let given = [sched.is_some(), trace.is_some(), leo.is_some()];
            if given.iter().filter(|&&g| g).count() > 1 {
                let msg = "give one of `schedule`, `trace` and `preset` for a direction";
                ctx.err(Some(l.between.span()), sp.clone(), msg);
                return None;
            }
            let trace = match trace {
                Some(t) => {
                    let field = join(&sp, "trace");
                    let own = if sp == dp {
                        d.rate.is_some()
                    } else {
                        l.rate.is_some()
                    };
                    if own {
                        let msg = "the trace sets the rate: remove `rate` where `trace` is";
                        ctx.err(Some(t.span()), field.clone(), msg);
                    }
                    Some(service::trace(ctx, t, &field).ok_or(()))
                }
                None => None,
            };
            let r: Option<Option<Rate>> = match (&trace, &leo, &d.rate) {
                (Some(t), _, _) => Some(t.as_ref().ok().map(|t| service::mean_rate(t))),
                (_, _, Some(r)) => Some(rate(ctx, r, &join(&dp, "rate"))),
                (_, Some(_), None) if rate_all.is_none() => Some(Some(if dname == "forward" {
                    service::LEO_DOWN
                } else {
                    service::LEO_UP
                })),
                _ => rate_all,
            };
            let mut delay: Option<Duration> = d.delay.as_ref().map(|d| d.get_ref().0).or(delay_all);
            if let Some(leo) = &leo {
                if delay.is_some() {
                    let msg = "the LEO preset sets the delay: change leo.min_delay and \
                               leo.max_delay instead";
                    ctx.err(Some(l.between.span()), join(&dp, "delay"), msg);
                }
                delay = leo.as_ref().ok().map(|p| p.min_delay);
            }
            if r.is_none() {
                missing.entry("rate").or_default().push(dname);
            }
            if delay.is_none() && leo.is_none() {
                missing.entry("delay").or_default().push(dname);
            }
            let service = match (sched, trace, &leo) {
                (Some(steps), _, _) => {
                    let (Some(Some(r)), Some(dl)) = (r, delay) else {
                        return None;
                    };
                    Some(service::schedule(
                        ctx,
                        steps,
                        &join(&sp, "schedule"),
                        r,
                        dl,
                    )?)
                }
                (_, Some(t), _) => Some(ServiceSpec::Trace(t.ok()?)),
                (_, _, Some(p)) => Some(ServiceSpec::Leo(*p.as_ref().ok()?)),
                _ => None,
            };
            let queue = match &d.queue {
                Some(q) => resolve(ctx, queue_all.clone(), q, &join(&dp, "queue"), queue),
                None => queue_all.clone(),
            };
            let loss = match &d.loss {
                Some(v) => resolve(
                    ctx,
                    loss_all.clone(),
                    v,
                    &join(&dp, "loss"),
                    |c, t, f, s| tagged::loss(c, t, f, s, flows),
                ),
                None => loss_all.clone(),
            };
            Some(LinkDirSpec {
                rate: r??,
                delay: delay?,
                queue: queue.ok()??.1,
                loss: loss.ok()?.map_or(LossSpec::None, |(_, l)| l),
                service,
            })
        };
        let forward = dir(ctx, &l.forward, "forward");
        let reverse = dir(ctx, &l.reverse, "reverse");
        for (field, dirs) in missing {
            let msg = if dirs.len() == 2 {
                format!("missing field `{field}`")
            } else {
                format!(
                    "missing field `{field}` for the {0} direction \
                     (give it on the link or in [link.{0}])",
                    dirs[0]
                )
            };
            ctx.err(Some(l.between.span()), join(&p, field), msg);
        }

        let served = |d: &Option<LinkDirSpec>| d.as_ref().is_some_and(|d| d.service.is_some());
        if matches!(medium, Ok(MediumSpec::HalfDuplex { .. }))
            && (served(&forward) || served(&reverse))
        {
            let msg = "a half-duplex medium has one fixed rate: no schedule, trace or preset";
            let span = l.medium.as_ref().and_then(|m| m.span.clone());
            ctx.err(span, join(&p, "medium"), msg);
        }
        if let (Ok(MediumSpec::HalfDuplex { .. }), Some(f), Some(r)) = (&medium, &forward, &reverse)
        {
            if f.rate != r.rate {
                let msg = format!(
                    "a half-duplex medium has one rate, but forward is {} and reverse {}",
                    f.rate, r.rate
                );
                let span = l.medium.as_ref().and_then(|m| m.span.clone());
                ctx.err(span, join(&p, "medium"), msg);
            }
        }

        out.push(match (a, b, forward, reverse, medium) {
            (Some(a), Some(b), Some(forward), Some(reverse), Ok(medium)) if a != b => {
                Some(LinkSpec {
                    name,
                    a,
                    b,
                    forward,
                    reverse,
                    medium,
                })
            }
            _ => None,
        });
    }
    (out, ends)
}

fn endpoints(
    ctx: &mut Ctx,
    nodes: &Nodes,
    between: &S<Vec<S<String>>>,
    field: &str,
) -> (Option<usize>, Option<usize>) {
    let [a, b] = between.get_ref().as_slice() else {
        let n = between.get_ref().len();
        let msg = format!("expected two node names, like [\"sender\", \"r1\"]; got {n}");
        ctx.err(Some(between.span()), field, msg);
        return (None, None);
    };
    let ia = nodes.lookup(ctx, a, &format!("{field}[0]"));
    let ib = nodes.lookup(ctx, b, &format!("{field}[1]"));
    if ia.is_some() && ia == ib {
        let msg = format!(
            "a link must join two different nodes; both ends are {:?}",
            a.get_ref()
        );
        ctx.err(Some(b.span()), format!("{field}[1]"), msg);
    }
    (ia, ib)
}

/// Lays the written tagged table `v` on `base` and resolves it with `read`.
fn resolve<T>(
    ctx: &mut Ctx,
    base: Resolved<T>,
    v: &raw::Located,
    field: &str,
    read: impl FnOnce(&mut Ctx, Table, &str, Option<Range<usize>>) -> Option<T>,
) -> Resolved<T> {
    // A broken lower layer was reported already; don't pile on.
    let base = base?;
    let over = tagged::normalize(ctx, &v.value, field, v.span.clone()).ok_or(())?;
    let merged = tagged::layer(base.as_ref().map(|(t, _)| t), &over);
    let spec = read(ctx, merged.clone(), field, v.span.clone()).ok_or(())?;
    Ok(Some((merged, spec)))
}

/// TCP's sequence space: a scripted drop's segment must start below this
/// byte offset, or its 32-bit sequence number would wrap onto an earlier
/// segment's.
const SEQ_SPACE: u128 = 1 << 32;

/// The checks that need routes, run on a scenario otherwise valid: a
/// scripted drop must name segments within TCP's sequence space and sit on
/// a link direction its flow's data crosses (elsewhere it drops nothing),
/// and a queue limited in bytes must hold one full data packet of each flow
/// whose data crosses it (or it drops them all). Returns whether all pass.
pub(crate) fn check_on_paths(doc: &raw::Doc, ctx: &mut Ctx, sc: &Scenario) -> bool {
    let before = ctx.errors.len();
    // Most scenarios have neither: no paths to walk for them.
    let applies =
        |d: &LinkDirSpec| matches!(d.loss, LossSpec::Drop { .. }) || byte_limit(&d.queue).is_some();
    if !sc
        .links
        .iter()
        .any(|l| applies(&l.forward) || applies(&l.reverse))
    {
        return true;
    }
    let crossing = data_crossing(sc);
    // A table written once (on the link, or in [defaults.queue]) is
    // reported once.
    let mut reported: Vec<String> = Vec::new();
    let default_queue = doc.defaults.as_ref().and_then(|d| d.queue.as_ref());
    for (i, (l, spec)) in doc.links.iter().zip(&sc.links).enumerate() {
        let p = format!("link[{i}]");
        // Scripted drops by the table that names their flow (the link's
        // applies to each direction without its own).
        let mut drops: Vec<WrittenDrop> = Vec::new();
        for d in [Dir::Forward, Dir::Reverse] {
            let dname = dir_name(d);
            let dir = if d == Dir::Forward {
                &l.forward
            } else {
                &l.reverse
            };
            let dir = dir.as_ref();
            let port = i * 2 + usize::from(d == Dir::Reverse);
            let dp = join(&p, dname);

            if let LossSpec::Drop { flow, segments } = &spec.dir(d).loss {
                let layers = [
                    (join(&dp, "loss"), dir.and_then(|x| x.loss.as_ref())),
                    (join(&p, "loss"), l.loss.as_ref()),
                ];
                if let Some((field, span)) = written(&layers, "segments") {
                    let mss = sc.flows[*flow].tcp.mss;
                    if !reported.contains(&field) {
                        if let Some(msg) = beyond_seq_space(segments, mss, &field) {
                            ctx.err(span, msg.0, msg.1);
                            reported.push(field);
                        }
                    }
                }
                if let Some((field, span)) = written(&layers, "flow") {
                    let crossed = crossing[port].iter().any(|&(f, _)| f == *flow);
                    match drops.iter_mut().find(|x| x.field == field) {
                        Some(x) => {
                            x.dirs.push(d);
                            x.crossed |= crossed;
                        }
                        None => drops.push(WrittenDrop {
                            field,
                            span,
                            flow: *flow,
                            dirs: vec![d],
                            crossed,
                        }),
                    }
                }
            }

            if let Some(limit) = byte_limit(&spec.dir(d).queue) {
                let too_big = crossing[port]
                    .iter()
                    .map(|&(f, back)| (f, data_packet(sc, f, back)))
                    .find(|(_, (_, len))| *len > limit);
                let layers = [
                    (join(&dp, "queue"), dir.and_then(|x| x.queue.as_ref())),
                    (join(&p, "queue"), l.queue.as_ref()),
                    ("defaults.queue".to_string(), default_queue),
                ];
                if let (Some((f, (what, len))), Some((field, span))) =
                    (too_big, written(&layers, "limit"))
                {
                    let field = join(&field, "limit");
                    if !reported.contains(&field) {
                        let (from, to) = ends(sc, spec, d);
                        let msg = format!(
                            "limit {limit}B cannot hold one {len}B packet of flow {:?} ({what}), \
                             whose data crosses link {:?} from {from:?} to {to:?}",
                            sc.flows[f].name, spec.name
                        );
                        ctx.err(span, field.clone(), msg);
                        reported.push(field);
                    }
                }
            }
        }
        for w in drops.into_iter().filter(|w| !w.crossed) {
            let name = &sc.flows[w.flow].name;
            let path = data_path_text(sc, w.flow);
            let msg = match w.dirs.as_slice() {
                [d] => {
                    let (from, to) = ends(sc, spec, *d);
                    format!(
                        "flow {name:?} sends no data over link {:?} from {from:?} to {to:?}, \
                         so the drop would never match (its data goes {path})",
                        spec.name
                    )
                }
                _ => format!(
                    "no data of flow {name:?} crosses link {:?}, so the drop would never \
                     match (its data goes {path})",
                    spec.name
                ),
            };
            ctx.err(w.span, join(&w.field, "flow"), msg);
        }
    }
    ctx.errors.len() == before
}

/// A scripted drop as written: the loss table naming its flow, and the
/// directions it applies to.
struct WrittenDrop {
    field: String,
    span: Option<Range<usize>>,
    flow: usize,
    dirs: Vec<Dir>,
    /// The flow's data crosses one of `dirs`.
    crossed: bool,
}

fn dir_name(d: Dir) -> &'static str {
    match d {
        Dir::Forward => "forward",
        Dir::Reverse => "reverse",
    }
}

/// The names of the nodes direction `d` of `link` runs from and to.
fn ends<'s>(sc: &'s Scenario, link: &LinkSpec, d: Dir) -> (&'s str, &'s str) {
    let name = |n: usize| sc.nodes[n].name.as_str();
    (name(link.from_node(d)), name(link.to_node(d)))
}

/// For each port (`link * 2`, `+ 1` for reverse), the flows whose data
/// crosses it, each with whether that is its reverse data (a bidirectional
/// flow's, sent from `to` back to `from`).
fn data_crossing(sc: &Scenario) -> Vec<Vec<(usize, bool)>> {
    let mut out = vec![Vec::new(); sc.links.len() * 2];
    for (f, flow) in sc.flows.iter().enumerate() {
        let mut ways = vec![(flow.src, flow.dst, false)];
        if flow.reverse.is_some() {
            ways.push((flow.dst, flow.src, true));
        }
        for (src, dst, back) in ways {
            for (l, d) in sc.routes.path(src, dst).unwrap_or_default() {
                out[l * 2 + usize::from(d == Dir::Reverse)].push((f, back));
            }
        }
    }
    out
}

/// `a -> r -> b`, and `, and back b -> r -> a` for a bidirectional flow.
fn data_path_text(sc: &Scenario, f: usize) -> String {
    let flow = &sc.flows[f];
    let text = |src: usize, dst: usize| sc.nodes_text(&sc.route_nodes(src, dst));
    match flow.reverse {
        None => text(flow.src, flow.dst),
        Some(_) => format!(
            "{}, and back {}",
            text(flow.src, flow.dst),
            text(flow.dst, flow.src)
        ),
    }
}

/// The largest data packet flow `f` sends (its reverse data if `back`):
/// what it is made of, and its length on the wire, as the sender builds it
/// (payload + `tcp.header`, `Segment::wire_len`).
fn data_packet(sc: &Scenario, f: usize, back: bool) -> (String, u64) {
    let flow = &sc.flows[f];
    let (mss, hdr) = (u64::from(flow.tcp.mss), u64::from(flow.tcp.header));
    let source = if back {
        flow.reverse.as_ref()
    } else {
        Some(&flow.source)
    };
    match source {
        Some(SourceSpec::Finite { bytes }) if *bytes < mss => (
            format!("all its {bytes}B of data + {hdr}B header"),
            bytes + hdr,
        ),
        _ => (format!("mss {mss}B + {hdr}B header"), mss + hdr),
    }
}

/// The byte limit each band (or the whole queue) of `q` has, if in bytes.
fn byte_limit(q: &QueueSpec) -> Option<u64> {
    let limit = match q {
        QueueSpec::DropTail { limit }
        | QueueSpec::Priority { limit, .. }
        | QueueSpec::TwoClass { limit, .. } => *limit,
        QueueSpec::Red(r) => r.limit,
        QueueSpec::Sad { inner, .. } => return byte_limit(inner),
    };
    match limit {
        QueueLimit::Bytes(b) => Some(b),
        QueueLimit::Packets(_) => None,
    }
}

/// The field and span of the first layer (highest first) that writes `key`
/// in its table. Layering keeps a lower layer's key only where no layer
/// above replaced the kind, so a resolved value came from this one.
pub(crate) fn written(
    layers: &[(String, Option<&raw::Located>)],
    key: &str,
) -> Option<(String, Option<Range<usize>>)> {
    layers.iter().find_map(|(field, v)| match v {
        Some(v) if matches!(&v.value, Value::Table(t) if t.contains_key(key)) => {
            Some((field.clone(), v.span.clone()))
        }
        _ => None,
    })
}

/// `(field, message)` for the first of `segments` that starts at or past
/// 2^32 bytes into the flow, whose sequence number would wrap.
fn beyond_seq_space(segments: &[u64], mss: u32, field: &str) -> Option<(String, String)> {
    let (k, &n) = segments
        .iter()
        .enumerate()
        .find(|(_, &n)| u128::from(n.saturating_sub(1)) * u128::from(mss) >= SEQ_SPACE)?;
    let last = (SEQ_SPACE - 1) / u128::from(mss) + 1;
    let msg = format!(
        "segment {n} starts at byte offset ({n} - 1) x {mss}B = {}, beyond TCP's 32-bit \
         sequence space (2^32 bytes): its sequence number would wrap onto an earlier \
         segment's (with mss {mss}B, segments go up to {last})",
        u128::from(n - 1) * u128::from(mss)
    );
    Some((format!("{field}.segments[{k}]"), msg))
}
