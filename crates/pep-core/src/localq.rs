//! Split-start's local queue for a real tunnel (Gschwandtner 2009, section
//! 3.2, carried from the simulator's [`crate::splitpair::Credit`] to a
//! daemon whose receiving stack is the kernel's TCP).
//!
//! Every data segment of an intercepted flow waits in a queue (DropTail or
//! RED: the same [`Queue`] models the simulator's links use) in front of
//! split-start's TCP stack, and leaves it into the stack only while the
//! credit allows. So when the tunnel cannot keep up, the queue fills and
//! its policy drops, and the senders back off by loss.
//!
//! **Credit.** The thesis charges a packet when it leaves the queue and
//! earns credit back when the tunnel sends. Here a flow's charge is its
//! *pending* bytes: admitted into the stack and not yet read by the
//! daemon into the tunnel (`admitted - read`, both counts of the same
//! payload bytes, so nothing drifts). The daemon reads a flow only as fast
//! as the tunnel takes its bytes, so pending bytes are exactly the backlog
//! the thesis bounds by `buffer_start`: `credit = buffer_start -
//! sum(charge)`; the head leaves while the credit is at least one
//! full-size packet.
//!
//! **Why it cannot stall** (the thesis's credit can: docs/gschwandtner.md):
//! * admitted bytes are counted in sequence space (the highest sequence
//!   admitted), so a duplicate or a retransmission costs nothing;
//! * a segment entirely below that highest sequence (a retransmission
//!   filling a hole in the stack, or a duplicate) passes at once, never
//!   waiting behind new data: a hole can always be filled, so bytes held
//!   behind it are always eventually read;
//! * a flow whose bytes have not been read for `stall_after` is charged at
//!   most `buffer_start / flows`: a flow held for its own reason (its
//!   receiver behind split-end stopped reading and its per-flow tunnel
//!   credit is spent) holds at most its share, and the others keep the
//!   rest. Its sender is then held back by its own TCP window at
//!   split-start, as without the queue. A flow that is being read is
//!   charged in full, so the flows that move never have more than
//!   `buffer_start` (and one packet) admitted and unread. When the tunnel
//!   itself stops, every flow is capped and the caps add up to
//!   `buffer_start`: the gate still closes.
//!
//! Sans-IO: time is passed in, packets are opaque handles `P` handed back
//! with a verdict; the driver reports how much of each flow it has read.

use core::hash::Hash;

use crate::flow_map::FlowMap;
use crate::link::LinkItem;
use crate::queue::{DropReason, Queue, QueueLimit, QueueStats, Queued, RedParams};
use crate::rng::Stream;
use crate::segment::Segment;
use crate::seq::Seq;
use crate::time::{Duration, Instant};

/// The queue's drop policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Policy {
    DropTail,
    Red(RedParams),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocalQueueConfig {
    pub policy: Policy,
    /// Packets that may wait (RED's hard limit too).
    pub limit: u32,
    /// Bytes admitted into the stack and not yet read, over all flows.
    pub buffer_start: u64,
    /// A full-size packet: the credit the head needs to leave.
    pub packet: u32,
    /// A flow with bytes pending and none read for this long is held for
    /// its own reason: charged its share at most.
    pub stall_after: Duration,
}

/// A data segment as the queue sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival<K> {
    pub flow: K,
    pub seq: u32,
    /// TCP payload bytes.
    pub payload: u32,
    /// Bytes on the wire (IP datagram).
    pub wire: u32,
}

/// What became of a packet handed to the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Into the stack.
    Accept,
    /// Dropped by the policy.
    Drop(DropReason),
}

/// Counters (the queue's own, with its drops by reason, are in `queue`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LocalQueueStats {
    /// Data segments offered.
    pub arrived: u64,
    /// Segments entirely below their flow's highest admitted sequence
    /// (retransmissions, duplicates): passed at once.
    pub passed_old: u64,
    /// Segments that left the queue into the stack, and their new payload
    /// bytes.
    pub admitted: u64,
    pub admitted_bytes: u64,
    /// Checks that stopped with packets waiting for lack of credit.
    pub blocked_checks: u64,
    pub queue: QueueStats,
}

struct Held<K, P> {
    seg: Segment,
    flow: K,
    handle: P,
}

impl<K, P> Queued for Held<K, P> {
    fn wire_len(&self) -> u32 {
        self.seg.wire_len()
    }
}

impl<K, P> LinkItem for Held<K, P> {
    fn segment(&self) -> &Segment {
        &self.seg
    }
}

#[derive(Clone, Copy, Debug)]
struct FlowAcct {
    /// Just past the highest payload byte admitted.
    high: Seq,
    /// Payload bytes admitted (growth of `high`).
    admitted: u64,
    /// Bytes the driver has read of the flow.
    read: u64,
    /// When `read` last grew, or bytes became pending with none before.
    progress_at: Instant,
}

impl FlowAcct {
    fn pending(&self) -> u64 {
        self.admitted.saturating_sub(self.read)
    }
    /// What the flow is charged at `now`, with `cap` its share.
    fn charge(&self, now: Instant, cap: u64, stall_after: Duration) -> u64 {
        let p = self.pending();
        if now.saturating_since(self.progress_at) > stall_after {
            p.min(cap)
        } else {
            p
        }
    }
}

/// The local queue and its credit gate.
pub struct LocalQueue<K, P> {
    cfg: LocalQueueConfig,
    q: Queue<Held<K, P>>,
    flows: FlowMap<K, FlowAcct>,
    stats: LocalQueueStats,
}

