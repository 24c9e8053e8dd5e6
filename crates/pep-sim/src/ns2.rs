//! The ns-2 oracle: a baseline scenario (no PEP) as an ns-2 2.35 Tcl script.
//!
//! Used by the differential tests (`tests/ns2_oracle.rs`): the same scenario
//! runs in ns-2 (`ns script.tcl`) and in the simulator's `ns2` profile, and
//! their goodputs are compared. Only what both can express is translated:
//! DropTail and RED queues in packets, Bernoulli loss (ns-2's `ErrorModel` on
//! packets, placed after the queue as `$ns lossmodel` does), one-way TCP
//! agents (`Agent/TCP` Tahoe, `/Reno`, `/Newreno`, `/Sack1`), `TCPSink`,
//! `TCPSink/Sack1` and `TCPSink/DelAck`, FTP bulk or finite sources.
//! Anything else is refused, naming the node, link or flow and the field,
//! rather than silently dropped: among others bidirectional flows
//! (`reverse`), `tcp.pacing`, `tcp.sndbuf`, `tcp.rack`, a reading
//! application (`sink.app`) and a delayed-ACK `tick`.
//!
//! The script prints, for every flow, `ack <flow> <time> <acked-bytes>`
//! at `warmup` and at the end of the run: payload bytes cumulatively
//! acknowledged (ns-2's `ack_`, the highest in-order packet acknowledged,
//! times `packetSize_`; with `syn_` the SYN is packet 0 and carries none),
//! and the counters [`parse_counters`] reads. A DropTail limit is written
//! one higher than pep's: ns-2's DropTail holds `limit_ - 1` waiting.

use std::fmt::Write as _;

use pep_core::queue::QueueLimit;
use pep_core::{Duration, KindFilter};

use crate::scenario::{
    AckSpec, AppReadSpec, Dir, LossSpec, MediumSpec, NodeKind, QueueSpec, RecoveryKind, RedSpec,
    Routes, Scenario, SourceSpec,
};

/// Seconds as ns-2 reads them.
fn secs(d: Duration) -> String {
    format!("{:.9}", d.as_secs_f64())
}

/// ns-2's RED takes its parameters when the link is made: set them as the
/// class's defaults just before. Zero thresholds and `q_weight_ -1` ask
/// ns-2 for the automatic values the simulator computes the same way.
fn red_defaults(w: &mut String, r: &RedSpec) {
    let b = |v: bool| if v { "true" } else { "false" };
    for (k, v) in [
        ("bytes_", b(r.bytes).to_string()),
        ("queue_in_bytes_", b(r.bytes).to_string()),
        ("gentle_", b(r.gentle).to_string()),
        ("wait_", b(r.wait).to_string()),
        ("mean_pktsize_", r.mean_pktsize.to_string()),
        ("thresh_", r.min_th.unwrap_or(0.0).to_string()),
        ("maxthresh_", r.max_th.unwrap_or(0.0).to_string()),
        ("q_weight_", r.q_w.unwrap_or(-1.0).to_string()),
        ("linterm_", (1.0 / r.max_p).to_string()),
        ("targetdelay_", secs(r.target_delay)),
    ] {
        let _ = writeln!(w, "Queue/RED set {k} {v}");
    }
}

/// Flow settings ns-2's one-way agents and sinks have no counterpart for:
/// translating without them would run a different experiment, so each is
/// refused, naming the flow and the field.
fn unsupported_flow_features(f: &crate::scenario::FlowSpec) -> Result<(), String> {
    let t = &f.tcp;
    let refuse = |what: &str| Err(format!("flow {}: {what}", f.name));
    if f.reverse.is_some() {
        return refuse(
            "reverse: data both ways over one connection (ns-2's one-way TCP agents \
             carry data one way only)",
        );
    }
    if t.pacing || t.max_pacing_rate.is_some() {
        return refuse("tcp.pacing: ns-2's TCP agents do not pace");
    }
    if t.sndbuf.is_some() {
        return refuse("tcp.sndbuf: ns-2's TCP agents have no send buffer limit");
    }
    if t.rack {
        return refuse("tcp.rack: ns-2 2.35 has no RACK-TLP");
    }
    if f.sink.app != AppReadSpec::Immediate {
        return refuse(
            "sink.app: a reading application (ns-2's TCPSink takes data as it arrives, \
             with a fixed window)",
        );
    }
    if let AckSpec::Delayed { tick: Some(_), .. } = f.sink.ack {
        return refuse("sink.ack.tick: ns-2's DelAck timer has no tick");
    }
    Ok(())
}

