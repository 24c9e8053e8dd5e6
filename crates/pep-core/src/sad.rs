//! The Smart ACK Dropper (SAD) of Shekhar, Qin, Kalyanaraman and Kidambi:
//! ACK regulation on the queue of a slow reverse link.
//!
//! ACKs are cumulative, so while one ACK of a flow waits for the link, a
//! newer one makes it redundant. SAD keeps, per flow, one bit ("an ACK of
//! this flow is queued") and the latest ACK seen. An arriving ACK whose bit
//! is clear is queued and sets the bit; one whose bit is set is recorded and
//! dropped. When the queued ACK leaves for the link it is rewritten with the
//! latest ACK number, window, timestamps and SACK blocks, and the bit
//! clears. No queue scan: O(1) per ACK (a hash lookup).
//!
//! ## Duplicate ACKs and SACK (the extension the paper leaves open)
//! Duplicate ACKs drive fast retransmit and SACK blocks drive recovery, so
//! merging them away would turn a fast retransmit into a timeout. The rule:
//!
//! * An arriving pure ACK is *special* if it repeats the latest ACK number
//!   and window (a duplicate ACK in RFC 5681's sense), or carries a first
//!   SACK block (the most recent one, RFC 2018) different from the latest
//!   ACK's.
//! * A special ACK is always queued, unchanged. The flow's ACK queued before
//!   it stops absorbing newer ACKs: it is frozen with the latest value at
//!   that moment (so it still leaves ahead of the duplicates, acknowledging
//!   exactly what they repeat).
//! * The next non-special ACK is queued as the flow's new absorbing ACK.
//! * An ACK older than the latest (reordered) carries nothing new and is
//!   dropped.
//!
//! So a flow's ACKs leave in order with non-decreasing ACK numbers, every
//! duplicate the receiver sent reaches the sender as a duplicate, and a
//! rewritten ACK never repeats the number of the one before it unless the
//! receiver's did.
//!
//! ## State and its bound
//! A flow's entry holds its latest ACK and one slot per queued ACK (the
//! paper's bit is "a slot is open"). When its last queued ACK leaves, the
//! entry goes *idle*: it keeps only the latest ACK, so that a duplicate
//! arriving next is still recognised. The table holds at most `max_flows`
//! entries; a new flow takes the place of the flow idle longest (O(1), a
//! FIFO of idle flows). Evicting an idle entry is safe: none of its ACKs is
//! queued, so nothing waits to be rewritten; the flow's next ACK is simply
//! queued as if it were the first. Only when every entry has an ACK queued
//! (more flows than `max_flows` with ACKs waiting) do ACKs of new flows
//! pass unregulated (counted as `untracked`); sized to the queue's packet
//! limit, the table never gets there.
//!
//! ## Driver contract
//! For each pure ACK offered to the queue call [`Sad::arrive`]: on
//! [`Arrival::Enqueue`], offer it to the queue and, if the queue took it,
//! call [`Sad::admitted`] with it; on [`Arrival::Merged`] drop it. For each
//! pure ACK the queue hands to the link call [`Sad::depart`], which
//! rewrites it in place. Other segments never touch SAD. Time plays no part.

use alloc::collections::VecDeque;

use crate::flow_map::FlowMap;
use crate::segment::{FlowId, SackBlocks, Segment, Timestamps};
use crate::seq::Seq;

/// What an ACK tells the sender: what SAD copies into a queued ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckFields {
    pub ack: Seq,
    pub wnd: u32,
    pub ts: Option<Timestamps>,
    pub sack: SackBlocks,
}

impl AckFields {
    pub fn of(s: &Segment) -> AckFields {
        AckFields {
            ack: s.ack,
            wnd: s.wnd,
            ts: s.ts,
            sack: s.sack,
        }
    }
    /// Writes these fields into `s` (the daemon also fixes the checksum).
    pub fn write(&self, s: &mut Segment) {
        s.ack = self.ack;
        s.wnd = self.wnd;
        s.ts = self.ts;
        s.sack = self.sack;
    }
}

