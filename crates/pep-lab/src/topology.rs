//! What the lab builds: nodes, duplex links with per-direction parameters,
//! and the plan derived from them (namespace names, addresses, routes).
//!
//! The types mirror the simulator's validated scenario (`pep_sim::scenario`)
//! so that a scenario converts field by field; the conversion lives in the
//! CLI, because the lab, like the simulator, depends only on the core and
//! the model (`pep_model`), whose route search both use.
//!
//! ## Layout
//!
//! Every node is a namespace `pepl-<lab>.<node>`. Every link `i` is a
//! namespace `pepl-<lab>+l<i>` holding the emulator's two interfaces,
//! `side-a` and `side-b`, each the veth peer of the node-side interface
//! `pep<i>`:
//!
//! ```text
//!  node a: pep<i> ==veth== side-a [link ns: emulator] side-b ==veth== pep<i> :node b
//! ```
//!
//! Link `i` gets the `i`-th /24 of the benchmarking range 198.18.0.0/15
//! (RFC 2544): the node at end `a` is `.1`, the one at end `b` is `.2`. Nothing is created in the caller's
//! namespace, so a crash can leave nothing there.

use std::net::Ipv4Addr;

use pep_core::link::service::ServiceSpec;
use pep_core::queue::{QueueLimit, RedParams};
use pep_core::{Duration, KindFilter, Rate};
use pep_model::{Graph, Routes};

use crate::error::{LabError, Result};

/// Prefix of every namespace the lab creates.
pub const NETNS_PREFIX: &str = "pepl-";
/// Most links: one /24 each in 198.18.0.0/15.
pub const MAX_LINKS: usize = 512;

/// Whether a node forwards packets for others: the simulator's node kind
/// (`pep_model::NodeKind`). A host has `ip_forward` off and is never an
/// intermediate hop; a router has it on and routes along
/// [`LabTopology::routes`].
pub use pep_model::NodeKind as Role;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabNode {
    /// Letters, digits, `_` and `-`; it becomes part of a namespace name.
    pub name: String,
    pub role: Role,
}

/// Random loss applied to packets as they finish crossing a direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossParams {
    None,
    /// Each packet lost independently with probability `p`.
    Bernoulli {
        p: f64,
    },
    /// Bursty loss from the core's two-state Gilbert-Elliott chain: `p`
    /// moves Good to Bad, `r` Bad to Good, per packet; `loss_good` and
    /// `loss_bad` are the loss probabilities in each state.
    GilbertElliott {
        p: f64,
        r: f64,
        loss_good: f64,
        loss_bad: f64,
    },
}

/// The queue discipline of a direction: the core's own machines
/// (`pep_core::queue`), the ones the simulator runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Discipline {
    /// FIFO, dropping arrivals past [`DirParams::queue`].
    DropTail,
    /// RED as ns-2 2.35 has it; its own `limit` is the hard bound. Its
    /// random drops draw from the stream `link/<name>/<fwd|rev>/red`.
    Red(RedParams),
    /// Strict priority between pure ACKs and everything else, each band
    /// [`DirParams::queue`] long.
    Priority { acks_first: bool },
    /// Weighted sharing by bytes between data (band 0) and pure ACKs
    /// (band 1), each class [`DirParams::queue`] long: the CBQ sharing of
    /// the ACK-regulation papers.
    TwoClass { data_weight: u32, ack_weight: u32 },
}

/// One direction of a link, as the core's `LinkDir` models it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DirParams {
    /// Serialization rate, counted over IP packets (see `docs/lab.md`).
    pub rate: Rate,
    /// One-way propagation delay.
    pub delay: Duration,
    /// DropTail limit on waiting packets (or bytes); each band's, for the
    /// classful disciplines.
    pub queue: QueueLimit,
    /// DropTail unless set otherwise.
    pub discipline: Discipline,
    pub loss: LossParams,
    /// Which packets `loss` applies to (the others pass untouched and do
    /// not advance its state, as in the simulator).
    pub loss_applies_to: KindFilter,
    /// Run the Smart ACK Dropper (`pep_core::sad`) in front of the queue,
    /// keeping state for at most this many flows: pure ACKs waiting for a
    /// slow direction are merged and rewritten in the frames' bytes (see
    /// `docs/lab.md`, "The Smart ACK Dropper on real packets").
    pub sad_max_flows: Option<u32>,
}

