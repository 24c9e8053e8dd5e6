//! `pep.toml`: what the operator writes, and its validation into
//! [`Settings`]. Unknown fields and wrong types are errors from the TOML
//! reader (with line and key); every value check names its field.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::net::Cidr;
use crate::units::{parse_bytes, parse_duration, parse_rate};

/// The share of `memory_budget` one client address may hold by default:
/// enough for a busy host, while three others still find room.
pub const DEFAULT_CLIENT_SHARE_PERCENT: u64 = 25;

/// A TCP socket's own structures in the kernel, counted per leg against
/// `memory_budget` beside its buffers (about 2.5 KB on Linux 6; rounded up).
pub const SOCKET_OVERHEAD: u64 = 4096;

/// `proxy.relay` when unset: splice moved a bulk transfer with less CPU
/// than copying in the benchmark (docs/daemon.md, "Zero-copy relay").
pub const DEFAULT_RELAY: RelayMode = RelayMode::Splice;

/// `client_leg.user_timeout` and `server_leg.user_timeout` when unset: a
/// peer whose link died with data in flight is given up after this,
/// instead of after `idle_timeout` (keepalive does not probe while data
/// is unacknowledged). Long enough for a satellite hop's retransmissions.
pub const DEFAULT_USER_TIMEOUT: Duration = Duration::from_secs(60);

/// The annotated default configuration (`pep proxy default-config`).
pub const EXAMPLE: &str = include_str!("../pep.example.toml");

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: {msg}")]
    Parse { file: String, msg: String },
    #[error("{file}: {field}: {msg}")]
    Field {
        file: String,
        field: String,
        msg: String,
    },
    #[error("{file}: {msg}")]
    Io { file: String, msg: String },
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    proxy: RawProxy,
    #[serde(default)]
    intercept: RawIntercept,
    #[serde(default)]
    client_leg: RawLeg,
    #[serde(default)]
    server_leg: RawLeg,
    #[serde(default)]
    route: Vec<RawRoute>,
    tunnel: Option<RawTunnel>,
    packet: Option<crate::packet::config::RawPacket>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTunnel {
    role: Option<String>,
    peer: Option<String>,
    listen: Option<String>,
    cert: Option<String>,
    key: Option<String>,
    peer_cert: Option<String>,
    cc: Option<String>,
    flow_window: Option<String>,
    keepalive: Option<String>,
    dead_after: Option<String>,
    allow: Option<Vec<String>>,
    local_queue: Option<RawLocalQueue>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLocalQueue {
    policy: Option<String>,
    limit: Option<i64>,
    buffer_start: Option<String>,
    check_interval: Option<String>,
    rate: Option<String>,
    min_th: Option<i64>,
    max_th: Option<i64>,
    nfqueue: Option<i64>,
    stall_after: Option<String>,
    per_flow: Option<i64>,
}

fn local_queue(q: &RawLocalQueue) -> FieldResult<crate::tunnel::localq::LocalQueueSettings> {
    use crate::tunnel::localq::{LocalQueueSettings, LqPolicy};
    const F: &str = "tunnel.local_queue";
    let limit = int_in(&format!("{F}.limit"), q.limit, 1000, 2, 100_000)? as u32;
    let min_th = q
        .min_th
        .map(|v| int_in(&format!("{F}.min_th"), Some(v), 0, 1, limit as i64 - 1))
        .transpose()?;
    let max_th = q
        .max_th
        .map(|v| int_in(&format!("{F}.max_th"), Some(v), 0, 2, limit as i64))
        .transpose()?;
    let policy = match q.policy.as_deref().unwrap_or("red") {
        "red" => {
            match (min_th, max_th) {
                (None, Some(_)) => {
                    return Err((
                        format!("{F}.max_th"),
                        "set min_th too (or neither: ns-2's automatic thresholds)".into(),
                    ))
                }
                (Some(a), Some(b)) if b <= a => {
                    return Err((
                        format!("{F}.max_th"),
                        format!("{b} must exceed min_th ({a})"),
                    ))
                }
                _ => {}
            }
            LqPolicy::Red {
                min_th: min_th.map(|v| v as u32),
                max_th: max_th.map(|v| v as u32),
            }
        }
        p @ ("droptail" | "drop-tail" | "fair") => {
            if min_th.is_some() || max_th.is_some() {
                return Err((
                    format!("{F}.policy"),
                    "min_th and max_th are RED's: set policy = \"red\" or remove them".into(),
                ));
            }
            if p == "fair" {
                let per_flow = int_in(
                    &format!("{F}.per_flow"),
                    q.per_flow,
                    100.min(limit as i64),
                    1,
                    limit as i64,
                )?;
                LqPolicy::Fair {
                    per_flow: per_flow as u32,
                }
            } else {
                LqPolicy::DropTail
            }
        }
        other => {
            return Err((
                format!("{F}.policy"),
                format!("{other:?}: expected \"red\", \"droptail\" or \"fair\""),
            ))
        }
    };
    if q.per_flow.is_some() && !matches!(policy, LqPolicy::Fair { .. }) {
        return Err((
            format!("{F}.per_flow"),
            "is the fair policy's: set policy = \"fair\" or remove it".into(),
        ));
    }
    let buffer_start = match &q.buffer_start {
        Some(b) => field(&format!("{F}.buffer_start"), parse_bytes(b))?,
        None => 200 * 1040,
    };
    if !(3000..=1 << 30).contains(&buffer_start) {
        return Err((
            format!("{F}.buffer_start"),
            format!("{buffer_start} B is not within 3000 B (two packets) .. 1 GiB"),
        ));
    }
    let check_interval = field(
        &format!("{F}.check_interval"),
        parse_duration(q.check_interval.as_deref().unwrap_or("1ms")),
    )?;
    if check_interval.is_zero() || check_interval > Duration::from_secs(1) {
        return Err((
            format!("{F}.check_interval"),
            "must be within (0, 1s]".into(),
        ));
    }
    let rate = field(
        &format!("{F}.rate"),
        parse_rate(q.rate.as_deref().unwrap_or("100Mbps")),
    )?;
    if rate < 1000 {
        return Err((format!("{F}.rate"), format!("{rate} bit/s is too low")));
    }
    let nfqueue = int_in(&format!("{F}.nfqueue"), q.nfqueue, 4433, 0, 65535)? as u16;
    let stall_after = field(
        &format!("{F}.stall_after"),
        parse_duration(q.stall_after.as_deref().unwrap_or("200ms")),
    )?;
    if stall_after < check_interval {
        return Err((
            format!("{F}.stall_after"),
            "must be at least check_interval".into(),
        ));
    }
    Ok(LocalQueueSettings {
        policy,
        limit,
        buffer_start,
        check_interval,
        rate,
        nfqueue,
        stall_after,
    })
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProxy {
    port: Option<i64>,
    ipv6: Option<bool>,
    max_connections: Option<i64>,
    max_per_client: Option<i64>,
    buffer: Option<RawSize>,
    idle_timeout: Option<String>,
    connect_timeout: Option<String>,
    drain_timeout: Option<String>,
    keep_client_source: Option<bool>,
    reuse_time_wait: Option<bool>,
    copy_dscp: Option<bool>,
    fast_open: Option<bool>,
    memory_budget: Option<String>,
    memory_per_client: Option<String>,
    client_rate: Option<String>,
    workers: Option<i64>,
    metrics: Option<String>,
    user: Option<String>,
    relay: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIntercept {
    interfaces: Option<Vec<String>>,
    subnets: Option<Vec<String>>,
    bypass: Option<Vec<String>>,
    tproxy_mark: Option<i64>,
    out_mark: Option<i64>,
    table: Option<i64>,
    out_table: Option<i64>,
    backend: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLeg {
    cc: Option<String>,
    sndbuf: Option<String>,
    rcvbuf: Option<String>,
    max_pacing_rate: Option<String>,
    pacing: Option<bool>,
    shape_rate: Option<String>,
    shape_burst: Option<String>,
    nodelay: Option<bool>,
    keepalive: Option<String>,
    user_timeout: Option<String>,
    mss: Option<RawMss>,
    initcwnd: Option<i64>,
    initrwnd: Option<i64>,
}

/// A size: `buffer = 65536` (bytes) or `buffer = "64KiB"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum RawSize {
    Bytes(i64),
    Text(String),
}

impl RawSize {
    /// The text [`parse_bytes`] reads: an integer is a count of bytes.
    fn text(&self) -> String {
        match self {
            RawSize::Bytes(n) => n.to_string(),
            RawSize::Text(t) => t.clone(),
        }
    }
}

/// `mss = 1360` or `mss = "auto"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum RawMss {
    Bytes(i64),
    Word(String),
}

/// A leg's MSS clamp (`TCP_MAXSEG`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mss {
    /// At most this many bytes per segment (TCP options included, as
    /// advertised in the SYN).
    Fixed(u32),
    /// Server legs: the MSS the client leg negotiated (the client's own,
    /// clamped by its path and `client_leg.mss`), so the server sends no
    /// larger segments than the client would have received end to end.
    Auto,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    dst: String,
    relay: Option<String>,
    initcwnd: Option<i64>,
    initrwnd: Option<i64>,
    #[serde(default)]
    client_leg: RawLeg,
    #[serde(default)]
    server_leg: RawLeg,
}

/// Socket settings of one leg. `None` leaves the kernel's default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LegOptions {
    /// `TCP_CONGESTION`: any name the kernel offers.
    pub cc: Option<String>,
    pub sndbuf: Option<usize>,
    pub rcvbuf: Option<usize>,
    /// `SO_MAX_PACING_RATE`, bits per second (the kernel takes bytes).
    pub max_pacing_rate: Option<u64>,
    /// The kernel's own pacing at cwnd/srtt (`SO_MAX_PACING_RATE` set to
    /// a finite cap turns it on; see [`crate::net::apply_leg`]).
    pub pacing: Option<bool>,
    /// The relay's token bucket on the bytes it writes into this leg
    /// ([`crate::shape`]).
    pub shape: Option<LegShape>,
    pub nodelay: Option<bool>,
    /// `SO_KEEPALIVE` with this idle time.
    pub keepalive: Option<Duration>,
    /// `TCP_USER_TIMEOUT`: how long sent data may stay unacknowledged
    /// before the leg is given up (zero: the kernel's retransmission
    /// limits, about 15 minutes). [`DEFAULT_USER_TIMEOUT`] on both legs.
    pub user_timeout: Option<Duration>,
    /// `TCP_MAXSEG`: MSS clamp where this leg's path has a smaller MTU.
    pub mss: Option<Mss>,
}

