//! Long work with the GIL released, stopped cleanly by Ctrl-C.
//!
//! The work runs on a thread of its own while the calling thread, without
//! the GIL, waits for it; every 100 ms it takes the GIL back to let Python
//! run its signal handlers. A KeyboardInterrupt (or any exception a
//! handler raises) sets `cancel`, which the work checks between slices;
//! once the work has stopped, the exception is raised.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Runs `work` to its end, or until it sees `cancel` set, while Python
/// keeps handling signals; the first exception a signal handler raised
/// wins over the work's result.
pub fn run<T: Send>(
    py: Python<'_>,
    cancel: &AtomicBool,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    std::thread::scope(|s| {
        let (tx, mut rx) = mpsc::channel::<()>();
        let handle = s.spawn(move || {
            let out = work();
            drop(tx);
            out
        });
        let mut raised = None;
        loop {
            // The receiver moves in and out: it is not Sync.
            let (back, waited) = py.detach(move || {
                let r = rx.recv_timeout(Duration::from_millis(100));
                (rx, r)
            });
            rx = back;
            if !matches!(waited, Err(mpsc::RecvTimeoutError::Timeout)) {
                break;
            }
            if raised.is_none() {
                if let Err(e) = py.check_signals() {
                    cancel.store(true, Ordering::Relaxed);
                    raised = Some(e);
                }
            }
        }
        let out = py.detach(|| handle.join()).map_err(|p| {
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            PyRuntimeError::new_err(format!("the simulator panicked: {why}"))
        })?;
        match raised {
            Some(e) => Err(e),
            None => Ok(out),
        }
    })
}
