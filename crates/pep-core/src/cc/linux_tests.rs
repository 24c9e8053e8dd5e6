//! The kernel's growth (`linux.rs`, `cubic_linux.rs`) against windows
//! worked out by hand from `tcp_cong.c` and `tcp_cubic.c`.

use super::cubic_linux::BETA;
use super::*;

const MSS: u32 = 1000;
const M: u64 = MSS as u64;

fn at_ms(v: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(v)
}

fn kernel(growth: Growth, cwnd: u64, ssthresh: u64) -> Congestion {
    let cfg = CcConfig {
        growth,
        ..CcConfig::new(MSS)
    };
    let mut c = Congestion::new(&cfg, Seq(0));
    c.state.cwnd = cwnd * M;
    c.state.ssthresh = ssthresh.saturating_mul(M);
    c
}

fn cubic_view(c: &Congestion) -> CubicLinuxView {
    let GrowthView::Linux(LinuxView { cubic: Some(v), .. }) = c.growth_view() else {
        panic!("not the kernel's cubic: {:?}", c.growth_view())
    };
    v
}

/// One round of ACKs of two packets each (a delayed-ACK receiver), spread
/// over `rtt` from `*now`.
fn round(c: &mut Congestion, now: &mut Instant, ack: &mut Seq, rtt: Duration) {
    let n = (c.cwnd() / M / 2).max(1);
    let step = Duration(rtt.as_nanos() / n);
    for _ in 0..n {
        *now += step;
        *ack += 2 * MSS;
        c.on_new_ack(*now, *ack, 2 * MSS);
    }
}

#[test]
fn slow_start_opens_by_every_packet_acknowledged() {
    // tcp_slow_start: with an ACK per two packets cwnd doubles per round
    // (RFC 5681's one segment per ACK gives 15 from 10).
    for growth in [Growth::RenoLinux, Growth::CubicLinux] {
        let mut c = kernel(growth, 10, u64::MAX / M);
        let (mut now, mut ack) = (at_ms(0), Seq(0));
        round(&mut c, &mut now, &mut ack, Duration::from_millis(100));
        assert_eq!(c.cwnd(), 20 * M, "{growth:?}");
        round(&mut c, &mut now, &mut ack, Duration::from_millis(100));
        assert_eq!(c.cwnd(), 40 * M, "{growth:?}");
    }
}

#[test]
fn slow_start_stops_at_ssthresh_and_hands_the_rest_to_avoidance() {
    // cwnd 10, ssthresh 11, an ACK of 3 packets: one opens cwnd to 11, two
    // go to tcp_cong_avoid_ai (snd_cwnd_cnt 2 of 11).
    let mut c = kernel(Growth::RenoLinux, 10, 11);
    c.on_new_ack(at_ms(1), Seq(3000), 3000);
    assert_eq!(c.cwnd(), 11 * M);
    let GrowthView::Linux(v) = c.growth_view() else {
        panic!()
    };
    assert_eq!(v.cwnd_cnt, 2);
}

#[test]
fn reno_avoidance_adds_a_packet_per_window_delivered() {
    // tcp_cong_avoid_ai(cwnd): 20 packets in ten ACKs of two open cwnd 20
    // by exactly one packet; ssthresh on a loss is half of cwnd.
    let mut c = kernel(Growth::RenoLinux, 20, 20);
    for i in 1..=9 {
        c.on_new_ack(at_ms(i), Seq(2000 * i as u32), 2000);
    }
    assert_eq!(c.cwnd(), 20 * M);
    c.on_new_ack(at_ms(10), Seq(20_000), 2000);
    assert_eq!(c.cwnd(), 21 * M);
    // tcp_reno_ssthresh uses cwnd (21 >> 1), not FlightSize (30 here).
    for _ in 0..3 {
        c.on_dupack(at_ms(11), Seq(20_000), Seq(50_000));
    }
    assert_eq!(c.ssthresh(), 10 * M);
}

#[test]
fn cubic_cuts_to_717_over_1024_of_cwnd_and_converges_fast() {
    let mut c = kernel(Growth::CubicLinux, 100, 100);
    for _ in 0..3 {
        c.on_dupack(at_ms(1), Seq(1), Seq(1) + 150 * MSS);
    }
    // max(cwnd * 717 / 1024, 2) = 70 (RFC 9438 would take FlightSize: 105).
    assert_eq!(c.ssthresh(), 70 * M);
    assert_eq!(cubic_view(&c).last_max_cwnd, 100);
    assert_eq!(BETA, 717);
    // A second loss below W_max: W_max = 80 * (1024 + 717) / 2048 = 68.
    let mut c = kernel(Growth::CubicLinux, 100, 100);
    for _ in 0..3 {
        c.on_dupack(at_ms(1), Seq(1), Seq(1) + 100 * MSS);
    }
    c.on_new_ack(at_ms(2), Seq(1) + 110 * MSS, 110 * MSS);
    c.state.cwnd = 80 * M;
    for _ in 0..3 {
        c.on_dupack(at_ms(3), Seq(1) + 110 * MSS, Seq(1) + 200 * MSS);
    }
    assert_eq!(cubic_view(&c).last_max_cwnd, 68);
    assert_eq!(c.ssthresh(), 56 * M);
}

#[test]
fn cubic_before_any_loss_grows_at_most_5_percent_per_round() {
    // last_max_cwnd 0: the curve starts at cwnd (K = 0, target = cwnd + a
    // small cube) and cnt is capped at 20: one packet per 20 delivered.
    let mut c = kernel(Growth::CubicLinux, 100, 100);
    c.on_rtt_sample(Duration::from_millis(100), Duration::from_millis(100));
    let (mut now, mut ack) = (at_ms(0), Seq(0));
    round(&mut c, &mut now, &mut ack, Duration::from_millis(100));
    assert_eq!(c.cwnd(), 105 * M);
    assert_eq!(cubic_view(&c).cnt, 20);
}

