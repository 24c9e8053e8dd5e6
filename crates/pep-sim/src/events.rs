//! The event queue: a min-heap ordered by (time, insertion sequence), so
//! events at the same instant run in the order they were scheduled, on every
//! machine.
//!
//! Each heap entry is a `u64` key, the time relative to a base in the high
//! 36 bits and the insertion sequence in the low 28, beside the
//! event. Ordering is one 64-bit compare (sequences are unique, so the
//! event never decides), and a 4-ary heap keeps a node's children close at
//! half the depth of a binary heap. When the sequences run out (every 268 M
//! schedules) the pending entries are renumbered in their order and the
//! base moves up to the earliest of them. Events more than 2^36 ns
//! (68.7 s) past the base wait in a second, plain heap until a rebase
//! brings them within reach. The pop order is exactly that of a
//! `BinaryHeap` keyed by (time, sequence); the tests below check the two
//! against each other on random schedules.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use pep_core::Instant;

/// Low bits of a key that hold the insertion sequence.
const SEQ_BITS: u32 = 28;
/// Sequence numbers a key has room for (268 M, more than the events the
/// largest valid scenario can have pending). When they run out, the
/// pending entries are renumbered in their order.
const SEQ_LIMIT: u64 = 1 << SEQ_BITS;
/// How far past the base a key's time reaches (2^36 ns, about 68.7 s).
/// Later events (flow starts, long timers) wait in `far`; the base moves
/// up to the last pop whenever an event would otherwise miss the reach.
const HORIZON: u64 = 1 << (64 - SEQ_BITS);
/// Children per heap node.
const ARITY: usize = 4;

/// What happens when an event fires. A closed set of eight bytes, stored
/// beside its key as it is: ordering never looks at it (the order derived
/// here only lets the far heap hold it, where the sequence decides first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// A link direction's transmitter finishes or a packet reaches its far end.
    Link(u32),
    /// A flow's sender wants `handle_timeout` (RTO, pacing) or starts.
    Sender(u32),
    /// A flow's receiver wants `handle_timeout` (delayed-ACK timer).
    Sink(u32),
    /// A flow starts sending.
    FlowStart(u32),
    /// A flow's application generator writes its next packet.
    App(u32),
    /// A host's packet processor finishes a packet.
    Host(u32),
    /// A PEP agent wants `on_timeout`.
    Agent(u32),
    /// A flow's receiving application has finished its work and reads again.
    Read(u32),
    /// Periodic measurement: sample queues and windows.
    Sample,
    /// End of a goodput/utilisation bin.
    Bin,
}

/// A heap entry: the ordering key and the event beside it (16 bytes).
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// `(time - base) << SEQ_BITS | sequence`.
    key: u64,
    ev: Event,
}

