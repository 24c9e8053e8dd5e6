//! BBR's pieces against hand-computed values: the windowed max filter
//! (Linux `lib/win_minmax.c`), the delivery-rate sampler (`tcp_rate.c`)
//! and the model's constants and mode changes (`tcp_bbr.c`).

use super::bbr::{AckInfo, Bbr, CaState, MaxFilter, Mode, HIGH_GAIN, UNIT};
use super::rate_sample::{RateSample, RateSampler};
use crate::seq::Seq;
use crate::time::{Duration, Instant};

fn ms(x: u64) -> Instant {
    Instant::from_nanos(x * 1_000_000)
}

#[test]
fn gains_are_the_kernels_fixed_point_values() {
    // 2/ln 2 = 2.885: 256 * 2885 / 1000 + 1 = 739; drain 1000*256/2885 = 88.
    assert_eq!(HIGH_GAIN, 739);
    assert_eq!(super::bbr::DRAIN_GAIN, 88);
    assert_eq!(super::bbr::CWND_GAIN, 512);
    assert_eq!(
        super::bbr::PACING_GAIN,
        [320, 192, 256, 256, 256, 256, 256, 256]
    );
}

#[test]
fn max_filter_keeps_the_max_of_the_window() {
    // Traced by hand through win_minmax.c's rules, window 10 rounds.
    let mut f = MaxFilter::default();
    f.reset(0, 0);
    // A new max replaces all three choices: [(1,100)] x 3.
    assert_eq!(f.update(10, 1, 100), 100);
    // 80 at round 2: within the first quarter (dt 1 <= 10/4), not kept.
    assert_eq!(f.update(10, 2, 80), 100);
    // 60 at round 4: a quarter passed (dt 3 > 2), so it becomes the 2nd
    // and 3rd choice: [(1,100), (4,60), (4,60)].
    assert_eq!(f.update(10, 4, 60), 100);
    // Round 12: the max is 11 rounds old (> 10): the 2nd choice takes
    // over, the new sample is 3rd: [(4,60), (4,60), (12,50)].
    assert_eq!(f.update(10, 12, 50), 60);
    // Round 13: 40 replaces the 2nd and 3rd (quarter rule, dt 9 > 2).
    assert_eq!(f.update(10, 13, 40), 60);
    // Round 15: 60 (round 4) is 11 old; 55 is the true max of rounds
    // 5..=15 (50, 40, 55).
    assert_eq!(f.update(10, 15, 55), 55);
    // Nothing left in the window: reset to the new sample.
    assert_eq!(f.update(10, 40, 7), 7);
}

#[test]
fn max_filter_matches_a_brute_force_max_on_a_decreasing_series() {
    // On a monotonically decreasing series the three choices are spread
    // over the window; the filter's answer is never above the true
    // windowed max and never below the oldest in-window choice.
    let mut f = MaxFilter::default();
    f.reset(0, 1000);
    for t in 1..100u64 {
        let v = 1000 - t * 10;
        let got = f.update(10, t, v);
        let true_max = 1000 - t.saturating_sub(10) * 10;
        assert!(got <= true_max, "t {t}: {got} > {true_max}");
        assert!(got >= v, "t {t}: {got} < {v}");
    }
}

/// A sender of 1000-byte segments: `n` sent back to back at `t0`.
fn send_burst(r: &mut RateSampler, t0: Instant, first: u32, n: u32) {
    for i in first..first + n {
        r.on_sent(t0, Seq(i * 1000), Seq((i + 1) * 1000), false);
    }
}

