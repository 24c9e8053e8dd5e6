//! What several test files share: times in milliseconds, scenario text
//! parsed with its error shown, and a run's split-pair agent.

use pep_core::{Duration, Instant};
use pep_sim::agent::split_pair::SplitPair;
use pep_sim::{Scenario, Simulation};

/// `ms` milliseconds into the run.
pub fn at_ms(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

/// Scenario `text` (named `name` in errors), or the test fails with the
/// error.
pub fn parse(text: &str, name: &str) -> Scenario {
    Scenario::from_toml_str(text, name).unwrap_or_else(|e| panic!("{e}"))
}

/// The split-pair agent named `name` in `sim`.
pub fn split_pair<'a>(sim: &'a Simulation, name: &str) -> &'a SplitPair {
    sim.agent(name)
        .unwrap_or_else(|| panic!("no agent {name:?}"))
        .as_any()
        .downcast_ref::<SplitPair>()
        .unwrap_or_else(|| panic!("agent {name:?} is not a split-pair"))
}
