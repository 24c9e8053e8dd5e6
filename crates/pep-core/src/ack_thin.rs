//! ACK thinning: pass every N-th pure ACK of a flow, the real-network
//! counterpart of the extended ACK interval ([`crate::ack_interval`]) for
//! receivers whose ACK policy cannot be changed.
//!
//! ACKs are cumulative, so an ACK that advances the acknowledged point
//! makes the ones before it redundant. Of a flow's advancing pure ACKs,
//! every `n`-th passes; the others are *held*: a held ACK waits for the
//! flow's next ACK, which supersedes it (the held one is dropped: thinned),
//! or for `max_hold`, after which it passes anyway. So the last ACK of a
//! burst (the end of a transfer, a sender waiting for its window) is never
//! lost, only delayed by at most `max_hold`, as a delayed-ACK timer would.
//!
//! Never thinned (they pass at once, after the flow's held ACK so the
//! order of the flow's ACKs is kept):
//! * duplicate ACKs (same ACK number and window as the flow's last ACK):
//!   fast retransmit counts them;
//! * ACKs whose first SACK block differs from the last ACK's (new SACK
//!   information, RFC 2018: the first block is the most recent);
//! * window updates (same ACK number, another window);
//! * ACKs echoing congestion (ECE), older (reordered) ACKs, and every
//!   segment that is not a pure ACK (data, SYN, FIN, RST).
//!
//! ## State and its bound
//! Per flow: the last ACK's fields, a counter and at most one held item.
//! At most `max_flows` flows; a new flow evicts the flow seen least
//! recently, whose held ACK is released first (never dropped). An item
//! whose segment cannot be rewritten (`segment_mut` is `None`: not TCP,
//! malformed) passes untouched.
//!
//! ## Driver contract
//! [`AckThin::handle`] each item in arrival order, then drain
//! [`AckThin::poll_transmit`] until `None`; call it again at
//! [`AckThin::poll_timeout`]. `now` never decreases.

use alloc::collections::VecDeque;

use crate::flow_map::FlowMap;
use crate::link::LinkItem;
use crate::segment::{Flags, FlowId};
use crate::seq::Seq;
use crate::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckThinConfig {
    /// Pass every `n`-th advancing pure ACK (1: thin nothing).
    pub n: u32,
    /// Longest a held ACK waits for a successor before it passes.
    pub max_hold: Duration,
    /// Most flows with state.
    pub max_flows: usize,
}

/// Counters; `arrived = passed + thinned + held` where `held` is what is
/// held now (at most one per flow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckThinStats {
    /// Pure ACKs of tracked flows offered.
    pub arrived: u64,
    /// Pure ACKs passed (the `n`-th, special ones, released ones).
    pub passed: u64,
    /// Held ACKs superseded by a newer ACK of their flow (dropped).
    pub thinned: u64,
    /// Passed at once although not the `n`-th: duplicates, new SACK
    /// information, window updates, ECE, older ACKs.
    pub kept_special: u64,
    /// Held ACKs passed because `max_hold` ran out.
    pub released_by_timer: u64,
    /// Flows whose state was dropped for a new flow.
    pub evicted: u64,
    /// Items passed without regulation (not a pure ACK, or not rewritable).
    pub bypassed: u64,
}

#[derive(Debug)]
struct Flow<T> {
    ack: Seq,
    wnd: u32,
    sack_first: Option<(Seq, Seq)>,
    /// Advancing ACKs since the last one passed.
    count: u32,
    held: Option<(Instant, T)>,
    /// Bumped on every touch, to recognise stale records in `order`.
    touch: u64,
}

/// The per-flow thinning state, holding the withheld items.
#[derive(Debug)]
pub struct AckThin<T> {
    cfg: AckThinConfig,
    flows: FlowMap<FlowId, Flow<T>>,
    /// Flows by last touch (oldest first), with the touch then; stale
    /// records are skipped. Compacted when it outgrows the table.
    order: VecDeque<(FlowId, u64)>,
    /// Deadlines of held items, in hold order (monotone: `now` never
    /// decreases and `max_hold` is fixed); stale ones are skipped.
    deadlines: VecDeque<(Instant, FlowId)>,
    ready: VecDeque<T>,
    touches: u64,
    pub stats: AckThinStats,
}

