//! RACK-TLP (RFC 8985): time-based loss detection and tail loss probes.
//!
//! Sans-IO: the transport reports every segment it sends
//! ([`Rack::on_sent`]) and every ACK ([`Rack::on_ack`]); RACK answers with
//! the highest sequence number it deems lost and the instants at which its
//! two timers want to run (the reorder timer, and the probe timeout PTO).
//!
//! * **RACK** (section 6): a segment is lost if a segment *sent after it*
//!   has been delivered (cumulatively ACKed or SACKed) and more than
//!   `RACK.rtt + RACK.reo_wnd` has passed since it was sent. RACK.xmit_ts
//!   and RACK.end_seq describe the most recently sent segment delivered so
//!   far; RACK.rtt is the RTT of the latest sent segment the last ACK
//!   delivered, even one sent before RACK's (6.2 step 2). A retransmitted
//!   segment whose RTT is below min_RTT cannot have been delivered by that
//!   retransmission and is skipped (6.2 step 2, without timestamps). `reo_wnd = min_RTT / 4`, capped at
//!   SRTT, or 0 while no reordering has been seen and either recovery is
//!   under way or DupThresh segments are SACKed (6.2 step 4). The window
//!   is multiplied by `reo_wnd_mult`, which grows by one per round trip in
//!   which a DSACK (RFC 2883) arrives and falls back to 1 after 16
//!   recoveries without one ([`Rack::update_reo_wnd`],
//!   [`Rack::on_recovery_exit`]).
//! * **Lost retransmissions** (6.2 step 5 applies to them too): a
//!   retransmission is judged by its own send time, so one that a later
//!   sent segment's delivery shows lost is reported once, as the segment
//!   it is ([`Rack::take_lost_retransmission`]), for the transport to
//!   resend that segment alone before its RTO (Linux's
//!   `tcp_mark_skb_lost` clears the lost skb's `TCPCB_SACKED_RETRANS`
//!   only; the other retransmissions stay in flight).
//! * **TLP** (section 7): with data outstanding and no recovery or probe
//!   under way, `PTO = 2 * SRTT` (plus `WCDelAckT` when one segment is in
//!   flight; 1 s before any RTT sample), never past the RTO's expiry. When
//!   it fires the transport sends one probe (new data if it may, else the
//!   last segment again); one probe per episode. An ACK at or beyond the
//!   probe's `TLP.end_seq` ends the episode; if the probe was a
//!   retransmission, a loss was repaired (without DSACK it cannot be shown
//!   spurious) and the congestion controller must react as to a loss.
//!
//! Sequence bounds are exclusive ends, as elsewhere in `cc`.

use alloc::collections::VecDeque;

use crate::seq::Seq;
use crate::time::{Duration, Instant};

/// RFC 8985's WCDelAckT, the worst-case delayed-ACK timer added to the PTO
/// when one segment is in flight: "RECOMMENDED value of 200 ms".
pub const WC_DEL_ACK: Duration = Duration::from_millis(200);

/// PTO before any RTT sample (RFC 8985 7.2: "PTO = 1 sec").
pub const INITIAL_PTO: Duration = Duration::from_secs(1);

/// One transmitted segment's record (RFC 8985 5.2 per-segment state).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sent {
    seq: Seq,
    end: Seq,
    /// Time of the latest (re)transmission.
    xmit: Instant,
    /// Retransmitted at least once.
    rexmit: bool,
    /// Cumulatively ACKed or SACKed.
    delivered: bool,
    /// Marked lost since its latest transmission.
    lost: bool,
}

/// What an ACK (or the reorder timer) tells the transport.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Detection {
    /// One past the highest octet of the segments RACK marks lost.
    pub lost_end: Option<Seq>,
    /// The probe that ended this TLP episode repaired a loss.
    pub tlp_repaired: bool,
    /// The RTT of the most recently sent segment this ACK delivered, if it
    /// was sent after every segment delivered before (RACK_update's new
    /// RACK.rtt; QUIC's `latest_rtt`, RFC 9002 5.1).
    pub rtt: Option<Duration>,
}

