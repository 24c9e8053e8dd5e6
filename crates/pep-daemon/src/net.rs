//! Linux socket plumbing: subnets, transparent listeners, per-leg options,
//! `TCP_INFO`, resets, and the descriptor limit.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd};
use std::str::FromStr;

use socket2::{Domain, Protocol, SockAddr, SockRef, Socket, TcpKeepalive, Type};

use crate::config::{LegOptions, Mss};

/// An IPv4 or IPv6 subnet, `addr/prefix`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - self.prefix as u32).unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX.checked_shl(128 - self.prefix as u32).unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }

    /// Whether some address is in both (one holds the other's network).
    pub fn overlaps(&self, other: &Cidr) -> bool {
        self.addr.is_ipv4() == other.addr.is_ipv4()
            && (self.contains(other.addr) || other.contains(self.addr))
    }

    pub fn is_v4(&self) -> bool {
        self.addr.is_ipv4()
    }
}

impl FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Cidr, String> {
        let (a, p) = s.split_once('/').unwrap_or((s, ""));
        let addr: IpAddr = a
            .trim()
            .parse()
            .map_err(|_| format!("{s:?}: not an IP address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = if p.is_empty() {
            max
        } else {
            p.parse::<u8>()
                .ok()
                .filter(|&p| p <= max)
                .ok_or_else(|| format!("{s:?}: prefix must be 0..={max}"))?
        };
        Ok(Cidr { addr, prefix })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

pub(crate) fn setsockopt_int(fd: &impl AsFd, level: i32, name: i32, v: i32) -> io::Result<()> {
    // SAFETY: a valid int of the size given.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_fd().as_raw_fd(),
            level,
            name,
            (&v as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn ctx(what: String) -> impl FnOnce(io::Error) -> io::Error {
    move |e| io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Sets `IP_TRANSPARENT` or `IPV6_TRANSPARENT` (needs `CAP_NET_ADMIN`):
/// a listener then accepts connections to any address that TPROXY sends it,
/// and a client socket may bind a non-local (the client's) address.
pub fn set_transparent(s: &Socket, v6: bool) -> io::Result<()> {
    if v6 {
        setsockopt_int(s, libc::SOL_IPV6, libc::IPV6_TRANSPARENT, 1)
    } else {
        s.set_ip_transparent(true)
    }
    .map_err(ctx("set IP_TRANSPARENT (needs CAP_NET_ADMIN)".into()))
}

/// A transparent listener on `addr`. `rcvbuf` is set before `listen` so
/// accepted sockets inherit it and the window scale fits it.
pub fn transparent_listener(
    addr: SocketAddr,
    backlog: i32,
    rcvbuf: Option<usize>,
    mss: Option<u32>,
    mark: u32,
    save_syn: bool,
    fast_open: Option<u32>,
) -> io::Result<std::net::TcpListener> {
    let v6 = addr.is_ipv6();
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    if save_syn {
        set_save_syn(&s)?;
    }
    if v6 {
        s.set_only_v6(true)?;
    }
    set_transparent(&s, v6)?;
    if let Some(b) = rcvbuf {
        s.set_recv_buffer_size(b)?;
    }
    // The client leg's MSS is advertised in the SYN-ACK, which the kernel
    // sends for the listener: set after accept it would change nothing.
    if let Some(m) = mss {
        set_mss(&s, m)?;
    }
    // Accepted sockets inherit the mark (the SYN-ACK is routed with it):
    // client legs then find their initial-window routes in the table the
    // mark selects, like server legs.
    s.set_mark(mark)
        .map_err(ctx("SO_MARK on the listener (needs CAP_NET_ADMIN)".into()))?;
    s.bind(&addr.into()).map_err(ctx(format!("bind {addr}")))?;
    if let Some(q) = fast_open {
        // Takes effect only where net.ipv4.tcp_fastopen has the server bit
        // (2); [`fast_open_server_enabled`] says so at start.
        setsockopt_int(&s, libc::IPPROTO_TCP, libc::TCP_FASTOPEN, q as i32)
            .map_err(ctx("TCP_FASTOPEN on the listener".into()))?;
    }
    s.listen(backlog)?;
    s.set_nonblocking(true)?;
    Ok(s.into())
}

/// Makes `connect` defer the SYN to the first write, which then carries
/// the written bytes (with a cached cookie; without one the SYN asks for
/// a cookie and the bytes follow the handshake).
pub fn set_fast_open_connect(fd: &impl AsFd) -> io::Result<()> {
    setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_FASTOPEN_CONNECT, 1)
        .map_err(ctx("TCP_FASTOPEN_CONNECT".into()))
}

/// `net.ipv4.tcp_fastopen` in this namespace, as (client bit, server bit).
pub fn fast_open_sysctl() -> Option<(bool, bool)> {
    let v: u32 = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_fastopen")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some((v & 1 != 0, v & 2 != 0))
}

/// Keeps each accepted connection's SYN (`TCP_SAVE_SYN`): its IP header
/// carries the client's DSCP ([`syn_dscp`]).
pub fn set_save_syn(fd: &impl AsFd) -> io::Result<()> {
    setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_SAVE_SYN, 1).map_err(ctx("TCP_SAVE_SYN".into()))
}

/// The DSCP (the TOS or traffic class byte less its ECN bits) of the SYN
/// that opened `fd`, accepted on a listener with [`set_save_syn`]. Read
/// once: the kernel frees the SYN then.
pub fn syn_dscp(fd: &impl AsFd) -> Option<u8> {
    let mut buf = [0u8; 512];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `buf`.
    let r = unsafe {
        libc::getsockopt(
            fd.as_fd().as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_SAVED_SYN,
            buf.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    if r != 0 || len < 2 {
        return None;
    }
    let tos = match buf[0] >> 4 {
        4 => buf[1],
        6 => (buf[0] << 4) | (buf[1] >> 4),
        _ => return None,
    };
    Some(tos & !0x03)
}

/// Marks `fd`'s packets with `dscp` (ECN bits left to the kernel).
pub fn set_dscp(fd: &impl AsFd, v6: bool, dscp: u8) -> io::Result<()> {
    let s = SockRef::from(fd);
    if v6 {
        s.set_tclass_v6(u32::from(dscp & !0x03))
    } else {
        s.set_tos(u32::from(dscp & !0x03))
    }
    .map_err(ctx(format!("DSCP {dscp:#04x} on the server leg")))
}

/// Applies a leg's options. On the server leg this runs before `connect`;
/// on the client leg after `accept` (its window scale was already fixed by
/// the listener's buffer).
pub fn apply_leg(fd: &impl AsFd, o: &LegOptions) -> io::Result<()> {
    let s = SockRef::from(fd);
    if let Some(cc) = &o.cc {
        s.set_tcp_congestion(cc.as_bytes())
            .map_err(ctx(format!("TCP_CONGESTION {cc:?}")))?;
    }
    if let Some(b) = o.sndbuf {
        s.set_send_buffer_size(b)?;
    }
    if let Some(b) = o.rcvbuf {
        s.set_recv_buffer_size(b)?;
    }
    if let Some(bytes) = pacing_cap(o) {
        setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, bytes as i32)
            .map_err(ctx("SO_MAX_PACING_RATE".into()))?;
    }
    if let Some(n) = o.nodelay {
        s.set_nodelay(n)?;
    }
    if let Some(t) = o.user_timeout {
        s.set_tcp_user_timeout(Some(t))?;
    }
    if let Some(k) = o.keepalive {
        s.set_tcp_keepalive(&TcpKeepalive::new().with_time(k))?;
    }
    // `Auto` is resolved to a number by the caller, which knows the other
    // leg ([`negotiated_mss`]).
    if let Some(Mss::Fixed(m)) = o.mss {
        set_mss(fd, m)?;
    }
    Ok(())
}

/// The `SO_MAX_PACING_RATE` a leg sets, bytes per second. Any finite cap
/// turns on the kernel's pacing (`SK_PACING_NEEDED`: TCP's internal pacer
/// without fq, fq's with it) at its own rate, `max(cwnd, in flight) x mss
/// / srtt` times `tcp_pacing_ss_ratio` (200 %) while `cwnd < ssthresh / 2`
/// and `tcp_pacing_ca_ratio` (120 %) after (`tcp_update_pacing_rate`);
/// `~0U` means "no cap" and leaves pacing off, so the largest cap used is
/// one below it. `pacing = true` alone: that largest cap, the kernel's own
/// rate unbounded in practice (34 Gbit/s).
pub fn pacing_cap(o: &LegOptions) -> Option<u32> {
    const LARGEST: u32 = u32::MAX - 1;
    match (o.max_pacing_rate, o.pacing) {
        (Some(bps), _) => Some((bps / 8).min(LARGEST as u64) as u32),
        (None, Some(true)) => Some(LARGEST),
        (None, _) => None,
    }
}

fn set_mss(fd: &impl AsFd, m: u32) -> io::Result<()> {
    setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, m as i32)
        .map_err(ctx(format!("TCP_MAXSEG {m}")))
}

/// The MSS an established connection negotiated: the peer's advertised
/// MSS clamped by the path and our own clamp, counted as the SYN counts
/// it (the kernel's current send MSS plus the timestamp option it
/// subtracts).
pub fn negotiated_mss(fd: &impl AsRawFd) -> Option<u32> {
    // IPv4's 40 B of IP and TCP header leave the timestamps.
    segment_sizes(fd, false).map(|(payload, header)| payload + header - 40)
}

/// An established leg's segment: payload bytes (the kernel's send MSS)
/// and the header bytes each carries on the wire (IP, TCP, timestamps).
pub fn segment_sizes(fd: &impl AsRawFd, v6: bool) -> Option<(u32, u32)> {
    let i = tcp_info_raw(fd)?;
    const TCPI_OPT_TIMESTAMPS: u8 = 1;
    let ts = if i.tcpi_options & TCPI_OPT_TIMESTAMPS != 0 {
        12
    } else {
        0
    };
    let ip = if v6 { 40 } else { 20 };
    (i.tcpi_snd_mss > 0).then_some((i.tcpi_snd_mss, ip + 20 + ts))
}

/// A socket for the server leg: marked so the rules never intercept it,
/// bound to the client's address when the client's source is kept. Mark 0
/// (the tunnel's far end, which intercepts nothing) is every socket's mark
/// already: it is not set, since setting any mark needs `CAP_NET_ADMIN`.
pub fn server_socket(
    dst: SocketAddr,
    mark: u32,
    source: Option<SocketAddr>,
    o: &LegOptions,
) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(dst), Type::STREAM, Some(Protocol::TCP))?;
    if mark != 0 {
        s.set_mark(mark)
            .map_err(ctx("SO_MARK (needs CAP_NET_ADMIN)".into()))?;
    }
    if let Some(src) = source {
        set_transparent(&s, dst.is_ipv6())?;
        s.bind(&SockAddr::from(src))
            .map_err(ctx(format!("bind the client's address {src}")))?;
    }
    apply_leg(&s, o)?;
    s.set_nonblocking(true)?;
    Ok(s)
}

const TW_REUSE: &str = "/proc/sys/net/ipv4/tcp_tw_reuse";

/// Sets `net.ipv4.tcp_tw_reuse` (IPv6 too) to 1 in the calling thread's
/// namespace: `connect` may then give a new server leg a port whose earlier
/// leg to the same destination waits in TIME_WAIT, once a second has passed
/// (timestamps tell the two apart, RFC 7323 PAWS). Returns the value it
/// replaced, `None` if it was 1 already.
pub fn enable_tw_reuse() -> io::Result<Option<String>> {
    let old = std::fs::read_to_string(TW_REUSE)?.trim().to_string();
    if old == "1" {
        return Ok(None);
    }
    std::fs::write(TW_REUSE, "1").map_err(ctx(format!("write 1 to {TW_REUSE}")))?;
    Ok(Some(old))
}

/// Puts back the value [`enable_tw_reuse`] replaced.
pub fn restore_tw_reuse(old: &str) -> io::Result<()> {
    std::fs::write(TW_REUSE, old).map_err(ctx(format!("write {old} to {TW_REUSE}")))
}

/// How many ports `connect` chooses from (`net.ipv4.ip_local_port_range`).
pub fn ephemeral_ports() -> Option<u32> {
    let r = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = r.split_whitespace().map(|v| v.parse::<u32>().ok());
    let (lo, hi) = (it.next()??, it.next()??);
    Some(hi.saturating_sub(lo) + 1)
}

/// Whether `ip` is an address of this host (in the calling thread's
/// namespace): a plain socket binds only a local address. With
/// `ip_nonlocal_bind` set every address counts as local, which errs on the
/// side of refusing.
pub fn is_local_address(ip: IpAddr) -> bool {
    let a = SocketAddr::new(ip, 0);
    Socket::new(Domain::for_address(a), Type::STREAM, None)
        .and_then(|s| s.bind(&a.into()))
        .is_ok()
}

/// Whether this host (the calling thread's namespace) has an interface
/// named `name`.
pub fn interface_exists(name: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(name) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string for the call's duration.
    unsafe { libc::if_nametoindex(c.as_ptr()) != 0 }
}

/// Bytes in the socket's receive queue (`SIOCINQ`); `None` on error.
pub fn queued(fd: &impl AsRawFd) -> Option<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD (= SIOCINQ) writes one int through the pointer.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut n) };
    (r == 0 && n >= 0).then_some(n as usize)
}

