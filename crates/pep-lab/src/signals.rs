//! Waiting for the user to stop a lab (Ctrl-C, `kill`, a closed terminal).
//!
//! The signals are blocked in the calling thread *before* the lab starts
//! its threads, which inherit the mask, so none of them is interrupted;
//! then the main thread takes them synchronously with `sigwait` and takes
//! the lab down in ordinary code, with no signal-handler restrictions.

use std::mem::MaybeUninit;

use crate::error::{last_os, Result};

/// SIGINT, SIGTERM and SIGHUP, blocked in this thread and its future
/// threads.
pub struct TerminationSignals {
    set: libc::sigset_t,
}

impl TerminationSignals {
    /// Blocks the signals; call before starting any thread.
    pub fn block() -> Result<TerminationSignals> {
        let mut set = MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: sigemptyset initializes the set; sigaddset and
        // pthread_sigmask take it by pointer.
        unsafe {
            libc::sigemptyset(set.as_mut_ptr());
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::sigaddset(set.as_mut_ptr(), sig);
            }
            let set = set.assume_init();
            if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                return Err(last_os("block signals"));
            }
            Ok(TerminationSignals { set })
        }
    }

    /// Waits for one of the signals; returns its number.
    pub fn wait(&self) -> i32 {
        let mut sig = 0;
        // SAFETY: `self.set` is initialized; `sig` is a valid out-pointer.
        unsafe { libc::sigwait(&self.set, &mut sig) };
        sig
    }
}
