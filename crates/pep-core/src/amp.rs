//! The AMP model of Shekhar, Qin, Kalyanaraman and Kidambi ("Performance
//! Optimization of TCP/IP over Asymmetric Wired and Wireless Links"), and
//! Lakshman's normalized asymmetry ratio `k`.
//!
//! Over an observation period the reverse link carries at most `A` ACKs per
//! second, each ACK releases `M` packets on average (TCP's dynamics and any
//! ACK regulation together), packets are `P` bits, and the forward link
//! gives the flow `F` bit/s. Forward throughput is then at most
//! `min(F, A x M x P)`.
//!
//! Lakshman's `k = (forward rate / reverse rate) / (data size / ACK size)`:
//! above 1, one ACK per packet caps the forward link at `F / k`.
//!
//! Pure arithmetic on `f64`: a model to print and compare runs against,
//! not something that drives packets.

/// A one-way asymmetric path as the model sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Path {
    /// Forward (data) link rate, bit/s: the model's `F` when all of it goes
    /// to the flow's packets.
    pub forward_bps: f64,
    /// Reverse (ACK) link rate, bit/s.
    pub reverse_bps: f64,
    /// Bits per data packet counted towards throughput (`P`). The paper
    /// uses the 1000 B payload: 8000 bits.
    pub data_bits: f64,
    /// Bits per ACK on the reverse link (`P_ack`; 40 B = 320 bits).
    pub ack_bits: f64,
}

impl Path {
    /// ACKs per second the reverse link carries when saturated with ACKs
    /// (`A`).
    pub fn ack_rate(&self) -> f64 {
        self.reverse_bps / self.ack_bits
    }

    /// Lakshman's normalized asymmetry ratio `k`.
    pub fn k(&self) -> f64 {
        (self.forward_bps / self.reverse_bps) / (self.data_bits / self.ack_bits)
    }

    /// The AMP bound `min(F, A x M x P)` in bit/s, with `m` packets
    /// released per ACK.
    pub fn bound(&self, m: f64) -> f64 {
        bound(self.forward_bps, self.ack_rate(), m, self.data_bits)
    }

    /// The `M` at which the reverse link stops being the limit:
    /// `F / (A x P)`, which equals `k` when `P` is the packet size `k` uses.
    pub fn m_needed(&self) -> f64 {
        self.forward_bps / (self.ack_rate() * self.data_bits)
    }
}

/// `min(F, A x M x P)`: `f` bit/s forward, `a` ACKs/s, `m` packets per ACK,
/// `p` bits per packet.
pub fn bound(f: f64, a: f64, m: f64, p: f64) -> f64 {
    f.min(a * m * p)
}

/// Packets one ACK releases in slow start with delayed ACKs every `b`
/// packets: the ACK covers `b` packets and grows the window by one, so
/// `b + 1` (2 for an ACK per packet, the paper's example).
pub fn m_slow_start(b: f64) -> f64 {
    b + 1.0
}

/// In congestion avoidance an ACK releases the packets it covers: `b`
/// (1 for an ACK per packet: "M is closer to 1").
pub fn m_congestion_avoidance(b: f64) -> f64 {
    b
}

/// The paper's bidirectional table (section 2): each direction has a data
/// class and an ACK class sharing the link, data getting `f` of the forward
/// link and `g` of the reverse one; the reverse channel is saturated at its
/// shares.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TwoWay {
    pub path: Path,
    /// Data class's share of the forward link, in (0, 1).
    pub f: f64,
    /// Data class's share of the reverse link, in (0, 1).
    pub g: f64,
    /// Forward packets released per reverse ACK.
    pub m: f64,
}

/// Rates in packets (or ACKs) per second, one row per channel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TwoWayRates {
    /// Reverse data packets/s: `g Cr / P`.
    pub reverse_packets: f64,
    /// Reverse ACKs/s: `(1 - g) Cr / P_ack`.
    pub reverse_acks: f64,
    /// Forward data packets/s: `min((1 - g) Cr M / P_ack, f Cf / P)`.
    pub forward_packets: f64,
    /// Forward ACKs/s (acknowledging the reverse data):
    /// `min((1 - f) Cf / P_ack, g Cr / P)`. The paper prints `f Cf / P_ack`
    /// for the first term; the ACK class has the rest of the link, `1 - f`,
    /// which is what we use (with `f` near 1 the reverse data's term
    /// decides either way).
    pub forward_acks: f64,
}