impl LegOptions {
    /// `over` wins field by field.
    pub fn merged(&self, over: &LegOptions) -> LegOptions {
        LegOptions {
            cc: over.cc.clone().or_else(|| self.cc.clone()),
            sndbuf: over.sndbuf.or(self.sndbuf),
            rcvbuf: over.rcvbuf.or(self.rcvbuf),
            max_pacing_rate: over.max_pacing_rate.or(self.max_pacing_rate),
            pacing: over.pacing.or(self.pacing),
            shape: over.shape.or(self.shape),
            nodelay: over.nodelay.or(self.nodelay),
            keepalive: over.keepalive.or(self.keepalive),
            user_timeout: over.user_timeout.or(self.user_timeout),
            mss: over.mss.or(self.mss),
        }
    }
}

/// `shape_rate` and `shape_burst` of a leg.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LegShape {
    /// Bits per second on the wire (each segment's headers counted).
    pub rate: u64,
    /// The bucket's depth in bytes; `None`: two of the leg's segments.
    pub burst: Option<u64>,
}

/// The lowest `shape_rate` a leg takes, bits per second.
pub const MIN_SHAPE_RATE: u64 = 8_000;

/// How a connection's bytes move between its legs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelayMode {
    /// splice(2) through a pipe per direction: no copy through user memory.
    Splice,
    /// read(2)/write(2) through the relay's own buffer.
    Copy,
}

impl RelayMode {
    pub fn name(self) -> &'static str {
        match self {
            RelayMode::Splice => "splice",
            RelayMode::Copy => "copy",
        }
    }
}

fn relay_mode(name: &str, v: &Option<String>) -> FieldResult<Option<RelayMode>> {
    match v.as_deref() {
        None => Ok(None),
        Some("splice") => Ok(Some(RelayMode::Splice)),
        Some("copy") => Ok(Some(RelayMode::Copy)),
        Some(o) => Err((
            name.into(),
            format!("{o:?}: expected \"splice\" or \"copy\""),
        )),
    }
}

/// Per-destination overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub dst: Cidr,
    /// Overrides `proxy.relay` for this destination.
    pub relay: Option<RelayMode>,
    /// Initial congestion window of server legs to this subnet, segments
    /// (the route attribute, installed with the rules).
    pub initcwnd: Option<u32>,
    /// Initial receive window they advertise, segments.
    pub initrwnd: Option<u32>,
    pub client_leg: LegOptions,
    pub server_leg: LegOptions,
}

/// Initial windows of a leg, segments (route attributes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InitWindows {
    pub initcwnd: Option<u32>,
    pub initrwnd: Option<u32>,
}

impl InitWindows {
    pub fn is_set(&self) -> bool {
        self.initcwnd.is_some() || self.initrwnd.is_some()
    }
}

/// Which firewall tool `pep proxy rules` writes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Nft,
    Iptables,
}

/// A validated configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The TPROXY target port, listened on `0.0.0.0` (and `[::]`).
    pub port: u16,
    pub ipv6: bool,
    pub max_connections: usize,
    pub max_per_client: usize,
    /// Bytes buffered per direction per connection.
    pub buffer: usize,
    /// How bytes move between the legs (per destination: [`Route::relay`]).
    pub relay: RelayMode,
    pub idle_timeout: Option<Duration>,
    pub connect_timeout: Duration,
    pub drain_timeout: Duration,
    /// Open the server leg from the client's address (`IP_TRANSPARENT`
    /// bind), so servers see the real client.
    pub keep_client_source: bool,
    /// Set `net.ipv4.tcp_tw_reuse = 1` in the daemon's namespace while it
    /// runs, so server legs take ports whose earlier legs wait in
    /// TIME_WAIT (docs/daemon.md, "Source ports").
    pub reuse_time_wait: bool,
    /// Copy the DSCP of the client's SYN to the server leg (`IP_TOS` /
    /// `IPV6_TCLASS`), so the network past the proxy keeps the client's
    /// marking.
    pub copy_dscp: bool,
    /// TCP Fast Open: the listener takes data in the client's SYN, and a
    /// server leg whose client bytes are already queued at accept sends
    /// them in its own SYN (docs/daemon.md, "Fast Open").
    pub fast_open: bool,
    /// Bytes all connections may hold at most, relay buffers and kernel
    /// socket buffers together ([`Settings::connection_memory`]); `None`:
    /// unbounded.
    pub memory_budget: Option<u64>,
    /// Bytes of `memory_budget` the connections of one client address may
    /// hold together (`proxy.memory_per_client`, a share of the budget or
    /// a size; default [`DEFAULT_CLIENT_SHARE_PERCENT`] %). `None` without
    /// a budget.
    pub memory_per_client: Option<u64>,
    /// Bits per second each client address may move each way, all its
    /// connections together ([`crate::client_rate`]); `None`: no cap.
    pub client_rate: Option<u64>,
    pub workers: usize,
    pub metrics: Option<std::net::SocketAddr>,
    /// Two-node mode (`[tunnel]`): this node's end of the tunnel.
    pub tunnel: Option<crate::tunnel::TunnelSettings>,
    /// Become this user after setup, keeping only the capabilities the
    /// proxy still needs ([`crate::privileges`]).
    pub user: Option<crate::privileges::RunAs>,
    pub interfaces: Vec<String>,
    /// Client source subnets that are intercepted; nothing else is relayed.
    pub subnets: Vec<Cidr>,
    /// Destinations never intercepted (fail-open: routed as without a PEP).
    pub bypass: Vec<Cidr>,
    pub tproxy_mark: u32,
    /// `SO_MARK` of server legs, so they are never intercepted again.
    pub out_mark: u32,
    pub table: u32,
    /// Policy routing table the server legs' `out_mark` selects, holding
    /// the routes with `initcwnd`/`initrwnd` (only when a route sets one).
    pub out_table: u32,
    pub backend: Backend,
    pub client_leg: LegOptions,
    pub server_leg: LegOptions,
    /// `client_leg.initcwnd`/`initrwnd`: routes to `subnets` in
    /// `out_table` (the listeners carry `out_mark`, so client legs use it).
    pub client_windows: InitWindows,
    pub routes: Vec<Route>,
    /// Packet mode (`[packet]`): a bump in the wire between two interfaces.
    pub packet: Option<crate::packet::PacketSettings>,
}

impl Settings {
    /// Leg options for a destination: the defaults, overridden by the most
    /// specific matching route.
    pub fn legs_for(&self, dst: IpAddr) -> (LegOptions, LegOptions) {
        match self.route_for(dst) {
            Some(r) => (
                self.client_leg.merged(&r.client_leg),
                self.server_leg.merged(&r.server_leg),
            ),
            None => (self.client_leg.clone(), self.server_leg.clone()),
        }
    }

    /// The legs of a connection to `dst` as they are opened: under a
    /// `memory_budget`, a socket buffer the leg does not set is clamped to
    /// `proxy.buffer` (the kernel's autotuning would otherwise grow it to
    /// `tcp_wmem`/`tcp_rmem`'s maximum, 4 and 6 MB by default).
    pub fn legs_opened(&self, dst: IpAddr) -> (LegOptions, LegOptions) {
        let (mut c, mut s) = self.legs_for(dst);
        if self.memory_budget.is_some() {
            for l in [&mut c, &mut s] {
                l.sndbuf.get_or_insert(self.buffer);
                l.rcvbuf.get_or_insert(self.buffer);
            }
        }
        (c, s)
    }

