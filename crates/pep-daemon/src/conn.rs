//! One relayed connection: the tokio driver of `pep_core::relay::Relay`.
//!
//! The task owns both sockets. Each turn it carries out the relay's
//! actions, then waits for whichever of the four readiness events the
//! relay wants (read client, read server, write client, write server), its
//! idle deadline, a periodic `TCP_INFO` sample, or an abort. Reads land
//! straight in the relay's buffer; a paused direction is simply not read,
//! so the kernel's window closes toward that sender.
//!
//! With `relay = "splice"` the bytes stay in the kernel: each direction
//! splices socket -> pipe -> socket ([`crate::splice`]) and the relay only
//! counts what the pipe holds, deciding as for its own buffer.
//!
//! The adapter proper (a leg event to a relay call: [`read`], [`write`];
//! an action to a socket operation: [`carry_out`]) works on any
//! [`LegSocket`], so the sameness test replays the core's golden
//! conversations through it on scripted sockets (`conn_tests.rs`); the
//! simulator's `split` agent drives the same relay.

use std::io::{self, ErrorKind};
use std::net::{Shutdown, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use pep_core::relay::{Action, ActionLog, Dir, Leg, Relay, RelayConfig};
use pep_core::Instant;
use socket2::SockRef;
use tokio::io::Interest;
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::watch;
use tracing::{debug, warn};

use crate::client_rate::{ClientRates, RateCap};
use crate::config::{LegShape, Mss, RelayMode, Settings};
use crate::metrics::Metrics;
use crate::net;
use crate::shape::LegShaper;
use crate::splice::{self, Pipe, SpliceIn};

/// What every connection task shares.
#[derive(Clone)]
pub struct Shared {
    pub metrics: Arc<Metrics>,
    /// Becomes `true` when remaining connections must be reset (the drain
    /// deadline passed).
    pub abort: watch::Receiver<bool>,
    pub epoch: std::time::Instant,
    /// Sample `TCP_INFO` of both legs every second.
    pub sample_legs: bool,
    /// split-start of a two-node PEP: connections go over the tunnel
    /// instead of straight to their destination.
    pub tunnel: Option<Arc<crate::tunnel::start::TunnelClient>>,
    /// Pipes of `proxy.buffer` can be had (checked at start and reload);
    /// if not, connections set to splice copy.
    pub splice_ok: Arc<std::sync::atomic::AtomicBool>,
    /// The per-client buckets of `proxy.client_rate`.
    pub rates: Arc<ClientRates>,
}

impl Shared {
    fn now(&self) -> Instant {
        Instant::from_nanos(self.epoch.elapsed().as_nanos() as u64)
    }

    fn to_tokio(&self, t: Instant) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.epoch + std::time::Duration::from_nanos(t.as_nanos()))
    }
}

/// How opening the server leg ended.
enum Connect {
    Done(io::Result<TcpStream>),
    /// The drain deadline passed first.
    Aborted,
    /// The client reset its leg first: the attempt is abandoned (issue 38:
    /// it used to run on to `connect_timeout`, counted as a failure).
    ClientReset,
}

