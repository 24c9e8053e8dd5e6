//! Turning a validated [`Scenario`] into a runnable [`Simulation`].

use pep_core::link::LinkDir;
use pep_core::loss::{LossModel, ScriptedDrop};
use pep_core::queue::Queue;
use pep_core::rng::Stream;
use pep_core::{FlowId, Instant, Seq};

use crate::events::{Armed, Event, EventQueue};
use crate::metrics::{Metrics, SeriesSet};
use crate::scenario::{
    AckSpec, CcKind, Dir, LinkDirSpec, LossSpec, Profile, QueueSpec, RecoveryKind, Scenario,
    Series, SourceSpec,
};
use crate::sim::{Flow, Port, RunInfo, Simulation, NO_ROUTE};
use crate::tcp::{AckPolicy, AppSource, Growth, Recovery, SinkConfig, TcpConfig, TcpSink};
use crate::traffic::OnOff;
use pep_core::cc::WindowUnit;
use pep_core::rtt::RttMode;

/// The port (link direction) index of `link` in direction `d`.
fn port_index(link: usize, d: Dir) -> usize {
    link * 2
        + match d {
            Dir::Forward => 0,
            Dir::Reverse => 1,
        }
}

/// The sender configuration a flow's scenario settings describe.
pub fn tcp_config(t: &crate::scenario::TcpSpec, sink: &crate::scenario::SinkSpec) -> TcpConfig {
    let mut cfg = base_tcp_config(t, sink);
    if t.profile == Some(Profile::Ns2) {
        // ns-2's model pieces: windows in packets, its tick-based RTT
        // arithmetic (boot_time_ at half a tick, the mean of ns-2's draw),
        // and "ssthresh_ = int(wnd_)" at the start.
        if let Growth::Reno { unit, .. } = &mut cfg.growth {
            *unit = WindowUnit::Packets;
        }
        cfg.rto_tick = Some(t.clock_granularity);
        cfg.rtt_mode = RttMode::Ns2 {
            boot: t.clock_granularity / 2,
        };
        cfg.initial_ssthresh = (sink.rwnd / t.mss) as u64 * t.mss as u64;
        cfg.limited_transmit = true; // singledup_ 1
    }
    if t.profile == Some(Profile::Linux) {
        cfg.prr = true;
        cfg.hystart = true;
        cfg.timestamps = true;
        cfg.limited_transmit = true;
    }
    cfg
}

fn base_tcp_config(t: &crate::scenario::TcpSpec, sink: &crate::scenario::SinkSpec) -> TcpConfig {
    TcpConfig {
        // What the sender assumes until the first ACK tells it the window.
        initial_rwnd: sink.rwnd,
        mss: t.mss,
        hdr_len: t.header as u16,
        initial_window: t.init_cwnd,
        growth: match t.cc {
            CcKind::Tahoe | CcKind::Reno | CcKind::NewReno | CcKind::Sack => Growth::default(),
            CcKind::Cubic => Growth::Cubic(Default::default()),
            CcKind::Westwood => Growth::Westwood,
        },
        recovery: match t.recovery(sink.sack) {
            RecoveryKind::Tahoe => Recovery::Tahoe,
            RecoveryKind::Reno => Recovery::Reno,
            RecoveryKind::NewReno => Recovery::NewReno,
            RecoveryKind::Sack => Recovery::Sack,
        },
        min_rto: t.min_rto,
        initial_rto: t.initial_rto,
        max_rto: t.max_rto,
        clock_granularity: t.clock_granularity,
        handshake: t.handshake,
        max_burst: t.max_burst,
        ..TcpConfig::default()
    }
}

/// The receiver configuration a flow's scenario settings describe.
pub fn sink_config(s: &crate::scenario::SinkSpec, header: u32) -> SinkConfig {
    SinkConfig {
        rwnd: s.rwnd,
        hdr_len: header as u16,
        ack: match s.ack {
            AckSpec::Every => AckPolicy::Every,
            AckSpec::Delayed { count, timeout, .. } => AckPolicy::Delayed { count, timeout },
        },
        delack_tick: match s.ack {
            AckSpec::Delayed { tick, .. } => tick,
            AckSpec::Every => None,
        },
        sack: s.sack,
        ..SinkConfig::default()
    }
}

