//! Real Linux TCP transfers between lab nodes, verified byte for byte.
//!
//! Each flow is a sender thread in its source node's namespace and a
//! receiver thread in its destination's. The sender writes a seeded
//! pseudo-random stream ([`crate::pattern`]) over a socket with the chosen
//! congestion control (`TCP_CONGESTION`); the receiver regenerates the
//! stream and compares every byte it reads, and counts bytes per time bin
//! (goodput over time). A third thread samples the sender's `TCP_INFO`
//! (cwnd, RTT, retransmissions, the peer's advertised window).
//!
//! A flow ends when the sender has written its bytes (finite) or its time
//! is up (bulk), shut down its side, and the receiver has read to the end
//! and closed: so every byte sent is known to have arrived, or the flow
//! reports an error. Bulk senders set `TCP_NOTSENT_LOWAT`, so little
//! unsent data is left to drain when their time is up. Every blocking call
//! has a timeout under the run's deadline.

use std::io::{self, Read};
use std::net::{Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration as StdDuration;

use pep_core::{Duration, Instant, Rate};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::error::{LabError, Result};
use crate::netns;
use crate::pattern::{Pattern, Verifier};
use crate::state::Endpoint;
use crate::tcpinfo::{self, TcpSample};
use pep_io::clock::Clock;

/// How much a flow sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Amount {
    /// Exactly this many bytes, then close.
    Bytes(u64),
    /// As much as it can for this long, then close.
    For(Duration),
}

/// One TCP transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    pub name: String,
    pub from: Endpoint,
    pub to: Endpoint,
    /// Congestion control name as Linux knows it: `cubic`, `reno`, `bbr`.
    pub cc: String,
    pub amount: Amount,
    /// When the sender connects, after the run starts.
    pub start: Duration,
    /// Seed of the byte stream.
    pub seed: u64,
    /// The receiver's port (on `to.addr`).
    pub port: u16,
    /// The receiver's `SO_RCVBUF`, set before `listen`. The kernel doubles
    /// it and keeps part for overhead, so the advertised window is smaller;
    /// read it from the sender's `TCP_INFO` (`snd_wnd`).
    pub rcvbuf: Option<u32>,
    /// The receive window the sender may use, in bytes (the simulator's
    /// `rwnd`). Held with `TCP_WINDOW_CLAMP` on a locked receive buffer,
    /// re-applied after every read: recent kernels (6.18 here) overwrite
    /// the clamp from the buffer size when the first segments arrive, and
    /// buffer autotuning raises it unless the buffer is locked.
    pub window_clamp: Option<u32>,
    /// The sender's `SO_SNDBUF`.
    pub sndbuf: Option<u32>,
    /// The sender's `TCP_MAXSEG`, set before connecting. Linux counts TCP
    /// options in it: with timestamps a segment carries 12 bytes less
    /// payload, so the packets on the wire are `mss + 40` bytes, as in the
    /// simulator.
    pub mss: Option<u32>,
    /// Run the flow over IPv6 to this address of `to` (a lab made with
    /// `LabOptions::ipv6`; `Lab::addr6` gives it) instead of to `to.addr`.
    pub to_ipv6: Option<Ipv6Addr>,
}

impl FlowSpec {
    /// A bulk `cubic` flow with defaults for everything else.
    pub fn new(name: &str, from: Endpoint, to: Endpoint, amount: Amount) -> FlowSpec {
        FlowSpec {
            name: name.to_string(),
            from,
            to,
            cc: "cubic".to_string(),
            amount,
            start: Duration::ZERO,
            seed: 1,
            port: 5001,
            rcvbuf: None,
            window_clamp: None,
            sndbuf: None,
            mss: None,
            to_ipv6: None,
        }
    }

