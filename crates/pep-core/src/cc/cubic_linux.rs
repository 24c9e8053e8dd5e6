//! CUBIC as today's Linux runs it (`net/ipv4/tcp_cubic.c`, the kernel the
//! lab runs: 6.x, `CONFIG_HZ=250`, module defaults), which is not RFC
//! 9438's CUBIC (`cubic.rs`) nor the 2.6.22 code ns-2 carries
//! (`cubic_ns2.rs`):
//!
//! * `beta` is 717/1024 and ssthresh comes from cwnd:
//!   `max(cwnd * 717 / 1024, 2)` packets; fast convergence lowers `W_max`
//!   to `cwnd * (1024 + 717) / 2048`.
//! * cwnd grows by one packet per `cnt` packets delivered
//!   (`tcp_cong_avoid_ai`, `linux.rs`), with `cnt = cwnd / (target - cwnd)`
//!   recomputed at most once per jiffy, and only every `HZ / 32` jiffies
//!   while cwnd stands still. `cnt` is at least 2 (growth of at most 1.5x
//!   per round), and at most 20 before the first loss (5 % per round).
//! * The target is `W(t + delay_min)`: the time since the epoch started,
//!   in jiffies, plus the minimum RTT rounded up to jiffies; `t` and `K` in
//!   1/1024 s, the cube root by the kernel's table and one Newton step.
//! * The Reno-friendly estimate grows by one packet per
//!   `cwnd * 15 / 8` packets delivered (`beta_scale = 15`).
//! * A timeout resets the module (`bictcp_reset` on `TCP_CA_Loss`):
//!   `W_max`, `delay_min` and the epoch start again from nothing.
//!
//! * HyStart (`hystart_update`) in slow start from cwnd 16: the round's
//!   minimum of its first 8 RTT samples above `delay_min + clamp(delay_min
//!   / 8, 4 ms, 16 ms)` (delay), or ACKs no more than 2 ms apart for over
//!   half of `delay_min` plus the 1 ms cushion (ACK train; an unpaced
//!   socket halves the threshold), sets ssthresh to cwnd.
//!
//! ## What stays ours
//! RTT samples taken within a second of an epoch's start count for
//! `delay_min` (the kernel skips them; they can only lower the path's
//! minimum, which earlier samples have usually found); HyStart's rounds
//! start at the first sample rather than at connection set-up. The idle restart's epoch shift
//! (`CA_EVENT_TX_START`) and `undo_cwnd` are not modelled: the sender has
//! no idle restart and no undo.

use super::cubic_ns2::{curve_cnt, epoch_origin};
use crate::seq::Seq;
use crate::time::{Duration, Instant};

/// `BICTCP_BETA_SCALE`.
const BETA_SCALE: u32 = 1024;
/// The module parameter `beta` (717/1024, about 0.7).
pub const BETA: u32 = 717;
/// `CONFIG_HZ` of the lab's kernel: a jiffy is 4 ms.
const HZ: u32 = 250;
/// `BICTCP_HZ`: `t` and `K` count 1/1024 s (C = 0.4 is `bic_scale` 41,
/// in `cubic_ns2.rs`'s curve, which both versions share).
const BICTCP_HZ: u32 = 10;
/// `beta_scale = 8 * (1024 + beta) / 3 / (1024 - beta)` in `u32` (15).
const FRIENDLY_SCALE: u32 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);
/// The most `cnt` before the first loss: "increase cwnd 5% per RTT".
const CNT_NO_LOSS: u32 = 20;
/// `hystart_low_window`: HyStart acts from this cwnd on.
const HYSTART_LOW_WINDOW: u32 = 16;
/// `HYSTART_MIN_SAMPLES`: RTT samples per round before the delay test.
const HYSTART_MIN_SAMPLES: u8 = 8;
/// `hystart_ack_delta_us`: ACKs this close continue a train.
const HYSTART_ACK_DELTA_US: u64 = 2000;
/// `HYSTART_DELAY_MIN` / `_MAX`, microseconds.
const HYSTART_DELAY_MIN: u32 = 4000;
const HYSTART_DELAY_MAX: u32 = 16000;
/// `hystart_ack_delay`: at most 1 ms, which it is at any rate below
/// 262 Mbit/s (`gso_max_size * 4` over the pacing rate).
const HYSTART_ACK_DELAY_US: u64 = 1000;

