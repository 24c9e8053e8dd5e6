//! Measuring a lab path: ICMP echo (round-trip time) and UDP packet trains
//! (one-way delay, loss, received rate).
//!
//! Both run in-process on threads inside the nodes' namespaces, so the lab
//! needs no `ping` or `iperf`. Every namespace shares the machine's clocks,
//! so a probe stamps each packet with its send time and the receiver
//! computes the exact one-way delay. Arrival times are the kernel's receive
//! timestamps (`SO_TIMESTAMPNS`), not the time the measuring thread got to
//! run: a busy machine delays the reader, not the measurement. Those
//! timestamps are `CLOCK_REALTIME`, so the send stamps are too. The sending
//! threads run under `SCHED_FIFO` (below the emulators) where allowed, so a
//! compiler on the same cores cannot preempt them between taking a send
//! stamp and sending.

use std::io;
use std::mem::size_of;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::mpsc;
use std::time::Duration as StdDuration;

use pep_core::{Duration, Rate};

use crate::error::{io_err, last_os, LabError, Result};
use crate::netns;
use crate::state::Endpoint;
use pep_io::clock::{monotonic_ns, sleep_until_ns, tune_timing_thread};

/// Real-time priority of paced probe senders: below the emulators' default
/// (10), so a probe never delays the links it measures.
const PROBE_RT_PRIORITY: i32 = 5;

/// Largest ICMP echo payload over IPv4: 65535 less the 20-byte IP and
/// 8-byte ICMP headers.
pub const MAX_PING_PAYLOAD: usize = 65_507;

/// Most echo requests in one [`ping`]: the sequence number has 16 bits,
/// and a reply is matched to its request by it.
pub const MAX_PING_COUNT: u32 = 1 << 16;

/// Round-trip times of an ICMP echo exchange.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PingReport {
    pub sent: u32,
    /// One entry per reply, in order of sequence number.
    pub rtts: Vec<Duration>,
}

impl PingReport {
    pub fn received(&self) -> u32 {
        self.rtts.len() as u32
    }
    pub fn min(&self) -> Duration {
        self.rtts.iter().copied().min().unwrap_or_default()
    }
    pub fn max(&self) -> Duration {
        self.rtts.iter().copied().max().unwrap_or_default()
    }
    pub fn mean(&self) -> Duration {
        let n = self.rtts.len().max(1) as u64;
        Duration(self.rtts.iter().map(|d| d.as_nanos()).sum::<u64>() / n)
    }
    pub fn median(&self) -> Duration {
        let mut v = self.rtts.clone();
        v.sort();
        v.get(v.len() / 2).copied().unwrap_or_default()
    }
}

/// Sends `count` ICMP echo requests of `payload` bytes from `from` to `to`,
/// `interval` apart, and waits up to `timeout` after the last for replies.
/// `count` is 1 to [`MAX_PING_COUNT`], `payload` at most
/// [`MAX_PING_PAYLOAD`] (below 8 it is 8: the send time).
pub fn ping(
    from: &Endpoint,
    to: Ipv4Addr,
    count: u32,
    interval: Duration,
    payload: usize,
    timeout: Duration,
) -> Result<PingReport> {
    check_ping(count, payload)?;
    netns::in_netns(&from.netns, || {
        tune_timing_thread(true, PROBE_RT_PRIORITY);
        ping_here(to, count, interval, payload.max(8), timeout)
    })
}

fn check_ping(count: u32, payload: usize) -> Result<()> {
    if !(1..=MAX_PING_COUNT).contains(&count) {
        return Err(LabError::Traffic(format!(
            "ping count {count} not in 1..={MAX_PING_COUNT} (16-bit sequence numbers)"
        )));
    }
    if payload > MAX_PING_PAYLOAD {
        return Err(LabError::Traffic(format!(
            "ping payload {payload} B: at most {MAX_PING_PAYLOAD} B in one IPv4 packet"
        )));
    }
    Ok(())
}

