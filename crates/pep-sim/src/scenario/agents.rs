//! `[[agent]]` tables: the common fields (`kind`, `node` or `nodes`,
//! `flows`, `name`) are read here; the rest goes to the kind, which checks
//! it by building the agent once against the scenario.

use std::ops::Range;

use toml::{Table, Value};

use super::error::{join, Ctx};
use super::model::AgentSpec;
use super::raw;
use super::tagged::FlowNames;
use super::Scenario;
use crate::agent::{self, AgentKind, AgentSite, Sits, PRIVATE_FLOWS_PER_AGENT};

pub(crate) fn agents(
    doc: &raw::Doc,
    ctx: &mut Ctx,
    sc: &Scenario,
    flows: &FlowNames,
) -> Vec<AgentSpec> {
    let mut out: Vec<AgentSpec> = Vec::new();
    for (i, located) in doc.agents.iter().enumerate() {
        let field = format!("agent[{i}]");
        let span = located.span.clone();
        let Value::Table(t) = &located.value else {
            ctx.err(span, field, "expected a table");
            continue;
        };
        if let Some(spec) = one(ctx, t.clone(), &field, span, sc, flows, out.len()) {
            if let Some(clash) = out.iter().find(|a| a.name == spec.name) {
                let msg = format!(
                    "two agents are named {:?}; give one a different `name`",
                    clash.name
                );
                ctx.err(located.span.clone(), join(&field, "name"), msg);
                continue;
            }
            out.push(spec);
        }
    }
    // One agent per node: the packet order between two would be arbitrary.
    let mut owner = vec![None::<&str>; sc.nodes.len()];
    for (i, a) in out.iter().enumerate() {
        for &n in &a.nodes {
            if let Some(other) = owner[n] {
                let msg = format!(
                    "node {:?} already has agent {other:?}; a node carries one agent",
                    sc.nodes[n].name
                );
                ctx.err(doc.agents[i].span.clone(), format!("agent[{i}].node"), msg);
            }
            owner[n] = Some(&a.name);
        }
    }
    out
}

fn one(
    ctx: &mut Ctx,
    mut t: Table,
    field: &str,
    span: Option<Range<usize>>,
    sc: &Scenario,
    flows: &FlowNames,
    index: usize,
) -> Option<AgentSpec> {
    let names: Vec<&str> = agent::KINDS.iter().map(|k| k.name).collect();
    let kind_name = match t.remove("kind") {
        Some(Value::String(k)) => k,
        Some(_) | None => {
            let msg = format!(
                "missing or non-string `kind`; agent kinds are: {}",
                names.join(", ")
            );
            ctx.err(span, join(field, "kind"), msg);
            return None;
        }
    };
    let Some(kind) = agent::kind(&kind_name) else {
        let msg = format!(
            "unknown agent kind {kind_name:?}; agent kinds are: {}",
            names.join(", ")
        );
        ctx.err(span, join(field, "kind"), msg);
        return None;
    };

    let node_names = match (t.remove("node"), t.remove("nodes")) {
        (Some(Value::String(n)), None) => vec![n],
        (None, Some(Value::Array(a))) if a.iter().all(|v| v.is_str()) => a
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => {
            let msg = "give the node the agent sits on (node = \"r1\") or, for a kind on \
                       several nodes, nodes = [\"a\", \"b\"]";
            ctx.err(span, join(field, "node"), msg);
            return None;
        }
    };
    if node_names.len() != kind.nodes {
        let msg = format!(
            "agent kind {:?} sits on {} node(s), got {}",
            kind.name,
            kind.nodes,
            node_names.len()
        );
        ctx.err(span, join(field, "node"), msg);
        return None;
    }
    let mut nodes = Vec::new();
    for n in &node_names {
        let Some(i) = sc.node_index(n) else {
            let msg = format!("unknown node {n:?}");
            ctx.err(span, join(field, "node"), msg);
            return None;
        };
        nodes.push(i);
    }

    let listed = t.contains_key("flows");
    let flow_ids = match t.remove("flows") {
        None => (0..sc.flows.len()).collect(),
        Some(Value::Array(a)) => {
            let mut ids = Vec::new();
            for v in a {
                let Some(name) = v.as_str() else {
                    ctx.err(span, join(field, "flows"), "expected flow names");
                    return None;
                };
                if let Some(&i) = flows.by_name.get(name) {
                    ids.push(i);
                } else if let Some(&n) = flows.groups.get(name) {
                    ids.extend((0..n).map(|k| flows.by_name[&format!("{name}.{k}")]));
                } else {
                    ctx.err(span, join(field, "flows"), format!("unknown flow {name:?}"));
                    return None;
                }
            }
            ids.sort_unstable();
            ids.dedup();
            ids
        }
        Some(_) => {
            ctx.err(span, join(field, "flows"), "expected a list of flow names");
            return None;
        }
    };
    if flow_ids.is_empty() {
        let msg = "lists no flow: the agent would act on nothing";
        ctx.err(span, join(field, "flows"), msg);
        return None;
    }
    // Agents are written for one-way flows: a bidirectional flow's segments
    // carry data both ways.
    if let Some(f) = flow_ids
        .iter()
        .map(|&i| &sc.flows[i])
        .find(|f| f.reverse.is_some())
    {
        let msg = format!(
            "acts on flow {:?}, which is bidirectional (`reverse`): agents do not \
             support bidirectional flows yet; list the one-way flows in `flows`",
            f.name
        );
        ctx.err(span, join(field, "flows"), msg);
        return None;
    }
    let name = match t.remove("name") {
        None => format!("{}@{}", kind.name, node_names.join("+")),
        Some(Value::String(n)) if !n.trim().is_empty() => n,
        Some(_) => {
            ctx.err(span, join(field, "name"), "expected a non-empty string");
            return None;
        }
    };

    let site = AgentSite {
        scenario: sc,
        nodes: &nodes,
        flows: &flow_ids,
        private_flows: private_flows(sc.flows.len(), index),
        name: &name,
    };
    if let Err(e) = (kind.make)(&t, &site) {
        ctx.err(span, join(field, &e.field), e.message);
        return None;
    }
    // After the kind's own checks, which name a mistyped field more
    // precisely than "off the path" would.
    if let Err((at, msg)) = check_on_path(sc, kind, &nodes, &flow_ids, listed) {
        ctx.err(span, join(field, at), msg);
        return None;
    }
    Some(AgentSpec {
        name,
        kind: kind.name.to_string(),
        nodes,
        flows: flow_ids,
        params: t,
    })
}

