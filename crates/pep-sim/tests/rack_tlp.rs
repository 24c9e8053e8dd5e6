//! RACK-TLP (RFC 8985) in the `linux` profile, end to end through the
//! engine: a tail loss repaired by a probe instead of the RTO, and a
//! mid-window loss with too few later segments for DupThresh repaired by
//! RACK's reorder timer.

use pep_core::{Duration, Instant};
use pep_sim::tcp::TxKind;
use pep_sim::{Scenario, Simulation};

const MSS: u64 = 1448;

/// `segments` full segments from a to b over 10 Mbit/s, 20 ms one way,
/// `linux` profile, with data segment `drop` lost once.
fn transfer(segments: u64, drop: u64, rack: bool) -> Simulation {
    let text = format!(
        r#"
[scenario]
name = "rack"
duration = "5s"
[defaults.tcp]
profile = "linux"
rack = {rack}
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "10Mbps"
delay = "20ms"
queue = {{ limit = 1000 }}
loss = {{ kind = "drop", flow = "f", segments = [{drop}] }}
[[flow]]
name = "f"
from = "a"
to = "b"
source = {{ kind = "finite", size = "{size}B" }}
[output]
series = []
"#,
        size = segments * MSS
    );
    let sc = Scenario::from_toml_str(&text, "rack").unwrap_or_else(|e| panic!("{e}"));
    Simulation::new(&sc)
}

/// Steps `sim` by `dt` until `done` holds (or `limit` seconds), calling
/// `watch` after each step.
fn run(sim: &mut Simulation, dt: Duration, mut watch: impl FnMut(&Simulation)) {
    let limit = Instant::ZERO + Duration::from_secs(5);
    while !sim.sender(0).is_some_and(|s| s.is_complete()) && sim.now() < limit {
        let next = sim.now() + dt;
        sim.run_until(next);
        if sim.sender(0).is_some() {
            watch(sim);
        }
    }
}

fn completion(sim: &Simulation) -> f64 {
    let s = sim.sender(0).unwrap();
    s.completion_time()
        .expect("transfer completes")
        .as_secs_f64()
}

#[test]
fn tail_loss_is_repaired_by_a_probe_two_srtt_after_the_last_ack() {
    // 20 segments, the last lost: nothing after it carries data (the FIN is
    // a segment of its own and is not SACKed), so neither DupThresh nor
    // RACK can see the loss; only the probe or the RTO can.
    let mut on = transfer(20, 20, true);
    let dt = Duration::from_micros(50);
    // The last ACK of new data before the probe, and SRTT and RTO then.
    let (mut una, mut last_ack) = (None, None);
    let (mut srtt, mut rto) = (Duration::ZERO, Duration::ZERO);
    run(&mut on, dt, |s| {
        let tx = s.sender(0).unwrap();
        if tx.stats().tail_loss_probes == 0 && una != Some(tx.snd_una()) {
            una = Some(tx.snd_una());
            last_ack = Some(s.now());
            srtt = tx.srtt().unwrap_or_default();
            rto = tx.rto();
        }
    });
    let tx = on.sender(0).unwrap();
    let probes: Vec<_> = on
        .retransmissions(0)
        .iter()
        .filter(|r| r.kind == TxKind::TailLossProbe)
        .collect();
    assert_eq!(probes.len(), 1, "{:?}", on.retransmissions(0));
    assert_eq!(probes[0].offset as u64, 19 * MSS, "the last data segment");
    assert_eq!(on.retransmissions(0).len(), 1, "the probe alone");
    assert_eq!(tx.stats().timeouts, 0);
    // RFC 8985 7.2: PTO = 2 SRTT from the last ACK of new data (two
    // segments in flight: the lost one and the FIN, so no WCDelAckT).
    let last_ack = last_ack.unwrap().as_secs_f64();
    let expect = last_ack + 2.0 * srtt.as_secs_f64();
    let probe = probes[0].at.as_secs_f64();
    assert!(
        (probe - expect).abs() <= 2.0 * dt.as_secs_f64(),
        "probe at {probe:.6}, expected {expect:.6} (last ACK {last_ack:.6}, srtt {srtt})"
    );
    // Repaired one round trip later (41.2 ms: 20 ms each way plus a
    // 1500-byte segment and an ACK at 10 Mbit/s) plus the 40 ms delayed-ACK
    // timer: the probe arrives in order and alone, and the sink does not
    // count the FIN it holds beyond the hole as a gap to ACK at once.
    let done = completion(&on);
    assert_eq!(on.sink(0).stats().acks_by_timer, 1, "the probe's ACK");
    assert!(
        (done - probe - 0.0812).abs() < 0.001,
        "completion {done:.6}, probe {probe:.6}"
    );

    // Without RACK-TLP the same loss waits for the RTO (at least 200 ms).
    let mut off = transfer(20, 20, false);
    run(&mut off, dt, |_| {});
    let tx_off = off.sender(0).unwrap();
    assert_eq!(tx_off.stats().timeouts, 1);
    assert_eq!(tx_off.stats().tail_loss_probes, 0);
    let done_off = completion(&off);
    let gain = done_off - done;
    let expect_gain = rto.as_secs_f64() - 2.0 * srtt.as_secs_f64();
    println!(
        "tail loss: RACK-TLP {done:.4} s, RTO only {done_off:.4} s; saved {gain:.4} s, RTO - 2 SRTT = {expect_gain:.4} s (srtt {srtt}, rto {rto})"
    );
    assert!(
        (gain - expect_gain).abs() < 0.002,
        "saved {gain:.4} s, expected RTO - 2 SRTT = {expect_gain:.4} s"
    );
}

