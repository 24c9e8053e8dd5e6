//! # pep-io: the OS side shared by the lab and the daemon
//!
//! What both the lab's link emulator (`pep-lab`) and the daemon's packet
//! mode (`pep-daemon`) need to drive the core's models on real packets, and
//! nothing of either: the daemon, a product, does not depend on the lab, a
//! test bench.
//!
//! * [`frame`]: Ethernet frames as the core's link items (a wire length and
//!   a [`pep_core::Segment`] for the queue disciplines and loss models),
//!   written back into their bytes after SAD rewrites an ACK; [`frame::FlowTable`]
//!   gives each 4-tuple its own flow id.
//! * [`packet_socket`]: `AF_PACKET` sockets, whole frames in and out of one
//!   interface.
//! * [`clock`]: `CLOCK_MONOTONIC` as the core's `Instant`, precise sleeps,
//!   thread settings for timers, and a lateness histogram.
//!
//! The core's driver contract (`pep_core` crate docs) holds with `now`
//! read from [`clock::Clock`].

pub mod clock;
pub mod frame;
pub mod packet_socket;
