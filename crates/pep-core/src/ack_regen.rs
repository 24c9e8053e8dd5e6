//! ACK regeneration (AR): at the far end of a slow reverse link, re-create
//! the ACKs that ACK regulation (the Smart ACK Dropper, [`crate::sad`])
//! suppressed, so the sender's ACK clock and window growth come back
//! (Shekhar et al., after Keshav and Balakrishnan).
//!
//! An arriving pure ACK that advances its flow by `gap` bytes stands for
//! `n = ceil(gap / mss)` segments, so for `n - 1` ACKs the receiver sent
//! (one per segment) and SAD merged. AR sends `1 + R (n - 1)` ACKs in its
//! place (the *regeneration factor* `R` per suppressed ACK; `R > 1` sends
//! more than one ACK per MSS of newly acknowledged data), capped at one per
//! byte. Their ACK numbers divide the gap evenly and strictly increase, the
//! last being the real one: an ACK repeating the previous number would be a
//! duplicate ACK to the sender, and three of them a false fast retransmit.
//! Window and timestamps are the arriving ACK's.
//!
//! Optionally the train is *spaced*: spread evenly over the time since the
//! flow's previous ACK arrived (at most `max_spacing`), the first at once,
//! restoring the spacing the receiver gave them. A train still going when
//! the next ACK of its flow arrives is sent at once, so ACKs are never held
//! longer than one inter-ACK interval and never reordered.
//!
//! Duplicate ACKs, older ACKs, and ACKs of flows seen for the first time
//! pass unchanged. Per-flow state is bounded (`max_flows`); a flow without
//! state (evicted, or the table full of flows with trains running) has its
//! ACKs passed unchanged.
//!
//! ## Driver contract
//! [`AckRegen::handle_ack`] for each pure ACK arriving (others bypass AR),
//! then drain [`AckRegen::poll_transmit`] until `None`; call it again at
//! [`AckRegen::poll_timeout`]. `now` never decreases.

use alloc::collections::{BinaryHeap, VecDeque};
use core::cmp::Reverse;

use crate::flow_map::FlowMap;
use crate::segment::{FlowId, Segment};
use crate::seq::Seq;
use crate::time::{Duration, Instant};

