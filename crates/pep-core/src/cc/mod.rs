//! TCP congestion control on two axes over one shared state.
//!
//! Following ns-3's split (`tcp-congestion-ops.h` / `tcp-recovery-ops.h`):
//!
//! * **Window growth** ([`Growth`]) decides how `cwnd` opens on ACKs that
//!   acknowledge new data outside loss recovery, and the ssthresh a loss
//!   sets: Reno (RFC 5681), CUBIC (RFC 9438, `cubic.rs`), CUBIC as
//!   ns-2.35's Linux agent runs it (`cubic_ns2.rs`), Reno and CUBIC as
//!   today's kernel runs them (`linux.rs`, `cubic_linux.rs`), Westwood+
//!   (`westwood.rs`), cubic-flows (`cubic_flows.rs`: CUBIC backing off as
//!   the N flows a tunnel carries would, the daemon's tunnel default),
//!   and BBR v1 (`bbr.rs`, Linux's `tcp_bbr.c`), which is not a growth
//!   rule but a path model fed a delivery-rate sample (`rate_sample.rs`)
//!   on every ACK; it has its own entry points (`rate_*` below) because it
//!   needs per-segment send records and sets cwnd in recovery too.
//! * **Loss recovery** ([`Recovery`]) decides what happens on duplicate
//!   ACKs, partial ACKs and the end of recovery: Tahoe, RFC 5681 fast
//!   retransmit/fast recovery (Reno), RFC 6582 (NewReno), RFC 6675 SACK
//!   (`sack.rs`, with a scoreboard allocated once per connection), and
//!   ns-2's `Sack1` on that scoreboard (`sack1.rs`).
//!
//! Both act on one [`CcState`] (cwnd, ssthresh, the recovery inflation, the
//! `recover` point, the duplicate ACK count). The transport owns sequence
//! numbers, timers and segments; it classifies each ACK and calls
//! [`Congestion::on_new_ack`], [`Congestion::on_dupack`] or
//! [`Congestion::on_timeout`], and performs the [`LossAction`] returned.
//! It reports RTT samples ([`Congestion::on_rtt_sample`]) and, for SACK,
//! every ACK's SACK blocks ([`Congestion::on_sack`]) and retransmissions
//! ([`Congestion::on_retransmit`]); during SACK recovery it sends what
//! [`Congestion::next_seg`] chooses instead of applying its window rule.
//!
//! A transport that detects loss itself (QUIC) drives the growth axis
//! through [`QuicCongestion`] instead (`quic.rs`, RFC 9002's recovery
//! period): the daemon's tunnel runs cubic-flows that way, and so does the
//! simulator's split-pair tunnel, whose window it owns
//! ([`Congestion::own_window`]) while SACK recovery here picks what to
//! resend.
//! Its BBR is [`QuicBbr`] (`quic_bbr.rs`): the same [`Bbr`] fed by the
//! same [`RateSampler`], its records keyed by send time (`quic_rate.rs`,
//! as quinn reports ACKs),
//! its model given as the window quinn paces from.
//!
//! Dispatch is a `match` over closed enums: no vtable on the per-ACK path,
//! no allocation.
//!
//! ## To add a congestion control
//! Add a variant to [`Growth`] (configuration, `growth.rs`) and its state to
//! the private `GrowthState`, in a new file beside this one, and fill in the
//! `match` arms the compiler then asks for. A recovery algorithm is added
//! the same way in `recovery.rs` (`Recovery` and `RecoveryState`).
//!
//! ## Units and conventions
//! Windows are in bytes (`u64`: windows above 64 KB are routine, and
//! "infinite" ssthresh is `u64::MAX`). `recover` is stored as an exclusive
//! end (one past the highest byte sent, i.e. SND.MAX), so RFC 6582's
//! "covers more than recover" is `ack > recover` and a full acknowledgment
//! is `ack >= recover`; see [`CcState::recover`]. Time is passed in
//! (`now`); nothing here reads a clock.

mod bbr;
mod bbr_window;
mod cubic;
mod cubic_flows;
mod cubic_linux;
mod cubic_ns2;
mod growth;
mod hystart;
mod linux;
mod prr;
mod quic;
mod quic_bbr;
mod quic_rate;
mod rack;
mod rate_sample;
mod recovery;
mod sack;
mod sack1;
mod westwood;

#[cfg(test)]
mod bbr_tests;
#[cfg(test)]
mod bbr_window_tests;
#[cfg(test)]
mod cubic_flows_tests;
#[cfg(test)]
mod growth_tests;
#[cfg(test)]
mod linux_tests;
#[cfg(test)]
mod quic_bbr_tests;
#[cfg(test)]
mod sack_tests;
#[cfg(test)]
mod tests;

