//! The sender's RACK-TLP hooks (RFC 8985). The logic is the sans-IO
//! `pep_core::cc::Rack`; here it is fed the segments sent and the ACKs
//! received, and its verdicts become retransmissions: RACK's lost marks go
//! to the SACK scoreboard (and start recovery, as a third duplicate ACK
//! would), the reorder timer re-runs the detection, and the probe timeout
//! sends one tail loss probe per episode.

use pep_core::cc::{is_dsack, LossAction, Rack};
use pep_core::{Instant, Segment};

use super::{Phase, TcpSender, Timer, TxKind};

impl TcpSender {
    /// RACK-TLP: tail loss probes sent so far, and RACK's state.
    pub fn rack(&self) -> Option<&Rack> {
        self.rack.as_deref()
    }

    /// After an ACK was processed (SND.UNA moved, the scoreboard updated).
    /// `was_in_recovery`: before this ACK.
    pub(super) fn rack_on_ack(
        &mut self,
        now: Instant,
        seg: &Segment,
        advanced: bool,
        was_in_recovery: bool,
    ) {
        if self.closed {
            return;
        }
        let (srtt, in_recovery) = (self.rtt.srtt(), self.cc.in_recovery());
        let dupthresh = self.cc.state().dupack_threshold;
        let (una, nxt) = (self.snd_una, self.snd_nxt);
        let Some(r) = self.rack.as_deref_mut() else {
            return;
        };
        let mut quic = self.quic.as_deref_mut();
        // 6.2 step 4: the reordering window grows per round with DSACK and
        // persists 16 recoveries.
        let dsack = is_dsack(seg.ack, seg.sack.as_slice());
        r.update_reo_wnd(una, nxt, dsack);
        if was_in_recovery && !in_recovery && !dsack {
            r.on_recovery_exit();
        }
        let rtt = srtt.unwrap_or_default();
        let d = r.on_ack_each(
            now,
            self.snd_una,
            seg.sack.as_slice(),
            srtt,
            in_recovery,
            dupthresh,
            |sent, bytes| {
                if let Some(q) = quic.as_deref_mut() {
                    q.on_ack(now, sent, bytes, false, rtt);
                }
            },
        );
        if let (true, Some(rtt)) = (self.rtt_every_ack, d.rtt) {
            self.rtt_sample(now, now - rtt);
        }
        if d.tlp_repaired {
            self.cc.on_tail_loss_repaired();
        }
        if let Some(end) = d.lost_end {
            self.rack_mark_lost(now, end);
        }
        // RFC 8985 7.2: restart the PTO "upon receiving an ACK that
        // cumulatively acknowledges new data".
        if advanced {
            self.rack_arm_pto(now);
        }
    }

    /// Bookkeeping for a segment handed to the driver (after `on_sent`).
    pub(super) fn rack_on_sent(&mut self, now: Instant, seg: &Segment, kind: TxKind) {
        if self.phase == Phase::SynSent {
            return; // the SYN's RTT is not RACK's
        }
        if let Some(r) = self.rack.as_deref_mut() {
            r.on_sent(now, seg.seq, seg.end_seq(), kind.is_retransmission());
        }
        // Linux's `tcp_xmit_retransmit_queue` re-arms the RTO when it
        // resends the head (SND.UNA) in recovery: a lost retransmission of
        // SND.UNA, resent, gets a whole RTO, not what is left of the one
        // the fast retransmit started (which a queue's delay can outlast).
        if kind == TxKind::SackRetransmit && seg.seq == self.snd_una {
            self.timer = Some((now + self.rtt.rto(), Timer::Retransmit));
        }
        // 7.2: restart the PTO "after transmitting new data".
        if matches!(kind, TxKind::New | TxKind::Fin) {
            self.rack_arm_pto(now);
        }
    }

    /// The reorder timer or the PTO may have fired; true if one did (the
    /// retransmission timer is then looked at on the next call).
    pub(super) fn rack_on_timeout(&mut self, now: Instant) -> bool {
        if self.closed {
            return false;
        }
        let (srtt, in_recovery) = (self.rtt.srtt(), self.cc.in_recovery());
        let Some(r) = self.rack.as_deref_mut() else {
            return false;
        };
        if r.reorder_deadline().is_some_and(|t| t <= now) {
            let lost = r.on_reorder_timeout(now, srtt, in_recovery);
            self.burst_left = self.max_burst;
            if let Some(end) = lost {
                self.stats.rack_timeouts += 1;
                self.rack_mark_lost(now, end);
            }
            return true;
        }
        if r.pto_deadline().is_some_and(|t| t <= now) {
            r.cancel_pto();
            self.burst_left = self.max_burst;
            if self.snd_una != self.snd_max && !in_recovery && self.pending.is_none() {
                self.pending = Some(TxKind::TailLossProbe);
            }
            return true;
        }
        false
    }