/// Makes the next close send a RST instead of a FIN.
pub fn set_reset_on_close(fd: &impl AsFd) {
    // Failing only means a FIN instead of a RST; nothing better to do.
    let _ = SockRef::from(fd).set_linger(Some(std::time::Duration::ZERO));
}

/// Checks that the kernel has a congestion control (loading its module if
/// allowed), the way the legs will set it.
pub fn check_cc(name: &str) -> Result<(), String> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).map_err(|e| e.to_string())?;
    s.set_tcp_congestion(name.as_bytes()).map_err(|e| {
        let avail = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
            .unwrap_or_default();
        format!(
            "congestion control {name:?} is not available ({e}); this kernel offers: {} \
             (try `modprobe tcp_{name}`)",
            avail.trim()
        )
    })
}

/// What the metrics keep of `TCP_INFO`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LegInfo {
    pub rtt_us: u32,
    pub cwnd: u32,
    pub mss: u32,
    pub total_retrans: u32,
}

fn tcp_info_raw(fd: &impl AsRawFd) -> Option<libc::tcp_info> {
    // SAFETY: tcp_info is plain data; the kernel fills at most `len` bytes.
    let mut ti: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut ti as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(ti)
}

pub fn tcp_info(fd: &impl AsRawFd) -> Option<LegInfo> {
    tcp_info_raw(fd).map(|ti| LegInfo {
        rtt_us: ti.tcpi_rtt,
        cwnd: ti.tcpi_snd_cwnd,
        mss: ti.tcpi_snd_mss,
        total_retrans: ti.tcpi_total_retrans,
    })
}

