//! Split start's local queue and its credit across the tunnel
//! (Gschwandtner 2009, sections 3.2 and 5.1.2): ONE machine that the
//! simulator's `split-pair` agent and the daemon's split-start
//! (`[tunnel.local_queue]`) both drive.
//!
//! Every data segment of a covered flow waits in a queue (DropTail, RED,
//! or one DropTail queue per flow served fairly) in front of split start's
//! receiving TCP stack, and leaves it only while the credit allows. When
//! the tunnel cannot keep up, the queue fills and its policy drops, and the
//! senders back off by loss.
//!
//! ## Credit policies ([`CreditPolicy`])
//! * [`CreditPolicy::Thesis`], as the thesis wrote it: `buffer_count_`
//!   starts at `buffer_start_`; a packet leaves only while it is at least
//!   one full packet and pays its wire size; every packet the tunnel sends
//!   ([`SplitStartQueue::handle_output`], retransmissions included: the
//!   thesis modifies `output()`, which ns-2 calls for them too) earns its
//!   size back. It can stall for good: a packet admitted behind a hole, a
//!   duplicate or a SYN writes nothing to the tunnel, so once such packets
//!   hold the credit and the tunnel has sent its backlog, nothing earns
//!   credit again (docs/gschwandtner.md, "the thesis's credit can stall").
//! * [`CreditPolicy::Released`]: the thesis's counter, but an admitted
//!   packet costs nothing until its bytes are written to the tunnel
//!   ([`SplitStartQueue::handle_written`]: payload plus one header per
//!   segment's worth). Held and duplicate data cost nothing, so the leak
//!   above is gone; the backlog bound holds up to one hole-filling
//!   release. The reproduction of the thesis runs this one.
//! * [`CreditPolicy::StallProof`]: needs no count of tunnel
//!   transmissions, so a daemon whose tunnel is a QUIC stack can run it. A
//!   flow's charge is its *pending* bytes: admitted in sequence space and
//!   not yet written to the tunnel; `credit = buffer_start - sum(charge)`.
//!   It cannot stall: a duplicate or a retransmission costs nothing (counted
//!   in sequence space) and passes at once without waiting behind new data
//!   (a hole can always be filled, so the bytes behind it are always
//!   eventually written: a filler that waited in the queue behind the
//!   packet past its hole passes as that one leaves); a flow with bytes pending and none written for
//!   `stall_after` (its receiver behind split end stopped reading) is
//!   charged at most `buffer_start / flows`, so it holds its share and the
//!   others keep the rest. When the tunnel itself stops, every flow is
//!   capped and the caps add up to `buffer_start`: the gate still closes.
//!
//! ## When the queue is checked ([`CheckMode`])
//! [`CheckMode::Poll`] is the thesis's `SendTimer`: `checkSend()` every
//! `interval`. [`CheckMode::Event`] needs no timer: a check runs after
//! each arrival that joins the queue and each input that raises the credit
//! (a tunnel transmission; bytes written, for the stall-proof credit).
//! [`CheckMode::EventAndPoll`] does both: the stall-proof credit also
//! rises with time alone (a flow's cap starts after `stall_after`).
//!
//! ## Driver contract (an event machine, no callbacks)
//! Inputs: [`SplitStartQueue::handle_arrival`],
//! [`SplitStartQueue::handle_output`], [`SplitStartQueue::handle_written`],
//! [`SplitStartQueue::handle_timeout`], [`SplitStartQueue::end_flow`],
//! [`SplitStartQueue::release_all`]. After any input the driver drains
//! [`SplitStartQueue::poll_action`] until `None`, acting on each
//! [`Action`] before taking the next: an admitted packet goes into the
//! stack at once, and what it releases into the tunnel is reported
//! ([`SplitStartQueue::handle_written`], [`SplitStartQueue::handle_output`])
//! before the next `poll_action`, which is how the thesis's `checkSend()`
//! loop sees credit earned within itself. Then it re-reads
//! [`SplitStartQueue::poll_timeout`].

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::hash::Hash;

