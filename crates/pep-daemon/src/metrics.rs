//! Counters and the Prometheus endpoint. The counters are relaxed
//! atomics the hot path increments; prometheus-client encodes them (a
//! `Collector` reading them at each scrape) in the OpenMetrics text
//! format. The HTTP side is a hand-rolled HTTP/1.0 responder: one GET,
//! one answer, close; no HTTP library is worth its dependencies for that.
//!
//! Names follow Prometheus' naming guide: `pep_` prefix, base units in
//! the name (`_seconds`, `_bytes`, with a `# UNIT` line), counters end in
//! `_total` (the encoder appends it to the family's name), and the
//! process's own state under the client libraries' standard `process_*`
//! names, so stock dashboards and alerts apply. `promtool check metrics`
//! finds nothing to complain about (the root test `prometheus::` runs it
//! on a live scrape). The dashboard and alert rules reading these are
//! `contrib/grafana-dashboard.json` and `contrib/prometheus-alerts.yml`
//! (docs/operations.md).

use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use pep_core::relay::{AbortReason, Leg};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeGaugeValue, EncodeMetric, MetricEncoder,
    NoLabelSet,
};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use tokio::io::Interest;
use tokio::net::TcpListener;

use crate::net::LegInfo;

/// Why a connection was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `max_connections` reached.
    Limit,
    /// `max_per_client` reached.
    ClientLimit,
    /// Client source outside `intercept.subnets`.
    NotServed,
    /// Addressed to the proxy's own port: would loop.
    Loop,
    /// Out of file descriptors.
    Descriptors,
    /// Shutting down.
    Draining,
    /// `memory_budget` reached.
    Memory,
    /// The client's share of `memory_budget` (`memory_per_client`) reached.
    ClientMemory,
}

const REFUSALS: [(Refusal, &str); 8] = [
    (Refusal::Limit, "limit"),
    (Refusal::ClientLimit, "client_limit"),
    (Refusal::NotServed, "not_served"),
    (Refusal::Loop, "loop"),
    (Refusal::Descriptors, "descriptors"),
    (Refusal::Draining, "draining"),
    (Refusal::Memory, "memory"),
    (Refusal::ClientMemory, "client_memory"),
];

const ENDS: [&str; 7] = [
    "clean",
    "reset_by_client",
    "reset_by_server",
    "connect_failed",
    "idle",
    "aborted",
    "error",
];

/// Upper bounds of the RTT histogram, seconds.
const RTT_BUCKETS: [f64; 10] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];
/// Upper bounds of the cwnd histogram, segments.
const CWND_BUCKETS: [f64; 8] = [4.0, 10.0, 32.0, 100.0, 320.0, 1000.0, 3200.0, 10000.0];
/// Upper bounds of the connect-time histogram, seconds.
const SETUP_BUCKETS: [f64; 8] = [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0];

struct Histogram<const N: usize> {
    bounds: [f64; N],
    counts: [AtomicU64; N],
    count: AtomicU64,
    sum_micro: AtomicU64,
}

impl<const N: usize> Histogram<N> {
    fn new(bounds: [f64; N]) -> Self {
        Histogram {
            bounds,
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum_micro: AtomicU64::new(0),
        }
    }

    fn observe(&self, v: f64) {
        if let Some(i) = self.bounds.iter().position(|&b| v <= b) {
            self.counts[i].fetch_add(1, Relaxed);
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_micro.fetch_add((v * 1e6) as u64, Relaxed);
    }

    /// Sum, count and the buckets' own counts (the encoder sums them),
    /// `+Inf` last: what prometheus-client's encoder takes.
    fn snapshot(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let mut buckets: Vec<(f64, u64)> = self
            .bounds
            .iter()
            .zip(&self.counts)
            .map(|(b, c)| (*b, c.load(Relaxed)))
            .collect();
        let n = self.count.load(Relaxed);
        let within: u64 = buckets.iter().map(|(_, c)| c).sum();
        buckets.push((f64::MAX, n.saturating_sub(within)));
        (self.sum_micro.load(Relaxed) as f64 / 1e6, n, buckets)
    }
}

/// Labels of one sample: `[("leg", "client")]`; empty for none.
pub(crate) type Labels<'a> = &'a [(&'a str, &'a str)];

/// A family's descriptor: HELP, TYPE and, for a name ending in a base
/// unit, UNIT. `name` is the full name without a counter's `_total`,
/// which the encoder appends; the unit suffix is split off because the
/// encoder writes it back after the name.
fn describe<'a>(
    enc: &'a mut DescriptorEncoder,
    name: &'a str,
    help: &str,
    kind: MetricType,
) -> Result<MetricEncoder<'a>, fmt::Error> {
    static SECONDS: Unit = Unit::Seconds;
    static BYTES: Unit = Unit::Bytes;
    let (base, unit) = match (name.strip_suffix("_seconds"), name.strip_suffix("_bytes")) {
        (Some(b), _) => (b, Some(&SECONDS)),
        (_, Some(b)) => (b, Some(&BYTES)),
        _ => (name, None),
    };
    enc.encode_descriptor(base, help, unit, kind)
}

