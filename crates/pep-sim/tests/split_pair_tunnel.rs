//! The two-node PEP's tunnel models the daemon's QUIC tunnel: its RTT
//! estimate takes a sample from every ACK (RFC 9002 5.1), so the
//! retransmission timer follows a queue that fills in slow start, and
//! the overshoot's losses are repaired by SACK and RACK without a
//! timeout, as quinn repairs them (scenarios/validation/geo-split-pair.toml,
//! docs/lab.md).

use std::path::PathBuf;

use pep_sim::agent::split_pair::SplitPair;
use pep_sim::{Scenario, Simulation};

use crate::support::at_ms;

fn scenario() -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/validation/geo-split-pair.toml");
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn geo_split_pair() -> Simulation {
    Simulation::new(&scenario())
}

fn pair(sim: &Simulation) -> &SplitPair {
    crate::support::split_pair(sim, "pair")
}

/// When the tunnel first enters loss recovery (slow start has overflowed
/// the long link's 300-packet queue), its first retransmission waits
/// behind a full queue: 300 packets of 1500 B at 10 Mbit/s (360 ms) on
/// top of the 284 ms path (access links and serialization included:
/// 287 ms). The RTO then running must outlast that RTT, or the timer
/// fires on a retransmission that is still on its way. Timing one
/// segment per round trip, the estimate was 294 ms and the RTO 475 ms.
#[test]
fn the_rto_at_the_first_loss_outlasts_the_full_queue_rtt() {
    let mut sim = geo_split_pair();
    let mut ms = 0;
    while !pair(&sim).tunnel().in_recovery() {
        ms += 1;
        assert!(ms < 8_000, "the tunnel never lost a packet in 8 s");
        sim.run_until(at_ms(ms));
    }
    let t = pair(&sim).tunnel();
    let full_queue_rtt = 0.287 + 300.0 * 1500.0 * 8.0 / 10e6;
    let srtt = t.srtt().unwrap().as_secs_f64();
    let rto = t.rto().as_secs_f64();
    eprintln!("first loss at {ms} ms: srtt {srtt:.3} s, RTO {rto:.3} s, full queue RTT {full_queue_rtt:.3} s");
    // The estimate has followed the queue: at least half of it is in srtt.
    assert!(srtt > 0.287 + 0.5 * 0.360, "srtt {srtt} s");
    assert!(rto > full_queue_rtt, "RTO {rto} s");
}

/// Over the whole transfer the tunnel never times out, and each segment
/// the long link's queue dropped is resent about once (a timeout's
/// go-back-N resent 340 segments that had arrived: 1041 retransmissions
/// for 703 drops).
#[test]
fn the_tunnel_repairs_the_overshoot_without_a_timeout() {
    let mut sim = geo_split_pair();
    sim.run_until(at_ms(20_000));
    let s = sim.summary();
    let drops = s
        .links
        .iter()
        .find(|l| l.name == "start->end")
        .unwrap()
        .queue_drops;
    let t = pair(&sim).tunnel().stats();
    eprintln!(
        "long link drops {drops}, tunnel retransmissions {}, timeouts {}",
        t.retransmitted_segments, t.timeouts
    );
    assert!(drops > 100, "the scenario's slow start overflows the queue");
    assert_eq!(t.timeouts, 0);
    assert!(
        t.retransmitted_segments as f64 <= 1.1 * drops as f64 + 10.0,
        "{} retransmissions for {drops} drops",
        t.retransmitted_segments
    );
    assert!(t.retransmitted_segments >= drops);
}

/// The daemon's `cubic-flows` window is `QuicCongestion`'s: RFC 9002's
/// recovery period ends once a segment sent after the cut is delivered,
/// so the window grows again while SACK recovery is still repairing the
/// overshoot's holes (quinn: 784 -> 930 kB in the next second in the lab).
/// TCP's recovery held it at ssthresh until every hole was filled (1.5 s).
#[test]
fn the_window_regrows_while_the_holes_are_repaired() {
    let mut sim = geo_split_pair();
    let mut ms = 0;
    let mut step = |sim: &mut Simulation| {
        ms += 1;
        assert!(ms < 20_000, "no end in 20 s");
        sim.run_until(at_ms(ms));
    };
    while !pair(&sim).tunnel().in_recovery() {
        step(&mut sim);
    }
    let cut = pair(&sim).tunnel().ssthresh();
    // With proportional rate reduction TCP's window reaches the cut in
    // steps; QUIC's is there at once.
    while pair(&sim).tunnel().in_recovery() && pair(&sim).tunnel().cwnd() > cut {
        step(&mut sim);
    }
    let mut max = 0;
    while pair(&sim).tunnel().in_recovery() {
        max = max.max(pair(&sim).tunnel().cwnd());
        step(&mut sim);
    }
    eprintln!("cut to {cut} B; largest window before the holes were repaired {max} B");
    assert!(max > cut + 10 * 1448, "{max} B after a cut to {cut} B");
}

/// The receiver's last byte, which `pep lab compare` measures goodput to
/// (as the lab does), comes after the sender's last ACK through the pair
/// by at least the long link's one-way delay (split start acknowledges a
/// byte before the tunnel carries it); end to end it comes before by the
/// ACK's way back (143 ms, plus at most the 40 ms delayed-ACK timer).
#[test]
fn the_receivers_last_byte_is_the_flows_end_as_the_lab_sees_it() {
    for pep in [true, false] {
        let mut sc = scenario();
        if !pep {
            sc.agents.clear();
        }
        let mut sim = Simulation::new(&sc);
        sim.run();
        for i in 0..2 {
            let done = sim.sender(i).unwrap().completion_time().unwrap();
            let last = sim.sink(i).last_delivery().unwrap();
            assert_eq!(sim.sink(i).delivered_bytes(), 3_000_000);
            let d = last.as_secs_f64() - done.as_secs_f64();
            eprintln!("pep {pep}, flow {i}: receiver's last byte - sender's completion = {d:.3} s");
            if pep {
                assert!(d >= 0.142, "{d} s");
            } else {
                assert!((-0.185..=-0.142).contains(&d), "{d} s");
            }
        }
    }
}