use crate::flow_map::FlowMap;
use crate::link::LinkItem;
use crate::queue::{DropReason, Queue, QueueLimit, QueueStats, RedParams};
use crate::rng::Stream;
use crate::seq::Seq;
use crate::time::{Duration, Instant};

/// A packet the local queue holds: a queued link item that names its flow.
pub trait FlowItem: LinkItem {
    type Flow: Copy + Eq + Hash;
    fn flow(&self) -> Self::Flow;
}

/// The queue's discipline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Discipline {
    /// One FIFO of `limit` packets, tail drop (the thesis's default).
    DropTail,
    /// One FIFO, RED (its `limit` set to the config's).
    Red(RedParams),
    /// One DropTail queue of `per_flow` packets per flow, served by deficit
    /// round robin with a quantum of [`FAIR_QUANTUM`] bytes (beyond the
    /// thesis: docs/gschwandtner.md, "fair scheduling").
    Fair { per_flow: u32 },
}

/// How the credit is counted (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreditPolicy {
    Thesis,
    Released,
    StallProof { stall_after: Duration },
}

/// When the queue is looked at (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckMode {
    /// `checkSend()` every `interval` (the thesis: 10 ms in table 5.1, 1 ms
    /// in chapter 3, 3 ms in its example script).
    Poll { interval: Duration },
    /// After every arrival and every credit increase; no timer.
    Event,
    /// Both.
    EventAndPoll { interval: Duration },
}

impl CheckMode {
    fn interval(self) -> Option<Duration> {
        match self {
            CheckMode::Poll { interval } | CheckMode::EventAndPoll { interval } => Some(interval),
            CheckMode::Event => None,
        }
    }
    fn on_events(self) -> bool {
        !matches!(self, CheckMode::Poll { .. })
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SplitStartConfig {
    pub discipline: Discipline,
    /// Packets that may wait (DropTail's and RED's limit).
    pub limit: u32,
    /// `buffer_start_`: the credit in bytes (thesis: 200 x 1040).
    pub buffer_start: u64,
    /// `packet_size_ + header_size_`: the credit the head needs to leave.
    pub packet: u32,
    /// Header bytes per segment ([`CreditPolicy::Released`]'s charge).
    pub header: u16,
    pub credit: CreditPolicy,
    pub check: CheckMode,
}

/// What the driver does with a packet.
#[derive(Debug, PartialEq, Eq)]
pub enum Action<I> {
    /// Into the receiving stack.
    Admit(I),
    /// Dropped by the queue's policy.
    Drop(I, DropReason),
}

/// Counters (the queue's own, with its drops by reason, are in `queue`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitStartStats {
    /// Data segments offered.
    pub arrived: u64,
    /// Segments entirely below their flow's highest admitted sequence,
    /// passed at once ([`CreditPolicy::StallProof`] only).
    pub passed_old: u64,
    /// Packets that left the queue into the stack, and their wire bytes.
    pub admitted: u64,
    pub admitted_bytes: u64,
    /// Payload bytes admitted that are new in their flow's sequence space
    /// ([`CreditPolicy::StallProof`] only).
    pub admitted_new_bytes: u64,
    /// Credit earned by tunnel transmissions, and of it by retransmissions.
    pub added_bytes: u64,
    pub added_retx_bytes: u64,
    /// Checks run, and those that stopped with packets waiting for lack of
    /// credit.
    pub checks: u64,
    pub blocked_checks: u64,
    pub queue: QueueStats,
}

/// The fair discipline's quantum: one thesis packet (1000 + 40 bytes).
pub const FAIR_QUANTUM: u32 = 1040;

struct FairFlow<I> {
    q: VecDeque<I>,
    deficit: u32,
}

/// Deficit round robin over per-flow DropTail queues: each backlogged
/// flow gets the same bytes per round.
struct FairQueue<I: FlowItem> {
    slot: FlowMap<I::Flow, usize>,
    flows: Vec<FairFlow<I>>,
    /// Slots of ended flows, reused before new ones (a daemon's flows
    /// come and go for ever).
    free: Vec<usize>,
    /// Backlogged flows (slots) in service order.
    active: VecDeque<usize>,
    limit: usize,
    len: usize,
    bytes: u64,
    stats: QueueStats,
}

impl<I: FlowItem> FairQueue<I> {
    fn new(per_flow: u32) -> Self {
        FairQueue {
            slot: FlowMap::default(),
            flows: Vec::new(),
            free: Vec::new(),
            active: VecDeque::new(),
            limit: per_flow.max(1) as usize,
            len: 0,
            bytes: 0,
            stats: QueueStats::default(),
        }
    }

