//! The network models end to end, against analytic expectations: two-class
//! sharing of a link between one flow's data and another's ACKs, a
//! half-duplex medium, per-packet host processing cost, RED on a loaded
//! link.

use pep_core::{Duration, Instant};
use pep_sim::{Scenario, Simulation};

/// Hosts `a` and `b` on one link (`link` adds fields to it), flows as
/// given, ns-2-like TCP (1000 B segments, 40 B headers).
fn scenario(link: &str, nodes: &str, flows: &str) -> Scenario {
    let text = format!(
        r#"
[scenario]
name = "netmodels"
duration = "60s"
[defaults.tcp]
mss = "1000B"
header = "40B"
init_cwnd = 2
[defaults.sink]
rwnd = "1MiB"
[[node]]
name = "a"
[[node]]
name = "b"
{nodes}
[[link]]
between = ["a", "b"]
{link}
{flows}
[output]
series = []
"#
    );
    Scenario::from_toml_str(&text, "test").unwrap_or_else(|e| panic!("{e}"))
}

const A_TO_B: &str = "[[flow]]\nname = \"down\"\nfrom = \"a\"\nto = \"b\"\n";
const B_TO_A: &str = "[[flow]]\nname = \"up\"\nfrom = \"b\"\nto = \"a\"\n";

fn at(s: u64) -> Instant {
    Instant::ZERO + Duration::from_secs(s)
}

/// Goodput of each flow in bit/s between `from` and `to` seconds.
fn goodputs(sim: &mut Simulation, from: u64, to: u64) -> Vec<f64> {
    sim.run_until(at(from));
    let a: Vec<u64> = (0..sim.flow_count())
        .map(|f| sim.sink(f).delivered_bytes())
        .collect();
    sim.run_until(at(to));
    (0..sim.flow_count())
        .map(|f| (sim.sink(f).delivered_bytes() - a[f]) as f64 * 8.0 / (to - from) as f64)
        .collect()
}

fn close(got: f64, want: f64, tol: f64) -> bool {
    (got / want - 1.0).abs() < tol
}

// ---- Two-class link sharing ----------------------------------------------

/// 10 Mbit/s down (a->b), 256 kbit/s up (b->a) with two-class sharing on
/// the uplink: `down`'s ACKs and `up`'s data compete there. Each band holds
/// 2000 packets, more than a 1 MiB window's worth, so neither flow loses
/// anything and both classes stay backlogged: the shares are the
/// scheduler's alone, not TCP's loss recovery.
fn asymmetric(share: f64, flows: &str) -> Scenario {
    let link = format!(
        "delay = \"10ms\"\n[link.forward]\nrate = \"10Mbps\"\n[link.reverse]\nrate = \"256kbps\"\n\
         queue = {{ kind = \"two-class\", data_share = {share}, limit = 2000 }}\n"
    );
    scenario(&link, "", flows)
}

/// Data bytes and ACK bytes the uplink sent between two instants.
fn uplink_split(sim: &mut Simulation, from: u64, to: u64) -> (f64, f64) {
    let split = |sim: &Simulation| {
        let b = sim.link("b->a").unwrap().queue.band_stats();
        (b[0].dequeued_bytes, b[1].dequeued_bytes)
    };
    sim.run_until(at(from));
    let x = split(sim);
    sim.run_until(at(to));
    let y = split(sim);
    ((y.0 - x.0) as f64, (y.1 - x.1) as f64)
}

#[test]
fn two_class_gives_each_backlogged_class_its_share() {
    for share in [0.5, 0.8, 0.2] {
        let mut sim = Simulation::new(&asymmetric(share, &format!("{A_TO_B}{B_TO_A}")));
        let (data, acks) = uplink_split(&mut sim, 10, 60);
        let got = data / (data + acks);
        assert!(
            close(got, share, 0.05) && close(1.0 - got, 1.0 - share, 0.05),
            "data_share {share}: data got {got:.3} of the uplink"
        );
        // Work-conserving: the uplink was busy throughout.
        assert!((data + acks) * 8.0 > 0.98 * 256e3 * 50.0);
    }
}

#[test]
fn two_class_leaves_an_idle_class_share_to_the_other() {
    // Only the download: its ACKs get the whole uplink, not 50%. ACK
    // clocking then caps it at 256 kbit/s / 320 bit = 800 ACKs/s, one per
    // 1000-byte segment: 6.4 Mbit/s (AMP's A x M x P with M = 1).
    let mut sim = Simulation::new(&asymmetric(0.5, A_TO_B));
    let g = goodputs(&mut sim, 10, 60);
    assert!(close(g[0], 6.4e6, 0.02), "download {:.0}", g[0]);
    // Only the upload: its data gets the whole uplink (minus headers).
    let mut sim = Simulation::new(&asymmetric(0.5, B_TO_A));
    let g = goodputs(&mut sim, 10, 60);
    assert!(
        close(g[0], 256e3 * 1000.0 / 1040.0, 0.02),
        "upload {:.0}",
        g[0]
    );
}

