//! From the document as written to the validated model: resolve names to
//! indices, layer defaults, expand `count`, check everything, compute routes.
//!
//! Checks report into a [`Ctx`] and carry on where they can, so one run
//! lists every independent problem.

use std::collections::BTreeMap;
use std::ops::Range;

use pep_core::host::HostCost;
use pep_core::queue::QueueLimit;
use pep_core::{Duration, Rate};
use toml::{Table, Value};

use super::error::{join, Ctx};
use super::links;
use super::model::{
    AckSpec, CcKind, CutSpec, FlowSpec, MediumSpec, NodeKind, NodeSpec, OutputSpec, QueueSpec,
    RecoveryKind, Scenario, Series, SinkSpec, SourceSpec, TcpSpec,
};
use super::raw;
use super::span::S;
use super::tagged::{self, FlowNames};
use crate::units::{fmt_bytes, positive_duration};
use pep_model::route::Routes;

/// Most flows a scenario may expand to (a guard against `count = 4e9`):
/// ten million, past what memory holds at a few kB per flow.
pub const MAX_FLOWS: usize = 10_000_000;

/// TCP's largest window, 65535 x 2^14 bytes (window scale 14, RFC 7323):
/// the cap on `sink.rwnd` and on `init_cwnd x mss`. The sender's 32-bit
/// sequence space cannot carry a window near 2^32.
pub const MAX_WINDOW: u32 = 65_535 << 14;

/// Largest MSS: an IPv4 packet of 65535 B less 40 B of IPv4 and TCP headers.
pub const MAX_MSS: u32 = 65_535 - 40;

/// Shortest `initial_rto` and `max_rto`: below this the retransmission
/// timer fires so often that a run only grows its event queue.
pub const MIN_RTO_BOUND: Duration = Duration::from_millis(1);

/// Most rows an output series may have per flow: `duration / interval` and
/// `duration / sample` are capped, so a typo such as `sample = "1ns"`
/// cannot fill the memory.
pub const MAX_OUTPUT_ROWS: u64 = 10_000_000;

/// Most rows of all series together (see `total_rows`): about 1.6 GB
/// while the run holds them.
pub const MAX_TOTAL_ROWS: u64 = 40_000_000;

/// Longest run: 2^63 ns, so that the run's end plus one sampling period
/// (at most the run) still fits the 64-bit clock.
pub const MAX_DURATION: Duration = Duration(1 << 63);

/// Shortest delay (in the shorter direction) of a link `scenario.cut` may
/// name: the two threads meet once per delay, so less only costs time.
pub const MIN_CUT_DELAY: Duration = Duration::from_millis(1);

pub(crate) fn validate(doc: &raw::Doc, ctx: &mut Ctx) -> Option<Scenario> {
    let h = &doc.scenario;
    let name = h.name.get_ref().clone();
    if name.trim().is_empty() {
        ctx.err(Some(h.name.span()), "scenario.name", "must not be empty");
    } else if !super::is_plain_name(&name) {
        let msg = format!(
            "invalid name {name:?}: the name is the default output directory out/<name>, \
             so it must be one plain path component (no '/', '\\' or control characters, \
             not \".\" or \"..\")"
        );
        ctx.err(Some(h.name.span()), "scenario.name", msg);
    }
    let duration = h.duration.get_ref().0;
    if let Err(e) = positive_duration(duration) {
        ctx.err(Some(h.duration.span()), "scenario.duration", e.message());
    } else if duration > MAX_DURATION {
        // Later than this, the periodic samples' next times saturate at the
        // clock's end and fire forever.
        let msg = format!("{duration} is longer than {MAX_DURATION} (about 292 years)");
        ctx.err(Some(h.duration.span()), "scenario.duration", msg);
    }

    let nodes = nodes(doc, ctx);
    let mut base = defaults(doc, ctx);
    let (flows, names, endpoints) = flows(doc, ctx, &nodes, &base, duration);
    // After the flows: a priority queue may name them.
    default_queue(doc, ctx, &mut base, &names);
    let (links, ends) = links::links(doc, ctx, &nodes, base.queue.as_ref(), &names);

    let kinds: Vec<NodeKind> = nodes.specs.iter().map(|n| n.kind).collect();
    let routes = Routes::compute(&kinds, &ends);
    for (field, span, src, dst) in endpoints {
        if routes.next_hop(src, dst).is_none() {
            let msg = format!(
                "node {:?} is unreachable from {:?} (only routers forward: is a link \
                 missing, or a node on the way declared as a host?)",
                nodes.specs[dst].name, nodes.specs[src].name
            );
            ctx.err(Some(span), field, msg);
        }
    }
    let output = output(doc, ctx, duration, h.duration.span());
    // At the output's interval or sample if given, else at the duration.
    let rows_at = doc
        .output
        .as_ref()
        .and_then(|o| o.interval.as_ref().or(o.sample.as_ref()))
        .map_or(h.duration.span(), |d| d.span());
    total_rows(
        ctx,
        &output,
        duration,
        (flows.len(), 2 * links.len()),
        rows_at,
    );
    let traces = super::trace::traces(doc, ctx, &nodes.specs, &links);
    // A capture writes each segment's TCP options (SACK blocks,
    // timestamps: up to 40 B) into an IPv4 packet of at most 65535 B.
    if let (Some(t), Some(f)) = (
        doc.traces.first(),
        flows
            .iter()
            .find(|f| u64::from(f.tcp.mss) + u64::from(f.tcp.header) + 40 > 65_535),
    ) {
        let msg = format!(
            "flow {:?}: mss {}B + {}B header + up to 40B of TCP options exceeds 65535B, the \
             largest IPv4 packet a capture can hold: with a trace, use an mss of at most {}B",
            f.name,
            f.tcp.mss,
            f.tcp.header,
            65_535u32.saturating_sub(40 + f.tcp.header.min(65_535))
        );
        ctx.err(Some(t.link.span()), "trace[0].link", msg);
    }

    if !ctx.errors.is_empty() {
        return None;
    }
    let mut sc = Scenario {
        name,
        description: h.description.clone().unwrap_or_default(),
        duration,
        seed: h.seed.unwrap_or(1),
        nodes: nodes.specs,
        links: links.into_iter().collect::<Option<Vec<_>>>()?,
        flows,
        output,
        traces,
        routes,
        agents: Vec::new(),
        cut: None,
        // Filled once the whole scenario has passed (`super::check`).
        warnings: Default::default(),
    };
    sc.agents = super::agents::agents(doc, ctx, &sc, &names);
    if let Some(c) = &h.cut {
        sc.cut = cut(ctx, c, &sc);
    }
    ctx.errors.is_empty().then_some(sc)
}