impl Simulation {
    /// Builds the network, flows and measures a scenario describes.
    pub fn new(sc: &Scenario) -> Simulation {
        let n_nodes = sc.nodes.len();
        let flow_cfgs: Vec<TcpConfig> = sc
            .flows
            .iter()
            .map(|f| tcp_config(&f.tcp, &f.sink))
            .collect();

        let mut ports = Vec::with_capacity(sc.links.len() * 2);
        for l in &sc.links {
            for d in [Dir::Forward, Dir::Reverse] {
                let spec = l.dir(d);
                let from = &sc.nodes[l.from_node(d)].name;
                let to = &sc.nodes[l.to_node(d)].name;
                let label = format!(
                    "link/{}/{}",
                    l.name,
                    if d == Dir::Forward { "fwd" } else { "rev" }
                );
                ports.push(Port {
                    link: link_dir(spec, sc.seed, &label, &flow_cfgs),
                    armed: Armed::default(),
                    to: l.to_node(d) as u32,
                    name: format!("{from}->{to}"),
                    max_queue: 0,
                });
            }
        }

        let mut next_hop = vec![NO_ROUTE; n_nodes * n_nodes];
        for node in 0..n_nodes {
            for dst in 0..n_nodes {
                if let Some((link, d)) = sc.routes.next_hop(node, dst) {
                    next_hop[node * n_nodes + dst] = port_index(link, d) as u32;
                }
            }
        }

        let mut queue = EventQueue::new();
        let flows = sc
            .flows
            .iter()
            .zip(flow_cfgs)
            .enumerate()
            .map(|(i, (f, cfg))| {
                let start = Instant::ZERO + f.start;
                queue.schedule(start, Event::FlowStart(i as u32));
                Flow {
                    name: f.name.clone(),
                    src: f.src as u32,
                    dst: f.dst as u32,
                    start,
                    data_start: cfg.isn + 1,
                    sink: TcpSink::new(FlowId(i as u32), &sink_config(&f.sink, f.tcp.header)),
                    app: match f.source {
                        SourceSpec::Bulk => AppSource::Bulk,
                        SourceSpec::Finite { bytes } => AppSource::Finite(bytes),
                        SourceSpec::Pareto(_) => AppSource::Open(0),
                    },
                    generator: match &f.source {
                        SourceSpec::Pareto(cfg) => Some(OnOff::new(
                            cfg,
                            start,
                            Stream::derive(sc.seed, &format!("flow/{}/app", f.name)),
                        )),
                        _ => None,
                    },
                    generator_armed: Armed::default(),
                    cfg,
                    sender: None,
                    sender_armed: Armed::default(),
                    sink_armed: Armed::default(),
                    retransmissions: Vec::new(),
                    local_drops: 0,
                }
            })
            .collect::<Vec<_>>();

        let out = &sc.output;
        let series = SeriesSet {
            goodput: out.series.contains(&Series::Goodput),
            links: out.series.contains(&Series::Links),
            queues: out.series.contains(&Series::Queues),
            cwnd: out.series.contains(&Series::Cwnd),
        };
        if series.goodput || series.links {
            queue.schedule(Instant::ZERO + out.interval, Event::Bin);
        }
        if series.queues || series.cwnd {
            queue.schedule(Instant::ZERO, Event::Sample);
        }
        let metrics = Metrics::new(out.interval, out.sample, series, flows.len(), ports.len());

        Simulation {
            now: Instant::ZERO,
            end: Instant::ZERO + sc.duration,
            queue,
            ports,
            next_hop,
            n_nodes,
            flows,
            metrics,
            events: 0,
            info: RunInfo {
                scenario: sc.name.clone(),
                seed: sc.seed,
                node_names: sc.nodes.iter().map(|n| n.name.clone()).collect(),
            },
            traces: Vec::new(),
        }
    }
}

fn link_dir(
    spec: &LinkDirSpec,
    seed: u64,
    label: &str,
    flows: &[TcpConfig],
) -> LinkDir<crate::packet::Packet> {
    let queue = match spec.queue {
        QueueSpec::DropTail { limit } => Queue::drop_tail(limit),
    };
    let loss = match &spec.loss {
        LossSpec::None => LossModel::None,
        LossSpec::Bernoulli { p } => LossModel::Bernoulli {
            p: *p,
            rng: Box::new(Stream::derive(seed, &format!("{label}/loss"))),
        },
        LossSpec::Drop { flow, segments } => {
            let cfg = &flows[*flow];
            LossModel::Scripted {
                pending: segments
                    .iter()
                    .map(|&n| ScriptedDrop {
                        flow: FlowId(*flow as u32),
                        seq: data_seq(cfg.isn, cfg.mss, n),
                    })
                    .collect(),
            }
        }
    };
    LinkDir::new(spec.rate, spec.delay, queue, loss)
}

/// Sequence number of the first byte of 1-based data segment `n`.
fn data_seq(isn: Seq, mss: u32, n: u64) -> Seq {
    isn + 1 + ((n.saturating_sub(1) * mss as u64) as u32)
}
