//! The agent seam, exercised with small agents written here: what passes
//! through unchanged changes nothing, what an agent holds back or drops
//! shows up in TCP's behaviour exactly as it should, private flows route.

use std::any::Any;
use std::collections::VecDeque;

use pep_core::{Duration, Flags, FlowId, Instant, Segment};

use super::{NodeAgent, Outbox};
use crate::packet::{NodeIndex, Packet};
use crate::{Scenario, Simulation};

/// a -- r -- b, 10 Mbit/s links with 10 ms each way: RTT 40 ms plus
/// serialization. One bulk flow, window-limited (20 x 1000 B).
fn path(extra: &str) -> Scenario {
    let text = format!(
        r#"
[scenario]
name = "agent-seam"
duration = "10s"
seed = 3
[defaults.tcp]
mss = "1000B"
[defaults.sink]
rwnd = "20000B"
[[node]]
name = "a"
[[node]]
name = "r"
kind = "router"
[[node]]
name = "b"
[[link]]
between = ["a", "r"]
rate = "10Mbit/s"
delay = "10ms"
[[link]]
between = ["r", "b"]
rate = "10Mbit/s"
delay = "10ms"
[[flow]]
name = "f"
from = "a"
to = "b"
{extra}
"#
    );
    Scenario::from_toml_str(&text, "<test>").expect("valid")
}

const R: usize = 1;

/// Lets everything through.
struct PassThrough {
    seen: u64,
}

