//! SAD driven through a plain FIFO, as a link's queue drives it.

use std::collections::VecDeque;

use proptest::prelude::*;

use super::*;
use crate::segment::Flags;

fn ack(flow: u32, n: u32) -> Segment {
    Segment {
        flow: FlowId(flow),
        ack: Seq(n),
        flags: Flags::ACK,
        hdr_len: 40,
        wnd: 20_000,
        ts: Some(Timestamps { val: n, ecr: n }),
        ..Default::default()
    }
}

fn sacked(flow: u32, n: u32, left: u32, right: u32) -> Segment {
    let mut s = ack(flow, n);
    s.sack.push(Seq(left), Seq(right));
    s
}

/// A FIFO of `limit` ACKs with SAD in front.
struct Fifo {
    sad: Sad,
    q: VecDeque<Segment>,
    limit: usize,
}

impl Fifo {
    fn new(limit: usize) -> Self {
        Fifo {
            sad: Sad::new(limit),
            q: VecDeque::new(),
            limit,
        }
    }
    fn offer(&mut self, s: Segment) {
        if self.sad.arrive(&s) == Arrival::Enqueue {
            if self.q.len() < self.limit {
                self.q.push_back(s);
                self.sad.admitted(&s);
            } else {
                self.sad.refused();
            }
        }
    }
    fn send(&mut self) -> Option<Segment> {
        let mut s = self.q.pop_front()?;
        self.sad.depart(&mut s);
        Some(s)
    }
    fn drain(&mut self) -> Vec<u32> {
        std::iter::from_fn(|| self.send())
            .map(|s| s.ack.0)
            .collect()
    }
}

#[test]
fn a_queued_ack_leaves_with_the_latest_number_window_and_timestamp() {
    let mut f = Fifo::new(50);
    for n in 1..=10 {
        f.offer(ack(1, n * 1000));
    }
    let mut last = ack(1, 11_000);
    last.wnd = 7_000;
    f.offer(last);
    assert_eq!(f.q.len(), 1, "one ACK of the flow is ever queued");
    let out = f.send().unwrap();
    assert_eq!(out.ack, Seq(11_000));
    assert_eq!(out.wnd, 7_000);
    assert_eq!(out.ts, last.ts);
    assert_eq!(f.sad.stats.merged, 10);
    assert_eq!(f.sad.stats.rewritten, 1);
    // The bit is clear: the next ACK is queued.
    assert_eq!(f.sad.busy_flows(), 0);
    f.offer(ack(1, 12_000));
    assert_eq!(f.q.len(), 1);
}

#[test]
fn flows_do_not_merge_into_each_other() {
    let mut f = Fifo::new(50);
    for n in 1..=5 {
        f.offer(ack(1, n));
        f.offer(ack(2, 100 + n));
    }
    assert_eq!(f.q.len(), 2);
    assert_eq!(f.drain(), vec![5, 105]);
}

#[test]
fn duplicate_acks_all_reach_the_sender_as_duplicates() {
    let mut f = Fifo::new(50);
    // 5, 6, 7 merge; then the receiver repeats 7 three times (a loss).
    for n in [5, 6, 7, 7, 7, 7] {
        f.offer(ack(1, n));
    }
    // The absorbing ACK is frozen at 7, ahead of three duplicates.
    assert_eq!(f.drain(), vec![7, 7, 7, 7]);
    assert_eq!(f.sad.stats.kept_special, 3);
    assert_eq!(f.sad.busy_flows(), 0);
}

#[test]
fn the_ack_after_duplicates_is_queued_behind_them() {
    let mut f = Fifo::new(50);
    for n in [5, 5, 5, 5, 9, 10, 11] {
        f.offer(ack(1, n));
    }
    // The retransmission's ACK (9) must not overtake the duplicates, and
    // must not be folded into one of them.
    assert_eq!(f.drain(), vec![5, 5, 5, 5, 11]);
}

#[test]
fn new_sack_information_is_kept_repeated_is_merged() {
    let mut f = Fifo::new(50);
    f.offer(ack(1, 5));
    f.offer(sacked(1, 5, 6, 7));
    // Same number, a new first block: kept.
    f.offer(sacked(1, 5, 6, 8));
    assert_eq!(f.q.len(), 3);
    // A partial ACK carrying a block already reported is not special.
    f.offer(sacked(1, 6, 6, 8));
    f.offer(sacked(1, 6, 6, 8));
    let out: Vec<_> = std::iter::from_fn(|| f.send()).collect();
    let acks: Vec<u32> = out.iter().map(|s| s.ack.0).collect();
    assert_eq!(acks, vec![5, 5, 5, 6, 6]);
    assert_eq!(out[2].sack.as_slice(), &[(Seq(6), Seq(8))]);
}

