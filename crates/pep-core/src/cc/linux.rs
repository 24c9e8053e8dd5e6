//! Window growth as the Linux kernel runs it (`net/ipv4/tcp_cong.c`):
//! the `linux` profile's Reno and, with `cubic_linux.rs`, its CUBIC.
//!
//! The kernel counts its window in packets and opens it by the packets an
//! ACK delivered, not by one segment per ACK (RFC 5681) or by at most `L`
//! segments (RFC 3465):
//!
//! * `tcp_slow_start`: `cwnd = min(cwnd + acked, ssthresh)`; what the ACK
//!   delivered beyond ssthresh goes on to congestion avoidance. With a
//!   delayed-ACK receiver this doubles cwnd per round, where one segment
//!   per ACK grows it by 1.5.
//! * `tcp_cong_avoid_ai(w)`: `snd_cwnd_cnt` collects delivered packets and
//!   cwnd grows by one per `w` of them (Reno: `w = cwnd`; CUBIC: its
//!   `cnt`).
//! * `tcp_reno_ssthresh`: `max(cwnd / 2, 2)` packets, from cwnd (RFC 5681
//!   halves FlightSize).
//!
//! ## What stays ours
//! `acked` is the new bytes an ACK covers in whole segments (rounded up),
//! where the kernel counts packets newly delivered including SACKed ones;
//! outside recovery the two agree. Every ACK counts as cwnd-limited
//! (`tcp_is_cwnd_limited` is not modelled: the sender's hold on growth
//! covers application-limited periods). cwnd moved by the recovery axis
//! (PRR, in bytes) is read back in whole packets.

use super::cubic_linux::{CubicLinux, CubicLinuxView};
use super::CcState;
use crate::seq::Seq;
use crate::time::{Duration, Instant};

/// Which of the kernel's congestion controls.
#[derive(Clone, Debug)]
enum Module {
    /// `tcp_reno_cong_avoid` / `tcp_reno_ssthresh`.
    Reno,
    Cubic(CubicLinux),
}

/// What the kernel's growth currently believes, for traces and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinuxView {
    /// `snd_cwnd_cnt`: packets delivered towards the next increment.
    pub cwnd_cnt: u32,
    /// `tcp_cubic`'s state; `None` for Reno.
    pub cubic: Option<CubicLinuxView>,
}

/// One connection's kernel growth: the shared `snd_cwnd_cnt` and the
/// module's private state.
#[derive(Clone, Debug)]
pub(super) struct Linux {
    cwnd_cnt: u32,
    module: Module,
}

impl Linux {
    pub(super) fn reno() -> Self {
        Linux {
            cwnd_cnt: 0,
            module: Module::Reno,
        }
    }

    pub(super) fn cubic() -> Self {
        Linux {
            cwnd_cnt: 0,
            module: Module::Cubic(CubicLinux::new()),
        }
    }

    pub(super) fn is_cubic(&self) -> bool {
        matches!(self.module, Module::Cubic(_))
    }

    pub(super) fn view(&self) -> LinuxView {
        LinuxView {
            cwnd_cnt: self.cwnd_cnt,
            cubic: match &self.module {
                Module::Reno => None,
                Module::Cubic(c) => Some(c.view()),
            },
        }
    }

    /// `cong_avoid` for an ACK at `now` of `acked` new bytes outside
    /// recovery.
    pub(super) fn on_ack(&mut self, now: Instant, s: &mut CcState, acked: u32) {
        let smss = s.smss.max(1) as u64;
        let pkts = acked.div_ceil(s.smss.max(1));
        let before = packets(s.cwnd, smss);
        let mut cwnd = before;
        if let Module::Cubic(c) = &mut self.module {
            // `pkts_acked` comes before `cong_avoid`: HyStart may end slow
            // start at this cwnd.
            if c.hystart(now, before, packets(s.ssthresh, smss)) {
                s.ssthresh = before as u64 * smss;
            }
        }
        let ssthresh = packets(s.ssthresh, smss);
        let mut acked = pkts;
        if cwnd < ssthresh {
            acked = slow_start(&mut cwnd, ssthresh, acked);
        }
        if acked > 0 {
            let w = match &mut self.module {
                Module::Reno => cwnd,
                Module::Cubic(c) => c.update(now, cwnd, acked),
            };
            cong_avoid_ai(&mut cwnd, &mut self.cwnd_cnt, w, acked);
        }
        if cwnd != before {
            s.cwnd = cwnd as u64 * smss;
        }
    }

