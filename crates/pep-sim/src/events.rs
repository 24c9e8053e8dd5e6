//! The event queue: a min-heap ordered by (time, insertion sequence), so
//! events at the same instant run in the order they were scheduled, on every
//! machine.
//!
//! Each entry is one `u128`: the time in the high 64 bits, then the
//! insertion sequence, then the packed event. Ordering is one integer
//! compare (sequences are unique, so the event bits never decide), and a
//! 4-ary heap of 16-byte entries keeps a node's children in one cache line
//! at half the depth of a binary heap. The pop order is exactly that of a
//! `BinaryHeap` keyed by (time, sequence); the tests below check the two
//! against each other on random schedules.

use pep_core::Instant;

/// Low bits of an entry that hold the packed event: 4 for the kind, the
/// rest for the component index.
const EVENT_BITS: u32 = 28;
/// Component indices (ports, flows, processors, agents) must be below
/// this (16 M). Validation keeps them there: at most `MAX_NODES` (4096)
/// nodes, so fewer than 2^24 ports between distinct pairs, and
/// `MAX_FLOWS` flows.
pub const MAX_INDEX: u32 = 1 << (EVENT_BITS - 4);
/// Sequence numbers the middle bits have room for (2^36). When they run
/// out, the pending entries are renumbered in their order.
const SEQ_LIMIT: u64 = 1 << (64 - EVENT_BITS);
/// Children per heap node.
const ARITY: usize = 4;

/// What happens when an event fires. A closed set, packed into 28 bits so a
/// heap entry is 16 bytes and ordering never looks at the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

impl Event {
    fn pack(self) -> u64 {
        let (k, i) = match self {
            Event::Link(i) => (0u64, i),
            Event::Sender(i) => (1, i),
            Event::Sink(i) => (2, i),
            Event::FlowStart(i) => (3, i),
            Event::Sample => (4, 0),
            Event::Bin => (5, 0),
            Event::App(i) => (6, i),
            Event::Host(i) => (7, i),
            Event::Agent(i) => (8, i),
            Event::Read(i) => (9, i),
        };
        // Scenario validation bounds every index (see MAX_INDEX).
        assert!(i < MAX_INDEX, "component index {i} out of the event range");
        k << (EVENT_BITS - 4) | i as u64
    }
    fn unpack(v: u64) -> Event {
        let i = (v & (MAX_INDEX as u64 - 1)) as u32;
        match (v >> (EVENT_BITS - 4)) & 0xf {
            0 => Event::Link(i),
            1 => Event::Sender(i),
            2 => Event::Sink(i),
            3 => Event::FlowStart(i),
            4 => Event::Sample,
            5 => Event::Bin,
            6 => Event::App(i),
            7 => Event::Host(i),
            8 => Event::Agent(i),
            _ => Event::Read(i),
        }
    }
}

/// Pending events, earliest first; ties broken by scheduling order.
#[derive(Debug)]
pub struct EventQueue {
    /// A 4-ary min-heap: the children of `i` are `4i + 1 ..= 4i + 4`.
    heap: Vec<u128>,
    /// `heap[0]` was popped and not yet refilled. The next `schedule` puts
    /// its entry there and sifts it down: the handler of the event just
    /// popped usually schedules one (a link's next arrival), near the top
    /// of the heap, so one short sift replaces a full-depth sift-down plus
    /// a sift-up. The next pop refills the hole if nothing did.
    hole: bool,
    next_seq: u64,
    seq_limit: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl EventQueue {
    pub fn new() -> Self {
        Self::with_seq_limit(SEQ_LIMIT)
    }

    /// A queue that renumbers after `limit` sequence numbers (tests use a
    /// small one to exercise renumbering).
    #[doc(hidden)]
    pub fn with_seq_limit(limit: u64) -> Self {
        assert!((1..=SEQ_LIMIT).contains(&limit));
        EventQueue {
            heap: Vec::new(),
            hole: false,
            next_seq: 0,
            seq_limit: limit,
        }
    }

    #[inline]
    pub fn schedule(&mut self, at: Instant, ev: Event) {
        if self.next_seq == self.seq_limit {
            self.renumber();
        }
        let key = (at.as_nanos() as u128) << 64 | (self.next_seq << EVENT_BITS | ev.pack()) as u128;
        self.next_seq += 1;
        if self.hole {
            self.hole = false;
            self.sift_down_from_root(key);
            return;
        }
        let mut i = self.heap.len();
        self.heap.push(key);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let p = self.heap[parent];
            if p <= key {
                break;
            }
            self.heap[i] = p;
            i = parent;
        }
        self.heap[i] = key;
    }

