//! The validated scenario: plain data, every reference resolved to an index,
//! every unit converted, every default applied.

use pep_core::host::HostCost;
use pep_core::queue::QueueLimit;
use pep_core::{Duration, KindFilter, Rate};
use serde::Deserialize;

use super::error::Diagnostic;

use pep_model::route::Routes;
/// The node kinds, link directions and routes of the shared model: the
/// lab routes by the same rule.
pub use pep_model::route::{Dir, NodeKind};

/// A network, the traffic on it and what to record, ready to simulate.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// Simulated time the run lasts.
    pub duration: Duration,
    /// Master seed; every random stream is derived from it and a label.
    pub seed: u64,
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
    /// After `count` expansion: one entry per TCP connection.
    pub flows: Vec<FlowSpec>,
    pub output: OutputSpec,
    /// pcap captures to write (`[[trace]]`); they never change results.
    pub traces: Vec<TraceSpec>,
    /// Static next hops, computed from `nodes` and `links`.
    pub routes: Routes,
    /// PEP agents on nodes (`[[agent]]`).
    pub agents: Vec<AgentSpec>,
    /// `scenario.cut`: the run is cut in two at this link (see
    /// [`CutSpec`]).
    pub cut: Option<CutSpec>,
    /// Settings the file makes that are valid but do nothing.
    pub warnings: Warnings,
}

/// Warnings found on load, in source order: settings that are valid but
/// have no effect on the run (docs/scenario-format.md lists them).
///
/// They describe the text, not the run: two points of an experiment that
/// make the same run must compare equal however they wrote it (the
/// experiment compares its points' scenarios by value and by a hash of
/// `Debug`), so every `Warnings` equals every other and its `Debug` is
/// the same.
#[derive(Clone, Default)]
pub struct Warnings(pub Vec<Diagnostic>);

impl PartialEq for Warnings {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Warnings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Warnings(..)")
    }
}

impl std::ops::Deref for Warnings {
    type Target = [Diagnostic];
    fn deref(&self) -> &[Diagnostic] {
        &self.0
    }
}

/// A run cut in two at one link (`scenario.cut = "<link>"`): the nodes on
/// each side run as a simulation of their own, on their own thread, and
/// exchange the packets crossing the link once per window of the link's
/// delay (conservative parallel simulation: nothing sent across can arrive
/// sooner). Validated: the link is the only path between the sides and
/// has a delay both ways.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutSpec {
    /// Index into [`Scenario::links`].
    pub link: usize,
    /// `far[node]`: the node is on the side of the link's `b` end.
    pub far: Vec<bool>,
}

/// A PEP agent: its kind (see [`crate::agent::KINDS`]), where it sits,
/// what it acts on, and its parameters (checked by the kind at load).
#[derive(Clone, Debug, PartialEq)]
pub struct AgentSpec {
    /// Written `name`, or `<kind>@<node>`.
    pub name: String,
    pub kind: String,
    /// Node indices, as many as the kind sits on.
    pub nodes: Vec<usize>,
    /// Flow indices: those listed, or every flow.
    pub flows: Vec<usize>,
    /// The rest of the table.
    pub params: toml::Table,
}

/// A pcap capture of packets as they finish serialization on a link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSpec {
    /// Index into [`Scenario::links`].
    pub link: usize,
    /// One direction, or both (merged in time order into one file).
    pub dirs: Vec<Dir>,
    /// Bytes kept per packet, Ethernet header included.
    pub snaplen: u32,
    /// File name, relative to the run's output directory.
    pub file: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSpec {
    pub name: String,
    pub kind: NodeKind,
    /// Per-packet processing cost of the packets this node sends or
    /// receives as an endpoint (not those it forwards); `None` is free.
    pub processing: Option<HostCost>,
}

/// A full-duplex link: two independent directions, each a serializer, a
/// propagation delay, a queue and a loss model.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    /// From the file, or `"<a>-<b>"` by default (a stable label for output
    /// columns and random-stream names).
    pub name: String,
    /// Node index of `between[0]`.
    pub a: usize,
    /// Node index of `between[1]`.
    pub b: usize,
    /// From `a` to `b`.
    pub forward: LinkDirSpec,
    /// From `b` to `a`.
    pub reverse: LinkDirSpec,
    /// Whether the two directions share one channel.
    pub medium: MediumSpec,
}

