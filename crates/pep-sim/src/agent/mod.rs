//! PEP agents: packet logic that sits on a node and sees every packet
//! passing through it.
//!
//! An agent is how a Performance Enhancing Proxy enters a simulation: the
//! watermark PEP, a split-connection relay, ACK regeneration, the two ends
//! of a distributed PEP. The engine hands every packet that reaches one of
//! the agent's nodes to [`NodeAgent::on_packet`] *before* routing or
//! delivering it; the agent passes it on by putting it (or anything else)
//! in the [`Outbox`], or keeps it. Packets in the outbox leave the node they
//! are given for: routed by their destination, or handed to the local TCP
//! endpoint when addressed to that node. They never re-enter the agent.
//!
//! Like every other component the agent is a sans-IO state machine: time
//! comes in as `now`, a wake-up goes out through [`NodeAgent::poll_timeout`].
//! The mechanism's own logic belongs in `pep-core` (where the daemon can use
//! it too); the agent adapts it to simulator packets.
//!
//! ## Adding a kind
//! One file under `agent/` with a [`Make`] function that reads its
//! parameters (with [`params`], so unknown or mistyped fields are reported
//! with their path) and builds the agent, plus one line in [`KINDS`]. The
//! scenario's `[[agent]]` table names the kind, the node(s) and optionally
//! the flows; everything else in the table is the kind's parameters.
//!
//! ## Private flows
//! An agent that opens connections of its own (a tunnel between two PEP
//! nodes) gives their segments flow ids from [`AgentSite::private_flows`],
//! which no scenario flow and no other agent uses. The engine routes such
//! packets like any other and never hands them to a flow's endpoints.

pub mod ack_regen;
pub mod ack_thin;
pub mod meter;
pub mod split;
pub mod split_pair;
pub mod split_relay;
pub mod split_stats;
pub mod watermark;

use std::any::Any;
use std::ops::Range;

use pep_core::{FlowId, Instant};
use serde::de::DeserializeOwned;
use toml::Table;

use crate::packet::{NodeIndex, Packet};
use crate::scenario::Scenario;
use crate::tcp::{SinkConfig, TcpConfig};

/// Flow ids each agent may use for connections of its own.
pub const PRIVATE_FLOWS_PER_AGENT: u32 = 64;

/// Packets an agent sends, each from a node it sits on.
#[derive(Debug, Default)]
pub struct Outbox {
    pub(crate) packets: Vec<(NodeIndex, Packet)>,
}

impl Outbox {
    /// Sends `p` from `node` (one of the agent's nodes).
    pub fn send(&mut self, node: NodeIndex, p: Packet) {
        self.packets.push((node, p));
    }
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }
    pub fn len(&self) -> usize {
        self.packets.len()
    }
    /// Takes what was sent, in order (for drivers outside the engine:
    /// tests that run an agent on a script).
    pub fn drain(&mut self) -> std::vec::Drain<'_, (NodeIndex, Packet)> {
        self.packets.drain(..)
    }
}

/// A PEP agent on one or more nodes.
pub trait NodeAgent: Send {
    /// A packet reached `node`, one of the agent's nodes, before routing or
    /// delivery. To let it go on unchanged: `out.send(node, p)`.
    fn on_packet(&mut self, now: Instant, node: NodeIndex, p: Packet, out: &mut Outbox);

    /// [`Self::poll_timeout`]'s deadline has passed.
    fn on_timeout(&mut self, now: Instant, out: &mut Outbox);

    /// When the agent next wants [`Self::on_timeout`].
    fn poll_timeout(&self) -> Option<Instant>;

    /// Totals for the run summary (`summary.json`, `agents[].stats`): a
    /// JSON object of counters and measures.
    fn stats(&self) -> serde_json::Value;

    /// Values sampled every `output.sample` into `agents.csv` (buffer
    /// occupancy, a window): name and value.
    fn sample(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }

    /// For tests and tools that need the concrete agent back.
    fn as_any(&self) -> &dyn Any;

    /// The run is cut in two between this agent's nodes
    /// (`scenario.cut`): this copy becomes the half that acts on the nodes
    /// for which `here` is true; another copy of the agent, cut the other
    /// way, runs the rest on another thread. Called before the run starts.
    /// An agent whose halves must share state sooner than the cut link's
    /// delay says why it cannot be cut.
    fn cut(&mut self, _here: &dyn Fn(NodeIndex) -> bool) -> Result<(), String> {
        Err("this agent kind cannot run as two halves".into())
    }

    /// What this half sends the other at the end of a window of the cut
    /// link's delay (split start's framing records, say), if anything. It
    /// reaches [`Self::cut_receive`] before the other half runs the next
    /// window.
    fn cut_send(&mut self) -> Option<CutMessage> {
        None
    }

    /// The other half's [`Self::cut_send`].
    fn cut_receive(&mut self, _msg: CutMessage) {}

    /// After the run, the far half's state for [`Self::cut_join`].
    fn cut_take(&mut self) -> Option<CutMessage> {
        None
    }

    /// After the run: takes the far half's state ([`Self::cut_take`]) so
    /// that this copy reports for the whole agent.
    fn cut_join(&mut self, _far: CutMessage) {}
}

/// What one half of a cut agent hands the other; each kind knows its own.
pub type CutMessage = Box<dyn Any + Send>;

