//! `split-pair`: the distributed split-connection PEP of Gschwandtner's
//! thesis (2009), on two nodes `[start, end]` at the ends of a long link.
//!
//! * **Split start.** Every data packet of a covered flow arriving at
//!   `start` goes into the local queue (DropTail, or RED auto-configured
//!   from the split link as ns-2 does). The credit gate (the one machine
//!   [`pep_core::localq::SplitStartQueue`], which the daemon's split-start
//!   drives too) lets packets out of it into a
//!   per-flow terminating receiver ([`TcpSink`], the flow's own sink
//!   settings), which acknowledges them toward the sender as the
//!   destination would. The bytes each receiver delivers in order are
//!   written to ONE tunnel connection (a [`TcpSender`] on a private flow,
//!   SACK or CUBIC) and framed in [`Framing`].
//! * **Split end.** The tunnel's receiver delivers the stream in order;
//!   the framing table says which flow each byte belongs to, and a
//!   per-flow [`TcpSender`] with the flow's own id, ISN and settings
//!   carries it to the destination, whose sink works unchanged. Its ACKs
//!   reach `end` and are consumed here.
//!
//! Per-packet cost: flows are found by an index by flow id; the flows'
//! timers sit in one heap with lazy deletion (the tunnel's and the check's
//! beside it), so nothing scans the flows per packet.

use std::any::Any;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use pep_core::localq::{
    Action, CheckMode, CreditPolicy, Discipline, FlowItem, SplitStartConfig, SplitStartQueue,
};
use pep_core::queue::RedParams;
use pep_core::rng::Stream;
use pep_core::splitpair::{FlowCredit, Framing};
use pep_core::{Duration, FlowId, Instant};
use serde::Deserialize;
use toml::Table;

use super::{check_window, params, AgentError, AgentSite, CutMessage, NodeAgent, Outbox};
use crate::packet::{NodeIndex, Packet};
use crate::scenario::MAX_WINDOW;
use crate::tcp::{AckPolicy, AppSource, SinkConfig, TcpConfig, TcpSender, TcpSink, TxKind};
use pep_core::cc::{Growth, Recovery};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    /// "red" (ns-2 automatic parameters from the split link) or "droptail".
    #[serde(default = "default_queue")]
    local_queue: String,
    /// Local queue limit in packets.
    #[serde(default = "default_limit")]
    local_queue_limit: u32,
    /// `buffer_start_` in packets of `mss + header` bytes (thesis: 200).
    #[serde(default = "default_buffer_start")]
    buffer_start: u32,
    /// "poll" (the thesis's SendTimer) or "event".
    #[serde(default = "default_check")]
    check: String,
    /// `send_check_interval_` (thesis table 5.1: 10 ms).
    #[serde(default = "default_interval")]
    send_check_interval: String,
    /// Tunnel congestion control: "cubic" (RFC 9438), "cubic-ns2" (ns-2.35's
    /// Linux CUBIC, as the thesis ran it), "cubic-flows" (the daemon's
    /// default: CUBIC backing off as the flows open on the tunnel would,
    /// `pep_core::cc::Growth::CubicFlows`), "bbr" (the daemon's `tunnel.cc =
    /// "bbr"`: the core's BBR v1 with `pep_core::cc::QuicBbr`'s window rule,
    /// paced from the window as quinn paces, `Growth::TunnelBbr`) or "sack".
    #[serde(default = "default_cc")]
    tunnel_cc: String,
    /// Tunnel receiver window in bytes ("set very high"; at most TCP's
    /// largest window, as `sink.rwnd`).
    #[serde(default = "default_rwnd")]
    tunnel_rwnd: u32,
    /// The tunnel's receiver uses delayed ACKs (the thesis's
    /// SplitTcpSinkAgent derives from DelAckSink).
    #[serde(default = "default_true")]
    tunnel_delack: bool,
    /// What a packet let through costs: "admitted" (the thesis: its size,
    /// whatever the receiver makes of it), "delivered" (the wire size of
    /// the in-order bytes it releases to the tunnel, so duplicates and
    /// data held behind a hole cost nothing until they are written) or
    /// "stall-proof" (the daemon's: its new bytes until written, old
    /// segments pass at once, a flow unwritten for `stall_after` charged
    /// its share at most). `pep_core::localq::CreditPolicy`.
    #[serde(default = "default_charge")]
    credit_charge: String,
    /// The stall-proof credit's `stall_after` (the daemon's default).
    #[serde(default = "default_stall_after")]
    stall_after: String,
    /// Local queue service: "fifo" (the thesis: one queue) or "fair" (one
    /// DropTail queue per flow of `local_queue_limit / flows` packets,
    /// served round-robin by bytes, deficit round robin).
    #[serde(default = "default_sched")]
    scheduling: String,
    /// Tunnel initial slow start threshold in packets (default: the
    /// receiver window, "arbitrarily high").
    tunnel_ssthresh: Option<u32>,
    /// false: the nodes forward every packet untouched (the thesis's
    /// "PEP disabled" runs, as one experiment parameter).
    #[serde(default = "default_true")]
    enabled: bool,
    /// Split end's buffer per flow, in packets of `mss` bytes: bytes handed
    /// to the flow's onward sender and not yet acknowledged by its
    /// destination. Unset: unbounded (split end takes all the tunnel
    /// delivers). Once a flow's buffer is full, split end stops reading
    /// the tunnel, and the one stream stalls behind that flow's bytes.
    end_buffer: Option<u32>,
    /// Per-flow credit across the tunnel (needs `end_buffer`): a flow may
    /// have at most `end_buffer` bytes past split start and not yet
    /// acknowledged by its destination; its sender waits at split start.
    #[serde(default)]
    flow_credit: bool,
    /// When split start reads a flow's receiver into the tunnel: "at-once"
    /// (the thesis: every in-order byte goes to the tunnel's send buffer,
    /// and the local queue's credit alone holds the sender back) or
    /// "tunnel" (the daemon's: a flow is read only while the tunnel holds
    /// less than twice its congestion window plus `buffer_start` written
    /// and unacknowledged, quinn's send window in `pep-daemon`'s
    /// `tunnel::start`; what is not read closes the flow's receive window,
    /// and the stall-proof credit's "written" is what was read).
    #[serde(default = "default_reads")]
    start_reads: String,
}

