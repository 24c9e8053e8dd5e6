//! `cc = "bbr"`: the core's BBR as a quinn congestion controller, for
//! long paths with random loss.
//!
//! The logic is the core's ([`pep_core::cc::QuicBbr`]: Linux's BBR v1 fed
//! by a send-time-keyed rate sampler, its model turned into a window that
//! quinn paces from). This adapter only translates quinn's callbacks:
//! times become nanoseconds since the controller was built.

use std::any::Any;
use std::time::Instant;

use pep_core::cc::QuicBbr;
use quinn::congestion::{Controller, ControllerFactory, ControllerMetrics};

/// Quinn's initial window (its BbrConfig and CubicConfig default).
const INITIAL_WINDOW: u64 = 12_000;

/// The quinn controller: the core machine.
#[derive(Clone)]
pub(crate) struct BbrAdapter {
    cc: QuicBbr,
    /// The core's time zero.
    origin: Instant,
}

impl BbrAdapter {
    pub(crate) fn new(now: Instant, mtu: u16) -> Self {
        BbrAdapter {
            // One connection per tunnel: the seed only picks PROBE_BW's
            // first phase.
            cc: QuicBbr::new(mtu, INITIAL_WINDOW, 1),
            origin: now,
        }
    }

    fn at(&self, t: Instant) -> pep_core::Instant {
        super::cc::core_instant(self.origin, t)
    }

    /// [`Controller::on_ack`] with the smoothed RTT read.
    fn ack(&mut self, now: Instant, sent: Instant, bytes: u64, srtt: std::time::Duration) {
        let srtt = pep_core::Duration(srtt.as_nanos().min(u64::MAX as u128) as u64);
        let (now, sent) = (self.at(now), self.at(sent));
        self.cc.on_ack(now, sent, bytes, srtt);
    }
}

impl Controller for BbrAdapter {
    fn on_sent(&mut self, now: Instant, bytes: u64, _last_packet_number: u64) {
        let now = self.at(now);
        self.cc.on_sent(now, bytes);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        _app_limited: bool,
        rtt: &quinn_proto::RttEstimator,
    ) {
        self.ack(now, sent, bytes, rtt.get());
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        _largest_packet_num_acked: Option<u64>,
    ) {
        let now = self.at(now);
        self.cc.on_end_acks(now, in_flight, app_limited);
    }

    fn on_congestion_event(&mut self, now: Instant, _sent: Instant, persistent: bool, lost: u64) {
        let now = self.at(now);
        self.cc.on_congestion_event(now, persistent, lost);
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
        m.pacing_rate = Some(self.cc.pacing_rate().saturating_mul(8));
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
pub struct CoreBbrFactory;

impl ControllerFactory for CoreBbrFactory {
    fn build(self: std::sync::Arc<Self>, now: Instant, mtu: u16) -> Box<dyn Controller> {
        Box::new(BbrAdapter::new(now, mtu))
    }
}
