//! Queue disciplines, written against time passed in so that the simulator
//! (virtual clock) and the lab (real clock) drive the same models.
//!
//! A discipline holds packets waiting for a link's transmitter; the packet
//! being serialized has already left it (as ns-2's RED counts `limit_`;
//! ns-2's DropTail holds `limit_ - 1` waiting, docs/tcp.md).
//!
//! The link asks a discipline for its next packet only at the instant the
//! transmitter frees ([`Queue::dequeue`] with that instant), after every
//! arrival up to that instant has been offered. So disciplines that decide
//! at dequeue (priority, weighted sharing) see exactly what they would in
//! an eager simulator, even though links complete transmissions lazily.
//!
//! Disciplines: [`DropTail`], [`red::Red`] (Floyd & Jacobson, as ns-2 2.35),
//! and [`classful::Classful`] (a classifier over DropTail bands, served by
//! strict priority or by weighted fair sharing).

pub mod classful;
pub mod red;
pub mod sad;
pub mod sojourn;

use alloc::boxed::Box;
use alloc::collections::VecDeque;

use crate::link::LinkItem;
use crate::time::Instant;

pub use classful::{BandStats, Classful, Classifier, Scheduler};
pub use red::{Red, RedParams};
pub use sad::SadQueue;
pub use sojourn::{DelayHistogram, Sojourn};

/// What a queue needs to know about the items it holds.
pub trait Queued {
    /// Bytes on the wire, headers included.
    fn wire_len(&self) -> u32;
}

impl Queued for crate::segment::Segment {
    fn wire_len(&self) -> u32 {
        crate::segment::Segment::wire_len(self)
    }
}

/// A queue bound, in packets or in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Packets(u32),
    Bytes(u64),
}

/// Why a queue refused a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The queue (or the packet's band) was full (tail drop).
    Overflow,
    /// RED dropped it at random: the average queue was between the
    /// thresholds (base probability below 1).
    Early,
    /// RED dropped it because the average queue was past the point where
    /// the base probability reaches 1 (`max_th`, or `2 max_th` when gentle).
    Forced,
    /// The Smart ACK Dropper folded this ACK into a queued ACK of its flow.
    Merged,
}

/// Counters kept by every discipline, after ns-3's `QueueDisc::Stats`.
/// Identities (checked by tests):
/// * `enqueued = dequeued + len_packets()`;
/// * every offered packet is either enqueued, dropped or merged (SAD);
/// * `dropped = dropped_overflow + dropped_early + dropped_forced`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    pub enqueued: u64,
    pub dequeued: u64,
    pub dropped: u64,
    pub enqueued_bytes: u64,
    pub dropped_bytes: u64,
    /// Drops because the queue or band was full.
    pub dropped_overflow: u64,
    /// RED's random drops.
    pub dropped_early: u64,
    /// RED's drops with base probability 1.
    pub dropped_forced: u64,
    /// ACKs the Smart ACK Dropper folded into a queued ACK (or found older
    /// than one): not lost information, so not counted in `dropped`.
    pub merged: u64,
}

/// First in, first out, dropping arrivals when full.
#[derive(Clone, Debug)]
pub struct DropTail<T> {
    buf: VecDeque<T>,
    bytes: u64,
    limit: QueueLimit,
}

