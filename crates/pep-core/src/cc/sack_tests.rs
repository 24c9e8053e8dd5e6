//! The SACK scoreboard (Update, IsLost, SetPipe, NextSeg) and RFC 6675
//! recovery through `Congestion`, against hand-computed values. MSS 1000,
//! offsets from sequence number 0 for readable arithmetic.

use super::*;

const MSS: u32 = 1000;
const T: Instant = Instant::ZERO;

fn s(v: u32) -> Seq {
    Seq(v)
}

/// Blocks from offsets.
fn blocks(b: &[(u32, u32)]) -> Vec<(Seq, Seq)> {
    b.iter().map(|&(l, r)| (s(l), s(r))).collect()
}

fn board(una: u32, max: u32, b: &[(u32, u32)]) -> Scoreboard {
    let mut sb = Scoreboard::new();
    sb.update(s(una), s(max), &blocks(b));
    sb
}

fn ranges(sb: &Scoreboard) -> Vec<(u32, u32)> {
    sb.ranges().iter().map(|r| (r.0 .0, r.1 .0)).collect()
}

#[test]
fn update_merges_overlapping_and_adjacent_blocks() {
    let mut sb = Scoreboard::new();
    assert!(sb.update(s(0), s(20_000), &blocks(&[(5000, 6000)])));
    assert!(sb.update(s(0), s(20_000), &blocks(&[(2000, 3000), (8000, 9000)])));
    assert_eq!(ranges(&sb), [(2000, 3000), (5000, 6000), (8000, 9000)]);
    // Adjacent on both sides: three ranges become one.
    assert!(sb.update(s(0), s(20_000), &blocks(&[(3000, 5000), (6000, 8000)])));
    assert_eq!(ranges(&sb), [(2000, 9000)]);
    // Nothing new: not a duplicate ACK in RFC 6675's sense.
    assert!(!sb.update(s(0), s(20_000), &blocks(&[(2500, 9000), (2000, 3000)])));
    // Partly new (extends the range).
    assert!(sb.update(s(0), s(20_000), &blocks(&[(8000, 10_000)])));
    assert_eq!(ranges(&sb), [(2000, 10_000)]);
    assert_eq!(sb.sacked_bytes(), 8000);
}

#[test]
fn update_clips_to_the_window_and_prunes_below_una() {
    let mut sb = Scoreboard::new();
    // Below SND.UNA and beyond SND.MAX are ignored (D-SACK, bogus blocks).
    assert!(!sb.update(s(1000), s(9000), &blocks(&[(0, 1000), (9000, 12_000)])));
    assert!(sb.update(s(1000), s(9000), &blocks(&[(500, 2000), (8000, 10_000)])));
    assert_eq!(ranges(&sb), [(1000, 2000), (8000, 9000)]);
    // A cumulative ACK drops covered ranges and trims a straddling one.
    sb.update(s(2000), s(9000), &[]);
    assert_eq!(ranges(&sb), [(8000, 9000)]);
    sb.update(s(8500), s(9000), &[]);
    assert_eq!(ranges(&sb), [(8500, 9000)]);
    sb.update(s(9000), s(9000), &[]);
    assert!(sb.ranges().is_empty());
}

#[test]
fn update_works_across_sequence_wrap() {
    let una = u32::MAX - 2500;
    let mut sb = Scoreboard::new();
    let b = [
        (Seq(una) + 1000, Seq(una) + 2000),
        (Seq(una) + 3000, Seq(una) + 4000),
    ];
    assert!(sb.update(Seq(una), Seq(una) + 10_000, &b));
    assert_eq!(sb.ranges(), b);
    assert!(sb.update(Seq(una), Seq(una) + 10_000, &[(b[0].1, b[1].0)]));
    assert_eq!(sb.ranges(), [(b[0].0, b[1].1)]);
    assert_eq!(sb.sacked_bytes(), 3000);
}

