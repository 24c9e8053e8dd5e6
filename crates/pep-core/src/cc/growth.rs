//! Window growth: how cwnd opens on ACKs of new data outside recovery, and
//! the ssthresh a loss sets (ns-3's `GetSsThresh` belongs to this axis:
//! CUBIC's beta and Westwood+'s bandwidth estimate are growth properties).

use alloc::boxed::Box;

use super::bbr::{Bbr, BbrConn, BbrView};
use super::bbr_window::BbrWindow;
use super::cubic::{Cubic, CubicConfig, CubicView};
use super::cubic_flows::{CubicFlows, CubicFlowsView};
use super::cubic_ns2::{CubicNs2, CubicNs2View};
use super::linux::{Linux, LinuxView};
use super::westwood::{Westwood, WestwoodView};
use super::CcState;
use crate::time::{Duration, Instant};

/// Window growth algorithm (configuration). Closed set: add a variant per
/// algorithm, its state to [`GrowthState`], and a file beside this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Growth {
    /// RFC 5681 slow start (eq. 2) and congestion avoidance (eq. 3); a loss
    /// sets `ssthresh = max(FlightSize/2, 2*SMSS)` (eq. 4).
    Reno {
        /// RFC 3465 appropriate byte counting with limit `L` segments
        /// (RFC 3465 recommends L = 2): slow start opens by
        /// `min(bytes_acked, L*SMSS)` per ACK and congestion avoidance by
        /// one SMSS per cwnd of bytes acknowledged. `None`: RFC 5681's
        /// per-ACK rules, as ns-2 does.
        abc: Option<u32>,
        /// How congestion avoidance rounds and how a loss sets ssthresh.
        unit: WindowUnit,
    },
    /// CUBIC (RFC 9438): cubic growth in time since the last reduction,
    /// `beta = 0.7`, Reno-friendly region, fast convergence.
    Cubic(CubicConfig),
    /// CUBIC v2.1 as ns-2.35's `Agent/TCP/Linux` runs it (Linux 2.6.22.6's
    /// `tcp_cubic.c`, `cubic_ns2.rs`): `beta = 819/1024`, growth in whole
    /// packets per `cnt` ACKs, no timestamps. What the Gschwandtner
    /// thesis's tunnel ran.
    CubicNs2,
    /// Westwood+ (Mascolo et al.; Linux `tcp_westwood.c`): Reno growth, but a
    /// loss sets `ssthresh = max(BWE * RTTmin, 2*SMSS)` from a low-pass
    /// filtered estimate of the bandwidth the ACK stream reports.
    Westwood,
    /// CUBIC that backs off as the N flows a tunnel carries would
    /// (`cubic_flows.rs`): a congestion event cuts by `(N - 1 + 0.7) / N`,
    /// a loss that ends slow start by half. The daemon's default tunnel
    /// congestion control; N comes from [`super::Congestion::set_flows`].
    CubicFlows,
    /// Reno as the Linux kernel runs it (`linux.rs`, `tcp_cong.c`): slow
    /// start opens by every packet acknowledged up to ssthresh, congestion
    /// avoidance by one packet per cwnd delivered, ssthresh = cwnd / 2.
    RenoLinux,
    /// CUBIC as the Linux kernel runs it (`cubic_linux.rs`, `tcp_cubic.c`
    /// over `linux.rs`'s slow start): `beta = 717/1024`, integer curve in
    /// jiffies, `W(t + delay_min)`.
    CubicLinux,
    /// BBR v1 (`bbr.rs`, Linux's `tcp_bbr.c`): not a loss-driven growth
    /// rule but a model of the path that sets cwnd and the pacing rate on
    /// every ACK from a delivery-rate sample. It sits on this axis so that
    /// configurations name it like the others; the transport feeds it
    /// through [`super::Congestion`]'s `rate_*` methods, and the growth
    /// hooks here only save its cwnd on a loss.
    Bbr,
    /// The daemon's tunnel BBR (`tunnel.cc = "bbr"`, [`super::QuicBbr`])
    /// for a TCP transport, the simulator's split-pair tunnel: the same
    /// [`Bbr`] fed the same way as [`Growth::Bbr`], but its cwnd is the
    /// tunnel's window rule ([`super::BbrWindow`], `bbr_window.rs`), the
    /// sender paces at quinn's 1.25 x window / smoothed RTT, and losses
    /// never put the model in recovery (quinn tells BBR none either).
    TunnelBbr,
}

impl Default for Growth {
    fn default() -> Self {
        Growth::Reno {
            abc: None,
            unit: WindowUnit::Bytes,
        }
    }
}