/// Pending events, earliest first; ties broken by scheduling order.
#[derive(Debug)]
pub struct EventQueue {
    /// A 4-ary min-heap: the children of `i` are `4i + 1 ..= 4i + 4`.
    heap: Vec<Entry>,
    /// `heap[0]` was popped and not yet refilled. The next `schedule` puts
    /// its entry there and sifts it down: the handler of the event just
    /// popped usually schedules one (a link's next arrival), near the top
    /// of the heap, so one short sift replaces a full-depth sift-down plus
    /// a sift-up. The next pop refills the hole if nothing did.
    hole: bool,
    next_seq: u64,
    seq_limit: u64,
    /// The time keys count from: at or before every pending event's time.
    base: u64,
    /// Keys reach `horizon` past `base`; later events wait in `far`.
    horizon: u64,
    /// Events at or past `base + horizon` by (time, order of arrival in
    /// `far`), and that order's next number. Every entry in `heap` is
    /// earlier than every entry here. An entry here was scheduled before
    /// any entry of `heap` with the same time: the base only moves up, and
    /// each move brings over every far entry that fits, so a later event
    /// at the same time can only have been put in the heap directly.
    far: BinaryHeap<Reverse<(u64, u64, Event)>>,
    far_seq: u64,
    /// The time of the last pop: a rebase moves the base no later, so the
    /// engine (which schedules nothing before it) never moves it back.
    last_pop: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl EventQueue {
    pub fn new() -> Self {
        Self::with_limits(SEQ_LIMIT, HORIZON)
    }

    /// A queue that renumbers after `seq_limit` sequence numbers and keeps
    /// events `horizon` ns past its base apart (tests use small ones to
    /// exercise both).
    #[doc(hidden)]
    pub fn with_limits(seq_limit: u64, horizon: u64) -> Self {
        assert!((1..=SEQ_LIMIT).contains(&seq_limit));
        assert!((1..=HORIZON).contains(&horizon));
        EventQueue {
            heap: Vec::new(),
            hole: false,
            next_seq: 0,
            seq_limit,
            base: 0,
            horizon,
            far: BinaryHeap::new(),
            far_seq: 0,
            last_pop: 0,
        }
    }

    #[inline]
    pub fn schedule(&mut self, at: Instant, ev: Event) {
        let t = at.as_nanos();
        // `t < base` wraps to a large offset and takes the slow path too.
        let offset = t.wrapping_sub(self.base);
        if self.next_seq == self.seq_limit || offset >= self.horizon {
            self.schedule_slow(t, ev);
            return;
        }
        let e = Entry {
            key: offset << SEQ_BITS | self.next_seq,
            ev,
        };
        self.next_seq += 1;
        if self.hole {
            self.hole = false;
            self.sift_down_from_root(e);
            return;
        }
        self.push(e);
    }

    /// Appends `e` to the heap and sifts it up.
    #[inline]
    fn push(&mut self, e: Entry) {
        let mut i = self.heap.len();
        self.heap.push(e);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let p = self.heap[parent];
            if p.key <= e.key {
                break;
            }
            self.heap[i] = p;
            i = parent;
        }
        self.heap[i] = e;
    }

    /// `schedule` when the sequences have run out or `t` is outside the
    /// keys' reach from the base.
    #[cold]
    #[inline(never)]
    fn schedule_slow(&mut self, t: u64, ev: Event) {
        if self.hole {
            self.fill_hole();
        }
        // The latest base every pending event (and `t`) is at or after, and
        // no later than the last pop.
        let heap_min = self.heap.first().map_or(u64::MAX, |e| self.abs(e.key));
        let far_min = self.far.peek().map_or(u64::MAX, |Reverse(f)| f.0);
        let lowest = t.min(heap_min).min(far_min).min(self.last_pop);
        let outside = t.wrapping_sub(self.base) >= self.horizon;
        if self.next_seq == self.seq_limit
            || t < self.base
            || (outside && t - lowest < self.horizon)
        {
            self.rebase(lowest);
        }
        if t - self.base < self.horizon {
            let key = (t - self.base) << SEQ_BITS | self.next_seq;
            self.next_seq += 1;
            self.push(Entry { key, ev });
        } else {
            self.push_far(t, ev);
        }
    }

    fn push_far(&mut self, t: u64, ev: Event) {
        self.far.push(Reverse((t, self.far_seq, ev)));
        self.far_seq += 1;
    }

    /// The absolute time of a key.
    #[inline]
    fn abs(&self, key: u64) -> u64 {
        self.base + (key >> SEQ_BITS)
    }

    /// Removes and returns the earliest event if it is due by `limit`.
    #[inline]
    pub fn pop_until(&mut self, limit: Instant) -> Option<(Instant, Event)> {
        if self.hole {
            self.fill_hole();
        }
        let top = match self.heap.first() {
            Some(&top) => top,
            None => self.bring_far(limit)?,
        };
        let t = self.abs(top.key);
        if t > limit.as_nanos() {
            return None;
        }
        self.hole = true;
        self.last_pop = t;
        Some((Instant(t), top.ev))
    }