impl<T: LinkItem> AckThin<T> {
    pub fn new(cfg: AckThinConfig) -> Self {
        AckThin {
            cfg: AckThinConfig {
                n: cfg.n.max(1),
                max_flows: cfg.max_flows.max(1),
                ..cfg
            },
            flows: FlowMap::default(),
            order: VecDeque::new(),
            deadlines: VecDeque::new(),
            ready: VecDeque::new(),
            touches: 0,
            stats: AckThinStats::default(),
        }
    }

    pub fn config(&self) -> &AckThinConfig {
        &self.cfg
    }

    /// Flows with state.
    pub fn tracked_flows(&self) -> usize {
        self.flows.len()
    }

    /// Items held now.
    pub fn held(&self) -> usize {
        self.flows.values().filter(|f| f.held.is_some()).count()
    }

    /// An item arrives at `now`.
    pub fn handle(&mut self, now: Instant, mut item: T) {
        let seg = *item.segment();
        // A TCP segment of a flow (what is not TCP has no segment to
        // rewrite, and no flow: a frame's id 0, where the simulator's
        // flow 0 is a flow like any other).
        let tcp = item.segment_mut().is_some();
        let regulated = seg.is_pure_ack() && tcp;
        if !regulated {
            // Data or a SYN/FIN/RST of a flow: its ACK field (if any) is
            // at least as new as the held ACK's, which goes first anyway
            // to keep the flow's order.
            if tcp {
                self.release(seg.flow);
            }
            self.stats.bypassed += 1;
            self.ready.push_back(item);
            return;
        }
        self.stats.arrived += 1;
        self.touches += 1;
        let touch = self.touches;
        if !self.flows.contains_key(&seg.flow) {
            if self.flows.len() >= self.cfg.max_flows {
                self.evict_one();
            }
            self.flows.insert(
                seg.flow,
                Flow {
                    ack: seg.ack,
                    wnd: seg.wnd,
                    sack_first: seg.sack.as_slice().first().copied(),
                    count: 0,
                    held: None,
                    touch,
                },
            );
            self.order.push_back((seg.flow, touch));
            // The first ACK of a flow passes: nothing to compare it with.
            self.stats.passed += 1;
            self.ready.push_back(item);
            return;
        }
        self.order.push_back((seg.flow, touch));
        self.compact_order();
        let f = self.flows.get_mut(&seg.flow).expect("checked above");
        f.touch = touch;
        let first = seg.sack.as_slice().first().copied();
        let special = seg.ack == f.ack // duplicate or window update
            || (first.is_some() && first != f.sack_first)
            || seg.flags.contains(Flags::ECE)
            || seg.ack.lt(f.ack);
        if !seg.ack.lt(f.ack) {
            f.ack = seg.ack;
            f.wnd = seg.wnd;
            f.sack_first = first;
        }
        if special {
            self.stats.kept_special += 1;
            self.release(seg.flow);
            self.stats.passed += 1;
            self.ready.push_back(item);
            return;
        }
        f.count += 1;
        // Whatever was held is older news than this ACK.
        if f.held.take().is_some() {
            self.stats.thinned += 1;
        }
        if f.count >= self.cfg.n {
            f.count = 0;
            self.stats.passed += 1;
            self.ready.push_back(item);
        } else {
            let due = now + self.cfg.max_hold;
            f.held = Some((due, item));
            self.deadlines.push_back((due, seg.flow));
        }
    }

    /// Passes the held item of `flow`, if any.
    fn release(&mut self, flow: FlowId) {
        if let Some(f) = self.flows.get_mut(&flow) {
            if let Some((_, it)) = f.held.take() {
                f.count = 0;
                self.stats.passed += 1;
                self.ready.push_back(it);
            }
        }
    }

    /// `flow` will not be seen again (its driver gave its connection a new
    /// id): its held item is released now, ahead of anything that arrives
    /// under the new id, and its state goes.
    pub fn handle_flow_gone(&mut self, flow: FlowId) {
        if self.flows.contains_key(&flow) {
            self.release(flow);
            self.flows.remove(&flow);
            self.stats.evicted += 1;
        }
    }

