//! # pep-py: the native module of `pepkit`, the Python package
//!
//! `python/pepkit` is the Python face (docs/python.md); this crate is
//! `pepkit._native`, which it calls. The simulator, the sweeps and the
//! tables are pep-sim's and pep-exp's own: nothing here runs or tabulates
//! anything twice. What is here:
//!
//! * [`arrow`]: a results table as an Arrow C stream, which pyarrow
//!   imports without copying through CSV text;
//! * [`identity`]: which file holds this simulator, so that sweep records
//!   are keyed by the module's build, not by the Python interpreter's;
//! * with the `python` feature (maturin turns it on): the PyO3 module,
//!   which runs the simulator with the GIL released and stops a run or a
//!   sweep cleanly on Ctrl-C.

pub mod arrow;
pub mod identity;

#[cfg(feature = "python")]
mod interrupt;
#[cfg(feature = "python")]
mod module;
