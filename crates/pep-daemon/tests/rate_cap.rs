//! Per-client rate caps (`proxy.client_rate`, issue 38): every connection
//! of one client address draws on one token bucket per direction, so the
//! client's goodput each way is the cap, however many connections it
//! opens, on a path that would otherwise carry gigabits.
//!
//! Expectation: after the bucket's first burst (50 ms of the rate), bytes
//! arrive at the cap: 20 Mbit/s within ±10 %, uploads over two
//! connections together, and a download.
//!
//! `cargo test -p pep-daemon --test root rate_cap:: -- --include-ignored --nocapture`

use crate::common;

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration as StdDuration, Instant};

use common::*;

const PORT: u16 = 7310;
const CAP_BPS: u64 = 20_000_000;
/// Measured from here (past the first burst and the windows' opening) ...
const SETTLE: StdDuration = StdDuration::from_secs(1);
/// ... this long.
const WINDOW: StdDuration = StdDuration::from_secs(3);

/// Writes as fast as the socket takes until `stop`.
pub(crate) fn blast(mut s: std::net::TcpStream, stop: &AtomicBool) {
    let chunk = vec![0x3cu8; 64 << 10];
    while !stop.load(Relaxed) {
        if s.write_all(&chunk).is_err() {
            return;
        }
    }
}

/// Reads into `count` until the peer closes or fails.
pub(crate) fn drain(mut s: std::net::TcpStream, count: &AtomicU64) {
    let mut b = vec![0u8; 64 << 10];
    while let Ok(n) = s.read(&mut b) {
        if n == 0 {
            return;
        }
        count.fetch_add(n as u64, Relaxed);
    }
}

/// Bits per second `count` grows at over [`WINDOW`], after [`SETTLE`].
fn measure(count: &AtomicU64) -> f64 {
    std::thread::sleep(SETTLE);
    let (a, t) = (count.load(Relaxed), Instant::now());
    std::thread::sleep(WINDOW);
    (count.load(Relaxed) - a) as f64 * 8.0 / t.elapsed().as_secs_f64()
}

fn assert_at_cap(what: &str, bps: f64) {
    let ratio = bps / CAP_BPS as f64;
    println!("{what}: {:.2} Mbit/s, {ratio:.3} of the cap", bps / 1e6);
    assert!(
        (0.9..=1.1).contains(&ratio),
        "{what}: {:.2} Mbit/s against a cap of {} Mbit/s",
        bps / 1e6,
        CAP_BPS / 1_000_000
    );
}

#[test]
#[ignore = "needs root"]
fn a_client_moves_at_its_cap_both_ways() {
    let _g = root_test("rate_cap");
    let lab = wired_three("dmn-rate");
    let n = nodes(&lab);
    // The cap is charged at both relays' reads: the kernel's (splice) and
    // the daemon's own buffer (copy).
    for (k, relay) in ["splice", "copy"].into_iter().enumerate() {
        at_cap_both_ways(&n, relay, PORT + k as u16);
    }
    lab.down().unwrap();
}

fn at_cap_both_ways(n: &Nodes, relay: &str, port: u16) {
    let cfg = config(
        &proxy_if(0),
        &format!("{}/32", n.client.addr),
        &format!(
            "relay = \"{relay}\"\nbuffer = \"1MiB\"\nclient_rate = \"{}Mbps\"\n",
            CAP_BPS / 1_000_000
        ),
    );
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let m = daemon.metrics().clone();
    let l = listen(&n.server, port);
    let stop = AtomicBool::new(false);

    // Up: two connections of one client, counted together at the server.
    let up = AtomicU64::new(0);
    let up_bps = std::thread::scope(|sc| {
        for _ in 0..2 {
            let c = connect(&n.client, n.server.addr, port).expect("connect");
            let s = accept(&l);
            sc.spawn(|| blast(c, &stop));
            sc.spawn(|| drain(s, &up));
        }
        let bps = measure(&up);
        stop.store(true, Relaxed);
        bps
    });
    assert_at_cap(&format!("{relay}: upload, 2 connections"), up_bps);

    // Down: the server sends, the client counts.
    stop.store(false, Relaxed);
    let down = AtomicU64::new(0);
    let down_bps = std::thread::scope(|sc| {
        let c = connect(&n.client, n.server.addr, port).expect("connect");
        let s = accept(&l);
        sc.spawn(|| blast(s, &stop));
        sc.spawn(|| drain(c, &down));
        let bps = measure(&down);
        stop.store(true, Relaxed);
        bps
    });
    assert_at_cap(&format!("{relay}: download"), down_bps);
    let waits = [0, 1].map(|i| m.rate_waits[i].load(Relaxed));
    println!(
        "reads held back: {} from clients, {} from servers",
        waits[0], waits[1]
    );
    assert!(
        waits[0] > 0 && waits[1] > 0,
        "the cap held nothing back: {waits:?}"
    );
    daemon.shutdown().unwrap();
}