/// Most ACKs one arriving ACK is regenerated into (1024 segments
/// acknowledged at once: far beyond any window these links carry).
pub const MAX_TRAIN: u64 = 1024;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AckRegenConfig {
    /// ACKs sent per suppressed ACK (`R`), at least 1.
    pub factor: u32,
    /// The sender's segment size: how many ACKs one ACK stands for.
    pub mss: u32,
    /// Spread each train over the interval since the previous ACK.
    pub spacing: bool,
    /// Longest interval a train is spread over.
    pub max_spacing: Duration,
    /// Most flows with state.
    pub max_flows: usize,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckRegenStats {
    /// Pure ACKs that arrived.
    pub arrived: u64,
    /// ACKs sent in all (arrived ones included).
    pub sent: u64,
    /// ACKs created beyond those that arrived.
    pub regenerated: u64,
    /// Arrived ACKs passed unchanged (duplicate, old, first of a flow,
    /// untracked).
    pub passed: u64,
    /// Trains cut short by the next ACK of their flow.
    pub flushed: u64,
}

#[derive(Clone, Debug)]
struct FlowAr {
    last_ack: Seq,
    last_arrival: Instant,
    /// ACKs of the current train not sent yet, with when they go.
    train: VecDeque<(Instant, Segment)>,
}

#[derive(Clone, Debug)]
pub struct AckRegen {
    cfg: AckRegenConfig,
    flows: FlowMap<FlowId, FlowAr>,
    /// Ready to send now, in order.
    ready: VecDeque<Segment>,
    /// Wake-ups: (when, flow) of each train's next ACK; may hold stale
    /// entries, checked against the train when popped.
    wake: BinaryHeap<Reverse<(Instant, FlowId)>>,
    pub stats: AckRegenStats,
}

impl AckRegen {
    pub fn new(cfg: AckRegenConfig) -> Self {
        assert!(cfg.factor >= 1 && cfg.mss >= 1, "validated by the caller");
        AckRegen {
            cfg,
            flows: FlowMap::default(),
            ready: VecDeque::new(),
            wake: BinaryHeap::new(),
            stats: AckRegenStats::default(),
        }
    }

    pub fn config(&self) -> &AckRegenConfig {
        &self.cfg
    }

    /// A pure ACK arrives at `now`.
    pub fn handle_ack(&mut self, now: Instant, seg: Segment) {
        debug_assert!(seg.is_pure_ack());
        self.stats.arrived += 1;
        let Some(st) = self.flows.get_mut(&seg.flow) else {
            // Room is made only for a new flow: a full table must not evict
            // the flow whose ACK this is.
            if self.flows.len() < self.cfg.max_flows || self.evict_idle() {
                self.flows.insert(
                    seg.flow,
                    FlowAr {
                        last_ack: seg.ack,
                        last_arrival: now,
                        train: VecDeque::new(),
                    },
                );
            }
            self.pass(seg);
            return;
        };
        // The previous train goes now: the new ACK carries newer news.
        if !st.train.is_empty() {
            self.stats.flushed += 1;
            self.ready.extend(st.train.drain(..).map(|(_, s)| s));
        }
        let interval = now.saturating_since(st.last_arrival);
        st.last_arrival = now;
        if !seg.ack.gt(st.last_ack) {
            // Duplicate or older: its meaning is its number, unchanged.
            self.pass(seg);
            return;
        }
        let gap = seg.ack.bytes_since(st.last_ack);
        let from = st.last_ack;
        st.last_ack = seg.ack;
        let segments = gap.div_ceil(self.cfg.mss) as u64;
        // At most MAX_TRAIN: a corrupted or forged ACK number (up to 2^31
        // bytes ahead) must not make AR flood the link with millions.
        let k = (1 + self.cfg.factor as u64 * (segments - 1))
            .min(gap as u64)
            .min(MAX_TRAIN);
        let spread = if self.cfg.spacing {
            interval.min(self.cfg.max_spacing)
        } else {
            Duration::ZERO
        };
        for i in 1..=k {
            let mut s = seg;
            // ACK numbers strictly increase: k <= gap bytes.
            s.ack = from + (gap as u64 * i / k) as u32;
            let at = now + Duration(spread.0 * (i - 1) / k);
            if at <= now {
                self.ready.push_back(s);
            } else {
                st.train.push_back((at, s));
            }
        }
        if let Some(&(at, _)) = st.train.front() {
            self.wake.push(Reverse((at, seg.flow)));
        }
        self.stats.regenerated += k - 1;
    }

    fn pass(&mut self, seg: Segment) {
        self.stats.passed += 1;
        self.ready.push_back(seg);
    }

    /// Drops the state of one flow with no train running; false if none.
    fn evict_idle(&mut self) -> bool {
        // Deterministic choice: the flow with the oldest last ACK, then
        // the lowest id (a scan, only when the table is full).
        let victim = self
            .flows
            .iter()
            .filter(|(_, f)| f.train.is_empty())
            .min_by_key(|(id, f)| (f.last_arrival, **id))
            .map(|(id, _)| *id);
        victim.is_some_and(|id| self.flows.remove(&id).is_some())
    }

    /// The next ACK to send at `now`, if any.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        if let Some(s) = self.ready.pop_front() {
            self.stats.sent += 1;
            return Some(s);
        }
        while let Some(&Reverse((at, flow))) = self.wake.peek() {
            if at > now {
                return None;
            }
            self.wake.pop();
            let Some(st) = self.flows.get_mut(&flow) else {
                continue;
            };
            while let Some(&(t, s)) = st.train.front() {
                if t > now {
                    break;
                }
                st.train.pop_front();
                self.ready.push_back(s);
            }
            if let Some(&(t, _)) = st.train.front() {
                self.wake.push(Reverse((t, flow)));
            }
            if let Some(s) = self.ready.pop_front() {
                self.stats.sent += 1;
                return Some(s);
            }
        }
        None
    }

    /// When [`Self::poll_transmit`] next has something.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.ready.is_empty() {
            return Some(Instant::ZERO);
        }
        self.wake.peek().map(|Reverse((at, _))| *at)
    }
}

#[cfg(test)]
#[path = "ack_regen_tests.rs"]
mod tests;