#[test]
fn a_full_scoreboard_keeps_the_lowest_ranges() {
    let mut sb = Scoreboard::new();
    let n = SCOREBOARD_RANGES as u32;
    let max = s(10_000 * (n + 10));
    for i in 0..n {
        let l = 10_000 * (i + 1);
        sb.update(s(0), max, &[(s(l), s(l + 1000))]);
    }
    assert_eq!(sb.ranges().len(), SCOREBOARD_RANGES);
    // Higher than everything kept: forgotten, and not "new information".
    let top = 10_000 * (n + 2);
    assert!(!sb.update(s(0), max, &[(s(top), s(top + 1000))]));
    // Lower: kept, and the highest range goes.
    assert!(sb.update(s(0), max, &[(s(2000), s(3000))]));
    assert_eq!(sb.ranges().len(), SCOREBOARD_RANGES);
    assert_eq!(sb.ranges()[0], (s(2000), s(3000)));
    assert_eq!(sb.ranges().last().unwrap().0, s(10_000 * (n - 1)));
    // Merging needs no room.
    assert!(sb.update(s(0), max, &[(s(3000), s(10_000))]));
    assert_eq!(sb.ranges()[0], (s(2000), s(11_000)));
}

#[test]
fn is_lost_counts_sacked_bytes_and_blocks_above() {
    // Two segments SACKed above 0: 2000 bytes is not "more than
    // (DupThresh - 1) * SMSS".
    let sb = board(0, 10_000, &[(1000, 3000)]);
    assert!(!sb.is_lost(s(0), 3, MSS));
    // A third: lost.
    let sb = board(0, 10_000, &[(1000, 3000), (4000, 5000)]);
    assert!(sb.is_lost(s(0), 3, MSS));
    assert!(sb.is_lost(s(999), 3, MSS));
    // 3000 only has 4000..5000 above it.
    assert!(!sb.is_lost(s(3000), 3, MSS));
    // Three discontiguous small blocks (300 bytes in all) suffice.
    let sb = board(0, 10_000, &[(1000, 1100), (2000, 2100), (3000, 3100)]);
    assert!(sb.is_lost(s(0), 3, MSS));
    assert!(!sb.is_lost(s(1500), 3, MSS));
    // A SACKed octet's own range counts only above it.
    let sb = board(0, 10_000, &[(1000, 4500)]);
    assert!(sb.is_lost(s(1000), 3, MSS)); // 3499 bytes above
    assert!(!sb.is_lost(s(2500), 3, MSS)); // 1999 bytes above
}

#[test]
fn pipe_counts_unsacked_not_lost_octets_and_retransmissions() {
    // Hole [0,1000) is lost (3000 SACKed above), [4000,10000) is not.
    let mut sb = board(0, 10_000, &[(1000, 4000)]);
    assert_eq!(sb.pipe(s(0), s(10_000), 3, MSS), 6000);
    // Retransmitting the lost hole puts it back in the pipe once.
    sb.high_rxt = s(1000);
    assert_eq!(sb.pipe(s(0), s(10_000), 3, MSS), 7000);
    // Two lost holes and one not; HighRxt inside the second.
    let mut sb = board(0, 10_000, &[(2000, 3000), (5000, 8000)]);
    sb.high_rxt = s(3500);
    // Not lost: [8000,10000) = 2000. Retransmitted: [0,2000) + [3000,3500).
    assert_eq!(sb.pipe(s(0), s(10_000), 3, MSS), 2000 + 2000 + 500);
    // An octet retransmitted without being lost counts twice.
    let mut sb = board(0, 10_000, &[(1000, 2000)]);
    sb.high_rxt = s(1000);
    assert_eq!(sb.pipe(s(0), s(10_000), 3, MSS), 9000 + 1000);
    // No SACK information: everything outstanding is in the pipe.
    assert_eq!(Scoreboard::new().pipe(s(0), s(10_000), 3, MSS), 10_000);
    // Rescue bytes are added until the next SetPipe.
    let mut sb = Scoreboard::new();
    sb.rescue_in_pipe = 1000;
    assert_eq!(sb.pipe(s(0), s(5000), 3, MSS), 6000);
}

