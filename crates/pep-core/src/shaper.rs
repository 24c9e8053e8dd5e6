//! # Token-bucket release between a split connection's legs (Shikama)
//!
//! A split-connection PEP hands its sending leg whatever the receiving leg
//! delivered, so a window reassembled after a loss leaves as one burst.
//! Shikama's mitigation shapes that release: the bytes a relay holds go to
//! the sending leg no faster than a configured rate, in segment-sized
//! quanta. The relay ([`crate::relay`]) decides how much *may* leave; the
//! shaper decides how much of that leaves *now*; the driver composes them.
//!
//! ## Driver contract
//! * [`Shaper::release`]`(now, want)` returns how many of `want` bytes may
//!   leave now (whole quanta, or the remainder when `want` is less); the
//!   driver moves exactly that many.
//! * When it held bytes back, [`Shaper::poll_timeout`] gives the instant
//!   more may leave; call `release` again then.
//! * `now` never decreases.

use crate::time::{Duration, Instant, Rate};

/// Shaping parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShaperConfig {
    /// Release rate, counted on payload plus `overhead` bytes per quantum.
    pub rate: Rate,
    /// Bucket depth in bytes: how much may leave back-to-back after idle.
    pub depth: u64,
    /// Header bytes charged per quantum released (so the rate can be set
    /// to a link's wire rate). 0: payload rate.
    pub overhead: u64,
    /// Release unit (the sending leg's segment size).
    pub quantum: u64,
}

/// A token bucket in transmission time: it holds at most `depth` of credit
/// (never less than one quantum with its overhead, or nothing could ever
/// leave), refills at wall rate, and a release of `b` bytes costs
/// `rate.tx_time(b + overhead)`. It starts full.
#[derive(Clone, Debug)]
pub struct Shaper {
    cfg: ShaperConfig,
    /// Credit in ns of transmission time, and when it was counted.
    credit: u64,
    credited_at: Instant,
    /// Bytes are held back until this instant.
    blocked_until: Option<Instant>,
    /// Releases cut short for lack of credit.
    cut_short: u64,
}

impl Shaper {
    pub fn new(cfg: ShaperConfig) -> Shaper {
        let cfg = ShaperConfig {
            quantum: cfg.quantum.max(1),
            ..cfg
        };
        Shaper {
            cfg,
            credit: depth_ns(&cfg),
            credited_at: Instant::ZERO,
            blocked_until: None,
            cut_short: 0,
        }
    }

    pub fn config(&self) -> &ShaperConfig {
        &self.cfg
    }

    /// How many of `want` bytes may leave at `now`: whole quanta as the
    /// bucket allows. `want` 0 changes nothing.
    pub fn release(&mut self, now: Instant, want: u64) -> u64 {
        if want == 0 {
            return 0;
        }
        let depth = depth_ns(&self.cfg);
        let elapsed = now.saturating_since(self.credited_at).as_nanos();
        self.credit = self.credit.saturating_add(elapsed).min(depth);
        self.credited_at = now;
        self.blocked_until = None;
        let mut out = 0;
        while out < want {
            let q = (want - out).min(self.cfg.quantum);
            let cost = self.cfg.rate.tx_time(q + self.cfg.overhead).as_nanos();
            if self.credit < cost {
                self.blocked_until = Some(now + Duration::from_nanos(cost - self.credit));
                self.cut_short += 1;
                break;
            }
            self.credit -= cost;
            out += q;
        }
        out
    }

    /// When bytes the last [`Shaper::release`] held back may leave.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.blocked_until
    }

    /// Releases cut short for lack of credit.
    pub fn cut_short(&self) -> u64 {
        self.cut_short
    }
}

/// The bucket's capacity in ns of credit.
fn depth_ns(cfg: &ShaperConfig) -> u64 {
    let one = cfg.rate.tx_time(cfg.quantum + cfg.overhead);
    cfg.rate.tx_time(cfg.depth).max(one).as_nanos()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    fn shaper(depth: u64, overhead: u64) -> Shaper {
        // 8 Mbit/s: 1000 B per ms.
        Shaper::new(ShaperConfig {
            rate: Rate::mbps(8),
            depth,
            overhead,
            quantum: 1000,
        })
    }

    #[test]
    fn releases_at_its_rate_after_the_bucket() {
        let mut s = shaper(2000, 0);
        let mut held = 50_000;
        let mut now = at(0);
        let first = s.release(now, held);
        assert_eq!(first, 2000, "the bucket's depth leaves at once");
        held -= first;
        let mut steps = 0;
        while let Some(t) = s.poll_timeout().filter(|_| held > 0) {
            assert!(t > now);
            now = t;
            held -= s.release(now, held);
            steps += 1;
        }
        assert_eq!(held, 0);
        // 48 quanta after the bucket, one per ms.
        assert_eq!((steps, now), (48, at(48)));
        assert_eq!(s.cut_short(), 48);
    }

    #[test]
    fn charges_overhead_and_refills_when_idle() {
        let mut s = shaper(1000, 1000);
        // A quantum costs 2 ms with its overhead, so the bucket holds 2 ms
        // (more than its 1 ms depth) and starts with 2 ms.
        assert_eq!(s.release(at(0), 3000), 1000);
        assert_eq!(s.release(at(0), 2000), 0);
        assert_eq!(s.poll_timeout(), Some(at(2)));
        assert_eq!(s.release(at(2), 2000), 1000);
        assert_eq!(s.poll_timeout(), Some(at(4)));
        // Credit never exceeds the bucket, however long idle.
        assert_eq!(s.release(at(100), 6000), 1000);
        assert_eq!(s.poll_timeout(), Some(at(102)));
    }

    #[test]
    fn a_remainder_smaller_than_a_quantum_leaves_whole() {
        let mut s = shaper(2000, 0);
        assert_eq!(s.release(at(0), 1500), 1500);
        assert_eq!(s.poll_timeout(), None);
        assert_eq!(s.release(at(0), 0), 0, "nothing wanted costs nothing");
    }
}