fn default_queue() -> String {
    "red".into()
}
fn default_limit() -> u32 {
    1000
}
fn default_buffer_start() -> u32 {
    200
}
fn default_check() -> String {
    "poll".into()
}
fn default_interval() -> String {
    "10ms".into()
}
fn default_cc() -> String {
    "cubic".into()
}
fn default_rwnd() -> u32 {
    MAX_WINDOW
}
fn default_sched() -> String {
    "fifo".into()
}
fn default_charge() -> String {
    "admitted".into()
}
fn default_stall_after() -> String {
    "200ms".into()
}
fn default_reads() -> String {
    "at-once".into()
}
fn default_true() -> bool {
    true
}

/// Shortest `send_check_interval` of a polling pair: one poll per
/// nanosecond would never let a run end.
pub const MIN_SEND_CHECK_INTERVAL: Duration = Duration::from_micros(1);

/// Builds the agent from its `[[agent]]` table.
pub fn make(t: &Table, site: &AgentSite) -> Result<Box<dyn NodeAgent>, AgentError> {
    let p: Params = params(t)?;
    let sc = site.scenario;
    let &[start, end] = site.nodes else {
        return Err(AgentError::new("nodes", "split-pair sits on two nodes"));
    };
    let Some(&first) = site.flows.first() else {
        return Err(AgentError::new(
            "flows",
            "split-pair needs at least one flow",
        ));
    };
    if p.local_queue_limit == 0 {
        return Err(AgentError::new("local_queue_limit", "must be positive"));
    }
    let link = sc
        .links
        .iter()
        .find(|l| (l.a, l.b) == (start, end) || (l.a, l.b) == (end, start))
        .ok_or_else(|| AgentError::new("nodes", "no link joins the two split nodes"))?;
    let dir = if link.a == start {
        &link.forward
    } else {
        &link.reverse
    };
    let limit = pep_core::queue::QueueLimit::Packets(p.local_queue_limit);
    let discipline = match p.local_queue.as_str() {
        "droptail" => Discipline::DropTail,
        "red" => Discipline::Red(RedParams::ns2_auto(dir.rate, dir.delay, limit)),
        other => {
            return Err(AgentError::new(
                "local_queue",
                format!("expected \"red\" or \"droptail\", got {other:?}"),
            ))
        }
    };
    let rng = Stream::derive(sc.seed, &format!("agent/{}/red", site.name));
    let discipline = match p.scheduling.as_str() {
        "fifo" => discipline,
        "fair" => Discipline::Fair {
            per_flow: p.local_queue_limit.div_ceil(site.flows.len() as u32),
        },
        other => {
            return Err(AgentError::new(
                "scheduling",
                format!("expected \"fifo\" or \"fair\", got {other:?}"),
            ))
        }
    };
    let interval = crate::units::parse_duration(&p.send_check_interval)
        .map_err(|e| AgentError::new("send_check_interval", e.to_string()))?;
    let mode = match p.check.as_str() {
        "poll" if interval >= sc.duration => {
            let msg = format!(
                "{interval} is not shorter than the run ({}): split start would never \
                 poll, and nothing would cross the tunnel",
                sc.duration
            );
            return Err(AgentError::new("send_check_interval", msg));
        }
        "poll" if interval >= MIN_SEND_CHECK_INTERVAL => CheckMode::Poll { interval },
        "poll" if interval == Duration::ZERO => {
            return Err(AgentError::new("send_check_interval", "must be positive"))
        }
        "poll" => {
            let msg = format!(
                "must be at least {MIN_SEND_CHECK_INTERVAL}, got {interval}: the PEP polls \
                 once per interval"
            );
            return Err(AgentError::new("send_check_interval", msg));
        }
        "event" => CheckMode::Event,
        other => {
            return Err(AgentError::new(
                "check",
                format!("expected \"poll\" or \"event\", got {other:?}"),
            ))
        }
    };
    let base = site.tcp_config(first);
    if p.buffer_start == 0 {
        // No credit at the start and none until something is sent: the
        // tunnel would never carry a byte.
        return Err(AgentError::new(
            "buffer_start",
            "must be at least 1 packet: split start sends only with credit",
        ));
    }
    check_window("tunnel_rwnd", p.tunnel_rwnd.into(), base.mss.into())?;
    if p.tunnel_ssthresh.is_some_and(|n| n < 2) {
        return Err(AgentError::new(
            "tunnel_ssthresh",
            "must be at least 2 packets (RFC 5681's smallest ssthresh)",
        ));
    }
    let mut tunnel = TcpConfig {
        initial_rwnd: p.tunnel_rwnd,
        initial_ssthresh: p
            .tunnel_ssthresh
            .map_or(p.tunnel_rwnd as u64, |n| n as u64 * base.mss as u64),
        recovery: Recovery::Sack,
        ..base
    };
    // The daemon's `cubic-flows` runs under QuicCongestion's recovery
    // period, not TCP's, and QUIC takes an RTT sample from every ACK (RFC
    // 9002 5.1). Timing one segment per round trip, the estimate lagged a
    // queue filling in slow start (294 ms against a 647 ms RTT on
    // scenarios/validation/geo-split-pair.toml), and the RTO fired on the
    // first retransmission while it waited in that queue, which quinn
    // never does (docs/lab.md). Not for `bbr`: there the tighter RTO of
    // per-ACK samples fired under random loss, and this TCP tunnel's RTO
    // collapses the window where QUIC's probe timeout does not. Both need
    // RACK (the `linux` profile's).
    let quic = p.tunnel_cc == "cubic-flows";
    tunnel.quic_window = quic;
    tunnel.rtt_every_ack = quic;
    tunnel.growth = match p.tunnel_cc.as_str() {
        "cubic" => Growth::Cubic(Default::default()),
        "cubic-ns2" => Growth::CubicNs2,
        "cubic-flows" => Growth::CubicFlows,
        "bbr" => Growth::TunnelBbr,
        "sack" => match base.growth {
            g @ Growth::Reno { .. } => g,
            _ => Growth::default(),
        },
        other => {
            return Err(AgentError::new(
                "tunnel_cc",
                format!(
                    "expected \"cubic\", \"cubic-ns2\", \"cubic-flows\", \"bbr\" or \"sack\", \
                     got {other:?}"
                ),
            ))
        }
    };
    if p.flow_credit && p.end_buffer.is_none() {
        return Err(AgentError::new(
            "flow_credit",
            "needs end_buffer (the per-flow window it enforces)",
        ));
    }
    if p.end_buffer == Some(0) {
        return Err(AgentError::new("end_buffer", "must be positive"));
    }
    let end_buffer = p.end_buffer.map(|n| n as u64 * base.mss as u64);
    let reads_as_tunnel_takes = match p.start_reads.as_str() {
        "at-once" => false,
        "tunnel" => true,
        other => {
            return Err(AgentError::new(
                "start_reads",
                format!("expected \"at-once\" or \"tunnel\", got {other:?}"),
            ))
        }
    };
    let tunnel_sink = SinkConfig {
        rwnd: p.tunnel_rwnd,
        // A bounded split end reads the tunnel only as flows have room.
        app_reads: end_buffer.is_some(),
        sack: true,
        ack: if p.tunnel_delack {
            AckPolicy::delayed()
        } else {
            AckPolicy::Every
        },
        mss: base.mss,
        hdr_len: base.hdr_len,
        ..SinkConfig::default()
    };
    let packet = base.mss + base.hdr_len as u32;
    let stall_after = crate::units::parse_duration(&p.stall_after)
        .map_err(|e| AgentError::new("stall_after", e.to_string()))?;
    let credit = match p.credit_charge.as_str() {
        "admitted" => CreditPolicy::Thesis,
        "delivered" => CreditPolicy::Released,
        "stall-proof" => CreditPolicy::StallProof { stall_after },
        other => {
            return Err(AgentError::new(
                "credit_charge",
                format!("expected \"admitted\", \"delivered\" or \"stall-proof\", got {other:?}"),
            ))
        }
    };
    let gate = SplitStartConfig {
        discipline,
        limit: p.local_queue_limit,
        buffer_start: p.buffer_start as u64 * packet as u64,
        packet,
        header: base.hdr_len,
        credit,
        check: mode,
    };
    // Checked like an enabled pair: a sweep switching `enabled` must not
    // find its errors only at the points where it is on.
    if !p.enabled {
        return Ok(Box::new(Disabled { passed: 0 }));
    }
    let flows = site
        .flows
        .iter()
        .map(|&f| {
            let mut sink = site.sink_config(f);
            if let (true, Some(b)) = (p.flow_credit, end_buffer) {
                // Split start holds a flow without credit in its
                // terminating receiver; the closing window stops its sender.
                sink.app_reads = true;
                sink.rwnd = sink.rwnd.min(b.min(u32::MAX as u64) as u32);
            }
            // Bytes the tunnel cannot take yet wait in the receiver, whose
            // window closes as the daemon's client socket's does.
            sink.app_reads |= reads_as_tunnel_takes;
            FlowEnds {
                id: FlowId(f as u32),
                src: sc.flows[f].src as NodeIndex,
                dst: sc.flows[f].dst as NodeIndex,
                sink,
                sender: site.tcp_config(f),
            }
        })
        .collect();
    let mut agent = SplitPair::new(
        [start as NodeIndex, end as NodeIndex],
        flows,
        SplitStartQueue::new(gate, rng, Instant::ZERO),
        FlowId(site.private_flows.start),
        tunnel,
        tunnel_sink,
    );
    if let Some(b) = end_buffer {
        agent.bound_split_end(b, p.flow_credit);
    }
    if reads_as_tunnel_takes {
        agent.read_as_tunnel_takes(gate.buffer_start);
    }
    Ok(Box::new(agent))
}