/// Nodes by index and by name.
pub(crate) struct Nodes {
    pub specs: Vec<NodeSpec>,
    index: BTreeMap<String, usize>,
}

impl Nodes {
    /// Resolves a node name written in `field`, reporting an unknown one.
    pub(crate) fn lookup(&self, ctx: &mut Ctx, name: &S<String>, field: &str) -> Option<usize> {
        let n = name.get_ref();
        if let Some(&i) = self.index.get(n) {
            return Some(i);
        }
        let mut known: Vec<&str> = self
            .specs
            .iter()
            .map(|s| s.name.as_str())
            .take(12)
            .collect();
        if self.specs.len() > known.len() {
            known.push("...");
        }
        let msg = if known.is_empty() {
            format!("unknown node {n:?}: there are no [[node]] tables")
        } else {
            format!("unknown node {n:?}; nodes are: {}", known.join(", "))
        };
        ctx.err(Some(name.span()), field, msg);
        None
    }
}

/// Node and flow names appear in output columns and file names, and `.`
/// joins a flow name to its copy number.
pub(crate) fn check_name(ctx: &mut Ctx, name: &S<String>, field: &str) -> bool {
    let n = name.get_ref();
    let ok = !n.is_empty()
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !ok {
        let msg = format!("invalid name {n:?}: use letters, digits, '_', '-' and '.'");
        ctx.err(Some(name.span()), field, msg);
    }
    ok
}

fn nodes(doc: &raw::Doc, ctx: &mut Ctx) -> Nodes {
    let mut out = Nodes {
        specs: Vec::new(),
        index: BTreeMap::new(),
    };
    for (i, r) in doc.nodes.iter().enumerate() {
        let field = format!("node[{i}].name");
        check_name(ctx, &r.name, &field);
        let name = r.name.get_ref().clone();
        if let Some(first) = out.index.get(&name) {
            let msg = format!("duplicate node name {name:?} (first defined by node[{first}])");
            ctx.err(Some(r.name.span()), field, msg);
        } else {
            out.index.insert(name.clone(), i);
        }
        out.specs.push(NodeSpec {
            name,
            kind: r.kind.unwrap_or(NodeKind::Host),
            processing: r.processing.as_ref().and_then(processing),
        });
    }
    out
}

/// A node's processing cost; all-zero costs nothing, so it is `None`.
fn processing(p: &raw::Processing) -> Option<HostCost> {
    let d = |v: &Option<raw::Dur>| v.as_ref().map_or(Duration::ZERO, |d| d.0);
    let cost = HostCost {
        data: d(&p.data),
        ack: d(&p.ack),
        jitter: d(&p.jitter),
    };
    (cost != HostCost::default()).then_some(cost)
}

/// Which layer wrote a TCP or sink value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layer {
    Defaults,
    Flow,
}

/// Where a value was written, to point cross-field errors at it.
#[derive(Clone, Debug)]
struct Src {
    path: String,
    span: Range<usize>,
    layer: Layer,
}

