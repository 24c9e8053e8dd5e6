//! Measures recorded during a run: goodput per flow and link use per bin,
//! queue lengths and congestion windows per sample. Rows hold integers only
//! (nanoseconds, bytes), so outputs derived from them are exact and
//! byte-identical from run to run.

use pep_core::{Duration, Instant};

use crate::sim::{Flow, Port};

/// Which series a run records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeriesSet {
    pub goodput: bool,
    pub links: bool,
    pub queues: bool,
    pub cwnd: bool,
    /// The per-packet time-sequence trace (`tseq.csv`); never in `ALL`.
    pub tseq: bool,
}

impl SeriesSet {
    pub const ALL: SeriesSet = SeriesSet {
        goodput: true,
        links: true,
        queues: true,
        cwnd: true,
        tseq: false,
    };
    pub const NONE: SeriesSet = SeriesSet {
        goodput: false,
        links: false,
        queues: false,
        cwnd: false,
        tseq: false,
    };
}

/// Bytes a flow's receiver delivered in order during one bin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoodputRow {
    /// End of the bin.
    pub t: Instant,
    pub bin: Duration,
    pub flow: u32,
    pub bytes: u64,
}

/// What a link direction carried during one bin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkRow {
    pub t: Instant,
    pub bin: Duration,
    pub port: u32,
    pub bytes: u64,
    pub busy_ns: u64,
}

/// A queue length sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueRow {
    pub t: Instant,
    pub port: u32,
    pub packets: u32,
    pub bytes: u64,
}

/// A congestion window sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CwndRow {
    pub t: Instant,
    pub flow: u32,
    pub cwnd: u64,
    /// `None` while ssthresh is still "infinite".
    pub ssthresh: Option<u64>,
}

/// The recorded measures of a run.
#[derive(Debug)]
pub struct Metrics {
    pub bin_every: Duration,
    pub sample_every: Duration,
    pub series: SeriesSet,
    /// Per-flow series are written flow by flow; otherwise as
    /// distributions across the flows ([`crate::spread`]).
    pub per_flow: bool,
    pub goodput: Vec<GoodputRow>,
    pub links: Vec<LinkRow>,
    pub queues: Vec<QueueRow>,
    pub cwnd: Vec<CwndRow>,
    pub tseq: Vec<crate::tseq::TseqRow>,
    last_bin: Instant,
    last_delivered: Vec<u64>,
    last_bytes: Vec<u64>,
    last_busy: Vec<u64>,
}

impl Metrics {
    pub(crate) fn new(
        bin_every: Duration,
        sample_every: Duration,
        series: SeriesSet,
        flows: usize,
        ports: usize,
    ) -> Self {
        Metrics {
            bin_every,
            sample_every,
            series,
            per_flow: flows <= crate::spread::PER_FLOW_LIMIT,
            goodput: Vec::new(),
            links: Vec::new(),
            queues: Vec::new(),
            cwnd: Vec::new(),
            tseq: Vec::new(),
            last_bin: Instant::ZERO,
            last_delivered: vec![0; flows],
            last_bytes: vec![0; ports],
            last_busy: vec![0; ports],
        }
    }

    /// Closes the bin ending at `now`.
    pub(crate) fn close_bin(&mut self, now: Instant, ports: &[Port], flows: &[Flow]) {
        let bin = now - self.last_bin;
        if bin == Duration::ZERO {
            return;
        }
        if self.series.goodput {
            for (i, f) in flows.iter().enumerate() {
                let d = f.sink.delivered_bytes();
                self.goodput.push(GoodputRow {
                    t: now,
                    bin,
                    flow: i as u32,
                    bytes: d - self.last_delivered[i],
                });
                self.last_delivered[i] = d;
            }
        }
        if self.series.links {
            for (i, p) in ports.iter().enumerate() {
                let s = p.link.stats;
                // Busy time is booked when a transmission starts; cap it at
                // the bin so a long packet at a bin edge never exceeds 100%.
                let busy = (s.busy_ns - self.last_busy[i]).min(bin.as_nanos());
                self.links.push(LinkRow {
                    t: now,
                    bin,
                    port: i as u32,
                    bytes: s.tx_bytes - self.last_bytes[i],
                    busy_ns: busy,
                });
                self.last_bytes[i] = s.tx_bytes;
                self.last_busy[i] = s.busy_ns;
            }
        }
        self.last_bin = now;
    }

    /// Samples queues and windows at `now`.
    pub(crate) fn sample(&mut self, now: Instant, ports: &[Port], flows: &[Flow]) {
        if self.series.queues {
            for (i, p) in ports.iter().enumerate() {
                self.queues.push(QueueRow {
                    t: now,
                    port: i as u32,
                    packets: p.link.queue.len_packets() as u32,
                    bytes: p.link.queue.len_bytes(),
                });
            }
        }
        if self.series.cwnd {
            for (i, f) in flows.iter().enumerate() {
                if let Some(s) = &f.sender {
                    let ss = s.ssthresh();
                    self.cwnd.push(CwndRow {
                        t: now,
                        flow: i as u32,
                        cwnd: s.cwnd(),
                        ssthresh: (ss < u64::MAX / 2).then_some(ss),
                    });
                }
            }
        }
    }
}