/// The unit Reno growth counts its window in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WindowUnit {
    /// RFC 5681 in bytes: `cwnd += SMSS*SMSS/cwnd` truncated to whole bytes,
    /// `ssthresh = max(FlightSize/2, 2*SMSS)`.
    #[default]
    Bytes,
    /// ns-2's `cwnd_` in packets (a double): slow start adds one packet
    /// per new ACK whatever it acknowledges, congestion avoidance adds
    /// exactly `1/cwnd` packet per ACK (the byte remainder is carried, not
    /// truncated), and a loss sets `ssthresh = max(floor(W/2), 2)` packets
    /// with `W = floor(min(cwnd, FlightSize))` packets (ns-2's `slowdown`
    /// with `window() = min(cwnd_, window_)`).
    Packets,
}

/// What a growth algorithm currently believes, for traces and tests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GrowthView {
    Reno,
    Cubic(CubicView),
    CubicNs2(CubicNs2View),
    Westwood(WestwoodView),
    CubicFlows(CubicFlowsView),
    Bbr(BbrView),
    Linux(LinuxView),
}

/// A growth algorithm with its per-connection state.
#[derive(Clone, Debug)]
pub(super) enum GrowthState {
    Reno {
        /// ABC limit in segments, if byte counting is on.
        abc: Option<u32>,
        unit: WindowUnit,
        /// RFC 3465's `bytes_acked`: bytes acknowledged in congestion
        /// avoidance not yet turned into window; with packet windows, the
        /// remainder of `SMSS*SMSS/cwnd` not yet added.
        bytes_acked: u64,
    },
    /// Boxed (allocated once per connection) so that Reno flows stay small.
    Cubic(Box<Cubic>),
    CubicNs2(Box<CubicNs2>),
    Westwood(Box<Westwood>),
    CubicFlows(Box<CubicFlows>),
    Bbr(Box<BbrConn>),
    Linux(Box<Linux>),
}

impl GrowthState {
    /// `smss` and `cwnd` (bytes) are the connection's, for BBR's model.
    pub(super) fn new(cfg: Growth, smss: u32, cwnd: u64) -> Self {
        match cfg {
            Growth::Reno { abc, unit } => GrowthState::Reno {
                abc,
                unit,
                bytes_acked: 0,
            },
            Growth::Cubic(c) => GrowthState::Cubic(Box::new(Cubic::new(c))),
            Growth::CubicNs2 => GrowthState::CubicNs2(Box::new(CubicNs2::new())),
            Growth::Westwood => GrowthState::Westwood(Box::new(Westwood::new())),
            Growth::CubicFlows => GrowthState::CubicFlows(Box::new(CubicFlows::new())),
            Growth::RenoLinux => GrowthState::Linux(Box::new(Linux::reno())),
            Growth::CubicLinux => GrowthState::Linux(Box::new(Linux::cubic())),
            Growth::Bbr | Growth::TunnelBbr => {
                let mut bbr = Bbr::new(smss, cwnd, 0);
                let window =
                    (cfg == Growth::TunnelBbr).then(|| BbrWindow::new(smss as u64, &mut bbr));
                GrowthState::Bbr(Box::new(BbrConn {
                    bbr,
                    rate: Default::default(),
                    in_loss: false,
                    window,
                }))
            }
        }
    }

    pub(super) fn config(&self) -> Growth {
        match self {
            GrowthState::Reno { abc, unit, .. } => Growth::Reno {
                abc: *abc,
                unit: *unit,
            },
            GrowthState::Cubic(c) => Growth::Cubic(c.config()),
            GrowthState::CubicNs2(_) => Growth::CubicNs2,
            GrowthState::Westwood(_) => Growth::Westwood,
            GrowthState::CubicFlows(_) => Growth::CubicFlows,
            GrowthState::Bbr(b) if b.window.is_some() => Growth::TunnelBbr,
            GrowthState::Bbr(_) => Growth::Bbr,
            GrowthState::Linux(l) if l.is_cubic() => Growth::CubicLinux,
            GrowthState::Linux(_) => Growth::RenoLinux,
        }
    }

    pub(super) fn view(&self) -> GrowthView {
        match self {
            GrowthState::Reno { .. } => GrowthView::Reno,
            GrowthState::Cubic(c) => GrowthView::Cubic(c.view()),
            GrowthState::CubicNs2(c) => GrowthView::CubicNs2(c.view()),
            GrowthState::Westwood(w) => GrowthView::Westwood(w.view()),
            GrowthState::CubicFlows(c) => GrowthView::CubicFlows(c.view()),
            GrowthState::Bbr(b) => GrowthView::Bbr(b.bbr.view()),
            GrowthState::Linux(l) => GrowthView::Linux(l.view()),
        }
    }

