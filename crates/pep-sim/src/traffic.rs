//! Traffic generators that write into a TCP sender over time.
//!
//! Bulk and finite sources need no generator: the sender holds their data
//! from the start ([`crate::tcp::AppSource`]). A generator here is a small
//! sans-IO machine: [`OnOff::poll_timeout`] says when its next packet is
//! due, [`OnOff::handle_timeout`] returns the bytes the application writes by
//! then.

use pep_core::rng::Stream;
use pep_core::{Duration, Instant, Rate};

/// Parameters of a Pareto on/off source, named and defaulted as ns-2's
/// `Application/Traffic/Pareto`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OnOffConfig {
    /// Sending rate during a burst.
    pub rate: Rate,
    /// Bytes the application writes per packet.
    pub packet: u32,
    /// Mean burst (on) time.
    pub burst_time: Duration,
    /// Mean idle (off) time.
    pub idle_time: Duration,
    /// Pareto shape (> 1; ns-2's default 1.5).
    pub shape: f64,
}

impl Default for OnOffConfig {
    /// ns-2's defaults: 64 kbit/s, 210 B, 500 ms on, 500 ms off, shape 1.5.
    fn default() -> Self {
        OnOffConfig {
            rate: Rate::kbps(64),
            packet: 210,
            burst_time: Duration::from_millis(500),
            idle_time: Duration::from_millis(500),
            shape: 1.5,
        }
    }
}

/// A Pareto on/off generator, following ns-2's `POO_Traffic`: packets
/// leave at `rate` during a burst; a burst's length in packets is Pareto
/// with mean `burst_time / interval` (rounded, at least one); between bursts
/// a Pareto idle time with mean `idle_time` is added to the gap.
#[derive(Clone, Debug)]
pub struct OnOff {
    packet: u32,
    interval: Duration,
    burst_packets_mean: f64,
    idle_mean: f64,
    shape: f64,
    /// Packets left in the current burst.
    remaining: u32,
    next: Instant,
    rng: Stream,
}

impl OnOff {
    /// A generator whose first packet is due at `start`.
    pub fn new(cfg: &OnOffConfig, start: Instant, rng: Stream) -> OnOff {
        let interval = cfg.rate.tx_time(cfg.packet as u64);
        OnOff {
            packet: cfg.packet,
            interval,
            burst_packets_mean: cfg.burst_time.as_secs_f64() / interval.as_secs_f64(),
            idle_mean: cfg.idle_time.as_secs_f64(),
            shape: cfg.shape,
            remaining: 0,
            next: start,
            rng,
        }
    }

    /// When the next packet is due.
    pub fn poll_timeout(&self) -> Instant {
        self.next
    }

    /// The bytes written by `now` (zero if nothing was due).
    pub fn handle_timeout(&mut self, now: Instant) -> u64 {
        let mut bytes = 0;
        while self.next <= now {
            bytes += self.packet as u64;
            let gap = self.next_interval();
            self.next += gap;
        }
        bytes
    }

    /// The gap after the packet just written: ns-2's `next_interval`.
    fn next_interval(&mut self) -> Duration {
        let mut gap = self.interval;
        if self.remaining == 0 {
            let len = libm::floor(self.rng.pareto(self.burst_packets_mean, self.shape) + 0.5);
            self.remaining = (len.min(u32::MAX as f64) as u32).max(1);
            gap += Duration::from_secs_f64(self.rng.pareto(self.idle_mean, self.shape));
        }
        self.remaining -= 1;
        gap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_within_a_burst_leave_at_the_rate() {
        // 64 kbit/s and 210 B: one packet every 26.25 ms.
        let cfg = OnOffConfig::default();
        let mut g = OnOff::new(&cfg, Instant::ZERO, Stream::derive(1, "t"));
        assert_eq!(g.handle_timeout(Instant::ZERO), 210);
        let mut last = g.poll_timeout();
        let mut gaps = vec![];
        for _ in 0..2000 {
            g.handle_timeout(last);
            let n = g.poll_timeout();
            gaps.push(n - last);
            last = n;
        }
        let interval = Duration::from_micros(26_250);
        assert!(gaps.iter().all(|&d| d >= interval));
        let in_burst = gaps.iter().filter(|&&d| d == interval).count();
        assert!(in_burst > 1000, "{in_burst} of 2000 gaps inside bursts");
    }

    #[test]
    fn long_run_rate_is_rate_times_duty_cycle() {
        // On and off average 500 ms each, so the mean rate is half the peak;
        // Pareto(1.5) has infinite variance, so allow a wide band.
        let cfg = OnOffConfig::default();
        let mut bytes = 0u64;
        let t_end = Instant::ZERO + Duration::from_secs(20_000);
        for seed in 0..4 {
            let mut g = OnOff::new(&cfg, Instant::ZERO, Stream::derive(seed, "t"));
            bytes += g.handle_timeout(t_end);
        }
        let rate = bytes as f64 * 8.0 / 20_000.0 / 4.0;
        assert!((rate / 32_000.0 - 1.0).abs() < 0.15, "{rate} bit/s");
    }

    #[test]
    fn same_stream_same_packets() {
        let cfg = OnOffConfig::default();
        let t = Instant::ZERO + Duration::from_secs(100);
        let a = OnOff::new(&cfg, Instant::ZERO, Stream::derive(9, "x")).handle_timeout(t);
        let b = OnOff::new(&cfg, Instant::ZERO, Stream::derive(9, "x")).handle_timeout(t);
        assert_eq!(a, b);
    }
}
