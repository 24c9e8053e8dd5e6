//! CUBIC window growth (RFC 9438).
//!
//! Windows in this file are in segments (`f64`), times in seconds, as in
//! the RFC; [`CcState`] keeps bytes. `cbrt` comes from `libm` so results do
//! not depend on the platform's maths library; the rest is IEEE arithmetic
//! (`+ - * /`), which Rust does not fuse or reorder.
//!
//! ## Choices
//! * `t` runs from the first ACK of congestion avoidance after a reduction:
//!   growth is not called during fast recovery, so the epoch starts when
//!   recovery ends (RFC 9438 4.2: "_t_epoch_ is the time at which the
//!   current congestion avoidance stage starts").
//! * The target is `W_cubic(t + RTT)` with RTT the smoothed RTT (RFC 9438
//!   4.4; Linux uses the minimum RTT). The per-ACK increment
//!   `(target - cwnd) / cwnd` is scaled by the segments the ACK covers, as
//!   Linux's `tcp_cong_avoid_ai` does; with an ACK per segment this is the
//!   RFC's rule exactly.
//! * `ssthresh = FlightSize * beta` (RFC 9438 Figure 5; Linux uses cwnd).
//! * In the Reno-friendly region cwnd becomes `W_est`, but never shrinks.
//! * Slow start is RFC 5681's (HyStart++ is not implemented).
//! * Application-limited periods are not excluded from `t` (RFC 9438 4.2
//!   asks for it; the simulator's sources are bulk or finite transfers).

use super::growth::slow_start;
use super::CcState;
use crate::time::Instant;

/// RFC 9438 4.5 / 5.1: "C SHOULD be set to 0.4".
pub const C: f64 = 0.4;
/// RFC 9438 4.6: "beta_cubic SHOULD be set to 0.7".
pub const BETA: f64 = 0.7;
/// RFC 9438 4.3: `alpha_cubic = 3 * (1 - beta) / (1 + beta)`.
pub const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);

/// CUBIC options. Both default on, as RFC 9438 recommends and Linux's
/// `tcp_cubic` module parameters (`fast_convergence`, `tcp_friendliness`)
/// default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CubicConfig {
    /// RFC 9438 4.7: lower `W_max` when a loss comes before the window
    /// regained the previous `W_max`, releasing bandwidth to new flows.
    pub fast_convergence: bool,
    /// RFC 9438 4.3: never grow slower than an AIMD(alpha, beta) Reno flow.
    pub reno_friendly: bool,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            fast_convergence: true,
            reno_friendly: true,
        }
    }
}

/// `W_cubic(t) = C * (t - K)^3 + W_max` (RFC 9438 Figure 1), segments.
pub fn w_cubic(t: f64, k: f64, w_max: f64) -> f64 {
    let d = t - k;
    C * d * d * d + w_max
}

/// `K = cbrt((W_max - cwnd_epoch) / C)` (RFC 9438 Figure 2), seconds;
/// negative when `cwnd_epoch` exceeds `W_max`.
pub fn k(w_max: f64, cwnd_epoch: f64) -> f64 {
    libm::cbrt((w_max - cwnd_epoch) / C)
}

/// The current congestion avoidance stage.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Epoch {
    start: Instant,
    k: f64,
    w_max: f64,
    cwnd_epoch: f64,
}

/// What CUBIC currently believes (segments and seconds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubicView {
    /// `W_max` as set by the last loss (after fast convergence); `None`
    /// before any loss and after a timeout.
    pub w_max: Option<f64>,
    /// `cwnd` just before the last reduction.
    pub cwnd_prior: f64,
    /// The current epoch: its start, `K`, the `W_max` it uses and
    /// `cwnd_epoch`. `None` outside congestion avoidance.
    pub epoch: Option<(Instant, f64, f64, f64)>,
    /// The Reno-friendly estimate `W_est`.
    pub w_est: f64,
}

#[derive(Clone, Debug)]
pub(super) struct Cubic {
    cfg: CubicConfig,
    /// `W_max` in segments; `None` means "take cwnd at the epoch start"
    /// (no loss yet, or RFC 9438 4.8 after a timeout).
    w_max: Option<f64>,
    /// `cwnd_prior` in segments.
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    /// `W_est` in segments.
    w_est: f64,
    /// cwnd in bytes with its fraction, valid while it truncates to
    /// `CcState::cwnd` (anything else that moves cwnd resynchronises it).
    cwnd_f: f64,
}

impl Cubic {
    pub(super) fn new(cfg: CubicConfig) -> Self {
        Cubic {
            cfg,
            w_max: None,
            cwnd_prior: 0.0,
            epoch: None,
            w_est: 0.0,
            cwnd_f: 0.0,
        }
    }

