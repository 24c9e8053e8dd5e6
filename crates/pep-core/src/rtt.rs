//! Round-trip time estimation and the retransmission timeout (RFC 6298).
//!
//! [`RttEstimator`] keeps SRTT and RTTVAR, computes the RTO from them and
//! backs it off on timeouts. It only does arithmetic: the caller decides
//! which segments to time and when a timeout happened.
//!
//! ## Karn's algorithm is the caller's job
//! RFC 6298 section 3: "RTT samples MUST NOT be made using segments that
//! were retransmitted (and thus for which it is ambiguous whether the reply
//! was for the first instance of the packet or a later instance)." The
//! estimator cannot know which segment an ACK answers, so the caller must
//! not pass such samples to [`RttEstimator::on_sample`]. The other half of
//! Karn's algorithm, keeping the backed-off RTO until a valid sample
//! arrives, is implemented here: only [`RttEstimator::on_sample`] clears the
//! backoff.
//!
//! ## Ticks
//! ns-2 measures RTT in multiples of `tcpTick_` (10 ms by default). With
//! [`RttConfig::tick`] set, each sample is rounded to the nearest tick
//! (at least one tick) before it enters the filter, and the computed RTO is
//! rounded *up* to a whole number of ticks, as a tick-driven timer can only
//! fire on a tick. ns-2 itself keeps SRTT and RTTVAR in fixed point and
//! truncates; an exact ns-2 profile may differ from this by one tick.
//!
//! ## Parameters
//! | field | default | why |
//! |---|---|---|
//! | `initial_rto` | 1 s | RFC 6298 (2.1); ns-2 uses 3 s |
//! | `min_rto` | 1 s | RFC 6298 (2.4); ns-2 uses 200 ms, Linux 200 ms |
//! | `max_rto` | 60 s | RFC 6298 (2.5) allows a cap of at least 60 s; ns-2's `maxrto_` |
//! | `granularity` | 1 ms | G; the virtual clock is exact, so this only floors the variance term |
//! | `tick` | none | sample and RTO quantisation (ns-2: 10 ms) |

use crate::rtt_ns2::Ns2Rtt;
use crate::time::{Duration, Instant};

/// RFC 6298's K: the RTO is SRTT plus K times RTTVAR.
const K: u64 = 4;

/// Parameters of the retransmission timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttConfig {
    /// RTO before the first RTT sample (RFC 6298 2.1: 1 s).
    pub initial_rto: Duration,
    /// Lower bound applied to every computed RTO (RFC 6298 2.4: 1 s).
    pub min_rto: Duration,
    /// Upper bound on the RTO, including backoff (RFC 6298 2.5: >= 60 s).
    pub max_rto: Duration,
    /// Clock granularity G in `RTO = SRTT + max(G, K*RTTVAR)`.
    pub granularity: Duration,
    /// If set, samples are rounded to the nearest multiple of the tick
    /// (minimum one tick) and the RTO is rounded up to a multiple of it.
    pub tick: Option<Duration>,
    /// The estimator's arithmetic: RFC 6298 (default) or ns-2's.
    pub mode: RttMode,
}

/// Which arithmetic the estimator uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RttMode {
    /// RFC 6298 in nanoseconds, with the optional `tick` rounding above.
    #[default]
    Rfc6298,
    /// ns-2 2.35's `rtt_update`/`rtt_timeout` in whole ticks of `tick`
    /// (10 ms if unset), see `rtt_ns2.rs`. `boot` is ns-2's `boot_time_`,
    /// the phase of its tick clock (ns-2 draws it uniformly in [0, tick)).
    Ns2 { boot: Duration },
}

impl Default for RttConfig {
    fn default() -> Self {
        RttConfig {
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            granularity: Duration::from_millis(1),
            tick: None,
            mode: RttMode::Rfc6298,
        }
    }
}