#[test]
fn rate_sample_is_delivered_over_the_longer_phase() {
    let mut r = RateSampler::new();
    // Ten segments at t=0; ACKs every 10 ms from t=100 ms.
    send_burst(&mut r, ms(0), 0, 10);
    let rs = r.on_ack(ms(100), Seq(1000), &[], 10_000);
    // First ACK: prior_delivered 0 at delivered_time 0; send phase 0, ACK
    // phase 100 ms; 1000 B in 100 ms = 10 kB/s; RTT 100 ms.
    assert_eq!(rs.prior_delivered, Some(0));
    assert_eq!(rs.delivered, 1000);
    assert_eq!(rs.interval, Some(Duration::from_millis(100)));
    assert_eq!(rs.rtt, Some(Duration::from_millis(100)));
    assert_eq!(rs.rate(), Some(10_000));
    // A new segment sent now snapshots delivered = 1000 at 100 ms.
    r.on_sent(ms(100), Seq(10_000), Seq(11_000), false);
    // ACK of segments 2..=5 at 110 ms: their snapshot is delivered 0 at 0:
    // 5000 B over 110 ms.
    let rs = r.on_ack(ms(110), Seq(5000), &[], 9000);
    assert_eq!(rs.delivered, 5000);
    assert_eq!(rs.interval, Some(Duration::from_millis(110)));
    assert_eq!(rs.acked_sacked, 4000);
    // SACK of the segment sent at 100 ms, at 200 ms: its snapshot is
    // delivered 1000 at 100 ms; delivered now 5000 + 1000 = 6000, so 5000 B
    // over the ACK phase 200 - 100 = 100 ms (send phase 100 - 100 = 0...
    // the send phase starts at first_sent_time, which the ACK at 110 ms set
    // to the send time of segment 5, 0 ms, so the phase is 100 ms too).
    let rs = r.on_ack(ms(200), Seq(5000), &[(Seq(10_000), Seq(11_000))], 6000);
    assert_eq!(rs.prior_delivered, Some(1000));
    assert_eq!(rs.delivered, 5000);
    assert_eq!(rs.interval, Some(Duration::from_millis(100)));
    assert_eq!(rs.rate(), Some(50_000));
    assert_eq!(rs.rtt, Some(Duration::from_millis(100)));
    // The SACKed segment is not delivered again by the cumulative ACK.
    let rs = r.on_ack(ms(210), Seq(11_000), &[], 5000);
    assert_eq!(rs.acked_sacked, 5000);
    assert_eq!(r.delivered(), 11_000);
    assert_eq!(r.records_in_flight(), 0);
}

#[test]
fn a_sample_shorter_than_min_rtt_is_invalid() {
    let mut r = RateSampler::new();
    // The handshake measured 200 ms.
    r.on_rtt(Duration::from_millis(200));
    send_burst(&mut r, ms(0), 0, 1);
    // A resend at 50 ms, ACKed at 100 ms: no RTT sample (Karn), and the
    // interval, max(send phase 50 ms, ACK phase 100 ms), is below min_rtt.
    r.on_sent(ms(50), Seq(0), Seq(1000), true);
    let rs = r.on_ack(ms(100), Seq(1000), &[], 1000);
    assert_eq!(rs.rtt, None);
    assert_eq!(rs.prior_delivered, Some(0));
    assert_eq!(rs.interval, None);
    assert_eq!(rs.rate(), None);
    assert_eq!(rs.acked_sacked, 1000);
}

#[test]
fn app_limited_marks_samples_until_the_bubble_is_acked() {
    let mut r = RateSampler::new();
    send_burst(&mut r, ms(0), 0, 2);
    // Nothing more to send with 2000 B in flight: app-limited until
    // delivered passes 0 + 2000.
    r.check_app_limited(2000, false, false);
    assert!(r.is_app_limited());
    r.on_sent(ms(10), Seq(2000), Seq(3000), false);
    let rs = r.on_ack(ms(100), Seq(2000), &[], 3000);
    // The newest delivered segment was sent before the mark.
    assert!(!rs.is_app_limited);
    assert!(r.is_app_limited(), "delivered 2000 is not past 2000");
    let rs = r.on_ack(ms(110), Seq(3000), &[], 1000);
    assert!(rs.is_app_limited, "segment 3 was sent app-limited");
    assert!(!r.is_app_limited(), "delivered 3000 > 2000 ends the period");
    // cwnd-limited or lost data waiting: no mark.
    r.check_app_limited(1000, true, false);
    r.check_app_limited(1000, false, true);
    assert!(!r.is_app_limited());
}