    fn enqueue(&mut self, p: I) -> Result<(), (I, DropReason)> {
        let s = match self.slot.get(&p.flow()) {
            Some(&s) => s,
            None => {
                let s = self.free.pop().unwrap_or_else(|| {
                    self.flows.push(FairFlow {
                        q: VecDeque::new(),
                        deficit: 0,
                    });
                    self.flows.len() - 1
                });
                self.slot.insert(p.flow(), s);
                s
            }
        };
        let f = &mut self.flows[s];
        let wire = p.wire_len() as u64;
        if f.q.len() >= self.limit {
            self.stats.count_drop(DropReason::Overflow, wire);
            return Err((p, DropReason::Overflow));
        }
        if f.q.is_empty() {
            self.active.push_back(s);
        }
        f.q.push_back(p);
        self.len += 1;
        self.bytes += wire;
        self.stats.enqueued += 1;
        self.stats.enqueued_bytes += wire;
        Ok(())
    }

    /// `flow` ended: its slot is reused, unless packets of it still wait
    /// (then it stays until a later end).
    fn forget(&mut self, flow: &I::Flow) {
        if let Some(&s) = self.slot.get(flow) {
            if self.flows[s].q.is_empty() {
                self.slot.remove(flow);
                self.flows[s].deficit = 0;
                self.free.push(s);
            }
        }
    }

    /// Takes the first packet of `flow` that `pred` picks, out of turn.
    fn take_first(&mut self, flow: I::Flow, pred: impl FnMut(&I) -> bool) -> Option<I> {
        let s = *self.slot.get(&flow)?;
        let f = &mut self.flows[s];
        let i = f.q.iter().position(pred)?;
        let p = f.q.remove(i)?;
        if f.q.is_empty() {
            f.deficit = 0;
            self.active.retain(|&a| a != s);
        }
        self.len -= 1;
        self.bytes -= p.wire_len() as u64;
        self.stats.dequeued += 1;
        Some(p)
    }

