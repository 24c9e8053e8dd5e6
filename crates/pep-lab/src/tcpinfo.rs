//! `TCP_INFO` samples: what the kernel's TCP says about a connection.
//!
//! `struct tcp_info` grows with kernel releases; `getsockopt` returns as
//! many bytes as the running kernel knows. Fields past that length are
//! reported as `None`, not as zero.

use std::io;
use std::mem::{offset_of, size_of};
use std::os::fd::RawFd;

use pep_core::Instant;
use serde::Serialize;

/// One sample of a connection's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TcpSample {
    /// When it was taken (lab clock).
    #[serde(skip)]
    pub t: Instant,
    /// `TCP_CA_Open` = 0, Disorder, CWR, Recovery, Loss = 4.
    pub ca_state: u8,
    /// The connection negotiated SACK (`TCPI_OPT_SACK` in `tcpi_options`).
    #[serde(skip)]
    pub sack: bool,
    /// Sender MSS, bytes.
    pub snd_mss: u32,
    /// Congestion window, segments.
    pub cwnd: u32,
    /// Slow-start threshold, segments; `None` while "infinite".
    pub ssthresh: Option<u32>,
    /// Smoothed RTT and its variation, microseconds.
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub min_rtt_us: u32,
    /// Segments sent but not yet acknowledged.
    pub unacked: u32,
    /// Segments retransmitted over the connection's life.
    pub total_retrans: u32,
    pub segs_out: u32,
    pub data_segs_out: u32,
    /// Data segments delivered to the peer, cumulatively or selectively
    /// acknowledged (`tcpi_delivered`): unlike `bytes_acked`, it does not
    /// stall while a hole waits for its retransmission.
    pub delivered: u32,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    /// Bytes per second.
    pub delivery_rate: u64,
    pub pacing_rate: u64,
    /// The window the peer advertises (scaled), bytes, if the kernel
    /// reports it.
    pub snd_wnd: Option<u32>,
    /// The window this end advertises (scaled), bytes, if reported.
    pub rcv_wnd: Option<u32>,
    /// Retransmission timeouts over the connection's life, if reported.
    pub total_rto: Option<u32>,
}

/// `tcpi_options` bit: SACK in use (`linux/tcp.h`).
const TCPI_OPT_SACK: u8 = 2;

/// Samples `TCP_INFO` of socket `fd` at lab time `t`.
pub fn sample(fd: RawFd, t: Instant) -> io::Result<TcpSample> {
    // SAFETY: tcp_info is plain data; zero is valid.
    let mut ti: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `ti` and `len` are valid out-pointers of the size given.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut ti as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let len = len as usize;
    let has = |offset: usize, size: usize| offset + size <= len;
    Ok(TcpSample {
        t,
        ca_state: ti.tcpi_ca_state,
        sack: ti.tcpi_options & TCPI_OPT_SACK != 0,
        snd_mss: ti.tcpi_snd_mss,
        cwnd: ti.tcpi_snd_cwnd,
        ssthresh: (ti.tcpi_snd_ssthresh < 0x7fff_ffff).then_some(ti.tcpi_snd_ssthresh),
        rtt_us: ti.tcpi_rtt,
        rttvar_us: ti.tcpi_rttvar,
        min_rtt_us: ti.tcpi_min_rtt,
        unacked: ti.tcpi_unacked,
        total_retrans: ti.tcpi_total_retrans,
        segs_out: ti.tcpi_segs_out,
        data_segs_out: ti.tcpi_data_segs_out,
        delivered: ti.tcpi_delivered,
        bytes_acked: ti.tcpi_bytes_acked,
        bytes_received: ti.tcpi_bytes_received,
        delivery_rate: ti.tcpi_delivery_rate,
        pacing_rate: ti.tcpi_pacing_rate,
        snd_wnd: has(offset_of!(libc::tcp_info, tcpi_snd_wnd), 4).then_some(ti.tcpi_snd_wnd),
        rcv_wnd: has(offset_of!(libc::tcp_info, tcpi_rcv_wnd), 4).then_some(ti.tcpi_rcv_wnd),
        total_rto: has(offset_of!(libc::tcp_info, tcpi_total_rto), 2)
            .then_some(ti.tcpi_total_rto as u32),
    })
}

impl TcpSample {
    /// Congestion window in bytes.
    pub fn cwnd_bytes(&self) -> u64 {
        self.cwnd as u64 * self.snd_mss as u64
    }
    pub fn ssthresh_bytes(&self) -> Option<u64> {
        self.ssthresh.map(|s| s as u64 * self.snd_mss as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn loopback_connection_reports_sane_values() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        c.write_all(&[1u8; 10_000]).unwrap();
        let mut buf = [0u8; 10_000];
        s.read_exact(&mut buf).unwrap();
        let x = sample(c.as_raw_fd(), Instant(7)).unwrap();
        assert_eq!(x.t, Instant(7));
        assert!(x.cwnd >= 1 && x.snd_mss > 0, "{x:?}");
        assert!(x.bytes_acked >= 10_000 || x.unacked > 0, "{x:?}");
        assert!(x.cwnd_bytes() >= x.snd_mss as u64);
        let y = sample(s.as_raw_fd(), Instant(8)).unwrap();
        assert!(y.bytes_received >= 10_000, "{y:?}");
    }
}