/// Where an agent sits and what it acts on; what [`Make`] builds from.
pub struct AgentSite<'a> {
    /// The scenario (without agents while it is being validated).
    pub scenario: &'a Scenario,
    /// The nodes the agent sits on, in the order written.
    pub nodes: &'a [usize],
    /// The flows it acts on: those listed, or every flow.
    pub flows: &'a [usize],
    /// Flow ids it may use for connections of its own.
    pub private_flows: Range<u32>,
    /// Its name, for labels of random streams
    /// (`Stream::derive(scenario.seed, &format!("agent/{name}/..."))`).
    pub name: &'a str,
}

impl AgentSite<'_> {
    /// The largest `mss` of the covered flows (`None` with no flow): the
    /// least a window or buffer of the agent's must hold.
    pub fn largest_mss(&self) -> Option<u32> {
        self.flows
            .iter()
            .map(|&f| self.scenario.flows[f].tcp.mss)
            .max()
    }

    /// The sender configuration of scenario flow `flow`.
    pub fn tcp_config(&self, flow: usize) -> TcpConfig {
        let f = &self.scenario.flows[flow];
        crate::build::tcp_config(&f.tcp, &f.sink)
    }
    /// The receiver configuration of scenario flow `flow`.
    pub fn sink_config(&self, flow: usize) -> SinkConfig {
        let f = &self.scenario.flows[flow];
        crate::build::sink_config(&f.sink, f.tcp.header)
    }
    /// Does the agent act on this flow id?
    pub fn covers(&self, flow: FlowId) -> bool {
        self.flows.contains(&(flow.0 as usize))
    }
}

/// A problem with an agent's parameters: the field (relative to the
/// `[[agent]]` table) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentError {
    pub field: String,
    pub message: String,
}

impl AgentError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        AgentError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A window an agent advertises or keeps (`field`, `bytes`): at least one
/// of its flows' segments (`mss`; below it the sender crawls a few bytes at
/// a time) and at most TCP's largest window.
pub(crate) fn check_window(field: &str, bytes: u64, mss: u64) -> Result<(), AgentError> {
    if (mss..=crate::scenario::MAX_WINDOW as u64).contains(&bytes) {
        return Ok(());
    }
    let msg = format!(
        "must be from one segment ({mss}B, the flows' mss) to {}B (65535 x 2^14, \
         TCP's largest window), got {bytes}B",
        crate::scenario::MAX_WINDOW
    );
    Err(AgentError::new(field, msg))
}

/// Builds an agent of one kind from its parameters.
pub type Make = fn(&Table, &AgentSite) -> Result<Box<dyn NodeAgent>, AgentError>;

/// A registered kind.
pub struct AgentKind {
    pub name: &'static str,
    /// One line for `pep sim check` and the docs.
    pub about: &'static str,
    pub make: Make,
    /// How many nodes the kind sits on (1 for a router agent, 2 for the
    /// two ends of a tunnel).
    pub nodes: usize,
    /// Where on a covered flow's path its node(s) must be.
    pub sits: Sits,
}

/// Where an agent kind acts on a flow: the loader refuses an agent none of
/// whose flows' packets would reach it there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sits {
    /// Strictly between the flow's source and destination; a kind on two
    /// nodes, in the data's order.
    Between,
    /// Between them or on the source, where the ACKs arrive.
    BeforeDestination,
    /// On the source or the destination: it sees what arrives at a host.
    AtEnds,
}

/// Every agent kind a scenario can name.
pub const KINDS: &[AgentKind] = &[
    AgentKind {
        name: "watermark",
        about: "premature ACKs bounded by a watermark (Osada et al. 2005)",
        make: watermark::make,
        nodes: 1,
        sits: Sits::Between,
    },
    AgentKind {
        name: "meter",
        about: "counts the bytes of packets arriving at a host per interval",
        make: meter::make,
        nodes: 1,
        sits: Sits::AtEnds,
    },
    AgentKind {
        name: "ack-regen",
        about:
            "ACK regeneration after a slow reverse link (Shekhar et al.): R ACKs per suppressed ACK",
        make: ack_regen::make,
        nodes: 1,
        sits: Sits::BeforeDestination,
    },
    AgentKind {
        name: "ack-thin",
        about: "ACK thinning in front of a slow reverse link: every N-th pure ACK of a flow",
        make: ack_thin::make,
        nodes: 1,
        sits: Sits::Between,
    },
    AgentKind {
        name: "split",
        about:
            "split-connection PEP: terminates each flow and forwards its bytes on a new connection",
        make: split::make,
        nodes: 1,
        sits: Sits::Between,
    },
    AgentKind {
        name: "split-pair",
        about: "distributed split-connection PEP (Gschwandtner): local queue, credit, one tunnel",
        make: split_pair::make,
        nodes: 2,
        sits: Sits::Between,
    },
];

/// The registered kind called `name`.
pub fn kind(name: &str) -> Option<&'static AgentKind> {
    KINDS.iter().find(|k| k.name == name)
}

/// Reads a kind's parameters into its own struct (which should deny unknown
/// fields), reporting the first problem with its path.
pub fn params<T: DeserializeOwned>(t: &Table) -> Result<T, AgentError> {
    serde_path_to_error::deserialize(toml::Value::Table(t.clone())).map_err(|e| {
        let field = e.path().to_string();
        let field = if field == "." { String::new() } else { field };
        AgentError::new(field, e.inner().message().trim().to_string())
    })
}

#[cfg(test)]
mod tests;