    /// An ACK of `acked` new bytes arrived outside loss recovery.
    pub(super) fn on_ack(&mut self, now: Instant, s: &mut CcState, acked: u32) {
        match self {
            GrowthState::Reno {
                abc,
                unit,
                bytes_acked,
            } => reno_on_ack(s, *abc, *unit, bytes_acked, acked as u64),
            GrowthState::Cubic(c) => c.on_ack(now, s, acked),
            GrowthState::CubicNs2(c) => c.on_ack(now, s, acked),
            GrowthState::Westwood(_) => {
                reno_on_ack(s, None, WindowUnit::Bytes, &mut 0, acked as u64)
            }
            GrowthState::CubicFlows(c) => c.on_ack(now, s, acked as u64),
            GrowthState::Linux(l) => l.on_ack(now, s, acked),
            // BBR sets cwnd from its rate sample (`Congestion::rate_on_ack`).
            GrowthState::Bbr(_) => {}
        }
    }

    /// An ACK of new data up to `ack` carried an RTT sample; SND.NXT is
    /// `snd_nxt` (the kernel CUBIC's HyStart).
    pub(super) fn on_ack_rtt(
        &mut self,
        rtt: Duration,
        ack: crate::seq::Seq,
        snd_nxt: crate::seq::Seq,
    ) {
        if let GrowthState::Linux(l) = self {
            l.on_ack_rtt(rtt, ack, snd_nxt);
        }
    }

    /// Flows open on the connection (a tunnel's): cubic-flows' N.
    pub(super) fn set_flows(&mut self, flows: u32) {
        if let GrowthState::CubicFlows(c) = self {
            c.set_flows(flows);
        }
    }

    /// Any ACK of new data (in recovery or not) acknowledged `acked` bytes.
    pub(super) fn on_delivered(&mut self, now: Instant, s: &CcState, acked: u32) {
        match self {
            GrowthState::Westwood(w) => w.on_ack(now, s, acked as u64, false),
            GrowthState::CubicNs2(c) => c.on_delivered(s, acked),
            GrowthState::CubicFlows(c) => c.saw_ack(now),
            _ => {}
        }
    }

    /// A duplicate ACK arrived.
    pub(super) fn on_dupack(&mut self, now: Instant, s: &CcState) {
        match self {
            GrowthState::Westwood(w) => w.on_ack(now, s, 0, true),
            GrowthState::CubicFlows(c) => c.saw_ack(now),
            _ => {}
        }
    }

    /// The transport measured one round-trip time.
    pub(super) fn on_rtt_sample(&mut self, rtt: Duration) {
        match self {
            GrowthState::Westwood(w) => w.on_rtt_sample(rtt),
            GrowthState::Linux(l) => l.on_rtt_sample(rtt),
            _ => {}
        }
    }

    /// Duplicate ACKs detected a loss with `flight` bytes outstanding:
    /// the new ssthresh.
    pub(super) fn loss_ssthresh(&mut self, s: &CcState, flight: u64) -> u64 {
        match self {
            GrowthState::Reno { unit, .. } => unit_ssthresh(s, *unit, flight),
            GrowthState::Cubic(c) => c.on_loss(s, flight),
            GrowthState::CubicNs2(c) => c.on_loss(s),
            GrowthState::Westwood(w) => w.ssthresh(s).unwrap_or(reno_ssthresh(s, flight)),
            GrowthState::CubicFlows(c) => c.on_loss_at_last_ack(s),
            // `bbr_ssthresh`: save cwnd, keep ssthresh.
            GrowthState::Bbr(b) => b.bbr.save_cwnd(),
            GrowthState::Linux(l) => l.loss_ssthresh(s),
        }
    }

    /// A congestion event at `now` reported by a transport that groups
    /// losses itself (QUIC): the new ssthresh.
    pub(super) fn event_ssthresh(&mut self, now: Instant, s: &CcState, flight: u64) -> u64 {
        match self {
            GrowthState::CubicFlows(c) => c.on_loss(now, s),
            _ => self.loss_ssthresh(s, flight),
        }
    }

