//! The simulation: links, nodes with static routes, TCP flows, and the event
//! loop that drives them.
//!
//! Every component is a sans-IO state machine from `pep-core` or
//! [`crate::tcp`]; this file only moves packets between them and keeps one
//! pending wake-up per component ([`Armed`]). The loop never reads a clock:
//! `now` is the time of the event being handled.

use pep_core::host::Processor;
use pep_core::link::LinkDir;
use pep_core::medium::HalfDuplex;
use pep_core::{Duration, Instant, Seq};

use crate::agent::{NodeAgent, Outbox};
use crate::events::{Armed, Event, EventQueue};
use crate::hops::Hops;
use crate::metrics::Metrics;
use crate::packet::{HostJob, NodeIndex, Packet};
use crate::prefetch;
use crate::tcp::{AppSource, TcpConfig, TcpSender, TcpSink, TxKind};
use crate::traffic::OnOff;
use crate::tseq::{TseqEvent, TseqRow};

/// No route from a node to a destination.
pub(crate) const NO_ROUTE: u32 = u32::MAX;
/// A port on a full-duplex link; a node without a processor.
pub(crate) const NONE: u32 = u32::MAX;
/// From `Hops::hop`: the cut link's direction whose transmitter runs on the
/// other side of a cut run; what is sent on it is offered there
/// (`cut.rs`).
pub(crate) const OFFER: u32 = u32::MAX - 1;
/// In `Port::medium`: a direction fed by offers from the other side of a
/// cut run, which only that side's offers may advance (`cut.rs`).
pub(crate) const FED: u32 = u32::MAX - 1;

/// One link direction and the node it delivers to: only what a packet
/// touches (its name is in `Simulation::port_names`). Aligned to cache
/// lines so a port spans as few of them as its size allows: at 10,000
/// flows the ports no longer fit in the caches, and each line a packet
/// touches is a miss.
#[repr(align(64))]
pub(crate) struct Port {
    pub link: LinkDir<Packet>,
    pub armed: Armed,
    pub to: NodeIndex,
    /// Most packets ever waiting in its queue (a queue's packet limit is
    /// a `u32`).
    pub max_queue: u32,
    /// Index into `Simulation::media` when the link is half-duplex (its
    /// two ports are `2k` and `2k + 1`), else [`NONE`].
    pub medium: u32,
}

/// A node's packet processor (per-packet host cost).
pub(crate) struct Cpu {
    pub proc: Processor<HostJob>,
    pub armed: Armed,
    pub node: NodeIndex,
    /// Flows whose receiving application here reads when the processor is
    /// idle ([`Reader::when_idle`]).
    pub readers: Vec<u32>,
}

/// The receiving application of a buffered sink (`sink.app = "reader"`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reader {
    /// Most bytes per read.
    pub chunk: u64,
    /// Reads wait until the node's processor has no packet left (packet
    /// processing preempts the application); else they follow each
    /// delivery at once.
    pub when_idle: bool,
    /// Application time per `chunk` read (prorated), during which it does
    /// not read: FTP writing to disk. Zero: reads back to back.
    pub work: Duration,
}

/// A retransmission, as the trace and the tests see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retransmission {
    pub at: Instant,
    /// Sequence number relative to the flow's first data byte.
    pub offset: u32,
    pub kind: TxKind,
}

/// A TCP connection between two hosts.
///
/// Laid out hot first (`repr(C)` keeps the order written): the engine's
/// per-packet bookkeeping in the first cache line, then the two endpoints,
/// then what a packet never touches, with the large rarely used parts
/// boxed. At 10,000 flows the flows no longer fit in the caches, and each
/// line an event touches is a miss. Aligned to cache lines, so those
/// lines are the same for every flow and a prefetch of a part gets all of
/// it.
#[repr(C, align(64))]
pub(crate) struct Flow {
    pub sender_armed: Armed,
    pub sink_armed: Armed,
    pub reader_armed: Armed,
    pub generator_armed: Armed,
    /// Packets the sender's own host queue refused.
    pub local_drops: u64,
    pub src: NodeIndex,
    pub dst: NodeIndex,
    /// The processors of the sending and receiving nodes, or [`NONE`].
    pub src_cpu: u32,
    pub dst_cpu: u32,
    /// First data byte's sequence number (isn + 1).
    pub data_start: Seq,
    /// Created at `start`.
    pub sender: Option<TcpSender>,
    pub sink: TcpSink,
    pub retransmissions: Vec<Retransmission>,
    /// The application reading from a buffered sink.
    pub reader: Option<Reader>,
    /// The reader is busy with the last read's work until then.
    pub reader_busy: Instant,
    pub start: Instant,
    pub app: AppSource,
    pub name: String,
    /// Read once, when the sender starts.
    pub cfg: Box<TcpConfig>,
    /// The application writing into an [`AppSource::Open`] sender.
    pub generator: Option<Box<OnOff>>,
}