fn ping_here(
    to: Ipv4Addr,
    count: u32,
    interval: Duration,
    payload: usize,
    timeout: Duration,
) -> Result<PingReport> {
    // SAFETY: plain socket(2); the fd is owned below.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 1) };
    if raw < 0 {
        return Err(last_os("ICMP socket"));
    }
    // SAFETY: a fresh descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // The identifier tells our replies from other pings in the namespace.
    let ident = (std::process::id() as u16) ^ (monotonic_ns() as u16);
    enable_rx_timestamps(fd.as_raw_fd());
    let dst = sockaddr_in(to);
    let mut report = PingReport {
        sent: 0,
        rtts: vec![],
    };
    let mut got = vec![None; count as usize];
    let start = monotonic_ns();
    let end = interval
        .as_nanos()
        .saturating_mul(count.saturating_sub(1) as u64)
        .saturating_add(start)
        .saturating_add(timeout.as_nanos());
    let mut next_send = start;
    let mut buf = [0u8; 2048];
    loop {
        let now = monotonic_ns();
        if report.sent < count && now >= next_send {
            let pkt = echo_request(ident, report.sent as u16, payload, realtime_ns());
            // SAFETY: valid buffers and address for the call.
            let n = unsafe {
                libc::sendto(
                    fd.as_raw_fd(),
                    pkt.as_ptr().cast(),
                    pkt.len(),
                    0,
                    (&dst as *const libc::sockaddr_in).cast(),
                    size_of::<libc::sockaddr_in>() as libc::socklen_t,
                )
            };
            if n < 0 {
                return Err(last_os(format!("send ICMP echo to {to}")));
            }
            report.sent += 1;
            next_send = next_send.saturating_add(interval.as_nanos());
            continue;
        }
        let done = report.sent == count && got.iter().all(Option::is_some);
        if done || now >= end {
            break;
        }
        let until = if report.sent < count { next_send } else { end };
        if !poll_in(fd.as_raw_fd(), until.saturating_sub(now)) {
            continue;
        }
        let Ok((n, recv_ns)) = recv_stamped(fd.as_raw_fd(), &mut buf) else {
            continue;
        };
        if let Some((seq, sent_ns)) = parse_echo_reply(&buf[..n], ident) {
            if let Some(slot) = got.get_mut(seq as usize) {
                slot.get_or_insert(Duration(recv_ns.saturating_sub(sent_ns)));
            }
        }
    }
    report.rtts = got.into_iter().flatten().collect();
    Ok(report)
}

fn sockaddr_in(a: Ipv4Addr) -> libc::sockaddr_in {
    // SAFETY: sockaddr_in is plain data; zero is valid.
    let mut s: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    s.sin_family = libc::AF_INET as libc::sa_family_t;
    s.sin_addr.s_addr = u32::from(a).to_be();
    s
}

/// Waits up to `ns` for `fd` to be readable.
fn poll_in(fd: i32, ns: u64) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = pep_io::clock::timespec(ns);
    // SAFETY: valid pollfd and timespec for the call.
    unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) > 0 }
}

/// Nanoseconds of `CLOCK_REALTIME`, the clock of kernel receive stamps.
fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn enable_rx_timestamps(fd: i32) {
    let on: i32 = 1;
    // SAFETY: setsockopt with a valid int. Without it, recv_stamped falls
    // back to the time of reading.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const i32).cast(),
            size_of::<i32>() as libc::socklen_t,
        )
    };
}

/// Receives one datagram; returns its length and the kernel's receive time
/// (`CLOCK_REALTIME` ns), or the time of reading if the kernel gave none.
fn recv_stamped(fd: i32, buf: &mut [u8]) -> io::Result<(usize, u64)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 16]; // u64 for cmsghdr alignment
                                  // SAFETY: msghdr is plain data; zero is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: every pointer in `msg` is valid for the call.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the CMSG macros walk the control buffer the kernel filled,
    // bounded by msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, stamp.unwrap_or_else(realtime_ns)))
}

/// An echo request carrying its send time (ns) in the first 8 payload bytes.
fn echo_request(ident: u16, seq: u16, payload: usize, now_ns: u64) -> Vec<u8> {
    let mut p = vec![0u8; 8 + payload];
    p[0] = 8; // echo request
    p[4..6].copy_from_slice(&ident.to_be_bytes());
    p[6..8].copy_from_slice(&seq.to_be_bytes());
    p[8..16].copy_from_slice(&now_ns.to_be_bytes());
    for (i, b) in p[16..].iter_mut().enumerate() {
        *b = i as u8;
    }
    let c = inet_checksum(&p);
    p[2..4].copy_from_slice(&c.to_be_bytes());
    p
}

/// (sequence, send time) of an echo reply with our identifier; `packet`
/// starts at the IPv4 header, as a raw socket delivers it.
fn parse_echo_reply(packet: &[u8], ident: u16) -> Option<(u16, u64)> {
    let ihl = ((*packet.first()? & 0x0f) as usize) * 4;
    let icmp = packet.get(ihl..)?;
    if icmp.len() < 16 || icmp[0] != 0 || icmp[4..6] != ident.to_be_bytes() {
        return None;
    }
    let seq = u16::from_be_bytes([icmp[6], icmp[7]]);
    let sent = u64::from_be_bytes(icmp[8..16].try_into().ok()?);
    Some((seq, sent))
}