    /// The retransmission timer expired (first time for this SND.UNA) with
    /// `flight` bytes outstanding: the new ssthresh.
    pub(super) fn timeout_ssthresh(&mut self, now: Instant, s: &CcState, flight: u64) -> u64 {
        match self {
            GrowthState::Reno { unit, .. } => unit_ssthresh(s, *unit, flight),
            GrowthState::Cubic(c) => c.on_timeout(s, flight),
            GrowthState::CubicNs2(c) => c.on_timeout(s),
            GrowthState::Westwood(w) => {
                let t = w.ssthresh(s).unwrap_or(reno_ssthresh(s, flight));
                w.on_timeout();
                t
            }
            GrowthState::CubicFlows(c) => c.on_timeout(now, s),
            // `Congestion::on_timeout` tells BBR itself (`Bbr::on_rto`).
            GrowthState::Bbr(b) => b.bbr.ssthresh(),
            GrowthState::Linux(l) => l.timeout_ssthresh(s),
        }
    }

    /// cwnd or ssthresh were just reduced (fast retransmit or timeout).
    pub(super) fn on_congestion(&mut self) {
        match self {
            GrowthState::Reno { bytes_acked, .. } => *bytes_acked = 0,
            GrowthState::Linux(l) => l.on_congestion(),
            _ => {}
        }
    }
}

/// RFC 5681 eq. (4): `ssthresh = max (FlightSize / 2, 2*SMSS)`.
pub(super) fn reno_ssthresh(s: &CcState, flight: u64) -> u64 {
    (flight / 2).max(2 * s.smss as u64)
}

fn unit_ssthresh(s: &CcState, unit: WindowUnit, flight: u64) -> u64 {
    match unit {
        WindowUnit::Bytes => reno_ssthresh(s, flight),
        WindowUnit::Packets => {
            // ns-2 `slowdown`: "ssthresh_ = (int) halfwin" with halfwin =
            // int(window() / 2), then "if (ssthresh_ < 2) ssthresh_ = 2".
            let smss = s.smss as u64;
            let w = s.cwnd.min(flight) / smss;
            (w / 2).max(2) * smss
        }
    }
}

/// Slow start (RFC 5681 eq. 2, or RFC 3465 with limit `abc`) when
/// `cwnd < ssthresh`; true if it applied.
pub(super) fn slow_start(s: &mut CcState, abc: Option<u32>, acked: u64) -> bool {
    // RFC 5681 section 3.1: "The slow start algorithm is used when cwnd <
    // ssthresh, while the congestion avoidance algorithm is used when cwnd >
    // ssthresh. When cwnd and ssthresh are equal, the sender may use either".
    // We use congestion avoidance at equality.
    if s.cwnd >= s.ssthresh {
        return false;
    }
    // Eq. (2): "cwnd += min (N, SMSS)"; with RFC 3465, "the TCP sender
    // MAY increase cwnd by up to L*SMSS bytes" per ACK.
    let smss = s.smss as u64;
    let limit = abc.map_or(smss, |l| l as u64 * smss);
    s.cwnd = s.cwnd.saturating_add(acked.min(limit));
    true
}

fn reno_on_ack(
    s: &mut CcState,
    abc: Option<u32>,
    unit: WindowUnit,
    bytes_acked: &mut u64,
    acked: u64,
) {
    let smss = s.smss as u64;
    // ns-2 `opencwnd` in slow start: "cwnd_ += 1" on every new ACK, however
    // little it acknowledges (an ACK of part of a segment, as an ACK
    // regenerator sends, opens the window by a whole packet).
    let ss_acked = match (abc, unit) {
        (None, WindowUnit::Packets) => smss,
        _ => acked,
    };
    if slow_start(s, abc, ss_acked) {
        return;
    }
    match abc {
        None if unit == WindowUnit::Packets => {
            // ns-2 `opencwnd`: "cwnd_ += increase_num_ / cwnd_" in packets,
            // i.e. SMSS*SMSS/cwnd bytes with the remainder carried.
            let num = smss * smss + *bytes_acked;
            let cwnd = s.cwnd.max(1);
            *bytes_acked = num % cwnd;
            s.cwnd = s.cwnd.saturating_add(num / cwnd);
        }
        None => {
            // Eq. (3): "cwnd += SMSS*SMSS/cwnd" on each non-duplicate ACK.
            // "If the above formula yields 0, the result SHOULD be rounded
            // up to 1 byte."
            let inc = (smss * smss / s.cwnd.max(1)).max(1);
            s.cwnd = s.cwnd.saturating_add(inc);
        }
        Some(_) => {
            // RFC 3465 section 2.1: "When bytes_acked becomes greater than or
            // equal to the value of the congestion window, bytes_acked is
            // reduced by the value of cwnd. Next, cwnd is incremented by a
            // full-sized segment (SMSS)."
            *bytes_acked += acked;
            if *bytes_acked >= s.cwnd {
                *bytes_acked -= s.cwnd;
                s.cwnd = s.cwnd.saturating_add(smss);
            }
        }
    }
}