#[test]
fn an_older_ack_is_dropped() {
    let mut f = Fifo::new(50);
    f.offer(ack(1, 10));
    f.offer(ack(1, 8));
    assert_eq!(f.sad.stats.stale, 1);
    assert_eq!(f.drain(), vec![10]);
}

#[test]
fn a_refused_ack_leaves_no_state() {
    let mut f = Fifo::new(1);
    f.offer(ack(1, 1));
    f.offer(ack(2, 1));
    assert_eq!(f.sad.stats.refused, 1);
    assert_eq!(f.sad.tracked_flows(), 1);
    assert_eq!(f.drain(), vec![1]);
    assert_eq!(f.sad.busy_flows(), 0);
}

#[test]
fn a_duplicate_after_the_queue_emptied_is_still_a_duplicate() {
    let mut f = Fifo::new(50);
    f.offer(ack(1, 5));
    assert_eq!(f.drain(), vec![5]);
    // The receiver repeats 5 once, then the retransmission is acked.
    f.offer(ack(1, 5));
    f.offer(ack(1, 9));
    assert_eq!(f.drain(), vec![5, 9]);
}

#[test]
fn idle_flows_are_evicted_oldest_first_to_make_room() {
    let mut f = Fifo::new(50);
    f.sad = Sad::new(2);
    f.offer(ack(1, 5));
    f.offer(ack(2, 5));
    f.drain();
    f.offer(ack(1, 6));
    f.drain();
    // Flow 2 has been idle longest: flow 3 takes its place.
    f.offer(ack(3, 1));
    assert_eq!(f.sad.stats.evicted, 1);
    assert_eq!(f.sad.stats.untracked, 0);
    f.offer(ack(1, 6)); // still known: a duplicate, kept
    assert_eq!(f.sad.stats.kept_special, 1);
    assert_eq!(f.drain(), vec![1, 6]);
}

#[test]
fn a_full_table_passes_new_flows_unregulated() {
    let mut f = Fifo::new(50);
    f.sad = Sad::new(2);
    for flow in 0..5 {
        f.offer(ack(flow, 1));
        f.offer(ack(flow, 2));
    }
    // Flows 0 and 1 merged; flows 2..4 passed both ACKs.
    assert_eq!(f.sad.tracked_flows(), 2);
    assert_eq!(f.sad.stats.untracked, 6);
    assert_eq!(f.drain(), vec![2, 2, 1, 2, 1, 2, 1, 2]);
}

/// ACK numbers as a receiver sends them: non-decreasing, with runs of
/// duplicates, for a few flows, interleaved with link departures.
fn script() -> impl Strategy<Value = Vec<(u32, u32, bool)>> {
    prop::collection::vec((0u32..4, 0u32..3, any::<bool>()), 1..300)
}

proptest! {
    /// Nothing the sender needs is lost: per flow, the ACKs that leave are
    /// non-decreasing, the last carries the receiver's last number, and
    /// the sender sees exactly as many duplicates as the receiver sent.
    /// The table never holds more flows than the queue holds ACKs.
    #[test]
    fn sad_preserves_ack_progress_and_duplicates(steps in script()) {
        let mut f = Fifo::new(1000);
        let mut next = [1000u32; 4];
        let mut rx_dups = [0u32; 4];
        let mut rx_last = [None::<u32>; 4];
        let mut out: [Vec<u32>; 4] = Default::default();
        for (flow, advance, depart) in steps {
            let i = flow as usize;
            // advance 0: a duplicate; else a new cumulative ACK.
            next[i] += advance * 1000;
            if rx_last[i] == Some(next[i]) {
                rx_dups[i] += 1;
            }
            rx_last[i] = Some(next[i]);
            f.offer(ack(flow, next[i]));
            prop_assert!(f.sad.busy_flows() <= f.q.len());
            if depart {
                if let Some(s) = f.send() {
                    out[s.flow.0 as usize].push(s.ack.0);
                }
            }
        }
        while let Some(s) = f.send() {
            out[s.flow.0 as usize].push(s.ack.0);
        }
        prop_assert_eq!(f.sad.busy_flows(), 0);
        for i in 0..4 {
            let o = &out[i];
            prop_assert!(o.windows(2).all(|w| w[0] <= w[1]), "{:?}", o);
            prop_assert_eq!(o.last().copied(), rx_last[i]);
            let tx_dups = o.windows(2).filter(|w| w[0] == w[1]).count() as u32;
            prop_assert_eq!(tx_dups, rx_dups[i], "{:?}", o);
        }
    }
}
