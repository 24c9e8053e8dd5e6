//! Two-node PEP: every flow between a pair of nodes crosses ONE QUIC
//! connection, one bidirectional stream per flow.
//!
//! * **split-start** intercepts TCP connections transparently (as the
//!   single-node proxy does), opens a stream per connection and sends a
//!   header naming the original destination, the client's first bytes
//!   right behind it (one round trip to open, [`relay_opening`]);
//!   **split-end** checks the destination against its policy, connects,
//!   answers with a status byte, and both relay bytes until each direction
//!   ends.
//! * **Why QUIC.** Per-flow credit is QUIC's per-stream flow control: each
//!   stream may have at most `flow_window` bytes unacknowledged by the
//!   receiving application, so a client that stops reading stalls only its
//!   own stream while the connection-level window is left unlimited. Streams
//!   of equal priority are served round-robin, which is fair scheduling by
//!   bytes at frame granularity. TLS 1.3 with mutual authentication comes
//!   with it, loss recovery is per connection (one flow's loss does not
//!   block another's bytes, unlike streams multiplexed over one TCP
//!   connection), and the congestion control is selectable (cubic,
//!   cubic-flows: CUBIC that backs off as its N flows would, bbr, newreno;
//!   quinn's bbr floods a shallow queue, see docs/daemon.md).
//! * **Authentication** pins the peer's certificate: each node has its own
//!   key pair and holds the other's certificate (`pep proxy keygen`);
//!   anything else fails the handshake, is logged and counted, and no flow
//!   is opened.
//! * **Faults.** Keepalives run every `keepalive`; a peer silent for
//!   `dead_after` is gone: every flow on the tunnel is reset (clients see a
//!   RST, never a hang), and split-start reconnects with backoff.

pub mod cc;
pub mod cc_bbr;
pub mod end;
pub mod localq;
pub mod start;
mod tls;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use pep_core::relay::Dir;
use quinn::{RecvStream, SendStream, VarInt};
use socket2::SockRef;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub use tls::{keygen, load_tls, Tls, TlsFiles};

use crate::client_rate::RateCap;
use crate::net::Cidr;

/// Which end of the tunnel this node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    SplitStart,
    SplitEnd,
}

/// Tunnel congestion control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TunnelCc {
    Cubic,
    /// CUBIC backing off as the flows it carries would (`cc.rs`).
    CubicFlows,
    /// The core's BBR v1 (`cc_bbr.rs`): for long paths with random loss.
    Bbr,
    /// quinn 0.11's own BBR (floods: kept for comparison only).
    QuinnBbr,
    NewReno,
}

/// `[tunnel]` settings, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TunnelSettings {
    pub role: Role,
    /// split-start: where split-end listens (UDP).
    pub peer: Option<SocketAddr>,
    /// split-end: the UDP address it listens on.
    pub listen: Option<SocketAddr>,
    pub tls: TlsFiles,
    pub cc: TunnelCc,
    /// Per-flow credit: bytes a stream may have in flight to a receiving
    /// application that has not read them.
    pub flow_window: u64,
    pub keepalive: Duration,
    /// A peer silent this long is gone.
    pub dead_after: Duration,
    /// split-end: destinations it may connect to (never an open relay).
    pub allow: Vec<Cidr>,
    /// split-start: the thesis's local queue in front of the stack.
    pub local_queue: Option<localq::LocalQueueSettings>,
}

/// Application error codes on streams.
pub const CODE_RESET: VarInt = VarInt::from_u32(1);

/// The status split-end answers a flow's header with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Connected = 0,
    /// Destination outside `allow`.
    Refused = 1,
    /// The destination did not answer or refused the connection.
    Unreachable = 2,
}

impl Status {
    fn from_byte(b: u8) -> Option<Status> {
        [Status::Connected, Status::Refused, Status::Unreachable]
            .into_iter()
            .find(|s| *s as u8 == b)
    }
}

const HEADER_VERSION: u8 = 1;

/// A flow's header: version, destination and client, each address as a
/// family byte (4 or 6), the address and a big-endian port.
pub fn encode_header(dst: SocketAddr, client: SocketAddr) -> Vec<u8> {
    let mut v = vec![HEADER_VERSION];
    for a in [dst, client] {
        match a.ip() {
            IpAddr::V4(ip) => {
                v.push(4);
                v.extend_from_slice(&ip.octets());
            }
            IpAddr::V6(ip) => {
                v.push(6);
                v.extend_from_slice(&ip.octets());
            }
        }
        v.extend_from_slice(&a.port().to_be_bytes());
    }
    v
}

