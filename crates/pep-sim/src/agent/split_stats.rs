//! Shikama's measurements of a split-connection PEP: the forward data it
//! reads from its receiving legs, the bursts its sending legs put on the
//! outgoing interface, and the Kolmogorov-Smirnov distance between the two
//! distributions. They observe the relay; the relay itself is
//! [`pep_core::relay`], driven by [`super::split_relay`].

use pep_core::{Duration, Instant, Rate};

/// Bins of the size histograms (in segments or packets); larger sizes
/// share the last.
pub const SIZE_BINS: usize = 512;
/// Most scatter points kept.
pub const SCATTER_CAP: usize = 20_000;

/// The forward data of one relay, or of several seen together: each read
/// from a receiving leg (Shikama's term: the data a TCP receiver hands its
/// application at once, up to a whole reassembled window after a loss is
/// repaired), its size and the time since the previous one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ForwardLog {
    /// Forward data: reads of at least one byte.
    pub deliveries: u64,
    /// Largest single forward datum, bytes.
    pub max: u64,
    /// `sizes[k]`: forward data of `k` quanta, rounded up (index 0 unused;
    /// the last bin collects larger ones).
    pub sizes: Vec<u64>,
    /// (time since the previous forward datum, size in bytes) for every
    /// forward datum larger than one quantum, up to [`SCATTER_CAP`]
    /// entries: Shikama's scatter of size against inter-arrival time.
    pub scatter: Vec<(Duration, u64)>,
    last: Option<Instant>,
}

impl ForwardLog {
    pub fn new() -> ForwardLog {
        ForwardLog {
            sizes: vec![0; SIZE_BINS + 1],
            ..ForwardLog::default()
        }
    }

    /// A forward datum of `n` bytes (`quantum`: the segment size) at `now`.
    pub fn record(&mut self, now: Instant, n: u64, quantum: u64) {
        if n == 0 {
            return;
        }
        if self.sizes.is_empty() {
            self.sizes = vec![0; SIZE_BINS + 1];
        }
        self.deliveries += 1;
        self.max = self.max.max(n);
        let bin = n.div_ceil(quantum.max(1)).min(SIZE_BINS as u64) as usize;
        self.sizes[bin] += 1;
        if n > quantum && self.scatter.len() < SCATTER_CAP {
            let gap = self.last.map_or(Duration::ZERO, |t| now - t);
            self.scatter.push((gap, n));
        }
        self.last = Some(now);
    }
}

/// Sizes of back-to-back runs of packets on an interface of rate `rate`
/// fed by the packets one sender hands it: a packet joins the current
/// burst if its transmission starts within one transmission time (its
/// own) of the previous one's end (Shikama's definition). The interface
/// is modelled as a FIFO that carries only these packets, which is exact
/// when nothing else shares it.
#[derive(Clone, Debug)]
pub struct BurstMeter {
    rate: Rate,
    /// End of the last packet's transmission.
    free_at: Option<Instant>,
    current: u64,
    /// `sizes[k]`: bursts of `k` packets (last bin: larger).
    sizes: Vec<u64>,
    largest: u64,
}

impl BurstMeter {
    pub fn new(rate: Rate) -> BurstMeter {
        BurstMeter {
            rate,
            free_at: None,
            current: 0,
            sizes: vec![0; SIZE_BINS + 1],
            largest: 0,
        }
    }

    /// A packet of `wire` bytes reached the interface at `now`.
    pub fn on_packet(&mut self, now: Instant, wire: u64) {
        let tx = self.rate.tx_time(wire);
        let start = match self.free_at {
            Some(end) if now <= end + tx => {
                self.current += 1;
                now.max(end)
            }
            _ => {
                self.close();
                self.current = 1;
                now
            }
        };
        self.free_at = Some(start + tx);
    }

    fn close(&mut self) {
        if self.current > 0 {
            self.sizes[(self.current as usize).min(SIZE_BINS)] += 1;
            self.largest = self.largest.max(self.current);
            self.current = 0;
        }
    }

    /// The histogram of burst sizes, the one in progress included.
    pub fn sizes(&self) -> Vec<u64> {
        let mut s = self.sizes.clone();
        if self.current > 0 {
            s[(self.current as usize).min(SIZE_BINS)] += 1;
        }
        s
    }

    /// The largest burst so far (the one in progress included).
    pub fn largest(&self) -> u64 {
        self.largest.max(self.current)
    }
}

/// Two-sample Kolmogorov-Smirnov distance between two histograms over the
/// same bins: the largest gap between their cumulative distributions.
/// `None` if either is empty.
pub fn ks_distance(a: &[u64], b: &[u64]) -> Option<f64> {
    let (ta, tb): (u64, u64) = (a.iter().sum(), b.iter().sum());
    if ta == 0 || tb == 0 {
        return None;
    }
    let (mut ca, mut cb, mut d) = (0u64, 0u64, 0f64);
    for i in 0..a.len().max(b.len()) {
        ca += a.get(i).copied().unwrap_or(0);
        cb += b.get(i).copied().unwrap_or(0);
        d = d.max((ca as f64 / ta as f64 - cb as f64 / tb as f64).abs());
    }
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn forward_data_sizes_and_scatter() {
        let mut f = ForwardLog::new();
        f.record(at(0), 1460, 1460);
        f.record(at(2), 1460, 1460);
        f.record(at(50), 30 * 1460, 1460);
        f.record(at(51), 100, 1460); // a fraction of a segment counts as one
        f.record(at(52), 0, 1460); // nothing read is no forward datum
        assert_eq!(f.deliveries, 4);
        assert_eq!(f.sizes[1], 3);
        assert_eq!(f.sizes[30], 1);
        assert_eq!(f.max, 30 * 1460);
        assert_eq!(f.scatter, vec![(Duration::from_millis(48), 30 * 1460)]);
    }

    #[test]
    fn bursts_on_an_interface() {
        // 100 Mbit/s: 1500 B take 120 us.
        let mut m = BurstMeter::new(Rate::mbps(100));
        // Ten packets at once: one burst of 10.
        for _ in 0..10 {
            m.on_packet(at(0), 1500);
        }
        // One every 2.4 ms: isolated packets.
        for k in 1..=3 {
            m.on_packet(at(10) + Duration::from_micros(2400 * k), 1500);
        }
        // Two 100 us apart: within one transmission time of the end: a pair.
        m.on_packet(at(20), 1500);
        m.on_packet(at(20) + Duration::from_micros(100), 1500);
        let s = m.sizes();
        assert_eq!((s[10], s[1], s[2]), (1, 3, 1));
        assert_eq!(m.largest(), 10);
    }

    #[test]
    fn ks_distance_of_histograms() {
        assert_eq!(ks_distance(&[0, 5, 5], &[0, 5, 5]), Some(0.0));
        assert_eq!(ks_distance(&[0, 10, 0], &[0, 0, 10]), Some(1.0));
        assert_eq!(ks_distance(&[0, 1, 1], &[0, 2, 0]), Some(0.5));
        assert_eq!(ks_distance(&[0, 0], &[1]), None);
    }
}