/// A counter family (`name` without `_total`): one sample per row.
pub(crate) fn counter<V: EncodeCounterValue + Copy>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: &[(Labels, V)],
) -> fmt::Result {
    let mut m = describe(enc, name, help, MetricType::Counter)?;
    if let [(&[], v)] = rows {
        // Without labels: `name 3`, not `name{} 3`.
        return ConstCounter::new(*v).encode(m);
    }
    for (labels, v) in rows {
        ConstCounter::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

/// A gauge family: one sample per row.
pub(crate) fn gauge<V: EncodeGaugeValue + Copy>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: &[(Labels, V)],
) -> fmt::Result {
    let mut m = describe(enc, name, help, MetricType::Gauge)?;
    if let [(&[], v)] = rows {
        // Without labels: `name 3`, not `name{} 3`.
        return ConstGauge::new(*v).encode(m);
    }
    for (labels, v) in rows {
        ConstGauge::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

/// A histogram family: one histogram per row.
fn histogram<const N: usize>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: &[(Labels, &Histogram<N>)],
) -> fmt::Result {
    let mut m = describe(enc, name, help, MetricType::Histogram)?;
    if let [(&[], h)] = rows {
        let (sum, count, buckets) = h.snapshot();
        return m.encode_histogram::<NoLabelSet>(sum, count, &buckets, None);
    }
    for (labels, h) in rows {
        let (sum, count, buckets) = h.snapshot();
        m.encode_family(labels)?
            .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
    }
    Ok(())
}

/// Everything the daemon counts. Shared by all tasks; relaxed atomics.
pub struct Metrics {
    pub accepted: AtomicU64,
    pub active: AtomicI64,
    /// Connections to the metrics endpoint now open: descriptors the
    /// pre-admission check counts (at most [`METRICS_MAX_CONNECTIONS`]).
    pub metrics_open: AtomicI64,
    refused: [AtomicU64; REFUSALS.len()],
    ended: [AtomicU64; 7],
    /// Bytes read from the client leg (and written to the server leg).
    pub bytes_up: AtomicU64,
    /// Bytes read from the server leg.
    pub bytes_down: AtomicU64,
    /// Bytes held in relay buffers now, all connections (splice pipes
    /// included).
    pub buffered: AtomicI64,
    /// Buffer memory held now, all connections.
    pub allocated: AtomicI64,
    pub pauses: AtomicU64,
    /// Connections configured to splice that copied instead (no pipe).
    pub splice_fallbacks: AtomicU64,
    /// Server legs that could not get a source port (`EADDRNOTAVAIL`).
    pub port_exhausted: AtomicU64,
    /// Reads held back by `proxy.client_rate` (nothing granted), per
    /// direction (Up: from the client leg, Down: from the server leg),
    /// split relays and tunnel flows alike.
    pub rate_waits: [AtomicU64; 2],
    /// Grants `proxy.client_rate` cut short to leave the client's credit
    /// to its connection behind (`FairShare::held_for_fairness`), per
    /// direction.
    pub rate_held_for_fairness: [AtomicU64; 2],
    /// `max_connections` in force (lowered to what the descriptors hold).
    pub max_connections: AtomicU64,
    /// `memory_budget` in force (0: none).
    pub memory_budget: AtomicU64,
    /// Bytes the admitted connections hold of `memory_budget`.
    pub memory_committed: AtomicU64,
    pub accept_errors: AtomicU64,
    pub reloads: AtomicU64,
    pub reload_errors: AtomicU64,
    rtt: [Histogram<10>; 2],
    cwnd: [Histogram<8>; 2],
    setup: Histogram<8>,
    /// The two-node tunnel's state (zeros without one).
    pub tunnel: TunnelMetrics,
    /// Packet mode's counters (zeros without it).
    pub packet: crate::packet::metrics::PacketMetrics,
}

/// How tunnelled flows end (`pep_tunnel_flows_ended_total{how}`).
pub const TUNNEL_ENDS: [&str; 6] = [
    "clean",
    "reset_by_tcp",
    "reset_by_tunnel",
    "refused_by_policy",
    "unreachable",
    "no_tunnel",
];

/// The tunnel of a two-node PEP.
#[derive(Default)]
pub struct TunnelMetrics {
    /// 1 when this node runs a two-node tunnel (`[tunnel]`).
    pub configured: AtomicI64,
    /// 1 while the tunnel is connected.
    pub up: AtomicI64,
    pub connects: AtomicU64,
    /// Handshakes that failed authentication (either side).
    pub auth_failures: AtomicU64,
    pub rtt_us: AtomicU64,
    pub cwnd_bytes: AtomicU64,
    pub lost_packets: AtomicU64,
    pub sent_packets: AtomicU64,
    pub flows_active: AtomicI64,
    pub ended: [AtomicU64; 6],
    pub bytes_to_tunnel: AtomicU64,
    pub bytes_from_tunnel: AtomicU64,
    /// split-start's local queue (`[tunnel.local_queue]`).
    pub lq: LocalQueueMetrics,
}

/// split-start's local queue, published by its thread at each check.
#[derive(Default)]
pub struct LocalQueueMetrics {
    /// 1 while the queue is bound and served.
    pub enabled: AtomicI64,
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
    /// `buffer_start` less what flows are charged.
    pub credit: AtomicI64,
    pub arrived: AtomicU64,
    /// Retransmissions and duplicates passed at once.
    pub passed_old: AtomicU64,
    pub admitted: AtomicU64,
    pub admitted_bytes: AtomicU64,
    pub blocked_checks: AtomicU64,
    pub flows: AtomicU64,
    /// Drops by reason: overflow, early, forced.
    pub dropped: [AtomicU64; 3],
    /// The NFQUEUE socket's receive buffer (0: not enlarged).
    pub netlink_rcvbuf: AtomicU64,
}

impl LocalQueueMetrics {
    pub fn dropped_total(&self) -> u64 {
        self.dropped.iter().map(|d| d.load(Relaxed)).sum()
    }
}

impl TunnelMetrics {
    pub fn end(&self, how: &str) {
        if let Some(i) = TUNNEL_ENDS.iter().position(|h| *h == how) {
            self.ended[i].fetch_add(1, Relaxed);
        }
    }
    pub fn ended_count(&self, how: &str) -> u64 {
        TUNNEL_ENDS
            .iter()
            .position(|h| *h == how)
            .map_or(0, |i| self.ended[i].load(Relaxed))
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            accepted: AtomicU64::new(0),
            active: AtomicI64::new(0),
            metrics_open: AtomicI64::new(0),
            refused: Default::default(),
            ended: Default::default(),
            bytes_up: AtomicU64::new(0),
            bytes_down: AtomicU64::new(0),
            buffered: AtomicI64::new(0),
            allocated: AtomicI64::new(0),
            pauses: AtomicU64::new(0),
            splice_fallbacks: AtomicU64::new(0),
            port_exhausted: AtomicU64::new(0),
            rate_waits: Default::default(),
            rate_held_for_fairness: Default::default(),
            max_connections: AtomicU64::new(0),
            memory_budget: AtomicU64::new(0),
            memory_committed: AtomicU64::new(0),
            accept_errors: AtomicU64::new(0),
            reloads: AtomicU64::new(0),
            reload_errors: AtomicU64::new(0),
            rtt: [Histogram::new(RTT_BUCKETS), Histogram::new(RTT_BUCKETS)],
            cwnd: [Histogram::new(CWND_BUCKETS), Histogram::new(CWND_BUCKETS)],
            setup: Histogram::new(SETUP_BUCKETS),
            tunnel: TunnelMetrics::default(),
            packet: Default::default(),
        }
    }
}

fn leg_index(l: Leg) -> usize {
    match l {
        Leg::Client => 0,
        Leg::Server => 1,
    }
}

impl Metrics {
    pub fn refuse(&self, r: Refusal) {
        if let Some(i) = REFUSALS.iter().position(|(x, _)| *x == r) {
            self.refused[i].fetch_add(1, Relaxed);
        }
    }

    pub fn refused(&self, r: Refusal) -> u64 {
        REFUSALS
            .iter()
            .position(|(x, _)| *x == r)
            .map_or(0, |i| self.refused[i].load(Relaxed))
    }

    /// Counts how a connection ended (`None`: both FINs, cleanly).
    pub fn ended(&self, why: Option<AbortReason>) {
        let i = match why {
            None => 0,
            Some(AbortReason::Reset(Leg::Client)) => 1,
            Some(AbortReason::Reset(Leg::Server)) => 2,
            Some(AbortReason::ConnectFailed) => 3,
            Some(AbortReason::Idle) => 4,
            Some(AbortReason::Aborted) => 5,
        };
        self.ended[i].fetch_add(1, Relaxed);
    }

    pub fn ended_with_error(&self) {
        self.ended[6].fetch_add(1, Relaxed);
    }

    pub fn ended_count(&self, name: &str) -> u64 {
        ENDS.iter()
            .position(|n| *n == name)
            .map_or(0, |i| self.ended[i].load(Relaxed))
    }

    pub fn leg_sample(&self, leg: Leg, i: LegInfo) {
        self.rtt[leg_index(leg)].observe(i.rtt_us as f64 / 1e6);
        self.cwnd[leg_index(leg)].observe(i.cwnd as f64);
    }

    pub fn setup_time(&self, secs: f64) {
        self.setup.observe(secs);
    }

    /// The registry the endpoint encodes: these counters, read at each
    /// scrape, and the process's own.
    pub fn registry(self: &Arc<Self>) -> Registry {
        let mut r = Registry::default();
        r.register_collector(Box::new(self.clone()));
        r.register_collector(Box::new(Process));
        r
    }

    /// The OpenMetrics text exposition (what the endpoint serves).
    pub fn render(self: &Arc<Self>) -> String {
        encode(&self.registry())
    }
}

/// `registry` in the OpenMetrics text format, `# EOF` last.
pub fn encode(registry: &Registry) -> String {
    let mut o = String::with_capacity(16384);
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut o, registry);
    o
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// The counters are relaxed atomics the hot path increments; a scrape
/// reads them into prometheus-client's constant metrics, so counting
/// costs no lock and no family lookup.
impl Collector for Metrics {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let e = &mut enc;
        let l = |v: &AtomicU64| v.load(Relaxed);
        let g = |v: &AtomicI64| v.load(Relaxed);
        let legs = |a: &[AtomicU64; 2]| {
            [
                (&[("leg", "client")][..], l(&a[0])),
                (&[("leg", "server")][..], l(&a[1])),
            ]
        };
        counter(
            e,
            "pep_connections_accepted",
            "Connections accepted.",
            &[(&[], l(&self.accepted))],
        )?;
        gauge(
            e,
            "pep_connections_active",
            "Connections being relayed.",
            &[(&[], g(&self.active))],
        )?;
        gauge(
            e,
            "pep_connections_max",
            "max_connections in force (lowered at start to what the descriptor limit holds).",
            &[(&[], l(&self.max_connections))],
        )?;
        gauge(
            e,
            "pep_memory_budget_bytes",
            "memory_budget in force (0: no budget).",
            &[(&[], l(&self.memory_budget))],
        )?;
        gauge(
            e,
            "pep_memory_committed_bytes",
            "Worst-case memory the admitted connections reserve against memory_budget.",
            &[(&[], l(&self.memory_committed))],
        )?;
        let refused: Vec<[(&str, &str); 1]> =
            REFUSALS.iter().map(|(_, n)| [("reason", *n)]).collect();
        let rows: Vec<(Labels, u64)> = refused
            .iter()
            .zip(&self.refused)
            .map(|(k, c)| (&k[..], l(c)))
            .collect();
        counter(
            e,
            "pep_connections_refused",
            "Connections reset at once, by reason.",
            &rows,
        )?;
        let ends: Vec<[(&str, &str); 1]> = ENDS.iter().map(|n| [("how", *n)]).collect();
        let rows: Vec<(Labels, u64)> = ends
            .iter()
            .zip(&self.ended)
            .map(|(k, c)| (&k[..], l(c)))
            .collect();
        counter(
            e,
            "pep_connections_ended",
            "Connections ended, by how.",
            &rows,
        )?;
        counter(
            e,
            "pep_bytes",
            "Bytes relayed, by the leg they were read from.",
            &[
                (&[("leg", "client")], l(&self.bytes_up)),
                (&[("leg", "server")], l(&self.bytes_down)),
            ],
        )?;
        gauge(
            e,
            "pep_buffer_bytes",
            "Bytes held in relay buffers (splice pipes included).",
            &[(&[], g(&self.buffered))],
        )?;
        gauge(
            e,
            "pep_buffer_allocated_bytes",
            "Memory held by copy-relay buffers (pipe pages are the kernel's).",
            &[(&[], g(&self.allocated))],
        )?;
        counter(
            e,
            "pep_client_rate_waits",
            "Reads held back by proxy.client_rate (nothing granted), by the leg read from.",
            &legs(&self.rate_waits),
        )?;
        counter(
            e,
            "pep_client_rate_held_for_fairness",
            "Reads proxy.client_rate cut short to leave the client's credit to its connection behind, by the leg read from.",
            &legs(&self.rate_held_for_fairness),
        )?;
        for (name, help, v) in [
            (
                "pep_buffer_full",
                "Times a full buffer paused reading.",
                &self.pauses,
            ),
            (
                "pep_splice_fallbacks",
                "Connections set to splice that copied (no pipe could be made).",
                &self.splice_fallbacks,
            ),
            (
                "pep_server_leg_port_exhausted",
                "Server legs that found no free source port (the client was reset).",
                &self.port_exhausted,
            ),
            (
                "pep_accept_errors",
                "Errors from accept.",
                &self.accept_errors,
            ),
        ] {
            counter(e, name, help, &[(&[], l(v))])?;
        }
        counter(
            e,
            "pep_reloads",
            "Configuration reloads (SIGHUP), by result.",
            &[
                (&[("result", "ok")], l(&self.reloads)),
                (&[("result", "error")], l(&self.reload_errors)),
            ],
        )?;
        let t = &self.tunnel;
        for (name, help, v) in [
            (
                "pep_tunnel_configured",
                "1 when this node runs a two-node tunnel.",
                g(&t.configured),
            ),
            (
                "pep_tunnel_up",
                "1 while the two-node tunnel is connected.",
                g(&t.up),
            ),
            (
                "pep_tunnel_cwnd_bytes",
                "Tunnel congestion window.",
                l(&t.cwnd_bytes) as i64,
            ),
            (
                "pep_tunnel_flows_active",
                "Flows crossing the tunnel now.",
                g(&t.flows_active),
            ),
        ] {
            gauge(e, name, help, &[(&[], v)])?;
        }
        for (name, help, v) in [
            ("pep_tunnel_connects", "Tunnel connections established.", &t.connects),
            ("pep_tunnel_auth_failures", "Tunnel handshakes refused: the peer's certificate is not the pinned one.", &t.auth_failures),
            ("pep_tunnel_packets_lost", "Packets the tunnel's connection has declared lost (restarts with each connection).", &t.lost_packets),
            ("pep_tunnel_packets_sent", "Packets the tunnel's connection has sent (restarts with each connection).", &t.sent_packets),
        ] {
            counter(e, name, help, &[(&[], l(v))])?;
        }
        let ends: Vec<[(&str, &str); 1]> = TUNNEL_ENDS.iter().map(|n| [("how", *n)]).collect();
        let rows: Vec<(Labels, u64)> = ends
            .iter()
            .zip(&t.ended)
            .map(|(k, c)| (&k[..], l(c)))
            .collect();
        counter(
            e,
            "pep_tunnel_flows_ended",
            "Tunnelled flows ended, by how.",
            &rows,
        )?;
        counter(
            e,
            "pep_tunnel_bytes",
            "Bytes through the tunnel, by direction.",
            &[
                (&[("dir", "out")], l(&t.bytes_to_tunnel)),
                (&[("dir", "in")], l(&t.bytes_from_tunnel)),
            ],
        )?;
        let q = &t.lq;
        if q.enabled.load(Relaxed) == 1 {
            for (name, help, v) in [
                ("pep_localq_packets", "Packets waiting in split-start's local queue.", l(&q.packets) as i64),
                ("pep_localq_bytes", "Bytes waiting in split-start's local queue.", l(&q.bytes) as i64),
                ("pep_localq_credit_bytes", "Local queue credit: buffer_start less the bytes admitted and not yet read into the tunnel.", g(&q.credit)),
                ("pep_localq_flows", "Flows the local queue charges.", l(&q.flows) as i64),
                ("pep_localq_netlink_rcvbuf_bytes", "Receive buffer of the NFQUEUE socket (packets beyond it fail open).", l(&q.netlink_rcvbuf) as i64),
            ] {
                gauge(e, name, help, &[(&[], v)])?;
            }
            for (name, help, v) in [
                (
                    "pep_localq_arrived",
                    "Data segments offered to the local queue.",
                    &q.arrived,
                ),
                (
                    "pep_localq_passed_old",
                    "Retransmissions and duplicates passed at once.",
                    &q.passed_old,
                ),
                (
                    "pep_localq_admitted",
                    "Segments let into the stack.",
                    &q.admitted,
                ),
                (
                    "pep_localq_admitted_bytes",
                    "New payload bytes let into the stack.",
                    &q.admitted_bytes,
                ),
                (
                    "pep_localq_blocked_checks",
                    "Checks that found packets waiting and too little credit.",
                    &q.blocked_checks,
                ),
            ] {
                counter(e, name, help, &[(&[], l(v))])?;
            }
            counter(
                e,
                "pep_localq_dropped",
                "Local queue drops, by reason.",
                &[
                    (&[("reason", "overflow")], l(&q.dropped[0])),
                    (&[("reason", "early")], l(&q.dropped[1])),
                    (&[("reason", "forced")], l(&q.dropped[2])),
                ],
            )?;
        }
        gauge(
            e,
            "pep_tunnel_rtt_seconds",
            "Tunnel RTT estimate.",
            &[(&[], t.rtt_us.load(Relaxed) as f64 / 1e6)],
        )?;
        let (client, server): (Labels, Labels) = (&[("leg", "client")], &[("leg", "server")]);
        histogram(
            e,
            "pep_leg_rtt_seconds",
            "Smoothed RTT per leg, sampled from TCP_INFO.",
            &[(client, &self.rtt[0]), (server, &self.rtt[1])],
        )?;
        histogram(
            e,
            "pep_leg_cwnd_segments",
            "Congestion window per leg, sampled from TCP_INFO.",
            &[(client, &self.cwnd[0]), (server, &self.cwnd[1])],
        )?;
        histogram(
            e,
            "pep_server_leg_connect_seconds",
            "Time to open the server leg.",
            &[(&[], &self.setup)],
        )?;
        self.packet.encode(e)
    }
}