/// RACK-TLP state of one connection.
#[derive(Clone, Debug, Default)]
pub struct Rack {
    /// Outstanding segments, in sequence order (which for first
    /// transmissions is also sending order).
    segs: VecDeque<Sent>,
    /// RACK.xmit_ts and RACK.end_seq; `None` until something is delivered.
    xmit_ts: Option<Instant>,
    end_seq: Seq,
    /// RACK.rtt: the RTT of the latest sent segment that gave a sample,
    /// among those delivered by the last ACK that delivered one.
    rtt: Duration,
    /// RACK.min_RTT over non-retransmitted segments.
    min_rtt: Option<Duration>,
    /// RACK.reordering_seen.
    reordering_seen: bool,
    /// The reorder timer's deadline.
    reo_at: Option<Instant>,
    /// The probe timeout's deadline.
    pto_at: Option<Instant>,
    /// TLP.end_seq: SND.MAX when the probe was sent; `None` outside an
    /// episode.
    tlp_end: Option<Seq>,
    /// TLP.is_retrans.
    tlp_rexmit: bool,
    /// Probes sent.
    probes: u64,
    /// RACK.reo_wnd_mult (0 stands for the initial 1, so that `Default`
    /// is the RFC's initial state).
    reo_wnd_mult: u32,
    /// RACK.reo_wnd_persist: recoveries left before the multiplier resets.
    reo_wnd_persist: u32,
    /// RACK.dsack_round: SND.NXT when the last counted DSACK arrived; no
    /// further growth until SND.UNA passes it.
    dsack_round: Option<Seq>,
    /// ACKs that carried a DSACK.
    dsacks: u64,
    /// Retransmissions newly marked lost, not yet taken, in sequence
    /// order.
    lost_rexmits: VecDeque<(Seq, Seq)>,
    /// The latest send time among segments newly marked lost, not yet
    /// taken.
    lost_sent: Option<Instant>,
}

/// Recoveries without DSACK after which the window multiplier resets (RFC
/// 8985 6.2 step 4: "Reset the window after 16 DSACK-free recoveries").
pub const REO_WND_PERSIST: u32 = 16;

/// RFC 2883 section 4: an ACK reports a duplicate (D-SACK) if its first
/// SACK block lies below the cumulative ACK, or within its second block.
pub fn is_dsack(ack: Seq, blocks: &[(Seq, Seq)]) -> bool {
    match blocks {
        [] => false,
        [(l, _), ..] if (*l).lt(ack) => true,
        [(l, r), (l2, r2), ..] => (*l2).le(*l) && (*r).le(*r2),
        _ => false,
    }
}

/// RACK_sent_after(): `s` was sent after `(xmit, end)`, or at the same
/// instant and ends higher.
fn sent_after(s: Sent, xmit: Instant, end: Seq) -> bool {
    s.xmit > xmit || (s.xmit == xmit && s.end.gt(end))
}

impl Rack {
    pub fn new() -> Self {
        Rack::default()
    }

