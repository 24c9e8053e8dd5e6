//! `kind = "meter"`: throughput as a host sees it, whole packets on the
//! wire (header included, duplicates included) arriving per interval. It
//! changes nothing: every packet goes on.
//!
//! Osada et al. define throughput this way ("the total number of the bits
//! of all the packets which have arrived at the destination host in every
//! one second interval") and report its maximum over the run.
//!
//! ```toml
//! [[agent]]
//! kind = "meter"
//! node = "d"
//! interval = "1s"   # default
//! ```
//!
//! Stats: `max_mbps` and `mean_mbps` over the complete intervals (the one
//! still open when the run ends is left out), `packets`, `bytes`,
//! `intervals`.

use std::any::Any;

use pep_core::{Duration, Instant};
use serde::Deserialize;
use toml::Table;

use super::{params, AgentError, AgentSite, NodeAgent, Outbox};
use crate::packet::{NodeIndex, Packet};
use crate::scenario::MAX_OUTPUT_ROWS;
use crate::units::{parse_duration, positive_duration};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    interval: Option<String>,
}

/// Counts what arrives at its node for the flows it covers.
pub struct Meter {
    interval: Duration,
    /// `covers[flow id]`.
    covers: Vec<bool>,
    /// Wire bytes per interval, from time zero.
    bins: Vec<u64>,
    packets: u64,
    bytes: u64,
}

pub fn make(t: &Table, site: &AgentSite) -> Result<Box<dyn NodeAgent>, AgentError> {
    let p: Params = params(t)?;
    let interval = match &p.interval {
        None => Duration::from_secs(1),
        Some(s) => parse_duration(s)
            .and_then(positive_duration)
            .map_err(|e| AgentError::new("interval", e.message()))?,
    };
    // One counter per interval, as the output series' rows.
    let bins = site.scenario.duration.as_nanos() / interval.as_nanos();
    if bins > MAX_OUTPUT_ROWS {
        let msg = format!(
            "{} gives {bins} intervals in the run's {}; at most {MAX_OUTPUT_ROWS} are kept",
            interval, site.scenario.duration
        );
        return Err(AgentError::new("interval", msg));
    }
    let mut covers = vec![false; site.scenario.flows.len()];
    for &f in site.flows {
        covers[f] = true;
    }
    Ok(Box::new(Meter::new(interval, covers)))
}

impl Meter {
    pub fn new(interval: Duration, covers: Vec<bool>) -> Self {
        Meter {
            interval,
            covers,
            bins: Vec::new(),
            packets: 0,
            bytes: 0,
        }
    }

    /// Mbit/s in each complete interval.
    pub fn series(&self) -> Vec<f64> {
        let complete = self.bins.len().saturating_sub(1);
        let secs = self.interval.as_secs_f64();
        self.bins[..complete]
            .iter()
            .map(|&b| b as f64 * 8.0 / secs / 1e6)
            .collect()
    }
}

impl NodeAgent for Meter {
    fn on_packet(&mut self, now: Instant, node: NodeIndex, p: Packet, out: &mut Outbox) {
        let f = p.seg.flow.0 as usize;
        if p.dst == node && self.covers.get(f).copied().unwrap_or(false) {
            let bin = (now.as_nanos() / self.interval.as_nanos()) as usize;
            if self.bins.len() <= bin {
                self.bins.resize(bin + 1, 0);
            }
            let b = p.seg.wire_len() as u64;
            self.bins[bin] += b;
            self.bytes += b;
            self.packets += 1;
        }
        out.send(node, p);
    }

    fn on_timeout(&mut self, _now: Instant, _out: &mut Outbox) {}

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn stats(&self) -> serde_json::Value {
        let s = self.series();
        let max = s.iter().copied().fold(0.0, f64::max);
        let mean = if s.is_empty() {
            0.0
        } else {
            s.iter().sum::<f64>() / s.len() as f64
        };
        serde_json::json!({
            "max_mbps": pep_core::time::fmt_out::round6(max),
            "mean_mbps": pep_core::time::fmt_out::round6(mean),
            "packets": self.packets,
            "bytes": self.bytes,
            "intervals": s.len(),
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
