//! Scripted conversations every driver of the relay replays in its
//! sameness test (issue 33, item 5).
//!
//! A step is what a driver sees on its legs at an instant (bytes readable
//! on a source leg, room on a destination leg, an end of stream, a reset,
//! a deadline), and the actions the relay must answer it with. Each
//! driver's test feeds the steps through its own adapter (the code that
//! turns leg events into relay calls and actions into effects) with an
//! [`ActionLog`](super::ActionLog) attached, and compares what the adapter
//! took from the relay with `expect`, step by step: an adapter that
//! reorders, drops or adds an action fails, and so do two drivers that
//! disagree. `pep-core`'s own test replays them on the bare relay.

use super::{Action, Dir, Leg, RelayConfig};
use crate::time::{Duration, Instant};
use alloc::vec;
use alloc::vec::Vec;

/// What happens on the legs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The server leg connected.
    Connected,
    /// The source leg of `dir` has this many bytes to read: the driver reads
    /// what the relay takes.
    Readable(Dir, usize),
    /// The destination leg of `dir` takes up to this many bytes: the
    /// driver writes what the relay has for it.
    Writable(Dir, usize),
    /// The source leg of `dir` ended its stream (a read returned 0).
    Eof(Dir),
    /// A leg failed (a read or write error, a RST from its peer).
    LegReset(Leg),
    /// The driver's timer for the relay's deadline fired.
    Timeout,
}

/// One step of a conversation.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub at: Instant,
    pub event: Event,
    /// The actions the relay gives for it, in order.
    pub expect: &'static [Action],
}

/// A scripted conversation on one relay.
#[derive(Clone, Debug)]
pub struct Conversation {
    pub name: &'static str,
    pub config: RelayConfig,
    pub steps: Vec<Step>,
}

fn ms(n: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(n)
}

fn step(at: u64, event: Event, expect: &'static [Action]) -> Step {
    Step {
        at: ms(at),
        event,
        expect,
    }
}

/// The conversations: a whole exchange with backpressure and half-close,
/// an idle timeout, and a reset.
pub fn conversations() -> Vec<Conversation> {
    use Action::*;
    use Dir::*;
    use Event::*;
    let cfg = RelayConfig {
        buffer: 8,
        resume_at: 4,
        idle_timeout: Some(Duration::from_millis(1000)),
    };
    vec![
        Conversation {
            name: "backpressure and half-close both ways",
            config: cfg,
            steps: vec![
                // Client data before the server leg is up waits in the buffer.
                step(0, Readable(Up, 3), &[]),
                step(1, Connected, &[Write(Up)]),
                // Only the room is read, and a full buffer pauses the source.
                step(2, Readable(Up, 10), &[PauseRead(Up)]),
                step(3, Readable(Up, 10), &[]),
                step(3, Readable(Down, 2), &[Write(Down)]),
                step(4, Writable(Up, 3), &[]),
                // Down to the low-water mark: read again.
                step(5, Writable(Up, 1), &[ResumeRead(Up)]),
                // The FIN waits for the data ahead of it.
                step(6, Eof(Up), &[]),
                step(7, Writable(Down, 2), &[]),
                step(8, Writable(Up, 10), &[ShutdownWrite(Leg::Server)]),
                step(9, Readable(Down, 1), &[Write(Down)]),
                step(10, Eof(Down), &[]),
                step(11, Writable(Down, 5), &[ShutdownWrite(Leg::Client), Close]),
            ],
        },
        Conversation {
            name: "idle timeout",
            config: cfg,
            steps: vec![
                step(0, Connected, &[]),
                step(10, Readable(Up, 4), &[Write(Up)]),
                // Not yet due: the data moved 1000 ms before 1010.
                step(1009, Timeout, &[]),
                step(
                    1010,
                    Timeout,
                    &[Reset(Leg::Client), Reset(Leg::Server), Close],
                ),
                // A closed relay takes nothing more.
                step(1011, Readable(Down, 4), &[]),
            ],
        },
        Conversation {
            name: "a reset drops the buffers and resets the other leg",
            config: cfg,
            steps: vec![
                step(0, Connected, &[]),
                step(1, Readable(Down, 8), &[Write(Down), PauseRead(Down)]),
                // The client leg, still read for Up, fails.
                step(2, LegReset(Leg::Client), &[Reset(Leg::Server), Close]),
                step(3, Writable(Down, 8), &[]),
            ],
        },
    ]
}
