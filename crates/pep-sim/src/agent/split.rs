//! `split`: a split-connection PEP on a node (RFC 3135 §2.4; Shikama).
//!
//! For every flow it covers, the agent terminates the source's connection
//! with a [`TcpSink`] of its own (same flow id: it answers the source's SYN
//! and data as the destination would) and forwards the byte stream on a
//! [`TcpSender`] of its own toward the destination (same flow id and ISN,
//! so the destination's sink works unchanged; the destination's ACKs pass
//! the node and are consumed here). Between the two legs the core's relay
//! ([`pep_core::relay::Relay`], the one the daemon drives, through
//! [`super::split_relay::SimRelay`]) holds at most `buffer` bytes: the
//! receiving leg is read only while it has room, so the window advertised
//! to the source shrinks as the relay and the wired leg fall behind, and
//! the source's FIN goes on once every byte ahead of it has. Everything
//! else passes the node untouched.
//!
//! Under the `linux` profile the forwarding sender is written as the
//! daemon's Linux socket is ([`TcpSender::socket_writes`]): the
//! application limit is checked at each relay write, a relay the full
//! buffer blocked writes again once half of what is queued is free, and
//! `sndbuf` defaults to the autotuning cap (docs/study-leo.md).
//!
//! Parameters (all optional):
//!
//! | field | meaning | default |
//! | --- | --- | --- |
//! | `rwnd` | receive buffer (window) of the terminating receiver | the flow's `sink.rwnd` |
//! | `buffer` | bytes the relay holds between the legs | `"1MB"` |
//! | `sndbuf` | send buffer of the forwarding sender (written, not yet acknowledged) | `"1MB"`; under the `linux` profile `"4MiB"`, Linux's autotuning cap |
//! | `cc` | congestion control of the forwarding sender | the flow's `tcp.cc` |
//! | `max_burst` | segments per ACK on the forwarding sender (0: unlimited, as ns-2's `maxburst_`) | the flow's |
//! | `pacing` | pace the forwarding sender (cwnd/srtt) | the flow's |
//! | `cwv` | congestion-window validation (RFC 7661) on the forwarding sender | false |
//! | `shape_rate` | token-bucket rate between the legs (wire rate: headers counted); `"none"`: off | none |
//! | `shape_burst` | the bucket's depth | two segments |
//! | `burst_rate` | rate of the interface bursts are measured on | the next hop's toward the first flow's destination |
//! | `mitigation` | a preset of the above: `"none"`, `"shape-<rate>"` (`"shape-6M"`), `"maxburst-<n>"`, `"pacing"`, `"pacing-cwv"` | none |
//! | `bypass` | pass every packet through untouched (the PEP switched off; for comparisons) | false |
//!
//! Stats: byte counts, the forward-data distribution (`forward_sizes[k]`:
//! reads of `k` segments, all flows together) and the burst distribution
//! on the outgoing interface (`burst_sizes[k]`), their KS distance (and
//! `ks_forward_burst_tail`, over sizes of three segments and more),
//! largest values and `scatter` (inter-arrival ms, size in segments) of
//! forward data larger than a segment.

use std::any::Any;

use pep_core::relay::{Dir, Leg, RelayConfig};
use pep_core::shaper::ShaperConfig;
use pep_core::{FlowId, Instant, Rate, Segment};
use serde::Deserialize;
use toml::Table;

use super::split_relay::{Effect, SimRelay};
use super::split_stats::{ks_distance, BurstMeter, ForwardLog};
use super::{check_window, params, AgentError, AgentSite, NodeAgent, Outbox};
use crate::packet::{NodeIndex, Packet};
use crate::scenario::{CcKind, Profile, MAX_WINDOW};
use crate::tcp::{AppSource, SinkConfig, TcpConfig, TcpSender, TcpSink};
use crate::units::{parse_bytes, parse_rate};

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Params {
    rwnd: Option<String>,
    buffer: Option<String>,
    sndbuf: Option<String>,
    cc: Option<CcKind>,
    max_burst: Option<u32>,
    pacing: Option<bool>,
    cwv: Option<bool>,
    shape_rate: Option<String>,
    shape_burst: Option<String>,
    burst_rate: Option<String>,
    bypass: Option<bool>,
    mitigation: Option<String>,
}

