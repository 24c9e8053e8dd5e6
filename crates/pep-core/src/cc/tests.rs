//! Unit tests of the two axes against hand-computed windows.

use super::*;
use crate::time::Instant;

const MSS: u32 = 1000;
/// Time does not matter to Reno-style growth and recovery.
const T: Instant = Instant::ZERO;
const M: u64 = MSS as u64;

fn cc(recovery: Recovery, growth: Growth) -> Congestion {
    let cfg = CcConfig {
        growth,
        recovery,
        ..CcConfig::new(MSS)
    };
    Congestion::new(&cfg, Seq(0))
}

fn reno_growth() -> Growth {
    Growth::default()
}

/// A controller in congestion avoidance at `cwnd` bytes.
fn in_ca(recovery: Recovery, growth: Growth, cwnd: u64) -> Congestion {
    let mut c = cc(recovery, growth);
    c.state.cwnd = cwnd;
    c.state.ssthresh = cwnd;
    c
}

#[test]
fn defaults_follow_the_rfcs() {
    let c = cc(Recovery::default(), Growth::default());
    assert_eq!(c.cwnd(), 10 * M); // RFC 6928
    assert_eq!(c.ssthresh(), u64::MAX);
    assert_eq!(c.recovery(), Recovery::NewReno);
    assert_eq!(c.growth(), Growth::default());
    assert_eq!(c.state().recover, Seq(0));
}

#[test]
fn slow_start_adds_at_most_one_smss_per_ack() {
    let mut c = cc(Recovery::NewReno, reno_growth());
    c.on_new_ack(T, Seq(1001), 1000);
    assert_eq!(c.cwnd(), 11 * M);
    // A stretch ACK of two segments still opens by one SMSS (eq. 2).
    c.on_new_ack(T, Seq(3001), 2000);
    assert_eq!(c.cwnd(), 12 * M);
    // A small ACK opens by what it acknowledged.
    c.on_new_ack(T, Seq(3101), 100);
    assert_eq!(c.cwnd(), 12 * M + 100);
}

#[test]
fn abc_slow_start_counts_bytes_up_to_l_segments() {
    let mut c = cc(
        Recovery::NewReno,
        Growth::Reno {
            abc: Some(2),
            unit: Default::default(),
        },
    );
    c.on_new_ack(T, Seq(2001), 2000);
    assert_eq!(c.cwnd(), 12 * M);
    c.on_new_ack(T, Seq(5001), 3000); // capped at L*SMSS
    assert_eq!(c.cwnd(), 14 * M);
}

#[test]
fn congestion_avoidance_eq3_per_ack() {
    let mut c = in_ca(Recovery::NewReno, reno_growth(), 10 * M);
    c.on_new_ack(T, Seq(1001), 1000);
    // 1000*1000/10000 = 100 bytes.
    assert_eq!(c.cwnd(), 10_100);
    c.on_new_ack(T, Seq(2001), 1000);
    // 1000000/10100 = 99.
    assert_eq!(c.cwnd(), 10_199);
}

#[test]
fn congestion_avoidance_opens_about_one_smss_per_window_of_acks() {
    let mut c = in_ca(Recovery::NewReno, reno_growth(), 10 * M);
    for i in 1..=10u32 {
        c.on_new_ack(T, Seq(1 + i * MSS), MSS);
    }
    // Sum of SMSS^2/cwnd over ten ACKs: a little under one SMSS.
    assert!(c.cwnd() > 10 * M + 900 && c.cwnd() < 11 * M, "{}", c.cwnd());
}

#[test]
fn congestion_avoidance_rounds_a_zero_increment_up_to_one_byte() {
    let mut c = in_ca(Recovery::NewReno, reno_growth(), 2_000_000);
    c.on_new_ack(T, Seq(1001), 1000); // 1e6 / 2e6 = 0 -> 1
    assert_eq!(c.cwnd(), 2_000_001);
}

#[test]
fn abc_congestion_avoidance_adds_one_smss_per_cwnd_acked() {
    let mut c = in_ca(
        Recovery::NewReno,
        Growth::Reno {
            abc: Some(2),
            unit: Default::default(),
        },
        4 * M,
    );
    for i in 1..=3u32 {
        c.on_new_ack(T, Seq(1 + i * MSS), MSS);
        assert_eq!(c.cwnd(), 4 * M);
    }
    c.on_new_ack(T, Seq(1 + 4 * MSS), MSS);
    assert_eq!(c.cwnd(), 5 * M);
    // The remainder restarts from zero: 5 more segments for the next SMSS.
    for i in 5..=8u32 {
        c.on_new_ack(T, Seq(1 + i * MSS), MSS);
    }
    assert_eq!(c.cwnd(), 5 * M);
    c.on_new_ack(T, Seq(1 + 9 * MSS), MSS);
    assert_eq!(c.cwnd(), 6 * M);
}