pub use bbr::{AckInfo, Bbr, BbrView, CaState, MaxFilter, Mode as BbrMode};
pub use bbr_window::{BbrWindow, HEADROOM_PKTS as QUIC_BBR_HEADROOM_PKTS};
pub use cubic::{CubicConfig, CubicView};
pub use cubic_flows::{CubicFlowsView, MAX_FLOWS as CUBIC_FLOWS_MAX_FLOWS};
pub use cubic_linux::CubicLinuxView;
pub use cubic_ns2::{cubic_root as cubic_ns2_root, CubicNs2View};
pub use growth::{Growth, GrowthView, WindowUnit};
pub use linux::LinuxView;
pub use quic::QuicCongestion;
pub use quic_bbr::QuicBbr;
pub use quic_rate::{BySendTime, QuicRateSampler};
pub use rack::{is_dsack, Detection, Rack, REO_WND_PERSIST};
pub use rate_sample::{BySeq, RateSample, RateSampler};
pub use recovery::Recovery;
pub use sack::{NextSeg, Scoreboard, SCOREBOARD_RANGES};
pub use westwood::WestwoodView;

/// CUBIC's constants and curve, for checks against the RFC.
pub mod cubic_curve {
    pub use super::cubic::{k, w_cubic, ALPHA, BETA, C};
}

/// BBR's constants (Linux `tcp_bbr.c`), for checks against the kernel.
pub mod bbr_consts {
    pub use super::bbr::{
        BW_RTTS, CWND_GAIN, CWND_MIN_TARGET, CYCLE_LEN, DRAIN_GAIN, FULL_BW_CNT, HIGH_GAIN,
        MIN_RTT_WIN, PACING_GAIN, PROBE_RTT_TIME, UNIT,
    };
}

/// Westwood+'s filter stage and sampling floor.
pub mod westwood_filter {
    pub use super::westwood::{low_pass, MIN_INTERVAL};
}

use growth::GrowthState;
use recovery::RecoveryState;

use crate::seq::Seq;
use crate::time::{Duration, Instant};

/// Configuration of one connection's congestion control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcConfig {
    /// Sender maximum segment size in payload bytes (RFC 5681's SMSS).
    pub smss: u32,
    /// Initial congestion window in bytes (RFC 5681 IW; RFC 6928 allows
    /// `min(10*SMSS, max(2*SMSS, 14600))`).
    pub initial_window: u64,
    /// Initial slow start threshold in bytes. RFC 5681: "The initial value
    /// of ssthresh SHOULD be set arbitrarily high"; `u64::MAX` by default.
    pub initial_ssthresh: u64,
    /// Duplicate ACKs that trigger fast retransmit (RFC 5681: 3).
    pub dupack_threshold: u32,
    /// Window growth algorithm.
    pub growth: Growth,
    /// Loss recovery algorithm.
    pub recovery: Recovery,
    /// Proportional Rate Reduction (RFC 6937) during SACK recovery, as
    /// Linux; otherwise cwnd drops to ssthresh at once (RFC 6675).
    pub prr: bool,
    /// HyStart++ (RFC 9406) in the initial slow start; needs
    /// [`Congestion::on_ack_rtt`] on every ACK of new data.
    pub hystart: bool,
    /// During SACK recovery, judge a retransmission lost once data first
    /// sent after it is SACKed, and send it again (FACK's rule, as ns-2's
    /// `Agent/TCP/Linux` and Linux before RACK do; RFC 6675 leaves a lost
    /// retransmission to the retransmission timer).
    pub lost_retransmit: bool,
}

impl CcConfig {
    /// RFC defaults for a given SMSS: IW 10 segments (RFC 6928), infinite
    /// ssthresh, three duplicate ACKs, Reno growth, NewReno recovery.
    pub fn new(smss: u32) -> Self {
        CcConfig {
            smss,
            initial_window: 10 * smss as u64,
            initial_ssthresh: u64::MAX,
            dupack_threshold: 3,
            growth: Growth::default(),
            recovery: Recovery::default(),
            prr: false,
            hystart: false,
            lost_retransmit: false,
        }
    }
}

/// The state both axes act on (ns-3's `TcpSocketState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcState {
    /// Sender maximum segment size in bytes.
    pub smss: u32,
    /// Congestion window in bytes, *without* fast recovery's inflation.
    /// During Reno/NewReno recovery this is ssthresh (or less after a large
    /// partial ACK); traces plot this value, like ns-2's `cwnd_`.
    pub cwnd: u64,
    /// Slow start threshold in bytes; `u64::MAX` until the first loss.
    pub ssthresh: u64,
    /// Fast recovery's artificial inflation in bytes (RFC 5681 steps 3-4:
    /// `3*SMSS` on entry plus `SMSS` per further duplicate ACK; RFC 6582
    /// partial deflation takes it back). Zero outside recovery. The sender
    /// may have `cwnd + inflation` bytes outstanding (ns-2's `dupwnd_`).
    pub inflation: u64,
    /// True between a fast retransmit and the ACK that ends recovery
    /// (Reno: the first new ACK; NewReno: a full ACK). Never set by Tahoe.
    pub in_recovery: bool,
    /// RFC 6582's `recover`, stored as an exclusive end: the SND.MAX
    /// (highest sequence number sent, plus one) recorded at the last fast
    /// retransmit or timeout. Initialised to the ISN (RFC 6582 step 1).
    /// Fast retransmit is allowed only when the duplicate ACK's number is
    /// `> recover` ("covers more than recover": RFC 6582 section 3.2 notes
    /// this means `ack_number - 1 > recover` with the inclusive definition).
    pub recover: Seq,
    /// Duplicate ACKs received since the last ACK of new data.
    pub dupacks: u32,
    /// Duplicate ACK threshold (copied from the configuration).
    pub dupack_threshold: u32,
    /// A partial ACK has arrived in the current recovery (RFC 6582 resets
    /// the retransmit timer on the first one only: the "Impatient" variant).
    pub partial_acked: bool,
    /// The segment at SND.UNA has been retransmitted by the timer since
    /// SND.UNA last advanced; a further timeout then holds ssthresh
    /// (RFC 5681 section 3.1).
    pub timed_out: bool,
    /// The transport's smoothed RTT (RFC 6298 SRTT), once measured.
    pub srtt: Option<Duration>,
}

