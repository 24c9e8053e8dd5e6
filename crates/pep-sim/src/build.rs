//! Turning a validated [`Scenario`] into a runnable [`Simulation`].

use pep_core::host::Processor;
use pep_core::link::LinkDir;
use pep_core::loss::{GilbertElliott, LossModel, ScriptedDrop};
use pep_core::medium::HalfDuplex;
use pep_core::queue::red::{ns2_min_th, ns2_ptc, ns2_q_w};
use pep_core::queue::{Classful, Classifier, Queue, RedParams, Scheduler};
use pep_core::rng::Stream;
use pep_core::{Duration, FlowId, Instant, KindFilter, Rate, Seq};

use crate::agent::{self, AgentSite, NodeAgent, Outbox};
use crate::events::{Armed, Event, EventQueue};
use crate::hops::Hops;
use crate::metrics::{Metrics, SeriesSet};
use crate::packet::Packet;
use crate::scenario::{
    AckSpec, AgentSpec, AppReadSpec, CcKind, ClassifySpec, Dir, LinkDirSpec, LossSpec, MediumSpec,
    NodeKind, Profile, QueueSpec, ReadWhen, RecoveryKind, RedSpec, Scenario, Series, SourceSpec,
};
use crate::sim::{AgentSlot, Cpu, Flow, Port, Reader, RunInfo, Simulation, NONE};
use crate::tcp::{
    AckPolicy, AppSource, Growth, PacingConfig, Recovery, SinkConfig, TcpConfig, TcpSink,
};
use crate::traffic::OnOff;
use pep_core::cc::WindowUnit;
use pep_core::rtt::RttMode;

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
        // The kernel's own window growth (tcp_cong.c, tcp_cubic.c): slow
        // start by packets delivered, its integer CUBIC (docs/tcp.md).
        cfg.growth = match cfg.growth {
            Growth::Reno { .. } => Growth::RenoLinux,
            Growth::Cubic(_) => Growth::CubicLinux,
            g => g,
        };
        cfg.prr = true;
        // HyStart++ where the kernel's own is not modelled: tcp_cubic has
        // its HyStart (cubic_linux.rs), Linux's Reno none.
        cfg.hystart = !matches!(cfg.growth, Growth::RenoLinux | Growth::CubicLinux);
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
            CcKind::CubicNs2 => Growth::CubicNs2,
            CcKind::Westwood => Growth::Westwood,
            CcKind::Bbr => Growth::Bbr,
        },
        recovery: match t.recovery(sink.sack) {
            RecoveryKind::Tahoe => Recovery::Tahoe,
            RecoveryKind::Reno => Recovery::Reno,
            RecoveryKind::NewReno => Recovery::NewReno,
            // ns-2's SACK agent is `Sack1`; its Linux agent (`cubic-ns2`)
            // has its own recovery, modelled on RFC 6675's, and RACK-TLP
            // (which ns-2 lacks) marks losses on RFC 6675's scoreboard.
            RecoveryKind::Sack
                if t.profile == Some(crate::scenario::Profile::Ns2)
                    && t.cc != CcKind::CubicNs2
                    && !t.rack =>
            {
                Recovery::Sack1
            }
            RecoveryKind::Sack => Recovery::Sack,
        },
        min_rto: t.min_rto,
        initial_rto: t.initial_rto,
        max_rto: t.max_rto,
        clock_granularity: t.clock_granularity,
        handshake: t.handshake,
        max_burst: t.max_burst,
        pacing: t.pacing.then(|| PacingConfig {
            max_rate: t.max_pacing_rate,
            ..PacingConfig::default()
        }),
        sndbuf: t.sndbuf.unwrap_or(u64::MAX),
        rack: t.rack,
        ..TcpConfig::default()
    }
}

/// The reverse application of a bidirectional flow (validated: bulk or
/// finite).
fn reverse_app(r: &SourceSpec) -> AppSource {
    match r {
        SourceSpec::Finite { bytes } => AppSource::Finite(*bytes),
        _ => AppSource::Bulk,
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
            AckSpec::Adaptive {
                min, max, timeout, ..
            } => AckPolicy::Adaptive { min, max, timeout },
        },
        delack_tick: match s.ack {
            AckSpec::Delayed { tick, .. } | AckSpec::Adaptive { tick, .. } => tick,
            AckSpec::Every => None,
        },
        sack: s.sack,
        app_reads: s.app != crate::scenario::AppReadSpec::Immediate,
        ..SinkConfig::default()
    }
}

