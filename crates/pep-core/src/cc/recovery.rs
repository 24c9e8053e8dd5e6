//! Loss recovery: duplicate ACKs, fast retransmit, fast recovery, partial
//! ACKs; for SACK, the RFC 6675 entry rule (the scoreboard and its
//! routines are in `sack.rs`).

use alloc::boxed::Box;

use super::sack::Scoreboard;
use super::{CcState, LossAction};
use crate::seq::Seq;

/// Loss recovery algorithm (configuration). Closed set.
///
/// Tahoe, Reno and NewReno keep RFC 6582's `recover` guard: a third
/// duplicate ACK starts a fast retransmit only if its ACK number covers
/// more than `recover`, the SND.MAX recorded at the last fast retransmit or
/// timeout. For NewReno this is RFC 6582 itself. For Reno and Tahoe it is
/// ns-2's default behaviour (`bugFix_ true`), and it keeps the duplicate
/// ACKs that a go-back-N resend provokes from triggering a second
/// reduction; RFC 5681 alone has no such guard. SACK has RFC 6675's own
/// rule (section 5.1): no new recovery until SND.UNA reaches `recover`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Recovery {
    /// 4.3BSD Tahoe: on the third duplicate ACK, retransmit, set
    /// `ssthresh = max(FlightSize/2, 2*SMSS)`, `cwnd = 1 SMSS` and resend
    /// from SND.UNA in slow start (go-back-N). No fast recovery.
    Tahoe,
    /// RFC 5681 section 3.2 fast retransmit and fast recovery: window
    /// inflation by one SMSS per duplicate ACK; the first ACK of new data
    /// deflates cwnd to ssthresh and ends recovery, even if it is partial.
    Reno,
    /// RFC 6582 NewReno: recovery lasts until all data outstanding at the
    /// fast retransmit is acknowledged; each partial ACK retransmits the
    /// next hole and partially deflates the window.
    #[default]
    NewReno,
    /// RFC 6675 conservative SACK-based recovery: a scoreboard of SACKed
    /// ranges, IsLost() with DupThresh, the pipe estimate instead of window
    /// inflation, NextSeg() choosing what to (re)send while
    /// `cwnd - pipe >= SMSS`, and the rescue retransmission. Needs a
    /// receiver that sends SACK blocks (RFC 2018).
    Sack,
    /// ns-2's `Agent/TCP/Sack1` (`sack1.rs`): the same scoreboard, but a
    /// pipe counted per ACK and per packet sent (no burst after a large
    /// loss), every hole below the highest SACK resent once without
    /// IsLost(), no rescue; the `ns2` profile's SACK.
    Sack1,
}

/// A recovery algorithm with its per-connection state.
#[derive(Clone, Debug)]
pub(super) enum RecoveryState {
    Tahoe,
    Reno,
    NewReno,
    /// The scoreboard is allocated once, with the connection.
    Sack(Box<Scoreboard>),
}

impl RecoveryState {
    pub(super) fn new(cfg: Recovery, lost_retransmit: bool) -> Self {
        match cfg {
            Recovery::Tahoe => RecoveryState::Tahoe,
            Recovery::Reno => RecoveryState::Reno,
            Recovery::NewReno => RecoveryState::NewReno,
            Recovery::Sack | Recovery::Sack1 => {
                let mut b = Box::new(Scoreboard::new());
                b.lost_retransmit = lost_retransmit;
                RecoveryState::Sack(b)
            }
        }
    }

    pub(super) fn config(&self) -> Recovery {
        match self {
            RecoveryState::Tahoe => Recovery::Tahoe,
            RecoveryState::Reno => Recovery::Reno,
            RecoveryState::NewReno => Recovery::NewReno,
            RecoveryState::Sack(_) => Recovery::Sack,
        }
    }
}

/// A duplicate ACK arrived with SND.UNA = `una`: counts it, inflates the
/// window in Reno-style recovery, and says whether loss recovery starts.
pub(super) fn dupack_starts_recovery(r: &RecoveryState, s: &mut CcState, una: Seq) -> bool {
    s.dupacks = s.dupacks.saturating_add(1);
    if s.in_recovery {
        if matches!(r, RecoveryState::Reno | RecoveryState::NewReno) {
            // RFC 5681 step 4: "For each additional duplicate ACK received
            // (after the third), cwnd MUST be incremented by SMSS. This
            // artificially inflates the congestion window in order to reflect
            // the additional segment that has left the network."
            s.inflation = s.inflation.saturating_add(s.smss as u64);
        }
        return false;
    }
    match r {
        // RFC 6675 section 5: "(1) If DupAcks >= DupThresh, go to step (4).
        // [...] (2) If DupAcks < DupThresh but IsLost (HighACK + 1) returns
        // true [...] go to step (4)." Section 5.1: "a new recovery phase [...]
        // MUST NOT be initiated until HighACK is greater than or equal to the
        // new value of RecoveryPoint."
        RecoveryState::Sack(b) => {
            una.ge(s.recover)
                && (s.dupacks >= s.dupack_threshold || b.is_lost(una, s.dupack_threshold, s.smss))
        }
        // RFC 6582 step 2: "When the third duplicate ACK is received, the TCP
        // sender first checks the value of recover to see if the Cumulative
        // Acknowledgment field covers more than recover. [...] If not, the
        // TCP does not enter fast retransmit and does not reset ssthresh."
        _ => s.dupacks == s.dupack_threshold && una.gt(s.recover),
    }
}