impl DirParams {
    /// A lossless direction with a packet-limited DropTail queue.
    pub fn new(rate: Rate, delay: Duration, queue_packets: u32) -> DirParams {
        DirParams {
            rate,
            delay,
            queue: QueueLimit::Packets(queue_packets),
            discipline: Discipline::DropTail,
            loss: LossParams::None,
            loss_applies_to: KindFilter::All,
            sad_max_flows: None,
        }
    }
    pub fn with_loss(mut self, loss: LossParams) -> DirParams {
        self.loss = loss;
        self
    }
    /// The same direction with `loss` applied to data packets or pure ACKs
    /// only.
    pub fn with_loss_on(mut self, loss: LossParams, only: KindFilter) -> DirParams {
        self.loss = loss;
        self.loss_applies_to = only;
        self
    }
    /// The same direction with another queue discipline.
    pub fn with_discipline(mut self, d: Discipline) -> DirParams {
        self.discipline = d;
        self
    }
    /// The same direction with the Smart ACK Dropper on its queue.
    pub fn with_sad(mut self, max_flows: u32) -> DirParams {
        self.sad_max_flows = Some(max_flows);
        self
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct LabLink {
    /// A label for outputs and random-stream names (`link/<name>/fwd/loss`,
    /// as in the simulator).
    pub name: String,
    pub a: usize,
    pub b: usize,
    /// From `a` to `b`.
    pub forward: DirParams,
    /// From `b` to `a`.
    pub reverse: DirParams,
    /// Service that changes over time (a schedule, an `mm-link` trace,
    /// the LEO preset), forward and reverse: the core's, as the simulator
    /// runs it. `None` keeps `rate` and `delay` fixed.
    pub service: [Option<ServiceSpec>; 2],
    /// A kernel bridge joins the two sides instead of an emulator:
    /// `forward` and `reverse` are not applied, and the link has no
    /// counters. See [`LabTopology::wire`].
    pub bridged: bool,
}

/// TCP settings Linux keeps per route, on node `from`'s routes to every
/// address of node `to` (`ip route ... initcwnd N initrwnd M quickack 1`).
/// They apply to every connection `from` opens or accepts towards `to`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RouteTcp {
    pub from: usize,
    pub to: usize,
    /// Initial congestion window, in segments (`initcwnd`; Linux's default
    /// is 10).
    pub initcwnd: Option<u32>,
    /// Initial receive window offered, in segments (`initrwnd`; Linux's
    /// default caps the first window at 10 segments, which would hold a
    /// larger `initcwnd` at the sender back).
    pub initrwnd: Option<u32>,
    /// ACK every segment: no delayed ACKs (`quickack 1`).
    pub quickack: bool,
}

impl RouteTcp {
    /// The route attributes, as `ip route` takes them (empty if none).
    pub fn attrs(&self) -> String {
        let mut s = String::new();
        if let Some(n) = self.initcwnd {
            s += &format!(" initcwnd {n}");
        }
        if let Some(n) = self.initrwnd {
            s += &format!(" initrwnd {n}");
        }
        if self.quickack {
            s += " quickack 1";
        }
        s
    }
}

/// A network to build.
#[derive(Clone, Debug, PartialEq)]
pub struct LabTopology {
    /// The scenario's name, for outputs.
    pub name: String,
    /// Master seed for the loss models' streams.
    pub seed: u64,
    pub nodes: Vec<LabNode>,
    pub links: Vec<LabLink>,
    /// Per-route TCP settings ([`RouteTcp`]); at most one per (from, to).
    pub route_tcp: Vec<RouteTcp>,
    /// Nodes whose TCP neither offers nor accepts SACK
    /// (`net.ipv4.tcp_sack = 0` in the namespace).
    pub sack_off: Vec<usize>,
}

impl LabTopology {
    pub fn new(name: &str, seed: u64) -> LabTopology {
        LabTopology {
            name: name.to_string(),
            seed,
            nodes: vec![],
            links: vec![],
            route_tcp: vec![],
            sack_off: vec![],
        }
    }