impl Simulation {
    /// Builds the network, flows and measures a scenario describes. A
    /// scenario cut in two (`scenario.cut`) builds both sides, the far one
    /// held by the near one (see `cut.rs`).
    pub fn new(sc: &Scenario) -> Simulation {
        let Some(c) = &sc.cut else {
            return Self::build(sc, None);
        };
        let l = &sc.links[c.link];
        let window = l.forward.delay.min(l.reverse.delay);
        let mut near = Self::build(sc, Some(false));
        let mut far = Self::build(sc, Some(true));
        // Each side's direction toward the other delivers nothing where it
        // sends: its packets move across at each window's end, and the
        // other side's copy delivers them.
        near.ports[c.link * 2].armed = Armed::never();
        far.ports[c.link * 2 + 1].armed = Armed::never();
        near.cut = Some(Box::new(crate::cut::Cut::new(c, far, window)));
        near
    }

    /// One side of a cut run (`Some(far)`), or the whole run: a side only
    /// starts the flows that send from its nodes and wakes the agents on
    /// them.
    fn build(sc: &Scenario, side: Option<bool>) -> Simulation {
        let here = |node: usize| match (side, &sc.cut) {
            (Some(far), Some(c)) => c.far[node] == far,
            _ => true,
        };
        let n_nodes = sc.nodes.len();
        let flow_cfgs: Vec<TcpConfig> = sc
            .flows
            .iter()
            .map(|f| TcpConfig {
                // Bidirectional: the sender's host receives the reverse data
                // (no application reads there: it takes data as it arrives).
                reverse: f.reverse.as_ref().map(|_| SinkConfig {
                    mss: f.tcp.mss,
                    app_reads: false,
                    dsack: f.tcp.rack,
                    ..sink_config(&f.sink, f.tcp.header)
                }),
                ..tcp_config(&f.tcp, &f.sink)
            })
            .collect();

        let mut ports: Vec<Port> = Vec::with_capacity(sc.links.len() * 2);
        let mut media = Vec::new();
        // In link order, forward then reverse: port `2 * link + reverse`,
        // the number `Routes::hop` gives, so routes need no port table.
        let mut names = sc.link_directions().into_iter();
        let mut port_names = Vec::with_capacity(sc.links.len() * 2);
        for l in &sc.links {
            let base = ports.len();
            for d in [Dir::Forward, Dir::Reverse] {
                let spec = l.dir(d);
                let label = format!(
                    "link/{}/{}",
                    l.name,
                    if d == Dir::Forward { "fwd" } else { "rev" }
                );
                port_names.push(names.next().unwrap_or_default());
                ports.push(Port {
                    link: link_dir(spec, sc.seed, &label, &flow_cfgs),
                    armed: Armed::default(),
                    to: l.to_node(d) as u32,
                    max_queue: 0,
                    medium: NONE,
                });
            }
            if let MediumSpec::HalfDuplex { backoff } = l.medium {
                let (lo, hi) = ports.split_at_mut(base + 1);
                let rng = Stream::derive(sc.seed, &format!("link/{}/medium", l.name));
                media.push(HalfDuplex::new(
                    &mut lo[base].link,
                    &mut hi[0].link,
                    backoff,
                    rng,
                ));
                lo[base].medium = media.len() as u32 - 1;
                hi[0].medium = media.len() as u32 - 1;
            }
        }

        let mut cpus = Vec::new();
        let mut node_cpu = vec![NONE; n_nodes];
        for (i, n) in sc.nodes.iter().enumerate() {
            if let Some(cost) = n.processing {
                let rng = Stream::derive(sc.seed, &format!("node/{}/processing", n.name));
                node_cpu[i] = cpus.len() as u32;
                cpus.push(Cpu {
                    proc: Processor::new(cost, rng),
                    armed: Armed::default(),
                    node: i as u32,
                    readers: Vec::new(),
                });
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
                if here(f.src) {
                    queue.schedule(start, Event::FlowStart(i as u32));
                }
                Flow {
                    name: f.name.clone(),
                    src: f.src as u32,
                    dst: f.dst as u32,
                    start,
                    data_start: cfg.isn + 1,
                    sink: {
                        let sink = TcpSink::new(
                            FlowId(i as u32),
                            &SinkConfig {
                                mss: f.tcp.mss,
                                // D-SACK for RACK's reordering window (the
                                // linux profile), as Linux's tcp_dsack.
                                dsack: f.tcp.rack,
                                ..sink_config(&f.sink, f.tcp.header)
                            },
                        );
                        match &f.reverse {
                            None => sink,
                            Some(r) => sink.with_reverse(&cfg, reverse_app(r)),
                        }
                    },
                    reader: match f.sink.app {
                        AppReadSpec::Immediate => None,
                        AppReadSpec::Reader { chunk, when, work } => Some(Reader {
                            chunk,
                            when_idle: when == ReadWhen::Idle,
                            work,
                        }),
                    },
                    reader_busy: Instant::ZERO,
                    reader_armed: Armed::default(),
                    app: match f.source {
                        SourceSpec::Bulk => AppSource::Bulk,
                        SourceSpec::Finite { bytes } => AppSource::Finite(bytes),
                        SourceSpec::Pareto(_) => AppSource::Open(0),
                    },
                    generator: match &f.source {
                        SourceSpec::Pareto(cfg) => Some(Box::new(OnOff::new(
                            cfg,
                            start,
                            Stream::derive(sc.seed, &format!("flow/{}/app", f.name)),
                        ))),
                        _ => None,
                    },
                    generator_armed: Armed::default(),
                    cfg: Box::new(cfg),
                    sender: None,
                    sender_armed: Armed::default(),
                    sink_armed: Armed::default(),
                    retransmissions: Vec::new(),
                    local_drops: 0,
                    src_cpu: node_cpu[f.src],
                    dst_cpu: node_cpu[f.dst],
                }
            })
            .collect::<Vec<_>>();
        for (i, f) in flows.iter().enumerate() {
            if f.reader.is_some_and(|r| r.when_idle) && f.dst_cpu != NONE {
                cpus[f.dst_cpu as usize].readers.push(i as u32);
            }
        }

        let out = &sc.output;
        let series = SeriesSet {
            goodput: out.series.contains(&Series::Goodput),
            links: out.series.contains(&Series::Links),
            queues: out.series.contains(&Series::Queues),
            cwnd: out.series.contains(&Series::Cwnd),
            tseq: out.series.contains(&Series::Tseq),
        };
        if series.goodput || series.links {
            queue.schedule(Instant::ZERO + out.interval, Event::Bin);
        }
        if series.queues || series.cwnd {
            queue.schedule(Instant::ZERO, Event::Sample);
        }
        if series.queues {
            // Queueing-delay percentiles for the summary (FIFO queues).
            for p in &mut ports {
                p.link.queue.enable_sojourn();
            }
        }
        let mut metrics = Metrics::new(out.interval, out.sample, series, flows.len(), ports.len());
        metrics.per_flow |= out.per_flow;

        let mut node_agent = vec![NONE; n_nodes];
        let agents = sc
            .agents
            .iter()
            .enumerate()
            .map(|(i, a)| {
                for &n in &a.nodes {
                    node_agent[n] = i as u32;
                }
                let mut agent = build_agent(sc, a, i);
                let on_side = a.nodes.iter().filter(|&&n| here(n)).count();
                if on_side > 0 && on_side < a.nodes.len() {
                    if let Err(e) = agent.cut(&|n| here(n as usize)) {
                        // Validation asked the same question at load.
                        panic!("agent {:?} cannot be cut: {e}", a.name);
                    }
                }
                AgentSlot {
                    agent,
                    armed: Armed::default(),
                    name: a.name.clone(),
                    kind: a.kind.clone(),
                    nodes: a.nodes.iter().map(|&n| n as u32).collect(),
                }
            })
            .collect();

        let mut sim = Simulation {
            prefetching: false,
            now: Instant::ZERO,
            end: Instant::ZERO + sc.duration,
            queue,
            ports,
            port_names,
            media,
            cpus,
            hops: Hops::new(
                &sc.routes,
                &sc.nodes
                    .iter()
                    .map(|n| n.kind == NodeKind::Router)
                    .collect::<Vec<_>>(),
                &sc.links.iter().map(|l| (l.a, l.b)).collect::<Vec<_>>(),
                crate::hops::MAX_ENTRIES,
            ),
            flows,
            metrics,
            events: 0,
            info: RunInfo {
                scenario: sc.name.clone(),
                seed: sc.seed,
                node_names: sc.nodes.iter().map(|n| n.name.clone()).collect(),
            },
            traces: Vec::new(),
            agents,
            node_agent,
            outbox: Outbox::default(),
            agent_rows: Vec::new(),
            cut: None,
            sampling_events: 0,
            cut_spare: None,
            cut_offers: Vec::new(),
            cut_marks: Vec::new(),
            cut_offering: false,
            cut_fed: None,
            cut_pending: Default::default(),
            cut_taken: 0,
        };
        for a in 0..sim.agents.len() {
            // An agent on the other side of a cut never wakes here.
            if sim.agents[a].nodes.iter().any(|&n| here(n as usize)) {
                sim.flush_agent(a);
            }
        }
        sim
    }
}

