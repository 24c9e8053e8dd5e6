//! # pep-core: the sans-IO heart of pepkit
//!
//! Everything here is a state machine or a model that takes time as an
//! input, so the same code runs under the simulator's virtual clock and the
//! daemon's real one.
//!
//! ## The core cannot reach the OS
//! The crate is `no_std` with `alloc` (unit tests aside): std's clocks,
//! files, sockets, threads, environment, processes and `RandomState` hash
//! maps cannot even be named. Randomness comes only from seeded
//! [`rng::Stream`]s (rand and rand_chacha without their `std` feature, so
//! no `thread_rng`, `from_entropy` or getrandom); per-flow maps are
//! [`flow_map::FlowMap`]s, whose hasher has no seed. What stays reachable
//! when a sibling crate in the same build turns on a dependency's `std`
//! feature (rand's entropy seeding, hashbrown's random default hasher) is
//! forbidden in `clippy.toml`. `scripts/core-escape-check.sh` (run by CI)
//! shows each way out failing to compile, and that `cargo tree -p pep-core`
//! has no I/O crate.
//!
//! ## Driver contract
//! Time is always an input: an integer number of nanoseconds
//! ([`time::Instant`]) that never decreases from one call to the next.
//! The stateful components take one of three shapes.
//!
//! * **Event machines** (a link direction [`link`], [`medium`], [`host`],
//!   [`watermark`], [`ack_thin`], [`ack_regen`], [`relay`], split start's
//!   local queue and credit [`localq`]). Inputs: `handle_*(now, ..)` feeds
//!   an event, and `handle_timeout(now)` when the deadline it asked for has
//!   come. Outputs: `poll_*` drains what the component wants done
//!   (segments to transmit, packets delivered, actions, closed enums or
//!   plain values); `poll_timeout()` says when it next needs
//!   `handle_timeout`. After any input the driver drains the outputs until
//!   they return `None`, then re-reads `poll_timeout()`. A driver may call
//!   `handle_timeout` early or late; components check their own deadlines.
//!   [`localq`] wants each action acted on before the next is polled (what
//!   an admitted packet releases into the tunnel is an input that can raise
//!   the credit within the same check).
//! * **Call-and-return models** with no timer of their own: queues
//!   ([`queue`]: `enqueue`/`dequeue`), loss models ([`loss`]), RTT
//!   estimators ([`rtt`]), congestion control ([`cc`]: called on each ACK,
//!   loss and timeout, its answers are return values), the tunnel's framing
//!   table and per-flow credit ([`splitpair`]: split end pulls the stream's
//!   chunks as an iterator or head by head), and the Smart ACK Dropper
//!   ([`sad::Sad`]), whose protocol spans the driver's queue because the
//!   dropper sits in front of a queue it does not own: for a pure ACK call
//!   `arrive`; on `Arrival::Enqueue` offer it to the queue and call
//!   `admitted` if the queue took it; call `depart` on each pure ACK the
//!   queue hands to the link (it rewrites the ACK in place). Every answer
//!   is a return value; [`queue::SadQueue`] is that protocol driven once,
//!   for the simulator's and the lab's links.
//!
//! Nothing in the core takes a callback.
//!
//! ## Modules
//! * [`time`]: `Instant`, `Duration`, `Rate` in integer units.
//! * [`seq`]: wrapping 32-bit sequence numbers.
//! * [`segment`]: the segment model mechanisms act on.
//! * [`rng`]: seeded, labelled random streams.
//! * [`queue`], [`loss`], [`link`]: time-driven network models shared by the
//!   simulator and the lab: queue disciplines (DropTail, RED, priority,
//!   weighted two-class sharing), loss models (Bernoulli, Gilbert-Elliott,
//!   scripted, per packet kind), link directions.
//! * [`medium`]: a half-duplex medium shared by a link's two directions.
//! * [`host`]: per-packet processing cost at an end host.
//! * [`watermark`]: premature ACKs bounded by a watermark (Osada et al.),
//!   with local retransmission from the PEP buffer.
//! * [`localq`]: split start's local queue and credit (Gschwandtner), with
//!   the thesis's credit and two repairs as policies; [`splitpair`]: the
//!   tunnel's framing table and per-flow credit.
//! * [`relay`]: the split-connection relay (two bounded byte streams,
//!   backpressure, half-close, resets, idle timeout) that the daemon's
//!   connections and the simulator's `split` agent drive.
//! * [`shaper`]: a token bucket that paces a relay's release (Shikama).
//! * [`fair_share`]: one rate shared fairly among flows (a client's cap).
//! * [`flow_map`]: the per-flow hash map with a fixed hasher.

// Unit tests run with std (the test harness needs it); the library never.
#![cfg_attr(not(test), no_std)]
// No FFI or inline assembly: no way to a system call.
#![forbid(unsafe_code)]

extern crate alloc;

pub mod ack_interval;
pub mod ack_regen;
pub mod ack_thin;
pub mod amp;
pub mod cc;
pub mod fair_share;
pub mod flow_map;
pub mod host;
pub mod link;
pub mod localq;
pub mod loss;
pub mod medium;
pub mod queue;
pub mod relay;
pub mod rng;
pub mod rtt;
mod rtt_ns2;
pub mod sad;
pub mod segment;
pub mod seq;
pub mod shaper;
pub mod splitpair;
pub mod time;
pub mod watermark;

pub use segment::{Flags, FlowId, KindFilter, SackBlocks, Segment, Timestamps};
pub use seq::Seq;
pub use time::{Duration, Instant, Rate};