/// ns-2 routes over every node, pep only through routers: a flow whose
/// route would change were its hosts routers is refused, naming both.
/// Only hosts with two or more neighbours are made routers for the
/// comparison: a node with one neighbour lies on no shortest path between
/// others, so its routes are the same either way, and the usual host
/// behind one router adds no column to the routes (all nodes as routers
/// were nodes squared: 3 GB at 10,000 flows).
fn hosts_that_would_forward(sc: &Scenario) -> Result<(), String> {
    let ends: Vec<(usize, usize)> = sc.links.iter().map(|l| (l.a, l.b)).collect();
    // The first neighbour seen, then whether another one was.
    let mut first = vec![None; sc.nodes.len()];
    let mut more = vec![false; sc.nodes.len()];
    for &(a, b) in ends.iter().filter(|(a, b)| a != b) {
        for (v, w) in [(a, b), (b, a)] {
            match first[v] {
                None => first[v] = Some(w),
                Some(u) if u != w => more[v] = true,
                Some(_) => {}
            }
        }
    }
    let kinds: Vec<NodeKind> = sc
        .nodes
        .iter()
        .zip(&more)
        .map(|(n, &more)| if more { NodeKind::Router } else { n.kind })
        .collect();
    let all = Routes::compute(&kinds, &ends);
    let show = |src: usize, hops: &[(usize, Dir)]| sc.nodes_text(&sc.hop_nodes(src, hops));
    for f in &sc.flows {
        for (src, dst) in [(f.src, f.dst), (f.dst, f.src)] {
            let (Some(ours), Some(theirs)) = (sc.routes.path(src, dst), all.path(src, dst)) else {
                continue;
            };
            if ours != theirs {
                return Err(format!(
                    "flow {}: ns-2 forwards through hosts too and would route {} where pep \
                     routes {} (hosts do not forward): make the host a router, or remove \
                     its extra link",
                    f.name,
                    show(src, &theirs),
                    show(src, &ours)
                ));
            }
        }
    }
    Ok(())
}

