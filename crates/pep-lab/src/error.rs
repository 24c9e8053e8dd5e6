//! One error type for the lab: what failed, and the command or file involved.

use std::io;

/// Why a lab operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The lab creates namespaces and packet sockets: it needs root
    /// (CAP_SYS_ADMIN and CAP_NET_ADMIN, CAP_NET_RAW).
    #[error("the lab needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_NET_RAW); running as uid {0}")]
    NotRoot(u32),
    /// An external command (`ip`) failed or could not be started.
    #[error("`{cmd}` failed: {detail}")]
    Command { cmd: String, detail: String },
    /// A system call or file operation failed.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    /// The topology cannot be built as described.
    #[error("topology: {0}")]
    Topology(String),
    /// A traffic run or probe could not complete.
    #[error("traffic: {0}")]
    Traffic(String),
}

pub type Result<T, E = LabError> = std::result::Result<T, E>;

/// Wraps an `io::Error` with what was being done, for `map_err`.
pub(crate) fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> LabError {
    let what = what.into();
    move |source| LabError::Io { what, source }
}

/// The last OS error, named by the call that produced it.
pub(crate) fn last_os(what: impl Into<String>) -> LabError {
    LabError::Io {
        what: what.into(),
        source: io::Error::last_os_error(),
    }
}

/// Fails unless the process runs as root.
pub fn require_root() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if uid == 0 {
        Ok(())
    } else {
        Err(LabError::NotRoot(uid))
    }
}

/// The guard of a test that needs root. Such tests are marked
/// `#[ignore = "needs root"]`, so an ordinary `cargo test` counts them as
/// ignored, with the reason; run anyway (`-- --include-ignored`, as
/// `.ci/run` does as root) without root, the test fails here saying why,
/// rather than passing without having run.
#[track_caller]
pub fn require_root_for_test(test: &str) {
    if let Err(e) = require_root() {
        panic!(
            "{test}: {e}; this test is ignored unless asked for: run it as root, \
             or leave out --include-ignored"
        );
    }
}