/// Three duplicate ACKs at SND.UNA = 1001 with 20 segments outstanding.
fn enter_recovery(c: &mut Congestion) -> Vec<Option<LossAction>> {
    let (una, max) = (Seq(1001), Seq(20_001));
    (0..3).map(|_| c.on_dupack(T, una, max)).collect()
}

#[test]
fn third_dupack_fast_retransmits_once_and_inflates() {
    for kind in [Recovery::Reno, Recovery::NewReno] {
        let mut c = cc(kind, reno_growth());
        let acts = enter_recovery(&mut c);
        assert_eq!(
            acts,
            [
                None,
                None,
                Some(LossAction::FastRetransmit { go_back_n: false })
            ]
        );
        // FlightSize = 19000 -> ssthresh 9500; cwnd = ssthresh + 3*SMSS.
        assert_eq!(c.ssthresh(), 9500);
        assert_eq!(c.cwnd(), 9500);
        assert_eq!(c.window(), 12_500);
        assert!(c.in_recovery());
        assert_eq!(c.state().recover, Seq(20_001));
        // Further duplicates inflate and never retransmit again.
        for k in 1..=5u64 {
            assert_eq!(c.on_dupack(T, Seq(1001), Seq(20_001)), None);
            assert_eq!(c.window(), 12_500 + k * M);
        }
    }
}

#[test]
fn ssthresh_is_at_least_two_segments() {
    let mut c = cc(Recovery::NewReno, reno_growth());
    for _ in 0..3 {
        c.on_dupack(T, Seq(1001), Seq(3001));
    }
    assert_eq!(c.ssthresh(), 2 * M);
}

#[test]
fn reno_exits_on_the_first_new_ack_even_if_partial() {
    let mut c = cc(Recovery::Reno, reno_growth());
    enter_recovery(&mut c);
    c.on_dupack(T, Seq(1001), Seq(20_001));
    assert_eq!(c.on_new_ack(T, Seq(3001), 2000), None);
    assert!(!c.in_recovery());
    assert_eq!(c.cwnd(), 9500);
    assert_eq!(c.window(), 9500);
    // The remaining duplicates cannot start a second fast retransmit: their
    // ACK number does not cover more than recover.
    for _ in 0..5 {
        assert_eq!(c.on_dupack(T, Seq(3001), Seq(20_001)), None);
    }
    assert_eq!(c.ssthresh(), 9500);
}

#[test]
fn newreno_partial_acks_retransmit_and_deflate() {
    let mut c = cc(Recovery::NewReno, reno_growth());
    enter_recovery(&mut c);
    for _ in 0..4 {
        c.on_dupack(T, Seq(1001), Seq(20_001));
    }
    assert_eq!(c.window(), 16_500);
    // Partial ACK of 2000 bytes: 16500 - 2000 + 1000 = 15500.
    let a = c.on_new_ack(T, Seq(3001), 2000);
    assert_eq!(
        a,
        Some(LossAction::PartialAckRetransmit {
            restart_timer: true
        })
    );
    assert!(c.in_recovery());
    assert_eq!(c.cwnd(), 9500);
    assert_eq!(c.window(), 15_500);
    // Second partial ACK, less than one SMSS: no add-back, no timer reset.
    let a = c.on_new_ack(T, Seq(3501), 500);
    assert_eq!(
        a,
        Some(LossAction::PartialAckRetransmit {
            restart_timer: false
        })
    );
    assert_eq!(c.window(), 15_000);
    // A partial ACK larger than the inflation shrinks cwnd itself.
    let a = c.on_new_ack(T, Seq(14_001), 10_500);
    assert!(matches!(a, Some(LossAction::PartialAckRetransmit { .. })));
    assert_eq!(c.window(), 15_000 - 10_500 + 1000);
    assert_eq!(c.cwnd(), 5500);
    // Full ACK: cwnd = ssthresh, recovery over, no growth on this ACK.
    assert_eq!(c.on_new_ack(T, Seq(20_001), 6000), None);
    assert!(!c.in_recovery());
    assert_eq!(c.cwnd(), 9500);
    assert_eq!(c.window(), 9500);
    // Next ACK grows in congestion avoidance (cwnd == ssthresh).
    c.on_new_ack(T, Seq(21_001), 1000);
    assert_eq!(c.cwnd(), 9500 + 1_000_000 / 9500);
}