/// Ports and flows of more bytes than this are prefetched ahead of their
/// events. Below it they stay in the caches enough that the prefetches'
/// instructions cost more than they save: on the machine measured (1 MB
/// L2 per core), the dumbbell ran faster without them at 1,500 flows
/// (4.8 MB) and with them at 2,000 (6.4 MB).
const PREFETCH_ABOVE: usize = 5 << 20;

/// How many packets behind its head a delay line's slot is prefetched.
const LINE_AHEAD: usize = 8;

/// The bytes of a [`Flow`] from its start that a sender's timer touches
/// first: its wake-up and the sender's first lines.
const SENDER_HOT: usize = 256;
/// The bytes of a flow's receiver that its timer touches first.
const SINK_HOT: usize = 128;

/// A PEP agent and its wake-up.
pub(crate) struct AgentSlot {
    pub agent: Box<dyn NodeAgent>,
    pub armed: Armed,
    pub name: String,
    pub kind: String,
    pub nodes: Vec<NodeIndex>,
}

/// One sampled agent value (`agents.csv`).
#[derive(Clone, Debug, PartialEq)]
pub struct AgentRow {
    pub t: Instant,
    pub agent: u32,
    pub name: &'static str,
    pub value: f64,
}

/// Counters about the run itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    pub events: u64,
    /// Packets that finished serialization on some link.
    pub packets_forwarded: u64,
}

/// A runnable simulation, built from a [`crate::scenario::Scenario`] by
/// [`Simulation::new`].
pub struct Simulation {
    pub(crate) now: Instant,
    /// The ports and flows outgrow the caches: state is prefetched ahead
    /// of the events that touch it.
    pub(crate) prefetching: bool,
    pub(crate) end: Instant,
    pub(crate) queue: EventQueue,
    pub(crate) ports: Vec<Port>,
    /// `port_names[i]`: port `i`'s "a->b", for outputs.
    pub(crate) port_names: Vec<String>,
    /// Half-duplex media, each arbitrating a pair of ports.
    pub(crate) media: Vec<HalfDuplex>,
    /// Host processors.
    pub(crate) cpus: Vec<Cpu>,
    /// The port a node sends on to a destination (`Routes::hop`: its
    /// packed link and direction is the port index), spread out at load
    /// into rows for routers only, so node counts are bounded by memory.
    pub(crate) hops: Hops,
    pub(crate) flows: Vec<Flow>,
    pub(crate) metrics: Metrics,
    pub(crate) events: u64,
    pub(crate) info: RunInfo,
    /// Open pcap captures (`[[trace]]`); empty unless asked for.
    pub(crate) traces: Vec<crate::trace::Trace>,
    pub(crate) agents: Vec<AgentSlot>,
    /// `node_agent[node]`: index into `agents`, or [`NONE`].
    pub(crate) node_agent: Vec<u32>,
    /// Reused between agent calls.
    pub(crate) outbox: Outbox,
    pub(crate) agent_rows: Vec<AgentRow>,
    /// The far side of a run cut in two (`scenario.cut`); `None` for an
    /// uncut run, for the far side itself, and once a cut run has ended
    /// and its sides are joined.
    pub(crate) cut: Option<Box<crate::cut::Cut>>,
    /// Of `events`, the `Sample` and `Bin` ones (both sides of a cut run
    /// have them; the joined count keeps one side's).
    pub(crate) sampling_events: u64,
    /// A cut run's last batch from the other side, emptied, to fill with
    /// this side's next.
    pub(crate) cut_spare: Option<crate::cut::Batch>,
    /// A cut run's packets offered to the cut link (its transmitter runs
    /// on the other side), with their times, and where the sampling
    /// events fell among them (`cut.rs`).
    pub(crate) cut_offers: Vec<(Instant, Packet)>,
    pub(crate) cut_marks: Vec<crate::cut::Mark>,
    /// This side offers what it sends on the cut link.
    pub(crate) cut_offering: bool,
    /// This side runs the cut link's transmitter for the other.
    pub(crate) cut_fed: Option<Box<crate::cut::Fed>>,
    /// A cut run's batches from the other side, received and not yet
    /// taken in (they are taken in a few exchanges after they were sent).
    pub(crate) cut_pending: std::collections::VecDeque<crate::cut::Batch>,
    /// How many of the other side's batches this side has taken in.
    pub(crate) cut_taken: u64,
}

/// What a run is, for its outputs.
#[derive(Clone, Debug)]
pub struct RunInfo {
    pub scenario: String,
    pub seed: u64,
    pub node_names: Vec<String>,
}

impl Simulation {
    /// Current simulated time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// When the run ends.
    pub fn end(&self) -> Instant {
        self.end
    }

    /// True once simulated time has reached the end.
    pub fn is_done(&self) -> bool {
        self.now >= self.end
    }

    /// Runs to the end of the scenario.
    pub fn run(&mut self) {
        self.run_until(self.end);
    }

    /// Handles every event due by `limit` (capped at the scenario's end) and
    /// advances the clock to it. Lets a caller show progress between calls.
    ///
    /// A cut run (`scenario.cut`) runs both sides to `limit`; until it ends,
    /// only [`Self::now`] and [`Self::progress`] speak for the whole run.
    pub fn run_until(&mut self, limit: Instant) {
        if self.cut.is_some() {
            self.run_cut(limit);
        } else {
            self.run_local(limit);
        }
    }