    /// What a connection to `dst` counts against `memory_budget`: its two
    /// relay buffers (or pipes) of `proxy.buffer`, each leg's send and
    /// receive buffer as clamped, twice (the kernel doubles `SO_SNDBUF`
    /// and `SO_RCVBUF` for its bookkeeping and fills up to that), and
    /// [`SOCKET_OVERHEAD`] per socket. `None` without a budget.
    pub fn connection_memory(&self, dst: IpAddr) -> Option<u64> {
        self.memory_budget?;
        let (c, s) = self.legs_opened(dst);
        let leg = |l: &LegOptions| {
            2 * (l.sndbuf.unwrap_or(self.buffer) + l.rcvbuf.unwrap_or(self.buffer)) as u64
                + SOCKET_OVERHEAD
        };
        Some(2 * self.buffer as u64 + leg(&c) + leg(&s))
    }

    fn route_for(&self, dst: IpAddr) -> Option<&Route> {
        self.routes
            .iter()
            .filter(|r| r.dst.contains(dst))
            .max_by_key(|r| r.dst.prefix)
    }

    /// The relay of connections to `dst`: the most specific route that
    /// sets one, else `proxy.relay`.
    pub fn relay_for(&self, dst: IpAddr) -> RelayMode {
        self.routes
            .iter()
            .filter(|r| r.relay.is_some() && r.dst.contains(dst))
            .max_by_key(|r| r.dst.prefix)
            .and_then(|r| r.relay)
            .unwrap_or(self.relay)
    }

    /// Whether any connection may relay with splice.
    pub fn uses_splice(&self) -> bool {
        self.relay == RelayMode::Splice
            || self
                .routes
                .iter()
                .any(|r| r.relay == Some(RelayMode::Splice))
    }

    /// Descriptors one connection holds at most: its two sockets, and two
    /// pipes when it splices.
    pub fn fds_per_connection(&self) -> u64 {
        2 + if self.uses_splice() {
            crate::splice::FDS_PER_CONNECTION
        } else {
            0
        }
    }

    pub fn intercepts_client(&self, src: IpAddr) -> bool {
        self.subnets.iter().any(|c| c.contains(src))
    }

    /// Settings this configuration's mode does not use, one note each:
    /// `check` prints them and `run` logs them, so a section copied from
    /// another node's file does not pass for one that acts.
    pub fn unused(&self) -> Vec<String> {
        use crate::tunnel::Role;
        let mut v = Vec::new();
        let role = self.tunnel.as_ref().map(|t| t.role);
        if role == Some(Role::SplitEnd) && !self.interfaces.is_empty() {
            v.push(
                "intercept.interfaces and intercept.subnets: split-end intercepts nothing \
                 (its flows arrive through the tunnel)"
                    .into(),
            );
        }
        if let (Some(Role::SplitStart), Some(t)) = (role, &self.tunnel) {
            if t.listen.is_some() || !t.allow.is_empty() {
                v.push("tunnel.listen and tunnel.allow: only split-end uses them".into());
            }
        }
        v
    }

    /// Every congestion control name the configuration uses.
    pub fn cc_names(&self) -> Vec<(String, String)> {
        let mut v = Vec::new();
        let mut add = |field: String, o: &LegOptions| {
            if let Some(cc) = &o.cc {
                v.push((field, cc.clone()));
            }
        };
        add("client_leg.cc".into(), &self.client_leg);
        add("server_leg.cc".into(), &self.server_leg);
        for (i, r) in self.routes.iter().enumerate() {
            add(format!("route[{i}].client_leg.cc"), &r.client_leg);
            add(format!("route[{i}].server_leg.cc"), &r.server_leg);
        }
        v
    }
}

/// Reads and validates a config file.
pub fn load(path: &Path) -> Result<Settings, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io {
        file: file.clone(),
        msg: e.to_string(),
    })?;
    parse(&text, &file)
}

#[path = "config_pos.rs"]
mod pos;

/// Parses and validates config text; `file` names it in errors, with the
/// line and column of the field (`pep.toml:12:10: proxy.buffer: ...`).
pub fn parse(text: &str, file: &str) -> Result<Settings, ConfigError> {
    parse_at(text, file, true)
}

/// [`parse`]; `positions`: whether `text` is what the user wrote (not a
/// re-serialisation with overrides), so that positions mean something.
fn parse_at(text: &str, file: &str, positions: bool) -> Result<Settings, ConfigError> {
    let raw: Raw = toml::from_str(text).map_err(|e| {
        let at = match e.span().filter(|_| positions) {
            Some(s) => {
                let (l, c) = pos::line_col(text, s.start);
                format!("{file}:{l}:{c}")
            }
            None => file.to_string(),
        };
        ConfigError::Parse {
            file: at,
            msg: e.to_string().trim().to_string(),
        }
    })?;
    validate(raw).map_err(|(field, msg)| ConfigError::Field {
        file: if positions {
            pos::locate(file, text, &field)
        } else {
            file.to_string()
        },
        field,
        msg,
    })
}

/// Parses config text with command-line overrides applied on top: each is
/// a dotted key (`proxy.port`) and a TOML value (`7070`, `"bbr"`, `["eth1"]`).
pub fn parse_with(
    text: &str,
    file: &str,
    overrides: &[(String, String)],
) -> Result<Settings, ConfigError> {
    if overrides.is_empty() {
        // Keeps toml's line and column pointing into the file itself.
        return parse(text, file);
    }
    let perr = |msg: String| ConfigError::Parse {
        file: file.into(),
        msg,
    };
    let mut root: toml::Table =
        toml::from_str(text).map_err(|e| perr(e.to_string().trim().to_string()))?;
    for (key, value) in overrides {
        let v: toml::Table = toml::from_str(&format!("v = {value}"))
            .map_err(|e| perr(format!("--{key}: {value:?} is not a TOML value: {e}")))?;
        let Some(v) = v.get("v").cloned() else {
            continue;
        };
        let (section, name) = key.split_once('.').unwrap_or(("proxy", key));
        let t = root
            .entry(section.to_string())
            .or_insert_with(|| toml::Value::Table(Default::default()));
        match t {
            toml::Value::Table(t) => {
                t.insert(name.to_string(), v);
            }
            _ => return Err(perr(format!("{section} is not a table"))),
        }
    }
    parse_at(
        &toml::to_string(&root).map_err(|e| perr(e.to_string()))?,
        file,
        false,
    )
}

type FieldResult<T> = Result<T, (String, String)>;

fn tunnel(t: &RawTunnel) -> FieldResult<crate::tunnel::TunnelSettings> {
    use crate::tunnel::{Role, TlsFiles, TunnelCc, TunnelSettings};
    let role = match t.role.as_deref() {
        Some("split-start") => Role::SplitStart,
        Some("split-end") => Role::SplitEnd,
        Some(r) => {
            return Err((
                "tunnel.role".into(),
                format!("{r:?}: expected \"split-start\" or \"split-end\""),
            ))
        }
        None => return Err((
            "tunnel.role".into(),
            "missing: \"split-start\" (intercepts clients) or \"split-end\" (connects to servers)"
                .into(),
        )),
    };
    let addr = |name: &str, v: &Option<String>| -> FieldResult<Option<std::net::SocketAddr>> {
        v.as_deref()
            .map(|s| {
                field(
                    name,
                    s.parse()
                        .map_err(|e| format!("{s:?}: {e} (expected ip:port)")),
                )
            })
            .transpose()
    };
    let peer = addr("tunnel.peer", &t.peer)?;
    // Port 0 listens on a free port (tests read it back); a peer there
    // cannot be reached.
    if let (Some(a), Some(s)) = (peer, &t.peer) {
        if a.port() == 0 {
            return Err(("tunnel.peer".into(), format!("{s:?}: port 0 is not a port")));
        }
    }
    let listen = addr("tunnel.listen", &t.listen)?;
    match role {
        Role::SplitStart if peer.is_none() => {
            return Err((
                "tunnel.peer".into(),
                "split-start needs the split-end's address, ip:port".into(),
            ))
        }
        Role::SplitEnd if listen.is_none() => {
            return Err((
                "tunnel.listen".into(),
                "split-end needs the UDP address to listen on, ip:port".into(),
            ))
        }
        _ => {}
    }
    let path = |name: &str, v: &Option<String>| -> FieldResult<std::path::PathBuf> {
        v.as_deref().map(std::path::PathBuf::from).ok_or_else(|| {
            (
                name.to_string(),
                "missing (`pep proxy keygen` makes a key pair)".to_string(),
            )
        })
    };
    let cc = match t.cc.as_deref().unwrap_or("cubic-flows") {
        "cubic" => TunnelCc::Cubic,
        "cubic-flows" => TunnelCc::CubicFlows,
        "bbr" => TunnelCc::Bbr,
        "quinn-bbr" => TunnelCc::QuinnBbr,
        "newreno" | "reno" => TunnelCc::NewReno,
        other => {
            return Err((
                "tunnel.cc".into(),
                format!(
                    "{other:?}: the tunnel offers cubic, cubic-flows, bbr, quinn-bbr and newreno"
                ),
            ))
        }
    };
    let flow_window = match &t.flow_window {
        Some(w) => field("tunnel.flow_window", parse_bytes(w))?,
        None => 4 << 20,
    };
    if !(16 << 10..=1 << 30).contains(&flow_window) {
        return Err((
            "tunnel.flow_window".into(),
            format!("{flow_window} B is not within 16KiB..1GiB"),
        ));
    }
    let dur = |n: &str, v: &Option<String>, d: &str| -> FieldResult<Duration> {
        field(n, parse_duration(v.as_deref().unwrap_or(d)))
    };
    let keepalive = dur("tunnel.keepalive", &t.keepalive, "1s")?;
    let dead_after = dur("tunnel.dead_after", &t.dead_after, "5s")?;
    if keepalive.is_zero() || dead_after <= keepalive {
        return Err((
            "tunnel.dead_after".into(),
            "must exceed tunnel.keepalive, which must be positive".into(),
        ));
    }
    let allow = cidrs("tunnel.allow", &t.allow)?;
    if role == Role::SplitEnd && allow.is_empty() {
        return Err((
            "tunnel.allow".into(),
            "name the destination subnets split-end may connect to (it is never an open relay)"
                .into(),
        ));
    }
    let local_queue = t.local_queue.as_ref().map(local_queue).transpose()?;
    if local_queue.is_some() && role != Role::SplitStart {
        return Err((
            "tunnel.local_queue".into(),
            "only split-start has a local queue (in front of its intercepting stack)".into(),
        ));
    }
    Ok(TunnelSettings {
        local_queue,
        role,
        peer,
        listen,
        tls: TlsFiles {
            cert: path("tunnel.cert", &t.cert)?,
            key: path("tunnel.key", &t.key)?,
            peer_cert: path("tunnel.peer_cert", &t.peer_cert)?,
        },
        cc,
        flow_window: flow_window as u64,
        keepalive,
        dead_after,
        allow,
    })
}