/// The ns-2 script for `sc`, recording acknowledged bytes at `warmup` and
/// at the end. `ns_seed` seeds ns-2's default RNG (loss, `boot_time_`).
/// An error names what ns-2 cannot be given.
pub fn script(sc: &Scenario, warmup: Duration, ns_seed: u64) -> Result<String, String> {
    let mut s = String::new();
    let w = &mut s;
    // A PEP has no ns-2 counterpart (a split-pair that is switched off is
    // a plain router, as in the thesis's no-PEP runs).
    if let Some(a) = sc
        .agents
        .iter()
        .find(|a| a.params.get("enabled").and_then(toml::Value::as_bool) != Some(false))
    {
        return Err(format!("agent {}: a PEP; ns-2 runs baselines only", a.name));
    }
    if ns_seed == 0 {
        // ns-2's RNG reads seed 0 as "seed from the clock".
        return Err(
            "seed 0: ns-2 seeds from the clock then, so its runs would not repeat; \
                    give another seed"
                .into(),
        );
    }
    hosts_that_would_forward(sc)?;
    let _ = writeln!(w, "set ns [new Simulator]");
    let _ = writeln!(w, "global defaultRNG");
    let _ = writeln!(w, "$defaultRNG seed {ns_seed}");
    for (i, n) in sc.nodes.iter().enumerate() {
        if n.processing.is_some() {
            return Err(format!("node {}: a processing cost", n.name));
        }
        let _ = writeln!(w, "set n({i}) [$ns node]");
    }
    for (li, l) in sc.links.iter().enumerate() {
        if l.medium != MediumSpec::FullDuplex {
            return Err(format!("link {li}: a half-duplex medium"));
        }
        // Direction 0 is forward (a to b), 1 reverse.
        for (di, d) in [Dir::Forward, Dir::Reverse].into_iter().enumerate() {
            let spec = l.dir(d);
            if spec.service.is_some() {
                return Err(format!(
                    "link {li}: a schedule, trace or preset (service that changes over time)"
                ));
            }
            let (a, b) = (l.from_node(d), l.to_node(d));
            let (kind, limit) = match &spec.queue {
                QueueSpec::DropTail { limit } => ("DropTail", *limit),
                QueueSpec::Red(r) => {
                    red_defaults(w, r);
                    ("RED", r.limit)
                }
                _ => return Err(format!("link {li}: a queue other than DropTail or RED")),
            };
            let _ = writeln!(
                w,
                "$ns simplex-link $n({a}) $n({b}) {}bps {}s {kind}",
                spec.rate.0,
                secs(spec.delay)
            );
            let limit = match limit {
                QueueLimit::Packets(n) => n,
                QueueLimit::Bytes(_) => return Err(format!("link {li}: byte queue limit")),
            };
            // ns-2's DropTail refuses an arrival when `length + 1 >= limit_`
            // (queue/drop-tail.cc), so it holds `limit_ - 1` waiting; pep's
            // limit counts waiting packets. RED holds `limit_`.
            let limit = if kind == "DropTail" { limit + 1 } else { limit };
            let _ = writeln!(w, "$ns queue-limit $n({a}) $n({b}) {limit}");
            if spec.loss == LossSpec::None {
                // Queue drops, for `parse_counters` (a loss model's drops
                // would reach the same monitor, so only links without one).
                let _ = writeln!(w, "set qm({li},{di}) [$ns monitor-queue $n({a}) $n({b}) 0]");
            }
            match &spec.loss {
                LossSpec::None => {}
                LossSpec::Bernoulli {
                    p,
                    applies_to: KindFilter::All,
                } => {
                    let _ = writeln!(w, "set em [new ErrorModel]");
                    let _ = writeln!(w, "$em unit pkt");
                    let _ = writeln!(w, "$em set rate_ {p}");
                    let _ = writeln!(w, "$em ranvar [new RandomVariable/Uniform]");
                    let _ = writeln!(w, "$em drop-target [new Agent/Null]");
                    let _ = writeln!(w, "$ns lossmodel $em $n({a}) $n({b})");
                }
                LossSpec::Drop { .. } => return Err(format!("link {li}: scripted drops")),
                LossSpec::Bernoulli { .. } | LossSpec::GilbertElliott { .. } => {
                    return Err(format!(
                        "link {li}: loss other than Bernoulli on all packets"
                    ))
                }
            }
        }
    }
    for (i, f) in sc.flows.iter().enumerate() {
        let t = &f.tcp;
        // ns-2's Linux agent brings its own loss recovery (a SACK
        // scoreboard when the sink sends blocks), so `recovery` does not
        // pick its class.
        let linux = t.cc == crate::scenario::CcKind::CubicNs2;
        let agent = if linux {
            "Agent/TCP/Linux"
        } else {
            match t.recovery(f.sink.sack) {
                RecoveryKind::Tahoe => "Agent/TCP",
                RecoveryKind::Reno => "Agent/TCP/Reno",
                RecoveryKind::NewReno => "Agent/TCP/Newreno",
                RecoveryKind::Sack => "Agent/TCP/Sack1",
            }
        };
        if !matches!(
            t.cc,
            crate::scenario::CcKind::Tahoe
                | crate::scenario::CcKind::Reno
                | crate::scenario::CcKind::NewReno
                | crate::scenario::CcKind::Sack
                | crate::scenario::CcKind::CubicNs2
        ) {
            return Err(format!(
                "flow {}: ns-2 has no {:?} agent here",
                f.name, t.cc
            ));
        }
        unsupported_flow_features(f)?;
        let sink = match (f.sink.sack, &f.sink.ack) {
            (false, AckSpec::Every) => "Agent/TCPSink".to_string(),
            (true, AckSpec::Every) => "Agent/TCPSink/Sack1".to_string(),
            (false, AckSpec::Delayed { count: 2, .. }) => "Agent/TCPSink/DelAck".to_string(),
            (true, AckSpec::Delayed { count: 2, .. }) => "Agent/TCPSink/Sack1/DelAck".to_string(),
            _ => return Err(format!("flow {}: sink not expressible", f.name)),
        };
        let _ = writeln!(w, "set tcp({i}) [new {agent}]");
        let set = |w: &mut String, k: &str, v: String| {
            let _ = writeln!(w, "$tcp({i}) set {k} {v}");
        };
        set(w, "packetSize_", t.mss.to_string());
        set(w, "tcpip_base_hdr_size_", t.header.to_string());
        set(w, "windowInit_", t.init_cwnd.to_string());
        set(w, "window_", (f.sink.rwnd / t.mss).to_string());
        set(w, "minrto_", secs(t.min_rto));
        set(w, "rtxcur_init_", secs(t.initial_rto));
        set(w, "maxrto_", secs(t.max_rto));
        set(w, "tcpTick_", secs(t.clock_granularity));
        set(
            w,
            "syn_",
            (if t.handshake { "true" } else { "false" }).into(),
        );
        set(w, "maxburst_", t.max_burst.unwrap_or(0).to_string());
        set(w, "fid_", i.to_string());
        if linux {
            let _ = writeln!(w, "$ns at 0.0 \"$tcp({i}) select_ca cubic\"");
        }
        let _ = writeln!(w, "set sink({i}) [new {sink}]");
        if let AckSpec::Delayed { timeout, .. } = f.sink.ack {
            let _ = writeln!(w, "$sink({i}) set interval_ {}", secs(timeout));
        }
        let _ = writeln!(w, "$ns attach-agent $n({}) $tcp({i})", f.src);
        let _ = writeln!(w, "$ns attach-agent $n({}) $sink({i})", f.dst);
        let _ = writeln!(w, "$ns connect $tcp({i}) $sink({i})");
        let _ = writeln!(w, "set ftp({i}) [new Application/FTP]");
        let _ = writeln!(w, "$ftp({i}) attach-agent $tcp({i})");
        let start = secs(f.start);
        match f.source {
            SourceSpec::Bulk => {
                let _ = writeln!(w, "$ns at {start} \"$ftp({i}) start\"");
            }
            SourceSpec::Finite { bytes } => {
                let pkts = bytes.div_ceil(t.mss as u64);
                let _ = writeln!(w, "$ns at {start} \"$ftp({i}) produce {pkts}\"");
            }
            SourceSpec::Pareto(_) => return Err(format!("flow {}: pareto source", f.name)),
        }
    }
    // Acknowledged payload bytes per flow: ack_ counts packets from 0, and
    // with syn_ packet 0 is the SYN.
    let _ = writeln!(w, "set qm(none) 0\nunset qm(none)");
    let _ = writeln!(w, "proc record {{}} {{");
    let _ = writeln!(w, "  global ns tcp");
    for (i, f) in sc.flows.iter().enumerate() {
        let first = if f.tcp.handshake { 0 } else { 1 };
        let _ = writeln!(
            w,
            "  set a [expr [$tcp({i}) set ack_] + {first}]\n  if {{$a < 0}} {{ set a 0 }}\n  puts \"ack {i} [$ns now] [expr $a * {}]\"\n  puts \"rexmit {i} [$ns now] [$tcp({i}) set nrexmitpack_]\"",
            f.tcp.mss
        );
    }
    let _ = writeln!(w, "  global qm\n  foreach k [array names qm] {{");
    let _ = writeln!(
        w,
        "    puts \"drops $k [$ns now] [$qm($k) set pdrops_]\"\n  }}"
    );
    let _ = writeln!(w, "}}");
    let _ = writeln!(w, "$ns at {} \"record\"", secs(warmup));
    let _ = writeln!(w, "$ns at {} \"record; exit 0\"", secs(sc.duration));
    let _ = writeln!(w, "$ns run");
    Ok(s)
}