#[test]
fn a_retransmission_takes_a_fresh_snapshot_and_gives_no_rtt() {
    let mut r = RateSampler::new();
    send_burst(&mut r, ms(0), 0, 3);
    let _ = r.on_ack(ms(100), Seq(0), &[(Seq(1000), Seq(3000))], 3000);
    r.on_lost(1000);
    r.on_sent(ms(120), Seq(0), Seq(1000), true);
    let rs = r.on_ack(ms(220), Seq(3000), &[], 1000);
    assert_eq!(rs.rtt, None, "Karn");
    assert!(rs.is_retrans);
    assert_eq!(rs.prior_delivered, Some(2000));
    assert_eq!(rs.losses, 1000);
    assert_eq!(r.lost(), 1000);
}

fn info(now: Instant, r: &RateSampler, inflight: u64) -> AckInfo {
    AckInfo {
        now,
        delivered: r.delivered(),
        delivered_time: r.delivered_time(),
        lost: r.lost(),
        inflight,
        ca_state: CaState::Open,
        srtt: Some(Duration::from_millis(100)),
        next_send: now,
    }
}

#[test]
fn an_rto_cuts_cwnd_to_one_segment_and_recovery_restores_it() {
    let mut b = Bbr::new(1000, 10_000, 1);
    b.save_cwnd();
    b.on_rto(0, ms(0), 0);
    assert_eq!(b.cwnd(), 1000);
    // Back to Open: cwnd restored to at least the saved 10 segments.
    let r = RateSampler::new();
    let rs = RateSample {
        acked_sacked: 1000,
        ..RateSample::default()
    };
    let mut a = info(ms(10), &r, 0);
    a.ca_state = CaState::Open;
    b.on_ack(&rs, &a);
    assert!(b.cwnd() >= 10_000, "{}", b.cwnd());
}

/// Feeds `b` one ACK per ms from `from` to `to` ms: 1000 B delivered each,
/// a 1 MB/s sample over 100 ms, RTT `rtt` ms, `inflight` bytes after it.
/// Each ACK's packet was sent one round (100 ACKs) earlier.
fn feed(b: &mut Bbr, delivered: &mut u64, from: u64, to: u64, rtt: u64, inflight: u64) {
    for t in from..to {
        *delivered += 1000;
        let rs = RateSample {
            prior_delivered: Some(delivered.saturating_sub(100_000)),
            delivered: 100_000,
            interval: Some(Duration::from_millis(100)),
            rtt: Some(Duration::from_millis(rtt)),
            acked_sacked: 1000,
            prior_in_flight: inflight,
            ..RateSample::default()
        };
        let a = AckInfo {
            now: ms(t),
            delivered: *delivered,
            delivered_time: ms(t),
            lost: 0,
            inflight,
            ca_state: CaState::Open,
            srtt: Some(Duration::from_millis(rtt)),
            next_send: ms(t),
        };
        b.on_ack(&rs, &a);
    }
}

#[test]
fn probe_rtt_after_ten_seconds_caps_cwnd_at_four_and_restores_it() {
    let mut b = Bbr::new(1000, 10_000, 3);
    let mut d = 0;
    // 100 ms min RTT at the start, then 120 ms: the filter is not refreshed.
    feed(&mut b, &mut d, 1, 200, 100, 100_000);
    feed(&mut b, &mut d, 200, 3_000, 120, 100_000);
    assert_eq!(b.mode(), Mode::ProbeBw, "{:?}", b.view());
    assert_eq!(b.view().bw, 1_000_000);
    let before = b.cwnd();
    // BDP 100 kB x cwnd_gain 2, plus the quantisation budget.
    assert!(before >= 200_000, "{before}");
    feed(&mut b, &mut d, 3_000, 10_199, 120, 100_000);
    assert_eq!(b.mode(), Mode::ProbeBw, "the filter lasts 10 s");
    // 10 s after the last 100 ms sample (at 199 ms): PROBE_RTT, 4 packets.
    feed(&mut b, &mut d, 10_199, 10_300, 120, 100_000);
    assert_eq!(b.mode(), Mode::ProbeRtt);
    assert_eq!(b.cwnd(), 4_000);
    assert_eq!(b.view().pacing_gain, UNIT);
    // In-flight falls to 4 packets at 10.3 s: 200 ms and a round later it
    // ends, the saved cwnd comes back.
    feed(&mut b, &mut d, 10_300, 10_500, 100, 4_000);
    assert_eq!(b.mode(), Mode::ProbeRtt, "before 200 ms have passed");
    feed(&mut b, &mut d, 10_500, 10_620, 100, 4_000);
    assert_eq!(b.mode(), Mode::ProbeBw);
    // Restored (less the 2 packets of the probing phase's budget, if the
    // cycle is elsewhere now).
    assert!(b.cwnd() + 2_000 >= before, "{} < {before}", b.cwnd());
}