#[test]
fn mid_window_loss_with_one_later_segment_is_repaired_by_rack_not_the_rto() {
    // IW10, 10 segments: segment 9 lost, only segment 10 arrives after it
    // (one SACKed segment: DupThresh needs three).
    let mut on = transfer(10, 9, true);
    let dt = Duration::from_micros(50);
    let mut sacked_at = None;
    run(&mut on, dt, |s| {
        let tx = s.sender(0).unwrap();
        let sacked = tx
            .congestion()
            .scoreboard()
            .is_some_and(|b| b.sacked_bytes() > 0);
        if sacked && sacked_at.is_none() {
            sacked_at = Some(s.now());
        }
    });
    let tx = on.sender(0).unwrap();
    let st = tx.stats();
    assert_eq!(st.timeouts, 0);
    assert_eq!(st.tail_loss_probes, 0);
    assert_eq!(st.rack_timeouts, 1, "the reorder timer marked it lost");
    let r = on.retransmissions(0);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(
        (r[0].offset as u64, r[0].kind),
        (8 * MSS, TxKind::FastRetransmit)
    );
    // RFC 8985 6.2: lost once RACK.rtt + reo_wnd has passed since it was
    // sent; segments 9 and 10 left the sender at the same instant (the
    // initial window), so the timer fires reo_wnd = min_RTT / 4 after the
    // SACK of 10 arrives.
    let rack = tx.rack().unwrap();
    let reo_wnd = rack.min_rtt().unwrap().as_secs_f64() / 4.0;
    let after = r[0].at.as_secs_f64() - sacked_at.unwrap().as_secs_f64();
    assert!(
        (after - reo_wnd).abs() <= 2.0 * dt.as_secs_f64(),
        "retransmitted {after:.6} s after the SACK, expected {reo_wnd:.6}"
    );
    let done = completion(&on);

    // Without RACK: one SACKed segment is not enough, so the RTO repairs it.
    let mut off = transfer(10, 9, false);
    run(&mut off, dt, |_| {});
    assert_eq!(off.sender(0).unwrap().stats().timeouts, 1);
    let done_off = completion(&off);
    println!("mid-window loss: RACK {done:.4} s, RTO only {done_off:.4} s");
    assert!(done_off - done > 0.1, "{done} vs {done_off}");
}

