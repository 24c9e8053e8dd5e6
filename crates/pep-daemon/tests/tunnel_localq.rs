//! Root test of split-start's local queue (`[tunnel.local_queue]`) in the
//! lab: client - split-start - long link - split-end - server, clients
//! faster than the tunnel.
//!
//! Scaled down for CI (the queue's behaviour does not depend on the link
//! rate, only on which side is faster): a 20 Mbit/s, 50 ms each-way link
//! with a 100-packet queue, 100 Mbit/s access links, 8 bulk uploads for
//! 12 s, measured from 4 s. Three runs, each with a fresh pair of daemons:
//! the default (no local queue: the excess waits in quinn's per-flow
//! buffers, up to `flow_window` each), then with the RED local queue, then
//! with it beside a flow whose receiver never reads.
//!
//! `cargo test -p pep-daemon --test tunnel_localq -- --nocapture` prints
//! the numbers.

mod common;

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration as StdDuration;

use common::*;
use pep_core::{Duration, Rate};
use pep_lab::traffic::{self, Amount, FlowSpec, TrafficOptions};
use pep_lab::{DirParams, Lab, LabOptions, LabTopology, Role};

const FLOWS: usize = 8;
const RUN: u64 = 12;
const FROM: u64 = 4;
const BUFFER_START: u64 = 200 * 1040;

fn lab() -> Lab {
    let fast = DirParams::new(Rate::mbps(100), Duration::from_millis(1), 1000);
    let long = DirParams::new(Rate::mbps(20), Duration::from_millis(50), 100);
    let mut t = LabTopology::new("dmn-lq", 7);
    t.node("client", Role::Host);
    t.node("start", Role::Router);
    t.node("end", Role::Router);
    t.node("server", Role::Host);
    t.link("client", "start", fast, fast);
    t.link("start", "end", long, long);
    t.link("end", "server", fast, fast);
    Lab::up(&t, &LabOptions::default()).expect("lab up")
}

/// Unread bytes in split-start's sockets of the uploads (ports 6000..6100):
/// `rx_queue` of `/proc/net/tcp` in its namespace.
fn recv_queued(lab: &Lab) -> u64 {
    let ns = lab.endpoint("start").unwrap().netns;
    pep_lab::netns::in_netns(&ns, || {
        let t = std::fs::read_to_string("/proc/thread-self/net/tcp").unwrap_or_default();
        Ok(t.lines()
            .skip(1)
            .filter_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let port = u16::from_str_radix(w.get(1)?.rsplit(':').next()?, 16).ok()?;
                let rx = u64::from_str_radix(w.get(4)?.rsplit(':').next()?, 16).ok()?;
                (6000..6100).contains(&port).then_some(rx)
            })
            .sum())
    })
    .unwrap()
}

struct Run {
    util: f64,
    mbps: f64,
    jain: f64,
    /// Most bytes held at split-start, sampled each 250 ms from FROM:
    /// unread in its sockets, waiting in the local queue, and read into
    /// the tunnel but not yet delivered at split-end (quinn's buffers and
    /// the link's pipe).
    held_max: u64,
    recvq_max: u64,
}