#[test]
fn cubic_follows_the_integer_curve_through_k() {
    // W_max 1000, cwnd 1000 * 717 / 1024 = 700 after the loss:
    // K = cbrt(300 / 0.4) = 9.09 s.
    // The target is W(t + delay_min), delay_min rounded up to jiffies; at
    // most 1.5x per round and whole packets per cnt delivered, so cwnd
    // runs a little below the curve, never above it by more than a packet.
    let mut c = kernel(Growth::CubicLinux, 1000, 1000);
    let rtt = Duration::from_millis(100);
    c.on_rtt_sample(rtt, rtt);
    for _ in 0..3 {
        c.on_dupack(at_ms(0), Seq(1), Seq(1) + 1000 * MSS);
    }
    let mut ack = Seq(1) + 1000 * MSS;
    c.on_new_ack(at_ms(100), ack, 1000 * MSS);
    assert_eq!(c.cwnd(), 700 * M);
    let k = libm::cbrt(300.0 / 0.4);
    let mut now = at_ms(200);
    let start = now;
    while now - start < Duration::from_secs(14) {
        round(&mut c, &mut now, &mut ack, rtt);
        // `t` counts from the epoch's first jiffy, one jiffy ahead at most.
        let t = (now - start).as_secs_f64() + rtt.as_secs_f64();
        let want = 1000.0 + 0.4 * (t - k).powi(3);
        let got = (c.cwnd() / M) as f64;
        assert!(
            got >= want - 12.0 && got <= want + 1.0,
            "t {t:.1} s: cwnd {got} vs W(t + delay_min) {want:.1}"
        );
    }
    let v = cubic_view(&c);
    assert_eq!((v.origin, v.delay_min), (1000, 100_000));
    assert!(
        (v.k as f64 / 1024.0 - k).abs() < 0.01 * k,
        "K {} vs {k}",
        v.k
    );
}

#[test]
fn cubic_reno_friendly_estimate_lifts_a_short_path() {
    // W_max 20, cwnd 14 on a 10 ms path: K = cbrt(6 / 0.4) = 2.47 s, the
    // curve all but flat for seconds; the Reno estimate (one packet per
    // 14 * 15 / 8 = 26 delivered) sets cnt = cwnd / (tcp_cwnd - cwnd).
    let mut c = kernel(Growth::CubicLinux, 20, 20);
    let rtt = Duration::from_millis(10);
    c.on_rtt_sample(rtt, rtt);
    for _ in 0..3 {
        c.on_dupack(at_ms(0), Seq(1), Seq(1) + 20 * MSS);
    }
    let mut ack = Seq(1) + 20 * MSS;
    c.on_new_ack(at_ms(10), ack, 20 * MSS);
    assert_eq!(c.cwnd(), 14 * M);
    let mut now = at_ms(20);
    for _ in 0..100 {
        round(&mut c, &mut now, &mut ack, rtt);
    }
    // One second: the curve alone gives W(1.01) = 20 - 0.4 * 1.46^3 = 18.7;
    // the Reno estimate about 14 + 100 * 0.5 = 64 rounds' worth, far
    // beyond. cwnd follows the estimate, not the curve.
    let v = cubic_view(&c);
    assert!(v.tcp_cwnd > 30, "{v:?}");
    assert!(c.cwnd() / M + 2 >= v.tcp_cwnd as u64, "{} {v:?}", c.cwnd());
}

#[test]
fn cubic_timeout_resets_the_module() {
    let mut c = kernel(Growth::CubicLinux, 100, 100);
    c.on_rtt_sample(Duration::from_millis(80), Duration::from_millis(80));
    c.on_timeout(at_ms(1000), Seq(1), Seq(1) + 100 * MSS);
    assert_eq!(c.ssthresh(), 70 * M);
    let v = cubic_view(&c);
    assert_eq!((v.last_max_cwnd, v.delay_min, v.epoch_start), (0, 0, None));
}

#[test]
fn a_timeout_in_recovery_keeps_the_recoverys_ssthresh() {
    // tcp_enter_loss cuts ssthresh only "if it has not yet been made
    // inside this window": Reno at cwnd 100 enters recovery (ssthresh 50);
    // the timer then fires before SND.UNA reaches the recovery point, and
    // ssthresh stays 50 (not half of the reduced cwnd, not half of the
    // 100 packets still outstanding). A later timeout, after recovery,
    // cuts again.
    let mut c = kernel(Growth::RenoLinux, 100, u64::MAX / M);
    let (una, max) = (Seq(1), Seq(1) + 100 * MSS);
    for _ in 0..3 {
        c.on_dupack(at_ms(0), una, max);
    }
    assert!(c.in_recovery());
    assert_eq!(c.ssthresh(), 50 * M);
    c.on_new_ack(at_ms(10), una + 10 * MSS, 10 * MSS); // partial: recovery goes on
    c.on_timeout(at_ms(1000), una + 10 * MSS, max);
    assert_eq!(c.ssthresh(), 50 * M);
    assert_eq!(c.cwnd(), M);
    // Outside recovery the cut is the module's, from cwnd.
    let mut c = kernel(Growth::RenoLinux, 100, u64::MAX / M);
    c.on_timeout(at_ms(1000), una, max);
    assert_eq!(c.ssthresh(), 50 * M);
    let mut c = kernel(Growth::RenoLinux, 30, 40);
    c.on_timeout(at_ms(1000), una, max);
    assert_eq!(c.ssthresh(), 15 * M);
}