    /// Runs a cut run's two sides on two threads (the default where the
    /// machine has two CPUs) or alternately on this one. The outputs are
    /// the same either way. No effect on an uncut run.
    pub fn set_parallel(&mut self, on: bool) {
        if let Some(c) = &mut self.cut {
            c.set_parallel(on);
        }
    }

    /// Threads the run uses: 2 for a cut run whose sides run at once.
    pub fn threads(&self) -> usize {
        match &self.cut {
            Some(c) if c.parallel() => 2,
            _ => 1,
        }
    }

    /// Whether the run is cut in two and not yet joined.
    pub fn is_cut(&self) -> bool {
        self.cut.is_some()
    }

    /// [`Self::run_until`] on this simulation's own events.
    pub(crate) fn run_local(&mut self, limit: Instant) {
        let limit = limit.min(self.end);
        // Prefetching pays only when the ports and flows outgrow the
        // caches; below that its instructions are pure cost.
        let state = self.ports.len() * size_of::<Port>() + self.flows.len() * size_of::<Flow>();
        let prefetch = state > PREFETCH_ABOVE;
        self.prefetching = prefetch;
        while let Some((t, ev)) = self.queue.pop_until(limit) {
            if prefetch {
                if let Some(next) = self.queue.peek_next() {
                    self.prefetch(next);
                }
                // The packet this port delivers now leads to a flow and the
                // port that flow answers on, both cold with many flows: ask
                // for them together before the handler reaches each in turn.
                if let Event::Link(i) = ev {
                    self.prefetch_next_hop(i as usize);
                }
            }
            debug_assert!(t >= self.now, "time went backwards");
            self.now = t;
            self.events += 1;
            self.handle(ev);
            if let (true, Event::Link(i)) = (prefetch, ev) {
                self.prefetch_next_hop(i as usize);
            }
            // Bounds the memory a trace holds between writes.
            if !self.traces.is_empty() && self.events & 4095 == 0 {
                self.flush_traces();
            }
        }
        self.now = self.now.max(limit);
        if self.now == self.end {
            self.advance_ports();
            // A last, partial bin when the duration is not a whole number of bins.
            if self.cut_offering {
                self.mark(crate::cut::MarkKind::Bin);
            }
            self.metrics.close_bin(self.now, &self.ports, &self.flows);
        }
        if !self.traces.is_empty() {
            self.flush_traces();
        }
    }

