//! `cc = "cubic-flows"`: CUBIC that backs off as the flows it carries
//! would.
//!
//! One tunnel connection carrying N flows sees each loss as one
//! connection: plain CUBIC cuts the whole window to 0.7, where N
//! end-to-end flows would lose one flow's share of it (losses at a shared
//! drop-tail queue hit one flow at a time). On a long fat pipe with a
//! shallow queue that cut empties the pipe for many round trips, and N
//! end-to-end flows keep the link busier than the tunnel carrying them.
//! This controller emulates N CUBIC flows (as MulTCP does for Reno): a
//! congestion event (losses within one round trip) is one virtual flow's
//! of the aggregate window W, and that flow backs off:
//!
//! ```text
//! beta_N = (N - 1 + beta) / N        (beta = 0.7, RFC 9438)
//! K      = cbrt(W_max (1 - beta_N) / C)
//! ```
//!
//! so the aggregate follows W(t) = C (t - K)^3 + W_max: the recovering
//! flow's curve (and its Reno-friendly estimate) on top of the others'
//! unchanged windows. N is the number of flows open on the tunnel when the loss
//! happens, at least 1 (then this is CUBIC) and at most [`MAX_FLOWS`]:
//! the tunnel takes the share its flows would have taken, not more. A
//! loss that ends slow start halves the window: the last round doubled
//! it past what the path holds, for every virtual flow. (Charging each
//! lost packet of an event to another virtual flow, closer to how a
//! drop-tail queue spreads drops over N real flows, kept the lab's link
//! only 83-90 % busy against 98-99 % for one flow per event.)

use std::any::Any;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::congestion::{Controller, ControllerFactory, ControllerMetrics};

use crate::metrics::Metrics;

/// RFC 9438's multiplicative decrease and cubic constant.
const BETA: f64 = 0.7;
const C: f64 = 0.4;
/// The cut when slow start ends in a loss.
const SLOW_START_BETA: f64 = 0.5;
/// The most flows one loss is shared among (a loss every RTT then still
/// costs 1% of the window).
pub const MAX_FLOWS: usize = 32;
/// Quinn's initial window (its CubicConfig default).
const INITIAL_WINDOW: u64 = 12_000;

/// The window arithmetic, in bytes, with time and the RTT passed in.
#[derive(Clone, Debug)]
pub struct FlowCubic {
    mtu: u64,
    window: u64,
    ssthresh: u64,
    /// When the current recovery (and congestion avoidance epoch) began.
    recovery_start: Option<Instant>,
    w_max: f64,
    k: f64,
    beta: f64,
    /// Growth owed but smaller than one MTU.
    inc: u64,
}

impl FlowCubic {
    pub fn new(mtu: u16) -> Self {
        FlowCubic {
            mtu: mtu as u64,
            window: INITIAL_WINDOW,
            ssthresh: u64::MAX,
            recovery_start: None,
            w_max: 0.0,
            k: 0.0,
            beta: BETA,
            inc: 0,
        }
    }

    pub fn window(&self) -> u64 {
        self.window
    }

    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn minimum_window(&self) -> u64 {
        2 * self.mtu
    }

