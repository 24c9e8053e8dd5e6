//! The data sender: windows, retransmission timer, loss recovery actions.
//!
//! ## Choices (where the RFCs leave room)
//! * **Send rule.** A segment of `len` bytes at SND.NXT goes out only if
//!   `SND.NXT - SND.UNA + len <= min(cwnd + inflation, rwnd)` (RFC 5681
//!   section 2: "The TCP sender MUST NOT send data with a sequence number
//!   higher than the sum of the highest acknowledged sequence number and the
//!   minimum of cwnd and rwnd"). Fast recovery's inflation counts: that is
//!   how Reno sends new data during recovery. A fractional window is not
//!   rounded up to a segment, as in ns-2's integer windows. The one
//!   exception is RFC 1122's override: with nothing outstanding and a
//!   receiver window smaller than a segment, send what the window allows.
//! * **Retransmissions** (fast, partial-ACK, timeout) ignore both windows,
//!   as the RFCs require; go-back-N resends after a timeout (and after
//!   Tahoe's fast retransmit) go through the send rule again.
//! * **Karn.** One segment is timed at a time (no timestamps). Any
//!   retransmission cancels the measurement in progress, as ns-2 does, so no
//!   sample can come from an ACK a retransmission may have caused. The
//!   backed-off RTO is kept until a valid sample arrives.
//! * **Timer.** Restarted on every ACK of new data (RFC 6298 5.3) except
//!   NewReno partial ACKs after the first in one recovery (RFC 6582's
//!   "Impatient" variant, ns-2's default); restarted on fast retransmit;
//!   stopped when everything is acknowledged.
//! * **Zero window.** With nothing outstanding and a zero window, a persist
//!   timer (first after one RTO, then doubling, capped at `max_rto`) sends
//!   a window probe: a pure ACK with sequence number SND.UNA - 1, which the
//!   receiver must answer with its current window (as Linux probes). With
//!   data outstanding, the retransmission timer covers the zero window.
//! * **Duplicate ACK** is RFC 5681 section 2's definition, all five
//!   conditions, including "the advertised window in the incoming
//!   acknowledgment equals the advertised window in the last incoming
//!   acknowledgment". With SACK recovery it is RFC 6675's instead: an ACK
//!   that SACKs data not SACKed before, whatever else it does.
//! * **SACK.** Every ACK's SACK blocks go to the congestion controller's
//!   scoreboard (a no-op for the other recovery algorithms). During SACK
//!   recovery the window rule is replaced by RFC 6675 (C): while
//!   `cwnd - pipe >= SMSS`, send what NextSeg() chooses. Retransmissions
//!   and go-back-N resends never resend SACKed data (the sink never
//!   reneges, and the scoreboard survives a timeout, as in Linux).

use pep_core::cc::{Congestion, LossAction, NextSeg, QuicCongestion};
use pep_core::rtt::RttEstimator;
use pep_core::{Duration, Flags, FlowId, Instant, SackBlocks, Segment, Seq, Timestamps};

use super::config::{AppSource, TcpConfig};
#[path = "sender_rack.rs"]
mod rack;
use super::pacing::{Pacer, RateInputs};

/// The window the sender's own (empty) receive side advertises.
pub(crate) const SENDER_RWND: u32 = 1 << 30;

/// Why a segment was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxKind {
    /// First transmission of data.
    New,
    /// Retransmission of SND.UNA on the third duplicate ACK.
    FastRetransmit,
    /// NewReno retransmission of the next hole on a partial ACK.
    PartialAckRetransmit,
    /// Retransmission of SND.UNA (or of the SYN) when the timer expired.
    TimeoutRetransmit,
    /// Resend of a segment below SND.MAX, in slow start after a timeout or
    /// a Tahoe fast retransmit (go-back-N).
    GoBackN,
    /// SACK recovery retransmission chosen by NextSeg() rules (1) or (3)
    /// (RFC 6675).
    SackRetransmit,
    /// SACK recovery's rescue retransmission (RFC 6675 NextSeg() rule 4).
    RescueRetransmit,
    /// First transmission of the SYN.
    Syn,
    /// First transmission of the FIN (a segment of its own, no data).
    Fin,
    /// Zero-window probe: a pure ACK at SND.UNA - 1, no data.
    WindowProbe,
    /// RACK-TLP's tail loss probe resending the last segment (RFC 8985 7.3).
    TailLossProbe,
    /// A pure ACK of a bidirectional flow's reverse data, sent because no
    /// data segment could carry it (not counted as a segment sent).
    Ack,
}

impl TxKind {
    /// Whether the segment carries sequence space sent before.
    pub fn is_retransmission(self) -> bool {
        matches!(
            self,
            TxKind::FastRetransmit
                | TxKind::PartialAckRetransmit
                | TxKind::TimeoutRetransmit
                | TxKind::GoBackN
                | TxKind::SackRetransmit
                | TxKind::RescueRetransmit
                | TxKind::TailLossProbe
        )
    }
}

/// Sender counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Segments sent carrying data, SYN or FIN, retransmissions included
    /// (window probes excluded).
    pub segments_sent: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Segments whose [`TxKind::is_retransmission`] holds.
    pub retransmitted_segments: u64,
    /// Payload bytes in those segments.
    pub retransmitted_bytes: u64,
    /// Fast retransmit events (third duplicate ACK accepted).
    pub fast_retransmits: u64,
    /// NewReno partial-ACK retransmissions.
    pub partial_ack_retransmits: u64,
    /// SACK recovery retransmissions ([`TxKind::SackRetransmit`] and
    /// [`TxKind::RescueRetransmit`]).
    pub sack_retransmits: u64,
    /// Retransmission timer expiries (SYN included).
    pub timeouts: u64,
    /// Zero-window probes sent.
    pub window_probes: u64,
    /// ACK segments received for this flow.
    pub acks_received: u64,
    /// Of those, duplicate ACKs (RFC 5681 section 2; RFC 6675's definition
    /// with SACK recovery).
    pub dupacks_received: u64,
    /// RACK-TLP: tail loss probes sent (new data or a resend).
    pub tail_loss_probes: u64,
    /// RACK-TLP: reorder timer expiries that marked data lost.
    pub rack_timeouts: u64,
    /// RACK: retransmissions found lost (and resent) before the RTO.
    pub lost_retransmissions: u64,
    /// Timeouts found spurious by their timestamps and undone.
    pub spurious_timeouts: u64,
}

/// What undoing a spurious timeout needs (Linux's `undo_marker`,
/// `retrans_stamp`, `prior_cwnd`, `prior_ssthresh`): armed at a timeout
/// with timestamps on, outside recovery.
#[derive(Clone, Debug)]
struct TimeoutUndo {
    /// The TSval of the timeout's retransmission: an ACK echoing an
    /// earlier one was sent for the original (RFC 3522's Eifel detection,
    /// the kernel's `tcp_packet_delayed`).
    retrans_ts: u32,
    /// SND.MAX at the timeout: what the original flight had sent.
    snd_max: Seq,
    prior_cwnd: u64,
    prior_ssthresh: u64,
    prior_recover: Seq,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Handshake: the SYN is (about to be) outstanding.
    SynSent,
    /// Data may flow.
    Established,
}

