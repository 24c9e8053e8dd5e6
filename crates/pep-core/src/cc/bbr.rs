//! BBR v1 (Cardwell et al., ACM Queue 2016) as Linux's `net/ipv4/tcp_bbr.c`
//! runs it: a model of the path (the windowed max delivery rate over 10
//! rounds, the windowed min RTT over 10 s) sets the pacing rate and cwnd;
//! losses do not shrink the model.
//!
//! Each ACK's [`RateSample`] (`rate_sample.rs`, Linux's `tcp_rate.c`) drives
//! [`Bbr::on_ack`] (`bbr_main`); fast recovery and RTOs arrive as
//! [`Bbr::save_cwnd`] (`bbr_ssthresh`) and [`Bbr::on_rto`] (`bbr_set_state`
//! with `TCP_CA_Loss`). Outputs: [`Bbr::cwnd`] and [`Bbr::pacing_rate`].
//!
//! Units: bytes where Linux counts packets (the BDP and the cwnd targets are
//! rounded to whole segments as Linux's are), bandwidth in bytes per second
//! (Linux: packets per us << 24), gains in Linux's fixed point (1/256), time
//! in integer ns. Not modelled: TSO (its cwnd budget, `bbr_tso_segs_goal`,
//! is kept since it shapes the queue), undo of a spurious recovery,
//! `is_ack_delayed` RTT samples, `SO_MAX_PACING_RATE`.

use super::rate_sample::RateSample;
use crate::time::{Duration, Instant};

/// `BBR_UNIT`: gains are in 1/256.
pub const UNIT: u32 = 1 << 8;
/// `bbr_high_gain`: 2/ln 2, the smallest gain that doubles the sending rate
/// each round, as slow start does.
pub const HIGH_GAIN: u32 = UNIT * 2885 / 1000 + 1;
/// `bbr_drain_gain`: 1/high_gain, drains STARTUP's queue in about a round.
pub const DRAIN_GAIN: u32 = UNIT * 1000 / 2885;
/// `bbr_cwnd_gain`: the steady-state cwnd is 2 BDP.
pub const CWND_GAIN: u32 = UNIT * 2;
/// `bbr_pacing_gain`: PROBE_BW's eight phases.
pub const PACING_GAIN: [u32; CYCLE_LEN] = [
    UNIT * 5 / 4,
    UNIT * 3 / 4,
    UNIT,
    UNIT,
    UNIT,
    UNIT,
    UNIT,
    UNIT,
];
/// `CYCLE_LEN`.
pub const CYCLE_LEN: usize = 8;
/// `bbr_cycle_rand`: PROBE_BW starts at a random one of 7 phases.
const CYCLE_RAND: u64 = 7;
/// `bbr_bw_rtts`: the bandwidth max-filter's window, in rounds.
pub const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// `bbr_min_rtt_win_sec`: the min-RTT filter's window.
pub const MIN_RTT_WIN: Duration = Duration::from_secs(10);
/// `bbr_probe_rtt_mode_ms`: least time at the minimum in-flight.
pub const PROBE_RTT_TIME: Duration = Duration::from_millis(200);
/// `bbr_cwnd_min_target`: packets kept in flight at least (and in PROBE_RTT).
pub const CWND_MIN_TARGET: u64 = 4;
/// `bbr_full_bw_thresh`: growth of 25% means the pipe is not full yet...
const FULL_BW_THRESH: u32 = UNIT * 5 / 4;
/// `bbr_full_bw_cnt`: ...and 3 rounds without it mean it is.
pub const FULL_BW_CNT: u32 = 3;
/// `bbr_pacing_margin_percent`: pace 1% below the estimate.
const PACING_MARGIN_PERCENT: u64 = 1;
/// `bbr_min_tso_rate` (bit/s), in bytes per second.
const MIN_TSO_RATE: u64 = 1_200_000 / 8;
/// `TCP_INIT_CWND`.
const INIT_CWND: u64 = 10;
/// `bbr_lt_intvl_min_rtts`.
const LT_INTVL_MIN_RTTS: u32 = 4;
/// `bbr_lt_loss_thresh`: lost/delivered above 50/256 (20%) is lossy.
const LT_LOSS_THRESH: u64 = 50;
/// `bbr_lt_bw_ratio`: two intervals within 1/8 are consistent...
const LT_BW_RATIO: u64 = UNIT as u64 / 8;
/// `bbr_lt_bw_diff`: ...or within 4 kbit/s (here in bytes per second).
const LT_BW_DIFF: u64 = 4000 / 8;
/// `bbr_lt_bw_max_rtts`: rounds to use the policed rate.
const LT_BW_MAX_RTTS: u32 = 48;
/// `bbr_extra_acked_win_rtts`.
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// `bbr_extra_acked_max_us`.
const EXTRA_ACKED_MAX: Duration = Duration::from_millis(100);
/// `bbr_ack_epoch_acked_reset_thresh`, in packets (here times SMSS).
const ACK_EPOCH_RESET_PKTS: u64 = 1 << 20;
/// `GSO_MAX_SIZE - 1 - MAX_TCP_HEADER` (x86-64: 65536 - 1 - 320).
const TSO_MAX_BYTES: u64 = 65_536 - 1 - 320;