impl CcState {
    /// A connection's state before its first ACK: `cwnd` and `ssthresh`
    /// as configured, nothing in recovery, `recover` at the ISN.
    pub fn initial(smss: u32, cwnd: u64, ssthresh: u64, isn: Seq, dupack_threshold: u32) -> Self {
        CcState {
            smss,
            cwnd,
            ssthresh,
            inflation: 0,
            in_recovery: false,
            recover: isn,
            dupacks: 0,
            dupack_threshold,
            partial_acked: false,
            timed_out: false,
            srtt: None,
        }
    }

    /// The window the sender may have outstanding: `cwnd + inflation`.
    #[inline]
    pub fn window(&self) -> u64 {
        self.cwnd.saturating_add(self.inflation)
    }
}

/// One ACK as [`Congestion::rate_on_ack`] reads it.
#[derive(Clone, Copy, Debug)]
pub struct RateAck<'a> {
    pub now: Instant,
    /// SND.UNA after the ACK.
    pub una: Seq,
    /// The ACK's SACK blocks.
    pub blocks: &'a [(Seq, Seq)],
    /// Bytes in flight before the ACK.
    pub prior_in_flight: u64,
    /// Bytes in flight after it.
    pub inflight: u64,
    /// When the pacer releases the next segment (`now` if at once).
    pub next_send: Instant,
}

/// What the transport must retransmit in response to an ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossAction {
    /// Loss recovery starts: retransmit the segment at SND.UNA now and
    /// restart the retransmission timer. With `go_back_n` (Tahoe) the
    /// transport then resends everything after it in slow start, from
    /// SND.UNA, as after a timeout.
    FastRetransmit { go_back_n: bool },
    /// A NewReno partial ACK: retransmit the first unacknowledged segment.
    /// `restart_timer` is true for the first partial ACK of this recovery
    /// only (RFC 6582 step 3, "Impatient" variant); otherwise the transport
    /// leaves the retransmission timer running.
    PartialAckRetransmit { restart_timer: bool },
}

/// One connection's congestion controller: shared state plus the two
/// algorithms.
#[derive(Clone, Debug)]
pub struct Congestion {
    /// The shared state, readable by the transport and by traces.
    state: CcState,
    /// Window growth algorithm and its private state.
    growth: GrowthState,
    /// Loss recovery algorithm and its private state.
    recovery: RecoveryState,
    /// PRR's state, if on (with SACK recovery only).
    prr: Option<prr::Prr>,
    /// HyStart++'s state, if on.
    hystart: Option<hystart::HyStart>,
    /// ns-2 `Sack1`'s pipe counter, with [`Recovery::Sack1`] (which
    /// otherwise runs on the SACK scoreboard).
    sack1: Option<sack1::Sack1>,
    /// Growth suspended: the transport is not using its window (RFC 7661's
    /// non-validated phase).
    growth_held: bool,
}

impl Congestion {
    /// A controller for a connection whose initial send sequence number is
    /// `isn` (RFC 6582 step 1: "recover is set to the initial send sequence
    /// number").
    ///
    /// # Panics
    /// If `cfg.smss` or `cfg.dupack_threshold` is zero.
    pub fn new(cfg: &CcConfig, isn: Seq) -> Self {
        assert!(cfg.smss > 0, "SMSS must be positive");
        assert!(
            cfg.dupack_threshold > 0,
            "dupACK threshold must be positive"
        );
        let cwnd = cfg.initial_window.max(cfg.smss as u64);
        // BBR owns cwnd on every ACK, in recovery too: Linux skips PRR and
        // slow start (HyStart) for a `cong_control` module.
        let bbr = matches!(cfg.growth, Growth::Bbr | Growth::TunnelBbr);
        Congestion {
            state: CcState::initial(
                cfg.smss,
                cwnd,
                cfg.initial_ssthresh,
                isn,
                cfg.dupack_threshold,
            ),
            growth: GrowthState::new(cfg.growth, cfg.smss, cwnd),
            recovery: RecoveryState::new(cfg.recovery, cfg.lost_retransmit),
            prr: (cfg.prr && cfg.recovery == Recovery::Sack && !bbr).then(prr::Prr::default),
            hystart: (cfg.hystart && !bbr).then(|| hystart::HyStart::new(cfg.initial_ssthresh)),
            sack1: (cfg.recovery == Recovery::Sack1).then(sack1::Sack1::default),
            growth_held: false,
        }
    }