/// The one timer slot: the persist timer only runs with nothing
/// outstanding, when the retransmission timer does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timer {
    Retransmit,
    Persist,
}

/// What the last `poll_data` that found nothing to send says about the
/// next ones. The drivers poll once more after every drain; with a full
/// window that poll used to rescan the scoreboard (and, in SACK recovery,
/// recompute pipe) to find nothing again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Idle {
    /// Poll for real.
    No,
    /// Nothing to send until an ACK, a timer or `close`: the window, pipe
    /// or `max_burst` holds back data, which more data cannot change.
    Held,
    /// Nothing to send until any input, a `write` included (everything
    /// written is sent, or NextSeg() found nothing).
    Drained,
}

/// Why `next_in_window` or `next_sack_segment` sends nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// The window, pipe or `max_burst` (see [`Idle::Held`]).
    Held,
    /// No data to offer (see [`Idle::Drained`]).
    Drained,
}

/// A TCP data sender (one direction of a connection).
#[derive(Clone, Debug)]
pub struct TcpSender {
    flow: FlowId,
    /// Payload bytes per full segment.
    mss: u32,
    /// Header bytes on the wire per segment.
    hdr_len: u16,
    /// Segments allowed per ACK, if limited.
    max_burst: Option<u32>,
    app: AppSource,
    phase: Phase,
    /// Initial send sequence number (the SYN's).
    isn: Seq,
    /// Oldest unacknowledged sequence number.
    snd_una: Seq,
    /// Next sequence number to send (moves back on go-back-N).
    snd_nxt: Seq,
    /// One past the highest sequence number ever sent.
    snd_max: Seq,
    /// Stream offset of SND.UNA: data bytes acknowledged so far (plus one
    /// once the FIN is). Sequence numbers wrap; offsets do not.
    una_off: u64,
    /// The ACK number our segments carry: the peer's ISN + 1 (its ISN is
    /// taken to be 0 without a handshake, as `SinkConfig::isn` defaults).
    rcv_nxt: Seq,
    /// Receiver's advertised window from the last acceptable ACK.
    rwnd: u32,
    cc: Congestion,
    /// The congestion control is model-based (BBR): it samples the
    /// delivery rate per segment and sets the pacing rate.
    model: bool,
    rtt: RttEstimator,
    /// RTT measurement in progress: the ACK number that completes it and
    /// when the timed segment was sent.
    timing: Option<(Seq, Instant)>,
    /// The running timer, if any.
    timer: Option<(Instant, Timer)>,
    /// Doublings of the persist interval since data last went out.
    persist_backoff: u32,
    /// A transmission demanded by the last input (retransmission of
    /// SND.UNA, SYN or window probe), sent before any new data.
    pending: Option<TxKind>,
    /// When the first SYN was sent (for an RTT sample from the SYN-ACK).
    syn_sent_at: Option<Instant>,
    /// The SYN timed out at least once (Karn; RFC 6298 5.7).
    syn_retransmitted: bool,
    /// Segments still allowed by `max_burst` for the current input.
    burst_left: Option<u32>,
    /// When all data was acknowledged (finite sources).
    completion: Option<Instant>,
    /// The FIN has been acknowledged: nothing more to do.
    closed: bool,
    /// Pacing, if enabled, and the release instant that held back the last
    /// `poll_transmit` (reported by `poll_timeout`).
    pacer: Option<Pacer>,
    paced: Option<Instant>,
    /// `SO_SNDBUF`: a cap on in-flight bytes.
    sndbuf: u64,
    stats: SenderStats,
    /// Timestamps option on, and its clock (microseconds) for the segments
    /// being sent now.
    timestamps: bool,
    /// `TcpConfig::rtt_every_ack` (with RACK on).
    rtt_every_ack: bool,
    /// `TcpConfig::quic_window` (with RACK on): the machine that owns cwnd.
    quic: Option<Box<QuicCongestion>>,
    ts_clock: u32,
    limited_transmit: bool,
    /// Two habits of ns-2's `Agent/TCP/Linux`, on with `cubic-ns2`, which
    /// models that agent: every ACK restarts the retransmission timer
    /// while data is outstanding (`renew_timer` in its `time_processing`;
    /// RFC 6298 (5.3) restarts it on new data only), and the window grows
    /// only on an ACK that found it full (its `tcp_is_cwnd_limited`:
    /// packets in flight before the ACK at least cwnd).
    linux_agent: bool,
    /// Written into as a Linux socket is by a relay ([`Self::socket_writes`]):
    /// the application limit is checked at each write, and a writer the
    /// full buffer blocked waits for [`Self::write_space`]'s wake-up.
    socket_writes: bool,
    /// `SOCK_NOSPACE`: the last write filled the send buffer.
    nospace: bool,
    /// RFC 7661 state, if congestion-window validation is on.
    /// Boxed: off by default, and a packet should not pass over it.
    cwv: Option<Box<Cwv>>,
    /// RACK-TLP state, if on (`TcpConfig::rack` with SACK recovery).
    rack: Option<Box<pep_core::cc::Rack>>,
    /// A timeout that may prove spurious (timestamps only; boxed: rare).
    undo: Option<Box<TimeoutUndo>>,
    /// Bidirectional flows (`TcpConfig::reverse`): the receiver of the
    /// peer's data at this host, whose ACKs ride on our data segments.
    reverse: Option<Box<super::TcpSink>>,
    /// Whether `poll_data` may answer `None` at once. Every input clears
    /// it (a `write` only [`Idle::Drained`]); only unpaced senders set it,
    /// since a pacer's release depends on the time.
    idle: Idle,
}

/// RFC 7661 bookkeeping: pipeACK, the bytes acknowledged per RTT.
#[derive(Clone, Copy, Debug, Default)]
struct Cwv {
    /// The current measurement interval (one smoothed RTT) and what it
    /// has acknowledged so far.
    started: Option<Instant>,
    acked: u64,
    /// The last three complete intervals' samples (RFC 7661 4.2: the
    /// pipeACK sampling period is at least three RTTs).
    samples: [u64; 3],
    next: usize,
    complete: usize,
}

