//! CUBIC as ns-2.35 runs it: `Agent/TCP/Linux` with `select_ca cubic`,
//! which compiles Linux 2.6.22.6's `tcp_cubic.c` (CUBIC v2.1).
//!
//! The thesis behind the Gschwandtner scenarios ran its tunnel on this
//! code, and it is not RFC 9438's CUBIC (`cubic.rs`):
//!
//! * `beta` is 819/1024 (about 0.8, not 0.7): a loss sets
//!   `ssthresh = max(cwnd * 819 / 1024, 2)` packets, from cwnd, and fast
//!   convergence lowers `W_max` to `cwnd * (1024 + 819) / 2048`.
//! * Growth is in whole packets: every ACK adds one to a counter and cwnd
//!   grows by one packet when the counter reaches `cnt`, which
//!   `bictcp_update` recomputes at most every `HZ / 32` ms while cwnd
//!   stands still. `cnt = cwnd / (target - cwnd)`, with the target
//!   `W(t)` at `t` itself (ns-2's agent runs without timestamps, so the
//!   minimum delay the kernel adds to `t` stays 0) and no `1.5 * cwnd`
//!   clamp.
//! * Before the first loss `cnt` is 50 ("could be aggressive in slow
//!   start"), the Reno-friendly estimate grows by one packet every
//!   `cwnd * beta_scale / 8` ACKs with `beta_scale = 23`, and `cnt` is
//!   scaled by the measured packets per ACK (a delayed-ACK receiver).
//! * Times are milliseconds (`HZ = 1000`, `tcp_time_stamp` truncated from
//!   the simulation clock), `t` and `K` in 1/1024 s, the cube root by the
//!   kernel's table and one Newton step: all integer, so each step matches
//!   the C code to the packet.
//!
//! What stays ours: slow start (one packet per ACK, as the kernel's
//! without byte counting), loss recovery (the sender's SACK recovery, not
//! ns-2's simpler rate halving), and every ACK counts as cwnd-limited
//! (`tcp_is_cwnd_limited` is not modelled; a tunnel behind a local queue
//! that never runs dry always is).

use super::growth::slow_start;
use super::CcState;
use crate::time::Instant;

/// `BICTCP_BETA_SCALE`.
const BETA_SCALE: u32 = 1024;
/// The module parameter `beta` (819/1024).
pub const BETA: u32 = 819;
/// `bic_scale` (41/1024 * 10 makes C = 0.4 per second cubed).
const BIC_SCALE: u32 = 41;
/// `HZ` of ns-2's Linux layer: `tcp_time_stamp` counts milliseconds.
const HZ: u32 = 1000;
/// `BICTCP_HZ`: `t` and `K` count 1/1024 s.
const BICTCP_HZ: u32 = 10;
/// `ACK_RATIO_SHIFT`: `delayed_ack` keeps packets per ACK times 16.
const ACK_RATIO_SHIFT: u32 = 4;
/// `cube_rtt_scale = bic_scale * 10`.
const CUBE_RTT_SCALE: u32 = BIC_SCALE * 10;
/// `beta_scale = 8 * (1024 + beta) / 3 / (1024 - beta)`, in `u32` as the
/// module computes it (23).
const FRIENDLY_SCALE: u32 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);
/// `cube_factor = 2^40 / (bic_scale * 10)`.
const CUBE_FACTOR: u64 = (1u64 << (10 + 3 * BICTCP_HZ)) / (BIC_SCALE as u64 * 10);

/// `struct bictcp` plus the socket's `snd_cwnd_cnt`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct CubicNs2 {
    cnt: u32,
    last_max_cwnd: u32,
    loss_cwnd: u32,
    last_cwnd: u32,
    last_time: u32,
    bic_origin_point: u32,
    bic_k: u32,
    epoch_start: u32,
    ack_cnt: u32,
    tcp_cwnd: u32,
    delayed_ack: u32,
    /// `tp->snd_cwnd_cnt`: ACKs since cwnd last grew.
    cwnd_cnt: u32,
}