/// How a link's two directions use the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MediumSpec {
    /// Two independent channels.
    FullDuplex,
    /// One channel, one transmission at a time across both directions, in
    /// order of arrival; when both directions wait as the channel frees,
    /// the next transmission waits a uniform random time in `[0, backoff]`.
    HalfDuplex { backoff: Duration },
}

impl LinkSpec {
    pub fn dir(&self, d: Dir) -> &LinkDirSpec {
        match d {
            Dir::Forward => &self.forward,
            Dir::Reverse => &self.reverse,
        }
    }
    /// The node a packet sent in direction `d` leaves from.
    pub fn from_node(&self, d: Dir) -> usize {
        match d {
            Dir::Forward => self.a,
            Dir::Reverse => self.b,
        }
    }
    /// The node a packet sent in direction `d` arrives at.
    pub fn to_node(&self, d: Dir) -> usize {
        match d {
            Dir::Forward => self.b,
            Dir::Reverse => self.a,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct LinkDirSpec {
    /// Serialization rate, positive.
    pub rate: Rate,
    /// One-way propagation delay (may be zero).
    pub delay: Duration,
    /// The queue in front of this direction's transmitter.
    pub queue: QueueSpec,
    /// Applied to packets as they finish crossing.
    pub loss: LossSpec,
    /// Service that changes over time (a schedule, a trace, the LEO
    /// preset); `None`: `rate` and `delay` hold throughout. With one,
    /// `rate` and `delay` are the values at the start (a trace's mean
    /// rate; the LEO preset's least delay).
    pub service: Option<pep_core::link::service::ServiceSpec>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum QueueSpec {
    /// FIFO, dropping arrivals when full. The limit counts waiting packets
    /// (or bytes), not the one being serialized, as in ns-2.
    DropTail { limit: QueueLimit },
    /// Random Early Detection (see `docs/queues-and-links.md`).
    Red(RedSpec),
    /// Strict priority over DropTail bands, band 0 first.
    Priority {
        classify: ClassifySpec,
        /// Each band's own limit.
        limit: QueueLimit,
    },
    /// Weighted sharing between a data band and a pure-ACK band.
    TwoClass {
        /// Relative weights (positive; only their ratio matters).
        data_weight: u32,
        ack_weight: u32,
        /// Each band's own limit.
        limit: QueueLimit,
    },
    /// The Smart ACK Dropper (Shekhar et al.) in front of `inner`.
    Sad {
        inner: Box<QueueSpec>,
        /// Most flows it keeps state for.
        max_flows: u32,
    },
}

/// RED's settings; `None` values are computed from the link at build time
/// as ns-2 2.35 does.
#[derive(Clone, Debug, PartialEq)]
pub struct RedSpec {
    pub limit: QueueLimit,
    /// In packets (units of `mean_pktsize` bytes in bytes mode); `None`:
    /// ns-2's automatic value.
    pub min_th: Option<f64>,
    /// `None`: `3 min_th`.
    pub max_th: Option<f64>,
    /// `None`: ns-2's automatic weight from the link's rate and delay.
    pub q_w: Option<f64>,
    pub max_p: f64,
    pub gentle: bool,
    pub wait: bool,
    pub bytes: bool,
    pub mean_pktsize: u32,
    /// Queueing delay the automatic `min_th` aims at (twice it).
    pub target_delay: Duration,
}

/// How a priority queue sorts packets into bands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClassifySpec {
    /// Two bands: pure ACKs in band 0, everything else in band 1.
    AcksFirst,
    /// Two bands: data in band 0, pure ACKs in band 1.
    DataFirst,
    /// `bands` bands; the listed flows (indices into
    /// [`Scenario::flows`]) go to their band, the others to the last.
    Flow { bands: u8, flows: Vec<(usize, u8)> },
}

#[derive(Clone, Debug, PartialEq)]
pub enum LossSpec {
    None,
    /// Each packet (of the kind `applies_to` selects) lost independently
    /// with probability `p` in [0, 1].
    Bernoulli {
        p: f64,
        applies_to: KindFilter,
    },
    /// Gilbert-Elliott: lost with `loss_good` / `loss_bad` in the Good /
    /// Bad state, then Good->Bad with `p` and Bad->Good with `r`, per packet
    /// of the selected kind.
    GilbertElliott {
        p: f64,
        r: f64,
        loss_good: f64,
        loss_bad: f64,
        applies_to: KindFilter,
    },
    /// Scripted: the listed data segments of flow `flow` (an index into
    /// [`Scenario::flows`]) are lost. Segment `n` is the one carrying payload
    /// bytes `(n-1)*mss .. n*mss` of the flow; each listed entry drops one
    /// transmission of it, so a number listed twice also drops its first
    /// retransmission. Order as written.
    Drop {
        flow: usize,
        segments: Vec<u64>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    pub name: String,
    /// Sending node.
    pub src: usize,
    /// Receiving node (runs the sink).
    pub dst: usize,
    /// When the sender opens (or, without a handshake, starts sending).
    pub start: Duration,
    pub source: SourceSpec,
    /// Bidirectional flows: what the receiving host's application sends
    /// back over the same connection (`bulk` or `finite`). Both ends use
    /// the flow's `tcp` and `sink` settings; ACKs ride on data.
    pub reverse: Option<SourceSpec>,
    pub tcp: TcpSpec,
    pub sink: SinkSpec,
}

/// What the application gives the sender.
#[derive(Clone, Debug, PartialEq)]
pub enum SourceSpec {
    /// Always has data (FTP in ns-2).
    Bulk,
    /// Sends `bytes` of payload, then closes.
    Finite { bytes: u64 },
    /// A Pareto on/off application writing over time (ns-2's
    /// `Application/Traffic/Pareto`); the connection stays open.
    Pareto(crate::traffic::OnOffConfig),
}

/// The congestion control a flow's sender runs (`tcp.cc`): a window growth
/// algorithm and, unless `tcp.recovery` says otherwise, a loss recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CcKind {
    /// Reno growth, Tahoe recovery (go-back-N from one segment).
    Tahoe,
    /// Reno growth, RFC 5681 fast recovery.
    Reno,
    /// Reno growth, RFC 6582 recovery.
    NewReno,
    /// Reno growth, RFC 6675 SACK recovery (needs `sink.sack = true`).
    Sack,
    /// RFC 9438 growth; SACK recovery if the sink sends SACK blocks, else
    /// NewReno.
    Cubic,
    /// CUBIC v2.1 as ns-2.35's `Agent/TCP/Linux` runs it (Linux 2.6.22,
    /// beta 819/1024); recovery as for CUBIC.
    #[serde(rename = "cubic-ns2")]
    CubicNs2,
    /// Westwood+ growth and reduction; recovery as for CUBIC.
    Westwood,
    /// BBR v1 as Linux's `tcp_bbr` (`pep_core::cc::Bbr`): cwnd and a pacing
    /// rate from a model of the path; recovery as for CUBIC (choose the
    /// `linux` profile or `sink.sack = true` for SACK, as Linux runs it).
    Bbr,
}

/// A named bundle of TCP and sink defaults (`tcp.profile`); see
/// `scenario/profile.rs` and docs/tcp.md for what each sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// ns-2 2.35's one-way agents: packet-counted windows, 10 ms tick RTT
    /// estimator, `window_` 20, `windowInit_` 2, SYN before data.
    Ns2,
    /// Linux: CUBIC with SACK, IW10, PRR, HyStart++, 40 ms delayed ACKs.
    Linux,
}

/// A loss recovery algorithm (`tcp.recovery`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecoveryKind {
    Tahoe,
    Reno,
    NewReno,
    Sack,
}

/// TCP sender settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpSpec {
    /// The profile whose bundle these settings started from, if any; it
    /// also selects the model variants the bundle implies (build.rs).
    pub profile: Option<Profile>,
    pub cc: CcKind,
    /// Loss recovery as written; `None` takes the one `cc` implies (see
    /// [`TcpSpec::recovery`]).
    pub recovery: Option<RecoveryKind>,
    /// Payload bytes per full segment.
    pub mss: u32,
    /// IP + TCP header bytes each segment carries on the wire.
    pub header: u32,
    /// Initial congestion window, in segments.
    pub init_cwnd: u32,
    pub min_rto: Duration,
    pub initial_rto: Duration,
    pub max_rto: Duration,
    /// RFC 6298's clock granularity G: the floor under the variance term,
    /// RTO = SRTT + max(G, 4 x RTTVAR). (Quantising samples to ns-2's
    /// `tcpTick_` is a separate setting of the TCP model.)
    pub clock_granularity: Duration,
    /// Open with a SYN exchange before sending data.
    pub handshake: bool,
    /// Most segments sent back to back in response to one ACK; `None` is
    /// unlimited (ns-2's `maxburst_ = 0`).
    pub max_burst: Option<u32>,
    /// Pace segments at Linux's cwnd/srtt-derived rate.
    pub pacing: bool,
    /// Cap on the pacing rate (`SO_MAX_PACING_RATE`); needs `pacing`.
    pub max_pacing_rate: Option<Rate>,
    /// Send buffer in bytes (`SO_SNDBUF`); `None`: unlimited.
    pub sndbuf: Option<u64>,
    /// RACK-TLP (RFC 8985) loss detection and tail loss probes; acts with
    /// SACK recovery only. The `linux` profile turns it on.
    pub rack: bool,
}

