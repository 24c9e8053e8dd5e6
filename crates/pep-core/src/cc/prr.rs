//! Proportional Rate Reduction (RFC 6937) for SACK loss recovery, as Linux
//! runs it: instead of dropping cwnd to ssthresh at once (RFC 6675), each
//! ACK during recovery lets out data in proportion to what the receiver
//! reports delivered, so the window reaches ssthresh by the end of recovery
//! without a burst or a silence. Slow-start reduction bound: PRR-SSRB.

use crate::seq::Seq;

/// PRR's per-recovery state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Prr {
    /// RFC 6937 `RecoverFS`: FlightSize when recovery started.
    pub recover_fs: u64,
    /// `prr_delivered`: bytes reported delivered since recovery started.
    pub delivered: u64,
    /// `prr_out`: bytes sent since recovery started.
    pub out: u64,
    /// SACKed bytes after the previous ACK, for `DeliveredData`.
    pub sacked: u64,
    /// SACKed bytes after this ACK.
    pub sacked_now: u64,
    /// SND.MAX when this ACK arrived (for SetPipe()).
    pub max: Seq,
}

impl Prr {
    /// The SACKed bytes the latest ACK left on the scoreboard.
    pub fn on_sack(&mut self, sacked_now: u64, max: Seq) {
        self.max = max;
        self.sacked = self.sacked_now;
        self.sacked_now = sacked_now;
    }

    /// RFC 6937: "DeliveredData = (change in snd.una) + (change in SACK'd)"
    /// for an ACK that moved SND.UNA by `acked` bytes.
    pub fn delivered_data(&self, acked: u64) -> u64 {
        (acked + self.sacked_now).saturating_sub(self.sacked)
    }

    /// Recovery starts with `flight` bytes outstanding.
    pub fn start(&mut self, flight: u64) {
        self.recover_fs = flight.max(1);
        self.delivered = 0;
        self.out = 0;
    }

    /// On each ACK in recovery: the new cwnd, `pipe + sndcnt`.
    pub fn on_ack(&mut self, delivered: u64, pipe: u64, ssthresh: u64, smss: u64) -> u64 {
        self.delivered += delivered;
        let sndcnt = if pipe > ssthresh {
            // "sndcnt = CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out"
            let num = self.delivered as u128 * ssthresh as u128;
            (num.div_ceil(self.recover_fs as u128) as u64).saturating_sub(self.out)
        } else {
            // PRR-SSRB: "limit = MAX(prr_delivered - prr_out, DeliveredData)
            // + MSS; sndcnt = MIN(ssthresh - pipe, limit)"
            let limit = self.delivered.saturating_sub(self.out).max(delivered) + smss;
            (ssthresh - pipe).min(limit)
        };
        pipe + sndcnt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proportional_then_slow_start_bound() {
        let mut p = Prr::default();
        // 20 segments of 1000 B out, ssthresh 14 segments (CUBIC's 0.7).
        p.start(20_000);
        // First duplicate ACK in recovery: 1 segment delivered, pipe 19.
        let c = p.on_ack(1000, 19_000, 14_000, 1000);
        assert_eq!(c, 19_000 + 700);
        // The fast retransmit went out; two more deliveries: ceil(3 x 0.7)
        // = 2100 minus 1000 sent.
        p.out += 1000;
        let c = p.on_ack(2000, 18_000, 14_000, 1000);
        assert_eq!(c, 18_000 + 1100);
        // pipe below ssthresh: at most the delivered surplus plus one MSS.
        let c = p.on_ack(1000, 10_000, 14_000, 1000);
        assert_eq!(c, 10_000 + (4000 - 1000) + 1000);
    }

    #[test]
    fn delivered_data_counts_sacks_and_cumulative_acks_once() {
        let mut p = Prr::default();
        p.on_sack(3000, Seq(0));
        assert_eq!(p.delivered_data(0), 3000);
        // A cumulative ACK of 4000 B covering the 3000 B SACKed before.
        p.on_sack(0, Seq(0));
        assert_eq!(p.delivered_data(4000), 1000);
    }
}
