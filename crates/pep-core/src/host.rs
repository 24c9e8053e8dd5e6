//! Per-packet processing cost at an end host: one processor that every
//! packet the host sends or receives must pass through, first come first
//! served, each costing a fixed time (data and pure ACKs separately) plus
//! optional uniform jitter.
//!
//! This is the cost the extended-ACK-interval measurements attribute part of
//! their gain to: a host that spends `c` per packet handles at most `1/c`
//! packets per second, so sending fewer ACKs leaves more time for data.
//! The queue in front of the processor is unbounded (TCP's windows bound
//! it); a packet is handed on at the instant its processing ends.
//!
//! Sans-IO like a link: [`Processor::enqueue`], [`Processor::poll_timeout`],
//! [`Processor::handle_timeout`], [`Processor::poll_ready`].

use alloc::boxed::Box;
use alloc::collections::VecDeque;

use crate::link::LinkItem;
use crate::rng::Stream;
use crate::time::{Duration, Instant};

/// What each packet costs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostCost {
    /// A packet that is not a pure ACK.
    pub data: Duration,
    /// A pure ACK.
    pub ack: Duration,
    /// Each packet additionally costs a uniform random time in
    /// `[0, jitter]`.
    pub jitter: Duration,
}

/// Counters of a processor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessorStats {
    /// Packets whose processing finished.
    pub packets: u64,
    /// Total processing time booked, in ns.
    pub busy_ns: u64,
    /// Most packets ever waiting (not counting the one in service).
    pub max_waiting: usize,
}

/// A host's packet processor.
#[derive(Clone, Debug)]
pub struct Processor<T> {
    cost: HostCost,
    rng: Option<Box<Stream>>,
    waiting: VecDeque<T>,
    /// The packet in service and when its processing ends.
    busy: Option<(Instant, T)>,
    /// Processed packets, with the instant they were done (non-decreasing).
    ready: VecDeque<(Instant, T)>,
    pub stats: ProcessorStats,
}

impl<T: LinkItem> Processor<T> {
    /// With a zero `jitter`, `rng` is never drawn from.
    pub fn new(cost: HostCost, rng: Stream) -> Self {
        Processor {
            cost,
            rng: (cost.jitter > Duration::ZERO).then(|| Box::new(rng)),
            waiting: VecDeque::new(),
            busy: None,
            ready: VecDeque::new(),
            stats: ProcessorStats::default(),
        }
    }

    pub fn cost(&self) -> HostCost {
        self.cost
    }

    /// Hands a packet to the processor at `now`.
    pub fn enqueue(&mut self, now: Instant, item: T) {
        self.advance(now);
        self.waiting.push_back(item);
        self.stats.max_waiting = self.stats.max_waiting.max(self.waiting.len());
        if self.busy.is_none() {
            self.start_next(now);
        }
    }

    fn start_next(&mut self, at: Instant) {
        if let Some(item) = self.waiting.pop_front() {
            let base = if item.segment().is_pure_ack() {
                self.cost.ack
            } else {
                self.cost.data
            };
            let extra = match &mut self.rng {
                Some(r) => Duration::from_secs_f64(r.uniform() * self.cost.jitter.as_secs_f64()),
                None => Duration::ZERO,
            };
            let d = base + extra;
            self.stats.busy_ns += d.as_nanos();
            self.busy = Some((at + d, item));
        }
    }

    /// Completes every packet due by `now`.
    pub fn advance(&mut self, now: Instant) {
        while let Some((done, _)) = self.busy {
            if done > now {
                break;
            }
            let (done, item) = self.busy.take().expect("checked above");
            self.stats.packets += 1;
            self.ready.push_back((done, item));
            self.start_next(done);
        }
    }

    /// When the driver must call [`Self::handle_timeout`]: a processed
    /// packet waits to be handed on, or the packet in service finishes.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match (self.ready.front(), &self.busy) {
            (Some((t, _)), _) => Some(*t),
            (None, Some((t, _))) => Some(*t),
            (None, None) => None,
        }
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    /// The next processed packet, once its processing has ended by `now`.
    pub fn poll_ready(&mut self, now: Instant) -> Option<T> {
        match self.ready.front() {
            Some((t, _)) if *t <= now => self.ready.pop_front().map(|(_, it)| it),
            _ => None,
        }
    }

    /// Packets waiting or in service.
    pub fn backlog(&self) -> usize {
        self.waiting.len() + self.busy.is_some() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::test_item::seg;

    fn drain(p: &mut Processor<crate::Segment>) -> Vec<(u64, u32)> {
        let mut out = vec![];
        while let Some(t) = p.poll_timeout() {
            p.handle_timeout(t);
            while let Some(s) = p.poll_ready(t) {
                out.push((t.as_nanos(), s.flow.0));
            }
        }
        out
    }

    #[test]
    fn fifo_with_data_and_ack_costs() {
        let cost = HostCost {
            data: Duration::from_micros(100),
            ack: Duration::from_micros(10),
            jitter: Duration::ZERO,
        };
        let mut p = Processor::new(cost, Stream::derive(1, "cpu"));
        p.enqueue(Instant::ZERO, seg(1, 1040));
        p.enqueue(Instant::ZERO, seg(2, 40));
        p.enqueue(Instant::ZERO, seg(3, 1040));
        assert_eq!(
            drain(&mut p),
            vec![(100_000, 1), (110_000, 2), (210_000, 3)]
        );
        assert_eq!(p.stats.packets, 3);
        assert_eq!(p.stats.busy_ns, 210_000);
        assert_eq!(p.stats.max_waiting, 2);
    }

    #[test]
    fn jitter_adds_its_mean() {
        let cost = HostCost {
            data: Duration::from_micros(100),
            ack: Duration::ZERO,
            jitter: Duration::from_micros(50),
        };
        let mut p = Processor::new(cost, Stream::derive(1, "cpu"));
        let n = 20_000;
        for _ in 0..n {
            p.enqueue(Instant::ZERO, seg(1, 1040));
        }
        let out = drain(&mut p);
        let mean_us = out.last().unwrap().0 as f64 / n as f64 / 1000.0;
        assert!((mean_us - 125.0).abs() < 0.5, "{mean_us}");
    }
}