fn rtx(l: u32, r: u32) -> Option<NextSeg> {
    Some(NextSeg::Retransmit {
        seq: s(l),
        end: s(r),
    })
}

#[test]
fn next_seg_rule_1_lowest_lost_hole_above_high_rxt() {
    // Holes [0,2000) and [3000,5000) are lost; [8000,10000) is the top.
    let mut sb = board(0, 10_000, &[(2000, 3000), (5000, 8000)]);
    sb.high_rxt = s(0);
    assert_eq!(sb.next_seg(s(0), s(10_000), true, 3, MSS), rtx(0, 1000));
    sb.high_rxt = s(1000);
    assert_eq!(sb.next_seg(s(0), s(10_000), true, 3, MSS), rtx(1000, 2000));
    sb.high_rxt = s(2000);
    assert_eq!(sb.next_seg(s(0), s(10_000), true, 3, MSS), rtx(3000, 4000));
    // A short hole gives a short segment, never one overlapping SACKed data.
    let mut sb = board(0, 10_000, &[(500, 3000), (4000, 5000)]);
    sb.high_rxt = s(0);
    assert_eq!(sb.next_seg(s(0), s(10_000), true, 3, MSS), rtx(0, 500));
}

#[test]
fn next_seg_rules_2_3_4_in_order() {
    // Hole [0,1000) not lost (only 2000 SACKed above).
    let mut sb = board(0, 5000, &[(1000, 3000)]);
    sb.high_rxt = s(0);
    // Rule 2: new data first.
    assert_eq!(
        sb.next_seg(s(0), s(5000), true, 3, MSS),
        Some(NextSeg::NewData)
    );
    // Rule 3: without new data, the hole below the highest SACK anyway.
    assert_eq!(sb.next_seg(s(0), s(5000), false, 3, MSS), rtx(0, 1000));
    // Rule 4: once that is retransmitted, the rescue: a segment ending at
    // the highest unSACKed octet (the top hole [3000,5000)).
    sb.high_rxt = s(1000);
    sb.rescue_rxt = None;
    assert_eq!(
        sb.next_seg(s(0), s(5000), false, 3, MSS),
        Some(NextSeg::Rescue {
            seq: s(4000),
            end: s(5000)
        })
    );
    // Only when HighACK is above RescueRxt.
    sb.rescue_rxt = Some(s(1000));
    assert_eq!(sb.next_seg(s(0), s(5000), false, 3, MSS), None);
    sb.update(s(1000), s(5000), &[]);
    assert!(sb.next_seg(s(1000), s(5000), false, 3, MSS).is_none());
    assert!(sb.next_seg(s(1001), s(5000), false, 3, MSS).is_some());
}

/// A SACK sender at SND.UNA = 0 with 20 segments outstanding.
fn sack_cc() -> Congestion {
    let cfg = CcConfig {
        recovery: Recovery::Sack,
        ..CcConfig::new(MSS)
    };
    let mut c = Congestion::new(&cfg, Seq(0) - 1);
    c.state.cwnd = 20 * MSS as u64;
    c
}

/// Feeds one ACK at `una` carrying `b`, as the transport would.
fn ack(c: &mut Congestion, una: u32, b: &[(u32, u32)]) -> Option<LossAction> {
    let fresh = c.on_sack(s(una), s(20_000), &blocks(b));
    if c.is_duplicate(true, fresh) {
        return c.on_dupack(T, s(una), s(20_000));
    }
    None
}

