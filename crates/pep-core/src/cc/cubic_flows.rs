//! `cubic-flows` window growth: CUBIC that backs off as the flows it
//! carries would (the daemon's default tunnel congestion control).
//!
//! One tunnel connection carrying N flows sees each loss as one
//! connection: plain CUBIC cuts the whole window to 0.7, where N
//! end-to-end flows would lose one flow's share of it (losses at a shared
//! drop-tail queue hit one flow at a time). On a long fat pipe with a
//! shallow queue that cut empties the pipe for many round trips, and N
//! end-to-end flows keep the link busier than the tunnel carrying them.
//! This growth emulates N CUBIC flows (as MulTCP does for Reno): a
//! congestion event is one virtual flow's of the aggregate window W, and
//! that flow backs off:
//!
//! ```text
//! beta_N = (N - 1 + beta) / N        (beta = 0.7, RFC 9438)
//! K      = cbrt(W_max (1 - beta_N) / C)
//! ```
//!
//! so the aggregate follows W(t) = C (t - K)^3 + W_max: the recovering
//! flow's curve (and its Reno-friendly estimate) on top of the others'
//! unchanged windows. N is the number of flows open on the tunnel when the
//! loss happens ([`Congestion::set_flows`](super::Congestion::set_flows)),
//! at least 1 (then this is CUBIC) and at most [`MAX_FLOWS`]: the tunnel
//! takes the share its flows would have taken, not more. A loss that ends
//! slow start halves the window: the last round doubled it past what the
//! path holds, for every virtual flow. (Charging each lost packet of an
//! event to another virtual flow, closer to how a drop-tail queue spreads
//! drops over N real flows, kept the lab's link only 83-90 % busy against
//! 98-99 % for one flow per event.)
//!
//! ## Conventions
//! Windows in bytes; the curve in segments of `smss` (the QUIC datagram
//! size, or the TCP tunnel's SMSS). `t` runs from the congestion event
//! (not from the end of recovery, as in `cubic.rs`), the curve is evaluated
//! one smoothed RTT ahead, and congestion avoidance adds whole segments:
//! growth owed below one segment is carried. Slow start adds every byte
//! acknowledged (byte counting without a per-ACK limit, as quinn's CUBIC).
//! Which ACKs and losses reach this file is the recovery axis's choice:
//! [`Congestion`](super::Congestion)'s TCP recovery for the simulator's
//! tunnel, [`QuicCongestion`](super::QuicCongestion) for the daemon's.

use super::cubic::{ALPHA, BETA, C};
use super::CcState;
use crate::time::Instant;

/// The cut when slow start ends in a loss.
pub const SLOW_START_BETA: f64 = 0.5;
/// The most flows one loss is shared among (a loss every RTT then still
/// costs 1% of the window).
pub const MAX_FLOWS: u32 = 32;

/// What cubic-flows currently believes, for traces and tests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubicFlowsView {
    /// The window the curve returns to, in bytes.
    pub w_max: f64,
    /// Seconds from the epoch start to `W_max`.
    pub k: f64,
    /// The last cut's factor (`beta_N`, or 0.5 out of slow start).
    pub beta: f64,
    /// When the curve started: the last congestion event, or the first
    /// ACK of congestion avoidance without one. `None` in slow start.
    pub epoch: Option<Instant>,
    /// Flows open on the connection, as last reported.
    pub flows: u32,
}

#[derive(Clone, Debug)]
pub(super) struct CubicFlows {
    epoch: Option<Instant>,
    w_max: f64,
    k: f64,
    beta: f64,
    /// Growth owed but smaller than one segment, in bytes.
    inc: u64,
    flows: u32,
    /// When the transport last reported an ACK (new or duplicate): the
    /// time of a loss the TCP recovery axis detects from it.
    last_ack: Instant,
}

impl CubicFlows {
    pub(super) fn new() -> Self {
        CubicFlows {
            epoch: None,
            w_max: 0.0,
            k: 0.0,
            beta: BETA,
            inc: 0,
            flows: 1,
            last_ack: Instant::ZERO,
        }
    }

    pub(super) fn view(&self) -> CubicFlowsView {
        CubicFlowsView {
            w_max: self.w_max,
            k: self.k,
            beta: self.beta,
            epoch: self.epoch,
            flows: self.flows,
        }
    }