    /// Removes and returns the earliest event if it is due by `limit`.
    #[inline]
    pub fn pop_until(&mut self, limit: Instant) -> Option<(Instant, Event)> {
        if self.hole {
            self.fill_hole();
        }
        let &top = self.heap.first()?;
        let t = (top >> 64) as u64;
        if t > limit.as_nanos() {
            return None;
        }
        self.hole = true;
        Some((
            Instant(t),
            Event::unpack(top as u64 & ((1 << EVENT_BITS) - 1)),
        ))
    }

    /// Moves the last entry into the vacant root.
    #[inline]
    fn fill_hole(&mut self) {
        self.hole = false;
        let last = self.heap.pop().expect("the hole is an entry");
        if !self.heap.is_empty() {
            self.sift_down_from_root(last);
        }
    }

    /// Puts `key` in the (vacant) root's place and sifts it down.
    #[inline]
    fn sift_down_from_root(&mut self, key: u128) {
        let h = &mut self.heap[..];
        let n = h.len();
        let mut i = 0;
        loop {
            let first = ARITY * i + 1;
            let (m, mv) = if let Some(c) = h.get(first..first + ARITY) {
                // All four children: a tournament, which compiles to
                // conditional moves rather than a loop.
                let (m1, v1) = if c[1] < c[0] { (1, c[1]) } else { (0, c[0]) };
                let (m2, v2) = if c[3] < c[2] { (3, c[3]) } else { (2, c[2]) };
                let (m, v) = if v2 < v1 { (m2, v2) } else { (m1, v1) };
                (first + m, v)
            } else if first < n {
                let mut m = first;
                for j in first + 1..n {
                    if h[j] < h[m] {
                        m = j;
                    }
                }
                (m, h[m])
            } else {
                break;
            };
            if mv >= key {
                break;
            }
            h[i] = mv;
            i = m;
        }
        h[i] = key;
    }

    /// Gives the pending entries the sequence numbers `0..len` in their
    /// current order, so later ones still sort after them.
    #[cold]
    fn renumber(&mut self) {
        if self.hole {
            self.fill_hole();
        }
        self.heap.sort_unstable();
        let mask = (1u128 << EVENT_BITS) - 1;
        for (seq, e) in self.heap.iter_mut().enumerate() {
            *e = (*e >> 64) << 64 | (seq as u128) << EVENT_BITS | (*e & mask);
        }
        // A sorted array is a valid heap.
        self.next_seq = self.heap.len() as u64;
        assert!(
            self.next_seq < self.seq_limit,
            "more pending events than sequence numbers"
        );
    }

    pub fn peek_time(&self) -> Option<Instant> {
        // With the root vacant, the earliest entry is one of its children.
        let top = if self.hole {
            self.heap.iter().skip(1).take(ARITY).min()
        } else {
            self.heap.first()
        };
        top.map(|&k| Instant((k >> 64) as u64))
    }

