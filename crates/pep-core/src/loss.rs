//! Loss models applied to packets as they finish crossing a link.
//!
//! Like queues, they take time and the segment as inputs and draw randomness
//! from their own seeded stream.
//!
//! * [`LossModel::Bernoulli`]: independent losses.
//! * [`LossModel::GilbertElliott`]: bursty losses from a two-state Markov
//!   chain ([`GilbertElliott`]).
//! * [`LossModel::Scripted`]: exactly the listed segments.
//! * [`LossModel::Only`]: another model applied to data packets or to pure
//!   ACKs only; the others pass untouched and do not advance its state.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::rng::Stream;
use crate::segment::{FlowId, KindFilter, Segment};
use crate::seq::Seq;
use crate::time::Instant;

/// One scripted drop: the next transmission of the data segment of `flow`
/// that starts at `seq` is lost (once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScriptedDrop {
    pub flow: FlowId,
    pub seq: Seq,
}

/// The loss models a link direction can apply. Add one by adding a variant.
#[derive(Clone, Debug, Default)]
pub enum LossModel {
    #[default]
    None,
    /// Each packet is lost independently with probability `p`.
    /// (The stream is boxed: it is large, and models are built once per link.)
    Bernoulli { p: f64, rng: Box<Stream> },
    /// Exactly these segments are lost, each once (tests, and scenarios that
    /// replay a drop pattern).
    Scripted { pending: Vec<ScriptedDrop> },
    /// Bursty loss.
    GilbertElliott(Box<GilbertElliott>),
    /// `inner` applied to the packets `only` matches; the rest pass and do
    /// not step `inner` (a Gilbert-Elliott chain on data counts data
    /// packets only).
    Only {
        only: KindFilter,
        inner: Box<LossModel>,
    },
    /// A link service's losses over time (a schedule's, the LEO preset's
    /// bursts) on top of the link's own model.
    Timed(Box<crate::link::service::TimedLoss>),
}

/// The Gilbert-Elliott channel, stepped once per packet.
///
/// Two states, Good and Bad. A packet is lost with probability `loss_good`
/// in Good and `loss_bad` in Bad; *then* the chain moves: Good to Bad with
/// probability `p`, Bad to Good with probability `r`. (In Gilbert's and
/// Elliott's papers `k` and `h` are the probabilities of *correct*
/// reception, `k = 1 - loss_good`, `h = 1 - loss_bad`; the names here say
/// what they are.) The chain starts in Good.
///
/// Stationary probability of Bad: `pi_B = p / (p + r)`; mean loss rate
/// `pi_G loss_good + pi_B loss_bad`. With `loss_bad = 1` and
/// `loss_good = 0` (Gilbert's model) losses come in runs of mean length
/// `1 / r`, and [`GilbertElliott::from_rate_and_burst`] solves for `p` and
/// `r` from the mean loss rate and mean burst length.
#[derive(Clone, Debug)]
pub struct GilbertElliott {
    pub p: f64,
    pub r: f64,
    pub loss_good: f64,
    pub loss_bad: f64,
    bad: bool,
    rng: Stream,
}

