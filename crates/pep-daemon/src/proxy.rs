//! The daemon: listeners, admission (subnets, limits, descriptors),
//! connection tasks, reload and graceful shutdown.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tracing::{debug, error, info, warn};

use crate::config::{self, Settings};
use crate::conn::{relay_connection, Shared};
use crate::metrics::{Metrics, Refusal};
use crate::{net, rules, tunnel};

/// How to run, beyond the configuration.
#[derive(Clone, Debug, Default)]
pub struct StartOptions {
    /// Apply the interception rules at start and remove them at exit.
    pub install_rules: bool,
    /// Handle SIGTERM/SIGINT (drain and stop) and SIGHUP (reload).
    pub signals: bool,
    /// The file SIGHUP re-reads.
    pub config_path: Option<PathBuf>,
    /// Switch to `proxy.user` once set up. The whole process changes user:
    /// `pep proxy run` sets it; a daemon embedded in a program that must
    /// stay root (the tests) does not.
    pub drop_privileges: bool,
    /// Serve upgrades here: a new process that connects is handed the
    /// listening sockets ([`crate::upgrade`]), and this one drains.
    pub upgrade_socket: Option<PathBuf>,
    /// Take the listening sockets (and the rules) of the proxy serving
    /// this upgrade socket instead of binding new ones.
    pub take_over: Option<PathBuf>,
    /// What SIGUSR2 starts: the new binary, told to take over (`pep proxy
    /// upgrade ...`). Unset: SIGUSR2 is logged and ignored.
    pub upgrade_command: Option<Vec<std::ffi::OsString>>,
}

/// What a two-node PEP's tunnel needs, prepared before the runtime runs
/// (key material checked, UDP socket bound while still privileged).
struct TunnelSetup {
    settings: tunnel::TunnelSettings,
    tls: tunnel::Tls,
    udp: std::net::UdpSocket,
    /// split-start's local queue: its thread (stops when dropped) and the
    /// flows' read counters it charges by.
    localq: Option<(
        tunnel::localq::LocalQueueThread,
        Arc<tunnel::localq::FlowReads>,
    )>,
}

enum Control {
    Stop,
    Reload(Box<Settings>),
    /// SIGUSR2: start the new binary, which takes over.
    Upgrade,
    /// A new process (this pid, if known) accepts on our listeners: drain
    /// and exit, leaving the rules and sysctls to it.
    HandedOver(Option<u32>),
}

/// A running proxy. Dropping it stops it without draining.
pub struct Daemon {
    ctl: mpsc::UnboundedSender<Control>,
    metrics: Arc<Metrics>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
    local: Vec<SocketAddr>,
    metrics_addr: Option<SocketAddr>,
}

/// Admission state shared by the accept loops.
struct Admission {
    settings: RwLock<Arc<Settings>>,
    per_client: Mutex<HashMap<IpAddr, ClientLoad>>,
    metrics: Arc<Metrics>,
    /// A spare descriptor, closed to accept-and-reset a connection when
    /// descriptors run out anyway (otherwise it would wait in the backlog).
    reserve: Mutex<Option<std::fs::File>>,
    /// Descriptors open before any connection: listeners, the runtime,
    /// the reserve. A connection adds two.
    base_fds: u64,
}

/// Pending Fast Open requests (SYNs with data not yet accepted) the
/// listener holds: past it, SYN data is refused and the client falls back
/// to a plain handshake.
pub const FAST_OPEN_QUEUE: u32 = 1024;

/// Descriptors kept free beyond the connections' own: the metrics
/// endpoint, rule helpers, log files, the reserve's replacement.
pub const FD_MARGIN: u64 = 8;

/// What one client address holds: connections and their share of
/// `memory_budget`.
#[derive(Default)]
struct ClientLoad {
    connections: usize,
    memory: u64,
}

/// Holds a connection's place in the limits; released on drop.
struct Slot {
    adm: Arc<Admission>,
    client: IpAddr,
    /// Its share of `memory_budget`.
    memory: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.adm.metrics.active.fetch_sub(1, Relaxed);
        self.adm
            .metrics
            .memory_committed
            .fetch_sub(self.memory, Relaxed);
        let mut pc = self
            .adm
            .per_client
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(n) = pc.get_mut(&self.client) {
            n.connections -= 1;
            n.memory -= self.memory;
            if n.connections == 0 {
                pc.remove(&self.client);
            }
        }
    }
}