    /// The receiver's address and port.
    pub fn to_socket_addr(&self) -> SocketAddr {
        match self.to_ipv6 {
            Some(a) => SocketAddr::V6(SocketAddrV6::new(a, self.port, 0, 0)),
            None => SocketAddr::V4(SocketAddrV4::new(self.to.addr, self.port)),
        }
    }
}

/// Measurement settings of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrafficOptions {
    /// Goodput bin width.
    pub interval: Duration,
    /// `TCP_INFO` sampling period.
    pub sample: Duration,
    /// Hard limit on the whole run: flows still going are ended with an
    /// error.
    pub deadline: Duration,
}

impl Default for TrafficOptions {
    fn default() -> Self {
        TrafficOptions {
            interval: Duration::from_millis(100),
            sample: Duration::from_millis(100),
            deadline: Duration::from_secs(600),
        }
    }
}

/// What one flow did. Times are on the run's clock (zero at its start).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowResult {
    pub name: String,
    pub from: String,
    pub to: String,
    pub cc: String,
    /// When the sender started connecting.
    pub start: Instant,
    pub sent_bytes: u64,
    /// Bytes the receiver read, all of them checked against the stream.
    pub delivered_bytes: u64,
    /// Stream offset of the first byte that differed, if any.
    pub first_mismatch: Option<u64>,
    /// When the receiver read the last byte.
    pub last_byte: Option<Instant>,
    /// Whether the flow was finite (its completion time is meaningful).
    pub finite: bool,
    /// Bytes read in each goodput bin; bin `k` is `[k, k+1) * interval`.
    pub goodput: Vec<u64>,
    /// The sender's `TCP_INFO` over time; the last is taken after the
    /// transfer ended.
    pub samples: Vec<TcpSample>,
    pub error: Option<String>,
}

impl FlowResult {
    /// Everything sent arrived, in order, unchanged, and nothing failed.
    pub fn byte_exact(&self) -> bool {
        self.error.is_none()
            && self.first_mismatch.is_none()
            && self.sent_bytes == self.delivered_bytes
            && self.sent_bytes > 0
    }

    /// The sender's samples taken in `[t0, t1)` of the run.
    pub fn samples_between(&self, t0: Duration, t1: Duration) -> impl Iterator<Item = &TcpSample> {
        let (t0, t1) = (Instant::ZERO + t0, Instant::ZERO + t1);
        self.samples.iter().filter(move |s| s.t >= t0 && s.t < t1)
    }

    /// Goodput over the bins wholly inside `[t0, t1)`.
    pub fn goodput_between(&self, interval: Duration, t0: Duration, t1: Duration) -> Rate {
        let w = interval.as_nanos().max(1);
        let k0 = t0.as_nanos().div_ceil(w) as usize;
        let k1 = ((t1.as_nanos() / w) as usize).min(self.goodput.len());
        if k1 <= k0 {
            return Rate(0);
        }
        let bytes: u64 = self.goodput[k0..k1].iter().sum();
        Rate::from_bytes_over(bytes, Duration(w * (k1 - k0) as u64))
    }

    /// Rate of data delivered to the receiver's TCP between the samples
    /// nearest `t0` and `t1`, from `tcpi_delivered` (segments, counting
    /// selectively acknowledged ones) times the MSS. Unlike receiver
    /// goodput over a short window, a hole waiting for retransmission at
    /// either end does not bias it. `None` without two distinct samples.
    pub fn delivery_rate_between(&self, t0: Duration, t1: Duration) -> Option<Rate> {
        let near = |t: Duration| {
            self.samples
                .iter()
                .min_by_key(|s| s.t.as_nanos().abs_diff(t.as_nanos()))
        };
        let (a, b) = (near(t0)?, near(t1)?);
        let segs = b.delivered.checked_sub(a.delivered)? as u64;
        (b.t > a.t).then(|| Rate::from_bytes_over(segs * b.snd_mss as u64, b.t - a.t))
    }

    /// The sender's final `TCP_INFO`.
    pub fn last_sample(&self) -> Option<&TcpSample> {
        self.samples.last()
    }
}