impl GilbertElliott {
    pub fn new(p: f64, r: f64, loss_good: f64, loss_bad: f64, rng: Stream) -> Self {
        GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
            bad: false,
            rng,
        }
    }

    /// Gilbert's model (`loss_bad = 1`, `loss_good = 0`) with mean loss
    /// rate `rate` in (0, 1) and mean burst length `burst` >= 1 packets:
    /// `r = 1 / burst`, `p = rate r / (1 - rate)`. `None` if no chain has
    /// them (`p` would exceed 1).
    pub fn params_from_rate_and_burst(rate: f64, burst: f64) -> Option<(f64, f64)> {
        if !(rate > 0.0 && rate < 1.0 && burst >= 1.0) {
            return None;
        }
        let r = 1.0 / burst;
        let p = rate * r / (1.0 - rate);
        (p <= 1.0).then_some((p, r))
    }

    /// The model of [`Self::params_from_rate_and_burst`].
    pub fn from_rate_and_burst(rate: f64, burst: f64, rng: Stream) -> Option<Self> {
        let (p, r) = Self::params_from_rate_and_burst(rate, burst)?;
        Some(Self::new(p, r, 0.0, 1.0, rng))
    }

    /// The long-run fraction of packets lost.
    pub fn mean_loss_rate(&self) -> f64 {
        let pi_b = self.p / (self.p + self.r);
        (1.0 - pi_b) * self.loss_good + pi_b * self.loss_bad
    }

    /// The mean length of a run of consecutive losses:
    /// `P(loss) / P(loss, then no loss)`.
    pub fn mean_burst_length(&self) -> f64 {
        let pi_b = self.p / (self.p + self.r);
        let (lg, lb) = (self.loss_good, self.loss_bad);
        let pi = [1.0 - pi_b, pi_b];
        let loss = [lg, lb];
        // next[i]: P(the next packet is lost | this one is in state i).
        let next = [
            (1.0 - self.p) * lg + self.p * lb,
            self.r * lg + (1.0 - self.r) * lb,
        ];
        let p_loss: f64 = (0..2).map(|i| pi[i] * loss[i]).sum();
        let p_loss_loss: f64 = (0..2).map(|i| pi[i] * loss[i] * next[i]).sum();
        p_loss / (p_loss - p_loss_loss)
    }

    /// True while the chain is in its Bad state.
    pub fn is_bad(&self) -> bool {
        self.bad
    }

    fn lose(&mut self) -> bool {
        let l = if self.bad {
            self.loss_bad
        } else {
            self.loss_good
        };
        let lost = l >= 1.0 || self.rng.bernoulli(l);
        let flip = if self.bad { self.r } else { self.p };
        if self.rng.bernoulli(flip) {
            self.bad = !self.bad;
        }
        lost
    }
}

impl LossModel {
    /// Decides whether `seg` is lost at `now`.
    #[inline]
    pub fn lose(&mut self, now: Instant, seg: &Segment) -> bool {
        match self {
            LossModel::None => false,
            _ => self.lose_model(now, seg),
        }
    }

