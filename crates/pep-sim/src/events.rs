//! The event queue: a binary heap ordered by (time, insertion sequence), so
//! events at the same instant run in the order they were scheduled, on every
//! machine.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use pep_core::Instant;

/// What happens when an event fires. A closed set, packed into a `u64` so a
/// heap entry is 24 bytes and ordering never looks at the payload.
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
        };
        k << 32 | i as u64
    }
    fn unpack(v: u64) -> Event {
        let i = v as u32;
        match v >> 32 {
            0 => Event::Link(i),
            1 => Event::Sender(i),
            2 => Event::Sink(i),
            3 => Event::FlowStart(i),
            4 => Event::Sample,
            5 => Event::Bin,
            6 => Event::App(i),
            7 => Event::Host(i),
            _ => Event::Agent(i),
        }
    }
}

/// Pending events, earliest first; ties broken by scheduling order.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(u64, u64, u64)>>,
    next_seq: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn schedule(&mut self, at: Instant, ev: Event) {
        self.heap
            .push(Reverse((at.as_nanos(), self.next_seq, ev.pack())));
        self.next_seq += 1;
    }

    /// Removes and returns the earliest event if it is due by `limit`.
    pub fn pop_until(&mut self, limit: Instant) -> Option<(Instant, Event)> {
        let Reverse((t, _, _)) = self.heap.peek()?;
        if *t > limit.as_nanos() {
            return None;
        }
        let Reverse((t, _, ev)) = self.heap.pop()?;
        Some((Instant(t), Event::unpack(ev)))
    }

    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((t, _, _))| Instant(*t))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
            Event::Link(u32::MAX),
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
