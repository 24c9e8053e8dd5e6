//! Delivery-rate sampling, as Linux's `net/ipv4/tcp_rate.c`: each ACK
//! yields a [`RateSample`], the data delivered over the interval between
//! the send of the newest packet it (S)ACKs and that ACK, with the send
//! phase's length as a floor against ACK compression.
//!
//! The sender records, per sent segment, a snapshot of the connection's
//! delivery state (`tcp_rate_skb_sent`: `delivered`, `delivered_mstamp`,
//! `first_tx_mstamp`, `app_limited`); this sampler keeps those records so
//! the transport needs no per-segment state of its own. It is generic over
//! the records' key: by sequence here (TCP: one per segment in flight, a
//! `VecDeque` that grows to the largest flight and is then reused), by
//! send time in `quic_rate.rs` (QUIC); the rules are written once, for
//! both. Counts are in bytes (Linux counts
//! packets); time is integer ns.
//!
//! Differences from Linux, all small: losses are the bytes the transport
//! retransmits (Linux counts packets when it marks them lost, a little
//! earlier); `tcp_min_rtt` is the minimum over the whole connection (Linux:
//! a 300 s window); a segment acknowledged in part counts its acknowledged
//! bytes as delivered but gives its snapshot only when wholly acknowledged.

use alloc::collections::VecDeque;

use crate::seq::Seq;
use crate::time::{Duration, Instant};

/// What a send recorded of the connection (`TCP_SKB_CB(skb)->tx`): the
/// snapshot every record key carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Tx {
    /// When it (last) left.
    pub(super) sent: Instant,
    /// `tx.delivered`: bytes delivered when it was sent.
    delivered: u64,
    /// `tx.delivered_mstamp`: when that count was last raised.
    delivered_time: Instant,
    /// `tx.first_tx_mstamp`: the send time of the packet that started the
    /// send phase it belongs to.
    first_sent_time: Instant,
    /// `tx.is_app_limited`.
    app_limited: bool,
}

/// A segment's record, keyed by sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TxRecord {
    seq: Seq,
    end: Seq,
    tx: Tx,
    /// Retransmitted (`TCPCB_RETRANS`): no RTT sample from it (Karn).
    retrans: bool,
    /// SACKed already: delivered, so the cumulative ACK skips it.
    sacked: bool,
}

/// Records keyed by sequence (TCP): one per segment in flight (sent, not
/// cumulatively ACKed), in order.
#[derive(Clone, Debug, Default)]
pub struct BySeq(VecDeque<TxRecord>);

/// Which of two delivered records with the same prior delivered count a
/// sample takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ties {
    /// The first found: Linux's `after(tx.delivered, prior_delivered)`
    /// (TCP, whose records come out of send order: SACK blocks, resends).
    First,
    /// The last found: the most recently sent when records come in send
    /// order, as newer Linux picks by send time (`tcp_skb_sent_after`).
    Last,
}

/// What one ACK (or one batch of them) delivered, as
/// `tcp_rate_skb_delivered` finds it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Delivery {
    /// Bytes newly acknowledged.
    pub(super) newly: u64,
    /// The record the sample is taken from.
    best: Option<Tx>,
    /// That record was a retransmission.
    retrans: bool,
    /// The newest send time that gives an RTT sample.
    pub(super) newest: Option<Instant>,
}

/// One ACK's delivery-rate sample (Linux's `struct rate_sample`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateSample {
    /// `prior_delivered`: the connection's delivered count when the newest
    /// packet this ACK delivered was sent; `None` when no packet with a
    /// snapshot was delivered (the sample is invalid).
    pub prior_delivered: Option<u64>,
    /// `prior_mstamp`: when the delivered count was `prior_delivered`
    /// (the ACK phase starts there).
    pub prior_time: Option<Instant>,
    /// `delivered`: bytes delivered over the interval.
    pub delivered: u64,
    /// `interval_us`: the longer of the send and ACK phases; `None`: not a
    /// valid sample (no snapshot, or shorter than the minimum RTT).
    pub interval: Option<Duration>,
    /// `rtt_us`: the RTT of the most recently sent packet this ACK delivered
    /// that was never retransmitted.
    pub rtt: Option<Duration>,
    /// `acked_sacked`: bytes newly ACKed or SACKed by this ACK.
    pub acked_sacked: u64,
    /// `losses`: bytes newly found lost since the last ACK.
    pub losses: u64,
    /// `prior_in_flight`: bytes in flight before this ACK (the transport's).
    pub prior_in_flight: u64,
    /// `is_app_limited`: the newest delivered packet was sent while the
    /// sender had too little data to fill its window.
    pub is_app_limited: bool,
    /// `is_retrans`: the newest delivered packet was a retransmission.
    pub is_retrans: bool,
}

impl RateSample {
    /// The delivery rate in bytes per second, for a valid sample.
    pub fn rate(&self) -> Option<u64> {
        let iv = self.interval?.as_nanos();
        self.prior_delivered?;
        (iv > 0).then(|| (self.delivered as u128 * 1_000_000_000 / iv as u128) as u64)
    }
}

