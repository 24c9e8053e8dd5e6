//! Sameness of each shared mechanism in the daemon and in the simulator:
//! one scripted input (segments and times) through the daemon's adapter of
//! the core machine and through the simulator's gives the same sequence of
//! actions (what leaves, when, in which order, with which fields). One
//! module per mechanism; `cargo test -p pep-daemon --test sameness sad::`
//! runs one.
//!
//! What the modules share: the scripted connections (flow `f` is client
//! port `4000 + f` to server port 5001; the server sends data, the client
//! ACKs), their frames for the daemon and packets for the simulator, the
//! daemon's packet engine and the simulator's agent as [`Adapter`]s, and
//! what leaves either one as a [`Seen`].

use std::net::Ipv4Addr;

use pep_core::{Duration, Flags, Instant, Segment};
use pep_daemon::packet::{Engine, PacketSettings, Side};
use pep_sim::agent::{self, AgentSite, NodeAgent, Outbox};
use pep_sim::{Packet, Scenario};
use pep_wire::{
    emit_packet_vec, ethernet_frame, parse_ip_packet, IpRepr, Ipv4Repr, Parsed, TcpOptions, TcpRepr,
};

#[path = "sameness/ack_regen.rs"]
mod ack_regen;
#[path = "sameness/ack_thin.rs"]
mod ack_thin;
#[path = "sameness/localq.rs"]
mod localq;
#[path = "sameness/sad.rs"]
mod sad;
#[path = "sameness/watermark.rs"]
mod watermark;

/// The client (data receiver, the daemon's side `a`) and the server (data
/// sender, side `b`).
const CLIENT: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const SERVER: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 2);

/// One packet of a script: at `at`, flow `flow` (0..3) sends `seg`, from
/// the client (an ACK toward the server) or from the server.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub at: Instant,
    pub flow: u32,
    pub seg: Segment,
    pub from_client: bool,
    /// The window-scale option a SYN carries; for the client's other
    /// segments, the shift its window field is written with (the segment
    /// holds bytes, as the simulator's do).
    pub wscale: Option<u8>,
}

impl Step {
    pub fn ack(at: Instant, flow: u32, seg: Segment) -> Step {
        Step {
            at,
            flow,
            seg,
            from_client: true,
            wscale: None,
        }
    }
}

/// The Ethernet frame of a step.
pub fn frame(s: &Step) -> Vec<u8> {
    let seg = &s.seg;
    let (src, dst) = if s.from_client {
        (CLIENT, SERVER)
    } else {
        (SERVER, CLIENT)
    };
    let (sport, dport) = if s.from_client {
        (4000 + s.flow as u16, 5001)
    } else {
        (5001, 4000 + s.flow as u16)
    };
    let syn = seg.flags.contains(Flags::SYN);
    let shift = if s.from_client && !syn {
        s.wscale.unwrap_or(0)
    } else {
        0
    };
    let sack: Vec<(u32, u32)> = seg
        .sack
        .as_slice()
        .iter()
        .map(|(l, r)| (l.0, r.0))
        .collect();
    let tcp = TcpRepr {
        src_port: sport,
        dst_port: dport,
        seq: seg.seq.0,
        ack: seg.ack.0,
        flags: seg.flags.0,
        window: (seg.wnd >> shift).min(u16::MAX as u32) as u16,
        options: TcpOptions {
            wscale: if syn { s.wscale } else { None },
            timestamps: seg.ts.map(|t| pep_wire::TimestampOption {
                val: t.val,
                ecr: t.ecr,
            }),
            sack: pep_wire::SackOption::from_slice(&sack),
            ..TcpOptions::default()
        },
        payload_len: seg.len as usize,
        ..TcpRepr::default()
    };
    let ip = IpRepr::V4(Ipv4Repr::new(src, dst));
    let pkt = emit_packet_vec(&ip, &tcp, &vec![9u8; seg.len as usize]).unwrap();
    ethernet_frame([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], &pkt).unwrap()
}

/// `seg` with its `hdr_len` as its frame has it (IP and TCP headers with
/// options): the simulator's links charge what the daemon's do.
pub fn sized(mut s: Step) -> Step {
    let f = frame(&s);
    s.seg.hdr_len = (f.len() - 14 - s.seg.len as usize) as u16;
    s
}