// ---- Half-duplex medium ----------------------------------------------------

/// Both directions, each window-limited to 50 segments: more than the path
/// holds (the link stays busy) and less than the 100-packet queues (no
/// loss), so throughput is the medium's alone.
const BOTH_WAYS: &str = "[[flow]]\nname = \"down\"\nfrom = \"a\"\nto = \"b\"\nsink = { rwnd = \"50000B\" }\n\
                         [[flow]]\nname = \"up\"\nfrom = \"b\"\nto = \"a\"\nsink = { rwnd = \"50000B\" }\n";
const DOWN_ONLY: &str =
    "[[flow]]\nname = \"down\"\nfrom = \"a\"\nto = \"b\"\nsink = { rwnd = \"50000B\" }\n";

fn ethernet(medium: &str, flows: &str) -> Scenario {
    let link = format!("rate = \"10Mbps\"\ndelay = \"100us\"\n{medium}\n");
    scenario(&link, "", flows)
}

/// Bytes both directions put on the wire between two instants, in bit/s.
fn wire_rate(sim: &mut Simulation, from: u64, to: u64) -> (f64, f64) {
    let tx = |sim: &Simulation| {
        let f = sim.link("a->b").unwrap().stats.tx_bytes;
        let r = sim.link("b->a").unwrap().stats.tx_bytes;
        (f, r)
    };
    sim.run_until(at(from));
    let x = tx(sim);
    sim.run_until(at(to));
    let y = tx(sim);
    let secs = (to - from) as f64;
    (
        (y.0 - x.0) as f64 * 8.0 / secs,
        (y.1 - x.1) as f64 * 8.0 / secs,
    )
}

#[test]
fn half_duplex_carries_at_most_the_rate_across_both_directions() {
    let mut sim = Simulation::new(&ethernet("medium = \"half-duplex\"", BOTH_WAYS));
    let (f, r) = wire_rate(&mut sim, 5, 35);
    assert!(f + r <= 10e6 * 1.0001, "{f} + {r}");
    assert!(
        f + r > 0.99 * 10e6,
        "both backlogged: the channel never idles ({f} + {r})"
    );
    // Each segment costs 1040 B one way and its ACK 40 B the other, all on
    // one channel: 10 Mbit/s x 1000 / 1080 in all, split about evenly.
    let g = goodputs(&mut sim, 35, 60);
    let all = 10e6 * 1000.0 / 1080.0;
    assert!(close(g[0] + g[1], all, 0.01), "{g:?}");
    assert!(
        close(g[0], all / 2.0, 0.1) && close(g[1], all / 2.0, 0.1),
        "{g:?}"
    );
    assert!(sim.retransmissions(0).is_empty() && sim.retransmissions(1).is_empty());

    // Full duplex: each direction has its own 10 Mbit/s, carrying one
    // flow's data and the other's ACKs.
    let mut sim = Simulation::new(&ethernet("", BOTH_WAYS));
    let (f, r) = wire_rate(&mut sim, 5, 35);
    assert!(f > 0.99 * 10e6 && r > 0.99 * 10e6, "{f} {r}");
    let g = goodputs(&mut sim, 35, 60);
    assert!(close(g[0], all, 0.01) && close(g[1], all, 0.01), "{g:?}");
}

#[test]
fn half_duplex_one_flow_shares_with_its_own_acks() {
    let mut sim = Simulation::new(&ethernet("medium = \"half-duplex\"", DOWN_ONLY));
    let g = goodputs(&mut sim, 5, 60);
    assert!(close(g[0], 10e6 * 1000.0 / 1080.0, 0.01), "{g:?}");
    // Full duplex: the ACKs ride the other channel.
    let mut sim = Simulation::new(&ethernet("", DOWN_ONLY));
    let g = goodputs(&mut sim, 5, 60);
    assert!(close(g[0], 10e6 * 1000.0 / 1040.0, 0.01), "{g:?}");
}

#[test]
fn contention_backoff_idles_the_channel_reproducibly() {
    let backoff = "medium = { kind = \"half-duplex\", backoff = \"200us\" }";
    let run = || {
        let mut sim = Simulation::new(&ethernet(backoff, BOTH_WAYS));
        let w = wire_rate(&mut sim, 5, 35);
        (w, sim.medium("a->b").unwrap().stats)
    };
    let ((f, r), stats) = run();
    assert_eq!(run(), ((f, r), stats));
    assert!(stats.contended > 1000 && stats.backoff_ns > 0, "{stats:?}");
    assert!(f + r < 0.95 * 10e6, "{f} + {r}");
}

// ---- Host processing cost --------------------------------------------------

