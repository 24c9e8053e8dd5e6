//! One direction of a point-to-point link: a queue, a serializer at a fixed
//! rate, a loss model, and a propagation delay line.
//!
//! Sans-IO like the rest of the core: the driver offers packets with
//! [`LinkDir::enqueue`], asks [`LinkDir::poll_timeout`] when it must next call
//! [`LinkDir::handle_timeout`], and collects arrivals with
//! [`LinkDir::poll_deliver`]. Delays are constant, so packets leave the delay
//! line in the order they entered it: one pending wake-up per direction
//! suffices, however many packets are in flight.
//!
//! The transmitter is FIFO at a fixed rate, so when each transmission ends is
//! known the moment it starts. The link therefore needs no wake-up at the end
//! of a transmission: it catches up lazily ([`LinkDir::advance`]) whenever it
//! is touched, and only asks to be woken when a packet reaches the far end.
//! That halves the events a packet costs per hop. The catch-up happens before
//! any admission decision, so at equal instants a transmission that ends
//! frees the transmitter before a new arrival is admitted.
//!
//! The catch-up asks the queue for the next packet at the exact instant each
//! transmission ends, after every arrival up to then has been offered (each
//! `enqueue` catches up first). Disciplines that choose at dequeue (priority,
//! weighted sharing) and RED's idle clock therefore behave exactly as in an
//! eager simulator: laziness only defers *when the code runs*, never what
//! the discipline sees.
//!
//! A direction may instead share its transmitter with the opposite one (a
//! half-duplex medium); [`crate::medium::HalfDuplex`] then drives both.
//!
//! A direction may also have a service that changes over time
//! ([`service`]: a schedule of steps and ramps, an `mm-link` trace, the
//! LEO preset). Its transmissions still end at instants known when they
//! start, so the lazy catch-up holds; a fixed-rate direction pays one
//! untaken branch per packet for it.

mod delay_line;
pub mod leo;
pub mod schedule;
pub mod service;
pub mod trace;

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::loss::LossModel;
use crate::queue::{DropReason, Queue, QueueLimit, Queued};
use crate::rng::Stream;
use crate::segment::Segment;
use crate::time::{Duration, Instant, Rate};
use delay_line::DelayLine;
use service::{Service, ServiceSpec};

/// What a link needs to know about the packets it carries.
pub trait LinkItem: Queued {
    /// The TCP segment inside, for loss models that look at it.
    fn segment(&self) -> &Segment;
    /// The segment, for disciplines that rewrite ACKs (the Smart ACK
    /// Dropper). `None` for items whose bytes would also need rewriting:
    /// such items pass those disciplines unchanged.
    fn segment_mut(&mut self) -> Option<&mut Segment> {
        None
    }
}

impl LinkItem for Segment {
    fn segment(&self) -> &Segment {
        self
    }
    fn segment_mut(&mut self) -> Option<&mut Segment> {
        Some(self)
    }
}

/// Counters of one link direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets and bytes serialized onto the link (lost ones included: they
    /// used the link's time).
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Packets lost by the loss model after serialization.
    pub lost_packets: u64,
    /// Packets handed to the far end.
    pub delivered_packets: u64,
    /// Total time the transmitter was busy, in ns.
    pub busy_ns: u64,
}

/// A packet as it finished serialization, for traces (see
/// [`LinkDir::enable_tap`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tapped {
    /// When its last bit left the transmitter.
    pub at: Instant,
    pub seg: Segment,
    /// The loss model dropped it after it crossed.
    pub lost: bool,
}

/// [`LinkDir`]'s transmitter when it serializes nothing.
const IDLE: Instant = Instant::MAX;

/// A transmission that ends at `done`: never [`IDLE`] (one that would end
/// at the end of time, on a zero rate, ends a nanosecond before it).
#[inline(always)]
fn busy_until(done: Instant) -> Instant {
    done.min(Instant(u64::MAX - 1))
}

