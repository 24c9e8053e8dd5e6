//! Class-based queues: a classifier puts each packet in one of a few
//! DropTail bands, and a scheduler picks the band to serve each time the
//! transmitter frees.
//!
//! * [`Scheduler::Strict`]: strict priority, band 0 first. Lower bands can
//!   starve.
//! * [`Scheduler::Weighted`]: work-conserving weighted sharing by bytes.
//!   Each band keeps a virtual finish time that advances by
//!   `len / weight` per packet served; the backlogged band whose head
//!   packet would finish first is served next. A band that was idle
//!   restarts at the current virtual time (the start tag of the packet last
//!   served), so idleness earns no credit. This is self-clocked fair
//!   queueing (Golestani, INFOCOM 1994) with per-band FIFO: while every
//!   band is backlogged each gets its weight's share of the bytes, to within
//!   one packet; an idle band's share goes to the others. It stands in for
//!   the CBQ link sharing of the ACK-regulation papers, which use CBQ only
//!   as weighted sharing between a data class and an ACK class.
//!
//! Bands are sized independently (each its own limit), as in Linux's `prio`
//! and CBQ's leaf classes. Virtual times are integers, so results do not
//! depend on floating-point rounding.

use alloc::vec;
use alloc::vec::Vec;

use super::{DropReason, DropTail, QueueLimit};
use crate::link::LinkItem;

/// How packets are sorted into bands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Classifier {
    /// Pure ACKs ([`crate::Segment::is_pure_ack`]) to band `acks`,
    /// everything else to band `data`.
    Kind { acks: u8, data: u8 },
    /// By flow id: `bands[flow]`, or `default` for flows not listed.
    Flow { bands: Vec<u8>, default: u8 },
}

impl Classifier {
    fn band<T: LinkItem>(&self, item: &T) -> usize {
        let seg = item.segment();
        match self {
            Classifier::Kind { acks, data } => {
                if seg.is_pure_ack() {
                    *acks as usize
                } else {
                    *data as usize
                }
            }
            Classifier::Flow { bands, default } => {
                *bands.get(seg.flow.0 as usize).unwrap_or(default) as usize
            }
        }
    }
}

/// How the next band is chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scheduler {
    /// The lowest-numbered non-empty band.
    Strict,
    /// Weighted fair sharing; one weight per band, positive integers (only
    /// their ratios matter).
    Weighted { weights: Vec<u32> },
}

/// Counters of one band.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BandStats {
    pub enqueued: u64,
    pub dropped: u64,
    pub dequeued: u64,
    /// Bytes handed to the transmitter: a band's share of the link.
    pub dequeued_bytes: u64,
}

/// One fixed-point unit of virtual time per byte at weight 1.
const VT_SCALE: u128 = 1 << 32;

/// A classifier over DropTail bands with a scheduler.
#[derive(Clone, Debug)]
pub struct Classful<T> {
    classify: Classifier,
    bands: Vec<DropTail<T>>,
    stats: Vec<BandStats>,
    /// Weighted only: per band, virtual time per byte and virtual finish.
    cost: Vec<u128>,
    finish: Vec<u128>,
    vtime: u128,
    packets: usize,
    bytes: u64,
}

impl<T: LinkItem> Classful<T> {
    /// `limits` gives the number of bands and each band's limit. Panics
    /// (a configuration bug, validated before) if a weight is zero, the
    /// weights do not match the bands, or the classifier names a band that
    /// does not exist.
    pub fn new(classify: Classifier, sched: Scheduler, limits: &[QueueLimit]) -> Self {
        let n = limits.len();
        let max_band = match &classify {
            Classifier::Kind { acks, data } => *acks.max(data),
            Classifier::Flow { bands, default } => {
                *bands.iter().max().unwrap_or(default).max(default)
            }
        };
        assert!(
            (max_band as usize) < n,
            "classifier names band {max_band} of {n}"
        );
        let cost = match &sched {
            Scheduler::Strict => vec![],
            Scheduler::Weighted { weights } => {
                assert!(weights.len() == n && weights.iter().all(|&w| w > 0));
                weights.iter().map(|&w| VT_SCALE / w as u128).collect()
            }
        };
        Classful {
            classify,
            bands: limits.iter().map(|&l| DropTail::new(l)).collect(),
            stats: vec![BandStats::default(); n],
            finish: vec![0; cost.len()],
            cost,
            vtime: 0,
            packets: 0,
            bytes: 0,
        }
    }

    /// Strict priority for pure ACKs over data: ACKs in band 0.
    pub fn acks_first(ack_limit: QueueLimit, data_limit: QueueLimit) -> Self {
        Self::new(
            Classifier::Kind { acks: 0, data: 1 },
            Scheduler::Strict,
            &[ack_limit, data_limit],
        )
    }

    /// Weighted sharing between data (band 0) and pure ACKs (band 1).
    pub fn two_class(data_weight: u32, ack_weight: u32, limit: QueueLimit) -> Self {
        Self::new(
            Classifier::Kind { acks: 1, data: 0 },
            Scheduler::Weighted {
                weights: vec![data_weight, ack_weight],
            },
            &[limit, limit],
        )
    }

    pub(super) fn enqueue(&mut self, item: T) -> Result<(), (T, DropReason)> {
        let b = self.classify.band(&item);
        let len = item.wire_len() as u64;
        let was_empty = self.bands[b].len_packets() == 0;
        match self.bands[b].push(item) {
            Ok(()) => {
                self.stats[b].enqueued += 1;
                self.packets += 1;
                self.bytes += len;
                if was_empty && !self.cost.is_empty() {
                    // Back from idle: no credit for the time away.
                    self.finish[b] = self.finish[b].max(self.vtime);
                }
                Ok(())
            }
            Err(e) => {
                self.stats[b].dropped += 1;
                Err(e)
            }
        }
    }

    /// The band to serve next, if any packet waits.
    fn pick(&self) -> Option<usize> {
        if self.cost.is_empty() {
            return self.bands.iter().position(|b| b.len_packets() > 0);
        }
        let mut best: Option<(u128, usize)> = None;
        for (i, band) in self.bands.iter().enumerate() {
            if let Some(len) = band.head_len() {
                let f = self.finish[i] + len as u128 * self.cost[i];
                // Ties go to the lower band: deterministic.
                let better = match best {
                    None => true,
                    Some((bf, _)) => f < bf,
                };
                if better {
                    best = Some((f, i));
                }
            }
        }
        best.map(|(_, i)| i)
    }

    pub(super) fn dequeue(&mut self) -> Option<T> {
        let b = self.pick()?;
        let item = self.bands[b].pop()?;
        let len = item.wire_len() as u64;
        if !self.cost.is_empty() {
            self.vtime = self.finish[b];
            self.finish[b] += len as u128 * self.cost[b];
        }
        let s = &mut self.stats[b];
        s.dequeued += 1;
        s.dequeued_bytes += len;
        self.packets -= 1;
        self.bytes -= len;
        Some(item)
    }

    pub fn len_packets(&self) -> usize {
        self.packets
    }

    pub fn len_bytes(&self) -> u64 {
        self.bytes
    }

    pub fn band_stats(&self) -> &[BandStats] {
        &self.stats
    }

    /// Packets waiting in band `b`.
    pub fn band_len(&self, b: usize) -> usize {
        self.bands[b].len_packets()
    }
}

#[cfg(test)]
#[path = "classful_tests.rs"]
mod tests;