    fn dequeue(&mut self) -> Option<I> {
        loop {
            let &s = self.active.front()?;
            let f = &mut self.flows[s];
            let wire = f.q.front().expect("active flows are backlogged").wire_len();
            if f.deficit >= wire {
                f.deficit -= wire;
                let p = f.q.pop_front();
                if f.q.is_empty() {
                    f.deficit = 0;
                    self.active.pop_front();
                }
                self.len -= 1;
                self.bytes -= wire as u64;
                self.stats.dequeued += 1;
                return p;
            }
            f.deficit += FAIR_QUANTUM;
            self.active.rotate_left(1);
        }
    }
}

enum Waiting<I: FlowItem> {
    Fifo(Queue<I>),
    Fair(FairQueue<I>),
}

impl<I: FlowItem> Waiting<I> {
    #[inline]
    fn len_packets(&self) -> usize {
        match self {
            Waiting::Fifo(q) => q.len_packets(),
            Waiting::Fair(q) => q.len,
        }
    }
    #[inline]
    fn dequeue(&mut self, now: Instant) -> Option<I> {
        match self {
            Waiting::Fifo(q) => q.dequeue(now),
            Waiting::Fair(q) => q.dequeue(),
        }
    }
}

/// A flow's account under [`CreditPolicy::StallProof`].
#[derive(Clone, Copy, Debug)]
struct FlowAcct {
    /// Just past the highest payload byte admitted.
    high: Seq,
    /// Payload bytes admitted (growth of `high`).
    admitted: u64,
    /// Bytes written of the flow to the tunnel.
    written: u64,
    /// When `written` last grew, or bytes became pending with none before.
    progress_at: Instant,
}

impl FlowAcct {
    fn pending(&self) -> u64 {
        self.admitted.saturating_sub(self.written)
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
pub struct SplitStartQueue<I: FlowItem> {
    cfg: SplitStartConfig,
    q: Waiting<I>,
    /// `buffer_count_` ([`CreditPolicy::Thesis`], [`CreditPolicy::Released`]).
    /// Below zero by less than a packet when a packet larger than `packet`
    /// leaves (the check is against `packet`, as the thesis's).
    buffer_count: i64,
    /// Per-flow accounts ([`CreditPolicy::StallProof`]).
    flows: FlowMap<I::Flow, FlowAcct>,
    next_check: Option<Instant>,
    /// A check is due, or running.
    check_due: bool,
    checking: bool,
    /// Decided at arrival, handed out before any check.
    decided: VecDeque<Action<I>>,
    /// The latest time an input carried.
    now: Instant,
    stats: SplitStartStats,
}

impl<I: FlowItem> SplitStartQueue<I> {
    /// A gate starting at `now` with `buffer_start` credit; `rng` draws
    /// RED's random numbers. When polling, the first check is one interval
    /// after `now`.
    pub fn new(cfg: SplitStartConfig, rng: Stream, now: Instant) -> Self {
        let limit = QueueLimit::Packets(cfg.limit);
        let q = match cfg.discipline {
            Discipline::DropTail => Waiting::Fifo(Queue::drop_tail(limit)),
            Discipline::Red(mut p) => {
                p.limit = limit;
                Waiting::Fifo(Queue::red(p, rng))
            }
            Discipline::Fair { per_flow } => Waiting::Fair(FairQueue::new(per_flow)),
        };
        SplitStartQueue {
            cfg,
            q,
            buffer_count: cfg.buffer_start as i64,
            flows: FlowMap::default(),
            next_check: cfg.check.interval().map(|i| now + i),
            check_due: false,
            checking: false,
            decided: VecDeque::new(),
            now,
            stats: SplitStartStats::default(),
        }
    }

    /// Wakes a check after an event, in the modes that check on events.
    #[inline]
    fn wake(&mut self) {
        if self.cfg.check.on_events() && !self.checking {
            self.check_due = true;
        }
    }

    /// A data segment arrived. It joins the queue (in the event modes a
    /// check follows), is dropped by the policy, or (stall-proof credit,
    /// nothing new in it) passes at once.
    pub fn handle_arrival(&mut self, now: Instant, item: I) {
        self.now = now;
        self.stats.arrived += 1;
        if let CreditPolicy::StallProof { .. } = self.cfg.credit {
            let seg = item.segment();
            let end = seg.seq + seg.len;
            match self.flows.get(&item.flow()) {
                Some(f) if end.le(f.high) => {
                    self.stats.passed_old += 1;
                    self.decided.push_back(Action::Admit(item));
                    return;
                }
                Some(_) => {}
                None => {
                    // The first data seen of a flow: nothing of it has been
                    // written, so its sequence space starts here.
                    let acct = FlowAcct {
                        high: seg.seq,
                        admitted: 0,
                        written: 0,
                        progress_at: now,
                    };
                    self.flows.insert(item.flow(), acct);
                }
            }
        }
        let res = match &mut self.q {
            Waiting::Fifo(q) => q.enqueue(now, item),
            Waiting::Fair(q) => q.enqueue(item),
        };
        match res {
            Ok(()) => self.wake(),
            Err((item, why)) => self.decided.push_back(Action::Drop(item, why)),
        }
    }

    /// The tunnel sent a packet of `wire` bytes (the thesis's `output()`):
    /// the thesis's credit grows, retransmission or not.
    #[inline]
    pub fn handle_output(&mut self, wire: u32, retransmission: bool) {
        match self.cfg.credit {
            CreditPolicy::Thesis | CreditPolicy::Released => {
                self.buffer_count += wire as i64;
                self.stats.added_bytes += wire as u64;
                if retransmission {
                    self.stats.added_retx_bytes += wire as u64;
                }
                self.wake();
            }
            CreditPolicy::StallProof { .. } => {}
        }
    }

    /// `bytes` more of `flow` were written to the tunnel (what the stack
    /// delivered in order).
    #[inline]
    pub fn handle_written(&mut self, now: Instant, flow: I::Flow, bytes: u64) {
        self.now = now;
        if bytes == 0 {
            return;
        }
        match self.cfg.credit {
            CreditPolicy::Thesis => {}
            CreditPolicy::Released => {
                // Payload plus one header per full segment's worth.
                let hdr = self.cfg.header as u64;
                let mss = (self.cfg.packet as u64).saturating_sub(hdr).max(1);
                self.buffer_count -= (bytes + bytes.div_ceil(mss) * hdr) as i64;
            }
            CreditPolicy::StallProof { .. } => {
                if let Some(f) = self.flows.get_mut(&flow) {
                    f.written += bytes;
                    f.progress_at = now;
                    self.wake();
                }
            }
        }
    }

    /// [`Self::handle_written`] for a driver that counts the bytes written
    /// of a flow in all: `total` since the flow began.
    pub fn handle_written_total(&mut self, now: Instant, flow: I::Flow, total: u64) {
        let before = match self.cfg.credit {
            CreditPolicy::StallProof { .. } => self.flows.get(&flow).map(|f| f.written),
            _ => None,
        };
        if let Some(w) = before {
            self.handle_written(now, flow, total.saturating_sub(w));
        }
    }

    /// `flow` is gone (closed, reset): it is charged no more, and its slot
    /// in the fair discipline is reused once none of its packets wait.
    pub fn end_flow(&mut self, flow: &I::Flow) {
        if let Waiting::Fair(q) = &mut self.q {
            q.forget(flow);
        }
        if self.flows.remove(flow).is_some() {
            self.wake();
        }
    }

    /// The poll timer: a check is due if its time has come, and the next
    /// is one interval later (the thesis reschedules after the loop, which
    /// takes no simulated time).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        if let (Some(at), Some(interval)) = (self.next_check, self.cfg.check.interval()) {
            if at <= now {
                self.next_check = Some(now + interval);
                self.check_due = true;
            }
        }
    }

