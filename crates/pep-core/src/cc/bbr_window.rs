//! The window rule of the tunnel's BBR: the core's [`Bbr`] (Linux's BBR
//! v1) turned into the one output a transport that paces from its window
//! takes. quinn does (the daemon's `tunnel.cc = "bbr"`, [`super::QuicBbr`]),
//! and the simulator's split-pair tunnel applies the same rule
//! ([`super::Growth::TunnelBbr`]), pacing at [`pacing_rate`] as quinn does.
//!
//! * **The window.** BBR's own output (pace at `pacing_gain x BtlBw`, cap
//!   the flight at `cwnd_gain x BDP`) becomes the flight BBR's pacing
//!   would keep, `pacing_gain x BtlBw x minRTT`, plus [`HEADROOM_PKTS`]
//!   datagrams for ACK timing, never above BBR's cwnd. STARTUP's 2.89
//!   still doubles the flight each round, PROBE_BW's 1.25 phase probes
//!   with a quarter BDP more and its 0.75 phase drains it, and between
//!   them the flight stays at the BDP: no standing queue, where BBR's cwnd
//!   (2 BDP) with window pacing would keep one BDP queued.
//! * **STARTUP's loss exit** (BBR v2's): a round that loses more than 2 %
//!   of its bytes (and at least 8 datagrams) ends STARTUP: the queue
//!   overflowed (BBR v1 would keep doubling until the bandwidth stalls for
//!   three rounds, losing a BDP or more on a shallow queue).
//!
//! Losses do not shrink the model otherwise (the point of BBR on a
//! randomly lossy path): they reach BBR as the sample's lost bytes (its
//! policer detection) and never as fast recovery.

use super::bbr::{Bbr, Mode};
use crate::time::Duration;

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
/// quinn's pacer: 5/4 x window / smoothed RTT.
const PACE_NUM: u128 = 5;
const PACE_DEN: u128 = 4;

/// The rule's state beside one connection's [`Bbr`].
#[derive(Clone, Debug)]
pub struct BbrWindow {
    smss: u64,
    /// BBR's round count when the current round's counts began.
    round: u64,
    round_acked: u64,
    round_lost: u64,
}

impl BbrWindow {
    /// For datagrams (segments) of `smss` bytes.
    pub fn new(smss: u64) -> Self {
        BbrWindow {
            smss: smss.max(1),
            round: 0,
            round_acked: 0,
            round_lost: 0,
        }
    }

    /// The path's datagram size changed to `smss`.
    pub fn set_smss(&mut self, smss: u64) {
        self.smss = smss.max(1);
    }

    /// After `bbr` took an ACK batch that acknowledged `acked` bytes and
    /// found `lost` bytes lost.
    pub fn on_acks(&mut self, bbr: &mut Bbr, acked: u64, lost: u64) {
        self.round_acked += acked;
        self.round_lost += lost;
        let v = bbr.view();
        if v.rounds == self.round {
            return;
        }
        let lossy = self.round_lost * STARTUP_LOSS_DIV > self.round_acked + self.round_lost
            && self.round_lost >= STARTUP_LOSS_PKTS * self.smss;
        if v.mode == Mode::Startup && lossy {
            bbr.set_full_bw_reached();
        }
        self.round = v.rounds;
        self.round_acked = 0;
        self.round_lost = 0;
    }

    /// Bytes the sender may have in flight: the model's flight at the
    /// current pacing gain plus headroom, within BBR's cwnd.
    pub fn window(&self, bbr: &Bbr) -> u64 {
        let v = bbr.view();
        let floor = MIN_WINDOW_PKTS * self.smss;
        let (Some(min_rtt), true) = (v.min_rtt, v.bw > 0) else {
            return bbr.cwnd().max(floor);
        };
        let bdp = (v.bw as u128 * min_rtt.as_nanos() as u128 / 1_000_000_000) as u64;
        let flight = (bdp as u128 * v.pacing_gain as u128 / super::bbr::UNIT as u128) as u64;
        (flight + HEADROOM_PKTS * self.smss)
            .min(bbr.cwnd())
            .max(floor)
    }
}

/// quinn's pacing rate for `window` bytes over a smoothed RTT `srtt`, in
/// bytes per second; `None` before the first RTT sample (unpaced).
pub fn pacing_rate(window: u64, srtt: Option<Duration>) -> Option<u64> {
    let srtt = srtt.filter(|s| *s > Duration::ZERO)?;
    let rate = window as u128 * PACE_NUM * 1_000_000_000 / (PACE_DEN * srtt.as_nanos() as u128);
    Some(rate.min(u64::MAX as u128) as u64)
}