/// Applies a `mitigation` preset to the fields it stands for, unless they
/// are set explicitly.
fn apply_mitigation(p: &mut Params) -> Result<(), AgentError> {
    let Some(m) = p.mitigation.clone() else {
        return Ok(());
    };
    let bad = || {
        AgentError::new(
            "mitigation",
            format!(
                "unknown mitigation {m:?}; expected \"none\", \"shape-<rate>\" (e.g. \"shape-6M\"), \
                 \"maxburst-<n>\", \"pacing\" or \"pacing-cwv\""
            ),
        )
    };
    if m == "none" {
    } else if let Some(r) = m.strip_prefix("shape-") {
        let r = if r.ends_with('M') || r.ends_with('k') || r.ends_with('G') {
            format!("{r}bit/s")
        } else {
            r.to_string()
        };
        match parse_rate(&r) {
            Ok(rate) if rate.as_bps() == 0 => {
                return Err(AgentError::new(
                    "mitigation",
                    format!("{m:?}: the shaping rate must be positive"),
                ))
            }
            Ok(_) => {}
            Err(_) => return Err(bad()),
        }
        p.shape_rate.get_or_insert(r);
    } else if let Some(n) = m.strip_prefix("maxburst-") {
        if !n.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad()); // u32's parser takes "+3"
        }
        let n: u32 = n.parse().map_err(|_| bad())?;
        p.max_burst.get_or_insert(n);
    } else if m == "pacing" {
        p.pacing.get_or_insert(true);
    } else if m == "pacing-cwv" {
        p.pacing.get_or_insert(true);
        p.cwv.get_or_insert(true);
    } else {
        return Err(bad());
    }
    Ok(())
}

fn bytes(field: &str, v: &Option<String>) -> Result<Option<u64>, AgentError> {
    v.as_deref()
        .map(|s| match parse_bytes(s) {
            Ok(0) => Err(AgentError::new(field, "must be positive")),
            Ok(b) => Ok(b),
            Err(e) => Err(AgentError::new(field, e.message())),
        })
        .transpose()
}

fn rate(field: &str, v: &Option<String>) -> Result<Option<Rate>, AgentError> {
    v.as_deref()
        .map(|s| match parse_rate(s) {
            Ok(r) if r.as_bps() == 0 => Err(AgentError::new(field, "must be positive")),
            Ok(r) => Ok(r),
            Err(e) => Err(AgentError::new(field, e.message())),
        })
        .transpose()
}

/// The burst mitigations a `split` agent's table asks for, its
/// `mitigation` preset applied and `shape_rate = "none"` read as off:
/// what `pep lab` maps onto the daemon (docs/lab.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mitigations {
    pub max_burst: Option<u32>,
    pub pacing: Option<bool>,
    pub cwv: Option<bool>,
    pub shape_rate: Option<Rate>,
    pub shape_burst: Option<u64>,
}

/// [`Mitigations`] of an agent table, with the errors [`make`] gives.
pub fn mitigations(t: &Table) -> Result<Mitigations, AgentError> {
    let mut p: Params = params(t)?;
    apply_mitigation(&mut p)?;
    if p.shape_rate.as_deref() == Some("none") {
        p.shape_rate = None;
    }
    Ok(Mitigations {
        max_burst: p.max_burst,
        pacing: p.pacing,
        cwv: p.cwv,
        shape_rate: rate("shape_rate", &p.shape_rate)?,
        shape_burst: bytes("shape_burst", &p.shape_burst)?,
    })
}

