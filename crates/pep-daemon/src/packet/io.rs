//! The packet thread: two interfaces, four `AF_PACKET` sockets (the lab's
//! [`PacketSocket`]: a receiver and a sender per interface), the engine
//! driven by `CLOCK_MONOTONIC`.
//!
//! Each loop: read the clock, run the engine's timers and send what is
//! due, read what arrived on either interface (a batch each, so neither
//! starves the other) and send what the engine passes at once, then sleep
//! in `ppoll` until a frame arrives, the engine's next deadline, or stop.
//! The receivers put their interfaces in promiscuous mode: a bump in the
//! wire forwards frames addressed to the hosts on either side.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::thread::JoinHandle;

use pep_core::{Duration, Instant};
use pep_io::clock::{tune_timing_thread, Clock};
use pep_io::packet_socket::{ifindex, PacketSocket, Recv};

use super::engine::{Engine, PacketStats, Side};
use super::metrics::IoStats;
use super::PacketSettings;
use crate::metrics::Metrics;

/// Largest frame received whole (a GSO/GRO super-frame is larger: turn
/// those offloads off on both interfaces).
const MAX_FRAME: usize = 65_536;
/// Receive buffer of each socket: a window's burst waits here.
const SOCKET_BUFFER: usize = 8 << 20;

/// The packet path, running.
pub struct PacketDaemon {
    stop: OwnedFd,
    thread: Option<JoinHandle<Ended>>,
    metrics: Arc<Metrics>,
}

/// What the thread returns: the final counters and, if an interface
/// failed, why it stopped.
type Ended = (PacketStats, IoStats, Option<String>);

struct Sockets {
    rx: [PacketSocket; 2],
    tx: [PacketSocket; 2],
}

fn open(s: &PacketSettings) -> Result<Sockets, String> {
    let open_rx = |n: &str| {
        let rx = PacketSocket::receiver(n, SOCKET_BUFFER)
            .map_err(|e| format!("packet: receive socket on {n}: {e}"))?;
        promiscuous(&rx, n).map_err(|e| format!("packet: promiscuous mode on {n}: {e}"))?;
        Ok::<_, String>(rx)
    };
    let open_tx =
        |n: &str| PacketSocket::sender(n).map_err(|e| format!("packet: send socket on {n}: {e}"));
    Ok(Sockets {
        rx: [open_rx(&s.a)?, open_rx(&s.b)?],
        tx: [open_tx(&s.a)?, open_tx(&s.b)?],
    })
}

