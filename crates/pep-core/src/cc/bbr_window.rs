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
//!   overflowed.
//! * **A loss-bounded probe** (BBR v2's `inflight_hi`): a PROBE_BW round
//!   (after one) that loses as much caps the window from then on at 85 % of the largest flight of
//!   that round and the one before (the losses' send round), never below
//!   the BDP plus headroom, and PROBE_BW's probing phase ends when the
//!   flight reaches it ([`Bbr::set_probe_cap`]). Each loss-free round in
//!   a row the cap holds the flight back it grows by 1, 2, 4, ...
//!   datagrams (BBR v2's `probe_up_cnt`, starting over at each probe), so
//!   the queue is found again slowly and a path that grew at once (the
//!   cap follows the BDP). Random loss
//!   (under 2 %) never sets it, so a lossy path keeps its model; a queue
//!   shallower than PROBE_BW's quarter BDP overflows once, not every
//!   eighth round.
//!
//! * **PROBE_RTT at half the BDP** (BBR v2's), not v1's four packets,
//!   which empty a long link for 200 ms and a round trip every 10 s.
//!
//! Losses do not shrink the model otherwise (the point of BBR on a
//! randomly lossy path): they reach BBR as the sample's lost bytes (its
//! policer detection) and never as fast recovery.

use super::bbr::{Bbr, Mode, UNIT};
use crate::time::Duration;

/// The window's margin over the model's flight, in datagrams (Linux's
/// three TSO bursts; a BDP / 8 margin kept a 300-packet queue on a
/// 2,600-datagram BDP overflowing in the core's path test).
pub const HEADROOM_PKTS: u64 = 4;
/// A round is lossy when it lost more than 1/50 of its bytes...
const LOSS_DIV: u64 = 50;
/// ...in at least this many datagrams (BBR v2's `bbr_full_loss_cnt`), so
/// that random loss at a small window is not congestion.
const LOSS_PKTS: u64 = 8;
/// The smallest window, in datagrams (`bbr_cwnd_min_target`).
const MIN_WINDOW_PKTS: u64 = 4;
/// `inflight_hi` is this many hundredths of the lossy flight (BBR v2's
/// `bbr_inflight_headroom`, 15 %).
const HI_PERCENT: u64 = 85;
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
    /// The largest flight reported this round and the round before.
    round_max_flight: u64,
    prev_max_flight: u64,
    /// The round before this one ended in PROBE_BW.
    prev_probe_bw: bool,
    /// The loss-bounded cap on the window, once a round was lossy.
    inflight_hi: Option<u64>,
    /// The cap held the flight back this round.
    hi_limited: bool,
    /// Datagrams the cap grows by after its next limited, loss-free round.
    probe_up: u64,
}

impl BbrWindow {
    /// For datagrams (segments) of `smss` bytes, beside a new `bbr`,
    /// whose PROBE_RTT it sets to hold half the BDP (BBR v2's).
    pub fn new(smss: u64, bbr: &mut Bbr) -> Self {
        bbr.set_probe_rtt_half_bdp();
        BbrWindow {
            smss: smss.max(1),
            round: 0,
            round_acked: 0,
            round_lost: 0,
            round_max_flight: 0,
            prev_max_flight: 0,
            prev_probe_bw: false,
            inflight_hi: None,
            hi_limited: false,
            probe_up: 1,
        }
    }

    /// The path's datagram size changed to `smss`.
    pub fn set_smss(&mut self, smss: u64) {
        self.smss = smss.max(1);
    }