/// One step of the gate's driver, as traced: bytes of a flow reported
/// written (the stall-proof credit's input), a packet let into split
/// start's receiver, a packet dropped by the local queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateEvent {
    Written(Instant, FlowId, u64),
    Admitted(Instant, FlowId, pep_core::Seq),
    Dropped(Instant, FlowId, pep_core::Seq),
}

/// What the agent needs to know about one covered flow.
pub struct FlowEnds {
    pub id: FlowId,
    pub src: NodeIndex,
    pub dst: NodeIndex,
    /// Settings of the receiver at split start (the destination's).
    pub sink: SinkConfig,
    /// Settings of the sender at split end (the source's).
    pub sender: TcpConfig,
}

struct FlowState {
    id: FlowId,
    src: NodeIndex,
    dst: NodeIndex,
    /// Terminates the sender's connection at split start.
    sink: TcpSink,
    /// Carries the flow on from split end.
    sender: TcpSender,
    /// Bytes the sink has delivered in order (accepted by split start).
    accepted: u64,
    /// Bytes handed to the sender at split end.
    forwarded: u64,
    /// Whether the flow is open on the tunnel (as the daemon counts
    /// `flows_active`): from the first segment split start admits from
    /// its local queue until its FIN is admitted.
    open: OnTunnel,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OnTunnel {
    NotYet,
    Open,
    Closed,
}

/// Timer slots: the tunnel's two ends, the check timer, then two per flow.
const T_TUNNEL_TX: u32 = 0;
const T_TUNNEL_RX: u32 = 1;
const T_CHECK: u32 = 2;
const T_FLOWS: u32 = 3;
const NONE: u32 = u32::MAX;

/// The two split nodes and everything between them.
pub struct SplitPair {
    start: NodeIndex,
    end: NodeIndex,
    /// Flow id -> index into `flows`.
    index: Vec<u32>,
    flows: Vec<FlowState>,
    /// Split start's local queue and credit.
    gate: SplitStartQueue<Packet>,
    /// With the stall-proof credit: the tunnel's bytes not yet sent once,
    /// by flow in stream order, so each first transmission tells the gate
    /// whose bytes went (the daemon reads a flow only as its tunnel takes
    /// it, and "written" means the same there).
    unsent: Option<VecDeque<(u32, u64)>>,
    /// What the gate was told and what was done with its actions, when
    /// traced ([`Self::trace_gate`]).
    trace: Option<Vec<GateEvent>>,
    framing: Framing,
    tunnel_flow: FlowId,
    tunnel_tx: TcpSender,
    tunnel_rx: TcpSink,
    tunnel_delivered: u64,
    /// The flows' timers by slot (those below `T_FLOWS` are in `fixed`),
    /// and the earliest first (stale entries skipped).
    deadline: Vec<Option<Instant>>,
    /// Each slot's earliest live heap entry (at or before its deadline).
    queued: Vec<Option<Instant>>,
    heap: BinaryHeap<Reverse<(Instant, u32)>>,
    /// The deadlines of the slots below `T_FLOWS` in nanoseconds
    /// (`u64::MAX`: none), compared beside the heap's top.
    fixed: [u64; T_FLOWS as usize],
    /// Flows written by the last tunnel delivery (reused).
    touched: Vec<u32>,
    /// Flows open on the tunnel now (the tunnel's `cubic-flows` N).
    open_flows: u32,
    local_drops: u64,
    passed: u64,
    /// Split end's per-flow buffer bound (bytes), if any.
    end_buffer: Option<u64>,
    /// Per-flow credit across the tunnel, if on.
    flow_credit: Option<FlowCredit>,
    /// Split start reads its receivers only while the tunnel's written and
    /// unacknowledged bytes stay under `2 x cwnd +` this (`start_reads =
    /// "tunnel"`); `None`: at once.
    read_beyond_cwnd: Option<u64>,
    /// The flow read first when the tunnel next has room (turns go round,
    /// as the daemon's relays take turns at quinn's send window).
    read_turn: u32,
    /// Most bytes split end ever held for one flow.
    end_held_max: u64,
    /// Which ends this copy runs (both, unless the run is cut between
    /// them: [`NodeAgent::cut`]).
    half: Half,
}

/// The ends a [`SplitPair`] copy runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Half {
    Both,
    /// Split start only; its framing records go to the other copy at each
    /// window's end.
    Start,
    /// Split end only.
    End,
}

