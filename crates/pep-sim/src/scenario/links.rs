//! `[[link]]` tables: endpoints, names, and per-direction values.
//!
//! Rate, delay, queue and loss given on the link apply to both directions;
//! `[link.forward]` / `[link.reverse]` override them for one direction (the
//! queue and loss tables refine the link's by the `kind` layering rule).

use std::collections::BTreeMap;
use std::ops::Range;

use pep_core::{Duration, Rate};
use toml::{Spanned, Table};

use super::error::{join, Ctx};
use super::model::{LinkDirSpec, LinkSpec, LossSpec, MediumSpec, QueueSpec};
use super::raw;
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

        let mut missing: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        let mut dir = |ctx: &mut Ctx, d: &Option<raw::LinkDir>, dname: &'static str| {
            let dp = join(&p, dname);
            let empty = raw::LinkDir::default();
            let d = d.as_ref().unwrap_or(&empty);
            let r: Option<Option<Rate>> = match &d.rate {
                Some(r) => Some(rate(ctx, r, &join(&dp, "rate"))),
                None => rate_all,
            };
            let delay: Option<Duration> = d.delay.as_ref().map(|d| d.get_ref().0).or(delay_all);
            if r.is_none() {
                missing.entry("rate").or_default().push(dname);
            }
            if delay.is_none() {
                missing.entry("delay").or_default().push(dname);
            }
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
    between: &Spanned<Vec<Spanned<String>>>,
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
