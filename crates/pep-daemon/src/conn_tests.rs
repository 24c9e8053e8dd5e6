//! Sameness (issue 33, item 5): the core's golden conversations through
//! this driver's adapter ([`read`], [`write`], [`carry_out`]) on scripted
//! sockets give, step by step, exactly the actions the bare relay gives
//! (pep-core's test) and the simulator's `split` agent gives (its test),
//! each carried out on the right socket. The steps are gated as `drive`
//! gates them: a leg is read only while the relay wants it read, written
//! only while it has data for it, and each until the socket would block.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use pep_core::relay::golden::{conversations, Event};

use super::*;

/// One socket operation [`carry_out`] made.
type Calls = Rc<RefCell<Vec<(Leg, &'static str)>>>;

/// A socket whose readiness the test sets.
struct Scripted {
    leg: Leg,
    /// Bytes waiting to be read; then an end of stream if `eof`.
    readable: Cell<usize>,
    eof: Cell<bool>,
    /// Bytes the socket takes before it would block.
    room: Cell<usize>,
    /// Reads and writes fail (the peer reset).
    failed: Cell<bool>,
    calls: Calls,
}

impl Scripted {
    fn new(leg: Leg, calls: &Calls) -> Scripted {
        Scripted {
            leg,
            readable: Cell::new(0),
            eof: Cell::new(false),
            room: Cell::new(0),
            failed: Cell::new(false),
            calls: calls.clone(),
        }
    }

    fn take_in(&self, max: usize) -> io::Result<usize> {
        if self.failed.get() {
            return Err(ErrorKind::ConnectionReset.into());
        }
        let n = self.readable.get().min(max);
        if n == 0 && !self.eof.get() {
            return Err(ErrorKind::WouldBlock.into());
        }
        self.readable.set(self.readable.get() - n);
        Ok(n)
    }

    fn take_out(&self, max: usize) -> io::Result<usize> {
        if self.failed.get() {
            return Err(ErrorKind::ConnectionReset.into());
        }
        let n = self.room.get().min(max);
        if n == 0 {
            return Err(ErrorKind::WouldBlock.into());
        }
        self.room.set(self.room.get() - n);
        Ok(n)
    }
}

impl LegSocket for Scripted {
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.take_in(buf.len())
    }

    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.take_out(buf.len())
    }

    fn splice_in(&self, _: &Pipe, max: usize) -> io::Result<SpliceIn> {
        match self.take_in(max)? {
            0 => Ok(SpliceIn::Eof),
            n => Ok(SpliceIn::Moved(n)),
        }
    }

    fn splice_out(&self, _: &Pipe, max: usize) -> io::Result<usize> {
        self.take_out(max)
    }

    fn shutdown_write(&self) {
        self.calls.borrow_mut().push((self.leg, "shutdown"));
    }

    fn reset_on_close(&self) {
        self.calls.borrow_mut().push((self.leg, "reset"));
    }
}

/// What the sockets must see for `a`.
fn socket_call(a: Action) -> Option<(Leg, &'static str)> {
    match a {
        Action::ShutdownWrite(leg) => Some((leg, "shutdown")),
        Action::Reset(leg) => Some((leg, "reset")),
        Action::PauseRead(_) | Action::ResumeRead(_) | Action::Write(_) | Action::Close => None,
    }
}

fn effect_name(a: Action) -> &'static str {
    match a {
        Action::ShutdownWrite(_) => SHUTDOWN,
        Action::Reset(_) => RESET,
        Action::Close => CLOSE,
        Action::PauseRead(_) | Action::ResumeRead(_) | Action::Write(_) => LEVEL,
    }
}

fn replay(splice: bool) {
    let m = Metrics::default();
    for c in conversations() {
        let mut relay = Relay::new(c.config, Instant::ZERO);
        let calls = Calls::default();
        let client = Scripted::new(Leg::Client, &calls);
        let server = Scripted::new(Leg::Server, &calls);
        let sock = |leg| match leg {
            Leg::Client => &client,
            Leg::Server => &server,
        };
        let mut sp = splice.then(|| Splicing {
            pipes: [0, 1].map(|_| Pipe::new(c.config.buffer).expect("a pipe")),
            full: [false; 2],
        });
        for (k, step) in c.steps.iter().enumerate() {
            let now = step.at;
            match step.event {
                Event::Connected => relay.handle_connected(now),
                Event::Readable(d, n) => {
                    let s = sock(d.src());
                    s.readable.set(n);
                    while relay.wants_read(d) && s.readable.get() > 0 {
                        let before = s.readable.get();
                        read(&mut relay, d, s, &mut sp, now, &m, None);
                        if s.readable.get() == before {
                            break;
                        }
                    }
                    s.readable.set(0); // what was not read is not the next step's
                }
                Event::Writable(d, n) => {
                    let s = sock(d.dst());
                    s.room.set(n);
                    while relay.wants_write(d) && s.room.get() > 0 {
                        let before = s.room.get();
                        write(&mut relay, d, s, &mut sp, now, usize::MAX);
                        if s.room.get() == before {
                            break;
                        }
                    }
                    s.room.set(0);
                }
                Event::Eof(d) => {
                    sock(d.src()).eof.set(true);
                    if relay.wants_read(d) {
                        read(&mut relay, d, sock(d.src()), &mut sp, now, &m, None);
                    }
                }
                Event::LegReset(leg) => {
                    sock(leg).failed.set(true);
                    // The driver learns of it from the next read or write.
                    if let Some(d) = Dir::BOTH
                        .into_iter()
                        .find(|&d| d.src() == leg && relay.wants_read(d))
                    {
                        read(&mut relay, d, sock(leg), &mut sp, now, &m, None);
                    } else if let Some(d) = Dir::BOTH
                        .into_iter()
                        .find(|&d| d.dst() == leg && relay.wants_write(d))
                    {
                        write(&mut relay, d, sock(leg), &mut sp, now, usize::MAX);
                    } else {
                        panic!("{}: step {k}: the driver polls nothing on {leg:?}", c.name);
                    }
                }
                Event::Timeout => relay.handle_timeout(now),
            }
            let mut log = Vec::new();
            calls.borrow_mut().clear();
            let closed = carry_out(&mut relay, &client, Some(&server), &mut log);
            let what = format!("{} (splice {splice}): step {k} {:?}", c.name, step.event);
            let actions: Vec<Action> = log.iter().map(|&(a, _)| a).collect();
            assert_eq!(actions, step.expect, "{what}");
            for &(a, effect) in &log {
                assert_eq!(effect, effect_name(a), "{what}");
            }
            let want: Vec<_> = step.expect.iter().filter_map(|&a| socket_call(a)).collect();
            assert_eq!(*calls.borrow(), want, "{what}: socket calls");
            assert_eq!(closed, step.expect.contains(&Action::Close), "{what}");
        }
    }
}

#[test]
fn golden_conversations_copying() {
    replay(false);
}

#[test]
fn golden_conversations_splicing() {
    replay(true);
}
