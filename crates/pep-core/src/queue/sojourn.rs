//! Queueing delay per packet: the time from a packet's admission to the
//! instant its transmission starts (serialization and propagation not
//! included), and its percentiles.
//!
//! A FIFO discipline hands packets out in the order it admitted them, so
//! the admission instants wait in a ring of their own and the packet
//! itself carries nothing. Delays go into a log-linear histogram: exact
//! below 512 ns, and above that kept to 9 significant bits, so a
//! percentile it reports is at most 1/256 of its value below the exact
//! one (never above). Memory grows with the largest delay seen (about
//! 55 kB for delays up to 10 s), not with the number of packets.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::time::{Duration, Instant};

/// Significant bits kept above the exact range.
const BITS: u32 = 9;
/// Values below this are counted exactly.
const EXACT: u64 = 1 << BITS;
/// Sub-buckets per power of two above the exact range.
const HALF: u64 = EXACT / 2;

/// Admission instants of the packets waiting, and the histogram of the
/// delays of those that left.
#[derive(Clone, Debug, Default)]
pub struct Sojourn {
    admitted: VecDeque<Instant>,
    hist: DelayHistogram,
}

impl Sojourn {
    /// A packet was admitted at `now`.
    #[inline]
    pub(crate) fn admit(&mut self, now: Instant) {
        self.admitted.push_back(now);
    }

    /// The oldest packet admitted left the queue at `now`.
    #[inline]
    pub(crate) fn depart(&mut self, now: Instant) {
        let since = self
            .admitted
            .pop_front()
            .expect("a FIFO queue departs what it admitted");
        self.hist.record(now.saturating_since(since));
    }

    /// A packet admitted and taken at once (an idle transmitter).
    #[inline]
    pub(crate) fn pass(&mut self) {
        self.hist.record(Duration::ZERO);
    }

    /// The delays of the packets that have started transmission.
    pub fn histogram(&self) -> &DelayHistogram {
        &self.hist
    }
}

/// Counts of delays, exact below 512 ns and to 9 significant bits above.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DelayHistogram {
    counts: Vec<u64>,
    total: u64,
}

impl DelayHistogram {
    pub fn record(&mut self, d: Duration) {
        let i = index(d.as_nanos());
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.total += 1;
    }

    /// Delays recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The `p`-th percentile (0 < p <= 100) by nearest rank, as the lower
    /// edge of its bucket: at most 1/256 of the exact value below it.
    /// `None` when nothing was recorded.
    pub fn percentile(&self, p: f64) -> Option<Duration> {
        if self.total == 0 {
            return None;
        }
        let rank = (libm::ceil(p / 100.0 * self.total as f64) as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(Duration::from_nanos(lower(i)));
            }
        }
        unreachable!("the counts sum to the total")
    }
}

/// The bucket of `v` ns: `v` itself below [`EXACT`]; above, the power of
/// two and the 9 leading bits.
fn index(v: u64) -> usize {
    if v < EXACT {
        return v as usize;
    }
    let e = 63 - v.leading_zeros();
    let shift = e + 1 - BITS;
    ((shift as u64) * HALF + (v >> shift)) as usize
}

/// The smallest value in bucket `i`.
fn lower(i: usize) -> u64 {
    let i = i as u64;
    if i < EXACT {
        return i;
    }
    let shift = i / HALF - 1;
    let mantissa = i % HALF + HALF;
    mantissa << shift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_their_edges_map_to_themselves() {
        let mut prev = None;
        for v in (0..5000u64).chain([1 << 20, (1 << 33) + 12_345, u64::MAX / 2]) {
            let i = index(v);
            assert!(lower(i) <= v, "{v}");
            assert_eq!(index(lower(i)), i);
            // Relative width: below 1/256 of the value.
            assert!(v - lower(i) < v.div_ceil(256).max(1), "{v}: {}", lower(i));
            if let Some((pv, pi)) = prev {
                if v == pv + 1 {
                    assert!(i == pi || i == pi + 1, "{v}");
                }
            }
            prev = Some((v, i));
        }
    }

    #[test]
    fn percentiles_are_within_the_stated_bound_of_the_exact_ones() {
        // A spread of delays from 0 to 4 s (a fixed LCG, not the crate's
        // streams: this only needs varied values).
        let mut x: u64 = 12_345;
        let mut vals = Vec::new();
        let mut h = DelayHistogram::default();
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let v = ((x >> 11) % 4_000_000_000) >> ((x >> 3) % 24);
            vals.push(v);
            h.record(Duration::from_nanos(v));
        }
        vals.sort_unstable();
        for p in [1.0, 50.0, 95.0, 99.0, 100.0] {
            let rank = ((p / 100.0 * vals.len() as f64).ceil() as usize).clamp(1, vals.len());
            let exact = vals[rank - 1];
            let got = h.percentile(p).unwrap().as_nanos();
            assert!(
                got <= exact && exact - got <= exact / 256,
                "p{p}: {got} vs {exact}"
            );
        }
        assert_eq!(DelayHistogram::default().percentile(50.0), None);
    }
}