/// BBR's state machine (`enum bbr_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// The transport's loss-recovery state (Linux's `icsk_ca_state`, the part
/// BBR reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    Open,
    Recovery,
    Loss,
}

/// Kathleen Nichols' windowed max filter (Linux `lib/win_minmax.c`): the
/// best, second and third best samples, so that the max over the last
/// `win` time units is known in constant space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaxFilter {
    /// `(t, v)` of the 1st, 2nd and 3rd choices.
    s: [(u64, u64); 3],
}

impl MaxFilter {
    /// The windowed max.
    pub fn get(&self) -> u64 {
        self.s[0].1
    }

    /// `minmax_reset`.
    pub fn reset(&mut self, t: u64, v: u64) {
        self.s = [(t, v); 3];
    }

    /// `minmax_running_max`: `v` measured at `t`, window `win`.
    pub fn update(&mut self, win: u64, t: u64, v: u64) -> u64 {
        let val = (t, v);
        // "found new max?" or "nothing left in window?"
        if v >= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            self.reset(t, v);
            return v;
        }
        if v >= self.s[1].1 {
            self.s[2] = val;
            self.s[1] = val;
        } else if v >= self.s[2].1 {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// `minmax_subwin_update`: as time advances, promote the choices.
    fn subwin_update(&mut self, win: u64, val: (u64, u64)) -> u64 {
        let dt = val.0.wrapping_sub(self.s[0].0);
        if dt > win {
            // "Passed entire window without a new val so make 2nd choice
            // the new val & 3rd choice the new 2nd choice."
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.0.wrapping_sub(self.s[0].0) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            // A quarter of the window without a new val: a 2nd choice from
            // the 2nd quarter.
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            // Half the window: a 3rd choice from the last half.
            self.s[2] = val;
        }
        self.s[0].1
    }
}

/// What the transport knows at an ACK, beside its rate sample.
#[derive(Clone, Copy, Debug)]
pub struct AckInfo {
    pub now: Instant,
    /// `tp->delivered` and `tp->delivered_mstamp` after this ACK.
    pub delivered: u64,
    pub delivered_time: Instant,
    /// `tp->lost`.
    pub lost: u64,
    /// `tcp_packets_in_flight` after this ACK, in bytes.
    pub inflight: u64,
    /// The transport's loss-recovery state after this ACK.
    pub ca_state: CaState,
    /// The smoothed RTT, once measured.
    pub srtt: Option<Duration>,
    /// When the pacer lets the next segment leave (`tcp_wstamp_ns`).
    pub next_send: Instant,
}

/// One connection's BBR (`struct bbr` and the `tcp_sock` fields it writes).
#[derive(Clone, Debug)]
pub struct Bbr {
    smss: u64,
    /// `tp->snd_cwnd`, in bytes: BBR owns it.
    cwnd: u64,
    /// `tp->snd_ssthresh`: infinite until DRAIN sets it.
    ssthresh: u64,
    /// `sk->sk_pacing_rate`, in bytes per second.
    pacing_rate: u64,
    mode: Mode,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    probe_rtt_done: Option<Instant>,
    probe_rtt_round_done: bool,
    /// A flight at which PROBE_BW's probing phase is full though below
    /// its gain's (BBR v2's `inflight_hi`); `None` in Linux's v1.
    probe_cap: Option<u64>,
    /// PROBE_RTT holds half the BDP (BBR v2's `bbr_probe_rtt_cwnd_gain`)
    /// instead of Linux v1's four packets.
    probe_rtt_half: bool,
    /// Max delivery rate (bytes/s) over the last `BW_RTTS` rounds.
    bw: MaxFilter,
    /// Packet-timed rounds so far.
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    cycle_stamp: Instant,
    cycle_idx: usize,
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: u64,
    lt_last_delivered: u64,
    lt_last_stamp: Instant,
    lt_last_lost: u64,
    pacing_gain: u32,
    cwnd_gain: u32,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    full_bw: u64,
    has_seen_rtt: bool,
    prior_cwnd: u64,
    ack_epoch_stamp: Instant,
    ack_epoch_acked: u64,
    extra_acked: [u64; 2],
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    /// Seeded state for PROBE_BW's random first phase (Linux:
    /// `prandom_u32_max`).
    rng: u64,
}

/// What BBR believes, for traces and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BbrView {
    pub mode: Mode,
    /// The bandwidth estimate in bytes per second (`bbr_bw`).
    pub bw: u64,
    pub min_rtt: Option<Duration>,
    pub pacing_gain: u32,
    pub cwnd_gain: u32,
    pub cycle_idx: usize,
    pub full_bw_reached: bool,
    /// Packet-timed rounds so far.
    pub rounds: u64,
    /// Using the long-term (policed) rate.
    pub lt_use_bw: bool,
}