    /// Flows open on the connection (a tunnel carrying several): the N of
    /// [`Growth::CubicFlows`]; other growths ignore it.
    pub fn set_flows(&mut self, flows: u32) {
        self.growth.set_flows(flows);
    }

    /// Suspends (or resumes) window growth on ACKs outside recovery: RFC
    /// 7661's non-validated phase, where the sender does not use the
    /// window it has, so ACKs say nothing about a larger one.
    pub fn hold_growth(&mut self, held: bool) {
        self.growth_held = held;
    }

    /// The last timeout proved spurious (the transport's timestamps said
    /// the original arrived): Linux's `tcp_undo_cwnd_reduction` after a
    /// loss, cwnd and ssthresh back to at least what they were
    /// (`undo_cwnd` is `max(cwnd, prior_cwnd)` for Reno and CUBIC), and
    /// the timeout's state left (`TCP_CA_Open`).
    /// `prior_recover`: `recover` before the timeout, whose SND.MAX would
    /// otherwise bar fast retransmit (RFC 6582) for losses the undone
    /// timeout never repaired.
    pub fn undo_timeout(&mut self, prior_cwnd: u64, prior_ssthresh: u64, prior_recover: Seq) {
        let s = &mut self.state;
        s.cwnd = s.cwnd.max(prior_cwnd);
        s.ssthresh = s.ssthresh.max(prior_ssthresh);
        s.recover = prior_recover;
        s.timed_out = false;
    }

    /// The retransmission timer has fired since SND.UNA last advanced.
    pub fn timed_out(&self) -> bool {
        self.state.timed_out
    }

    /// RFC 6582's `recover` (an exclusive end: see [`CcState::recover`]).
    pub fn recover(&self) -> Seq {
        self.state.recover
    }

    /// A machine outside this one owns the window (split-pair's tunnel:
    /// [`QuicCongestion`], as the daemon's QUIC tunnel): cwnd and ssthresh
    /// become its, whatever recovery or growth wrote; this machine still
    /// decides what to retransmit.
    pub fn own_window(&mut self, cwnd: u64, ssthresh: u64) {
        self.state.cwnd = cwnd;
        self.state.ssthresh = ssthresh;
    }

    pub fn state(&self) -> &CcState {
        &self.state
    }
    /// Congestion window in bytes, excluding fast recovery inflation.
    #[inline]
    pub fn cwnd(&self) -> u64 {
        self.state.cwnd
    }
    pub fn ssthresh(&self) -> u64 {
        self.state.ssthresh
    }
    /// Bytes the sender may have outstanding: cwnd plus inflation. (During
    /// SACK recovery the transport uses [`Congestion::next_seg`] instead.)
    pub fn window(&self) -> u64 {
        self.state.window()
    }
    #[inline]
    pub fn in_recovery(&self) -> bool {
        self.state.in_recovery
    }
    pub fn recovery(&self) -> Recovery {
        match self.sack1 {
            Some(_) => Recovery::Sack1,
            None => self.recovery.config(),
        }
    }
    pub fn growth(&self) -> Growth {
        self.growth.config()
    }
    /// The growth algorithm's private view (W_max, K, BWE, ...).
    pub fn growth_view(&self) -> GrowthView {
        self.growth.view()
    }
    /// The tunnel BBR window rule's loss-bounded cap
    /// ([`BbrWindow::inflight_hi`]), with [`Growth::TunnelBbr`] once set.
    pub fn model_inflight_hi(&self) -> Option<u64> {
        match &self.growth {
            GrowthState::Bbr(b) => b.window.as_ref().and_then(|w| w.inflight_hi()),
            _ => None,
        }
    }
    /// The SACK scoreboard, with [`Recovery::Sack`].
    #[inline]
    pub fn scoreboard(&self) -> Option<&Scoreboard> {
        match &self.recovery {
            RecoveryState::Sack(b) => Some(b),
            _ => None,
        }
    }

    /// An RTT `sample` was taken; `srtt` is the transport's smoothed RTT
    /// after it.
    pub fn on_rtt_sample(&mut self, sample: Duration, srtt: Duration) {
        self.state.srtt = Some(srtt);
        self.growth.on_rtt_sample(sample);
        if let GrowthState::Bbr(b) = &mut self.growth {
            b.rate.on_rtt(sample); // `tcp_min_rtt` counts every sample
        }
    }

    /// An ACK of `acked` new bytes arrived at `now`, moving SND.UNA to `ack`.
    /// Returns a retransmission the transport must make, if any.
    pub fn on_new_ack(&mut self, now: Instant, ack: Seq, acked: u32) -> Option<LossAction> {
        self.growth.on_delivered(now, &self.state, acked);
        let s = &mut self.state;
        s.dupacks = 0;
        s.timed_out = false;
        if s.in_recovery {
            let action = recovery::on_recovery_ack(&self.recovery, s, ack, acked);
            if let (Some(p), true) = (&mut self.sack1, s.in_recovery) {
                // A partial ACK: `--pipe_` again (`partial_ack_` off).
                p.on_ack();
            }
            self.prr_ack(ack, acked as u64);
            self.model_owns_cwnd();
            return action;
        }
        if self.growth_held {
            return None;
        }
        let before = s.cwnd;
        self.growth.on_ack(now, s, acked);
        if let Some(h) = &mut self.hystart {
            h.after_slow_start(s, before);
        }
        None
    }