impl TcpSpec {
    /// The loss recovery the sender runs: `recovery` if written, else the
    /// one `cc` names (`tahoe`, `reno`, `newreno`, `sack`), else, for
    /// `cubic`, `westwood` and `bbr`, SACK when the sink sends SACK blocks and
    /// NewReno otherwise (SACK is negotiated, as in Linux).
    pub fn recovery(&self, sink_sack: bool) -> RecoveryKind {
        if let Some(r) = self.recovery {
            return r;
        }
        match self.cc {
            CcKind::Tahoe => RecoveryKind::Tahoe,
            CcKind::Reno => RecoveryKind::Reno,
            CcKind::NewReno => RecoveryKind::NewReno,
            CcKind::Sack => RecoveryKind::Sack,
            CcKind::Cubic | CcKind::CubicNs2 | CcKind::Westwood | CcKind::Bbr if sink_sack => {
                RecoveryKind::Sack
            }
            CcKind::Cubic | CcKind::CubicNs2 | CcKind::Westwood | CcKind::Bbr => {
                RecoveryKind::NewReno
            }
        }
    }
}

/// TCP receiver settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkSpec {
    /// Advertised window in bytes, at least one MSS. Modelled as a 32-bit
    /// value (window scaling assumed), so long fat paths are not capped at
    /// 64 KiB.
    pub rwnd: u32,
    pub ack: AckSpec,
    /// Report SACK blocks in ACKs.
    pub sack: bool,
    /// The receiving application.
    pub app: AppReadSpec,
}

