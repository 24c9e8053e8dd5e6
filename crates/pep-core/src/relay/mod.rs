//! # Split-connection relay (RFC 3135 §3.1.1, "split connection")
//!
//! One proxied TCP connection is two legs: the *client* leg (accepted from
//! the client) and the *server* leg (opened to the original destination).
//! The relay moves two byte streams between them: [`Dir::Up`] (client to
//! server) and [`Dir::Down`] (server to client), each through a bounded
//! buffer. It owns the buffers and decides; the driver owns the sockets.
//!
//! ## Driver contract (the crate's, specialised)
//!
//! * **Inputs.** Reads go straight into the relay's memory:
//!   [`Relay::read_slot`] gives a free slice, the driver reads the source
//!   leg of that direction into it and calls [`Relay::commit_read`]; an
//!   end of stream is [`Relay::handle_eof`]. Writes come from
//!   [`Relay::write_slot`]; the driver reports what the socket took with
//!   [`Relay::commit_write`]. The server leg's outcome is
//!   [`Relay::handle_connected`] or [`Relay::handle_connect_failed`]; a
//!   reset or fatal error on a leg is [`Relay::handle_reset`]; the driver
//!   giving up (shutdown deadline) is [`Relay::handle_abort`];
//!   [`Relay::handle_timeout`] when [`Relay::poll_timeout`] falls due.
//! * **Outputs.** [`Relay::poll_action`] until `None`: [`Action`]s say when
//!   to stop and resume reading a leg (backpressure), when a direction has
//!   data to write, when to send a FIN or a RST, and when the connection is
//!   over. [`Relay::wants_read`] and [`Relay::wants_write`] give the same
//!   information as levels, for drivers that poll readiness.
//! * **Time.** `now` never decreases; it only drives the idle timeout.
//! * **Buffers outside the relay.** A zero-copy driver (splice(2) through a
//!   pipe per direction) keeps the bytes in the kernel: it asks
//!   [`Relay::read_room`] how much it may move in, reports it with
//!   [`Relay::commit_read_external`], moves out at most
//!   [`Relay::external_pending`] and reports it with
//!   [`Relay::commit_write_external`]. The relay counts those bytes against
//!   the same bound and decides exactly as for its own buffer. A driver uses
//!   one kind per relay.
//!
//! ## Invariants
//! * A direction never holds more than [`RelayConfig::buffer`] bytes, so a
//!   receiver that stops reading costs at most that much memory: the source
//!   is paused and its kernel window closes.
//! * A FIN is sent on a leg only after every byte bound for it was written
//!   (half-close is carried in each direction independently).
//! * A reset on one leg resets the other and drops buffered data: an abort
//!   is not a close. A server leg that cannot be connected resets the client
//!   leg, whose handshake the kernel already completed.

pub mod golden;
mod ring;
#[cfg(test)]
mod tests;

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::time::{Duration, Instant};
use ring::Ring;

/// The two TCP connections of a relayed connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Leg {
    /// Accepted from the client.
    Client,
    /// Opened by the proxy to the original destination.
    Server,
}

impl Leg {
    pub fn other(self) -> Leg {
        match self {
            Leg::Client => Leg::Server,
            Leg::Server => Leg::Client,
        }
    }
}

/// The two byte streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// Client to server: read from [`Leg::Client`], written to [`Leg::Server`].
    Up,
    /// Server to client.
    Down,
}

impl Dir {
    pub const BOTH: [Dir; 2] = [Dir::Up, Dir::Down];

    pub fn src(self) -> Leg {
        match self {
            Dir::Up => Leg::Client,
            Dir::Down => Leg::Server,
        }
    }