/// The flows of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrafficReport {
    pub interval: Duration,
    pub sample: Duration,
    /// When the last flow ended.
    pub duration: Duration,
    pub flows: Vec<FlowResult>,
}

/// Runs `flows` concurrently and waits for all of them.
pub fn run(flows: &[FlowSpec], opts: &TrafficOptions) -> Result<TrafficReport> {
    run_from(flows, opts, Clock::start())
}

/// [`run`] with `clock`'s zero (now or just before) as the run's time
/// zero, so the lab's services can share it ([`crate::lab::Lab::start_services`]).
pub fn run_from(flows: &[FlowSpec], opts: &TrafficOptions, clock: Clock) -> Result<TrafficReport> {
    if opts.interval == Duration::ZERO || opts.sample == Duration::ZERO {
        return Err(LabError::Traffic(
            "interval and sample must be positive".into(),
        ));
    }
    let deadline = Instant::ZERO + opts.deadline;
    let results: Vec<FlowResult> = std::thread::scope(|s| {
        let handles: Vec<_> = flows
            .iter()
            .map(|f| s.spawn(move || run_flow(f, opts, clock, deadline)))
            .collect();
        handles
            .into_iter()
            .zip(flows)
            .map(|(h, f)| {
                h.join().unwrap_or_else(|_| FlowResult {
                    name: f.name.clone(),
                    error: Some("flow thread panicked".into()),
                    ..FlowResult::default()
                })
            })
            .collect()
    });
    Ok(TrafficReport {
        interval: opts.interval,
        sample: opts.sample,
        duration: clock.now() - Instant::ZERO,
        flows: results,
    })
}

/// What the receiver thread found.
#[derive(Default)]
struct Received {
    verifier_offset: u64,
    first_mismatch: Option<u64>,
    last_byte: Option<Instant>,
    bins: Vec<u64>,
}

fn run_flow(f: &FlowSpec, opts: &TrafficOptions, clock: Clock, deadline: Instant) -> FlowResult {
    let mut out = FlowResult {
        name: f.name.clone(),
        from: f.from.node.clone(),
        to: f.to.node.clone(),
        cc: f.cc.clone(),
        finite: matches!(f.amount, Amount::Bytes(_)),
        ..FlowResult::default()
    };
    let (ready_tx, ready_rx) = mpsc::channel::<Result<()>>();
    // Set when the sender gives up before connecting, so the receiver
    // stops waiting for a connection that will not come.
    let sender_failed = AtomicBool::new(false);
    let (recv, send) = std::thread::scope(|s| {
        let failed = &sender_failed;
        let recv = s.spawn(move || {
            netns::in_netns(&f.to.netns, || {
                receive(f, opts, clock, deadline, ready_tx, failed)
            })
        });
        let send = s.spawn(move || {
            let r = match ready_rx.recv() {
                Ok(Ok(())) => {
                    clock.sleep_until(Instant::ZERO + f.start);
                    netns::in_netns(&f.from.netns, || send(f, opts, clock, deadline))
                }
                Ok(Err(e)) => Err(e),
                Err(_) => Err(LabError::Traffic("receiver ended before listening".into())),
            };
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            r
        });
        (recv.join(), send.join())
    });
    match send {
        Ok(Ok(s)) => {
            out.start = s.start;
            out.sent_bytes = s.sent;
            out.samples = s.samples;
        }
        Ok(Err(e)) => out.error = Some(format!("sender: {e}")),
        Err(_) => out.error = Some("sender panicked".into()),
    }
    match recv {
        Ok(Ok(r)) => {
            out.delivered_bytes = r.verifier_offset;
            out.first_mismatch = r.first_mismatch;
            out.last_byte = r.last_byte;
            out.goodput = r.bins;
        }
        Ok(Err(e)) => {
            out.error.get_or_insert(format!("receiver: {e}"));
        }
        Err(_) => {
            out.error.get_or_insert("receiver panicked".into());
        }
    }
    out
}

