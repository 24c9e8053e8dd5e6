//! [`QuicBbr`] on a modelled path: a bottleneck of `rate` serving a
//! DropTail queue, `one_way` propagation each way, independent random
//! loss; the sender sends whole datagrams while its window allows, paced
//! as quinn paces (5/4 x window / RTT), each send one batch, each ACK one
//! batch (quinn's callbacks).

use alloc::collections::BinaryHeap;
use core::cmp::Reverse;

use super::{QuicBbr, QuicRateSampler};
use crate::rng::Stream;
use crate::time::{Duration, Instant};

const MTU: u64 = 1200;

struct Path {
    /// Bytes per second.
    rate: u64,
    one_way: Duration,
    queue_pkts: u64,
    loss: f64,
}

#[derive(Default, Debug)]
struct Run {
    sent: u64,
    /// Lost at random or at the queue.
    lost: u64,
    queue_drops: u64,
    /// Lost in the second half.
    late_lost: u64,
    /// Bytes delivered in the second half.
    late_delivered: u64,
    max_window: u64,
    /// The window at the end.
    window: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Acked,
    Lost,
    Wake,
}

/// Runs `secs` seconds of a backlogged sender; goodput counted over the
/// second half.
fn run(path: &Path, secs: u64, seed: u64) -> Run {
    let mut cc = QuicBbr::new(MTU as u16, 12_000, seed);
    let mut rng = Stream::derive(seed, "quic-bbr-test");
    let tx = Duration::from_nanos(MTU * 1_000_000_000 / path.rate);
    let end = Instant::ZERO + Duration::from_secs(secs);
    let half = Instant::ZERO + Duration::from_secs(secs / 2);
    // (time, what, send time): ACK arrivals, loss detections and the
    // pacer's releases.
    let mut events: BinaryHeap<Reverse<(Instant, Ev, Instant)>> = BinaryHeap::new();
    let mut link_free = Instant::ZERO;
    let mut inflight = 0u64;
    let mut now = Instant::ZERO;
    let mut r = Run::default();
    let srtt = path.one_way + path.one_way;
    // quinn's pacer: 5/4 x window / smoothed RTT.
    let mut next_send = Instant::ZERO;
    let mut wake_set = false;
    while now < end {
        while inflight + MTU <= cc.window() {
            if next_send > now {
                if !wake_set {
                    events.push(Reverse((next_send, Ev::Wake, now)));
                    wake_set = true;
                }
                break;
            }
            let gap = MTU as u128 * 4 * srtt.as_nanos() as u128 / (5 * cc.window() as u128);
            next_send = next_send.max(now) + Duration::from_nanos(gap as u64);
            r.sent += 1;
            inflight += MTU;
            cc.on_sent(now, MTU);
            let start = link_free.max(now);
            let queued = start.saturating_since(now).as_nanos() / tx.as_nanos();
            // Loss is found about one RTT and a quarter after the send.
            let found = now + srtt + srtt / 4;
            if queued >= path.queue_pkts {
                r.queue_drops += 1;
                events.push(Reverse((found, Ev::Lost, now)));
                continue;
            }
            link_free = start + tx;
            if rng.uniform() < path.loss {
                events.push(Reverse((found, Ev::Lost, now)));
            } else {
                events.push(Reverse((
                    link_free + path.one_way + path.one_way,
                    Ev::Acked,
                    now,
                )));
            }
        }
        r.max_window = r.max_window.max(cc.window());
        let Some(Reverse((t, ev, sent))) = events.pop() else {
            break;
        };
        now = t;
        match ev {
            Ev::Wake => wake_set = false,
            Ev::Acked => {
                inflight -= MTU;
                if now >= half {
                    r.late_delivered += MTU;
                }
                cc.on_ack(now, sent, MTU, srtt);
                cc.on_end_acks(now, inflight, false);
            }
            Ev::Lost => {
                inflight -= MTU;
                r.lost += 1;
                if now >= half {
                    r.late_lost += 1;
                }
                cc.on_congestion_event(now, false, MTU);
            }
        }
    }
    r.window = cc.window();
    r
}

fn mbps(bytes: u64, secs: u64) -> f64 {
    bytes as f64 * 8.0 / secs as f64 / 1e6
}