impl<T: Queued> DropTail<T> {
    pub fn new(limit: QueueLimit) -> Self {
        // Start small and let the queue grow to what it holds: reserving
        // the whole limit up front cost 35 kB per flow on a dumbbell
        // (four 100-packet queues) and dominated memory at 10,000 flows.
        DropTail {
            buf: VecDeque::with_capacity(match limit {
                QueueLimit::Packets(n) => (n as usize).min(16),
                QueueLimit::Bytes(_) => 16,
            }),
            bytes: 0,
            limit,
        }
    }
    #[inline]
    fn has_room(&self, len: u32) -> bool {
        match self.limit {
            QueueLimit::Packets(n) => (self.buf.len() as u64) < n as u64,
            QueueLimit::Bytes(b) => self.bytes + len as u64 <= b,
        }
    }
    /// Appends `item` if it fits.
    #[inline(always)]
    fn push(&mut self, item: T) -> Result<(), (T, DropReason)> {
        let len = item.wire_len();
        if self.has_room(len) {
            self.bytes += len as u64;
            self.buf.push_back(item);
            Ok(())
        } else {
            Err((item, DropReason::Overflow))
        }
    }
    #[inline(always)]
    fn pop(&mut self) -> Option<T> {
        let it = self.buf.pop_front()?;
        self.bytes -= it.wire_len() as u64;
        Some(it)
    }
    /// Takes the first packet `pred` picks, wherever it waits.
    fn take_first(&mut self, pred: impl FnMut(&T) -> bool) -> Option<T> {
        let i = self.buf.iter().position(pred)?;
        let it = self.buf.remove(i)?;
        self.bytes -= it.wire_len() as u64;
        Some(it)
    }
    fn head_len(&self) -> Option<u32> {
        self.buf.front().map(Queued::wire_len)
    }
    pub fn len_packets(&self) -> usize {
        self.buf.len()
    }
    pub fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

/// The queue disciplines a link direction can use. A closed enum: the hot
/// path dispatches with a match, not a vtable. DropTail stays inline (the
/// common case); the larger disciplines are boxed so a link stays small.
#[derive(Clone, Debug)]
pub enum Qdisc<T> {
    DropTail(DropTail<T>),
    Red(Box<Red<T>>),
    Classful(Box<Classful<T>>),
    /// The Smart ACK Dropper in front of another discipline.
    Sad(Box<SadQueue<T>>),
}

impl<T: LinkItem> Qdisc<T> {
    #[inline(never)]
    fn len_packets_boxed(&self) -> usize {
        match self {
            Qdisc::DropTail(q) => q.len_packets(),
            Qdisc::Red(q) => q.len_packets(),
            Qdisc::Classful(q) => q.len_packets(),
            Qdisc::Sad(q) => q.inner.len_packets(),
        }
    }
}

impl QueueStats {
    #[cold]
    pub(crate) fn count_drop(&mut self, why: DropReason, len: u64) {
        if why == DropReason::Merged {
            self.merged += 1;
            return;
        }
        self.dropped += 1;
        self.dropped_bytes += len;
        match why {
            DropReason::Overflow => self.dropped_overflow += 1,
            DropReason::Early => self.dropped_early += 1,
            DropReason::Forced => self.dropped_forced += 1,
            DropReason::Merged => {}
        }
    }
}

/// A discipline together with its counters.
#[derive(Clone, Debug)]
pub struct Queue<T> {
    pub disc: Qdisc<T>,
    pub stats: QueueStats,
    /// Per-packet queueing delays, when asked for
    /// ([`Queue::enable_sojourn`]); `None` costs a branch per packet.
    sojourn: Option<Box<Sojourn>>,
}

impl<T: LinkItem> Queue<T> {
    pub fn drop_tail(limit: QueueLimit) -> Self {
        Self::with(Qdisc::DropTail(DropTail::new(limit)))
    }

    /// RED with `params`, drawing its random numbers from `rng`.
    pub fn red(params: RedParams, rng: crate::rng::Stream) -> Self {
        Self::with(Qdisc::Red(Box::new(Red::new(params, rng))))
    }

    /// A classifier over DropTail bands (priority or weighted sharing).
    pub fn classful(c: Classful<T>) -> Self {
        Self::with(Qdisc::Classful(Box::new(c)))
    }

    /// The Smart ACK Dropper in front of `inner`, tracking at most
    /// `max_flows` flows.
    pub fn sad(inner: Queue<T>, max_flows: usize) -> Self {
        Self::with(Qdisc::Sad(Box::new(SadQueue::new(inner, max_flows))))
    }

    fn with(disc: Qdisc<T>) -> Self {
        Queue {
            disc,
            stats: QueueStats::default(),
            sojourn: None,
        }
    }

    /// Starts recording each packet's queueing delay (admission to the
    /// start of its transmission). Only a FIFO discipline (DropTail, RED)
    /// can: it returns false, and records nothing, for the others (they
    /// reorder or merge, so admissions do not pair with departures in
    /// order). Call it on an empty queue.
    pub fn enable_sojourn(&mut self) -> bool {
        debug_assert!(self.is_empty(), "sojourns start on an empty queue");
        let fifo = matches!(self.disc, Qdisc::DropTail(_) | Qdisc::Red(_));
        if fifo && self.sojourn.is_none() {
            self.sojourn = Some(Box::default());
        }
        fifo
    }

    /// The queueing delays recorded so far, if enabled.
    pub fn sojourn(&self) -> Option<&Sojourn> {
        self.sojourn.as_deref()
    }