    fn evict_one(&mut self) {
        while let Some((flow, touch)) = self.order.pop_front() {
            if self.flows.get(&flow).is_some_and(|f| f.touch == touch) {
                self.release(flow);
                self.flows.remove(&flow);
                self.stats.evicted += 1;
                return;
            }
        }
    }

    fn compact_order(&mut self) {
        if self.order.len() > 2 * self.flows.len() + 16 {
            let flows = &self.flows;
            self.order
                .retain(|(f, t)| flows.get(f).is_some_and(|st| st.touch == *t));
        }
    }

    /// The next item to send at `now`, if any.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<T> {
        if let Some(it) = self.ready.pop_front() {
            return Some(it);
        }
        while let Some(&(due, flow)) = self.deadlines.front() {
            if due > now {
                break;
            }
            self.deadlines.pop_front();
            let Some(f) = self.flows.get_mut(&flow) else {
                continue;
            };
            if f.held.as_ref().is_some_and(|(d, _)| *d == due) {
                self.release(flow);
                self.stats.released_by_timer += 1;
                return self.ready.pop_front();
            }
        }
        None
    }

    /// When [`Self::poll_transmit`] next may have something (possibly
    /// early: the deadline of an ACK superseded since is only dropped then).
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.ready.is_empty() {
            return Some(Instant::ZERO);
        }
        self.deadlines.front().map(|(d, _)| *d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::{SackBlocks, Segment};

    fn cfg(n: u32) -> AckThinConfig {
        AckThinConfig {
            n,
            max_hold: Duration::from_millis(10),
            max_flows: 16,
        }
    }

    fn ack(flow: u32, n: u32) -> Segment {
        Segment {
            flow: FlowId(flow),
            ack: Seq(n),
            flags: Flags::ACK,
            hdr_len: 40,
            wnd: 1000,
            ..Default::default()
        }
    }

    fn drain(t: &mut AckThin<Segment>, now: Instant) -> Vec<(u32, u32)> {
        core::iter::from_fn(|| t.poll_transmit(now))
            .map(|s| (s.flow.0, s.ack.0))
            .collect()
    }

    #[test]
    fn passes_every_nth_advancing_ack() {
        let mut t = AckThin::new(cfg(3));
        let now = Instant::ZERO;
        let mut out = vec![];
        for k in 0..=9 {
            t.handle(now, ack(1, 1000 * k));
            out.extend(drain(&mut t, now));
        }
        // The first passes (no state yet), then every third.
        assert_eq!(out, vec![(1, 0), (1, 3000), (1, 6000), (1, 9000)]);
        assert_eq!(t.stats.thinned, 6);
        assert_eq!(t.stats.arrived, t.stats.passed + t.stats.thinned);
        // Deadlines of superseded ACKs only cause an early, empty wake-up.
        let late = now + Duration::from_secs(1);
        assert!(drain(&mut t, late).is_empty(), "nothing held after the 3rd");
        assert_eq!(t.poll_timeout(), None);
    }

    #[test]
    fn n_of_one_thins_nothing() {
        let mut t = AckThin::new(cfg(1));
        for k in 0..20 {
            t.handle(Instant::ZERO, ack(1, 100 * k));
        }
        assert_eq!(drain(&mut t, Instant::ZERO).len(), 20);
        assert_eq!(t.stats.thinned, 0);
    }

    #[test]
    fn a_held_ack_passes_after_max_hold() {
        let mut t = AckThin::new(cfg(4));
        t.handle(Instant::ZERO, ack(1, 0));
        t.handle(Instant::ZERO, ack(1, 500));
        assert_eq!(drain(&mut t, Instant::ZERO), vec![(1, 0)]);
        let due = Instant::ZERO + Duration::from_millis(10);
        assert_eq!(t.poll_timeout(), Some(due));
        assert!(drain(&mut t, Instant(due.0 - 1)).is_empty());
        assert_eq!(drain(&mut t, due), vec![(1, 500)]);
        assert_eq!(t.stats.released_by_timer, 1);
        assert_eq!(t.poll_timeout(), None);
    }

    #[test]
    fn duplicates_sack_window_updates_and_ece_always_pass_in_order() {
        let mut t = AckThin::new(cfg(8));
        let now = Instant::ZERO;
        t.handle(now, ack(1, 0));
        t.handle(now, ack(1, 1000)); // held
        t.handle(now, ack(1, 1000)); // duplicate: held one first
        assert_eq!(drain(&mut t, now), vec![(1, 0), (1, 1000), (1, 1000)]);
        t.handle(now, ack(1, 1000)); // third duplicate
        let mut upd = ack(1, 1000);
        upd.wnd = 5000; // window update
        t.handle(now, upd);
        let mut sack = ack(1, 1000);
        sack.wnd = 5000;
        let mut blocks = SackBlocks::new();
        blocks.push(Seq(2000), Seq(3000));
        sack.sack = blocks;
        t.handle(now, sack); // same ack, window: a duplicate anyway
        let mut sack2 = ack(1, 1000);
        sack2.wnd = 5000;
        let mut b2 = SackBlocks::new();
        b2.push(Seq(2000), Seq(4000));
        sack2.sack = b2;
        t.handle(now, sack2);
        let mut ece = ack(1, 1500);
        ece.wnd = 5000;
        ece.flags = Flags::ACK | Flags::ECE;
        t.handle(now, ece);
        t.handle(now, ack(1, 900)); // older: passes, changes nothing
        assert_eq!(drain(&mut t, now).len(), 6);
        assert_eq!(t.stats.thinned, 0);
        assert_eq!(t.stats.kept_special, 7);
    }

    #[test]
    fn new_sack_information_on_an_advancing_ack_passes() {
        let mut t = AckThin::new(cfg(8));
        let now = Instant::ZERO;
        t.handle(now, ack(1, 0));
        let mut s = ack(1, 1000);
        let mut b = SackBlocks::new();
        b.push(Seq(3000), Seq(4000));
        s.sack = b;
        t.handle(now, s);
        // Same first block, advancing: may be thinned (held).
        let mut s2 = ack(1, 2000);
        s2.sack = b;
        t.handle(now, s2);
        assert_eq!(drain(&mut t, now), vec![(1, 0), (1, 1000)]);
        assert_eq!(t.held(), 1);
    }

    #[test]
    fn other_segments_release_the_held_ack_first() {
        let mut t = AckThin::new(cfg(8));
        let now = Instant::ZERO;
        t.handle(now, ack(1, 0));
        t.handle(now, ack(1, 700));
        let mut fin = ack(1, 800);
        fin.flags = Flags::ACK | Flags::FIN;
        t.handle(now, fin);
        let mut data = ack(2, 5);
        data.len = 100;
        t.handle(now, data);
        assert_eq!(drain(&mut t, now), vec![(1, 0), (1, 700), (1, 800), (2, 5)]);
        assert_eq!(t.stats.bypassed, 2);
    }

    #[test]
    fn flows_are_thinned_apart_and_state_is_bounded() {
        let mut t = AckThin::new(AckThinConfig {
            max_flows: 4,
            ..cfg(2)
        });
        let now = Instant::ZERO;
        // Flow 1 holds an ACK; 10 other flows arrive and evict it.
        t.handle(now, ack(1, 0));
        t.handle(now, ack(1, 10));
        for f in 2..12 {
            t.handle(now, ack(f, 0));
            assert!(t.tracked_flows() <= 4);
        }
        let out = drain(&mut t, now);
        assert!(
            out.contains(&(1, 10)),
            "an evicted flow's held ACK is released, never dropped"
        );
        assert_eq!(t.stats.evicted, 7);
        assert_eq!(t.stats.arrived, t.stats.passed + t.stats.thinned);
        // Interleaved flows keep their own counts.
        let mut t = AckThin::new(cfg(2));
        for k in 1..=4 {
            t.handle(now, ack(1, 100 * k));
            t.handle(now, ack(2, 100 * k));
        }
        assert_eq!(
            drain(&mut t, now),
            vec![(1, 100), (2, 100), (1, 300), (2, 300)]
        );
    }
}
