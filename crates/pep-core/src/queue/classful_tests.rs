//! Priority and weighted sharing, on their own and driven through a lazy
//! `LinkDir` (which asks for the next packet only when the transmitter
//! frees).

use super::*;
use crate::link::LinkDir;
use crate::loss::LossModel;
use crate::queue::test_item::seg;
use crate::queue::Queue;
use crate::segment::Segment;
use crate::time::{Duration, Instant, Rate};

const BIG: QueueLimit = QueueLimit::Packets(1_000_000);

#[test]
fn strict_priority_serves_acks_first() {
    let mut q: Queue<Segment> = Queue::classful(Classful::acks_first(BIG, BIG));
    let t = Instant::ZERO;
    for (flow, wire) in [(1, 1040), (2, 1040), (3, 40), (4, 1040), (5, 40)] {
        q.enqueue(t, seg(flow, wire)).unwrap();
    }
    let order: Vec<u32> = std::iter::from_fn(|| q.dequeue(t))
        .map(|s| s.flow.0)
        .collect();
    assert_eq!(order, vec![3, 5, 1, 2, 4]);
    let b = q.band_stats();
    assert_eq!((b[0].dequeued, b[1].dequeued), (2, 3));
}

#[test]
fn flow_classifier_and_per_band_limits() {
    let c = Classful::new(
        Classifier::Flow {
            bands: vec![2, 0, 1],
            default: 2,
        },
        Scheduler::Strict,
        &[QueueLimit::Packets(1), BIG, BIG],
    );
    let mut q: Queue<Segment> = Queue::classful(c);
    let t = Instant::ZERO;
    for flow in [0, 7, 2, 1, 1] {
        let _ = q.enqueue(t, seg(flow, 1040));
    }
    // Flow 1's second packet overflows its one-packet band.
    assert_eq!(q.stats.dropped_overflow, 1);
    assert_eq!(q.band_stats()[0].dropped, 1);
    let order: Vec<u32> = std::iter::from_fn(|| q.dequeue(t))
        .map(|s| s.flow.0)
        .collect();
    assert_eq!(order, vec![1, 2, 0, 7]);
}

/// 1 ms per 1000-byte packet.
fn link(q: Queue<Segment>) -> LinkDir<Segment> {
    LinkDir::new(Rate::mbps(8), Duration::from_millis(10), q, LossModel::None)
}

fn ms(x: f64) -> Instant {
    Instant::ZERO + Duration::from_secs_f64(x * 1e-3)
}

fn deliveries(l: &mut LinkDir<Segment>) -> Vec<(u64, u32)> {
    let mut out = vec![];
    while let Some(t) = l.poll_timeout() {
        l.handle_timeout(t);
        while let Some(p) = l.poll_deliver(t) {
            out.push((t.as_nanos() / 1000, p.flow.0));
        }
    }
    out
}

#[test]
fn lazy_link_picks_at_the_instant_the_transmitter_frees() {
    // A (data) starts at 0 and ends at 1 ms; B (data) arrives at 0.5 ms, X
    // (an ACK, 40 us) at 0.7 ms. Nothing touches the link at 1 ms, yet the
    // choice made then sees both and sends the ACK first.
    let mut l = link(Queue::classful(Classful::acks_first(BIG, BIG)));
    l.enqueue(ms(0.0), seg(1, 1000)).unwrap();
    l.enqueue(ms(0.5), seg(2, 1000)).unwrap();
    l.enqueue(ms(0.7), seg(3, 40)).unwrap();
    assert_eq!(
        deliveries(&mut l),
        vec![(11_000, 1), (11_040, 3), (12_040, 2)]
    );
    // An ACK arriving exactly as A ends is too late for that choice: the
    // transmission ending frees the transmitter before the arrival is
    // admitted (the same tie rule as the FIFO).
    let mut l = link(Queue::classful(Classful::acks_first(BIG, BIG)));
    l.enqueue(ms(0.0), seg(1, 1000)).unwrap();
    l.enqueue(ms(0.5), seg(2, 1000)).unwrap();
    l.enqueue(ms(1.0), seg(3, 40)).unwrap();
    assert_eq!(
        deliveries(&mut l),
        vec![(11_000, 1), (12_000, 2), (12_040, 3)]
    );
}

/// Offers data (1040 B) and ACKs (40 B) at the given rates (packets per
/// ms) for `secs` to a two-class link at 8 Mbit/s, and returns the bytes
/// each class sent.
fn share(data_w: u32, ack_w: u32, data_per_ms: u32, acks_per_ms: u32, secs: u64) -> (u64, u64) {
    let mut l = link(Queue::classful(Classful::two_class(data_w, ack_w, BIG)));
    for i in 0..secs * 1000 {
        let t = Instant::ZERO + Duration::from_millis(i);
        for _ in 0..data_per_ms {
            l.enqueue(t, seg(1, 1040)).unwrap();
        }
        for _ in 0..acks_per_ms {
            l.enqueue(t, seg(2, 40)).unwrap();
        }
    }
    l.advance(Instant::ZERO + Duration::from_secs(secs));
    let b = l.queue.band_stats();
    (b[0].dequeued_bytes, b[1].dequeued_bytes)
}

#[test]
fn backlogged_classes_share_by_weight() {
    // The link carries 1000 B per ms; both classes offer more than that.
    for (dw, aw) in [(9, 1), (1, 1), (1, 3), (5, 95)] {
        let (d, a) = share(dw, aw, 2, 40, 20);
        let total = (d + a) as f64;
        let want = dw as f64 / (dw + aw) as f64;
        let got = d as f64 / total;
        assert!(
            (got / want - 1.0).abs() < 0.05 && ((1.0 - got) / (1.0 - want) - 1.0).abs() < 0.05,
            "weights {dw}:{aw}: data got {got:.4}, want {want:.4}"
        );
        // Work-conserving: the link never idles while both are backlogged.
        assert!(total >= 20.0 * 1_000_000.0 - 1040.0, "{total}");
    }
}

#[test]
fn an_idle_class_leaves_the_whole_link_to_the_other() {
    let (d, a) = share(1, 9, 2, 0, 10);
    assert_eq!(a, 0);
    assert!(d as f64 >= 10e6 - 1040.0, "{d}");
    let (d, a) = share(9, 1, 0, 40, 10);
    assert_eq!(d, 0);
    assert!(a as f64 >= 10e6 - 40.0, "{a}");
}

#[test]
fn an_idle_class_earns_no_credit() {
    // Data alone for 5 s, then both: over the next 100 ms the shares are
    // already the weights, not an ACK burst cashing in the idle time.
    let mut l = link(Queue::classful(Classful::two_class(1, 1, BIG)));
    let mut marks = vec![];
    for i in 0..=5_100u64 {
        let t = Instant::ZERO + Duration::from_millis(i);
        if i == 5_000 || i == 5_100 {
            l.advance(t);
            let b = l.queue.band_stats();
            marks.push((b[0].dequeued_bytes, b[1].dequeued_bytes));
        }
        l.enqueue(t, seg(1, 1040)).unwrap();
        l.enqueue(t, seg(1, 1040)).unwrap();
        if i >= 5_000 {
            for _ in 0..30 {
                l.enqueue(t, seg(2, 40)).unwrap();
            }
        }
    }
    assert_eq!(marks[0].1, 0);
    let (d, a) = (marks[1].0 - marks[0].0, marks[1].1 - marks[0].1);
    let got = d as f64 / (d + a) as f64;
    assert!(
        (got - 0.5).abs() < 0.02,
        "data share {got:.3} ({d} B vs {a} B)"
    );
}