/// The Internet checksum (RFC 1071).
fn inet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32)
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A train of UDP datagrams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpProbeSpec {
    pub packets: u32,
    /// IP packet size (IP and UDP headers included), 44 to 1500.
    pub ip_size: usize,
    /// Sending rate counted over IP packets; `None` sends as fast as the
    /// socket takes them.
    pub rate: Option<Rate>,
    pub port: u16,
    /// How long the receiver waits for stragglers after the last send.
    pub linger: Duration,
}

/// What arrived of a UDP train.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UdpProbeReport {
    pub sent: u64,
    pub received: u64,
    /// One-way delays of the received datagrams, in arrival order.
    pub owd: Vec<Duration>,
    /// Arrival times (kernel receive stamps, ns of `CLOCK_REALTIME`) of the
    /// received datagrams.
    pub arrivals: Vec<u64>,
    pub ip_size: usize,
}

impl UdpProbeReport {
    pub fn loss(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            1.0 - self.received as f64 / self.sent as f64
        }
    }

    /// Received rate over IP bytes, between the arrivals at fractions `from`
    /// and `to` of the train (e.g. 0.1, 0.9 to leave out start and end).
    pub fn rx_rate(&self, from: f64, to: f64) -> Rate {
        let n = self.arrivals.len();
        if n < 3 {
            return Rate(0);
        }
        let i = ((n as f64 * from) as usize).min(n - 2);
        let j = ((n as f64 * to) as usize).clamp(i + 1, n - 1);
        // Packets i+1..=j arrived in (arrivals[i], arrivals[j]].
        let bytes = (j - i) as u64 * self.ip_size as u64;
        Rate::from_bytes_over(bytes, Duration(self.arrivals[j] - self.arrivals[i]))
    }

    /// The `q` quantile of the one-way delays.
    pub fn owd_quantile(&self, q: f64) -> Duration {
        let mut v = self.owd.clone();
        v.sort();
        if v.is_empty() {
            return Duration::ZERO;
        }
        v[((v.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize]
    }
}

/// Sends a UDP train from `from` to `to` and reports what arrived.
pub fn udp_probe(from: &Endpoint, to: &Endpoint, spec: &UdpProbeSpec) -> Result<UdpProbeReport> {
    if !(44..=1500).contains(&spec.ip_size) {
        return Err(LabError::Traffic(format!(
            "UDP probe size {} not in 44..=1500",
            spec.ip_size
        )));
    }
    let dst = SocketAddrV4::new(to.addr, spec.port);
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<u64>();
    std::thread::scope(|s| {
        let receiver = s.spawn(move || {
            netns::in_netns(&to.netns, move || {
                let sock = UdpSocket::bind(dst).map_err(io_err(format!("bind UDP {dst}")))?;
                // Room for a whole train, so only the link loses datagrams.
                set_rcvbuf(&sock, 32 << 20);
                let _ = ready_tx.send(());
                receive_train(&sock, spec, &done_rx)
            })
        });
        let sender = s.spawn(move || {
            if ready_rx.recv().is_err() {
                return Ok(0); // the receiver failed; its error is reported
            }
            let sent = netns::in_netns(&from.netns, || {
                // Not when flooding: a real-time thread that never sleeps
                // would starve everything else on its core.
                tune_timing_thread(spec.rate.is_some(), PROBE_RT_PRIORITY);
                send_train(dst, spec)
            });
            let _ = done_tx.send(*sent.as_ref().unwrap_or(&0));
            sent
        });
        let sent = sender.join().unwrap_or(Ok(0));
        let mut report = receiver
            .join()
            .unwrap_or_else(|_| Err(LabError::Traffic("UDP receiver panicked".into())))?;
        report.sent = sent?;
        Ok(report)
    })
}

fn set_rcvbuf(sock: &UdpSocket, bytes: i32) {
    // SAFETY: setsockopt with a valid int; best effort.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&bytes as *const i32).cast(),
            size_of::<i32>() as libc::socklen_t,
        )
    };
}

const UDP_OVERHEAD: usize = 28;