/// What to do with an arriving pure ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Offer it to the queue (then [`Sad::admitted`] if it was taken).
    Enqueue,
    /// Its information now rides on a queued ACK: drop it.
    Merged,
}

/// One queued ACK of a flow, in queue order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Leaves as it is (a duplicate or SACK-carrying ACK).
    Keep,
    /// Frozen: leaves with these fields.
    Rewrite(AckFields),
    /// Absorbs newer ACKs: leaves with the flow's latest fields. Only ever
    /// the last slot.
    Open,
}

#[derive(Clone, Debug)]
struct FlowState {
    latest: AckFields,
    slots: VecDeque<Slot>,
    /// Bumped each time the flow goes idle, to recognise stale records in
    /// the idle FIFO.
    idle_gen: u32,
}

/// Counters; `arrived = enqueued + merged + stale + refused + untracked`
/// where `refused` are those the queue then dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SadStats {
    /// Pure ACKs offered.
    pub arrived: u64,
    /// Queued with state.
    pub enqueued: u64,
    /// Merged into a queued ACK of their flow (dropped).
    pub merged: u64,
    /// Older than the latest ACK of their flow (dropped).
    pub stale: u64,
    /// Queued unchanged although an ACK of the flow was queued: duplicates
    /// and new SACK information.
    pub kept_special: u64,
    /// Queued ACKs whose fields were rewritten on departure.
    pub rewritten: u64,
    /// Passed without state because the table was full.
    pub untracked: u64,
    /// Enqueue decisions the queue refused (full).
    pub refused: u64,
    /// Most flows with state at once.
    pub peak_flows: u64,
    /// Idle flows whose state was dropped to make room for another.
    pub evicted: u64,
}

/// The Smart ACK Dropper's per-flow table.
#[derive(Clone, Debug)]
pub struct Sad {
    flows: FlowMap<FlowId, FlowState>,
    max_flows: usize,
    /// Flows that went idle, oldest first, with their `idle_gen` then.
    /// Records made stale by the flow becoming busy again are skipped.
    idle: VecDeque<(FlowId, u32)>,
    /// Decision of the last [`Sad::arrive`] for [`Sad::admitted`].
    pending: Option<Pending>,
    pub stats: SadStats,
}

#[derive(Clone, Copy, Debug)]
enum Pending {
    /// First ACK of a flow without state.
    New,
    /// Special: freeze the open slot, queue unchanged.
    Special,
    /// The flow has state but no absorbing ACK queued.
    Reopen,
    /// No state kept (table full).
    Untracked,
}

impl Sad {
    /// A table holding at most `max_flows` flows (at least 1).
    pub fn new(max_flows: usize) -> Self {
        Sad {
            flows: FlowMap::default(),
            max_flows: max_flows.max(1),
            idle: VecDeque::new(),
            pending: None,
            stats: SadStats::default(),
        }
    }

    /// Flows with state (with an ACK queued, or idle).
    pub fn tracked_flows(&self) -> usize {
        self.flows.len()
    }

    /// Flows with an ACK queued.
    pub fn busy_flows(&self) -> usize {
        self.flows.values().filter(|f| !f.slots.is_empty()).count()
    }

    /// Makes room for a new flow by evicting the flow idle longest; false
    /// when every flow has an ACK queued.
    fn make_room(&mut self) -> bool {
        while let Some((flow, gen)) = self.idle.pop_front() {
            match self.flows.get(&flow) {
                Some(st) if st.slots.is_empty() && st.idle_gen == gen => {
                    self.flows.remove(&flow);
                    self.stats.evicted += 1;
                    return true;
                }
                _ => {} // busy again or already gone: a stale record
            }
        }
        false
    }