#[test]
fn sack_recovery_starts_on_is_lost_or_dupthresh() {
    // Segment 0 lost; 1, 2 SACKed: two duplicates, not yet.
    let mut c = sack_cc();
    assert_eq!(ack(&mut c, 0, &[(1000, 2000)]), None);
    assert_eq!(ack(&mut c, 0, &[(1000, 3000)]), None);
    // An ACK without new SACK information is not a duplicate.
    assert_eq!(ack(&mut c, 0, &[(1000, 3000)]), None);
    assert_eq!(c.state().dupacks, 2);
    let a = ack(&mut c, 0, &[(1000, 4000)]);
    assert_eq!(a, Some(LossAction::FastRetransmit { go_back_n: false }));
    assert!(c.in_sack_recovery());
    // FlightSize 20000 -> ssthresh = cwnd = 10000, no inflation.
    assert_eq!(
        (c.ssthresh(), c.cwnd(), c.window()),
        (10_000, 10_000, 10_000)
    );
    assert_eq!(c.state().recover, s(20_000));
    // One ACK SACKing three segments at once is enough (IsLost).
    let mut c = sack_cc();
    assert!(ack(&mut c, 0, &[(1000, 4000)]).is_some());
    assert_eq!(c.state().dupacks, 1);
}

#[test]
fn sack_recovery_sends_while_cwnd_exceeds_pipe_and_exits_at_recover() {
    let mut c = sack_cc();
    // Segments 0, 5 lost; 1-4 and 6-9 arrived.
    ack(&mut c, 0, &[(1000, 5000)]);
    assert!(c.in_sack_recovery());
    // (4.3) the transport retransmits SND.UNA.
    c.on_retransmit(s(0), s(1000), false);
    // pipe: the top hole [5000,20000) is not lost (nothing SACKed above
    // it): 15000, plus the retransmitted [0,1000).
    assert_eq!(c.pipe(s(0), s(20_000)), Some(16_000));
    assert_eq!(c.next_seg(s(0), s(20_000), true), None); // cwnd 10000
                                                         // Segments 6..=9 arrive: [5000,6000) becomes lost; pipe drops.
    for k in 6..=9 {
        ack(&mut c, 0, &[(k * 1000, (k + 1) * 1000), (1000, 5000)]);
    }
    assert_eq!(
        ranges(c.scoreboard().unwrap()),
        [(1000, 5000), (6000, 10_000)]
    );
    // Not lost: [10000,20000). Retransmitted: [0,1000). Pipe 11000 > cwnd.
    assert_eq!(c.pipe(s(0), s(20_000)), Some(11_000));
    assert_eq!(c.next_seg(s(0), s(20_000), true), None);
    // The retransmission of 0 is acknowledged: SND.UNA jumps to 5000.
    let fresh = c.on_sack(s(5000), s(20_000), &blocks(&[(6000, 10_000)]));
    assert!(!fresh);
    assert_eq!(c.on_new_ack(T, s(5000), 5000), None);
    assert!(c.in_sack_recovery());
    // Pipe: [10000,20000) = 10000; cwnd 10000: still nothing.
    assert_eq!(c.pipe(s(5000), s(20_000)), Some(10_000));
    // Two more segments leave the network (10, 11 SACKed): room for 2.
    ack(&mut c, 5000, &[(6000, 12_000)]);
    assert_eq!(c.pipe(s(5000), s(20_000)), Some(8000));
    assert_eq!(c.next_seg(s(5000), s(20_000), true), rtx(5000, 6000));
    c.on_retransmit(s(5000), s(6000), false);
    // Rule (1) exhausted; rule (2) new data.
    assert_eq!(c.next_seg(s(5000), s(20_000), true), Some(NextSeg::NewData));
    // SND.MAX moves to 21000 (new data is in the pipe): full.
    assert_eq!(c.next_seg(s(5000), s(21_000), true), None);
    // A cumulative ACK of RecoveryPoint ends recovery; cwnd = ssthresh.
    c.on_sack(s(20_000), s(21_000), &[]);
    assert_eq!(c.on_new_ack(T, s(20_000), 15_000), None);
    assert!(!c.in_recovery());
    assert_eq!(c.cwnd(), 10_000);
    assert_eq!(c.next_seg(s(20_000), s(21_000), true), None);
}

