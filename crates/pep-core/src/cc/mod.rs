//! TCP congestion control on two axes over one shared state.
//!
//! Following ns-3's split (`tcp-congestion-ops.h` / `tcp-recovery-ops.h`):
//!
//! * **Window growth** ([`Growth`]) decides how `cwnd` opens on ACKs that
//!   acknowledge new data outside loss recovery: slow start and congestion
//!   avoidance (RFC 5681 section 3.1), later CUBIC (RFC 9438) or Westwood+.
//! * **Loss recovery** ([`Recovery`]) decides what happens on duplicate
//!   ACKs, partial ACKs and the end of recovery: RFC 5681 fast
//!   retransmit/fast recovery (Reno), RFC 6582 (NewReno), Tahoe; later SACK
//!   (RFC 6675).
//!
//! Both act on one [`CcState`] (cwnd, ssthresh, the recovery inflation, the
//! `recover` point, the duplicate ACK count). The transport owns sequence
//! numbers, timers and segments; it classifies each ACK and calls
//! [`Congestion::on_new_ack`], [`Congestion::on_dupack`] or
//! [`Congestion::on_timeout`], and performs the [`LossAction`] returned.
//!
//! Dispatch is a `match` over closed enums: no vtable on the per-ACK path,
//! no allocation.
//!
//! ## To add a congestion control
//! Add a variant to [`Growth`] (configuration, `growth.rs`) and its state to
//! the private `GrowthState`, in a new file beside this one, and fill in the
//! `match` arms the compiler then asks for. A recovery algorithm is added
//! the same way in `recovery.rs`; one that needs private state (SACK's
//! scoreboard, allocated once per connection) gets a state enum next to
//! [`Recovery`] like growth has.
//!
//! ## Units and conventions
//! Windows are in bytes (`u64`: windows above 64 KB are routine, and
//! "infinite" ssthresh is `u64::MAX`). `recover` is stored as an exclusive
//! end (one past the highest byte sent, i.e. SND.MAX), so RFC 6582's
//! "covers more than recover" is `ack > recover` and a full acknowledgment
//! is `ack >= recover`; see [`CcState::recover`].

mod growth;
mod recovery;

#[cfg(test)]
mod tests;

pub use growth::Growth;
pub use recovery::Recovery;

use growth::GrowthState;

use crate::seq::Seq;

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
}

impl CcState {
    /// The window the sender may have outstanding: `cwnd + inflation`.
    pub fn window(&self) -> u64 {
        self.cwnd.saturating_add(self.inflation)
    }

    /// RFC 5681 eq. (4): `ssthresh = max (FlightSize / 2, 2*SMSS)`.
    fn halved_flight(&self, flight: u32) -> u64 {
        (flight as u64 / 2).max(2 * self.smss as u64)
    }
}

/// What the transport must retransmit in response to an ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossAction {
    /// The duplicate ACK threshold was reached: retransmit the segment at
    /// SND.UNA now and restart the retransmission timer. With `go_back_n`
    /// (Tahoe) the transport then resends everything after it in slow
    /// start, from SND.UNA, as after a timeout.
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
    /// Loss recovery algorithm (no private state yet).
    recovery: Recovery,
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
        Congestion {
            state: CcState {
                smss: cfg.smss,
                cwnd: cfg.initial_window.max(cfg.smss as u64),
                ssthresh: cfg.initial_ssthresh,
                inflation: 0,
                in_recovery: false,
                recover: isn,
                dupacks: 0,
                dupack_threshold: cfg.dupack_threshold,
                partial_acked: false,
                timed_out: false,
            },
            growth: GrowthState::new(cfg.growth),
            recovery: cfg.recovery,
        }
    }

    pub fn state(&self) -> &CcState {
        &self.state
    }
    /// Congestion window in bytes, excluding fast recovery inflation.
    pub fn cwnd(&self) -> u64 {
        self.state.cwnd
    }
    pub fn ssthresh(&self) -> u64 {
        self.state.ssthresh
    }
    /// Bytes the sender may have outstanding: cwnd plus inflation.
    pub fn window(&self) -> u64 {
        self.state.window()
    }
    pub fn in_recovery(&self) -> bool {
        self.state.in_recovery
    }
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }
    pub fn growth(&self) -> Growth {
        self.growth.config()
    }

    /// An ACK acknowledged `acked` new bytes, moving SND.UNA to `ack`.
    /// Returns a retransmission the transport must make, if any.
    pub fn on_new_ack(&mut self, ack: Seq, acked: u32) -> Option<LossAction> {
        let s = &mut self.state;
        s.dupacks = 0;
        s.timed_out = false;
        if s.in_recovery {
            return recovery::on_recovery_ack(self.recovery, s, ack, acked);
        }
        self.growth.on_ack(s, acked);
        None
    }

    /// A duplicate ACK (RFC 5681 section 2's definition, checked by the
    /// transport) arrived while SND.UNA is `snd_una` and SND.MAX `snd_max`.
    pub fn on_dupack(&mut self, snd_una: Seq, snd_max: Seq) -> Option<LossAction> {
        let action = recovery::on_dupack(self.recovery, &mut self.state, snd_una, snd_max);
        if action.is_some() {
            self.growth.on_congestion(&self.state);
        }
        action
    }

    /// The retransmission timer expired with `[snd_una, snd_max)`
    /// outstanding. The transport retransmits from SND.UNA (go-back-N).
    pub fn on_timeout(&mut self, snd_una: Seq, snd_max: Seq) {
        let s = &mut self.state;
        // RFC 5681 section 3.1: "When a TCP sender detects segment loss using
        // the retransmission timer and the given segment has not yet been
        // resent by way of the retransmission timer, the value of ssthresh
        // MUST be set to no more than the value given in equation (4) [...]
        // If the segment has already been retransmitted by way of the
        // retransmission timer at least once, the value of ssthresh is held
        // constant."
        if !s.timed_out {
            s.ssthresh = s.halved_flight(snd_max.bytes_since(snd_una));
        }
        s.timed_out = true;
        // "Furthermore, upon a timeout [...] cwnd MUST be set to no more
        // than the loss window, LW, which equals 1 full-sized segment".
        s.cwnd = s.smss as u64;
        s.inflation = 0;
        s.dupacks = 0;
        // RFC 6582 step 4: "After a retransmit timeout, record the highest
        // sequence number transmitted in the variable recover, and exit the
        // fast recovery procedure if applicable."
        s.recover = snd_max;
        s.in_recovery = false;
        s.partial_acked = false;
        self.growth.on_congestion(&self.state);
    }
}