/// Enters recovery (or, for Tahoe, slow start) with the new `ssthresh`,
/// SND.UNA = `una` and SND.MAX = `max`.
pub(super) fn enter(
    r: &mut RecoveryState,
    s: &mut CcState,
    ssthresh: u64,
    una: Seq,
    max: Seq,
) -> LossAction {
    // RFC 6582 step 2: "the value of recover is incremented to the value of
    // the highest sequence number transmitted by the TCP so far"; RFC 6675
    // (4.1): "RecoveryPoint = HighData".
    s.recover = max;
    s.ssthresh = ssthresh;
    s.partial_acked = false;
    match r {
        RecoveryState::Tahoe => {
            s.cwnd = s.smss as u64;
            s.inflation = 0;
            LossAction::FastRetransmit { go_back_n: true }
        }
        RecoveryState::Reno | RecoveryState::NewReno => {
            // RFC 5681 step 3: "The lost segment starting at SND.UNA MUST be
            // retransmitted and cwnd set to ssthresh plus 3*SMSS. This
            // artificially "inflates" the congestion window by the number of
            // segments (three) that have left the network and which the
            // receiver has buffered."
            s.cwnd = ssthresh;
            s.inflation = s.dupack_threshold as u64 * s.smss as u64;
            s.in_recovery = true;
            LossAction::FastRetransmit { go_back_n: false }
        }
        RecoveryState::Sack(b) => {
            // RFC 6675 (4.2) "ssthresh = cwnd = (FlightSize / 2)" (the growth
            // axis chose ssthresh); no inflation: pipe replaces it. (4.3)
            // The retransmission of SND.UNA sets HighRxt and RescueRxt (see
            // `Congestion::on_retransmit`).
            s.cwnd = ssthresh;
            s.inflation = 0;
            s.in_recovery = true;
            b.high_rxt = una;
            b.rescue_rxt = None;
            b.forget_retransmissions();
            LossAction::FastRetransmit { go_back_n: false }
        }
    }
}

/// An ACK of `acked` new bytes, up to `ack`, arrived during fast recovery.
pub(super) fn on_recovery_ack(
    r: &RecoveryState,
    s: &mut CcState,
    ack: Seq,
    acked: u32,
) -> Option<LossAction> {
    match r {
        // Tahoe never enters fast recovery.
        RecoveryState::Tahoe => {
            exit(s);
            None
        }
        // RFC 5681 step 6: "When the next ACK arrives that acknowledges
        // previously unacknowledged data, a TCP MUST set cwnd to ssthresh
        // (the value set in step 2). This is termed "deflating" the window."
        RecoveryState::Reno => {
            exit(s);
            None
        }
        RecoveryState::NewReno if ack.ge(s.recover) => {
            // RFC 6582 step 3, full acknowledgments: "Set cwnd to either (1)
            // min (ssthresh, max(FlightSize, SMSS) + SMSS) or (2) ssthresh
            // [...] Exit the fast recovery procedure." We take (2), as ns-2
            // does; `max_burst` is the burst mitigation it suggests.
            exit(s);
            None
        }
        RecoveryState::NewReno => {
            // RFC 6582 step 3, partial acknowledgments: "retransmit the first
            // unacknowledged segment. Deflate the congestion window by the
            // amount of new data acknowledged by the Cumulative
            // Acknowledgment field. If the partial ACK acknowledges at least
            // one SMSS of new data, then add back SMSS bytes to the
            // congestion window."
            let smss = s.smss as u64;
            let add_back = if acked as u64 >= smss { smss } else { 0 };
            let total = s.window().saturating_sub(acked as u64) + add_back;
            if total >= s.cwnd {
                s.inflation = total - s.cwnd;
            } else {
                // The ACK covered more than the inflation: the window itself
                // shrinks (ns-2's `cwnd_ -= deflate - dupwnd_`).
                s.cwnd = total.max(smss);
                s.inflation = 0;
            }
            // "For the first partial ACK that arrives during fast recovery,
            // also reset the retransmit timer."
            let restart_timer = !s.partial_acked;
            s.partial_acked = true;
            Some(LossAction::PartialAckRetransmit { restart_timer })
        }
        // RFC 6675 (A): "An incoming cumulative ACK for a sequence number
        // greater than RecoveryPoint signals the end of loss recovery". Below
        // it, (B)-(C): the transport asks `Congestion::next_seg` what to send.
        RecoveryState::Sack(_) => {
            if ack.ge(s.recover) {
                exit(s);
            }
            None
        }
    }
}

fn exit(s: &mut CcState) {
    s.cwnd = s.ssthresh;
    s.inflation = 0;
    s.in_recovery = false;
    s.partial_acked = false;
}