#[test]
fn rack_is_on_in_the_linux_profile_only() {
    for rack in [true, false] {
        let mut sim = transfer(10, 9, rack);
        sim.run_until(Instant::ZERO + Duration::from_millis(1));
        assert_eq!(sim.sender(0).unwrap().rack().is_some(), rack);
    }
}

/// One bulk CUBIC download, `linux` profile, over the Verizon LTE downlink
/// trace (as `scenarios/examples/cellular-trace.toml`, 30 s): a 100
/// Mbit/s access link (100-packet queue) into a trace-driven hop with a
/// 300-packet queue, 20 ms each.
fn cellular(rack: bool) -> Simulation {
    let trace = crate::varying_links::shared_trace("mahimahi/Verizon-LTE-short.down");
    let text = format!(
        r#"
[scenario]
name = "rack-cellular"
duration = "30s"
[defaults.tcp]
profile = "linux"
cc = "cubic"
mss = "1448B"
header = "52B"
rack = {rack}
[defaults.sink]
rwnd = "4MiB"
sack = true
[[node]]
name = "server"
[[node]]
name = "gw"
kind = "router"
[[node]]
name = "phone"
[[link]]
between = ["server", "gw"]
rate = "100Mbps"
delay = "20ms"
queue = {{ kind = "droptail", limit = 100 }}
[[link]]
between = ["gw", "phone"]
delay = "20ms"
queue = {{ kind = "droptail", limit = 300 }}
[link.forward]
trace = {trace:?}
[link.reverse]
rate = "10Mbps"
[[flow]]
name = "download"
from = "server"
to = "phone"
[output]
series = []
"#,
        trace = trace.display().to_string()
    );
    let sc = Scenario::from_toml_str(&text, "rack-cellular").unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulation::new(&sc);
    sim.run();
    sim
}

/// On a path that never reorders, every retransmission that loss recovery
/// (fast retransmit, SACK/RACK retransmissions) sends repairs a packet the
/// bottleneck dropped: there can be no more of them than drops, bar a few
/// (a segment the sender resends just before its drop shows). And a
/// window-limited sender whose ACKs come at the cellular hop's pace (5
/// Mbit/s on average) never piles 100 packets onto its 100 Mbit/s access
/// link. RACK used to move HighRxt back to a retransmission it found lost,
/// which resent every later retransmission still in flight at once: 1192
/// segments in one instant, 171,770 drops at the sender's own interface
/// and 201,976 retransmissions in 60 s against 25,928 bottleneck drops.
/// Retransmissions after an RTO are left out: without F-RTO (docs/tcp.md)
/// a spurious timeout's go-back-N resends what is still queued.
#[test]
fn rack_on_a_cellular_trace_resends_only_what_the_bottleneck_dropped() {
    let mut goodput = vec![];
    for rack in [true, false] {
        let sim = cellular(rack);
        let sum = sim.summary();
        let link = |name: &str| sum.links.iter().find(|l| l.name == name).unwrap();
        let (access, hop) = (link("server->gw"), link("gw->phone"));
        let st = sim.sender(0).unwrap().stats();
        let recovery = st.fast_retransmits + st.sack_retransmits;
        let drops = hop.queue_drops + hop.lost_packets;
        let delivered = sim.sink(0).delivered_bytes();
        println!(
            "rack {rack}: {recovery} recovery retransmissions ({} in all, {} RTOs), \
             {drops} bottleneck drops, {} access-link drops, {delivered} B delivered",
            st.retransmitted_segments, st.timeouts, access.queue_drops
        );
        assert_eq!(access.queue_drops, 0, "rack {rack}: the sender burst");
        assert!(
            recovery as f64 <= drops as f64 * 1.05 + 10.0,
            "rack {rack}: {recovery} recovery retransmissions for {drops} drops"
        );
        goodput.push(delivered as f64);
    }
    // RACK detects losses sooner, so it must not deliver less (5 %).
    assert!(goodput[0] >= 0.95 * goodput[1], "{goodput:?}");
}
