//! Random Early Detection (Floyd & Jacobson, "Random Early Detection
//! Gateways for Congestion Avoidance", IEEE/ACM ToN 1993), following ns-2
//! 2.35's `queue/red.cc` step by step so ns-2 experiments can be repeated:
//!
//! * On each arrival the average queue is updated by an EWMA of weight
//!   `q_w` over the queue length the arrival finds (waiting packets only,
//!   or bytes in bytes mode). After an idle period the average first decays
//!   as if `m = floor(ptc x idle)` packets had arrived to an empty queue:
//!   `avg *= (1 - q_w)^m`, where `ptc` is how many mean-sized packets per
//!   second the link carries.
//! * The base probability `p_b` rises linearly from 0 at `min_th` to `max_p`
//!   at `max_th`; with `gentle`, from `max_p` at `max_th` to 1 at
//!   `2 max_th`; without, it is 1 past `max_th`.
//! * The actual probability depends on `count`, the arrivals since the last
//!   drop: `p_a = p_b / (1 - count p_b)` (the paper's, which spaces drops
//!   uniformly in 1 ..= 1/p_b arrivals) or, with `wait` (ns-2's default),
//!   0 until `count p_b >= 1`, then `p_b / (2 - count p_b)` (uniform in
//!   1/p_b ..= 2/p_b - 1). In bytes mode `count` is the bytes since the last
//!   drop over `mean_pktsize`, and `p_a` is scaled by size / `mean_pktsize`.
//! * No drop while the average is below `min_th` or at most one packet (one
//!   byte in bytes mode) waits; the first arrival after the average crosses
//!   `min_th` is never dropped (ns-2's `old` flag).
//!
//! Drops happen at enqueue only, which is why RED works unchanged on links
//! that complete transmissions lazily. Not modelled: ECN marking, adaptive
//! RED, `cautious_`, drop-front and random-victim variants (ns-2's
//! defaults drop the arrival).

use super::{DropReason, DropTail, QueueLimit, Queued};
use crate::rng::Stream;
use crate::time::{Duration, Instant, Rate};

/// RED's parameters. Thresholds are in packets, or in units of
/// `mean_pktsize` bytes when `bytes` is set, as ns-2's `thresh_` and
/// `maxthresh_`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedParams {
    pub min_th: f64,
    pub max_th: f64,
    /// `p_b` at `max_th` (ns-2: `1 / linterm_`).
    pub max_p: f64,
    /// EWMA weight of the average queue.
    pub q_w: f64,
    /// `p_b` from `max_p` to 1 between `max_th` and `2 max_th`.
    pub gentle: bool,
    /// ns-2's `wait_`: space drops between 1/p_b and 2/p_b arrivals.
    pub wait: bool,
    /// ns-2's `bytes_` and `queue_in_bytes_` together: the average is in
    /// bytes, thresholds scale by `mean_pktsize`, `p_a` by packet size.
    pub bytes: bool,
    /// Bytes of a "typical" packet (ns-2's `mean_pktsize_`, 500).
    pub mean_pktsize: u32,
    /// Mean-sized packets per second the link carries, for the idle decay.
    pub ptc: f64,
    /// Hard limit on waiting packets or bytes (an arrival that does not fit
    /// is dropped as overflow).
    pub limit: QueueLimit,
}

/// ns-2's `mean_pktsize_` default.
pub const NS2_MEAN_PKTSIZE: u32 = 500;
/// ns-2's `targetdelay_` default, seconds.
pub const NS2_TARGET_DELAY: f64 = 0.005;
/// ns-2's `linterm_` default is 10, so `max_p` = 0.1.
pub const NS2_MAX_P: f64 = 0.1;

/// ns-2's "packet time constant": packets of `mean_pktsize` bytes per
/// second at `rate`.
pub fn ns2_ptc(rate: Rate, mean_pktsize: u32) -> f64 {
    rate.as_bps() as f64 / (8.0 * mean_pktsize as f64)
}

/// ns-2's automatic `min_th` (`thresh_ = 0`): half the queue that
/// `target_delay` seconds drain, at least 5 packets.
pub fn ns2_min_th(ptc: f64, target_delay: f64) -> f64 {
    let half_target = target_delay * ptc / 2.0;
    if 5.0 < half_target {
        half_target
    } else {
        5.0
    }
}