/// TCP and sink settings with the defaults layered in, and where each
/// written value came from.
#[derive(Clone, Debug)]
pub(crate) struct Base {
    tcp: TcpSpec,
    sink: SinkSpec,
    /// The `ack` table as layered so far, for the next layer to refine.
    ack: Table,
    set: BTreeMap<&'static str, Src>,
    /// The default queue, as a table for links to refine and resolved, or
    /// `None` if `[defaults.queue]` was invalid (already reported).
    pub queue: Option<(Table, QueueSpec)>,
}

/// The built-in defaults: a modern Linux-like TCP (RFC 6928's initial window
/// of 10, 1460 B MSS for a 1500 B MTU, RFC 6298's 1 s initial RTO with
/// Linux's 200 ms minimum and 1 ms clock; no SYN exchange, so data flows from
/// the flow's start and analytic checks stay simple), a 1 MiB window that does
/// not limit paths up to ~80 Mbit/s x 100 ms, ACK every segment, and
/// 100-packet DropTail queues (the access links of the split-PEP paper's
/// dumbbell; ns-2's own default of 50 is small for fast links).
fn builtin() -> Base {
    let mut ack = Table::new();
    ack.insert("kind".into(), "every".into());
    let mut queue = Table::new();
    queue.insert("kind".into(), "droptail".into());
    queue.insert("limit".into(), Value::Integer(100));
    Base {
        tcp: TcpSpec {
            profile: None,
            cc: CcKind::NewReno,
            recovery: None,
            mss: 1460,
            header: 40,
            init_cwnd: 10,
            min_rto: Duration::from_millis(200),
            initial_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            clock_granularity: Duration::from_millis(1),
            handshake: false,
            max_burst: None,
            pacing: false,
            max_pacing_rate: None,
            sndbuf: None,
            rack: false,
        },
        sink: SinkSpec {
            rwnd: 1 << 20,
            ack: AckSpec::Every,
            sack: false,
            app: Default::default(),
        },
        ack,
        set: BTreeMap::new(),
        queue: Some((
            queue,
            QueueSpec::DropTail {
                limit: QueueLimit::Packets(100),
            },
        )),
    }
}

fn defaults(doc: &raw::Doc, ctx: &mut Ctx) -> Base {
    let mut base = builtin();
    let Some(d) = &doc.defaults else {
        return base;
    };
    apply(
        ctx,
        &mut base,
        d.tcp.as_ref(),
        d.sink.as_ref(),
        "defaults",
        Layer::Defaults,
    );
    cross_check(ctx, &base, Layer::Defaults);
    base
}

/// Lays `[defaults.queue]` over the built-in queue.
fn default_queue(doc: &raw::Doc, ctx: &mut Ctx, base: &mut Base, flows: &FlowNames) {
    let Some(q) = doc.defaults.as_ref().and_then(|d| d.queue.as_ref()) else {
        return;
    };
    let field = "defaults.queue";
    let below = base.queue.as_ref().map(|(t, _)| t);
    base.queue = tagged::normalize(ctx, &q.value, field, q.span.clone())
        .map(|t| tagged::layer(below, &t))
        .and_then(|t| {
            let spec = tagged::queue(ctx, t.clone(), field, q.span.clone(), flows)?;
            Some((t, spec))
        });
}

/// Reads one optional value of a layer, recording where it was written.
fn take<R, T>(
    ctx: &mut Ctx,
    set: &mut BTreeMap<&'static str, Src>,
    (prefix, layer): (&str, Layer),
    key: &'static str,
    raw: &Option<S<R>>,
    conv: impl FnOnce(&R) -> Result<T, String>,
) -> Option<T> {
    let s = raw.as_ref()?;
    let path = join(prefix, key);
    match conv(s.get_ref()) {
        Ok(v) => {
            let span = s.span();
            set.insert(key, Src { path, span, layer });
            Some(v)
        }
        Err(msg) => {
            ctx.err(Some(s.span()), path, msg);
            None
        }
    }
}

fn size_u32(b: u64, min: u32) -> Result<u32, String> {
    match u32::try_from(b) {
        Ok(v) if v >= min => Ok(v),
        Ok(_) => Err(format!("must be at least {}", fmt_bytes(min.into()))),
        Err(_) => Err("must fit in 32 bits (at most 4294967295B)".into()),
    }
}

fn positive(d: &raw::Dur) -> Result<Duration, String> {
    positive_duration(d.0).map_err(|e| e.message().to_string())
}

/// An RTO bound: at least [`MIN_RTO_BOUND`].
fn rto_bound(d: &raw::Dur) -> Result<Duration, String> {
    if d.0 < MIN_RTO_BOUND {
        return Err(format!(
            "must be at least {MIN_RTO_BOUND}, got {}: a shorter timer only fires \
             retransmissions",
            d.0
        ));
    }
    Ok(d.0)
}