    /// An ACK of new data up to `ack` carried an RTT sample (a timestamp
    /// echo); SND.NXT is `snd_nxt`. Call before [`Congestion::on_new_ack`]
    /// for the same ACK. HyStart++ and the kernel's CUBIC (its HyStart)
    /// use it.
    pub fn on_ack_rtt(&mut self, rtt: Duration, ack: Seq, snd_nxt: Seq) {
        if let Some(h) = &mut self.hystart {
            h.on_rtt(&mut self.state, rtt, ack, snd_nxt);
        }
        self.growth.on_ack_rtt(rtt, ack, snd_nxt);
    }

    /// A duplicate ACK (see [`Congestion::is_duplicate`]) arrived while
    /// SND.UNA is `snd_una` and SND.MAX `snd_max`.
    pub fn on_dupack(&mut self, now: Instant, snd_una: Seq, snd_max: Seq) -> Option<LossAction> {
        self.growth.on_dupack(now, &self.state);
        let starts = match self.sack1 {
            Some(_) => sack1::dupack_starts_recovery(&mut self.state, snd_una),
            None => recovery::dupack_starts_recovery(&self.recovery, &mut self.state, snd_una),
        };
        if !starts {
            if self.state.in_recovery {
                self.prr_ack(snd_una, 0);
            }
            self.model_owns_cwnd();
            return None;
        }
        Some(self.enter_recovery(snd_una, snd_max))
    }

    /// Starts loss recovery with SND.UNA = `snd_una`, SND.MAX = `snd_max`.
    fn enter_recovery(&mut self, snd_una: Seq, snd_max: Seq) -> LossAction {
        // RFC 5681 step 2: "When the third duplicate ACK is received, a TCP
        // MUST set ssthresh to no more than the value given in equation (4)",
        // with FlightSize the data sent but not yet cumulatively
        // acknowledged; CUBIC and Westwood+ choose their own value.
        let flight = snd_max.bytes_since(snd_una) as u64;
        let ssthresh = self.growth.loss_ssthresh(&self.state, flight);
        let action = recovery::enter(
            &mut self.recovery,
            &mut self.state,
            ssthresh,
            snd_una,
            snd_max,
        );
        self.growth.on_congestion();
        if let Some(p) = &mut self.sack1 {
            let s = &self.state;
            p.enter(snd_una, snd_max, s.dupack_threshold, s.smss);
        }
        if let Some(p) = &mut self.prr {
            p.start(flight);
            self.prr_ack(snd_una, 0);
        }
        self.model_owns_cwnd();
        action
    }

    /// RACK (RFC 8985) marked unSACKed data below `lost_end` lost (SND.UNA
    /// `snd_una`, SND.MAX `snd_max`). With SACK recovery this marks the
    /// scoreboard and, outside recovery, starts one (RFC 8985 6.2 step 6:
    /// "If any segment is newly marked lost, invoke [...] fast recovery"),
    /// under RFC 6675 5.1's rule; otherwise a no-op.
    pub fn on_rack_loss(
        &mut self,
        snd_una: Seq,
        snd_max: Seq,
        lost_end: Seq,
    ) -> Option<LossAction> {
        let RecoveryState::Sack(b) = &mut self.recovery else {
            return None;
        };
        if lost_end.le(snd_una) {
            return None;
        }
        b.rack_lost = Some(match b.rack_lost {
            Some(r) if r.gt(lost_end) => r,
            _ => lost_end,
        });
        if self.state.in_recovery || snd_una.lt(self.state.recover) {
            return None;
        }
        Some(self.enter_recovery(snd_una, snd_max))
    }

    /// RACK found this recovery's retransmission of `[seq, end)` lost (RFC
    /// 8985 6.2 step 5 applies to retransmissions as well). During SACK
    /// recovery that segment alone is queued to be sent again before
    /// anything else, and SetPipe() stops counting it as in the network, as
    /// Linux's `tcp_mark_skb_lost` clears its `TCPCB_SACKED_RETRANS`. The
    /// retransmissions sent after it stay in flight: moving HighRxt back
    /// would resend them all at once. Outside SACK recovery, or for a
    /// segment above HighRxt (not retransmitted in this recovery, so RACK's
    /// lost mark already has NextSeg() resend it), a no-op.
    pub fn on_rack_lost_retransmission(&mut self, seq: Seq, end: Seq) {
        let RecoveryState::Sack(b) = &mut self.recovery else {
            return;
        };
        if self.state.in_recovery && end.le(b.high_rxt) {
            b.relose(seq, end);
        }
    }

    /// A tail loss probe repaired a loss (RFC 8985 7.4.2: "invoke the
    /// congestion control response equivalent to fast recovery"): ssthresh
    /// from the growth axis with cwnd as FlightSize (as Linux's
    /// `tcp_process_tlp_ack` reduces from cwnd), and cwnd = ssthresh.
    pub fn on_tail_loss_repaired(&mut self) {
        let cwnd = self.state.cwnd;
        let ssthresh = self.growth.loss_ssthresh(&self.state, cwnd);
        self.state.ssthresh = ssthresh;
        self.state.cwnd = ssthresh;
        self.growth.on_congestion();
        self.model_owns_cwnd();
    }