#[test]
fn two_lossy_intervals_at_one_rate_are_taken_for_a_policer() {
    let mut b = Bbr::new(1000, 10_000, 5);
    let mut d = 0;
    feed(&mut b, &mut d, 1, 3_000, 100, 100_000);
    assert_eq!(b.mode(), Mode::ProbeBw);
    assert!(!b.view().lt_use_bw);
    // From 3 s: one ACK in four reports a lost segment (25 % > 20 %), all
    // at 1000 B per ms. Each long-term interval lasts 4 rounds (400 ms)
    // and ends at a loss; the second agrees with the first: policed.
    let mut lost = 0;
    for t in 3_000..4_000u64 {
        d += 1000;
        let loss = if t % 4 == 0 { 1000 } else { 0 };
        lost += loss;
        let rs = RateSample {
            prior_delivered: Some(d - 100_000),
            delivered: 100_000,
            interval: Some(Duration::from_millis(100)),
            rtt: Some(Duration::from_millis(100)),
            acked_sacked: 1000,
            losses: loss,
            prior_in_flight: 100_000,
            ..RateSample::default()
        };
        let a = AckInfo {
            now: ms(t),
            delivered: d,
            delivered_time: ms(t),
            lost,
            inflight: 100_000,
            ca_state: CaState::Open,
            srtt: Some(Duration::from_millis(100)),
            next_send: ms(t),
        };
        b.on_ack(&rs, &a);
    }
    let v = b.view();
    assert!(v.lt_use_bw, "{v:?}");
    // The policed rate: 1000 B per ms.
    assert_eq!(v.bw, 1_000_000);
    assert_eq!(v.pacing_gain, UNIT, "no probing above a policer");
    // 48 rounds later it probes again.
    feed(&mut b, &mut d, 4_000, 9_000, 100, 100_000);
    assert!(!b.view().lt_use_bw, "{:?}", b.view());
}

proptest::proptest! {
    /// Whatever order ACKs and SACKs arrive in, each byte is delivered
    /// once: the sampler's count is the bytes below SND.UNA plus those
    /// SACKed above it, and a cumulative ACK over SACKed data adds nothing.
    #[test]
    fn every_byte_is_delivered_once(
        ops in proptest::collection::vec((0u32..40, 0u32..40, 0u32..4), 1..60)
    ) {
        let mut r = RateSampler::new();
        send_burst(&mut r, ms(0), 0, 40);
        let mut una = 0u32; // segments
        let mut sacked = [false; 40];
        for (i, &(a, b, kind)) in ops.iter().enumerate() {
            let now = ms(100 + i as u64);
            if kind == 0 {
                una = una.max(a.min(40));
                let _ = r.on_ack(now, Seq(una * 1000), &[], 0);
            } else {
                let (lo, hi) = (a.min(b), a.max(b) + 1);
                let hi = hi.min(40);
                for s in sacked.iter_mut().take(hi as usize).skip(lo as usize) {
                    *s = true;
                }
                let block = [(Seq(lo * 1000), Seq(hi * 1000))];
                let _ = r.on_ack(now, Seq(una * 1000), &block, 0);
            }
            let want = (0..40u32)
                .filter(|&s| s < una || sacked[s as usize])
                .count() as u64
                * 1000;
            proptest::prop_assert_eq!(r.delivered(), want);
        }
    }
}