    /// Offers a packet at `now`. A refused packet is handed back with the
    /// reason.
    #[inline(always)]
    pub fn enqueue(&mut self, now: Instant, item: T) -> Result<(), (T, DropReason)> {
        // DropTail inline, shaped as before the other disciplines existed:
        // it is the per-packet path of most links.
        if let Qdisc::DropTail(q) = &mut self.disc {
            let len = item.wire_len();
            if q.has_room(len) {
                q.bytes += len as u64;
                q.buf.push_back(item);
                self.stats.enqueued += 1;
                self.stats.enqueued_bytes += len as u64;
                if let Some(s) = &mut self.sojourn {
                    s.admit(now);
                }
                return Ok(());
            }
            self.stats.count_drop(DropReason::Overflow, len as u64);
            return Err((item, DropReason::Overflow));
        }
        self.enqueue_other(now, item)
    }

    #[inline(never)]
    fn enqueue_other(&mut self, now: Instant, item: T) -> Result<(), (T, DropReason)> {
        let len = item.wire_len() as u64;
        let res = match &mut self.disc {
            Qdisc::DropTail(q) => q.push(item),
            Qdisc::Red(q) => q.enqueue(now, item),
            Qdisc::Classful(q) => q.enqueue(item),
            Qdisc::Sad(q) => q.enqueue(now, item),
        };
        match &res {
            Ok(()) => {
                self.stats.enqueued += 1;
                self.stats.enqueued_bytes += len;
                if let Some(s) = &mut self.sojourn {
                    s.admit(now);
                }
            }
            Err((_, why)) => self.stats.count_drop(*why, len),
        }
        res
    }

    /// Takes the next packet to transmit. `now` is the instant the
    /// transmitter frees: RED records it as the start of an idle period
    /// when there is nothing to send.
    #[inline(always)]
    pub fn dequeue(&mut self, now: Instant) -> Option<T> {
        if let Qdisc::DropTail(q) = &mut self.disc {
            let it = q.pop()?;
            self.stats.dequeued += 1;
            if let Some(s) = &mut self.sojourn {
                s.depart(now);
            }
            return Some(it);
        }
        self.dequeue_other(now)
    }

    /// [`Self::enqueue`] then [`Self::dequeue`] at the same instant: an idle
    /// transmitter offered a packet takes its next one at once. An empty
    /// DropTail hands the packet straight back with the same counters
    /// (admitted, then dequeued) and never touches its ring; the other
    /// disciplines (and a DropTail that holds packets) do both steps.
    #[inline(always)]
    pub fn enqueue_dequeue(&mut self, now: Instant, item: T) -> Result<Option<T>, (T, DropReason)> {
        if let Qdisc::DropTail(q) = &mut self.disc {
            let len = item.wire_len();
            // `bytes` would go up by `len` and back down: it stays.
            if q.buf.is_empty() && q.has_room(len) {
                self.stats.enqueued += 1;
                self.stats.enqueued_bytes += len as u64;
                self.stats.dequeued += 1;
                if let Some(s) = &mut self.sojourn {
                    s.pass();
                }
                return Ok(Some(item));
            }
        }
        // Out of line (both handle DropTail too): the rare case stays small.
        self.enqueue_other(now, item)?;
        Ok(self.dequeue_other(now))
    }

    #[inline(never)]
    fn dequeue_other(&mut self, now: Instant) -> Option<T> {
        let item = match &mut self.disc {
            Qdisc::DropTail(q) => q.pop(),
            Qdisc::Red(q) => q.dequeue(now),
            Qdisc::Classful(q) => q.dequeue(),
            Qdisc::Sad(q) => q.dequeue(now),
        }?;
        self.stats.dequeued += 1;
        if let Some(s) = &mut self.sojourn {
            s.depart(now);
        }
        Some(item)
    }

    /// Takes out of turn the first waiting packet `pred` picks (counted
    /// as dequeued). DropTail and RED only: the classful and SAD
    /// disciplines keep per-band or per-flow state that a packet leaving
    /// out of turn would break, so they give nothing.
    pub fn take_first(&mut self, pred: impl FnMut(&T) -> bool) -> Option<T> {
        let item = match &mut self.disc {
            Qdisc::DropTail(q) => q.take_first(pred),
            Qdisc::Red(q) => q.take_first(pred),
            Qdisc::Classful(_) | Qdisc::Sad(_) => None,
        }?;
        self.stats.dequeued += 1;
        Some(item)
    }

