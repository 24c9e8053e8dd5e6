//! Window growth: how cwnd opens on ACKs of new data outside recovery.

use super::CcState;

/// Window growth algorithm (configuration). Closed set: add a variant per
/// algorithm (CUBIC, Westwood+, ...), its state to [`GrowthState`], and a
/// file beside this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Growth {
    /// RFC 5681 slow start (eq. 2) and congestion avoidance (eq. 3).
    Reno {
        /// RFC 3465 appropriate byte counting with limit `L` segments
        /// (RFC 3465 recommends L = 2): slow start opens by
        /// `min(bytes_acked, L*SMSS)` per ACK and congestion avoidance by
        /// one SMSS per cwnd of bytes acknowledged. `None`: RFC 5681's
        /// per-ACK rules, as ns-2 does.
        abc: Option<u32>,
    },
}

impl Default for Growth {
    fn default() -> Self {
        Growth::Reno { abc: None }
    }
}

/// A growth algorithm with its per-connection state.
#[derive(Clone, Debug)]
pub(super) enum GrowthState {
    Reno {
        /// ABC limit in segments, if byte counting is on.
        abc: Option<u32>,
        /// RFC 3465's `bytes_acked`: bytes acknowledged in congestion
        /// avoidance not yet turned into window.
        bytes_acked: u64,
    },
}

impl GrowthState {
    pub(super) fn new(cfg: Growth) -> Self {
        match cfg {
            Growth::Reno { abc } => GrowthState::Reno {
                abc,
                bytes_acked: 0,
            },
        }
    }

    pub(super) fn config(&self) -> Growth {
        match *self {
            GrowthState::Reno { abc, .. } => Growth::Reno { abc },
        }
    }

    /// An ACK of `acked` new bytes arrived outside loss recovery.
    pub(super) fn on_ack(&mut self, s: &mut CcState, acked: u32) {
        match self {
            GrowthState::Reno { abc, bytes_acked } => {
                reno_on_ack(s, *abc, bytes_acked, acked as u64)
            }
        }
    }

    /// cwnd or ssthresh were just reduced (fast retransmit or timeout).
    pub(super) fn on_congestion(&mut self, _s: &CcState) {
        match self {
            GrowthState::Reno { bytes_acked, .. } => *bytes_acked = 0,
        }
    }
}

fn reno_on_ack(s: &mut CcState, abc: Option<u32>, bytes_acked: &mut u64, acked: u64) {
    let smss = s.smss as u64;
    // RFC 5681 section 3.1: "The slow start algorithm is used when cwnd <
    // ssthresh, while the congestion avoidance algorithm is used when cwnd >
    // ssthresh. When cwnd and ssthresh are equal, the sender may use either".
    // We use congestion avoidance at equality.
    if s.cwnd < s.ssthresh {
        // Eq. (2): "cwnd += min (N, SMSS)"; with RFC 3465, "the TCP sender
        // MAY increase cwnd by up to L*SMSS bytes" per ACK.
        let limit = abc.map_or(smss, |l| l as u64 * smss);
        s.cwnd = s.cwnd.saturating_add(acked.min(limit));
        return;
    }
    match abc {
        None => {
            // Eq. (3): "cwnd += SMSS*SMSS/cwnd" on each non-duplicate ACK.
            // "If the above formula yields 0, the result SHOULD be rounded
            // up to 1 byte."
            let inc = (smss * smss / s.cwnd.max(1)).max(1);
            s.cwnd = s.cwnd.saturating_add(inc);
        }
        Some(_) => {
            // RFC 3465 section 2.1: "When bytes_acked becomes greater than or
            // equal to the value of the congestion window, bytes_acked is
            // reduced by the value of cwnd. Next, cwnd is incremented by a
            // full-sized segment (SMSS)."
            *bytes_acked += acked;
            if *bytes_acked >= s.cwnd {
                *bytes_acked -= s.cwnd;
                s.cwnd = s.cwnd.saturating_add(smss);
            }
        }
    }
}
