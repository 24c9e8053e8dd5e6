//! Queue disciplines, written against time passed in so that the simulator
//! (virtual clock) and the lab (real clock) drive the same models.
//!
//! A discipline holds packets waiting for a link's transmitter; the packet
//! being serialized has already left it (as in ns-2, whose `limit_` counts
//! waiting packets only).

use std::collections::VecDeque;

use crate::time::Instant;

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
    /// The queue was full (tail drop).
    Overflow,
}

/// Counters kept by every discipline. Identity:
/// `enqueued = dequeued + len_packets()` and every offered packet is either
/// enqueued or counted in `dropped`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    pub enqueued: u64,
    pub dequeued: u64,
    pub dropped: u64,
    pub enqueued_bytes: u64,
    pub dropped_bytes: u64,
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
        let cap = match limit {
            QueueLimit::Packets(n) => (n as usize).min(4096),
            QueueLimit::Bytes(_) => 64,
        };
        DropTail {
            buf: VecDeque::with_capacity(cap),
            bytes: 0,
            limit,
        }
    }
    fn has_room(&self, len: u32) -> bool {
        match self.limit {
            QueueLimit::Packets(n) => (self.buf.len() as u64) < n as u64,
            QueueLimit::Bytes(b) => self.bytes + len as u64 <= b,
        }
    }
}

/// The queue disciplines a link direction can use. A closed enum: the hot
/// path dispatches with a match, not a vtable. Add a discipline by adding a
/// variant here and its file beside this one.
#[derive(Clone, Debug)]
pub enum Qdisc<T> {
    DropTail(DropTail<T>),
}

/// A discipline together with its counters.
#[derive(Clone, Debug)]
pub struct Queue<T> {
    pub disc: Qdisc<T>,
    pub stats: QueueStats,
}

impl<T: Queued> Queue<T> {
    pub fn drop_tail(limit: QueueLimit) -> Self {
        Queue {
            disc: Qdisc::DropTail(DropTail::new(limit)),
            stats: QueueStats::default(),
        }
    }

    /// Offers a packet. A refused packet is handed back with the reason.
    pub fn enqueue(&mut self, _now: Instant, item: T) -> Result<(), (T, DropReason)> {
        let len = item.wire_len();
        let res = match &mut self.disc {
            Qdisc::DropTail(q) => {
                if q.has_room(len) {
                    q.bytes += len as u64;
                    q.buf.push_back(item);
                    Ok(())
                } else {
                    Err((item, DropReason::Overflow))
                }
            }
        };
        match &res {
            Ok(()) => {
                self.stats.enqueued += 1;
                self.stats.enqueued_bytes += len as u64;
            }
            Err(_) => {
                self.stats.dropped += 1;
                self.stats.dropped_bytes += len as u64;
            }
        }
        res
    }

    /// Takes the next packet to transmit.
    pub fn dequeue(&mut self, _now: Instant) -> Option<T> {
        let item = match &mut self.disc {
            Qdisc::DropTail(q) => {
                let it = q.buf.pop_front()?;
                q.bytes -= it.wire_len() as u64;
                it
            }
        };
        self.stats.dequeued += 1;
        Some(item)
    }

    pub fn len_packets(&self) -> usize {
        match &self.disc {
            Qdisc::DropTail(q) => q.buf.len(),
        }
    }

    pub fn len_bytes(&self) -> u64 {
        match &self.disc {
            Qdisc::DropTail(q) => q.bytes,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len_packets() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct P(u32);
    impl Queued for P {
        fn wire_len(&self) -> u32 {
            self.0
        }
    }

    #[test]
    fn packet_limit_drops_the_arrival() {
        let mut q = Queue::drop_tail(QueueLimit::Packets(2));
        let t = Instant::ZERO;
        assert!(q.enqueue(t, P(10)).is_ok());
        assert!(q.enqueue(t, P(20)).is_ok());
        assert_eq!(q.enqueue(t, P(30)), Err((P(30), DropReason::Overflow)));
        assert_eq!(q.dequeue(t), Some(P(10)));
        assert_eq!(q.len_bytes(), 20);
        assert_eq!(q.stats.enqueued, 2);
        assert_eq!(q.stats.dropped, 1);
        assert_eq!(q.stats.enqueued, q.stats.dequeued + q.len_packets() as u64);
    }

    #[test]
    fn byte_limit_counts_bytes() {
        let mut q = Queue::drop_tail(QueueLimit::Bytes(100));
        let t = Instant::ZERO;
        assert!(q.enqueue(t, P(60)).is_ok());
        assert!(q.enqueue(t, P(50)).is_err());
        assert!(q.enqueue(t, P(40)).is_ok());
        assert_eq!(q.len_bytes(), 100);
        assert_eq!(q.len_packets(), 2);
    }
}