/// Opens the server leg with a timeout, watching the client leg for a
/// reset meanwhile.
async fn connect(
    client: &TcpStream,
    dst: SocketAddr,
    peer: SocketAddr,
    s: &Settings,
    shared: &Shared,
    opts: &crate::config::LegOptions,
) -> Connect {
    let source = s.keep_client_source.then_some(peer);
    let dscp = if s.copy_dscp {
        net::syn_dscp(client)
    } else {
        None
    };
    // Fast Open only with the client's bytes already here (in its SYN or
    // right behind): the deferred SYN leaves with the relay's first write,
    // which would never come for a protocol whose server speaks first.
    let fast_open = s.fast_open && net::queued(client).is_some_and(|n| n > 0);
    let attempt = async {
        let sock = net::server_socket(dst, s.out_mark, source, opts)?;
        if let Some(d) = dscp.filter(|&d| d != 0) {
            net::set_dscp(&sock, dst.is_ipv6(), d)?;
        }
        if fast_open {
            net::set_fast_open_connect(&sock)?;
        }
        let sock = TcpSocket::from_std_stream(std::net::TcpStream::from(sock));
        match tokio::time::timeout(s.connect_timeout, sock.connect(dst)).await {
            Ok(r) => r,
            Err(_) => Err(io::Error::new(ErrorKind::TimedOut, "connect timed out")),
        }
    };
    let mut abort = shared.abort.clone();
    // A RST sets the socket's error (EPOLLERR); data or a FIN from the
    // client waits in its buffer for the relay.
    let reset = async {
        loop {
            match client.ready(Interest::ERROR).await {
                Ok(r) if r.is_error() => return,
                Ok(_) => tokio::task::yield_now().await,
                Err(_) => return,
            }
        }
    };
    tokio::select! {
        r = attempt => Connect::Done(r),
        _ = abort.wait_for(|a| *a) => Connect::Aborted,
        _ = reset => Connect::ClientReset,
    }
}

/// A server leg found no source port: every port of the ephemeral range
/// is taken towards `dst` (TIME_WAIT of earlier legs, see docs/daemon.md,
/// "Source ports"). Counted always, logged at most once a second.
fn port_exhausted(m: &Metrics, peer: SocketAddr, dst: SocketAddr, e: &io::Error) {
    static LAST_LOG: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let total = m.port_exhausted.fetch_add(1, Relaxed) + 1;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if LAST_LOG.swap(now, Relaxed) != now {
        warn!(
            %peer, %dst, total,
            "server leg: no free source port ({e}); the client is reset \
             (pep_server_leg_port_exhausted_total). Each port waits 60 s in \
             TIME_WAIT after its leg: set proxy.reuse_time_wait, widen \
             net.ipv4.ip_local_port_range, or keep_client_source"
        );
    }
}

/// Relays one accepted connection to its original destination `dst`.
pub async fn relay_connection(
    client: TcpStream,
    peer: SocketAddr,
    dst: SocketAddr,
    settings: Arc<Settings>,
    shared: Shared,
) {
    let m = shared.metrics.clone();
    let (mut copts, mut sopts) = settings.legs_opened(dst.ip());
    // The listener set the client leg's MSS (it is advertised in the
    // SYN-ACK); the server leg's "auto" copies what the client leg got.
    copts.mss = None;
    if sopts.mss == Some(Mss::Auto) {
        sopts.mss = net::negotiated_mss(&client).map(Mss::Fixed);
    }
    let cfg = RelayConfig::new(settings.buffer, settings.idle_timeout.map(into_core));
    let mut relay = Relay::new(cfg, shared.now());
    let mode = settings.relay_for(dst.ip());
    let pipes = match mode {
        RelayMode::Splice if !shared.splice_ok.load(Relaxed) => None,
        RelayMode::Copy => None,
        // Out of descriptors or pipe memory: this connection copies.
        RelayMode::Splice => match (Pipe::new(settings.buffer), Pipe::new(settings.buffer)) {
            (Ok(up), Ok(down)) => Some([up, down]),
            (Err(e), _) | (_, Err(e)) => {
                debug!(%peer, %dst, "splice pipes: {e}; copying instead");
                m.splice_fallbacks.fetch_add(1, Relaxed);
                None
            }
        },
    };
    if let Err(e) = net::apply_leg(&client, &copts) {
        warn!(%peer, %dst, "client leg options: {e}");
    }
    let started = std::time::Instant::now();
    let server = match connect(&client, dst, peer, &settings, &shared, &sopts).await {
        Connect::Done(Ok(s)) => {
            m.setup_time(started.elapsed().as_secs_f64());
            relay.handle_connected(shared.now());
            Some(s)
        }
        Connect::Done(Err(e)) if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) => {
            port_exhausted(&m, peer, dst, &e);
            relay.handle_connect_failed(shared.now());
            None
        }
        Connect::Done(Err(e)) => {
            debug!(%peer, %dst, "connect failed: {e}");
            relay.handle_connect_failed(shared.now());
            None
        }
        Connect::Aborted => {
            relay.handle_abort(shared.now());
            None
        }
        Connect::ClientReset => {
            debug!(%peer, %dst, "client reset while connecting");
            relay.handle_reset(shared.now(), Leg::Client);
            None
        }
    };
    let shapers = [
        shaper(sopts.shape, server.as_ref(), dst.is_ipv6()),
        shaper(copts.shape, Some(&client), dst.is_ipv6()),
    ];
    let mut legs = Legs {
        client,
        server,
        shapers,
        cap: settings
            .client_rate
            .map(|bps| shared.rates.cap(peer.ip(), bps, shared.epoch)),
        last: [(0, 0); 2],
        splice: pipes.map(|pipes| Splicing {
            pipes,
            full: [false; 2],
        }),
    };
    let why = drive(&mut relay, &mut legs, &shared).await;
    if let Err(e) = why {
        // Not a leg error (those are resets): a bug or resource failure.
        warn!(%peer, %dst, "relay ended with error: {e}");
        m.ended_with_error();
        net::set_reset_on_close(&legs.client);
        if let Some(s) = &legs.server {
            net::set_reset_on_close(s);
        }
    } else {
        m.ended(relay.abort_reason());
    }
    if shared.sample_legs {
        legs.sample(&m);
    }
    legs.account(&relay, &m, true);
    debug!(%peer, %dst, up = relay.stats(Dir::Up).written, down = relay.stats(Dir::Down).written,
           abort = ?relay.abort_reason(), "connection ended");
}