#[test]
fn rescue_retransmission_once_per_recovery() {
    let mut c = sack_cc();
    // 0 lost, 1-3 SACKed; nothing else will arrive (a tail loss of 4..19).
    ack(&mut c, 0, &[(1000, 4000)]);
    c.on_retransmit(s(0), s(1000), false);
    c.state.cwnd = 30_000; // room enough to see every rule
                           // Rule 3 has nothing (holes below 4000 are retransmitted); no new data:
                           // rule 4 is not yet allowed (HighACK has not passed RescueRxt).
    assert_eq!(c.next_seg(s(0), s(20_000), false), None);
    // The retransmission of 0 arrives.
    c.on_sack(s(4000), s(20_000), &[]);
    c.on_new_ack(T, s(4000), 4000);
    let r = c.next_seg(s(4000), s(20_000), false);
    assert_eq!(
        r,
        Some(NextSeg::Rescue {
            seq: s(19_000),
            end: s(20_000)
        })
    );
    let before = c.pipe(s(4000), s(20_000)).unwrap();
    c.on_retransmit(s(19_000), s(20_000), true);
    assert_eq!(c.pipe(s(4000), s(20_000)).unwrap(), before + 1000);
    assert_eq!(c.next_seg(s(4000), s(20_000), false), None);
    // The next ACK recomputes the pipe without it (SetPipe).
    c.on_sack(s(4000), s(20_000), &[]);
    assert_eq!(c.pipe(s(4000), s(20_000)).unwrap(), before);
}

#[test]
fn sack_timeout_keeps_the_scoreboard_and_guards_recovery() {
    let mut c = sack_cc();
    ack(&mut c, 0, &[(1000, 4000)]);
    c.on_timeout(T, s(0), s(20_000));
    assert!(!c.in_recovery());
    assert_eq!(c.cwnd(), MSS as u64);
    assert_eq!(c.state().recover, s(20_000));
    // Go-back-N skips what the receiver holds.
    assert_eq!(c.next_unsacked(s(1000)), (s(4000), None));
    assert_eq!(c.next_unsacked(s(0)), (s(0), Some(s(1000))));
    // New losses below RecoveryPoint cannot start a recovery.
    c.on_sack(s(1000), s(20_000), &[]);
    c.on_new_ack(T, s(4000), 3000);
    assert_eq!(ack(&mut c, 4000, &[(5000, 9000)]), None);
}

#[test]
fn non_sack_recovery_ignores_sack_blocks() {
    let mut c = Congestion::new(&CcConfig::new(MSS), Seq(0));
    assert!(!c.on_sack(s(1), s(20_001), &blocks(&[(1001, 5001)])));
    assert!(c.scoreboard().is_none());
    assert_eq!(c.next_seg(s(1), s(20_001), true), None);
    assert!(c.is_duplicate(true, false));
    assert_eq!(c.next_unsacked(s(1)), (s(1), None));
}

#[test]
fn pipe_grows_with_the_senders_own_sends_without_a_new_setpipe() {
    let mut c = sack_cc();
    c.state.cwnd = 30_000;
    // 0 and 5 lost; 1-4 and 6-9 SACKed.
    ack(&mut c, 0, &[(1000, 5000), (6000, 10_000)]);
    assert!(c.in_sack_recovery());
    let pipe = |c: &Congestion, max: u32| c.pipe(s(0), s(max)).unwrap();
    // Not lost: [10000,20000).
    assert_eq!(pipe(&c, 20_000), 10_000);
    // The next piece of a hole at HighRxt: +1000, kept in the memo.
    c.on_retransmit(s(0), s(1000), false);
    let b = c.scoreboard().unwrap();
    assert_eq!(b.memo_pipe(s(0), s(20_000)), Some(11_000));
    assert_eq!(pipe(&c, 20_000), 11_000);
    // New data at SND.MAX: +1000.
    c.on_new_data(s(20_000), s(21_000));
    let b = c.scoreboard().unwrap();
    assert_eq!(b.memo_pipe(s(0), s(21_000)), Some(12_000));
    assert_eq!(b.pipe_full(s(0), s(21_000), 3, MSS), 12_000);
    // A retransmission that skips ahead (HighRxt 1000, hole at 5000):
    // the memo is not advanced, the next SetPipe() computes it anew.
    c.on_retransmit(s(5000), s(6000), false);
    let b = c.scoreboard().unwrap();
    assert_eq!(b.memo_pipe(s(0), s(21_000)), None);
    // Not lost [10000,21000), retransmitted [0,1000) and [5000,6000).
    assert_eq!(pipe(&c, 21_000), 13_000);
    // An ACK's SACK blocks drop it.
    ack(&mut c, 0, &[(1000, 5000), (6000, 11_000)]);
    assert_eq!(c.scoreboard().unwrap().memo_pipe(s(0), s(21_000)), None);
}