/// Split end's state, handed to split start's copy after a cut run.
struct EndState {
    flows: Vec<FlowState>,
    tunnel_rx: TcpSink,
    tunnel_delivered: u64,
    framing: Framing,
    end_held_max: u64,
    passed: u64,
}

impl SplitPair {
    pub fn new(
        nodes: [NodeIndex; 2],
        flows: Vec<FlowEnds>,
        gate: SplitStartQueue<Packet>,
        tunnel_flow: FlowId,
        tunnel: TcpConfig,
        tunnel_sink: SinkConfig,
    ) -> Self {
        let now = Instant::ZERO;
        let max_id = flows.iter().map(|f| f.id.0).max().unwrap_or(0);
        let mut index = vec![NONE; max_id as usize + 1];
        for (i, f) in flows.iter().enumerate() {
            index[f.id.0 as usize] = i as u32;
        }
        let flows: Vec<FlowState> = flows
            .into_iter()
            .map(|f| FlowState {
                id: f.id,
                src: f.src,
                dst: f.dst,
                sink: TcpSink::new(f.id, &f.sink),
                sender: TcpSender::new(f.id, &f.sender, AppSource::Open(0), now),
                accepted: 0,
                forwarded: 0,
                open: OnTunnel::NotYet,
            })
            .collect();
        let slots = T_FLOWS as usize + 2 * flows.len();
        let mut me = SplitPair {
            start: nodes[0],
            end: nodes[1],
            index,
            flows,
            unsent: matches!(gate.config().credit, CreditPolicy::StallProof { .. })
                .then(VecDeque::new),
            gate,
            trace: None,
            framing: Framing::new(),
            tunnel_flow,
            tunnel_tx: TcpSender::new(tunnel_flow, &tunnel, AppSource::Open(0), now),
            tunnel_rx: TcpSink::new(tunnel_flow, &tunnel_sink),
            tunnel_delivered: 0,
            deadline: vec![None; slots],
            queued: vec![None; slots],
            heap: BinaryHeap::new(),
            fixed: [u64::MAX; T_FLOWS as usize],
            touched: Vec::new(),
            open_flows: 0,
            local_drops: 0,
            passed: 0,
            end_buffer: None,
            flow_credit: None,
            read_beyond_cwnd: None,
            read_turn: 0,
            end_held_max: 0,
            half: Half::Both,
        };
        // A first wake-up at zero sends the SYNs (if the senders handshake).
        me.set_timer(T_TUNNEL_TX, Some(now));
        for i in 0..me.flows.len() as u32 {
            me.set_timer(T_FLOWS + 2 * i + 1, Some(now));
        }
        let check = me.gate.poll_timeout();
        me.set_timer(T_CHECK, check);
        me
    }

    /// Moves a slot's deadline. A later deadline (an RTO restarted by an
    /// ACK, the common case) pushes nothing: the slot's earlier heap entry
    /// stays and is moved when it reaches the top ([`Self::clean`]).
    ///
    /// The tunnel's and the check's slots never enter the heap: the
    /// tunnel receiver's delayed-ACK deadline comes and goes every other
    /// packet, and a heap entry each time was a push and a pop per two
    /// packets. They are compared beside the heap's top instead.
    #[inline]
    fn set_timer(&mut self, slot: u32, at: Option<Instant>) {
        let s = slot as usize;
        if slot < T_FLOWS {
            self.fixed[s] = at.map_or(u64::MAX, Instant::as_nanos);
            return;
        }
        self.deadline[s] = at;
        if let Some(t) = at {
            if self.queued[s].is_none_or(|q| t < q) {
                self.queue_timer(slot, t);
            }
        }
    }

    /// `set_timer`'s push, out of line so that `set_timer` stays small
    /// enough to inline wherever it is called.
    #[inline(never)]
    fn queue_timer(&mut self, slot: u32, t: Instant) {
        self.heap.push(Reverse((t, slot)));
        self.queued[slot as usize] = Some(t);
    }

    /// Settles the heap's top until it is a live deadline: entries that are
    /// not their slot's current one are dropped, a slot's entry whose
    /// deadline moved later is re-pushed at it. Inline: after most packets
    /// the top is already live, which takes a few compares to see.
    #[inline]
    fn clean(&mut self) {
        if let Some(&Reverse((t, slot))) = self.heap.peek() {
            let s = slot as usize;
            if self.queued[s] == Some(t) && self.deadline[s] == Some(t) {
                return;
            }
        }
        self.clean_stale();
    }

    /// The earliest deadline and its slot, ties to the lower slot: the
    /// heap's top (settled by [`Self::clean`]) or one of the slots kept
    /// beside it.
    #[inline]
    fn earliest(&self) -> Option<(Instant, u32)> {
        // Ties go to the lower slot, as in the heap.
        let f = &self.fixed;
        let (mut t, mut slot) = (f[0], 0);
        if f[1] < t {
            (t, slot) = (f[1], 1);
        }
        if f[2] < t {
            (t, slot) = (f[2], 2);
        }
        match self.heap.peek() {
            Some(&Reverse((h, s))) if h.as_nanos() < t => Some((h, s)),
            _ if t == u64::MAX => None,
            _ => Some((Instant::from_nanos(t), slot)),
        }
    }