fn send_train(dst: SocketAddrV4, spec: &UdpProbeSpec) -> Result<u64> {
    let sock = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).map_err(io_err("bind UDP sender"))?;
    sock.connect(dst)
        .map_err(io_err(format!("connect UDP {dst}")))?;
    let mut buf = vec![0u8; spec.ip_size - UDP_OVERHEAD];
    let gap = spec
        .rate
        .map_or(0, |r| r.tx_time(spec.ip_size as u64).as_nanos());
    let start = monotonic_ns();
    let mut sent = 0u64;
    for seq in 0..spec.packets as u64 {
        let due = start + seq * gap;
        if gap > 0 && monotonic_ns() < due {
            sleep_until_ns(due);
        }
        buf[0..8].copy_from_slice(&seq.to_be_bytes());
        buf[8..16].copy_from_slice(&realtime_ns().to_be_bytes());
        loop {
            match sock.send(&buf) {
                Ok(_) => break,
                // A full socket buffer (flooding): wait for room, it is not
                // the link's loss.
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    std::thread::sleep(StdDuration::from_micros(50))
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(StdDuration::from_micros(50))
                }
                Err(e) => return Err(io_err(format!("send UDP to {dst}"))(e)),
            }
        }
        sent += 1;
    }
    Ok(sent)
}

fn receive_train(
    sock: &UdpSocket,
    spec: &UdpProbeSpec,
    done: &mpsc::Receiver<u64>,
) -> Result<UdpProbeReport> {
    let mut report = UdpProbeReport {
        ip_size: spec.ip_size,
        ..UdpProbeReport::default()
    };
    let mut seen = vec![false; spec.packets as usize];
    let mut buf = vec![0u8; 2048];
    let mut sender_done_at: Option<u64> = None;
    sock.set_read_timeout(Some(StdDuration::from_millis(20)))
        .map_err(io_err("UDP read timeout"))?;
    enable_rx_timestamps(sock.as_raw_fd());
    loop {
        if sender_done_at.is_none() && done.try_recv().is_ok() {
            sender_done_at = Some(monotonic_ns());
        }
        if let Some(t) = sender_done_at {
            let all = report.received == spec.packets as u64;
            if all || monotonic_ns() >= t + spec.linger.as_nanos() {
                break;
            }
        }
        match recv_stamped(sock.as_raw_fd(), &mut buf) {
            Ok((n, now)) if n >= 16 => {
                let seq = u64::from_be_bytes(buf[0..8].try_into().expect("8 bytes"));
                let sent = u64::from_be_bytes(buf[8..16].try_into().expect("8 bytes"));
                if let Some(s) = seen.get_mut(seq as usize).filter(|s| !**s) {
                    *s = true;
                    report.received += 1;
                    report.owd.push(Duration(now.saturating_sub(sent)));
                    report.arrivals.push(now);
                }
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(io_err("receive UDP")(e)),
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_request_checksum_verifies() {
        let p = echo_request(0x1234, 7, 56, 99);
        assert_eq!(inet_checksum(&p), 0, "a correct checksum sums to zero");
        // As a reply it would parse back (type 0, behind a 20-byte header).
        let mut reply = vec![0x45u8];
        reply.resize(20, 0);
        reply.extend_from_slice(&p);
        reply[20] = 0;
        assert_eq!(parse_echo_reply(&reply, 0x1234), Some((7, 99)));
        assert_eq!(parse_echo_reply(&reply, 0x1235), None);
        assert_eq!(parse_echo_reply(&reply[..30], 0x1234), None);
    }

    #[test]
    fn ping_refuses_what_it_cannot_send_before_allocating() {
        let e = check_ping(u32::MAX, 56).unwrap_err().to_string();
        assert!(e.contains("not in 1..=65536"), "{e}");
        assert!(check_ping(0, 56).is_err());
        let e = check_ping(1, usize::MAX).unwrap_err().to_string();
        assert!(e.contains("at most 65507"), "{e}");
        assert!(check_ping(MAX_PING_COUNT, MAX_PING_PAYLOAD).is_ok());
        // The largest echo request fills an IPv4 packet exactly.
        let p = echo_request(1, 2, MAX_PING_PAYLOAD, 3);
        assert_eq!(p.len() + 20, 65_535);
    }

    #[test]
    fn rx_rate_counts_bytes_between_arrivals() {
        let r = UdpProbeReport {
            sent: 11,
            received: 11,
            owd: vec![Duration(5); 11],
            // 1000-byte packets 1 ms apart: 8 Mbit/s.
            arrivals: (0..11).map(|i| i * 1_000_000).collect(),
            ip_size: 1000,
        };
        assert_eq!(r.rx_rate(0.0, 1.0), Rate::mbps(8));
        assert_eq!(r.rx_rate(0.1, 0.9), Rate::mbps(8));
        assert_eq!(r.loss(), 0.0);
        assert_eq!(r.owd_quantile(0.5), Duration(5));
    }
}
