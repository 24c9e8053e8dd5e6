//! The link emulator: the core's `LinkDir` model driven by the real clock,
//! bridging two interfaces with packet sockets.
//!
//! One thread per direction, living in the link's namespace. Each loop:
//!
//! 1. read the clock (`now`, never decreasing);
//! 2. `handle_timeout(now)`, then transmit every frame `poll_deliver(now)`
//!    returns, on the far interface;
//! 3. read the frames that arrived (without blocking) and `enqueue` them at
//!    `now`; the model queues, drops, serializes and delays them;
//! 4. sleep in `ppoll` until a frame arrives, the model's `poll_timeout()`
//!    falls due, or the lab stops.
//!
//! Step 2 comes before step 3 so the model never starts serializing a frame
//! at an instant before it arrived. Transmissions are scheduled in model
//! time (each starts when the previous ended), so waking late delays a
//! frame's delivery but never changes the rate. How late the thread wakes
//! is recorded (`lateness`); with `SCHED_FIFO` and a 1 ns timer slack it is
//! tens of microseconds. An optional spin window busy-polls the last
//! microseconds before a deadline for more precision at the cost of CPU.
//!
//! A direction with a service that changes over time (a schedule, an
//! `mm-link` trace, the LEO preset) runs the core's, as the simulator
//! does; its time zero is the instant the thread starts emulating (its
//! `elapsed` counts from there).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use pep_core::link::service::ServiceSpec;
use pep_core::link::{LinkDir, LinkStats};
use pep_core::loss::{GilbertElliott, LossModel};
use pep_core::queue::{Classful, Classifier, DelayHistogram, Qdisc, Queue, QueueStats, Scheduler};
use pep_core::rng::Stream;
use pep_core::sad::SadStats;
use pep_core::{Duration, Instant, KindFilter};

use crate::error::{io_err, last_os, LabError, Result};
use crate::netns;
use crate::topology::{emu_ifname, DirParams, Discipline, LossParams};
use pep_io::clock::{timespec, tune_timing_thread, Clock, Histogram};
use pep_io::frame::{FlowTable, Frame, WriteBack};
use pep_io::packet_socket::{PacketSocket, Recv};

/// How the emulator threads run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmuOptions {
    /// Busy-poll this long before each deadline instead of sleeping
    /// (zero: always sleep).
    pub spin: Duration,
    /// Run the threads under `SCHED_FIFO` (falls back silently).
    pub realtime: bool,
    /// Keep idle CPUs polling while the lab is up ([`IdlePolling`]; falls
    /// back silently).
    ///
    /// [`IdlePolling`]: pep_io::clock::IdlePolling
    pub poll_idle: bool,
    pub rt_priority: i32,
    /// Receive buffer of each packet socket, in bytes.
    pub socket_buffer: usize,
    /// Largest frame accepted; longer ones are counted as `truncated` and
    /// dropped (they mean an offload is still on).
    pub max_frame: usize,
}

impl Default for EmuOptions {
    fn default() -> Self {
        EmuOptions {
            spin: Duration::ZERO,
            realtime: true,
            poll_idle: true,
            rt_priority: 10,
            socket_buffer: 16 << 20,
            max_frame: 2048,
        }
    }
}

/// Counters of one emulated direction.
#[derive(Clone, Debug, Default)]
pub struct DirReport {
    /// `<link>/fwd` or `<link>/rev`.
    pub name: String,
    pub link: LinkStats,
    pub queue: QueueStats,
    pub max_queue_packets: u64,
    /// Frames the kernel dropped before the emulator read them.
    pub kernel_drops: u64,
    /// Frames longer than `max_frame` (dropped).
    pub truncated: u64,
    /// Frames the far interface refused.
    pub send_errors: u64,
    /// How late the thread handled each due deadline.
    pub lateness: Histogram,
    /// Whether `SCHED_FIFO` was granted.
    pub realtime: bool,
    /// Whether idle CPUs were kept polling ([`pep_io::clock::IdlePolling`]);
    /// set by the [`crate::lab::Lab`] that runs the emulator.
    pub idle_polling: bool,
    /// Time since the emulator started, when these counters were taken.
    pub elapsed: Duration,
    /// The Smart ACK Dropper's counters, when it runs on this direction.
    pub sad: Option<SadStats>,
    /// Frames whose bytes were rewritten on the way out (SAD).
    pub rewritten_frames: u64,
    /// Frames a field could not be written into (sent as they were, apart
    /// from the fields written before); expected zero.
    pub rewrite_failures: u64,
    /// TCP connections the flow table has seen (or holds, past its bound).
    pub flows: u64,
    /// Each packet's queueing delay (admission to the start of its
    /// transmission), for FIFO queues (DropTail, RED), as the simulator
    /// keeps it.
    pub queue_delay: Option<DelayHistogram>,
}