/// Reads a header written by [`encode_header`]: (destination, client).
pub async fn read_header(r: &mut RecvStream) -> Result<(SocketAddr, SocketAddr), String> {
    let mut b = [0u8; 1];
    r.read_exact(&mut b).await.map_err(|e| e.to_string())?;
    if b[0] != HEADER_VERSION {
        return Err(format!(
            "header version {} (expected {HEADER_VERSION})",
            b[0]
        ));
    }
    let mut out = Vec::new();
    for _ in 0..2 {
        r.read_exact(&mut b).await.map_err(|e| e.to_string())?;
        let ip = match b[0] {
            4 => {
                let mut a = [0u8; 4];
                r.read_exact(&mut a).await.map_err(|e| e.to_string())?;
                IpAddr::from(a)
            }
            6 => {
                let mut a = [0u8; 16];
                r.read_exact(&mut a).await.map_err(|e| e.to_string())?;
                IpAddr::from(a)
            }
            f => return Err(format!("address family {f}")),
        };
        let mut p = [0u8; 2];
        r.read_exact(&mut p).await.map_err(|e| e.to_string())?;
        out.push(SocketAddr::new(ip, u16::from_be_bytes(p)));
    }
    Ok((out[0], out[1]))
}

/// How a relayed flow ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowEnd {
    /// Both directions closed cleanly.
    Clean,
    /// The TCP side reset (or failed): the stream was reset.
    ResetByTcp,
    /// The tunnel side reset the stream or the tunnel went away: the TCP
    /// side was reset.
    ResetByTunnel,
}

impl FlowEnd {
    /// Its label in `pep_tunnel_flows_ended_total{how}`.
    pub fn how(self) -> &'static str {
        match self {
            FlowEnd::Clean => "clean",
            FlowEnd::ResetByTcp => "reset_by_tcp",
            FlowEnd::ResetByTunnel => "reset_by_tunnel",
        }
    }
}

const PUMP_BUF: usize = 64 * 1024;

