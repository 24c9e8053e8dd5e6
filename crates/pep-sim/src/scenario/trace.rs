//! `[[trace]]`: pcap captures of a link or one direction of it.
//!
//! `link` names a direction as outputs print it (`"r1->r2"`), or a link by
//! its name (`"bottleneck"`, or the default `"r1-r2"`) with `dir` choosing
//! `"forward"`, `"reverse"` or `"both"` (the default).

use std::collections::BTreeSet;

use pep_wire::DEFAULT_SNAPLEN;

use super::error::Ctx;
use super::model::{Dir, LinkSpec, NodeSpec, TraceSpec};
use super::raw;

/// Smallest snaplen accepted: Ethernet + IPv4 + TCP without options.
pub const MIN_SNAPLEN: u32 = 54;

pub(crate) fn traces(
    doc: &raw::Doc,
    ctx: &mut Ctx,
    nodes: &[NodeSpec],
    links: &[Option<LinkSpec>],
) -> Vec<TraceSpec> {
    let mut out = Vec::new();
    let mut files = BTreeSet::new();
    for (i, t) in doc.traces.iter().enumerate() {
        let field = |f: &str| format!("trace[{i}].{f}");
        let Some((link, dirs)) = target(ctx, t, nodes, links, &field("link")) else {
            continue;
        };
        let snaplen = match &t.snaplen {
            None => DEFAULT_SNAPLEN,
            Some(s) => {
                let v = s.get_ref().0;
                if !(u64::from(MIN_SNAPLEN)..=u64::from(DEFAULT_SNAPLEN)).contains(&v) {
                    let msg = format!(
                        "snaplen must be within {MIN_SNAPLEN} B (Ethernet + IPv4 + TCP headers) \
                         and {DEFAULT_SNAPLEN} B, got {v} B"
                    );
                    ctx.err(Some(s.span()), field("snaplen"), msg);
                }
                v.clamp(u64::from(MIN_SNAPLEN), u64::from(DEFAULT_SNAPLEN)) as u32
            }
        };
        let file = match &t.file {
            Some(f) => {
                let name = f.get_ref();
                let ok = !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                    && !name.starts_with('.');
                if !ok {
                    let msg = format!(
                        "invalid file name {name:?}: a plain name (letters, digits, '_', '-', \
                         '.'), written in the run's output directory"
                    );
                    ctx.err(Some(f.span()), field("file"), msg);
                } else if !name.ends_with(".pcap") {
                    // The run's own outputs (summary.json, goodput.csv, ...)
                    // share the directory: a capture must not overwrite them.
                    let msg = format!(
                        "invalid file name {name:?}: a capture's file name must end in \
                         \".pcap\" (the run's other outputs share its directory)"
                    );
                    ctx.err(Some(f.span()), field("file"), msg);
                }
                name.clone()
            }
            None => default_file(nodes, &links[link], &dirs),
        };
        if !files.insert(file.clone()) {
            let span = t.file.as_ref().map_or(t.link.span(), |f| f.span());
            let msg = format!("two traces write {file:?}: give one a `file`");
            ctx.err(Some(span), field("file"), msg);
        }
        out.push(TraceSpec {
            link,
            dirs,
            snaplen,
            file,
        });
    }
    out
}

/// `"a-to-b.pcap"` for one direction, `"<link name>.pcap"` for both.
fn default_file(nodes: &[NodeSpec], link: &Option<LinkSpec>, dirs: &[Dir]) -> String {
    let Some(l) = link else {
        return String::new();
    };
    match dirs {
        [d] => format!(
            "{}-to-{}.pcap",
            nodes[l.from_node(*d)].name,
            nodes[l.to_node(*d)].name
        ),
        _ => format!("{}.pcap", l.name),
    }
}

fn target(
    ctx: &mut Ctx,
    t: &raw::Trace,
    nodes: &[NodeSpec],
    links: &[Option<LinkSpec>],
    field: &str,
) -> Option<(usize, Vec<Dir>)> {
    let name = t.link.get_ref();
    let span = Some(t.link.span());
    let dir_field = field.replace(".link", ".dir");
    if let Some((a, b)) = name.split_once("->") {
        if let Some(d) = &t.dir {
            let msg = "`link` already names a direction (\"a->b\"): leave `dir` out";
            ctx.err(Some(d.span()), dir_field, msg);
        }
        let (a, b) = (a.trim(), b.trim());
        let idx = |n: &str| nodes.iter().position(|s| s.name == n);
        let (Some(ai), Some(bi)) = (idx(a), idx(b)) else {
            let unknown = if idx(a).is_none() { a } else { b };
            let known: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).take(12).collect();
            let msg = format!("unknown node {unknown:?}; nodes are: {}", known.join(", "));
            ctx.err(span, field, msg);
            return None;
        };
        let found: Vec<(usize, Dir)> = links
            .iter()
            .enumerate()
            .filter_map(|(i, l)| {
                let l = l.as_ref()?;
                [Dir::Forward, Dir::Reverse]
                    .into_iter()
                    .find(|&d| l.from_node(d) == ai && l.to_node(d) == bi)
                    .map(|d| (i, d))
            })
            .collect();
        return match found.as_slice() {
            [(i, d)] => Some((*i, vec![*d])),
            [] => {
                ctx.err(span, field, format!("no link joins {a:?} and {b:?}"));
                None
            }
            _ => {
                let names: Vec<&str> = found
                    .iter()
                    .filter_map(|(i, _)| links[*i].as_ref().map(|l| l.name.as_str()))
                    .collect();
                let msg = format!(
                    "several links join {a:?} and {b:?} ({}): name the link and give `dir`",
                    names.join(", ")
                );
                ctx.err(span, field, msg);
                None
            }
        };
    }
    let Some(i) = links
        .iter()
        .position(|l| l.as_ref().is_some_and(|l| &l.name == name))
    else {
        if links.iter().any(Option::is_none) {
            return None; // the link may be the one that failed to validate
        }
        let known: Vec<&str> = links
            .iter()
            .flatten()
            .map(|l| l.name.as_str())
            .take(12)
            .collect();
        let msg = format!(
            "unknown link {name:?}: write a link name ({}) or a direction such as \"a->b\"",
            known.join(", ")
        );
        ctx.err(span, field, msg);
        return None;
    };
    let dirs = match t.dir.as_ref().map(|d| d.get_ref().as_str()) {
        None | Some("both") => vec![Dir::Forward, Dir::Reverse],
        Some("forward") => vec![Dir::Forward],
        Some("reverse") => vec![Dir::Reverse],
        Some(other) => {
            let msg = format!("expected \"forward\", \"reverse\" or \"both\", got {other:?}");
            ctx.err(t.dir.as_ref().map(|d| d.span()), dir_field, msg);
            return None;
        }
    };
    Some((i, dirs))
}
