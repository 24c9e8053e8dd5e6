//! CUBIC (curve, K, reduction, fast convergence, Reno-friendly region,
//! timeout) and Westwood+ (filter, counting, ssthresh) against values
//! computed by hand.

use super::cubic::{k, w_cubic, ALPHA, BETA, C};
use super::westwood::{low_pass, Westwood, MIN_INTERVAL};
use super::*;

const MSS: u32 = 1000;
const M: u64 = MSS as u64;

fn at_ms(v: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(v)
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn cubic_constants_and_curve() {
    assert_eq!((C, BETA), (0.4, 0.7));
    assert!(close(ALPHA, 0.9 / 1.7, 1e-15));
    // W_max 100, cwnd_epoch 70: K = cbrt(30 / 0.4) = cbrt(75).
    let kk = k(100.0, 70.0);
    assert!(close(kk, 4.217_163_326_508_746, 1e-12), "{kk}");
    assert!(close(w_cubic(0.0, kk, 100.0), 70.0, 1e-9));
    assert!(close(w_cubic(kk, kk, 100.0), 100.0, 1e-12));
    assert!(close(w_cubic(kk + 1.0, kk, 100.0), 100.4, 1e-9));
    assert!(close(w_cubic(kk - 1.0, kk, 100.0), 99.6, 1e-9));
    assert!(close(w_cubic(kk + 2.0, kk, 100.0), 103.2, 1e-9));
    // cwnd_epoch above W_max: K < 0 and the curve still starts at cwnd.
    let kk = k(50.0, 60.0);
    assert!(kk < 0.0);
    assert!(close(w_cubic(0.0, kk, 50.0), 60.0, 1e-9));
}

fn cubic(cfg: CubicConfig) -> Congestion {
    let cfg = CcConfig {
        growth: Growth::Cubic(cfg),
        ..CcConfig::new(MSS)
    };
    Congestion::new(&cfg, Seq(0))
}

/// Three duplicate ACKs with `flight` bytes outstanding at SND.UNA 1.
fn loss(c: &mut Congestion, now: Instant, flight: u32) {
    for _ in 0..3 {
        c.on_dupack(now, Seq(1), Seq(1) + flight);
    }
}

/// One RTT of ACKs, one per segment of cwnd, spread over `rtt` from
/// `*now`; returns the sequence number reached.
fn round(c: &mut Congestion, now: &mut Instant, ack: &mut Seq, rtt: Duration) {
    let n = (c.cwnd() / M).max(1);
    let step = Duration(rtt.as_nanos() / n);
    for _ in 0..n {
        *now += step;
        *ack += MSS;
        c.on_new_ack(*now, *ack, MSS);
    }
}

#[test]
fn cubic_reduces_by_beta_and_follows_the_curve_from_the_end_of_recovery() {
    // W_max 1000 segments at 100 ms: K = cbrt(750) = 9.09 s, far above
    // what the Reno-friendly estimate reaches (about 750 at K).
    let mut c = cubic(CubicConfig::default());
    c.state.cwnd = 1000 * M;
    c.state.ssthresh = 1000 * M;
    let rtt = Duration::from_millis(100);
    c.on_rtt_sample(rtt, rtt);
    loss(&mut c, at_ms(0), 1000 * MSS);
    // ssthresh = FlightSize * 0.7.
    assert_eq!(c.ssthresh(), 700 * M);
    let GrowthView::Cubic(v) = c.growth_view() else {
        panic!()
    };
    assert_eq!(
        (v.w_max, v.cwnd_prior, v.epoch),
        (Some(1000.0), 1000.0, None)
    );
    // Recovery ends with a full ACK 100 ms later; the epoch starts with the
    // first ACK in congestion avoidance, not at the loss.
    let mut ack = Seq(1) + 1000 * MSS;
    assert_eq!(c.on_new_ack(at_ms(100), ack, 1000 * MSS), None);
    assert_eq!(c.cwnd(), 700 * M);
    let mut now = at_ms(500);
    ack += MSS;
    c.on_new_ack(now, ack, MSS);
    let GrowthView::Cubic(v) = c.growth_view() else {
        panic!()
    };
    let (start, kk, w_max, cwnd_epoch) = v.epoch.expect("epoch started");
    assert_eq!((start, w_max, cwnd_epoch), (now, 1000.0, 700.0));
    assert!(close(kk, libm::cbrt(750.0), 1e-12));
    // An ACK clock at 100 ms: cwnd tracks W_cubic(t) within 0.5% of W_max
    // (the target is W_cubic(t + RTT), which the per-ACK increments reach
    // about one RTT later), through the concave and the convex region.
    for r in 1..=130 {
        round(&mut c, &mut now, &mut ack, rtt);
        let t = (now - start).as_secs_f64();
        let want = w_cubic(t, kk, 1000.0);
        let got = c.cwnd() as f64 / M as f64;
        assert!(close(got, want, 5.0), "round {r}: {got} vs {want}");
    }
}

#[test]
fn cubic_fast_convergence_lowers_w_max() {
    for (fc, want) in [(true, 90.0 * 0.85), (false, 90.0)] {
        let mut c = cubic(CubicConfig {
            fast_convergence: fc,
            ..CubicConfig::default()
        });
        c.state.cwnd = 100 * M;
        c.state.ssthresh = 100 * M;
        loss(&mut c, at_ms(0), 100 * MSS);
        c.on_new_ack(at_ms(100), Seq(1) + 100 * MSS, 100 * MSS);
        // Second loss below the previous W_max.
        c.state.cwnd = 90 * M;
        for _ in 0..3 {
            c.on_dupack(at_ms(200), Seq(1) + 101 * MSS, Seq(1) + 190 * MSS);
        }
        let GrowthView::Cubic(v) = c.growth_view() else {
            panic!()
        };
        assert!(close(v.w_max.unwrap(), want, 1e-9), "{fc}: {:?}", v.w_max);
        assert_eq!(v.cwnd_prior, 90.0);
    }
}

#[test]
fn cubic_reno_friendly_region_on_short_paths() {
    // No loss yet: K = 0 and W_max = cwnd_epoch = 10, so after 1 s the
    // cubic curve is at 10.4 segments. With a 10 ms RTT Reno would have
    // added 100 segments (alpha is 1: W_est >= cwnd_prior = 0).
    for friendly in [true, false] {
        let mut c = cubic(CubicConfig {
            reno_friendly: friendly,
            ..CubicConfig::default()
        });
        c.state.ssthresh = 10 * M;
        let rtt = Duration::from_millis(10);
        c.on_rtt_sample(rtt, rtt);
        let (mut now, mut ack) = (Instant::ZERO, Seq(1));
        for _ in 0..100 {
            round(&mut c, &mut now, &mut ack, rtt);
        }
        let got = c.cwnd() as f64 / M as f64;
        if friendly {
            // About one segment per RTT (a little less: cwnd grows within
            // each round of ACKs).
            assert!((104.0..=110.0).contains(&got), "{got}");
        } else {
            // W_cubic(1 s + RTT) = 10 + 0.4 * 1.01^3.
            assert!(close(got, 10.4, 0.1), "{got}");
        }
    }
}

#[test]
fn cubic_timeout_restarts_with_k_zero_from_the_new_cwnd() {
    let mut c = cubic(CubicConfig::default());
    c.state.cwnd = 100 * M;
    c.state.ssthresh = 100 * M;
    c.on_timeout(at_ms(0), Seq(1), Seq(1) + 100 * MSS);
    assert_eq!((c.cwnd(), c.ssthresh()), (M, 70 * M));
    let GrowthView::Cubic(v) = c.growth_view() else {
        panic!()
    };
    assert_eq!((v.w_max, v.cwnd_prior), (None, 100.0));
    // Slow start to 70 segments, then the epoch: K = 0, W_max = cwnd.
    let mut ack = Seq(1);
    for i in 0..69 {
        ack += MSS;
        c.on_new_ack(at_ms(1 + i), ack, MSS);
    }
    assert_eq!(c.cwnd(), 70 * M);
    ack += MSS;
    c.on_new_ack(at_ms(100), ack, MSS);
    let GrowthView::Cubic(v) = c.growth_view() else {
        panic!()
    };
    let (_, kk, w_max, cwnd_epoch) = v.epoch.unwrap();
    assert_eq!((kk, w_max, cwnd_epoch), (0.0, 70.0, 70.0));
    assert_eq!(v.w_est, 70.0 + ALPHA / 70.0);
}

#[test]
fn westwood_filter_stage() {
    assert_eq!(low_pass(800, 1600), 900);
    assert_eq!(low_pass(0, 8), 1);
    assert_eq!(low_pass(u64::MAX / 8, u64::MAX / 8), u64::MAX / 8);
    assert_eq!(MIN_INTERVAL, Duration::from_millis(50));
}

fn state() -> CcState {
    *Congestion::new(&CcConfig::new(MSS), Seq(0)).state()
}

/// ACKs of `bytes` every 10 ms from `*t` (ms) for `n` ACKs.
fn acks(w: &mut Westwood, t: &mut u64, n: u64, bytes: u64) {
    let s = state();
    for _ in 0..n {
        w.on_ack(at_ms(*t), &s, bytes, false);
        *t += 10;
    }
}

#[test]
fn westwood_samples_once_per_rtt_and_filters_twice() {
    let mut w = Westwood::new();
    w.on_rtt_sample(Duration::from_millis(100));
    let mut t = 0;
    // 10 kB every 10 ms = 1 MB/s. The interval closes on the first ACK more
    // than one RTT after it opened: 110 ms holding 11 ACKs.
    acks(&mut w, &mut t, 11, 10_000);
    assert_eq!(w.view().bwe, None);
    acks(&mut w, &mut t, 1, 10_000);
    assert_eq!(w.view().bwe, Some(1_000_000));
    acks(&mut w, &mut t, 10, 10_000);
    // The rate doubles: one sample of 2 MB/s moves the first stage by 1/8
    // and the estimate by 1/64.
    acks(&mut w, &mut t, 1, 20_000);
    assert_eq!(w.view().bwe, Some(1_000_000));
    acks(&mut w, &mut t, 10, 20_000);
    acks(&mut w, &mut t, 1, 20_000);
    // Sample (20000 + 10 * 20000) / 0.11 s = 2 MB/s.
    assert_eq!(w.view().bwe, Some((7_000_000 + 1_125_000) / 8));
    // It converges to the new rate.
    for _ in 0..60 {
        acks(&mut w, &mut t, 11, 20_000);
    }
    let bwe = w.view().bwe.unwrap();
    assert!(bwe > 1_990_000 && bwe <= 2_000_000, "{bwe}");
}

#[test]
fn westwood_interval_is_at_least_50_ms() {
    let mut w = Westwood::new();
    w.on_rtt_sample(Duration::from_millis(5));
    let mut t = 0;
    acks(&mut w, &mut t, 6, 1000);
    assert_eq!(w.view().bwe, None);
    acks(&mut w, &mut t, 1, 1000);
    // 6 ACKs over 60 ms.
    assert_eq!(w.view().bwe, Some(100_000));
}

#[test]
fn westwood_counts_duplicates_once() {
    let mut w = Westwood::new();
    let s = state();
    w.on_ack(at_ms(0), &s, 0, true);
    w.on_ack(at_ms(1), &s, 0, true);
    w.on_ack(at_ms(2), &s, 0, true);
    assert_eq!(w.bk, 3 * M);
    // The ACK that covers the hole and the three segments counts only the
    // hole's segment.
    w.on_ack(at_ms(3), &s, 4 * M, false);
    assert_eq!(w.bk, 4 * M);
    // Later ACKs count in full.
    w.on_ack(at_ms(4), &s, 2 * M, false);
    assert_eq!(w.bk, 6 * M);
}

#[test]
fn westwood_ssthresh_is_bwe_times_rtt_min() {
    let cfg = CcConfig {
        growth: Growth::Westwood,
        ..CcConfig::new(MSS)
    };
    let mut c = Congestion::new(&cfg, Seq(0));
    // Before any estimate: Reno's halving.
    for _ in 0..3 {
        c.on_dupack(at_ms(0), Seq(1), Seq(1) + 40 * MSS);
    }
    assert_eq!(c.ssthresh(), 20 * M);
    c.on_new_ack(at_ms(1), Seq(1) + 40 * MSS, 40 * MSS);
    // 1000 bytes per ms = 1 MB/s; RTT samples 120 ms, then a minimum of 80.
    c.on_rtt_sample(Duration::from_millis(120), Duration::from_millis(120));
    c.on_rtt_sample(Duration::from_millis(80), Duration::from_millis(115));
    let mut ack = Seq(1) + 40 * MSS;
    for t in 2..=5000 {
        ack += MSS;
        c.on_new_ack(at_ms(t), ack, MSS);
    }
    let GrowthView::Westwood(v) = c.growth_view() else {
        panic!()
    };
    assert_eq!(v.rtt_min, Some(Duration::from_millis(80)));
    let bwe = v.bwe.unwrap();
    assert!((990_000..=1_010_000).contains(&bwe), "{bwe}");
    for _ in 0..3 {
        c.on_dupack(at_ms(5001), ack, ack + 200 * MSS);
    }
    // 1 MB/s * 80 ms, not half of 200 segments.
    assert_eq!(c.ssthresh(), bwe * 80 / 1000);
    assert_eq!(c.cwnd(), c.ssthresh());
    // A timeout uses the estimate too, and takes the next RTT sample as the
    // new minimum.
    c.on_timeout(at_ms(6000), ack, ack + 200 * MSS);
    assert_eq!(c.ssthresh(), bwe * 80 / 1000);
    c.on_rtt_sample(Duration::from_millis(150), Duration::from_millis(150));
    let GrowthView::Westwood(v) = c.growth_view() else {
        panic!()
    };
    assert_eq!(v.rtt_min, Some(Duration::from_millis(150)));
}

// ---- CUBIC as ns-2.35's Linux agent runs it (Linux 2.6.22 CUBIC v2.1) ----

/// A `cubic-ns2` sender with `cwnd` and `ssthresh` in packets.
fn cubic_ns2(cwnd: u64, ssthresh: u64) -> Congestion {
    let cfg = CcConfig {
        growth: Growth::CubicNs2,
        ..CcConfig::new(MSS)
    };
    let mut c = Congestion::new(&cfg, Seq(0));
    c.state.cwnd = cwnd * M;
    c.state.ssthresh = ssthresh * M;
    c
}

fn ns2_view(c: &Congestion) -> CubicNs2View {
    let GrowthView::CubicNs2(v) = c.growth_view() else {
        panic!("not cubic-ns2")
    };
    v
}

#[test]
fn cubic_ns2_cube_root_is_within_one_or_one_percent() {
    // The table and one Newton step, in integers: within one of the root
    // for small arguments, and within 1 % from 2^20 up (K's arguments are
    // `2^40 / 410` times a window difference, so above 2^31).
    let mut worst = 0f64;
    let mut a = 0u64;
    while a < 1 << 50 {
        let got = cubic_ns2_root(a) as f64;
        let want = libm::cbrt(a as f64);
        if a < 1 << 20 {
            assert!((got - want).abs() < 1.0, "cbrt({a}): {got} vs {want}");
        } else {
            worst = worst.max((got - want).abs() / want);
        }
        a += a / 7 + 1;
    }
    assert!(worst < 0.01, "worst relative error {worst}");
}

#[test]
fn cubic_ns2_reduces_cwnd_by_819_over_1024_and_converges_fast() {
    let mut c = cubic_ns2(1000, 500);
    // ssthresh comes from cwnd, not FlightSize: floor(1000 * 819 / 1024).
    loss(&mut c, at_ms(0), 600 * MSS);
    assert_eq!(c.ssthresh(), 799 * M);
    let v = ns2_view(&c);
    assert_eq!(
        (v.last_max_cwnd, v.loss_cwnd, v.epoch_start),
        (1000, 1000, 0)
    );
    // Recovery ends with the full ACK; a second loss below the last
    // maximum sets W_max = cwnd * 1843 / 2048.
    let una = Seq(1) + 600 * MSS;
    c.on_new_ack(at_ms(5), una, 600 * MSS);
    assert!(!c.in_recovery());
    // Past the recovery point, so that duplicate ACKs start a new one
    // (RFC 6582).
    let una = una + 100 * MSS;
    c.on_new_ack(at_ms(6), una, 100 * MSS);
    c.state.cwnd = 900 * M;
    for _ in 0..3 {
        c.on_dupack(at_ms(10), una, una + 900 * MSS);
    }
    assert!(c.in_recovery());
    assert_eq!(c.ssthresh(), (900 * 819 / 1024) * M);
    assert_eq!(ns2_view(&c).last_max_cwnd, 900 * 1843 / 2048);
    // A timeout resets the module, as entering TCP_CA_Loss does.
    c.on_timeout(at_ms(20), una, una + 900 * MSS);
    let v = ns2_view(&c);
    assert_eq!((v.last_max_cwnd, v.loss_cwnd, v.delayed_ack), (0, 0, 32));
}

#[test]
fn cubic_ns2_before_any_loss_adds_a_packet_every_26_acks() {
    // cnt is 50 until the first loss, scaled by the packets per ACK:
    // `delayed_ack` starts at 2 * 16 and, with one packet per ACK, the
    // kernel's integer average settles at 31, so cnt = 50 * 16 / 31 = 25
    // and cwnd grows on every 26th ACK.
    let mut c = cubic_ns2(100, 100);
    let mut ack = Seq(1);
    let mut grew_at = Vec::new();
    for i in 1..=26 * 4 {
        ack += MSS;
        let before = c.cwnd();
        c.on_new_ack(at_ms(i), ack, MSS);
        if c.cwnd() > before {
            assert_eq!(c.cwnd(), before + M);
            grew_at.push(i);
        }
    }
    assert_eq!(ns2_view(&c).delayed_ack, 31);
    assert_eq!(ns2_view(&c).cnt, 25);
    assert_eq!(grew_at, [26, 52, 78, 104]);
}

#[test]
fn cubic_ns2_follows_the_cubic_curve_through_k() {
    // W_max 1000 packets, cwnd 799 after the loss:
    // K = cbrt(201 / 0.4) = 7.95 s. With one ACK per packet every 100 ms
    // the module's whole-packet steps (cnt = cwnd / (W(t) - cwnd), scaled
    // by the ACK ratio) keep cwnd on W(t) = 0.4 (t - K)^3 + W_max, just
    // below it, through the concave region, the plateau at K and into the
    // convex region.
    let mut c = cubic_ns2(1000, 1000);
    loss(&mut c, at_ms(0), 1000 * MSS);
    let mut ack = Seq(1) + 1000 * MSS;
    c.on_new_ack(at_ms(100), ack, 1000 * MSS);
    assert_eq!(c.cwnd(), 799 * M);
    let k = libm::cbrt(201.0 / 0.4);
    let rtt = Duration::from_millis(100);
    let mut now = at_ms(200);
    let start = now;
    while now - start < Duration::from_secs(15) {
        round(&mut c, &mut now, &mut ack, rtt);
        let t = (now - start).as_secs_f64();
        let want = 1000.0 + 0.4 * (t - k).powi(3);
        let got = (c.cwnd() / M) as f64;
        assert!(
            got >= want - 10.0 && got <= want + 2.0,
            "t {t:.1} s: cwnd {got} vs W(t) {want:.1}"
        );
    }
    let v = ns2_view(&c);
    assert_eq!(v.origin, 1000);
    assert!(
        (v.k as f64 / 1024.0 - k).abs() < 0.02 * k,
        "K {} vs {k}",
        v.k
    );
}

/// ns-2's slow start opens `cwnd_` by one packet per new ACK, however
/// little it acknowledges; RFC 5681's eq. 2 (bytes) by at most the bytes
/// acknowledged.
#[test]
fn packet_windows_open_a_packet_per_ack_in_slow_start() {
    let with = |unit| {
        let cfg = CcConfig {
            initial_window: 2 * M,
            growth: Growth::Reno { abc: None, unit },
            ..CcConfig::new(MSS)
        };
        let mut c = Congestion::new(&cfg, Seq(0));
        // Four ACKs of a quarter segment each: what an ACK regenerator
        // with R = 4 makes of one segment's ACK.
        for i in 1..=4u32 {
            c.on_new_ack(at_ms(i as u64), Seq(i * MSS / 4), MSS / 4);
        }
        c.cwnd()
    };
    assert_eq!(with(WindowUnit::Packets), 6 * M);
    assert_eq!(with(WindowUnit::Bytes), 3 * M);
}