mod pipe_memo {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        /// An ACK: SND.UNA advances by `acked` segments; SACK blocks at
        /// these segment offsets above it (length in segments).
        Ack { acked: u32, blocks: Vec<(u32, u32)> },
        /// The transport polls once: NextSeg() if `cwnd - pipe` allows.
        Poll,
        /// cwnd in segments (PRR or growth would move it).
        Cwnd(u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            2 => (0u32..3, proptest::collection::vec((0u32..40, 1u32..4), 0..4))
                .prop_map(|(acked, blocks)| Op::Ack { acked, blocks }),
            5 => Just(Op::Poll),
            1 => (1u32..40).prop_map(Op::Cwnd),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Whatever the transport does, SetPipe() with the memo answers
        /// what a walk over the holes answers.
        #[test]
        fn the_memo_equals_the_full_setpipe(ops in proptest::collection::vec(op(), 1..120)) {
            let mut c = sack_cc();
            let (mut una, mut max) = (0u32, 20_000u32);
            for op in ops {
                match op {
                    Op::Ack { acked, blocks: b } => {
                        una = (una + acked * MSS).min(max);
                        let b: Vec<(u32, u32)> = b
                            .iter()
                            .map(|&(o, l)| (una + o * MSS, una + (o + l) * MSS))
                            .collect();
                        let fresh = c.on_sack(s(una), s(max), &blocks(&b));
                        if acked > 0 {
                            c.on_new_ack(T, s(una), acked * MSS);
                        } else if c.is_duplicate(true, fresh) {
                            c.on_dupack(T, s(una), s(max));
                        }
                    }
                    Op::Poll => match c.next_seg(s(una), s(max), true) {
                        Some(NextSeg::NewData) => {
                            c.on_transmit(MSS);
                            c.on_new_data(s(max), s(max + MSS));
                            max += MSS;
                        }
                        Some(NextSeg::Retransmit { seq, end }) => {
                            c.on_transmit(end.bytes_since(seq));
                            c.on_retransmit(seq, end, false);
                        }
                        Some(NextSeg::Rescue { seq, end }) => {
                            c.on_transmit(end.bytes_since(seq));
                            c.on_retransmit(seq, end, true);
                        }
                        None => {}
                    },
                    Op::Cwnd(n) => c.state.cwnd = (n * MSS) as u64,
                }
                if let Some(b) = c.scoreboard() {
                    let full = b.pipe_full(s(una), s(max), 3, MSS);
                    if let Some(m) = b.memo_pipe(s(una), s(max)) {
                        prop_assert_eq!(m, full);
                    }
                    prop_assert_eq!(c.pipe(s(una), s(max)), Some(full));
                }
            }
        }
    }
}