    pub(super) fn set_flows(&mut self, flows: u32) {
        self.flows = flows;
    }

    /// An ACK arrived at `now` (any ACK the transport processes).
    pub(super) fn saw_ack(&mut self, now: Instant) {
        self.last_ack = now;
    }

    /// An ACK of `acked` new bytes outside recovery, at `now`.
    pub(super) fn on_ack(&mut self, now: Instant, s: &mut CcState, acked: u64) {
        self.last_ack = now;
        if s.cwnd < s.ssthresh {
            s.cwnd = s.cwnd.saturating_add(acked);
            return;
        }
        // Without an RTT there is no curve to evaluate ahead of (a TCP
        // tunnel before its first sample; QUIC always has one).
        let Some(rtt) = s.srtt else { return };
        let start = *self.epoch.get_or_insert_with(|| {
            // Congestion avoidance without a loss yet: the curve starts here.
            self.w_max = s.cwnd as f64;
            self.k = 0.0;
            now
        });
        let mtu = s.smss as f64;
        let t = now.saturating_since(start).as_secs_f64();
        let rtt = rtt.as_secs_f64();
        let w_max = self.w_max / mtu;
        let d = t + rtt - self.k;
        let w_cubic = (C * d * d * d + w_max) * mtu;
        // The recovering flow's Reno-friendly estimate, the others held.
        let w_est = (w_max * self.beta + ALPHA * t / rtt.max(1e-6)) * mtu;
        let mut target = s.cwnd;
        if w_cubic < w_est {
            target = target.max(w_est as u64);
        } else if (target as f64) < w_cubic {
            target += ((w_cubic - target as f64) / target as f64 * mtu) as u64;
        }
        self.inc += target - s.cwnd;
        if self.inc >= s.smss as u64 {
            s.cwnd += s.smss as u64;
            self.inc = 0;
        }
    }

    /// A congestion event at `now`: W_max, K and the new ssthresh (the
    /// recovery axis sets cwnd).
    pub(super) fn on_loss(&mut self, now: Instant, s: &CcState) -> u64 {
        self.epoch = Some(now);
        if s.cwnd < s.ssthresh {
            // Slow start's last round doubled the window past what the
            // path holds: every virtual flow overshot, and half of the
            // window is what got through. (CUBIC's 0.7 would leave 1.4
            // times the path, then many rounds of losses at one flow's
            // cut each: 5 % of the tunnel's packets lost in the lab.)
            self.w_max = s.cwnd as f64;
            self.beta = SLOW_START_BETA;
            return self.cut(s);
        }
        // One virtual flow of N backs off.
        let n = self.flows.clamp(1, MAX_FLOWS) as f64;
        self.beta = (n - 1.0 + BETA) / n;
        let window = s.cwnd as f64;
        // Fast convergence (RFC 9438 4.7): a flow that lost below its last
        // W_max releases some of it.
        self.w_max = if window < self.w_max {
            window * (1.0 + self.beta) / 2.0
        } else {
            window
        };
        self.cut(s)
    }

    /// A loss detected by the last ACK the transport reported.
    pub(super) fn on_loss_at_last_ack(&mut self, s: &CcState) -> u64 {
        self.on_loss(self.last_ack, s)
    }

    /// Persistent congestion (QUIC) or a retransmission timeout (TCP) at
    /// `now`: the event's cut, then the curve starts afresh once slow
    /// start reaches the new ssthresh.
    pub(super) fn on_timeout(&mut self, now: Instant, s: &CcState) -> u64 {
        let slow_start = s.cwnd < s.ssthresh;
        let ssthresh = self.on_loss(now, s);
        self.epoch = None;
        if !slow_start {
            self.w_max = ssthresh as f64;
            self.inc = 0;
        }
        ssthresh
    }

    /// Applies `beta` to cwnd: the new ssthresh; K toward `w_max`.
    fn cut(&mut self, s: &CcState) -> u64 {
        let ssthresh = ((s.cwnd as f64 * self.beta) as u64).max(2 * s.smss as u64);
        self.k = libm::cbrt(self.w_max / s.smss as f64 * (1.0 - self.beta) / C);
        self.inc = (self.inc as f64 * self.beta) as u64;
        ssthresh
    }
}
