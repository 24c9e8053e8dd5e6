//! Sameness of the Smart ACK Dropper (`pep_core::sad`, on
//! `pep_core::queue`'s SAD discipline in a `pep_core::link::LinkDir`) in
//! the daemon and in the simulator: one scripted ACK stream into a slow
//! link's queue, through the daemon's packet engine (`[packet] rate`,
//! `queue`, `sad = true`: frames from side `a`, rewritten in their bytes as
//! they leave) and through the simulator's link (`queue = { kind = "sad" }`
//! on the link's direction, driven by the simulator's event loop: a test
//! agent on the client puts the script on the link, another on the server
//! takes what arrives) gives the same ACKs out, at the same times, in the
//! same order, with the same fields.
//!
//! Each scripted ACK carries its step number as TSval; SAD rewrites the
//! TSval of a queued ACK with the latest of its flow, so what leaves is
//! known by its fields and time: an adapter that drops, adds or reorders
//! an ACK, or rewrites one differently, gives another sequence.
//!
//! A frame's SACK option keeps its size when SAD rewrites it (the header
//! never grows; `pep_io::frame`): the script gives flow 2 one SACK block on
//! every ACK and the other flows none, so every rewrite fits. A rewrite
//! that does not fit (more blocks than the queued frame has room for) is
//! where the two differ by design.

use std::any::Any;

use pep_core::{Duration, Instant, Rate, SackBlocks, Seq};
use pep_daemon::packet::{PacketSettings, PacketStats};
use pep_sim::agent::{NodeAgent, Outbox};
use pep_sim::{Packet, Scenario, Simulation};

use super::{after, assert_same, drive, pure_ack, rng, sized, Daemon, Seen, Step, TAIL};

const LIMIT: u32 = 20;
const MAX_FLOWS: usize = 64;

/// A reproducible mix of what SAD treats differently: ACKs faster than the
/// link carries them (so they queue and merge), duplicate ACKs (queued as
/// they are), new SACK blocks, window updates, older ACKs (dropped), data
/// on the ACK path (queued, never merged), bursts past the queue's limit
/// (DropTail drops) and pauses that let the queue drain.
fn script(seed: u64) -> Vec<Step> {
    let mut next = rng(seed);
    let mut acks = [1000u32; 3];
    let mut wnd = [20_000u32; 3];
    let mut t = Instant::ZERO;
    let mut v = vec![];
    for i in 0..1500u32 {
        t = after(
            t,
            match next(20) {
                0 => 200_000, // the queue drains
                1..=3 => 0,   // a burst
                _ => 200 + next(4_000),
            },
        );
        t += Duration::from_nanos(next(1000)); // off any grid
        let flow = next(3) as u32;
        let f = flow as usize;
        let mut seg = pure_ack(flow, i);
        match next(12) {
            0 | 1 => {} // duplicate
            // Below 64 KiB: the frames carry no window scale.
            2 => wnd[f] = 20_000 + (wnd[f] - 19_000) % 40_000,
            3 => seg.ack = Seq(acks[f] - 500), // older
            4 => {
                acks[f] += 1000;
                seg.len = 200; // data on the ACK path
            }
            _ => acks[f] += 1000 * (1 + next(3) as u32),
        }
        if seg.ack == Seq(0) {
            seg.ack = Seq(acks[f]);
        }
        if flow == 2 {
            let mut b = SackBlocks::new();
            let l = acks[f] + 2000 + 1000 * next(3) as u32;
            b.push(Seq(l), Seq(l + 1000));
            seg.sack = b;
        }
        seg.wnd = wnd[f];
        v.push(sized(Step::ack(t, flow, seg)));
    }
    v
}

fn rate() -> Rate {
    Rate::kbps(64)
}

fn daemon(s: &[Step]) -> (Vec<Seen>, PacketStats) {
    let mut d = Daemon::new(PacketSettings {
        rate: Some(rate()),
        queue: LIMIT,
        sad: true,
        max_flows: MAX_FLOWS,
        ..PacketSettings::new("a", "b")
    });
    let seen = drive(s, &mut d);
    (seen, d.0.stats())
}

/// Puts the script on the link from the client, each step at its time.
struct Inject {
    script: Vec<Step>,
    next: usize,
    client: u32,
    server: u32,
}

impl NodeAgent for Inject {
    fn on_packet(&mut self, _: Instant, _: u32, p: Packet, _: &mut Outbox) {
        panic!("nothing comes back to the client: {p:?}");
    }
    fn on_timeout(&mut self, now: Instant, out: &mut Outbox) {
        while let Some(s) = self.script.get(self.next).filter(|s| s.at <= now) {
            let p = Packet {
                seg: s.seg,
                src: self.client,
                dst: self.server,
            };
            out.send(self.client, p);
            self.next += 1;
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.script.get(self.next).map(|s| s.at)
    }
    fn stats(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Takes what reaches the server, with when.
#[derive(Default)]
struct Record(Vec<Seen>);

impl NodeAgent for Record {
    fn on_packet(&mut self, now: Instant, _: u32, p: Packet, _: &mut Outbox) {
        self.0.push(Seen::of_segment(now, true, &p.seg, 0));
    }
    fn on_timeout(&mut self, _: Instant, _: &mut Outbox) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn stats(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The simulator's run: client and server joined by a link whose
/// client-to-server direction is the daemon's egress queue (rate, limit,
/// SAD, no delay); the scenario's flows start after the script's end.
fn simulator(s: &[Step]) -> Vec<Seen> {
    let text = format!(
        r#"
[scenario]
name = "sad-sameness"
duration = "1000s"
[[node]]
name = "client"
[[node]]
name = "server"
[[link]]
between = ["client", "server"]
delay = "0s"
rate = "100Mbps"
forward.rate = "{}bps"
forward.queue = {{ kind = "sad", limit = {LIMIT}, max_flows = {MAX_FLOWS} }}
[[flow]]
name = "f0"
from = "server"
to = "client"
start = "900s"
"#,
        rate().as_bps()
    );
    let sc = Scenario::from_toml_str(&text, "<sad-sameness>").unwrap();
    let mut sim = Simulation::new(&sc);
    let inject = Inject {
        script: s.to_vec(),
        next: 0,
        client: 0,
        server: 1,
    };
    sim.attach_agent("inject", &[0], Box::new(inject));
    sim.attach_agent("record", &[1], Box::<Record>::default());
    sim.run_until(s.last().unwrap().at + TAIL);
    let rec = sim.agent("record").unwrap().as_any();
    rec.downcast_ref::<Record>().unwrap().0.clone()
}

#[test]
fn the_daemon_and_the_simulator_merge_and_rewrite_the_same_acks() {
    for seed in [0x9e37_79b9_7f4a_7c15, 7, 0xdead_beef] {
        let s = script(seed);
        let (on_daemon, st) = daemon(&s);
        let on_sim = simulator(&s);
        assert_same(&on_daemon, &on_sim, &format!("seed {seed:#x}"));
        // The script exercises merging, rewriting, drops and passing, and
        // every rewrite fits its frame.
        assert_eq!(st.rewrite_failures, 0);
        assert_eq!(st.merged + st.dropped + on_sim.len() as u64, s.len() as u64);
        assert!(
            st.merged > 300 && st.rewritten > 100 && st.dropped > 10,
            "seed {seed:#x}: {st:?}"
        );
    }
}