    /// The TCP settings of `from`'s routes to `to`, if any were set.
    pub fn route_tcp(&self, from: usize, to: usize) -> Option<&RouteTcp> {
        self.route_tcp.iter().find(|r| r.from == from && r.to == to)
    }

    /// Adds a node; returns its index.
    pub fn node(&mut self, name: &str, role: Role) -> usize {
        self.nodes.push(LabNode {
            name: name.to_string(),
            role,
        });
        self.nodes.len() - 1
    }

    /// Adds a link between two nodes (by name) with the given directions;
    /// returns its index. Unknown names are reported by [`Self::validate`].
    pub fn link(&mut self, a: &str, b: &str, forward: DirParams, reverse: DirParams) -> usize {
        let idx = |n: &str| self.node_index(n).unwrap_or(usize::MAX);
        let (ia, ib) = (idx(a), idx(b));
        self.links.push(LabLink {
            name: format!("{a}-{b}"),
            a: ia,
            b: ib,
            forward,
            reverse,
            service: [None, None],
            bridged: false,
        });
        self.links.len() - 1
    }

    /// Adds a link the kernel bridges, with no rate, delay, queue or loss
    /// of its own and no counters: a LAN segment in front of an emulated
    /// bottleneck. An emulator forwards every frame through user space,
    /// which at 100 Mbit/s costs as much CPU as the daemons being tested;
    /// a bridge costs almost none. Returns its index.
    pub fn wire(&mut self, a: &str, b: &str) -> usize {
        // Never applied; valid so that `validate` reads it like any link.
        let none = DirParams::new(Rate::mbps(100_000), Duration::ZERO, 1);
        let i = self.link(a, b, none, none);
        self.links[i].bridged = true;
        i
    }

    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Checks everything the build relies on.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(LabError::Topology(m));
        if self.nodes.is_empty() {
            return bad("no nodes".into());
        }
        if self.links.len() > MAX_LINKS {
            return bad(format!("{} links; at most {MAX_LINKS}", self.links.len()));
        }
        for (i, n) in self.nodes.iter().enumerate() {
            if !valid_name(&n.name, 32) {
                return bad(format!(
                    "node name {:?}: use 1 to 32 letters, digits, '_' or '-'",
                    n.name
                ));
            }
            if self.nodes[..i].iter().any(|m| m.name == n.name) {
                return bad(format!("node {:?} appears twice", n.name));
            }
        }
        for (i, l) in self.links.iter().enumerate() {
            if l.a >= self.nodes.len() || l.b >= self.nodes.len() {
                return bad(format!("link {i} ({}) names an unknown node", l.name));
            }
            if l.a == l.b {
                return bad(format!("link {i} ({}) joins a node to itself", l.name));
            }
            for (d, p) in [("forward", &l.forward), ("reverse", &l.reverse)] {
                if p.rate.as_bps() == 0 {
                    return bad(format!("link {} {d}: rate must be positive", l.name));
                }
                if let Discipline::TwoClass {
                    data_weight,
                    ack_weight,
                } = p.discipline
                {
                    if data_weight == 0 || ack_weight == 0 {
                        return bad(format!(
                            "link {} {d}: two-class weights must be positive",
                            l.name
                        ));
                    }
                }
                if let LossParams::Bernoulli { p } = p.loss {
                    if !(0.0..=1.0).contains(&p) {
                        return bad(format!("link {} {d}: loss p={p} not in [0, 1]", l.name));
                    }
                }
            }
        }
        for (i, r) in self.route_tcp.iter().enumerate() {
            if r.from >= self.nodes.len() || r.to >= self.nodes.len() || r.from == r.to {
                return bad(format!("route_tcp[{i}]: names unknown or equal nodes"));
            }
            if self.route_tcp[..i]
                .iter()
                .any(|o| (o.from, o.to) == (r.from, r.to))
            {
                return bad(format!(
                    "route_tcp[{i}]: a second setting for the routes of {} to {}",
                    self.nodes[r.from].name, self.nodes[r.to].name
                ));
            }
            if r.initcwnd == Some(0) || r.initrwnd == Some(0) {
                return bad(format!(
                    "route_tcp[{i}]: initcwnd and initrwnd must be positive"
                ));
            }
        }
        if let Some(&n) = self.sack_off.iter().find(|&&n| n >= self.nodes.len()) {
            return bad(format!("sack_off: node {n} is unknown"));
        }
        Ok(())
    }

