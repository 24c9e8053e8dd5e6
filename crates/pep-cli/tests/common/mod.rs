//! What the `pep lab` test binaries share: running `pep`, its output as
//! text, the one-lab-at-a-time lock and lab ids of this process.
#![allow(dead_code)] // each binary uses its own subset

use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

pub fn pep() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pep"))
}

/// stdout then stderr.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// One lab at a time in this binary, as in pep-lab's root tests.
static SERIAL: Mutex<()> = Mutex::new(());

/// The lock. The tests taking it are `#[ignore = "needs root"]`; run
/// anyway without root, they fail here saying why.
pub fn root_test(name: &str) -> MutexGuard<'static, ()> {
    pep_lab::error::require_root_for_test(name);
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A lab id of this process, so no other session's lab is touched.
pub fn id(what: &str) -> String {
    format!("t{}-{what}", std::process::id())
}
