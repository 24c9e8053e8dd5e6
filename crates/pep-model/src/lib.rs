//! What the simulator, the lab and the daemon must read the same way, in
//! one place below all three: the unit grammar of rates, durations and
//! sizes ([`units`]), the topology with its route search ([`route`]), and
//! the result schema ([`table`]: each results table's columns and cells,
//! which the CSV and Parquet writers both read). Plain data and pure
//! functions: no files, no clock (a table writes its CSV text to any
//! `io::Write` it is given).

pub mod route;
pub mod table;
pub mod units;

pub use route::{Dir, Graph, NodeKind, Routes};