/// ns-2's automatic `q_w` (`q_weight_ = -1`): a time constant of ten
/// round trips, the round trip taken as three times the link delay plus
/// one packet time, at least 100 ms.
pub fn ns2_q_w(ptc: f64, delay: Duration) -> f64 {
    let mut rtt = 3.0 * (delay.as_secs_f64() + 1.0 / ptc);
    if rtt < 0.1 {
        rtt = 0.1;
    }
    1.0 - libm::exp(-1.0 / (10.0 * rtt * ptc))
}

impl RedParams {
    /// ns-2 2.35's defaults for a link of `rate` and `delay`, with the
    /// automatic thresholds and weight: `bytes`, `gentle` and `wait` on,
    /// `max_p` 0.1, `mean_pktsize` 500 B, target delay 5 ms,
    /// `max_th = 3 min_th`.
    pub fn ns2_auto(rate: Rate, delay: Duration, limit: QueueLimit) -> RedParams {
        let ptc = ns2_ptc(rate, NS2_MEAN_PKTSIZE);
        let min_th = ns2_min_th(ptc, NS2_TARGET_DELAY);
        RedParams {
            min_th,
            max_th: 3.0 * min_th,
            max_p: NS2_MAX_P,
            q_w: ns2_q_w(ptc, delay),
            gentle: true,
            wait: true,
            bytes: true,
            mean_pktsize: NS2_MEAN_PKTSIZE,
            ptc,
            limit,
        }
    }
}

/// The RED discipline: a FIFO with a randomised admission test.
#[derive(Clone, Debug)]
pub struct Red<T> {
    p: RedParams,
    /// Thresholds in the average's unit (packets or bytes).
    th_min: f64,
    th_max: f64,
    /// ns-2's `v_a`, `v_b` (`p_b / max_p` is `v_a avg + v_b` up to
    /// `max_th`) and `v_c`, `v_d` (gentle: `p_b` is `v_c avg + v_d` past
    /// it), set once as its `reset()` does, so an arrival multiplies where
    /// it would divide and rounds as ns-2 rounds.
    v_a: f64,
    v_b: f64,
    v_c: f64,
    v_d: f64,
    q: DropTail<T>,
    avg: f64,
    /// Arrivals (and their bytes) since the last drop.
    count: u64,
    count_bytes: u64,
    /// The average was at or above `min_th` at the previous arrival.
    old: bool,
    /// The transmitter found the queue empty at `idle_since` and nothing
    /// has arrived since.
    idle: bool,
    idle_since: Instant,
    rng: Stream,
}

impl<T: Queued> Red<T> {
    pub fn new(mut p: RedParams, rng: Stream) -> Self {
        if p.max_th <= p.min_th {
            // As ns-2's reset(): "Setting maxthresh to twice minthresh!"
            p.max_th = 2.0 * p.min_th;
        }
        let unit = if p.bytes { p.mean_pktsize as f64 } else { 1.0 };
        let (th_min, th_max) = (p.min_th * unit, p.max_th * unit);
        Red {
            th_min,
            th_max,
            v_a: 1.0 / (th_max - th_min),
            v_b: -th_min / (th_max - th_min),
            v_c: (1.0 - p.max_p) / th_max,
            v_d: 2.0 * p.max_p - 1.0,
            p,
            // The hard limit is RED's own check; the FIFO holds anything.
            q: DropTail::new(p.limit),
            avg: 0.0,
            count: 0,
            count_bytes: 0,
            old: false,
            idle: true,
            idle_since: Instant::ZERO,
            rng,
        }
    }

    pub fn params(&self) -> &RedParams {
        &self.p
    }

    /// The average queue (packets, or bytes in bytes mode).
    pub fn avg(&self) -> f64 {
        self.avg
    }

