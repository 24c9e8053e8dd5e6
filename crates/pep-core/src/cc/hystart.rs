//! HyStart++ (RFC 9406): leaves the initial slow start when the round's
//! minimum RTT rises, through Conservative Slow Start (CSS), instead of
//! overshooting until a loss. Needs an RTT sample per ACK (the transport's
//! timestamps option) and the round boundaries (SND.NXT when a round
//! starts). Only the first slow start uses it (RFC 9406 4.3: "SHOULD use
//! HyStart++ only for the initial slow start").

use crate::seq::Seq;
use crate::time::Duration;

use super::CcState;

/// RFC 9406 section 4.3's recommended constants.
const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
const MIN_RTT_DIVISOR: u64 = 8;
const N_RTT_SAMPLE: u32 = 8;
const CSS_GROWTH_DIVISOR: u64 = 4;
const CSS_ROUNDS: u32 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    SlowStart,
    /// Conservative Slow Start, with its baseline minimum RTT and the
    /// rounds completed in it.
    Css {
        baseline: Duration,
        rounds: u32,
    },
    /// Initial slow start is over (or ssthresh was set by a loss).
    Done,
}

/// HyStart++ state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct HyStart {
    pub phase: Phase,
    /// `windowEnd`: the round ends when an ACK covers it.
    window_end: Option<Seq>,
    last_round_min: Option<Duration>,
    current_round_min: Option<Duration>,
    samples: u32,
    /// The initial ssthresh; any other value means a loss set it.
    initial_ssthresh: u64,
    /// CSS growth not yet added (bytes x CSS_GROWTH_DIVISOR).
    frac: u64,
}

impl HyStart {
    pub fn new(initial_ssthresh: u64) -> Self {
        HyStart {
            phase: Phase::SlowStart,
            window_end: None,
            last_round_min: None,
            current_round_min: None,
            samples: 0,
            initial_ssthresh,
            frac: 0,
        }
    }

    /// An ACK of new data up to `ack` carried an RTT sample `rtt`; SND.NXT
    /// is `snd_nxt`. Runs the round bookkeeping and the exit tests.
    pub fn on_rtt(&mut self, s: &mut CcState, rtt: Duration, ack: Seq, snd_nxt: Seq) {
        if self.phase == Phase::Done {
            return;
        }
        if s.ssthresh != self.initial_ssthresh || s.in_recovery || s.cwnd >= s.ssthresh {
            self.phase = Phase::Done;
            return;
        }
        // A round ends when windowEnd is acknowledged; the next starts.
        if self.window_end.is_none_or(|end| ack.ge(end)) {
            self.last_round_min = self.current_round_min;
            self.current_round_min = None;
            self.samples = 0;
            self.window_end = Some(snd_nxt);
            if let Phase::Css { baseline, rounds } = self.phase {
                let rounds = rounds + 1;
                self.phase = Phase::Css { baseline, rounds };
                if rounds >= CSS_ROUNDS {
                    // "enter congestion avoidance by setting the ssthresh to
                    // the current cwnd"
                    s.ssthresh = s.cwnd;
                    self.phase = Phase::Done;
                    return;
                }
            }
        }
        self.current_round_min = Some(self.current_round_min.map_or(rtt, |m| m.min(rtt)));
        self.samples += 1;
        if self.samples < N_RTT_SAMPLE {
            return;
        }
        let (Some(cur), Some(last)) = (self.current_round_min, self.last_round_min) else {
            return;
        };
        match self.phase {
            Phase::SlowStart => {
                let thresh = (last / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
                if cur >= last + thresh {
                    self.phase = Phase::Css {
                        baseline: cur,
                        rounds: 0,
                    };
                }
            }
            Phase::Css { baseline, .. } if cur < baseline => {
                // A spurious exit: "resume slow start".
                self.phase = Phase::SlowStart;
            }
            _ => {}
        }
    }

    /// After slow start grew cwnd from `before`: in CSS, keep only a
    /// quarter of the increase (RFC 9406: `cwnd += min(N, L*SMSS) /
    /// CSS_GROWTH_DIVISOR`), carrying the remainder.
    pub fn after_slow_start(&mut self, s: &mut CcState, before: u64) {
        if !matches!(self.phase, Phase::Css { .. }) || s.cwnd <= before {
            return;
        }
        let inc = s.cwnd - before + self.frac;
        self.frac = inc % CSS_GROWTH_DIVISOR;
        s.cwnd = before + inc / CSS_GROWTH_DIVISOR;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> CcState {
        CcState {
            smss: 1000,
            cwnd: 10_000,
            ssthresh: u64::MAX,
            inflation: 0,
            in_recovery: false,
            recover: Seq(0),
            dupacks: 0,
            dupack_threshold: 3,
            partial_acked: false,
            timed_out: false,
            srtt: None,
        }
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// One round of 8 samples at `rtt`, acknowledging up to `end`.
    fn round(h: &mut HyStart, s: &mut CcState, rtt: Duration, start: u32, end: u32) {
        for i in 0..8 {
            h.on_rtt(s, rtt, Seq(start + i), Seq(end));
        }
    }

    #[test]
    fn rtt_rise_enters_css_then_ca_after_five_rounds() {
        let mut s = state();
        let mut h = HyStart::new(u64::MAX);
        round(&mut h, &mut s, ms(100), 0, 100);
        round(&mut h, &mut s, ms(105), 100, 200);
        // +5 ms < max(4 ms, min(100/8, 16)) = 12.5 ms: still slow start; then
        // 120 >= 105 + 105/8.
        assert_eq!(h.phase, Phase::SlowStart);
        round(&mut h, &mut s, ms(120), 200, 300);
        assert_eq!(
            h.phase,
            Phase::Css {
                baseline: ms(120),
                rounds: 0
            }
        );
        // In CSS, a quarter of slow start's growth.
        let before = s.cwnd;
        s.cwnd += 1000;
        h.after_slow_start(&mut s, before);
        assert_eq!(s.cwnd, before + 250);
        for r in 0..5 {
            round(&mut h, &mut s, ms(120), 300 + 100 * r, 400 + 100 * r);
        }
        assert_eq!(h.phase, Phase::Done);
        assert_eq!(s.ssthresh, s.cwnd);
    }

    #[test]
    fn lower_rtt_in_css_resumes_slow_start() {
        let mut s = state();
        let mut h = HyStart::new(u64::MAX);
        round(&mut h, &mut s, ms(100), 0, 100);
        round(&mut h, &mut s, ms(120), 100, 200);
        assert!(matches!(h.phase, Phase::Css { .. }));
        round(&mut h, &mut s, ms(110), 200, 300);
        assert_eq!(h.phase, Phase::SlowStart);
    }

    #[test]
    fn a_loss_ends_it() {
        let mut s = state();
        let mut h = HyStart::new(u64::MAX);
        s.ssthresh = 5000;
        h.on_rtt(&mut s, ms(100), Seq(0), Seq(10));
        assert_eq!(h.phase, Phase::Done);
    }
}