/// SRTT/RTTVAR filter and RTO with exponential backoff (RFC 6298).
#[derive(Clone, Debug)]
pub struct RttEstimator {
    /// The parameters this estimator was built with.
    cfg: RttConfig,
    /// Smoothed RTT; `None` until the first sample.
    srtt: Option<Duration>,
    /// RTT variation.
    rttvar: Duration,
    /// Most recent (quantised) sample.
    latest: Option<Duration>,
    /// RTO before backoff, already clamped to `[min_rto, max_rto]`.
    base_rto: Duration,
    /// Number of doublings applied since the last valid sample.
    backoff: u32,
    /// ns-2's fixed-point state, in [`RttMode::Ns2`].
    ns2: Ns2Rtt,
}

impl RttEstimator {
    pub fn new(cfg: RttConfig) -> Self {
        RttEstimator {
            cfg,
            srtt: None,
            rttvar: Duration::ZERO,
            latest: None,
            base_rto: cfg.initial_rto.min(cfg.max_rto),
            backoff: 0,
            ns2: Ns2Rtt::default(),
        }
    }

    pub fn config(&self) -> &RttConfig {
        &self.cfg
    }

    /// Feeds one RTT measurement of a segment sent at `sent`; ns-2's
    /// arithmetic needs the send time to count tick boundaries.
    pub fn on_sample_at(&mut self, sample: Duration, sent: Instant) {
        let RttMode::Ns2 { boot } = self.cfg.mode else {
            return self.on_sample(sample);
        };
        let tick = self.ns2_tick();
        let r = self.ns2.update(sample, sent, tick, boot);
        self.latest = Some(Duration(r as u64 * tick.0));
        self.srtt = Some(self.ns2.srtt(tick));
        self.rttvar = self.ns2.rttvar(tick);
        // rtt_timeout: minrto_ first (rfc2988_), maxrto_, two ticks at least.
        let rtxcur = Duration(self.ns2.rtxcur() as u64 * tick.0);
        self.base_rto = rtxcur
            .max(self.cfg.min_rto)
            .min(self.cfg.max_rto)
            .max(tick * 2);
        self.backoff = 0;
    }

    fn ns2_tick(&self) -> Duration {
        self.cfg
            .tick
            .filter(|t| t.0 > 0)
            .unwrap_or(Duration::from_millis(10))
    }

    /// Feeds one RTT measurement (from a segment that was not retransmitted)
    /// and clears the backoff.
    pub fn on_sample(&mut self, sample: Duration) {
        let r = self.quantise_sample(sample);
        self.latest = Some(r);
        match self.srtt {
            None => {
                // RFC 6298 (2.2): "When the first RTT measurement R is made,
                // the host MUST set SRTT <- R, RTTVAR <- R/2".
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                // RFC 6298 (2.3): "RTTVAR <- (1 - beta) * RTTVAR + beta * |SRTT - R'|
                // SRTT <- (1 - alpha) * SRTT + alpha * R'" with alpha = 1/8 and
                // beta = 1/4, RTTVAR first since it uses the old SRTT.
                let dev = if srtt > r { srtt - r } else { r - srtt };
                self.rttvar = Duration((3 * self.rttvar.0 + dev.0) / 4);
                self.srtt = Some(Duration((7 * srtt.0 + r.0) / 8));
            }
        }
        self.base_rto = self.compute_rto();
        self.backoff = 0;
    }

    /// The retransmission timer expired: "The host MUST set RTO <- RTO * 2
    /// ("back off the timer")" (RFC 6298 5.5), up to `max_rto`.
    pub fn on_timeout(&mut self) {
        if self.rto() < self.cfg.max_rto {
            self.backoff += 1;
        }
        // ns-2 `rtt_backoff`: "if (t_backoff_ > 8)" clobber the SRTT.
        if matches!(self.cfg.mode, RttMode::Ns2 { .. }) && self.backoff > 3 {
            self.ns2.clobber();
        }
    }

    /// RFC 6298 (5.7): "If the timer expires awaiting the ACK of a SYN
    /// segment and the TCP implementation is using an RTO less than 3
    /// seconds, the RTO MUST be re-initialized to 3 seconds when data
    /// transmission begins (i.e., after the three-way handshake completes)."
    /// Call this when the handshake completes after a SYN timeout.
    pub fn reinit_after_syn_timeout(&mut self) {
        let three = Duration::from_secs(3).min(self.cfg.max_rto);
        if self.base_rto < three {
            self.base_rto = three;
        }
        self.backoff = 0;
    }

