//! The half-duplex medium: one transmission at a time across both
//! directions, turns in order of arrival, wake-ups never in the past.

use super::*;
use crate::loss::LossModel;
use crate::queue::test_item::seg;
use crate::queue::{Queue, QueueLimit};
use crate::segment::Segment;
use crate::time::Rate;

fn pair(delay_a_ms: u64, delay_b_ms: u64) -> (LinkDir<Segment>, LinkDir<Segment>) {
    let mk = |d| {
        LinkDir::new(
            Rate::mbps(8),
            Duration::from_millis(d),
            Queue::drop_tail(QueueLimit::Packets(100_000)),
            LossModel::None,
        )
    };
    (mk(delay_a_ms), mk(delay_b_ms))
}

/// Drives both directions as an event loop would: wake at the earliest
/// deadline, catch up, collect (time in us, direction, flow).
fn run(
    m: &mut HalfDuplex,
    a: &mut LinkDir<Segment>,
    b: &mut LinkDir<Segment>,
) -> Vec<(u64, usize, u32)> {
    let mut out = vec![];
    let mut last = Instant::ZERO;
    loop {
        let t = match (HalfDuplex::poll_timeout(a), HalfDuplex::poll_timeout(b)) {
            (Some(x), Some(y)) => x.min(y),
            (x, y) => match x.or(y) {
                Some(t) => t,
                None => break,
            },
        };
        assert!(t >= last, "a wake-up in the past: {t} < {last}");
        last = t;
        m.advance(a, b, t);
        for (d, l) in [(0, &mut *a), (1, &mut *b)] {
            while let Some(p) = l.poll_deliver(t) {
                out.push((t.as_nanos() / 1000, d, p.flow.0));
            }
        }
    }
    out
}

#[test]
fn one_transmission_at_a_time_in_arrival_order() {
    let (mut a, mut b) = pair(10, 10);
    let mut m = HalfDuplex::new(&mut a, &mut b, Duration::ZERO, Stream::derive(1, "m"));
    let ms = |x: u64| Instant::ZERO + Duration::from_micros(x * 100);
    // 1000 B = 1 ms at 8 Mbit/s. Arrivals: a at 0, b at 0.1, a at 0.2, b at
    // 0.3 ms: the channel alternates in that order, back to back.
    m.enqueue(&mut a, &mut b, 0, ms(0), seg(1, 1000)).unwrap();
    m.enqueue(&mut a, &mut b, 1, ms(1), seg(2, 1000)).unwrap();
    m.enqueue(&mut a, &mut b, 0, ms(2), seg(3, 1000)).unwrap();
    m.enqueue(&mut a, &mut b, 1, ms(3), seg(4, 1000)).unwrap();
    assert_eq!(m.waiting(0) + m.waiting(1), 3);
    let got = run(&mut m, &mut a, &mut b);
    assert_eq!(
        got,
        vec![
            (11_000, 0, 1),
            (12_000, 1, 2),
            (13_000, 0, 3),
            (14_000, 1, 4)
        ]
    );
    assert_eq!(a.stats.busy_ns + b.stats.busy_ns, 4_000_000);
    assert_eq!(m.stats.contended, 2);
}

#[test]
fn both_directions_backlogged_share_the_rate() {
    let (mut a, mut b) = pair(5, 5);
    let mut m = HalfDuplex::new(&mut a, &mut b, Duration::ZERO, Stream::derive(1, "m"));
    for i in 0..500 {
        m.enqueue(&mut a, &mut b, 0, Instant::ZERO, seg(i, 1000))
            .unwrap();
        m.enqueue(&mut a, &mut b, 1, Instant::ZERO, seg(i, 1000))
            .unwrap();
    }
    let got = run(&mut m, &mut a, &mut b);
    // 1000 packets of 1 ms each, one at a time: the last lands at 1 s + 5 ms.
    assert_eq!(got.len(), 1000);
    assert_eq!(got.last().unwrap().0, 1_005_000);
    assert_eq!(a.stats.tx_packets, 500);
    assert_eq!(b.stats.tx_packets, 500);
}

#[test]
fn a_short_direction_is_never_scheduled_in_the_past() {
    // b's delay is far shorter than a's: when a's transmission ends, b's
    // packet must start then, not when a's packet lands 50 ms later.
    let (mut a, mut b) = pair(50, 0);
    let mut m = HalfDuplex::new(&mut a, &mut b, Duration::ZERO, Stream::derive(1, "m"));
    m.enqueue(&mut a, &mut b, 0, Instant::ZERO, seg(1, 1000))
        .unwrap();
    m.enqueue(&mut a, &mut b, 1, Instant::ZERO, seg(2, 1000))
        .unwrap();
    assert_eq!(
        run(&mut m, &mut a, &mut b),
        vec![(2_000, 1, 2), (51_000, 0, 1)]
    );
}

#[test]
fn contention_backoff_idles_the_channel_deterministically() {
    let go = || {
        let (mut a, mut b) = pair(1, 1);
        let mut m = HalfDuplex::new(
            &mut a,
            &mut b,
            Duration::from_micros(500),
            Stream::derive(3, "m"),
        );
        for i in 0..1000 {
            m.enqueue(&mut a, &mut b, 0, Instant::ZERO, seg(i, 1000))
                .unwrap();
            m.enqueue(&mut a, &mut b, 1, Instant::ZERO, seg(i, 1000))
                .unwrap();
        }
        let got = run(&mut m, &mut a, &mut b);
        (got.last().unwrap().0, m.stats)
    };
    let (end, stats) = go();
    assert_eq!(go(), (end, stats), "same seed, same run");
    // 1998 contended starts (the first finds the channel idle, the last
    // has no rival left), each idling a mean of 250 us: the 2000 ms of
    // transmissions take about 500 ms more.
    assert_eq!(stats.contended, 1998);
    let mean_us = stats.backoff_ns as f64 / 1998.0 / 1000.0;
    assert!((mean_us - 250.0).abs() < 15.0, "{mean_us}");
    assert_eq!(end, 2_000_000 + 1_000 + stats.backoff_ns / 1000);
}