/// Builds a `split` agent (see the module doc).
pub fn make(t: &Table, site: &AgentSite) -> Result<Box<dyn NodeAgent>, AgentError> {
    let p: Params = params(t)?;
    let m = mitigations(t)?;
    let rwnd = bytes("rwnd", &p.rwnd)?;
    let buffer = bytes("buffer", &p.buffer)?.unwrap_or(1 << 20);
    let sndbuf = bytes("sndbuf", &p.sndbuf)?;
    // Below one segment the legs crawl a few bytes at a time (a 1 B window
    // delivered 982 B in 20 s where 12 MB was possible).
    let mss = site.largest_mss().unwrap_or(1) as u64;
    if let Some(r) = rwnd {
        check_window("rwnd", r, mss)?;
    }
    for (field, v) in [("buffer", Some(buffer)), ("sndbuf", sndbuf)] {
        let Some(v) = v else { continue };
        if v < mss {
            let msg = format!("{v}B is less than one segment: the flows' mss is {mss}B");
            return Err(AgentError::new(field, msg));
        }
    }
    let (shape_rate, shape_burst) = (m.shape_rate, m.shape_burst);
    if shape_burst.is_some() && shape_rate.is_none() {
        return Err(AgentError::new("shape_burst", "needs shape_rate"));
    }
    if shape_burst.is_some_and(|b| b > MAX_WINDOW as u64) {
        // Deeper buckets overflow the shaper's nanosecond arithmetic.
        let msg = format!("must be at most {MAX_WINDOW}B");
        return Err(AgentError::new("shape_burst", msg));
    }
    let node = site.nodes[0];
    let mut legs = Vec::new();
    let mut by_flow = Vec::new();
    for &fi in site.flows {
        let f = &site.scenario.flows[fi];
        let mut spec = f.tcp.clone();
        if let Some(cc) = p.cc {
            spec.cc = cc;
        }
        let mut wired = crate::build::tcp_config(&spec, &f.sink);
        if let Some(b) = m.max_burst {
            wired.max_burst = (b > 0).then_some(b);
        }
        match m.pacing {
            Some(true) if wired.pacing.is_none() => wired.pacing = Some(Default::default()),
            Some(false) => wired.pacing = None,
            _ => {}
        }
        wired.cwv = m.cwv.unwrap_or(false);
        // The daemon leaves SO_SNDBUF to Linux's autotuning, which keeps
        // it at 3 x cwnd segments' truesize or more (`tcp_sndbuf_expand`
        // with BBR's `sndbuf_expand`; about 9 x cwnd in payload), so only
        // its cap, `net.ipv4.tcp_wmem[2]` (4 MiB), ever binds.
        let linux = spec.profile == Some(Profile::Linux);
        wired.sndbuf = sndbuf.unwrap_or(if linux { LINUX_WMEM_MAX } else { 1 << 20 });
        let mut wireless = site.sink_config(fi);
        if let Some(r) = rwnd {
            wireless.rwnd = r as u32;
        }
        wireless.app_reads = true;
        wireless.mss = f.tcp.mss;
        wireless.peer_isn = wired.isn;
        let quantum = wired.mss as u64;
        let shaper = shape_rate.map(|rate| ShaperConfig {
            rate,
            depth: shape_burst.unwrap_or(2 * quantum),
            overhead: wired.hdr_len as u64,
            quantum,
        });
        let id = FlowId(fi as u32);
        if by_flow.len() <= fi {
            by_flow.resize(fi + 1, NONE);
        }
        by_flow[fi] = legs.len() as u32;
        let mut leg = SplitLeg::new(
            id,
            (f.src as NodeIndex, f.dst as NodeIndex),
            wireless,
            wired,
            (SimRelay::config(buffer), shaper),
        );
        leg.socket_writes = linux;
        legs.push(leg);
    }
    let burst_rate = match rate("burst_rate", &p.burst_rate)? {
        Some(r) => Some(r),
        None => site.flows.first().and_then(|&fi| {
            let dst = site.scenario.flows[fi].dst;
            let (link, dir) = site.scenario.routes.next_hop(node, dst)?;
            Some(site.scenario.links[link].dir(dir).rate)
        }),
    };
    if p.bypass == Some(true) {
        legs.clear();
        by_flow.clear();
    }
    Ok(Box::new(Split {
        node: node as NodeIndex,
        legs,
        by_flow,
        bursts: burst_rate.map(BurstMeter::new),
        forward: ForwardLog::new(),
        mss: site
            .flows
            .first()
            .map_or(1460, |&fi| site.scenario.flows[fi].tcp.mss as u64),
    }))
}

const NONE: u32 = u32::MAX;

/// `net.ipv4.tcp_wmem`'s maximum on the lab's machines (`4096 16384
/// 4194304`): the `linux` profile's default `sndbuf`.
pub const LINUX_WMEM_MAX: u64 = 4 << 20;

/// One relayed connection: the terminating receiver, the relay and the
/// forwarding sender. Reusable by any agent that splits a connection.
pub struct SplitLeg {
    flow: FlowId,
    /// The connection's source and destination nodes.
    src: NodeIndex,
    dst: NodeIndex,
    pub sink: TcpSink,
    /// Opened when the source's first segment arrives.
    pub sender: Option<TcpSender>,
    sender_cfg: TcpConfig,
    pub relay: SimRelay,
    /// Bytes written to the sender so far.
    written: u64,
    /// The sender is written as a Linux socket is
    /// ([`TcpSender::socket_writes`]).
    pub socket_writes: bool,
}

/// A segment a leg sends, and toward which end.
pub enum Emit {
    /// An ACK of the terminating receiver, to the source.
    ToSource(Segment),
    /// Data of the forwarding sender, to the destination.
    ToDestination(Segment),
}

impl SplitLeg {
    pub fn new(
        flow: FlowId,
        (src, dst): (NodeIndex, NodeIndex),
        sink: SinkConfig,
        sender: TcpConfig,
        (relay, shaper): (RelayConfig, Option<ShaperConfig>),
    ) -> SplitLeg {
        SplitLeg {
            flow,
            src,
            dst,
            sink: TcpSink::new(flow, &sink),
            sender: None,
            sender_cfg: sender,
            relay: SimRelay::new(relay, shaper),
            written: 0,
            socket_writes: false,
        }
    }

