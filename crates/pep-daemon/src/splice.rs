//! Zero-copy relaying with splice(2): each direction of a connection moves
//! socket -> pipe -> socket inside the kernel, never through user memory.
//!
//! The pipe is that direction's buffer. Its capacity is set to the
//! configured bound (`F_SETPIPE_SZ`; the kernel rounds it up to a power of
//! two pages), and the relay counts the bytes in it against the exact bound
//! ([`pep_core::relay::Relay::read_room`]), so backpressure, half-close and
//! the metrics' buffer occupancy work as with the copy relay.
//!
//! A pipe holds at most one page-sized slot per page of capacity; data
//! spliced from a socket arrives as the socket buffer's fragments, which
//! can be smaller than a page, so the pipe can run out of slots before it
//! holds the byte bound. splice then says `EAGAIN` although the socket has
//! data: [`SpliceIn::PipeFull`], after which the driver waits for the pipe to
//! drain rather than for the socket (which would never signal again).
//!
//! The kernel also says `EAGAIN` with data queued and the pipe *empty*
//! (seen in the lab with one-segment skbs: nothing could be attached to
//! the pipe). Waiting would then stall the direction for good, so that
//! chunk is copied instead: read(2) into a stack buffer, write(2) into the
//! empty pipe, which always has room for it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// One direction's pipe.
#[derive(Debug)]
pub struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
}

/// Descriptors a connection adds when it relays with splice (two pipes).
pub const FDS_PER_CONNECTION: u64 = 4;

impl Pipe {
    /// A non-blocking pipe holding at least `bytes`.
    pub fn new(bytes: usize) -> io::Result<Pipe> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: pipe2 fills two descriptors we then own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh descriptors from pipe2, owned from here on.
        let p = unsafe {
            Pipe {
                read: OwnedFd::from_raw_fd(fds[0]),
                write: OwnedFd::from_raw_fd(fds[1]),
            }
        };
        let want = bytes.min(i32::MAX as usize) as libc::c_int;
        // SAFETY: fcntl on a descriptor we own.
        if unsafe { libc::fcntl(p.write.as_raw_fd(), libc::F_SETPIPE_SZ, want) } < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!(
                    "F_SETPIPE_SZ {bytes} B: {e} (above fs.pipe-max-size without CAP_SYS_RESOURCE?)"
                ),
            ));
        }
        Ok(p)
    }

    /// The capacity the kernel gave the pipe, bytes.
    pub fn capacity(&self) -> io::Result<usize> {
        // SAFETY: fcntl on a descriptor we own.
        let n = unsafe { libc::fcntl(self.write.as_raw_fd(), libc::F_GETPIPE_SZ) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Bytes in the pipe now (`FIONREAD`).
    pub fn len(&self) -> io::Result<usize> {
        inq(self.read.as_raw_fd(), libc::FIONREAD)
    }

    pub fn is_empty(&self) -> io::Result<bool> {
        self.len().map(|n| n == 0)
    }
}

fn inq(fd: RawFd, req: libc::c_ulong) -> io::Result<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: the ioctl writes one int.
    if unsafe { libc::ioctl(fd, req as _, &mut n) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n.max(0) as usize)
}

fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    // SAFETY: splice between descriptors the caller keeps open; no offsets.
    let n = unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_NONBLOCK | libc::SPLICE_F_MOVE,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// What a splice from a socket into a pipe did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpliceIn {
    /// Moved this many bytes.
    Moved(usize),
    /// The socket's stream ended (a FIN).
    Eof,
    /// The pipe has no free slot although the socket has data.
    PipeFull,
}

/// Moves up to `len` (> 0) bytes from socket `sock` into `pipe`. An
/// `Err(WouldBlock)` means the socket has nothing to read; `PipeFull`,
/// that the pipe must drain before the socket's bytes (or its end) can
/// be taken.
pub fn socket_to_pipe(sock: RawFd, pipe: &Pipe, len: usize) -> io::Result<SpliceIn> {
    debug_assert!(len > 0, "a zero-length splice reads as EOF");
    match splice(sock, pipe.write.as_raw_fd(), len) {
        Ok(0) => Ok(SpliceIn::Eof),
        Ok(n) => Ok(SpliceIn::Moved(n)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
            // FIONREAD on a TCP socket is SIOCINQ: unread bytes.
            if inq(sock, libc::FIONREAD)? == 0 {
                // A full pipe answers EAGAIN before the socket is looked
                // at, also for a socket whose FIN waits: that socket stays
                // readable, and reading it again at once would spin until
                // the pipe drains (a shaped leg drains it slowly). Wait
                // for the drain instead; then the FIN reads as the end.
                if at_eof(sock) && !pipe.is_empty()? {
                    return Ok(SpliceIn::PipeFull);
                }
                return Err(e);
            }
            if !pipe.is_empty()? {
                return Ok(SpliceIn::PipeFull);
            }
            copy_into_empty_pipe(sock, pipe, len)
        }
        Err(e) => Err(e),
    }
}