mod next_seg_from_high_rxt {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// NextSeg() starting its walks at HighRxt answers what the walks
        /// from SND.UNA answer, with and without RACK's mark, across the
        /// sequence-number wrap.
        #[test]
        fn skipping_the_holes_below_high_rxt_changes_nothing(
            base in prop_oneof![Just(0u32), Just(u32::MAX - 20_000), any::<u32>()],
            b in proptest::collection::vec((0u32..40_000, 1u32..3000), 0..12),
            high_rxt in 0u32..40_000,
            rescue in proptest::option::of(0u32..40_000),
            rack in proptest::option::of(0u32..40_000),
            dupthresh in 1u32..5,
            new_data: bool,
        ) {
            let una = Seq(base);
            let max = una + 40_000;
            let mut sb = Scoreboard::new();
            let b: Vec<(Seq, Seq)> = b.iter().map(|&(o, l)| (una + o, una + o + l)).collect();
            sb.update(una, max, &b);
            sb.high_rxt = una + high_rxt;
            sb.rescue_rxt = rescue.map(|r| una + r);
            sb.rack_lost = rack.map(|r| una + r);
            prop_assert_eq!(
                sb.next_seg(una, max, new_data, dupthresh, MSS),
                sb.next_seg_walking_all(una, max, new_data, dupthresh, MSS)
            );
        }

        /// SetPipe() from the end of the lost prefix answers what the walk
        /// over every hole answers (the same scoreboards, DupThresh 0 too).
        #[test]
        fn setpipe_from_the_lost_prefix_equals_the_walk(
            base in prop_oneof![Just(0u32), Just(u32::MAX - 20_000), any::<u32>()],
            b in proptest::collection::vec((0u32..40_000, 1u32..3000), 0..12),
            high_rxt in 0u32..40_000,
            rescue_bytes in prop_oneof![Just(0u64), 0u64..5000],
            rack in proptest::option::of(0u32..40_000),
            dupthresh in 0u32..5,
            una_back in prop_oneof![Just(0u32), 0u32..2000],
        ) {
            let una = Seq(base);
            let max = una + 40_000;
            let mut sb = Scoreboard::new();
            let b: Vec<(Seq, Seq)> = b.iter().map(|&(o, l)| (una + o, una + o + l)).collect();
            sb.update(una, max, &b);
            // HighRxt may lag below SND.UNA (an ACK passed it).
            sb.high_rxt = una + high_rxt - una_back;
            sb.rescue_in_pipe = rescue_bytes;
            sb.rack_lost = rack.map(|r| una + r);
            prop_assert_eq!(
                sb.pipe_full(una, max, dupthresh, MSS),
                sb.pipe_walking_all(una, max, dupthresh, MSS)
            );
        }
    }
}

mod update_against_octets {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Update() keeps exactly the SACKed octets as maximal ranges and
        /// says whether an ACK's blocks covered an octet not SACKed before,
        /// checked against a set of octets, across the sequence-number wrap.
        #[test]
        fn the_ranges_are_the_sacked_octets(
            base in prop_oneof![Just(0u32), Just(u32::MAX - 2_000), any::<u32>()],
            acks in proptest::collection::vec(
                proptest::collection::vec((0u32..4_000, 1u32..600), 0..4),
                1..40,
            ),
        ) {
            let una = Seq(base);
            let max = una + 4_000;
            let mut sb = Scoreboard::new();
            let mut octets = vec![false; 4_000];
            for ack in &acks {
                let b: Vec<(Seq, Seq)> = ack.iter().map(|&(o, l)| (una + o, una + o + l)).collect();
                let mut fresh = false;
                for &(o, l) in ack {
                    for x in o..(o + l).min(4_000) {
                        fresh |= !octets[x as usize];
                        octets[x as usize] = true;
                    }
                }
                prop_assert_eq!(sb.update(una, max, &b), fresh);
                let mut want = Vec::new();
                let mut x = 0;
                while x < 4_000 {
                    if octets[x] {
                        let start = x;
                        while x < 4_000 && octets[x] {
                            x += 1;
                        }
                        want.push((una + start as u32, una + x as u32));
                    }
                    x += 1;
                }
                prop_assert_eq!(sb.ranges(), &want[..]);
            }
        }
    }
}

