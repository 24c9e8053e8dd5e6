//! BBR for a QUIC connection whose transport paces from its window (the
//! daemon's tunnel, `tunnel.cc = "bbr"`, through quinn 0.11's
//! `Controller`): the core's [`Bbr`] (Linux's BBR v1) fed by a
//! send-time-keyed sampler ([`QuicRateSampler`]), with its model turned
//! into the one output quinn takes, a window, by [`BbrWindow`]'s rule
//! (`bbr_window.rs`: the model's flight plus headroom, STARTUP's loss
//! exit, the loss-bounded probe, PROBE_RTT at half the BDP), the rule the simulator's split-pair
//! tunnel applies too. quinn paces at 1.25 x window / smoothed RTT.
//!
//! Persistent congestion (RFC 9002 7.6) is BBR's retransmission timeout.

use super::bbr::{AckInfo, Bbr, BbrView, CaState};
use super::bbr_window::BbrWindow;
use super::quic_rate::QuicRateSampler;
use crate::time::{Duration, Instant};

/// The smallest initial window, in datagrams (`bbr_cwnd_min_target`).
const MIN_WINDOW_PKTS: u64 = 4;

/// One QUIC connection's BBR.
#[derive(Clone, Debug)]
pub struct QuicBbr {
    bbr: Bbr,
    rate: QuicRateSampler,
    srtt: Option<Duration>,
    win: BbrWindow,
}

impl QuicBbr {
    /// For datagrams of `mtu` bytes, an initial window of `initial_window`
    /// bytes; `seed` picks PROBE_BW's random first phases.
    pub fn new(mtu: u16, initial_window: u64, seed: u64) -> Self {
        let smss = (mtu as u64).max(1);
        let window = initial_window.max(MIN_WINDOW_PKTS * smss);
        let mut bbr = Bbr::new(smss as u32, window, seed);
        let win = BbrWindow::new(smss, &mut bbr);
        QuicBbr {
            bbr,
            rate: QuicRateSampler::new(),
            srtt: None,
            win,
        }
    }

    /// `bytes` left at `now`.
    pub fn on_sent(&mut self, now: Instant, bytes: u64) {
        if self.rate.on_sent(now, bytes) {
            self.bbr
                .on_tx_start(now, self.rate.delivered_time(), self.srtt);
        }
    }

    /// A packet of `bytes` sent at `sent` was acknowledged at `now`;
    /// `srtt` is the smoothed RTT.
    pub fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, srtt: Duration) {
        self.srtt = Some(srtt);
        self.rate.on_ack(now, sent, bytes);
    }

    /// A batch of ACKs at `now` ended with `inflight` bytes in flight;
    /// `app_limited`: the sender had less to send than its window.
    pub fn on_end_acks(&mut self, now: Instant, inflight: u64, app_limited: bool) {
        let rs = self.rate.end_acks(now, inflight);
        if rs.acked_sacked == 0 && rs.losses == 0 {
            return;
        }
        let a = AckInfo {
            now,
            delivered: self.rate.delivered(),
            delivered_time: self.rate.delivered_time(),
            lost: self.rate.lost(),
            inflight,
            ca_state: CaState::Open,
            srtt: self.srtt,
            next_send: now,
        };
        if self.bbr.on_ack(&rs, &a) || app_limited {
            self.rate.mark_app_limited();
        }
        self.win
            .on_acks(&mut self.bbr, rs.acked_sacked, rs.losses, inflight);
    }

    /// `lost` bytes, the latest sent at `sent`, were found lost at `now`;
    /// `persistent`: RFC 9002's persistent congestion.
    pub fn on_congestion_event(&mut self, now: Instant, persistent: bool, lost: u64) {
        let _ = now;
        self.rate.on_lost(lost);
        if persistent {
            self.bbr.on_rto(
                self.rate.delivered(),
                self.rate.delivered_time(),
                self.rate.lost(),
            );
        }
    }

    /// The path's datagram size changed to `mtu`.
    pub fn on_mtu_update(&mut self, mtu: u16) {
        self.win.set_smss(mtu as u64);
    }

    /// Bytes the sender may have in flight ([`BbrWindow::window`]).
    pub fn window(&self) -> u64 {
        self.win.window(&self.bbr)
    }

    /// The loss-bounded probe's cap, once a probe lost over 2 %.
    pub fn inflight_hi(&self) -> Option<u64> {
        self.win.inflight_hi()
    }

    /// BBR's cwnd (the window's cap).
    pub fn cwnd(&self) -> u64 {
        self.bbr.cwnd()
    }

    /// The pacing rate BBR asks for, bytes per second.
    pub fn pacing_rate(&self) -> u64 {
        self.bbr.pacing_rate()
    }

    pub fn view(&self) -> BbrView {
        self.bbr.view()
    }

    /// Send times the sampler holds.
    pub fn records(&self) -> usize {
        self.rate.records()
    }
}