/// The satellite path: 20 Mbit/s, 300 ms each way, 0.5 % random
/// loss, a 1000-packet queue (0.8 BDP).
#[test]
fn random_loss_leaves_the_model_and_the_link_full() {
    let path = Path {
        rate: 20_000_000 / 8,
        one_way: Duration::from_millis(300),
        queue_pkts: 1000,
        loss: 0.005,
    };
    let r = run(&path, 60, 7);
    let goodput = mbps(r.late_delivered, 30);
    let bdp = path.rate * 6 / 10;
    // The link's payload rate is 20 Mbit/s; random loss takes 0.5 %.
    assert!(
        goodput > 0.95 * 20.0 && goodput <= 20.0,
        "{goodput} Mbit/s, {r:?}"
    );
    // No flooding: after STARTUP the losses are the random ones (the
    // second half sends about 62,000 datagrams: 0.25 % is 5 sigma)...
    let late_sent = r.late_delivered / MTU + r.late_lost;
    let late = r.late_lost as f64 / late_sent as f64;
    assert!(
        late < 0.005 + 0.0025,
        "lost {:.2} % late, {r:?}",
        late * 100.0
    );
    // ...and STARTUP's overshoot, ended by its loss, costs under 4 % of
    // the minute's datagrams (3.2 % here paced as quinn paces, 1.9 %
    // unpaced; 6.7 % unpaced without the loss exit).
    let lost = r.lost as f64 / r.sent as f64;
    assert!(lost < 0.04, "lost {:.2} %, {r:?}", lost * 100.0);
    // The window ends near the BDP (PROBE_BW's 0.75..1.25 plus headroom).
    assert!(
        r.window >= bdp * 3 / 4 && r.window <= bdp * 3 / 2,
        "window {} against a BDP of {bdp}",
        r.window
    );
}

/// The lab's loss-free congested path: 100 Mbit/s, 125 ms each way, a
/// 300-packet queue (a ninth of the BDP): the window stays under the BDP
/// plus the queue except in PROBE_BW's 1.25 phase, whose quarter BDP more
/// overflows the queue (BBR v1 does so every eighth round, in Linux too:
/// 1.7 % of the datagrams, `cubic-flows` about 1 %). The loss-bounded
/// probe caps the window after the first such loss at 85 % of that
/// flight, so the loss after STARTUP is 0.25 % (without it 1.1 %), and
/// PROBE_RTT at half the BDP keeps the link busy (v1's four packets left
/// 94.8 Mbit/s).
#[test]
fn a_shallow_queue_is_not_flooded() {
    let path = Path {
        rate: 100_000_000 / 8,
        one_way: Duration::from_millis(125),
        queue_pkts: 300,
        loss: 0.0,
    };
    let r = run(&path, 40, 3);
    let goodput = mbps(r.late_delivered, 20);
    assert!(goodput > 0.95 * 100.0, "{goodput} Mbit/s, {r:?}");
    let late_sent = r.late_delivered / MTU + r.late_lost;
    let late = r.late_lost as f64 / late_sent as f64;
    // The cap's slow regrowth finds the queue again now and then.
    assert!(late < 0.01, "lost {:.2} % late, {r:?}", late * 100.0);
    // The window after STARTUP is never above 1.25 BDP and the margin
    // (the min RTT holds a datagram's transmission more: 0.04 %).
    let bdp = path.rate / 4;
    assert!(
        r.window <= bdp * 5 / 4 * 1001 / 1000 + 4 * MTU,
        "window {}",
        r.window
    );
}

#[test]
fn a_steady_flow_samples_its_rate() {
    // One 1000-byte packet per ms, each acknowledged 100 ms later.
    let mut s = QuicRateSampler::new();
    let ms = |t: u64| Instant::ZERO + Duration::from_millis(t);
    let mut last = None;
    for t in 0..400u64 {
        s.on_sent(ms(t), 1000);
        if t >= 100 {
            s.on_ack(ms(t), ms(t - 100), 1000);
            last = Some(s.end_acks(ms(t), 100_000));
        }
    }
    let rs = last.unwrap();
    // 1000 B/ms = 1 MB/s, within one packet over the interval.
    let rate = rs.rate().unwrap();
    assert!((990_000..=1_010_000).contains(&rate), "{rate} B/s");
    assert_eq!(s.min_rtt(), Some(Duration::from_millis(100)));
    // Records are dropped as they are acknowledged.
    assert!(s.records() <= 101, "{}", s.records());
}

#[test]
fn unacknowledged_older_records_are_dropped_and_late_acks_count() {
    let mut s = QuicRateSampler::new();
    let ms = |t: u64| Instant::ZERO + Duration::from_millis(t);
    for t in 0..10 {
        s.on_sent(ms(t), 1000);
    }
    // The packet sent at 5 is acknowledged first: 0..5 are lost or late.
    s.on_ack(ms(105), ms(5), 1000);
    let rs = s.end_acks(ms(105), 8000);
    assert_eq!(s.records(), 5);
    assert_eq!(rs.acked_sacked, 1000);
    // A late ACK of the packet sent at 2: delivered, no snapshot.
    s.on_ack(ms(106), ms(2), 1000);
    let rs = s.end_acks(ms(106), 7000);
    assert_eq!(s.delivered(), 2000);
    assert_eq!(rs.prior_delivered, None);
}