#[test]
fn fack_rule_sends_a_lost_retransmission_again() {
    let mut pipes = vec![];
    for on in [false, true] {
        let cfg = CcConfig {
            recovery: Recovery::Sack,
            lost_retransmit: on,
            ..CcConfig::new(MSS)
        };
        let mut c = Congestion::new(&cfg, Seq(0) - 1);
        c.state.cwnd = 20 * MSS as u64;
        c.on_new_data(s(0), s(20_000));
        // Segment 0 lost, 1-3 SACKed: recovery, and 0 is retransmitted
        // while SND.MAX is 20000.
        assert!(ack(&mut c, 0, &[(1000, 4000)]).is_some());
        c.on_retransmit(s(0), s(1000), false);
        c.on_new_data(s(20_000), s(22_000));
        // Nothing sent after it has arrived yet: it is in flight.
        c.on_sack(s(0), s(22_000), &blocks(&[(1000, 4000)]));
        assert_eq!(
            c.next_seg_with_room(s(0), s(22_000), true),
            Some(NextSeg::NewData)
        );
        // [20000, 21000), sent after it, is SACKed: it was lost again.
        c.on_sack(s(0), s(22_000), &blocks(&[(20_000, 21_000), (1000, 4000)]));
        let again = NextSeg::Retransmit {
            seq: s(0),
            end: s(1000),
        };
        let next = c.next_seg_with_room(s(0), s(22_000), true);
        assert_eq!(next == Some(again), on, "lost_retransmit {on}: {next:?}");
        pipes.push(c.pipe(s(0), s(22_000)).unwrap());
        if on {
            // Sent again: off the list, in the pipe once more.
            c.on_retransmit(s(0), s(1000), false);
            assert_eq!(
                c.next_seg_with_room(s(0), s(22_000), true),
                Some(NextSeg::NewData)
            );
            assert_eq!(c.pipe(s(0), s(22_000)), Some(pipes[0]));
        }
    }
    // The lost copy no longer counts as in the network.
    assert_eq!(pipes[1] + MSS as u64, pipes[0]);
}

#[test]
fn a_lost_retransmission_found_by_rack_is_resent_alone() {
    // Segments 0-4 lost, 5-7 SACKed: recovery; RACK marks 0-4 lost and all
    // five are retransmitted (HighRxt 5000) while SND.MAX is 20000.
    let mut c = sack_cc();
    c.on_new_data(s(0), s(20_000));
    assert!(ack(&mut c, 0, &[(5000, 8000)]).is_some());
    c.on_rack_loss(s(0), s(20_000), s(5000));
    for k in 0..5 {
        c.on_retransmit(s(k * MSS), s((k + 1) * MSS), false);
    }
    c.on_new_data(s(20_000), s(22_000));
    c.on_sack(s(0), s(22_000), &blocks(&[(20_000, 21_000), (5000, 8000)]));
    let before = c.pipe(s(0), s(22_000)).unwrap();
    // RACK finds the retransmission of segment 0 lost (twice, as a second
    // ACK may report it again); 1-4, resent after it, are still in flight.
    c.on_rack_lost_retransmission(s(0), s(1000));
    c.on_rack_lost_retransmission(s(0), s(1000));
    assert_eq!(
        c.next_seg_with_room(s(0), s(22_000), true),
        Some(NextSeg::Retransmit {
            seq: s(0),
            end: s(1000)
        })
    );
    // Its copy no longer counts as in the network; the others do.
    assert_eq!(c.pipe(s(0), s(22_000)), Some(before - MSS as u64));
    // Resent: back in the pipe, and next comes new data, not segments 1-4
    // again (Linux clears TCPCB_SACKED_RETRANS of the lost skb only).
    c.on_retransmit(s(0), s(1000), false);
    assert_eq!(c.pipe(s(0), s(22_000)), Some(before));
    assert_eq!(
        c.next_seg_with_room(s(0), s(22_000), true),
        Some(NextSeg::NewData)
    );
}