/// Builds a scenario's agent; its parameters were checked at load.
fn build_agent(sc: &Scenario, a: &AgentSpec, index: usize) -> Box<dyn NodeAgent> {
    let kind = agent::kind(&a.kind).expect("agent kinds are checked at load");
    let site = AgentSite {
        scenario: sc,
        nodes: &a.nodes,
        flows: &a.flows,
        private_flows: crate::scenario::private_flows(sc.flows.len(), index),
        name: &a.name,
    };
    match (kind.make)(&a.params, &site) {
        Ok(agent) => agent,
        // Only a Scenario edited in code after loading can get here.
        Err(e) => panic!("agent {:?}: {}: {}", a.name, e.field, e.message),
    }
}

fn link_dir(spec: &LinkDirSpec, seed: u64, label: &str, flows: &[TcpConfig]) -> LinkDir<Packet> {
    let queue = queue(&spec.queue, spec, seed, label, flows);

    let loss_rng = || Stream::derive(seed, &format!("{label}/loss"));
    let only = |only: KindFilter, m: LossModel| match only {
        KindFilter::All => m,
        _ => LossModel::Only {
            only,
            inner: Box::new(m),
        },
    };
    let loss = match &spec.loss {
        LossSpec::None => LossModel::None,
        LossSpec::Bernoulli { p, applies_to } => only(
            *applies_to,
            LossModel::Bernoulli {
                p: *p,
                rng: Box::new(loss_rng()),
            },
        ),
        LossSpec::GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
            applies_to,
        } => only(
            *applies_to,
            LossModel::GilbertElliott(Box::new(GilbertElliott::new(
                *p,
                *r,
                *loss_good,
                *loss_bad,
                loss_rng(),
            ))),
        ),
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
    let link = LinkDir::new(spec.rate, spec.delay, queue, loss);
    match &spec.service {
        None => link,
        // Time zero of a schedule, a trace or the LEO minute is the run's.
        Some(s) => link.with_service(
            s,
            Instant::ZERO,
            Stream::derive(seed, &format!("{label}/service")),
        ),
    }
}