impl Bbr {
    /// `bbr_init` for segments of `smss` bytes and an initial window of
    /// `cwnd` bytes; `seed` picks PROBE_BW's random first phases.
    pub fn new(smss: u32, cwnd: u64, seed: u64) -> Self {
        let smss = smss.max(1) as u64;
        let mut b = Bbr {
            smss,
            cwnd,
            ssthresh: u64::MAX,
            pacing_rate: 0,
            mode: Mode::Startup,
            min_rtt: None,
            min_rtt_stamp: Instant::ZERO,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            probe_cap: None,
            probe_rtt_half: false,
            bw: MaxFilter::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_stamp: Instant::ZERO,
            cycle_idx: 0,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp: Instant::ZERO,
            lt_last_lost: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            full_bw: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            ack_epoch_stamp: Instant::ZERO,
            ack_epoch_acked: 0,
            extra_acked: [0; 2],
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            rng: seed,
        };
        b.init_pacing_rate(None);
        b
    }

    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    /// The pacing rate in bytes per second.
    pub fn pacing_rate(&self) -> u64 {
        self.pacing_rate
    }
    pub fn mode(&self) -> Mode {
        self.mode
    }
    pub fn view(&self) -> BbrView {
        BbrView {
            mode: self.mode,
            bw: self.bw(),
            min_rtt: self.min_rtt,
            pacing_gain: self.pacing_gain,
            cwnd_gain: self.cwnd_gain,
            cycle_idx: self.cycle_idx,
            full_bw_reached: self.full_bw_reached,
            rounds: self.rtt_cnt,
            lt_use_bw: self.lt_use_bw,
        }
    }

    /// Ends STARTUP on the next ACK as if the bandwidth had stopped
    /// growing: for a transport that sees STARTUP's queue overflow (BBR
    /// v2's loss-based exit, `quic_bbr.rs`). Linux's v1 has no such call,
    /// and the TCP flows here never make it.
    pub fn set_full_bw_reached(&mut self) {
        self.full_bw_reached = true;
    }

    /// PROBE_BW's probing phase ends once `cap` bytes are in flight, if
    /// that is below its gain's flight: for a transport that caps its
    /// window there (BBR v2's `inflight_hi`, `bbr_window.rs`), whose probe
    /// would otherwise never fill. Linux's v1 has no such call.
    pub fn set_probe_cap(&mut self, cap: Option<u64>) {
        self.probe_cap = cap;
    }

