//! The packet path without its sockets: frames in (with the side they
//! arrived on and `now`), frames out (with the side to send them on). The
//! I/O thread ([`super::io`]) feeds it from `AF_PACKET` sockets with the
//! real clock; tests and the bench feed it directly.
//!
//! Frames from `b` go to `a` untouched, unless the watermark stage
//! ([`super::watermark`]) is on: then TCP data from `b` (the senders) goes
//! through the core's premature-ACK PEP, and the receivers' ACKs from `a`
//! through it before anything else. Frames from `a` to `b` pass, in
//! order, the stages configured:
//!
//! 1. ACK regeneration (`pep_core::ack_regen`), at the far end of a slow
//!    link: each pure ACK that advances its flow by `n` segments leaves as
//!    `1 + R (n - 1)` ACKs, built from the arriving frame with the ACK
//!    number rewritten;
//! 2. ACK thinning (`pep_core::ack_thin`): every N-th pure ACK of a flow;
//! 3. the egress queue at `rate` (`pep_core::link::LinkDir`, the model the
//!    lab's emulator runs), DropTail with the Smart ACK Dropper
//!    (`pep_core::sad`) in front if asked; frames leave it as the rate
//!    allows, rewritten where SAD changed their ACK fields.
//!
//! Frames that are not TCP, or whose headers do not parse, have no segment
//! the mechanisms may rewrite: they pass every stage untouched (through the
//! queue, which they share with everything else going to `b`), counted as
//! `non_tcp` or `malformed`. Every per-flow table is bounded by
//! `max_flows`.

use std::collections::{HashMap, VecDeque};

use pep_core::ack_regen::AckRegen;
use pep_core::ack_thin::{AckThin, AckThinConfig};
use pep_core::link::{LinkDir, LinkItem};
use pep_core::loss::LossModel;
use pep_core::queue::{DropReason, Qdisc, Queue, QueueLimit};
use pep_core::sad::AckFields;
use pep_core::{Duration, FlowId, Instant, Segment};
use pep_io::frame::{FlowTable, Frame, WriteBack};
use pep_wire::{parse_ip_packet, EthernetRepr, Parsed, ETHERTYPE_IPV4, ETHERTYPE_IPV6};

use super::watermark::{Out, WatermarkStage, WatermarkStats};
use super::PacketSettings;

/// Which interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    A,
    B,
}

/// Counters of the packet path (see [`super::metrics`] for their names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketStats {
    /// Frames received on `a` and on `b`.
    pub received: [u64; 2],
    /// Frames handed out for sending (to `b`, to `a`).
    pub passed: [u64; 2],
    /// Frames the egress queue dropped because it was full.
    pub dropped: u64,
    /// Pure ACKs SAD merged into a queued ACK of their flow (or found
    /// older than one).
    pub merged: u64,
    /// Pure ACKs ACK thinning dropped (a newer ACK of the flow passed).
    pub thinned: u64,
    /// Frames whose bytes were rewritten (SAD).
    pub rewritten: u64,
    /// Frames a rewrite could not be written into; expected zero.
    pub rewrite_failures: u64,
    /// ACKs created by ACK regeneration beyond those that arrived.
    pub regenerated: u64,
    /// Frames that are not TCP over IPv4/IPv6 (passed untouched).
    pub non_tcp: u64,
    /// Frames whose Ethernet, IP or TCP headers do not parse (passed
    /// untouched).
    pub malformed: u64,
    /// TCP connections with state now (the flow table).
    pub flows: u64,
    /// Connections whose state was dropped to make room (any table).
    pub flows_evicted: u64,
    /// Packets in the egress queue now.
    pub queued: u64,
    /// The watermark stage (all zero when it is off).
    pub watermark: WatermarkStats,
}

/// ACK regeneration with the frames it builds ACKs from.
struct Regen {
    ar: AckRegen,
    /// The latest ACK frame of each flow: regenerated ACKs are copies of
    /// it with their own ACK fields. Bounded like the flow table.
    templates: HashMap<FlowId, Vec<u8>>,
    order: VecDeque<FlowId>,
    max: usize,
    evicted: u64,
}

impl Regen {
    fn remember(&mut self, flow: FlowId, bytes: &[u8]) {
        match self.templates.get_mut(&flow) {
            Some(t) => {
                t.clear();
                t.extend_from_slice(bytes);
            }
            None => {
                if self.templates.len() >= self.max {
                    if let Some(old) = self.order.pop_front() {
                        self.templates.remove(&old);
                        self.evicted += 1;
                    }
                }
                self.templates.insert(flow, bytes.to_vec());
                self.order.push_back(flow);
            }
        }
    }
}

/// The packet path.
pub struct Engine {
    flows: FlowTable,
    regen: Option<Regen>,
    thin: Option<AckThin<Frame>>,
    queue: Option<LinkDir<Frame>>,
    watermark: Option<WatermarkStage>,
    /// The watermark stage's output, reused.
    wm_out: Out,
    out: VecDeque<(Side, Vec<u8>)>,
    stats: PacketStats,
}