    /// After `bbr` took an ACK batch that acknowledged `acked` bytes and
    /// found `lost` bytes lost, leaving `inflight` bytes in flight.
    pub fn on_acks(&mut self, bbr: &mut Bbr, acked: u64, lost: u64, inflight: u64) {
        self.round_acked += acked;
        self.round_lost += lost;
        self.round_max_flight = self.round_max_flight.max(inflight);
        if let Some(hi) = self.cap(bbr) {
            let uncapped = self.model_window(bbr);
            self.hi_limited |= uncapped > hi && inflight + HEADROOM_PKTS * self.smss >= hi;
        }
        let v = bbr.view();
        if v.rounds == self.round {
            return;
        }
        let lossy = self.round_lost * LOSS_DIV > self.round_acked + self.round_lost
            && self.round_lost >= LOSS_PKTS * self.smss;
        if lossy {
            // STARTUP's doubling overflowed the queue: the pipe is full
            // (BBR v1 would keep doubling until the bandwidth stalls for
            // three rounds, losing a BDP or more on a shallow queue).
            if v.mode == Mode::Startup {
                bbr.set_full_bw_reached();
            }
            // A probe's loss: sent and found in PROBE_BW with more than
            // the BDP in flight (STARTUP's overshoot, a burst after
            // PROBE_RTT or a policer's loss say nothing of the queue).
            let flight = self.round_max_flight.max(self.prev_max_flight);
            let bdp = self.bdp_window(bbr, UNIT);
            if v.mode == Mode::ProbeBw && self.prev_probe_bw && flight > bdp && !v.lt_use_bw {
                let hi = (flight as u128 * HI_PERCENT as u128 / 100) as u64;
                self.inflight_hi = Some(hi.max(bdp));
                self.probe_up = 1;
            }
        } else if let (Some(hi), true) = (self.inflight_hi, self.hi_limited) {
            self.inflight_hi = Some(hi + self.probe_up * self.smss);
            self.probe_up = self.probe_up.saturating_mul(2);
        } else {
            // Each probe starts its growth over (BBR v2's UP phase).
            self.probe_up = 1;
        }
        // A probe the cap holds back is full at the cap (less the
        // headroom the flight never fills).
        let head = HEADROOM_PKTS * self.smss;
        let cap = self.cap(bbr).map(|c| c.saturating_sub(head));
        bbr.set_probe_cap(cap);
        self.prev_probe_bw = v.mode == Mode::ProbeBw;
        self.round = v.rounds;
        self.round_acked = 0;
        self.round_lost = 0;
        self.prev_max_flight = self.round_max_flight;
        self.round_max_flight = 0;
        self.hi_limited = false;
    }

    /// Bytes the sender may have in flight: the model's flight at the
    /// current pacing gain plus headroom, within BBR's cwnd and the
    /// loss-bounded cap.
    pub fn window(&self, bbr: &Bbr) -> u64 {
        let w = self.model_window(bbr);
        self.cap(bbr)
            .map_or(w, |c| w.min(c))
            .max(MIN_WINDOW_PKTS * self.smss)
    }

    /// The loss-bounded cap, never below the current BDP plus headroom
    /// (it follows a path that grew).
    fn cap(&self, bbr: &Bbr) -> Option<u64> {
        self.inflight_hi
            .map(|hi| hi.max(self.bdp_window(bbr, UNIT)))
    }

    /// The cap a lossy round set, if any.
    pub fn inflight_hi(&self) -> Option<u64> {
        self.inflight_hi
    }

    /// The window before the loss-bounded cap.
    fn model_window(&self, bbr: &Bbr) -> u64 {
        let floor = MIN_WINDOW_PKTS * self.smss;
        let v = bbr.view();
        if v.min_rtt.is_none() || v.bw == 0 {
            return bbr.cwnd().max(floor);
        }
        self.bdp_window(bbr, v.pacing_gain)
            .min(bbr.cwnd())
            .max(floor)
    }

    /// `gain` (in [`UNIT`]s) x BtlBw x minRTT plus headroom.
    fn bdp_window(&self, bbr: &Bbr, gain: u32) -> u64 {
        let v = bbr.view();
        let min_rtt = v.min_rtt.unwrap_or(Duration::ZERO);
        let bdp = v.bw as u128 * min_rtt.as_nanos() as u128 / 1_000_000_000;
        let flight = (bdp * gain as u128 / UNIT as u128) as u64;
        flight + HEADROOM_PKTS * self.smss
    }
}

/// quinn's pacing rate for `window` bytes over a smoothed RTT `srtt`, in
/// bytes per second; `None` before the first RTT sample (unpaced).
pub fn pacing_rate(window: u64, srtt: Option<Duration>) -> Option<u64> {
    let srtt = srtt.filter(|s| *s > Duration::ZERO)?;
    let rate = window as u128 * PACE_NUM * 1_000_000_000 / (PACE_DEN * srtt.as_nanos() as u128);
    Some(rate.min(u64::MAX as u128) as u64)
}