    #[inline(always)]
    pub fn len_packets(&self) -> usize {
        match &self.disc {
            Qdisc::DropTail(q) => q.len_packets(),
            other => other.len_packets_boxed(),
        }
    }

    pub fn len_bytes(&self) -> u64 {
        match &self.disc {
            Qdisc::DropTail(q) => q.len_bytes(),
            Qdisc::Red(q) => q.len_bytes(),
            Qdisc::Classful(q) => q.len_bytes(),
            Qdisc::Sad(q) => q.inner.len_bytes(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len_packets() == 0
    }

    /// Per-band counters of a classful discipline; empty for the others.
    pub fn band_stats(&self) -> &[BandStats] {
        match &self.disc {
            Qdisc::Classful(q) => q.band_stats(),
            Qdisc::Sad(q) => q.inner.band_stats(),
            _ => &[],
        }
    }
}

#[cfg(test)]
pub(crate) mod test_item {
    use crate::link::LinkItem;
    use crate::segment::{Flags, FlowId, Segment};

    /// A segment of `wire` bytes on the wire: a pure ACK when `wire` is 40.
    pub fn seg(flow: u32, wire: u32) -> Segment {
        Segment {
            flow: FlowId(flow),
            len: wire - 40,
            hdr_len: 40,
            flags: Flags::ACK,
            ..Default::default()
        }
    }

    /// Compile-time check that segments are link items.
    #[allow(dead_code)]
    fn is_item<T: LinkItem>() {}
    #[allow(dead_code)]
    fn check() {
        is_item::<Segment>();
    }
}

#[cfg(test)]
mod tests {
    use super::test_item::seg;
    use super::*;
    use crate::segment::Segment;

    #[test]
    fn packet_limit_drops_the_arrival() {
        let mut q = Queue::drop_tail(QueueLimit::Packets(2));
        let t = Instant::ZERO;
        assert!(q.enqueue(t, seg(1, 50)).is_ok());
        assert!(q.enqueue(t, seg(2, 60)).is_ok());
        assert_eq!(
            q.enqueue(t, seg(3, 70)),
            Err((seg(3, 70), DropReason::Overflow))
        );
        assert_eq!(q.dequeue(t), Some(seg(1, 50)));
        assert_eq!(q.len_bytes(), 60);
        assert_eq!(q.stats.enqueued, 2);
        assert_eq!(q.stats.dropped, 1);
        assert_eq!(q.stats.dropped_overflow, 1);
        assert_eq!(q.stats.enqueued, q.stats.dequeued + q.len_packets() as u64);
    }

    proptest::proptest! {
        /// The idle transmitter's shortcut is `enqueue` then `dequeue`: the
        /// same answer, counters and contents, whatever the queue holds
        /// (an empty DropTail takes the shortcut), its limit or the size.
        #[test]
        fn enqueue_dequeue_is_enqueue_then_dequeue(
            by_bytes: bool,
            limit in 0u32..4,
            held in proptest::collection::vec(40u32..1500, 0..4),
            wire in 40u32..1500,
        ) {
            let limit = if by_bytes {
                QueueLimit::Bytes(limit as u64 * 1000)
            } else {
                QueueLimit::Packets(limit)
            };
            let t = Instant::ZERO;
            let mut a = Queue::drop_tail(limit);
            for (i, &w) in held.iter().enumerate() {
                let _ = a.enqueue(t, seg(i as u32, w));
            }
            let mut b = a.clone();
            let offered = seg(9, wire);
            let got = a.enqueue_dequeue(t, offered);
            let want = b.enqueue(t, offered).map(|()| b.dequeue(t));
            proptest::prop_assert_eq!(got, want);
            proptest::prop_assert_eq!(a.stats, b.stats);
            proptest::prop_assert_eq!(a.len_bytes(), b.len_bytes());
            let rest = |q: &mut Queue<Segment>| core::iter::from_fn(|| q.dequeue(t)).collect::<Vec<_>>();
            proptest::prop_assert_eq!(rest(&mut a), rest(&mut b));
        }
    }

    #[test]
    fn byte_limit_counts_bytes() {
        let mut q = Queue::drop_tail(QueueLimit::Bytes(200));
        let t = Instant::ZERO;
        assert!(q.enqueue(t, seg(1, 120)).is_ok());
        assert!(q.enqueue(t, seg(1, 100)).is_err());
        assert!(q.enqueue(t, seg(1, 80)).is_ok());
        assert_eq!(q.len_bytes(), 200);
        assert_eq!(q.len_packets(), 2);
    }
}