impl<K: Hash + Eq + Copy, P> LocalQueue<K, P> {
    /// `rng` draws RED's random numbers.
    pub fn new(cfg: LocalQueueConfig, rng: Stream) -> Self {
        let q = match cfg.policy {
            Policy::DropTail => Queue::drop_tail(QueueLimit::Packets(cfg.limit)),
            Policy::Red(mut p) => {
                p.limit = QueueLimit::Packets(cfg.limit);
                Queue::red(p, rng)
            }
        };
        LocalQueue {
            cfg,
            q,
            flows: FlowMap::default(),
            stats: LocalQueueStats::default(),
        }
    }

    /// The most a flow is charged: its share of `buffer_start`.
    fn cap(&self) -> u64 {
        self.cfg.buffer_start / self.flows.len().max(1) as u64
    }

    /// Bytes charged against `buffer_start` at `now`.
    pub fn charged(&self, now: Instant) -> u64 {
        let cap = self.cap();
        let st = self.cfg.stall_after;
        self.flows.values().map(|f| f.charge(now, cap, st)).sum()
    }

    /// `buffer_start` less what is charged (negative by less than a packet
    /// at most).
    pub fn credit(&self, now: Instant) -> i64 {
        self.cfg.buffer_start as i64 - self.charged(now) as i64
    }

    /// A data segment arrived: it passes at once (nothing new in it), is
    /// dropped by the policy, or waits; then the queue is checked. Every
    /// packet decided is handed to `out` with its verdict.
    pub fn arrive(
        &mut self,
        now: Instant,
        a: Arrival<K>,
        handle: P,
        out: &mut impl FnMut(P, Verdict),
    ) {
        self.stats.arrived += 1;
        let end = Seq(a.seq) + a.payload;
        match self.flows.get(&a.flow) {
            Some(f) if end.le(f.high) => {
                self.stats.passed_old += 1;
                out(handle, Verdict::Accept);
                return;
            }
            Some(_) => {}
            None => {
                // The first data the queue sees of a flow: nothing of it
                // has been read, so its sequence space starts here.
                self.flows.insert(
                    a.flow,
                    FlowAcct {
                        high: Seq(a.seq),
                        admitted: 0,
                        read: 0,
                        progress_at: now,
                    },
                );
            }
        }
        let seg = Segment {
            seq: Seq(a.seq),
            len: a.payload,
            hdr_len: a.wire.saturating_sub(a.payload).min(u16::MAX as u32) as u16,
            ..Default::default()
        };
        let held = Held {
            seg,
            flow: a.flow,
            handle,
        };
        if let Err((h, why)) = self.q.enqueue(now, held) {
            out(h.handle, Verdict::Drop(why));
        }
        self.check(now, out);
    }

    /// Lets packets into the stack, in order, while the credit allows.
    pub fn check(&mut self, now: Instant, out: &mut impl FnMut(P, Verdict)) {
        if self.q.is_empty() {
            return;
        }
        let cap = self.cap();
        let st = self.cfg.stall_after;
        let mut charged = self.charged(now);
        while !self.q.is_empty() {
            if charged + self.cfg.packet as u64 > self.cfg.buffer_start {
                self.stats.blocked_checks += 1;
                break;
            }
            let Some(h) = self.q.dequeue(now) else { break };
            let end = h.seg.seq + h.seg.len;
            if let Some(f) = self.flows.get_mut(&h.flow) {
                if end.gt(f.high) {
                    let before = f.charge(now, cap, st);
                    // Bytes between `high` and this segment's start are a
                    // hole (lost or dropped upstream): charged until read,
                    // as the thesis charges what it admits.
                    let new = end.bytes_since(f.high) as u64;
                    if f.pending() == 0 {
                        // Nothing was waiting to be read: the wait for a
                        // read starts now.
                        f.progress_at = now;
                    }
                    f.high = end;
                    f.admitted += new;
                    charged = charged - before + f.charge(now, cap, st);
                    self.stats.admitted_bytes += new;
                }
            }
            self.stats.admitted += 1;
            out(h.handle, Verdict::Accept);
        }
    }

    /// The driver has read `total` bytes of `flow` in all (cumulative),
    /// as of `now`.
    pub fn set_read(&mut self, flow: &K, total: u64, now: Instant) {
        if let Some(f) = self.flows.get_mut(flow) {
            if total > f.read {
                f.read = total;
                f.progress_at = now;
            }
        }
    }

    /// `flow` is gone (closed, reset): it is charged no more.
    pub fn end_flow(&mut self, flow: &K) {
        self.flows.remove(flow);
    }

    /// Flows charged now.
    pub fn flows(&self) -> impl Iterator<Item = &K> {
        self.flows.keys()
    }

    /// Everything still waiting goes into the stack (shutting down).
    pub fn release_all(&mut self, now: Instant, out: &mut impl FnMut(P, Verdict)) {
        while let Some(h) = self.q.dequeue(now) {
            out(h.handle, Verdict::Accept);
        }
    }

    pub fn len_packets(&self) -> usize {
        self.q.len_packets()
    }
    pub fn len_bytes(&self) -> u64 {
        self.q.len_bytes()
    }
    pub fn stats(&self) -> LocalQueueStats {
        LocalQueueStats {
            queue: self.q.stats,
            ..self.stats
        }
    }
    pub fn config(&self) -> &LocalQueueConfig {
        &self.cfg
    }
}

#[cfg(test)]
mod tests;