/// The process's own state under the names Prometheus' client libraries
/// use (`process_*`), read from /proc at each scrape, and the build.
#[derive(Debug)]
struct Process;

impl Collector for Process {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let e = &mut enc;
        gauge(
            e,
            "pep_build_info",
            "The running build: 1, labelled with its version.",
            &[(&[("version", env!("CARGO_PKG_VERSION"))], 1)],
        )?;
        gauge(
            e,
            "process_open_fds",
            "Open file descriptors.",
            &[(&[], crate::net::open_fds())],
        )?;
        gauge(
            e,
            "process_max_fds",
            "The descriptor limit (RLIMIT_NOFILE).",
            &[(&[], crate::net::nofile_limit())],
        )?;
        // SAFETY: sysconf has no preconditions.
        let (page, tick) = unsafe {
            (
                libc::sysconf(libc::_SC_PAGESIZE),
                libc::sysconf(libc::_SC_CLK_TCK),
            )
        };
        if let Some(rss) = std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|t| t.split_whitespace().nth(1)?.parse::<u64>().ok())
        {
            gauge(
                e,
                "process_resident_memory_bytes",
                "Resident memory.",
                &[(&[], rss * page.max(1) as u64)],
            )?;
        }
        // /proc/self/stat: fields after the command's closing parenthesis;
        // utime, stime are the 12th and 13th of those, starttime the 20th.
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let f: Vec<u64> = stat
            .rsplit_once(')')
            .map(|(_, r)| {
                r.split_whitespace()
                    .map(|v| v.parse().unwrap_or(0))
                    .collect()
            })
            .unwrap_or_default();
        let btime = std::fs::read_to_string("/proc/stat").ok().and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("btime ")?.trim().parse::<u64>().ok())
        });
        if let (Some(&ut), Some(&st), Some(&start), Some(btime)) =
            (f.get(11), f.get(12), f.get(19), btime)
        {
            let tick = tick.max(1) as f64;
            counter(
                e,
                "process_cpu_seconds",
                "User and system CPU time.",
                &[(&[], (ut + st) as f64 / tick)],
            )?;
            gauge(
                e,
                "process_start_time_seconds",
                "Start time, seconds since the Unix epoch.",
                &[(&[], btime as f64 + start as f64 / tick)],
            )?;
        }
        Ok(())
    }
}