    /// RACK marked `[.., end)` lost: the scoreboard learns it and, outside
    /// recovery, recovery starts with a retransmission of SND.UNA.
    fn rack_mark_lost(&mut self, now: Instant, end: pep_core::Seq) {
        let action = self.cc.on_rack_loss(self.snd_una, self.snd_max, end);
        let sent = self.rack.as_deref_mut().and_then(|r| r.take_lost_sent());
        if let (Some(q), Some(sent)) = (self.quic.as_deref_mut(), sent) {
            q.on_congestion_event(now, sent, false);
        }
        // A lost retransmission is resent now, not at the RTO.
        while let Some((seq, end)) = self
            .rack
            .as_deref_mut()
            .and_then(|r| r.take_lost_retransmission())
        {
            self.stats.lost_retransmissions += 1;
            self.cc.on_rack_lost_retransmission(seq, end);
        }
        if let Some(LossAction::FastRetransmit { .. }) = action {
            self.stats.fast_retransmits += 1;
            self.pending = Some(TxKind::FastRetransmit);
            self.timer = Some((now + self.rtt.rto(), Timer::Retransmit));
        }
        if self.cc.in_recovery() {
            if let Some(r) = self.rack.as_deref_mut() {
                r.cancel_pto();
            }
        }
    }

    /// With `TcpConfig::quic_window`: the segment at `seq` is lost (the
    /// third duplicate ACK), a congestion event keyed by its send time.
    pub(super) fn quic_loss(&mut self, now: Instant, seq: pep_core::Seq) {
        let sent = self.rack.as_deref().and_then(|r| r.sent_at(seq));
        if let (Some(q), Some(sent)) = (self.quic.as_deref_mut(), sent) {
            q.on_congestion_event(now, sent, false);
        }
    }

    /// Arms the PTO if a probe may be sent (RFC 8985 7.2): data
    /// outstanding, no recovery, no probe outstanding (checked by `Rack`).
    fn rack_arm_pto(&mut self, now: Instant) {
        let outstanding = self.snd_max.bytes_since(self.snd_una) as u64;
        let rto_at = match self.timer {
            Some((at, Timer::Retransmit)) => Some(at),
            _ => None,
        };
        let srtt = self.rtt.srtt();
        let ok = outstanding > 0 && !self.cc.in_recovery();
        let Some(r) = self.rack.as_deref_mut() else {
            return;
        };
        if !ok {
            r.cancel_pto();
            return;
        }
        // "If FlightSize is equal to one segment" (a FIN counts as one).
        let one = outstanding <= self.mss as u64;
        r.arm_pto(now, Rack::pto(now, srtt, one, rto_at));
    }

    /// The tail loss probe (RFC 8985 7.3): a segment of new data if the
    /// receiver's window allows one, else the last data segment sent (the
    /// FIN, a segment of its own here, only if no data is outstanding).
    pub(super) fn send_probe(&mut self, now: Instant) -> (Segment, TxKind) {
        let new = self
            .next_in_window((self.rwnd as u64).min(self.sndbuf))
            .ok();
        let (seg, kind) = match new {
            Some((seg, TxKind::New)) => (seg, TxKind::New),
            _ => {
                let unsent = self.data_len().saturating_sub(self.una_off).min(1 << 30);
                let data_end = self.snd_una + unsent as u32;
                let limit = if self.snd_max.gt(data_end) {
                    data_end
                } else {
                    self.snd_max
                };
                let last = self.rack.as_deref().and_then(|r| r.last_undelivered(limit));
                let seg = match last {
                    Some((seq, end)) => self.segment_at(seq, end.bytes_since(seq) as u64),
                    None => self.segment_at(self.snd_max - 1, 1),
                };
                (seg, TxKind::TailLossProbe)
            }
        };
        let snd_max = self.snd_max.max(seg.end_seq());
        if let Some(r) = self.rack.as_deref_mut() {
            r.on_probe(snd_max, kind == TxKind::TailLossProbe);
        }
        self.stats.tail_loss_probes += 1;
        self.on_sent(now, &seg, kind);
        // 7.3: "the sender MUST arm the RTO timer, not the PTO timer".
        self.timer = Some((now + self.rtt.rto(), Timer::Retransmit));
        (seg, kind)
    }
}