/// `sock` has nothing to read and its peer's FIN is next.
fn at_eof(sock: RawFd) -> bool {
    let mut b = 0u8;
    // SAFETY: peeks at most one byte into a local.
    let n = unsafe {
        libc::recv(
            sock,
            (&mut b as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n == 0
}

/// Reads up to `len` bytes of `sock` and writes them into `pipe`, which is
/// empty and (by the bound) has room for `len`.
fn copy_into_empty_pipe(sock: RawFd, pipe: &Pipe, len: usize) -> io::Result<SpliceIn> {
    let mut buf = [0u8; 64 << 10];
    let want = len.min(buf.len()).min(pipe.capacity()?);
    // SAFETY: reads into a local buffer of at least `want` bytes.
    let n = unsafe { libc::read(sock, buf.as_mut_ptr().cast(), want) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n == 0 {
        return Ok(SpliceIn::Eof);
    }
    let n = n as usize;
    let mut off = 0;
    while off < n {
        // SAFETY: writes from the local buffer.
        let w = unsafe { libc::write(pipe.write.as_raw_fd(), buf[off..].as_ptr().cast(), n - off) };
        if w < 0 {
            // Cannot happen for an empty pipe of this capacity; the bytes
            // read would be lost, so the connection must not go on.
            let e = io::Error::last_os_error();
            return Err(io::Error::other(format!("pipe write: {e}")));
        }
        off += w as usize;
    }
    COPIED_CHUNKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok(SpliceIn::Moved(n))
}

/// Chunks moved by [`copy_into_empty_pipe`] since start (all connections).
pub static COPIED_CHUNKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Moves up to `len` (> 0) bytes from `pipe` to socket `sock`.
pub fn pipe_to_socket(pipe: &Pipe, sock: RawFd, len: usize) -> io::Result<usize> {
    splice(pipe.read.as_raw_fd(), sock, len)
}

/// Whether a pipe of `bytes` can be had now (checks `fs.pipe-max-size`
/// and the privileges in force), as a message naming the fix if not.
pub fn check(bytes: usize) -> Result<(), String> {
    Pipe::new(bytes).map(|_| ()).map_err(|e| {
        let max = std::fs::read_to_string("/proc/sys/fs/pipe-max-size").unwrap_or_default();
        format!(
            "{e}; fs.pipe-max-size is {} B: raise it (sysctl -w fs.pipe-max-size={bytes}), \
             lower proxy.buffer, or set proxy.relay = \"copy\"",
            max.trim()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        a.set_nonblocking(true).unwrap();
        b.set_nonblocking(true).unwrap();
        (a, b)
    }

    #[test]
    fn pipe_capacity_covers_the_bound() {
        let p = Pipe::new(100_000).unwrap();
        // 100 000 B is 25 pages, rounded up to 32.
        assert_eq!(p.capacity().unwrap(), 32 * 4096);
        assert!(p.is_empty().unwrap());
    }

    /// A full pipe in front of a socket whose FIN waits: the pipe must
    /// drain first (not "nothing to read", which left the socket readable
    /// and the driver reading it in a loop), then the end shows.
    #[test]
    fn a_fin_behind_a_full_pipe_waits_for_the_drain() {
        let (src, from) = pair();
        let p = Pipe::new(4096).unwrap();
        let cap = p.capacity().unwrap();
        let fill = vec![7u8; cap];
        // SAFETY: writes from a local buffer of `cap` bytes.
        let w = unsafe { libc::write(p.write.as_raw_fd(), fill.as_ptr().cast(), cap) };
        assert_eq!(w, cap as isize);
        src.shutdown(std::net::Shutdown::Write).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(matches!(
            socket_to_pipe(from.as_raw_fd(), &p, 1000),
            Ok(SpliceIn::PipeFull)
        ));
        let mut drain = vec![0u8; cap];
        // SAFETY: reads into a local buffer of `cap` bytes.
        let r = unsafe { libc::read(p.read.as_raw_fd(), drain.as_mut_ptr().cast(), cap) };
        assert_eq!(r, cap as isize);
        assert!(matches!(
            socket_to_pipe(from.as_raw_fd(), &p, 1000),
            Ok(SpliceIn::Eof)
        ));
        // With no FIN, nothing to read behind a full pipe is still that.
        let (_open, quiet) = pair();
        let w = unsafe { libc::write(p.write.as_raw_fd(), fill.as_ptr().cast(), cap) };
        assert_eq!(w, cap as isize);
        assert_eq!(
            socket_to_pipe(quiet.as_raw_fd(), &p, 1000)
                .unwrap_err()
                .kind(),
            io::ErrorKind::WouldBlock
        );
    }

    #[test]
    fn bytes_go_socket_to_pipe_to_socket_and_eof_shows() {
        let (mut src, from) = pair();
        let (to, mut dst) = pair();
        let p = Pipe::new(64 << 10).unwrap();
        assert_eq!(
            socket_to_pipe(from.as_raw_fd(), &p, 1000)
                .unwrap_err()
                .kind(),
            io::ErrorKind::WouldBlock,
            "nothing to read yet"
        );
        let msg: Vec<u8> = (0..50_000u32).map(|i| (i * 7) as u8).collect();
        src.write_all(&msg).unwrap();
        src.shutdown(std::net::Shutdown::Write).unwrap();
        let mut moved = 0;
        let mut got = Vec::new();
        dst.set_nonblocking(false).unwrap();
        loop {
            match socket_to_pipe(from.as_raw_fd(), &p, 10_000) {
                Ok(SpliceIn::Moved(n)) => {
                    assert!(n <= 10_000, "never more than asked");
                    moved += n;
                    assert_eq!(p.len().unwrap(), n);
                    let mut left = n;
                    while left > 0 {
                        left -= pipe_to_socket(&p, to.as_raw_fd(), left).unwrap();
                    }
                }
                Ok(SpliceIn::Eof) => break,
                Ok(SpliceIn::PipeFull) => panic!("the pipe is drained each time"),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_millis(1))
                }
                Err(e) => panic!("{e}"),
            }
        }
        drop(to);
        dst.read_to_end(&mut got).unwrap();
        assert_eq!(moved, msg.len());
        assert_eq!(got, msg);
    }
}