/// Serves `GET /metrics` until the task is dropped.
/// Metrics connections served at once; more are closed at once. A
/// scraper needs one: idle ones must not take the clients' descriptors.
pub const METRICS_MAX_CONNECTIONS: i64 = 8;

/// Releases a metrics connection's place when its task ends.
struct Open(Arc<Metrics>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.metrics_open.fetch_sub(1, Relaxed);
    }
}

/// What the endpoint answers in: prometheus-client's encoder writes
/// OpenMetrics, which Prometheus asks for and parses natively.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The longest request head the endpoint reads (a scraper's is a few
/// hundred bytes); a longer one is answered as it stands.
const REQUEST_HEAD_MAX: usize = 8192;

pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>) {
    let registry = Arc::new(metrics.registry());
    loop {
        let s = match listener.accept().await {
            Ok((s, _)) => s,
            Err(_) => {
                // Out of descriptors (EMFILE) stays so until something
                // closes: retrying at once spun the CPU.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        if metrics.metrics_open.fetch_add(1, Relaxed) >= METRICS_MAX_CONNECTIONS {
            metrics.metrics_open.fetch_sub(1, Relaxed);
            drop(s);
            continue;
        }
        let open = Open(metrics.clone());
        let r = registry.clone();
        tokio::spawn(async move {
            let _open = open;
            let mut req = [0u8; REQUEST_HEAD_MAX];
            let mut n = 0;
            // Read the whole request head, not just its first line: closing
            // with request bytes unread makes the kernel answer with a reset,
            // which can destroy the response before the scraper reads it. A
            // slow or silent client is dropped after 5 s.
            let read = async {
                while n < req.len() && !req[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                    if s.ready(Interest::READABLE).await.is_err() {
                        return;
                    }
                    match s.try_read(&mut req[n..]) {
                        Ok(0) => return,
                        Ok(k) => n += k,
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(_) => return,
                    }
                }
            };
            if tokio::time::timeout(std::time::Duration::from_secs(5), read)
                .await
                .is_err()
            {
                return;
            }
            let line = String::from_utf8_lossy(&req[..n]);
            let (status, body) = if line.starts_with("GET /metrics ") || line.starts_with("GET / ")
            {
                ("200 OK", encode(&r))
            } else {
                ("404 Not Found", "try /metrics\n".to_string())
            };
            let kind = if status == "200 OK" {
                OPENMETRICS
            } else {
                "text/plain; charset=utf-8"
            };
            let resp = format!(
                "HTTP/1.0 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let mut out = resp.as_bytes();
            while !out.is_empty() {
                if s.writable().await.is_err() {
                    return;
                }
                match s.try_write(out) {
                    Ok(k) => out = &out[k..],
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => return,
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn metrics_connections_are_bounded_and_counted() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            let m = Arc::new(Metrics::default());
            let task = tokio::spawn(serve(l, m.clone()));
            // Idle connections, as a stuck scraper leaves them.
            let mut idle = Vec::new();
            for _ in 0..20 {
                idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
            }
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
            while m.metrics_open.load(Relaxed) < METRICS_MAX_CONNECTIONS
                && tokio::time::Instant::now() < deadline
            {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            assert_eq!(m.metrics_open.load(Relaxed), METRICS_MAX_CONNECTIONS);
            drop(idle);
            while m.metrics_open.load(Relaxed) > 0 && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            assert_eq!(m.metrics_open.load(Relaxed), 0);
            task.abort();
        });
    }

    use super::*;

    /// A scraper that writes its request line and headers in separate
    /// segments (as `write!` on an unbuffered socket does) gets the whole
    /// response: the endpoint reads the full head before it answers and
    /// closes, so the close is a FIN, never a reset.
    #[test]
    fn a_request_written_in_pieces_gets_the_whole_response() {
        use std::io::{Read, Write};
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let l = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = l.local_addr().unwrap();
        let m = Arc::new(Metrics::default());
        m.accepted.fetch_add(5, Relaxed);
        let task = rt.spawn(serve(l, m));
        for _ in 0..3 {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.set_nodelay(true).unwrap();
            s.write_all(b"GET /metrics HTTP/1.0\r\n").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(100));
            s.write_all(b"Host: x\r\nAccept: text/plain\r\n").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(100));
            s.write_all(b"\r\n").unwrap();
            let mut r = Vec::new();
            s.read_to_end(&mut r).unwrap();
            let r = String::from_utf8_lossy(&r);
            assert!(r.starts_with("HTTP/1.0 200 OK"), "{r}");
            assert!(r.contains("pep_connections_accepted_total 5"), "{r}");
            assert!(
                r.contains(&format!("Content-Type: {OPENMETRICS}\r\n")),
                "{r}"
            );
            assert!(r.ends_with("# EOF\n"), "{r}");
        }
        task.abort();
    }

    #[test]
    fn renders_prometheus_text() {
        let m = Arc::new(Metrics::default());
        m.accepted.fetch_add(3, Relaxed);
        m.refuse(Refusal::Limit);
        m.ended(Some(AbortReason::ConnectFailed));
        m.leg_sample(
            Leg::Server,
            LegInfo {
                rtt_us: 20_000,
                cwnd: 40,
                mss: 1448,
                total_retrans: 0,
            },
        );
        m.tunnel.sent_packets.store(40, Relaxed);
        m.rate_held_for_fairness[1].store(6, Relaxed);
        m.tunnel.end("reset_by_tunnel");
        m.tunnel.bytes_to_tunnel.store(7, Relaxed);
        let t = m.render();
        assert!(t.contains("pep_connections_accepted_total 3"), "{t}");
        assert!(t.contains("pep_tunnel_packets_sent_total 40"));
        assert!(t.contains(
            "# TYPE pep_client_rate_held_for_fairness counter\n\
             pep_client_rate_held_for_fairness_total{leg=\"client\"} 0\n\
             pep_client_rate_held_for_fairness_total{leg=\"server\"} 6\n"
        ));
        assert!(t.contains("process_open_fds "));
        assert!(t.contains("process_cpu_seconds_total "), "{t}");
        assert!(t.contains("process_resident_memory_bytes "));
        assert!(t.contains("pep_tunnel_flows_ended_total{how=\"reset_by_tunnel\"} 1"));
        assert!(t.contains("pep_tunnel_bytes_total{dir=\"out\"} 7"));
        assert!(t.contains("pep_connections_refused_total{reason=\"limit\"} 1"));
        assert!(t.contains("pep_connections_ended_total{how=\"connect_failed\"} 1"));
        assert!(t.contains("pep_leg_rtt_seconds_bucket{le=\"0.025\",leg=\"server\"} 1"));
        assert!(t.contains("pep_leg_rtt_seconds_count{leg=\"client\"} 0"));
        assert_eq!(m.refused(Refusal::Limit), 1);
    }

    #[test]
    fn the_local_queue_renders_only_while_it_runs() {
        let m = Arc::new(Metrics::default());
        assert!(!m.render().contains("pep_localq"));
        let q = &m.tunnel.lq;
        q.enabled.store(1, Relaxed);
        q.credit.store(-300, Relaxed);
        q.dropped[1].store(5, Relaxed);
        q.admitted_bytes.store(1448, Relaxed);
        let t = m.render();
        assert!(
            t.contains("pep_localq_dropped_total{reason=\"early\"} 5"),
            "{t}"
        );
        assert!(t.contains("pep_localq_dropped_total{reason=\"overflow\"} 0"));
        assert!(t.contains("pep_localq_credit_bytes -300"));
        assert!(t.contains("pep_localq_admitted_bytes_total 1448"));
        assert_eq!(q.dropped_total(), 5);
    }

    /// Every series contrib/'s dashboard and alert rules query is a
    /// sample name of a scrape (the local queue running, so its families
    /// are in): renaming a family, or the encoder's `_total`, cannot
    /// silently empty a panel. The root test `prometheus::` evaluates the
    /// queries themselves against a live daemon.
    #[test]
    fn every_series_contrib_queries_is_scraped() {
        let m = Arc::new(Metrics::default());
        m.tunnel.lq.enabled.store(1, Relaxed);
        let t = m.render();
        assert!(t.ends_with("# EOF\n"), "{t}");
        let samples: std::collections::HashSet<&str> = t
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split(['{', ' ']).next())
            .collect();
        let contrib = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib");
        let mut queried = 0;
        for file in ["grafana-dashboard.json", "prometheus-alerts.yml"] {
            let text = std::fs::read_to_string(contrib.join(file)).unwrap();
            for w in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if w.starts_with("pep_") || w.starts_with("process_") {
                    queried += 1;
                    assert!(
                        samples.contains(w),
                        "{file} queries {w}, not in a scrape:\n{t}"
                    );
                }
            }
        }
        assert!(queried >= 40, "{queried} series names found in contrib/");
    }
}