/// The bucket of a leg's `shape_rate`, in the leg's own segments.
fn shaper(shape: Option<LegShape>, leg: Option<&TcpStream>, v6: bool) -> Option<LegShaper> {
    let shape = shape?;
    let header = if v6 { 72 } else { 52 };
    let (payload, header) = leg
        .and_then(|s| net::segment_sizes(s, v6))
        .unwrap_or((1448, header));
    Some(LegShaper::new(shape, payload.into(), header.into()))
}

fn into_core(d: std::time::Duration) -> pep_core::Duration {
    pep_core::Duration::from_nanos(d.as_nanos().min(u64::MAX as u128) as u64)
}

struct Legs {
    client: TcpStream,
    server: Option<TcpStream>,
    /// The legs' `shape_rate` buckets, by the direction written (Up: into
    /// the server leg).
    shapers: [Option<LegShaper>; 2],
    /// The client's share of `proxy.client_rate`.
    cap: Option<RateCap>,
    /// (buffered, allocated) last reported to the global gauges, per dir.
    last: [(usize, usize); 2],
    splice: Option<Splicing>,
}

/// A splicing connection's pipes, per direction (Up, Down).
pub(crate) struct Splicing {
    pub(crate) pipes: [Pipe; 2],
    /// The direction's pipe ran out of slots with the socket still
    /// readable: read again once the pipe drains, not on socket readiness.
    pub(crate) full: [bool; 2],
}

impl Legs {
    fn sample(&self, m: &Metrics) {
        sample(&self.client, self.server.as_ref(), m)
    }

    /// Moves the global buffer gauges by this connection's change.
    fn account(&mut self, r: &Relay, m: &Metrics, last: bool) {
        for (k, d) in Dir::BOTH.into_iter().enumerate() {
            let s = r.stats(d);
            let now = if last {
                (0, 0)
            } else {
                (s.buffered, s.allocated)
            };
            let (b, a) = self.last[k];
            if now != (b, a) {
                m.buffered.fetch_add(now.0 as i64 - b as i64, Relaxed);
                m.allocated.fetch_add(now.1 as i64 - a as i64, Relaxed);
                self.last[k] = now;
            }
        }
    }
}