    /// PRR (RFC 6937) on an ACK during SACK recovery that left SND.UNA at
    /// `una` after acknowledging `acked` new bytes: cwnd = pipe + sndcnt.
    fn prr_ack(&mut self, una: Seq, acked: u64) {
        let (Some(p), RecoveryState::Sack(b)) = (&mut self.prr, &self.recovery) else {
            return;
        };
        let s = &mut self.state;
        if !s.in_recovery {
            return;
        }
        let delivered = p.delivered_data(acked);
        let pipe = b.pipe(una, p.max, s.dupack_threshold, s.smss);
        s.cwnd = p.on_ack(delivered, pipe, s.ssthresh, s.smss as u64);
    }

    /// The transport sent `len` bytes (any segment): PRR's `prr_out`.
    #[inline]
    pub fn on_transmit(&mut self, len: u32) {
        if let (Some(p), true) = (&mut self.sack1, self.state.in_recovery) {
            p.on_sent();
        }
        if let Some(p) = &mut self.prr {
            if self.state.in_recovery {
                p.out += len as u64;
            }
        }
    }

    /// The retransmission timer expired with `[snd_una, snd_max)`
    /// outstanding. The transport retransmits from SND.UNA (go-back-N).
    pub fn on_timeout(&mut self, now: Instant, snd_una: Seq, snd_max: Seq) {
        // RFC 5681 section 3.1: "When a TCP sender detects segment loss using
        // the retransmission timer and the given segment has not yet been
        // resent by way of the retransmission timer, the value of ssthresh
        // MUST be set to no more than the value given in equation (4) [...]
        // If the segment has already been retransmitted by way of the
        // retransmission timer at least once, the value of ssthresh is held
        // constant."
        if !self.state.timed_out {
            // Linux's `tcp_enter_loss`: "Reduce ssthresh if it has not yet
            // been made inside this window": a timeout during recovery keeps
            // the recovery's ssthresh (a second cut from the reduced cwnd
            // would halve twice for one loss event).
            let cut_in_this_window = self.state.in_recovery && snd_una.lt(self.state.recover);
            match &mut self.growth {
                GrowthState::Linux(l) if cut_in_this_window => l.enter_loss(),
                g => {
                    let flight = snd_max.bytes_since(snd_una) as u64;
                    self.state.ssthresh = g.timeout_ssthresh(now, &self.state, flight);
                }
            }
        }
        let s = &mut self.state;
        s.timed_out = true;
        // "Furthermore, upon a timeout [...] cwnd MUST be set to no more
        // than the loss window, LW, which equals 1 full-sized segment".
        s.cwnd = s.smss as u64;
        s.inflation = 0;
        s.dupacks = 0;
        // RFC 6582 step 4: "After a retransmit timeout, record the highest
        // sequence number transmitted in the variable recover, and exit the
        // fast recovery procedure if applicable." RFC 6675 5.1 likewise sets
        // RecoveryPoint to HighData. The scoreboard is kept: the simulated
        // receiver never reneges, and Linux keeps SACK marks across an RTO
        // unless it detects reneging (RFC 2018 says SHOULD clear).
        s.recover = snd_max;
        s.in_recovery = false;
        s.partial_acked = false;
        if let RecoveryState::Sack(b) = &mut self.recovery {
            b.forget_retransmissions();
            if self.sack1.is_some() {
                // ns-2 `Sack1`'s `ClearScoreBoard`: the go-back-N resend
                // covers SACKed data too.
                b.clear();
            }
        }
        self.growth.on_congestion();
        if let GrowthState::Bbr(b) = &mut self.growth {
            // `tcp_enter_loss`, then `bbr_set_state(TCP_CA_Loss)`.
            let r = &b.rate;
            b.bbr.on_rto(r.delivered(), r.delivered_time(), r.lost());
            b.in_loss = true;
            self.state.cwnd = b.cwnd();
        }
    }

    // ---- model-based control (BBR) -----------------------------------------
    //
    // BBR reads a delivery-rate sample on every ACK and writes cwnd and a
    // pacing rate, in recovery too; the loss-based hooks above only save
    // its cwnd. These methods are no-ops for the other growths, so the
    // transport may call them unconditionally ([`Congestion::is_model_based`]
    // lets it skip their bookkeeping).

    /// True with [`Growth::Bbr`] and [`Growth::TunnelBbr`]: the transport
    /// must feed the `rate_*` methods and pace at
    /// [`Congestion::pacing_rate`].
    #[inline]
    pub fn is_model_based(&self) -> bool {
        matches!(self.growth, GrowthState::Bbr(_))
    }

    /// Seeds the model's random choices (BBR's first PROBE_BW phase); one
    /// seed per connection keeps runs reproducible.
    pub fn seed_model(&mut self, seed: u64) {
        if let GrowthState::Bbr(b) = &mut self.growth {
            b.bbr.reseed(seed);
        }
    }