/// Acknowledged bytes per flow at the warm-up time and at the end, from the
/// script's output: `(warmup, end)` for each flow in order.
pub fn parse(stdout: &str, flows: usize) -> Result<Vec<(u64, u64)>, String> {
    let mut out = vec![(None, None); flows];
    for line in stdout.lines() {
        let mut it = line.split_whitespace();
        if it.next() != Some("ack") {
            continue;
        }
        let (Some(i), Some(_t), Some(b)) = (it.next(), it.next(), it.next()) else {
            return Err(format!("bad line: {line}"));
        };
        let i: usize = i.parse().map_err(|_| format!("bad line: {line}"))?;
        let b: f64 = b.parse().map_err(|_| format!("bad line: {line}"))?;
        let slot = out.get_mut(i).ok_or(format!("bad flow: {line}"))?;
        if slot.0.is_none() {
            slot.0 = Some(b as u64);
        } else {
            slot.1 = Some(b as u64);
        }
    }
    out.into_iter()
        .enumerate()
        .map(|(i, (a, b))| match (a, b) {
            (Some(a), Some(b)) => Ok((a, b)),
            _ => Err(format!("flow {i}: missing records in ns output")),
        })
        .collect()
}

/// Counters the script prints besides acknowledged bytes, at the warm-up
/// and at the end: per flow, packets retransmitted (`nrexmitpack_`); per
/// link direction without a loss model, packets its queue dropped
/// (`pdrops_`), keyed `(link index, direction index)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// `(warmup, end)` per flow.
    pub retransmitted: Vec<(u64, u64)>,
    /// `((link, dir), (warmup, end))`, in the order first printed.
    pub queue_drops: Vec<((usize, usize), (u64, u64))>,
}

