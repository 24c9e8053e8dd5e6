//! The summary's queueing-delay percentiles (`p50_queue_delay_ms`,
//! `p95_queue_delay_ms`) against a queue whose length is known: a
//! window-limited flow keeps its window minus the path's bandwidth-delay
//! product waiting at the bottleneck.

use pep_sim::Simulation;

use crate::support::parse;

/// One 12 Mbit/s link, 10 ms each way, 1500 B packets (1 ms each), a
/// receive window of `window` segments, ACKs for every segment; the
/// `queues` series on (it turns the percentiles on).
fn run(window: u64) -> pep_sim::output::LinkSummary {
    let text = format!(
        r#"
[scenario]
name = "queue-delay"
duration = "20s"
[defaults.tcp]
mss = "1460B"
header = "40B"
[defaults.sink]
rwnd = "{}B"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "12Mbps"
delay = "10ms"
queue = {{ kind = "droptail", limit = 1000 }}
[[flow]]
name = "bulk"
from = "a"
to = "b"
[output]
series = ["queues"]
"#,
        window * 1460
    );
    let mut sim = Simulation::new(&parse(&text, "queue-delay.toml"));
    sim.run();
    let s = sim.summary();
    s.links.into_iter().find(|l| l.name == "a->b").unwrap()
}

/// 40 segments in flight over a loop of 21 ms at 1 packet/ms: once the
/// window is reached, 40 - 21 = 19 packets wait, so a packet waits 19 ms
/// (a little less: the ACK's own 27 us serialization and the packet
/// being sent when the window opens). The distribution is nearly a point:
/// p50 and p95 agree to one packet time, and agree with the sampled
/// queue's mean length times the packet time.
#[test]
fn a_window_beyond_the_bdp_waits_its_excess() {
    let l = run(40);
    let p50 = l.p50_queue_delay_ms.unwrap();
    let p95 = l.p95_queue_delay_ms.unwrap();
    assert!((18.0..=19.0).contains(&p50), "p50 {p50} ms");
    assert!(p95 >= p50 && p95 - p50 <= 1.0, "p95 {p95} ms, p50 {p50}");
    let mean = l.mean_queue_packets.unwrap();
    assert!(
        (mean - p50).abs() <= 1.0,
        "queue mean {mean} packets, p50 {p50} ms"
    );
}

/// A window below the BDP never queues after slow start: 10 segments in
/// a 21-packet loop leave the link idle between bursts, and every packet
/// but those of the first rounds starts at once.
#[test]
fn a_window_below_the_bdp_does_not_wait() {
    let l = run(10);
    assert_eq!(l.p50_queue_delay_ms, Some(0.0));
    assert!(l.p95_queue_delay_ms.unwrap() <= 0.01, "{l:?}");
}
