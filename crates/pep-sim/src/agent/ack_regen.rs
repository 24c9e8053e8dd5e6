//! `kind = "ack-regen"`: ACK regeneration ([`pep_core::ack_regen`]) on the
//! node after a slow reverse link, re-creating the ACKs a Smart ACK Dropper
//! (`queue = { kind = "sad" }`) merged.
//!
//! ```toml
//! [[agent]]
//! kind = "ack-regen"
//! node = "src"          # where the reverse link's ACKs arrive
//! factor = 2            # R: ACKs per suppressed ACK (default 1)
//! spacing = true        # spread each train over the last inter-ACK gap
//! max_spacing = "100ms" # longest spread (default)
//! mss = "1000B"         # default: the first covered flow's MSS
//! ```
//!
//! Only pure ACKs of the covered flows are regenerated; every other packet
//! passes unchanged.

use std::any::Any;

use pep_core::ack_regen::{AckRegen, AckRegenConfig};
use pep_core::{Duration, Instant};
use serde::Deserialize;
use toml::Table;

use super::{params, AgentError, AgentSite, NodeAgent, Outbox};
use crate::packet::{NodeIndex, Packet};
use crate::scenario::MAX_MSS;
use crate::units;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    factor: Option<i64>,
    spacing: Option<bool>,
    max_spacing: Option<String>,
    mss: Option<String>,
    max_flows: Option<i64>,
}

pub fn make(t: &Table, site: &AgentSite) -> Result<Box<dyn NodeAgent>, AgentError> {
    let p: Params = params(t)?;
    let factor = match p.factor.unwrap_or(1) {
        f @ 1..=1000 => f as u32,
        f => {
            return Err(AgentError::new(
                "factor",
                format!("the regeneration factor R must be 1..=1000, got {f}"),
            ))
        }
    };
    let max_spacing = match &p.max_spacing {
        None => Duration::from_millis(100),
        Some(s) => {
            units::parse_duration(s).map_err(|e| AgentError::new("max_spacing", e.to_string()))?
        }
    };
    let mss = match &p.mss {
        Some(s) => match units::parse_bytes(s) {
            Ok(b) if (1..=MAX_MSS as u64).contains(&b) => b as u32,
            Ok(0) => return Err(AgentError::new("mss", "must be positive")),
            Ok(b) => {
                let msg = format!("must be at most {MAX_MSS}B, as a flow's mss, got {b}B");
                return Err(AgentError::new("mss", msg));
            }
            Err(e) => return Err(AgentError::new("mss", e.to_string())),
        },
        None => match site.flows.first() {
            Some(&f) => site.tcp_config(f).mss,
            None => return Err(AgentError::new("mss", "no flow to take it from: give mss")),
        },
    };
    let max_flows = match p.max_flows.unwrap_or(4096) {
        n @ 1..=1_000_000 => n as usize,
        n => {
            return Err(AgentError::new(
                "max_flows",
                format!("must be 1..=1000000, got {n}"),
            ))
        }
    };
    let cfg = AckRegenConfig {
        factor,
        mss,
        spacing: p.spacing.unwrap_or(false),
        max_spacing,
        max_flows,
    };
    let covered: Vec<bool> = (0..site.scenario.flows.len())
        .map(|f| site.flows.contains(&f))
        .collect();
    Ok(Box::new(AckRegenAgent {
        ar: AckRegen::new(cfg),
        covered,
        node: site.nodes[0] as NodeIndex,
        addr: Vec::new(),
    }))
}

pub struct AckRegenAgent {
    pub ar: AckRegen,
    covered: Vec<bool>,
    node: NodeIndex,
    /// (src, dst) of each flow's ACKs, to address regenerated ones.
    addr: Vec<Option<(NodeIndex, NodeIndex)>>,
}

impl AckRegenAgent {
    fn flush(&mut self, now: Instant, out: &mut Outbox) {
        while let Some(seg) = self.ar.poll_transmit(now) {
            let (src, dst) = self.addr[seg.flow.0 as usize].expect("seen");
            out.send(self.node, Packet { seg, src, dst });
        }
    }
}

impl NodeAgent for AckRegenAgent {
    fn on_packet(&mut self, now: Instant, node: NodeIndex, p: Packet, out: &mut Outbox) {
        let f = p.seg.flow.0 as usize;
        if !p.seg.is_pure_ack() || !self.covered.get(f).copied().unwrap_or(false) {
            out.send(node, p);
            return;
        }
        if self.addr.len() <= f {
            self.addr.resize(f + 1, None);
        }
        self.addr[f] = Some((p.src, p.dst));
        self.ar.handle_ack(now, p.seg);
        self.flush(now, out);
    }

    fn on_timeout(&mut self, now: Instant, out: &mut Outbox) {
        self.flush(now, out);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.ar.poll_timeout()
    }

    fn stats(&self) -> serde_json::Value {
        let s = &self.ar.stats;
        serde_json::json!({
            "factor": self.ar.config().factor,
            "arrived": s.arrived,
            "sent": s.sent,
            "regenerated": s.regenerated,
            "passed": s.passed,
            "flushed": s.flushed,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