impl NodeAgent for PassThrough {
    fn on_packet(&mut self, _now: Instant, node: NodeIndex, p: Packet, out: &mut Outbox) {
        self.seen += 1;
        out.send(node, p);
    }
    fn on_timeout(&mut self, _now: Instant, _out: &mut Outbox) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn stats(&self) -> serde_json::Value {
        serde_json::json!({ "seen": self.seen })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn a_pass_through_agent_changes_nothing() {
    let sc = path("");
    let mut plain = Simulation::new(&sc);
    plain.run();
    let mut with = Simulation::new(&sc);
    with.attach_agent("pass", &[R], Box::new(PassThrough { seen: 0 }));
    with.run();
    let (a, mut b) = (plain.summary(), with.summary());
    assert_eq!(b.agents.len(), 1);
    let seen = b.agents[0].stats["seen"].as_u64().unwrap();
    // Every data packet and every ACK that reached r passed the agent once;
    // those still propagating at the end (at most a window's worth of data
    // and its ACKs) were serialized but had not arrived.
    let links = &a.links;
    let into_r: u64 = links
        .iter()
        .filter(|l| l.name.ends_with("->r"))
        .map(|l| l.tx_packets)
        .sum();
    assert!(
        seen <= into_r && into_r - seen <= 2 * 20,
        "{seen} of {into_r}"
    );
    b.agents.clear();
    assert_eq!(a, b);
}

/// Holds every ACK for `delay`, in order.
struct AckDelay {
    delay: Duration,
    held: VecDeque<(Instant, NodeIndex, Packet)>,
}

impl NodeAgent for AckDelay {
    fn on_packet(&mut self, now: Instant, node: NodeIndex, p: Packet, out: &mut Outbox) {
        if p.seg.is_pure_ack() {
            self.held.push_back((now + self.delay, node, p));
        } else {
            out.send(node, p);
        }
    }
    fn on_timeout(&mut self, now: Instant, out: &mut Outbox) {
        while let Some(&(at, node, p)) = self.held.front() {
            if at > now {
                break;
            }
            self.held.pop_front();
            out.send(node, p);
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.held.front().map(|h| h.0)
    }
    fn stats(&self) -> serde_json::Value {
        serde_json::json!({})
    }
    fn sample(&self) -> Vec<(&'static str, f64)> {
        vec![("held", self.held.len() as f64)]
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn holding_acks_adds_to_the_round_trip_exactly() {
    let run = |delay_ms: u64| {
        let mut sim = Simulation::new(&path(""));
        let agent = AckDelay {
            delay: Duration::from_millis(delay_ms),
            held: VecDeque::new(),
        };
        sim.attach_agent("delay", &[R], Box::new(agent));
        sim.run();
        let s = sim.summary();
        (s.flows[0].goodput_mbps, s.flows[0].srtt_ms.unwrap())
    };
    let (g0, rtt0) = run(0);
    let (g1, rtt1) = run(60);
    // Window-limited: goodput = rwnd / RTT, so 60 ms more RTT on top of
    // the base RTT cuts goodput by the RTT ratio (slow start aside).
    assert!((rtt1 - rtt0 - 60.0).abs() < 1.0, "srtt {rtt0} -> {rtt1}");
    let expect = g0 * rtt0 / rtt1;
    assert!((g1 - expect).abs() / expect < 0.05, "{g1} vs {expect}");
}

/// Drops the `nth` data packet of the flow once.
struct DropOnce {
    nth: u32,
    count: u32,
}

impl NodeAgent for DropOnce {
    fn on_packet(&mut self, _now: Instant, node: NodeIndex, p: Packet, out: &mut Outbox) {
        if p.seg.len > 0 {
            self.count += 1;
            if self.count == self.nth {
                return;
            }
        }
        out.send(node, p);
    }
    fn on_timeout(&mut self, _now: Instant, _out: &mut Outbox) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn stats(&self) -> serde_json::Value {
        serde_json::json!({})
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn a_packet_an_agent_keeps_is_repaired_by_the_sender() {
    let mut sim = Simulation::new(&path(""));
    sim.attach_agent("drop", &[R], Box::new(DropOnce { nth: 30, count: 0 }));
    sim.run();
    let r = sim.retransmissions(0);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].offset, 29_000);
    let s = sim.summary();
    assert_eq!(s.flows[0].timeouts, 0);
    assert_eq!(sim.sink(0).stats().bytes_dropped, 0);
}

/// On two nodes: at the first, turns every 10th data packet into a copy on
/// a private flow addressed to the second; the second counts what arrives.
struct Private {
    nodes: [NodeIndex; 2],
    flow: FlowId,
    sent: u64,
    received: u64,
}

impl NodeAgent for Private {
    fn on_packet(&mut self, _now: Instant, node: NodeIndex, p: Packet, out: &mut Outbox) {
        if p.seg.flow == self.flow {
            assert_eq!(node, self.nodes[1]);
            self.received += 1;
            return;
        }
        if node == self.nodes[0] && p.seg.len > 0 && p.seg.seq.0 % 10_000 == 1 {
            self.sent += 1;
            let copy = Segment {
                flow: self.flow,
                flags: Flags::ACK,
                ..p.seg
            };
            out.send(
                node,
                Packet {
                    seg: copy,
                    src: self.nodes[0],
                    dst: self.nodes[1],
                },
            );
        }
        out.send(node, p);
    }
    fn on_timeout(&mut self, _now: Instant, _out: &mut Outbox) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn stats(&self) -> serde_json::Value {
        serde_json::json!({ "sent": self.sent, "received": self.received })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn private_flows_route_between_an_agents_nodes() {
    let sc = path("");
    let mut sim = Simulation::new(&sc);
    let flow = FlowId(crate::scenario::private_flows(sc.flows.len(), 0).start);
    let agent = Private {
        nodes: [R as NodeIndex, 2],
        flow,
        sent: 0,
        received: 0,
    };
    sim.attach_agent("private", &[R, 2], Box::new(agent));
    sim.run();
    let a = sim.agent("private").unwrap();
    let a = a.as_any().downcast_ref::<Private>().unwrap();
    assert!(a.sent > 10, "{}", a.sent);
    assert_eq!(a.sent, a.received);
    // The scenario's flow still gets every byte through, in order.
    let s = sim.summary();
    assert_eq!(sim.sink(0).stats().bytes_dropped, 0);
    assert!(s.flows[0].delivered_bytes > 0);
    assert_eq!(s.flows[0].retransmitted_segments, 0);
}

#[test]
fn an_unknown_agent_kind_is_named_with_its_place() {
    let text = r#"
[scenario]
name = "x"
duration = "1s"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "1Mbit/s"
delay = "1ms"
[[flow]]
name = "f"
from = "a"
to = "b"

[[agent]]
kind = "no-such-pep"
node = "a"
"#;
    let err = Scenario::from_toml_str(text, "s.toml").unwrap_err();
    let d = &err.diagnostics()[0];
    assert_eq!(d.field, "agent[0].kind");
    assert_eq!(d.pos.map(|p| p.line), Some(18));
    assert!(
        d.message.contains("unknown agent kind \"no-such-pep\""),
        "{d}"
    );
}
