//! Root test of the two-node PEP in the lab: client - split-start - long
//! link - split-end - server, both daemons in their namespaces, split-start
//! intercepting with TPROXY, every flow over one QUIC tunnel.
//!
//! The link (100 Mbit/s, 125 ms each way, a 300-packet queue),
//! scaled in time for CI: 20 bulk uploads for 20 s, measured from 6 s.
//! The tunnel runs `cubic-flows`, CUBIC that backs off as the flows it
//! carries would (plain CUBIC kept the link 92.5 % busy, the end-to-end
//! flows 96-98 %; quinn's BBR 99 %, but with a window three times the BDP
//! and most of its packets lost).
//!
//! Then the same twenty again beside a flow whose receiver never reads:
//! per-flow credit keeps it from taking the others' goodput.
//!
//! `cargo test -p pep-daemon --test tunnel -- --nocapture` prints the
//! numbers.

mod common;

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration as StdDuration;

use common::*;
use pep_core::{Duration, Rate};
use pep_lab::traffic::{self, TrafficOptions};
use pep_lab::{DirParams, Lab, LabOptions, LabTopology, Role};

const FLOWS: usize = 20;
const RUN: u64 = 20;
/// Measured after slow start.
const FROM: u64 = 6;

fn lab() -> Lab {
    let fast = DirParams::new(Rate::mbps(200), Duration::from_millis(1), 1000);
    let long = DirParams::new(Rate::mbps(100), Duration::from_millis(125), 300);
    let mut t = LabTopology::new("dmn-tun", 7);
    t.node("client", Role::Host);
    t.node("start", Role::Router);
    t.node("end", Role::Router);
    t.node("server", Role::Host);
    t.link("client", "start", fast, fast);
    t.link("start", "end", long, long);
    t.link("end", "server", fast, fast);
    Lab::up(&t, &LabOptions::default()).expect("lab up")
}

/// Runs the uploads; returns (utilisation of start->end from FROM to RUN,
/// Jain's index of the flows' goodput, total goodput Mbit/s).
fn uploads(lab: &Lab) -> (f64, f64, f64) {
    let flows = bulk_uploads(lab, FLOWS, RUN);
    let opts = TrafficOptions {
        deadline: Duration::from_secs(RUN + 30),
        ..TrafficOptions::default()
    };
    let busy = |lab: &Lab| busy(lab, "start-end/fwd");
    let (report, (b0, t0), (b1, t1)) = std::thread::scope(|s| {
        let run = s.spawn(|| traffic::run(&flows, &opts));
        std::thread::sleep(StdDuration::from_secs(FROM));
        let first = busy(lab);
        std::thread::sleep(StdDuration::from_secs(RUN - FROM));
        let second = busy(lab);
        (run.join().unwrap().expect("traffic"), first, second)
    });
    let util = (b1 - b0) as f64 / (t1 - t0).as_nanos() as f64;
    let rates = exact_goodputs(&report, FROM, RUN);
    (util, jain(&rates), rates.iter().sum())
}

#[test]
fn twenty_flows_over_one_tunnel_fill_the_long_link() {
    let Some(_g) = root_test("tunnel") else {
        return;
    };
    let lab = lab();
    let (e2e_util, e2e_jain, e2e_mbps) = uploads(&lab);
    println!(
        "end to end: link {:.1} %, {e2e_mbps:.2} Mbit/s, Jain {e2e_jain:.3}",
        e2e_util * 100.0
    );

    let dir = tempfile::tempdir().unwrap();
    pep_daemon::tunnel::keygen(dir.path(), "start").unwrap();
    pep_daemon::tunnel::keygen(dir.path(), "end").unwrap();
    let (start, end) = tunnel_pair(&lab, dir.path(), "");
    let sm = start.metrics().clone();
    let client = lab.endpoint("client").unwrap();
    let server = lab.endpoint("server").unwrap();
    let (util, jain, mbps) = uploads(&lab);
    println!(
        "via the tunnel: link {:.1} %, {mbps:.2} Mbit/s, Jain {jain:.3}",
        util * 100.0
    );
    assert!(wait_for(10, || sm.tunnel.ended_count("clean") == FLOWS as u64));
    assert_eq!(
        sm.tunnel.connects.load(Relaxed),
        1,
        "one tunnel for every flow"
    );
    let t = &sm.tunnel;
    println!(
        "tunnel: rtt {} us, cwnd {} B, lost {} of {} packets",
        t.rtt_us.load(Relaxed),
        t.cwnd_bytes.load(Relaxed),
        t.lost_packets.load(Relaxed),
        t.sent_packets.load(Relaxed)
    );
    assert!(util >= 0.90, "the long link is {:.1} % busy", util * 100.0);
    // A tunnel that fills the link by flooding it is no PEP: quinn's BBR
    // did exactly that here (cwnd three times the BDP, most packets lost).
    let lost = t.lost_packets.load(Relaxed) as f64 / t.sent_packets.load(Relaxed).max(1) as f64;
    assert!(
        lost < 0.05,
        "the tunnel lost {:.1} % of its packets",
        lost * 100.0
    );
    // Twenty end-to-end CUBIC flows keep the link busy (their losses are
    // desynchronised) but share it very unevenly. The tunnel, backing off
    // as one of its twenty flows per loss, mostly carries 1.5-3 % more and
    // always shares it evenly (the Jain checks below). Its goodput varies
    // more than that: one CI run on an idle machine measured 96 % of end
    // to end (90.23 against 93.85 Mbit/s, the link 94.2 % busy), so the
    // check allows 5 %.
    assert!(
        mbps >= 0.95 * e2e_mbps,
        "{mbps:.2} Mbit/s via the tunnel vs {e2e_mbps:.2} end to end"
    );
    assert!(jain >= 0.95, "Jain's index {jain:.3}");
    assert!(
        jain > e2e_jain,
        "Jain {jain:.3} via the tunnel vs {e2e_jain:.3} end to end"
    );

    // Per-flow credit in the lab: one more flow whose receiver never reads
    // fills its credit (`flow_window`, 4 MiB) and the socket buffers on
    // both sides, then holds still; the twenty others run again beside it.
    let l = listen(&server, 7000);
    let mut stuck = connect(&client, server.addr, 7000).expect("stalled flow");
    let _held = accept(&l);
    stuck
        .set_write_timeout(Some(StdDuration::from_secs(3)))
        .unwrap();
    let chunk = vec![0x5au8; 64 << 10];
    let mut stuck_bytes = 0u64;
    while let Ok(n) = std::io::Write::write(&mut stuck, &chunk) {
        stuck_bytes += n as u64;
        assert!(
            stuck_bytes < 1 << 30,
            "a reader that never reads took 1 GiB"
        );
    }
    let (util2, jain2, mbps2) = uploads(&lab);
    println!(
        "beside a stalled flow ({} MiB written, then blocked): link {:.1} %, {mbps2:.2} Mbit/s, Jain {jain2:.3}",
        stuck_bytes >> 20,
        util2 * 100.0
    );
    assert!(
        mbps2 >= 0.90 * mbps,
        "a stalled reader cut the others from {mbps:.2} to {mbps2:.2} Mbit/s"
    );
    assert!(
        jain2 >= 0.95,
        "Jain's index beside the stalled flow {jain2:.3}"
    );
    reset(stuck);
    start.shutdown().unwrap();
    end.shutdown().unwrap();
    lab.down().unwrap();
}
