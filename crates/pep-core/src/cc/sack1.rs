//! ns-2's `Agent/TCP/Sack1` loss recovery (`tcp/tcp-sack1.cc` and the
//! `ScoreBoard` of `tcp/scoreboard.cc`, ns-2.35), [`super::Recovery::Sack1`].
//!
//! It shares RFC 6675's scoreboard of SACKed ranges (`sack.rs`) but counts
//! and chooses differently:
//!
//! * **pipe is a counter, not a sum over the scoreboard.** On the third
//!   duplicate ACK `pipe_ = maxseq_ - highest_ack_ - numdupacks_` packets;
//!   every ACK during recovery takes one off, a partial ACK one more, and
//!   every packet sent adds one. The fast retransmit itself is sent by
//!   `output()` outside `send_much` and is not counted. RFC 6675's SetPipe()
//!   instead drops every hole IsLost() marks, so after a large loss pipe
//!   falls far below cwnd and the sender bursts retransmissions; ns-2's
//!   counter only falls one per ACK, so it stays ACK-clocked (and stalls
//!   into a timeout when too few ACKs come back).
//! * **What to send** (`GetNextRetran`): the lowest packet below the
//!   highest SACKed one that is neither SACKed nor retransmitted in this
//!   recovery, without IsLost()'s DupThresh; new data only when none is
//!   left; no rescue retransmission. A lost retransmission waits for the
//!   timer (`Sack1` never calls the scoreboard's `CheckSndNxt`).
//! * **Entry**: exactly the third duplicate ACK (`++dupacks_ ==
//!   numdupacks_`), counted only for ACKs that change the scoreboard
//!   (`CheckUpdate`), as RFC 6675 counts them.
//! * **Timeout**: the scoreboard is cleared (`ClearScoreBoard`), so the
//!   go-back-N resend covers SACKed data too.
//!
//! Bounds are exclusive ends as in `sack.rs`; the counter is in packets
//! (ns-2's `int pipe_`, which may go negative).

use super::sack::{NextSeg, Scoreboard};
use super::CcState;
use crate::seq::Seq;

/// The per-connection counter of packets in flight during recovery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Sack1 {
    /// ns-2's `pipe_`, in packets.
    pipe: i64,
}

impl Sack1 {
    /// Recovery starts with `[una, max)` outstanding: `pipe_ = maxseq_ -
    /// highest_ack_ - numdupacks_`, less one for the fast retransmit that
    /// [`Sack1::on_sent`] will count although ns-2 does not.
    pub(super) fn enter(&mut self, una: Seq, max: Seq, dupthresh: u32, smss: u32) {
        let outstanding = max.bytes_since(una).div_ceil(smss) as i64;
        self.pipe = outstanding - dupthresh as i64 - 1;
    }

    /// An ACK arrived during recovery (`--pipe_`), or the second decrement
    /// of a partial ACK.
    #[inline]
    pub(super) fn on_ack(&mut self) {
        self.pipe -= 1;
    }

    /// A packet was sent during recovery (`pipe_++`).
    #[inline]
    pub(super) fn on_sent(&mut self) {
        self.pipe += 1;
    }

    /// The counter in bytes (`smss` per packet), zero when negative.
    #[inline]
    pub(super) fn pipe_bytes(&self, smss: u32) -> u64 {
        self.pipe.max(0) as u64 * smss as u64
    }

    /// `send_much`'s condition during recovery, `pipe_ < int(cwnd_)`.
    #[inline]
    pub(super) fn room(&self, cwnd: u64, smss: u32) -> bool {
        self.pipe < (cwnd / smss as u64) as i64
    }
}

/// A duplicate ACK with SND.UNA = `una`: counts it and says whether
/// recovery starts (the third one, once SND.UNA has passed the last
/// recovery's point, as `bug_fix_` asks).
pub(super) fn dupack_starts_recovery(s: &mut CcState, una: Seq) -> bool {
    s.dupacks = s.dupacks.saturating_add(1);
    !s.in_recovery && s.dupacks == s.dupack_threshold && una.ge(s.recover)
}

/// `GetNextRetran`, then new data: the first segment of the lowest hole
/// below the highest SACKed octet that starts at or above HighRxt (ns-2
/// retransmits holes lowest first, marking each), else new data if
/// `new_data`.
pub(super) fn next_seg(b: &Scoreboard, una: Seq, new_data: bool, smss: u32) -> Option<NextSeg> {
    let mut at = una;
    for &(l, r) in b.ranges() {
        let seq = at.max(b.high_rxt);
        if seq.lt(l) {
            let end = l.min(seq + smss);
            return Some(NextSeg::Retransmit { seq, end });
        }
        at = r;
    }
    new_data.then_some(NextSeg::NewData)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn seq(pkt: u32) -> Seq {
        Seq(pkt * MSS)
    }

    #[test]
    fn entry_counts_outstanding_less_dupacks_and_the_fast_retransmit() {
        let mut p = Sack1::default();
        // 20 packets outstanding, 3 duplicate ACKs: ns-2's pipe_ is 17;
        // the fast retransmit will add the one taken here.
        p.enter(seq(10), seq(30), 3, MSS);
        p.on_sent();
        assert_eq!(p.pipe_bytes(MSS), 17 * MSS as u64);
        // cwnd 10 packets: nothing may go until pipe_ < 10, i.e. 8 ACKs.
        for _ in 0..7 {
            p.on_ack();
            assert!(!p.room(10 * MSS as u64, MSS));
        }
        p.on_ack();
        assert!(p.room(10 * MSS as u64, MSS));
        // One packet per ACK from then on: no burst.
        p.on_sent();
        assert!(!p.room(10 * MSS as u64, MSS));
    }

    #[test]
    fn retransmits_every_hole_below_the_highest_sack_before_new_data() {
        let mut b = Scoreboard::new();
        // Packets 10, 12-13 and 15 lost; 11, 14 and 16 SACKed.
        b.update(
            seq(10),
            seq(17),
            &[(seq(11), seq(12)), (seq(14), seq(15)), (seq(16), seq(17))],
        );
        b.high_rxt = seq(11); // the fast retransmit of packet 10
        let next = |b: &Scoreboard| next_seg(b, seq(10), true, MSS);
        assert_eq!(
            next(&b),
            Some(NextSeg::Retransmit {
                seq: seq(12),
                end: seq(13)
            })
        );
        b.high_rxt = seq(14);
        // Packet 15 has only one SACKed packet above it: RFC 6675's
        // IsLost() would not mark it, ns-2 resends it anyway.
        assert_eq!(
            next(&b),
            Some(NextSeg::Retransmit {
                seq: seq(15),
                end: seq(16)
            })
        );
        b.high_rxt = seq(16);
        assert_eq!(next(&b), Some(NextSeg::NewData));
        assert_eq!(next_seg(&b, seq(10), false, MSS), None);
    }

    #[test]
    fn only_the_third_dupack_past_the_recovery_point_starts_recovery() {
        let mut s = CcState::initial(MSS, 10 * MSS as u64, u64::MAX, seq(0), 3);
        assert!(!dupack_starts_recovery(&mut s, seq(5)));
        assert!(!dupack_starts_recovery(&mut s, seq(5)));
        assert!(dupack_starts_recovery(&mut s, seq(5)));
        assert!(!dupack_starts_recovery(&mut s, seq(5)), "the fourth");
        s.dupacks = 0;
        s.recover = seq(6);
        for _ in 0..3 {
            assert!(!dupack_starts_recovery(&mut s, seq(5)));
        }
    }
}