    /// The event the next [`Self::pop_until`] returns unless an earlier one
    /// is scheduled first (the least of the vacant root's children), so
    /// the engine can prefetch its state while the current event runs. A
    /// hint only: nothing is popped or reordered.
    #[inline(always)]
    pub fn peek_next(&self) -> Option<Event> {
        if !self.hole {
            return self.heap.first().map(|e| e.ev);
        }
        let children = self.heap.get(1..)?;
        if let Some(c) = children.first_chunk::<ARITY>() {
            // A tournament, as in the sift: conditional moves, no loop.
            let a = if c[1].key < c[0].key { &c[1] } else { &c[0] };
            let b = if c[3].key < c[2].key { &c[3] } else { &c[2] };
            return Some(if b.key < a.key { b.ev } else { a.ev });
        }
        children.iter().min_by_key(|e| e.key).map(|e| e.ev)
    }

    /// With the heap empty: moves the base to the earliest far event, if it
    /// is due by `limit`, and returns the new top.
    #[cold]
    fn bring_far(&mut self, limit: Instant) -> Option<Entry> {
        let &Reverse((t, _, _)) = self.far.peek()?;
        if t > limit.as_nanos() {
            return None;
        }
        self.rebase(t);
        self.heap.first().copied()
    }

    /// Moves the last entry into the vacant root (out of line: a pop
    /// that nothing refilled, about one in seven).
    #[inline(never)]
    fn fill_hole(&mut self) {
        self.hole = false;
        let last = self.heap.pop().expect("the hole is an entry");
        if !self.heap.is_empty() {
            self.sift_down_from_root(last);
        }
    }

    /// Puts `e` in the (vacant) root's place and sifts it down. Inline in
    /// `schedule`, where most entries take this path: a call would cost
    /// about a fifth of a typical three-level sift.
    ///
    /// The heap is seen as cells, so the vacancy is a reference into it
    /// (written while its children are read) rather than an index checked
    /// against the length at every level. The chosen child is read again
    /// for the compare with `key`: deciding on the tournament's least key
    /// instead made LLVM compute the child's index a second time (+4
    /// instructions per level).
    #[inline(always)]
    fn sift_down_from_root(&mut self, e: Entry) {
        let h = Cell::from_mut(&mut self.heap[..]).as_slice_of_cells();
        let Some(mut vacant) = h.first() else {
            return;
        };
        let key = e.key;
        let mut i = 0;
        loop {
            let first = ARITY * i + 1;
            let Some(children) = h.get(first..) else {
                break;
            };
            let Some(c) = children.first_chunk::<ARITY>() else {
                // Fewer than four children, all of them leaves: the least
                // (the first of equals) moves up if it is earlier.
                let mut least: Option<&Cell<Entry>> = None;
                for c in children {
                    if least.is_none_or(|l| c.get().key < l.get().key) {
                        least = Some(c);
                    }
                }
                if let Some(c) = least.filter(|c| c.get().key < key) {
                    vacant.set(c.get());
                    vacant = c;
                }
                break;
            };
            // All four children: a tournament, which compiles to
            // conditional moves rather than a loop.
            let k = |j: usize| c[j].get().key;
            let (m1, k1) = if k(1) < k(0) { (1, k(1)) } else { (0, k(0)) };
            let (m2, k2) = if k(3) < k(2) { (3, k(3)) } else { (2, k(2)) };
            let m = if k2 < k1 { m2 } else { m1 };
            // The mask lets the compiler drop the bounds check.
            let child = &c[m & (ARITY - 1)];
            let moved = child.get();
            if moved.key >= key {
                break;
            }
            vacant.set(moved);
            vacant = child;
            i = first + m;
        }
        vacant.set(e);
    }

