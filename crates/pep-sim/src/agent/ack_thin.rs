//! `kind = "ack-thin"`: ACK thinning ([`pep_core::ack_thin`]) on a node in
//! front of a slow reverse link: of a flow's advancing pure ACKs every
//! N-th passes, the others wait up to `max_hold` for a successor, which
//! replaces them. The daemon's packet mode runs the same machine on real
//! frames (`pep-daemon/src/packet/engine.rs`); the settings are its
//! `[packet]` ones, with the same names, ranges and defaults:
//!
//! ```toml
//! [[agent]]
//! kind = "ack-thin"
//! node = "gw"          # between the receivers and the slow uplink
//! ack_thin = 2         # N, packet.ack_thin: pass every N-th (0 or 1: thin nothing)
//! max_hold = "20ms"    # packet.max_hold (default 20 ms)
//! max_flows = 65536    # packet.max_flows (default)
//! ```
//!
//! It regulates the packets of the covered flows travelling toward the
//! flow's source (the ACK direction, the daemon's frames from `a` to
//! `b`); their data passes untouched, as the daemon's frames from `b` to
//! `a` do. What is never thinned (duplicates, new SACK information,
//! window updates, ECE, anything but a pure ACK) is the machine's rule.

use std::any::Any;

use pep_core::ack_thin::{AckThin, AckThinConfig};
use pep_core::{Duration, Instant};
use serde::Deserialize;
use toml::Table;

use super::{params, AgentError, AgentSite, NodeAgent, Outbox};
use crate::packet::{NodeIndex, Packet};
use crate::units;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    ack_thin: Option<i64>,
    max_hold: Option<String>,
    max_flows: Option<i64>,
}

/// The daemon's `[packet]` ranges and defaults (`packet/config.rs`).
const MAX_N: i64 = 1_000;
const MAX_FLOWS: i64 = 1 << 22;
const DEFAULT_MAX_FLOWS: i64 = 65_536;
const DEFAULT_MAX_HOLD: Duration = Duration::from_millis(20);

pub fn make(t: &Table, site: &AgentSite) -> Result<Box<dyn NodeAgent>, AgentError> {
    let p: Params = params(t)?;
    let n = match p.ack_thin {
        None => {
            return Err(AgentError::new(
                "ack_thin",
                "missing: N, the agent passes every N-th advancing pure ACK of a flow",
            ))
        }
        Some(n @ 0..=MAX_N) => n as u32,
        Some(n) => {
            return Err(AgentError::new(
                "ack_thin",
                format!("{n} is not in 0..={MAX_N}"),
            ))
        }
    };
    let max_hold = match &p.max_hold {
        None => DEFAULT_MAX_HOLD,
        Some(s) => {
            units::parse_duration(s).map_err(|e| AgentError::new("max_hold", e.to_string()))?
        }
    };
    if n > 1 && max_hold == Duration::ZERO {
        return Err(AgentError::new(
            "max_hold",
            "must be positive with ack_thin (a held ACK would never wait)",
        ));
    }
    let max_flows = match p.max_flows.unwrap_or(DEFAULT_MAX_FLOWS) {
        m @ 1..=MAX_FLOWS => m as usize,
        m => {
            return Err(AgentError::new(
                "max_flows",
                format!("{m} is not in 1..={MAX_FLOWS}"),
            ))
        }
    };
    let sc = site.scenario;
    // Where each covered flow's ACKs go: its source.
    let mut ack_dst = vec![None; sc.flows.len()];
    for &f in site.flows {
        ack_dst[f] = Some(sc.flows[f].src as NodeIndex);
    }
    Ok(Box::new(AckThinAgent {
        thin: AckThin::new(AckThinConfig {
            n: n.max(1),
            max_hold,
            max_flows,
        }),
        ack_dst,
        node: site.nodes[0] as NodeIndex,
    }))
}

pub struct AckThinAgent {
    pub thin: AckThin<Packet>,
    /// Per scenario flow: its source, if the agent covers it.
    ack_dst: Vec<Option<NodeIndex>>,
    node: NodeIndex,
}

impl AckThinAgent {
    fn flush(&mut self, now: Instant, out: &mut Outbox) {
        while let Some(p) = self.thin.poll_transmit(now) {
            out.send(self.node, p);
        }
    }
}

impl NodeAgent for AckThinAgent {
    fn on_packet(&mut self, now: Instant, node: NodeIndex, p: Packet, out: &mut Outbox) {
        let f = p.seg.flow.0 as usize;
        if self.ack_dst.get(f).copied().flatten() != Some(p.dst) {
            out.send(node, p);
            return;
        }
        self.thin.handle(now, p);
        self.flush(now, out);
    }

    fn on_timeout(&mut self, now: Instant, out: &mut Outbox) {
        self.flush(now, out);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.thin.poll_timeout()
    }

    fn stats(&self) -> serde_json::Value {
        let s = &self.thin.stats;
        serde_json::json!({
            "ack_thin": self.thin.config().n,
            "arrived": s.arrived,
            "passed": s.passed,
            "thinned": s.thinned,
            "kept_special": s.kept_special,
            "released_by_timer": s.released_by_timer,
            "evicted": s.evicted,
            "bypassed": s.bypassed,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
