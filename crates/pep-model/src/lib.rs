//! What the simulator, the lab and the daemon must read the same way, in
//! one place below all three: the unit grammar of rates, durations and
//! sizes ([`units`]), and the topology with its route search ([`route`]).
//! Plain data and pure functions: no I/O, no clock.

pub mod route;
pub mod units;

pub use route::{Dir, Graph, NodeKind, Routes, MAX_NODES};
