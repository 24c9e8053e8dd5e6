//! Westwood+ bandwidth estimation (Mascolo, Casetti, Gerla, Sanadidi, Wang,
//! "TCP Westwood: Bandwidth Estimation for Enhanced Transport over Wireless
//! Links", MobiCom 2001; Westwood+ as in Linux `net/ipv4/tcp_westwood.c`).
//!
//! The sender counts the bytes the ACK stream reports delivered and, once
//! per RTT (at least every 50 ms), turns the count into a bandwidth sample
//! `bk / interval`, which two cascaded 7/8 low-pass filters smooth:
//!
//! ```text
//! bw_ns = (7 * bw_ns + sample) / 8
//! bw    = (7 * bw    + bw_ns)  / 8
//! ```
//!
//! (the first sample initialises both). On a loss, `ssthresh = max(bw *
//! RTTmin, 2*SMSS)`: the window the path drained at when its queue was
//! empty, instead of half the window. Growth is Reno's.
//!
//! Counting follows Linux's slow path (`westwood_acked_count`): a duplicate
//! ACK counts one SMSS delivered, and a later cumulative ACK of more than
//! one SMSS is reduced by what duplicates already counted. Linux's fast
//! path (in-order ACKs outside recovery) skips that reconciliation; here it
//! always applies, as in the Westwood+ paper. Rates are integers (bytes
//! per second), so no floating point is involved.

use super::CcState;
use crate::time::{Duration, Instant};

/// Shortest sampling interval (Linux `TCP_WESTWOOD_RTT_MIN`, `HZ/20`).
pub const MIN_INTERVAL: Duration = Duration::from_millis(50);

/// What Westwood+ currently believes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WestwoodView {
    /// Filtered bandwidth estimate in bytes per second; `None` before the
    /// first sample.
    pub bwe: Option<u64>,
    /// Smallest RTT sample since the start (or since the last timeout).
    pub rtt_min: Option<Duration>,
}

#[derive(Clone, Debug)]
pub(super) struct Westwood {
    /// Start of the current sampling interval (Linux `rtt_win_sx`).
    win_start: Option<Instant>,
    /// Bytes reported delivered in the current interval (Linux `bk`).
    pub(super) bk: u64,
    /// Bytes counted for duplicate ACKs and not yet reconciled with a
    /// cumulative ACK (Linux `accounted`).
    accounted: u64,
    /// First filter stage (bytes/s); `None` before the first sample.
    bw_ns: Option<u64>,
    /// Second filter stage: the estimate (bytes/s).
    bw: u64,
    /// Most recent RTT sample.
    rtt: Option<Duration>,
    rtt_min: Option<Duration>,
    /// Take the next sample as RTTmin (after a timeout, as Linux does).
    reset_rtt_min: bool,
}

impl Westwood {
    pub(super) fn new() -> Self {
        Westwood {
            win_start: None,
            bk: 0,
            accounted: 0,
            bw_ns: None,
            bw: 0,
            rtt: None,
            rtt_min: None,
            reset_rtt_min: false,
        }
    }

    pub(super) fn view(&self) -> WestwoodView {
        WestwoodView {
            bwe: self.bw_ns.map(|_| self.bw),
            rtt_min: self.rtt_min,
        }
    }

    /// An ACK arrived: `acked` new bytes, or a duplicate (`dup`).
    pub(super) fn on_ack(&mut self, now: Instant, s: &CcState, acked: u64, dup: bool) {
        self.update_window(now);
        self.bk += self.acked_count(acked, dup, s.smss as u64);
    }

    /// Closes the sampling interval if an RTT (at least 50 ms) has passed
    /// since it opened (Linux `westwood_update_window`).
    fn update_window(&mut self, now: Instant) {
        let Some(start) = self.win_start else {
            self.win_start = Some(now);
            return;
        };
        let Some(rtt) = self.rtt else { return };
        let delta = now - start;
        if delta > rtt.max(MIN_INTERVAL) {
            self.filter(delta);
            self.bk = 0;
            self.win_start = Some(now);
        }
    }

    /// Feeds the sample `bk / delta` through the two filter stages.
    fn filter(&mut self, delta: Duration) {
        let sample = (self.bk as u128 * 1_000_000_000 / delta.as_nanos() as u128) as u64;
        match self.bw_ns {
            None => {
                self.bw_ns = Some(sample);
                self.bw = sample;
            }
            Some(ns) => {
                let ns = low_pass(ns, sample);
                self.bw_ns = Some(ns);
                self.bw = low_pass(self.bw, ns);
            }
        }
    }

    /// Bytes this ACK reports delivered (Linux `westwood_acked_count`).
    fn acked_count(&mut self, cum: u64, dup: bool, smss: u64) -> u64 {
        if dup || cum == 0 {
            // "If cumul_ack is 0 this is a dupack since it's not moving
            // tp->snd_una."
            self.accounted += smss;
            return smss;
        }
        if cum > smss {
            // "Partial or delayed ack": take back what duplicates counted.
            if self.accounted >= cum {
                self.accounted -= cum;
                return smss;
            }
            let c = cum - self.accounted;
            self.accounted = 0;
            return c;
        }
        cum
    }

    pub(super) fn on_rtt_sample(&mut self, rtt: Duration) {
        self.rtt = Some(rtt);
        self.rtt_min = match self.rtt_min {
            Some(m) if !self.reset_rtt_min => Some(m.min(rtt)),
            _ => Some(rtt),
        };
        self.reset_rtt_min = false;
    }

    /// `max(BWE * RTTmin, 2*SMSS)`, or `None` without an estimate yet
    /// (the caller then halves like Reno; Linux would use 2 segments).
    pub(super) fn ssthresh(&self, s: &CcState) -> Option<u64> {
        self.bw_ns?;
        let rtt_min = self.rtt_min?;
        let bdp = self.bw as u128 * rtt_min.as_nanos() as u128 / 1_000_000_000;
        Some((bdp as u64).max(2 * s.smss as u64))
    }

    /// A retransmission timeout: Linux's `CA_EVENT_LOSS` takes the next RTT
    /// sample as the new minimum.
    pub(super) fn on_timeout(&mut self) {
        self.reset_rtt_min = true;
    }
}

/// One 7/8 stage: `(7 * a + b) / 8` (Linux `westwood_do_filter`).
pub fn low_pass(a: u64, b: u64) -> u64 {
    ((7 * a as u128 + b as u128) / 8) as u64
}