    /// The pacing rate in bytes per second the model asks for.
    pub fn pacing_rate(&self) -> Option<u64> {
        match &self.growth {
            // The tunnel's rule paces as quinn does; before an RTT sample
            // at BBR's own rate (quinn's first flight is a burst).
            GrowthState::Bbr(b) => Some(match &b.window {
                Some(_) => bbr_window::pacing_rate(b.cwnd(), self.state.srtt)
                    .unwrap_or(b.bbr.pacing_rate()),
                None => b.bbr.pacing_rate(),
            }),
            _ => None,
        }
    }

    /// The delivery-rate sampler, with a model-based growth.
    pub fn rate_sampler(&self) -> Option<&RateSampler> {
        match &self.growth {
            GrowthState::Bbr(b) => Some(&b.rate),
            _ => None,
        }
    }

    /// The transport sent `[seq, end)` at `now` (`retrans`: a resend;
    /// `lost`: because the original was found lost). Call before pacing
    /// the segment: a restart from idle resets the pacing rate.
    pub fn rate_on_sent(&mut self, now: Instant, seq: Seq, end: Seq, retrans: bool, lost: bool) {
        let srtt = self.state.srtt;
        if let GrowthState::Bbr(b) = &mut self.growth {
            if lost {
                b.rate.on_lost(end.bytes_since(seq) as u64);
            }
            if b.rate.on_sent(now, seq, end, retrans) {
                let t = b.rate.delivered_time();
                b.bbr.on_tx_start(now, t, srtt);
            }
        }
    }

    /// After an ACK (SND.UNA now `una`, SACK `blocks`) went through
    /// [`Congestion::on_new_ack`] or [`Congestion::on_dupack`]: the rate
    /// sample and BBR's update (`tcp_rate_gen`, then `bbr_main`).
    /// `prior_in_flight` and `inflight` are the bytes in flight before and
    /// after the ACK; `next_send` is when the pacer releases the next
    /// segment.
    pub fn rate_on_ack(&mut self, a: RateAck<'_>) {
        let s = &mut self.state;
        let GrowthState::Bbr(b) = &mut self.growth else {
            return;
        };
        if b.in_loss && a.una.ge(s.recover) {
            b.in_loss = false;
        }
        let rs = b.rate.on_ack(a.now, a.una, a.blocks, a.prior_in_flight);
        // The tunnel's rule, as quinn, never tells BBR of recovery.
        let ca_state = if b.window.is_some() {
            CaState::Open
        } else if s.in_recovery {
            CaState::Recovery
        } else if b.in_loss {
            CaState::Loss
        } else {
            CaState::Open
        };
        let info = AckInfo {
            now: a.now,
            delivered: b.rate.delivered(),
            delivered_time: b.rate.delivered_time(),
            lost: b.rate.lost(),
            inflight: a.inflight,
            ca_state,
            srtt: s.srtt,
            next_send: a.next_send,
        };
        if b.bbr.on_ack(&rs, &info) {
            b.rate.mark_app_limited(a.inflight);
        }
        if let Some(w) = &mut b.window {
            w.on_acks(&mut b.bbr, rs.acked_sacked, rs.losses, a.inflight);
        }
        s.cwnd = b.cwnd();
        s.ssthresh = b.bbr.ssthresh();
    }

    /// The transport found nothing to send (`tcp_rate_check_app_limited`)
    /// with `inflight` bytes in flight; `lost_unsent`: data found lost is
    /// still waiting to be resent.
    pub fn rate_check_app_limited(&mut self, inflight: u64, lost_unsent: bool) {
        let cwnd = self.state.cwnd;
        if let GrowthState::Bbr(b) = &mut self.growth {
            b.rate
                .check_app_limited(inflight, inflight >= cwnd, lost_unsent);
        }
    }

    /// With a model-based growth, cwnd is the model's whatever the
    /// recovery algorithm just wrote (Linux: a `cong_control` module's cwnd
    /// is not touched by PRR or the end of recovery).
    #[inline]
    fn model_owns_cwnd(&mut self) {
        if let GrowthState::Bbr(b) = &self.growth {
            self.state.cwnd = b.cwnd();
        }
    }

    // ---- SACK (RFC 6675) ----------------------------------------------------

    /// Whether the controller reads SACK blocks.
    #[inline]
    pub fn uses_sack(&self) -> bool {
        matches!(self.recovery, RecoveryState::Sack(_))
    }

    /// Update(): every ACK's SACK blocks, after SND.UNA has moved to `una`
    /// (SND.MAX is `max`). Returns true if they SACKed new data. A no-op
    /// returning false unless the recovery is [`Recovery::Sack`].
    #[inline]
    pub fn on_sack(&mut self, una: Seq, max: Seq, blocks: &[(Seq, Seq)]) -> bool {
        match &mut self.recovery {
            RecoveryState::Sack(b) => {
                // SetPipe() runs on every ACK: rescue bytes are counted anew.
                b.rescue_in_pipe = 0;
                if let (Some(p), true) = (&mut self.sack1, self.state.in_recovery) {
                    p.on_ack(); // ns-2 `Sack1`: `--pipe_` on every ACK
                }
                let new = b.update(una, max, blocks);
                if let Some(p) = &mut self.prr {
                    p.on_sack(b.sacked_bytes(), max);
                }
                new
            }
            _ => false,
        }
    }

