//! # pep-core: the sans-IO heart of pepkit
//!
//! Everything here is a state machine or a model that takes time as an
//! input. Nothing reads a clock, touches a socket or draws from an unseeded
//! random generator (clippy's `disallowed-methods` enforces it), so the same
//! code runs under the simulator's virtual clock and the daemon's real one.
//!
//! ## Driver contract
//!
//! Every stateful component in this crate (a link direction, a TCP endpoint,
//! a PEP mechanism) follows the same contract:
//!
//! * **Inputs.** `handle_*(now, ..)` feeds an event: a segment arriving, a
//!   packet offered, and `handle_timeout(now)` when the deadline it asked for
//!   has come.
//! * **Outputs.** `poll_*(now)` drains what the component wants done
//!   (segments to transmit, packets delivered, actions); `poll_timeout()`
//!   says when it next needs `handle_timeout`. Outputs are closed enums or
//!   plain values, never callbacks.
//! * **Order.** After any input, the driver drains the outputs until they
//!   return `None`, then re-reads `poll_timeout()`. A driver may call
//!   `handle_timeout` early or late; components check their own deadlines.
//! * **Time.** `now` never decreases from one call to the next. Time is an
//!   integer number of nanoseconds ([`time::Instant`]).
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
//! * [`relay`]: the split-connection relay (two bounded byte streams,
//!   backpressure, half-close, resets, idle timeout) that the daemon's
//!   connections and the simulator's `split` agent drive.
//! * [`shaper`]: a token bucket that paces a relay's release (Shikama).

pub mod ack_interval;
pub mod ack_regen;
pub mod ack_thin;
pub mod amp;
pub mod cc;
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
