//! The event queue: pending events ordered by (time, insertion sequence),
//! so events at the same instant run in the order they were scheduled, on
//! every machine.
//!
//! Each entry is a `u64` key, the time relative to a base in the high 36
//! bits and the insertion sequence in the low 28, beside the event.
//! Ordering is one 64-bit compare (sequences are unique, so the event never
//! decides). Only the events of the current block of time (2^20 ns, 1 ms)
//! are kept in a 4-ary min-heap; later ones wait in a hierarchical timer
//! wheel of six levels of 64 slots, a slot of level `l` spanning 64^l
//! blocks, an event at the level of the highest block digit in which it
//! differs from the current block. When the heap runs empty, the wheel's
//! earliest slot becomes the current block's ancestor and its entries move
//! one level or more nearer, into the heap at the end: an event is moved at
//! most once per level, and neither the heap's depth nor a move's cost
//! grows with the events pending (the flows' far retransmission timers no
//! longer deepen the heap every near event sifts through). The entries
//! keep their keys throughout, so the heap pops them in exactly the order
//! of (time, sequence).
//!
//! When the sequences run out (every 268 M schedules) the pending entries
//! are renumbered in their order and the base moves up to the earliest of
//! them. Events more than 2^36 ns (68.7 s) past the base wait in a third,
//! plain heap until a rebase brings them within reach. The pop order is
//! exactly that of a `BinaryHeap` keyed by (time, sequence); the tests
//! below check the two against each other on random schedules.

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
/// A block of time, the wheel's finest slot and the span the heap holds,
/// is 2^BLOCK_BITS ns (1.05 ms: some 30 events at 50 flows of the
/// benchmark's dumbbell, 80 at 10,000; of 16 to 22 bits, 20 took the
/// fewest instructions in callgrind at both).
const BLOCK_BITS: u32 = 20;
/// Each wheel level resolves this many bits of a block number.
const SLOT_BITS: u32 = 6;
/// Slots per wheel level.
const SLOTS: usize = 1 << SLOT_BITS;
/// Wheel levels: six are enough for 36 bits of time offset in blocks of a
/// single nanosecond (the tests' smallest); eight so that a mask, not a
/// bounds check, keeps an index in range.
const LEVELS: usize = 8;

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
    /// A 4-ary min-heap: the children of `i` are `4i + 1 ..= 4i + 4`. It
    /// holds every entry whose block (`offset >> block_bits`) is at or
    /// before `cur_block`; every wheel entry is in a later block.
    heap: Vec<Entry>,
    /// The timer wheel: `wheel[l * SLOTS + s]` holds, in no order, the
    /// entries whose block first differs from `cur_block` in digit `l`
    /// (bits `6l .. 6l + 6` of the block number), and has `s` there;
    /// always `s` greater than `cur_block`'s digit.
    wheel: Vec<Vec<Entry>>,
    /// Bit `s` of `occupied[l]`: slot `s` of level `l` is not empty.
    occupied: [u64; LEVELS],
    /// Bit `l`: `occupied[l]` is not zero.
    levels: u32,
    /// Entries in the wheel.
    wheel_len: usize,
    /// The block whose entries the heap holds (blocks count from `base`).
    cur_block: u64,
    /// A block spans 2^block_bits ns.
    block_bits: u32,
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
        Self::with_limits(SEQ_LIMIT, HORIZON, BLOCK_BITS)
    }

    /// A queue that renumbers after `seq_limit` sequence numbers, keeps
    /// events `horizon` ns past its base apart and has blocks of
    /// 2^block_bits ns (tests use small ones to exercise all three).
    #[doc(hidden)]
    pub fn with_limits(seq_limit: u64, horizon: u64, block_bits: u32) -> Self {
        assert!((1..=SEQ_LIMIT).contains(&seq_limit));
        assert!((1..=HORIZON).contains(&horizon));
        assert!(block_bits < 64 - SEQ_BITS);
        EventQueue {
            heap: Vec::new(),
            wheel: (0..LEVELS * SLOTS).map(|_| Vec::new()).collect(),
            occupied: [0; LEVELS],
            levels: 0,
            wheel_len: 0,
            cur_block: 0,
            block_bits,
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
        let block = offset >> self.block_bits;
        if block > self.cur_block {
            self.wheel_put(block, e);
            return;
        }
        if self.hole {
            self.hole = false;
            self.sift_down_from_root(e);
            return;
        }
        self.push(e);
    }

    /// Puts `e`, of block `block` (after `cur_block`), in its wheel slot.
    #[inline(always)]
    fn wheel_put(&mut self, block: u64, e: Entry) {
        let differ = block ^ self.cur_block;
        let level = (63 - differ.leading_zeros()) / SLOT_BITS;
        let slot = (block >> (level * SLOT_BITS)) as usize & (SLOTS - 1);
        // The mask lets the compiler drop the bounds checks.
        let level = level as usize & (LEVELS - 1);
        self.wheel[level * SLOTS + slot].push(e);
        self.occupied[level] |= 1 << slot;
        self.levels |= 1 << level;
        self.wheel_len += 1;
    }

    /// Puts `e` in the heap or the wheel, by its block.
    #[inline(always)]
    fn place(&mut self, e: Entry) {
        let block = (e.key >> SEQ_BITS) >> self.block_bits;
        if block > self.cur_block {
            self.wheel_put(block, e);
        } else {
            self.push(e);
        }
    }

    /// The wheel's earliest slot: its level, slot and first block.
    #[inline]
    fn first_slot(&self) -> Option<(usize, usize, u64)> {
        if self.levels == 0 {
            return None;
        }
        let level = self.levels.trailing_zeros() as usize;
        let slot = self.occupied[level].trailing_zeros() as usize;
        let shift = level as u32 * SLOT_BITS;
        let high = self.cur_block & !((SLOTS as u64) << shift).wrapping_sub(1);
        Some((level, slot, high | (slot as u64) << shift))
    }

    /// The wheel's earliest entry (a scan of its earliest slot).
    fn wheel_min(&self) -> Option<&Entry> {
        let (level, slot, _) = self.first_slot()?;
        self.wheel[level * SLOTS + slot]
            .iter()
            .min_by_key(|e| e.key)
    }

    /// With the heap empty: moves the wheel's earliest slots nearer until
    /// some entry reaches the heap, unless the earliest slot starts after
    /// `limit` (then nothing moves, and every pending event is later than
    /// `limit`). False if the heap is still empty.
    #[inline(never)]
    fn advance(&mut self, limit: u64) -> bool {
        while self.heap.is_empty() {
            let Some((level, slot, block)) = self.first_slot() else {
                return false;
            };
            // Blocks are of offsets within the horizon: no overflow but
            // past the end of time (never due).
            let start = (block << self.block_bits).checked_add(self.base);
            if start.is_none_or(|s| s > limit) {
                return false;
            }
            self.cur_block = block;
            self.occupied[level] &= !(1 << slot);
            if self.occupied[level] == 0 {
                self.levels &= !(1 << level);
            }
            let mut moving = std::mem::take(&mut self.wheel[level * SLOTS + slot]);
            self.wheel_len -= moving.len();
            // Each entry shares the new current block's digits from `level`
            // up: it goes to the heap or a lower level.
            for e in moving.drain(..) {
                self.place(e);
            }
            // The slot keeps its allocation.
            self.wheel[level * SLOTS + slot] = moving;
        }
        true
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
        let heap_min = self
            .heap
            .first()
            .or_else(|| self.wheel_min())
            .map_or(u64::MAX, |e| self.abs(e.key));
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
            self.place(Entry { key, ev });
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
            None => self.refill(limit)?,
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
        let children = match (self.hole, self.heap.get(1..)) {
            (false, _) => self.heap.get(..1),
            (true, c) => c,
        };
        if let Some(children) = children {
            if let Some(c) = children.first_chunk::<ARITY>() {
                // A tournament, as in the sift: conditional moves, no loop.
                let a = if c[1].key < c[0].key { &c[1] } else { &c[0] };
                let b = if c[3].key < c[2].key { &c[3] } else { &c[2] };
                return Some(if b.key < a.key { b.ev } else { a.ev });
            }
            if let Some(e) = children.iter().min_by_key(|e| e.key) {
                return Some(e.ev);
            }
        }
        self.peek_beyond_heap()
    }

    /// The next event when the heap has none: the wheel's earliest, else
    /// the far heap's.
    #[cold]
    #[inline(never)]
    fn peek_beyond_heap(&self) -> Option<Event> {
        match self.wheel_min() {
            Some(e) => Some(e.ev),
            None => self.far.peek().map(|Reverse(f)| f.2),
        }
    }

    /// With the heap empty: refills it from the wheel or, with that empty
    /// too, from `far`, as far as `limit` allows; returns the new top.
    #[inline(never)]
    fn refill(&mut self, limit: Instant) -> Option<Entry> {
        if self.wheel_len > 0 {
            self.advance(limit.as_nanos());
            return self.heap.first().copied();
        }
        self.bring_far(limit)
    }

    /// With the heap and wheel empty: moves the base to the earliest far
    /// event, if it is due by `limit`, and returns the new top.
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
        let mut entries = std::mem::take(&mut self.heap);
        for slot in &mut self.wheel {
            entries.append(slot);
        }
        self.occupied = [0; LEVELS];
        self.levels = 0;
        self.wheel_len = 0;
        entries.sort_unstable_by_key(|e| e.key);
        let near: Vec<(u64, Event)> = entries.iter().map(|e| (self.abs(e.key), e.ev)).collect();
        entries.clear();
        self.heap = entries;
        let mut arriving = Vec::new();
        while let Some(&Reverse((t, _, ev))) = self.far.peek() {
            if t - new_base >= self.horizon {
                break;
            }
            self.far.pop();
            arriving.push((t, ev));
        }
        self.base = new_base;
        self.cur_block = 0;
        let mut seq = 0;
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
                // In order: each joins the heap without a sift.
                let key = (t - new_base) << SEQ_BITS | seq;
                seq += 1;
                self.place(Entry { key, ev });
            } else {
                self.push_far(t, ev);
            }
        }
        self.next_seq = seq;
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
        match top.or_else(|| self.wheel_min().map(|e| e.key)) {
            Some(k) => Some(Instant(self.abs(k))),
            None => self.far.peek().map(|Reverse(f)| Instant(f.0)),
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len() - self.hole as usize + self.wheel_len + self.far.len()
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
        // One block (the heap alone), and blocks of 1 and 4 ns (the wheel
        // at several levels).
        for block_bits in [BLOCK_BITS, 0, 2] {
            peek_next_is_the_next_pop_with(block_bits);
        }
    }

    fn peek_next_is_the_next_pop_with(block_bits: u32) {
        let mut q = EventQueue::with_limits(SEQ_LIMIT, HORIZON, block_bits);
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
        /// a small horizon so events go far and come back, and small
        /// blocks so the wheel's levels all fill and empty (with the real
        /// blocks and a small horizon, the heap alone); `peek_next` named
        /// each popped event beforehand.
        #[test]
        fn pops_in_the_order_of_a_binary_heap_by_time_then_sequence(
            ops in proptest::collection::vec(op(), 1..500),
            seq_limit in prop_oneof![Just(SEQ_LIMIT), 20u64..200],
            horizon in prop_oneof![Just(HORIZON), 1u64..100],
            block_bits in prop_oneof![Just(BLOCK_BITS), 0u32..4],
        ) {
            let mut q = EventQueue::with_limits(seq_limit, horizon, block_bits);
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
                            // Nothing is scheduled between a peek and the
                            // pop after it: the peek names the pop's event.
                            let peeked = q.peek_next();
                            let got = q.pop_until(limit);
                            prop_assert_eq!(got, want);
                            if let Some((_, ev)) = got {
                                prop_assert_eq!(peeked, Some(ev));
                            }
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
        let mut q = EventQueue::with_limits(SEQ_LIMIT, 10, BLOCK_BITS);
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

    /// Events spread over every level of the wheel (blocks of 1 ns, times
    /// up to 2^36 ns) pop in (time, sequence) order, handlers scheduling
    /// near and far as they go; a limit before the earliest slot's start
    /// or inside it moves nothing it should not.
    #[test]
    fn the_wheel_pops_in_order_at_every_level() {
        let mut q = EventQueue::with_limits(SEQ_LIMIT, HORIZON, 0);
        let mut reference = BinaryHeap::new();
        let mut seq = 0u64;
        let mut x = 99u64;
        let mut rand = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 20
        };
        for i in 0..3000u32 {
            // Every power of two from 1 ns to 2^35 ns, and ties.
            let t = rand() & ((1u64 << (i % 36)) - 1);
            q.schedule(Instant(t), Event::Sink(i));
            reference.push(Reverse((t, seq, Event::Sink(i))));
            seq += 1;
        }
        assert!(q.levels.count_ones() >= 6, "every level holds entries");
        let mut now = 0;
        let mut popped = 0u32;
        while let Some(Reverse((t, _, ev))) = reference.pop() {
            // A limit just short of the event: nothing is due yet.
            if t > now {
                assert_eq!(q.pop_until(Instant(t - 1)), None);
            }
            assert_eq!(q.peek_time(), Some(Instant(t)));
            assert_eq!(q.peek_next(), Some(ev));
            assert_eq!(q.pop_until(Instant(t)), Some((Instant(t), ev)));
            now = t;
            popped += 1;
            if popped < 2000 && popped.is_multiple_of(2) {
                let dt = rand() & ((1u64 << (popped % 30)) - 1);
                let i = 10_000 + popped;
                q.schedule(Instant(now + dt), Event::Sink(i));
                reference.push(Reverse((now + dt, seq, Event::Sink(i))));
                seq += 1;
            }
            assert_eq!(q.len(), reference.len());
        }
        assert_eq!(q.pop_until(Instant::MAX), None);
        assert!(q.is_empty());
    }

    /// A rebase (the sequences running out) and far events coming within
    /// reach rebuild the wheel with the order kept.
    #[test]
    fn renumbering_and_the_horizon_keep_the_wheels_order() {
        let mut q = EventQueue::with_limits(50, 1000, 2);
        let mut reference = BinaryHeap::new();
        let mut x = 7u64;
        let mut now = 0;
        for i in 0..5000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if (x >> 60) < 9 && q.len() < 40 {
                // Near ties, the wheel's span, and past the horizon.
                let dt = match (x >> 40) % 3 {
                    0 => (x >> 20) % 4,
                    1 => (x >> 20) % 900,
                    _ => (x >> 20) % 5000,
                };
                q.schedule(Instant(now + dt), Event::Link(i));
                reference.push(Reverse((now + dt, i, Event::Link(i))));
            } else if let Some(Reverse((t, _, ev))) = reference.pop() {
                assert_eq!(q.peek_next(), Some(ev), "step {i}");
                assert_eq!(q.pop_until(Instant::MAX), Some((Instant(t), ev)));
                now = t;
            }
            assert_eq!(q.len(), reference.len());
        }
    }

    #[test]
    fn renumbering_keeps_the_order() {
        let mut q = EventQueue::with_limits(5, HORIZON, BLOCK_BITS);
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