    /// When [`Self::handle_timeout`] is next needed (polling modes).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_check
    }

    /// Everything still waiting goes into the stack (shutting down).
    pub fn release_all(&mut self, now: Instant) {
        self.now = now;
        while let Some(p) = self.q.dequeue(now) {
            self.decided.push_back(Action::Admit(p));
        }
    }

    /// The next thing to do: first what arrivals decided, then one step of
    /// a due check (`checkSend()`'s loop: the head leaves while the credit
    /// allows). `None` ends the check.
    #[inline]
    pub fn poll_action(&mut self, now: Instant) -> Option<Action<I>> {
        if let Some(a) = self.decided.pop_front() {
            return Some(a);
        }
        if !self.checking {
            if !self.check_due {
                return None;
            }
            self.check_due = false;
            self.checking = true;
            self.stats.checks += 1;
        }
        self.now = now;
        if self.q.len_packets() == 0 {
            self.checking = false;
            return None;
        }
        if !self.allows(now) {
            self.stats.blocked_checks += 1;
            self.checking = false;
            return None;
        }
        let Some(p) = self.q.dequeue(now) else {
            self.checking = false;
            return None;
        };
        self.charge(now, &p);
        Some(Action::Admit(p))
    }

    /// Enough credit for the head to leave.
    #[inline]
    fn allows(&self, now: Instant) -> bool {
        match self.cfg.credit {
            CreditPolicy::Thesis | CreditPolicy::Released => {
                self.buffer_count >= self.cfg.packet as i64
            }
            CreditPolicy::StallProof { .. } => {
                self.charged(now) + self.cfg.packet as u64 <= self.cfg.buffer_start
            }
        }
    }