/// What the module currently believes (packets, jiffies, microseconds and
/// 1/1024 s for `K`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CubicLinuxView {
    /// `last_max_cwnd`: `W_max` after fast convergence (0 before a loss).
    pub last_max_cwnd: u32,
    /// `cnt`: packets delivered per packet of growth, as last computed.
    pub cnt: u32,
    /// `bic_K` in 1/1024 s.
    pub k: u32,
    /// `bic_origin_point`.
    pub origin: u32,
    /// `epoch_start` in jiffies (`None`: no epoch).
    pub epoch_start: Option<u32>,
    /// `delay_min` in microseconds (0: no sample yet).
    pub delay_min: u32,
    /// `tcp_cwnd`: the Reno-friendly estimate in packets.
    pub tcp_cwnd: u32,
    /// HyStart has ended slow start (`found`).
    pub hystart_found: bool,
}

/// HyStart's per-round state (`round_start`, `end_seq`, `last_ack`,
/// `curr_rtt`, `sample_cnt`), times in the simulator's clock.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Round {
    start: Instant,
    end_seq: Seq,
    last_ack: Instant,
    curr_rtt: u32,
    samples: u8,
}

/// `struct bictcp` without HyStart's fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct CubicLinux {
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: u32,
    bic_origin_point: u32,
    bic_k: u32,
    delay_min: u32,
    /// The kernel's `epoch_start` with 0 meaning none.
    epoch_start: Option<u32>,
    ack_cnt: u32,
    tcp_cwnd: u32,
    found: bool,
    round: Option<Round>,
    /// The ACK's RTT sample (us), ACK number and SND.NXT, until the ACK's
    /// `on_ack` (which has the time) runs HyStart on it.
    pending: Option<(u32, Seq, Seq)>,
}

/// `tcp_jiffies32`: the clock in whole jiffies.
fn jiffies(now: Instant) -> u32 {
    (now.as_nanos() / (1_000_000_000 / HZ as u64)) as u32
}

/// `usecs_to_jiffies`, rounding up.
fn usecs_to_jiffies(us: u32) -> u32 {
    let per = 1_000_000 / HZ;
    us.div_ceil(per)
}

impl CubicLinux {
    /// `bictcp_reset`.
    pub(super) fn new() -> Self {
        CubicLinux::default()
    }

    pub(super) fn view(&self) -> CubicLinuxView {
        CubicLinuxView {
            last_max_cwnd: self.last_max_cwnd,
            cnt: self.cnt,
            k: self.bic_k,
            origin: self.bic_origin_point,
            epoch_start: self.epoch_start,
            delay_min: self.delay_min,
            tcp_cwnd: self.tcp_cwnd,
            hystart_found: self.found,
        }
    }

    /// An ACK's RTT sample: `delay_min`, and kept for HyStart.
    pub(super) fn on_ack_rtt(&mut self, rtt: Duration, ack: Seq, snd_nxt: Seq) {
        self.on_rtt_sample(rtt);
        let us = (rtt.as_nanos() / 1000).clamp(1, u32::MAX as u64) as u32;
        self.pending = Some((us, ack, snd_nxt));
    }

