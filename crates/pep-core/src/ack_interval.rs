//! An adaptive ACK interval for a TCP receiver: how many in-order segments
//! it may let arrive before it must acknowledge them.
//!
//! Johnson's thesis (Ohio University, 1995) fixed the interval N for a whole
//! connection and found gains on a clean local network and none on a lossy
//! distant path, where the inflated RTT and the fewer ACKs slow loss
//! recovery. Its "further research" proposes an interval that behaves like a
//! congestion window for ACKs. This is that, sans-IO: the receiver reports
//! what happened and asks for the interval.
//!
//! * Starts at `min` (2: RFC 5681's every-other-segment).
//! * Widens by one for every ACK sent because the interval was reached while
//!   delivery was in order (the path looks clean), up to `max` and to half
//!   the segments the receive window holds (a window of W segments with an
//!   interval above W/2 leaves the sender waiting for the timer).
//! * Out-of-order data, a duplicate or a hole (loss or reordering): back to
//!   `min` at once; the receiver acknowledges such segments immediately
//!   anyway, and the sender's loss recovery then gets an ACK per segment.
//! * The delayed-ACK timer fired (fewer than the interval arrived in time:
//!   the sender's window is smaller than the interval, as in slow start or
//!   after a window reduction): halve, as a congestion window would, but
//!   not below `min`.

/// Bounds of the adaptive interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdaptiveAckConfig {
    /// The interval it starts at and falls back to (>= 1).
    pub min: u32,
    /// The widest interval (>= `min`).
    pub max: u32,
}

impl Default for AdaptiveAckConfig {
    fn default() -> Self {
        AdaptiveAckConfig { min: 2, max: 16 }
    }
}

/// Counters of the adaptation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdaptiveAckStats {
    /// Times the interval widened.
    pub widened: u64,
    /// Times it fell back to `min` on disorder.
    pub fell_back: u64,
    /// Times the delayed-ACK timer halved it.
    pub halved: u64,
    /// Widest interval reached.
    pub max_reached: u32,
}

/// The interval's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdaptiveAckInterval {
    cfg: AdaptiveAckConfig,
    interval: u32,
    pub stats: AdaptiveAckStats,
}

impl AdaptiveAckInterval {
    /// # Panics
    /// If `min` is zero or `max < min` (the scenario loader checks both).
    pub fn new(cfg: AdaptiveAckConfig) -> Self {
        assert!(
            cfg.min >= 1 && cfg.max >= cfg.min,
            "bad adaptive ACK bounds"
        );
        AdaptiveAckInterval {
            cfg,
            interval: cfg.min,
            stats: AdaptiveAckStats {
                max_reached: cfg.min,
                ..AdaptiveAckStats::default()
            },
        }
    }

    /// Segments per ACK now.
    pub fn interval(&self) -> u32 {
        self.interval
    }

    /// An ACK went out because `interval` in-order segments had arrived.
    /// `window_segments`: full segments the receive window holds.
    pub fn on_count_ack(&mut self, window_segments: u32) {
        let cap = self.cfg.max.min(window_segments / 2).max(self.cfg.min);
        if self.interval < cap {
            self.interval += 1;
            self.stats.widened += 1;
            self.stats.max_reached = self.stats.max_reached.max(self.interval);
        } else {
            // The window may have shrunk below what the interval needs.
            self.interval = cap;
        }
    }

    /// The delayed-ACK timer sent the ACK.
    pub fn on_timer_ack(&mut self) {
        let half = (self.interval / 2).max(self.cfg.min);
        if half < self.interval {
            self.interval = half;
            self.stats.halved += 1;
        }
    }

    /// Out-of-order data, a duplicate, or a segment filling a hole.
    pub fn on_disorder(&mut self) {
        if self.interval > self.cfg.min {
            self.stats.fell_back += 1;
        }
        self.interval = self.cfg.min;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adaptive(min: u32, max: u32) -> AdaptiveAckInterval {
        AdaptiveAckInterval::new(AdaptiveAckConfig { min, max })
    }

    #[test]
    fn widens_by_one_per_clean_ack_up_to_max() {
        let mut a = adaptive(2, 6);
        let seen: Vec<u32> = (0..8)
            .map(|_| {
                a.on_count_ack(100);
                a.interval()
            })
            .collect();
        assert_eq!(seen, [3, 4, 5, 6, 6, 6, 6, 6]);
        assert_eq!(a.stats.widened, 4);
        assert_eq!(a.stats.max_reached, 6);
    }

    #[test]
    fn capped_at_half_the_window() {
        let mut a = adaptive(2, 16);
        for _ in 0..20 {
            a.on_count_ack(7);
        }
        assert_eq!(a.interval(), 3, "7 segments per window: at most 3");
        // A window that shrinks pulls the interval down with it.
        a.on_count_ack(2);
        assert_eq!(a.interval(), 2, "never below min");
    }

    #[test]
    fn disorder_falls_back_and_timer_halves() {
        let mut a = adaptive(2, 16);
        for _ in 0..10 {
            a.on_count_ack(100);
        }
        assert_eq!(a.interval(), 12);
        a.on_timer_ack();
        assert_eq!(a.interval(), 6);
        a.on_disorder();
        assert_eq!(a.interval(), 2);
        a.on_timer_ack();
        assert_eq!(a.interval(), 2);
        assert_eq!((a.stats.halved, a.stats.fell_back), (1, 1));
    }
}
