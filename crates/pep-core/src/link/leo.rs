//! A LEO (Starlink-like) direction: the latency floor changes at globally
//! synchronised reconfiguration boundaries, and packets are lost in bursts
//! around them.
//!
//! Starlink reallocates users to satellites every 15 s, at the same
//! instants everywhere: 12, 27, 42 and 57 s past each minute (Tanveer et
//! al., IMC '23; Mohan et al., WWW '24). Within an interval the floor of
//! the round-trip time is flat; it steps at the boundary to the next
//! interval's, and losses cluster around the boundary (Pan et al., 2023).
//! The figures and their sources are in `docs/queues-and-links.md`.
//!
//! The model: boundaries at `phase + k * interval` for every integer `k`;
//! each interval's one-way delay is drawn uniformly from
//! `[min_delay, max_delay]`, one draw per interval in order, whatever the
//! traffic; a packet that ends its transmission within `burst_before`
//! before a boundary to `burst_after` after it is lost with probability
//! `burst_loss`, elsewhere with `loss`.

use alloc::vec::Vec;

use crate::rng::Stream;
use crate::time::{Duration, Instant};

/// The preset's parameters. [`LeoParams::STARLINK`] holds the defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeoParams {
    /// Time between reconfigurations.
    pub interval: Duration,
    /// The first boundary after the run's start (12 s: the run starts on
    /// a whole minute).
    pub phase: Duration,
    /// Range of an interval's one-way propagation delay.
    pub min_delay: Duration,
    pub max_delay: Duration,
    /// Loss probability in a handover burst, and its extent around the
    /// boundary.
    pub burst_loss: f64,
    pub burst_before: Duration,
    pub burst_after: Duration,
    /// Loss probability outside the bursts.
    pub loss: f64,
}

impl LeoParams {
    /// Defaults from the published measurements (see the module docs).
    pub const STARLINK: LeoParams = LeoParams {
        interval: Duration::from_secs(15),
        phase: Duration::from_secs(12),
        min_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(25),
        burst_loss: 0.1,
        burst_before: Duration::from_millis(20),
        burst_after: Duration::from_millis(80),
        loss: 0.0,
    };

    /// Time since the last boundary, and the index of the interval `off`
    /// falls in (0 before the first boundary after the start).
    fn place(&self, off: u64) -> (u64, u64) {
        let (i, phase) = (
            self.interval.as_nanos(),
            self.phase.as_nanos() % self.interval.as_nanos(),
        );
        // Boundaries repeat before the start too: shift so one is at zero.
        let shifted = off + (i - phase);
        (shifted % i, shifted / i - u64::from(phase == 0))
    }

    /// The loss probability `off` after the start.
    pub fn loss_at(&self, off: Duration) -> f64 {
        if self.in_burst(off.as_nanos()) {
            self.burst_loss
        } else {
            self.loss
        }
    }

    /// Whether `off` ns after the start lies in a handover burst.
    pub fn in_burst(&self, off: u64) -> bool {
        let (since, _) = self.place(off);
        since < self.burst_after.as_nanos()
            || self.interval.as_nanos() - since <= self.burst_before.as_nanos()
    }
}

/// A direction's LEO state.
#[derive(Clone, Debug)]
pub(crate) struct Leo {
    p: LeoParams,
    epoch: Instant,
    /// Each interval's delay, drawn in order as far as asked.
    floors: Vec<Duration>,
    floor_rng: Stream,
}

impl Leo {
    pub(crate) fn new(p: LeoParams, epoch: Instant, floor_rng: Stream) -> Leo {
        Leo {
            p,
            epoch,
            floors: Vec::new(),
            floor_rng,
        }
    }

    fn off(&self, t: Instant) -> u64 {
        t.saturating_since(self.epoch).as_nanos()
    }

    /// The one-way delay of a packet leaving at `t`.
    pub(crate) fn delay(&mut self, t: Instant) -> Duration {
        let (_, k) = self.p.place(self.off(t));
        while self.floors.len() as u64 <= k {
            let span = (self.p.max_delay - self.p.min_delay).as_nanos();
            let u = self.floor_rng.next_u64();
            let d = (((span as u128 + 1) * u as u128) >> 64) as u64;
            self.floors.push(self.p.min_delay + Duration(d));
        }
        self.floors[k as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floors_step_only_at_boundaries_and_bursts_straddle_them() {
        let p = LeoParams::STARLINK;
        let mut l = Leo::new(p, Instant::ZERO, Stream::derive(1, "t"));
        let s = |ms: u64| Instant(ms * 1_000_000);
        // Intervals: [0, 12 s), [12, 27), [27, 42) ...
        assert_eq!(l.delay(s(0)), l.delay(s(11_999)));
        assert_eq!(l.delay(s(12_000)), l.delay(s(26_999)));
        assert_eq!(l.delay(s(27_000)), l.delay(s(41_999)));
        let floors: Vec<_> = [0, 12_000, 27_000, 42_000]
            .map(|ms| l.delay(s(ms)))
            .to_vec();
        assert!(floors.windows(2).all(|w| w[0] != w[1]), "{floors:?}");
        assert!(floors
            .iter()
            .all(|d| (p.min_delay..=p.max_delay).contains(d)));
        // Bursts: 20 ms before to 80 ms after each boundary (one at -3 s
        // too, before the start).
        for (ms, burst) in [
            (0, false),
            (11_979, false),
            (11_980, true),
            (12_079, true),
            (12_080, false),
            (26_990, true),
            (57_050, true),
            (72_000, true),
        ] {
            assert_eq!(p.in_burst(ms * 1_000_000), burst, "at {ms} ms");
        }
    }

    #[test]
    fn floors_do_not_depend_on_which_intervals_were_asked() {
        let mut a = Leo::new(LeoParams::STARLINK, Instant::ZERO, Stream::derive(1, "t"));
        let mut b = a.clone();
        let t = Instant(100_000_000_000);
        let _ = a.delay(Instant(13_000_000_000));
        assert_eq!(a.delay(t), b.delay(t));
    }
}
