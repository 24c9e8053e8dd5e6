//! `kind = "watermark"`: the premature-ACK PEP of Osada et al. on a router,
//! one [`pep_core::watermark::Watermark`] per flow it covers.
//!
//! ```toml
//! [[agent]]
//! kind = "watermark"
//! node = "p"
//! buffer = 50            # N, packets
//! watermark = 30         # W, 0..=N (0: plain TCP)
//! window = "19200B"      # advertised in premature and passed ACKs
//!                        # (default: the destination's own)
//! min_rto = "200ms"      # floor of the PEP-to-destination RTO
//! dupthresh = 3          # duplicate ACKs that trigger a local repair
//! ```
//!
//! The agent decides direction by address: a segment from the flow's
//! sender to its destination is data for the core, one from the
//! destination is an ACK. Premature ACKs leave the router addressed from
//! the destination to the sender, as the destination's own would.

use std::any::Any;

use pep_core::watermark::{Action, Stats, Watermark, WatermarkConfig};
use pep_core::{FlowId, Instant};
use serde::Deserialize;
use toml::Table;

use super::{params, AgentError, AgentSite, NodeAgent, Outbox};
use crate::packet::{NodeIndex, Packet};
use crate::units::{parse_bytes, parse_duration};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    buffer: usize,
    watermark: usize,
    window: Option<String>,
    min_rto: Option<String>,
    dupthresh: Option<u32>,
}

/// One connection the PEP covers.
struct Conn {
    flow: FlowId,
    sender: NodeIndex,
    dest: NodeIndex,
    pep: Watermark,
}

/// The watermark PEP on one router.
pub struct WatermarkAgent {
    /// The router it sits on.
    node: NodeIndex,
    conns: Vec<Conn>,
    /// `conn_of[flow id]`: index into `conns`, or `usize::MAX`.
    conn_of: Vec<usize>,
}

/// Reads `[[agent]] kind = "watermark"`.
pub fn make(t: &Table, site: &AgentSite) -> Result<Box<dyn NodeAgent>, AgentError> {
    let p: Params = params(t)?;
    let mut cfg = WatermarkConfig::new(p.buffer, p.watermark);
    if let Some(w) = &p.window {
        let b = parse_bytes(w).map_err(|e| AgentError::new("window", e.message()))?;
        if b == 0 || b > u32::MAX as u64 {
            return Err(AgentError::new(
                "window",
                "must be between 1 byte and 4 GiB",
            ));
        }
        cfg.window = Some(b as u32);
    }
    if let Some(m) = &p.min_rto {
        let d = parse_duration(m).map_err(|e| AgentError::new("min_rto", e.message()))?;
        cfg.rtt.min_rto = d;
        cfg.rtt.initial_rto = cfg.rtt.initial_rto.max(d);
    }
    if let Some(d) = p.dupthresh {
        cfg.dupthresh = d;
    }
    cfg.validate()
        .map_err(|(field, msg)| AgentError::new(field, msg))?;
    let flows: Vec<(FlowId, NodeIndex, NodeIndex)> = site
        .flows
        .iter()
        .map(|&f| {
            let spec = &site.scenario.flows[f];
            (
                FlowId(f as u32),
                spec.src as NodeIndex,
                spec.dst as NodeIndex,
            )
        })
        .collect();
    Ok(Box::new(WatermarkAgent::new(
        cfg,
        site.nodes[0] as NodeIndex,
        &flows,
    )))
}

impl WatermarkAgent {
    /// A PEP on `node` for `flows` (id, sender node, destination node).
    pub fn new(
        cfg: WatermarkConfig,
        node: NodeIndex,
        flows: &[(FlowId, NodeIndex, NodeIndex)],
    ) -> Self {
        let mut conn_of = Vec::new();
        let conns = flows
            .iter()
            .enumerate()
            .map(|(i, &(flow, sender, dest))| {
                let id = flow.0 as usize;
                if conn_of.len() <= id {
                    conn_of.resize(id + 1, usize::MAX);
                }
                conn_of[id] = i;
                Conn {
                    flow,
                    sender,
                    dest,
                    pep: Watermark::new(cfg),
                }
            })
            .collect();
        WatermarkAgent {
            node,
            conns,
            conn_of,
        }
    }