    #[inline(never)]
    fn clean_stale(&mut self) {
        while let Some(&Reverse((t, slot))) = self.heap.peek() {
            let s = slot as usize;
            if self.queued[s] != Some(t) {
                self.heap.pop();
                continue;
            }
            match self.deadline[s] {
                Some(d) if d == t => break,
                Some(d) => {
                    self.heap.pop();
                    self.heap.push(Reverse((d, slot)));
                    self.queued[s] = Some(d);
                }
                None => {
                    self.heap.pop();
                    self.queued[s] = None;
                }
            }
        }
    }

    /// Sends what the tunnel sender has; every packet adds credit (the
    /// thesis's modified `output()`, retransmissions included).
    fn drain_tunnel_tx(&mut self, now: Instant, out: &mut Outbox) {
        while let Some((seg, kind)) = self.tunnel_tx.poll_transmit(now) {
            self.gate
                .handle_output(seg.wire_len(), kind.is_retransmission());
            if let (Some(u), TxKind::New) = (&mut self.unsent, kind) {
                let mut left = seg.len as u64;
                while let Some(head) = u.front_mut().filter(|_| left > 0) {
                    let n = head.1.min(left);
                    head.1 -= n;
                    left -= n;
                    let id = self.flows[head.0 as usize].id;
                    if head.1 == 0 {
                        u.pop_front();
                    }
                    self.gate.handle_written(now, id, n);
                    if let Some(t) = &mut self.trace {
                        t.push(GateEvent::Written(now, id, n));
                    }
                }
            }
            out.send(
                self.start,
                Packet {
                    seg,
                    src: self.start,
                    dst: self.end,
                },
            );
        }
        let t = self.tunnel_tx.poll_timeout();
        self.set_timer(T_TUNNEL_TX, t);
    }

    fn drain_tunnel_rx(&mut self, now: Instant, out: &mut Outbox) {
        // New in-order tunnel bytes go to their flows' senders; a bounded
        // split end reads only what the flows have room for (the read may
        // open the tunnel's window, so it comes before the ACKs go out).
        let n = match self.end_buffer {
            None => {
                let d = self.tunnel_rx.delivered_bytes();
                let n = d - self.tunnel_delivered;
                self.tunnel_delivered = d;
                let flows = &mut self.flows;
                let touched = &mut self.touched;
                let held_max = &mut self.end_held_max;
                for (i, b) in self.framing.pop(n) {
                    let f = &mut flows[i as usize];
                    f.sender.write(b);
                    f.forwarded += b;
                    let held = f.forwarded - f.sender.bytes_acked().min(f.forwarded);
                    *held_max = (*held_max).max(held);
                    if touched.last() != Some(&i) {
                        touched.push(i);
                    }
                }
                n
            }
            Some(limit) => {
                let flows = &mut self.flows;
                let touched = &mut self.touched;
                let held_max = &mut self.end_held_max;
                // Each flow takes what it has room for; the first that
                // takes less than offered holds up the one stream.
                let mut left = self.tunnel_rx.readable().min(self.framing.in_tunnel());
                let mut n = 0;
                while let Some((i, avail)) = self.framing.head().filter(|_| left > 0) {
                    let offered = avail.min(left);
                    let f = &mut flows[i as usize];
                    let held = f.forwarded - f.sender.bytes_acked().min(f.forwarded);
                    let b = offered.min(limit.saturating_sub(held));
                    if b > 0 {
                        f.sender.write(b);
                        f.forwarded += b;
                        *held_max = (*held_max).max(held + b);
                        if touched.last() != Some(&i) {
                            touched.push(i);
                        }
                    }
                    self.framing.consume(b);
                    left -= b;
                    n += b;
                    if b < offered {
                        break;
                    }
                }
                self.tunnel_rx.read(n);
                self.tunnel_delivered += n;
                n
            }
        };
        while let Some(seg) = self.tunnel_rx.poll_transmit(now) {
            out.send(
                self.end,
                Packet {
                    seg,
                    src: self.end,
                    dst: self.start,
                },
            );
        }
        let t = self.tunnel_rx.poll_timeout();
        self.set_timer(T_TUNNEL_RX, t);
        if n > 0 {
            // Only the flows just written can have something new to send.
            let mut touched = std::mem::take(&mut self.touched);
            for &i in &touched {
                self.drain_flow_sender(i, now, out);
            }
            touched.clear();
            self.touched = touched;
        }
    }

    fn drain_flow_sender(&mut self, i: u32, now: Instant, out: &mut Outbox) {
        let f = &mut self.flows[i as usize];
        while let Some((seg, _)) = f.sender.poll_transmit(now) {
            out.send(
                self.end,
                Packet {
                    seg,
                    src: f.src,
                    dst: f.dst,
                },
            );
        }
        let t = f.sender.poll_timeout();
        self.set_timer(T_FLOWS + 2 * i + 1, t);
    }

    /// Returns the bytes the sink newly delivered in order.
    fn drain_flow_sink(&mut self, i: u32, now: Instant, out: &mut Outbox) -> u64 {
        let room = self.tunnel_room();
        let f = &mut self.flows[i as usize];
        // With per-flow credit, or reads as the tunnel takes them, the
        // receiver keeps what the flow may not yet send on; the read may
        // open its window (an ACK below).
        let new = match &mut self.flow_credit {
            Some(fc) => {
                let n = f.sink.read(fc.allowance(i as usize).min(room));
                fc.on_written(i as usize, n);
                n
            }
            None if self.read_beyond_cwnd.is_some() => f.sink.read(room),
            None => f.sink.delivered_bytes() - f.accepted,
        };
        f.accepted += new;
        while let Some(seg) = f.sink.poll_transmit(now) {
            out.send(
                self.start,
                Packet {
                    seg,
                    src: f.dst,
                    dst: f.src,
                },
            );
        }
        let t = f.sink.poll_timeout();
        self.set_timer(T_FLOWS + 2 * i, t);
        if new > 0 {
            self.framing.push(i, new);
            self.tunnel_tx.write(new);
            match &mut self.unsent {
                Some(u) => match u.back_mut() {
                    Some(last) if last.0 == i => last.1 += new,
                    _ => u.push_back((i, new)),
                },
                None => {
                    let id = self.flows[i as usize].id;
                    self.gate.handle_written(now, id, new);
                }
            }
        }
        new
    }