fn traffic_err(what: String) -> impl FnOnce(io::Error) -> LabError {
    move |e| LabError::Traffic(format!("{what}: {e}"))
}

fn set_int(sock: &impl AsRawFd, level: i32, name: i32, value: u32, what: &str) -> Result<()> {
    // The kernel reads a signed int: a larger value would turn negative.
    let v = value.min(libc::c_int::MAX as u32) as libc::c_int;
    // SAFETY: setsockopt with a valid int of the size given.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(traffic_err(format!("set {what}={value}"))(
            io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// Time left until `deadline`, at least 1 ms (a zero timeout means
/// "block forever" to the socket API).
fn left(clock: Clock, deadline: Instant) -> StdDuration {
    StdDuration::from_nanos(
        deadline
            .saturating_since(clock.now())
            .as_nanos()
            .max(1_000_000),
    )
}

fn receive(
    f: &FlowSpec,
    opts: &TrafficOptions,
    clock: Clock,
    deadline: Instant,
    ready: mpsc::Sender<Result<()>>,
    sender_failed: &AtomicBool,
) -> Result<Received> {
    let addr = f.to_socket_addr();
    let listen = || -> Result<Socket> {
        let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
            .map_err(traffic_err("socket".into()))?;
        sock.set_reuse_address(true)
            .map_err(traffic_err("SO_REUSEADDR".into()))?;
        // Before listen: the window scale is chosen from the buffer at the
        // handshake, and accepted sockets inherit both settings.
        if let Some(b) = f.rcvbuf {
            set_int(&sock, libc::SOL_SOCKET, libc::SO_RCVBUF, b, "SO_RCVBUF")?;
        } else if let Some(c) = f.window_clamp {
            // A locked buffer well above the clamp: it stops autotuning
            // from raising the clamp and never limits the window itself.
            // Above rmem_max only root may set it; a smaller one still
            // locks, and the sender's `snd_wnd` shows what was reached.
            let b = c.saturating_mul(4).max(64 << 10);
            set_int(
                &sock,
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                b,
                "SO_RCVBUFFORCE",
            )
            .or_else(|_| set_int(&sock, libc::SOL_SOCKET, libc::SO_RCVBUF, b, "SO_RCVBUF"))?;
        }
        if let Some(c) = f.window_clamp {
            set_int(
                &sock,
                libc::IPPROTO_TCP,
                libc::TCP_WINDOW_CLAMP,
                c,
                "TCP_WINDOW_CLAMP",
            )?;
        }
        sock.bind(&addr.into())
            .map_err(traffic_err(format!("bind {addr}")))?;
        sock.listen(1).map_err(traffic_err("listen".into()))?;
        Ok(sock)
    };
    let listener = match listen() {
        Ok(l) => {
            let _ = ready.send(Ok(()));
            l
        }
        Err(e) => {
            let msg = e.to_string();
            let _ = ready.send(Err(e));
            return Err(LabError::Traffic(msg));
        }
    };
    // accept(2) honours SO_RCVTIMEO: wake up now and then to see whether
    // the sender gave up or the deadline passed.
    listener
        .set_read_timeout(Some(StdDuration::from_millis(100)))
        .map_err(traffic_err("accept timeout".into()))?;
    let conn = loop {
        match listener.accept() {
            Ok((c, _)) => break c,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if sender_failed.load(Ordering::Relaxed) {
                    return Err(LabError::Traffic("the sender did not connect".into()));
                }
                if clock.now() >= deadline {
                    return Err(LabError::Traffic(format!("no connection on {addr}")));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(traffic_err(format!("accept on {addr}"))(e)),
        }
    };
    drop(listener);
    let mut stream: TcpStream = conn.into();
    stream
        .set_read_timeout(Some(StdDuration::from_millis(200)))
        .map_err(traffic_err("read timeout".into()))?;
    let mut verifier = Verifier::new(f.seed);
    let mut got = Received::default();
    let bin_ns = opts.interval.as_nanos();
    let mut buf = vec![0u8; 256 << 10];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if let Some(c) = f.window_clamp {
                    // A no-op in the kernel unless it moved the clamp.
                    set_int(
                        &stream,
                        libc::IPPROTO_TCP,
                        libc::TCP_WINDOW_CLAMP,
                        c,
                        "TCP_WINDOW_CLAMP",
                    )?;
                }
                let now = clock.now();
                verifier.check(&buf[..n]);
                let k = (now.as_nanos() / bin_ns) as usize;
                if got.bins.len() <= k {
                    got.bins.resize(k + 1, 0);
                }
                got.bins[k] += n as u64;
                got.last_byte = Some(now);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if clock.now() >= deadline {
                    return Err(LabError::Traffic(format!(
                        "deadline reached after {} bytes",
                        verifier.offset
                    )));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(traffic_err("read".into())(e)),
        }
    }
    got.verifier_offset = verifier.offset;
    got.first_mismatch = verifier.first_mismatch;
    Ok(got)
}

fn set_congestion_control(sock: &Socket, cc: &str) -> Result<()> {
    sock.set_tcp_congestion(cc.as_bytes()).map_err(|e| {
        let sysctl = |k| netns::read_sysctl(k).unwrap_or_default();
        LabError::Traffic(format!(
            "congestion control {cc:?}: {e} (available: {}; allowed without root: {})",
            sysctl("net/ipv4/tcp_available_congestion_control"),
            sysctl("net/ipv4/tcp_allowed_congestion_control"),
        ))
    })
}

/// Whether this process may give a TCP socket congestion control `cc`,
/// tried on a socket of the caller's namespace: the kernel's list is
/// machine-wide, and the attempt loads a module that is not loaded yet
/// (which reading `tcp_available_congestion_control` would not). For
/// checking a name before building a lab around it. The kernel's error
/// as it is: `ENOENT` for a name it does not have, `EPERM` for one this
/// user may not choose.
pub fn check_congestion_control(cc: &str) -> io::Result<()> {
    Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?.set_tcp_congestion(cc.as_bytes())
}

struct Sent {
    start: Instant,
    sent: u64,
    samples: Vec<TcpSample>,
}

/// Unsent bytes a bulk sender keeps queued: enough to never starve the
/// connection between two wake-ups of the writer, little enough to drain
/// quickly when its time is up.
const BULK_NOTSENT_LOWAT: u32 = 256 << 10;

fn send(f: &FlowSpec, opts: &TrafficOptions, clock: Clock, deadline: Instant) -> Result<Sent> {
    let to = f.to_socket_addr();
    let sock = Socket::new(Domain::for_address(to), Type::STREAM, Some(Protocol::TCP))
        .map_err(traffic_err("socket".into()))?;
    set_congestion_control(&sock, &f.cc)?;
    if let Some(b) = f.sndbuf {
        set_int(&sock, libc::SOL_SOCKET, libc::SO_SNDBUF, b, "SO_SNDBUF")?;
    }
    if let Some(m) = f.mss {
        set_int(&sock, libc::IPPROTO_TCP, libc::TCP_MAXSEG, m, "TCP_MAXSEG")?;
    }
    if matches!(f.amount, Amount::For(_)) {
        set_int(
            &sock,
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            BULK_NOTSENT_LOWAT,
            "TCP_NOTSENT_LOWAT",
        )?;
    }
    let start = clock.now();
    sock.connect_timeout(
        &SockAddr::from(to),
        left(clock, deadline).min(StdDuration::from_secs(10)),
    )
    .map_err(traffic_err(format!("connect to {to}")))?;
    sock.set_write_timeout(Some(StdDuration::from_millis(200)))
        .map_err(traffic_err("write timeout".into()))?;

    // Dropping `stop_tx` wakes the sampler at once: a sampling period
    // longer than the flow must not hold the run past its end.
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let fd = sock.as_raw_fd();
    let (sent, samples) = std::thread::scope(|s| {
        let sampler = s.spawn(move || {
            let mut v = vec![];
            let mut next = clock.now();
            loop {
                if let Ok(x) = tcpinfo::sample(fd, clock.now()) {
                    v.push(x);
                }
                next += opts.sample;
                let now = clock.now();
                if now >= deadline {
                    break v;
                }
                let wait = next.min(deadline).saturating_since(now);
                match stop_rx.recv_timeout(StdDuration::from_nanos(wait.as_nanos())) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    _ => break v,
                }
            }
        });
        let sent = write_stream(&sock, f, clock, deadline, start);
        drop(stop_tx);
        (sent, sampler.join().unwrap_or_default())
    });
    let sent = sent?;
    // Half-close, then wait for the receiver to read everything and close.
    sock.shutdown(std::net::Shutdown::Write)
        .map_err(traffic_err("shutdown".into()))?;
    let mut stream: TcpStream = sock.into();
    stream
        .set_read_timeout(Some(left(clock, deadline)))
        .map_err(traffic_err("read timeout".into()))?;
    let mut scratch = [0u8; 64];
    match stream.read(&mut scratch) {
        Ok(0) => {}
        Ok(_) => return Err(LabError::Traffic("receiver sent data".into())),
        Err(e) => return Err(traffic_err("waiting for the receiver to finish".into())(e)),
    }
    let mut samples = samples;
    if let Ok(x) = tcpinfo::sample(stream.as_raw_fd(), clock.now()) {
        samples.push(x);
    }
    Ok(Sent {
        start,
        sent,
        samples,
    })
}