    /// A segment from the source.
    pub fn from_source(&mut self, now: Instant, seg: &Segment) {
        if self.sender.is_none() {
            let mut s = TcpSender::new(self.flow, &self.sender_cfg, AppSource::Open(0), now);
            if self.socket_writes {
                s.socket_writes();
            }
            self.sender = Some(s);
            // The forwarding sender queues what it is given before its
            // handshake completes, so the relay may pass bytes on at once.
            self.relay.connected(now);
        }
        self.sink.handle_segment(now, seg);
    }

    /// A segment from the destination (its ACKs).
    pub fn from_destination(&mut self, now: Instant, seg: &Segment) {
        if let Some(s) = self.sender.as_mut() {
            s.handle_segment(now, seg);
        }
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if self.sink.poll_timeout().is_some_and(|t| t <= now) {
            self.sink.handle_timeout(now);
        }
        if let Some(s) = self.sender.as_mut() {
            if s.poll_timeout().is_some_and(|t| t <= now) {
                s.handle_timeout(now);
            }
        }
        self.relay.handle_timeout(now);
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        [
            self.sink.poll_timeout(),
            self.sender.as_ref().and_then(|s| s.poll_timeout()),
            self.relay.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Moves bytes from the receiver through the relay into the sender as
    /// far as room allows, then hands out every segment either endpoint
    /// wants to send. `forward` sees each read from the receiver (bytes).
    pub fn pump(&mut self, now: Instant, mut forward: impl FnMut(u64), mut emit: impl FnMut(Emit)) {
        let Some(sender) = self.sender.as_mut() else {
            return;
        };
        let n = self.relay.read(now, Dir::Up, self.sink.readable());
        if n > 0 {
            self.sink.read(n);
            forward(n);
        }
        if self.socket_writes {
            // Linux sends what the ACK allowed (`tcp_data_snd_check`)
            // before it wakes the writer (`tcp_check_space`), whose write
            // then finds the queue as the sends left it.
            while let Some((seg, _)) = sender.poll_transmit(now) {
                emit(Emit::ToDestination(seg));
            }
        }
        let w = self.relay.write(now, Dir::Up, sender.write_space());
        if w > 0 {
            sender.write(w);
            self.written += w;
            // Room opened in the relay: read what waits behind it.
            let more = self.relay.read(now, Dir::Up, self.sink.readable());
            if more > 0 {
                self.sink.read(more);
                forward(more);
            }
        }
        if self.sink.fin_received() && self.sink.readable() == 0 {
            self.relay.eof(now, Dir::Up); // once; later calls change nothing
        }
        // Only the source's stream is relayed: the destination sends no data
        // back, so the relay never ends the Down direction (no FIN to the
        // source), and simulated TCP has no RST to carry out.
        while let Some(e) = self.relay.next_effect(&mut ()) {
            if e == Effect::Fin(Leg::Server) {
                sender.close();
            }
        }
        while let Some(seg) = self.sink.poll_transmit(now) {
            emit(Emit::ToSource(seg));
        }
        while let Some((seg, _)) = sender.poll_transmit(now) {
            emit(Emit::ToDestination(seg));
        }
    }

    /// Bytes written to the forwarding sender so far.
    pub fn written(&self) -> u64 {
        self.written
    }
}

/// The `split` agent: [`SplitLeg`]s for the flows it covers, on one node.
pub struct Split {
    node: NodeIndex,
    legs: Vec<SplitLeg>,
    /// `by_flow[flow id]`: index into `legs`, or [`NONE`].
    by_flow: Vec<u32>,
    bursts: Option<BurstMeter>,
    /// Forward data of all legs together (Shikama's inter-arrival times
    /// are across connections).
    forward: ForwardLog,
    mss: u64,
}

impl Split {
    pub fn legs(&self) -> &[SplitLeg] {
        &self.legs
    }
    pub fn forward(&self) -> &ForwardLog {
        &self.forward
    }
    pub fn bursts(&self) -> Option<&BurstMeter> {
        self.bursts.as_ref()
    }

    fn pump(&mut self, now: Instant, i: usize, out: &mut Outbox) {
        let node = self.node;
        let leg = &mut self.legs[i];
        let (src, dst) = (leg.src, leg.dst);
        let (log, mss, bursts) = (&mut self.forward, self.mss, &mut self.bursts);
        leg.pump(
            now,
            |n| log.record(now, n, mss),
            |e| match e {
                Emit::ToSource(seg) => out.send(
                    node,
                    Packet {
                        seg,
                        src: dst,
                        dst: src,
                    },
                ),
                Emit::ToDestination(seg) => {
                    if let Some(b) = bursts.as_mut() {
                        b.on_packet(now, seg.wire_len() as u64);
                    }
                    out.send(node, Packet { seg, src, dst });
                }
            },
        );
    }
}

/// A histogram from its three-segment bin on.
fn tail(h: &[u64]) -> &[u64] {
    h.get(3..).unwrap_or(&[])
}

/// A histogram trimmed after its last non-empty bin.
fn trimmed(h: &[u64]) -> &[u64] {
    let end = h.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
    &h[..end]
}

impl NodeAgent for Split {
    fn on_packet(&mut self, now: Instant, node: NodeIndex, p: Packet, out: &mut Outbox) {
        let i = self
            .by_flow
            .get(p.seg.flow.0 as usize)
            .copied()
            .unwrap_or(NONE);
        if i == NONE {
            out.send(node, p);
            return;
        }
        let leg = &mut self.legs[i as usize];
        if p.src == leg.src {
            leg.from_source(now, &p.seg);
        } else {
            leg.from_destination(now, &p.seg);
        }
        self.pump(now, i as usize, out);
    }

    fn on_timeout(&mut self, now: Instant, out: &mut Outbox) {
        for i in 0..self.legs.len() {
            if self.legs[i].poll_timeout().is_some_and(|t| t <= now) {
                self.legs[i].handle_timeout(now);
                self.pump(now, i, out);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.legs.iter().filter_map(|l| l.poll_timeout()).min()
    }

    fn stats(&self) -> serde_json::Value {
        let sum = |f: fn(&SplitLeg) -> u64| self.legs.iter().map(f).sum::<u64>();
        let seg = |b: u64| b as f64 / self.mss as f64;
        let fwd = &self.forward;
        let mut s = serde_json::json!({
            "bytes_in": sum(|l| l.relay.stats().bytes_in),
            "bytes_out": sum(|l| l.relay.stats().bytes_out),
            "max_held_bytes": self.legs.iter().map(|l| l.relay.stats().max_held).max().unwrap_or(0),
            "fills": sum(|l| l.relay.stats().fills),
            "shaped": sum(|l| l.relay.stats().shaped),
            "forward_data": fwd.deliveries,
            "max_forward_segments": seg(fwd.max),
            "forward_30plus": fwd.sizes.iter().skip(30).sum::<u64>(),
            "forward_sizes": trimmed(&fwd.sizes),
            "scatter": fwd.scatter.iter()
                .map(|&(gap, n)| [gap.as_millis_f64(), seg(n)])
                .collect::<Vec<_>>(),
            "wired_timeouts": sum(|l| l.sender.as_ref().map_or(0, |s| s.stats().timeouts)),
            "wired_retransmitted": sum(|l| l.sender.as_ref().map_or(0, |s| s.stats().retransmitted_segments)),
        });
        if let Some(b) = &self.bursts {
            let sizes = b.sizes();
            s["bursts"] = sizes.iter().sum::<u64>().into();
            s["max_burst_packets"] = b.largest().into();
            s["bursts_30plus"] = sizes.iter().skip(30).sum::<u64>().into();
            s["burst_sizes"] = trimmed(&sizes).into();
            if let Some(d) = ks_distance(&fwd.sizes, &sizes) {
                s["ks_forward_burst"] = d.into();
            }
            // The same over sizes of three segments and more: the tails, which
            // the single-segment majority hides from the whole-sample KS.
            // (Pairs are left out too: in the wired leg's slow start every
            // ACK releases two segments, a burst no forward datum made.)
            if let Some(d) = ks_distance(tail(&fwd.sizes), tail(&sizes)) {
                s["ks_forward_burst_tail"] = d.into();
            }
        }
        s
    }

    fn sample(&self) -> Vec<(&'static str, f64)> {
        let sum = |f: &dyn Fn(&SplitLeg) -> u64| self.legs.iter().map(f).sum::<u64>() as f64;
        vec![
            ("held_bytes", sum(&|l| l.relay.held(Dir::Up))),
            ("wireless_rwnd_bytes", sum(&|l| l.sink.window() as u64)),
            (
                "wired_cwnd_bytes",
                sum(&|l| l.sender.as_ref().map_or(0, |s| s.cwnd())),
            ),
            (
                "wired_unacked_bytes",
                sum(&|l| l.sender.as_ref().map_or(0, |s| s.queued())),
            ),
        ]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