impl TwoWay {
    pub fn rates(&self) -> TwoWayRates {
        let p = &self.path;
        TwoWayRates {
            reverse_packets: self.g * p.reverse_bps / p.data_bits,
            reverse_acks: (1.0 - self.g) * p.reverse_bps / p.ack_bits,
            forward_packets: ((1.0 - self.g) * p.reverse_bps * self.m / p.ack_bits)
                .min(self.f * p.forward_bps / p.data_bits),
            forward_acks: ((1.0 - self.f) * p.forward_bps / p.ack_bits)
                .min(self.g * p.reverse_bps / p.data_bits),
        }
    }

    /// Forward data throughput bound, bit/s.
    pub fn forward_bps(&self) -> f64 {
        self.rates().forward_packets * self.path.data_bits
    }

    /// Reverse data throughput bound, bit/s.
    pub fn reverse_bps(&self) -> f64 {
        self.rates().reverse_packets * self.path.data_bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper's example: 8 Mbit/s down, 64 kbit/s up, 1000 B packets,
    /// 40 B ACKs.
    fn paper() -> Path {
        Path {
            forward_bps: 8e6,
            reverse_bps: 64e3,
            data_bits: 8000.0,
            ack_bits: 320.0,
        }
    }

    #[test]
    fn worked_example_matches_the_paper() {
        let p = paper();
        assert_eq!(p.ack_rate(), 200.0);
        // Slow start, an ACK per packet: M = 2 -> 3.2 Mbit/s.
        assert_eq!(p.bound(m_slow_start(1.0)), 3.2e6);
        // Congestion avoidance: M ~ 1 -> 1.6 Mbit/s.
        assert_eq!(p.bound(m_congestion_avoidance(1.0)), 1.6e6);
        // Table 1's k column: 5, 2.5, 1.25, 0.5, 0.41.
        for (up, k) in [(64e3, 5.0), (128e3, 2.5), (256e3, 1.25), (640e3, 0.5)] {
            let q = Path {
                reverse_bps: up,
                ..p
            };
            assert!((q.k() - k).abs() < 1e-12, "{up}: {}", q.k());
        }
        let q = Path {
            reverse_bps: 784e3,
            ..p
        };
        assert!((q.k() - 0.41).abs() < 0.005);
        // k is the M the reverse link must sustain to fill the forward one.
        assert!((p.m_needed() - p.k()).abs() < 1e-12);
    }

    #[test]
    fn the_bound_never_exceeds_the_forward_link() {
        let p = Path {
            reverse_bps: 784e3,
            ..paper()
        };
        // k < 1: even one packet per ACK fills the forward link.
        assert!(p.k() < 1.0);
        assert_eq!(p.bound(1.0), 8e6);
        assert_eq!(p.bound(2.0), 8e6);
        assert!(paper().bound(1.0) < 8e6);
    }

    #[test]
    fn two_way_table_trades_downstream_for_upstream_as_g_grows() {
        let rates = |g: f64| {
            TwoWay {
                path: paper(),
                f: 0.997,
                g,
                m: 1.0,
            }
            .rates()
        };
        let r = rates(0.5);
        assert_eq!(r.reverse_packets, 4.0);
        assert_eq!(r.reverse_acks, 100.0);
        assert_eq!(r.forward_packets, 100.0);
        // The forward ACK class (0.3% of 8 Mbit/s = 75 ACKs/s) is not the
        // limit: the 4 reverse packets/s are.
        assert_eq!(r.forward_acks, 4.0);
        let (lo, hi) = (rates(0.1), rates(0.9));
        assert!(lo.forward_packets > hi.forward_packets);
        assert!(lo.reverse_packets < hi.reverse_packets);
        // With M large enough the forward data class is the limit.
        let big = TwoWay {
            path: paper(),
            f: 0.997,
            g: 0.1,
            m: 100.0,
        };
        assert!((big.forward_bps() - 0.997 * 8e6).abs() < 1e-6);
    }
}