    /// Acts on the gate's actions until it has none (`checkSend()`'s
    /// loop, when a check is due). Each admitted packet's bytes go out on
    /// the tunnel at once (the thesis's `recvBytes()` calls `sendmsg()`),
    /// which may add credit within the same loop.
    fn run_gate(&mut self, now: Instant, out: &mut Outbox) {
        while let Some(a) = self.gate.poll_action(now) {
            match a {
                Action::Admit(p) => {
                    let i = self.index[p.seg.flow.0 as usize];
                    self.flows[i as usize].sink.handle_segment(now, &p.seg);
                    if let Some(t) = &mut self.trace {
                        t.push(GateEvent::Admitted(now, p.seg.flow, p.seg.seq));
                    }
                    self.count_open(i);
                    self.drain_flow_sink(i, now, out);
                    self.drain_tunnel_tx(now, out);
                }
                Action::Drop(p, _) => {
                    self.local_drops += 1;
                    if let Some(t) = &mut self.trace {
                        t.push(GateEvent::Dropped(now, p.seg.flow, p.seg.seq));
                    }
                }
            }
        }
    }

    /// Counts flow `i` open from its first segment at split start until
    /// its FIN, and tells the tunnel's congestion control.
    #[inline]
    fn count_open(&mut self, i: u32) {
        let f = &mut self.flows[i as usize];
        let next = match f.open {
            OnTunnel::NotYet => OnTunnel::Open,
            OnTunnel::Open if f.sink.fin_received() => OnTunnel::Closed,
            _ => return,
        };
        f.open = next;
        match next {
            OnTunnel::Open => self.open_flows += 1,
            _ => self.open_flows -= 1,
        }
        self.tunnel_tx.set_flows(self.open_flows);
    }

    /// Moves what flow `i`'s receiver at split start has for the tunnel
    /// (outside a check: a delayed ACK, or per-flow credit returned).
    fn release(&mut self, i: u32, now: Instant, out: &mut Outbox) {
        self.drain_flow_sink(i, now, out);
        self.drain_tunnel_tx(now, out);
        self.run_gate(now, out);
    }

    /// Bytes the tunnel takes now: all, or with `start_reads = "tunnel"`
    /// what keeps its written and unacknowledged (nor SACKed) bytes within
    /// twice its window plus `read_beyond_cwnd` (the daemon's
    /// `bound_backlog`).
    #[inline]
    fn tunnel_room(&self) -> u64 {
        match self.read_beyond_cwnd {
            None => u64::MAX,
            Some(b) => {
                // quinn counts stream bytes acknowledged in any packet, so
                // bytes SACKed above a hole are no longer held.
                let t = &self.tunnel_tx;
                let sacked = t.congestion().scoreboard().map_or(0, |s| s.sacked_bytes());
                let held = (self.framing.pushed() - t.bytes_acked()).saturating_sub(sacked);
                (2 * t.cwnd() + b).saturating_sub(held)
            }
        }
    }

    /// Reads the flows whose receivers hold bytes while the tunnel has
    /// room, starting at the flow after the last one served.
    fn read_waiting(&mut self, now: Instant, out: &mut Outbox) {
        let n = self.flows.len() as u32;
        for k in 0..n {
            if self.tunnel_room() == 0 {
                return;
            }
            let i = (self.read_turn + k) % n;
            if self.flows[i as usize].sink.readable() > 0 {
                self.read_turn = (i + 1) % n;
                self.release(i, now, out);
            }
        }
    }

    /// Split start reads its receivers only as the tunnel takes their
    /// bytes (`start_reads = "tunnel"`): its written and unacknowledged
    /// bytes stay within twice its window plus `beyond_cwnd` bytes, and
    /// the stall-proof credit is told what was read.
    pub fn read_as_tunnel_takes(&mut self, beyond_cwnd: u64) {
        self.read_beyond_cwnd = Some(beyond_cwnd);
        self.unsent = None;
    }

    /// Bounds split end's buffer per flow to `bytes`; with `flow_credit`,
    /// each flow also gets a credit window of `bytes` across the tunnel.
    /// The sinks must read on demand (`app_reads`): the tunnel's always,
    /// split start's with `flow_credit`.
    pub fn bound_split_end(&mut self, bytes: u64, flow_credit: bool) {
        self.end_buffer = Some(bytes);
        self.flow_credit = flow_credit.then(|| FlowCredit::new(self.flows.len(), bytes));
    }

    /// Most bytes split end held for one flow (handed to its onward
    /// sender, not yet acknowledged by the destination).
    pub fn end_held_max(&self) -> u64 {
        self.end_held_max
    }

    fn flow_of(&self, id: FlowId) -> Option<u32> {
        match self.index.get(id.0 as usize) {
            Some(&i) if i != NONE => Some(i),
            _ => None,
        }
    }

    /// Bytes split start accepted from flow `i`'s sender (in order).
    pub fn accepted(&self, i: usize) -> u64 {
        self.flows[i].accepted
    }
    /// Bytes split end handed to flow `i`'s onward sender.
    pub fn forwarded(&self, i: usize) -> u64 {
        self.flows[i].forwarded
    }
    /// Bytes of flow `i` acknowledged by its destination.
    pub fn delivered(&self, i: usize) -> u64 {
        self.flows[i].sender.bytes_acked()
    }
    pub fn tunnel(&self) -> &TcpSender {
        &self.tunnel_tx
    }
    /// Split start's local queue and credit.
    pub fn gate(&self) -> &SplitStartQueue<Packet> {
        &self.gate
    }
    /// Records from now on what the gate's driver does (a sameness test
    /// compares it with the daemon's).
    pub fn trace_gate(&mut self) {
        self.trace = Some(Vec::new());
    }
    pub fn gate_trace(&self) -> &[GateEvent] {
        self.trace.as_deref().unwrap_or(&[])
    }
    /// Tunnel bytes written and not yet delivered at split end.
    pub fn in_tunnel(&self) -> u64 {
        self.framing.in_tunnel()
    }
}

impl NodeAgent for SplitPair {
    fn on_packet(&mut self, now: Instant, node: NodeIndex, p: Packet, out: &mut Outbox) {
        if p.seg.flow == self.tunnel_flow {
            if node == self.end {
                self.tunnel_rx.handle_segment(now, &p.seg);
                self.drain_tunnel_rx(now, out);
            } else {
                self.tunnel_tx.handle_segment(now, &p.seg);
                self.drain_tunnel_tx(now, out);
                if self.read_beyond_cwnd.is_some() {
                    self.read_waiting(now, out);
                }
                self.run_gate(now, out);
            }
        } else if let Some(i) = self.flow_of(p.seg.flow) {
            let f = &self.flows[i as usize];
            if node == self.start && p.src == f.src {
                self.gate.handle_arrival(now, p);
                self.run_gate(now, out);
            } else if node == self.end && p.src == f.dst {
                self.flows[i as usize].sender.handle_segment(now, &p.seg);
                self.drain_flow_sender(i, now, out);
                if self.end_buffer.is_some() {
                    // The destination's ACK frees room at split end: the
                    // tunnel stream may move again, and the flow's credit
                    // returns to split start.
                    if let Some(fc) = &mut self.flow_credit {
                        fc.on_acked(i as usize, self.flows[i as usize].sender.bytes_acked());
                        self.release(i, now, out);
                    }
                    self.drain_tunnel_rx(now, out);
                }
            } else {
                self.passed += 1;
                out.send(node, p);
            }
        } else {
            self.passed += 1;
            out.send(node, p);
        }
        self.clean();
    }

