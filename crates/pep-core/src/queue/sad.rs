//! A queue discipline with the Smart ACK Dropper ([`crate::sad`]) in front
//! of another discipline: pure ACKs pass SAD on the way in and are
//! rewritten on the way out; everything else goes straight to the inner
//! queue. Wrapping a two-class queue puts SAD on its ACK class.

use super::{DropReason, Queue};
use crate::link::LinkItem;
use crate::sad::{Arrival, Sad, SadStats};
use crate::time::Instant;

#[derive(Clone, Debug)]
pub struct SadQueue<T> {
    pub sad: Sad,
    pub inner: Queue<T>,
}

impl<T: LinkItem> SadQueue<T> {
    /// SAD over `inner`, tracking at most `max_flows` flows.
    pub fn new(inner: Queue<T>, max_flows: usize) -> Self {
        SadQueue {
            sad: Sad::new(max_flows),
            inner,
        }
    }

    pub(super) fn enqueue(&mut self, now: Instant, mut item: T) -> Result<(), (T, DropReason)> {
        // Items that cannot be rewritten (no mutable segment) pass untouched.
        let regulated = item.segment().is_pure_ack() && item.segment_mut().is_some();
        if !regulated {
            return self.inner.enqueue(now, item);
        }
        match self.sad.arrive(item.segment()) {
            Arrival::Merged => Err((item, DropReason::Merged)),
            Arrival::Enqueue => {
                let seg = *item.segment();
                let res = self.inner.enqueue(now, item);
                match res {
                    Ok(()) => self.sad.admitted(&seg),
                    Err(_) => self.sad.refused(),
                }
                res
            }
        }
    }

    pub(super) fn dequeue(&mut self, now: Instant) -> Option<T> {
        let mut item = self.inner.dequeue(now)?;
        if item.segment().is_pure_ack() {
            if let Some(seg) = item.segment_mut() {
                self.sad.depart(seg);
            }
        }
        Some(item)
    }

    pub fn stats(&self) -> &SadStats {
        &self.sad.stats
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Classful, QueueLimit};
    use super::*;
    use crate::segment::{Flags, FlowId, Segment};
    use crate::seq::Seq;

    fn ack(n: u32) -> Segment {
        Segment {
            flow: FlowId(1),
            ack: Seq(n),
            flags: Flags::ACK,
            hdr_len: 40,
            wnd: 1000,
            ..Default::default()
        }
    }

    fn data(n: u32) -> Segment {
        Segment {
            flow: FlowId(2),
            seq: Seq(n),
            len: 1000,
            ..ack(0)
        }
    }

    #[test]
    fn merged_acks_are_counted_apart_and_the_identities_hold() {
        let t = Instant::ZERO;
        let inner = Queue::classful(Classful::two_class(1, 1, QueueLimit::Packets(10)));
        let mut q = Queue::sad(inner, 16);
        q.enqueue(t, data(0)).unwrap();
        for n in 1..=5 {
            let r = q.enqueue(t, ack(n * 100));
            assert_eq!(r.is_ok(), n == 1);
        }
        q.enqueue(t, data(1000)).unwrap();
        assert_eq!(q.stats.merged, 4);
        assert_eq!(q.stats.dropped, 0);
        assert_eq!(q.stats.enqueued, q.stats.dequeued + q.len_packets() as u64);
        let out: Vec<Segment> = core::iter::from_fn(|| q.dequeue(t)).collect();
        // The queued ACK left carrying the latest number; data untouched.
        assert_eq!(out.len(), 3);
        assert!(out.iter().any(|s| s.is_pure_ack() && s.ack == Seq(500)));
        assert_eq!(out.iter().filter(|s| s.len == 1000).count(), 2);
        assert_eq!(q.stats.enqueued, q.stats.dequeued);
        // Bands of the inner queue are visible through the wrapper.
        assert_eq!(q.band_stats().len(), 2);
    }
}