fn mss(v: &raw::Size) -> Result<u32, String> {
    let m = size_u32(v.0, 1)?;
    if m > MAX_MSS {
        return Err(format!(
            "must be at most {MAX_MSS}B (an IPv4 packet of 65535 B less 40 B of \
             headers), got {m}B"
        ));
    }
    Ok(m)
}

fn rwnd(v: &raw::Size) -> Result<u32, String> {
    let w = size_u32(v.0, 1)?;
    if w > MAX_WINDOW {
        return Err(format!(
            "must be at most {MAX_WINDOW}B (65535 x 2^14, TCP's largest window with \
             window scale 14), got {w}B"
        ));
    }
    Ok(w)
}

/// Lays one layer's `[tcp]` and `[sink]` values over `base`.
fn apply(
    ctx: &mut Ctx,
    base: &mut Base,
    tcp: Option<&raw::Tcp>,
    sink: Option<&raw::Sink>,
    prefix: &str,
    layer: Layer,
) {
    let at = (prefix, layer);
    if let Some(p) = tcp.and_then(|r| {
        take(ctx, &mut base.set, at, "tcp.profile", &r.profile, |v| {
            Ok(*v)
        })
    }) {
        super::profile::apply(p, &mut base.tcp, &mut base.sink, &mut base.ack);
    }
    let (t, set) = (&mut base.tcp, &mut base.set);
    if let Some(r) = tcp {
        if let Some(v) = take(ctx, set, at, "tcp.cc", &r.cc, |v| Ok(*v)) {
            t.cc = v;
        }
        if let Some(v) = take(ctx, set, at, "tcp.recovery", &r.recovery, |v| Ok(*v)) {
            t.recovery = Some(v);
        }
        if let Some(v) = take(ctx, set, at, "tcp.mss", &r.mss, mss) {
            t.mss = v;
        }
        if let Some(v) = take(ctx, set, at, "tcp.header", &r.header, |v| size_u32(v.0, 0)) {
            t.header = v;
        }
        let cwnd = |&n: &u32| match n {
            0 => Err("must be at least 1 segment".to_string()),
            n => Ok(n),
        };
        if let Some(v) = take(ctx, set, at, "tcp.init_cwnd", &r.init_cwnd, cwnd) {
            t.init_cwnd = v;
        }
        if let Some(v) = take(ctx, set, at, "tcp.min_rto", &r.min_rto, |d| Ok(d.0)) {
            t.min_rto = v;
        }
        if let Some(v) = take(ctx, set, at, "tcp.initial_rto", &r.initial_rto, rto_bound) {
            t.initial_rto = v;
        }
        if let Some(v) = take(ctx, set, at, "tcp.max_rto", &r.max_rto, rto_bound) {
            t.max_rto = v;
        }
        let g = &r.clock_granularity;
        if let Some(v) = take(ctx, set, at, "tcp.clock_granularity", g, |d| Ok(d.0)) {
            t.clock_granularity = v;
        }
        if let Some(v) = take(ctx, set, at, "tcp.handshake", &r.handshake, |b| Ok(*b)) {
            t.handshake = v;
        }
        let burst = |&n: &u32| Ok((n != 0).then_some(n));
        if let Some(v) = take(ctx, set, at, "tcp.max_burst", &r.max_burst, burst) {
            t.max_burst = v;
        }
        if let Some(v) = take(ctx, set, at, "tcp.pacing", &r.pacing, |b| Ok(*b)) {
            t.pacing = v;
        }
        if let Some(v) = take(ctx, set, at, "tcp.rack", &r.rack, |b| Ok(*b)) {
            t.rack = v;
        }
        let pos_rate =
            |r: &raw::RateV| crate::units::positive_rate(r.0).map_err(|e| e.message().to_string());
        if let Some(v) = take(
            ctx,
            set,
            at,
            "tcp.max_pacing_rate",
            &r.max_pacing_rate,
            pos_rate,
        ) {
            t.max_pacing_rate = Some(v);
        }
        let buf = |v: &raw::Size| match v.0 {
            0 => Err("must be at least 1B".to_string()),
            n => Ok(n),
        };
        if let Some(v) = take(ctx, set, at, "tcp.sndbuf", &r.sndbuf, buf) {
            t.sndbuf = Some(v);
        }
    }
    let Some(r) = sink else { return };
    let s = &mut base.sink;
    if let Some(v) = take(ctx, set, at, "sink.rwnd", &r.rwnd, rwnd) {
        s.rwnd = v;
    }
    if let Some(v) = take(ctx, set, at, "sink.sack", &r.sack, |b| Ok(*b)) {
        s.sack = v;
    }
    if let Some(a) = &r.ack {
        let field = join(prefix, "sink.ack");
        if let Some(t) = tagged::normalize(ctx, &a.value, &field, a.span.clone()) {
            let merged = tagged::layer(Some(&base.ack), &t);
            if let Some(spec) = tagged::ack(ctx, merged.clone(), &field, a.span.clone()) {
                s.ack = spec;
                base.ack = merged;
            }
        }
    }
    if let Some(a) = &r.app {
        let field = join(prefix, "sink.app");
        if let Some(t) = tagged::normalize(ctx, &a.value, &field, a.span.clone()) {
            if let Some(spec) = tagged::app_read(ctx, t, &field, a.span.clone()) {
                s.app = spec;
            }
        }
    }
}