/// One connection's delivery-rate sampler (the `tcp_sock` fields
/// `tcp_rate.c` uses), generic over how its records are keyed: by
/// sequence ([`BySeq`], TCP) or by send time
/// ([`super::quic_rate::BySendTime`], QUIC). The rules (snapshot, which
/// record a sample takes, the interval, app-limited periods) are written
/// once here; each key only finds its records.
#[derive(Clone, Debug, Default)]
pub struct RateSampler<K = BySeq> {
    /// `tp->delivered`: bytes ACKed or SACKed so far.
    delivered: u64,
    /// `tp->delivered_mstamp`: when `delivered` last grew.
    delivered_time: Instant,
    /// `tp->first_tx_mstamp`: start of the current send phase.
    first_sent_time: Instant,
    /// `tp->app_limited`: 0, or the delivered count (at least 1) that
    /// ends the application-limited period.
    app_limited: u64,
    /// `tp->lost`: bytes found lost so far.
    lost: u64,
    /// Bytes found lost since the last ACK's sample.
    new_losses: u64,
    /// `tcp_min_rtt`.
    min_rtt: Option<Duration>,
    /// The records, by their key.
    pub(super) by_key: K,
}

impl<K: Default> RateSampler<K> {
    pub fn new() -> Self {
        Self::default()
    }
}

impl<K> RateSampler<K> {
    /// Bytes delivered (ACKed or SACKed) so far: `tp->delivered`.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
    /// When the delivered count last grew: `tp->delivered_mstamp`.
    pub fn delivered_time(&self) -> Instant {
        self.delivered_time
    }
    /// Bytes found lost so far: `tp->lost`.
    pub fn lost(&self) -> u64 {
        self.lost
    }
    /// The minimum RTT seen: `tcp_min_rtt`.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }
    /// Whether the connection is in an application-limited period.
    pub fn is_app_limited(&self) -> bool {
        self.app_limited != 0
    }

    /// An RTT sample from outside an ACK of data (the SYN-ACK's).
    pub fn on_rtt(&mut self, rtt: Duration) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
    }

    /// `tcp_rate_skb_sent`: the snapshot of a send at `now`; `idle`:
    /// nothing was in flight. Also returns whether that idle connection
    /// was application-limited: Linux's `CA_EVENT_TX_START` with
    /// `tp->app_limited`, a restart from idle.
    pub(super) fn snapshot(&mut self, now: Instant, idle: bool) -> (Tx, bool) {
        if idle {
            // "If there are no packets in flight yet, then we know that any
            // ACKs after now indicate that the network was able to deliver
            // those packets completely in the sampling interval between now
            // and the next ACK."
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        let tx = Tx {
            sent: now,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited != 0,
        };
        (tx, idle && self.app_limited != 0)
    }

    /// `tcp_rate_skb_delivered`: favour the most recently sent record, the
    /// one with the highest prior delivered count.
    pub(super) fn deliver(&mut self, d: &mut Delivery, tx: &Tx, retrans: bool, ties: Ties) {
        // Linux: `!rs->prior_delivered || after(tx.delivered, prior_delivered)`
        // (a zero count reads as unset, so the last of them wins).
        let take = d.best.is_none_or(|b| {
            b.delivered == 0
                || tx.delivered > b.delivered
                || (ties == Ties::Last && tx.delivered == b.delivered)
        });
        if take {
            d.best = Some(*tx);
            d.retrans = retrans;
            // The send phase: from the first send of its window to this one.
            self.first_sent_time = tx.sent;
        }
    }

    /// `bytes` were found lost.
    pub(super) fn count_lost(&mut self, bytes: u64) {
        self.lost += bytes;
        self.new_losses += bytes;
    }

    /// Counts what `d` delivered at `now`, then `tcp_rate_gen`: the sample,
    /// with `prior_in_flight` bytes in flight before the ACK.
    pub(super) fn generate(
        &mut self,
        now: Instant,
        d: Delivery,
        prior_in_flight: u64,
    ) -> RateSample {
        self.delivered += d.newly;
        let rtt = d.newest.map(|sent| now.saturating_since(sent));
        if let Some(rtt) = rtt {
            self.on_rtt(rtt);
        }
        // "Clear app limited if bubble is acked and gone."
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if d.newly > 0 {
            self.delivered_time = now;
        }
        let mut rs = RateSample {
            prior_in_flight,
            acked_sacked: d.newly,
            losses: core::mem::take(&mut self.new_losses),
            rtt,
            ..RateSample::default()
        };
        let Some(r) = d.best else { return rs };
        rs.prior_delivered = Some(r.delivered);
        rs.prior_time = Some(r.delivered_time);
        rs.is_app_limited = r.app_limited;
        rs.is_retrans = d.retrans;
        rs.delivered = self.delivered - r.delivered;
        // "Usually the ACK phase is longer, but with ACK compression the
        // send phase can be longer. To be safe we use the longer phase."
        let send_phase = r.sent.saturating_since(r.first_sent_time);
        let ack_phase = now.saturating_since(r.delivered_time);
        let interval = send_phase.max(ack_phase);
        // "Normally we expect interval_us >= min-rtt."
        rs.interval = match self.min_rtt {
            Some(m) if interval >= m => Some(interval),
            _ => None,
        };
        rs
    }

    /// Starts an application-limited period now, with `inflight` bytes in
    /// flight (BBR's PROBE_RTT does too: "Ignore low rate samples during
    /// this mode").
    pub(super) fn start_app_limited(&mut self, inflight: u64) {
        self.app_limited = (self.delivered + inflight).max(1);
    }
}