    pub(super) fn config(&self) -> CubicConfig {
        self.cfg
    }

    pub(super) fn view(&self) -> CubicView {
        CubicView {
            w_max: self.w_max,
            cwnd_prior: self.cwnd_prior,
            epoch: self.epoch.map(|e| (e.start, e.k, e.w_max, e.cwnd_epoch)),
            w_est: self.w_est,
        }
    }

    /// An ACK of `acked` new bytes outside recovery.
    pub(super) fn on_ack(&mut self, now: Instant, s: &mut CcState, acked: u32) {
        if slow_start(s, None, acked as u64) {
            return;
        }
        if self.cwnd_f as u64 != s.cwnd {
            self.cwnd_f = s.cwnd as f64;
        }
        let smss = s.smss as f64;
        let cwnd = self.cwnd_f / smss;
        let e = match self.epoch {
            Some(e) => e,
            None => self.start_epoch(now, cwnd),
        };
        let t = (now - e.start).as_secs_f64();
        let segs = acked as f64 / smss;
        // RFC 9438 4.3, Figure 4: "W_est = W_est + alpha_cubic *
        // segments_acked / cwnd"; "Once W_est has grown to reach the cwnd at
        // the time of most recently setting ssthresh [...] the sender SHOULD
        // set alpha_cubic to 1".
        let alpha = if self.w_est >= self.cwnd_prior {
            1.0
        } else {
            ALPHA
        };
        self.w_est += alpha * segs / cwnd;
        let next = if self.cfg.reno_friendly && w_cubic(t, e.k, e.w_max) < self.w_est {
            // "CUBIC is in the Reno-friendly region and cwnd SHOULD be set
            // to W_est at each reception of a new ACK."
            self.w_est
        } else {
            // RFC 9438 4.4-4.5: target = W_cubic(t + RTT), clamped to
            // [cwnd, 1.5 * cwnd]; "cwnd MUST be incremented by
            // (target - cwnd)/cwnd for each received new ACK".
            let rtt = s.srtt.map_or(0.0, |d| d.as_secs_f64());
            let target = w_cubic(t + rtt, e.k, e.w_max).clamp(cwnd, 1.5 * cwnd);
            cwnd + (target - cwnd) / cwnd * segs
        };
        self.cwnd_f = (next * smss).max(self.cwnd_f);
        s.cwnd = self.cwnd_f as u64;
    }

    /// Starts a congestion avoidance stage at `now` with `cwnd` segments.
    fn start_epoch(&mut self, now: Instant, cwnd: f64) -> Epoch {
        // RFC 9438 4.8: after a timeout "W_max is set to the congestion
        // window size at the beginning of the current congestion avoidance
        // stage" and K to 0; we do the same before the first loss.
        let w_max = self.w_max.unwrap_or(cwnd);
        let e = Epoch {
            start: now,
            k: k(w_max, cwnd),
            w_max,
            cwnd_epoch: cwnd,
        };
        // RFC 9438 4.3: "W_est is set equal to cwnd_epoch at the start of the
        // congestion avoidance stage."
        self.w_est = cwnd;
        self.epoch = Some(e);
        e
    }

    /// Duplicate ACKs detected a loss: fast convergence, `W_max`, the new
    /// ssthresh.
    pub(super) fn on_loss(&mut self, s: &CcState, flight: u64) -> u64 {
        let cwnd = s.cwnd as f64 / s.smss as f64;
        // RFC 9438 4.7: "W_max = cwnd * (1 + beta_cubic) / 2 if cwnd < W_max
        // and fast convergence enabled [...] cwnd otherwise".
        let below = self.w_max.is_some_and(|w| cwnd < w);
        self.w_max = Some(if self.cfg.fast_convergence && below {
            cwnd * (1.0 + BETA) / 2.0
        } else {
            cwnd
        });
        self.cwnd_prior = cwnd;
        self.epoch = None;
        beta_ssthresh(s, flight)
    }

    /// The retransmission timer expired: RFC 9438 4.8, "CUBIC follows Reno
    /// to reduce cwnd [RFC5681], but sets ssthresh using beta_cubic"; the
    /// next stage starts with `K = 0` from its own cwnd.
    pub(super) fn on_timeout(&mut self, s: &CcState, flight: u64) -> u64 {
        self.cwnd_prior = s.cwnd as f64 / s.smss as f64;
        self.w_max = None;
        self.epoch = None;
        beta_ssthresh(s, flight)
    }
}

/// RFC 9438 Figure 5: `ssthresh = flight_size * beta_cubic`, at least
/// 2 SMSS.
fn beta_ssthresh(s: &CcState, flight: u64) -> u64 {
    ((flight as f64 * BETA) as u64).max(2 * s.smss as u64)
}
