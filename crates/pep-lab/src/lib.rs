//! # pep-lab: real Linux TCP on the papers' topologies
//!
//! The lab builds a topology as network namespaces joined through
//! user-space link emulators, and runs real TCP over it:
//!
//! * [`topology`]: what to build ([`LabTopology`]: nodes, duplex links with
//!   per-direction rate, delay, queue and loss), and the naming, addressing
//!   and routing plan derived from it.
//! * [`lab`]: [`Lab::up`] builds it (namespaces, veths with offloads off,
//!   addresses, static neighbours, routes, one emulator per link) and
//!   [`Lab::down`] (or dropping the `Lab`) removes it. [`state`] finds and
//!   removes labs whose process died ([`state::down`]).
//! * [`emu`]: the link emulator. The core's `LinkDir` (queue, serializer,
//!   loss, delay line: the simulator's very model) driven by the real clock
//!   on one thread per direction, bridging two veths with `AF_PACKET`
//!   sockets. This kernel has no netem, and a user-space emulator runs the
//!   same model as `pep sim`.
//! * [`traffic`]: TCP transfers with a chosen congestion control, checked
//!   byte for byte, with goodput and `TCP_INFO` over time; [`report`]
//!   writes them in the simulator's CSV and JSON shapes.
//! * [`daemon`]: programs (the PEP daemon) run in a node's namespace,
//!   stopped with the lab, and by the kernel if the lab's process dies.
//! * [`probe`]: ICMP ping and UDP packet trains to measure delay, rate and
//!   loss of an emulated path.
//!
//! Everything that touches the system needs root; [`error::require_root`]
//! says so first. See `docs/lab.md` for usage, limits and measured
//! accuracy.
//!
//! ## Driving the core with the real clock
//!
//! The core's contract (`pep_core` crate docs) holds here with `now` read
//! from `CLOCK_MONOTONIC` ([`pep_io::clock::Clock`]): each emulator thread calls
//! `handle_timeout(now)`, drains `poll_deliver(now)`, offers arrivals with
//! `enqueue(now, ..)`, and sleeps until `poll_timeout()`. Transmissions are
//! scheduled in model time, so a thread that wakes late delays packets but
//! does not change the link's rate.

pub mod daemon;
pub mod emu;
pub mod error;
pub mod ethtool;
pub mod lab;
pub mod netns;
pub mod pattern;
pub mod probe;
pub mod report;
pub mod signals;
pub mod state;
pub mod tcpinfo;
pub mod topology;
pub mod traffic;

pub use error::{LabError, Result};
pub use lab::{Lab, LabOptions};
pub use state::Endpoint;
pub use topology::{DirParams, Discipline, LabTopology, LossParams, Role, RouteTcp};