/// When the directions' services (schedules, traces, the LEO preset)
/// take their time zero: as each emulator starts, or when a run says so
/// ([`ServiceStart::start`]), so that a schedule's steps fall where they
/// do in the simulator, whose time zero is the flows' start.
#[derive(Clone, Debug)]
pub struct ServiceStart(Arc<AtomicU64>);

impl ServiceStart {
    /// `CLOCK_MONOTONIC` reading meaning "at the emulator's start".
    const AT_EMULATOR_START: u64 = 0;
    /// Not started yet: the link serves at its base rate and delay.
    const WAITING: u64 = u64::MAX;

    pub fn at_emulator_start() -> Self {
        ServiceStart(Arc::new(AtomicU64::new(Self::AT_EMULATOR_START)))
    }

    pub fn deferred() -> Self {
        ServiceStart(Arc::new(AtomicU64::new(Self::WAITING)))
    }

    /// Starts the services with `zero`'s zero as their time zero (each
    /// direction takes it up before it next handles a packet).
    pub fn start(&self, zero: Clock) {
        self.0.store(zero.epoch_ns(), Ordering::Release);
    }

    /// The services' time zero on `clock`, once known.
    fn epoch(&self, emulator_start: Instant, clock: &Clock) -> Option<Instant> {
        match self.0.load(Ordering::Acquire) {
            Self::WAITING => None,
            Self::AT_EMULATOR_START => Some(emulator_start),
            ns => Some(Instant(ns.saturating_sub(clock.epoch_ns()))),
        }
    }
}

/// Both directions of one link, running.
pub struct LinkEmulator {
    name: String,
    stop: OwnedFd,
    threads: Vec<JoinHandle<()>>,
    reports: [Arc<Mutex<DirReport>>; 2],
}

/// Everything a direction thread needs.
struct DirTask {
    netns: String,
    rx_if: &'static str,
    tx_if: &'static str,
    link: LinkDir<Frame>,
    /// The direction's service, with the stream it draws from.
    service: Option<(ServiceSpec, Stream)>,
    service_start: ServiceStart,
    clock: Clock,
    opts: EmuOptions,
    stop_fd: i32,
    report: Arc<Mutex<DirReport>>,
}

impl LinkEmulator {
    /// Starts emulating link `name` in namespace `netns` (interfaces
    /// `side-a` and `side-b`): `params[0]` from a to b, `params[1]` back. Returns once
    /// both threads have their sockets, or with the first failure.
    pub fn start(
        name: &str,
        netns: &str,
        params: [DirParams; 2],
        seed: u64,
        clock: Clock,
        opts: EmuOptions,
    ) -> Result<LinkEmulator> {
        let services = ([None, None], ServiceStart::at_emulator_start());
        Self::start_served(name, netns, params, services, seed, clock, opts)
    }