    /// Whether an ACK counts as a duplicate ACK: RFC 5681's definition
    /// (`rfc5681`, checked by the transport) except with SACK, where RFC 6675
    /// counts an ACK that "arrives carrying a SACK block that identifies
    /// previously unacknowledged and un-SACKed octets" (`new_sack`, from
    /// [`Congestion::on_sack`]), even if it also moves SND.UNA.
    #[inline]
    pub fn is_duplicate(&self, rfc5681: bool, new_sack: bool) -> bool {
        if self.uses_sack() {
            new_sack
        } else {
            rfc5681
        }
    }

    /// True during SACK loss recovery, when the transport must send what
    /// [`Congestion::next_seg`] returns rather than follow its window rule.
    #[inline]
    pub fn in_sack_recovery(&self) -> bool {
        self.state.in_recovery && self.uses_sack()
    }

    /// SetPipe() for `[una, max)`, with [`Recovery::Sack`].
    pub fn pipe(&self, una: Seq, max: Seq) -> Option<u64> {
        let s = &self.state;
        if let (Some(p), true) = (&self.sack1, s.in_recovery) {
            return Some(p.pipe_bytes(s.smss));
        }
        self.scoreboard()
            .map(|b| b.pipe(una, max, s.dupack_threshold, s.smss))
    }

    /// RFC 6675 (C): during SACK recovery, if `cwnd - pipe >= 1 SMSS`, what
    /// to send next (NextSeg()); `new_data` says whether a segment of unsent
    /// data is available and the receiver's window allows it. `None`: send
    /// nothing now.
    pub fn next_seg(&self, una: Seq, max: Seq, new_data: bool) -> Option<NextSeg> {
        if !self.sack_room(una, max) {
            return None;
        }
        self.next_seg_with_room(una, max, new_data)
    }

    /// RFC 6675 (C)'s condition: in SACK recovery and `cwnd - pipe >= 1
    /// SMSS`. False means nothing is sent until an input changes cwnd, the
    /// scoreboard or `[una, max)`, whatever data the application adds.
    #[inline]
    pub fn sack_room(&self, una: Seq, max: Seq) -> bool {
        let s = &self.state;
        let RecoveryState::Sack(b) = &self.recovery else {
            return false;
        };
        if !s.in_recovery {
            return false;
        }
        if let Some(p) = &self.sack1 {
            return p.room(s.cwnd, s.smss);
        }
        let pipe = b.pipe(una, max, s.dupack_threshold, s.smss);
        s.cwnd.saturating_sub(pipe) >= s.smss as u64
    }

    /// [`Congestion::next_seg`] once [`Congestion::sack_room`] holds.
    #[inline]
    pub fn next_seg_with_room(&self, una: Seq, max: Seq, new_data: bool) -> Option<NextSeg> {
        let s = &self.state;
        let RecoveryState::Sack(b) = &self.recovery else {
            return None;
        };
        if self.sack1.is_some() {
            return sack1::next_seg(b, una, new_data, s.smss);
        }
        b.next_seg(una, max, new_data, s.dupack_threshold, s.smss)
    }

    /// The transport retransmitted `[seq, end)` (any retransmission;
    /// `rescue` for a [`NextSeg::Rescue`]). During SACK recovery this moves
    /// HighRxt (RFC 6675 C.2), or RescueRxt for the rescue (rule 4:
    /// "RescueRxt set to RecoveryPoint. HighRxt MUST NOT be updated").
    #[inline]
    pub fn on_retransmit(&mut self, seq: Seq, end: Seq, rescue: bool) {
        let s = &self.state;
        let RecoveryState::Sack(b) = &mut self.recovery else {
            return;
        };
        if !s.in_recovery {
            return;
        }
        if rescue {
            b.rescue_rxt = Some(s.recover);
            b.rescue_in_pipe += end.bytes_since(seq) as u64;
        } else {
            let old = b.high_rxt;
            b.high_rxt = b.high_rxt.max(end);
            b.memo_retransmit(old, seq, end);
            b.log_retransmission(seq, end);
            // (4.3): the first retransmission sets RescueRxt as well.
            b.rescue_rxt.get_or_insert(end);
        }
    }

    /// The transport sent new data `[seq, end)` at SND.MAX (`seq`): during
    /// SACK recovery, pipe grows by its length without a new SetPipe().
    #[inline]
    pub fn on_new_data(&mut self, seq: Seq, end: Seq) {
        if let RecoveryState::Sack(b) = &mut self.recovery {
            b.on_sent_to(end);
            if self.state.in_recovery {
                b.memo_new_data(seq, end);
            }
        }
    }

    /// The first sequence number at or after `seq` not SACKed, and where the
    /// next SACKed range starts above it. Without SACK: `(seq, None)`.
    #[inline]
    pub fn next_unsacked(&self, seq: Seq) -> (Seq, Option<Seq>) {
        match self.scoreboard() {
            Some(b) => b.next_unsacked(seq),
            None => (seq, None),
        }
    }
}
