//! # pep-exp: from a question to a figure
//!
//! Experiments on the pepkit simulator:
//!
//! * [`experiment`]: experiment files (a base scenario, parameters to vary,
//!   seeds, measures, plots), checked before anything runs;
//! * [`measure`]: the measure-path language over a run's summary
//!   (`flow.bulk.goodput_mbps`, `jain(flow.*.goodput_mbps)`);
//! * [`runner`]: every (point, seed) on all cores, resumable, each run a
//!   pure function of a [`runner::Task`];
//! * [`results`]: `results.csv` and `aggregate.csv` (mean, sd, 95% CI);
//! * [`plots`]: charts from a sweep or from a single run's directory;
//! * [`reproduce`]: papers' claims checked against our runs, with reports.
//!
//! The file formats are documented in docs/experiments.md.

pub mod experiment;
pub mod measure;
pub mod parquet;
mod place;
pub mod plots;
pub mod plotspec;
pub mod reproduce;
pub mod results;
pub mod runner;
pub mod shard;
pub mod slurm;
pub mod tseq;

pub use experiment::{ExpError, ExpWarning, Experiment, Mode};
pub use measure::Measure;
pub use results::{Results, Stats};
pub use runner::{sweep, Outcome, Progress, SweepConfig, SweepError};