/// One direction of a link.
#[derive(Clone, Debug)]
pub struct LinkDir<T> {
    pub rate: Rate,
    pub delay: Duration,
    pub queue: Queue<T>,
    pub loss: LossModel,
    pub stats: LinkStats,
    /// When the packet being serialized finishes, or [`IDLE`]. That packet
    /// is already the last one in `pipe`, with its arrival time: a packet
    /// is written once per hop, not copied from the transmitter into the
    /// delay line. (A sentinel, not an `Option`: eight bytes less in
    /// every direction.)
    tx: Instant,
    /// Packets propagating, with their arrival times (non-decreasing), and
    /// last the one being serialized, if any.
    pipe: DelayLine<T>,
    /// Serialized packets kept for a trace; `None` (the default) costs one
    /// branch per packet. Boxed: rarely on, it should not widen every link.
    #[allow(
        clippy::box_collection,
        reason = "one pointer, not a Vec's three words, in every link"
    )]
    tap: Option<Box<Vec<Tapped>>>,
    /// The transmitter is shared with the opposite direction: a
    /// [`crate::medium::HalfDuplex`] starts transmissions, not this link.
    shared: bool,
    /// The last transmission time computed, `memo_rate.tx_time(memo_len)`.
    /// A direction carries mostly one packet size, and the division it
    /// saves is a 128-bit one. (Three fields, not a tuple: the length then
    /// shares a word with `shared`.)
    memo_rate: Rate,
    memo_len: u32,
    memo_time: Duration,
    /// Service that changes over time; `None` (the common case) is the
    /// fixed `rate` and `delay`.
    service: Option<Box<Service>>,
}

impl<T: LinkItem> LinkDir<T> {
    pub fn new(rate: Rate, delay: Duration, queue: Queue<T>, loss: LossModel) -> Self {
        LinkDir {
            rate,
            delay,
            queue,
            loss,
            stats: LinkStats::default(),
            tx: IDLE,
            pipe: DelayLine::new(),
            tap: None,
            shared: false,
            memo_rate: Rate(0),
            memo_len: 0,
            memo_time: Duration::MAX,
            service: None,
        }
    }

    /// The same direction with service that follows `spec` from `epoch`
    /// (the instant a schedule's or trace's time zero falls at), drawing
    /// its randomness (its own losses, LEO delays) from `rng`.
    pub fn with_service(mut self, spec: &ServiceSpec, epoch: Instant, rng: Stream) -> Self {
        self.set_service(spec, epoch, rng);
        self
    }

    /// [`Self::with_service`] on a direction in place, while its
    /// transmitter is idle (the lab starts a run's services so, on links
    /// that may have carried packets already: those still propagating
    /// keep their arrival times, and the next packet starts as after an
    /// idle period).
    pub fn set_service(&mut self, spec: &ServiceSpec, epoch: Instant, mut rng: Stream) {
        debug_assert!(self.tx == IDLE, "a service starts on an idle transmitter");
        let loss_rng = Stream::derive(rng.next_u64(), "loss");
        // The service's losses join the loss model, which every packet
        // consults anyway: the fixed-rate path gains no check for them.
        if let Some(timed) = service::TimedLoss::new(spec, epoch, loss_rng) {
            let inner = core::mem::take(&mut self.loss);
            self.loss = LossModel::Timed(Box::new(timed.over(inner)));
        }
        self.service = Some(Box::new(Service::new(spec, epoch, rng)));
        (self.memo_rate, self.memo_len, self.memo_time) = (Rate(0), u32::MAX, Duration::ZERO);
    }

    /// Starts keeping a [`Tapped`] record of every packet that finishes
    /// serialization, lost or not, in time order.
    pub fn enable_tap(&mut self) {
        self.tap.get_or_insert_with(Default::default);
    }

    /// Moves the records kept since the last call into `out`. Call
    /// [`Self::advance`] first to include everything serialized by now.
    pub fn drain_tap(&mut self, out: &mut Vec<Tapped>) {
        if let Some(t) = &mut self.tap {
            out.append(t);
        }
    }

    /// A lossless link with a packet-limited DropTail queue.
    pub fn simple(rate: Rate, delay: Duration, limit_packets: u32) -> Self {
        Self::new(
            rate,
            delay,
            Queue::drop_tail(QueueLimit::Packets(limit_packets)),
            LossModel::None,
        )
    }