/// What the adapter needs of a leg's socket: a tokio `TcpStream` in
/// service, a scripted one in the sameness test. Each call is one
/// non-blocking attempt (`WouldBlock` when the socket is not ready).
pub(crate) trait LegSocket {
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize>;
    fn try_write(&self, buf: &[u8]) -> io::Result<usize>;
    /// Moves at most `max` bytes from the socket into `pipe`.
    fn splice_in(&self, pipe: &Pipe, max: usize) -> io::Result<SpliceIn>;
    /// Moves at most `max` bytes from `pipe` to the socket.
    fn splice_out(&self, pipe: &Pipe, max: usize) -> io::Result<usize>;
    /// Sends a FIN (`shutdown(SHUT_WR)`).
    fn shutdown_write(&self);
    /// Makes closing the socket send a RST (`SO_LINGER` 0).
    fn reset_on_close(&self);
    /// Bytes waiting to be read (`SIOCINQ`); `None`: unknown.
    fn queued(&self) -> Option<usize> {
        None
    }
}

impl LegSocket for TcpStream {
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        TcpStream::try_read(self, buf)
    }

    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        TcpStream::try_write(self, buf)
    }

    fn splice_in(&self, pipe: &Pipe, max: usize) -> io::Result<SpliceIn> {
        // try_io clears the readiness only on WouldBlock: a full pipe
        // leaves it set for the retry once the pipe drains.
        self.try_io(Interest::READABLE, || {
            splice::socket_to_pipe(self.as_raw_fd(), pipe, max)
        })
    }

    fn splice_out(&self, pipe: &Pipe, max: usize) -> io::Result<usize> {
        self.try_io(Interest::WRITABLE, || {
            splice::pipe_to_socket(pipe, self.as_raw_fd(), max)
        })
    }

    fn shutdown_write(&self) {
        // ENOTCONN here means the peer is gone; the next read reports it.
        let _ = SockRef::from(self).shutdown(Shutdown::Write);
    }

    fn reset_on_close(&self) {
        net::set_reset_on_close(self);
    }

    fn queued(&self) -> Option<usize> {
        net::queued(self)
    }
}

/// Carries out the relay's pending actions on the legs (the server leg
/// may be missing when its connect failed), noting each in `log`.
/// Returns `true` once the relay closed: the task ends, dropping (closing)
/// both sockets.
pub(crate) fn carry_out<S: LegSocket>(
    relay: &mut Relay,
    client: &S,
    server: Option<&S>,
    log: &mut impl ActionLog,
) -> bool {
    let get = |leg| match leg {
        Leg::Client => Some(client),
        Leg::Server => server,
    };
    while let Some(a) = relay.poll_action() {
        match a {
            Action::ShutdownWrite(leg) => {
                if let Some(s) = get(leg) {
                    s.shutdown_write();
                }
                log.note(a, SHUTDOWN);
            }
            Action::Reset(leg) => {
                if let Some(s) = get(leg) {
                    s.reset_on_close();
                }
                log.note(a, RESET);
            }
            Action::Close => {
                log.note(a, CLOSE);
                return true;
            }
            Action::PauseRead(_) | Action::ResumeRead(_) | Action::Write(_) => log.note(a, LEVEL),
        }
    }
    false
}

/// What [`carry_out`] does, as it notes it.
pub(crate) const SHUTDOWN: &str = "shutdown(SHUT_WR)";
pub(crate) const RESET: &str = "SO_LINGER 0: RST on close";
pub(crate) const CLOSE: &str = "end the task: close both sockets";
pub(crate) const LEVEL: &str = "nothing: readiness follows wants_read/wants_write";

fn sample(client: &TcpStream, server: Option<&TcpStream>, m: &Metrics) {
    for (leg, s) in [(Leg::Client, Some(client)), (Leg::Server, server)] {
        if let Some(i) = s.and_then(net::tcp_info) {
            m.leg_sample(leg, i);
        }
    }
}

