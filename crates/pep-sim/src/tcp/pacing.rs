//! Linux-style pacing: when the sender may put its next segment on the wire.
//!
//! As quinn's `pacing.rs`, the pacer never sleeps: it says *when* sending is
//! allowed ([`Pacer::release`]) and the sender reports that instant from
//! `poll_timeout()` while `poll_transmit()` returns `None` until then.
//!
//! The rate is Linux's `tcp_update_pacing_rate()`:
//! `rate = ratio x max(cwnd, flight) / srtt`, with `ratio` =
//! `tcp_pacing_ss_ratio` (200%) while `cwnd < ssthresh / 2` (Linux's test
//! for slow start: the window can still double) and `tcp_pacing_ca_ratio`
//! (120%) otherwise, capped by `max_rate` (`SO_MAX_PACING_RATE`). Each
//! segment of `w` wire bytes pushes the next release `w x 8 / rate` after
//! the later of now and the previous release (Linux's `tcp_wstamp_ns`), so
//! an idle sender's first segment leaves at once and there is no credit
//! for lost time. Before the first RTT sample Linux's rate is not divided by
//! srtt (effectively unpaced); here too, unless `max_rate` is set.

use pep_core::{Duration, Instant, Rate};

/// Pacing parameters ([`super::TcpConfig::pacing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacingConfig {
    /// Percent of cwnd/srtt in slow start. Linux `tcp_pacing_ss_ratio`: 200.
    pub ss_ratio: u32,
    /// Percent of cwnd/srtt in congestion avoidance. Linux
    /// `tcp_pacing_ca_ratio`: 120.
    pub ca_ratio: u32,
    /// Upper bound on the rate (`SO_MAX_PACING_RATE`); `None`: none.
    pub max_rate: Option<Rate>,
}

impl Default for PacingConfig {
    fn default() -> Self {
        PacingConfig {
            ss_ratio: 200,
            ca_ratio: 120,
            max_rate: None,
        }
    }
}

/// The pacing state of one sender.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pacer {
    cfg: PacingConfig,
    /// Earliest instant the next segment may leave.
    next: Instant,
}

/// What the rate is computed from, read from the sender at send time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RateInputs {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub flight: u64,
    pub srtt: Option<Duration>,
    /// A model-based congestion control's own rate (BBR's), in bytes per
    /// second: it replaces the cwnd/srtt rule.
    pub model_rate: Option<u64>,
}

impl Pacer {
    pub fn new(cfg: PacingConfig) -> Self {
        Pacer {
            cfg,
            next: Instant::ZERO,
        }
    }

    /// When the next segment may leave, if later than `now`.
    #[inline]
    pub fn release(&self, now: Instant) -> Option<Instant> {
        (self.next > now).then_some(self.next)
    }

    /// When the next segment may leave (Linux's `tcp_wstamp_ns`).
    #[inline]
    pub fn next_release(&self) -> Instant {
        self.next
    }

    /// The gap a segment of `wire` bytes opens; `None`: unpaced.
    pub fn gap(&self, wire: u32, r: RateInputs) -> Option<Duration> {
        let cap = self.cfg.max_rate.map(|m| m.tx_time(wire as u64));
        if let Some(rate) = r.model_rate {
            // Wire bytes at the model's rate, as fq paces skb lengths.
            let ns = wire as u128 * 1_000_000_000 / rate.max(1) as u128;
            let gap = Duration::from_nanos(ns.min(u64::MAX as u128) as u64);
            return Some(cap.map_or(gap, |c| c.max(gap)));
        }
        let by_window = r.srtt.filter(|s| *s > Duration::ZERO).map(|srtt| {
            let ratio = if r.cwnd < r.ssthresh / 2 {
                self.cfg.ss_ratio
            } else {
                self.cfg.ca_ratio
            };
            // gap = wire / (ratio/100 x window / srtt), in integers.
            let window = r.cwnd.max(r.flight).max(1) as u128;
            let ns = wire as u128 * srtt.as_nanos() as u128 * 100 / (ratio.max(1) as u128 * window);
            Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
        });
        match (by_window, cap) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// A segment of `wire` bytes left at `now`.
    pub fn on_sent(&mut self, now: Instant, wire: u32, r: RateInputs) {
        if let Some(gap) = self.gap(wire, r) {
            self.next = self.next.max(now) + gap;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(cwnd: u64, ssthresh: u64, srtt_ms: u64) -> RateInputs {
        RateInputs {
            cwnd,
            ssthresh,
            flight: 0,
            srtt: Some(Duration::from_millis(srtt_ms)),
            model_rate: None,
        }
    }

    #[test]
    fn gap_is_wire_over_ratio_times_window_over_srtt() {
        let p = Pacer::new(PacingConfig::default());
        // CA: 100 kB per 100 ms at 120% = 1.2 MB/s; 1200 B -> 1 ms.
        let g = p.gap(1200, inputs(100_000, 100_000, 100)).unwrap();
        assert_eq!(g, Duration::from_millis(1));
        // Slow start (cwnd < ssthresh/2): 200%, 0.6 ms.
        let g = p.gap(1200, inputs(100_000, u64::MAX, 100)).unwrap();
        assert_eq!(g, Duration::from_micros(600));
    }

    #[test]
    fn unpaced_before_an_rtt_sample_unless_capped() {
        let mut r = inputs(100_000, u64::MAX, 100);
        r.srtt = None;
        assert_eq!(Pacer::new(PacingConfig::default()).gap(1000, r), None);
        let cfg = PacingConfig {
            max_rate: Some(Rate::mbps(8)),
            ..Default::default()
        };
        assert_eq!(Pacer::new(cfg).gap(1000, r), Some(Duration::from_millis(1)));
    }

    #[test]
    fn the_cap_wins_when_slower() {
        let cfg = PacingConfig {
            max_rate: Some(Rate::mbps(8)),
            ..Default::default()
        };
        let p = Pacer::new(cfg);
        // Window rate 1.2 MB/s = 9.6 Mbit/s > 8 Mbit/s cap.
        let g = p.gap(1000, inputs(100_000, 100_000, 100)).unwrap();
        assert_eq!(g, Duration::from_millis(1));
    }

    #[test]
    fn no_credit_after_idle() {
        let mut p = Pacer::new(PacingConfig::default());
        let r = inputs(100_000, 100_000, 100);
        p.on_sent(Instant::ZERO, 1200, r);
        assert_eq!(
            p.release(Instant::ZERO),
            Some(Instant::from_nanos(1_000_000))
        );
        let later = Instant::from_nanos(50_000_000);
        assert_eq!(p.release(later), None);
        p.on_sent(later, 1200, r);
        assert_eq!(p.release(later), Some(Instant::from_nanos(51_000_000)));
    }
}
