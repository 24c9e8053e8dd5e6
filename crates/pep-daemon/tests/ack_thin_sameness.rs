//! Sameness of ACK thinning in the daemon and in the simulator: one
//! scripted ACK stream (segments and times) through the daemon's packet
//! engine (frames on side `a`, `pep_daemon::packet::Engine`) and through
//! the simulator's agent (`kind = "ack-thin"`, packets at its node) gives
//! the same packets out, at the same times, in the same order: what one
//! forwards at once, holds, or drops, the other does too.
//!
//! Every scripted packet carries its step number as TSval, so each one
//! out is known by it: an adapter that drops, adds or reorders an action
//! gives another sequence.
//!
//! With more flows than `max_flows` the two differ: the daemon's flow
//! table (`FlowTable`, oldest first) and the machine (least recently seen
//! first) evict different flows. A flow the table evicted comes back under
//! a new id; its held ACK used to wait under the old one and leave after
//! the flow's newer ACKs (with this script, N = 4 and `max_flows` = 2: four
//! of the daemon's 564 ACKs out). The engine now lets an evicted id's held
//! ACK go at once (`packet::engine`'s
//! `a_connection_the_flow_table_evicts_keeps_its_acks_in_order`), so
//! nothing is reordered, but which ACKs are thinned still differs. The
//! script keeps to three flows, within every bound.

use std::net::Ipv4Addr;

use pep_core::{Duration, Flags, FlowId, Instant, SackBlocks, Segment, Seq, Timestamps};
use pep_daemon::packet::{Engine, PacketSettings, Side};
use pep_sim::agent::{self, AgentSite, NodeAgent, Outbox};
use pep_sim::{Packet, Scenario};
use pep_wire::{
    emit_packet_vec, ethernet_frame, parse_ip_packet, IpRepr, Ipv4Repr, Parsed, TcpOptions, TcpRepr,
};

/// One packet of the script: at `at`, flow `flow` (0..3) sends `seg`
/// toward its data source.
#[derive(Clone, Copy, Debug)]
struct Step {
    at: Instant,
    flow: u32,
    seg: Segment,
}

/// What left, when: (time, step number).
type Actions = Vec<(Instant, u32)>;

/// A reproducible mix of what thinning treats differently: advancing ACKs
/// (some held, some thinned, some the N-th), duplicates, window updates,
/// new SACK information, ECE, older ACKs, data on the ACK path, pauses
/// longer than `max_hold`, and three flows interleaved.
fn script() -> Vec<Step> {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = |m: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % m
    };
    let mut acks = [1000u32; 3];
    let mut wnd = [5000u32; 3];
    let mut t = Instant::ZERO;
    let mut v = vec![];
    for i in 0..600u32 {
        t += Duration::from_micros(match next(10) {
            0 => 15_000, // past max_hold
            1 => 0,
            _ => 50 + next(2_000),
        });
        let flow = next(3) as u32;
        let f = flow as usize;
        let mut seg = Segment {
            flow: FlowId(flow),
            seq: Seq(77),
            flags: Flags::ACK,
            hdr_len: 52,
            ts: Some(Timestamps { val: i, ecr: 5 }),
            ..Default::default()
        };
        match next(12) {
            0 => {} // duplicate
            1 => wnd[f] += 1000,
            2 => {
                let mut b = SackBlocks::new();
                b.push(Seq(acks[f] + 2000), Seq(acks[f] + 3000 + i));
                seg.sack = b;
            }
            3 => {
                acks[f] += 1000;
                seg.flags = Flags::ACK | Flags::ECE;
            }
            4 => {
                seg.ack = Seq(acks[f] - 500); // older
            }
            5 => {
                acks[f] += 1000;
                seg.len = 100; // data on the ACK path
            }
            _ => acks[f] += 1000 + 10 * next(50) as u32,
        }
        if seg.ack == Seq(0) {
            seg.ack = Seq(acks[f]);
        }
        seg.wnd = wnd[f];
        v.push(Step { at: t, flow, seg });
    }
    v
}

fn frame(s: &Step) -> Vec<u8> {
    let ip = IpRepr::V4(Ipv4Repr::new(
        Ipv4Addr::new(198, 18, 0, 1),
        Ipv4Addr::new(198, 18, 1, 2),
    ));
    let seg = &s.seg;
    let mut flags = pep_wire::flags::ACK;
    if seg.flags.contains(Flags::ECE) {
        flags |= pep_wire::flags::ECE;
    }
    let sack: Vec<(u32, u32)> = seg
        .sack
        .as_slice()
        .iter()
        .map(|(l, r)| (l.0, r.0))
        .collect();
    let tcp = TcpRepr {
        src_port: 4000 + s.flow as u16,
        dst_port: 5001,
        seq: seg.seq.0,
        ack: seg.ack.0,
        flags,
        window: seg.wnd as u16,
        options: TcpOptions {
            timestamps: seg.ts.map(|t| pep_wire::Timestamps {
                val: t.val,
                ecr: t.ecr,
            }),
            sack: pep_wire::SackBlocks::from_slice(&sack),
            ..TcpOptions::default()
        },
        payload_len: seg.len as usize,
        ..TcpRepr::default()
    };
    let pkt = emit_packet_vec(&ip, &tcp, &vec![9u8; seg.len as usize]).unwrap();
    ethernet_frame([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], &pkt).unwrap()
}