/// [`Counters`] from the script's output.
pub fn parse_counters(stdout: &str, flows: usize) -> Result<Counters, String> {
    let bad = |line: &str| format!("bad line: {line}");
    let mut c = Counters {
        retransmitted: vec![(u64::MAX, u64::MAX); flows],
        queue_drops: Vec::new(),
    };
    for line in stdout.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (kind, key, v) = match f.as_slice() {
            [kind @ ("rexmit" | "drops"), key, _t, v] => (*kind, *key, *v),
            _ => continue,
        };
        let v: u64 = v.parse().map_err(|_| bad(line))?;
        let slot = if kind == "rexmit" {
            let i: usize = key.parse().map_err(|_| bad(line))?;
            c.retransmitted.get_mut(i).ok_or_else(|| bad(line))?
        } else {
            let (l, d) = key.split_once(',').ok_or_else(|| bad(line))?;
            let k = (
                l.parse().map_err(|_| bad(line))?,
                d.parse().map_err(|_| bad(line))?,
            );
            match c.queue_drops.iter().position(|(q, _)| *q == k) {
                Some(p) => &mut c.queue_drops[p].1,
                None => {
                    c.queue_drops.push((k, (u64::MAX, u64::MAX)));
                    &mut c.queue_drops.last_mut().expect("pushed").1
                }
            }
        };
        if slot.0 == u64::MAX {
            slot.0 = v;
        } else {
            slot.1 = v;
        }
    }
    if c.retransmitted.iter().any(|r| r.1 == u64::MAX) {
        return Err("missing rexmit records in ns output".into());
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::scenario::tests::BASE;

    fn script_with(flow_extra: &str) -> Result<String, String> {
        let text = format!("{BASE}{flow_extra}\n");
        let sc = Scenario::from_toml_str(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
        script(&sc, Duration::from_secs(1), 1)
    }

    #[test]
    fn a_plain_flow_translates() {
        let s = script_with("").unwrap();
        assert!(s.contains("set tcp(0) [new Agent/TCP/Newreno]"), "{s}");
        assert!(s.contains("[new Agent/TCPSink]"), "{s}");
        // pep's 100 waiting packets are ns-2 DropTail's limit_ 101.
        assert!(s.contains("$ns queue-limit $n(0) $n(1) 101\n"), "{s}");
        assert!(
            s.contains("set qm(1,0) [$ns monitor-queue $n(1) $n(2) 0]"),
            "{s}"
        );
    }

    #[test]
    fn counters_are_read_per_flow_and_queue() {
        let out = "ack 0 5 1000\nrexmit 0 5 3\ndrops 1,0 5 4\ndrops 0,1 5 0\n\
                   ack 0 30 9000\nrexmit 0 30 7\ndrops 1,0 30 9\ndrops 0,1 30 0\n";
        let c = parse_counters(out, 1).unwrap();
        assert_eq!(c.retransmitted, vec![(3, 7)]);
        assert_eq!(c.queue_drops, vec![((1, 0), (4, 9)), ((0, 1), (0, 0))]);
        assert!(parse_counters("rexmit 0 5 3\n", 1).is_err(), "one record");
        assert!(parse_counters("rexmit 2 5 3\n", 1).is_err(), "no flow 2");
    }

    #[test]
    fn flow_features_ns2_lacks_are_refused_by_flow_and_field() {
        for (extra, want) in [
            ("reverse = \"bulk\"", "flow f1: reverse: data both ways"),
            (
                "reverse = { kind = \"finite\", size = \"1MB\" }",
                "flow f1: reverse:",
            ),
            ("tcp = { pacing = true }", "flow f1: tcp.pacing:"),
            ("tcp = { sndbuf = \"64KiB\" }", "flow f1: tcp.sndbuf:"),
            ("tcp = { rack = true }", "flow f1: tcp.rack:"),
            (
                "sink = { app = { kind = \"reader\" } }",
                "flow f1: sink.app:",
            ),
            (
                "sink = { app = { kind = \"reader\", when = \"arrival\", chunk = \"4KiB\" } }",
                "flow f1: sink.app:",
            ),
            (
                "sink = { ack = { kind = \"delayed\", timeout = \"0ms\", tick = \"200ms\" } }",
                "flow f1: sink.ack.tick:",
            ),
        ] {
            let e = script_with(extra).expect_err(extra);
            assert!(e.starts_with(want), "{extra}: {e}");
        }
        // The same settings off translate.
        script_with("tcp = { pacing = false, rack = false }").unwrap();
        script_with("sink = { app = \"immediate\", ack = \"delayed\" }").unwrap();
    }

    /// The route comparison makes routers of multi-homed hosts only: on a
    /// 20,000-flow dumbbell (40,002 nodes) all nodes as routers were a
    /// 40,002^2 table of 12.8 GB.
    #[test]
    fn hosts_behind_one_router_stay_hosts_in_the_comparison() {
        let sc = crate::bench::dumbbell(20_000, 10).unwrap();
        hosts_that_would_forward(&sc).unwrap();
    }

    /// A host with links to both ends: pep routes around it (hosts do not
    /// forward), ns-2 would route through it, a hop shorter.
    #[test]
    fn a_route_ns2_would_take_through_a_host_is_refused() {
        let mut text = String::from("[scenario]\nname = \"t\"\nduration = \"10s\"\n");
        for (n, kind) in [
            ("a", "host"),
            ("r1", "router"),
            ("r2", "router"),
            ("b", "host"),
        ] {
            text += &format!("[[node]]\nname = \"{n}\"\nkind = \"{kind}\"\n");
        }
        text += "[[node]]\nname = \"h\"\n";
        for (x, y) in [
            ("a", "r1"),
            ("r1", "r2"),
            ("r2", "b"),
            ("a", "h"),
            ("h", "b"),
        ] {
            text += &format!(
                "[[link]]\nbetween = [\"{x}\", \"{y}\"]\nrate = \"10Mbps\"\ndelay = \"1ms\"\n"
            );
        }
        text += "[[flow]]\nname = \"f1\"\nfrom = \"a\"\nto = \"b\"\n";
        let sc = Scenario::from_toml_str(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
        let e = script(&sc, Duration::from_secs(1), 1).unwrap_err();
        assert!(
            e.starts_with(
                "flow f1: ns-2 forwards through hosts too and would route a -> h -> b where \
                 pep routes a -> r1 -> r2 -> b"
            ),
            "{e}"
        );
        let plain = Scenario::from_toml_str(BASE, "t.toml").unwrap();
        let e = script(&plain, Duration::from_secs(1), 0).unwrap_err();
        assert!(e.starts_with("seed 0: ns-2 seeds from the clock"), "{e}");
    }
}