/// Checks that involve two fields, reporting at a field `layer` wrote (so
/// a bad default is reported once, not once per flow).
fn cross_check(ctx: &mut Ctx, b: &Base, layer: Layer) {
    let (t, s) = (&b.tcp, &b.sink);
    let checks = [
        (
            s.rwnd < t.mss,
            &["sink.rwnd", "tcp.mss"][..],
            format!(
                "rwnd ({}B) is smaller than the MSS ({}B): not even one segment fits",
                s.rwnd, t.mss
            ),
        ),
        (
            t.sndbuf.is_some_and(|b| b < u64::from(t.mss)),
            &["tcp.sndbuf", "tcp.mss"],
            format!(
                "sndbuf ({}B) is smaller than the MSS ({}B): the sender would send \
                 segments of a few bytes",
                t.sndbuf.unwrap_or(0),
                t.mss
            ),
        ),
        (
            u64::from(t.init_cwnd) * u64::from(t.mss) > u64::from(MAX_WINDOW),
            &["tcp.init_cwnd", "tcp.mss"],
            format!(
                "init_cwnd x mss ({} x {}B = {}B) exceeds {MAX_WINDOW}B (65535 x 2^14, \
                 TCP's largest window with window scale 14)",
                t.init_cwnd,
                t.mss,
                u64::from(t.init_cwnd) * u64::from(t.mss)
            ),
        ),
        (
            u64::from(t.mss) + u64::from(t.header) > 65_535,
            &["tcp.header", "tcp.mss"],
            format!(
                "mss + header ({}B + {}B) exceeds 65535B, the largest IPv4 packet",
                t.mss, t.header
            ),
        ),
        (
            t.min_rto > t.max_rto,
            &["tcp.min_rto", "tcp.max_rto"],
            format!("min_rto ({}) exceeds max_rto ({})", t.min_rto, t.max_rto),
        ),
        (
            t.initial_rto < t.min_rto || t.initial_rto > t.max_rto,
            &["tcp.initial_rto", "tcp.min_rto", "tcp.max_rto"],
            format!(
                "initial_rto ({}) must lie within min_rto ({}) and max_rto ({})",
                t.initial_rto, t.min_rto, t.max_rto
            ),
        ),
        (
            t.max_pacing_rate.is_some() && !t.pacing,
            &["tcp.max_pacing_rate", "tcp.pacing"],
            "max_pacing_rate caps pacing: set tcp.pacing = true as well".to_string(),
        ),
    ];
    for (bad, keys, msg) in checks {
        let mine = keys
            .iter()
            .filter_map(|k| b.set.get(k))
            .find(|src| src.layer == layer);
        if let (true, Some(src)) = (bad, mine) {
            ctx.err(Some(src.span.clone()), src.path.clone(), msg);
        }
    }
}

/// SACK recovery needs a sink that sends SACK blocks. Checked on each
/// flow's final settings (`tcp` and `sink` may come from different
/// layers), reported at the flow's own field if it wrote one, else once at
/// the default.
fn check_sack(ctx: &mut Ctx, b: &Base) {
    let (t, s) = (&b.tcp, &b.sink);
    if s.sack || t.recovery(s.sack) != RecoveryKind::Sack {
        return;
    }
    let Some(src) = ["tcp.recovery", "tcp.cc", "sink.sack"]
        .iter()
        .filter_map(|k| b.set.get(k))
        .min_by_key(|src| src.layer != Layer::Flow)
    else {
        return;
    };
    if ctx.errors.iter().any(|d| d.field == src.path) {
        return;
    }
    let what = match t.recovery {
        Some(_) => "recovery = \"sack\"".to_string(),
        None => format!("cc = {:?}", format!("{:?}", t.cc).to_lowercase()),
    };
    let msg = format!(
        "{what} needs SACK blocks from the receiver: set sink.sack = true, or choose \
         another recovery"
    );
    ctx.err(Some(src.span.clone()), src.path.clone(), msg);
}