    pub fn dst(self) -> Leg {
        self.src().other()
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// What the driver must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Stop reading the source leg of this direction: its buffer is full.
    PauseRead(Dir),
    /// Read the source leg again: the buffer drained to the low-water mark.
    ResumeRead(Dir),
    /// This direction has data to write and its destination can take it
    /// (sent when data appears in an empty buffer, or the server leg connects).
    Write(Dir),
    /// Send a FIN on this leg: its direction's data is all written.
    ShutdownWrite(Leg),
    /// Abort this leg with a RST (`SO_LINGER` 0, then close).
    Reset(Leg),
    /// Both directions are finished or the connection was aborted: close
    /// whatever sockets remain and forget the connection.
    Close,
}

/// Where a driver notes each action it took from the relay and what it
/// did about it (its own words, e.g. "shutdown(SHUT_WR)"). The sameness
/// tests compare these logs with [`golden`]; in service a driver passes
/// `()`, which keeps nothing and costs nothing.
pub trait ActionLog {
    fn note(&mut self, action: Action, effect: &'static str);
}

impl ActionLog for () {
    #[inline]
    fn note(&mut self, _: Action, _: &'static str) {}
}

impl ActionLog for Vec<(Action, &'static str)> {
    fn note(&mut self, action: Action, effect: &'static str) {
        self.push((action, effect));
    }
}

/// Why a relay ended abnormally.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbortReason {
    /// A leg was reset by its peer or failed.
    Reset(Leg),
    /// The server leg could not be connected.
    ConnectFailed,
    /// Nothing moved for the idle timeout.
    Idle,
    /// The driver gave up (shutdown deadline).
    Aborted,
}

/// Limits of one relayed connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RelayConfig {
    /// Bytes buffered per direction at most. It should cover the faster
    /// leg's share of the slower leg's bandwidth-delay product; more only
    /// adds memory and queueing.
    pub buffer: usize,
    /// Reading resumes when a paused direction drains to this many bytes
    /// (hysteresis, so a full buffer does not flip at every write).
    pub resume_at: usize,
    /// A connection on which nothing is read or written for this long is
    /// reset on both legs. `None`: never.
    pub idle_timeout: Option<Duration>,
}

impl RelayConfig {
    /// `buffer` bytes per direction, resuming at half, with an idle timeout.
    pub fn new(buffer: usize, idle_timeout: Option<Duration>) -> RelayConfig {
        RelayConfig {
            buffer: buffer.max(1),
            resume_at: buffer / 2,
            idle_timeout,
        }
    }
}

/// Byte counts and occupancy of one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirStats {
    /// Read from the source leg.
    pub read: u64,
    /// Written to the destination leg.
    pub written: u64,
    /// Held now.
    pub buffered: usize,
    /// Memory held now for the buffer (grows with use, up to the bound).
    pub allocated: usize,
    /// Times reading was paused because the buffer was full.
    pub pauses: u64,
}

#[derive(Debug)]
struct Half {
    ring: Ring,
    /// Bytes held outside the relay (a driver's pipe), counted only.
    external: usize,
    eof: bool,
    fin_sent: bool,
    paused: bool,
    stats: DirStats,
}

impl Half {
    /// Bytes held for this direction, in the relay's memory or outside.
    fn held(&self) -> usize {
        self.ring.len() + self.external
    }
}

/// One relayed connection's state. See the module docs for the contract.
#[derive(Debug)]
pub struct Relay {
    cfg: RelayConfig,
    halves: [Half; 2],
    server_connected: bool,
    closed: bool,
    abort: Option<AbortReason>,
    last_activity: Instant,
    actions: VecDeque<Action>,
}

impl Relay {
    /// A relay whose client leg is established and whose server leg is
    /// being connected. Data the client sends meanwhile is buffered.
    pub fn new(cfg: RelayConfig, now: Instant) -> Relay {
        let cfg = RelayConfig {
            buffer: cfg.buffer.max(1),
            resume_at: cfg.resume_at.min(cfg.buffer.saturating_sub(1)),
            ..cfg
        };
        let half = || Half {
            ring: Ring::new(cfg.buffer),
            external: 0,
            eof: false,
            fin_sent: false,
            paused: false,
            stats: DirStats::default(),
        };
        Relay {
            cfg,
            halves: [half(), half()],
            server_connected: false,
            closed: false,
            abort: None,
            last_activity: now,
            actions: VecDeque::new(),
        }
    }

