//! # Split-connection relay by byte count, with optional shaping
//!
//! A split-connection PEP (RFC 3135 §2.4) terminates the sender's TCP
//! connection and forwards the byte stream on a second connection. Between
//! the two legs sits a bounded buffer: the receiving leg is read only while
//! the buffer has room (so, as in a real proxy, its advertised window
//! shrinks as the buffer fills), and the sending leg takes from it as its
//! send buffer allows. [`crate::relay`] does this with payload bytes for
//! the daemon; this relay does it with byte *counts*, for drivers with no
//! payload (the simulator) and for measuring what a relay does:
//!
//! * every read from the receiving leg is one *forward datum* (Shikama's
//!   term: the data a TCP receiver hands its application at once, up to a
//!   whole reassembled window after a loss is repaired); [`SplitStats`]
//!   keeps their size distribution and the time since the previous one;
//! * an optional token-bucket [`Shaper`] releases the buffer to the sending
//!   leg no faster than a configured rate, in segment-sized quanta, so a
//!   reassembled window leaves at that rate instead of as one burst.
//!
//! ## Driver contract
//! * `room()` says how much may be read from the receiving leg now; the
//!   driver reads at most that and reports it with [`SplitRelay::push`].
//! * [`SplitRelay::pull`]`(now, max)` returns how many buffered bytes the
//!   sending leg may take now (`max`: its send-buffer space); the driver
//!   writes exactly that many.
//! * While bytes are held back by the shaper, [`SplitRelay::poll_timeout`]
//!   gives the instant more may be pulled; call `pull` again then.
//! * `now` never decreases.
//!
//! Invariant: `held() <= config().buffer` at all times; bytes out never
//! exceed bytes in, and leave in the order they came (a count cannot
//! reorder, but the daemon's relay keeps the same rule for bytes).

use alloc::vec;
use alloc::vec::Vec;

use crate::time::{Duration, Instant, Rate};

/// A token bucket in transmission time: it holds at most `depth` of credit,
/// refills at wall rate, and a release of `b` bytes costs `rate.tx_time(b)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shaper {
    /// Release rate, counted on payload plus `overhead` bytes per quantum.
    pub rate: Rate,
    /// Bucket depth in bytes: how much may leave back-to-back after idle.
    pub depth: u64,
    /// Header bytes charged per quantum released (so the rate can be set
    /// to a link's wire rate). 0: payload rate.
    pub overhead: u64,
}

/// Relay parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitConfig {
    /// Bytes the relay holds at most between the legs.
    pub buffer: u64,
    /// Release unit of the shaper (the sending leg's segment size): whole
    /// quanta leave, or the remainder when less is held.
    pub quantum: u64,
    /// Shape the release to the sending leg; `None`: release at once.
    pub shaper: Option<Shaper>,
}

impl SplitConfig {
    pub fn new(buffer: u64, quantum: u64) -> SplitConfig {
        SplitConfig {
            buffer: buffer.max(1),
            quantum: quantum.max(1),
            shaper: None,
        }
    }
}

/// Counters of one relay.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SplitStats {
    /// Bytes read from the receiving leg.
    pub bytes_in: u64,
    /// Bytes handed to the sending leg.
    pub bytes_out: u64,
    /// Most bytes held at once.
    pub max_held: u64,
    /// Times the buffer filled (reading the receiving leg stopped).
    pub fills: u64,
    /// Pulls the shaper cut short (bytes held back for lack of tokens).
    pub shaped: u64,
    /// The forward data read from the receiving leg.
    pub forward: ForwardLog,
}

/// The forward data of one relay, or of several seen together: each read
/// from a receiving leg, its size and the time since the previous one.
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

/// Bins of the size histogram (in quanta); larger sizes share the last.
pub const SIZE_BINS: usize = 512;
/// Most scatter points kept.
pub const SCATTER_CAP: usize = 20_000;

/// The relay of one split connection (one direction). See the module docs.
#[derive(Clone, Debug)]
pub struct SplitRelay {
    cfg: SplitConfig,
    held: u64,
    /// Shaper credit in ns of transmission time, and when it was counted.
    credit: u64,
    credited_at: Instant,
    /// The shaper holds bytes back until this instant.
    blocked_until: Option<Instant>,
    full: bool,
    stats: SplitStats,
}

impl SplitRelay {
    pub fn new(cfg: SplitConfig) -> SplitRelay {
        let cfg = SplitConfig::new(cfg.buffer, cfg.quantum).with_shaper(cfg.shaper);
        let credit = cfg.shaper.map_or(0, |s| depth_ns(&cfg, s));
        SplitRelay {
            cfg,
            held: 0,
            credit,
            credited_at: Instant::ZERO,
            blocked_until: None,
            full: false,
            stats: SplitStats {
                forward: ForwardLog::new(),
                ..SplitStats::default()
            },
        }
    }

    pub fn config(&self) -> &SplitConfig {
        &self.cfg
    }

    /// Bytes held now.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// Bytes the receiving leg may be read for now.
    pub fn room(&self) -> u64 {
        self.cfg.buffer - self.held
    }

    pub fn stats(&self) -> &SplitStats {
        &self.stats
    }

    /// `n` bytes were read from the receiving leg at `now` (at most
    /// [`Self::room`]; any excess is not taken and is returned).
    pub fn push(&mut self, now: Instant, n: u64) -> u64 {
        let n = n.min(self.room());
        if n == 0 {
            return 0;
        }
        self.held += n;
        let s = &mut self.stats;
        s.bytes_in += n;
        s.max_held = s.max_held.max(self.held);
        s.forward.record(now, n, self.cfg.quantum);
        if self.held == self.cfg.buffer && !self.full {
            self.full = true;
            s.fills += 1;
        }
        n
    }