/// A written `tcp.rack = true` on a flow whose recovery is not SACK's:
/// the sender runs RACK-TLP only with SACK recovery (`TcpSender::new`), so
/// it does nothing. A warning, at the layer that wrote it (a default once,
/// and only when no flow that takes it has SACK recovery).
fn check_rack(ctx: &mut Ctx, b: &Base, flow: &str) {
    let (t, s) = (&b.tcp, &b.sink);
    let recovery = t.recovery(s.sack);
    let Some(src) = b.set.get("tcp.rack") else {
        return;
    };
    if !t.rack {
        return;
    }
    if recovery == RecoveryKind::Sack {
        // A default that this flow uses is no warning for the others.
        ctx.acts(&src.path);
        return;
    }
    let lower = |v: &dyn std::fmt::Debug| format!("{v:?}").to_lowercase();
    let cc = match t.cc {
        CcKind::CubicNs2 => "cubic-ns2".to_string(),
        c => lower(&c),
    };
    let why = match (t.recovery, t.cc) {
        (Some(_), _) => format!("recovery = {:?}", lower(&recovery)),
        (None, CcKind::Cubic | CcKind::CubicNs2 | CcKind::Westwood | CcKind::Bbr) => {
            format!("cc = {cc:?} without sink.sack = true")
        }
        (None, _) => format!("cc = {cc:?}"),
    };
    let whose = match src.layer {
        Layer::Defaults => format!("flow {flow:?}'s"),
        Layer::Flow => "its".to_string(),
    };
    let msg = format!(
        "RACK-TLP acts only with SACK loss recovery, and {whose} recovery is {} ({why}): \
         rack does nothing",
        lower(&recovery)
    );
    ctx.warn(Some(src.span.clone()), src.path.clone(), msg);
}

/// Flows after `count` expansion, the names scripted drops may use, and
/// `(field, span of "to", src, dst)` for each written flow, to check
/// reachability once routes are known.
type Flows = (
    Vec<FlowSpec>,
    FlowNames,
    Vec<(String, Range<usize>, usize, usize)>,
);

fn flows(doc: &raw::Doc, ctx: &mut Ctx, nodes: &Nodes, base: &Base, duration: Duration) -> Flows {
    let mut out = Vec::new();
    let mut names = FlowNames {
        by_name: BTreeMap::new(),
        groups: BTreeMap::new(),
    };
    let mut endpoints = Vec::new();
    if doc.flows.is_empty() {
        ctx.err(
            None,
            "flow",
            "no [[flow]] tables: a scenario needs at least one flow",
        );
    }
    for (i, f) in doc.flows.iter().enumerate() {
        let name = f.name.get_ref();
        let prefix = if check_name(ctx, &f.name, &format!("flow[{i}].name")) {
            format!("flow {name:?}")
        } else {
            format!("flow[{i}]")
        };
        let src = nodes.lookup(ctx, &f.from, &join(&prefix, "from"));
        let dst = nodes.lookup(ctx, &f.to, &join(&prefix, "to"));
        match (src, dst) {
            (Some(s), Some(d)) if s == d => {
                let msg = format!(
                    "a flow needs two different nodes; from and to are both {:?}",
                    f.to.get_ref()
                );
                ctx.err(Some(f.to.span()), join(&prefix, "to"), msg);
            }
            (Some(s), Some(d)) => endpoints.push((join(&prefix, "to"), f.to.span(), s, d)),
            _ => {}
        }

        let count = match &f.count {
            Some(c) if *c.get_ref() == 0 => {
                ctx.err(Some(c.span()), join(&prefix, "count"), "must be at least 1");
                1
            }
            Some(c) => *c.get_ref(),
            None => 1,
        };
        if out.len() + count as usize > MAX_FLOWS {
            let msg = format!("too many flows: at most {MAX_FLOWS} in all");
            let span = f.count.as_ref().map(|c| c.span());
            ctx.err(span, join(&prefix, "count"), msg);
            continue;
        }
        let start = f.start.as_ref().map_or(Duration::ZERO, |s| s.get_ref().0);
        let stagger = f.stagger.as_ref().map_or(Duration::ZERO, |s| s.get_ref().0);
        let last = start + stagger * u64::from(count - 1);
        if last >= duration && duration > Duration::ZERO {
            let (field, span) = match (&f.stagger, &f.start) {
                (Some(s), _) if count > 1 => ("stagger", Some(s.span())),
                (_, s) => ("start", s.as_ref().map(|s| s.span())),
            };
            let msg =
                format!("the flow would start at {last}, but the scenario ends at {duration}");
            ctx.err(span.or(Some(f.name.span())), join(&prefix, field), msg);
        }

        let source = match &f.source {
            None => Some(SourceSpec::Bulk),
            Some(s) => {
                let field = join(&prefix, "source");
                tagged::normalize(ctx, &s.value, &field, s.span.clone())
                    .and_then(|t| tagged::source(ctx, t, &field, s.span.clone()))
            }
        };
        let reverse = f.reverse.as_ref().and_then(|s| {
            let field = join(&prefix, "reverse");
            let spec = tagged::normalize(ctx, &s.value, &field, s.span.clone())
                .and_then(|t| tagged::source(ctx, t, &field, s.span.clone()))?;
            if let SourceSpec::Pareto(_) = spec {
                let msg = "kind \"pareto\" is not supported for the reverse direction \
                           (use \"bulk\" or \"finite\")";
                ctx.err(s.span.clone(), field, msg);
                return None;
            }
            Some(spec)
        });
        let mut lay = base.clone();
        apply(
            ctx,
            &mut lay,
            f.tcp.as_ref(),
            f.sink.as_ref(),
            &prefix,
            Layer::Flow,
        );
        cross_check(ctx, &lay, Layer::Flow);
        check_sack(ctx, &lay);
        check_rack(ctx, &lay, name);

        if count > 1 {
            names.groups.insert(name.clone(), count);
        }
        for k in 0..count {
            let copy = if count == 1 {
                name.clone()
            } else {
                format!("{name}.{k}")
            };
            if names.by_name.contains_key(&copy) {
                let msg = format!("duplicate flow name {copy:?} (already used by an earlier flow)");
                ctx.err(Some(f.name.span()), join(&prefix, "name"), msg);
                break;
            }
            names.by_name.insert(copy.clone(), out.len());
            out.push(FlowSpec {
                name: copy,
                src: src.unwrap_or(0),
                dst: dst.unwrap_or(0),
                start: start + stagger * u64::from(k),
                source: source.clone().unwrap_or(SourceSpec::Bulk),
                reverse: reverse.clone(),
                tcp: lay.tcp.clone(),
                sink: lay.sink.clone(),
            });
        }
    }
    (out, names, endpoints)
}

