//! ns-2 2.35's retransmission timer arithmetic (`tcp.cc`: `rtt_update`,
//! `rtt_timeout`, `rtt_backoff`), for the simulator's `ns2` profile.
//!
//! RTT is counted in whole ticks of `tcpTick_`: a sample is
//! `floor((tao + (sendtime + boot_time_) mod tick) / tick)`, at least 1,
//! i.e. the number of tick boundaries crossed between sending and the ACK
//! for a clock with phase `boot_time_`. SRTT is kept with 3 fractional bits
//! and RTTVAR with 2, and the RTO is `((rttvar << 3) + srtt) >> 3` ticks,
//! i.e. SRTT + 4 RTTVAR truncated to a tick. `rtt_timeout` clamps it below
//! by `minrto_` before the backoff multiplies it (`rfc2988_`), caps it at
//! `maxrto_`, and never returns less than two ticks.

use crate::time::{Duration, Instant};

const SRTT_BITS: u32 = 3;
const RTTVAR_BITS: u32 = 2;
const RTTVAR_EXP: u32 = 2;

/// ns-2's fixed-point SRTT and RTTVAR, in ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ns2Rtt {
    /// `t_srtt_`: 8 x SRTT in ticks; 0 until the first sample.
    pub srtt: i64,
    /// `t_rttvar_`: 4 x RTTVAR in ticks.
    pub rttvar: i64,
}

impl Ns2Rtt {
    /// `rtt_update(tao)` for a segment sent at `sent`; returns the sample in
    /// ticks and the new `t_rtxcur_` (before clamping) in ticks.
    pub fn update(&mut self, tao: Duration, sent: Instant, tick: Duration, boot: Duration) -> i64 {
        let t = tick.0.max(1);
        let tickoff = (sent.0 + boot.0) % t;
        let rtt = (((tao.0 + tickoff) / t) as i64).max(1);
        if self.srtt != 0 {
            // ns-2 uses a `short` delta; windows of ticks never reach 2^15.
            let mut delta = rtt - (self.srtt >> SRTT_BITS);
            self.srtt += delta;
            if self.srtt <= 0 {
                self.srtt = 1;
            }
            delta = delta.abs() - (self.rttvar >> RTTVAR_BITS);
            self.rttvar += delta;
            if self.rttvar <= 0 {
                self.rttvar = 1;
            }
        } else {
            self.srtt = rtt << SRTT_BITS;
            self.rttvar = rtt << (RTTVAR_BITS - 1);
        }
        rtt
    }

    /// `t_rtxcur_` in ticks.
    pub fn rtxcur(&self) -> i64 {
        ((self.rttvar << (RTTVAR_EXP + (SRTT_BITS - RTTVAR_BITS))) + self.srtt) >> SRTT_BITS
    }

    /// `rtt_backoff`'s clobbering once `t_backoff_ > 8`: SRTT moves into
    /// the variance and the next sample starts the filter afresh.
    pub fn clobber(&mut self) {
        self.rttvar += self.srtt >> SRTT_BITS;
        self.srtt = 0;
    }

    /// SRTT as a duration.
    pub fn srtt(&self, tick: Duration) -> Duration {
        Duration(((self.srtt as u64) * tick.0) >> SRTT_BITS)
    }

    /// RTTVAR as a duration.
    pub fn rttvar(&self, tick: Duration) -> Duration {
        Duration(((self.rttvar as u64) * tick.0) >> RTTVAR_BITS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: Duration = Duration::from_millis(10);

    #[test]
    fn first_sample_and_rto_in_ticks() {
        let mut r = Ns2Rtt::default();
        // 105 ms sent at a tick boundary: 10 ticks.
        let s = r.update(
            Duration::from_millis(105),
            Instant::ZERO,
            TICK,
            Duration::ZERO,
        );
        assert_eq!(s, 10);
        assert_eq!((r.srtt, r.rttvar), (80, 20));
        // srtt + 4 rttvar = 10 + 4 x 5 = 30 ticks.
        assert_eq!(r.rtxcur(), 30);
        // Sent 6 ms after a tick: the ACK crosses 11 boundaries.
        let s = r.update(
            Duration::from_millis(105),
            Instant::ZERO + Duration::from_millis(6),
            TICK,
            Duration::ZERO,
        );
        assert_eq!(s, 11);
        // delta = 1: srtt 81, rttvar 20 + (1 - 5) = 16.
        assert_eq!((r.srtt, r.rttvar), (81, 16));
        assert_eq!(r.rtxcur(), (16 * 8 + 81) >> 3);
    }

    #[test]
    fn clobber_restarts_the_filter() {
        let mut r = Ns2Rtt::default();
        r.update(
            Duration::from_millis(100),
            Instant::ZERO,
            TICK,
            Duration::ZERO,
        );
        r.clobber();
        assert_eq!((r.srtt, r.rttvar), (0, 20 + 10));
        r.update(
            Duration::from_millis(200),
            Instant::ZERO,
            TICK,
            Duration::ZERO,
        );
        assert_eq!((r.srtt, r.rttvar), (160, 40));
    }
}