    /// RACK.rtt, once something was delivered.
    pub fn rtt(&self) -> Option<Duration> {
        self.xmit_ts.map(|_| self.rtt)
    }
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }
    pub fn reordering_seen(&self) -> bool {
        self.reordering_seen
    }
    /// Tail loss probes sent.
    pub fn probes(&self) -> u64 {
        self.probes
    }
    /// RACK.reo_wnd_mult.
    pub fn reo_wnd_mult(&self) -> u32 {
        self.reo_wnd_mult.max(1)
    }
    /// ACKs that carried a DSACK.
    pub fn dsacks(&self) -> u64 {
        self.dsacks
    }

    /// RACK_update_reo_wnd()'s DSACK part (RFC 8985 6.2 step 4), on every
    /// ACK before [`Rack::on_ack`]: `dsack` if the ACK reports a duplicate
    /// ([`is_dsack`]); SND.UNA after the ACK, and SND.NXT.
    pub fn update_reo_wnd(&mut self, snd_una: Seq, snd_nxt: Seq, dsack: bool) {
        if self.dsack_round.is_some_and(|r| snd_una.ge(r)) {
            self.dsack_round = None;
        }
        if dsack {
            self.dsacks += 1;
            if self.dsack_round.is_none() {
                // "Grow the reordering window per round that sees DSACK."
                self.dsack_round = Some(snd_nxt);
                self.reo_wnd_mult = self.reo_wnd_mult() + 1;
                self.reo_wnd_persist = REO_WND_PERSIST;
            }
        }
    }

    /// Fast recovery (or RTO recovery) ended without a DSACK on the ACK
    /// that ended it: one of the 16 recoveries the multiplier persists.
    pub fn on_recovery_exit(&mut self) {
        self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
        if self.reo_wnd_persist == 0 {
            self.reo_wnd_mult = 1;
        }
    }

    /// The lowest retransmission `[seq, end)` RACK has marked lost and not
    /// yet reported (each retransmission reported once per transmission);
    /// call until `None`.
    pub fn take_lost_retransmission(&mut self) -> Option<(Seq, Seq)> {
        self.lost_rexmits.pop_front()
    }
    /// The latest send time among the segments marked lost since the last
    /// call (a QUIC controller's congestion event is keyed by it).
    pub fn take_lost_sent(&mut self) -> Option<Instant> {
        self.lost_sent.take()
    }
    /// When the outstanding segment holding `seq` was last sent.
    pub fn sent_at(&self, seq: Seq) -> Option<Instant> {
        let i = self.segs.partition_point(|s| s.end.le(seq));
        self.segs.get(i).filter(|s| s.seq.le(seq)).map(|s| s.xmit)
    }
    /// A TLP episode is under way (a probe is outstanding).
    pub fn in_tlp_episode(&self) -> bool {
        self.tlp_end.is_some()
    }

    /// The earliest of the reorder timer and the PTO.
    pub fn deadline(&self) -> Option<Instant> {
        match (self.reo_at, self.pto_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The transport sent `[seq, end)` at `now` (`end - seq` may be 1 for a
    /// FIN); `rexmit` if it was sent before.
    pub fn on_sent(&mut self, now: Instant, seq: Seq, end: Seq, rexmit: bool) {
        let top = self.segs.back().map_or(seq, |s| s.end);
        // Sequence space sent before: refresh the records it overlaps.
        if seq.lt(top) {
            let from = self.segs.partition_point(|s| s.end.le(seq));
            for s in self.segs.iter_mut().skip(from) {
                if s.seq.ge(end) {
                    break;
                }
                s.xmit = now;
                s.rexmit = true;
                s.delivered = false;
                s.lost = false;
            }
        }
        let start = seq.max(top);
        if end.gt(start) {
            self.segs.push_back(Sent {
                seq: start,
                end,
                xmit: now,
                rexmit,
                delivered: false,
                lost: false,
            });
        }
    }

    /// An ACK arrived at `now` with cumulative ACK `una` and SACK `blocks`.
    /// `srtt` is the transport's smoothed RTT, `in_recovery` whether loss
    /// recovery is under way, `dupthresh` RFC 6675's DupThresh.
    pub fn on_ack(
        &mut self,
        now: Instant,
        una: Seq,
        blocks: &[(Seq, Seq)],
        srtt: Option<Duration>,
        in_recovery: bool,
        dupthresh: u32,
    ) -> Detection {
        self.on_ack_each(now, una, blocks, srtt, in_recovery, dupthresh, |_, _| {})
    }

    /// [`Rack::on_ack`], calling `delivered(sent, bytes)` for each segment
    /// the ACK newly delivers, with its latest send time (what a QUIC
    /// controller is told of each acknowledged packet).
    #[allow(clippy::too_many_arguments)]
    pub fn on_ack_each(
        &mut self,
        now: Instant,
        una: Seq,
        blocks: &[(Seq, Seq)],
        srtt: Option<Duration>,
        in_recovery: bool,
        dupthresh: u32,
        mut delivered: impl FnMut(Instant, u64),
    ) -> Detection {
        let mut d = Detection::default();
        // RFC 8985 6.2 steps 1-3, for each newly delivered segment. Step 2
        // takes them "in ascending order of Segment.xmit_ts", so RACK.rtt
        // ends as the RTT of the latest sent of them that gives a sample.
        let mut latest: Option<Sent> = None;
        let mut i = 0;
        while i < self.segs.len() {
            let s = self.segs[i];
            let covered = s.end.le(una) || blocks.iter().any(|&(l, r)| l.le(s.seq) && s.end.le(r));
            if covered && !s.delivered {
                self.segs[i].delivered = true;
                delivered(s.xmit, s.end.bytes_since(s.seq) as u64);
                if let Some(newer) = self.update(now, s) {
                    if newer {
                        d.rtt = Some(now.saturating_since(s.xmit));
                    }
                    if latest.is_none_or(|l| sent_after(s, l.xmit, l.end)) {
                        latest = Some(s);
                    }
                }
            }
            if s.seq.ge(una) && blocks.iter().all(|&(_, r)| r.le(s.seq)) {
                break; // nothing above is covered
            }
            i += 1;
        }
        if let Some(s) = latest {
            self.rtt = now.saturating_since(s.xmit);
        }
        while self.segs.front().is_some_and(|s| s.end.le(una)) {
            self.segs.pop_front();
        }
        // 7.4: the end of a TLP episode.
        if let Some(e) = self.tlp_end {
            if una.ge(e) {
                d.tlp_repaired = self.tlp_rexmit;
                self.tlp_end = None;
            }
        }
        let sacked = self.segs.iter().filter(|s| s.delivered).count() as u32;
        let reo_wnd = self.reo_wnd(srtt, in_recovery || sacked >= dupthresh);
        d.lost_end = self.detect(now, reo_wnd);
        d
    }

    /// The reorder timer fired: RACK_detect_loss() again (6.3).
    pub fn on_reorder_timeout(
        &mut self,
        now: Instant,
        srtt: Option<Duration>,
        in_recovery: bool,
    ) -> Option<Seq> {
        self.reo_at = None;
        let reo_wnd = self.reo_wnd(srtt, in_recovery);
        self.detect(now, reo_wnd)
    }

    /// RACK_update() (6.2 step 2) and reordering detection (step 3) for
    /// one newly delivered segment: `None` if it gives no RTT sample, else
    /// whether it became the most recently sent segment delivered. The
    /// caller sets RACK.rtt from every segment that gives a sample (the
    /// RFC's `RACK.rtt = rtt` precedes its RACK_sent_after() test, as
    /// `tp->rack.rtt_us = rtt_us` does in Linux's `tcp_rack_advance`); only
    /// RACK.xmit_ts and RACK.end_seq wait for a segment sent later.
    fn update(&mut self, now: Instant, s: Sent) -> Option<bool> {
        let rtt = now.saturating_since(s.xmit);
        if s.rexmit && self.min_rtt.is_some_and(|m| rtt < m) {
            // Delivered by the original, not this retransmission: no sample.
            return None;
        }
        if !s.rexmit {
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
        if self.xmit_ts.is_some() && s.end.lt(self.end_seq) && !s.rexmit {
            // Delivered below the highest delivered, never retransmitted:
            // the network reordered it.
            self.reordering_seen = true;
        }
        let newer = self.xmit_ts.is_none_or(|t| sent_after(s, t, self.end_seq));
        if newer {
            self.xmit_ts = Some(s.xmit);
            self.end_seq = s.end;
        }
        Some(newer)
    }

    /// RACK_update_reo_wnd() (6.2 step 4); `zero_ok`: in recovery, or
    /// DupThresh segments SACKed.
    pub fn reo_wnd(&self, srtt: Option<Duration>, zero_ok: bool) -> Duration {
        if !self.reordering_seen && zero_ok {
            return Duration::ZERO;
        }
        let w = self.min_rtt.map_or(Duration::ZERO, |m| m / 4) * self.reo_wnd_mult() as u64;
        match srtt {
            Some(s) => w.min(s),
            None => w,
        }
    }

    /// RACK_detect_loss() (6.2 step 5): marks lost every undelivered segment
    /// sent before RACK.xmit_ts whose time is up, and arms the reorder
    /// timer for the earliest one whose time is not up yet.
    fn detect(&mut self, now: Instant, reo_wnd: Duration) -> Option<Seq> {
        self.reo_at = None;
        let t = self.xmit_ts?;
        let mut lost_end = None;
        for s in self.segs.iter_mut() {
            if !s.rexmit && s.xmit > t {
                // First transmissions go out in sequence order: this one
                // and all above it were sent after RACK's segment (their
                // retransmissions later still).
                break;
            }
            if s.delivered || sent_after(*s, t, self.end_seq) {
                continue;
            }
            let due = s.xmit + self.rtt + reo_wnd;
            if due <= now {
                lost_end = Some(s.end);
                if !s.lost {
                    self.lost_sent = Some(self.lost_sent.map_or(s.xmit, |t| t.max(s.xmit)));
                }
                if s.rexmit && !s.lost {
                    self.lost_rexmits.push_back((s.seq, s.end));
                }
                s.lost = true;
            } else {
                self.reo_at = Some(self.reo_at.map_or(due, |a: Instant| a.min(due)));
            }
        }
        lost_end
    }

    // ---- TLP ------------------------------------------------------------

    /// TLP_calc_PTO() (7.2): `2 * SRTT`, plus [`WC_DEL_ACK`] if one segment
    /// is in flight; [`INITIAL_PTO`] without an RTT sample; never later
    /// than `rto_expiry` (the running retransmission timer's deadline).
    pub fn pto(
        now: Instant,
        srtt: Option<Duration>,
        one_segment: bool,
        rto_expiry: Option<Instant>,
    ) -> Duration {
        let mut pto = match srtt {
            Some(s) if one_segment => s * 2 + WC_DEL_ACK,
            Some(s) => s * 2,
            None => INITIAL_PTO,
        };
        if let Some(e) = rto_expiry {
            pto = pto.min(e.saturating_since(now));
        }
        pto
    }

    /// Arms (or re-arms) the PTO at `now + pto` if a probe may be sent: the
    /// transport checked that data is outstanding, SACK is on and no
    /// recovery is under way; here, no probe may be outstanding (7.2).
    pub fn arm_pto(&mut self, now: Instant, pto: Duration) {
        if self.tlp_end.is_none() {
            self.pto_at = Some(now + pto);
        }
    }

    /// Disarms the PTO (recovery started, or nothing is outstanding).
    pub fn cancel_pto(&mut self) {
        self.pto_at = None;
    }

    /// The PTO's deadline, if armed.
    pub fn pto_deadline(&self) -> Option<Instant> {
        self.pto_at
    }
    /// The reorder timer's deadline, if armed.
    pub fn reorder_deadline(&self) -> Option<Instant> {
        self.reo_at
    }

    /// The probe's resend (RFC 8985 7.3: "the highest-sequence segment
    /// sent"): the highest segment not delivered that starts below `limit`.
    pub fn last_undelivered(&self, limit: Seq) -> Option<(Seq, Seq)> {
        self.segs
            .iter()
            .rev()
            .find(|s| !s.delivered && s.seq.lt(limit))
            .map(|s| (s.seq, s.end.min(limit)))
    }

    /// A probe went out; SND.MAX is now `snd_max`. `rexmit`: it resent
    /// data (TLP.is_retrans).
    pub fn on_probe(&mut self, snd_max: Seq, rexmit: bool) {
        self.tlp_end = Some(snd_max);
        self.tlp_rexmit = rexmit;
        self.probes += 1;
    }

    /// The retransmission timer fired: the TLP episode and both timers end.
    pub fn on_rto(&mut self) {
        self.tlp_end = None;
        self.pto_at = None;
        self.reo_at = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }
    fn t(v: u64) -> Instant {
        Instant::ZERO + ms(v)
    }
    const MSS: u32 = 1000;

    /// Segments 0..n of MSS bytes sent 1 ms apart from t = 0.
    fn sent(n: u32) -> Rack {
        let mut r = Rack::new();
        for i in 0..n {
            r.on_sent(t(i as u64), Seq(i * MSS), Seq((i + 1) * MSS), false);
        }
        r
    }

    #[test]
    fn segment_sent_before_the_delivered_one_by_more_than_the_window_is_lost() {
        // 0..4 sent at 0..3 ms; 0 delivered at 100 ms (min_RTT 100 ms,
        // reo_wnd 25 ms); segment 3 SACKed at 103 ms: RACK.rtt = 100 ms.
        let mut r = sent(4);
        let d = r.on_ack(t(100), Seq(MSS), &[], Some(ms(100)), false, 3);
        assert_eq!(d.lost_end, None);
        let sack = [(Seq(3 * MSS), Seq(4 * MSS))];
        let d = r.on_ack(t(103), Seq(MSS), &sack, Some(ms(100)), false, 3);
        assert_eq!(r.rtt(), Some(ms(100)));
        assert_eq!(r.reo_wnd(Some(ms(100)), false), ms(25));
        // Segment 1 (sent at 1 ms) is due at 1 + 100 + 25 = 126 ms.
        assert_eq!(d.lost_end, None, "within the reorder window");
        assert_eq!(r.reorder_deadline(), Some(t(126)));
        assert_eq!(r.on_reorder_timeout(t(125), Some(ms(100)), false), None);
        assert_eq!(r.reorder_deadline(), Some(t(126)));
        // At 127 ms: segments 1 and 2 (due 126 and 127 ms) are lost.
        let lost = r.on_reorder_timeout(t(127), Some(ms(100)), false);
        assert_eq!(lost, Some(Seq(3 * MSS)));
        assert_eq!(r.reorder_deadline(), None);
    }

    #[test]
    fn a_late_delivery_of_an_earlier_segment_sets_rack_rtt_and_delays_loss() {
        // RFC 8985 6.2 step 2: RACK.rtt = rtt for every newly delivered
        // segment that gives a sample, even one sent before RACK's.
        // 0..5 sent at 0..4 ms; 0 delivered at 100 ms (min_RTT 100 ms,
        // reo_wnd 25 ms); 4 SACKed at 104 ms: RACK.xmit_ts 4 ms, RACK.rtt
        // 100 ms, segment 1 due at 1 + 100 + 25 = 126 ms.
        let mut r = sent(5);
        r.on_ack(t(100), Seq(MSS), &[], Some(ms(100)), false, 3);
        let sack = [(Seq(4 * MSS), Seq(5 * MSS))];
        r.on_ack(t(104), Seq(MSS), &sack, Some(ms(100)), false, 3);
        assert_eq!(r.reorder_deadline(), Some(t(126)));
        // Segment 2 (sent at 2 ms) SACKed at 120 ms: RTT 118 ms. RACK's
        // segment stays 4, but RACK.rtt is 118 ms, so segment 1 is due at
        // 1 + 118 + 25 = 144 ms and segment 3 at 146 ms.
        let sack = [(Seq(2 * MSS), Seq(3 * MSS)), (Seq(4 * MSS), Seq(5 * MSS))];
        let d = r.on_ack(t(120), Seq(MSS), &sack, Some(ms(100)), false, 3);
        assert_eq!(d.lost_end, None);
        assert_eq!(r.rtt(), Some(ms(118)));
        assert_eq!(r.reorder_deadline(), Some(t(144)));
        // With RACK.rtt left at 100 ms, 1 and 3 would be lost by 130 ms.
        assert_eq!(r.on_reorder_timeout(t(130), Some(ms(100)), false), None);
        let lost = r.on_reorder_timeout(t(144), Some(ms(100)), false);
        assert_eq!(lost, Some(Seq(2 * MSS)));
        assert_eq!(r.reorder_deadline(), Some(t(146)));
    }

    #[test]
    fn rack_rtt_comes_from_the_latest_sent_segment_an_ack_delivers() {
        // 6.2 step 2 takes an ACK's segments in ascending send time: a
        // retransmission of 1 (sent at 150 ms) and originals 2 and 3 (sent
        // at 2 and 3 ms) delivered at 260 ms leave RACK.rtt at 110 ms.
        let mut r = sent(4);
        r.on_ack(t(100), Seq(MSS), &[], Some(ms(100)), false, 3);
        r.on_sent(t(150), Seq(MSS), Seq(2 * MSS), true);
        r.on_ack(t(260), Seq(4 * MSS), &[], Some(ms(100)), true, 3);
        assert_eq!(r.rtt(), Some(ms(110)));
    }

    #[test]
    fn reordering_within_the_window_is_not_loss_and_is_remembered() {
        let mut r = sent(4);
        r.on_ack(t(100), Seq(MSS), &[], Some(ms(100)), false, 3);
        let sack = [(Seq(2 * MSS), Seq(3 * MSS))];
        r.on_ack(t(102), Seq(MSS), &sack, Some(ms(100)), false, 3);
        // Segment 1 arrives 10 ms late, inside the 25 ms window: no loss,
        // and its delivery below RACK.end_seq is reordering.
        let d = r.on_ack(t(111), Seq(3 * MSS), &[], Some(ms(100)), false, 3);
        assert_eq!(d.lost_end, None);
        assert!(r.reordering_seen());
        // With reordering seen, the window stays min_RTT/4 even in recovery.
        assert_eq!(r.reo_wnd(Some(ms(100)), true), ms(25));
    }

    #[test]
    fn the_window_is_zero_without_reordering_once_dupthresh_segments_are_sacked() {
        let mut r = sent(6);
        r.on_ack(t(100), Seq(MSS), &[], Some(ms(100)), false, 3);
        // Segments 2, 3, 4 SACKed at 104 ms (segment 1 sent at 1 ms, RACK.rtt
        // 100 ms from segment 4): reo_wnd 0, so 1 is due at 101 ms: lost.
        let sack = [(Seq(2 * MSS), Seq(5 * MSS))];
        let d = r.on_ack(t(104), Seq(MSS), &sack, Some(ms(100)), false, 3);
        assert_eq!(d.lost_end, Some(Seq(2 * MSS)));
        // Capped at SRTT.
        let mut q = sent(2);
        q.on_ack(t(100), Seq(2 * MSS), &[], Some(ms(100)), false, 3);
        assert_eq!(q.reo_wnd(Some(ms(10)), false), ms(10));
    }

    #[test]
    fn a_retransmission_is_judged_by_its_own_send_time() {
        let mut r = sent(4);
        r.on_ack(t(100), Seq(MSS), &[], Some(ms(100)), false, 3);
        // Segment 1 resent at 150 ms; 3 SACKed at 160 ms (RTT 157 ms from a
        // 3 ms send): the resend went out after segment 3, so segment 3's
        // delivery says nothing of it.
        r.on_sent(t(150), Seq(MSS), Seq(2 * MSS), true);
        let sack = [(Seq(3 * MSS), Seq(4 * MSS))];
        let d = r.on_ack(t(160), Seq(MSS), &sack, Some(ms(100)), true, 3);
        // Segment 2 (sent at 2 ms, due 2 + 157 + 0 = 159 ms) is lost; 1 is not.
        assert_eq!(d.lost_end, Some(Seq(3 * MSS)));
        assert_eq!(
            r.last_undelivered(Seq(4 * MSS)),
            Some((Seq(2 * MSS), Seq(3 * MSS)))
        );
        // A cumulative ACK for the resend 5 ms later (below min_RTT): the
        // original's delivery, not the resend's: no RTT sample.
        r.on_ack(t(155), Seq(2 * MSS), &sack, Some(ms(100)), true, 3);
        assert_eq!(r.rtt(), Some(ms(157)));
    }

    #[test]
    fn pto_is_two_srtt_plus_the_delayed_ack_bound_for_one_segment() {
        let srtt = Some(ms(40));
        assert_eq!(Rack::pto(t(0), srtt, false, None), ms(80));
        assert_eq!(Rack::pto(t(0), srtt, true, None), ms(280));
        assert_eq!(Rack::pto(t(0), None, false, None), Duration::from_secs(1));
        // Never past the RTO's expiry.
        assert_eq!(Rack::pto(t(10), srtt, false, Some(t(60))), ms(50));
    }

    #[test]
    fn one_probe_per_episode_and_its_ack_reports_a_repaired_loss() {
        let mut r = sent(3);
        r.on_ack(t(100), Seq(2 * MSS), &[], Some(ms(100)), false, 3);
        r.arm_pto(t(100), ms(200));
        assert_eq!(r.deadline(), Some(t(300)));
        assert_eq!(
            r.last_undelivered(Seq(3 * MSS)),
            Some((Seq(2 * MSS), Seq(3 * MSS)))
        );
        r.cancel_pto();
        r.on_sent(t(300), Seq(2 * MSS), Seq(3 * MSS), true);
        r.on_probe(Seq(3 * MSS), true);
        assert!(r.in_tlp_episode());
        r.arm_pto(t(300), ms(200));
        assert_eq!(r.pto_deadline(), None, "one probe per episode");
        let d = r.on_ack(t(400), Seq(3 * MSS), &[], Some(ms(100)), false, 3);
        assert!(d.tlp_repaired);
        assert!(!r.in_tlp_episode());
        // A probe of new data repairs nothing.
        r.on_sent(t(400), Seq(3 * MSS), Seq(4 * MSS), false);
        r.on_probe(Seq(4 * MSS), false);
        let d = r.on_ack(t(500), Seq(4 * MSS), &[], Some(ms(100)), false, 3);
        assert!(!d.tlp_repaired);
        assert_eq!(r.probes(), 2);
    }

    #[test]
    fn dsack_is_a_first_block_below_the_ack_or_inside_the_second() {
        let b = |v: &[(u32, u32)]| v.iter().map(|&(l, r)| (Seq(l), Seq(r))).collect::<Vec<_>>();
        assert!(is_dsack(Seq(5000), &b(&[(3000, 4000)])));
        assert!(is_dsack(Seq(1000), &b(&[(3000, 4000), (2000, 5000)])));
        assert!(!is_dsack(Seq(1000), &b(&[(3000, 4000), (5000, 6000)])));
        assert!(!is_dsack(Seq(1000), &b(&[(3000, 4000)])));
        assert!(!is_dsack(Seq(1000), &[]));
    }

    #[test]
    fn the_window_grows_once_per_round_with_dsack_and_resets_after_16_recoveries() {
        let mut r = sent(4);
        r.on_ack(t(100), Seq(MSS), &[], Some(ms(200)), false, 3);
        assert_eq!(r.reo_wnd(Some(ms(200)), false), ms(25));
        // A DSACK: x2, and the round lasts until SND.UNA reaches SND.NXT
        // (4000) as it was then.
        r.update_reo_wnd(Seq(MSS), Seq(4 * MSS), true);
        assert_eq!(
            (r.reo_wnd_mult(), r.reo_wnd(Some(ms(200)), false)),
            (2, ms(50))
        );
        // A second DSACK in the same round does not grow it again.
        r.update_reo_wnd(Seq(2 * MSS), Seq(5 * MSS), true);
        assert_eq!(r.reo_wnd_mult(), 2);
        // Next round.
        r.update_reo_wnd(Seq(4 * MSS), Seq(6 * MSS), true);
        assert_eq!(
            (r.reo_wnd_mult(), r.reo_wnd(Some(ms(200)), false)),
            (3, ms(75))
        );
        // Capped at SRTT.
        assert_eq!(r.reo_wnd(Some(ms(60)), false), ms(60));
        assert_eq!(r.dsacks(), 3);
        // 15 DSACK-free recoveries keep it, the 16th resets it.
        for _ in 0..15 {
            r.on_recovery_exit();
        }
        assert_eq!(r.reo_wnd_mult(), 3);
        r.on_recovery_exit();
        assert_eq!(
            (r.reo_wnd_mult(), r.reo_wnd(Some(ms(200)), false)),
            (1, ms(25))
        );
    }

    #[test]
    fn a_lost_retransmission_is_reported_once_when_a_later_send_is_delivered() {
        // 0..4 sent at 0..3 ms; 0 delivered at 100 ms (min_RTT 100 ms).
        let mut r = sent(4);
        r.on_ack(t(100), Seq(MSS), &[], Some(ms(100)), true, 3);
        // Segment 1 resent at 110 ms, segment 4 (new) sent at 120 ms and
        // SACKed at 220 ms: RACK.rtt 100 ms, reo_wnd 0 in recovery. The
        // resend (due 110 + 100 = 210 ms) is lost, and so are 2 and 3.
        r.on_sent(t(110), Seq(MSS), Seq(2 * MSS), true);
        r.on_sent(t(120), Seq(4 * MSS), Seq(5 * MSS), false);
        let sack = [(Seq(4 * MSS), Seq(5 * MSS))];
        let d = r.on_ack(t(220), Seq(MSS), &sack, Some(ms(100)), true, 3);
        assert_eq!(d.lost_end, Some(Seq(4 * MSS)));
        assert_eq!(r.take_lost_retransmission(), Some((Seq(MSS), Seq(2 * MSS))));
        assert_eq!(r.take_lost_retransmission(), None);
        // Still lost on the next ACK, but not reported again ...
        r.on_ack(t(221), Seq(MSS), &sack, Some(ms(100)), true, 3);
        assert_eq!(r.take_lost_retransmission(), None);
        // ... until it is resent and that resend is found lost too.
        r.on_sent(t(222), Seq(MSS), Seq(2 * MSS), true);
        r.on_sent(t(223), Seq(5 * MSS), Seq(6 * MSS), false);
        let sack = [(Seq(4 * MSS), Seq(6 * MSS))];
        r.on_ack(t(330), Seq(MSS), &sack, Some(ms(100)), true, 3);
        assert_eq!(r.take_lost_retransmission(), Some((Seq(MSS), Seq(2 * MSS))));
    }

    #[test]
    fn original_segments_above_a_delivered_retransmission_are_still_judged() {
        // RACK's segment is a retransmission of segment 0 (low end_seq) sent
        // at 150 ms and delivered at 260 ms; segments 1 and 2, sent at 1 and
        // 2 ms and undelivered, are lost: they were sent before it.
        let mut r = sent(4);
        r.on_ack(
            t(100),
            Seq(0),
            &[(Seq(3 * MSS), Seq(4 * MSS))],
            Some(ms(100)),
            false,
            3,
        );
        r.on_sent(t(150), Seq(0), Seq(MSS), true);
        let d = r.on_ack(
            t(260),
            Seq(MSS),
            &[(Seq(3 * MSS), Seq(4 * MSS))],
            Some(ms(100)),
            true,
            3,
        );
        assert_eq!(d.lost_end, Some(Seq(3 * MSS)));
    }
}
