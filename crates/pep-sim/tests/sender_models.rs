//! Pacing, send-buffer and window-scaling checks through the engine, and
//! bidirectional transfers with piggybacked ACKs.

use pep_core::{Duration, Instant};
use pep_sim::{Scenario, Simulation};
use pep_wire::PcapReader;

/// a --(1 Gbit/s, 1 ms)-- r --(`rate`, `delay`, queue `queue`)-- b.
fn path(rate: &str, delay: &str, queue: u32, tcp: &str, sink: &str, extra: &str) -> Scenario {
    let text = format!(
        r#"
[scenario]
name = "sender-models"
duration = "30s"
seed = 1
[defaults.tcp]
mss = "1000B"
header = "40B"
[[node]]
name = "a"
[[node]]
name = "r"
kind = "router"
[[node]]
name = "b"
[[link]]
between = ["a", "r"]
rate = "1Gbps"
delay = "1ms"
queue = {{ limit = 10000 }}
[[link]]
between = ["r", "b"]
rate = "{rate}"
delay = "{delay}"
queue = {{ limit = {queue} }}
[[flow]]
name = "f"
from = "a"
to = "b"
tcp = {{ {tcp} }}
sink = {{ {sink} }}
{extra}
[output]
series = []
"#
    );
    Scenario::from_toml_str(&text, "test").unwrap_or_else(|e| panic!("{e}"))
}

/// Bytes delivered between two instants (seconds).
fn delivered_between(sim: &mut Simulation, from_s: u64, to_s: u64) -> u64 {
    sim.run_until(Instant::ZERO + Duration::from_secs(from_s));
    let a = sim.sink(0).delivered_bytes();
    sim.run_until(Instant::ZERO + Duration::from_secs(to_s));
    sim.sink(0).delivered_bytes() - a
}

/// Departure times (ns) of the packets on link a->r (all data: the flow
/// sends from a).
fn departures(sc: &Scenario) -> Vec<u64> {
    let dir = tempfile::tempdir().unwrap();
    let mut sim = Simulation::new(sc);
    sim.open_traces(sc, dir.path()).expect("open traces");
    sim.run();
    sim.finish_traces().expect("finish traces");
    let file = std::fs::File::open(dir.path().join("a-r.pcap")).expect("pcap");
    PcapReader::new(std::io::BufReader::new(file))
        .expect("reader")
        .map(|rec| rec.expect("record").ts_ns)
        .collect()
}

const TRACE: &str = "[[trace]]\nlink = \"a->r\"\nfile = \"a-r.pcap\"\n";

#[test]
fn capped_pacing_spaces_departures_by_wire_bits_over_rate() {
    // 5 Mbit/s cap under a 10 Mbit/s bottleneck: 1040 B every 1.664 ms.
    let tcp = "pacing = true, max_pacing_rate = \"5Mbps\"";
    let sc = path("10Mbps", "20ms", 1000, tcp, "rwnd = \"1MiB\"", TRACE);
    let t = departures(&sc);
    let gaps: Vec<u64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    let want = 1040.0 * 8.0 / 5e6 * 1e9;
    // The first window before an RTT sample is also capped, so every gap.
    let (min, max) = (*gaps.iter().min().unwrap(), *gaps.iter().max().unwrap());
    assert!(gaps.len() > 10_000, "{} packets", gaps.len());
    assert!(
        (min as f64 / want - 1.0).abs() < 0.001,
        "min gap {min} ns, want {want:.0}"
    );
    let mut sorted = gaps.clone();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2];
    assert!(
        (median as f64 / want - 1.0).abs() < 0.001,
        "median {median}"
    );
    println!(
        "capped: {} gaps, min {min} median {median} max {max} ns, want {want:.0}",
        gaps.len()
    );
}

#[test]
fn window_paced_departures_are_never_faster_than_the_rate_bound() {
    // rate <= 2 x rwnd / base RTT (slow-start ratio, the largest window, the
    // smallest srtt), so after the first RTT no gap is shorter than
    // wire x base_rtt / (2 x rwnd); unpaced, packets leave back to back at
    // 1 Gbit/s (8.3 us).
    let rwnd = 40_000.0;
    let base_rtt = 2.0 * (0.001 + 0.020);
    let bound_ns = 1040.0 * base_rtt / (2.0 * rwnd) * 1e9;
    let sink = "rwnd = \"40000B\"";
    let gaps_of = |tcp: &str| {
        let t = departures(&path("10Mbps", "20ms", 1000, tcp, sink, TRACE));
        let t: Vec<u64> = t.into_iter().filter(|&x| x > 100_000_000).collect();
        t.windows(2).map(|w| w[1] - w[0]).min().unwrap()
    };
    let paced = gaps_of("pacing = true");
    let unpaced = gaps_of("pacing = false");
    println!("min gap: paced {paced} ns, unpaced {unpaced} ns, bound {bound_ns:.0} ns");
    assert!(paced as f64 >= bound_ns * 0.999, "{paced} < {bound_ns}");
    assert!(unpaced < 10_000, "{unpaced}");
}