    /// Asks the CPU to bring the state the event `ev` first touches into
    /// the cache while the current event runs. With thousands of flows a
    /// port or flow is evicted between two of its packets, and each line
    /// an event touches would otherwise be a miss taken one after another;
    /// this overlaps them with the current event's work. A hint: nothing
    /// is read or changed.
    #[inline(always)]
    fn prefetch(&self, ev: Event) {
        match ev {
            Event::Link(i) => {
                if let Some(p) = self.ports.get(i as usize) {
                    prefetch::bytes(p, 0, size_of::<Port>());
                }
            }
            Event::Sender(i) => {
                if let Some(f) = self.flows.get(i as usize) {
                    prefetch::bytes(f, 0, SENDER_HOT);
                }
            }
            Event::Sink(i) => {
                if let Some(f) = self.flows.get(i as usize) {
                    prefetch::bytes(f, 0, 64);
                    prefetch::bytes(f, std::mem::offset_of!(Flow, sink), SINK_HOT);
                }
            }
            _ => {}
        }
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::Link(i) => self.on_link(i as usize),
            Event::Sender(i) => self.on_sender_timer(i as usize),
            Event::Sink(i) => self.on_sink_timer(i as usize),
            Event::FlowStart(i) => self.on_flow_start(i as usize),
            Event::Host(i) => self.on_host(i as usize),
            Event::App(i) => self.on_app(i as usize),
            Event::Agent(i) => self.on_agent_timer(i as usize),
            Event::Read(i) => self.on_read(i as usize),
            Event::Sample => {
                self.sampling_events += 1;
                if self.cut_offering {
                    self.mark(crate::cut::MarkKind::Sample);
                }
                self.advance_ports();
                self.metrics.sample(self.now, &self.ports, &self.flows);
                self.sample_agents();
                self.queue
                    .schedule(self.now + self.metrics.sample_every, Event::Sample);
            }
            Event::Bin => {
                self.sampling_events += 1;
                if self.cut_offering {
                    self.mark(crate::cut::MarkKind::Bin);
                }
                self.advance_ports();
                self.metrics.close_bin(self.now, &self.ports, &self.flows);
                self.queue
                    .schedule(self.now + self.metrics.bin_every, Event::Bin);
            }
        }
    }

    /// Brings every link up to `now` before its queue or counters are read
    /// (links complete transmissions lazily).
    fn advance_ports(&mut self) {
        for i in 0..self.ports.len() {
            // Both ports of a half-duplex link catch up together, once.
            if self.ports[i].medium == NONE || i % 2 == 0 {
                self.catch_up_port(i);
            }
        }
    }

    /// Brings port `i` (and, on a half-duplex link, its partner) up to now
    /// and re-arms it.
    pub(crate) fn catch_up_port(&mut self, i: usize) {
        if self.ports[i].medium == NONE {
            self.ports[i].link.advance(self.now);
            self.rearm_port(i);
        } else if self.ports[i].medium == FED {
            // The other side's offers advance it, as far as they reach.
            self.rearm_port(i);
        } else {
            self.advance_medium(i);
            self.rearm_shared(i);
            self.rearm_shared(i ^ 1);
        }
    }

    /// The two ports of a half-duplex link (`i` is either) and its medium.
    fn medium_pair(
        &mut self,
        i: usize,
    ) -> (&mut HalfDuplex, &mut LinkDir<Packet>, &mut LinkDir<Packet>) {
        let base = i & !1;
        let m = self.ports[base].medium as usize;
        let (lo, hi) = self.ports.split_at_mut(base + 1);
        (&mut self.media[m], &mut lo[base].link, &mut hi[0].link)
    }

    fn advance_medium(&mut self, i: usize) {
        let now = self.now;
        let (m, a, b) = self.medium_pair(i);
        m.advance(a, b, now);
    }

    fn on_link(&mut self, i: usize) {
        let now = self.now;
        if !self.ports[i].armed.fire(now) {
            return;
        }
        if self.ports[i].medium != NONE {
            self.on_shared_link(i);
            return;
        }
        self.ports[i].link.handle_timeout(now);
        let to = self.ports[i].to;
        // `rearm_port` after the deliveries, with the deadline the last
        // look at the delay line found.
        let deadline = loop {
            match self.ports[i].link.deliver_or_deadline(now) {
                Ok(p) => self.arrive(to, p),
                Err(d) => break d,
            }
        };
        self.arm_port(i, deadline);
    }

    /// Prefetches what the packet at the head of port `i`'s delay line
    /// will touch when delivered: the port it is forwarded on, or its
    /// flow's endpoint and the port that endpoint answers on. Called as
    /// the port delivers it, so that these misses overlap rather than
    /// follow one another, and after a delivery for the next packet: a
    /// shared link hands its packets to thousands of flows' ports, and its
    /// next delivery comes a serialization time later, by when the lines
    /// have arrived. A hint: nothing is read that changes a decision.
    #[inline(always)]
    fn prefetch_next_hop(&self, i: usize) {
        let Some(pt) = self.ports.get(i) else { return };
        let Some(p) = pt.link.head() else { return };
        // A long delay line is read in order, each slot written a whole
        // delay ago: ask for the slot a few deliveries on.
        if let Some(later) = pt.link.behind_head(LINE_AHEAD) {
            prefetch::bytes(later, 0, size_of::<Packet>());
        }
        let to = pt.to;
        if self.node_agent[to as usize] != NONE {
            return;
        }
        if p.dst != to {
            let q = self.hops.hop(to as usize, p.dst as usize);
            if let Some(q) = self.ports.get(q as usize) {
                prefetch::bytes(q, 0, size_of::<Port>());
            }
            return;
        }
        let Some(f) = self.flows.get(p.seg.flow.0 as usize) else {
            return;
        };
        prefetch::bytes(f, 0, 64);
        // Which endpoint, from the packet and not from the flow's own line
        // (still on its way): what takes sequence space goes to the
        // receiver. (Only the SYN-ACK is guessed wrong.)
        if p.seg.seq_len() > 0 {
            prefetch::bytes(f, std::mem::offset_of!(Flow, sink), SINK_HOT);
        } else {
            prefetch::bytes(f, 64, SENDER_HOT);
        }
        // The endpoint answers (an ACK, new data) on its way back.
        if p.src != to {
            let back = self.hops.hop(to as usize, p.src as usize);
            if let Some(q) = self.ports.get(back as usize) {
                prefetch::bytes(q, 0, size_of::<Port>());
            }
        }
    }

    /// [`Self::on_link`] for a half-duplex port: the medium catches up both
    /// directions, and both are re-armed (the channel may have passed to
    /// the other one).
    #[inline(never)]
    fn on_shared_link(&mut self, i: usize) {
        let now = self.now;
        if self.ports[i].medium == FED {
            self.on_fed_link(i);
            return;
        }
        self.advance_medium(i);
        let to = self.ports[i].to;
        while let Some(p) = self.ports[i].link.poll_deliver(now) {
            self.arrive(to, p);
        }
        self.rearm_shared(i);
        self.rearm_shared(i ^ 1);
    }

    /// A packet reaches `node`: the node's agent sees it first, if there is
    /// one; otherwise it is routed.
    #[inline]
    pub(crate) fn arrive(&mut self, node: NodeIndex, p: Packet) {
        let a = self.node_agent[node as usize];
        if a != NONE {
            self.agent_packet(a as usize, node, p);
        } else {
            self.route(node, p);
        }
    }

    /// Hands a packet at `node` to the flow's endpoint there (through the
    /// node's processor, if it has one) or forwards it.
    #[inline]
    fn route(&mut self, node: NodeIndex, p: Packet) {
        if p.dst != node {
            self.send(node, p);
            return;
        }
        // An agent's private flow with no agent to take it: nowhere to go.
        let Some(f) = self.flows.get(p.seg.flow.0 as usize) else {
            return;
        };
        let cpu = if node == f.dst { f.dst_cpu } else { f.src_cpu };
        if cpu != NONE {
            self.process(cpu as usize, p, true);
        } else {
            self.deliver(node, p);
        }
    }

    /// Hands a packet addressed to `node` to the flow's endpoint there
    /// (directly, or once the node's processor is done with it).
    #[inline]
    fn deliver(&mut self, node: NodeIndex, p: Packet) {
        let fi = p.seg.flow.0 as usize;
        let now = self.now;
        if node == self.flows[fi].dst {
            self.flows[fi].sink.handle_segment(now, &p.seg);
            if let Some(r) = self.flows[fi].reader {
                let cpu = self.flows[fi].dst_cpu;
                if !r.when_idle || cpu == NONE || self.cpus[cpu as usize].proc.backlog() == 0 {
                    self.app_read(fi);
                }
            }
            self.drain_sink(fi);
        } else if let Some(s) = self.flows[fi].sender.as_mut() {
            if self.metrics.series.tseq {
                self.metrics.tseq.push(ack_row(now, &p.seg));
            }
            s.handle_segment(now, &p.seg);
            self.drain_sender(fi);
        }
    }

    /// Puts a packet on the port `node` routes its destination through.
    fn send(&mut self, node: NodeIndex, p: Packet) {
        let port = self.hops.hop(node as usize, p.dst as usize);
        // One compare for both: routes are validated at load.
        if port >= OFFER {
            debug_assert_ne!(port, NO_ROUTE, "routes are validated at load");
            if port == OFFER {
                self.offer(p);
            }
            return;
        }
        let port = port as usize;
        let now = self.now;
        let pt = &mut self.ports[port];
        if pt.medium != NONE {
            self.send_shared(node, port, p);
            return;
        }
        // With packets already in the delay line the port's wake-up is due
        // by the head's arrival, and a packet put behind them arrives no
        // earlier: nothing to re-arm, and the head's slot (cold with many
        // flows) is not read.
        let idle = pt.link.in_flight() == 0 && !pt.link.is_busy();
        self.enqueue_on(port, node, now, p);
        if self.prefetching {
            self.prefetch_line_tail(port);
        }
        if idle {
            let deadline = self.ports[port].link.sole_arrival();
            self.arm_port(port, deadline);
        } else {
            debug_assert!(
                !{ self.ports[port].armed }.arm(self.ports[port].link.poll_timeout()),
                "port {port}: a wake-up later than its delay line's head"
            );
        }
    }

    /// A long delay line is written in order into slots last written a
    /// ring's length ago: asks for the one a few packets past port
    /// `port`'s last (out of line: a few flows never call it).
    #[inline(never)]
    fn prefetch_line_tail(&self, port: usize) {
        if let Some(last) = self.ports[port].link.line_tail() {
            let ahead = LINE_AHEAD * size_of::<(Instant, Packet)>();
            prefetch::at((last as *const Packet).cast::<i8>().wrapping_add(ahead));
        }
    }

    /// Puts `p`, sent from `node` at `now`, in full-duplex port `port`'s
    /// queue: its high-water mark, or a drop by the sending host's own
    /// interface queue.
    #[inline(always)]
    pub(crate) fn enqueue_on(&mut self, port: usize, node: NodeIndex, now: Instant, p: Packet) {
        let pt = &mut self.ports[port];
        let res = pt.link.enqueue(now, p);
        if res.is_ok() {
            pt.max_queue = pt.max_queue.max(pt.link.queue.len_packets() as u32);
        } else if p.src == node && !merged(&res) {
            // Refused by the sending host's own interface queue.
            if let Some(f) = self.flows.get_mut(p.seg.flow.0 as usize) {
                f.local_drops += 1;
            }
        }
    }

    /// [`Self::send`] on a half-duplex link: through its medium, and both
    /// directions re-armed (the channel may have changed hands).
    #[inline(never)]
    fn send_shared(&mut self, node: NodeIndex, port: usize, p: Packet) {
        let now = self.now;
        let (m, a, b) = self.medium_pair(port);
        let res = m.enqueue(a, b, port & 1, now, p);
        let pt = &mut self.ports[port];
        if res.is_ok() {
            pt.max_queue = pt.max_queue.max(pt.link.queue.len_packets() as u32);
        } else if p.src == node && !merged(&res) {
            if let Some(f) = self.flows.get_mut(p.seg.flow.0 as usize) {
                f.local_drops += 1;
            }
        }
        self.rearm_shared(port);
        self.rearm_shared(port ^ 1);
    }

    /// A packet the flow's endpoint at `node` sends: through the node's
    /// processor (`cpu`, if any) to its interface.
    #[inline]
    fn emit(&mut self, node: NodeIndex, cpu: u32, p: Packet) {
        if cpu == NONE {
            self.send(node, p);
        } else {
            self.process(cpu as usize, p, false);
        }
    }

    #[inline(never)]
    fn agent_packet(&mut self, a: usize, node: NodeIndex, p: Packet) {
        self.agents[a]
            .agent
            .on_packet(self.now, node, p, &mut self.outbox);
        self.flush_agent(a);
    }

    fn on_agent_timer(&mut self, a: usize) {
        if !self.agents[a].armed.fire(self.now) {
            return;
        }
        self.agents[a].agent.on_timeout(self.now, &mut self.outbox);
        self.flush_agent(a);
    }

    /// Sends what the agent put in the outbox (never back into an agent)
    /// and re-arms its timer. The outbox stays in place: routing never
    /// reaches an agent, so nothing adds to it meanwhile. Inline in its
    /// callers: one call per packet an agent takes (242 k in a 20 s
    /// ftp50-pep run), and its prologue and epilogue were about half of
    /// its own 36 instructions per call.
    #[inline(always)]
    pub(crate) fn flush_agent(&mut self, a: usize) {
        let n = self.outbox.packets.len();
        for k in 0..n {
            let (node, p) = self.outbox.packets[k];
            debug_assert!(self.agents[a].nodes.contains(&node));
            self.route(node, p);
        }
        debug_assert_eq!(self.outbox.packets.len(), n, "routing reached an agent");
        self.outbox.packets.clear();
        let slot = &mut self.agents[a];
        let deadline = slot.agent.poll_timeout();
        if slot.armed.arm(deadline) {
            self.queue
                .schedule(deadline.expect("armed"), Event::Agent(a as u32));
        }
    }

    #[cold]
    fn sample_agents(&mut self) {
        for (i, slot) in self.agents.iter().enumerate() {
            for (name, value) in slot.agent.sample() {
                self.agent_rows.push(AgentRow {
                    t: self.now,
                    agent: i as u32,
                    name,
                    value,
                });
            }
        }
    }

    #[inline(never)]
    fn process(&mut self, c: usize, p: Packet, inbound: bool) {
        let now = self.now;
        self.cpus[c].proc.enqueue(now, HostJob { p, inbound });
        self.rearm_cpu(c);
    }

    fn on_host(&mut self, c: usize) {
        let now = self.now;
        if !self.cpus[c].armed.fire(now) {
            return;
        }
        self.cpus[c].proc.handle_timeout(now);
        let node = self.cpus[c].node;
        while let Some(job) = self.cpus[c].proc.poll_ready(now) {
            if job.inbound {
                self.deliver(node, job.p);
            } else {
                self.send(node, job.p);
            }
        }
        if self.cpus[c].proc.backlog() == 0 && !self.cpus[c].readers.is_empty() {
            self.idle_reads(c);
        }
        self.rearm_cpu(c);
    }

    /// The processor went idle: its host's reading applications run.
    #[inline(never)]
    fn idle_reads(&mut self, c: usize) {
        for k in 0..self.cpus[c].readers.len() {
            let fi = self.cpus[c].readers[k] as usize;
            if self.flows[fi].sink.readable() > 0 {
                self.app_read(fi);
                self.drain_sink(fi);
            }
        }
    }

    /// The receiving application takes everything readable, `chunk` bytes
    /// per read (each read may send a window update).
    fn app_read(&mut self, fi: usize) {
        let Some(r) = self.flows[fi].reader else {
            return;
        };
        if r.work == Duration::ZERO {
            while self.flows[fi].sink.read(r.chunk) > 0 {}
            return;
        }
        // One read, then the work it entails; the next read when that is done.
        let now = self.now;
        let f = &mut self.flows[fi];
        if now < f.reader_busy {
            return;
        }
        let n = f.sink.read(r.chunk);
        if n == 0 {
            return;
        }
        let busy = r.work.as_nanos() as u128 * n as u128 / r.chunk as u128;
        f.reader_busy = now + Duration::from_nanos(busy as u64);
        if f.reader_armed.arm(Some(f.reader_busy)) {
            self.queue.schedule(f.reader_busy, Event::Read(fi as u32));
        }
    }

    /// The reader's work is done: it reads again if data waits and the host
    /// lets it run.
    fn on_read(&mut self, fi: usize) {
        if !self.flows[fi].reader_armed.fire(self.now) {
            return;
        }
        let Some(r) = self.flows[fi].reader else {
            return;
        };
        let cpu = self.flows[fi].dst_cpu;
        if !r.when_idle || cpu == NONE || self.cpus[cpu as usize].proc.backlog() == 0 {
            self.app_read(fi);
            self.drain_sink(fi);
        }
    }

    fn rearm_cpu(&mut self, c: usize) {
        let cpu = &mut self.cpus[c];
        if let Some(t) = cpu.proc.poll_timeout() {
            if cpu.armed.arm(Some(t)) {
                self.queue.schedule(t, Event::Host(c as u32));
            }
        }
    }

    /// [`Self::rearm_port`] for a half-duplex port.
    fn rearm_shared(&mut self, i: usize) {
        let pt = &mut self.ports[i];
        if let Some(t) = HalfDuplex::poll_timeout(&pt.link) {
            if pt.armed.arm(Some(t)) {
                self.queue.schedule(t, Event::Link(i as u32));
            }
        }
    }

    #[inline]
    pub(crate) fn rearm_port(&mut self, i: usize) {
        let deadline = self.ports[i].link.poll_timeout();
        self.arm_port(i, deadline);
    }

    /// Schedules port `i`'s event for `deadline` unless one at or before
    /// it is pending.
    #[inline(always)]
    pub(crate) fn arm_port(&mut self, i: usize, deadline: Option<Instant>) {
        if let Some(t) = deadline {
            if self.ports[i].armed.arm(Some(t)) {
                self.queue.schedule(t, Event::Link(i as u32));
            }
        }
    }

    fn on_flow_start(&mut self, fi: usize) {
        let now = self.now;
        let f = &mut self.flows[fi];
        f.sender = Some(TcpSender::new(
            pep_core::FlowId(fi as u32),
            &f.cfg,
            f.app,
            now,
        ));
        if f.generator.is_some() {
            f.generator_armed = Armed::default();
            self.on_app_due(fi);
        }
        self.drain_sender(fi);
    }

    fn on_app(&mut self, fi: usize) {
        if !self.flows[fi].generator_armed.fire(self.now) {
            return;
        }
        self.on_app_due(fi);
        self.drain_sender(fi);
    }

    /// Hands the sender what the application wrote by now; re-arms it.
    fn on_app_due(&mut self, fi: usize) {
        let now = self.now;
        let f = &mut self.flows[fi];
        let Some(g) = f.generator.as_mut() else {
            return;
        };
        let bytes = g.handle_timeout(now);
        let next = g.poll_timeout();
        if let Some(s) = f.sender.as_mut() {
            s.write(bytes);
        }
        if f.generator_armed.arm(Some(next)) {
            self.queue.schedule(next, Event::App(fi as u32));
        }
    }

    fn on_sender_timer(&mut self, fi: usize) {
        let now = self.now;
        let f = &mut self.flows[fi];
        if !f.sender_armed.fire(now) {
            return;
        }
        if let Some(s) = f.sender.as_mut() {
            s.handle_timeout(now);
        }
        self.drain_sender(fi);
    }

    fn on_sink_timer(&mut self, fi: usize) {
        let now = self.now;
        let f = &mut self.flows[fi];
        if !f.sink_armed.fire(now) {
            return;
        }
        f.sink.handle_timeout(now);
        self.drain_sink(fi);
    }

    /// Sends everything the sender wants to send now and re-arms its timer.
    fn drain_sender(&mut self, fi: usize) {
        let now = self.now;
        loop {
            let f = &mut self.flows[fi];
            let Some(s) = f.sender.as_mut() else { return };
            let Some((seg, kind)) = s.poll_transmit(now) else {
                break;
            };
            if !matches!(kind, TxKind::New | TxKind::Syn | TxKind::Fin | TxKind::Ack) {
                f.retransmissions.push(Retransmission {
                    at: now,
                    offset: seg.seq.0.wrapping_sub(f.data_start.0),
                    kind,
                });
            }
            let p = Packet {
                seg,
                src: f.src,
                dst: f.dst,
            };
            let (src, cpu) = (f.src, f.src_cpu);
            if self.metrics.series.tseq {
                self.metrics.tseq.push(sent_row(now, &seg, kind));
            }
            self.emit(src, cpu, p);
        }
        let f = &mut self.flows[fi];
        let deadline = f.sender.as_ref().and_then(|s| s.poll_timeout());
        if f.sender_armed.arm(deadline) {
            self.queue
                .schedule(deadline.expect("armed"), Event::Sender(fi as u32));
        }
    }

    /// Sends the receiver's ACKs and re-arms its delayed-ACK timer.
    fn drain_sink(&mut self, fi: usize) {
        let now = self.now;
        while let Some(seg) = self.flows[fi].sink.poll_transmit(now) {
            let f = &self.flows[fi];
            let p = Packet {
                seg,
                src: f.dst,
                dst: f.src,
            };
            let (dst, cpu) = (f.dst, f.dst_cpu);
            self.emit(dst, cpu, p);
        }
        let f = &mut self.flows[fi];
        let deadline = f.sink.poll_timeout();
        if f.sink_armed.arm(deadline) {
            self.queue
                .schedule(deadline.expect("armed"), Event::Sink(fi as u32));
        }
    }

    /// Retransmissions of a flow, in order.
    pub fn retransmissions(&self, flow: usize) -> &[Retransmission] {
        &self.flows[flow].retransmissions
    }

    /// The flow's sender, once it has started.
    pub fn sender(&self, flow: usize) -> Option<&TcpSender> {
        self.flows[flow].sender.as_ref()
    }

    /// The flow's receiver.
    pub fn sink(&self, flow: usize) -> &TcpSink {
        &self.flows[flow].sink
    }

    /// When the flow starts.
    pub fn flow_start(&self, flow: usize) -> Instant {
        self.flows[flow].start
    }

    /// Index of the flow named `name`.
    pub fn flow_index(&self, name: &str) -> Option<usize> {
        self.flows.iter().position(|f| f.name == name)
    }

    /// Number of flows.
    pub fn flow_count(&self) -> usize {
        self.flows.len()
    }

    /// A link direction's model, by its "a->b" name.
    pub fn link(&self, name: &str) -> Option<&LinkDir<Packet>> {
        let i = self.port_names.iter().position(|p| p == name)?;
        Some(&self.ports[i].link)
    }

    /// The half-duplex medium of the link with direction "a->b", if it has
    /// one.
    pub fn medium(&self, name: &str) -> Option<&HalfDuplex> {
        let i = self.port_names.iter().position(|p| p == name)?;
        self.media.get(self.ports[i].medium as usize)
    }

    /// The processor of the node named `name`, if it has a processing cost.
    pub fn processor(&self, name: &str) -> Option<&Processor<HostJob>> {
        let n = self.info.node_names.iter().position(|n| n == name)? as u32;
        self.cpus.iter().find(|c| c.node == n).map(|c| &c.proc)
    }

    pub fn engine_stats(&self) -> EngineStats {
        EngineStats {
            events: self.events,
            packets_forwarded: self.ports.iter().map(|p| p.link.stats.tx_packets).sum(),
        }
    }

    /// The agent named `name` (see [`crate::agent::NodeAgent::as_any`]).
    pub fn agent(&self, name: &str) -> Option<&dyn NodeAgent> {
        self.agents
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.agent.as_ref())
    }

    /// Puts `agent` on `nodes` (in addition to the scenario's agents): for
    /// tests and programs that build agents in code. Call before running.
    ///
    /// # Panics
    /// If a node already carries an agent, or the run has started.
    pub fn attach_agent(&mut self, name: &str, nodes: &[usize], agent: Box<dyn NodeAgent>) {
        assert_eq!(self.events, 0, "attach agents before running");
        assert!(self.cut.is_none(), "attach agents to an uncut run");
        let i = self.agents.len() as u32;
        for &n in nodes {
            assert_eq!(self.node_agent[n], NONE, "node {n} already has an agent");
            self.node_agent[n] = i;
        }
        self.agents.push(AgentSlot {
            agent,
            armed: Armed::default(),
            name: name.to_string(),
            kind: "custom".to_string(),
            nodes: nodes.iter().map(|&n| n as NodeIndex).collect(),
        });
        self.flush_agent(i as usize);
    }

    /// The agents' sampled values so far (`agents.csv`).
    pub fn agent_rows(&self) -> &[AgentRow] {
        &self.agent_rows
    }

    /// The recorded measures so far.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Seconds of simulated time covered so far, for progress displays.
    pub fn progress(&self) -> f64 {
        if self.end == Instant::ZERO {
            1.0
        } else {
            self.now.as_nanos() as f64 / self.end.as_nanos() as f64
        }
    }

    pub fn info(&self) -> &RunInfo {
        &self.info
    }

    /// Duration of the scenario.
    pub fn duration(&self) -> Duration {
        self.end - Instant::ZERO
    }
}

