//! What several test files share: times in milliseconds, and scenario
//! text parsed with its error shown.

use pep_core::{Duration, Instant};
use pep_sim::Scenario;

/// `ms` milliseconds into the run.
pub fn at_ms(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

/// Scenario `text` (named `name` in errors), or the test fails with the
/// error.
pub fn parse(text: &str, name: &str) -> Scenario {
    Scenario::from_toml_str(text, name).unwrap_or_else(|e| panic!("{e}"))
}
