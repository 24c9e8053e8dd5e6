//! `cc = "cubic-flows"`: CUBIC that backs off as the flows it carries
//! would, as a quinn congestion controller.
//!
//! The logic is the core's ([`pep_core::cc::Growth::CubicFlows`] under
//! [`pep_core::cc::QuicCongestion`], RFC 9002's recovery period), the same
//! growth the simulator's split-pair tunnel runs with `tunnel_cc =
//! "cubic-flows"`. This adapter only translates quinn's callbacks into the
//! core machine's inputs: times become nanoseconds since the controller
//! was built, and a congestion event carries the number of flows open on
//! the tunnel.

use std::any::Any;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use pep_core::cc::{Growth, QuicCongestion};
use quinn::congestion::{Controller, ControllerFactory, ControllerMetrics};

use crate::metrics::Metrics;

/// Quinn's initial window (its CubicConfig default).
const INITIAL_WINDOW: u64 = 12_000;

/// The quinn controller: the core machine with the tunnel's open flows.
#[derive(Clone)]
pub(crate) struct Adapter {
    cc: QuicCongestion,
    /// The core's time zero.
    origin: Instant,
    metrics: Arc<Metrics>,
}

impl Adapter {
    pub(crate) fn new(now: Instant, mtu: u16, metrics: Arc<Metrics>) -> Self {
        Adapter {
            cc: QuicCongestion::new(Growth::CubicFlows, mtu, INITIAL_WINDOW),
            origin: now,
            metrics,
        }
    }

    /// [`Controller::on_ack`] with the smoothed RTT read (quinn's
    /// `RttEstimator` cannot be built outside quinn, so tests call this).
    pub(crate) fn ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: std::time::Duration,
    ) {
        let rtt = pep_core::Duration(rtt.as_nanos().min(u64::MAX as u128) as u64);
        let (now, sent) = (self.at(now), self.at(sent));
        self.cc.on_ack(now, sent, bytes, app_limited, rtt);
    }

    fn at(&self, t: Instant) -> pep_core::Instant {
        core_instant(self.origin, t)
    }
}

/// `t` as the core's time: nanoseconds since the adapter's `origin`.
pub(super) fn core_instant(origin: Instant, t: Instant) -> pep_core::Instant {
    let ns = t.saturating_duration_since(origin).as_nanos();
    pep_core::Instant(ns.min(u64::MAX as u128) as u64)
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
        self.ack(now, sent, bytes, app_limited, rtt.get());
    }

    fn on_congestion_event(&mut self, now: Instant, sent: Instant, persistent: bool, _lost: u64) {
        let flows = self.metrics.tunnel.flows_active.load(Relaxed);
        self.cc.set_flows(flows.clamp(0, u32::MAX as i64) as u32);
        let (now, sent) = (self.at(now), self.at(sent));
        self.cc.on_congestion_event(now, sent, persistent);
    }

    fn on_mtu_update(&mut self, mtu: u16) {
        self.cc.on_mtu_update(mtu);
    }

    fn window(&self) -> u64 {
        self.cc.window()
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = ControllerMetrics::default();
        m.congestion_window = self.cc.window();
        m.ssthresh = Some(self.cc.ssthresh());
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
    fn build(self: Arc<Self>, now: Instant, mtu: u16) -> Box<dyn Controller> {
        Box::new(Adapter::new(now, mtu, self.metrics.clone()))
    }
}

#[cfg(test)]
#[path = "cc_tests.rs"]
mod tests;
