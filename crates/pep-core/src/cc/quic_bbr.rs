//! BBR for a QUIC connection whose transport paces from its window (the
//! daemon's tunnel, `tunnel.cc = "bbr"`, through quinn 0.11's
//! `Controller`): the core's [`Bbr`] (Linux's BBR v1) fed by a
//! send-time-keyed sampler ([`QuicRateSampler`]), with its model turned
//! into the one output quinn takes, a window.
//!
//! quinn paces at 1.25 x window / smoothed RTT and takes no pacing rate,
//! so BBR's own output (pace at `pacing_gain x BtlBw`, cap the flight at
//! `cwnd_gain x BDP`) becomes a window: the flight BBR's pacing would
//! keep, `pacing_gain x BtlBw x minRTT`, plus [`HEADROOM_PKTS`] datagrams
//! for ACK timing, and never above BBR's cwnd. STARTUP's 2.89 thus still
//! doubles the flight each round, PROBE_BW's 1.25 phase probes with a
//! quarter BDP more and its 0.75 phase drains it, and between them the
//! flight stays at the BDP: no standing queue, where BBR's cwnd (2 BDP)
//! with quinn's window pacing would keep one BDP queued.
//!
//! Losses do not shrink the model (the point of BBR on a randomly lossy
//! path): they reach BBR as the sample's lost bytes (its policer
//! detection) and never as fast recovery. One exception, BBR v2's: a
//! STARTUP round that loses more than 2 % (and at least 8 datagrams) ends
//! STARTUP, as the queue overflowed. Persistent congestion (RFC 9002
//! 7.6) is BBR's retransmission timeout.

use super::bbr::{AckInfo, Bbr, BbrView, CaState, Mode as BbrMode, UNIT};
use super::quic_rate::QuicRateSampler;
use crate::time::{Duration, Instant};

/// The window's margin over the model's flight, in datagrams (Linux's
/// three TSO bursts; a BDP / 8 margin kept a 300-packet queue on a
/// 2,600-datagram BDP overflowing in the core's path test).
pub const HEADROOM_PKTS: u64 = 4;
/// STARTUP ends after a round that lost more than 1/50 of its bytes...
const STARTUP_LOSS_DIV: u64 = 50;
/// ...in at least this many datagrams (BBR v2's `bbr_full_loss_cnt`), so
/// that random loss at a small window does not end it.
const STARTUP_LOSS_PKTS: u64 = 8;
/// The smallest window, in datagrams (`bbr_cwnd_min_target`).
const MIN_WINDOW_PKTS: u64 = 4;

/// One QUIC connection's BBR.
#[derive(Clone, Debug)]
pub struct QuicBbr {
    bbr: Bbr,
    rate: QuicRateSampler,
    smss: u64,
    srtt: Option<Duration>,
    /// BBR's round count when the current round's counts began.
    round: u64,
    round_acked: u64,
    round_lost: u64,
}

impl QuicBbr {
    /// For datagrams of `mtu` bytes, an initial window of `initial_window`
    /// bytes; `seed` picks PROBE_BW's random first phases.
    pub fn new(mtu: u16, initial_window: u64, seed: u64) -> Self {
        let smss = (mtu as u64).max(1);
        QuicBbr {
            bbr: Bbr::new(
                smss as u32,
                initial_window.max(MIN_WINDOW_PKTS * smss),
                seed,
            ),
            rate: QuicRateSampler::new(),
            smss,
            srtt: None,
            round: 0,
            round_acked: 0,
            round_lost: 0,
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
        self.round_acked += rs.acked_sacked;
        self.round_lost += rs.losses;
        let v = self.bbr.view();
        if v.rounds != self.round {
            // STARTUP's doubling overflowed the queue: the pipe is full
            // (BBR v1 would keep doubling until the bandwidth stalls for
            // three rounds, losing a BDP or more on a shallow queue).
            let lossy = self.round_lost * STARTUP_LOSS_DIV > self.round_acked + self.round_lost
                && self.round_lost >= STARTUP_LOSS_PKTS * self.smss;
            if v.mode == BbrMode::Startup && lossy {
                self.bbr.set_full_bw_reached();
            }
            self.round = v.rounds;
            self.round_acked = 0;
            self.round_lost = 0;
        }
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
        self.smss = (mtu as u64).max(1);
    }

    /// Bytes the sender may have in flight: the model's flight at the
    /// current pacing gain plus headroom, within BBR's cwnd.
    pub fn window(&self) -> u64 {
        let v = self.bbr.view();
        let floor = MIN_WINDOW_PKTS * self.smss;
        let (Some(min_rtt), true) = (v.min_rtt, v.bw > 0) else {
            return self.bbr.cwnd().max(floor);
        };
        let bdp = (v.bw as u128 * min_rtt.as_nanos() as u128 / 1_000_000_000) as u64;
        let flight = (bdp as u128 * v.pacing_gain as u128 / UNIT as u128) as u64;
        (flight + HEADROOM_PKTS * self.smss)
            .min(self.bbr.cwnd())
            .max(floor)
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