    /// Moves the base to `new_base` (at or before every pending event) and
    /// gives the heap's entries the sequence numbers `0..len` in their
    /// order, so later ones still sort after them. Far events that come
    /// within reach join the heap ahead of its entries at the same time;
    /// heap entries out of reach of a lower base join `far` behind its
    /// entries at the same time (scheduling in the past: the engine never
    /// does, but the order stays that of (time, sequence)).
    #[cold]
    fn rebase(&mut self, new_base: u64) {
        if self.hole {
            self.fill_hole();
        }
        self.heap.sort_unstable_by_key(|e| e.key);
        let near: Vec<(u64, Event)> = self.heap.iter().map(|e| (self.abs(e.key), e.ev)).collect();
        let mut arriving = Vec::new();
        while let Some(&Reverse((t, _, ev))) = self.far.peek() {
            if t - new_base >= self.horizon {
                break;
            }
            self.far.pop();
            arriving.push((t, ev));
        }
        self.heap.clear();
        self.base = new_base;
        let mut near = near.into_iter().peekable();
        let mut arriving = arriving.into_iter().peekable();
        loop {
            let from_far = match (near.peek(), arriving.peek()) {
                (None, None) => break,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some(n), Some(a)) => a.0 <= n.0,
            };
            let (t, ev) = if from_far {
                arriving.next()
            } else {
                near.next()
            }
            .expect("peeked");
            if t - new_base < self.horizon {
                // A sorted array is a valid heap.
                let key = (t - new_base) << SEQ_BITS | self.heap.len() as u64;
                self.heap.push(Entry { key, ev });
            } else {
                self.push_far(t, ev);
            }
        }
        self.next_seq = self.heap.len() as u64;
        assert!(
            self.next_seq < self.seq_limit,
            "more pending events than sequence numbers"
        );
    }

    pub fn peek_time(&self) -> Option<Instant> {
        // With the root vacant, the earliest entry is one of its children.
        let top = if self.hole {
            self.heap.iter().skip(1).take(ARITY).map(|e| e.key).min()
        } else {
            self.heap.first().map(|e| e.key)
        };
        match top {
            Some(k) => Some(Instant(self.abs(k))),
            None => self.far.peek().map(|Reverse(f)| Instant(f.0)),
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len() - self.hole as usize + self.far.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A component's one pending wake-up. Components re-state their deadline
/// after every input; the engine schedules an event only when the deadline
/// moves earlier than the one already queued. A queued event whose time no
/// longer matches is stale and ignored when it fires.
///
/// The pending instant, or [`Instant::MAX`] for none (a sentinel, not an
/// `Option`: eight bytes less in every port and flow). A deadline at
/// `Instant::MAX` is past every run's end and needs no event.
#[derive(Clone, Copy, Debug)]
pub struct Armed(Instant);

impl Default for Armed {
    fn default() -> Armed {
        Armed(Instant::MAX)
    }
}

impl Armed {
    /// A wake-up that never comes: it claims an event at time zero, so
    /// every deadline is later than the one "pending" and none is
    /// scheduled. For a component another driver runs (the cut link's
    /// direction whose far end is on the other side of a cut run).
    pub fn never() -> Armed {
        Armed(Instant::ZERO)
    }

    /// Returns true when `deadline` needs a new event.
    #[inline]
    pub fn arm(&mut self, deadline: Option<Instant>) -> bool {
        match deadline {
            Some(d) if d < self.0 => {
                self.0 = d;
                true
            }
            _ => false,
        }
    }
    /// Called when an event fires at `at`: true if it is the live one.
    #[inline]
    pub fn fire(&mut self, at: Instant) -> bool {
        if self.0 == at && at != Instant::MAX {
            self.0 = Instant::MAX;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_time_runs_in_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(Instant(10), Event::Sink(1));
        q.schedule(Instant(5), Event::Link(7));
        q.schedule(Instant(10), Event::Sender(2));
        q.schedule(Instant(10), Event::Bin);
        let got: Vec<_> = std::iter::from_fn(|| q.pop_until(Instant::MAX)).collect();
        assert_eq!(
            got,
            vec![
                (Instant(5), Event::Link(7)),
                (Instant(10), Event::Sink(1)),
                (Instant(10), Event::Sender(2)),
                (Instant(10), Event::Bin),
            ]
        );
    }

    #[test]
    fn pop_until_respects_the_limit() {
        let mut q = EventQueue::new();
        q.schedule(Instant(10), Event::Sample);
        assert_eq!(q.pop_until(Instant(9)), None);
        assert_eq!(q.pop_until(Instant(10)), Some((Instant(10), Event::Sample)));
    }

    /// `peek_next` names the event the next pop returns when nothing is
    /// scheduled in between (ties included), and nothing once the last
    /// event is popped.
    #[test]
    fn peek_next_is_the_next_pop() {
        let mut q = EventQueue::new();
        let mut x = 12345u64;
        for i in 0..2000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            q.schedule(Instant((x >> 33) % 500), Event::Link(i));
        }
        let (mut popped, mut scheduled) = (0, 2000);
        let mut peeked = q.peek_next();
        while let Some((_, ev)) = q.pop_until(Instant::MAX) {
            assert_eq!(peeked, Some(ev), "pop {popped}");
            peeked = q.peek_next();
            popped += 1;
            if popped % 3 == 0 {
                // A handler that schedules (into the hole) now and then.
                if popped < 3000 {
                    q.schedule(Instant(600 + popped), Event::Sink(popped as u32));
                    scheduled += 1;
                }
                peeked = q.peek_next();
            }
        }
        assert_eq!(popped, scheduled);
        assert_eq!(peeked, None);
    }

    /// One step of a random schedule: schedule at `now + dt` (or, rarely,
    /// `back` before now, which the engine never does) or pop what is due
    /// by `now + dt`.
    #[derive(Clone, Debug)]
    enum Op {
        Schedule { dt: u64, ev: Event },
        ScheduleBack { back: u64, ev: Event },
        PopUntil { dt: u64 },
    }

    fn event() -> impl Strategy<Value = Event> {
        let i = any::<u32>();
        prop_oneof![
            i.prop_map(Event::Link),
            i.prop_map(Event::Sender),
            i.prop_map(Event::Sink),
            i.prop_map(Event::FlowStart),
            i.prop_map(Event::App),
            i.prop_map(Event::Host),
            i.prop_map(Event::Agent),
            i.prop_map(Event::Read),
            Just(Event::Sample),
            Just(Event::Bin),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        // Small time steps so many events share an instant (the tie-break
        // is what could go wrong), and now and then a far one, past the
        // real horizon (2^36 ns) too.
        let dt = prop_oneof![
            8 => 0u64..4,
            2 => 0u64..64,
            1 => 0u64..3_000_000_000_000,
        ];
        prop_oneof![
            12 => (dt.clone(), event()).prop_map(|(dt, ev)| Op::Schedule { dt, ev }),
            1 => (0u64..64, event()).prop_map(|(back, ev)| Op::ScheduleBack { back, ev }),
            8 => dt.prop_map(|dt| Op::PopUntil { dt }),
        ]
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// The queue pops exactly what the engine's former queue, a
        /// `BinaryHeap` ordered by (time, insertion sequence), popped;
        /// with a small sequence limit so renumbering happens throughout,
        /// and a small horizon so events go far and come back.
        #[test]
        fn pops_in_the_order_of_a_binary_heap_by_time_then_sequence(
            ops in proptest::collection::vec(op(), 1..500),
            seq_limit in prop_oneof![Just(SEQ_LIMIT), 20u64..200],
            horizon in prop_oneof![Just(HORIZON), 1u64..100],
        ) {
            let mut q = EventQueue::with_limits(seq_limit, horizon);
            let mut reference = BinaryHeap::new();
            let mut seq = 0u64;
            let mut now = 0u64;
            for op in ops {
                let at = match op {
                    Op::Schedule { dt, ev } => Some((now + dt, ev)),
                    Op::ScheduleBack { back, ev } => Some((now.saturating_sub(back), ev)),
                    Op::PopUntil { .. } => None,
                };
                match (op, at) {
                    // Renumbering needs a free sequence number.
                    (_, Some(_)) if q.len() as u64 + 1 >= seq_limit => {}
                    (_, Some((t, ev))) => {
                        q.schedule(Instant(t), ev);
                        reference.push(Reverse((t, seq, ev)));
                        seq += 1;
                    }
                    (Op::PopUntil { dt }, None) => {
                        // Time moves on as in the engine: to each popped event.
                        let limit = Instant(now + dt);
                        loop {
                            let want = match reference.peek() {
                                Some(Reverse((t, _, _))) if *t <= limit.as_nanos() => {
                                    let Reverse((t, _, ev)) = reference.pop().unwrap();
                                    Some((Instant(t), ev))
                                }
                                _ => None,
                            };
                            let got = q.pop_until(limit);
                            prop_assert_eq!(got, want);
                            let Some((t, _)) = got else { break };
                            now = t.as_nanos();
                        }
                    }
                    _ => unreachable!(),
                }
                prop_assert_eq!(q.len(), reference.len());
                prop_assert_eq!(
                    q.peek_time(),
                    reference.peek().map(|Reverse((t, _, _))| Instant(*t))
                );
            }
        }
    }

    #[test]
    fn far_events_keep_their_order_among_near_ones_at_the_same_time() {
        // Horizon 10: the events at 20 and 25 go far, then come within
        // reach when the heap runs empty, after which one more at 25 goes
        // near: it pops after the two that were far.
        let mut q = EventQueue::with_limits(SEQ_LIMIT, 10);
        q.schedule(Instant(25), Event::Sink(0));
        q.schedule(Instant(20), Event::Sink(1));
        q.schedule(Instant(25), Event::Sink(2));
        q.schedule(Instant(5), Event::Sink(3));
        assert_eq!(q.far.len(), 3);
        assert_eq!(q.pop_until(Instant(5)), Some((Instant(5), Event::Sink(3))));
        assert_eq!(
            q.pop_until(Instant(20)),
            Some((Instant(20), Event::Sink(1)))
        );
        q.schedule(Instant(25), Event::Sink(4));
        q.schedule(Instant(3000), Event::Sink(5));
        assert_eq!(q.len(), 4);
        let got: Vec<_> = std::iter::from_fn(|| q.pop_until(Instant::MAX)).collect();
        let want: Vec<_> = [(25, 0), (25, 2), (25, 4), (3000, 5)]
            .into_iter()
            .map(|(t, i)| (Instant(t), Event::Sink(i)))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn renumbering_keeps_the_order() {
        let mut q = EventQueue::with_limits(5, HORIZON);
        q.schedule(Instant(10), Event::Sink(0));
        q.schedule(Instant(10), Event::Sink(1));
        q.schedule(Instant(5), Event::Sink(2));
        q.schedule(Instant(10), Event::Sink(3));
        assert_eq!(q.pop_until(Instant(5)), Some((Instant(5), Event::Sink(2))));
        q.schedule(Instant(10), Event::Sink(4)); // the last sequence number
        q.schedule(Instant(10), Event::Sink(5)); // after renumbering
        let got: Vec<_> = std::iter::from_fn(|| q.pop_until(Instant::MAX)).collect();
        let want: Vec<_> = [0, 1, 3, 4, 5]
            .into_iter()
            .map(|i| (Instant(10), Event::Sink(i)))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn armed_schedules_only_earlier_deadlines() {
        let mut a = Armed::default();
        assert!(a.arm(Some(Instant(100))));
        assert!(!a.arm(Some(Instant(200))));
        assert!(a.arm(Some(Instant(50))));
        assert!(!a.fire(Instant(100)), "stale event");
        assert!(a.fire(Instant(50)));
        assert!(!a.fire(Instant(50)), "fired once");
        assert!(!a.arm(None));
        assert!(a.arm(Some(Instant(200))));
        // The end of time needs no event, armed or not.
        assert!(!a.arm(Some(Instant::MAX)));
        assert!(!Armed::default().arm(Some(Instant::MAX)));
        assert!(!Armed::default().fire(Instant::MAX));
        // A component another driver runs is never scheduled.
        assert!(!Armed::never().arm(Some(Instant(1))));
    }
}