/// How the receiving application takes data from the receive buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AppReadSpec {
    /// Everything in order is taken at once; the window stays `rwnd`.
    #[default]
    Immediate,
    /// A buffered receiver: data waits in a buffer of `rwnd` bytes and the
    /// application reads up to `chunk` bytes per read, repeatedly, `when`
    /// it runs; the window is the free space, with BSD's window updates.
    Reader {
        chunk: u64,
        when: ReadWhen,
        /// Application time per `chunk` read, prorated (FTP writing to
        /// disk); it reads nothing meanwhile.
        work: Duration,
    },
}

/// When a [`AppReadSpec::Reader`] runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadWhen {
    /// As soon as data is delivered.
    Arrival,
    /// When the receiving host's processor has no packet left to process
    /// (packet processing preempts the application); as `arrival` on a host
    /// without a processing cost.
    #[default]
    Idle,
}

/// When the sink acknowledges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AckSpec {
    /// One ACK per data segment.
    Every,
    /// One ACK per `count` in-order segments, or when `timeout` has passed
    /// since the first unacknowledged one; out-of-order data is acknowledged
    /// at once.
    /// With `tick`, the timer fires at the first multiple of `tick` at or
    /// after `timeout` has passed (BSD: a 200 ms tick, timeout 0, so 0 to
    /// 200 ms after deferral).
    Delayed {
        count: u32,
        timeout: Duration,
        tick: Option<Duration>,
    },
    /// Delayed ACKs whose count adapts between `min` and `max` (see
    /// `pep_core::ack_interval`); `timeout` and `tick` as for `Delayed`.
    Adaptive {
        min: u32,
        max: u32,
        timeout: Duration,
        tick: Option<Duration>,
    },
}