/// 100 Mbit/s, 1 ms: the link is never the limit; `b` costs as given.
fn costly_receiver(cost: &str, sink: &str) -> Scenario {
    let nodes = format!("processing = {{ {cost} }}");
    let flows = format!("{A_TO_B}sink = {{ {sink} }}\n");
    let link = "rate = \"100Mbps\"\ndelay = \"1ms\"\nqueue = { limit = 1000 }\n";
    // `b` is the last [[node]] before the link: the processing line is its.
    let s = format!(
        r#"
[scenario]
name = "cpu"
duration = "30s"
[defaults.tcp]
mss = "1000B"
header = "40B"
[[node]]
name = "a"
[[node]]
name = "b"
{nodes}
[[link]]
between = ["a", "b"]
{link}
{flows}
[output]
series = []
"#
    );
    Scenario::from_toml_str(&s, "test").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_per_packet_cost_limits_a_host_to_one_over_c_packets_per_second() {
    // c = 500 us for every packet b receives or sends: 2000 packets/s.
    let sc = costly_receiver("data = \"500us\", ack = \"500us\"", "ack = \"every\"");
    let mut sim = Simulation::new(&sc);
    sim.run_until(at(5));
    let p0 = sim.processor("b").unwrap().stats.packets;
    let g = goodputs(&mut sim, 5, 30);
    let pps = (sim.processor("b").unwrap().stats.packets - p0) as f64 / 25.0;
    assert!(close(pps, 2000.0, 0.02), "{pps} packets/s");
    // An ACK per segment: 1000 segments/s of 1000 B.
    assert!(close(g[0], 8e6, 0.02), "{g:?}");

    // Fewer packets, more throughput: an ACK every 2 segments costs 3c per
    // 2 segments, so 1333 segments/s.
    let sc = costly_receiver(
        "data = \"500us\", ack = \"500us\"",
        "ack = { kind = \"delayed\", count = 2 }",
    );
    let mut sim = Simulation::new(&sc);
    let g = goodputs(&mut sim, 5, 30);
    assert!(close(g[0], 8e6 * 4.0 / 3.0, 0.02), "{g:?}");

    // Only data costs: 1 / 500 us = 2000 segments/s.
    let sc = costly_receiver("data = \"500us\"", "ack = \"every\"");
    let mut sim = Simulation::new(&sc);
    let g = goodputs(&mut sim, 5, 30);
    assert!(close(g[0], 16e6, 0.02), "{g:?}");
}

// ---- RED on a loaded link --------------------------------------------------

#[test]
fn red_drops_early_and_keeps_the_average_near_its_thresholds() {
    // Eight flows through a 10 Mbit/s, 20 ms bottleneck with packet-mode
    // RED (min_th 20, max_th 60): drops are RED's, not the 1000-packet
    // limit's, and the link stays busy.
    let link = "rate = \"10Mbps\"\ndelay = \"20ms\"\n\
                queue = { kind = \"red\", min_th = 20, max_th = 60, bytes = false, limit = 1000 }\n";
    let flows =
        "[[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\ncount = 8\nstagger = \"100ms\"\n";
    let mut sim = Simulation::new(&scenario(link, "", flows));
    let (f, _) = wire_rate(&mut sim, 10, 60);
    assert!(f > 0.95 * 10e6, "{f}");
    let q = sim.link("a->b").unwrap().queue.stats;
    assert!(q.dropped_early > 50, "{q:?}");
    assert_eq!(q.dropped_overflow, 0, "{q:?}");
    assert_eq!(
        q.dropped,
        q.dropped_early + q.dropped_forced + q.dropped_overflow
    );
    let pep_core::queue::Qdisc::Red(red) = &sim.link("a->b").unwrap().queue.disc else {
        panic!()
    };
    assert!(
        red.avg() > 10.0 && red.avg() < 90.0,
        "average queue {}",
        red.avg()
    );
}

/// Two links between the same nodes: each direction has its own name in
/// every output (both were "a->b" before, told apart only by row order).
#[test]
fn parallel_links_have_their_own_names() {
    let sc = scenario(
        "rate = \"10Mbps\"\ndelay = \"5ms\"",
        "",
        "[[link]]\nbetween = [\"a\", \"b\"]\nrate = \"1Mbps\"\ndelay = \"5ms\"\n\
         [[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\n",
    );
    let mut sim = Simulation::new(&sc);
    sim.run_until(Instant::ZERO + Duration::from_secs(1));
    let links = sim.summary().links;
    let names: Vec<&str> = links.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["a->b", "b->a", "a->b#2", "b->a#2"]);
    // Routes take the first link (lowest index): it carried the data.
    assert!(links[0].tx_packets > 0);
    assert_eq!(links[2].tx_packets, 0);
    assert!(sim.link("a->b#2").is_some());
}