/// A packet that left an adapter: when, toward the server (`to_b`) or the
/// client, and the fields of its segment (windows as the frame carries
/// them: shifted by the flow's scale).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub at: Instant,
    pub to_b: bool,
    pub flow: u32,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub wnd: u32,
    pub len: u32,
    pub ts: Option<(u32, u32)>,
    pub sack: Vec<(u32, u32)>,
}

impl Seen {
    fn of_frame(at: Instant, frame: &[u8]) -> Seen {
        let Parsed::Tcp(p) = parse_ip_packet(&frame[14..]).unwrap() else {
            panic!("not tcp");
        };
        let to_b = match p.ip {
            IpRepr::V4(v) => v.dst == SERVER,
            IpRepr::V6(_) => panic!("v6"),
        };
        let port = if to_b { p.tcp.src_port } else { p.tcp.dst_port };
        Seen {
            at,
            to_b,
            flow: (port - 4000) as u32,
            seq: p.tcp.seq,
            ack: p.tcp.ack,
            flags: p.tcp.flags,
            wnd: p.tcp.window as u32,
            len: p.payload.len() as u32,
            ts: p.tcp.options.timestamps.map(|t| (t.val, t.ecr)),
            sack: p.tcp.options.sack.as_slice().to_vec(),
        }
    }

    fn of_segment(at: Instant, to_b: bool, seg: &Segment, shift: u8) -> Seen {
        let shift = if to_b && !seg.flags.contains(Flags::SYN) {
            shift
        } else {
            0
        };
        Seen {
            at,
            to_b,
            flow: seg.flow.0,
            seq: seg.seq.0,
            ack: seg.ack.0,
            flags: seg.flags.0,
            wnd: (seg.wnd >> shift).min(u16::MAX as u32),
            len: seg.len,
            ts: seg.ts.map(|t| (t.val, t.ecr)),
            sack: seg
                .sack
                .as_slice()
                .iter()
                .map(|(l, r)| (l.0, r.0))
                .collect(),
        }
    }
}

/// An adapter of a core machine, as a script sees it.
pub trait Adapter {
    fn arrive(&mut self, now: Instant, s: &Step);
    fn wake(&mut self, now: Instant);
    fn deadline(&self) -> Option<Instant>;
    /// What left since the last call, as sent at `now`.
    fn take(&mut self, now: Instant, out: &mut Vec<Seen>);
}

/// Runs the script through `a`: each arrival after the timers due by its
/// time, then the timers due within [`TAIL`] of the last (a PEP holding
/// data resends it for ever once the ACKs stop).
pub fn drive(script: &[Step], a: &mut dyn Adapter) -> Vec<Seen> {
    let mut out = vec![];
    let timers = |until: Option<Instant>, a: &mut dyn Adapter, out: &mut Vec<Seen>| {
        while let Some(d) = a.deadline() {
            if until.is_some_and(|u| d > u) {
                break;
            }
            a.wake(d);
            a.take(d, out);
            if a.deadline() == Some(d) {
                break; // nothing was due after all
            }
        }
    };
    for s in script {
        timers(Some(s.at), a, &mut out);
        a.arrive(s.at, s);
        a.take(s.at, &mut out);
    }
    let end = script.last().map(|s| s.at + TAIL);
    timers(end, a, &mut out);
    out
}

/// How long a run goes on after the script's last step.
pub const TAIL: Duration = Duration::from_secs(10);

/// The daemon's packet engine: the client on side `a`, the server on `b`.
pub struct Daemon(pub Engine);

impl Daemon {
    pub fn new(s: PacketSettings) -> Daemon {
        Daemon(Engine::new(&s))
    }
}

impl Adapter for Daemon {
    fn arrive(&mut self, now: Instant, s: &Step) {
        let side = if s.from_client { Side::A } else { Side::B };
        self.0.on_frame(now, side, frame(s));
    }
    fn wake(&mut self, now: Instant) {
        self.0.handle_timeout(now);
    }
    fn deadline(&self) -> Option<Instant> {
        self.0.poll_timeout()
    }
    fn take(&mut self, now: Instant, out: &mut Vec<Seen>) {
        while let Some((side, f)) = self.0.poll_transmit() {
            let s = Seen::of_frame(now, &f);
            assert_eq!(s.to_b, side == Side::B, "{s:?} on side {side:?}");
            out.push(s);
        }
    }
}

/// A simulator agent on the gateway of the example scenario
/// (`scenarios/examples/ack-thinning.toml`, three flows from the server
/// to the client).
pub struct Sim {
    pub agent: Box<dyn NodeAgent>,
    outbox: Outbox,
    gw: u32,
    client: u32,
    server: u32,
    /// Each flow's window scale (what its frames would carry).
    pub scales: [u8; 3],
}