fn tsval(frame: &[u8]) -> u32 {
    match parse_ip_packet(&frame[14..]).unwrap() {
        Parsed::Tcp(p) => p.tcp.options.timestamps.unwrap().val,
        Parsed::NotTcp(_) => panic!("not tcp"),
    }
}

/// An adapter of the thinning machine, as the script sees it.
trait Adapter {
    fn arrive(&mut self, now: Instant, s: &Step);
    fn wake(&mut self, now: Instant);
    fn deadline(&self) -> Option<Instant>;
    /// What left since the last call, as sent at `now`.
    fn take(&mut self, now: Instant, out: &mut Actions);
    fn thinned(&self) -> u64;
}

/// Runs the script through `a`: each arrival after the timers due by its
/// time, then the timers left.
fn drive(script: &[Step], a: &mut dyn Adapter) -> Actions {
    let mut out = vec![];
    let timers = |until: Option<Instant>, a: &mut dyn Adapter, out: &mut Actions| {
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
    timers(None, a, &mut out);
    out
}

/// The daemon's packet engine with ACK thinning alone.
struct Daemon(Engine);

impl Adapter for Daemon {
    fn arrive(&mut self, now: Instant, s: &Step) {
        self.0.on_frame(now, Side::A, frame(s));
    }
    fn wake(&mut self, now: Instant) {
        self.0.handle_timeout(now);
    }
    fn deadline(&self) -> Option<Instant> {
        self.0.poll_timeout()
    }
    fn take(&mut self, now: Instant, out: &mut Actions) {
        while let Some((side, f)) = self.0.poll_transmit() {
            assert_eq!(side, Side::B);
            out.push((now, tsval(&f)));
        }
    }
    fn thinned(&self) -> u64 {
        self.0.stats().thinned
    }
}

fn daemon(n: u32, max_flows: usize) -> Daemon {
    Daemon(Engine::new(&PacketSettings {
        ack_thin: Some(n),
        max_hold: Duration::from_millis(10),
        max_flows,
        ..PacketSettings::new("a", "b")
    }))
}

/// The simulator's agent on the gateway of the example scenario.
struct Sim {
    agent: Box<dyn NodeAgent>,
    outbox: Outbox,
    gw: u32,
    client: u32,
    server: u32,
}

impl Adapter for Sim {
    fn arrive(&mut self, now: Instant, s: &Step) {
        let p = Packet {
            seg: s.seg,
            src: self.client,
            dst: self.server,
        };
        self.agent.on_packet(now, self.gw, p, &mut self.outbox);
    }
    fn wake(&mut self, now: Instant) {
        self.agent.on_timeout(now, &mut self.outbox);
    }
    fn deadline(&self) -> Option<Instant> {
        self.agent.poll_timeout()
    }
    fn take(&mut self, now: Instant, out: &mut Actions) {
        for (from, p) in self.outbox.drain() {
            assert_eq!(from, self.gw);
            out.push((now, p.seg.ts.unwrap().val));
        }
    }
    fn thinned(&self) -> u64 {
        self.agent.stats()["thinned"].as_u64().unwrap()
    }
}

const SCENARIO: &str = include_str!("../../../scenarios/examples/ack-thinning.toml");

/// The agent as the example scenario (three flows) builds it, with the
/// daemon's settings.
fn sim(n: u32, max_flows: usize) -> Sim {
    let text = format!(
        "{SCENARIO}\n[[flow]]\nname = \"f1\"\nfrom = \"server\"\nto = \"client\"\n\
         [[flow]]\nname = \"f2\"\nfrom = \"server\"\nto = \"client\"\n"
    );
    let sc = Scenario::from_toml_str(&text, "<sameness>").unwrap();
    let table: toml::Table = toml::from_str(&format!(
        "ack_thin = {n}\nmax_hold = \"10ms\"\nmax_flows = {max_flows}"
    ))
    .unwrap();
    let node = |name: &str| sc.nodes.iter().position(|x| x.name == name).unwrap();
    let gw = node("gw");
    let site = AgentSite {
        scenario: &sc,
        nodes: &[gw],
        flows: &[0, 1, 2],
        private_flows: 100..164,
        name: "thin",
    };
    Sim {
        agent: (agent::kind("ack-thin").unwrap().make)(&table, &site).unwrap(),
        outbox: Outbox::default(),
        gw: gw as u32,
        client: node("client") as u32,
        server: node("server") as u32,
    }
}

#[test]
fn the_daemon_and_the_simulator_forward_hold_and_drop_the_same_acks() {
    let s = script();
    for (n, max_flows) in [(3, 16), (2, 16), (4, 3)] {
        let mut d = daemon(n, max_flows);
        let mut a = sim(n, max_flows);
        let (on_daemon, sim) = (drive(&s, &mut d), drive(&s, &mut a));
        assert_eq!(on_daemon, sim, "N {n}, max_flows {max_flows}");
        let thinned_s = a.thinned();
        assert_eq!(d.thinned(), thinned_s);
        // Each step leaves at most once; the rest were thinned.
        let mut ids: Vec<u32> = sim.iter().map(|a| a.1).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), sim.len());
        assert_eq!(sim.len() as u64 + thinned_s, s.len() as u64);
        // The script exercises holding: some left later than they came.
        let late = sim.iter().filter(|(t, i)| *t > s[*i as usize].at).count();
        assert!(
            late > 10 && thinned_s > 50,
            "N {n}: {late} late, {thinned_s} thinned"
        );
    }
}