impl Cwv {
    /// Counts `acked` bytes at `now`; true while in the non-validated phase
    /// (pipeACK < cwnd / 2).
    fn on_ack(&mut self, now: Instant, acked: u64, srtt: Option<Duration>, cwnd: u64) -> bool {
        let Some(srtt) = srtt else { return false };
        let start = *self.started.get_or_insert(now);
        self.acked += acked;
        if now - start >= srtt {
            self.samples[self.next] = self.acked;
            self.next = (self.next + 1) % 3;
            self.complete = (self.complete + 1).min(3);
            self.acked = 0;
            self.started = Some(now);
        }
        if self.complete == 0 {
            return false; // pipeACK undefined: the window counts as validated
        }
        let pipe_ack = self
            .samples
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .max(self.acked);
        pipe_ack < cwnd / 2
    }
}

impl TcpSender {
    /// A sender for `flow` starting at `now`. Call `poll_transmit` next.
    ///
    /// # Panics
    /// If `cfg.mss` is zero or `cfg.max_burst` is `Some(0)`.
    pub fn new(flow: FlowId, cfg: &TcpConfig, app: AppSource, now: Instant) -> Self {
        assert!(cfg.mss > 0, "mss must be positive");
        assert!(cfg.max_burst != Some(0), "max_burst must be at least 1");
        let isn = cfg.isn;
        let (phase, start, pending) = if cfg.handshake {
            (Phase::SynSent, isn, Some(TxKind::Syn))
        } else {
            (Phase::Established, isn + 1, None)
        };
        let completion = match (app, cfg.handshake) {
            (AppSource::Finite(0), false) => Some(now),
            _ => None,
        };
        let mut cc = Congestion::new(&cfg.cc_config(), isn);
        cc.seed_model(flow.0 as u64);
        let model = cc.is_model_based();
        let rack = cfg.rack && cfg.recovery == pep_core::cc::Recovery::Sack;
        let quic = (cfg.quic_window && rack && !model).then(|| {
            // The window's growth is QuicCongestion's; this one's is held.
            cc.hold_growth(true);
            let mtu = cfg.mss.min(u16::MAX as u32) as u16;
            let iw = cfg.initial_window as u64 * cfg.mss as u64;
            Box::new(QuicCongestion::new(cfg.growth, mtu, iw))
        });
        TcpSender {
            model,
            flow,
            mss: cfg.mss,
            hdr_len: cfg.hdr_len,
            max_burst: cfg.max_burst,
            app,
            phase,
            isn,
            snd_una: start,
            snd_nxt: start,
            snd_max: start,
            una_off: 0,
            rcv_nxt: Seq(1),
            rwnd: cfg.initial_rwnd,
            cc,
            rtt: RttEstimator::new(cfg.rtt_config()),
            timing: None,
            timer: None,
            persist_backoff: 0,
            pending,
            syn_sent_at: None,
            syn_retransmitted: false,
            burst_left: cfg.max_burst,
            completion,
            closed: false,
            // BBR always paces (Linux: SK_PACING_NEEDED, fq or internal).
            pacer: cfg.pacing.or(model.then(Default::default)).map(Pacer::new),
            paced: None,
            sndbuf: cfg.sndbuf,
            stats: SenderStats::default(),
            timestamps: cfg.timestamps,
            rtt_every_ack: cfg.rtt_every_ack && cfg.rack,
            quic,
            ts_clock: 0,
            limited_transmit: cfg.limited_transmit,
            linux_agent: cfg.linux_agent(),
            socket_writes: false,
            nospace: false,
            cwv: cfg.cwv.then(Box::default),
            rack: rack.then(Box::default),
            undo: None,
            reverse: cfg
                .reverse
                .map(|rx| Box::new(super::TcpSink::new(flow, &rx))),
            idle: Idle::No,
        }
    }

    // ---- driver interface -------------------------------------------------

    /// A segment from the receiver arrived.
    pub fn handle_segment(&mut self, now: Instant, seg: &Segment) {
        self.on_segment(now, seg);
        self.quic_owns_cwnd();
    }

    fn on_segment(&mut self, now: Instant, seg: &Segment) {
        self.idle = Idle::No;
        if seg.flow != self.flow {
            return;
        }
        if let Some(rx) = self.reverse.as_deref_mut() {
            // The peer's data (and probes); the SYN-ACK is ours alone.
            if !seg.flags.contains(Flags::SYN) {
                rx.handle_segment(now, seg);
            }
        }
        if self.closed || !seg.has_ack() {
            return;
        }
        self.stats.acks_received += 1;
        if self.phase == Phase::SynSent {
            self.on_syn_ack(now, seg);
            return;
        }
        let ack = seg.ack;
        // A duplicate SYN-ACK, an ACK of data never sent, or an old ACK.
        if seg.flags.contains(Flags::SYN) || ack.gt(self.snd_max) || ack.lt(self.snd_una) {
            return;
        }
        self.burst_left = self.max_burst;
        let advanced = ack.gt(self.snd_una);
        let was_in_recovery = self.cc.in_recovery();
        let prior_in_flight = if self.model { self.inflight() } else { 0 };
        if advanced {
            self.on_new_ack(now, seg);
        } else {
            self.on_same_ack(now, seg);
        }
        if self.rack.is_some() {
            self.rack_on_ack(now, seg, advanced, was_in_recovery);
        }
        if self.model {
            self.model_on_ack(now, seg, prior_in_flight);
        }
    }

    /// A model-based control's rate sample for this ACK (after recovery
    /// has acted on it).
    #[cold]
    fn model_on_ack(&mut self, now: Instant, seg: &Segment, prior_in_flight: u64) {
        let next_send = self.pacer.map_or(now, |p| p.next_release().max(now));
        let a = pep_core::cc::RateAck {
            now,
            una: self.snd_una,
            blocks: seg.sack.as_slice(),
            prior_in_flight,
            inflight: self.inflight(),
            next_send,
        };
        self.cc.rate_on_ack(a);
    }

    /// Bytes in flight, as Linux's `tcp_packets_in_flight`: SetPipe() with
    /// SACK; otherwise what was sent and not acknowledged, less fast
    /// recovery's inflation (the segments duplicate ACKs say have left).
    fn inflight(&self) -> u64 {
        let una = self.snd_una;
        let nxt = self.snd_nxt.max(una);
        match self.cc.pipe(una, nxt) {
            Some(pipe) => pipe,
            None => {
                let flight = nxt.bytes_since(una) as u64;
                flight.saturating_sub(self.cc.state().inflation)
            }
        }
    }