    /// Offers a packet for transmission at `now`.
    #[inline(always)]
    pub fn enqueue(&mut self, now: Instant, item: T) -> Result<(), (T, DropReason)> {
        debug_assert!(!self.shared, "a half-duplex direction is fed by its medium");
        self.advance(now);
        if self.tx != IDLE {
            return self.queue.enqueue(now, item);
        }
        // Idle: the packet is offered and the next one taken at once (an
        // empty DropTail passes it through without its ring).
        if let Some(next) = self.queue.enqueue_dequeue(now, item)? {
            self.start_tx(now, next, false);
        }
        Ok(())
    }

    #[inline(always)]
    fn start_next(&mut self, at: Instant) {
        debug_assert!(self.tx == IDLE);
        if let Some(item) = self.queue.dequeue(at) {
            self.start_tx(at, item, true);
        }
    }

    /// Starts serializing `item` at `at`; it waits last in the delay line.
    /// `continuing`: the previous transmission ended at `at`.
    #[inline(always)]
    fn start_tx(&mut self, at: Instant, item: T, continuing: bool) {
        debug_assert!(self.tx == IDLE);
        let len = item.wire_len();
        // A direction with a service never matches the memo (its length
        // is `u32::MAX`): a fixed-rate one checks nothing more than before.
        let d = if self.memo_rate == self.rate && self.memo_len == len {
            self.memo_time
        } else {
            if self.service.is_some() {
                return self.start_served(at, item, continuing);
            }
            let d = self.rate.tx_time(len as u64);
            (self.memo_rate, self.memo_len, self.memo_time) = (self.rate, len, d);
            d
        };
        self.stats.busy_ns += d.as_nanos();
        self.tx = busy_until(at + d);
        self.pipe.push_back((at + d + self.delay, item));
    }

    /// [`Self::start_tx`] under a service: it says when the transmission
    /// ends and how long the packet then propagates. Packets stay in
    /// order: one whose delay fell arrives no earlier than the one before.
    #[cold]
    #[inline(never)]
    fn start_served(&mut self, at: Instant, item: T, continuing: bool) {
        let svc = self.service.as_mut().expect("a service");
        let done = svc.tx_end(at, item.wire_len(), self.rate, continuing);
        let delay = svc.delay(done, self.delay);
        let behind = self.pipe.back().map_or(Instant::ZERO, |&(t, _)| t);
        self.stats.busy_ns += (done - at).as_nanos();
        self.tx = busy_until(done);
        self.pipe.push_back(((done + delay).max(behind), item));
    }

    /// Starts the next queued packet at `at + gap` (a medium's contention
    /// backoff); the packet is chosen at `at`.
    pub(crate) fn start_after(&mut self, at: Instant, gap: Duration) {
        self.start_next(at);
        if self.tx != IDLE {
            self.tx = busy_until(self.tx + gap);
            let arrival = self.tx + self.delay;
            self.pipe.back_mut().expect("in transmission").0 = arrival;
        }
    }

    /// The next arrival at the far end, if a packet is propagating.
    pub(crate) fn next_arrival(&self) -> Option<Instant> {
        // The packet in transmission is last: with it alone, none.
        let propagating = self.pipe.len() > self.is_busy() as usize;
        self.pipe.front().filter(|_| propagating).map(|(t, _)| *t)
    }

    /// When the current transmission ends, if one is under way.
    pub(crate) fn tx_end(&self) -> Option<Instant> {
        (self.tx != IDLE).then_some(self.tx)
    }

    pub(crate) fn set_shared(&mut self) {
        self.shared = true;
    }

    /// Completes the current transmission: counters, loss, delay line.
    #[inline(always)]
    pub(crate) fn finish_tx(&mut self) {
        let done = core::mem::replace(&mut self.tx, IDLE);
        if done == IDLE {
            return;
        }
        let (_, item) = self.pipe.back().expect("in transmission");
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += item.wire_len() as u64;
        let lost = self.loss.lose(done, item.segment());
        if let Some(tap) = &mut self.tap {
            tap.push(Tapped {
                at: done,
                seg: *item.segment(),
                lost,
            });
        }
        if lost {
            self.stats.lost_packets += 1;
            self.pipe.pop_back();
        }
    }