impl Engine {
    pub fn new(s: &PacketSettings) -> Engine {
        let queue = s.rate.map(|rate| {
            let q = Queue::drop_tail(QueueLimit::Packets(s.queue));
            let q = if s.sad { Queue::sad(q, s.max_flows) } else { q };
            LinkDir::new(rate, Duration::ZERO, q, LossModel::None)
        });
        Engine {
            flows: FlowTable::new(s.max_flows).log_evictions(),
            regen: s.ack_regen.map(|cfg| Regen {
                ar: AckRegen::new(cfg),
                templates: HashMap::new(),
                order: VecDeque::new(),
                max: s.max_flows,
                evicted: 0,
            }),
            thin: s.ack_thin.map(|n| {
                AckThin::new(AckThinConfig {
                    n,
                    max_hold: s.max_hold,
                    max_flows: s.max_flows,
                })
            }),
            queue,
            watermark: s.watermark.map(WatermarkStage::new),
            wm_out: Vec::new(),
            out: VecDeque::new(),
            stats: PacketStats::default(),
        }
    }

    /// A frame (a whole Ethernet frame) arrived on `side` at `now`.
    pub fn on_frame(&mut self, now: Instant, side: Side, bytes: Vec<u8>) {
        let mut f = Frame::parse(bytes, &mut self.flows);
        self.forget_evicted();
        if f.segment_mut().is_none() {
            match classify(&f.bytes) {
                Kind::Malformed => self.stats.malformed += 1,
                Kind::NotTcp => self.stats.non_tcp += 1,
            }
        }
        match side {
            Side::B => {
                self.stats.received[1] += 1;
                match &mut self.watermark {
                    Some(w) => {
                        w.from_sender(now, f, &mut self.wm_out);
                        self.send_watermark_out(now);
                    }
                    None => self.emit(Side::A, f),
                }
            }
            Side::A => {
                self.stats.received[0] += 1;
                match &mut self.watermark {
                    Some(w) => {
                        w.from_dest(now, f, &mut self.wm_out);
                        self.send_watermark_out(now);
                    }
                    None => self.stage_regen(now, f),
                }
                self.advance(now);
            }
        }
    }

    /// What the watermark stage made: to `a` at once, to `b` through the
    /// egress queue if there is one (the other `a`-to-`b` stages do not
    /// run with it).
    fn send_watermark_out(&mut self, now: Instant) {
        let mut v = std::mem::take(&mut self.wm_out);
        for (side, bytes) in v.drain(..) {
            match side {
                Side::A => {
                    self.stats.passed[1] += 1;
                    self.out.push_back((Side::A, bytes));
                }
                Side::B => {
                    let f = Frame::parse(bytes, &mut self.flows);
                    self.forget_evicted();
                    self.stage_queue(now, f);
                }
            }
        }
        self.wm_out = v;
    }

    /// Connections the flow table evicted come back under new ids: what
    /// thinning holds under an old id leaves now, before anything of the
    /// new one (held, it would leave after the connection's newer ACKs).
    fn forget_evicted(&mut self) {
        while let Some(id) = self.flows.take_evicted() {
            if let Some(t) = &mut self.thin {
                t.handle_flow_gone(id);
            }
        }
    }

    fn stage_regen(&mut self, now: Instant, mut f: Frame) {
        let Some(r) = &mut self.regen else {
            return self.stage_thin(now, f);
        };
        if !(f.seg.is_pure_ack() && f.segment_mut().is_some()) {
            return self.stage_thin(now, f);
        }
        r.remember(f.seg.flow, &f.bytes);
        r.ar.handle_ack(now, f.seg);
    }

    fn stage_thin(&mut self, now: Instant, f: Frame) {
        match &mut self.thin {
            Some(t) => t.handle(now, f),
            None => self.stage_queue(now, f),
        }
    }

    fn stage_queue(&mut self, now: Instant, f: Frame) {
        let Some(q) = &mut self.queue else {
            return self.emit(Side::B, f);
        };
        if let Err((_, why)) = q.enqueue(now, f) {
            match why {
                DropReason::Merged => self.stats.merged += 1,
                _ => self.stats.dropped += 1,
            }
        }
    }

    fn emit(&mut self, to: Side, mut f: Frame) {
        match f.write_back() {
            WriteBack::Unchanged => {}
            WriteBack::Rewritten => self.stats.rewritten += 1,
            WriteBack::Partial => self.stats.rewrite_failures += 1,
        }
        self.stats.passed[(to == Side::A) as usize] += 1;
        self.out.push_back((to, f.bytes));
    }