fn count_read(m: &Metrics, dir: Dir, n: usize) {
    let c = if dir == Dir::Up {
        &m.bytes_up
    } else {
        &m.bytes_down
    };
    c.fetch_add(n as u64, Relaxed);
}

/// How much of `room` a read of `dir` may take under the client's rate
/// cap: at most what the socket holds, as the bucket grants. `Err`: none
/// now, ask again at that instant.
fn capped(
    cap: Option<&RateCap>,
    dir: Dir,
    s: &impl LegSocket,
    room: usize,
) -> Result<usize, std::time::Instant> {
    let Some(cap) = cap else { return Ok(room) };
    match s.queued().unwrap_or(room).min(room) {
        // Readable with nothing queued: an end of stream or a reset to
        // read (a byte arriving meanwhile passes unmetered).
        0 => Ok(room.min(1)),
        want => match cap.grant(dir, want as u64) {
            (0, Some(again)) => Err(again),
            (n, _) => Ok(n as usize),
        },
    }
}

/// One read attempt on the source leg of `dir`, as the relay (and the
/// client's rate cap) allows. `Some(t)`: the cap holds the direction back
/// until `t`.
pub(crate) fn read(
    relay: &mut Relay,
    dir: Dir,
    s: &impl LegSocket,
    sp: &mut Option<Splicing>,
    now: Instant,
    m: &Metrics,
    cap: Option<&RateCap>,
) -> Option<std::time::Instant> {
    if let Some(sp) = sp {
        let room = relay.read_room(dir);
        if room == 0 {
            return None;
        }
        let room = match capped(cap, dir, s, room) {
            Ok(n) => n,
            Err(again) => return Some(again),
        };
        match s.splice_in(&sp.pipes[dir as usize], room) {
            Ok(SpliceIn::Moved(n)) => {
                relay.commit_read_external(now, dir, n);
                count_read(m, dir, n);
            }
            Ok(SpliceIn::Eof) => relay.handle_eof(now, dir),
            Ok(SpliceIn::PipeFull) => sp.full[dir as usize] = true,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
            Err(_) => relay.handle_reset(now, dir.src()),
        }
        return None;
    }
    let slot = relay.read_slot(dir);
    if slot.is_empty() {
        return None;
    }
    let len = match capped(cap, dir, s, slot.len()) {
        Ok(n) => n,
        Err(again) => return Some(again),
    };
    match s.try_read(&mut slot[..len]) {
        Ok(0) => relay.handle_eof(now, dir),
        Ok(n) => {
            relay.commit_read(now, dir, n);
            count_read(m, dir, n);
        }
        Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
        Err(_) => relay.handle_reset(now, dir.src()),
    }
    None
}