    /// When the driver must call [`Self::handle_timeout`] next: when the
    /// next packet reaches the far end. With nothing propagating, that is the
    /// end of the current transmission plus the delay (an early wake-up if
    /// the packet turns out to be lost: the link then asks again).
    ///
    /// A half-duplex direction must also wake when its transmission ends:
    /// ask [`crate::medium::HalfDuplex::poll_timeout`] instead.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        debug_assert!(!self.shared, "ask the medium for a half-duplex deadline");
        // The packet in transmission, last in the delay line, already
        // carries its arrival time: the end of its transmission plus the
        // delay.
        self.pipe.front().map(|(t, _)| *t)
    }

    /// [`Self::poll_timeout`] right after [`Self::enqueue`] on a direction
    /// whose delay line was empty: the packet it started, if any, is the
    /// line's only one, and arrives the delay after its transmission ends.
    /// Read from the direction itself, not from the line's slot, which a
    /// driver of thousands of links finds evicted (and just written).
    #[inline]
    pub fn sole_arrival(&self) -> Option<Instant> {
        debug_assert!(self.pipe.len() <= 1, "more than one packet in the line");
        if self.tx == IDLE {
            return None;
        }
        // A service sets each packet's delay; a transmission ending at the
        // end of time was cut short (`busy_until`).
        if self.service.is_some() || self.tx == Instant(u64::MAX - 1) {
            return self.poll_timeout();
        }
        let at = self.tx + self.delay;
        debug_assert_eq!(Some(at), self.poll_timeout());
        Some(at)
    }

    /// Catches up to `now` and readies the arrivals due by then. (A
    /// half-duplex direction is caught up by its medium instead.)
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    /// Completes every transmission due by `now`, starting the next one at
    /// the instant the previous one ended (so rounding never accumulates).
    /// Call it before reading the queue or the counters at `now`.
    ///
    /// Inline, and so is its loop ([`Self::advance_due`]): most calls
    /// find nothing due, which is one compare; out of line, the calls that
    /// find a transmission ended (383 k in a 20 s ftp50-pep run, one pass
    /// of the loop each) spent about 20 instructions on the call alone.
    #[inline]
    pub fn advance(&mut self, now: Instant) {
        debug_assert!(
            !self.shared,
            "a half-duplex direction advances with its medium"
        );
        // One compare: an idle transmitter (`IDLE`, the end of time) is
        // due only at the end of time, and `advance_due` then finds it idle.
        if self.tx <= now {
            self.advance_due(now);
        }
    }

    #[inline(always)]
    fn advance_due(&mut self, now: Instant) {
        while self.tx != IDLE {
            let done = self.tx;
            if done > now {
                break;
            }
            self.finish_tx();
            self.start_next(done);
        }
    }

    /// The next packet that has reached the far end by `now`.
    #[inline]
    pub fn poll_deliver(&mut self, now: Instant) -> Option<T> {
        match self.pipe.front() {
            Some(&(t, _)) if self.deliverable(t, now) => {
                self.stats.delivered_packets += 1;
                self.pipe.pop_front().map(|(_, it)| it)
            }
            _ => None,
        }
    }

    /// Whether the delay line's head, due at `t`, arrives by `now`. Never
    /// the packet in transmission: it arrives after it ends, and the driver
    /// catches up to `now` first, but a zero delay makes the two instants
    /// equal.
    #[inline(always)]
    fn deliverable(&self, t: Instant, now: Instant) -> bool {
        t <= now && (self.tx == IDLE || self.pipe.has_behind_head())
    }

    /// [`Self::poll_deliver`], or when it has nothing, [`Self::poll_timeout`]'s
    /// deadline: a driver's delivery loop ends with the wake-up it re-arms,
    /// from one look at the delay line's head.
    #[inline]
    pub fn deliver_or_deadline(&mut self, now: Instant) -> Result<T, Option<Instant>> {
        debug_assert!(!self.shared, "ask the medium for a half-duplex deadline");
        match self.pipe.front() {
            Some(&(t, _)) if self.deliverable(t, now) => {
                self.stats.delivered_packets += 1;
                Ok(self.pipe.pop_front().expect("a head").1)
            }
            head => Err(head.map(|&(t, _)| t)),
        }
    }

    /// The packet at the head of the delay line: the next one to reach
    /// the far end (or the one in transmission, when none propagates). A
    /// driver may prefetch what that packet will touch.
    #[inline]
    pub fn head(&self) -> Option<&T> {
        self.pipe.front().map(|(_, item)| item)
    }

    /// The packet `k` places behind the head of the delay line (`0`: the
    /// head), if there is one: a driver may prefetch it, ahead of the
    /// delivery that reads it.
    #[inline]
    pub fn behind_head(&self, k: usize) -> Option<&T> {
        self.pipe.get(k).map(|(_, item)| item)
    }

    /// The last packet in the delay line (the one in transmission, if
    /// any): a driver may prefetch the slots the next ones will take.
    #[inline]
    pub fn line_tail(&self) -> Option<&T> {
        self.pipe.back().map(|(_, item)| item)
    }

    /// Removes and hands to `out` the packets that have finished
    /// serialization by `now` and reach the far end by `by`, in arrival
    /// order: a driver that runs the far end elsewhere (a simulation cut
    /// in two) moves them there ahead of time. Catches up to `now` first,
    /// so losses are already decided. The copy that delivers them counts
    /// them as delivered.
    pub fn take_arriving(&mut self, now: Instant, by: Instant, out: &mut Vec<(Instant, T)>) {
        self.advance(now);
        while let Some(&(t, _)) = self.pipe.front() {
            if t > by || (self.tx != IDLE && self.pipe.len() == 1) {
                break;
            }
            out.push(self.pipe.pop_front().expect("a head"));
        }
    }

    /// Puts a packet serialized elsewhere into the delay line, to reach the
    /// far end at `arrival` ([`Self::take_arriving`]'s other half). Only for
    /// a direction that transmits nothing itself; arrivals must not
    /// decrease.
    pub fn inject(&mut self, arrival: Instant, item: T) {
        debug_assert!(
            self.tx == IDLE,
            "a direction that transmits takes no injections"
        );
        debug_assert!(self.pipe.back().is_none_or(|&(t, _)| t <= arrival));
        self.pipe.push_back((arrival, item));
    }

    /// True while the transmitter is serializing a packet.
    pub fn is_busy(&self) -> bool {
        self.tx != IDLE
    }

    /// Packets serialized but not yet delivered.
    pub fn in_flight(&self) -> usize {
        self.pipe.len() - self.is_busy() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::FlowId;

    fn pkt(n: u32) -> Segment {
        Segment {
            flow: FlowId(n),
            len: 960,
            hdr_len: 40,
            ..Default::default()
        }
    }

    /// Drives a link until idle, returning (arrival time, flow) pairs.
    fn drain(link: &mut LinkDir<Segment>) -> Vec<(u64, u32)> {
        let mut out = vec![];
        while let Some(t) = link.poll_timeout() {
            link.handle_timeout(t);
            while let Some(p) = link.poll_deliver(t) {
                out.push((t.as_nanos(), p.flow.0));
            }
        }
        out
    }

    #[test]
    fn back_to_back_packets_arrive_one_tx_time_apart() {
        // 1000 B at 8 Mbit/s = 1 ms; delay 10 ms.
        let mut l = LinkDir::simple(Rate::mbps(8), Duration::from_millis(10), 10);
        for i in 0..3 {
            l.enqueue(Instant::ZERO, pkt(i)).unwrap();
        }
        assert_eq!(
            drain(&mut l),
            vec![(11_000_000, 0), (12_000_000, 1), (13_000_000, 2)]
        );
        assert_eq!(l.stats.tx_bytes, 3000);
        assert_eq!(l.stats.busy_ns, 3_000_000);
    }

    #[test]
    fn queueing_delays_of_a_link_offered_twice_its_rate() {
        // 1 ms per packet; two packets arrive every ms for 100 ms, so
        // packet j (from 0) arrives at floor(j/2) ms, starts at j ms and
        // waits ceil(j/2) ms: 0, 1, 1, 2, 2, ..., 100 ms.
        let mut l = LinkDir::simple(Rate::mbps(8), Duration::ZERO, 1000);
        assert!(l.queue.enable_sojourn());
        for j in 0..200u32 {
            l.enqueue(Instant(u64::from(j / 2) * 1_000_000), pkt(j))
                .unwrap();
        }
        drain(&mut l);
        let h = l.queue.sojourn().unwrap().histogram();
        assert_eq!(h.count(), 200);
        // Nearest rank: p50 is packet 99 (50 ms), p95 packet 189 (95 ms),
        // to the histogram's 1/256 (the lower edge of the bucket).
        for (p, ms) in [(50.0, 50u64), (95.0, 95), (100.0, 100)] {
            let got = h.percentile(p).unwrap().as_nanos();
            let exact = ms * 1_000_000;
            assert!(got <= exact && exact - got <= exact / 256, "p{p}: {got}");
        }
        // An idle link passes a packet on at once: no wait.
        l.enqueue(Instant(1_000_000_000), pkt(0)).unwrap();
        drain(&mut l);
        let h = l.queue.sojourn().unwrap().histogram();
        assert_eq!((h.count(), h.percentile(0.1)), (201, Some(Duration::ZERO)));
    }

    #[test]
    fn a_zero_rate_transmitter_stays_busy() {
        // Its transmission ends at the end of time (the tx time saturates):
        // busy, never the idle sentinel, so the next packet waits.
        let mut l = LinkDir::simple(Rate(0), Duration::ZERO, 10);
        l.enqueue(Instant::ZERO, pkt(0)).unwrap();
        l.enqueue(Instant(1), pkt(1)).unwrap();
        let late = Instant(u64::MAX / 2);
        l.advance(late);
        assert!(l.is_busy());
        assert_eq!(l.tx_end(), Some(Instant(u64::MAX - 1)));
        assert_eq!(l.queue.len_packets(), 1);
        assert_eq!((l.poll_deliver(late), l.in_flight()), (None, 0));
        assert_eq!(l.stats.tx_packets, 0);
    }

    #[test]
    fn queue_limit_excludes_the_packet_in_service() {
        let mut l = LinkDir::simple(Rate::mbps(8), Duration::ZERO, 1);
        assert!(l.enqueue(Instant::ZERO, pkt(0)).is_ok()); // in service
        assert!(l.enqueue(Instant::ZERO, pkt(1)).is_ok()); // waiting
        assert!(l.enqueue(Instant::ZERO, pkt(2)).is_err());
    }

    #[test]
    fn tap_records_every_serialized_packet_in_order() {
        let mut l = LinkDir::new(
            Rate::mbps(8),
            Duration::ZERO,
            Queue::drop_tail(QueueLimit::Packets(10)),
            LossModel::Scripted {
                pending: vec![crate::loss::ScriptedDrop {
                    flow: FlowId(1),
                    seq: crate::Seq(0),
                }],
            },
        );
        l.enable_tap();
        for i in 0..3 {
            l.enqueue(Instant::ZERO, pkt(i)).unwrap();
        }
        drain(&mut l);
        let mut got = Vec::new();
        l.drain_tap(&mut got);
        let summary: Vec<_> = got
            .iter()
            .map(|t| (t.at.as_nanos(), t.seg.flow.0, t.lost))
            .collect();
        assert_eq!(
            summary,
            vec![
                (1_000_000, 0, false),
                (2_000_000, 1, true),
                (3_000_000, 2, false)
            ]
        );
        l.drain_tap(&mut got);
        assert_eq!(got.len(), 3, "drained records are not repeated");
    }

    #[test]
    fn the_packet_in_transmission_is_neither_in_flight_nor_deliverable() {
        // It waits in the delay line already, with its arrival time.
        let mut l = LinkDir::simple(Rate::mbps(8), Duration::from_millis(10), 10);
        l.enqueue(Instant::ZERO, pkt(0)).unwrap();
        assert!(l.is_busy());
        assert_eq!(l.in_flight(), 0);
        assert_eq!(l.poll_timeout(), Some(Instant(11_000_000)));
        l.advance(Instant(1_000_000));
        assert!(!l.is_busy());
        assert_eq!(l.in_flight(), 1);
        // Not deliverable until the link has caught up past the end of its
        // transmission, even when its arrival time has come.
        let mut l = LinkDir::simple(Rate::mbps(8), Duration::ZERO, 10);
        l.enqueue(Instant::ZERO, pkt(0)).unwrap();
        l.enqueue(Instant::ZERO, pkt(1)).unwrap();
        assert_eq!(l.poll_deliver(Instant(1_000_000)), None);
        l.advance(Instant(1_000_000));
        assert_eq!(
            l.poll_deliver(Instant(1_000_000)).map(|p| p.flow.0),
            Some(0)
        );
        assert_eq!(
            l.poll_deliver(Instant(1_000_000)),
            None,
            "pkt 1 is on the wire"
        );
    }

    proptest::proptest! {
        /// `deliver_or_deadline` answers what `poll_deliver` does, and when
        /// that is nothing, `poll_timeout`'s deadline: two links fed alike,
        /// looked at whenever a driver may (zero delay too, where the head
        /// can be the packet in transmission), with losses and a full queue.
        #[test]
        fn deliver_or_deadline_is_poll_deliver_then_poll_timeout(
            delay_us in 0u64..3,
            ops in proptest::collection::vec((0u64..3000, 40u32..1500, proptest::bool::ANY), 1..40),
        ) {
            let drops = [3, 7, 8].map(|f| crate::loss::ScriptedDrop {
                flow: FlowId(f),
                seq: crate::Seq(0),
            });
            let mut a = LinkDir::new(
                Rate::mbps(8),
                Duration::from_micros(delay_us * 500),
                Queue::drop_tail(QueueLimit::Packets(5)),
                LossModel::Scripted { pending: drops.to_vec() },
            );
            let mut b = a.clone();
            // Both answers at `now`, after the driver's catch-up.
            let look = |a: &mut LinkDir<Segment>, b: &mut LinkDir<Segment>, now: Instant| {
                a.handle_timeout(now);
                b.handle_timeout(now);
                loop {
                    let got = a.deliver_or_deadline(now);
                    let want = b.poll_deliver(now).ok_or_else(|| b.poll_timeout());
                    proptest::prop_assert_eq!(got, want);
                    if got.is_err() {
                        return Ok(());
                    }
                }
            };
            let mut now = Instant::ZERO;
            for (k, &(gap_us, wire, look_now)) in ops.iter().enumerate() {
                now += Duration::from_micros(gap_us);
                let seg = Segment { len: wire - 40, ..pkt(k as u32) };
                proptest::prop_assert_eq!(a.enqueue(now, seg).is_ok(), b.enqueue(now, seg).is_ok());
                if look_now {
                    look(&mut a, &mut b, now)?;
                }
            }
            while let Some(t) = b.poll_timeout() {
                now = now.max(t);
                look(&mut a, &mut b, now)?;
            }
            proptest::prop_assert_eq!(a.stats, b.stats);
        }
    }

    #[test]
    fn take_arriving_then_inject_delivers_as_one_link_would() {
        // 10 Mbit/s, 1000 B: 0.8 ms per packet; 5 ms delay.
        let mut whole: LinkDir<Segment> =
            LinkDir::simple(Rate(10_000_000), Duration::from_millis(5), 10);
        let mut near: LinkDir<Segment> =
            LinkDir::simple(Rate(10_000_000), Duration::from_millis(5), 10);
        let mut far: LinkDir<Segment> =
            LinkDir::simple(Rate(10_000_000), Duration::from_millis(5), 10);
        for k in 0..4 {
            whole.enqueue(Instant::ZERO, pkt(k)).unwrap();
            near.enqueue(Instant::ZERO, pkt(k)).unwrap();
        }
        // At 2 ms two transmissions have ended (0.8, 1.6 ms), the third is
        // under way: only the first two may move, whatever the bound.
        let mut moved = Vec::new();
        near.take_arriving(
            Instant::from_nanos(2_000_000),
            Instant::from_nanos(100_000_000),
            &mut moved,
        );
        assert_eq!(moved.len(), 2);
        near.take_arriving(
            Instant::from_nanos(4_000_000),
            Instant::from_nanos(100_000_000),
            &mut moved,
        );
        assert_eq!(moved.len(), 4);
        for (t, p) in moved {
            far.inject(t, p);
        }
        assert_eq!(drain(&mut far), drain(&mut whole));
        assert_eq!(far.stats.delivered_packets, 4);
    }

    /// 8 Mbit/s and 10 ms, whose delay falls to 1 ms at 2 ms.
    fn delay_falls_at_2ms() -> LinkDir<Segment> {
        let steps = [schedule::Step {
            at: Duration::from_millis(2),
            rate: None,
            delay: Some(Duration::from_millis(1)),
            loss: None,
            ramp: false,
        }];
        let spec = ServiceSpec::Schedule(alloc::sync::Arc::new(schedule::Schedule::new(
            Rate::mbps(8),
            Duration::from_millis(10),
            &steps,
        )));
        LinkDir::simple(Rate::mbps(8), Duration::from_millis(10), 10).with_service(
            &spec,
            Instant::ZERO,
            Stream::derive(1, "t"),
        )
    }

    #[test]
    fn a_scheduled_delay_drop_never_reorders_packets() {
        // 8 Mbit/s, 1000 B: 1 ms each. The delay falls from 10 ms to 1 ms
        // at 2 ms: packets ending later would overtake those before them.
        let mut l = delay_falls_at_2ms();
        for i in 0..4 {
            l.enqueue(Instant::ZERO, pkt(i)).unwrap();
        }
        // They end at 1, 2, 3 and 4 ms: the first arrives at 11 ms, the
        // others (due at 3, 4 and 5 ms) are held behind it.
        assert_eq!(
            drain(&mut l),
            vec![
                (11_000_000, 0),
                (11_000_000, 1),
                (11_000_000, 2),
                (11_000_000, 3)
            ]
        );
        l.enqueue(Instant(20_000_000), pkt(4)).unwrap();
        assert_eq!(drain(&mut l), vec![(22_000_000, 4)]);
    }

    /// What a driver reads instead of the delay line's head after handing
    /// a packet to an empty direction: the arrival that head holds, on a
    /// fixed link and under a service that changed the delay.
    #[test]
    fn sole_arrival_is_the_heads_arrival() {
        let mut l = LinkDir::simple(Rate::mbps(8), Duration::from_millis(10), 10);
        assert_eq!(l.sole_arrival(), None);
        l.enqueue(Instant(3_000_000), pkt(0)).unwrap();
        // 1000 B at 8 Mbit/s: 1 ms, then 10 ms.
        assert_eq!(l.sole_arrival(), Some(Instant(14_000_000)));
        assert_eq!(l.sole_arrival(), l.poll_timeout());

        let mut l = delay_falls_at_2ms();
        l.enqueue(Instant(5_000_000), pkt(1)).unwrap();
        // Ends at 6 ms, past the step: 1 ms of delay, not the 10 of `delay`.
        assert_eq!(l.sole_arrival(), Some(Instant(7_000_000)));
    }

    /// The packets a driver prefetches ahead: `k` behind the head, and the
    /// last, in the delay line's order.
    #[test]
    fn behind_head_and_line_tail_follow_the_line() {
        let mut l = LinkDir::simple(Rate::mbps(8), Duration::from_millis(10), 10);
        assert!(l.line_tail().is_none() && l.behind_head(0).is_none());
        for i in 0..3 {
            l.enqueue(Instant(i as u64 * 1_000_000), pkt(i)).unwrap();
        }
        let flows = |p: Option<&Segment>| p.map(|s| s.flow.0);
        assert_eq!(flows(l.behind_head(0)), Some(0));
        assert_eq!(flows(l.behind_head(2)), Some(2));
        assert_eq!(flows(l.behind_head(3)), None);
        assert_eq!(flows(l.line_tail()), Some(2));
        l.handle_timeout(Instant(11_000_000));
        assert_eq!(
            l.poll_deliver(Instant(11_000_000)).map(|s| s.flow.0),
            Some(0)
        );
        assert_eq!(flows(l.behind_head(0)), Some(1));
        assert_eq!(flows(l.behind_head(1)), Some(2));
    }

    #[test]
    fn idle_link_starts_at_arrival_time() {
        let mut l = LinkDir::simple(Rate::mbps(8), Duration::from_millis(1), 10);
        l.enqueue(Instant(5_000_000), pkt(0)).unwrap();
        assert_eq!(drain(&mut l), vec![(7_000_000, 0)]);
    }
}
