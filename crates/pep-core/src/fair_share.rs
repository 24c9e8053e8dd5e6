//! # One rate shared fairly among flows (a client's cap, max-min)
//!
//! One token bucket ([`crate::shaper::Shaper`]) holds the flows' sum at
//! the rate; on top of it a start-time fair queueing rule decides which
//! flow may draw: each flow's tag counts the bytes it was granted, and a
//! flow whose tag is more than `slack` ahead of a *waiting* flow's (one
//! the bucket held back and that is still asking) is held back itself, so
//! the credit is left for the flow behind. N waiting flows thus get the
//! rate's 1/N each; a flow that asks for less than its share gets all it
//! asks for and holds nobody back (its share goes to the others); a flow
//! that stops asking for `idle` no longer counts as waiting. A flow that
//! was not waiting restarts at most `slack` behind the slowest waiting
//! flow, so it banks at most that from a pause.
//!
//! Pull-driven, as the daemon's relays read: there is no queue of bytes
//! here, only grants. Total grants never exceed what the bucket releases.
//!
//! ## Driver contract
//! * [`FairShare::open`] a flow, [`FairShare::close`] it when it ends
//!   (a closed flow holds no one back).
//! * [`FairShare::release`]`(now, flow, want)`: how many of `want` bytes
//!   the flow may move now; the driver moves exactly that many.
//! * When it granted fewer, [`FairShare::poll_timeout`]`(flow)` is when to
//!   ask again.
//! * `now` never decreases.

use alloc::vec::Vec;

use crate::shaper::{Shaper, ShaperConfig};
use crate::time::{Duration, Instant};

/// Sharing parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FairShareConfig {
    /// The shared bucket: the rate, its depth and quantum.
    pub bucket: ShaperConfig,
    /// Bytes a flow may be granted beyond the slowest waiting flow.
    pub slack: u64,
    /// A waiting flow that has not asked for this long stops counting.
    pub idle: Duration,
}

/// A flow's handle (a slot, reused after [`FairShare::close`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShareId(usize);

#[derive(Clone, Copy, Debug)]
struct Flow {
    /// Bytes granted, on the sharing's virtual clock.
    tag: u64,
    /// When the flow last asked and was held back: it is waiting.
    waiting: Option<Instant>,
    /// When to ask again, after a grant short of what was asked.
    again: Option<Instant>,
}

/// The sharing of one rate; see the module docs.
#[derive(Clone, Debug)]
pub struct FairShare {
    cfg: FairShareConfig,
    bucket: Shaper,
    flows: Vec<Option<Flow>>,
    /// Grants cut short because the flow was ahead of a waiting one.
    held_for_fairness: u64,
}

impl FairShare {
    pub fn new(cfg: FairShareConfig) -> FairShare {
        FairShare {
            cfg,
            bucket: Shaper::new(cfg.bucket),
            flows: Vec::new(),
            held_for_fairness: 0,
        }
    }

    pub fn config(&self) -> &FairShareConfig {
        &self.cfg
    }

    /// A new flow, not waiting.
    pub fn open(&mut self) -> ShareId {
        let flow = Some(Flow {
            tag: 0,
            waiting: None,
            again: None,
        });
        match self.flows.iter().position(Option::is_none) {
            Some(i) => {
                self.flows[i] = flow;
                ShareId(i)
            }
            None => {
                self.flows.push(flow);
                ShareId(self.flows.len() - 1)
            }
        }
    }

    /// Ends `id`: it no longer holds anyone back.
    pub fn close(&mut self, id: ShareId) {
        if let Some(f) = self.flows.get_mut(id.0) {
            *f = None;
        }
        while matches!(self.flows.last(), Some(None)) {
            self.flows.pop();
        }
    }

    /// Flows open.
    pub fn flows(&self) -> usize {
        self.flows.iter().flatten().count()
    }

    /// The lowest tag among the flows other than `id` still waiting at
    /// `now`.
    fn slowest_waiting(&self, now: Instant, id: ShareId) -> Option<u64> {
        let live = |w: Instant| now.saturating_since(w) < self.cfg.idle;
        self.flows
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != id.0)
            .filter_map(|(_, f)| f.as_ref())
            .filter(|f| f.waiting.is_some_and(live))
            .map(|f| f.tag)
            .min()
    }

    /// How many of `want` bytes flow `id` may move at `now`. `want` 0 (or
    /// a closed flow) gets nothing and changes nothing.
    pub fn release(&mut self, now: Instant, id: ShareId, want: u64) -> u64 {
        let slowest = self.slowest_waiting(now, id);
        let (idle, quantum) = (self.cfg.idle, self.cfg.bucket.quantum.max(1));
        let Some(Some(f)) = self.flows.get_mut(id.0) else {
            return 0;
        };
        if want == 0 {
            return 0;
        }
        let was_waiting = f.waiting.is_some_and(|w| now.saturating_since(w) < idle);
        if let (false, Some(v)) = (was_waiting, slowest) {
            // Not waiting (new, back from a pause, or its last ask was
            // granted whole): it keeps at most `slack` of a lead it let the
            // waiting flows take. Not none: a pump's every read ends in a
            // piece granted whole, and forgiving it all each time would let
            // a flow that asks sooner pull ahead without bound.
            f.tag = f.tag.max(v.saturating_sub(self.cfg.slack));
        }
        // What the flow may take before it is `slack` ahead of the
        // slowest waiting flow (at least a quantum, once eligible).
        let allowed = match slowest {
            None => want,
            Some(v) if f.tag > v.saturating_add(self.cfg.slack) => 0,
            Some(v) => (v + self.cfg.slack - f.tag).max(quantum).min(want),
        };
        let got = if allowed == 0 {
            0
        } else {
            self.bucket.release(now, allowed)
        };
        f.tag += got;
        if got == want {
            f.waiting = None;
            f.again = None;
            return got;
        }
        f.waiting = Some(now);
        f.again = if got == allowed {
            // Held for a flow behind: it takes the next quantum, then
            // this one may look again.
            self.held_for_fairness += 1;
            Some(
                now + self
                    .cfg
                    .bucket
                    .rate
                    .tx_time(quantum + self.cfg.bucket.overhead),
            )
        } else {
            self.bucket.poll_timeout()
        };
        got
    }

    /// When flow `id`, granted less than it asked, may ask again.
    pub fn poll_timeout(&self, id: ShareId) -> Option<Instant> {
        self.flows
            .get(id.0)
            .copied()
            .flatten()
            .and_then(|f| f.again)
    }

    /// Grants cut short for lack of credit in the bucket.
    pub fn cut_short(&self) -> u64 {
        self.bucket.cut_short()
    }

    /// Grants cut short to leave the credit to a flow behind.
    pub fn held_for_fairness(&self) -> u64 {
        self.held_for_fairness
    }
}

#[cfg(test)]
#[path = "fair_share_tests.rs"]
mod tests;