/// TCP into the stream; FIN becomes the stream's finish. Under a
/// client's rate cap each chunk read is paid for before it goes on.
async fn tcp_to_stream(
    r: &mut tokio::net::tcp::ReadHalf<'_>,
    w: &mut SendStream,
    bytes: &std::sync::atomic::AtomicU64,
    flow_read: Option<&std::sync::atomic::AtomicU64>,
    cap: Option<&RateCap>,
) -> Result<(), FlowEnd> {
    let mut buf = vec![0u8; PUMP_BUF];
    loop {
        let n = match r.read(&mut buf).await {
            Ok(0) => {
                let _ = w.finish();
                return Ok(());
            }
            Ok(n) => n,
            Err(_) => return Err(FlowEnd::ResetByTcp),
        };
        let mut off = 0;
        while off < n {
            let end = match cap {
                Some(c) => off + c.paid(Dir::Up, (n - off) as u64).await as usize,
                None => n,
            };
            to_stream(w, &buf[off..end], flow_read).await?;
            off = end;
        }
        bytes.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Writes `b` into the stream.
async fn to_stream(
    w: &mut SendStream,
    b: &[u8],
    flow_read: Option<&std::sync::atomic::AtomicU64>,
) -> Result<(), FlowEnd> {
    match flow_read {
        // Piece by piece as quinn takes them, each counted into the local
        // queue's credit as it goes: the flow's progress is smooth even
        // when a chunk takes the tunnel a while.
        Some(c) => {
            let mut off = 0;
            while off < b.len() {
                let k = w
                    .write(&b[off..])
                    .await
                    .map_err(|_| FlowEnd::ResetByTunnel)?;
                off += k;
                c.fetch_add(k as u64, std::sync::atomic::Ordering::Relaxed);
            }
            Ok(())
        }
        None => w.write_all(b).await.map_err(|_| FlowEnd::ResetByTunnel),
    }
}

/// The stream into TCP; its finish becomes a FIN. Under a client's rate
/// cap each chunk is paid for before it goes on.
async fn stream_to_tcp(
    r: &mut RecvStream,
    w: &mut tokio::net::tcp::WriteHalf<'_>,
    bytes: &std::sync::atomic::AtomicU64,
    cap: Option<&RateCap>,
) -> Result<(), FlowEnd> {
    let mut buf = vec![0u8; PUMP_BUF];
    loop {
        match r.read(&mut buf).await {
            Ok(Some(n)) => {
                let mut off = 0;
                while off < n {
                    let end = match cap {
                        Some(c) => off + c.paid(Dir::Down, (n - off) as u64).await as usize,
                        None => n,
                    };
                    w.write_all(&buf[off..end])
                        .await
                        .map_err(|_| FlowEnd::ResetByTcp)?;
                    off = end;
                }
                bytes.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            }
            Ok(None) => {
                let _ = w.shutdown().await;
                return Ok(());
            }
            Err(_) => return Err(FlowEnd::ResetByTunnel),
        }
    }
}

/// Relays `tcp` and the stream both ways until both directions end; a
/// reset on either side becomes a reset on the other. Bytes are counted
/// into the tunnel's metrics as they pass, and those read from `tcp` also
/// into `flow_read` (the local queue's credit).
pub async fn relay(
    tcp: TcpStream,
    send: SendStream,
    recv: RecvStream,
    m: &crate::metrics::TunnelMetrics,
    flow_read: Option<&std::sync::atomic::AtomicU64>,
) -> FlowEnd {
    relay_both(tcp, send, recv, m, flow_read, None, None)
        .await
        .0
}

/// split-start's relay of a flow whose header was just written: the
/// client's bytes follow the header at once, while split-end checks its
/// policy and connects (the open costs one round trip, not two), and the
/// first byte of the stream is split-end's [`Status`], awaited for up to
/// `answer_within` before anything flows to the client. Anything but
/// `Connected` resets the client. What split-end received meanwhile it
/// never delivers to a destination it refused or could not reach (it stops
/// the stream unread), and it can be no more than the flow's credit
/// (`flow_window`), as for a flow whose reader does not read. With `cap`
/// (the client's `proxy.client_rate`) both directions move at most at its
/// share of the cap. Returns the flow's `pep_tunnel_flows_ended_total`
/// label.
pub async fn relay_opening(
    tcp: TcpStream,
    send: SendStream,
    recv: RecvStream,
    answer_within: Duration,
    m: &crate::metrics::TunnelMetrics,
    flow_read: Option<&std::sync::atomic::AtomicU64>,
    cap: Option<&RateCap>,
) -> &'static str {
    match relay_both(tcp, send, recv, m, flow_read, Some(answer_within), cap).await {
        (_, Some(Answer::Status(Status::Refused))) => "refused_by_policy",
        (_, Some(Answer::Status(Status::Unreachable))) => "unreachable",
        (end, Some(Answer::Status(Status::Connected))) => end.how(),
        // split-end connected, then reset the stream (its destination
        // reset) before the answer was read: the answer went with it.
        (_, Some(Answer::Reset)) => FlowEnd::ResetByTunnel.how(),
        // No answer: the tunnel failed or split-end took too long, unless
        // the client gave up first.
        (FlowEnd::ResetByTcp, None | Some(Answer::None)) => FlowEnd::ResetByTcp.how(),
        (_, None | Some(Answer::None)) => "no_tunnel",
    }
}

/// What came of waiting for split-end's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    Status(Status),
    /// The stream was reset first (split-end connected and then relayed a
    /// reset: a reset discards the unread answer).
    Reset,
    /// Nothing within the time, or the tunnel went away.
    None,
}

/// split-end's answer, the stream's first byte, within `within`.
async fn read_status(r: &mut RecvStream, within: Duration) -> Answer {
    let mut b = [0u8; 1];
    match tokio::time::timeout(within, r.read_exact(&mut b)).await {
        Ok(Ok(())) => Status::from_byte(b[0]).map_or(Answer::None, Answer::Status),
        Ok(Err(quinn::ReadExactError::ReadError(quinn::ReadError::Reset(_)))) => Answer::Reset,
        _ => Answer::None,
    }
}

/// Both directions; with `answer`, the stream's bytes reach `tcp` only
/// after a `Connected` status read within it (returned with how it ended).
async fn relay_both(
    mut tcp: TcpStream,
    mut send: SendStream,
    mut recv: RecvStream,
    m: &crate::metrics::TunnelMetrics,
    flow_read: Option<&std::sync::atomic::AtomicU64>,
    answer: Option<Duration>,
    cap: Option<&RateCap>,
) -> (FlowEnd, Option<Answer>) {
    let mut status = answer
        .is_none()
        .then_some(Answer::Status(Status::Connected));
    let end = {
        let (mut rd, mut wr) = tcp.split();
        let up = tcp_to_stream(&mut rd, &mut send, &m.bytes_to_tunnel, flow_read, cap);
        let (st, recv) = (&mut status, &mut recv);
        let down = async move {
            if let Some(within) = answer {
                *st = Some(read_status(recv, within).await);
            }
            match st {
                Some(Answer::Status(Status::Connected)) => {
                    stream_to_tcp(recv, &mut wr, &m.bytes_from_tunnel, cap).await
                }
                _ => Err(FlowEnd::ResetByTunnel),
            }
        };
        match tokio::try_join!(up, down) {
            Ok(_) => FlowEnd::Clean,
            Err(e) => e,
        }
    };
    // split-end refusing stops the stream, which can fail the client's
    // direction before its answer was read: the answer is on its way.
    if let (Some(within), None, FlowEnd::ResetByTunnel) = (answer, status, end) {
        status = Some(read_status(&mut recv, within).await);
    }
    if end != FlowEnd::Clean {
        let _ = send.reset(CODE_RESET);
        let _ = recv.stop(CODE_RESET);
        reset_tcp(&tcp);
    }
    (end, status)
}