    fn on_timeout(&mut self, now: Instant, out: &mut Outbox) {
        loop {
            self.clean();
            let Some((t, slot)) = self.earliest() else {
                break;
            };
            if t > now {
                break;
            }
            if slot >= T_FLOWS {
                self.heap.pop();
                self.queued[slot as usize] = None;
                self.deadline[slot as usize] = None;
            } else {
                self.set_timer(slot, None);
            }
            match slot {
                T_TUNNEL_TX => {
                    self.tunnel_tx.handle_timeout(now);
                    self.drain_tunnel_tx(now, out);
                    if self.read_beyond_cwnd.is_some() {
                        self.read_waiting(now, out);
                    }
                    self.run_gate(now, out);
                }
                T_TUNNEL_RX => {
                    self.tunnel_rx.handle_timeout(now);
                    self.drain_tunnel_rx(now, out);
                }
                T_CHECK => {
                    self.gate.handle_timeout(now);
                    self.run_gate(now, out);
                    let next = self.gate.poll_timeout();
                    self.set_timer(T_CHECK, next);
                }
                s => {
                    let i = (s - T_FLOWS) / 2;
                    if (s - T_FLOWS).is_multiple_of(2) {
                        self.flows[i as usize].sink.handle_timeout(now);
                        self.release(i, now, out);
                    } else {
                        self.flows[i as usize].sender.handle_timeout(now);
                        self.drain_flow_sender(i, now, out);
                    }
                }
            }
        }
        self.clean();
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.earliest().map(|(t, _)| t)
    }

    fn stats(&self) -> serde_json::Value {
        let c = self.gate.stats();
        let q = c.queue;
        let t = self.tunnel_tx.stats();
        let accepted: u64 = self.flows.iter().map(|f| f.accepted).sum();
        serde_json::json!({
            "accepted_bytes": accepted,
            "local_enqueued": q.enqueued,
            "local_dropped": q.dropped,
            "local_dropped_early": q.dropped_early,
            "admitted": c.admitted,
            "checks": c.checks,
            "blocked_checks": c.blocked_checks,
            "credit_added_bytes": c.added_bytes,
            "credit_added_retx_bytes": c.added_retx_bytes,
            "buffer_count": self.gate.credit(),
            "tunnel_bytes_sent": t.bytes_sent,
            "tunnel_retransmitted_segments": t.retransmitted_segments,
            "tunnel_timeouts": t.timeouts,
            "tunnel_cwnd": self.tunnel_tx.cwnd(),
            "in_tunnel_bytes": self.framing.in_tunnel(),
            "end_held_max_bytes": self.end_held_max,
            "tunnel_unread_bytes": self.tunnel_rx.readable(),
            "passed": self.passed,
        })
    }