fn uploads(lab: &Lab, start: &pep_daemon::Daemon, end: &pep_daemon::Daemon) -> Run {
    let client = lab.endpoint("client").unwrap();
    let server = lab.endpoint("server").unwrap();
    let flows: Vec<FlowSpec> = (0..FLOWS)
        .map(|k| FlowSpec {
            port: 6000 + k as u16,
            seed: k as u64 + 1,
            ..FlowSpec::new(
                &format!("f{k}"),
                client.clone(),
                server.clone(),
                Amount::For(Duration::from_secs(RUN)),
            )
        })
        .collect();
    let opts = TrafficOptions {
        deadline: Duration::from_secs(RUN + 30),
        ..TrafficOptions::default()
    };
    let busy = |lab: &Lab| {
        let r = lab.link_reports();
        let d = r
            .iter()
            .find(|d| d.name == "start-end/fwd")
            .unwrap()
            .clone();
        (d.link.busy_ns, d.elapsed)
    };
    let (sm, em) = (start.metrics().clone(), end.metrics().clone());
    let held = || {
        let rq = recv_queued(lab);
        let lq = sm.tunnel.lq.bytes.load(Relaxed);
        let tunnel = sm
            .tunnel
            .bytes_to_tunnel
            .load(Relaxed)
            .saturating_sub(em.tunnel.bytes_from_tunnel.load(Relaxed));
        (rq + lq + tunnel, rq)
    };
    let (report, (b0, t0), (b1, t1), held_max, recvq_max) = std::thread::scope(|s| {
        let run = s.spawn(|| traffic::run(&flows, &opts));
        std::thread::sleep(StdDuration::from_secs(FROM));
        let first = busy(lab);
        let (mut hm, mut rm) = (0, 0);
        let t = std::time::Instant::now();
        while t.elapsed() < StdDuration::from_secs(RUN - FROM) {
            let (h, r) = held();
            hm = hm.max(h);
            rm = rm.max(r);
            std::thread::sleep(StdDuration::from_millis(250));
        }
        let second = busy(lab);
        (run.join().unwrap().expect("traffic"), first, second, hm, rm)
    });
    for f in &report.flows {
        assert!(f.error.is_none(), "{}: {:?}", f.name, f.error);
        assert!(f.byte_exact(), "{} not byte-exact", f.name);
    }
    let util = (b1 - b0) as f64 / (t1 - t0).as_nanos() as f64;
    let rates: Vec<f64> = report
        .flows
        .iter()
        .map(|f| {
            f.goodput_between(
                report.interval,
                Duration::from_secs(FROM),
                Duration::from_secs(RUN),
            )
            .as_bps() as f64
                / 1e6
        })
        .collect();
    let sum: f64 = rates.iter().sum();
    let sq: f64 = rates.iter().map(|r| r * r).sum();
    Run {
        util,
        mbps: sum,
        jain: sum * sum / (rates.len() as f64 * sq),
        held_max,
        recvq_max,
    }
}

fn daemons(
    lab: &Lab,
    dir: &std::path::Path,
    local_queue: &str,
) -> (pep_daemon::Daemon, pep_daemon::Daemon) {
    let d = dir.display();
    let client = lab.endpoint("client").unwrap();
    let server = lab.endpoint("server").unwrap();
    let end_addr = lab.state().nodes[2].addrs[0];
    let start_cfg = format!(
        "{}[tunnel]\nrole = \"split-start\"\npeer = \"{end_addr}:4433\"\ncc = \"cubic-flows\"\n\
         cert = \"{d}/start.pem\"\nkey = \"{d}/start.key\"\npeer_cert = \"{d}/end.pem\"\n{local_queue}",
        config(&proxy_if(0), &format!("{}/32", client.addr), "")
    );
    let end_cfg = format!(
        "[proxy]\nipv6 = false\n[tunnel]\nrole = \"split-end\"\nlisten = \"0.0.0.0:4433\"\n\
         allow = [\"{}/32\"]\ncert = \"{d}/end.pem\"\nkey = \"{d}/end.key\"\npeer_cert = \"{d}/start.pem\"\n",
        server.addr
    );
    let end = start_proxy(&lab.endpoint("end").unwrap(), &end_cfg).expect("split-end");
    let start = start_proxy(&lab.endpoint("start").unwrap(), &start_cfg).expect("split-start");
    let sm = start.metrics().clone();
    assert!(
        wait_for(10, || sm.tunnel.up.load(Relaxed) == 1),
        "tunnel up"
    );
    (start, end)
}

fn show(what: &str, r: &Run) {
    println!(
        "{what}: link {:.1} %, {:.2} Mbit/s, Jain {:.3}, split-start held at most {} kB ({} kB unread in its sockets)",
        r.util * 100.0,
        r.mbps,
        r.jain,
        r.held_max / 1000,
        r.recvq_max / 1000
    );
}