/// What the module currently believes, for traces and tests (packets,
/// milliseconds, and 1/1024 s for `K`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CubicNs2View {
    /// `last_max_cwnd`: `W_max` after fast convergence (0 before a loss).
    pub last_max_cwnd: u32,
    /// `loss_cwnd`: cwnd at the last loss (0 before one).
    pub loss_cwnd: u32,
    /// `cnt`: ACKs per packet of growth at the last update.
    pub cnt: u32,
    /// `bic_K` in 1/1024 s.
    pub k: u32,
    /// `bic_origin_point`.
    pub origin: u32,
    /// `epoch_start` in ms (0: no epoch).
    pub epoch_start: u32,
    /// `delayed_ack`: packets per ACK times 16.
    pub delayed_ack: u32,
}

/// The kernel's cube root: a table lookup for the top bits, then one
/// Newton-Raphson step (average error about 0.2 %).
pub fn cubic_root(a: u64) -> u32 {
    const V: [u8; 64] = [
        0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164,
        168, 170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209,
        211, 213, 215, 217, 219, 221, 222, 224, 225, 227, 229, 231, 232, 234, 236, 237, 239, 240,
        242, 244, 245, 246, 248, 250, 251, 252, 254,
    ];
    // fls64: the 1-based index of the highest set bit.
    let b = 64 - a.leading_zeros();
    if b < 7 {
        return (V[a as usize] as u32 + 35) >> 6;
    }
    let b = ((b * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;
    let x = ((V[shift] as u32 + 10) << b) >> 6;
    // x >= 2 for every a >= 64, so the divisor is never zero; the guard
    // keeps a future table edit from turning into a panic.
    let d = (x as u64 * (x as u64).wrapping_sub(1)).max(1);
    let x = 2u32.wrapping_mul(x).wrapping_add((a / d) as u32);
    ((x as u64 * 341) >> 10) as u32
}

/// A new epoch's `(bic_K, bic_origin_point)` from `last_max_cwnd` and
/// cwnd: `K = cbrt((W_max - cwnd) / C)` in 1/1024 s towards `W_max`, or
/// `(0, cwnd)` at or above it.
pub(super) fn epoch_origin(last_max_cwnd: u32, cwnd: u32) -> (u32, u32) {
    if last_max_cwnd <= cwnd {
        (0, cwnd)
    } else {
        let k = cubic_root(CUBE_FACTOR * (last_max_cwnd - cwnd) as u64);
        (k, last_max_cwnd)
    }
}

/// `bictcp_update`'s curve, shared by every kernel version since 2.6.22:
/// `target = origin -+ (41 * 10 * |t - K|^3 >> 40)` with `t` and `K` in
/// 1/1024 s, and `cnt = cwnd / (target - cwnd)` ACKs (or packets) per
/// packet of growth, `100 * cwnd` at or below the target. u32 wrapping as
/// in C.
pub(super) fn curve_cnt(t: u64, k: u64, origin: u32, cwnd: u32) -> u32 {
    let offs = t.abs_diff(k);
    let delta = ((CUBE_RTT_SCALE as u64)
        .wrapping_mul(offs)
        .wrapping_mul(offs)
        .wrapping_mul(offs)
        >> (10 + 3 * BICTCP_HZ)) as u32;
    let target = if t < k {
        origin.wrapping_sub(delta)
    } else {
        origin.wrapping_add(delta)
    };
    if target > cwnd {
        cwnd / (target - cwnd)
    } else {
        100u32.wrapping_mul(cwnd)
    }
}

/// `tcp_time_stamp`: the clock in whole milliseconds, as ns-2 truncates it.
fn jiffies(now: Instant) -> u32 {
    (now.as_nanos() / 1_000_000) as u32
}

impl CubicNs2 {
    /// `bictcp_reset` (the module's `init`, and on entering Loss), with
    /// `snd_cwnd_cnt` cleared as ns-2's agent clears it at both.
    pub(super) fn new() -> Self {
        CubicNs2 {
            delayed_ack: 2 << ACK_RATIO_SHIFT,
            ..CubicNs2::default()
        }
    }

    pub(super) fn view(&self) -> CubicNs2View {
        CubicNs2View {
            last_max_cwnd: self.last_max_cwnd,
            loss_cwnd: self.loss_cwnd,
            cnt: self.cnt,
            k: self.bic_k,
            origin: self.bic_origin_point,
            epoch_start: self.epoch_start,
            delayed_ack: self.delayed_ack,
        }
    }

    /// `bictcp_acked`: any ACK of `acked` new bytes; the packets-per-ACK
    /// average moves only outside recovery (`TCP_CA_Open`).
    pub(super) fn on_delivered(&mut self, s: &CcState, acked: u32) {
        let pkts = acked.div_ceil(s.smss.max(1));
        if pkts > 0 && !s.in_recovery {
            // u32 arithmetic as in C: a negative difference wraps and the
            // sum wraps back, i.e. `delayed_ack += pkts - delayed_ack / 16`.
            let cnt = pkts.wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT);
            self.delayed_ack = self.delayed_ack.wrapping_add(cnt);
        }
    }

    /// `bictcp_cong_avoid` for an ACK of `acked` new bytes outside
    /// recovery.
    pub(super) fn on_ack(&mut self, now: Instant, s: &mut CcState, acked: u32) {
        // The kernel's slow start runs while `cwnd <= ssthresh`; the shared
        // one stops at equality. Both add one packet per ACK.
        if slow_start(s, None, acked as u64) {
            return;
        }
        let smss = s.smss.max(1) as u64;
        let cwnd = (s.cwnd / smss).min(u32::MAX as u64) as u32;
        self.update(cwnd, jiffies(now));
        if self.cwnd_cnt >= self.cnt {
            s.cwnd = s.cwnd.saturating_add(smss);
            self.cwnd_cnt = 0;
        } else {
            self.cwnd_cnt += 1;
        }
    }

    /// `bictcp_update`: recomputes `cnt` for `cwnd` packets at `ts` ms.
    fn update(&mut self, cwnd: u32, ts: u32) {
        self.ack_cnt = self.ack_cnt.wrapping_add(1);
        if self.last_cwnd == cwnd && (ts.wrapping_sub(self.last_time) as i32) <= (HZ / 32) as i32 {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = ts;
        if self.epoch_start == 0 {
            self.epoch_start = ts;
            self.ack_cnt = 1;
            self.tcp_cwnd = cwnd;
            (self.bic_k, self.bic_origin_point) = epoch_origin(self.last_max_cwnd, cwnd);
        }
        // delay_min is 0 without timestamps: t counts from the epoch alone.
        let t = (ts.wrapping_sub(self.epoch_start) << BICTCP_HZ) / HZ;
        self.cnt = curve_cnt(t as u64, self.bic_k as u64, self.bic_origin_point, cwnd);
        if self.loss_cwnd == 0 {
            self.cnt = 50;
        }
        // TCP friendliness: an AIMD flow with the same beta.
        let delta = cwnd.wrapping_mul(FRIENDLY_SCALE) >> 3;
        if delta > 0 {
            while self.ack_cnt > delta {
                self.ack_cnt -= delta;
                self.tcp_cwnd += 1;
            }
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
        // `delayed_ack` never falls below 15 (each step removes a
        // sixteenth), so the kernel's division is safe; max(1) keeps it so.
        self.cnt = (self.cnt << ACK_RATIO_SHIFT) / self.delayed_ack.max(1);
        if self.cnt == 0 {
            self.cnt = 1;
        }
    }

    /// `bictcp_recalc_ssthresh`: a loss; returns the new ssthresh in bytes.
    pub(super) fn on_loss(&mut self, s: &CcState) -> u64 {
        let smss = s.smss.max(1) as u64;
        let cwnd = (s.cwnd / smss).min(u32::MAX as u64) as u32;
        self.epoch_start = 0;
        // fast_convergence = 1.
        self.last_max_cwnd = if cwnd < self.last_max_cwnd {
            ((cwnd as u64 * (BETA_SCALE + BETA) as u64) / (2 * BETA_SCALE as u64)) as u32
        } else {
            cwnd
        };
        self.loss_cwnd = cwnd;
        self.cwnd_cnt = 0;
        ((cwnd as u64 * BETA as u64) / BETA_SCALE as u64).max(2) * smss
    }

    /// A timeout: ns-2's `enter_loss` asks the module for ssthresh, then
    /// entering `TCP_CA_Loss` resets it.
    pub(super) fn on_timeout(&mut self, s: &CcState) -> u64 {
        let ssthresh = self.on_loss(s);
        *self = CubicNs2::new();
        ssthresh
    }
}