    fn sample(&self) -> Vec<(&'static str, f64)> {
        // A half reports its share: the two halves' rows add up to the
        // whole's (bytes framed at start, less those delivered at end).
        let popped = (self.framing.pushed() - self.framing.in_tunnel()) as f64;
        let (start, in_tunnel) = match self.half {
            Half::Both => (1.0, self.framing.in_tunnel() as f64),
            Half::Start => (1.0, self.framing.pushed() as f64),
            Half::End => (0.0, -popped),
        };
        vec![
            ("local_queue", start * self.gate.len_packets() as f64),
            ("buffer_count", start * self.gate.credit() as f64),
            ("tunnel_cwnd", start * self.tunnel_tx.cwnd() as f64),
            ("in_tunnel", in_tunnel),
        ]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn cut(&mut self, here: &dyn Fn(NodeIndex) -> bool) -> Result<(), String> {
        if self.flow_credit.is_some() {
            return Err(
                "per-flow credit (`flow_credit`) hands split end's ACKs to split \
                        start at once, sooner than the link's delay allows"
                    .into(),
            );
        }
        let at_start = here(self.start);
        self.half = if at_start { Half::Start } else { Half::End };
        // The constructor armed both ends' first wake-ups: keep this half's.
        let mine = |slot: u32| match slot {
            T_TUNNEL_TX | T_CHECK => at_start,
            T_TUNNEL_RX => !at_start,
            s => (s - T_FLOWS).is_multiple_of(2) == at_start,
        };
        for slot in 0..self.deadline.len() as u32 {
            if !mine(slot) {
                self.set_timer(slot, None);
            }
        }
        self.clean();
        Ok(())
    }

    fn cut_send(&mut self) -> Option<CutMessage> {
        if self.half != Half::Start || self.framing.chunks() == 0 {
            return None;
        }
        Some(Box::new(self.framing.take_chunks()))
    }

    fn cut_receive(&mut self, msg: CutMessage) {
        if let Ok(chunks) = msg.downcast::<VecDeque<(u32, u64)>>() {
            for (flow, bytes) in *chunks {
                self.framing.push(flow, bytes);
            }
        }
    }

    fn cut_take(&mut self) -> Option<CutMessage> {
        if self.half != Half::End {
            return None;
        }
        let blank = TcpSink::new(self.tunnel_flow, &SinkConfig::default());
        Some(Box::new(EndState {
            flows: std::mem::take(&mut self.flows),
            tunnel_rx: std::mem::replace(&mut self.tunnel_rx, blank),
            tunnel_delivered: self.tunnel_delivered,
            framing: std::mem::take(&mut self.framing),
            end_held_max: self.end_held_max,
            passed: self.passed,
        }))
    }

    fn cut_join(&mut self, far: CutMessage) {
        let Ok(far) = far.downcast::<EndState>() else {
            return;
        };
        let mut far = *far;
        // Records framed since the last window's end never crossed.
        for (flow, bytes) in self.framing.take_chunks() {
            far.framing.push(flow, bytes);
        }
        self.framing = far.framing;
        for (mine, theirs) in self.flows.iter_mut().zip(far.flows) {
            mine.sender = theirs.sender;
            mine.forwarded = theirs.forwarded;
        }
        self.tunnel_rx = far.tunnel_rx;
        self.tunnel_delivered = far.tunnel_delivered;
        self.end_held_max = far.end_held_max;
        self.passed += far.passed;
        self.half = Half::Both;
    }
}

/// `enabled = false`: forwards everything, owns no connection.
struct Disabled {
    passed: u64,
}

impl NodeAgent for Disabled {
    fn on_packet(&mut self, _now: Instant, node: NodeIndex, p: Packet, out: &mut Outbox) {
        self.passed += 1;
        out.send(node, p);
    }
    fn on_timeout(&mut self, _now: Instant, _out: &mut Outbox) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn stats(&self) -> serde_json::Value {
        serde_json::json!({ "passed": self.passed })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn cut(&mut self, _here: &dyn Fn(NodeIndex) -> bool) -> Result<(), String> {
        Ok(())
    }
    fn cut_take(&mut self) -> Option<CutMessage> {
        Some(Box::new(self.passed))
    }
    fn cut_join(&mut self, far: CutMessage) {
        if let Ok(n) = far.downcast::<u64>() {
            self.passed += *n;
        }
    }
}

impl FlowItem for Packet {
    type Flow = FlowId;
    #[inline]
    fn flow(&self) -> FlowId {
        self.seg.flow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pair with one flow (nodes 2 to 3) that the tests write to the
    /// tunnel directly; the tunnel's receiver uses delayed ACKs, the check
    /// polls every `check_ms`.
    fn bare_pair(check_ms: u64) -> SplitPair {
        let tunnel = TcpConfig::default();
        let sink = SinkConfig {
            ack: AckPolicy::delayed(),
            sack: true,
            ..SinkConfig::default()
        };
        let gate = SplitStartConfig {
            discipline: Discipline::DropTail,
            limit: 10,
            buffer_start: 200 * 1040,
            packet: 1040,
            header: 40,
            credit: CreditPolicy::Thesis,
            check: CheckMode::Poll {
                interval: Duration::from_millis(check_ms),
            },
        };
        let gate = SplitStartQueue::new(gate, Stream::derive(1, "t"), Instant::ZERO);
        let flow = FlowEnds {
            id: FlowId(0),
            src: 2,
            dst: 3,
            sink: SinkConfig::default(),
            sender: TcpConfig::default(),
        };
        SplitPair::new([0, 1], vec![flow], gate, FlowId(1000), tunnel, sink)
    }

    /// `bare_pair(check_ms)` past its wake-ups at zero (the tunnel's SYN,
    /// if any, and the first check), with `bytes` of the flow written to
    /// the tunnel: the pair and the tunnel's segments, as split start
    /// sends them.
    fn pair_with_segments(check_ms: u64, bytes: u64) -> (SplitPair, Vec<Packet>) {
        let mut pair = bare_pair(check_ms);
        let mut out = Outbox::default();
        pair.on_timeout(Instant::ZERO, &mut out);
        out.packets.clear();
        pair.framing.push(0, bytes);
        pair.tunnel_tx.write(bytes);
        pair.drain_tunnel_tx(Instant::ZERO, &mut out);
        let segs = out.packets.into_iter().map(|(_, p)| p).collect();
        (pair, segs)
    }

    #[test]
    fn the_tunnel_receivers_delayed_ack_timer_is_kept_beside_the_heap() {
        let (mut pair, segs) = pair_with_segments(7, 3000);
        let mut out = Outbox::default();
        assert!(segs.len() >= 2, "the initial window sends two segments");
        let at = Instant::ZERO + Duration::from_millis(300);
        // One segment: its ACK waits for the 100 ms timer, compared with
        // the check's deadline beside the (empty) heap.
        pair.on_packet(at, 1, segs[0], &mut out);
        let tunnel_acks = |out: &Outbox| {
            out.packets
                .iter()
                .filter(|(_, p)| p.seg.flow == FlowId(1000))
                .count()
        };
        assert_eq!(tunnel_acks(&out), 0, "the first segment's ACK is delayed");
        let check = pair.gate.poll_timeout().expect("polling");
        let onward = pair.flows[0].sender.poll_timeout().expect("data in flight");
        let delack = at + Duration::from_millis(100);
        assert!(check < delack && delack < onward);
        assert_eq!(pair.poll_timeout(), Some(check));
        pair.on_timeout(check, &mut out);
        let check = check + Duration::from_millis(7);
        assert_eq!(pair.poll_timeout(), Some(check));
        // The second segment sends the ACK at once and cancels the timer.
        pair.on_packet(check, 1, segs[1], &mut out);
        assert_eq!(tunnel_acks(&out), 1, "every second segment is acknowledged");
        assert!(
            pair.heap.iter().all(|r| r.0 .1 >= T_FLOWS),
            "only the flows' timers are in the heap"
        );
        // Wake at each deadline in turn: the check's every 7 ms, with no
        // wake-up at 400 ms for the cancelled delayed ACK.
        let mut now = check;
        while now < onward.min(at + Duration::from_millis(500)) {
            pair.on_timeout(now, &mut out);
            let next = pair.poll_timeout().expect("the check polls");
            assert_eq!(next, (now + Duration::from_millis(7)).min(onward));
            now = next;
        }
        assert_eq!(tunnel_acks(&out), 1, "no ACK from a cancelled timer");
    }

    #[test]
    fn a_lone_tunnel_segment_is_acknowledged_when_the_timer_fires() {
        let (mut pair, segs) = pair_with_segments(1000, 1000);
        let mut out = Outbox::default();
        assert_eq!(segs.len(), 1);
        let at = Instant::ZERO + Duration::from_millis(250);
        pair.on_packet(at, 1, segs[0], &mut out);
        // The flow's data went on toward node 3; nothing back yet.
        assert!(out.packets.iter().all(|(n, p)| *n == 1 && p.dst == 3));
        out.packets.clear();
        let due = at + Duration::from_millis(100);
        assert_eq!(pair.poll_timeout(), Some(due));
        pair.on_timeout(due - Duration::from_nanos(1), &mut out);
        assert!(out.packets.is_empty(), "not before the deadline");
        pair.on_timeout(due, &mut out);
        assert_eq!(out.packets.len(), 1, "the delayed ACK goes out at 100 ms");
        let ack = &out.packets[0].1;
        assert_eq!((ack.src, ack.dst), (1, 0));
        assert_eq!(ack.seg.ack, segs[0].seg.end_seq());
    }
}