    pub fn config(&self) -> &RelayConfig {
        &self.cfg
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Why the relay was aborted, if it was.
    pub fn abort_reason(&self) -> Option<AbortReason> {
        self.abort
    }

    pub fn stats(&self, dir: Dir) -> DirStats {
        let h = &self.halves[dir.index()];
        DirStats {
            buffered: h.held(),
            allocated: h.ring.allocated(),
            ..h.stats
        }
    }

    fn dst_open(&self, dir: Dir) -> bool {
        dir.dst() == Leg::Client || self.server_connected
    }

    /// Whether the driver should read the source leg of `dir` now.
    pub fn wants_read(&self, dir: Dir) -> bool {
        let h = &self.halves[dir.index()];
        !self.closed && !h.eof && !h.paused && (dir.src() == Leg::Client || self.server_connected)
    }

    /// Whether `dir` has data its destination leg can take now.
    pub fn wants_write(&self, dir: Dir) -> bool {
        !self.closed && self.dst_open(dir) && self.halves[dir.index()].held() > 0
    }

    /// Bytes the driver may move into an external buffer for `dir` now: 0
    /// when it must not read (as [`Relay::read_slot`] is empty).
    pub fn read_room(&self, dir: Dir) -> usize {
        if !self.wants_read(dir) {
            return 0;
        }
        self.cfg
            .buffer
            .saturating_sub(self.halves[dir.index()].held())
    }

    /// `n` bytes of `dir` were moved into the driver's external buffer.
    pub fn commit_read_external(&mut self, now: Instant, dir: Dir, n: usize) {
        self.commit_in(now, dir, n, true);
    }

    /// Bytes of `dir` in the external buffer that its destination can take
    /// now (0 before the server leg is up, or once closed).
    pub fn external_pending(&self, dir: Dir) -> usize {
        if !self.wants_write(dir) {
            return 0;
        }
        self.halves[dir.index()].external
    }

    /// The destination leg of `dir` took `n` bytes from the external buffer.
    pub fn commit_write_external(&mut self, now: Instant, dir: Dir, n: usize) {
        self.commit_out(now, dir, n, true);
    }

    /// Free space to read the source leg of `dir` into; empty when it must
    /// not be read (paused, finished, closed, or the server leg not yet up).
    pub fn read_slot(&mut self, dir: Dir) -> &mut [u8] {
        if !self.wants_read(dir) {
            return &mut [];
        }
        self.halves[dir.index()].ring.free_slot()
    }

    /// `n` bytes were read into the last [`Relay::read_slot`] of `dir`.
    pub fn commit_read(&mut self, now: Instant, dir: Dir, n: usize) {
        self.commit_in(now, dir, n, false);
    }

    fn commit_in(&mut self, now: Instant, dir: Dir, n: usize, external: bool) {
        if self.closed || n == 0 {
            return;
        }
        self.touch(now);
        let open = self.dst_open(dir);
        let cap = self.cfg.buffer;
        let h = &mut self.halves[dir.index()];
        let was_empty = h.held() == 0;
        if external {
            h.external += n;
        } else {
            h.ring.commit(n);
        }
        h.stats.read += n as u64;
        if was_empty && open {
            self.actions.push_back(Action::Write(dir));
        }
        if h.held() >= cap && !h.paused {
            h.paused = true;
            h.stats.pauses += 1;
            self.actions.push_back(Action::PauseRead(dir));
        }
    }

    /// Copies in as much of `data` as the relay takes now; returns how much
    /// (for drivers that read into their own memory, and tests).
    pub fn handle_read(&mut self, now: Instant, dir: Dir, mut data: &[u8]) -> usize {
        let mut total = 0;
        while !data.is_empty() {
            let slot = self.read_slot(dir);
            let k = slot.len().min(data.len());
            if k == 0 {
                break;
            }
            slot[..k].copy_from_slice(&data[..k]);
            self.commit_read(now, dir, k);
            data = &data[k..];
            total += k;
        }
        total
    }

    /// The source leg of `dir` ended its stream (read returned 0: a FIN).
    pub fn handle_eof(&mut self, now: Instant, dir: Dir) {
        if self.closed || self.halves[dir.index()].eof {
            return;
        }
        self.touch(now);
        self.halves[dir.index()].eof = true;
        self.maybe_fin(dir);
    }

    /// Data of `dir` ready to write to its destination leg (contiguous; may
    /// be less than all that is buffered).
    pub fn write_slot(&self, dir: Dir) -> &[u8] {
        if !self.wants_write(dir) {
            return &[];
        }
        self.halves[dir.index()].ring.data_slot()
    }

    /// The destination leg of `dir` took `n` bytes of the last write slot.
    pub fn commit_write(&mut self, now: Instant, dir: Dir, n: usize) {
        self.commit_out(now, dir, n, false);
    }

    fn commit_out(&mut self, now: Instant, dir: Dir, n: usize, external: bool) {
        if self.closed || n == 0 {
            return;
        }
        self.touch(now);
        let resume_at = self.cfg.resume_at;
        let h = &mut self.halves[dir.index()];
        let n = if external {
            let n = n.min(h.external);
            h.external -= n;
            n
        } else {
            let n = n.min(h.ring.len());
            h.ring.consume(n);
            n
        };
        h.stats.written += n as u64;
        if h.paused && h.held() <= resume_at {
            h.paused = false;
            self.actions.push_back(Action::ResumeRead(dir));
        }
        self.maybe_fin(dir);
    }

    /// The server leg is established: buffered client data may flow, and
    /// the server may be read.
    pub fn handle_connected(&mut self, now: Instant) {
        if self.closed || self.server_connected {
            return;
        }
        self.touch(now);
        self.server_connected = true;
        if self.halves[Dir::Up.index()].held() > 0 {
            self.actions.push_back(Action::Write(Dir::Up));
        }
        self.maybe_fin(Dir::Up);
    }

    /// The server leg could not be connected (refused, unreachable, timed
    /// out): the client gets a RST, not a clean close that would look like
    /// an empty but successful reply.
    pub fn handle_connect_failed(&mut self, now: Instant) {
        self.abort_with(now, AbortReason::ConnectFailed, &[Leg::Client]);
    }

    /// `leg` was reset by its peer or failed (a read or write error): the
    /// other leg is reset too, and buffered data is dropped.
    pub fn handle_reset(&mut self, now: Instant, leg: Leg) {
        let others: &[Leg] = match (leg, self.server_connected) {
            (Leg::Client, false) => &[Leg::Server], // abandon the connect attempt
            _ => &[leg.other()],
        };
        self.abort_with(now, AbortReason::Reset(leg), others);
    }

    /// The driver gives up on the connection (e.g. a shutdown deadline):
    /// both legs are reset.
    pub fn handle_abort(&mut self, now: Instant) {
        self.abort_with(now, AbortReason::Aborted, &[Leg::Client, Leg::Server]);
    }

    /// Checks the idle timeout.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(t) = self.poll_timeout() {
            if now >= t {
                self.abort_with(now, AbortReason::Idle, &[Leg::Client, Leg::Server]);
            }
        }
    }

    /// When [`Relay::handle_timeout`] is next needed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.closed {
            return None;
        }
        self.cfg.idle_timeout.map(|d| self.last_activity + d)
    }

    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    fn touch(&mut self, now: Instant) {
        self.last_activity = self.last_activity.max(now);
    }

    /// Sends the FIN of `dir` once its source ended and its data is out,
    /// and closes when both directions have.
    fn maybe_fin(&mut self, dir: Dir) {
        let open = self.dst_open(dir);
        let h = &mut self.halves[dir.index()];
        if h.eof && !h.fin_sent && h.held() == 0 && open {
            h.fin_sent = true;
            self.actions.push_back(Action::ShutdownWrite(dir.dst()));
        }
        if self.halves.iter().all(|h| h.fin_sent) && !self.closed {
            self.closed = true;
            self.actions.push_back(Action::Close);
        }
    }

    fn abort_with(&mut self, now: Instant, why: AbortReason, reset: &[Leg]) {
        if self.closed {
            return;
        }
        self.touch(now);
        self.closed = true;
        self.abort = Some(why);
        for h in &mut self.halves {
            h.ring.clear();
            h.external = 0;
        }
        for &leg in reset {
            self.actions.push_back(Action::Reset(leg));
        }
        self.actions.push_back(Action::Close);
    }
}