/// What to measure and write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputSpec {
    /// Bin width for goodput and link utilisation.
    pub interval: Duration,
    /// Period at which queue lengths and cwnd are sampled.
    pub sample: Duration,
    /// Which series to write, in the order given, without repeats.
    pub series: Vec<Series>,
    /// Write every flow's rows of the per-flow series (`goodput`, `cwnd`)
    /// even above [`crate::spread::PER_FLOW_LIMIT`] flows, where they are
    /// otherwise written as distributions across the flows.
    pub per_flow: bool,
}

/// A family of output series (one CSV file each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Series {
    /// Per-flow and total goodput per `interval`.
    Goodput,
    /// Per-direction link utilisation per `interval`.
    Links,
    /// Queue length per `sample`.
    Queues,
    /// Congestion window per flow per `sample`.
    Cwnd,
    /// Every segment each sender sends and receives (`tseq.csv`). Large,
    /// so not in [`Series::ALL`], the default.
    Tseq,
}

impl Series {
    pub const ALL: [Series; 4] = [Series::Goodput, Series::Links, Series::Queues, Series::Cwnd];
}

impl Scenario {
    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }
    pub fn flow_index(&self, name: &str) -> Option<usize> {
        self.flows.iter().position(|f| f.name == name)
    }
    pub fn link_index(&self, name: &str) -> Option<usize> {
        self.links.iter().position(|l| l.name == name)
    }
    /// The nodes `hops` (link, direction) pass through from `src`, `src`
    /// first.
    pub fn hop_nodes(&self, src: usize, hops: &[(usize, Dir)]) -> Vec<usize> {
        let mut at = vec![src];
        at.extend(hops.iter().map(|&(l, d)| self.links[l].to_node(d)));
        at
    }
    /// The nodes of the route from `src` to `dst`, both ends included (only
    /// `src` if there is none).
    pub fn route_nodes(&self, src: usize, dst: usize) -> Vec<usize> {
        self.hop_nodes(src, &self.routes.path(src, dst).unwrap_or_default())
    }
    /// `a -> r1 -> b`: nodes by name, for messages.
    pub fn nodes_text(&self, nodes: &[usize]) -> String {
        let names: Vec<&str> = nodes.iter().map(|&n| self.nodes[n].name.as_str()).collect();
        names.join(" -> ")
    }
    /// The name of every link direction in the outputs, forward then
    /// reverse of each link in file order: `"a->b"`, and for the second and
    /// later parallel links between the same nodes `"a->b#2"`, `"a->b#3"`.
    pub fn link_directions(&self) -> Vec<String> {
        let mut seen: std::collections::HashMap<(usize, usize), usize> = Default::default();
        let mut out = Vec::with_capacity(self.links.len() * 2);
        for l in &self.links {
            for d in [Dir::Forward, Dir::Reverse] {
                let (from, to) = (l.from_node(d), l.to_node(d));
                let k = seen.entry((from, to)).or_insert(0);
                *k += 1;
                let name = format!("{}->{}", self.nodes[from].name, self.nodes[to].name);
                out.push(if *k == 1 { name } else { format!("{name}#{k}") });
            }
        }
        out
    }
    /// Overrides the master seed (the CLI's `--seed`, or repeated runs).
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
}