    /// `cubictcp_acked`'s HyStart for the pending sample, at `now` with
    /// `cwnd` and `ssthresh` packets: true if it found the exit (the
    /// caller sets ssthresh to cwnd).
    pub(super) fn hystart(&mut self, now: Instant, cwnd: u32, ssthresh: u32) -> bool {
        let Some((delay, ack, snd_nxt)) = self.pending.take() else {
            return false;
        };
        // "Discard delay samples right after fast recovery".
        if let Some(e) = self.epoch_start {
            if (jiffies(now).wrapping_sub(e) as i32) < HZ as i32 {
                return false;
            }
        }
        if self.found || cwnd >= ssthresh || cwnd < HYSTART_LOW_WINDOW {
            return false;
        }
        let round = match &mut self.round {
            Some(r) if !ack.gt(r.end_seq) => r,
            r => r.insert(Round {
                start: now,
                end_seq: snd_nxt,
                last_ack: now,
                curr_rtt: u32::MAX,
                samples: 0,
            }),
        };
        // ACK train.
        if (now - round.last_ack).as_nanos() / 1000 <= HYSTART_ACK_DELTA_US {
            round.last_ack = now;
            // No pacing (cubic without fq): half of delay_min + cushion.
            let threshold = (self.delay_min as u64 + HYSTART_ACK_DELAY_US) >> 1;
            if (now - round.start).as_nanos() / 1000 > threshold {
                self.found = true;
            }
        }
        // Delay increase.
        round.curr_rtt = round.curr_rtt.min(delay);
        if round.samples < HYSTART_MIN_SAMPLES {
            round.samples += 1;
        } else {
            let thresh = (self.delay_min >> 3).clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX);
            if round.curr_rtt > self.delay_min.saturating_add(thresh) {
                self.found = true;
            }
        }
        self.found
    }

    /// `cubictcp_acked`'s `delay_min`: the smallest RTT sample, in
    /// microseconds (at least 1).
    pub(super) fn on_rtt_sample(&mut self, rtt: Duration) {
        let us = (rtt.as_nanos() / 1000).clamp(1, u32::MAX as u64) as u32;
        if self.delay_min == 0 || self.delay_min > us {
            self.delay_min = us;
        }
    }

    /// `bictcp_update` for `cwnd` packets and `acked` packets delivered at
    /// `now`; returns `cnt`, the `w` of `tcp_cong_avoid_ai`.
    pub(super) fn update(&mut self, now: Instant, cwnd: u32, acked: u32) -> u32 {
        let ts = jiffies(now);
        self.ack_cnt = self.ack_cnt.wrapping_add(acked);
        if self.last_cwnd == cwnd && (ts.wrapping_sub(self.last_time) as i32) <= (HZ / 32) as i32 {
            return self.cnt;
        }
        // "The CUBIC function can update ca->cnt at most once per jiffy."
        if !(self.epoch_start.is_some() && ts == self.last_time) {
            self.cubic_cnt(ts, cwnd, acked);
        }
        self.friendliness(cwnd);
        // "The maximum rate of cwnd increase CUBIC allows is 1 packet per
        // 2 packets ACKed, meaning cwnd grows at 1.5x per RTT."
        self.cnt = self.cnt.max(2);
        self.cnt
    }

    /// The cubic curve's `cnt` at `ts` jiffies.
    fn cubic_cnt(&mut self, ts: u32, cwnd: u32, acked: u32) {
        self.last_cwnd = cwnd;
        self.last_time = ts;
        let epoch_start = match self.epoch_start {
            Some(e) => e,
            None => {
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                (self.bic_k, self.bic_origin_point) = epoch_origin(self.last_max_cwnd, cwnd);
                self.epoch_start = Some(ts);
                ts
            }
        };
        let mut t = ts.wrapping_sub(epoch_start) as i32 as i64 as u64;
        t = t.wrapping_add(usecs_to_jiffies(self.delay_min) as u64);
        t = (t << BICTCP_HZ) / HZ as u64;
        self.cnt = curve_cnt(t, self.bic_k as u64, self.bic_origin_point, cwnd);
        if self.last_max_cwnd == 0 && self.cnt > CNT_NO_LOSS {
            self.cnt = CNT_NO_LOSS;
        }
    }

    /// TCP friendliness: an AIMD flow with the same beta, one packet per
    /// `cwnd * beta_scale / 8` delivered.
    fn friendliness(&mut self, cwnd: u32) {
        let delta = cwnd.wrapping_mul(FRIENDLY_SCALE) >> 3;
        if delta > 0 && self.ack_cnt > delta {
            // The kernel's `while` loop, in one step.
            let n = (self.ack_cnt - 1) / delta;
            self.ack_cnt -= n * delta;
            self.tcp_cwnd = self.tcp_cwnd.wrapping_add(n);
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
    }

    /// `cubictcp_recalc_ssthresh` at `cwnd` packets: ends the epoch, sets
    /// `W_max`, returns ssthresh in packets.
    pub(super) fn recalc_ssthresh(&mut self, cwnd: u32) -> u32 {
        self.epoch_start = None;
        // fast_convergence = 1.
        self.last_max_cwnd = if cwnd < self.last_max_cwnd {
            ((cwnd as u64 * (BETA_SCALE + BETA) as u64) / (2 * BETA_SCALE as u64)) as u32
        } else {
            cwnd
        };
        (((cwnd as u64 * BETA as u64) / BETA_SCALE as u64) as u32).max(2)
    }
}