    /// The current RTO: the computed value doubled once per unanswered
    /// timeout, capped at `max_rto`.
    pub fn rto(&self) -> Duration {
        let mut rto = self.base_rto;
        for _ in 0..self.backoff {
            rto = rto * 2;
            if rto >= self.cfg.max_rto {
                break;
            }
        }
        rto.min(self.cfg.max_rto)
    }

    /// RTO before backoff.
    pub fn base_rto(&self) -> Duration {
        self.base_rto
    }

    /// Smoothed RTT, `None` before the first sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// The most recent sample after quantisation.
    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }

    /// Doublings applied since the last valid sample.
    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    fn quantise_sample(&self, sample: Duration) -> Duration {
        match self.cfg.tick {
            Some(t) if t.0 > 0 => {
                // Nearest tick, halves rounded up, at least one tick (ns-2:
                // "if (t_rtt_ < 1) t_rtt_ = 1").
                let ticks = ((sample.0 + t.0 / 2) / t.0).max(1);
                Duration(ticks.saturating_mul(t.0))
            }
            _ => sample,
        }
    }

    fn compute_rto(&self) -> Duration {
        let srtt = self.srtt.unwrap_or(Duration::ZERO);
        // RFC 6298 (2.3): "RTO <- SRTT + max (G, K*RTTVAR)".
        let mut rto = srtt + self.cfg.granularity.max(self.rttvar * K);
        if let Some(t) = self.cfg.tick.filter(|t| t.0 > 0) {
            rto = Duration(rto.0.div_ceil(t.0).saturating_mul(t.0));
        }
        // RFC 6298 (2.4): "Whenever RTO is computed, if it is less than 1
        // second, then the RTO SHOULD be rounded up to 1 second" (min_rto),
        // and (2.5) "A maximum value MAY be placed on RTO".
        rto.max(self.cfg.min_rto).min(self.cfg.max_rto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }
    fn us(v: u64) -> Duration {
        Duration::from_micros(v)
    }

    /// No floor, no G: the raw RFC 6298 arithmetic.
    fn bare() -> RttConfig {
        RttConfig {
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::ZERO,
            max_rto: Duration::from_secs(60),
            granularity: Duration::ZERO,
            tick: None,
            mode: RttMode::Rfc6298,
        }
    }

    #[test]
    fn initial_rto_before_any_sample() {
        let e = RttEstimator::new(RttConfig::default());
        assert_eq!(e.rto(), Duration::from_secs(1));
        assert_eq!(e.srtt(), None);
        let ns2 = RttConfig {
            initial_rto: Duration::from_secs(3),
            min_rto: ms(200),
            ..RttConfig::default()
        };
        assert_eq!(RttEstimator::new(ns2).rto(), Duration::from_secs(3));
    }

    #[test]
    fn first_and_second_sample_by_hand() {
        let mut e = RttEstimator::new(bare());
        e.on_sample(ms(100));
        // SRTT = 100, RTTVAR = 50, RTO = 100 + 4*50 = 300 ms.
        assert_eq!(e.srtt(), Some(ms(100)));
        assert_eq!(e.rttvar(), ms(50));
        assert_eq!(e.rto(), ms(300));
        e.on_sample(ms(200));
        // RTTVAR = 3/4*50 + 1/4*|100-200| = 62.5; SRTT = 7/8*100 + 1/8*200
        // = 112.5; RTO = 112.5 + 250 = 362.5 ms.
        assert_eq!(e.rttvar(), us(62_500));
        assert_eq!(e.srtt(), Some(us(112_500)));
        assert_eq!(e.rto(), us(362_500));
        // A third, smaller sample: |112.5 - 50| = 62.5 so RTTVAR stays
        // 62.5; SRTT = (7*112.5 + 50)/8 = 104.6875 ms.
        e.on_sample(ms(50));
        assert_eq!(e.rttvar(), us(62_500));
        assert_eq!(e.srtt(), Some(Duration(104_687_500)));
        assert_eq!(e.rto(), Duration(104_687_500 + 250_000_000));
    }

    #[test]
    fn min_rto_floors_the_computed_value() {
        let mut e = RttEstimator::new(RttConfig::default());
        e.on_sample(ms(100));
        assert_eq!(e.rto(), Duration::from_secs(1));
        let mut e = RttEstimator::new(RttConfig {
            min_rto: ms(200),
            ..bare()
        });
        e.on_sample(ms(10)); // 10 + 20 = 30 ms, floored
        assert_eq!(e.rto(), ms(200));
    }

    #[test]
    fn granularity_floors_the_variance_term() {
        let mut e = RttEstimator::new(RttConfig {
            granularity: ms(10),
            ..bare()
        });
        e.on_sample(ms(100));
        assert_eq!(e.rto(), ms(300));
        // Constant samples: SRTT stays exactly 100 ms, RTTVAR decays by 3/4
        // each time; after 11 more samples 4*RTTVAR < 10 ms = G.
        for _ in 0..20 {
            e.on_sample(ms(100));
        }
        assert_eq!(e.srtt(), Some(ms(100)));
        assert!(e.rttvar() * 4 < ms(10));
        assert_eq!(e.rto(), ms(110));
    }

    #[test]
    fn max_rto_caps_the_computed_value() {
        let mut e = RttEstimator::new(bare());
        e.on_sample(Duration::from_secs(30)); // 30 + 60 = 90 s
        assert_eq!(e.rto(), Duration::from_secs(60));
    }

    #[test]
    fn backoff_doubles_caps_and_clears_on_sample() {
        let mut e = RttEstimator::new(RttConfig {
            max_rto: Duration::from_secs(2),
            ..bare()
        });
        e.on_sample(ms(100));
        let mut seen = vec![e.rto()];
        for _ in 0..4 {
            e.on_timeout();
            seen.push(e.rto());
        }
        assert_eq!(seen, [ms(300), ms(600), ms(1200), ms(2000), ms(2000)]);
        // The backoff stops counting once capped.
        assert_eq!(e.backoff(), 3);
        e.on_sample(ms(100));
        assert_eq!(e.backoff(), 0);
        assert!(e.rto() < ms(300));
    }

    #[test]
    fn initial_rto_backs_off_too() {
        let mut e = RttEstimator::new(RttConfig::default());
        e.on_timeout();
        assert_eq!(e.rto(), Duration::from_secs(2));
        e.on_timeout();
        assert_eq!(e.rto(), Duration::from_secs(4));
    }

    #[test]
    fn ticks_quantise_samples_and_round_rto_up() {
        let mut e = RttEstimator::new(RttConfig {
            tick: Some(ms(10)),
            ..bare()
        });
        e.on_sample(ms(3)); // at least one tick
        assert_eq!(e.latest(), Some(ms(10)));
        // SRTT 10, RTTVAR 5, RTO 30.
        assert_eq!(e.rto(), ms(30));
        e.on_sample(ms(25)); // a half rounds up: 30 ms
        assert_eq!(e.latest(), Some(ms(30)));
        // RTTVAR = (3*5 + 20)/4 = 8.75; SRTT = (70 + 30)/8 = 12.5;
        // RTO = 12.5 + 35 = 47.5 -> 50 ms.
        assert_eq!(e.rttvar(), us(8_750));
        assert_eq!(e.srtt(), Some(us(12_500)));
        assert_eq!(e.rto(), ms(50));
        e.on_sample(us(24_999)); // rounds down to 20 ms
        assert_eq!(e.latest(), Some(ms(20)));
    }

    #[test]
    fn syn_timeout_reinitialises_to_three_seconds() {
        let mut e = RttEstimator::new(RttConfig::default());
        e.on_timeout();
        e.reinit_after_syn_timeout();
        assert_eq!(e.rto(), Duration::from_secs(3));
        assert_eq!(e.backoff(), 0);
    }
}
