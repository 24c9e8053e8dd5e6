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