/// Puts the socket's interface in promiscuous mode for as long as the
/// socket lives (a membership, so the kernel undoes it when it closes).
fn promiscuous(s: &PacketSocket, ifname: &str) -> std::io::Result<()> {
    let mreq = libc::packet_mreq {
        mr_ifindex: ifindex(ifname)?,
        mr_type: libc::PACKET_MR_PROMISC as u16,
        mr_alen: 0,
        mr_address: [0; 8],
    };
    // SAFETY: `mreq` is a valid packet_mreq of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            (&mreq as *const libc::packet_mreq).cast(),
            std::mem::size_of::<libc::packet_mreq>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl PacketDaemon {
    /// Opens the sockets (in the calling thread's network namespace) and
    /// starts the packet thread, publishing into `metrics.packet`.
    pub fn start(s: &PacketSettings, metrics: Arc<Metrics>) -> Result<PacketDaemon, String> {
        let socks = open(s)?;
        // SAFETY: plain eventfd(2); the fd is owned below.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if raw < 0 {
            return Err(format!("eventfd: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let stop = unsafe { OwnedFd::from_raw_fd(raw) };
        let stop_fd = stop.as_raw_fd();
        let engine = Engine::new(s);
        let m = metrics.clone();
        let realtime = s.realtime;
        let thread = std::thread::Builder::new()
            .name("pep-packet".into())
            .spawn(move || run(engine, socks, stop_fd, realtime, m))
            .map_err(|e| format!("spawn: {e}"))?;
        metrics.packet.up.store(1, Relaxed);
        tracing::info!(a = %s.a, b = %s.b, rate = ?s.rate, sad = s.sad, thin = ?s.ack_thin,
            regen = ?s.ack_regen.map(|r| r.factor),
            watermark = ?s.watermark.map(|w| (w.core.capacity, w.core.watermark)),
            "packet path running");
        Ok(PacketDaemon {
            stop,
            thread: Some(thread),
            metrics,
        })
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Whether the thread ended by itself (an interface failed).
    pub fn failed(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Stops the thread; returns the final counters.
    pub fn stop(mut self) -> (PacketStats, IoStats) {
        let (s, io, _) = self.halt();
        (s, io)
    }

    /// Stops the thread; returns the final counters and the failure that
    /// ended it, if one did.
    pub fn stop_with_reason(mut self) -> Ended {
        self.halt()
    }

    fn halt(&mut self) -> Ended {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our eventfd.
        unsafe { libc::write(self.stop.as_raw_fd(), (&one as *const u64).cast(), 8) };
        let r = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        self.metrics.packet.up.store(0, Relaxed);
        r
    }
}

impl Drop for PacketDaemon {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.halt();
        }
    }
}

fn run(
    mut engine: Engine,
    mut s: Sockets,
    stop_fd: i32,
    realtime: bool,
    metrics: Arc<Metrics>,
) -> Ended {
    tune_timing_thread(realtime, 10);
    const BATCH: usize = 64;
    const PUBLISH_EVERY: Duration = Duration::from_millis(100);
    let clock = Clock::start();
    let mut io = IoStats::default();
    let mut buf = vec![0u8; MAX_FRAME];
    let mut next_publish = Instant::ZERO;
    let mut failure = None;
    let send = |engine: &mut Engine, s: &Sockets, io: &mut IoStats| {
        while let Some((side, bytes)) = engine.poll_transmit() {
            let tx = &s.tx[(side == Side::B) as usize];
            if tx.send(&bytes).is_err() {
                io.send_errors += 1;
            }
        }
    };
    loop {
        let now = clock.now();
        engine.handle_timeout(now);
        send(&mut engine, &s, &mut io);
        for (i, side) in [(0, Side::A), (1, Side::B)] {
            for _ in 0..BATCH {
                match s.rx[i].recv(&mut buf) {
                    Ok(Recv::Frame(n)) => {
                        engine.on_frame(now, side, buf[..n].to_vec());
                        send(&mut engine, &s, &mut io);
                    }
                    Ok(Recv::Truncated(_)) => io.oversize += 1,
                    Ok(Recv::Empty) => break,
                    Err(e) => {
                        // The interface went away or down: stop rather than
                        // spin on an error every wake-up.
                        failure = Some(format!("packet: receiving on side {side:?}: {e}"));
                        break;
                    }
                }
            }
        }
        if let Some(f) = &failure {
            tracing::error!("{f}");
            break;
        }
        if now >= next_publish {
            io.kernel_drops = s.rx[0].kernel_drops() + s.rx[1].kernel_drops();
            metrics.packet.publish(&engine.stats(), &io);
            next_publish = now + PUBLISH_EVERY;
        }
        let sleep = engine
            .poll_timeout()
            .map(|due| due.saturating_since(clock.now()));
        if sleep == Some(Duration::ZERO) {
            continue;
        }
        if wait(&[s.rx[0].as_raw_fd(), s.rx[1].as_raw_fd()], stop_fd, sleep) {
            break;
        }
    }
    io.kernel_drops = s.rx[0].kernel_drops() + s.rx[1].kernel_drops();
    let stats = engine.stats();
    metrics.packet.publish(&stats, &io);
    metrics.packet.up.store(0, Relaxed);
    (stats, io, failure)
}

/// Sleeps until a receiver is readable, `timeout` passes, or `stop` is
/// signalled; true when the thread should end.
fn wait(rx: &[i32; 2], stop: i32, timeout: Option<Duration>) -> bool {
    let fd = |fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let mut fds = [fd(rx[0]), fd(rx[1]), fd(stop)];
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: (d.as_nanos() / 1_000_000_000) as libc::time_t,
        tv_nsec: (d.as_nanos() % 1_000_000_000) as libc::c_long,
    });
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
    // SAFETY: `fds` and `tsp` are valid for the call; EINTR just loops.
    unsafe { libc::ppoll(fds.as_mut_ptr(), 3, tsp, std::ptr::null()) };
    fds[2].revents != 0 || fds.iter().any(|f| f.revents & libc::POLLNVAL != 0)
}