    /// An ACK's RTT sample with its ACK number and SND.NXT, before
    /// [`Linux::on_ack`] for the same ACK (CUBIC's HyStart).
    pub(super) fn on_ack_rtt(&mut self, rtt: Duration, ack: Seq, snd_nxt: Seq) {
        if let Module::Cubic(c) = &mut self.module {
            c.on_ack_rtt(rtt, ack, snd_nxt);
        }
    }

    /// A round-trip time sample (CUBIC's `delay_min`).
    pub(super) fn on_rtt_sample(&mut self, rtt: Duration) {
        if let Module::Cubic(c) = &mut self.module {
            c.on_rtt_sample(rtt);
        }
    }

    /// The module's `ssthresh` on a loss, in bytes.
    pub(super) fn loss_ssthresh(&mut self, s: &CcState) -> u64 {
        let smss = s.smss.max(1) as u64;
        let cwnd = packets(s.cwnd, smss);
        let pkts = match &mut self.module {
            Module::Reno => (cwnd >> 1).max(2),
            Module::Cubic(c) => c.recalc_ssthresh(cwnd),
        };
        pkts as u64 * smss
    }

    /// `tcp_enter_loss`: ssthresh as for a loss, then the module's state is
    /// reset (`set_state(TCP_CA_Loss)`).
    pub(super) fn timeout_ssthresh(&mut self, s: &CcState) -> u64 {
        let ssthresh = self.loss_ssthresh(s);
        self.enter_loss();
        ssthresh
    }

    /// `tcp_set_ca_state(TCP_CA_Loss)`: CUBIC forgets its curve
    /// (`bictcp_state`), whether or not ssthresh is cut.
    pub(super) fn enter_loss(&mut self) {
        if let Module::Cubic(c) = &mut self.module {
            *c = CubicLinux::new();
        }
    }

    /// cwnd was reduced: `tcp_init_cwnd_reduction` and `tcp_enter_loss`
    /// clear `snd_cwnd_cnt`.
    pub(super) fn on_congestion(&mut self) {
        self.cwnd_cnt = 0;
    }
}

/// Bytes to whole packets, saturating at the kernel's `u32`.
fn packets(bytes: u64, smss: u64) -> u32 {
    (bytes / smss).min(u32::MAX as u64) as u32
}

/// `tcp_slow_start`: opens `cwnd` by `acked` packets up to `ssthresh`;
/// returns the packets left for congestion avoidance.
pub fn slow_start(cwnd: &mut u32, ssthresh: u32, acked: u32) -> u32 {
    let next = cwnd.saturating_add(acked).min(ssthresh).max(*cwnd);
    let left = acked - (next - *cwnd);
    *cwnd = next;
    left
}

/// `tcp_cong_avoid_ai`: one packet of cwnd per `w` packets delivered,
/// counted in `cnt` (`snd_cwnd_cnt`).
pub fn cong_avoid_ai(cwnd: &mut u32, cnt: &mut u32, w: u32, acked: u32) {
    let w = w.max(1);
    // "If credits accumulated at a higher w, apply them gently now."
    if *cnt >= w {
        *cnt = 0;
        *cwnd = cwnd.saturating_add(1);
    }
    *cnt = cnt.saturating_add(acked);
    if *cnt >= w {
        let delta = *cnt / w;
        *cnt -= delta * w;
        *cwnd = cwnd.saturating_add(delta);
    }
}