    /// The base drop probability `p_b` for an average queue of `avg`
    /// (packets, or bytes in bytes mode): ns-2's `calculate_p_new`, which
    /// is `max_p (avg - min_th) / (max_th - min_th)` up to `max_th` and
    /// `max_p + (1 - max_p) (avg - max_th) / max_th` past it (gentle).
    pub fn base_prob(&self, avg: f64) -> f64 {
        let p = if avg < self.th_min {
            0.0
        } else if avg >= self.th_max && self.p.gentle {
            self.v_c * avg + self.v_d
        } else if avg >= self.th_max {
            1.0
        } else {
            (self.v_a * avg + self.v_b) * self.p.max_p
        };
        p.min(1.0)
    }

    /// The probability applied to an arrival of `size` bytes given `p_b`
    /// and the arrivals since the last drop: ns-2's `modify_p`.
    fn actual_prob(&self, p_b: f64, size: u32) -> f64 {
        let mean = self.p.mean_pktsize as u64;
        // ns-2 divides integers here, so count moves in whole mean packets.
        let count = if self.p.bytes {
            (self.count_bytes / mean.max(1)) as f64
        } else {
            self.count as f64
        };
        let cp = count * p_b;
        let mut p = if self.p.wait {
            if cp < 1.0 {
                0.0
            } else if cp < 2.0 {
                p_b / (2.0 - cp)
            } else {
                1.0
            }
        } else if cp < 1.0 {
            p_b / (1.0 - cp)
        } else {
            1.0
        };
        if self.p.bytes && p < 1.0 {
            p = p * size as f64 / mean as f64;
        }
        p.min(1.0)
    }

    fn qlen(&self) -> f64 {
        if self.p.bytes {
            self.q.len_bytes() as f64
        } else {
            self.q.len_packets() as f64
        }
    }

    /// Updates the average for an arrival at `now`: ns-2's `estimator`,
    /// with the idle decay.
    fn update_avg(&mut self, now: Instant) {
        let w = 1.0 - self.p.q_w;
        if self.idle {
            self.idle = false;
            let idle = (now - self.idle_since).as_secs_f64();
            let m = libm::floor(self.p.ptc * idle);
            if m >= 1.0 {
                self.avg *= libm::pow(w, m);
            }
        }
        self.avg = self.avg * w + self.p.q_w * self.qlen();
    }

    /// Inline: its one caller is `Queue::enqueue_other`, which LLVM's
    /// heuristics otherwise leave calling it out of line in some builds.
    #[inline(always)]
    pub(super) fn enqueue(&mut self, now: Instant, item: T) -> Result<(), (T, DropReason)> {
        self.update_avg(now);
        let size = item.wire_len();
        self.count += 1;
        self.count_bytes += size as u64;
        let mut verdict = None;
        if self.avg >= self.th_min && self.qlen() > 1.0 {
            if !self.old {
                // The average just crossed min_th: start counting afresh.
                self.old = true;
                self.count = 1;
                self.count_bytes = size as u64;
            } else {
                let p_b = self.base_prob(self.avg);
                let p_a = self.actual_prob(p_b, size);
                if self.rng.uniform() < p_a {
                    self.count = 0;
                    self.count_bytes = 0;
                    verdict = Some(if p_b >= 1.0 {
                        DropReason::Forced
                    } else {
                        DropReason::Early
                    });
                }
            }
        } else {
            self.old = false;
        }
        match verdict {
            Some(why) if self.q.has_room(size) => Err((item, why)),
            _ => self.q.push(item).inspect_err(|_| {
                self.count = 0;
                self.count_bytes = 0;
            }),
        }
    }

    pub(super) fn dequeue(&mut self, now: Instant) -> Option<T> {
        let it = self.q.pop();
        if it.is_none() && !self.idle {
            self.idle = true;
            self.idle_since = now;
        }
        it
    }

    pub fn len_packets(&self) -> usize {
        self.q.len_packets()
    }

    pub(super) fn take_first(&mut self, pred: impl FnMut(&T) -> bool) -> Option<T> {
        self.q.take_first(pred)
    }

    pub fn len_bytes(&self) -> u64 {
        self.q.len_bytes()
    }

    /// Holds the average at `avg` (tests of the drop law use `q_w = 0`).
    #[cfg(test)]
    pub(crate) fn set_avg(&mut self, avg: f64) {
        self.avg = avg;
    }
}

#[cfg(test)]
#[path = "red_tests.rs"]
mod tests;