fn output(
    doc: &raw::Doc,
    ctx: &mut Ctx,
    duration: Duration,
    duration_span: Range<usize>,
) -> OutputSpec {
    let mut out = OutputSpec {
        interval: Duration::from_secs(1),
        sample: Duration::from_millis(100),
        series: Series::ALL.to_vec(),
        per_flow: false,
    };
    let none = (None, None);
    let (interval, sample) = doc
        .output
        .as_ref()
        .map_or(none, |o| (o.interval.as_ref(), o.sample.as_ref()));
    for (field, raw, slot) in [
        ("output.interval", interval, &mut out.interval),
        ("output.sample", sample, &mut out.sample),
    ] {
        if let Some(d) = raw {
            match positive(d.get_ref()) {
                Ok(v) => *slot = v,
                Err(msg) => {
                    ctx.err(Some(d.span()), field, msg);
                    continue;
                }
            }
        }
        // One row per period per series and flow: cap the count.
        let rows = duration.0.div_ceil(slot.0.max(1));
        if rows > MAX_OUTPUT_ROWS {
            let (span, what) = match raw {
                Some(d) => (d.span(), format!("{}", slot)),
                None => (duration_span.clone(), format!("{} (the default)", slot)),
            };
            let msg = format!(
                "{what} over a {duration} run is {rows} rows per series per flow; at most \
                 {MAX_OUTPUT_ROWS} are allowed: use a longer {}",
                field.trim_start_matches("output.")
            );
            ctx.err(Some(span), field, msg);
        }
    }
    let Some(o) = &doc.output else { return out };
    out.per_flow = o.per_flow.as_ref().is_some_and(|p| *p.get_ref());
    if let Some(list) = &o.series {
        out.series.clear();
        for (i, s) in list.iter().enumerate() {
            if out.series.contains(s.get_ref()) {
                ctx.err(
                    Some(s.span()),
                    format!("output.series[{i}]"),
                    "listed twice",
                );
            } else {
                out.series.push(*s.get_ref());
            }
        }
    }
    out
}

/// Caps the rows of all series together: each bin has a goodput row per
/// flow and a link row per link direction, each sample a queue row per
/// link direction and a cwnd row per flow. A run holds them in memory
/// (about 40 B a row) until it writes them.
fn total_rows(
    ctx: &mut Ctx,
    out: &OutputSpec,
    duration: Duration,
    (flows, ports): (usize, usize),
    span: Range<usize>,
) {
    let bins = duration.0.div_ceil(out.interval.0.max(1));
    let samples = duration.0.div_ceil(out.sample.0.max(1));
    let (flows, ports) = (flows as u64, ports as u64);
    let mut rows = 0u64;
    let mut parts = Vec::new();
    for s in &out.series {
        let (n, what) = match s {
            Series::Goodput => (bins.saturating_mul(flows), "goodput: bins x flows"),
            Series::Links => (bins.saturating_mul(ports), "links: bins x link directions"),
            Series::Queues => (
                samples.saturating_mul(ports),
                "queues: samples x link directions",
            ),
            Series::Cwnd => (samples.saturating_mul(flows), "cwnd: samples x flows"),
            Series::Tseq => continue,
        };
        rows = rows.saturating_add(n);
        parts.push(format!("{what} = {n}"));
    }
    if rows > MAX_TOTAL_ROWS {
        let msg = format!(
            "{rows} rows in all ({}); at most {MAX_TOTAL_ROWS} are allowed: use a longer \
             interval or sample, or fewer series",
            parts.join(", ")
        );
        ctx.err(Some(span), "output", msg);
    }
}