    /// PROBE_RTT holds half the BDP, as BBR v2 does, instead of four
    /// packets: on a long path v1's PROBE_RTT empties the link for 200 ms
    /// and a round trip every 10 s. Linux's v1 has no such call.
    pub fn set_probe_rtt_half_bdp(&mut self) {
        self.probe_rtt_half = true;
    }

    /// The flight PROBE_RTT holds (`bbr_cwnd_min_target`, or v2's half
    /// BDP).
    fn probe_rtt_cwnd(&self) -> u64 {
        let min = CWND_MIN_TARGET * self.smss;
        match self.probe_rtt_half {
            true => min.max(self.bdp(self.max_bw(), UNIT / 2)),
            false => min,
        }
    }

    /// Reseeds PROBE_BW's phase draw (one seed per connection).
    pub fn reseed(&mut self, seed: u64) {
        self.rng = seed;
    }

    /// splitmix64: a uniform draw in `0..n`, deterministic from the seed.
    fn rand_below(&mut self, n: u64) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z as u128 * n as u128) >> 64) as u64
    }

    /// `bbr_max_bw`.
    fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    /// `bbr_bw`: the policed rate if one was detected, else the max filter.
    fn bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    /// `bbr_rate_bytes_per_sec`: `rate x gain`, 1% below.
    fn rate_with_gain(rate: u64, gain: u32) -> u64 {
        let r = rate as u128 * gain as u128 / UNIT as u128;
        (r * (100 - PACING_MARGIN_PERCENT) as u128 / 100).min(u64::MAX as u128) as u64
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain x cwnd / srtt (1 ms
    /// before any RTT sample).
    fn init_pacing_rate(&mut self, srtt: Option<Duration>) {
        let rtt = match srtt {
            Some(s) => {
                self.has_seen_rtt = true;
                s.as_nanos().max(1_000)
            }
            None => 1_000_000,
        };
        let bw = (self.cwnd as u128 * 1_000_000_000 / rtt as u128) as u64;
        self.pacing_rate = Self::rate_with_gain(bw, HIGH_GAIN);
    }

    /// `bbr_set_pacing_rate`: never lower before the pipe is full.
    fn set_pacing_rate(&mut self, bw: u64, gain: u32, srtt: Option<Duration>) {
        let rate = Self::rate_with_gain(bw, gain);
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_pacing_rate(srtt);
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// `bbr_tso_segs_goal`: segments per TSO burst at the pacing rate
    /// (about 1 ms of data, `sk_pacing_shift` 10).
    fn tso_segs_goal(&self) -> u64 {
        let min = if self.pacing_rate < MIN_TSO_RATE {
            1
        } else {
            2
        };
        let bytes = (self.pacing_rate >> 10).min(TSO_MAX_BYTES);
        (bytes / self.smss).max(min).min(0x7f)
    }

    /// `bbr_bdp`: `ceil(bw x min_rtt x gain)`, in bytes; the initial window
    /// before any RTT sample.
    fn bdp(&self, bw: u64, gain: u32) -> u64 {
        let Some(rtt) = self.min_rtt else {
            return INIT_CWND * self.smss;
        };
        let w = bw as u128 * rtt.as_nanos() as u128 * gain as u128;
        let den = 1_000_000_000u128 * UNIT as u128;
        w.div_ceil(den).min(u64::MAX as u128) as u64
    }

    /// `bbr_quantization_budget`, in whole segments: three TSO bursts more,
    /// rounded up to an even count, two more in PROBE_BW's probing phase.
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut pkts = cwnd.div_ceil(self.smss) + 3 * self.tso_segs_goal();
        pkts = (pkts + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            pkts += 2;
        }
        pkts * self.smss
    }

    /// `bbr_inflight`.
    fn inflight(&self, bw: u64, gain: u32) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`: what will still be in the network when
    /// the next segment leaves.
    fn in_net_at_edt(&self, inflight: u64, a: &AckInfo) -> u64 {
        let wait = a.next_send.max(a.now).saturating_since(a.now);
        let delivered =
            (self.bw() as u128 * wait.as_nanos() as u128 / 1_000_000_000).min(u64::MAX as u128);
        let mut at_edt = inflight;
        if self.pacing_gain > UNIT {
            at_edt += self.tso_segs_goal() * self.smss;
        }
        at_edt.saturating_sub(delivered as u64)
    }

    /// `bbr_save_cwnd` (and `bbr_ssthresh`): the transport enters fast
    /// recovery; remember the cwnd to restore. Returns ssthresh.
    pub fn save_cwnd(&mut self) -> u64 {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
        self.ssthresh
    }

    /// The retransmission timer expired: `tcp_enter_loss` (save cwnd, cwnd
    /// to one segment, as every segment is then marked lost) and
    /// `bbr_set_state(TCP_CA_Loss)`.
    pub fn on_rto(&mut self, delivered: u64, delivered_time: Instant, lost: u64) {
        self.save_cwnd();
        self.cwnd = self.smss;
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0;
        // "treat RTO like end of a round"
        self.round_start = true;
        let rs = RateSample {
            losses: 1,
            ..RateSample::default()
        };
        self.lt_bw_sampling(&rs, delivered, delivered_time, lost);
    }

    /// `bbr_cwnd_event(CA_EVENT_TX_START)` with an application-limited
    /// connection: sending restarts after idle.
    pub fn on_tx_start(&mut self, now: Instant, delivered_time: Instant, srtt: Option<Duration>) {
        self.idle_restart = true;
        self.ack_epoch_stamp = now;
        self.ack_epoch_acked = 0;
        // "Avoid pointless buffer overflows: pace at est. bw if we don't
        // need more speed."
        if self.mode == Mode::ProbeBw {
            self.set_pacing_rate(self.bw(), UNIT, srtt);
        } else if self.mode == Mode::ProbeRtt {
            self.check_probe_rtt_done(now, delivered_time);
        }
    }

    /// `bbr_main`: one ACK's sample updates the model, then the pacing rate
    /// and cwnd. Returns true if the transport must mark the connection
    /// application-limited (PROBE_RTT's low-rate samples).
    pub fn on_ack(&mut self, rs: &RateSample, a: &AckInfo) -> bool {
        self.update_bw(rs, a);
        self.update_ack_aggregation(rs, a);
        self.update_cycle_phase(rs, a);
        self.check_full_bw_reached(rs);
        self.check_drain(a);
        let app_limited = self.update_min_rtt(rs, a);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(bw, self.pacing_gain, a.srtt);
        self.set_cwnd(rs, a, bw);
        app_limited
    }

    /// `bbr_update_bw`: count rounds, feed the max filter.
    fn update_bw(&mut self, rs: &RateSample, a: &AckInfo) {
        self.round_start = false;
        let (Some(prior), Some(rate)) = (rs.prior_delivered, rs.rate()) else {
            return; // "Not a valid observation"
        };
        if prior >= self.next_rtt_delivered {
            self.next_rtt_delivered = a.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(rs, a.delivered, a.delivered_time, a.lost);
        // App-limited samples only when they raise the estimate.
        if !rs.is_app_limited || rate >= self.max_bw() {
            self.bw.update(BW_RTTS, self.rtt_cnt, rate);
        }
    }

    /// `bbr_update_ack_aggregation`: the max recent excess of ACKed data
    /// over `bw x interval`, added to the cwnd target.
    fn update_ack_aggregation(&mut self, rs: &RateSample, a: &AckInfo) {
        if rs.acked_sacked == 0 || rs.interval.is_none() || rs.prior_delivered.is_none() {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch = a.delivered_time.saturating_since(self.ack_epoch_stamp);
        let mut expected = (self.bw() as u128 * epoch.as_nanos() as u128 / 1_000_000_000) as u64;
        if self.ack_epoch_acked <= expected
            || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_RESET_PKTS * self.smss
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_stamp = a.delivered_time;
            expected = 0;
        }
        self.ack_epoch_acked =
            (self.ack_epoch_acked + rs.acked_sacked).min((ACK_EPOCH_RESET_PKTS - 1) * self.smss);
        let extra = (self.ack_epoch_acked - expected).min(self.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    /// `bbr_ack_aggregation_cwnd`.
    fn ack_aggregation_cwnd(&self) -> u64 {
        if !self.full_bw_reached {
            return 0;
        }
        let max = (self.bw() as u128 * EXTRA_ACKED_MAX.as_nanos() as u128 / 1_000_000_000) as u64;
        self.extra_acked[0].max(self.extra_acked[1]).min(max)
    }

    /// `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(&self, rs: &RateSample, a: &AckInfo) -> bool {
        let min_rtt = self.min_rtt.unwrap_or(Duration::MAX);
        let full_length = a.delivered_time.saturating_since(self.cycle_stamp) > min_rtt;
        if self.pacing_gain == UNIT {
            return full_length;
        }
        let inflight = self.in_net_at_edt(rs.prior_in_flight, a);
        let bw = self.max_bw();
        if self.pacing_gain > UNIT {
            // Probe until pacing_gain x BDP is in flight, or a loss says it
            // will not fit.
            let target = self.inflight(bw, self.pacing_gain);
            let target = self.probe_cap.map_or(target, |c| target.min(c));
            return full_length && (rs.losses > 0 || inflight >= target);
        }
        // Drain until the queue is gone, at most one min_rtt.
        full_length || inflight <= self.inflight(bw, UNIT)
    }

    /// `bbr_advance_cycle_phase`.
    fn advance_cycle_phase(&mut self, delivered_time: Instant) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_stamp = delivered_time;
    }

    /// `bbr_update_cycle_phase`.
    fn update_cycle_phase(&mut self, rs: &RateSample, a: &AckInfo) {
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(rs, a) {
            self.advance_cycle_phase(a.delivered_time);
        }
    }

    /// `bbr_reset_probe_bw_mode`: a random phase other than the draining
    /// one, then the next.
    fn reset_probe_bw_mode(&mut self, delivered_time: Instant) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.rand_below(CYCLE_RAND) as usize;
        self.advance_cycle_phase(delivered_time);
    }

    /// `bbr_reset_mode`.
    fn reset_mode(&mut self, delivered_time: Instant) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(delivered_time);
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// `bbr_reset_lt_bw_sampling_interval`.
    fn reset_lt_interval(&mut self, delivered: u64, delivered_time: Instant, lost: u64) {
        // Linux keeps this stamp in ms.
        self.lt_last_stamp = Instant::from_nanos(delivered_time.as_nanos() / 1_000_000 * 1_000_000);
        self.lt_last_delivered = delivered;
        self.lt_last_lost = lost;
        self.lt_rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`.
    fn reset_lt(&mut self, delivered: u64, delivered_time: Instant, lost: u64) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_interval(delivered, delivered_time, lost);
    }

    /// `bbr_lt_bw_interval_done`: two consistent lossy intervals mean a
    /// policer; use their average.
    fn lt_interval_done(&mut self, bw: u64, delivered: u64, delivered_time: Instant, lost: u64) {
        if self.lt_bw != 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * UNIT as u64 <= LT_BW_RATIO * self.lt_bw
                || Self::rate_with_gain(diff, UNIT) <= LT_BW_DIFF
            {
                self.lt_bw = (bw + self.lt_bw) / 2;
                self.lt_use_bw = true;
                self.pacing_gain = UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_interval(delivered, delivered_time, lost);
    }

    /// `bbr_lt_bw_sampling`: detect a token-bucket policer.
    fn lt_bw_sampling(&mut self, rs: &RateSample, delivered: u64, dtime: Instant, lost: u64) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt(delivered, dtime, lost);
                    self.reset_probe_bw_mode(dtime);
                }
            }
            return;
        }
        // Wait for the first loss, so the policer's tokens are exhausted.
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_interval(delivered, dtime, lost);
            self.lt_is_sampling = true;
        }
        if rs.is_app_limited {
            self.reset_lt(delivered, dtime, lost);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt(delivered, dtime, lost);
            return;
        }
        if rs.losses == 0 {
            return;
        }
        let lost_i = lost - self.lt_last_lost;
        let delivered_i = delivered - self.lt_last_delivered;
        if delivered_i == 0 || lost_i * (UNIT as u64) < LT_LOSS_THRESH * delivered_i {
            return;
        }
        let t_ms = dtime.as_nanos() / 1_000_000 - self.lt_last_stamp.as_nanos() / 1_000_000;
        if t_ms < 1 {
            return;
        }
        let bw = (delivered_i as u128 * 1000 / t_ms as u128) as u64;
        self.lt_interval_done(bw, delivered, dtime, lost);
    }

    /// `bbr_check_full_bw_reached`: 3 rounds without 25% growth.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let thresh = (self.full_bw as u128 * FULL_BW_THRESH as u128 / UNIT as u128) as u64;
        if self.max_bw() >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, a: &AckInfo) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.ssthresh = self.inflight(self.max_bw(), UNIT);
        }
        if self.mode == Mode::Drain
            && self.in_net_at_edt(a.inflight, a) <= self.inflight(self.max_bw(), UNIT)
        {
            self.reset_probe_bw_mode(a.delivered_time);
        }
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, now: Instant, delivered_time: Instant) {
        if self.probe_rtt_done.is_none_or(|d| now <= d) {
            return;
        }
        // "wait a while until PROBE_RTT"
        self.min_rtt_stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.reset_mode(delivered_time);
    }

    /// `bbr_update_min_rtt`: the 10 s min filter and PROBE_RTT. Returns
    /// true if the connection must be marked application-limited.
    fn update_min_rtt(&mut self, rs: &RateSample, a: &AckInfo) -> bool {
        let expired = a.now > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(rtt) = rs.rtt {
            if self.min_rtt.is_none_or(|m| rtt <= m) || expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = a.now;
            }
        }
        if expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done = None;
        }
        let mut app_limited = false;
        if self.mode == Mode::ProbeRtt {
            app_limited = true;
            // At the minimum in flight for max(200 ms, one round).
            if self.probe_rtt_done.is_none() && a.inflight <= self.probe_rtt_cwnd() {
                self.probe_rtt_done = Some(a.now + PROBE_RTT_TIME);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = a.delivered;
            } else if self.probe_rtt_done.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(a.now, a.delivered_time);
                }
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
        app_limited
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw if self.lt_use_bw => (UNIT, CWND_GAIN),
            Mode::ProbeBw => (PACING_GAIN[self.cycle_idx], CWND_GAIN),
            Mode::ProbeRtt => (UNIT, UNIT),
        };
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: packet conservation in the
    /// first round of recovery, the saved cwnd back after it. Returns the
    /// cwnd and whether conservation decides it.
    fn recover_or_restore(&mut self, rs: &RateSample, a: &AckInfo) -> (u64, bool) {
        let mut cwnd = self.cwnd;
        let acked = rs.acked_sacked;
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses).max(self.smss);
        }
        let (prev, state) = (self.prev_ca_state, a.ca_state);
        if state == CaState::Recovery && prev != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = a.delivered; // start round now
            cwnd = a.inflight + acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(a.inflight + acked), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`: slow start toward the target, or snap down to it once
    /// the pipe is full; four segments at least, four at most in PROBE_RTT.
    fn set_cwnd(&mut self, rs: &RateSample, a: &AckInfo, bw: u64) {
        let acked = rs.acked_sacked;
        if acked > 0 {
            let (mut cwnd, conserving) = self.recover_or_restore(rs, a);
            if !conserving {
                let mut target = self.bdp(bw, self.cwnd_gain);
                target += self.ack_aggregation_cwnd();
                let target = self.quantization_budget(target);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || a.delivered < INIT_CWND * self.smss {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET * self.smss);
            }
            self.cwnd = cwnd;
        }
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
    }
}

/// What one connection's [`super::Congestion`] holds for
/// [`super::Growth::Bbr`] and [`super::Growth::TunnelBbr`]: the model,
/// the rate sampler feeding it, whether an RTO's recovery (Linux's
/// `TCP_CA_Loss`) is under way, and with `TunnelBbr` the window rule.
#[derive(Clone, Debug)]
pub(super) struct BbrConn {
    pub(super) bbr: Bbr,
    pub(super) rate: super::rate_sample::RateSampler,
    pub(super) in_loss: bool,
    pub(super) window: Option<super::bbr_window::BbrWindow>,
}

impl BbrConn {
    /// The connection's cwnd: BBR's, or the tunnel's window rule's.
    pub(super) fn cwnd(&self) -> u64 {
        match &self.window {
            Some(w) => w.window(&self.bbr),
            None => self.bbr.cwnd(),
        }
    }
}