fn field<T>(name: &str, r: Result<T, String>) -> FieldResult<T> {
    r.map_err(|m| (name.to_string(), m))
}

/// `proxy.memory_per_client`: `"25%"` of `memory_budget` or a size, at
/// most the budget. Without a budget there is nothing to share.
fn client_share(budget: Option<u64>, raw: Option<&str>) -> FieldResult<Option<u64>> {
    const KEY: &str = "proxy.memory_per_client";
    let Some(budget) = budget else {
        return match raw {
            Some(_) => Err((KEY.into(), "needs proxy.memory_budget".into())),
            None => Ok(None),
        };
    };
    let raw = raw.map(str::trim);
    let bytes = match raw {
        None => budget / 100 * DEFAULT_CLIENT_SHARE_PERCENT,
        Some(t) => match t.strip_suffix('%') {
            Some(pc) => {
                let pc: f64 = pc
                    .trim()
                    .parse()
                    .map_err(|_| (KEY.into(), format!("{t:?}: not a percentage")))?;
                if !(pc > 0.0 && pc <= 100.0) {
                    return Err((KEY.into(), format!("{t:?}: must be in (0%, 100%]")));
                }
                (budget as f64 * pc / 100.0) as u64
            }
            None => field(KEY, parse_bytes(t))?,
        },
    };
    if bytes == 0 || bytes > budget {
        return Err((
            KEY.into(),
            format!("{bytes} B is not in 1..={budget} (proxy.memory_budget)"),
        ));
    }
    Ok(Some(bytes))
}

fn int_in(name: &str, v: Option<i64>, default: i64, lo: i64, hi: i64) -> FieldResult<i64> {
    let v = v.unwrap_or(default);
    if v < lo || v > hi {
        return Err((name.into(), format!("{v} is not in {lo}..={hi}")));
    }
    Ok(v)
}

fn cidrs(name: &str, v: &Option<Vec<String>>) -> FieldResult<Vec<Cidr>> {
    let list: Vec<Cidr> = v
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, s)| field(&format!("{name}[{i}]"), s.parse::<Cidr>()))
        .collect::<FieldResult<_>>()?;
    // nft refuses overlapping intervals in one set, at run time.
    for (j, b) in list.iter().enumerate() {
        if let Some(i) = list[..j].iter().position(|a| a.overlaps(b)) {
            let msg = format!(
                "{:?} overlaps {name}[{i}] ({:?}): list each address once",
                v.as_ref().map_or("", |v| &v[j]),
                v.as_ref().map_or("", |v| &v[i])
            );
            return Err((format!("{name}[{j}]"), msg));
        }
    }
    Ok(list)
}

fn windows(prefix: &str, r: &RawLeg) -> FieldResult<InitWindows> {
    let w = |n: &str, v: Option<i64>| {
        v.map(|v| int_in(&format!("{prefix}.{n}"), Some(v), 0, 1, 1024).map(|v| v as u32))
            .transpose()
    };
    Ok(InitWindows {
        initcwnd: w("initcwnd", r.initcwnd)?,
        initrwnd: w("initrwnd", r.initrwnd)?,
    })
}

fn leg(prefix: &str, r: &RawLeg) -> FieldResult<LegOptions> {
    let f = |n: &str| format!("{prefix}.{n}");
    if prefix != "client_leg" && (r.initcwnd.is_some() || r.initrwnd.is_some()) {
        let n = if r.initcwnd.is_some() {
            "initcwnd"
        } else {
            "initrwnd"
        };
        return Err((
            f(n),
            "initial windows are route attributes: per destination subnet in a \
             [[route]] (route[k].initcwnd), or for all client subnets in [client_leg]"
                .into(),
        ));
    }
    let size = |n: &str, v: &Option<String>| -> FieldResult<Option<usize>> {
        v.as_deref()
            .map(|s| {
                let b = field(&f(n), parse_bytes(s))?;
                if !(1024..=1 << 30).contains(&b) {
                    return Err((f(n), format!("{s:?}: must be between 1KiB and 1GiB")));
                }
                Ok(b as usize)
            })
            .transpose()
    };
    if let Some(cc) = &r.cc {
        let ok = !cc.is_empty()
            && cc.len() < 16
            && cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !ok {
            return Err((f("cc"), format!("{cc:?} is not a congestion control name")));
        }
    }
    let mss = match &r.mss {
        None => None,
        Some(RawMss::Bytes(m)) => Some(Mss::Fixed(
            int_in(&f("mss"), Some(*m), 0, 536, 65_495)? as u32
        )),
        Some(RawMss::Word(w)) if w == "auto" => {
            if prefix.ends_with("client_leg") {
                return Err((
                    f("mss"),
                    "\"auto\" is for server legs (it copies the client leg's MSS); \
                     the client leg takes a number"
                        .into(),
                ));
            }
            Some(Mss::Auto)
        }
        Some(RawMss::Word(w)) => {
            return Err((
                f("mss"),
                format!("{w:?}: expected \"auto\" or a number of bytes"),
            ))
        }
    };
    Ok(LegOptions {
        cc: r.cc.clone(),
        sndbuf: size("sndbuf", &r.sndbuf)?,
        rcvbuf: size("rcvbuf", &r.rcvbuf)?,
        max_pacing_rate: r
            .max_pacing_rate
            .as_deref()
            .map(|s| {
                let bps = field(&f("max_pacing_rate"), parse_rate(s))?;
                if bps < 8 {
                    // The kernel takes bytes per second: 0 would mean unpaced.
                    let msg =
                        format!("{s:?}: at least 8bps (the kernel counts whole bytes per second)");
                    return Err((f("max_pacing_rate"), msg));
                }
                Ok(bps)
            })
            .transpose()?,
        pacing: r.pacing,
        shape: leg_shape(&f, r)?,
        nodelay: r.nodelay,
        keepalive: r
            .keepalive
            .as_deref()
            .map(|s| {
                let d = field(&f("keepalive"), parse_duration(s))?;
                // TCP_KEEPIDLE takes whole seconds, 1..=32767; the kernel
                // refuses anything else on every connection.
                if !(1..=32_767).contains(&d.as_secs()) || d.subsec_nanos() != 0 {
                    let msg = format!("{s:?}: whole seconds from 1s to 32767s (TCP_KEEPIDLE)");
                    return Err((f("keepalive"), msg));
                }
                Ok(d)
            })
            .transpose()?,
        user_timeout: r
            .user_timeout
            .as_deref()
            .map(|s| {
                let d = field(&f("user_timeout"), parse_duration(s))?;
                // The kernel takes milliseconds in an int.
                if d.as_millis() > i32::MAX as u128 || d.subsec_nanos() % 1_000_000 != 0 {
                    let msg = format!("{s:?}: whole milliseconds up to 24 days (TCP_USER_TIMEOUT)");
                    return Err((f("user_timeout"), msg));
                }
                Ok(d)
            })
            .transpose()?,
        mss,
    })
}