    /// Address of the node at end `side` (0 = a, 1 = b) of link `link`.
    pub fn addr(&self, link: usize, side: usize) -> Ipv4Addr {
        link_addr(link, side)
    }

    /// The address traffic to `node` is sent to: its address on its
    /// lowest-numbered link. `None` for a node without links.
    pub fn node_addr(&self, node: usize) -> Option<Ipv4Addr> {
        self.links.iter().enumerate().find_map(|(i, l)| {
            if l.a == node {
                Some(link_addr(i, 0))
            } else if l.b == node {
                Some(link_addr(i, 1))
            } else {
                None
            }
        })
    }

    /// Every (link, side) a node sits on, in link order.
    pub fn attachments(&self, node: usize) -> Vec<(usize, usize)> {
        let mut out = vec![];
        for (i, l) in self.links.iter().enumerate() {
            if l.a == node {
                out.push((i, 0));
            }
            if l.b == node {
                out.push((i, 1));
            }
        }
        out
    }

    /// The nodes and links routes are computed from.
    pub fn graph(&self) -> Graph {
        Graph {
            kinds: self.nodes.iter().map(|n| n.role).collect(),
            ends: self.links.iter().map(|l| (l.a, l.b)).collect(),
        }
    }

    /// Next hops for every (node, destination) pair: the simulator's rule
    /// (fewest hops, only routers in between, ties to the lowest link
    /// index), computed by the same code, so both run the same paths.
    pub fn routes(&self) -> Routes {
        self.graph().routes()
    }
}

/// Address of end `side` of link `link` in 198.18.0.0/15.
pub fn link_addr(link: usize, side: usize) -> Ipv4Addr {
    let block = 198u32 << 24 | 18 << 16 | (link as u32) << 8;
    Ipv4Addr::from(block + 1 + side as u32)
}

/// The IPv6 address of end `side` of link `link` (with
/// [`crate::LabOptions::ipv6`]): `fd70:6570:<link>::<side + 1>/64`, a
/// unique local prefix ("pe" again).
pub fn link_addr6(link: usize, side: usize) -> std::net::Ipv6Addr {
    std::net::Ipv6Addr::new(0xfd70, 0x6570, link as u16, 0, 0, 0, 0, side as u16 + 1)
}

/// A deterministic, locally administered MAC for end `side` of link `link`:
/// `02:70:65:<link hi>:<link lo>:<side + 1>` ("pe" in the middle bytes).
pub fn link_mac(link: usize, side: usize) -> [u8; 6] {
    [
        0x02,
        0x70,
        0x65,
        (link >> 8) as u8,
        link as u8,
        side as u8 + 1,
    ]
}

pub fn mac_string(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Name of the node-side interface of link `link`.
pub fn node_ifname(link: usize) -> String {
    format!("pep{link}")
}

/// Name of the emulator-side interface facing end `side` of a link.
pub fn emu_ifname(side: usize) -> &'static str {
    if side == 0 {
        "side-a"
    } else {
        "side-b"
    }
}

/// Namespace of a node of lab `id`.
pub fn node_netns(id: &str, node: &str) -> String {
    format!("{NETNS_PREFIX}{id}.{node}")
}

/// Namespace of the emulator of link `link` of lab `id`.
pub fn link_netns(id: &str, link: usize) -> String {
    format!("{NETNS_PREFIX}{id}+l{link}")
}

/// The lab id a namespace name belongs to, if it is one of ours.
pub fn lab_of_netns(ns: &str) -> Option<&str> {
    let rest = ns.strip_prefix(NETNS_PREFIX)?;
    let end = rest.find(['.', '+'])?;
    Some(&rest[..end]).filter(|id| valid_id(id))
}