    pub fn len(&self) -> usize {
        self.heap.len() - self.hole as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A component's one pending wake-up. Components re-state their deadline
/// after every input; the engine schedules an event only when the deadline
/// moves earlier than the one already queued. A queued event whose time no
/// longer matches is stale and ignored when it fires.
#[derive(Clone, Copy, Debug, Default)]
pub struct Armed(Option<Instant>);

impl Armed {
    /// Returns true when `deadline` needs a new event.
    pub fn arm(&mut self, deadline: Option<Instant>) -> bool {
        match (deadline, self.0) {
            (Some(d), Some(cur)) if d >= cur => false,
            (Some(d), _) => {
                self.0 = Some(d);
                true
            }
            (None, _) => false,
        }
    }
    /// Called when an event fires at `at`: true if it is the live one.
    pub fn fire(&mut self, at: Instant) -> bool {
        if self.0 == Some(at) {
            self.0 = None;
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

    #[test]
    fn packing_round_trips() {
        for ev in [
            Event::Link(MAX_INDEX - 1),
            Event::Read(MAX_INDEX - 1),
            Event::Sender(3),
            Event::Sink(0),
            Event::FlowStart(9),
            Event::Sample,
            Event::Bin,
            Event::App(4),
            Event::Host(7),
            Event::Agent(2),
        ] {
            assert_eq!(Event::unpack(ev.pack()), ev);
        }
    }

    #[test]
    #[should_panic(expected = "out of the event range")]
    fn an_index_beyond_the_packing_is_refused() {
        EventQueue::new().schedule(Instant(1), Event::Sender(MAX_INDEX));
    }

    /// One step of a random schedule: schedule at `now + dt` or pop what is
    /// due by `now + dt`.
    #[derive(Clone, Debug)]
    enum Op {
        Schedule { dt: u64, ev: Event },
        PopUntil { dt: u64 },
    }

    fn event() -> impl Strategy<Value = Event> {
        let i = 0..MAX_INDEX;
        prop_oneof![
            i.clone().prop_map(Event::Link),
            i.clone().prop_map(Event::Sender),
            i.clone().prop_map(Event::Sink),
            i.clone().prop_map(Event::FlowStart),
            i.clone().prop_map(Event::App),
            i.clone().prop_map(Event::Host),
            i.clone().prop_map(Event::Agent),
            i.prop_map(Event::Read),
            Just(Event::Sample),
            Just(Event::Bin),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        // Small time steps so many events share an instant (the tie-break
        // is what could go wrong), and now and then a far one.
        let dt = prop_oneof![4 => 0u64..4, 1 => 0u64..1_000_000_000_000];
        prop_oneof![
            3 => (dt.clone(), event()).prop_map(|(dt, ev)| Op::Schedule { dt, ev }),
            2 => dt.prop_map(|dt| Op::PopUntil { dt }),
        ]
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The queue pops exactly what the engine's former queue, a
        /// `BinaryHeap` ordered by (time, insertion sequence), popped,
        /// and with a small sequence limit so renumbering happens throughout.
        #[test]
        fn pops_in_the_order_of_a_binary_heap_by_time_then_sequence(
            ops in proptest::collection::vec(op(), 1..400),
            seq_limit in prop_oneof![Just(SEQ_LIMIT), 20u64..200],
        ) {
            use std::cmp::Reverse;
            use std::collections::BinaryHeap;
            let mut q = EventQueue::with_seq_limit(seq_limit);
            let mut reference = BinaryHeap::new();
            let mut seq = 0u64;
            let mut now = 0u64;
            for op in ops {
                match op {
                    // Renumbering needs a free sequence number.
                    Op::Schedule { .. } if q.len() as u64 + 1 >= seq_limit => {}
                    Op::Schedule { dt, ev } => {
                        q.schedule(Instant(now + dt), ev);
                        reference.push(Reverse((now + dt, seq, ev.pack())));
                        seq += 1;
                    }
                    Op::PopUntil { dt } => {
                        // Time moves on as in the engine: to each popped event.
                        let limit = Instant(now + dt);
                        loop {
                            let want = match reference.peek() {
                                Some(Reverse((t, _, _))) if *t <= limit.as_nanos() => {
                                    let Reverse((t, _, ev)) = reference.pop().unwrap();
                                    Some((Instant(t), Event::unpack(ev)))
                                }
                                _ => None,
                            };
                            let got = q.pop_until(limit);
                            prop_assert_eq!(got, want);
                            let Some((t, _)) = got else { break };
                            now = t.as_nanos();
                        }
                    }
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
    fn renumbering_keeps_the_order() {
        let mut q = EventQueue::with_seq_limit(5);
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
        assert!(a.arm(Some(Instant(200))));
    }
}