    /// The models other than `None`, out of line (`Only` recurses).
    #[inline(never)]
    fn lose_model(&mut self, _now: Instant, seg: &Segment) -> bool {
        match self {
            LossModel::None => false,
            LossModel::Bernoulli { p, rng } => rng.bernoulli(*p),
            LossModel::Scripted { pending } => {
                if seg.len == 0 {
                    return false;
                }
                match pending
                    .iter()
                    .position(|d| d.flow == seg.flow && d.seq == seg.seq)
                {
                    Some(i) => {
                        pending.remove(i);
                        true
                    }
                    None => false,
                }
            }
            LossModel::GilbertElliott(ge) => ge.lose(),
            LossModel::Only { only, inner } => only.matches(seg) && inner.lose_model(_now, seg),
            LossModel::Timed(t) => t.lose(_now, seg),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(flow: u32, seq: u32) -> Segment {
        Segment {
            flow: FlowId(flow),
            seq: Seq(seq),
            len: 1000,
            hdr_len: 40,
            ..Default::default()
        }
    }

    #[test]
    fn scripted_drops_each_once() {
        let mut m = LossModel::Scripted {
            pending: vec![ScriptedDrop {
                flow: FlowId(1),
                seq: Seq(1001),
            }],
        };
        let t = Instant::ZERO;
        assert!(!m.lose(t, &data(2, 1001)));
        assert!(m.lose(t, &data(1, 1001)));
        assert!(!m.lose(t, &data(1, 1001)), "the retransmission passes");
    }

    #[test]
    fn bernoulli_rate() {
        let mut m = LossModel::Bernoulli {
            p: 0.05,
            rng: Box::new(Stream::derive(1, "t")),
        };
        let lost = (0..100_000)
            .filter(|_| m.lose(Instant::ZERO, &data(1, 1)))
            .count();
        assert!((lost as f64 / 1e5 - 0.05).abs() < 0.003);
    }
    fn ack(flow: u32) -> Segment {
        Segment {
            flow: FlowId(flow),
            hdr_len: 40,
            flags: crate::segment::Flags::ACK,
            ..Default::default()
        }
    }

    /// Loss rate and mean length of runs of consecutive losses over `n`
    /// packets.
    fn measure(m: &mut LossModel, n: usize) -> (f64, f64) {
        let (mut lost, mut runs, mut prev) = (0u64, 0u64, false);
        for _ in 0..n {
            let l = m.lose(Instant::ZERO, &data(1, 1));
            lost += l as u64;
            runs += (l && !prev) as u64;
            prev = l;
        }
        (lost as f64 / n as f64, lost as f64 / runs as f64)
    }

    #[test]
    fn gilbert_from_rate_and_burst_meets_both() {
        let ge = GilbertElliott::from_rate_and_burst(0.01, 4.0, Stream::derive(1, "ge")).unwrap();
        assert!((ge.r - 0.25).abs() < 1e-15);
        assert!((ge.mean_loss_rate() - 0.01).abs() < 1e-15);
        assert!((ge.mean_burst_length() - 4.0).abs() < 1e-12);
        let mut m = LossModel::GilbertElliott(Box::new(ge));
        let (rate, burst) = measure(&mut m, 4_000_000);
        assert!((rate / 0.01 - 1.0).abs() < 0.1, "rate {rate}");
        assert!((burst / 4.0 - 1.0).abs() < 0.1, "burst {burst}");
        // Bernoulli at the same rate has runs of 1 / (1 - rate).
        let mut b = LossModel::Bernoulli {
            p: 0.01,
            rng: Box::new(Stream::derive(1, "b")),
        };
        let (_, b_burst) = measure(&mut b, 1_000_000);
        assert!(b_burst < 1.1, "{b_burst}");
        assert!(GilbertElliott::params_from_rate_and_burst(0.6, 1.0).is_none());
        assert!(GilbertElliott::params_from_rate_and_burst(0.1, 0.5).is_none());
    }

    #[test]
    fn gilbert_elliott_with_partial_losses_matches_analytic_values() {
        let ge = GilbertElliott::new(0.02, 0.2, 0.005, 0.5, Stream::derive(2, "ge"));
        let (want_rate, want_burst) = (ge.mean_loss_rate(), ge.mean_burst_length());
        // pi_B = 0.02 / 0.22; rate = pi_G 0.005 + pi_B 0.5.
        assert!((want_rate - (0.2 / 0.22 * 0.005 + 0.02 / 0.22 * 0.5)).abs() < 1e-15);
        let mut m = LossModel::GilbertElliott(Box::new(ge));
        let (rate, burst) = measure(&mut m, 4_000_000);
        assert!(
            (rate / want_rate - 1.0).abs() < 0.1,
            "{rate} vs {want_rate}"
        );
        assert!(
            (burst / want_burst - 1.0).abs() < 0.1,
            "{burst} vs {want_burst}"
        );
    }

    #[test]
    fn per_kind_loss_spares_the_other_kind_and_its_steps() {
        let inner = LossModel::Bernoulli {
            p: 1.0,
            rng: Box::new(Stream::derive(1, "k")),
        };
        let mut m = LossModel::Only {
            only: KindFilter::Data,
            inner: Box::new(inner),
        };
        assert!(m.lose(Instant::ZERO, &data(1, 1)));
        assert!(!m.lose(Instant::ZERO, &ack(1)));
        // A chain on ACKs only: data packets never move it.
        let ge = GilbertElliott::new(1.0, 0.0, 0.0, 1.0, Stream::derive(1, "g"));
        let mut m = LossModel::Only {
            only: KindFilter::Acks,
            inner: Box::new(LossModel::GilbertElliott(Box::new(ge))),
        };
        for _ in 0..10 {
            assert!(!m.lose(Instant::ZERO, &data(1, 1)));
        }
        // The first ACK finds Good (then the chain turns Bad for good).
        assert!(!m.lose(Instant::ZERO, &ack(1)));
        assert!(m.lose(Instant::ZERO, &ack(1)));
    }
}