impl Admission {
    fn settings(&self) -> Arc<Settings> {
        self.settings
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn admit(
        self: &Arc<Self>,
        peer: SocketAddr,
        dst: SocketAddr,
        s: &Settings,
    ) -> Result<Slot, Refusal> {
        if !s.intercepts_client(peer.ip()) {
            return Err(Refusal::NotServed);
        }
        // A connection to the proxy's own port on this host: relaying it
        // would connect the proxy to itself. The same port on another host
        // is a destination like any other.
        if dst.port() == s.port && net::is_local_address(dst.ip()) {
            return Err(Refusal::Loop);
        }
        let mut pc = self.per_client.lock().unwrap_or_else(|e| e.into_inner());
        if self.metrics.active.load(Relaxed) >= s.max_connections as i64 {
            return Err(Refusal::Limit);
        }
        // Looked up, not inserted: a refused client leaves no entry behind.
        let held = pc
            .get(&peer.ip())
            .map_or((0, 0), |n| (n.connections, n.memory));
        if held.0 >= s.max_per_client {
            return Err(Refusal::ClientLimit);
        }
        // Refuse before the process runs out: a connection that cannot
        // open its server leg would be accepted only to fail, and running
        // out can stall the accept loop itself. The limit is read each
        // time: an operator may lower it on the running process (prlimit).
        let active = self.metrics.active.load(Relaxed).max(0) as u64;
        let scrapes = self.metrics.metrics_open.load(Relaxed).max(0) as u64;
        let per = s.fds_per_connection();
        if self.base_fds + per * (active + 1) + scrapes + FD_MARGIN > net::nofile_limit() {
            return Err(Refusal::Descriptors);
        }
        // Under the per-client lock, which every admission takes: the
        // check and the charge are one step.
        let memory = match (s.memory_budget, s.connection_memory(dst.ip())) {
            (Some(budget), Some(need)) => {
                if self.metrics.memory_committed.load(Relaxed) + need > budget {
                    return Err(Refusal::Memory);
                }
                if s.memory_per_client
                    .is_some_and(|share| held.1 + need > share)
                {
                    return Err(Refusal::ClientMemory);
                }
                need
            }
            _ => 0,
        };
        self.metrics.memory_committed.fetch_add(memory, Relaxed);
        let n = pc.entry(peer.ip()).or_default();
        n.memory += memory;
        n.connections += 1;
        self.metrics.active.fetch_add(1, Relaxed);
        Ok(Slot {
            adm: self.clone(),
            client: peer.ip(),
            memory,
        })
    }
}

fn refuse(s: TcpStream, why: Refusal, m: &Metrics, peer: SocketAddr, dst: SocketAddr) {
    m.refuse(why);
    debug!(%peer, %dst, ?why, "refused");
    // A RST: the client learns at once, as from a closed port.
    net::set_reset_on_close(&s);
}

async fn accept_loop(listener: TcpListener, adm: Arc<Admission>, shared: Shared) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) => {
                adm.metrics.accept_errors.fetch_add(1, Relaxed);
                let spare = adm.reserve.lock().unwrap_or_else(|e| e.into_inner()).take();
                if spare.is_none() {
                    // Lost to another task's socket in a race: get it back
                    // once something closes.
                    *adm.reserve.lock().unwrap_or_else(|e| e.into_inner()) =
                        std::fs::File::open("/dev/null").ok();
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                drop(spare);
                if let Ok((s, peer)) = listener.accept().await {
                    let dst = s.local_addr().unwrap_or(peer);
                    refuse(s, Refusal::Descriptors, &adm.metrics, peer, dst);
                }
                warn!("out of file descriptors: refusing connections");
                *adm.reserve.lock().unwrap_or_else(|e| e.into_inner()) =
                    std::fs::File::open("/dev/null").ok();
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            Err(e) => {
                adm.metrics.accept_errors.fetch_add(1, Relaxed);
                warn!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let peer = net::canonical(peer);
        let dst = match stream.local_addr() {
            Ok(d) => net::canonical(d),
            Err(_) => continue,
        };
        let s = adm.settings();
        match adm.admit(peer, dst, &s) {
            Ok(slot) => {
                adm.metrics.accepted.fetch_add(1, Relaxed);
                let shared = shared.clone();
                tokio::spawn(async move {
                    match shared.tunnel.clone() {
                        Some(t) => {
                            let cap = s
                                .client_rate
                                .map(|bps| shared.rates.cap(peer.ip(), bps, shared.epoch));
                            t.relay_flow(stream, peer, dst, s.connect_timeout, cap)
                                .await
                        }
                        None => relay_connection(stream, peer, dst, s, shared).await,
                    }
                    drop(slot);
                });
            }
            Err(why) => refuse(stream, why, &adm.metrics, peer, dst),
        }
    }
}

/// Checks what the kernel must provide for `s` (congestion controls) and
/// that the tunnel's key material loads.
pub fn preflight(s: &Settings) -> Result<(), String> {
    // A misspelt interface would install rules that intercept nothing.
    // Split-end notes its interfaces as unused instead.
    let split_end = s
        .tunnel
        .as_ref()
        .is_some_and(|t| t.role == tunnel::Role::SplitEnd);
    if !split_end {
        for (k, name) in s.interfaces.iter().enumerate() {
            if !net::interface_exists(name) {
                return Err(format!(
                    "intercept.interfaces[{k}]: no interface named {name:?} on this host"
                ));
            }
        }
    }
    for (field, cc) in s.cc_names() {
        net::check_cc(&cc).map_err(|e| format!("{field}: {e}"))?;
    }
    if let Some(t) = &s.tunnel {
        // The key material, read and matched as the tunnel will: `check`
        // must not pass a file `run` then refuses.
        let transport = tunnel::transport(t, s.max_connections, Arc::new(Metrics::default()));
        tunnel::load_tls(&t.tls, transport)?;
    }
    Ok(())
}

impl Daemon {
    /// Binds the listeners (and the metrics endpoint), applies the rules if
    /// asked, and runs the proxy on its own thread, in the calling thread's
    /// network namespace. Errors here are setup errors; nothing is left
    /// behind.
    pub fn start(settings: Settings, mut opts: StartOptions) -> Result<Daemon, String> {
        preflight(&settings)?;
        // Before the tunnel's sockets are made: the old process holds them.
        if let (Some(_), Some(why)) = (&opts.take_over, crate::upgrade::refusal(&settings)) {
            return Err(why.into());
        }
        let metrics = Arc::new(Metrics::default());
        let tunnel = match &settings.tunnel {
            Some(t) => {
                if t.cc == tunnel::TunnelCc::QuinnBbr {
                    warn!("tunnel.cc = \"quinn-bbr\": this quinn release's BBR floods shallow queues (60 % loss in the lab); bbr is the core's");
                }
                let transport = tunnel::transport(t, settings.max_connections, metrics.clone());
                let tls = tunnel::load_tls(&t.tls, transport)?;
                let bind = match (t.role, t.listen, t.peer) {
                    (tunnel::Role::SplitEnd, Some(l), _) => l,
                    (_, _, Some(p)) if p.is_ipv6() => SocketAddr::new(net::UNSPECIFIED_V6, 0),
                    _ => SocketAddr::new(net::UNSPECIFIED_V4, 0),
                };
                let udp = tunnel::udp_socket(bind)
                    .map_err(|e| format!("tunnel: bind UDP {bind}: {e}"))?;
                let localq = match &t.local_queue {
                    Some(q) => {
                        let reads = Arc::new(tunnel::localq::FlowReads::default());
                        let th = tunnel::localq::spawn(q, metrics.clone(), reads.clone())?;
                        Some((th, reads))
                    }
                    None => None,
                };
                Some(TunnelSetup {
                    settings: t.clone(),
                    tls,
                    udp,
                    localq,
                })
            }
            None => None,
        };
        let split_end = settings
            .tunnel
            .as_ref()
            .is_some_and(|t| t.role == tunnel::Role::SplitEnd);
        for note in settings.unused() {
            warn!("not used: {note}");
        }
        if settings.fast_open {
            match net::fast_open_sysctl() {
                Some((true, true)) => {}
                Some(_) => warn!(
                    "proxy.fast_open: net.ipv4.tcp_fastopen lacks the client (1) or server (2)                      bit here: set it to 3 for Fast Open on both legs"
                ),
                None => warn!("proxy.fast_open: net.ipv4.tcp_fastopen unreadable"),
            }
        }
        if split_end && opts.install_rules {
            info!("split-end intercepts nothing: no rules to install");
            opts.install_rules = false;
        }
        // Two descriptors per connection (six when splicing), plus
        // listeners and slack.
        let want = settings.max_connections as u64 * settings.fds_per_connection() + 64;
        let got = net::raise_nofile(want);
        let settings = fit_descriptors(settings, got, net::open_fds())?;
        let mut received = match &opts.take_over {
            Some(path) => Some(crate::upgrade::take_over(path, settings.port)?),
            None => None,
        };
        let mut listeners = Vec::new();
        let rcvbuf = settings.client_leg.rcvbuf;
        let client_mss = match settings.client_leg.mss {
            Some(config::Mss::Fixed(m)) => Some(m),
            _ => None,
        };
        if let Some(r) = received.as_mut() {
            listeners = std::mem::take(&mut r.listeners);
            info!(
                listeners = listeners.len(),
                "upgrade: took over the running proxy's listeners"
            );
        } else if !split_end {
            listeners.push(
                net::transparent_listener(
                    SocketAddr::new(net::UNSPECIFIED_V4, settings.port),
                    4096,
                    rcvbuf,
                    client_mss,
                    settings.out_mark,
                    settings.copy_dscp,
                    settings.fast_open.then_some(FAST_OPEN_QUEUE),
                )
                .map_err(|e| format!("listener: {e}"))?,
            );
            if settings.ipv6 {
                match net::transparent_listener(
                    SocketAddr::new(net::UNSPECIFIED_V6, settings.port),
                    4096,
                    rcvbuf,
                    client_mss,
                    settings.out_mark,
                    settings.copy_dscp,
                    settings.fast_open.then_some(FAST_OPEN_QUEUE),
                ) {
                    Ok(l) => listeners.push(l),
                    // A host without IPv6 still serves IPv4.
                    Err(e) => warn!("IPv6 listener: {e}"),
                }
            }
        }
        let handed_metrics = received.as_mut().and_then(|r| r.metrics.take());
        let metrics_listener = match settings.metrics {
            Some(a) if handed_metrics.as_ref().and_then(|l| l.local_addr().ok()) == Some(a) => {
                handed_metrics
            }
            Some(a) => {
                let l = std::net::TcpListener::bind(a)
                    .map_err(|e| format!("proxy.metrics: bind {a}: {e}"))?;
                l.set_nonblocking(true).map_err(|e| e.to_string())?;
                Some(l)
            }
            None => None,
        };
        let local: Vec<SocketAddr> = listeners
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect();
        let metrics_addr = metrics_listener.as_ref().and_then(|l| l.local_addr().ok());
        // Handed-over rules stay as they are (reinstalling them would let
        // live connections' packets bypass the proxy for a moment); this
        // process owns them now and removes them at exit.
        let handed_rules = received.as_ref().is_some_and(|r| r.owned.rules);
        if opts.install_rules && !handed_rules {
            rules::install(&settings)?;
        }
        opts.install_rules |= handed_rules;
        if let (true, Some(who)) = (opts.drop_privileges, &settings.user) {
            if let Err(e) = crate::privileges::drop_to(who) {
                if opts.install_rules {
                    let _ = rules::remove(&settings);
                }
                return Err(e);
            }
            info!(user = %who.name, uid = who.uid, "dropped privileges to CAP_NET_ADMIN, CAP_NET_RAW");
        }
        // Checked with the privileges the connections will have.
        let splice_ok = Arc::new(std::sync::atomic::AtomicBool::new(splice_usable(&settings)));
        let workers = if settings.workers == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            settings.workers
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("pep-proxy")
            .enable_all()
            .build()
            .map_err(|e| format!("runtime: {e}"));
        let rt = match rt {
            Ok(rt) => rt,
            Err(e) => {
                if opts.install_rules {
                    let _ = rules::remove(&settings);
                }
                return Err(e);
            }
        };
        // Handlers are installed before `start` returns: a SIGHUP that
        // arrives a moment later must reload, not kill the process.
        let sig = if opts.signals {
            let _rt = rt.enter();
            match Signals::new(opts.config_path.clone(), metrics.clone()) {
                Ok(s) => Some(s),
                Err(e) => {
                    if opts.install_rules {
                        let _ = rules::remove(&settings);
                    }
                    return Err(e);
                }
            }
        } else {
            None
        };
        let tw_set = time_wait_reuse(&settings);
        // The first proxy's original value, whichever process restores it.
        let tw_restore = match &received {
            Some(r) => r.owned.tw_restore.clone(),
            None => tw_set,
        };
        let notifier = crate::notify::Notifier::from_env(received.is_some());
        let (ctl, ctl_rx) = mpsc::unbounded_channel();
        let m = metrics.clone();
        let handed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let upgrade = UpgradeState {
            received,
            ctl: ctl.clone(),
            handed: handed.clone(),
            tw_restore: tw_restore.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("pep-proxy-main".into())
            .spawn(move || {
                let prepared = Prepared {
                    listeners,
                    metrics_listener,
                    sig,
                    tunnel,
                    splice_ok,
                    notifier,
                    upgrade,
                };
                let r = rt.block_on(main_task(
                    settings.clone(),
                    opts.clone(),
                    prepared,
                    m,
                    ctl_rx,
                ));
                // Whatever is still running is dropped with the runtime.
                rt.shutdown_timeout(Duration::from_secs(1));
                // Handed over: the rules and the sysctl are the new
                // process's now.
                let handed = handed.load(Relaxed);
                if let (Some(old), false) = (tw_restore, handed) {
                    if let Err(e) = net::restore_tw_reuse(&old) {
                        warn!("restoring net.ipv4.tcp_tw_reuse: {e}");
                    }
                }
                if opts.install_rules && !handed {
                    if let Err(e) = rules::remove(&settings) {
                        warn!("removing rules: {e}");
                    }
                }
                r
            })
            .map_err(|e| format!("spawn: {e}"))?;
        Ok(Daemon {
            ctl,
            metrics,
            thread: Some(thread),
            local,
            metrics_addr,
        })
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The listening addresses (the TPROXY port).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local
    }

    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// New connections use `s`; existing ones keep their settings.
    pub fn reload(&self, s: Settings) {
        let _ = self.ctl.send(Control::Reload(Box::new(s)));
    }

    /// Stops accepting, lets connections finish for `drain_timeout`, resets
    /// the rest, removes the rules, and returns.
    pub fn shutdown(mut self) -> Result<(), String> {
        let _ = self.ctl.send(Control::Stop);
        self.join()
    }

    /// Waits until the proxy stops by itself (signals).
    pub fn wait(mut self) -> Result<(), String> {
        self.join()
    }

    fn join(&mut self) -> Result<(), String> {
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err("the proxy thread panicked".into())),
            None => Ok(()),
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.ctl.send(Control::Stop);
        let _ = self.join();
    }
}

/// What `start` set up (while privileged) for the runtime to use.
struct Prepared {
    listeners: Vec<std::net::TcpListener>,
    metrics_listener: Option<std::net::TcpListener>,
    sig: Option<Signals>,
    tunnel: Option<TunnelSetup>,
    splice_ok: Arc<std::sync::atomic::AtomicBool>,
    /// systemd's `NOTIFY_SOCKET` and watchdog, read at start.
    notifier: crate::notify::Notifier,
    upgrade: UpgradeState,
}

/// Upgrades: what this process took over, and how it hands over in turn.
struct UpgradeState {
    received: Option<crate::upgrade::Received>,
    ctl: mpsc::UnboundedSender<Control>,
    /// Set once a new process took our listeners.
    handed: Arc<std::sync::atomic::AtomicBool>,
    tw_restore: Option<String>,
}

/// Descriptors kept beside the connections' at start: listeners, the
/// runtime, the tunnel, log files.
const FD_SLACK: u64 = 64;

/// Lowers `max_connections` to what the descriptor limit `limit` holds
/// beside the `open` descriptors and [`FD_SLACK`], at
/// [`Settings::fds_per_connection`] each (six when splicing), and says so:
/// a limit that fitted only a third of `max_connections` used to be a
/// warning, and the connections beyond were refused one by one. A limit
/// that fits no connection is an error.
fn fit_descriptors(mut s: Settings, limit: u64, open: u64) -> Result<Settings, String> {
    let per = s.fds_per_connection();
    let fit = limit.saturating_sub(open + FD_SLACK) / per;
    if fit == 0 {
        return Err(format!(
            "the descriptor limit ({limit}, {open} open) fits no connection at {per} descriptors \
             each: raise LimitNOFILE (ulimit -n)"
        ));
    }
    if (fit as usize) < s.max_connections {
        warn!(
            limit,
            per,
            "proxy.max_connections lowered from {} to {fit}: the descriptor limit holds no more \
             at {per} descriptors a connection ({}); raise LimitNOFILE to {} for all",
            s.max_connections,
            if s.uses_splice() {
                "two sockets, two pipes"
            } else {
                "two sockets"
            },
            s.max_connections as u64 * per + open + FD_SLACK
        );
        s.max_connections = fit as usize;
        s.max_per_client = s.max_per_client.min(s.max_connections);
    }
    Ok(s)
}

/// Server legs all leave from this host's address, and a leg the proxy
/// closes first (the client closed first) holds its port in TIME_WAIT for
/// 60 s: without reuse, connections to one server address and port are
/// capped at the ephemeral range per minute (28,232 by default, 470/s).
/// With `reuse_time_wait`, sets `tcp_tw_reuse` for the daemon's lifetime;
/// returns the value to restore.
fn time_wait_reuse(s: &Settings) -> Option<String> {
    let split_start = s
        .tunnel
        .as_ref()
        .is_some_and(|t| t.role == tunnel::Role::SplitStart);
    if split_start {
        // Its flows go over the tunnel: it opens no server legs.
        return None;
    }
    let ports = net::ephemeral_ports().unwrap_or(0);
    if !s.reuse_time_wait {
        info!(ports, "reuse_time_wait = false: server legs to one destination are limited to about {} a second", ports / 60);
        return None;
    }
    match net::enable_tw_reuse() {
        Ok(Some(old)) => {
            info!("set net.ipv4.tcp_tw_reuse = 1 (was {old}) while running: server legs reuse ports in TIME_WAIT");
            Some(old)
        }
        Ok(None) => None,
        Err(e) => {
            warn!(ports, "{e}: server legs to one destination are limited to about {} a second (ports in TIME_WAIT)", ports / 60);
            None
        }
    }
}

/// Whether connections set to splice can have their pipes; a warning
/// naming the fix if not (they copy instead).
fn splice_usable(s: &Settings) -> bool {
    if !s.uses_splice() {
        return true;
    }
    match crate::splice::check(s.buffer) {
        Ok(()) => true,
        Err(e) => {
            warn!("proxy.relay = \"splice\": no pipe of proxy.buffer: {e}; relaying by copy");
            false
        }
    }
}

async fn main_task(
    settings: Settings,
    opts: StartOptions,
    prepared: Prepared,
    metrics: Arc<Metrics>,
    mut ctl: mpsc::UnboundedReceiver<Control>,
) -> Result<(), String> {
    let Prepared {
        listeners,
        metrics_listener,
        mut sig,
        tunnel,
        splice_ok,
        notifier,
        mut upgrade,
    } = prepared;
    let (abort_tx, abort_rx) = watch::channel(false);
    let mut tunnel_client = None;
    let mut tunnel_task = None;
    // Held until the proxy stops: dropping it stops the queue's thread,
    // which lets every packet still waiting into the stack.
    let mut _localq = None;
    if let Some(t) = tunnel {
        let server = (t.settings.role == tunnel::Role::SplitEnd).then_some(t.tls.server);
        let endpoint = quinn::Endpoint::new(
            quinn::EndpointConfig::default(),
            server,
            t.udp,
            Arc::new(quinn::TokioRuntime),
        )
        .map_err(|e| format!("tunnel endpoint: {e}"))?;
        match (t.settings.role, t.settings.peer) {
            (tunnel::Role::SplitStart, Some(peer)) => {
                let bound = t
                    .settings
                    .local_queue
                    .as_ref()
                    .map(|q| tunnel::start::BacklogBound {
                        beyond_cwnd: q.buffer_start,
                        every: std::time::Duration::from_millis(10),
                    });
                let lq = t.localq.map(|(th, reads)| {
                    _localq = Some(th);
                    reads
                });
                tunnel_client = Some(tunnel::start::spawn(
                    endpoint,
                    peer,
                    t.tls.client,
                    metrics.clone(),
                    lq.zip(bound),
                ));
            }
            _ => {
                tunnel_task = Some(tokio::spawn(tunnel::end::serve(
                    endpoint,
                    Arc::new(settings.clone()),
                    metrics.clone(),
                )));
            }
        }
    }
    // split-start taking over opens its own tunnel and accepts only once
    // it is up: until then the old process keeps accepting, and if it
    // never comes up the old one keeps serving (it reads no READY).
    if let (Some(t), Some(_)) = (&tunnel_client, &upgrade.received) {
        if !t.wait_up(crate::upgrade::TUNNEL_UP_WITHIN).await {
            not_ours(&upgrade);
            return Err(format!(
                "upgrade: the new tunnel did not come up within {:?}; the running proxy keeps serving",
                crate::upgrade::TUNNEL_UP_WITHIN
            ));
        }
        info!("upgrade: the new tunnel is up");
    }
    let shared = Shared {
        metrics: metrics.clone(),
        abort: abort_rx,
        epoch: std::time::Instant::now(),
        sample_legs: settings.metrics.is_some(),
        tunnel: tunnel_client,
        splice_ok: splice_ok.clone(),
        rates: Arc::new(crate::client_rate::ClientRates::new(metrics.clone())),
    };
    let reserve = std::fs::File::open("/dev/null").ok();
    let adm = Arc::new(Admission {
        settings: RwLock::new(Arc::new(settings.clone())),
        per_client: Mutex::new(HashMap::new()),
        metrics: metrics.clone(),
        reserve: Mutex::new(reserve),
        base_fds: net::open_fds(),
    });
    metrics
        .max_connections
        .store(settings.max_connections as u64, Relaxed);
    metrics
        .memory_budget
        .store(settings.memory_budget.unwrap_or(0), Relaxed);
    metrics
        .tunnel
        .configured
        .store(i64::from(settings.tunnel.is_some()), Relaxed);
    let mut accepts = Vec::new();
    use std::os::fd::AsRawFd;
    let listener_fds: Vec<_> = listeners.iter().map(|l| l.as_raw_fd()).collect();
    let metrics_fd = metrics_listener.as_ref().map(|l| l.as_raw_fd());
    for l in listeners {
        let l = TcpListener::from_std(l).map_err(|e| format!("listener: {e}"))?;
        accepts.push(tokio::spawn(accept_loop(l, adm.clone(), shared.clone())));
    }
    let metrics_task = match metrics_listener {
        Some(l) => {
            let l = TcpListener::from_std(l).map_err(|e| format!("metrics: {e}"))?;
            Some(tokio::spawn(crate::metrics::serve(l, metrics.clone())))
        }
        None => None,
    };
    match settings.tunnel.as_ref().map(|t| (t.role, t.listen)) {
        Some((tunnel::Role::SplitEnd, listen)) => {
            info!(?listen, "split-end running: serving the tunnel")
        }
        Some((tunnel::Role::SplitStart, _)) => info!(
            port = settings.port,
            max_connections = settings.max_connections,
            "split-start running: intercepted connections go over the tunnel"
        ),
        None => info!(
            port = settings.port,
            max_connections = settings.max_connections,
            "proxy running"
        ),
    }
    // Accepting on the handed listeners: the old process may stop.
    let took_over = upgrade.received.is_some();
    if let Some(r) = upgrade.received.take() {
        if let Err(e) = r.ready() {
            not_ours(&upgrade);
            return Err(e);
        }
    }
    let _upgrade_server = match &opts.upgrade_socket {
        Some(path) => match crate::upgrade::bind(path, took_over) {
            Ok(unix) => {
                let ctl = upgrade.ctl.clone();
                Some(crate::upgrade::serve(
                    unix,
                    path.clone(),
                    listener_fds,
                    metrics_fd,
                    crate::upgrade::Owned {
                        rules: opts.install_rules,
                        tw_restore: upgrade.tw_restore.clone(),
                    },
                    move |pid| {
                        let _ = ctl.send(Control::HandedOver(pid));
                    },
                ))
            }
            Err(e) => {
                warn!("{e}: upgrades will drop connections (restart only)");
                None
            }
        },
        None => None,
    };
    // Listeners accept and the metrics serve: ready. The watchdog is fed
    // from the runtime itself, so a runtime that stops turning stops it.
    // A process that took over was named the main process by the old one
    // (below); its READY=1 changes nothing then, and says it is up.
    notifier.notify("READY=1");
    let watchdog = notifier.watchdog_every.map(|every| {
        let n = notifier.clone();
        tokio::spawn(async move {
            loop {
                n.notify("WATCHDOG=1");
                tokio::time::sleep(every).await;
            }
        })
    });
    loop {
        let ev = tokio::select! {
            c = ctl.recv() => c.unwrap_or(Control::Stop),
            e = async { match sig.as_mut() { Some(s) => s.next().await, None => std::future::pending().await } } => e,
        };
        match ev {
            Control::Stop => break,
            Control::HandedOver(pid) => {
                upgrade.handed.store(true, Relaxed);
                // The successor feeds the watchdog now: our pings would
                // hide its runtime stopping while we drain. Naming it the
                // main process comes before our exit can (see
                // crate::upgrade).
                if let Some(t) = &watchdog {
                    t.abort();
                }
                if let Some(pid) = pid {
                    notifier.notify(&format!("MAINPID={pid}"));
                }
                break;
            }
            Control::Upgrade => start_upgrade(opts.upgrade_command.as_deref()),
            Control::Reload(new) => apply_reload(&adm, *new, &opts, &splice_ok),
        }
    }
    let handed = upgrade.handed.load(Relaxed);
    // Drain: no new connections (closing the listeners makes the kernel
    // reset new SYNs), existing ones get drain_timeout to finish.
    for a in &accepts {
        a.abort();
    }
    let drain = adm.settings().drain_timeout;
    let active = metrics.active.load(Relaxed);
    info!(active, ?drain, handed, "draining");
    if handed {
        // The successor serves the metrics and is the main process.
        if let Some(t) = &metrics_task {
            t.abort();
        }
    } else {
        notifier.notify("STOPPING=1");
    }
    let t0 = tokio::time::Instant::now();
    while metrics.active.load(Relaxed) > 0 && t0.elapsed() < drain {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left = metrics.active.load(Relaxed);
    if left > 0 {
        warn!(left, "drain timeout: resetting remaining connections");
        let _ = abort_tx.send(true);
        let t1 = tokio::time::Instant::now();
        while metrics.active.load(Relaxed) > 0 && t1.elapsed() < Duration::from_secs(2) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    if let Some(t) = metrics_task {
        t.abort();
    }
    if let Some(t) = watchdog {
        t.abort();
    }
    if let Some(t) = tunnel_task {
        t.abort();
    }
    info!("stopped");
    Ok(())
}

/// A process taking over that fails before it said READY: the rules and
/// the sysctl are still the running proxy's, not this one's to undo at
/// exit (as after a hand-over).
fn not_ours(u: &UpgradeState) {
    u.handed.store(true, Relaxed);
}

/// Starts the new binary (SIGUSR2); it takes over when ready, and until
/// then nothing changes here.
fn start_upgrade(cmd: Option<&[std::ffi::OsString]>) {
    let Some((exe, args)) = cmd.and_then(|c| c.split_first()) else {
        warn!("SIGUSR2: no upgrade command (run with an upgrade socket from `pep proxy run`)");
        return;
    };
    match std::process::Command::new(exe).args(args).spawn() {
        Ok(c) => info!(pid = c.id(), exe = ?exe, "upgrade: started the new binary"),
        Err(e) => error!(exe = ?exe, "upgrade: starting the new binary: {e}"),
    }
}

fn apply_reload(
    adm: &Arc<Admission>,
    new: Settings,
    opts: &StartOptions,
    splice_ok: &std::sync::atomic::AtomicBool,
) {
    let old = adm.settings();
    if new.port != old.port
        || new.ipv6 != old.ipv6
        || new.metrics != old.metrics
        || new.user != old.user
        || new.tunnel != old.tunnel
        || new.client_leg.mss != old.client_leg.mss
        || new.out_mark != old.out_mark
        || new.copy_dscp != old.copy_dscp
        || new.fast_open != old.fast_open
    {
        warn!("reload: proxy.port, proxy.ipv6, proxy.metrics, proxy.user, client_leg.mss, proxy.copy_dscp, proxy.fast_open and intercept.out_mark (set on the listeners) and [tunnel] need a restart; keeping the old values");
    }
    let new = Settings {
        port: old.port,
        ipv6: old.ipv6,
        metrics: old.metrics,
        user: old.user.clone(),
        tunnel: old.tunnel.clone(),
        client_leg: config::LegOptions {
            mss: old.client_leg.mss,
            ..new.client_leg
        },
        out_mark: old.out_mark,
        copy_dscp: old.copy_dscp,
        fast_open: old.fast_open,
        ..new
    };
    let new = match preflight(&new)
        .and_then(|()| fit_descriptors(new, net::nofile_limit(), adm.base_fds))
    {
        Ok(s) => s,
        Err(e) => {
            adm.metrics.reload_errors.fetch_add(1, Relaxed);
            error!("reload refused: {e}");
            return;
        }
    };
    if opts.install_rules
        && (rules::nft_script(&new) != rules::nft_script(&old)
            || rules::window_routes(&new) != rules::window_routes(&old))
    {
        if let Err(e) = rules::install(&new) {
            adm.metrics.reload_errors.fetch_add(1, Relaxed);
            error!("reload: rules: {e}; restoring the old rules");
            let _ = rules::install(&old);
            return;
        }
    }
    splice_ok.store(splice_usable(&new), Relaxed);
    adm.metrics
        .max_connections
        .store(new.max_connections as u64, Relaxed);
    adm.metrics
        .memory_budget
        .store(new.memory_budget.unwrap_or(0), Relaxed);
    *adm.settings.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(new);
    adm.metrics.reloads.fetch_add(1, Relaxed);
    info!("configuration reloaded");
}

struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    usr2: tokio::signal::unix::Signal,
    path: Option<PathBuf>,
    metrics: Arc<Metrics>,
}

impl Signals {
    fn new(path: Option<PathBuf>, metrics: Arc<Metrics>) -> Result<Signals, String> {
        use tokio::signal::unix::{signal, SignalKind};
        let s = |k| signal(k).map_err(|e| format!("signal handler: {e}"));
        Ok(Signals {
            term: s(SignalKind::terminate())?,
            int: s(SignalKind::interrupt())?,
            hup: s(SignalKind::hangup())?,
            usr2: s(SignalKind::user_defined2())?,
            path,
            metrics,
        })
    }

    async fn next(&mut self) -> Control {
        loop {
            tokio::select! {
                _ = self.term.recv() => return Control::Stop,
                _ = self.int.recv() => return Control::Stop,
                _ = self.usr2.recv() => return Control::Upgrade,
                _ = self.hup.recv() => {
                    let Some(p) = self.path.clone() else {
                        warn!("SIGHUP: no config file to reload");
                        continue;
                    };
                    match config::load(&p) {
                        Ok(s) => return Control::Reload(Box::new(s)),
                        Err(e) => {
                            self.metrics.reload_errors.fetch_add(1, Relaxed);
                            error!("reload refused: {e}");
                        }
                    }
                }
            }
        }
    }
}

/// Runs in the foreground until SIGTERM/SIGINT, reloading `path` on SIGHUP.
pub fn run_foreground(settings: Settings, opts: StartOptions) -> Result<(), String> {
    Daemon::start(settings, opts)?.wait()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_and_run_refuse_an_interface_this_host_lacks() {
        let with = |i: &str| {
            config::parse(
                &format!(
                    "[intercept]\ninterfaces = [\"lo\", \"{i}\"]\nsubnets = [\"10.0.0.0/8\"]\n"
                ),
                "f",
            )
            .unwrap()
        };
        assert_eq!(preflight(&with("lo")), Ok(()));
        let e = preflight(&with("pepnosuch0")).unwrap_err();
        assert_eq!(
            e,
            "intercept.interfaces[1]: no interface named \"pepnosuch0\" on this host"
        );
    }

    #[test]
    fn max_connections_is_lowered_to_what_the_descriptors_hold() {
        let with = |relay: &str| {
            config::parse(
                &format!(
                    "[proxy]\nrelay = \"{relay}\"\n[intercept]\ninterfaces = [\"lo\"]\nsubnets = [\"10.0.0.0/8\"]\n"
                ),
                "f",
            )
            .unwrap()
        };
        // The case: a 20,000 limit and splice's six a connection
        // fit 3,314 of the default 10,000 (with 100 open and the slack).
        let s = fit_descriptors(with("splice"), 20_000, 100).unwrap();
        assert_eq!(s.max_connections, (20_000 - 100 - FD_SLACK as usize) / 6);
        assert!(s.max_per_client <= s.max_connections);
        // Copying takes two: 10,000 fit, nothing lowered.
        let s = fit_descriptors(with("copy"), 20_164, 100).unwrap();
        assert_eq!(s.max_connections, 10_000);
        let e = fit_descriptors(with("splice"), 160, 100).unwrap_err();
        assert!(e.contains("fits no connection"), "{e}");
    }
}
