//! Loss models applied to packets as they finish crossing a link.
//!
//! Like queues, they take time and the segment as inputs and draw randomness
//! from their own seeded stream.

use crate::rng::Stream;
use crate::segment::{FlowId, Segment};
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
}

impl LossModel {
    /// Decides whether `seg` is lost at `now`.
    pub fn lose(&mut self, _now: Instant, seg: &Segment) -> bool {
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
}
