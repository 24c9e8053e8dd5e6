//! A shared half-duplex medium: the two directions of a link take turns on
//! one channel, as stations on a 10 Mbit/s Ethernet segment do.
//!
//! Each direction keeps its own queue, loss model, delay line and counters
//! (a [`LinkDir`]); only the transmitter is shared. At most one packet is on
//! the wire at a time, across both directions. When the channel frees, the
//! next packet goes in order of arrival across the two directions (each
//! direction's own discipline picks *which* of its packets). This is the
//! throughput an idealised CSMA/CD medium gives: no collisions, no
//! inter-frame gap, the full rate shared.
//!
//! Optional contention backoff: when the channel frees while *both*
//! directions have packets waiting (the moment real stations would collide
//! and back off), the next transmission starts after a uniform random delay
//! in `[0, backoff]`, drawn from the medium's own seeded stream. The channel
//! is held idle meanwhile, so the combined throughput drops below the rate.
//! This is a coarse stand-in for binary exponential backoff, not a model of
//! it.
//!
//! Driver contract: a direction attached to a medium is fed and caught up
//! only through the medium ([`HalfDuplex::enqueue`], [`HalfDuplex::advance`]),
//! and its deadline comes from [`HalfDuplex::poll_timeout`], which adds the
//! end of its transmission (so the turn passes on time); its
//! `poll_deliver` is used as usual.

use alloc::boxed::Box;
use alloc::collections::VecDeque;

use crate::link::{LinkDir, LinkItem};
use crate::queue::DropReason;
use crate::rng::Stream;
use crate::time::{Duration, Instant};

/// Counters of a medium.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MediumStats {
    /// Transmissions that started with the other direction also waiting.
    pub contended: u64,
    /// Time the channel sat idle in backoff, in ns.
    pub backoff_ns: u64,
}

/// The arbiter of a half-duplex medium (its two directions are separate
/// [`LinkDir`]s owned by the driver).
#[derive(Clone, Debug)]
pub struct HalfDuplex {
    /// The direction (0 or 1) of every waiting packet, in arrival order.
    order: VecDeque<u8>,
    waiting: [u32; 2],
    backoff: Duration,
    rng: Option<Box<Stream>>,
    pub stats: MediumStats,
}

impl HalfDuplex {
    /// Joins `a` (direction 0) and `b` (direction 1) on one channel. With a
    /// zero `backoff`, `rng` is never drawn from.
    pub fn new<T: LinkItem>(
        a: &mut LinkDir<T>,
        b: &mut LinkDir<T>,
        backoff: Duration,
        rng: Stream,
    ) -> Self {
        a.set_shared();
        b.set_shared();
        HalfDuplex {
            order: VecDeque::new(),
            waiting: [0; 2],
            backoff,
            rng: (backoff > Duration::ZERO).then(|| Box::new(rng)),
            stats: MediumStats::default(),
        }
    }

    /// Offers `item` to direction `d` (0 or 1) at `now`.
    pub fn enqueue<T: LinkItem>(
        &mut self,
        a: &mut LinkDir<T>,
        b: &mut LinkDir<T>,
        d: usize,
        now: Instant,
        item: T,
    ) -> Result<(), (T, DropReason)> {
        self.advance(a, b, now);
        let mut dirs = [a, b];
        dirs[d].queue.enqueue(now, item)?;
        self.order.push_back(d as u8);
        self.waiting[d] += 1;
        if dirs[0].tx_end().is_none() && dirs[1].tx_end().is_none() {
            self.start(&mut dirs, now, false);
        }
        Ok(())
    }

    /// Completes every transmission due by `now`, passing the channel on at
    /// the instant each one ends.
    pub fn advance<T: LinkItem>(&mut self, a: &mut LinkDir<T>, b: &mut LinkDir<T>, now: Instant) {
        let mut dirs = [a, b];
        loop {
            let (d, done) = match (dirs[0].tx_end(), dirs[1].tx_end()) {
                (Some(t), _) => (0, t),
                (None, Some(t)) => (1, t),
                (None, None) => break,
            };
            if done > now {
                break;
            }
            dirs[d].finish_tx();
            if self.waiting[d] == 0 {
                // This direction's transmitter finds its queue empty (RED
                // starts its idle clock here).
                let none = dirs[d].queue.dequeue(done);
                debug_assert!(none.is_none());
            }
            self.start(&mut dirs, done, true);
        }
    }

    /// Gives the channel to the oldest waiting packet's direction at `at`.
    fn start<T: LinkItem>(&mut self, dirs: &mut [&mut LinkDir<T>; 2], at: Instant, freed: bool) {
        let Some(d) = self.order.pop_front() else {
            return;
        };
        let d = d as usize;
        let contended = freed && self.waiting[0] > 0 && self.waiting[1] > 0;
        self.waiting[d] -= 1;
        let mut gap = Duration::ZERO;
        if contended {
            self.stats.contended += 1;
            if let Some(rng) = &mut self.rng {
                gap = Duration::from_secs_f64(rng.uniform() * self.backoff.as_secs_f64());
                self.stats.backoff_ns += gap.as_nanos();
            }
        }
        dirs[d].start_after(at, gap);
        debug_assert!(dirs[d].tx_end().is_some(), "a waiting packet was queued");
    }

    /// When the driver must next call [`Self::advance`] for `dir`, a
    /// direction attached to a medium: its next arrival at the far end or
    /// the end of its transmission, whichever is first.
    pub fn poll_timeout<T: LinkItem>(dir: &LinkDir<T>) -> Option<Instant> {
        match (dir.next_arrival(), dir.tx_end()) {
            (Some(a), Some(e)) => Some(a.min(e)),
            (a, e) => a.or(e),
        }
    }

    /// Packets waiting for the channel in direction `d`.
    pub fn waiting(&self, d: usize) -> u32 {
        self.waiting[d]
    }
}

#[cfg(test)]
#[path = "medium_tests.rs"]
mod tests;