    /// Bytes the sending leg may take now, at most `max`; they leave the
    /// relay. With a shaper, whole quanta as the bucket allows.
    pub fn pull(&mut self, now: Instant, max: u64) -> u64 {
        let want = self.held.min(max);
        if want == 0 {
            return 0;
        }
        let n = match self.cfg.shaper {
            None => want,
            Some(sh) => self.shaped(now, sh, want),
        };
        self.held -= n;
        self.stats.bytes_out += n;
        if self.held < self.cfg.buffer {
            self.full = false;
        }
        n
    }

    /// When bytes held back by the shaper may be pulled.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.held == 0 {
            return None;
        }
        self.blocked_until
    }

    fn shaped(&mut self, now: Instant, sh: Shaper, want: u64) -> u64 {
        let depth = depth_ns(&self.cfg, sh);
        let elapsed = now.saturating_since(self.credited_at).as_nanos();
        self.credit = self.credit.saturating_add(elapsed).min(depth);
        self.credited_at = now;
        self.blocked_until = None;
        let mut out = 0;
        while out < want {
            let q = (want - out).min(self.cfg.quantum);
            let cost = sh.rate.tx_time(q + sh.overhead).as_nanos();
            if self.credit < cost {
                self.blocked_until = Some(now + Duration::from_nanos(cost - self.credit));
                self.stats.shaped += 1;
                break;
            }
            self.credit -= cost;
            out += q;
        }
        out
    }
}

/// The bucket's capacity in ns of credit: its depth, and never less than
/// one quantum with its overhead (or nothing could ever leave).
fn depth_ns(cfg: &SplitConfig, sh: Shaper) -> u64 {
    let one = sh.rate.tx_time(cfg.quantum + sh.overhead);
    sh.rate.tx_time(sh.depth).max(one).as_nanos()
}

impl SplitConfig {
    /// The same with `shaper`.
    pub fn with_shaper(mut self, shaper: Option<Shaper>) -> SplitConfig {
        self.shaper = shaper;
        self
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
    fn unshaped_relay_is_bounded_and_conserves_bytes() {
        let mut r = SplitRelay::new(SplitConfig::new(10_000, 1000));
        assert_eq!(r.push(at(0), 4000), 4000);
        assert_eq!(r.push(at(1), 9000), 6000, "only the room is taken");
        assert_eq!(r.room(), 0);
        assert_eq!(r.stats().fills, 1);
        assert_eq!(r.pull(at(2), 2500), 2500);
        assert_eq!(r.room(), 2500);
        assert_eq!(r.pull(at(2), u64::MAX), 7500);
        let s = r.stats();
        assert_eq!(
            (s.bytes_in, s.bytes_out, s.max_held),
            (10_000, 10_000, 10_000)
        );
        assert_eq!(r.poll_timeout(), None);
    }

    #[test]
    fn forward_data_sizes_and_scatter() {
        let mut r = SplitRelay::new(SplitConfig::new(1 << 20, 1460));
        r.push(at(0), 1460);
        r.push(at(2), 1460);
        r.push(at(50), 30 * 1460);
        r.push(at(51), 100); // a fraction of a segment counts as one
        let s = &r.stats().forward;
        assert_eq!(s.deliveries, 4);
        assert_eq!(s.sizes[1], 3);
        assert_eq!(s.sizes[30], 1);
        assert_eq!(s.max, 30 * 1460);
        assert_eq!(s.scatter, vec![(Duration::from_millis(48), 30 * 1460)]);
    }

    #[test]
    fn shaper_releases_at_its_rate_after_the_bucket() {
        // 8 Mbit/s: 1000 B per ms; bucket 2 quanta; no overhead.
        let sh = Shaper {
            rate: Rate::mbps(8),
            depth: 2000,
            overhead: 0,
        };
        let mut r = SplitRelay::new(SplitConfig::new(1 << 20, 1000).with_shaper(Some(sh)));
        r.push(at(0), 50_000);
        let mut now = at(0);
        let mut out = r.pull(now, u64::MAX);
        assert_eq!(out, 2000, "the bucket's depth leaves at once");
        let mut steps = 0;
        while let Some(t) = r.poll_timeout() {
            assert!(t > now);
            now = t;
            out += r.pull(now, u64::MAX);
            steps += 1;
        }
        assert_eq!(out, 50_000);
        assert_eq!(steps, 48);
        // 48 quanta after the bucket, one per ms.
        assert_eq!(now, at(48));
    }

    #[test]
    fn shaper_charges_overhead_and_refills_when_idle() {
        let sh = Shaper {
            rate: Rate::mbps(8),
            depth: 1000,
            overhead: 1000,
        };
        let mut r = SplitRelay::new(SplitConfig::new(1 << 20, 1000).with_shaper(Some(sh)));
        r.push(at(0), 3000);
        // A quantum costs 2 ms with its overhead, so the bucket holds 2 ms
        // (more than its 1 ms depth) and starts with 2 ms.
        assert_eq!(r.pull(at(0), u64::MAX), 1000);
        assert_eq!(r.pull(at(0), u64::MAX), 0);
        assert_eq!(r.poll_timeout(), Some(at(2)));
        assert_eq!(r.pull(at(2), u64::MAX), 1000);
        assert_eq!(r.poll_timeout(), Some(at(4)));
        // Credit never exceeds the bucket, however long idle.
        r.push(at(100), 5000);
        assert_eq!(r.pull(at(100), u64::MAX), 1000);
        assert_eq!(r.poll_timeout(), Some(at(102)));
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