#[test]
fn pacing_shrinks_slow_start_bursts_at_the_same_throughput() {
    // Window-limited at half the BDP (10 Mbit/s x 42 ms = 52.5 kB): unpaced
    // slow start puts half a window back to back into the bottleneck queue;
    // paced at 2 x 24 kB / 42 ms = 9.1 Mbit/s, the window is spread over the RTT.
    let run = |tcp: &str| {
        let sc = path("10Mbps", "20ms", 1000, tcp, "rwnd = \"24000B\"", "");
        let mut sim = Simulation::new(&sc);
        let bytes = delivered_between(&mut sim, 5, 30);
        sim.run();
        let q = sim
            .summary()
            .links
            .iter()
            .find(|l| l.name == "r->b")
            .unwrap()
            .max_queue_packets;
        (bytes as f64 * 8.0 / 25.0, q)
    };
    let (bw_paced, q_paced) = run("pacing = true, init_cwnd = 2");
    let (bw_unpaced, q_unpaced) = run("pacing = false, init_cwnd = 2");
    println!(
        "paced {bw_paced:.0} bit/s, max queue {q_paced}; unpaced {bw_unpaced:.0} bit/s, max queue {q_unpaced}"
    );
    assert!((bw_paced / bw_unpaced - 1.0).abs() < 0.03);
    assert!(q_paced * 2 <= q_unpaced, "{q_paced} vs {q_unpaced}");
}

#[test]
fn sndbuf_limits_throughput_to_sndbuf_over_rtt() {
    // 100 Mbit/s, 50 ms each way: BDP 1.25 MB; a 64 KiB send buffer binds
    // (rwnd 1 MiB). RTT = 2 x 51 ms + serialization of 1040 B and 40 B on
    // both links.
    let sc = path(
        "100Mbps",
        "50ms",
        1000,
        "sndbuf = \"64KiB\"",
        "rwnd = \"1MiB\"",
        "",
    );
    let mut sim = Simulation::new(&sc);
    let got = delivered_between(&mut sim, 10, 30) as f64 * 8.0 / 20.0;
    let rtt = 2.0 * 0.051 + 1080.0 * 8.0 / 100e6 + 1080.0 * 8.0 / 1e9;
    let want = 65_536.0 * 8.0 / rtt;
    println!("sndbuf: got {got:.0} bit/s, want {want:.0}");
    assert!(
        (got / want - 1.0).abs() < 0.02,
        "got {got:.0}, want {want:.0}"
    );
}

#[test]
fn a_one_megabyte_window_is_honoured_on_a_long_fat_path() {
    // 1 Gbit/s, 100 ms each way: BDP 25 MB; rwnd 1 MiB (16x the 16-bit
    // limit) binds, so throughput = rwnd/RTT.
    let sc = path(
        "1Gbps",
        "100ms",
        10000,
        "init_cwnd = 10",
        "rwnd = \"1MiB\"",
        "",
    );
    let mut sim = Simulation::new(&sc);
    let got = delivered_between(&mut sim, 10, 30) as f64 * 8.0 / 20.0;
    let rtt = 2.0 * 0.101 + 2.0 * 1080.0 * 8.0 / 1e9;
    let want = 1_048_576.0 * 8.0 / rtt;
    println!("1 MiB window: got {got:.0} bit/s, want {want:.0}");
    assert!(
        (got / want - 1.0).abs() < 0.02,
        "got {got:.0}, want {want:.0}"
    );
    assert!(sim.sender(0).unwrap().rwnd() > 65_535);
}

#[test]
fn tseq_csv_records_sends_retransmissions_and_acks_only_when_asked() {
    let drop = "loss = { kind = \"drop\", flow = \"f\", segments = [20] }";
    let text = |series: &str| {
        format!(
            r#"
[scenario]
name = "tseq"
duration = "2s"
[defaults.tcp]
mss = "1000B"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "10Mbps"
delay = "10ms"
{drop}
[[flow]]
name = "f"
from = "a"
to = "b"
sink = {{ sack = true }}
tcp = {{ cc = "sack" }}
source = {{ kind = "finite", size = "100KB" }}
[output]
series = [{series}]
"#
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let sc = Scenario::from_toml_str(&text("\"tseq\""), "t").unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulation::new(&sc);
    sim.run();
    let files = sim.write_outputs(dir.path()).unwrap();
    assert!(files.contains(&"tseq.csv".to_string()));
    let body = std::fs::read_to_string(dir.path().join("tseq.csv")).unwrap();
    let mut lines = body.lines();
    assert_eq!(lines.next(), Some("time_s,flow,event,seq,ack,len,wnd,sack"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let count = |e: &str| rows.iter().filter(|r| r[2] == e).count();
    let st = *sim.sender(0).unwrap().stats();
    assert_eq!(
        count("new") as u64 + count("fin") as u64,
        st.segments_sent - st.retransmitted_segments
    );
    assert_eq!(count("retransmit") as u64, st.retransmitted_segments);
    assert_eq!(count("ack") as u64, st.acks_received);
    // The retransmission is of segment 20 (offset 19000), and the ACKs
    // during recovery SACK the data above it.
    assert!(rows.iter().any(|r| r[2] == "retransmit" && r[3] == "19000"));
    assert!(rows
        .iter()
        .any(|r| r[2] == "ack" && r[4] == "19000" && r[7].starts_with("20000-")));

    let dir2 = tempfile::tempdir().unwrap();
    let sc = Scenario::from_toml_str(&text("\"goodput\""), "t").unwrap();
    let mut sim = Simulation::new(&sc);
    sim.run();
    let files = sim.write_outputs(dir2.path()).unwrap();
    assert!(!files.contains(&"tseq.csv".to_string()));
    assert!(sim.metrics().tseq.is_empty());
}
