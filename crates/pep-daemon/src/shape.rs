//! A leg's `shape_rate`: the relay's writes into that leg go through
//! `pep_core::shaper::Shaper`, the token bucket the simulator's `split`
//! agent puts between its legs (Shikama's mitigation: a window the
//! receiving leg reassembled leaves no faster than the rate, in
//! segment-sized quanta, instead of as one burst).
//!
//! The core's contract is "the driver moves exactly what was released",
//! but a socket may take less than it is offered. So what the bucket
//! granted and the socket did not take yet is carried ([`LegShaper::allow`]
//! offers it first) and the bucket is asked only while fewer than its
//! depth are carried: over any window of `T`, the bytes written are at
//! most `rate x T + depth + max(depth, quantum)` (payload plus headers),
//! the bucket's own bound plus one carried grant.

use pep_core::shaper::{Shaper, ShaperConfig};
use pep_core::{Instant, Rate};

use crate::config::LegShape;

/// The bucket of one direction of one connection.
#[derive(Debug)]
pub struct LegShaper {
    shaper: Shaper,
    /// Granted by the bucket, not yet written.
    granted: u64,
    /// Most carried at once: the bucket is asked only below it.
    ask: u64,
}

impl LegShaper {
    /// `quantum`: the leg's payload per segment; `header`: its header
    /// bytes on the wire, charged per quantum so that `rate` is a wire
    /// rate. The bucket holds `shape.burst`, or two segments.
    pub fn new(shape: LegShape, quantum: u64, header: u64) -> LegShaper {
        let quantum = quantum.max(1);
        let depth = shape.burst.unwrap_or(2 * quantum);
        LegShaper {
            shaper: Shaper::new(ShaperConfig {
                rate: Rate::bps(shape.rate),
                depth,
                overhead: header,
                quantum,
            }),
            granted: 0,
            ask: depth.max(quantum),
        }
    }

    /// How many of the `pending` bytes may be written now (`Ok`, at least
    /// one), or the instant to ask again (`Err`).
    pub fn allow(&mut self, now: Instant, pending: u64) -> Result<u64, Instant> {
        let want = pending.min(self.ask).saturating_sub(self.granted);
        if want > 0 {
            self.granted += self.shaper.release(now, want);
        }
        match self.granted.min(pending) {
            0 => Err(self
                .shaper
                .poll_timeout()
                .unwrap_or(now + pep_core::Duration::from_millis(1))),
            n => Ok(n),
        }
    }

    /// `n` of the allowed bytes were written.
    pub fn wrote(&mut self, n: u64) {
        self.granted -= n.min(self.granted);
    }

    /// Writes the bucket held back.
    pub fn held_back(&self) -> u64 {
        self.shaper.cut_short()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Instant {
        Instant::from_nanos(v * 1_000_000)
    }

    /// A relay that always has bytes and a socket that takes a random
    /// amount (0 to 5 segments) every 100 us for 2 s: the payload written
    /// in every window stays within the analytic bound, and in the long
    /// run the wire rate is the configured one.
    #[test]
    fn writes_never_exceed_rate_and_burst_over_any_window() {
        // 6 Mbit/s, 1448 B segments with 52 B headers, a 2-segment bucket.
        let shape = LegShape {
            rate: 6_000_000,
            burst: None,
        };
        let (q, h) = (1448u64, 52u64);
        let mut s = LegShaper::new(shape, q, h);
        let mut rng = pep_core::rng::Stream::derive(7, "shape-test");
        let step = 100_000u64; // ns
        let mut log: Vec<(u64, u64)> = vec![]; // (ns, payload written)
        let mut blocked_until = 0u64;
        for k in 0..20_000u64 {
            let now = k * step;
            if now < blocked_until {
                continue;
            }
            let takes = rng.next_u64() % (5 * q + 1);
            match s.allow(Instant::from_nanos(now), 1 << 20) {
                Ok(n) => {
                    let w = n.min(takes);
                    s.wrote(w);
                    if w > 0 {
                        log.push((now, w));
                    }
                }
                Err(t) => {
                    assert!(t.as_nanos() > now, "asked again at once");
                    blocked_until = t.as_nanos();
                }
            }
        }
        // Each quantum of at most q payload bytes costs q + h of credit;
        // the credit is rate x T plus the bucket (2q); one grant of at
        // most 2q payload may be carried into the window.
        let payload_per_credit = q as f64 / (q + h) as f64;
        let credit_per_ns = 6_000_000.0 / 8.0 / 1e9;
        let bound =
            |t: f64| (credit_per_ns * t + 2.0 * q as f64) * payload_per_credit + 2.0 * q as f64;
        let mut tightest = f64::MAX;
        for i in 0..log.len() {
            let mut sum = 0.0;
            for e in &log[i..] {
                sum += e.1 as f64;
                let t = (e.0 - log[i].0) as f64;
                assert!(sum <= bound(t), "{sum} B in {t} ns > {}", bound(t));
                tightest = tightest.min(bound(t) - sum);
                if t > 50e6 {
                    break;
                }
            }
        }
        // Not loose: some window comes within the carried grant's term
        // and one segment of it.
        assert!(tightest < 3.0 * q as f64, "slack {tightest}");
        let total: u64 = log.iter().map(|l| l.1).sum();
        let ratio = total as f64 / (credit_per_ns * 2e9 * payload_per_credit);
        assert!((0.97..=1.01).contains(&ratio), "payload rate ratio {ratio}");
        assert!(s.held_back() > 0);
    }

    #[test]
    fn a_socket_that_takes_nothing_keeps_the_grant_and_asks_no_more() {
        let shape = LegShape {
            rate: 8_000_000,
            burst: Some(4000),
        };
        let mut s = LegShaper::new(shape, 1000, 0);
        assert_eq!(s.allow(ms(0), 100_000), Ok(4000));
        // Nothing written: the same grant is offered again, and no more
        // (a full carry asks the bucket for nothing).
        assert_eq!(s.allow(ms(1), 100_000), Ok(4000));
        assert_eq!(s.allow(ms(10), 100_000), Ok(4000));
        s.wrote(4000);
        // The bucket refilled to its depth meanwhile, not beyond.
        assert_eq!(s.allow(ms(10), 100_000), Ok(4000));
        s.wrote(4000);
        let again = s.allow(ms(10), 100_000).unwrap_err();
        assert_eq!(again, ms(11));
        // Fewer pending than granted: only what is pending.
        assert_eq!(s.allow(ms(12), 500), Ok(500));
    }
}