fn write_stream(
    sock: &Socket,
    f: &FlowSpec,
    clock: Clock,
    deadline: Instant,
    start: Instant,
) -> Result<u64> {
    let pattern = Pattern::new(f.seed);
    let mut buf = vec![0u8; 64 << 10];
    let (limit, until) = match f.amount {
        Amount::Bytes(n) => (n, deadline),
        Amount::For(d) => (u64::MAX, (start + d).min(deadline)),
    };
    let mut offset = 0u64;
    // `pending` is the unwritten part of the current chunk, from `at`.
    let (mut at, mut pending) = (0usize, 0usize);
    while offset < limit {
        let now = clock.now();
        if now >= until {
            if matches!(f.amount, Amount::Bytes(_)) {
                return Err(LabError::Traffic(format!(
                    "deadline reached after {offset} of {limit} bytes"
                )));
            }
            break;
        }
        if pending == 0 {
            let n = (limit - offset).min(buf.len() as u64) as usize;
            pattern.fill(offset, &mut buf[..n]);
            (at, pending) = (0, n);
        }
        match sock.send(&buf[at..at + pending]) {
            Ok(n) => {
                offset += n as u64;
                at += n;
                pending -= n;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(traffic_err("write".into())(e)),
        }
    }
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goodput_between_uses_whole_bins() {
        let r = FlowResult {
            goodput: vec![125_000; 10], // 10 Mbit/s in 100 ms bins
            ..FlowResult::default()
        };
        let i = Duration::from_millis(100);
        assert_eq!(
            r.goodput_between(i, Duration::from_millis(150), Duration::from_millis(1000)),
            Rate::mbps(10)
        );
        assert_eq!(
            r.goodput_between(i, Duration::from_secs(2), Duration::from_secs(3)),
            Rate(0)
        );
    }

    #[test]
    fn byte_exact_needs_everything() {
        let mut r = FlowResult {
            sent_bytes: 10,
            delivered_bytes: 10,
            ..FlowResult::default()
        };
        assert!(r.byte_exact());
        r.first_mismatch = Some(3);
        assert!(!r.byte_exact());
        r.first_mismatch = None;
        r.delivered_bytes = 9;
        assert!(!r.byte_exact());
    }

    /// Two flows over loopback in the caller's namespace (no root needed):
    /// the stream arrives byte-exact and the samples are taken.
    #[test]
    fn loopback_flows_are_byte_exact() {
        let here = |node: &str| Endpoint {
            node: node.into(),
            netns: String::new(),
            addr: std::net::Ipv4Addr::LOCALHOST,
        };
        // Reno: the one congestion control every user may choose.
        let mut a = FlowSpec::new("a", here("x"), here("y"), Amount::Bytes(3_000_001));
        a.cc = "reno".into();
        let mut b = FlowSpec::new(
            "b",
            here("x"),
            here("y"),
            Amount::For(Duration::from_millis(300)),
        );
        b.cc = "reno".into();
        b.seed = 9;
        // Ports from the kernel, so parallel test runs cannot clash.
        for f in [&mut a, &mut b] {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            f.port = l.local_addr().unwrap().port();
        }
        let opts = TrafficOptions {
            deadline: Duration::from_secs(20),
            ..TrafficOptions::default()
        };
        let r = run(&[a, b], &opts).unwrap();
        for f in &r.flows {
            assert!(f.byte_exact(), "{}: {:?}", f.name, f.error);
            assert!(!f.samples.is_empty());
            assert_eq!(f.goodput.iter().sum::<u64>(), f.delivered_bytes);
        }
        assert_eq!(r.flows[0].delivered_bytes, 3_000_001);
        assert!(r.flows[0].finite && !r.flows[1].finite);
    }

    /// A sampling period longer than the flow ends with the flow: the
    /// sampler used to sleep a whole period, holding the run.
    #[test]
    fn a_long_sampling_period_does_not_hold_the_run() {
        let here = |node: &str| Endpoint {
            node: node.into(),
            netns: String::new(),
            addr: std::net::Ipv4Addr::LOCALHOST,
        };
        let mut f = FlowSpec::new(
            "f",
            here("x"),
            here("y"),
            Amount::For(Duration::from_millis(200)),
        );
        f.cc = "reno".into();
        f.port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let opts = TrafficOptions {
            interval: Duration::from_secs(3600),
            sample: Duration::from_secs(30),
            deadline: Duration::from_secs(60),
        };
        let r = run(&[f], &opts).unwrap();
        assert!(r.flows[0].byte_exact(), "{:?}", r.flows[0].error);
        assert!(r.duration < Duration::from_secs(5), "{:?}", r.duration);
        // The first sample, and the last one after the transfer.
        assert!(r.flows[0].samples.len() >= 2);
    }

    #[test]
    fn congestion_controls_are_checked_by_name() {
        check_congestion_control("reno").unwrap();
        let e = check_congestion_control("no-such-cc").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
    }

    /// A sender that cannot start fails its flow at once; the receiver
    /// does not wait for the deadline.
    #[test]
    fn unknown_congestion_control_fails_fast() {
        let here = |node: &str| Endpoint {
            node: node.into(),
            netns: String::new(),
            addr: std::net::Ipv4Addr::LOCALHOST,
        };
        let mut f = FlowSpec::new("x", here("x"), here("y"), Amount::Bytes(1000));
        f.cc = "no-such-cc".into();
        f.port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let opts = TrafficOptions {
            deadline: Duration::from_secs(30),
            ..TrafficOptions::default()
        };
        let r = run(&[f], &opts).unwrap();
        let err = r.flows[0].error.as_deref().unwrap_or("");
        assert!(err.contains("congestion control \"no-such-cc\""), "{err}");
        assert!(r.duration < Duration::from_secs(5), "{:?}", r.duration);
        assert!(!r.flows[0].byte_exact());
    }
}