/// One write attempt on the destination leg of `dir` of what the relay
/// has, at most `max` bytes.
pub(crate) fn write(
    relay: &mut Relay,
    dir: Dir,
    s: &impl LegSocket,
    sp: &mut Option<Splicing>,
    now: Instant,
    max: usize,
) {
    if let Some(sp) = sp {
        let pending = relay.external_pending(dir).min(max);
        if pending == 0 {
            return;
        }
        match s.splice_out(&sp.pipes[dir as usize], pending) {
            Ok(n) => {
                relay.commit_write_external(now, dir, n);
                sp.full[dir as usize] = false;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
            Err(_) => relay.handle_reset(now, dir.dst()),
        }
        return;
    }
    let slot = relay.write_slot(dir);
    let slot = &slot[..slot.len().min(max)];
    if slot.is_empty() {
        return;
    }
    match s.try_write(slot) {
        Ok(n) => relay.commit_write(now, dir, n),
        Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
        Err(_) => relay.handle_reset(now, dir.dst()),
    }
}

/// [`write`] as the leg's bucket allows: `Some(t)`, the bucket holds the
/// direction back until `t`.
fn shaped_write(
    relay: &mut Relay,
    dir: Dir,
    s: &impl LegSocket,
    sp: &mut Option<Splicing>,
    now: Instant,
    shaper: &mut Option<LegShaper>,
) -> Option<Instant> {
    let Some(sh) = shaper else {
        write(relay, dir, s, sp, now, usize::MAX);
        return None;
    };
    match sh.allow(now, relay.stats(dir).buffered as u64) {
        Ok(n) => {
            let before = relay.stats(dir).written;
            write(relay, dir, s, sp, now, n as usize);
            sh.wrote(relay.stats(dir).written - before);
            None
        }
        Err(again) => Some(again),
    }
}

/// Runs the relay to its end. Errors are the driver's own failures.
async fn drive(relay: &mut Relay, legs: &mut Legs, shared: &Shared) -> io::Result<()> {
    let m = &shared.metrics;
    let mut abort = shared.abort.clone();
    let mut abort_live = true;
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    let mut pauses = 0;
    // Directions the client's rate cap holds back, until when.
    let mut held: [Option<std::time::Instant>; 2] = [None; 2];
    // Directions the legs' buckets hold back, until when.
    let mut unshaped: [Option<Instant>; 2] = [None; 2];
    loop {
        if carry_out(relay, &legs.client, legs.server.as_ref(), &mut ()) {
            return Ok(());
        }
        let st = relay.stats(Dir::Up).pauses + relay.stats(Dir::Down).pauses;
        if st != pauses {
            m.pauses.fetch_add(st - pauses, Relaxed);
            pauses = st;
        }
        legs.account(relay, m, false);
        let Some(server) = legs.server.as_ref() else {
            // The relay closes before this when the server leg is missing.
            return Err(io::Error::other(
                "no server leg and the relay is still open",
            ));
        };
        let client = &legs.client;
        let full = legs.splice.as_ref().map_or([false; 2], |sp| sp.full);
        let (ru, rd) = (
            relay.wants_read(Dir::Up) && !full[0] && held[0].is_none(),
            relay.wants_read(Dir::Down) && !full[1] && held[1].is_none(),
        );
        let release = held
            .iter()
            .flatten()
            .min()
            .map(|&t| tokio::time::Instant::from_std(t));
        let cap = legs.cap.as_ref();
        let sp = &mut legs.splice;
        let shapers = &mut legs.shapers;
        let (wu, wd) = (
            relay.wants_write(Dir::Up) && unshaped[0].is_none(),
            relay.wants_write(Dir::Down) && unshaped[1].is_none(),
        );
        let reshape = unshaped.iter().flatten().min().map(|&t| shared.to_tokio(t));
        let deadline = relay.poll_timeout().map(|t| shared.to_tokio(t));
        let now_if = |r: io::Result<()>| r.map(|_| shared.now());
        tokio::select! {
            r = client.readable(), if ru => { let now = now_if(r)?; held[0] = read(relay, Dir::Up, client, sp, now, m, cap) }
            r = server.readable(), if rd => { let now = now_if(r)?; held[1] = read(relay, Dir::Down, server, sp, now, m, cap) }
            _ = sleep_opt(release), if release.is_some() => held = [None; 2],
            _ = sleep_opt(reshape), if reshape.is_some() => unshaped = [None; 2],
            r = server.writable(), if wu => { let now = now_if(r)?; unshaped[0] = shaped_write(relay, Dir::Up, server, sp, now, &mut shapers[0]) }
            r = client.writable(), if wd => { let now = now_if(r)?; unshaped[1] = shaped_write(relay, Dir::Down, client, sp, now, &mut shapers[1]) }
            _ = sleep_opt(deadline) => relay.handle_timeout(shared.now()),
            _ = tick.tick(), if shared.sample_legs => sample(client, Some(server), m),
            r = abort.changed(), if abort_live => {
                match r {
                    Ok(()) if *abort.borrow() => relay.handle_abort(shared.now()),
                    Ok(()) => {}
                    Err(_) => abort_live = false,
                }
            }
        }
    }
}

async fn sleep_opt(t: Option<tokio::time::Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
#[path = "conn_tests.rs"]
mod tests;