    /// The core of flow `flow`, for tests and tools.
    pub fn core(&self, flow: FlowId) -> Option<&Watermark> {
        self.conns.iter().find(|c| c.flow == flow).map(|c| &c.pep)
    }

    fn totals(&self) -> Stats {
        let mut t = Stats::default();
        for c in &self.conns {
            let s = c.pep.stats();
            t.data_packets += s.data_packets;
            t.p_acked += s.p_acked;
            t.stored += s.stored;
            t.through += s.through;
            t.premature_acks += s.premature_acks;
            t.passed_acks += s.passed_acks;
            t.dropped_acks += s.dropped_acks;
            t.suppressed_dupacks += s.suppressed_dupacks;
            t.held_back += s.held_back;
            t.local_retransmits += s.local_retransmits;
            t.timeouts += s.timeouts;
            t.fast_repairs += s.fast_repairs;
            t.max_occupancy = t.max_occupancy.max(s.max_occupancy);
            t.w_lowered += s.w_lowered;
        }
        t
    }
}

fn flush(c: &mut Conn, node: NodeIndex, out: &mut Outbox) {
    while let Some(a) = c.pep.poll_action() {
        let (seg, src, dst) = match a {
            Action::Forward(s) | Action::Retransmit(s) => (s, c.sender, c.dest),
            Action::PrematureAck(s) | Action::PassAck(s) => (s, c.dest, c.sender),
            Action::DropAck(_) => continue,
        };
        out.send(node, Packet { seg, src, dst });
    }
}

impl NodeAgent for WatermarkAgent {
    fn on_packet(&mut self, now: Instant, node: NodeIndex, p: Packet, out: &mut Outbox) {
        let i = self
            .conn_of
            .get(p.seg.flow.0 as usize)
            .copied()
            .unwrap_or(usize::MAX);
        let Some(c) = self.conns.get_mut(i) else {
            out.send(node, p);
            return;
        };
        if p.src == c.sender && p.dst == c.dest {
            c.pep.handle_from_sender(now, p.seg);
        } else if p.src == c.dest && p.dst == c.sender {
            c.pep.handle_from_dest(now, p.seg);
        } else {
            out.send(node, p);
            return;
        }
        flush(c, node, out);
    }

    fn on_timeout(&mut self, now: Instant, out: &mut Outbox) {
        let node = self.node;
        for c in &mut self.conns {
            if c.pep.poll_timeout().is_some_and(|t| t <= now) {
                c.pep.handle_timeout(now);
                flush(c, node, out);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.conns.iter().filter_map(|c| c.pep.poll_timeout()).min()
    }

    fn stats(&self) -> serde_json::Value {
        let t = self.totals();
        serde_json::json!({
            "data_packets": t.data_packets,
            "p_acked": t.p_acked,
            "stored": t.stored,
            "through": t.through,
            "premature_acks": t.premature_acks,
            "passed_acks": t.passed_acks,
            "dropped_acks": t.dropped_acks,
            "suppressed_dupacks": t.suppressed_dupacks,
            "held_back": t.held_back,
            "local_retransmits": t.local_retransmits,
            "timeouts": t.timeouts,
            "fast_repairs": t.fast_repairs,
            "max_occupancy": t.max_occupancy,
            "w_lowered": t.w_lowered,
        })
    }

    fn sample(&self) -> Vec<(&'static str, f64)> {
        let n: usize = self.conns.iter().map(|c| c.pep.occupancy()).sum();
        let w: usize = self.conns.iter().map(|c| c.pep.current_watermark()).sum();
        let through: usize = self
            .conns
            .iter()
            .map(|c| c.pep.through_packets().count())
            .sum();
        vec![
            ("occupancy", n as f64),
            ("watermark", w as f64),
            ("through", through as f64),
        ]
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
