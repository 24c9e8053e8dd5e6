//! # pep-sim: a deterministic discrete-event network simulator
//!
//! Runs TCP flows and PEP mechanisms over networks described by scenario
//! files. Time is integer nanoseconds; events at the same instant run in the
//! order they were scheduled; randomness comes from streams derived from the
//! scenario's seed. The same scenario and seed produce byte-identical outputs
//! on any machine.
//!
//! * [`scenario`]: the TOML format, its validation and the resolved model.
//! * [`Simulation`]: built from a scenario; `run`, `run_until`, `summary`,
//!   `write_outputs`.
//! * [`tcp`]: sans-IO TCP sender and receiver.
//! * [`agent`]: PEP agents on nodes, the seam every mechanism plugs into.
//! * [`events`]: the event queue.
//! * [`metrics`], [`output`]: what a run records and writes ([`spread`]:
//!   per-flow series of many flows as distributions); [`trace`]: pcap
//!   captures of links.
//!
//! Links, queues and loss models are `pep-core`'s time-driven models; this
//! crate only moves packets between them.

pub mod agent;
pub mod bench;
pub mod build;
pub mod columns;
mod cut;
pub mod events;
mod hops;
pub mod metrics;
pub mod ns2;
pub mod output;
pub mod packet;
mod prefetch;
pub mod scenario;
pub mod sim;
pub mod spread;
pub mod table;
pub mod tcp;
pub mod trace;
pub mod traffic;
pub mod tseq;
/// The unit grammar, shared with the lab and the daemon (`pep_model::units`).
pub use pep_model::units;

pub use packet::Packet;
pub use scenario::Scenario;
pub use sim::Simulation;