/// The sampler keyed by sequence: the TCP sender's.
impl RateSampler<BySeq> {
    /// `tcp_rate_skb_sent`: `[seq, end)` left at `now`, new data at SND.MAX
    /// or (`retrans`) a resend of data sent before. Returns true on a
    /// restart from idle (see [`Self::snapshot`]).
    pub fn on_sent(&mut self, now: Instant, seq: Seq, end: Seq, retrans: bool) -> bool {
        let (tx, restart) = self.snapshot(now, self.by_key.0.is_empty());
        let records = &mut self.by_key.0;
        if retrans {
            // Re-snapshot every record the resend covers (Linux calls
            // tcp_rate_skb_sent on each retransmitted skb).
            let from = records.partition_point(|r| r.end.le(seq));
            for r in records.iter_mut().skip(from) {
                if r.seq.ge(end) {
                    break;
                }
                if !r.sacked {
                    r.tx = tx;
                    r.retrans = true;
                }
            }
        } else if seq.lt(end) {
            records.push_back(TxRecord {
                seq,
                end,
                tx,
                retrans: false,
                sacked: false,
            });
        }
        restart
    }

    /// `bytes` were found lost (the transport resends them).
    pub fn on_lost(&mut self, bytes: u64) {
        self.count_lost(bytes);
    }

    /// An ACK arrived at `now` moving SND.UNA to `una`, with SACK `blocks`,
    /// while `prior_in_flight` bytes were in flight before it:
    /// `tcp_rate_skb_delivered` for each segment it delivers, then
    /// `tcp_rate_gen`.
    pub fn on_ack(
        &mut self,
        now: Instant,
        una: Seq,
        blocks: &[(Seq, Seq)],
        prior_in_flight: u64,
    ) -> RateSample {
        let mut d = Delivery::default();
        // Cumulatively ACKed segments.
        while let Some(r) = self.by_key.0.front_mut() {
            if r.end.le(una) {
                let r = self.by_key.0.pop_front().unwrap();
                if !r.sacked {
                    d.newly += r.end.bytes_since(r.seq) as u64;
                    self.deliver_record(&mut d, &r);
                }
            } else {
                if r.seq.lt(una) && !r.sacked {
                    d.newly += una.bytes_since(r.seq) as u64;
                    r.seq = una;
                }
                break;
            }
        }
        // SACKed segments (a D-SACK block below SND.UNA finds none).
        for &(start, end) in blocks {
            let from = self.by_key.0.partition_point(|r| r.end.le(start));
            let mut i = from;
            while i < self.by_key.0.len() {
                let r = self.by_key.0[i];
                if r.seq.ge(end) {
                    break;
                }
                if !r.sacked && r.seq.ge(start) && r.end.le(end) {
                    self.by_key.0[i].sacked = true;
                    d.newly += r.end.bytes_since(r.seq) as u64;
                    self.deliver_record(&mut d, &r);
                }
                i += 1;
            }
        }
        self.generate(now, d, prior_in_flight)
    }

    fn deliver_record(&mut self, d: &mut Delivery, r: &TxRecord) {
        // The RTT of the newest never-retransmitted segment (Karn).
        if !r.retrans && d.newest.is_none_or(|t| r.tx.sent > t) {
            d.newest = Some(r.tx.sent);
        }
        self.deliver(d, &r.tx, r.retrans, Ties::First);
    }

    /// `tcp_rate_check_app_limited`: the sender found nothing to send with
    /// `inflight` bytes in flight; `cwnd_limited`: the window, not the
    /// application, held it back; `lost_unsent`: data found lost is still
    /// waiting to be resent. Marks an application-limited period.
    pub fn check_app_limited(&mut self, inflight: u64, cwnd_limited: bool, lost_unsent: bool) {
        if !cwnd_limited && !lost_unsent {
            self.mark_app_limited(inflight);
        }
    }

    /// Starts an application-limited period now.
    pub fn mark_app_limited(&mut self, inflight: u64) {
        self.start_app_limited(inflight);
    }

    /// Segments sent and not cumulatively acknowledged.
    pub fn records_in_flight(&self) -> usize {
        self.by_key.0.len()
    }
}