    /// The deadline from `poll_timeout` may have passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.on_timer(now);
        self.quic_owns_cwnd();
    }

    /// With `TcpConfig::quic_window`, cwnd and ssthresh are
    /// QuicCongestion's after every input.
    #[inline]
    fn quic_owns_cwnd(&mut self) {
        if let Some(q) = self.quic.as_deref() {
            self.cc.own_window(q.window(), q.ssthresh());
        }
    }

    fn on_timer(&mut self, now: Instant) {
        self.idle = Idle::No;
        if let Some(rx) = self.reverse.as_deref_mut() {
            rx.handle_timeout(now);
        }
        if self.rack.is_some() && self.rack_on_timeout(now) {
            return;
        }
        let Some((at, which)) = self.timer else {
            return;
        };
        if now < at || self.closed {
            return;
        }
        self.timer = None;
        self.burst_left = self.max_burst;
        match which {
            Timer::Retransmit => self.on_rto(now),
            Timer::Persist => {
                self.pending = Some(TxKind::WindowProbe);
                self.persist_backoff = self.persist_backoff.saturating_add(1);
                self.timer = Some((now + self.persist_interval(), Timer::Persist));
            }
        }
    }

    /// The next segment to send, if any. Drain until `None` after every
    /// input.
    #[inline]
    pub fn poll_transmit(&mut self, now: Instant) -> Option<(Segment, TxKind)> {
        if self.reverse.is_none() {
            return self.poll_data(now);
        }
        self.poll_bidirectional(now)
    }

    /// Bidirectional: our next segment carries the reverse receiver's ACK;
    /// with nothing to send, the receiver's pure ACKs go out as they are due.
    #[cold]
    fn poll_bidirectional(&mut self, now: Instant) -> Option<(Segment, TxKind)> {
        if let Some((mut seg, kind)) = self.poll_data(now) {
            if let Some(rx) = self.reverse.as_deref_mut() {
                rx.piggyback(&mut seg);
            }
            return Some((seg, kind));
        }
        let mut ack = self.reverse.as_deref_mut()?.poll_transmit(now)?;
        // See `TcpSink::poll_transmit`: SND.MAX, our clock in TSval.
        ack.seq = self.snd_max;
        if self.timestamps {
            let ecr = ack.ts.map_or(0, |t| t.ecr);
            ack.ts = Some(Timestamps {
                val: ts_clock(now),
                ecr,
            });
        }
        Some((ack, TxKind::Ack))
    }

    #[inline]
    fn poll_data(&mut self, now: Instant) -> Option<(Segment, TxKind)> {
        if self.idle != Idle::No {
            #[cfg(test)]
            self.check_idle(now);
            self.ts_clock = ts_clock(now);
            return None;
        }
        self.poll_data_full(now)
    }

    /// Test builds: the cached `None` is what a full poll answers, with
    /// the same timer.
    #[cfg(test)]
    fn check_idle(&self, now: Instant) {
        let mut full = self.clone();
        full.idle = Idle::No;
        let out = full.poll_data_full(now);
        assert!(out.is_none(), "idle sender would send {out:?}");
        assert_eq!(full.timer, self.timer);
        assert_eq!(full.poll_timeout(), self.poll_timeout());
    }

    fn poll_data_full(&mut self, now: Instant) -> Option<(Segment, TxKind)> {
        if self.closed {
            return None;
        }
        self.ts_clock = ts_clock(now);
        self.paced = None;
        if let Some(at) = self.pacer.as_ref().and_then(|p| p.release(now)) {
            if self.phase == Phase::Established && self.wants_to_send() {
                self.paced = Some(at);
                return None;
            }
        }
        if self.phase == Phase::SynSent {
            let kind = self.pending.take()?;
            let seg = self.segment(self.isn, 0, Flags::SYN);
            if kind == TxKind::Syn {
                self.syn_sent_at = Some(now);
            }
            self.on_sent(now, &seg, kind);
            return Some((seg, kind));
        }
        if let Some(kind) = self.pending.take() {
            if kind == TxKind::TailLossProbe {
                return Some(self.send_probe(now));
            }
            let seg = if kind == TxKind::WindowProbe {
                self.segment(self.snd_una - 1, 0, Flags::ACK)
            } else {
                self.retransmission()
            };
            self.on_sent(now, &seg, kind);
            return Some((seg, kind));
        }
        // The window a segment from `next_in_window` was cut to: after the
        // send it also decides the next poll's stop.
        let (next, window) = if self.cc.in_sack_recovery() {
            (self.next_sack_segment(), None)
        } else if self.all_written_sent() {
            (Err(Stop::Drained), None)
        } else {
            let wnd = self.send_window();
            (self.next_in_window(wnd), Some(wnd))
        };
        match next {
            Ok((seg, kind)) => {
                self.on_sent(now, &seg, kind);
                if let (Some(wnd), None) = (window, &self.pacer) {
                    self.idle = self.idle_after_send(wnd);
                }
                Some((seg, kind))
            }
            Err(stop) => {
                if !self.cc.in_sack_recovery() {
                    self.maybe_arm_persist(now);
                }
                if self.model && stop == Stop::Drained && !self.socket_writes {
                    // `tcp_rate_check_app_limited`: no data to fill the window.
                    let lost_unsent = self.pending.is_some();
                    let inflight = self.inflight();
                    self.cc.rate_check_app_limited(inflight, lost_unsent);
                }
                if self.pacer.is_none() {
                    self.idle = match stop {
                        Stop::Held => Idle::Held,
                        Stop::Drained => Idle::Drained,
                    };
                }
                None
            }
        }
    }

    /// When `handle_timeout` is next wanted.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        // Without a reverse receiver, RACK or a pacer: the timer alone.
        if self.reverse.is_none() && self.rack.is_none() && self.paced.is_none() {
            return self.timer.map(|(at, _)| at);
        }
        self.poll_timeout_full()
    }

    #[cold]
    fn poll_timeout_full(&self) -> Option<Instant> {
        let mut timer = self.timer.map(|(at, _)| at);
        if let Some(d) = self.reverse.as_deref().and_then(|rx| rx.poll_timeout()) {
            timer = Some(timer.map_or(d, |t| t.min(d)));
        }
        let rack = self.rack.as_deref().filter(|_| !self.closed);
        if let Some(r) = rack.and_then(|r| r.deadline()) {
            timer = Some(timer.map_or(r, |t| t.min(r)));
        }
        match (timer, self.paced) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    // ---- getters ------------------------------------------------------------

    pub fn flow(&self) -> FlowId {
        self.flow
    }
    /// Congestion window in bytes, without fast recovery's inflation.
    pub fn cwnd(&self) -> u64 {
        self.cc.cwnd()
    }
    /// Bytes the congestion controller allows outstanding (cwnd plus
    /// inflation during fast recovery).
    pub fn cc_window(&self) -> u64 {
        self.cc.window()
    }
    pub fn ssthresh(&self) -> u64 {
        self.cc.ssthresh()
    }
    /// The receiver's last advertised window.
    pub fn rwnd(&self) -> u32 {
        self.rwnd
    }
    pub fn snd_una(&self) -> Seq {
        self.snd_una
    }
    pub fn snd_nxt(&self) -> Seq {
        self.snd_nxt
    }
    pub fn snd_max(&self) -> Seq {
        self.snd_max
    }
    pub fn in_recovery(&self) -> bool {
        self.cc.in_recovery()
    }
    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }
    /// Current retransmission timeout, backoff included.
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }
    /// Flows the connection carries (a tunnel's): the N of
    /// `Growth::CubicFlows`; other growths ignore it.
    pub fn set_flows(&mut self, flows: u32) {
        self.cc.set_flows(flows);
        if let Some(q) = self.quic.as_deref_mut() {
            q.set_flows(flows);
        }
    }
    pub fn congestion(&self) -> &Congestion {
        &self.cc
    }
    pub fn rtt_estimator(&self) -> &RttEstimator {
        &self.rtt
    }
    /// Data bytes acknowledged so far.
    pub fn bytes_acked(&self) -> u64 {
        match self.app {
            AppSource::Finite(n) | AppSource::Open(n) => self.una_off.min(n),
            AppSource::Bulk => self.una_off,
        }
    }

    /// Writes come from a relay through a Linux socket (the `linux`
    /// profile's split PEP): [`Self::write`] checks the application limit
    /// as `tcp_sendmsg` does (`tcp_rate_check_app_limited`, once per write,
    /// before appending), instead of every time the sender finds nothing
    /// written left to send, and [`Self::write_space`] wakes a blocked
    /// writer as `sk_stream_write_space` does.
    pub fn socket_writes(&mut self) {
        self.socket_writes = true;
    }

    /// Bytes written and not yet acknowledged (`sk_wmem_queued`, payload
    /// only).
    pub fn queued(&self) -> u64 {
        match self.app {
            AppSource::Finite(n) | AppSource::Open(n) => n.saturating_sub(self.bytes_acked()),
            AppSource::Bulk => u64::MAX,
        }
    }

    /// What the writer may write now: the send buffer's free space; with
    /// [`Self::socket_writes`], nothing while a writer the full buffer
    /// blocked has less than half of what is queued free
    /// (`sk_stream_wspace >= sk_stream_min_wspace`: Linux wakes it, and
    /// `tcp_poll` reports it writable, only then).
    pub fn write_space(&self) -> u64 {
        let queued = self.queued();
        let free = self.sndbuf.saturating_sub(queued);
        if self.socket_writes && self.nospace && free < queued / 2 {
            0
        } else {
            free
        }
    }

    /// The application writes `bytes` more (an [`AppSource::Open`] stream;
    /// ignored for the other sources, whose data is fixed at the start).
    pub fn write(&mut self, bytes: u64) {
        if self.socket_writes && self.model {
            self.check_app_limited_at_write();
        }
        if let AppSource::Open(n) = &mut self.app {
            *n += bytes;
        }
        if self.socket_writes {
            // A writer with more than fit finds the buffer full and waits
            // (a write of exactly the free space is counted as one).
            self.nospace = self.queued() >= self.sndbuf;
        }
        if self.idle == Idle::Drained {
            self.idle = Idle::No;
        }
    }
    /// The application closes an [`AppSource::Open`] stream: what it wrote
    /// is all there will be, and a FIN follows it (a relay forwarding the
    /// end of its incoming stream).
    pub fn close(&mut self) {
        self.idle = Idle::No;
        if let AppSource::Open(n) = self.app {
            self.app = AppSource::Finite(n);
        }
    }
    /// A finite transfer whose data is all acknowledged.
    pub fn is_complete(&self) -> bool {
        self.completion.is_some()
    }
    /// When the last data byte was acknowledged.
    pub fn completion_time(&self) -> Option<Instant> {
        self.completion
    }
    /// The FIN has been acknowledged.
    pub fn is_closed(&self) -> bool {
        self.closed
    }
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }
    /// The receiver of the reverse data (bidirectional flows).
    pub fn reverse_sink(&self) -> Option<&super::TcpSink> {
        self.reverse.as_deref()
    }

    // ---- input processing ---------------------------------------------------

    fn on_syn_ack(&mut self, now: Instant, seg: &Segment) {
        if !seg.flags.contains(Flags::SYN) || seg.ack != self.isn + 1 {
            return;
        }
        self.phase = Phase::Established;
        self.snd_una = self.isn + 1;
        self.snd_nxt = self.snd_una;
        self.snd_max = self.snd_una;
        self.rcv_nxt = seg.seq + 1;
        self.rwnd = seg.wnd;
        self.timer = None;
        self.pending = None;
        self.burst_left = self.max_burst;
        if self.syn_retransmitted {
            self.rtt.reinit_after_syn_timeout();
        } else if let Some(sent) = self.syn_sent_at {
            self.rtt_sample(now, sent);
        }
        if self.app == AppSource::Finite(0) {
            self.completion = Some(now);
        }
    }

    fn on_new_ack(&mut self, now: Instant, seg: &Segment) {
        let ack = seg.ack;
        if let Some(u) = self.undo.take() {
            self.undo_if_spurious(&u, seg);
        }
        if let (true, Some(ts)) = (self.timestamps, seg.ts) {
            // RFC 7323's RTTM: an RTT sample from every ACK of new data.
            let rtt = ts_clock(now).wrapping_sub(ts.ecr);
            let rtt = Duration::from_micros(rtt as u64);
            self.cc.on_ack_rtt(rtt, ack, self.snd_nxt);
        }
        let acked = ack.bytes_since(self.snd_una);
        // The agent's `prior_in_flight`: SND.NXT - SND.UNA less what is
        // SACKed or lost, before this ACK.
        let app_limited = self.linux_agent && {
            let flight = match self.cc.pipe(self.snd_una, self.snd_nxt.max(self.snd_una)) {
                Some(pipe) => pipe,
                None => self.snd_nxt.bytes_since(self.snd_una) as u64,
            };
            flight < self.cc.cwnd()
        };
        if let Some((end, sent)) = self.timing.filter(|_| !self.rtt_every_ack) {
            if ack.ge(end) {
                self.rtt_sample(now, sent);
                self.timing = None;
            }
        }
        self.snd_una = ack;
        self.una_off += acked as u64;
        if self.snd_nxt.lt(ack) {
            // The receiver had more than we resent after a go-back-N.
            self.snd_nxt = ack;
        }
        self.rwnd = seg.wnd;
        let new_sack = self.read_sack(seg);
        if let Some(c) = self.cwv.as_mut() {
            let nvp = c.on_ack(now, acked as u64, self.rtt.srtt(), self.cc.cwnd());
            self.cc.hold_growth(nvp || app_limited);
        } else if self.linux_agent {
            self.cc.hold_growth(app_limited);
        }
        let action = self.cc.on_new_ack(now, ack, acked);
        if let AppSource::Finite(n) = self.app {
            if self.completion.is_none() && self.una_off >= n {
                self.completion = Some(now);
            }
            if self.una_off > n {
                // The FIN is acknowledged.
                self.closed = true;
                self.timer = None;
                self.pending = None;
                return;
            }
        }
        let mut restart = true;
        if let Some(LossAction::PartialAckRetransmit { restart_timer }) = action {
            self.pending = Some(TxKind::PartialAckRetransmit);
            self.stats.partial_ack_retransmits += 1;
            restart = restart_timer;
        }
        if self.snd_una == self.snd_max {
            // RFC 6298 (5.2): "When all outstanding data has been
            // acknowledged, turn off the retransmission timer."
            self.timer = None;
        } else if restart || self.timer.is_none() {
            // RFC 6298 (5.3): "When an ACK is received that acknowledges new
            // data, restart the retransmission timer so that it will expire
            // after RTO seconds (for the current value of RTO)."
            self.timer = Some((now + self.rtt.rto(), Timer::Retransmit));
        }
        // RFC 6675: an ACK carrying new SACK information is a duplicate ACK
        // "even if it carries new data, changes the advertised window, or
        // moves the cumulative acknowledgment point".
        if self.cc.is_duplicate(false, new_sack) {
            self.on_dupack(now);
        }
    }

    fn on_same_ack(&mut self, now: Instant, seg: &Segment) {
        if self.linux_agent
            && self.snd_max != self.snd_una
            && matches!(self.timer, None | Some((_, Timer::Retransmit)))
        {
            self.timer = Some((now + self.rtt.rto(), Timer::Retransmit));
        }
        // RFC 5681 section 2: "(a) the receiver of the ACK has outstanding
        // data, (b) the incoming acknowledgment carries no data, (c) the SYN
        // and FIN bits are both off, (d) the acknowledgment number is equal
        // to the greatest acknowledgment received on the given connection
        // (TCP.UNA from [RFC793]) and (e) the advertised window in the
        // incoming acknowledgment equals the advertised window in the last
        // incoming acknowledgment." (d) holds here.
        let duplicate = self.snd_max != self.snd_una
            && seg.len == 0
            && !seg.flags.contains(Flags::SYN)
            && !seg.flags.contains(Flags::FIN)
            && seg.wnd == self.rwnd;
        let new_sack = self.read_sack(seg);
        if !duplicate {
            // A window update (or a probe's answer).
            self.rwnd = seg.wnd;
        }
        if self.cc.is_duplicate(duplicate, new_sack) {
            self.on_dupack(now);
        }
    }

    fn on_dupack(&mut self, now: Instant) {
        self.stats.dupacks_received += 1;
        if let Some(LossAction::FastRetransmit { go_back_n }) =
            self.cc.on_dupack(now, self.snd_una, self.snd_max)
        {
            self.stats.fast_retransmits += 1;
            if go_back_n {
                self.snd_nxt = self.snd_una;
            }
            self.quic_loss(now, self.snd_una);
            self.pending = Some(TxKind::FastRetransmit);
            self.timer = Some((now + self.rtt.rto(), Timer::Retransmit));
        }
    }

    fn on_rto(&mut self, now: Instant) {
        self.stats.timeouts += 1;
        if let Some(r) = self.rack.as_deref_mut() {
            r.on_rto();
        }
        // RFC 6298 (5.5): "The host MUST set RTO <- RTO * 2".
        self.rtt.on_timeout();
        self.timing = None;
        if self.phase == Phase::SynSent {
            self.syn_retransmitted = true;
            self.pending = Some(TxKind::TimeoutRetransmit);
        } else {
            if self.snd_una == self.snd_max {
                return;
            }
            self.arm_undo(now);
            self.cc.on_timeout(now, self.snd_una, self.snd_max);
            if let Some(q) = self.quic.as_deref_mut() {
                // Nothing acknowledged for an RTO: RFC 9002's persistent
                // congestion, the minimum window.
                q.on_congestion_event(now, now, true);
            }
            // RFC 6298 (5.4): "Retransmit the earliest segment that has not
            // been acknowledged by the TCP receiver"; the rest follows in slow
            // start from SND.UNA (go-back-N), as in BSD and ns-2.
            self.snd_nxt = self.snd_una;
            self.pending = Some(TxKind::TimeoutRetransmit);
        }
        // RFC 6298 (5.6): "Start the retransmission timer, such that it
        // expires after RTO seconds (for the value of RTO after the doubling
        // operation outlined in 5.5)."
        self.timer = Some((now + self.rtt.rto(), Timer::Retransmit));
    }

    /// Before a timeout's cut: what an undo would restore. Linux arms it
    /// where it cuts ssthresh (`tcp_enter_loss`, `tcp_init_undo`): not in
    /// recovery, and once per run of timeouts (the first retransmission's
    /// stamp is the one an echo must precede). A model-based control keeps
    /// its own state across a loss, so only the window-based ones arm it.
    fn arm_undo(&mut self, now: Instant) {
        if !self.timestamps
            || self.model
            || self.quic.is_some()
            || self.cc.in_recovery()
            || self.cc.timed_out()
        {
            return;
        }
        let cwnd = self.cc.cwnd();
        self.undo = Some(Box::new(TimeoutUndo {
            retrans_ts: ts_clock(now),
            snd_max: self.snd_max,
            prior_cwnd: cwnd,
            // `tcp_current_ssthresh` outside recovery.
            prior_ssthresh: self.cc.ssthresh().max(cwnd / 2 + cwnd / 4),
            prior_recover: self.cc.recover(),
        }));
    }

    /// The first ACK of new data after a timeout: if it echoes a timestamp
    /// from before the retransmission, the original arrived and the
    /// timeout was spurious. Linux then undoes it (`tcp_try_undo_loss`):
    /// cwnd and ssthresh back (`tcp_undo_cwnd_reduction`), and the data the
    /// timeout marked lost unmarked, so nothing more is resent (here: the
    /// go-back-N resumes at the original SND.MAX).
    fn undo_if_spurious(&mut self, u: &TimeoutUndo, seg: &Segment) {
        let Some(ts) = seg.ts else { return };
        if (u.retrans_ts.wrapping_sub(ts.ecr) as i32) <= 0 {
            return; // the retransmission's echo: the timeout was real
        }
        self.stats.spurious_timeouts += 1;
        self.cc
            .undo_timeout(u.prior_cwnd, u.prior_ssthresh, u.prior_recover);
        if self.snd_nxt.lt(u.snd_max) {
            self.snd_nxt = u.snd_max;
        }
        if self.pending == Some(TxKind::TimeoutRetransmit) {
            self.pending = None;
        }
    }

    // ---- output -------------------------------------------------------------

    fn segment(&self, seq: Seq, len: u32, flags: Flags) -> Segment {
        Segment {
            flow: self.flow,
            seq,
            ack: self.rcv_nxt,
            flags,
            len,
            hdr_len: self.hdr_len,
            wnd: SENDER_RWND,
            sack: SackBlocks::new(),
            ts: self.timestamps.then_some(Timestamps {
                val: self.ts_clock,
                ecr: 0,
            }),
        }
    }

    /// Total data bytes the application offers.
    fn data_len(&self) -> u64 {
        match self.app {
            AppSource::Bulk => u64::MAX,
            AppSource::Finite(n) | AppSource::Open(n) => n,
        }
    }

    /// Stream offset of `s` (valid within 2^31 of SND.UNA).
    fn off(&self, s: Seq) -> u64 {
        self.una_off
            .saturating_add_signed(s.diff(self.snd_una) as i64)
    }

    /// The data (or FIN) segment starting at `seq`, at most `limit` bytes.
    fn segment_at(&self, seq: Seq, limit: u64) -> Segment {
        let off = self.off(seq);
        let total = self.data_len();
        if off >= total {
            return self.segment(seq, 0, Flags::ACK | Flags::FIN);
        }
        let len = (total - off).min(self.mss as u64).min(limit) as u32;
        self.segment(seq, len, Flags::ACK)
    }

    /// The segment at SND.UNA, for a retransmission: never new data, and
    /// never data the receiver has SACKed.
    fn retransmission(&self) -> Segment {
        let outstanding = self.snd_max.bytes_since(self.snd_una) as u64;
        let hole = match self.cc.next_unsacked(self.snd_una).1 {
            Some(sacked) => sacked.bytes_since(self.snd_una) as u64,
            None => outstanding,
        };
        self.segment_at(self.snd_una, hole.max(1))
    }

    /// During SACK recovery: the segment NextSeg() chooses, if
    /// `cwnd - pipe` allows one (RFC 6675 C.1).
    fn next_sack_segment(&self) -> Result<(Segment, TxKind), Stop> {
        if !self.cc.sack_room(self.snd_una, self.snd_max) {
            return Err(Stop::Held);
        }
        // New data is offered to NextSeg() if the receiver's window (alone:
        // pipe stands in for cwnd) and max_burst allow a segment.
        let new = self.next_in_window((self.rwnd as u64).min(self.sndbuf));
        // Nothing to resend: the stop is new data's, a window (rwnd,
        // sndbuf) as often as an empty buffer. Only the latter is an
        // application limit (`tcp_rate_check_app_limited`).
        let next = self
            .cc
            .next_seg_with_room(self.snd_una, self.snd_max, new.is_ok())
            .ok_or(new.as_ref().err().copied().unwrap_or(Stop::Drained))?;
        match next {
            NextSeg::NewData => new,
            NextSeg::Retransmit { seq, end } => Ok((
                self.segment_at(seq, end.bytes_since(seq) as u64),
                TxKind::SackRetransmit,
            )),
            NextSeg::Rescue { seq, end } => Ok((
                self.segment_at(seq, end.bytes_since(seq) as u64),
                TxKind::RescueRetransmit,
            )),
        }
    }

    /// `tcp_rate_check_app_limited` as `tcp_sendmsg` calls it: less than a
    /// segment written and unsent (paced data waits unsent, as in Linux's
    /// write queue; the simulator has no host qdisc), in flight below cwnd
    /// and no segment found lost waiting to be resent: the sender ran dry
    /// before this write, so the rounds sent from here are the
    /// application's.
    fn check_app_limited_at_write(&mut self) {
        let written = match self.app {
            AppSource::Open(n) | AppSource::Finite(n) => n,
            AppSource::Bulk => return,
        };
        if written.saturating_sub(self.off(self.snd_nxt)) >= self.mss as u64 {
            return;
        }
        let lost_unsent = self.pending.is_some()
            || (self.cc.in_sack_recovery()
                && matches!(
                    self.cc
                        .next_seg_with_room(self.snd_una, self.snd_max, false),
                    Some(NextSeg::Retransmit { .. })
                ));
        let inflight = self.inflight();
        self.cc.rate_check_app_limited(inflight, lost_unsent);
    }

    /// What [`Self::next_in_window`] answers as `Drained` for an open
    /// stream whose written bytes are all sent, without its window and
    /// scoreboard work (most drains of split end's senders end here).
    /// SND.NXT at the end of what is written is SND.MAX (nothing past it
    /// is ever sent), and no SACKed range lies above SND.MAX (the
    /// scoreboard clips them to it), so that walk would stay at SND.NXT
    /// and stop there. Debug builds check it against the walk.
    #[inline]
    fn all_written_sent(&self) -> bool {
        let AppSource::Open(written) = self.app else {
            return false;
        };
        let drained = self.burst_left != Some(0) && self.off(self.snd_nxt) >= written;
        debug_assert!(
            !drained || matches!(self.next_in_window(self.send_window()), Err(Stop::Drained))
        );
        drained
    }

    /// After a segment from [`Self::next_in_window`] (outside SACK recovery,
    /// unpaced): what the next poll would answer, if it is a stop, so that
    /// it answers at once (most polls after a send end held by the window
    /// or drained). `on_sent` changes neither cwnd, the limited-transmit
    /// allowance, rwnd nor sndbuf, so the window is still `wnd`; and it
    /// leaves the retransmission timer running, so the stop's
    /// `maybe_arm_persist` would do nothing. The answer is
    /// [`Self::window_limit`]'s, which `next_in_window` asks too; test
    /// builds check every idle poll against a full one.
    #[inline(always)]
    fn idle_after_send(&self, wnd: u64) -> Idle {
        debug_assert_eq!(wnd, self.send_window());
        debug_assert!(self.timer.is_some() && !self.cc.in_sack_recovery());
        match self.window_limit(wnd) {
            Ok(_) => Idle::No,
            Err(Stop::Held) => Idle::Held,
            Err(Stop::Drained) => Idle::Drained,
        }
    }

    /// The next segment at SND.NXT (past any SACKed data) that a window of
    /// `wnd` bytes allows.
    fn next_in_window(&self, wnd: u64) -> Result<(Segment, TxKind), Stop> {
        let (seq, limit, fin) = self.window_limit(wnd)?;
        let seg = self.segment_at(seq, limit);
        let kind = if seq.lt(self.snd_max) {
            TxKind::GoBackN
        } else if fin {
            TxKind::Fin
        } else {
            TxKind::New
        };
        Ok((seg, kind))
    }

    /// Where [`Self::next_in_window`]'s segment starts, how long it may be
    /// and whether it is the FIN, or why nothing may be sent, without
    /// building the segment.
    #[inline(always)]
    fn window_limit(&self, wnd: u64) -> Result<(Seq, u64, bool), Stop> {
        if self.burst_left == Some(0) {
            return Err(Stop::Held);
        }
        let (seq, sacked) = self.cc.next_unsacked(self.snd_nxt);
        let total = self.data_len();
        let off = self.off(seq);
        if off > total {
            return Err(Stop::Drained); // the FIN has been sent
        }
        let fin = off == total;
        if fin && matches!(self.app, AppSource::Open(_)) {
            // Everything written is sent; the stream stays open.
            return Err(Stop::Drained);
        }
        let flight = seq.bytes_since(self.snd_una) as u64;
        let mut full = if fin {
            1
        } else {
            (total - off).min(self.mss as u64)
        };
        if let Some(s) = sacked {
            // A go-back-N resend stops where SACKed data starts.
            full = full.min(s.bytes_since(seq) as u64);
        }
        let limit = if flight + full <= wnd {
            full
        } else if flight == 0 && wnd > 0 && !fin {
            // RFC 1122 4.2.3.4: with nothing outstanding, send what a small
            // receiver window allows rather than wait for a full segment.
            wnd
        } else {
            // More data only makes `full` larger (a `fin` here is a
            // finite source's, which `write` does not change).
            return Err(Stop::Held);
        };
        Ok((seq, limit, fin))
    }

    /// Bookkeeping for a segment handed to the driver.
    fn on_sent(&mut self, now: Instant, seg: &Segment, kind: TxKind) {
        if kind == TxKind::WindowProbe {
            self.stats.window_probes += 1;
            return;
        }
        if self.model && self.phase == Phase::Established {
            let retrans = kind.is_retransmission();
            // Every resend but a tail loss probe repairs a segment found lost.
            let lost = retrans && kind != TxKind::TailLossProbe;
            self.cc
                .rate_on_sent(now, seg.seq, seg.end_seq(), retrans, lost);
        }
        if self.pacer.is_some() {
            self.pace(now, seg);
        }
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += seg.len as u64;
        self.cc.on_transmit(seg.len);
        let end = seg.end_seq();
        if kind.is_retransmission() {
            self.stats.retransmitted_segments += 1;
            self.stats.retransmitted_bytes += seg.len as u64;
            let rescue = kind == TxKind::RescueRetransmit;
            self.cc.on_retransmit(seg.seq, end, rescue);
            if matches!(kind, TxKind::SackRetransmit | TxKind::RescueRetransmit) {
                self.stats.sack_retransmits += 1;
            }
            // Karn: nothing sent before this may be timed any more.
            self.timing = None;
        } else if matches!(kind, TxKind::New | TxKind::Fin) {
            if seg.seq == self.snd_max {
                self.cc.on_new_data(seg.seq, end);
            }
            if self.timing.is_none() {
                self.timing = Some((end, now));
            }
        }
        if matches!(kind, TxKind::New | TxKind::GoBackN | TxKind::Fin) {
            if let Some(b) = self.burst_left.as_mut() {
                *b -= 1;
            }
            self.persist_backoff = 0;
        }
        if end.gt(self.snd_nxt) {
            self.snd_nxt = end;
        }
        if end.gt(self.snd_max) {
            self.snd_max = end;
        }
        // RFC 6298 (5.1): "Every time a packet containing data is sent
        // (including a retransmission), if the timer is not running, start
        // it running so that it will expire after RTO seconds".
        if !matches!(self.timer, Some((_, Timer::Retransmit))) {
            self.timer = Some((now + self.rtt.rto(), Timer::Retransmit));
        }
        if self.rack.is_some() {
            self.rack_on_sent(now, seg, kind);
        }
    }

    /// `min(cwnd + inflation, rwnd, sndbuf)`: what may be outstanding.
    #[inline]
    /// What may be outstanding: cwnd (with recovery inflation and the
    /// limited-transmit allowance), the receiver's window and the send buffer.
    fn send_window(&self) -> u64 {
        (self.cc.window() + self.limited_transmit_allowance())
            .min(self.rwnd as u64)
            .min(self.sndbuf)
    }

    /// Whether `poll_transmit` would send something now (pacing aside).
    fn wants_to_send(&self) -> bool {
        self.pending.is_some()
            || if self.cc.in_sack_recovery() {
                self.next_sack_segment().is_ok()
            } else {
                self.next_in_window(self.send_window()).is_ok()
            }
    }

    #[cold]
    fn pace(&mut self, now: Instant, seg: &Segment) {
        let end = seg.end_seq().max(self.snd_nxt);
        // The usable window, not cwnd alone: here cwnd keeps growing while
        // rwnd or sndbuf limit the flow (Linux's does not: tcp_is_cwnd_limited).
        let r = RateInputs {
            cwnd: self.cc.cwnd().min(self.rwnd as u64).min(self.sndbuf),
            ssthresh: self.cc.ssthresh(),
            flight: end.bytes_since(self.snd_una) as u64,
            srtt: self.rtt.srtt(),
            model_rate: self.cc.pacing_rate(),
        };
        if let Some(p) = self.pacer.as_mut() {
            p.on_sent(now, seg.wire_len(), r);
        }
    }

    /// Hands the ACK's SACK blocks to the scoreboard (after SND.UNA has
    /// moved); true if they SACKed new data.
    #[inline]
    fn read_sack(&mut self, seg: &Segment) -> bool {
        self.cc.uses_sack()
            && self
                .cc
                .on_sack(self.snd_una, self.snd_max, seg.sack.as_slice())
    }

    /// RFC 3042: "a TCP sender SHOULD send a segment of previously unsent
    /// data in response to each of the first two duplicate ACKs" (ns-2:
    /// `t_seqno_ <= highest_ack_ + cwnd_ + dupacks_`).
    fn limited_transmit_allowance(&self) -> u64 {
        let s = self.cc.state();
        if !self.limited_transmit || s.in_recovery || s.dupacks >= s.dupack_threshold {
            return 0;
        }
        s.dupacks as u64 * self.mss as u64
    }

    /// Feeds an RTT sample (a segment sent at `sent`, answered at `now`) to
    /// the estimator and the congestion controller.
    fn rtt_sample(&mut self, now: Instant, sent: Instant) {
        let sample = now - sent;
        self.rtt.on_sample_at(sample, sent);
        let srtt = self.rtt.srtt().unwrap_or(sample);
        self.cc.on_rtt_sample(sample, srtt);
    }

    fn maybe_arm_persist(&mut self, now: Instant) {
        let has_unsent = self.off(self.snd_nxt) <= self.data_len();
        if self.timer.is_none()
            && self.phase == Phase::Established
            && self.snd_una == self.snd_max
            && self.rwnd == 0
            && has_unsent
        {
            // RFC 9293 3.8.6.1: "The transmitting host SHOULD send the first
            // zero-window probe when a zero window has existed for the
            // retransmission timeout period [...] and SHOULD increase
            // exponentially the interval between successive probes".
            self.timer = Some((now + self.persist_interval(), Timer::Persist));
        }
    }

    fn persist_interval(&self) -> Duration {
        let max = self.rtt.config().max_rto;
        let mut d = self.rtt.rto();
        for _ in 0..self.persist_backoff {
            d = d * 2;
            if d >= max {
                break;
            }
        }
        d.min(max)
    }
}

/// The timestamps option's clock: microseconds, wrapping.
pub(super) fn ts_clock(now: Instant) -> u32 {
    (now.0 / 1000) as u32
}