/// `shape_rate` and `shape_burst`, validated: a positive rate of at least
/// [`MIN_SHAPE_RATE`], a burst only with a rate, within 1 KiB .. 1 GiB.
fn leg_shape(f: &dyn Fn(&str) -> String, r: &RawLeg) -> FieldResult<Option<LegShape>> {
    let burst = r
        .shape_burst
        .as_deref()
        .map(|s| {
            let b = field(&f("shape_burst"), parse_bytes(s))?;
            if !(1024..=1 << 30).contains(&b) {
                return Err((
                    f("shape_burst"),
                    format!("{s:?}: must be between 1KiB and 1GiB"),
                ));
            }
            Ok(b)
        })
        .transpose()?;
    let Some(rate) = r.shape_rate.as_deref() else {
        if burst.is_some() {
            return Err((f("shape_burst"), "needs shape_rate".into()));
        }
        return Ok(None);
    };
    let bps = field(&f("shape_rate"), parse_rate(rate))?;
    if bps < MIN_SHAPE_RATE {
        let msg = format!("{rate:?}: at least {}kbps", MIN_SHAPE_RATE / 1000);
        return Err((f("shape_rate"), msg));
    }
    Ok(Some(LegShape { rate: bps, burst }))
}

/// A top-level leg: [`leg`] with the defaults routes do not repeat.
fn default_leg(prefix: &str, r: &RawLeg) -> FieldResult<LegOptions> {
    let mut l = leg(prefix, r)?;
    l.user_timeout.get_or_insert(DEFAULT_USER_TIMEOUT);
    Ok(l)
}