    /// `bytes` sent at `sent` were acknowledged at `now`.
    pub fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: Duration,
    ) {
        if app_limited || self.recovery_start.is_some_and(|r| sent <= r) {
            return;
        }
        if self.window < self.ssthresh {
            self.window += bytes;
            return;
        }
        let start = *self.recovery_start.get_or_insert_with(|| {
            // Congestion avoidance without a loss yet: the curve starts here.
            self.w_max = self.window as f64;
            self.k = 0.0;
            now
        });
        let mtu = self.mtu as f64;
        let t = now.saturating_duration_since(start).as_secs_f64();
        let w_max = self.w_max / mtu;
        let w_cubic = (C * (t + rtt.as_secs_f64() - self.k).powi(3) + w_max) * mtu;
        // The recovering flow's Reno-friendly estimate, the others held.
        let alpha = 3.0 * (1.0 - BETA) / (1.0 + BETA);
        let w_est = (w_max * self.beta + alpha * t / rtt.as_secs_f64().max(1e-6)) * mtu;
        let mut target = self.window;
        if w_cubic < w_est {
            target = target.max(w_est as u64);
        } else if (target as f64) < w_cubic {
            target += ((w_cubic - target as f64) / target as f64 * mtu) as u64;
        }
        self.inc += target - self.window;
        if self.inc >= self.mtu {
            self.window += self.mtu;
            self.inc = 0;
        }
    }

    /// Packets sent at `sent` were lost; `flows` are open on the tunnel.
    pub fn on_congestion(&mut self, now: Instant, sent: Instant, persistent: bool, flows: usize) {
        if self.recovery_start.is_some_and(|r| sent <= r) {
            // The same congestion event: more virtual flows lost a packet.
            return;
        }
        self.recovery_start = Some(now);
        if self.window < self.ssthresh {
            // Slow start's last round doubled the window past what the
            // path holds: every virtual flow overshot, and half of the
            // window is what got through. (CUBIC's 0.7 would leave 1.4
            // times the path, then many rounds of losses at one flow's
            // cut each: 5 % of the tunnel's packets lost in the lab.)
            self.w_max = self.window as f64;
            self.beta = SLOW_START_BETA;
            self.cut();
            if persistent {
                self.recovery_start = None;
                self.window = self.minimum_window();
            }
            return;
        }
        // One virtual flow of N backs off.
        let n = flows.clamp(1, MAX_FLOWS) as f64;
        self.beta = (n - 1.0 + BETA) / n;
        let window = self.window as f64;
        // Fast convergence (RFC 9438 4.7): a flow that lost below its last
        // W_max releases some of it.
        self.w_max = if window < self.w_max {
            window * (1.0 + self.beta) / 2.0
        } else {
            window
        };
        self.cut();
        if persistent {
            self.recovery_start = None;
            self.w_max = self.window as f64;
            self.inc = 0;
            self.window = self.minimum_window();
        }
    }

    /// Applies `beta` to the window and starts the curve toward `w_max`.
    fn cut(&mut self) {
        let before = self.window as f64;
        self.ssthresh = ((before * self.beta) as u64).max(self.minimum_window());
        self.window = self.ssthresh;
        self.k = (self.w_max / self.mtu as f64 * (1.0 - self.beta) / C).cbrt();
        self.inc = (self.inc as f64 * self.beta) as u64;
    }

    pub fn on_mtu_update(&mut self, mtu: u16) {
        self.mtu = mtu as u64;
        self.window = self.window.max(self.minimum_window());
    }
}

/// The quinn controller: [`FlowCubic`] with the tunnel's open flows.
#[derive(Clone)]
struct Adapter {
    cubic: FlowCubic,
    metrics: Arc<Metrics>,
}