/// Lab ids: 1 to 24 of `[a-z0-9-]`. They never contain `.` or `+`, which
/// end the id in a namespace name, so one lab's prefix never matches
/// another's.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 24
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A lab id made from any text (a scenario name): lower case, other
/// characters to `-`, cut to 24.
pub fn id_from(text: &str) -> String {
    let mut id: String = text
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .take(24)
        .collect();
    if id.is_empty() {
        id.push_str("lab");
    }
    id
}

fn valid_name(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> DirParams {
        DirParams::new(Rate::mbps(10), Duration::from_millis(5), 100)
    }

    /// sender - r1 - receiver, plus a second host on r1.
    fn dumbbell() -> LabTopology {
        let mut t = LabTopology::new("t", 1);
        t.node("s1", Role::Host);
        t.node("r1", Role::Router);
        t.node("d", Role::Host);
        t.node("s2", Role::Host);
        t.link("s1", "r1", dir(), dir());
        t.link("r1", "d", dir(), dir());
        t.link("s2", "r1", dir(), dir());
        t
    }

    #[test]
    fn addresses_and_names() {
        assert_eq!(link_addr(0, 0), Ipv4Addr::new(198, 18, 0, 1));
        assert_eq!(link_addr(0, 1), Ipv4Addr::new(198, 18, 0, 2));
        assert_eq!(link_addr(300, 1), Ipv4Addr::new(198, 19, 44, 2));
        assert_eq!(link_addr(MAX_LINKS - 1, 1), Ipv4Addr::new(198, 19, 255, 2));
        assert_eq!(mac_string(link_mac(258, 1)), "02:70:65:01:02:02");
        assert_eq!(node_netns("geo", "r1"), "pepl-geo.r1");
        assert_eq!(link_netns("geo", 3), "pepl-geo+l3");
        assert_eq!(lab_of_netns("pepl-geo+l3"), Some("geo"));
        assert_eq!(lab_of_netns("pepl-12-3.a-b"), Some("12-3"));
        assert_eq!(lab_of_netns("pepl-x"), None);
        assert_eq!(lab_of_netns("other.x"), None);
        assert_eq!(id_from("GEO default/2"), "geo-default-2");
        assert!(valid_id("geo-default-2") && !valid_id("a.b") && !valid_id(""));
    }

    #[test]
    fn node_addresses_follow_the_first_link() {
        let t = dumbbell();
        assert_eq!(t.node_addr(0), Some(link_addr(0, 0)));
        assert_eq!(t.node_addr(1), Some(link_addr(0, 1)));
        assert_eq!(t.node_addr(2), Some(link_addr(1, 1)));
        assert_eq!(t.attachments(1), vec![(0, 1), (1, 0), (2, 1)]);
    }

    #[test]
    fn routes_go_through_routers_only() {
        use pep_model::Dir::{Forward, Reverse};
        let routes = dumbbell().routes();
        assert_eq!(routes.next_hop(0, 2), Some((0, Forward))); // s1 -> d via link 0
        assert_eq!(routes.next_hop(1, 2), Some((1, Forward))); // r1 -> d via link 1
        assert_eq!(routes.next_hop(2, 0), Some((1, Reverse)));
        assert_eq!(routes.next_hop(3, 0), Some((2, Forward)));
        assert_eq!(routes.next_hop(0, 0), None);
        assert_eq!(routes.nodes(3, 2), Some(vec![3, 1, 2]));
        // A host in the middle does not forward.
        let mut t = LabTopology::new("t", 1);
        for n in ["x", "h", "y"] {
            t.node(n, Role::Host);
        }
        t.link("x", "h", dir(), dir());
        t.link("h", "y", dir(), dir());
        assert_eq!(t.routes().next_hop(0, 2), None);
    }

    #[test]
    fn validation_names_the_problem() {
        let mut t = dumbbell();
        assert!(t.validate().is_ok());
        t.link("s1", "nobody", dir(), dir());
        assert!(t
            .validate()
            .unwrap_err()
            .to_string()
            .contains("unknown node"));
        let mut t = dumbbell();
        t.node("bad.name", Role::Host);
        assert!(t.validate().unwrap_err().to_string().contains("bad.name"));
        let mut t = dumbbell();
        t.links[0].forward.loss = LossParams::Bernoulli { p: 1.5 };
        assert!(t.validate().is_err());
    }
}