fn validate(raw: Raw) -> FieldResult<Settings> {
    let p = &raw.proxy;
    let dur = |n: &str, v: &Option<String>, d: &str| -> FieldResult<Duration> {
        field(n, parse_duration(v.as_deref().unwrap_or(d)))
    };
    let max_connections = int_in(
        "proxy.max_connections",
        p.max_connections,
        10_000,
        1,
        1 << 22,
    )?;
    let max_per_client = int_in(
        "proxy.max_per_client",
        p.max_per_client,
        max_connections,
        1,
        max_connections,
    )?;
    let buffer = field(
        "proxy.buffer",
        parse_bytes(&p.buffer.as_ref().map_or("4MiB".into(), RawSize::text)),
    )?;
    if !(4096..=1 << 30).contains(&buffer) {
        return Err((
            "proxy.buffer".into(),
            "must be between 4KiB and 1GiB".into(),
        ));
    }
    let memory_budget = match &p.memory_budget {
        Some(t) => Some(field("proxy.memory_budget", parse_bytes(t))?),
        None => None,
    };
    let memory_per_client = client_share(memory_budget, p.memory_per_client.as_deref())?;
    let client_rate = p
        .client_rate
        .as_deref()
        .map(|t| {
            let bps = field("proxy.client_rate", parse_rate(t))?;
            let min = crate::client_rate::MIN_RATE;
            if bps < min {
                let msg = format!("{t:?}: at least {}kbps", min / 1000);
                return Err(("proxy.client_rate".to_string(), msg));
            }
            Ok(bps)
        })
        .transpose()?;
    let idle = dur("proxy.idle_timeout", &p.idle_timeout, "10min")?;
    let connect_timeout = dur("proxy.connect_timeout", &p.connect_timeout, "10s")?;
    if connect_timeout.is_zero() {
        return Err(("proxy.connect_timeout".into(), "must be positive".into()));
    }
    let metrics = p
        .metrics
        .as_deref()
        .map(|s| {
            let a: std::net::SocketAddr = field(
                "proxy.metrics",
                s.parse().map_err(|e| format!("{s:?}: {e}")),
            )?;
            if a.port() == 0 {
                let msg = format!("{s:?}: port 0 is not a port");
                return Err(("proxy.metrics".to_string(), msg));
            }
            Ok(a)
        })
        .transpose()?;
    let tunnel = raw.tunnel.as_ref().map(tunnel).transpose()?;
    if tunnel.is_some() {
        // The tunnel's flows are pumped by `tunnel::relay_*`, not by the
        // relay that drives the shaper: refused, not ignored.
        let legs = [
            ("client_leg", &raw.client_leg),
            ("server_leg", &raw.server_leg),
        ];
        if let Some((name, _)) = legs.iter().find(|(_, l)| l.shape_rate.is_some()) {
            return Err((
                format!("{name}.shape_rate"),
                "shaping is the single-node relay's; a [tunnel] node does not shape".into(),
            ));
        }
    }
    let split_end = tunnel
        .as_ref()
        .is_some_and(|t| t.role == crate::tunnel::Role::SplitEnd);
    let i = &raw.intercept;
    let packet = crate::packet::config::check(
        &raw.packet,
        i.interfaces.is_some(),
        raw.tunnel.is_some(),
        !raw.route.is_empty(),
    )?;
    let interfaces = i.interfaces.clone().unwrap_or_default();
    // split-end intercepts nothing: its flows arrive through the tunnel;
    // packet mode neither.
    let intercepts_nothing = split_end || packet.is_some();
    if interfaces.is_empty() && !intercepts_nothing {
        return Err((
            "intercept.interfaces".into(),
            "name the interfaces clients arrive on (an empty list would intercept everything)"
                .into(),
        ));
    }
    for (k, n) in interfaces.iter().enumerate() {
        let ok = !n.is_empty()
            && n != "."
            && n != ".."
            && n.len() < 16
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.@".contains(&b));
        if !ok {
            return Err((
                format!("intercept.interfaces[{k}]"),
                format!("{n:?} is not an interface name"),
            ));
        }
    }
    let subnets = cidrs("intercept.subnets", &i.subnets)?;
    if subnets.is_empty() && !intercepts_nothing {
        return Err((
            "intercept.subnets".into(),
            "name the client subnets to serve (the proxy never relays for anyone else)".into(),
        ));
    }
    if p.ipv6 == Some(false) && !subnets.is_empty() && subnets.iter().all(|c| !c.is_v4()) {
        return Err((
            "intercept.subnets".into(),
            "only IPv6 subnets, and proxy.ipv6 = false: nothing would be intercepted".into(),
        ));
    }
    let tproxy_mark = int_in(
        "intercept.tproxy_mark",
        i.tproxy_mark,
        0x1,
        1,
        u32::MAX as i64,
    )? as u32;
    let out_mark = int_in("intercept.out_mark", i.out_mark, 0x2, 1, u32::MAX as i64)? as u32;
    if out_mark == tproxy_mark {
        return Err((
            "intercept.out_mark".into(),
            "must differ from intercept.tproxy_mark".into(),
        ));
    }
    let backend = match i.backend.as_deref().unwrap_or("nft") {
        "nft" | "nftables" => Backend::Nft,
        "iptables" => Backend::Iptables,
        b => {
            return Err((
                "intercept.backend".into(),
                format!("{b:?}: expected \"nft\" or \"iptables\""),
            ))
        }
    };
    let table = int_in("intercept.table", i.table, 100, 1, 0xffff_fff0)? as u32;
    // The next one that is not the kernel's own.
    let next = if (252..=254).contains(&table) {
        256
    } else {
        table as i64 + 1
    };
    let out_table = int_in("intercept.out_table", i.out_table, next, 1, 0xffff_fff0)? as u32;
    for (name, t) in [
        ("intercept.table", table),
        ("intercept.out_table", out_table),
    ] {
        if (253..=255).contains(&t) {
            // The proxy flushes its tables when it installs and removes
            // its rules: these would take the host's routes with them.
            let msg = format!(
                "{t} is the kernel's {} table: pick another",
                match t {
                    253 => "default",
                    254 => "main",
                    _ => "local",
                }
            );
            return Err((name.into(), msg));
        }
    }
    if out_table == table {
        return Err((
            "intercept.out_table".into(),
            "must differ from intercept.table".into(),
        ));
    }
    let routes = raw
        .route
        .iter()
        .enumerate()
        .map(|(k, r)| {
            Ok(Route {
                dst: field(&format!("route[{k}].dst"), r.dst.parse())?,
                relay: relay_mode(&format!("route[{k}].relay"), &r.relay)?,
                initcwnd: r
                    .initcwnd
                    .map(|v| int_in(&format!("route[{k}].initcwnd"), Some(v), 0, 1, 1024))
                    .transpose()?
                    .map(|v| v as u32),
                initrwnd: r
                    .initrwnd
                    .map(|v| int_in(&format!("route[{k}].initrwnd"), Some(v), 0, 1, 1024))
                    .transpose()?
                    .map(|v| v as u32),
                client_leg: {
                    let l = leg(&format!("route[{k}].client_leg"), &r.client_leg)?;
                    if l.mss.is_some() {
                        // The client's handshake ends on the listener,
                        // before the destination is known.
                        return Err((
                            format!("route[{k}].client_leg.mss"),
                            "the client leg's MSS is set on the listener for all \
                             destinations: use [client_leg] mss"
                                .into(),
                        ));
                    }
                    l
                },
                server_leg: leg(&format!("route[{k}].server_leg"), &r.server_leg)?,
            })
        })
        .collect::<FieldResult<Vec<_>>>()?;
    Ok(Settings {
        port: int_in("proxy.port", p.port, 7_070, 1, 65_535)? as u16,
        ipv6: p.ipv6.unwrap_or(true),
        max_connections: max_connections as usize,
        max_per_client: max_per_client as usize,
        buffer: buffer as usize,
        relay: relay_mode("proxy.relay", &p.relay)?.unwrap_or(DEFAULT_RELAY),
        idle_timeout: (!idle.is_zero()).then_some(idle),
        connect_timeout,
        drain_timeout: dur("proxy.drain_timeout", &p.drain_timeout, "30s")?,
        keep_client_source: p.keep_client_source.unwrap_or(false),
        reuse_time_wait: p.reuse_time_wait.unwrap_or(true),
        copy_dscp: p.copy_dscp.unwrap_or(false),
        fast_open: p.fast_open.unwrap_or(false),
        memory_budget,
        memory_per_client,
        client_rate,
        workers: int_in("proxy.workers", p.workers, 0, 0, 256)? as usize,
        metrics,
        user: match &p.user {
            Some(name) => Some(field("proxy.user", crate::privileges::RunAs::lookup(name))?),
            None => None,
        },
        interfaces,
        subnets,
        bypass: cidrs("intercept.bypass", &i.bypass)?,
        tproxy_mark,
        out_mark,
        table,
        out_table,
        backend,
        client_leg: default_leg("client_leg", &raw.client_leg)?,
        server_leg: default_leg("server_leg", &raw.server_leg)?,
        client_windows: windows("client_leg", &raw.client_leg)?,
        routes,
        tunnel,
        packet,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = "[intercept]\ninterfaces = [\"eth1\"]\nsubnets = [\"10.0.0.0/8\"]\n";

    fn err(extra: &str) -> String {
        parse(&format!("{MIN}{extra}"), "pep.toml")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn values_the_kernel_or_nft_would_refuse_at_run_time_are_refused_here() {
        // Found by feeding `proxy check` edge values: each was accepted and
        // then failed (or did harm) only once the proxy ran.
        let cases = [
            ("table = 254", "intercept.table: 254 is the kernel's main table"),
            ("out_table = 255", "intercept.out_table: 255 is the kernel's local table"),
            ("table = 253", "intercept.table: 253 is the kernel's default table"),
            ("subnets = [\"10.0.0.0/8\", \"10.1.0.0/16\"]", "intercept.subnets[1]: \"10.1.0.0/16\" overlaps intercept.subnets[0] (\"10.0.0.0/8\")"),
            ("bypass = [\"192.0.2.0/24\", \"192.0.2.7/32\"]", "intercept.bypass[1]"),
            ("interfaces = [\"..\"]", "intercept.interfaces[0]: \"..\" is not an interface name"),
            ("[server_leg]\nkeepalive = \"0s\"", "server_leg.keepalive: \"0s\": whole seconds from 1s to 32767s"),
            ("[server_leg]\nkeepalive = \"10h\"", "server_leg.keepalive"),
            ("[client_leg]\nkeepalive = \"1500ms\"", "client_leg.keepalive"),
            ("[server_leg]\nmax_pacing_rate = \"7bps\"", "server_leg.max_pacing_rate: \"7bps\": at least 8bps"),
            ("[proxy]\nmetrics = \"127.0.0.1:0\"", "proxy.metrics: \"127.0.0.1:0\": port 0 is not a port"),
            ("[proxy]\nclient_rate = \"50kbps\"", "proxy.client_rate: \"50kbps\": at least 100kbps"),
            ("[proxy]\nclient_rate = \"fast\"", "proxy.client_rate: "),
            ("[server_leg]\nshape_rate = \"7kbps\"", "server_leg.shape_rate: \"7kbps\": at least 8kbps"),
            ("[server_leg]\nshape_rate = \"quick\"", "server_leg.shape_rate: "),
            ("[client_leg]\nshape_burst = \"4KiB\"", "client_leg.shape_burst: needs shape_rate"),
            ("[server_leg]\nshape_rate = \"6Mbps\"\nshape_burst = \"100B\"", "server_leg.shape_burst: \"100B\": must be between 1KiB and 1GiB"),
            ("[[route]]\ndst = \"192.0.2.0/24\"\nserver_leg = { shape_burst = \"x\" }", "route[0].server_leg.shape_burst"),
        ];
        for (extra, says) in cases {
            // The [intercept] keys replace MIN's own.
            let text = if extra.starts_with('[') {
                format!("{MIN}{extra}\n")
            } else {
                let key = extra.split(' ').next().unwrap();
                let mut t: Vec<String> = MIN
                    .lines()
                    .filter(|l| !l.starts_with(&format!("{key} ")))
                    .map(String::from)
                    .collect();
                t.insert(1, extra.to_string());
                t.join("\n") + "\n"
            };
            let e = parse(&text, "pep.toml").unwrap_err().to_string();
            assert!(e.contains(says), "{extra}: {e}");
        }
        let v6 = "[proxy]\nipv6 = false\n[intercept]\ninterfaces = [\"eth1\"]\nsubnets = [\"fd00::/8\"]\n";
        let e = parse(v6, "f").unwrap_err().to_string();
        assert!(e.contains("nothing would be intercepted"), "{e}");
        // Next to a reserved table, the default out_table skips them all.
        let s = parse(&format!("{MIN}table = 252\n"), "f").unwrap();
        assert_eq!((s.table, s.out_table), (252, 256));
        let ok = format!("{MIN}[server_leg]\nkeepalive = \"32767s\"\nmax_pacing_rate = \"8bps\"\n");
        assert!(parse(&ok, "f").is_ok());
        let tunnel = "[tunnel]\nrole = \"split-start\"\npeer = \"192.0.2.2:0\"\ncert = \"a\"\nkey = \"b\"\npeer_cert = \"c\"\n";
        let e = parse(&format!("{MIN}{tunnel}"), "f")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tunnel.peer: \"192.0.2.2:0\": port 0 is not a port"),
            "{e}"
        );
    }

    #[test]
    fn a_client_share_is_a_part_of_the_budget() {
        let budget = |extra: &str| parse(&format!("{MIN}[proxy]\n{extra}"), "f");
        let s = budget("memory_budget = \"400MiB\"\n").unwrap();
        assert_eq!(s.memory_per_client, Some(100 << 20));
        let s = budget("memory_budget = \"400MiB\"\nmemory_per_client = \"10%\"\n").unwrap();
        assert_eq!(s.memory_per_client, Some(40 << 20));
        let s = budget("memory_budget = \"400MiB\"\nmemory_per_client = \"1MiB\"\n").unwrap();
        assert_eq!(s.memory_per_client, Some(1 << 20));
        assert_eq!(budget("").unwrap().memory_per_client, None);
        for (extra, says) in [
            (
                "memory_per_client = \"10%\"\n",
                "proxy.memory_per_client: needs proxy.memory_budget",
            ),
            (
                "memory_budget = \"1MiB\"\nmemory_per_client = \"0%\"\n",
                "proxy.memory_per_client: \"0%\": must be in",
            ),
            (
                "memory_budget = \"1MiB\"\nmemory_per_client = \"lots%\"\n",
                "proxy.memory_per_client: \"lots%\": not a percentage",
            ),
            (
                "memory_budget = \"1MiB\"\nmemory_per_client = \"2MiB\"\n",
                "proxy.memory_per_client: 2097152 B is not in",
            ),
        ] {
            let e = budget(extra).unwrap_err().to_string();
            assert!(e.contains(says), "{extra}: {e}");
        }
    }

    #[test]
    fn a_connection_counts_its_relay_and_clamped_socket_buffers() {
        let s = parse(&format!("{MIN}[proxy]\nbuffer = \"1MiB\"\n"), "f").unwrap();
        assert_eq!(s.connection_memory("192.0.2.1".parse().unwrap()), None);
        assert_eq!(s.legs_opened("192.0.2.1".parse().unwrap()).1.sndbuf, None);
        let text = format!(
            "{MIN}[proxy]\nbuffer = \"1MiB\"\nmemory_budget = \"40MiB\"\n[server_leg]\nrcvbuf = \"256KiB\"\n"
        );
        let s = parse(&text, "f").unwrap();
        let dst = "192.0.2.1".parse().unwrap();
        let (c, sv) = s.legs_opened(dst);
        assert_eq!((c.sndbuf, c.rcvbuf), (Some(1 << 20), Some(1 << 20)));
        assert_eq!((sv.sndbuf, sv.rcvbuf), (Some(1 << 20), Some(256 << 10)));
        // Relay 2 MiB; client leg 2 x 2 MiB; server leg 2 x 1.25 MiB.
        let want = (2 << 20) + (4 << 20) + (5 << 19) + 2 * SOCKET_OVERHEAD;
        assert_eq!(s.connection_memory(dst), Some(want));
        let e = parse(&format!("{MIN}[proxy]\nmemory_budget = \"lots\"\n"), "f")
            .unwrap_err()
            .to_string();
        assert!(e.contains("proxy.memory_budget"), "{e}");
    }

    #[test]
    fn settings_a_role_does_not_use_are_noted() {
        let keys = "cert = \"a\"\nkey = \"b\"\npeer_cert = \"c\"\n";
        let end = format!(
            "{MIN}[tunnel]\nrole = \"split-end\"\nlisten = \"0.0.0.0:4433\"\nallow = [\"0.0.0.0/0\"]\n{keys}"
        );
        let notes = parse(&end, "f").unwrap().unused();
        assert_eq!(notes.len(), 1);
        assert!(notes[0].starts_with("intercept.interfaces"), "{notes:?}");
        let start = format!(
            "{MIN}[tunnel]\nrole = \"split-start\"\npeer = \"192.0.2.2:4433\"\nallow = [\"0.0.0.0/0\"]\n{keys}"
        );
        let notes = parse(&start, "f").unwrap().unused();
        assert_eq!(
            notes,
            ["tunnel.listen and tunnel.allow: only split-end uses them"]
        );
        assert!(parse(MIN, "f").unwrap().unused().is_empty());
    }

    #[test]
    fn errors_without_overrides_point_into_the_file_itself() {
        // parse_with used to re-serialise the file first, so toml's line
        // and column pointed into text the user never saw.
        let text = format!("{MIN}\n\n[proxy]\nworkers = \"0\"\n");
        let e = parse_with(&text, "pep.toml", &[]).unwrap_err().to_string();
        assert!(e.contains("line 7"), "{e}");
    }

    #[test]
    fn errors_give_file_line_and_column_as_scenario_errors_do() {
        let text = format!("{MIN}[proxy]\nbuffer = \"1KiB\"\n");
        let e = parse(&text, "pep.toml").unwrap_err().to_string();
        assert_eq!(
            e,
            "pep.toml:5:10: proxy.buffer: must be between 4KiB and 1GiB"
        );
        let text = "[intercept]\ninterfaces = [\"eth1\", \"..\"]\nsubnets = [\"10.0.0.0/8\"]\n";
        let e = parse(text, "pep.toml").unwrap_err().to_string();
        assert!(
            e.starts_with("pep.toml:2:23: intercept.interfaces[1]: "),
            "{e}"
        );
        // Type errors from the TOML reader too.
        let e = parse(&format!("{MIN}[proxy]\nport = \"x\"\n"), "pep.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("pep.toml:5:8: "), "{e}");
    }

    #[test]
    fn example_parses() {
        let s = parse(EXAMPLE, "example").unwrap();
        assert_eq!(s.port, 7070);
        assert!(!s.routes.is_empty());
    }

    #[test]
    fn minimal_has_defaults() {
        let s = parse(MIN, "pep.toml").unwrap();
        assert_eq!((s.buffer, s.max_connections), (4 << 20, 10_000));
        assert_eq!(s.out_mark, 2);
    }

    #[test]
    fn both_legs_give_up_unacknowledged_data_after_the_user_timeout() {
        let s = parse(MIN, "f").unwrap();
        assert_eq!(s.client_leg.user_timeout, Some(DEFAULT_USER_TIMEOUT));
        assert_eq!(s.server_leg.user_timeout, Some(DEFAULT_USER_TIMEOUT));
        let s = parse(
            &format!(
                "{MIN}[client_leg]\nuser_timeout = \"0s\"\n[[route]]\ndst = \"192.0.2.0/24\"\n\
                 server_leg = {{ user_timeout = \"5s\" }}\n"
            ),
            "f",
        )
        .unwrap();
        assert_eq!(s.client_leg.user_timeout, Some(Duration::ZERO));
        let (_, server) = s.legs_for("192.0.2.1".parse().unwrap());
        assert_eq!(server.user_timeout, Some(Duration::from_secs(5)));
        let (_, server) = s.legs_for("198.51.100.1".parse().unwrap());
        assert_eq!(server.user_timeout, Some(DEFAULT_USER_TIMEOUT));
        let e = err("[server_leg]\nuser_timeout = \"100us\"");
        assert!(
            e.contains("server_leg.user_timeout: \"100us\": whole milliseconds"),
            "{e}"
        );
        assert!(err("[server_leg]\nuser_timeout = \"30d\"").contains("server_leg.user_timeout"));
    }

    #[test]
    fn errors_name_the_field() {
        assert!(err("[proxy]\nbuffer = \"lots\"").contains("proxy.buffer"));
        assert!(err("[proxy]\nmax_connections = 0").contains("proxy.max_connections: 0 is not in"));
        assert!(err("[server_leg]\ncc = \"bb r\"").contains("server_leg.cc"));
        assert!(err("[client_leg]\nmax_pacing_rate = \"9 furlongs\"")
            .contains("client_leg.max_pacing_rate"));
        assert!(err("[[route]]\ndst = \"10.0.0.0/33\"").contains("route[0].dst"));
        assert!(
            err("[proxy]\nbogus = 1").contains("bogus"),
            "{}",
            err("[proxy]\nbogus = 1")
        );
        assert!(err("[proxy]\nport = \"x\"").contains("port"));
        let e = err("[proxy]\nuser = \"no-such-user-pepkit\"");
        assert!(
            e.contains("proxy.user") && e.contains("no user named"),
            "{e}"
        );
    }

    #[test]
    fn units_read_as_in_the_scenarios_and_bare_numbers_only_as_bytes() {
        let s = parse(
            &format!(
                "{MIN}[proxy]\nidle_timeout = \"500us\"\nbuffer = \"65536\"\n\
                 [client_leg]\nmax_pacing_rate = \"10Mbit/s\"\n"
            ),
            "pep.toml",
        )
        .unwrap();
        assert_eq!(s.idle_timeout, Some(Duration::from_micros(500)));
        assert_eq!(s.buffer, 65_536);
        // An integer is a count of bytes too (it used to be refused as
        // "expected a string").
        let int = parse(&format!("{MIN}[proxy]\nbuffer = 65536\n"), "f").unwrap();
        assert_eq!(int.buffer, 65_536);
        let e = err("[proxy]\nbuffer = -1");
        assert!(e.contains("proxy.buffer"), "{e}");
        let e = err("[proxy]\nbuffer = 1.5");
        assert!(e.contains("buffer"), "{e}");
        assert_eq!(s.client_leg.max_pacing_rate, Some(10_000_000));
        // Bits or bytes per second, milliseconds or seconds: refused, by
        // field.
        for (extra, field) in [
            ("[proxy]\nidle_timeout = \"10\"", "proxy.idle_timeout"),
            (
                "[client_leg]\nmax_pacing_rate = \"10\"",
                "client_leg.max_pacing_rate",
            ),
        ] {
            let e = err(extra);
            assert!(
                e.starts_with("pep.toml:")
                    && e.contains(&format!(": {field}: "))
                    && e.contains("bare number"),
                "{extra}: {e}"
            );
        }
        let e = err("[proxy]\nbuffer = \"4Mb\"");
        assert!(e.contains("proxy.buffer") && e.contains("bits"), "{e}");
    }

    #[test]
    fn pacing_and_shaping_are_leg_settings() {
        let s = parse(
            &format!(
                "{MIN}[server_leg]\npacing = true\nshape_rate = \"6Mbit/s\"\nshape_burst = \"3000B\"\n\
                 [[route]]\ndst = \"192.0.2.0/24\"\nserver_leg = {{ shape_rate = \"1Mbps\" }}\n"
            ),
            "pep.toml",
        )
        .unwrap();
        let sv = &s.server_leg;
        assert_eq!(sv.pacing, Some(true));
        let six = LegShape {
            rate: 6_000_000,
            burst: Some(3000),
        };
        assert_eq!(sv.shape, Some(six));
        assert_eq!(crate::net::pacing_cap(sv), Some(u32::MAX - 1));
        // A route's rate replaces the shape as a whole (its burst: the default).
        let one = LegShape {
            rate: 1_000_000,
            burst: None,
        };
        assert_eq!(s.legs_for("192.0.2.1".parse().unwrap()).1.shape, Some(one));
        assert_eq!(
            s.legs_for("198.51.100.1".parse().unwrap()).1.shape,
            Some(six)
        );
        assert_eq!(s.client_leg.shape, None);
        // A cap is a cap, pacing or not; "~0U" would switch pacing off.
        let capped = |bps| LegOptions {
            max_pacing_rate: Some(bps),
            ..LegOptions::default()
        };
        assert_eq!(
            crate::net::pacing_cap(&capped(80_000_000)),
            Some(10_000_000)
        );
        assert_eq!(
            crate::net::pacing_cap(&capped(u64::MAX)),
            Some(u32::MAX - 1)
        );
        assert_eq!(crate::net::pacing_cap(&LegOptions::default()), None);
        let start = "[tunnel]\nrole = \"split-start\"\npeer = \"192.0.2.2:4433\"\ncert = \"a\"\nkey = \"b\"\npeer_cert = \"c\"\n";
        assert!(err(&format!("{start}[server_leg]\nshape_rate = \"6Mbps\""))
            .contains("server_leg.shape_rate: shaping is the single-node relay's"));
    }

    #[test]
    fn local_queue_defaults_and_errors_name_the_field() {
        use crate::tunnel::localq::LqPolicy;
        let start = "[tunnel]\nrole = \"split-start\"\npeer = \"192.0.2.2:4433\"\ncert = \"a\"\nkey = \"b\"\npeer_cert = \"c\"\n";
        let q = |extra: &str| format!("{start}[tunnel.local_queue]\n{extra}");
        let s = parse(&format!("{MIN}{}", q("")), "f").unwrap();
        let l = s.tunnel.unwrap().local_queue.unwrap();
        assert_eq!(
            l.policy,
            LqPolicy::Red {
                min_th: None,
                max_th: None
            }
        );
        assert_eq!(
            (l.limit, l.buffer_start, l.rate),
            (1000, 208_000, 100_000_000)
        );
        assert_eq!(l.check_interval, Duration::from_millis(1));
        let s = parse(
            &format!("{MIN}{}", q("policy = \"droptail\"\nlimit = 300\n")),
            "f",
        )
        .unwrap();
        assert_eq!(
            s.tunnel.unwrap().local_queue.unwrap().policy,
            LqPolicy::DropTail
        );
        let fair = |extra: &str| {
            let s = parse(&format!("{MIN}{}", q(extra)), "f").unwrap();
            s.tunnel.unwrap().local_queue.unwrap()
        };
        let l = fair("policy = \"fair\"\nper_flow = 40\n");
        assert_eq!(l.policy, LqPolicy::Fair { per_flow: 40 });
        assert_eq!(
            l.core().discipline,
            pep_core::localq::Discipline::Fair { per_flow: 40 }
        );
        // The default share fits the limit.
        let l = fair("policy = \"fair\"\nlimit = 30\n");
        assert_eq!(l.policy, LqPolicy::Fair { per_flow: 30 });
        for (extra, field) in [
            ("policy = \"codel\"", "tunnel.local_queue.policy"),
            ("limit = 0", "tunnel.local_queue.limit"),
            ("buffer_start = \"lots\"", "tunnel.local_queue.buffer_start"),
            ("buffer_start = \"100B\"", "tunnel.local_queue.buffer_start"),
            (
                "check_interval = \"0s\"",
                "tunnel.local_queue.check_interval",
            ),
            ("rate = \"fast\"", "tunnel.local_queue.rate"),
            ("min_th = 50\nmax_th = 20", "tunnel.local_queue.max_th"),
            ("max_th = 20", "tunnel.local_queue.max_th"),
            (
                "policy = \"droptail\"\nmin_th = 5",
                "tunnel.local_queue.policy",
            ),
            ("nfqueue = 70000", "tunnel.local_queue.nfqueue"),
            ("stall_after = \"0s\"", "tunnel.local_queue.stall_after"),
            (
                "policy = \"fair\"\nlimit = 300\nper_flow = 301",
                "tunnel.local_queue.per_flow",
            ),
            (
                "policy = \"fair\"\nper_flow = 0",
                "tunnel.local_queue.per_flow",
            ),
            (
                "per_flow = 10",
                "tunnel.local_queue.per_flow: is the fair policy's",
            ),
            ("policy = \"fair\"\nmin_th = 5", "tunnel.local_queue.policy"),
            ("colour = 1", "colour"),
        ] {
            let e = err(&q(extra));
            assert!(e.contains(field), "{extra}: {e}");
        }
        let end = "[tunnel]\nrole = \"split-end\"\nlisten = \"0.0.0.0:4433\"\nallow = [\"0.0.0.0/0\"]\ncert = \"a\"\nkey = \"b\"\npeer_cert = \"c\"\n[tunnel.local_queue]\n";
        assert!(err(end).contains("tunnel.local_queue: only split-start"));
    }

    #[test]
    fn relay_mode_global_and_per_route() {
        let s = parse(MIN, "f").unwrap();
        assert_eq!(s.relay, DEFAULT_RELAY);
        let s = parse(
            &format!(
                "[proxy]\nrelay = \"copy\"\n{MIN}[[route]]\ndst = \"192.0.2.0/24\"\nrelay = \"splice\"\n\
                 [[route]]\ndst = \"192.0.2.128/25\"\nserver_leg = {{ cc = \"bbr\" }}\n"
            ),
            "f",
        )
        .unwrap();
        assert_eq!(
            s.relay_for("198.51.100.1".parse().unwrap()),
            RelayMode::Copy
        );
        // The /25 is more specific but sets no relay: the /24's applies.
        assert_eq!(
            s.relay_for("192.0.2.200".parse().unwrap()),
            RelayMode::Splice
        );
        assert!(s.uses_splice());
        assert_eq!(s.fds_per_connection(), 6);
        assert!(err("[proxy]\nrelay = \"sendfile\"").contains("proxy.relay: \"sendfile\""));
        assert!(err("[[route]]\ndst = \"10.0.0.0/8\"\nrelay = \"x\"").contains("route[0].relay"));
    }

    #[test]
    fn mss_is_a_number_or_auto_on_server_legs() {
        let s = parse(
            &format!("{MIN}[client_leg]\nmss = 1200\n[server_leg]\nmss = \"auto\"\n"),
            "f",
        )
        .unwrap();
        assert_eq!(s.client_leg.mss, Some(Mss::Fixed(1200)));
        assert_eq!(s.server_leg.mss, Some(Mss::Auto));
        assert!(err("[client_leg]\nmss = \"auto\"")
            .contains("client_leg.mss: \"auto\" is for server legs"));
        assert!(err("[server_leg]\nmss = \"big\"").contains("server_leg.mss: \"big\""));
        assert!(err("[server_leg]\nmss = 100").contains("server_leg.mss: 100 is not in"));
        assert!(
            err("[[route]]\ndst = \"10.0.0.0/8\"\nclient_leg = { mss = 1300 }")
                .contains("route[0].client_leg.mss")
        );
    }

    #[test]
    fn client_leg_initial_windows() {
        let s = parse(&format!("{MIN}[client_leg]\ninitcwnd = 32\n"), "f").unwrap();
        assert_eq!(s.client_windows.initcwnd, Some(32));
        assert!(err("[server_leg]\ninitcwnd = 32")
            .contains("server_leg.initcwnd: initial windows are route"));
        assert!(err("[client_leg]\ninitrwnd = 5000").contains("client_leg.initrwnd: 5000"));
    }

    #[test]
    fn initial_windows_per_route() {
        let s = parse(
            &format!("{MIN}[[route]]\ndst = \"192.0.2.0/24\"\ninitcwnd = 40\ninitrwnd = 60\n"),
            "f",
        )
        .unwrap();
        assert_eq!(
            (s.routes[0].initcwnd, s.routes[0].initrwnd),
            (Some(40), Some(60))
        );
        assert_eq!((s.table, s.out_table), (100, 101));
        assert!(err("[[route]]\ndst = \"10.0.0.0/8\"\ninitcwnd = 0").contains("route[0].initcwnd"));
        let e = parse(&format!("{MIN}out_table = 100\n"), "f").unwrap_err();
        assert!(e.to_string().contains("intercept.out_table"), "{e}");
    }

    #[test]
    fn user_resolves_to_ids() {
        let s = parse(&format!("[proxy]\nuser = \"root\"\n{MIN}"), "pep.toml").unwrap();
        let u = s.user.unwrap();
        assert_eq!((u.name.as_str(), u.uid, u.gid), ("root", 0, 0));
    }

    #[test]
    fn overrides_apply_and_are_validated() {
        let o = |k: &str, v: &str| (k.to_string(), v.to_string());
        let s = parse_with(
            MIN,
            "f",
            &[o("proxy.port", "9000"), o("server_leg.cc", "\"bbr\"")],
        )
        .unwrap();
        assert_eq!((s.port, s.server_leg.cc.as_deref()), (9000, Some("bbr")));
        let e = parse_with(MIN, "f", &[o("proxy.buffer", "\"1B\"")]).unwrap_err();
        assert!(e.to_string().contains("proxy.buffer"));
        let s = parse_with(
            "",
            "flags",
            &[
                o("intercept.interfaces", "[\"eth1\"]"),
                o("intercept.subnets", "[\"10.0.0.0/8\"]"),
            ],
        );
        assert!(s.is_ok());
    }

    #[test]
    fn refuses_to_be_an_open_relay() {
        let e = parse("[intercept]\ninterfaces = [\"eth1\"]\n", "f").unwrap_err();
        assert!(e.to_string().contains("intercept.subnets"));
        let e = parse("[intercept]\nsubnets = [\"0.0.0.0/0\"]\n", "f").unwrap_err();
        assert!(e.to_string().contains("intercept.interfaces"));
    }

    #[test]
    fn routes_override_per_destination() {
        let s = parse(
            &format!(
                "{MIN}[server_leg]\ncc = \"cubic\"\nnodelay = true\n\
                 [[route]]\ndst = \"192.0.2.0/24\"\nserver_leg = {{ cc = \"bbr\" }}\n\
                 [[route]]\ndst = \"192.0.2.128/25\"\nserver_leg = {{ cc = \"reno\" }}\n"
            ),
            "f",
        )
        .unwrap();
        let leg = |a: &str| s.legs_for(a.parse().unwrap()).1;
        assert_eq!(leg("198.51.100.1").cc.as_deref(), Some("cubic"));
        assert_eq!(leg("192.0.2.1").cc.as_deref(), Some("bbr"));
        assert_eq!(leg("192.0.2.200").cc.as_deref(), Some("reno"));
        assert_eq!(
            leg("192.0.2.1").nodelay,
            Some(true),
            "merged with the default"
        );
    }
}