/// Makes closing `s` send a RST.
pub fn reset_tcp(s: &TcpStream) {
    let _ = SockRef::from(s).set_linger(Some(Duration::ZERO));
}

/// The QUIC transport both ends use; `metrics` gives `cubic-flows` the
/// number of open flows.
pub fn transport(
    t: &TunnelSettings,
    max_flows: usize,
    metrics: Arc<crate::metrics::Metrics>,
) -> Arc<quinn::TransportConfig> {
    let mut c = quinn::TransportConfig::default();
    let window = VarInt::from_u64(t.flow_window).unwrap_or(VarInt::MAX);
    c.stream_receive_window(window)
        // Credit is per flow; the connection as a whole is not limited.
        .receive_window(VarInt::MAX)
        .send_window(t.flow_window.saturating_mul(64).max(16 << 20))
        .max_concurrent_bidi_streams(VarInt::from_u32(max_flows.min(u32::MAX as usize) as u32))
        .max_concurrent_uni_streams(VarInt::from_u32(0))
        .keep_alive_interval(Some(t.keepalive))
        .max_idle_timeout(t.dead_after.try_into().ok());
    match t.cc {
        TunnelCc::Cubic => {
            c.congestion_controller_factory(Arc::new(quinn::congestion::CubicConfig::default()));
        }
        TunnelCc::CubicFlows => {
            c.congestion_controller_factory(Arc::new(cc::FlowCubicFactory { metrics }));
        }
        TunnelCc::Bbr => {
            c.congestion_controller_factory(Arc::new(cc_bbr::CoreBbrFactory));
        }
        TunnelCc::QuinnBbr => {
            c.congestion_controller_factory(Arc::new(quinn::congestion::BbrConfig::default()));
        }
        TunnelCc::NewReno => {
            c.congestion_controller_factory(Arc::new(quinn::congestion::NewRenoConfig::default()));
        }
    }
    Arc::new(c)
}

/// The tunnel's UDP buffers: 8 MB holds 640 ms at 100 Mbit/s, so a
/// daemon that loses the CPU for a while loses no datagrams.
const UDP_BUFFER: usize = 8 << 20;

/// A UDP socket for the tunnel with large buffers (a 100 Mbit/s, 250 ms
/// path has 3 MB in flight). `SO_RCVBUF` is silently capped at
/// `net.core.rmem_max` (208 KB by default, 17 ms at 100 Mbit/s), so the
/// buffers are forced past it where the daemon may (CAP_NET_ADMIN, which
/// TPROXY needs anyway), and a smaller buffer is reported.
pub fn udp_socket(addr: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::DGRAM,
        Some(socket2::Protocol::UDP),
    )?;
    for (force, plain) in [
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
    ] {
        if crate::net::setsockopt_int(&s, libc::SOL_SOCKET, force, UDP_BUFFER as i32).is_err() {
            let _ = crate::net::setsockopt_int(&s, libc::SOL_SOCKET, plain, UDP_BUFFER as i32);
        }
    }
    // The kernel reports twice what it was asked for (its bookkeeping).
    let got = s.recv_buffer_size()?.min(s.send_buffer_size()?) / 2;
    if got < UDP_BUFFER {
        tracing::warn!(
            bytes = got,
            wanted = UDP_BUFFER,
            "tunnel: UDP socket buffers are smaller than asked (raise net.core.rmem_max and wmem_max, or run with CAP_NET_ADMIN); a stalled daemon will drop datagrams"
        );
    }
    s.bind(&addr.into())?;
    Ok(s.into())
}

/// A destination split-end may connect to.
pub fn allowed(allow: &[Cidr], dst: IpAddr) -> bool {
    allow.iter().any(|c| c.contains(dst))
}

#[cfg(test)]
mod tests;
