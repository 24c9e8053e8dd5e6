//! The recovery axis for a transport that detects loss itself (QUIC,
//! RFC 9002 section 7): it reports each acknowledged packet and each
//! congestion event with the time the packet was sent, and this decides
//! which of them move the window, by RFC 9002 7.3.2's recovery period:
//!
//! * a congestion event starts a recovery period at `now`; a loss of a
//!   packet sent before that is the same event and changes nothing ("a
//!   sender [...] MUST NOT reduce the window more than once per round
//!   trip": only a packet sent after the period began starts another);
//! * ACKs of packets sent before the period began do not grow the window;
//!   nor do application-limited ones (7.8);
//! * persistent congestion (7.6) cuts as the event would, then restarts
//!   from the minimum window (two datagrams) in slow start.
//!
//! The growth axis ([`Growth`], shared with TCP's [`super::Congestion`])
//! decides the rest. The daemon's tunnel drives this from quinn's
//! `Controller` callbacks; its adapter only translates them.

use super::growth::{Growth, GrowthState, GrowthView};
use super::CcState;
use crate::seq::Seq;
use crate::time::{Duration, Instant};

/// One QUIC connection's congestion controller.
#[derive(Clone, Debug)]
pub struct QuicCongestion {
    state: CcState,
    growth: GrowthState,
    /// When the current recovery period began.
    recovery_start: Option<Instant>,
}

impl QuicCongestion {
    /// A controller with `growth`, datagrams of `mtu` bytes and an initial
    /// window of `initial_window` bytes (at least the minimum window).
    pub fn new(growth: Growth, mtu: u16, initial_window: u64) -> Self {
        let smss = (mtu as u32).max(1);
        QuicCongestion {
            // No duplicate ACKs in QUIC: the threshold is never consulted.
            state: CcState::initial(
                smss,
                initial_window.max(2 * smss as u64),
                u64::MAX,
                Seq(0),
                3,
            ),
            growth: GrowthState::new(growth, smss, initial_window.max(2 * smss as u64)),
            recovery_start: None,
        }
    }

    /// Bytes the sender may have in flight.
    pub fn window(&self) -> u64 {
        self.state.cwnd
    }

    pub fn ssthresh(&self) -> u64 {
        self.state.ssthresh
    }

    /// The growth algorithm's private view.
    pub fn growth_view(&self) -> GrowthView {
        self.growth.view()
    }

    /// RFC 9002's minimum window: two datagrams.
    fn minimum_window(&self) -> u64 {
        2 * self.state.smss as u64
    }

    /// Flows open on the connection (a tunnel's): cubic-flows' N.
    pub fn set_flows(&mut self, flows: u32) {
        self.growth.set_flows(flows);
    }

    /// `bytes` of a packet sent at `sent` were acknowledged at `now`;
    /// `rtt` is the smoothed RTT.
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
        self.state.srtt = Some(rtt);
        let bytes = bytes.min(u32::MAX as u64) as u32;
        self.growth.on_ack(now, &mut self.state, bytes);
    }

    /// Packets sent at `sent` (the latest of them) were declared lost at
    /// `now`; `persistent`: RFC 9002's persistent congestion.
    pub fn on_congestion_event(&mut self, now: Instant, sent: Instant, persistent: bool) {
        if self.recovery_start.is_some_and(|r| sent <= r) {
            // The same congestion event.
            return;
        }
        let flight = self.state.cwnd;
        if persistent {
            self.state.ssthresh = self.growth.timeout_ssthresh(now, &self.state, flight);
            self.state.cwnd = self.minimum_window();
            self.recovery_start = None;
        } else {
            let ssthresh = self.growth.event_ssthresh(now, &self.state, flight);
            self.state.ssthresh = ssthresh;
            self.state.cwnd = ssthresh;
            self.recovery_start = Some(now);
        }
        self.growth.on_congestion();
    }

    /// The path's datagram size changed to `mtu`.
    pub fn on_mtu_update(&mut self, mtu: u16) {
        self.state.smss = (mtu as u32).max(1);
        self.state.cwnd = self.state.cwnd.max(self.minimum_window());
    }
}