    /// Pays for a packet leaving the queue.
    #[inline]
    fn charge(&mut self, now: Instant, p: &I) {
        let wire = p.wire_len();
        self.stats.admitted += 1;
        self.stats.admitted_bytes += wire as u64;
        match self.cfg.credit {
            CreditPolicy::Thesis => self.buffer_count -= wire as i64,
            CreditPolicy::Released => {}
            CreditPolicy::StallProof { .. } => {
                let seg = p.segment();
                let end = seg.seq + seg.len;
                let mut jumped = None;
                if let Some(f) = self.flows.get_mut(&p.flow()) {
                    if seg.seq.gt(f.high) {
                        jumped = Some(end);
                    }
                    if end.gt(f.high) {
                        // Bytes between `high` and this segment's start are
                        // a hole (lost or dropped upstream): charged until
                        // written, as the thesis charges what it admits.
                        let new = end.bytes_since(f.high) as u64;
                        if f.pending() == 0 {
                            // Nothing was waiting to be written: the wait
                            // for a write starts now.
                            f.progress_at = now;
                        }
                        f.high = end;
                        f.admitted += new;
                        self.stats.admitted_new_bytes += new;
                    }
                }
                if let Some(high) = jumped {
                    self.pass_filled(p.flow(), high);
                }
            }
        }
    }

    /// A packet of `flow` jumped a hole, raising its high mark to `high`:
    /// the packets of the flow still waiting that now lie wholly below it
    /// (a hole's filler that arrived after the packet past it but before
    /// that one left) pass at once, as they would have on arrival. Held
    /// back, a filler would wait for credit that only its own hole holds:
    /// the bytes behind a hole are written once it is filled.
    fn pass_filled(&mut self, flow: I::Flow, high: Seq) {
        let below = |p: &I| {
            let s = p.segment();
            p.flow() == flow && (s.seq + s.len).le(high)
        };
        loop {
            let p = match &mut self.q {
                Waiting::Fifo(q) => q.take_first(below),
                Waiting::Fair(q) => q.take_first(flow, below),
            };
            let Some(p) = p else { break };
            // It left the queue: admitted (free of charge), not passed.
            self.stats.admitted += 1;
            self.stats.admitted_bytes += p.wire_len() as u64;
            self.decided.push_back(Action::Admit(p));
        }
    }

    /// Bytes charged against `buffer_start` at `now` (stall-proof: the sum
    /// of the flows' charges; otherwise `buffer_start - buffer_count`).
    pub fn charged(&self, now: Instant) -> u64 {
        match self.cfg.credit {
            CreditPolicy::StallProof { stall_after } => {
                let cap = self.cfg.buffer_start / self.flows.len().max(1) as u64;
                self.flows
                    .values()
                    .map(|f| f.charge(now, cap, stall_after))
                    .sum()
            }
            _ => (self.cfg.buffer_start as i64 - self.buffer_count).max(0) as u64,
        }
    }

    /// The credit as of the latest input: `buffer_count_` for the thesis's
    /// policies, `buffer_start` less what is charged for the stall-proof
    /// one.
    pub fn credit(&self) -> i64 {
        match self.cfg.credit {
            CreditPolicy::StallProof { .. } => {
                self.cfg.buffer_start as i64 - self.charged(self.now) as i64
            }
            _ => self.buffer_count,
        }
    }

    /// Flows with an account (stall-proof credit).
    pub fn flows(&self) -> impl Iterator<Item = &I::Flow> {
        self.flows.keys()
    }
    pub fn len_packets(&self) -> usize {
        self.q.len_packets()
    }
    pub fn is_empty(&self) -> bool {
        self.len_packets() == 0
    }
    pub fn len_bytes(&self) -> u64 {
        match &self.q {
            Waiting::Fifo(q) => q.len_bytes(),
            Waiting::Fair(q) => q.bytes,
        }
    }
    pub fn stats(&self) -> SplitStartStats {
        let queue = match &self.q {
            Waiting::Fifo(q) => q.stats,
            Waiting::Fair(q) => q.stats,
        };
        SplitStartStats {
            queue,
            ..self.stats
        }
    }
    pub fn config(&self) -> &SplitStartConfig {
        &self.cfg
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod thesis_tests;