/// Raises `RLIMIT_NOFILE` to `want` if it is lower (the hard limit too
/// when privileged); returns the soft limit in force.
/// The current soft limit on descriptors (`u64::MAX` if unknown).
pub fn nofile_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit on a local struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return u64::MAX;
    }
    r.rlim_cur
}

/// Descriptors this process has open now (reads /proc/self/fd: call it
/// rarely).
pub fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64)
}

pub fn raise_nofile(want: u64) -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain getrlimit/setrlimit on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 1024;
        }
        if r.rlim_cur >= want {
            return r.rlim_cur;
        }
        let raised = libc::rlimit {
            rlim_cur: want,
            rlim_max: r.rlim_max.max(want),
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
            return want;
        }
        let soft = libc::rlimit {
            rlim_cur: r.rlim_max,
            rlim_max: r.rlim_max,
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &soft) == 0 {
            return r.rlim_max;
        }
        r.rlim_cur
    }
}

pub const UNSPECIFIED_V4: IpAddr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
pub const UNSPECIFIED_V6: IpAddr = IpAddr::V6(Ipv6Addr::UNSPECIFIED);

/// Treats `::ffff:a.b.c.d` as `a.b.c.d`.
pub fn canonical(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), v6.port()),
            None => a,
        },
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's `SO_MAX_PACING_RATE` (read back as an unsigned long).
    fn max_pacing_rate(s: &Socket) -> u64 {
        let mut v: libc::c_ulong = 0;
        let mut len = std::mem::size_of::<libc::c_ulong>() as libc::socklen_t;
        // SAFETY: `v` and `len` are valid for the kernel to write.
        let r = unsafe {
            libc::getsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_MAX_PACING_RATE,
                (&mut v as *mut libc::c_ulong).cast(),
                &mut len,
            )
        };
        assert_eq!(r, 0, "{}", io::Error::last_os_error());
        if len as usize == std::mem::size_of::<u32>() {
            v &= u32::MAX as libc::c_ulong;
        }
        v as u64
    }

    /// `pacing = true` leaves a finite cap on the socket (the kernel turns
    /// pacing on only then); without it the socket keeps "no cap".
    #[test]
    fn pacing_sets_a_finite_cap_on_the_socket() {
        let sock = || Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        let plain = sock();
        apply_leg(&plain, &LegOptions::default()).unwrap();
        let none = max_pacing_rate(&plain);
        assert!(none == u64::MAX || none == u32::MAX as u64, "{none}");
        let paced = sock();
        let o = LegOptions {
            pacing: Some(true),
            ..LegOptions::default()
        };
        apply_leg(&paced, &o).unwrap();
        assert_eq!(max_pacing_rate(&paced), (u32::MAX - 1) as u64);
        let capped = sock();
        let o = LegOptions {
            pacing: Some(true),
            max_pacing_rate: Some(20_000_000),
            ..LegOptions::default()
        };
        apply_leg(&capped, &o).unwrap();
        assert_eq!(max_pacing_rate(&capped), 2_500_000);
    }

    #[test]
    fn cidr_parse_and_match() {
        let c: Cidr = "10.1.0.0/16".parse().unwrap();
        assert!(c.contains("10.1.200.3".parse().unwrap()));
        assert!(c.contains("::ffff:10.1.0.1".parse().unwrap()));
        assert!(!c.contains("10.2.0.1".parse().unwrap()));
        assert!(!c.contains("fd00::1".parse().unwrap()));
        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
        let v6: Cidr = "fd00::/8".parse().unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()));
        assert_eq!("192.0.2.1".parse::<Cidr>().unwrap().prefix, 32);
        assert!("10.0.0.0/33".parse::<Cidr>().is_err());
        assert!("nonsense/8".parse::<Cidr>().is_err());
        assert_eq!(c.to_string(), "10.1.0.0/16");
    }

    #[test]
    fn unknown_cc_is_a_clear_error() {
        let e = check_cc("nosuchcc").unwrap_err();
        assert!(e.contains("nosuchcc") && e.contains("offers"), "{e}");
        check_cc("reno").unwrap();
    }
}