/// Rates must be positive wherever they are written.
pub(crate) fn rate(ctx: &mut Ctx, r: &S<raw::RateV>, field: &str) -> Option<Rate> {
    match crate::units::positive_rate(r.get_ref().0) {
        Ok(v) => Some(v),
        Err(e) => {
            ctx.err(Some(r.span()), field, e.message());
            None
        }
    }
}

/// `scenario.cut`: the link exists, is full duplex with a delay both ways
/// (the parallel run's lookahead), is the only path between its ends, and
/// every agent on both sides can run as two halves.
fn cut(ctx: &mut Ctx, name: &S<String>, sc: &Scenario) -> Option<CutSpec> {
    let field = "scenario.cut";
    let span = Some(name.span());
    let Some(li) = sc.link_index(name.get_ref()) else {
        let known: Vec<&str> = sc.links.iter().map(|l| l.name.as_str()).take(12).collect();
        let msg = format!(
            "unknown link {:?}; links are: {}",
            name.get_ref(),
            known.join(", ")
        );
        ctx.err(span, field, msg);
        return None;
    };
    let l = &sc.links[li];
    if l.medium != MediumSpec::FullDuplex {
        ctx.err(
            span,
            field,
            "a half-duplex link cannot be cut: its two directions share one transmitter",
        );
        return None;
    }
    if l.forward.service.is_some() || l.reverse.service.is_some() {
        // The lookahead is the delay, which a schedule may lower.
        let msg = "a link with a schedule, trace or preset cannot be cut: its delay may change";
        ctx.err(span, field, msg);
        return None;
    }
    if l.forward.delay == Duration::ZERO || l.reverse.delay == Duration::ZERO {
        ctx.err(
            span,
            field,
            "the cut link needs a delay both ways: the delay is how far each side may run ahead",
        );
        return None;
    }
    let shorter = l.forward.delay.min(l.reverse.delay);
    if shorter < MIN_CUT_DELAY {
        let msg = format!(
            "link {:?} has a delay of {shorter}: a cut needs at least {MIN_CUT_DELAY} of delay \
             to pay off (the two threads synchronise once per delay); remove `cut` to run on \
             one thread",
            l.name
        );
        ctx.err(span, field, msg);
        return None;
    }
    // The far side: every node reachable from `b` without the link.
    let mut far = vec![false; sc.nodes.len()];
    let mut stack = vec![l.b];
    far[l.b] = true;
    while let Some(n) = stack.pop() {
        for (k, o) in sc.links.iter().enumerate() {
            if k == li {
                continue;
            }
            for (x, y) in [(o.a, o.b), (o.b, o.a)] {
                if x == n && !far[y] {
                    far[y] = true;
                    stack.push(y);
                }
            }
        }
    }
    if far[l.a] {
        let msg = format!(
            "link {:?} does not cut the network in two: {:?} still reaches {:?} without it",
            l.name, sc.nodes[l.b].name, sc.nodes[l.a].name
        );
        ctx.err(span, field, msg);
        return None;
    }
    if let Some(i) = sc
        .traces
        .iter()
        .position(|t| t.link == li && t.dirs.len() > 1)
    {
        let msg = format!(
            "trace[{i}] captures both directions of the cut link, which run on different \
             sides: trace one direction (\"{}->{}\" or \"{}->{}\")",
            sc.nodes[l.a].name, sc.nodes[l.b].name, sc.nodes[l.b].name, sc.nodes[l.a].name
        );
        ctx.err(span, field, msg);
        return None;
    }
    for (i, a) in sc.agents.iter().enumerate() {
        let sides = a.nodes.iter().filter(|&&n| far[n]).count();
        if sides == 0 || sides == a.nodes.len() {
            continue;
        }
        let kind = crate::agent::kind(&a.kind).expect("checked");
        let site = crate::agent::AgentSite {
            scenario: sc,
            nodes: &a.nodes,
            flows: &a.flows,
            private_flows: super::agents::private_flows(sc.flows.len(), i),
            name: &a.name,
        };
        let Ok(mut agent) = (kind.make)(&a.params, &site) else {
            continue;
        };
        if let Err(e) = agent.cut(&|n| !far[n as usize]) {
            ctx.err(
                span,
                field,
                format!("agent[{i}] ({:?}) sits on both sides: {e}", a.name),
            );
            return None;
        }
    }
    Some(CutSpec { link: li, far })
}