    /// [`Self::start`], each direction following `services.0` (forward,
    /// reverse) where given, from `services.1`.
    pub fn start_served(
        name: &str,
        netns: &str,
        params: [DirParams; 2],
        (services, service_start): ([Option<ServiceSpec>; 2], ServiceStart),
        seed: u64,
        clock: Clock,
        opts: EmuOptions,
    ) -> Result<LinkEmulator> {
        // SAFETY: plain eventfd(2); the fd is owned below.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if raw < 0 {
            return Err(last_os("eventfd"));
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let stop = unsafe { OwnedFd::from_raw_fd(raw) };
        let mk = |d: &str| {
            Arc::new(Mutex::new(DirReport {
                name: format!("{name}/{d}"),
                ..DirReport::default()
            }))
        };
        let reports = [mk("fwd"), mk("rev")];
        let mut emu = LinkEmulator {
            name: name.to_string(),
            stop,
            threads: vec![],
            reports,
        };
        let (ready_tx, ready_rx) = mpsc::channel();
        let (a, b) = (emu_ifname(0), emu_ifname(1));
        for (i, (dir, (rx_if, tx_if))) in [("fwd", (a, b)), ("rev", (b, a))].into_iter().enumerate()
        {
            let p = params[i];
            let loss = match p.loss {
                LossParams::None => LossModel::None,
                LossParams::Bernoulli { p } => LossModel::Bernoulli {
                    p,
                    // The simulator's label, so a scenario's seed names the
                    // same stream in both.
                    rng: Box::new(Stream::derive(seed, &format!("link/{name}/{dir}/loss"))),
                },
                LossParams::GilbertElliott {
                    p,
                    r,
                    loss_good,
                    loss_bad,
                } => LossModel::GilbertElliott(Box::new(GilbertElliott::new(
                    p,
                    r,
                    loss_good,
                    loss_bad,
                    Stream::derive(seed, &format!("link/{name}/{dir}/loss")),
                ))),
            };
            let loss = match p.loss_applies_to {
                KindFilter::All => loss,
                only => LossModel::Only {
                    only,
                    inner: Box::new(loss),
                },
            };
            let task = DirTask {
                netns: netns.to_string(),
                rx_if,
                tx_if,
                link: LinkDir::new(
                    p.rate,
                    p.delay,
                    queue_of(&p, || {
                        Stream::derive(seed, &format!("link/{name}/{dir}/red"))
                    }),
                    loss,
                ),
                // The simulator's label, as for the loss.
                service: services[i].clone().map(|s| {
                    (
                        s,
                        Stream::derive(seed, &format!("link/{name}/{dir}/service")),
                    )
                }),
                service_start: service_start.clone(),
                clock,
                opts,
                stop_fd: emu.stop.as_raw_fd(),
                report: emu.reports[i].clone(),
            };
            let ready = ready_tx.clone();
            let handle = std::thread::Builder::new()
                .name(format!("pepl-{name}-{dir}"))
                .spawn(move || run_direction(task, ready))
                .map_err(io_err("spawn emulator thread"))?;
            emu.threads.push(handle);
        }
        drop(ready_tx);
        for _ in 0..2 {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(e), // Drop stops the other thread.
                Err(_) => {
                    return Err(LabError::Topology(format!(
                        "emulator thread for {name} died while starting"
                    )))
                }
            }
        }
        Ok(emu)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The counters as last published (every 100 ms while running).
    pub fn reports(&self) -> [DirReport; 2] {
        let get = |r: &Arc<Mutex<DirReport>>| r.lock().map(|g| g.clone()).unwrap_or_default();
        [get(&self.reports[0]), get(&self.reports[1])]
    }

    /// Stops both threads and returns their final counters.
    pub fn stop(mut self) -> [DirReport; 2] {
        self.halt();
        self.reports()
    }

