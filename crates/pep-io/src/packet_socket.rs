//! `AF_PACKET` sockets: whole Ethernet frames in and out of one interface.
//!
//! A receiving socket is created with protocol 0 (it gets nothing) and only
//! then bound to its interface with `ETH_P_ALL`, so no frame of another
//! interface slips in between `socket` and `bind`. It ignores frames the
//! host itself sends (`PACKET_IGNORE_OUTGOING`, Linux 4.20), which would
//! otherwise include the frames the emulator's other direction transmits
//! on the same interface. A sending socket is bound with protocol 0, so it
//! never queues received frames, and bypasses the qdisc layer.
//!
//! Both must be created by a thread inside the interface's namespace.

use std::ffi::CString;
use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

// From <linux/if_packet.h>; not all are in every libc release.
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// A packet socket bound to one interface.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    /// Kernel drops (receive buffer full) not yet collected.
    drops: u64,
}

/// Outcome of a non-blocking receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recv {
    /// A frame of this many bytes.
    Frame(usize),
    /// A frame longer than the buffer (its full length); its bytes are lost.
    Truncated(usize),
    /// Nothing waiting.
    Empty,
}

/// Index of `ifname` in the calling thread's namespace.
pub fn ifindex(ifname: &str) -> io::Result<i32> {
    let c = CString::new(ifname).map_err(|_| io::ErrorKind::InvalidInput)?;
    // SAFETY: `c` is a valid C string.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(idx as i32)
    }
}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: `v` is a valid value of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (v as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl PacketSocket {
    fn open(ifname: &str, bind_proto: u16) -> io::Result<PacketSocket> {
        let index = ifindex(ifname)?;
        // SAFETY: plain socket(2); the fd is owned below.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: sockaddr_ll is plain data; zero is valid.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = bind_proto.to_be();
        sll.sll_ifindex = index;
        // SAFETY: `sll` is a valid sockaddr_ll of the size passed.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PacketSocket { fd, drops: 0 })
    }

    /// A socket receiving every frame arriving on `ifname`, with a receive
    /// buffer of `rcvbuf` bytes (forced past `rmem_max`: a burst of a
    /// whole congestion window must wait here, not be dropped, until the
    /// emulator's own queue model decides).
    pub fn receiver(ifname: &str, rcvbuf: usize) -> io::Result<PacketSocket> {
        let s = Self::open(ifname, libc::ETH_P_ALL as u16)?;
        let fd = s.fd.as_raw_fd();
        setsockopt(fd, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, &1i32)?;
        let size = rcvbuf.min(i32::MAX as usize) as i32;
        setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &size)?;
        Ok(s)
    }

    /// A socket that only transmits on `ifname`.
    pub fn sender(ifname: &str) -> io::Result<PacketSocket> {
        let s = Self::open(ifname, 0)?;
        let fd = s.fd.as_raw_fd();
        // Best effort: veths have no qdisc to bypass by default anyway.
        let _ = setsockopt(fd, libc::SOL_PACKET, PACKET_QDISC_BYPASS, &1i32);
        Ok(s)
    }

    /// Receives one frame into `buf` without blocking.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Recv> {
        // SAFETY: `buf` is valid for `buf.len()` bytes. MSG_TRUNC makes the
        // call return the frame's real length.
        let n = unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(Recv::Empty),
                _ => Err(e),
            };
        }
        let n = n as usize;
        Ok(if n > buf.len() {
            Recv::Truncated(n)
        } else {
            Recv::Frame(n)
        })
    }

    /// Sends one frame.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: `frame` is valid for its length.
        let n = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Frames the kernel dropped for want of receive buffer, since the
    /// socket was opened. (The kernel resets its counter on each read, so
    /// it is accumulated here.)
    pub fn kernel_drops(&mut self) -> u64 {
        let mut st = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut len = size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: `st` and `len` are valid out-pointers of the right size.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                PACKET_STATISTICS,
                (&mut st as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            self.drops += st.tp_drops as u64;
        }
        self.drops
    }
}

impl AsRawFd for PacketSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