const SCENARIO: &str = include_str!("../../../scenarios/examples/ack-thinning.toml");

impl Sim {
    /// The agent `kind` with `params` (the `[[agent]]` table's own
    /// fields), as the example scenario (three flows) builds it.
    pub fn new(kind: &str, params: &str) -> Sim {
        let text = format!(
            "{SCENARIO}\n[[flow]]\nname = \"f1\"\nfrom = \"server\"\nto = \"client\"\n\
             [[flow]]\nname = \"f2\"\nfrom = \"server\"\nto = \"client\"\n"
        );
        let sc = Scenario::from_toml_str(&text, "<sameness>").unwrap();
        let table: toml::Table = toml::from_str(params).unwrap();
        let node = |name: &str| sc.nodes.iter().position(|x| x.name == name).unwrap();
        let gw = node("gw");
        let site = AgentSite {
            scenario: &sc,
            nodes: &[gw],
            flows: &[0, 1, 2],
            private_flows: 100..164,
            name: "sameness",
        };
        Sim {
            agent: (agent::kind(kind).unwrap().make)(&table, &site).unwrap(),
            outbox: Outbox::default(),
            gw: gw as u32,
            client: node("client") as u32,
            server: node("server") as u32,
            scales: [0; 3],
        }
    }
}

impl Adapter for Sim {
    fn arrive(&mut self, now: Instant, s: &Step) {
        let (src, dst) = if s.from_client {
            (self.client, self.server)
        } else {
            (self.server, self.client)
        };
        let mut seg = s.seg;
        seg.flow = pep_core::FlowId(s.flow);
        let p = Packet { seg, src, dst };
        self.agent.on_packet(now, self.gw, p, &mut self.outbox);
    }
    fn wake(&mut self, now: Instant) {
        self.agent.on_timeout(now, &mut self.outbox);
    }
    fn deadline(&self) -> Option<Instant> {
        self.agent.poll_timeout()
    }
    fn take(&mut self, now: Instant, out: &mut Vec<Seen>) {
        for (from, p) in self.outbox.drain() {
            assert_eq!(from, self.gw);
            let to_b = p.dst == self.server;
            let shift = self.scales[p.seg.flow.0 as usize];
            out.push(Seen::of_segment(now, to_b, &p.seg, shift));
        }
    }
}

/// A xorshift stream for scripts (seeded, so each script is one
/// reproducible run).
pub fn rng(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut x = seed;
    move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    }
}

/// The first index at which two runs differ, for a message that says
/// where (rather than two thousand-line dumps).
pub fn assert_same(daemon: &[Seen], sim: &[Seen], what: &str) {
    for (i, (d, s)) in daemon.iter().zip(sim).enumerate() {
        assert_eq!(d, s, "{what}: action {i} differs (daemon, simulator)");
    }
    assert_eq!(
        daemon.len(),
        sim.len(),
        "{what}: the daemon gave {} actions, the simulator {}",
        daemon.len(),
        sim.len()
    );
}

/// A pure ACK of `flow` carrying its step number as TSval (how the ACK
/// scripts name what leaves), with a plain header and timestamps.
pub fn pure_ack(flow: u32, step: u32) -> Segment {
    Segment {
        flow: pep_core::FlowId(flow),
        seq: pep_core::Seq(77),
        flags: Flags::ACK,
        hdr_len: 52,
        ts: Some(pep_core::Timestamps { val: step, ecr: 5 }),
        ..Default::default()
    }
}

/// Time advanced by `us` microseconds.
pub fn after(t: Instant, us: u64) -> Instant {
    t + Duration::from_micros(us)
}

/// An ACK script's next step `i` after `t`, drawn from `next`: the time
/// (one step in ten a pause of `pause_us`, one in ten none, the rest
/// `base_us` plus up to `spread_us`) and a pure ACK of one of three
/// flows, for the script to vary.
pub fn ack_step(
    next: &mut impl FnMut(u64) -> u64,
    t: Instant,
    i: u32,
    (pause_us, base_us, spread_us): (u64, u64, u64),
) -> (Instant, u32, Segment) {
    let t = after(
        t,
        match next(10) {
            0 => pause_us,
            1 => 0,
            _ => base_us + next(spread_us),
        },
    );
    let flow = next(3) as u32;
    (t, flow, pure_ack(flow, i))
}