#[test]
fn the_red_local_queue_drops_keeps_the_link_busy_and_bounds_split_start() {
    let Some(_g) = root_test("tunnel_localq") else {
        return;
    };
    let lab = lab();
    let dir = tempfile::tempdir().unwrap();
    pep_daemon::tunnel::keygen(dir.path(), "start").unwrap();
    pep_daemon::tunnel::keygen(dir.path(), "end").unwrap();

    // The default: window-based backpressure, no local queue.
    let (start, end) = daemons(&lab, dir.path(), "");
    let base = uploads(&lab, &start, &end);
    show("no local queue", &base);
    start.shutdown().unwrap();
    end.shutdown().unwrap();

    let lq = "[tunnel.local_queue]\npolicy = \"red\"\nrate = \"20Mbps\"\n";
    let (start, end) = daemons(&lab, dir.path(), lq);
    let sm = start.metrics().clone();
    let with = uploads(&lab, &start, &end);
    show("RED local queue", &with);
    let q = &sm.tunnel.lq;
    let drops = q.dropped_total();
    println!(
        "local queue: {} arrived, {} admitted ({} MB), {} retransmissions passed, dropped {} (overflow {}, early {}, forced {}), credit now {} B",
        q.arrived.load(Relaxed),
        q.admitted.load(Relaxed),
        q.admitted_bytes.load(Relaxed) / 1_000_000,
        q.passed_old.load(Relaxed),
        drops,
        q.dropped[0].load(Relaxed),
        q.dropped[1].load(Relaxed),
        q.dropped[2].load(Relaxed),
        q.credit.load(Relaxed)
    );
    assert_eq!(q.enabled.load(Relaxed), 1, "the queue thread runs");
    // The clients are five times faster than the tunnel: the queue must
    // fill and RED must drop (early or forced, not by overflow alone).
    assert!(drops > 0, "the local queue never dropped");
    assert!(
        q.dropped[1].load(Relaxed) + q.dropped[2].load(Relaxed) > 0,
        "RED dropped nothing early"
    );
    // Every upload byte crossed the queue.
    assert!(q.admitted_bytes.load(Relaxed) as f64 >= with.mbps * 1e6 / 8.0 * (RUN - FROM) as f64);
    // The link stays busy: the credit keeps buffer_start waiting for the
    // tunnel, and the clients, 2 ms from the queue, recover from a drop
    // long before that drains.
    assert!(
        with.util >= 0.90,
        "the long link is {:.1} % busy",
        with.util * 100.0
    );
    assert!(
        with.util >= base.util - 0.03,
        "{:.1} % busy with the local queue vs {:.1} % without",
        with.util * 100.0,
        base.util * 100.0
    );
    assert!(with.jain >= 0.9, "Jain's index {:.3}", with.jain);
    // Bounded: unread bytes in split-start's sockets stay within the
    // credit (buffer_start, plus packets that bypass the queue while the
    // thread sleeps, a few at these rates), and everything split-start
    // holds within buffer_start twice (stack, quinn's backlog) plus the
    // tunnel's window (at most the pipe, 250 kB, plus the link's queue,
    // 150 kB, and what cubic overshoots) and the local queue.
    assert!(
        with.recvq_max <= BUFFER_START + 64 * 1024,
        "{} B unread at split-start",
        with.recvq_max
    );
    assert!(
        with.held_max <= 2 * BUFFER_START + 1_000_000,
        "split-start held {} B",
        with.held_max
    );
    assert!(
        with.held_max * 2 < base.held_max,
        "with the local queue split-start held {} B, without {} B",
        with.held_max,
        base.held_max
    );

    // A flow whose receiver never reads, beside eight that do: its bytes
    // sit unread at split-start, but it is charged only its share of the
    // credit, so the others go on as before.
    let client = lab.endpoint("client").unwrap();
    let server = lab.endpoint("server").unwrap();
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
    let beside = uploads(&lab, &start, &end);
    show(
        &format!(
            "beside a stalled flow ({} MiB written, then blocked)",
            stuck_bytes >> 20
        ),
        &beside,
    );
    assert!(
        beside.mbps >= 0.90 * with.mbps,
        "a stalled reader cut the others from {:.2} to {:.2} Mbit/s",
        with.mbps,
        beside.mbps
    );
    assert!(
        beside.jain >= 0.9,
        "Jain's index beside the stalled flow {:.3}",
        beside.jain
    );
    reset(stuck);
    start.shutdown().unwrap();
    end.shutdown().unwrap();
    lab.down().unwrap();
}