/// An agent acts only on packets that reach its node(s): each flow listed
/// in `flows` must pass them (and, with no list, at least one flow must),
/// or the run would silently carry no traffic through the PEP.
fn check_on_path(
    sc: &Scenario,
    kind: &AgentKind,
    nodes: &[usize],
    flows: &[usize],
    listed: bool,
) -> Result<(), (&'static str, String)> {
    let name = |n: usize| format!("{:?}", sc.nodes[n].name);
    // "no flow {none}", "flow "f1" {not}".
    let (none, not) = match (nodes, kind.sits) {
        ([n], Sits::AtEnds) => (
            format!("starts or ends at node {}", name(*n)),
            format!("neither starts nor ends at node {}", name(*n)),
        ),
        ([n], sits) => {
            let place = if sits == Sits::Between {
                "between its ends"
            } else {
                "before its destination"
            };
            let at = format!("node {} {place}", name(*n));
            (format!("passes {at}"), format!("does not pass {at}"))
        }
        _ => {
            let all: Vec<String> = nodes.iter().map(|&n| name(n)).collect();
            let at = format!("{} in that order, between its ends", all.join(" and then "));
            (format!("passes {at}"), format!("does not pass {at}"))
        }
    };
    if listed {
        if let Some(&f) = flows.iter().find(|&&f| !passes(sc, kind, nodes, f)) {
            let msg = format!(
                "flow {:?} {not} (its path: {})",
                sc.flows[f].name,
                route_text(sc, f)
            );
            return Err(("flows", msg));
        }
    } else if !flows.iter().any(|&f| passes(sc, kind, nodes, f)) {
        let paths: Vec<String> = flows
            .iter()
            .take(3)
            .map(|&f| format!("{}: {}", sc.flows[f].name, route_text(sc, f)))
            .collect();
        let more = if flows.len() > 3 { ", ..." } else { "" };
        let msg = format!("no flow {none} (flows go {}{more})", paths.join("; "));
        return Err(("node", msg));
    }
    Ok(())
}

/// Whether `nodes` lie where the kind acts on flow `f`'s data path (in
/// order), or, for one node between the ends, on its ACKs' path (which may
/// differ where routes tie).
fn passes(sc: &Scenario, kind: &AgentKind, nodes: &[usize], f: usize) -> bool {
    let (src, dst) = (sc.flows[f].src, sc.flows[f].dst);
    if kind.sits == Sits::AtEnds {
        return nodes.iter().all(|&n| n == src || n == dst);
    }
    let on = |path: Vec<usize>, at_first: bool| {
        if path.len() < 2 {
            return true; // no route: reported at the flow already
        }
        let inner = &path[usize::from(!at_first)..path.len() - 1];
        let mut from = 0;
        nodes
            .iter()
            .all(|n| match inner[from..].iter().position(|x| x == n) {
                Some(p) => {
                    from += p + 1;
                    true
                }
                None => false,
            })
    };
    let at_source = kind.sits == Sits::BeforeDestination;
    on(sc.route_nodes(src, dst), at_source)
        || (nodes.len() == 1 && on(sc.route_nodes(dst, src), false))
}

/// `a -> r1 -> b`: flow `f`'s data path by node names.
fn route_text(sc: &Scenario, f: usize) -> String {
    sc.nodes_text(&sc.route_nodes(sc.flows[f].src, sc.flows[f].dst))
}

/// Flow ids agent number `index` may use for its own connections.
pub(crate) fn private_flows(n_flows: usize, index: usize) -> Range<u32> {
    let base = n_flows as u32 + index as u32 * PRIVATE_FLOWS_PER_AGENT;
    base..base + PRIVATE_FLOWS_PER_AGENT
}