impl Controller for Adapter {
    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &quinn_proto::RttEstimator,
    ) {
        self.cubic.on_ack(now, sent, bytes, app_limited, rtt.get());
    }

    fn on_congestion_event(&mut self, now: Instant, sent: Instant, persistent: bool, _lost: u64) {
        let flows = self.metrics.tunnel.flows_active.load(Relaxed).max(1) as usize;
        self.cubic.on_congestion(now, sent, persistent, flows);
    }

    fn on_mtu_update(&mut self, mtu: u16) {
        self.cubic.on_mtu_update(mtu);
    }

    fn window(&self) -> u64 {
        self.cubic.window()
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = ControllerMetrics::default();
        m.congestion_window = self.cubic.window();
        m.ssthresh = Some(self.cubic.ssthresh());
        m
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        INITIAL_WINDOW
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// Builds a controller per tunnel connection.
pub struct FlowCubicFactory {
    pub metrics: Arc<Metrics>,
}

impl ControllerFactory for FlowCubicFactory {
    fn build(self: Arc<Self>, _now: Instant, mtu: u16) -> Box<dyn Controller> {
        Box::new(Adapter {
            cubic: FlowCubic::new(mtu),
            metrics: self.metrics.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MTU: u16 = 1200;
    const RTT: Duration = Duration::from_millis(250);

    /// A window of `w` bytes in congestion avoidance, at `t0`.
    fn at_window(w: u64, t0: Instant) -> FlowCubic {
        let mut c = FlowCubic::new(MTU);
        c.window = w;
        c.ssthresh = w;
        c.on_ack(t0, t0, 1, false, RTT);
        c
    }

    #[test]
    fn one_loss_costs_one_flows_share() {
        let t0 = Instant::now();
        for (flows, beta) in [(1, 0.7), (2, 0.85), (20, 0.985), (100, 1.0 - 0.3 / 32.0)] {
            let mut c = at_window(3_000_000, t0);
            c.on_congestion(t0 + RTT, t0 + RTT, false, flows);
            let want = 3_000_000.0 * beta;
            assert!(
                (c.window() as f64 - want).abs() < 2.0,
                "{flows} flows: {} against {want}",
                c.window()
            );
            // A loss from before the cut is the same event.
            c.on_congestion(t0 + RTT * 2, t0 + RTT / 2, false, flows);
            assert!((c.window() as f64 - want).abs() < 2.0);
            // A later one is another flow's: (1 - 0.3 / N) again.
            c.on_congestion(t0 + RTT * 3, t0 + RTT * 2, false, flows);
            let want = want * beta;
            assert!(
                (c.window() as f64 - want).abs() < 3.0,
                "{flows} flows, second event: {} against {want}",
                c.window()
            );
        }
    }

    /// Acks a window's worth per RTT, packet by packet, from `from` until
    /// the window first reaches `target`; returns when, in seconds.
    fn time_to_reach(c: &mut FlowCubic, from: Instant, target: u64, limit: f64) -> f64 {
        let step = Duration::from_millis(10);
        let mut now = from;
        while c.window() < target {
            now += step;
            let packets = c.window() as f64 / MTU as f64 * step.as_secs_f64() / RTT.as_secs_f64();
            for _ in 0..packets.round().max(1.0) as u64 {
                c.on_ack(now, now, MTU as u64, false, RTT);
            }
            let t = (now - from).as_secs_f64();
            assert!(t < limit, "window {} after {t} s", c.window());
        }
        (now - from).as_secs_f64()
    }

    #[test]
    fn the_window_follows_the_cubic_curve_back_to_w_max() {
        // RFC 9438: W(t) = C (t - K)^3 + W_max, K = cbrt(W_max (1 - beta) / C)
        // in packets, so W_max - 1 packet is reached cbrt(1 / C) before K;
        // the curve is evaluated one RTT ahead and the window trails it by
        // about one: within two RTTs of that.
        let t0 = Instant::now();
        let w = 2_000 * MTU as u64;
        for flows in [1, 20] {
            let beta = (flows as f64 - 1.0 + BETA) / flows as f64;
            let k = (2_000.0 * (1.0 - beta) / C).cbrt();
            let want = k - (1.0 / C).cbrt();
            let mut c = at_window(w, t0);
            let lost = t0 + RTT;
            c.on_congestion(lost, lost, false, flows);
            let t = time_to_reach(&mut c, lost, w - MTU as u64, 60.0);
            let rtt = RTT.as_secs_f64();
            assert!(
                (t - want).abs() < 2.0 * rtt,
                "{flows} flows: W_max - 1 after {t:.2} s, expected {want:.2} s (K = {k:.2} s)"
            );
        }
    }

    #[test]
    fn a_loss_in_slow_start_halves_the_window() {
        let t0 = Instant::now();
        let mut c = FlowCubic::new(MTU);
        c.on_ack(t0, t0, 1_000_000, false, RTT);
        let w = c.window();
        c.on_congestion(t0 + RTT, t0 + RTT, false, 20);
        assert_eq!(c.window(), w / 2);
        c.on_congestion(t0 + RTT, t0 + RTT / 2, false, 20);
        assert_eq!(c.window(), w / 2);
        // Then congestion avoidance, where a loss is one flow's of 20.
        let w = c.window();
        c.on_congestion(t0 + RTT * 3, t0 + RTT * 2, false, 20);
        assert_eq!(c.window(), (w as f64 * 0.985) as u64);
    }

    #[test]
    fn persistent_congestion_restarts_from_the_minimum() {
        let t0 = Instant::now();
        let mut c = at_window(1_000_000, t0);
        c.on_congestion(t0 + RTT, t0 + RTT, true, 20);
        assert_eq!(c.window(), 2 * MTU as u64);
        // Slow start again up to the ssthresh the loss set.
        assert_eq!(c.ssthresh(), (1_000_000.0 * 0.985) as u64);
    }

    #[test]
    fn slow_start_doubles_per_round() {
        let t0 = Instant::now();
        let mut c = FlowCubic::new(MTU);
        let w0 = c.window();
        c.on_ack(t0, t0, w0, false, RTT);
        assert_eq!(c.window(), 2 * w0);
        // Application-limited ACKs do not grow the window.
        c.on_ack(t0, t0, w0, true, RTT);
        assert_eq!(c.window(), 2 * w0);
    }
}