    /// Runs every stage up to `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    fn advance(&mut self, now: Instant) {
        if let Some(w) = &mut self.watermark {
            w.handle_timeout(now, &mut self.wm_out);
            self.send_watermark_out(now);
        }
        if let Some(r) = &mut self.regen {
            let mut built = vec![];
            while let Some(seg) = r.ar.poll_transmit(now) {
                if let Some(f) = build_ack(&r.templates, &mut self.flows, &seg) {
                    built.push(f);
                }
            }
            for f in built {
                self.stage_thin(now, f);
            }
        }
        if let Some(t) = &mut self.thin {
            let ready: Vec<Frame> = std::iter::from_fn(|| t.poll_transmit(now)).collect();
            for f in ready {
                self.stage_queue(now, f);
            }
        }
        if let Some(q) = &mut self.queue {
            q.handle_timeout(now);
            let mut done = vec![];
            while let Some(f) = q.poll_deliver(now) {
                done.push(f);
            }
            for f in done {
                self.emit(Side::B, f);
            }
        }
    }

    /// The next frame to send, and where.
    pub fn poll_transmit(&mut self) -> Option<(Side, Vec<u8>)> {
        self.out.pop_front()
    }

    /// When [`Self::handle_timeout`] is next due (possibly early).
    pub fn poll_timeout(&self) -> Option<Instant> {
        [
            self.regen.as_ref().and_then(|r| r.ar.poll_timeout()),
            self.thin.as_ref().and_then(|t| t.poll_timeout()),
            self.queue.as_ref().and_then(|q| q.poll_timeout()),
            self.watermark.as_ref().and_then(|w| w.poll_timeout()),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    pub fn stats(&self) -> PacketStats {
        let mut s = self.stats;
        s.flows = self.flows.len() as u64;
        s.flows_evicted = self.flows.evicted();
        if let Some(r) = &self.regen {
            s.regenerated = r.ar.stats.regenerated;
            s.flows_evicted += r.evicted;
        }
        if let Some(t) = &self.thin {
            s.thinned = t.stats.thinned;
            s.flows_evicted += t.stats.evicted;
        }
        if let Some(w) = &self.watermark {
            s.watermark = w.stats();
            s.flows_evicted += s.watermark.evicted;
        }
        if let Some(q) = &self.queue {
            s.queued = q.queue.len_packets() as u64;
            if let Qdisc::Sad(sq) = &q.queue.disc {
                s.flows_evicted += sq.stats().evicted;
            }
        }
        s
    }

    /// Most entries any per-flow table holds now (for the memory bound).
    pub fn largest_table(&self) -> usize {
        let mut n = self.flows.len();
        if let Some(r) = &self.regen {
            n = n.max(r.templates.len());
        }
        if let Some(t) = &self.thin {
            n = n.max(t.tracked_flows());
        }
        if let Some(w) = &self.watermark {
            n = n.max(w.tracked_flows());
        }
        if let Some(q) = &self.queue {
            if let Qdisc::Sad(sq) = &q.queue.disc {
                n = n.max(sq.sad.tracked_flows());
            }
        }
        n
    }
}

/// A copy of the flow's latest ACK frame carrying `seg`'s ACK fields.
fn build_ack(
    templates: &HashMap<FlowId, Vec<u8>>,
    flows: &mut FlowTable,
    seg: &Segment,
) -> Option<Frame> {
    let mut bytes = templates.get(&seg.flow)?.clone();
    // The template may be a newer ACK than the one this ACK regenerates (a
    // train the flow's next ACK cut short): the sequence number and flags
    // (ECE) are the regenerated ACK's own, as the simulator sends them.
    if let Some(ip) = bytes.get_mut(EthernetRepr::HEADER_LEN..) {
        let _ = pep_wire::rewrite_tcp_seq(ip, seg.seq.0);
        let _ = pep_wire::rewrite_tcp_flags(ip, seg.flags.0);
    }
    let mut f = Frame::parse(bytes, flows);
    let s = f.segment_mut()?;
    let mut fields = AckFields::of(seg);
    // The template is the flow's latest real ACK, which may be newer than
    // the one this ACK regenerates and carry no SACK option to hold its
    // blocks: then it goes without them (a receiver may send fewer blocks
    // than it knows, RFC 2018; the real ACKs carry them all), rather than
    // leave with a header half written. Fewer slots than blocks: the
    // rewrite keeps the first, most recent ones.
    if s.sack.is_empty() {
        fields.sack = Default::default();
    }
    fields.write(s);
    Some(f)
}

enum Kind {
    NotTcp,
    Malformed,
}

/// Why a frame has no rewritable segment.
fn classify(frame: &[u8]) -> Kind {
    let Ok((eth, ip)) = EthernetRepr::parse(frame) else {
        return Kind::Malformed;
    };
    if eth.ethertype != ETHERTYPE_IPV4 && eth.ethertype != ETHERTYPE_IPV6 {
        return Kind::NotTcp;
    }
    match parse_ip_packet(ip) {
        Ok(Parsed::NotTcp(_)) => Kind::NotTcp,
        // A TCP frame that parses is rewritable; one that does not is
        // malformed.
        Ok(Parsed::Tcp(_)) | Err(_) => Kind::Malformed,
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
pub(crate) mod tests;