#[test]
fn recover_guard_needs_an_ack_beyond_recover() {
    let mut c = cc(Recovery::NewReno, reno_growth());
    enter_recovery(&mut c);
    c.on_new_ack(T, Seq(20_001), 19_000);
    // New data sent up to 30001; the first new segment (at recover) is lost:
    // ACK number == recover does not "cover more than recover".
    for _ in 0..3 {
        assert_eq!(c.on_dupack(T, Seq(20_001), Seq(30_001)), None);
    }
    assert!(!c.in_recovery());
    // A later loss, ACK number > recover: fast retransmit again.
    c.on_new_ack(T, Seq(21_001), 1000);
    let acts: Vec<_> = (0..3)
        .map(|_| c.on_dupack(T, Seq(21_001), Seq(30_001)))
        .collect();
    assert_eq!(
        acts[2],
        Some(LossAction::FastRetransmit { go_back_n: false })
    );
    assert_eq!(c.state().recover, Seq(30_001));
}

#[test]
fn dupacks_are_counted_afresh_after_new_data() {
    let mut c = cc(Recovery::NewReno, reno_growth());
    c.on_dupack(T, Seq(1001), Seq(20_001));
    c.on_dupack(T, Seq(1001), Seq(20_001));
    c.on_new_ack(T, Seq(2001), 1000);
    assert_eq!(c.on_dupack(T, Seq(2001), Seq(20_001)), None);
    assert_eq!(c.on_dupack(T, Seq(2001), Seq(20_001)), None);
    assert!(c.on_dupack(T, Seq(2001), Seq(20_001)).is_some());
}

#[test]
fn tahoe_fast_retransmit_goes_back_n_from_one_segment() {
    let mut c = cc(Recovery::Tahoe, reno_growth());
    let acts = enter_recovery(&mut c);
    assert_eq!(
        acts[2],
        Some(LossAction::FastRetransmit { go_back_n: true })
    );
    assert!(!c.in_recovery());
    assert_eq!(c.cwnd(), M);
    assert_eq!(c.ssthresh(), 9500);
    // Further duplicates do nothing; new ACKs slow-start.
    assert_eq!(c.on_dupack(T, Seq(1001), Seq(20_001)), None);
    assert_eq!(c.window(), M);
    c.on_new_ack(T, Seq(2001), 1000);
    assert_eq!(c.cwnd(), 2 * M);
}

#[test]
fn timeout_collapses_to_loss_window_and_exits_recovery() {
    let mut c = cc(Recovery::NewReno, reno_growth());
    enter_recovery(&mut c);
    c.on_new_ack(T, Seq(3001), 2000);
    c.on_timeout(T, Seq(3001), Seq(25_001));
    // FlightSize 22000 -> 11000.
    assert_eq!(c.ssthresh(), 11_000);
    assert_eq!(c.cwnd(), M);
    assert_eq!(c.window(), M);
    assert!(!c.in_recovery());
    assert_eq!(c.state().recover, Seq(25_001));
    // A second timeout for the same segment holds ssthresh.
    c.on_timeout(T, Seq(3001), Seq(25_001));
    assert_eq!(c.ssthresh(), 11_000);
    // Once SND.UNA advances, the next timeout halves again.
    c.on_new_ack(T, Seq(4001), 1000);
    assert_eq!(c.cwnd(), 2 * M); // slow start
    c.on_timeout(T, Seq(4001), Seq(10_001));
    assert_eq!(c.ssthresh(), 3000);
    // Duplicates from the go-back-N resend cannot trigger fast retransmit.
    for _ in 0..3 {
        assert_eq!(c.on_dupack(T, Seq(5001), Seq(10_001)), None);
    }
}

#[test]
fn recover_compares_across_sequence_wrap() {
    let isn = Seq(u32::MAX - 500);
    let mut c = Congestion::new(&CcConfig::new(MSS), isn);
    let una = isn + 1;
    let max = una + 10 * MSS; // wraps past zero
    let acts: Vec<_> = (0..3).map(|_| c.on_dupack(T, una, max)).collect();
    assert_eq!(
        acts[2],
        Some(LossAction::FastRetransmit { go_back_n: false })
    );
    assert_eq!(c.ssthresh(), 5000);
    assert!(c.on_new_ack(T, una + 2 * MSS, 2 * MSS).is_some()); // partial
    assert_eq!(c.on_new_ack(T, max, 8 * MSS), None); // full
    assert!(!c.in_recovery());
}