fn queue(
    q: &QueueSpec,
    spec: &LinkDirSpec,
    seed: u64,
    label: &str,
    flows: &[TcpConfig],
) -> Queue<Packet> {
    match q {
        QueueSpec::DropTail { limit } => Queue::drop_tail(*limit),
        QueueSpec::Red(r) => Queue::red(
            red_params(r, spec.rate, spec.delay),
            Stream::derive(seed, &format!("{label}/red")),
        ),
        QueueSpec::Priority { classify, limit } => {
            let (classifier, bands) = match classify {
                ClassifySpec::AcksFirst => (Classifier::Kind { acks: 0, data: 1 }, 2),
                ClassifySpec::DataFirst => (Classifier::Kind { acks: 1, data: 0 }, 2),
                ClassifySpec::Flow {
                    bands,
                    flows: listed,
                } => {
                    let last = bands - 1;
                    let mut map = vec![last; flows.len()];
                    for &(f, b) in listed {
                        map[f] = b;
                    }
                    let c = Classifier::Flow {
                        bands: map,
                        default: last,
                    };
                    (c, *bands as usize)
                }
            };
            Queue::classful(Classful::new(
                classifier,
                Scheduler::Strict,
                &vec![*limit; bands],
            ))
        }
        QueueSpec::TwoClass {
            data_weight,
            ack_weight,
            limit,
        } => Queue::classful(Classful::two_class(*data_weight, *ack_weight, *limit)),
        QueueSpec::Sad { inner, max_flows } => {
            Queue::sad(queue(inner, spec, seed, label, flows), *max_flows as usize)
        }
    }
}

/// RED's parameters on a link direction of `rate` and `delay`: the written
/// values, and ns-2 2.35's automatic ones for those left out.
pub fn red_params(r: &RedSpec, rate: Rate, delay: Duration) -> RedParams {
    let ptc = ns2_ptc(rate, r.mean_pktsize);
    let min_th = r
        .min_th
        .unwrap_or_else(|| ns2_min_th(ptc, r.target_delay.as_secs_f64()));
    RedParams {
        min_th,
        max_th: r.max_th.unwrap_or(3.0 * min_th),
        max_p: r.max_p,
        q_w: r.q_w.unwrap_or_else(|| ns2_q_w(ptc, delay)),
        gentle: r.gentle,
        wait: r.wait,
        bytes: r.bytes,
        mean_pktsize: r.mean_pktsize,
        ptc,
        limit: r.limit,
    }
}

/// Sequence number of the first byte of 1-based data segment `n`.
fn data_seq(isn: Seq, mss: u32, n: u64) -> Seq {
    isn + 1 + ((n.saturating_sub(1) * mss as u64) as u32)
}
