//! A schedule of (time, rate, delay, loss) steps on one link direction.
//!
//! Each step holds the values it gives from its time on, and keeps the
//! previous step's for the fields it leaves out; before the first step the
//! link's own rate and delay apply, without added loss. A step marked
//! `ramp` is reached linearly from the previous step instead of at once.
//! A packet is serialized at the rate in force when its transmission
//! starts, and propagates with the delay in force when it ends.

use alloc::vec::Vec;

use crate::time::{Duration, Rate};

/// One step as written: what changes at `at` (after the run's start).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    pub at: Duration,
    pub rate: Option<Rate>,
    pub delay: Option<Duration>,
    /// Probability that a packet ending its transmission is lost, on top
    /// of the link's loss model.
    pub loss: Option<f64>,
    /// Reach these values linearly from the previous step's.
    pub ramp: bool,
}

/// A resolved step: every value known.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Point {
    at: Duration,
    rate: Rate,
    delay: Duration,
    loss: f64,
    ramp: bool,
}

/// The values of a direction over time.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    /// Sorted by `at`; the first is the link's own values at zero.
    points: Vec<Point>,
}

/// What a direction offers at one instant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Values {
    pub rate: Rate,
    pub delay: Duration,
    pub loss: f64,
}

impl Schedule {
    /// The schedule of `steps` (sorted by `at`, rates positive, losses in
    /// [0, 1]: the scenario checks them) on a link of `rate` and `delay`.
    pub fn new(rate: Rate, delay: Duration, steps: &[Step]) -> Schedule {
        let mut points = Vec::with_capacity(steps.len() + 1);
        let mut last = Point {
            at: Duration::ZERO,
            rate,
            delay,
            loss: 0.0,
            ramp: false,
        };
        points.push(last);
        for s in steps {
            last = Point {
                at: s.at,
                rate: s.rate.unwrap_or(last.rate),
                delay: s.delay.unwrap_or(last.delay),
                loss: s.loss.unwrap_or(last.loss),
                ramp: s.ramp,
            };
            points.push(last);
        }
        Schedule { points }
    }

    /// The values at `t` after the run's start.
    pub fn at(&self, t: Duration) -> Values {
        // The last point at or before `t`; the first is at zero.
        let i = self.points.partition_point(|p| p.at <= t).max(1) - 1;
        let a = self.points[i];
        match self.points.get(i + 1) {
            Some(b) if b.ramp && b.at > a.at => {
                let (num, den) = ((t - a.at).as_nanos(), (b.at - a.at).as_nanos());
                Values {
                    rate: Rate(lerp(a.rate.0, b.rate.0, num, den)),
                    delay: Duration(lerp(a.delay.0, b.delay.0, num, den)),
                    loss: a.loss + (b.loss - a.loss) * (num as f64 / den as f64),
                }
            }
            _ => Values {
                rate: a.rate,
                delay: a.delay,
                loss: a.loss,
            },
        }
    }

    /// Whether any step adds loss.
    pub fn has_loss(&self) -> bool {
        self.points.iter().any(|p| p.loss > 0.0)
    }
}

/// `a + (b - a) * num / den` in integers, `num <= den`.
fn lerp(a: u64, b: u64, num: u64, den: u64) -> u64 {
    let (a, b) = (a as i128, b as i128);
    (a + (b - a) * num as i128 / den as i128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(at_s: u64, rate_mbps: Option<u64>, ramp: bool) -> Step {
        Step {
            at: Duration::from_secs(at_s),
            rate: rate_mbps.map(Rate::mbps),
            delay: None,
            loss: None,
            ramp,
        }
    }

    #[test]
    fn steps_hold_and_ramps_interpolate() {
        let s = Schedule::new(
            Rate::mbps(10),
            Duration::from_millis(20),
            &[
                step(10, Some(5), false),
                Step {
                    delay: Some(Duration::from_millis(40)),
                    loss: Some(0.5),
                    ..step(20, Some(15), true)
                },
            ],
        );
        let at = |s_: u64, ms: u64| s.at(Duration::from_secs(s_) + Duration::from_millis(ms));
        assert_eq!(at(0, 0).rate, Rate::mbps(10));
        assert_eq!(at(9, 999).rate, Rate::mbps(10));
        assert_eq!(at(10, 0).rate, Rate::mbps(5));
        // Halfway up the ramp from (5 Mbit/s, 20 ms, 0) to (15, 40, 0.5).
        let mid = at(15, 0);
        assert_eq!(mid.rate, Rate::mbps(10));
        assert_eq!(mid.delay, Duration::from_millis(30));
        assert!((mid.loss - 0.25).abs() < 1e-12);
        assert_eq!(at(20, 0).rate, Rate::mbps(15));
        assert_eq!(at(99, 0).delay, Duration::from_millis(40));
        assert!(s.has_loss());
    }
}
