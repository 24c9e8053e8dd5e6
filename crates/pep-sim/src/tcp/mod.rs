//! Sans-IO TCP endpoints for the simulator: a bulk/finite data sender
//! ([`TcpSender`]) and a receiver ([`TcpSink`]).
//!
//! They model one direction of a TCP connection at segment level, in the
//! manner of ns-2's one-way agents (`Agent/TCP/*` and `Agent/TCPSink*`), but
//! with byte sequence numbers that wrap like real TCP's, so the PEP
//! mechanisms in `pep-core` see the same segments in the simulator as on a
//! real network. Congestion control is `pep_core::cc`; the retransmission
//! timer is `pep_core::rtt`.
//!
//! ## Driver contract
//! Both endpoints are state machines with no clock and no I/O:
//!
//! * **Inputs.** `handle_segment(now, &Segment)` when a segment arrives
//!   from the network; `handle_timeout(now)` when the deadline returned by
//!   `poll_timeout()` has come (calling it early or late is harmless: the
//!   endpoint checks its own deadline).
//! * **Outputs.** `poll_transmit(now)` returns the next segment to put on
//!   the wire (the sender tags it with a [`TxKind`]); the driver calls it
//!   until it returns `None` after *every* input (and once after
//!   construction), then reads `poll_timeout()`, the instant at which
//!   `handle_timeout` is next wanted (`None`: no timer running).
//! * **Time.** `now` never decreases from one call to the next, and is the
//!   instant the segment leaves (for `poll_transmit`) or arrives.
//!
//! Segments are `Copy`; neither endpoint allocates per packet. The sender
//! holds no per-segment state at all (there is no payload to buffer; its
//! SACK scoreboard is a bounded range list allocated with the connection);
//! the sink keeps its out-of-order ranges in a vector that grows at most a
//! few times, up to a fixed bound.
//!
//! ## What is modelled, and what is not
//! Modelled: optional SYN handshake, slow start and congestion avoidance
//! (Reno, CUBIC, Westwood+), Tahoe/Reno/NewReno/SACK (RFC 6675) loss
//! recovery, RFC 6298 timer with Karn's algorithm and backoff, receiver
//! window, zero-window probing, `max_burst`, Linux-style pacing
//! ([`pacing`]), a send-buffer cap (`sndbuf`), FIN; delayed ACKs with count
//! and timer, immediate ACKs on out-of-order data and hole fills, SACK
//! block generation; as options (the `linux` profile): PRR (RFC 6937),
//! HyStart++ (RFC 9406) and the timestamps option (RFC 7323) for its RTT
//! samples; ns-2's tick-based timer (the `ns2` profile); limited transmit
//! (RFC 3042); RACK-TLP (RFC 8985) with D-SACK (RFC 2883) for its
//! reordering window; bidirectional connections ([`TcpSink::with_reverse`],
//! [`TcpConfig::reverse`]: each end also runs the other direction's half,
//! and ACKs ride on data). Not modelled (yet): RTO from timestamps,
//! restart after idle (RFC 5681 4.1), RFC 7661's reductions (its growth
//! rule is the `cwv` option), undo on D-SACK, and connection teardown
//! beyond one FIN per direction.

mod config;
pub mod pacing;
mod sender;
mod sink;

#[cfg(test)]
mod e2e_tests;
#[cfg(test)]
mod sender_tests;
#[cfg(test)]
mod sink_tests;

pub use config::{AckPolicy, AppSource, SinkConfig, TcpConfig};
pub use pacing::PacingConfig;
pub use pep_core::cc::{Growth, Recovery};
pub(crate) use sender::SENDER_RWND;
pub use sender::{SenderStats, TcpSender, TxKind};
pub use sink::{SinkStats, TcpSink};
