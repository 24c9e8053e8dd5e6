//! Delivery-rate sampling for a transport that reports acknowledgements by
//! send time (QUIC through quinn's `Controller`: each acknowledged packet
//! arrives as its send time and size, with no packet number).
//!
//! The one [`RateSampler`] (Linux's `tcp_rate.c`, see `rate_sample.rs`
//! for the rules) with its records keyed by send time instead of
//! sequence numbers: one record per send time (a batch of datagrams sent
//! at one instant shares it). An acknowledged packet finds its record by
//! its send time; records older than it that are still unacknowledged
//! belong to packets that are lost or reordered, and are dropped (a late
//! acknowledgement then counts as delivered but gives no sample). A batch
//! of acknowledgements ends with [`QuicRateSampler::end_acks`], which
//! yields the batch's sample.

use alloc::collections::VecDeque;

use super::rate_sample::{Delivery, RateSample, RateSampler, Ties, Tx};
use crate::time::Instant;

/// Records keyed by send time, and what the transport reports in batches.
#[derive(Clone, Debug, Default)]
pub struct BySendTime {
    /// One per send time, oldest first.
    records: VecDeque<Tx>,
    /// Bytes in flight as last known (the transport's count at the last
    /// batch of ACKs, plus sends, less losses).
    inflight: u64,
    /// The batch of acknowledgements under way.
    batch: Delivery,
}

/// One connection's send-time-keyed delivery-rate sampler.
pub type QuicRateSampler = RateSampler<BySendTime>;

impl RateSampler<BySendTime> {
    /// Send times recorded and not yet acknowledged or dropped.
    pub fn records(&self) -> usize {
        self.by_key.records.len()
    }

    /// `bytes` left at `now`. Returns true if nothing was in flight while
    /// the connection was application-limited (a restart from idle).
    pub fn on_sent(&mut self, now: Instant, bytes: u64) -> bool {
        let (tx, restart) = self.snapshot(now, self.by_key.inflight == 0);
        let k = &mut self.by_key;
        k.inflight += bytes;
        match k.records.back() {
            Some(b) if b.sent >= now => {} // the same send time: one record
            _ => k.records.push_back(tx),
        }
        restart
    }

    /// A packet of `bytes` sent at `sent` was acknowledged at `now`
    /// (packets of one batch come oldest first).
    pub fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64) {
        let _ = now;
        let k = &mut self.by_key;
        k.batch.newly += bytes;
        while k.records.front().is_some_and(|r| r.sent < sent) {
            // Unacknowledged and older than an acknowledged packet.
            k.records.pop_front();
        }
        if k.batch.newest.is_none_or(|t| sent > t) {
            k.batch.newest = Some(sent);
        }
        if let Some(tx) = k.records.front().filter(|r| r.sent == sent).copied() {
            // Found in send order: the last found is the newest sent.
            let mut batch = k.batch;
            self.deliver(&mut batch, &tx, false, Ties::Last);
            self.by_key.batch = batch;
        }
    }

    /// `bytes` were found lost.
    pub fn on_lost(&mut self, bytes: u64) {
        self.count_lost(bytes);
        self.by_key.inflight = self.by_key.inflight.saturating_sub(bytes);
    }

    /// The batch of ACKs processed at `now` ended with `inflight` bytes in
    /// flight: its sample (`tcp_rate_gen`). `prior_in_flight` is unknown to
    /// the transport here and left at the in-flight count after the batch.
    pub fn end_acks(&mut self, now: Instant, inflight: u64) -> RateSample {
        let batch = core::mem::take(&mut self.by_key.batch);
        self.by_key.inflight = inflight;
        self.generate(now, batch, inflight + batch.newly)
    }

    /// Starts an application-limited period now.
    pub fn mark_app_limited(&mut self) {
        self.start_app_limited(self.by_key.inflight);
    }
}