#[cold]
fn ack_row(t: Instant, seg: &pep_core::Segment) -> TseqRow {
    TseqRow {
        t,
        flow: seg.flow.0,
        event: TseqEvent::Ack,
        seg: *seg,
    }
}

#[cold]
fn sent_row(t: Instant, seg: &pep_core::Segment, kind: TxKind) -> TseqRow {
    TseqRow {
        t,
        flow: seg.flow.0,
        event: TseqEvent::Sent(kind),
        seg: *seg,
    }
}

/// Static memory costs, for the benchmark's report.
#[derive(Clone, Copy, Debug)]
pub struct MemoryFootprint {
    /// A packet waiting in a queue or propagating (its slot in a ring buffer,
    /// plus the arrival time for propagating ones).
    pub per_packet: usize,
    /// A flow: endpoints, configuration and engine bookkeeping.
    pub per_flow: usize,
    /// A link direction: its queue, delay line and transmitter, before
    /// the packets in them.
    pub per_port: usize,
}

pub fn memory_footprint() -> MemoryFootprint {
    MemoryFootprint {
        per_packet: std::mem::size_of::<(Instant, Packet)>(),
        // The sender is inside the flow (boxed parts, absent unless their
        // options are on, are not counted).
        per_flow: std::mem::size_of::<Flow>(),
        per_port: std::mem::size_of::<Port>(),
    }
}

/// An ACK the Smart ACK Dropper folded into a queued one: not a loss.
fn merged(res: &Result<(), (Packet, pep_core::queue::DropReason)>) -> bool {
    matches!(res, Err((_, pep_core::queue::DropReason::Merged)))
}
