//! Delivery-rate sampling for a transport that reports acknowledgements by
//! send time (QUIC through quinn's `Controller`: each acknowledged packet
//! arrives as its send time and size, with no packet number).
//!
//! The same samples as [`super::RateSampler`] (Linux's `tcp_rate.c`, see
//! there for the rules), keyed by send time instead of sequence numbers:
//! each send records a snapshot of the delivery state (`delivered`,
//! `delivered_time`, `first_sent_time`, application-limited), one record
//! per send time (a batch of datagrams sent at one instant shares it). An
//! acknowledged packet finds its record by its send time; records older
//! than it that are still unacknowledged belong to packets that are lost
//! or reordered, and are dropped (a late acknowledgement then counts as
//! delivered but gives no sample). A batch of acknowledgements ends with
//! [`QuicRateSampler::end_acks`], which yields the batch's sample.

use alloc::collections::VecDeque;

use super::rate_sample::RateSample;
use crate::time::{Duration, Instant};

/// What one send recorded of the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Snapshot {
    sent: Instant,
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    app_limited: bool,
}

/// One connection's send-time-keyed delivery-rate sampler.
#[derive(Clone, Debug, Default)]
pub struct QuicRateSampler {
    /// Bytes acknowledged so far.
    delivered: u64,
    /// When `delivered` last grew.
    delivered_time: Instant,
    /// Start of the current send phase.
    first_sent_time: Instant,
    /// 0, or the delivered count (at least 1) that ends the
    /// application-limited period.
    app_limited: u64,
    /// Bytes found lost so far.
    lost: u64,
    /// Bytes found lost since the last sample.
    new_losses: u64,
    min_rtt: Option<Duration>,
    /// Bytes in flight as last known (the transport's count at the last
    /// batch of ACKs, plus sends, less losses).
    inflight: u64,
    /// One per send time, oldest first.
    records: VecDeque<Snapshot>,
    /// The batch of acknowledgements under way.
    batch: Batch,
}

#[derive(Clone, Copy, Debug, Default)]
struct Batch {
    /// Bytes acknowledged in it.
    newly: u64,
    /// The snapshot with the highest delivered count among those found.
    best: Option<Snapshot>,
    /// The newest send time acknowledged (its RTT is the sample's).
    newest: Option<Instant>,
}

impl QuicRateSampler {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    pub fn delivered_time(&self) -> Instant {
        self.delivered_time
    }

    pub fn lost(&self) -> u64 {
        self.lost
    }

    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// Send times recorded and not yet acknowledged or dropped.
    pub fn records(&self) -> usize {
        self.records.len()
    }

    /// `bytes` left at `now`. Returns true if nothing was in flight while
    /// the connection was application-limited (a restart from idle).
    pub fn on_sent(&mut self, now: Instant, bytes: u64) -> bool {
        let idle = self.inflight == 0;
        if idle {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        self.inflight += bytes;
        let snap = Snapshot {
            sent: now,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited != 0,
        };
        match self.records.back() {
            Some(b) if b.sent >= now => {} // the same send time: one record
            _ => self.records.push_back(snap),
        }
        idle && self.app_limited != 0
    }

    /// A packet of `bytes` sent at `sent` was acknowledged at `now`
    /// (packets of one batch come oldest first).
    pub fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64) {
        let _ = now;
        self.batch.newly += bytes;
        while self.records.front().is_some_and(|r| r.sent < sent) {
            // Unacknowledged and older than an acknowledged packet.
            self.records.pop_front();
        }
        if let Some(r) = self.records.front().filter(|r| r.sent == sent).copied() {
            // Favour the most recently sent: the highest prior delivered.
            if self.batch.best.is_none_or(|b| r.delivered >= b.delivered) {
                self.batch.best = Some(r);
                self.first_sent_time = r.sent;
            }
        }
        if self.batch.newest.is_none_or(|t| sent > t) {
            self.batch.newest = Some(sent);
        }
    }

    /// `bytes` were found lost.
    pub fn on_lost(&mut self, bytes: u64) {
        self.lost += bytes;
        self.new_losses += bytes;
        self.inflight = self.inflight.saturating_sub(bytes);
    }

    /// The batch of ACKs processed at `now` ended with `inflight` bytes in
    /// flight: its sample (`tcp_rate_gen`). `prior_in_flight` is unknown to
    /// the transport here and left at the in-flight count after the batch.
    pub fn end_acks(&mut self, now: Instant, inflight: u64) -> RateSample {
        let b = core::mem::take(&mut self.batch);
        self.inflight = inflight;
        self.delivered += b.newly;
        if let Some(sent) = b.newest {
            let rtt = now.saturating_since(sent);
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if b.newly > 0 {
            self.delivered_time = now;
        }
        let mut rs = RateSample {
            prior_in_flight: inflight + b.newly,
            acked_sacked: b.newly,
            losses: core::mem::take(&mut self.new_losses),
            rtt: b.newest.map(|s| now.saturating_since(s)),
            ..RateSample::default()
        };
        let Some(r) = b.best else { return rs };
        rs.prior_delivered = Some(r.delivered);
        rs.prior_time = Some(r.delivered_time);
        rs.is_app_limited = r.app_limited;
        rs.delivered = self.delivered - r.delivered;
        // The longer of the send and ACK phases, not below the min RTT.
        let interval = r
            .sent
            .saturating_since(r.first_sent_time)
            .max(now.saturating_since(r.delivered_time));
        rs.interval = match self.min_rtt {
            Some(m) if interval >= m => Some(interval),
            _ => None,
        };
        rs
    }

    /// Starts an application-limited period now.
    pub fn mark_app_limited(&mut self) {
        self.app_limited = (self.delivered + self.inflight).max(1);
    }
}
