//! Loss recovery: duplicate ACKs, fast retransmit, fast recovery, partial
//! ACKs.

use super::{CcState, LossAction};
use crate::seq::Seq;

/// Loss recovery algorithm (configuration). Closed set: SACK (RFC 6675)
/// comes as a further variant with its scoreboard as private state.
///
/// All three variants keep RFC 6582's `recover` guard: a third duplicate
/// ACK starts a fast retransmit only if its ACK number covers more than
/// `recover`, the SND.MAX recorded at the last fast retransmit or timeout.
/// For NewReno this is RFC 6582 itself. For Reno and Tahoe it is ns-2's
/// default behaviour (`bugFix_ true`), and it keeps the duplicate ACKs that
/// a go-back-N resend provokes from triggering a second reduction; RFC 5681
/// alone has no such guard.
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
}

/// A duplicate ACK arrived (SND.UNA = `una`, SND.MAX = `max`).
pub(super) fn on_dupack(kind: Recovery, s: &mut CcState, una: Seq, max: Seq) -> Option<LossAction> {
    s.dupacks = s.dupacks.saturating_add(1);
    if s.in_recovery {
        // RFC 5681 step 4: "For each additional duplicate ACK received (after
        // the third), cwnd MUST be incremented by SMSS. This artificially
        // inflates the congestion window in order to reflect the additional
        // segment that has left the network."
        s.inflation = s.inflation.saturating_add(s.smss as u64);
        return None;
    }
    if s.dupacks != s.dupack_threshold {
        return None;
    }
    // RFC 6582 step 2: "When the third duplicate ACK is received, the TCP
    // sender first checks the value of recover to see if the Cumulative
    // Acknowledgment field covers more than recover. If so, the value of
    // recover is incremented to the value of the highest sequence number
    // transmitted by the TCP so far. [...] If not, the TCP does not enter
    // fast retransmit and does not reset ssthresh."
    if !una.gt(s.recover) {
        return None;
    }
    s.recover = max;
    // RFC 5681 step 2: "When the third duplicate ACK is received, a TCP MUST
    // set ssthresh to no more than the value given in equation (4)", with
    // FlightSize the data sent but not yet cumulatively acknowledged.
    s.ssthresh = s.halved_flight(max.bytes_since(una));
    s.partial_acked = false;
    match kind {
        Recovery::Tahoe => {
            s.cwnd = s.smss as u64;
            s.inflation = 0;
            Some(LossAction::FastRetransmit { go_back_n: true })
        }
        Recovery::Reno | Recovery::NewReno => {
            // RFC 5681 step 3: "The lost segment starting at SND.UNA MUST be
            // retransmitted and cwnd set to ssthresh plus 3*SMSS. This
            // artificially "inflates" the congestion window by the number of
            // segments (three) that have left the network and which the
            // receiver has buffered."
            s.cwnd = s.ssthresh;
            s.inflation = s.dupack_threshold as u64 * s.smss as u64;
            s.in_recovery = true;
            Some(LossAction::FastRetransmit { go_back_n: false })
        }
    }
}

/// An ACK of `acked` new bytes, up to `ack`, arrived during fast recovery.
pub(super) fn on_recovery_ack(
    kind: Recovery,
    s: &mut CcState,
    ack: Seq,
    acked: u32,
) -> Option<LossAction> {
    match kind {
        // Tahoe never enters fast recovery.
        Recovery::Tahoe => {
            exit(s);
            None
        }
        // RFC 5681 step 6: "When the next ACK arrives that acknowledges
        // previously unacknowledged data, a TCP MUST set cwnd to ssthresh
        // (the value set in step 2). This is termed "deflating" the window."
        Recovery::Reno => {
            exit(s);
            None
        }
        Recovery::NewReno if ack.ge(s.recover) => {
            // RFC 6582 step 3, full acknowledgments: "Set cwnd to either (1)
            // min (ssthresh, max(FlightSize, SMSS) + SMSS) or (2) ssthresh
            // [...] Exit the fast recovery procedure." We take (2), as ns-2
            // does; `max_burst` is the burst mitigation it suggests.
            exit(s);
            None
        }
        Recovery::NewReno => {
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
    }
}

fn exit(s: &mut CcState) {
    s.cwnd = s.ssthresh;
    s.inflation = 0;
    s.in_recovery = false;
    s.partial_acked = false;
}