    fn halt(&mut self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our eventfd.
        unsafe { libc::write(self.stop.as_raw_fd(), (&one as *const u64).cast(), 8) };
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for LinkEmulator {
    fn drop(&mut self) {
        self.halt();
    }
}

fn run_direction(mut t: DirTask, ready: mpsc::Sender<Result<()>>) {
    let setup = (|| {
        netns::enter(&t.netns)?;
        let timing = tune_timing_thread(t.opts.realtime, t.opts.rt_priority);
        let rx = PacketSocket::receiver(t.rx_if, t.opts.socket_buffer)
            .map_err(io_err(format!("packet socket on {}:{}", t.netns, t.rx_if)))?;
        let tx = PacketSocket::sender(t.tx_if)
            .map_err(io_err(format!("packet socket on {}:{}", t.netns, t.tx_if)))?;
        Ok((rx, tx, timing.realtime))
    })();
    let (mut rx, tx, realtime) = match setup {
        Ok(v) => {
            let _ = ready.send(Ok(()));
            v
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    drop(ready);

    const BATCH: usize = 64;
    const PUBLISH_EVERY: Duration = Duration::from_millis(100);
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut flows = FlowTable::default();
    let mut stats = DirReport {
        name: t.report.lock().map(|r| r.name.clone()).unwrap_or_default(),
        realtime,
        ..DirReport::default()
    };
    let started = t.clock.now();
    let mut next_publish = Instant::ZERO;
    let mut service = t.service.take();
    // FIFO queues record each packet's queueing delay (others refuse).
    t.link.queue.enable_sojourn();
    let link = &mut t.link;
    loop {
        let now = t.clock.now();
        if let Some(due) = link.poll_timeout().filter(|&d| d <= now) {
            stats.lateness.record(now - due);
        }
        link.handle_timeout(now);
        if service.is_some() && !link.is_busy() {
            // Before this pass's packets, with the transmitter idle (a
            // daemon's packets may cross before the run starts): a
            // service takes over between transmissions.
            if let Some(zero) = t.service_start.epoch(started, &t.clock) {
                let (spec, rng) = service.take().expect("a service");
                link.set_service(&spec, zero, rng);
            }
        }
        while let Some(mut f) = link.poll_deliver(now) {
            match f.write_back() {
                WriteBack::Unchanged => {}
                WriteBack::Rewritten => stats.rewritten_frames += 1,
                WriteBack::Partial => stats.rewrite_failures += 1,
            }
            if tx.send(&f.bytes).is_err() {
                stats.send_errors += 1;
            }
            pool.push(f.bytes);
        }
        for _ in 0..BATCH {
            let mut buf = pool.pop().unwrap_or_default();
            buf.resize(t.opts.max_frame, 0);
            match rx.recv(&mut buf) {
                Ok(Recv::Frame(n)) => {
                    buf.truncate(n);
                    if let Err((f, _)) = link.enqueue(now, Frame::parse(buf, &mut flows)) {
                        pool.push(f.bytes);
                    }
                    let q = link.queue.len_packets() as u64;
                    stats.max_queue_packets = stats.max_queue_packets.max(q);
                }
                Ok(Recv::Truncated(_)) => {
                    stats.truncated += 1;
                    pool.push(buf);
                }
                Ok(Recv::Empty) | Err(_) => {
                    pool.push(buf);
                    break;
                }
            }
        }
        if now >= next_publish {
            stats.flows = flows.len() as u64;
            publish(&mut stats, link, &mut rx, now - started, &t.report);
            next_publish = now + PUBLISH_EVERY;
        }

        let wait = link
            .poll_timeout()
            .map(|due| due.saturating_since(t.clock.now()));
        let sleep = match wait {
            Some(w) if w <= t.opts.spin => {
                std::hint::spin_loop();
                continue;
            }
            Some(w) => Some(w - t.opts.spin),
            None => None,
        };
        if wait_readable(rx.as_raw_fd(), t.stop_fd, sleep) {
            break;
        }
    }
    publish(
        &mut stats,
        link,
        &mut rx,
        t.clock.now() - started,
        &t.report,
    );
}

/// The queue of a direction: its discipline (the core's machine, as the
/// simulator builds it), with SAD in front if asked. `red_rng` is RED's
/// stream, under the simulator's label.
fn queue_of(p: &DirParams, red_rng: impl FnOnce() -> Stream) -> Queue<Frame> {
    let q = match p.discipline {
        Discipline::DropTail => Queue::drop_tail(p.queue),
        Discipline::Red(r) => Queue::red(r, red_rng()),
        Discipline::Priority { acks_first } => {
            let (acks, data) = if acks_first { (0, 1) } else { (1, 0) };
            Queue::classful(Classful::new(
                Classifier::Kind { acks, data },
                Scheduler::Strict,
                &[p.queue, p.queue],
            ))
        }
        Discipline::TwoClass {
            data_weight,
            ack_weight,
        } => Queue::classful(Classful::two_class(data_weight, ack_weight, p.queue)),
    };
    match p.sad_max_flows {
        Some(n) => Queue::sad(q, n as usize),
        None => q,
    }
}

fn publish(
    stats: &mut DirReport,
    link: &LinkDir<Frame>,
    rx: &mut PacketSocket,
    elapsed: Duration,
    out: &Mutex<DirReport>,
) {
    stats.link = link.stats;
    stats.queue = link.queue.stats;
    if let Qdisc::Sad(q) = &link.queue.disc {
        stats.sad = Some(*q.stats());
    }
    stats.kernel_drops = rx.kernel_drops();
    stats.elapsed = elapsed;
    stats.queue_delay = link.queue.sojourn().map(|s| s.histogram().clone());
    if let Ok(mut g) = out.lock() {
        *g = stats.clone();
    }
}

/// Sleeps until `rx` is readable, `timeout` passes, or `stop` is
/// signalled; true when the thread should end (stop, or `rx` unusable).
fn wait_readable(rx: i32, stop: i32, timeout: Option<Duration>) -> bool {
    let mut fds = [
        libc::pollfd {
            fd: rx,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: stop,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let ts = timeout.map(|d| timespec(d.as_nanos()));
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
    // SAFETY: `fds` and `tsp` are valid for the call; EINTR just loops.
    unsafe { libc::ppoll(fds.as_mut_ptr(), 2, tsp, std::ptr::null()) };
    fds[1].revents != 0 || fds[0].revents & libc::POLLNVAL != 0
}