    /// Decides what happens to the arriving pure ACK `seg`.
    pub fn arrive(&mut self, seg: &Segment) -> Arrival {
        debug_assert!(seg.is_pure_ack());
        self.stats.arrived += 1;
        let Some(st) = self.flows.get_mut(&seg.flow) else {
            self.pending = Some(if self.flows.len() < self.max_flows || self.make_room() {
                Pending::New
            } else {
                Pending::Untracked
            });
            return Arrival::Enqueue;
        };
        let latest = st.latest;
        let dup = seg.ack == latest.ack && seg.wnd == latest.wnd;
        let new_sack = match seg.sack.as_slice().first() {
            Some(b) => latest.sack.as_slice().first() != Some(b),
            None => false,
        };
        if dup || new_sack {
            // With nothing queued a duplicate is queued as it is, too.
            self.pending = Some(Pending::Special);
            return Arrival::Enqueue;
        }
        if seg.ack.lt(latest.ack) {
            self.stats.stale += 1;
            return Arrival::Merged;
        }
        if st.slots.back() == Some(&Slot::Open) {
            st.latest = AckFields::of(seg);
            self.stats.merged += 1;
            return Arrival::Merged;
        }
        self.pending = Some(Pending::Reopen);
        Arrival::Enqueue
    }

    /// The queue took `seg`, which [`Sad::arrive`] just said to enqueue.
    pub fn admitted(&mut self, seg: &Segment) {
        let Some(p) = self.pending.take() else {
            debug_assert!(false, "admitted without arrive");
            return;
        };
        let fields = AckFields::of(seg);
        match p {
            Pending::Untracked => {
                self.stats.untracked += 1;
                return;
            }
            Pending::New => {
                let mut slots = VecDeque::with_capacity(2);
                slots.push_back(Slot::Open);
                self.flows.insert(
                    seg.flow,
                    FlowState {
                        latest: fields,
                        slots,
                        idle_gen: 0,
                    },
                );
                self.stats.peak_flows = self.stats.peak_flows.max(self.flows.len() as u64);
            }
            Pending::Special => {
                let st = self.flows.get_mut(&seg.flow).expect("arrive saw state");
                if let Some(last @ Slot::Open) = st.slots.back_mut() {
                    *last = Slot::Rewrite(st.latest);
                }
                st.slots.push_back(Slot::Keep);
                st.latest = fields;
                self.stats.kept_special += 1;
            }
            Pending::Reopen => {
                let st = self.flows.get_mut(&seg.flow).expect("arrive saw state");
                st.slots.push_back(Slot::Open);
                st.latest = fields;
            }
        }
        self.stats.enqueued += 1;
    }

    /// The queue refused the ACK [`Sad::arrive`] said to enqueue.
    pub fn refused(&mut self) {
        self.pending = None;
        self.stats.refused += 1;
    }

    /// `seg`, a pure ACK, leaves the queue for the link: rewrites it with
    /// what it must carry.
    pub fn depart(&mut self, seg: &mut Segment) {
        let Some(st) = self.flows.get_mut(&seg.flow) else {
            return;
        };
        let fields = match st.slots.pop_front() {
            Some(Slot::Open) => Some(st.latest),
            Some(Slot::Rewrite(f)) => Some(f),
            Some(Slot::Keep) | None => None,
        };
        if let Some(f) = fields {
            if AckFields::of(seg) != f {
                f.write(seg);
                self.stats.rewritten += 1;
            }
        }
        if st.slots.is_empty() {
            // Idle: keep the latest ACK (to recognise a duplicate), evictable.
            st.idle_gen = st.idle_gen.wrapping_add(1);
            self.idle.push_back((seg.flow, st.idle_gen));
            if self.idle.len() > 2 * self.flows.len() + 16 {
                // Drop stale records so the FIFO stays within a constant
                // factor of the table (amortized O(1)).
                let flows = &self.flows;
                self.idle.retain(|(f, g)| {
                    flows
                        .get(f)
                        .is_some_and(|st| st.slots.is_empty() && st.idle_gen == *g)
                });
            }
        }
    }
}

#[cfg(test)]
#[path = "sad_tests.rs"]
mod tests;
