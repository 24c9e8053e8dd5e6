//! A daemon-wide memory bound (issue 38): `memory_budget` covers the
//! relay buffers and the kernel's socket buffers. Each leg's buffers are
//! clamped (`SO_SNDBUF`/`SO_RCVBUF`, no autotuning past them), each
//! connection counts what it may hold at most, and past the budget new
//! connections are refused (`refused_total{reason="memory"}`).
//!
//! Uploads into servers that never read fill every buffer on the way:
//! the daemon's memory (its resident growth, in this process) plus the
//! kernel memory of its sockets (`ss -tm` in its namespace) stays within
//! the budget, and so does what the sockets may grow to.
//!
//! `cargo test -p pep-daemon --test root memory_budget:: -- --include-ignored --nocapture`

use crate::common;

use std::io::{ErrorKind, Write};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration as StdDuration, Instant};

use common::*;
use pep_daemon::metrics::Refusal;
use pep_lab::Endpoint;

const MIB: u64 = 1 << 20;
const BUFFER: u64 = MIB;
const BUDGET: u64 = 40 * MIB;
const UPLOADS: usize = 10;
const PORT: u16 = 7300;

/// (bytes held, bytes the buffers may grow to) of the TCP sockets in
/// `node`'s namespace, from `ss -tm`'s skmem: r (receive queue) + w
/// (send queue) + f (forward allocation), and rb + tb.
fn socket_memory(node: &Endpoint) -> (u64, u64) {
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", &node.netns, "ss", "-tmnH"])
        .output()
        .expect("ss");
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut held, mut cap) = (0, 0);
    for sk in text.split("skmem:(").skip(1) {
        let fields = sk.split(')').next().unwrap_or("");
        for f in fields.split(',') {
            let (name, v) = f.split_at(f.find(|c: char| c.is_ascii_digit()).unwrap_or(f.len()));
            let v: u64 = v.parse().unwrap_or(0);
            match name {
                "r" | "w" | "f" => held += v,
                "rb" | "tb" => cap += v,
                _ => {}
            }
        }
    }
    (held, cap)
}

/// Opens `n` uploads to `server` and writes into each until it blocks
/// (the server accepts and never reads); returns the clients and servers
/// kept open.
fn stuff(n: &Nodes, count: usize) -> (Vec<std::net::TcpStream>, Vec<std::net::TcpStream>) {
    let l = listen(&n.server, PORT);
    l.set_nonblocking(true).unwrap();
    let chunk = vec![0xa5u8; 256 << 10];
    let mut clients = Vec::new();
    let mut servers = Vec::new();
    for _ in 0..count {
        // A refused connection may be reset before `connect` returns.
        if let Ok(c) = connect(&n.client, n.server.addr, PORT) {
            c.set_nonblocking(true).unwrap();
            clients.push(c);
        }
    }
    // Until nothing moves for a second: every buffer on the way is full.
    let mut last_move = Instant::now();
    while last_move.elapsed() < StdDuration::from_secs(1) {
        while let Ok((s, _)) = l.accept() {
            servers.push(s);
        }
        for c in &mut clients {
            match c.write(&chunk) {
                Ok(k) if k > 0 => last_move = Instant::now(),
                Err(e) if e.kind() != ErrorKind::WouldBlock => {}
                _ => {}
            }
        }
        std::thread::sleep(StdDuration::from_millis(20));
    }
    (clients, servers)
}

#[test]
#[ignore = "needs root"]
fn connections_into_servers_that_never_read_stay_within_the_budget() {
    let _g = root_test("memory_budget");
    let lab = three_wired("dmn-mem");
    let n = nodes(&lab);
    let base = format!("relay = \"copy\"\nbuffer = \"{BUFFER}\"\n");
    let subnet = format!("{}/32", n.client.addr);

    // Without a budget, for the record: what the same uploads hold.
    let daemon = start_proxy(&n.proxy, &config(&proxy_if(0), &subnet, &base)).expect("daemon");
    let before = rss();
    let (c, s) = stuff(&n, 3);
    let (held, cap) = socket_memory(&n.proxy);
    println!(
        "no budget, 3 uploads: resident +{} KiB, sockets hold {} KiB, may grow to {} KiB",
        rss().saturating_sub(before) >> 10,
        held >> 10,
        cap >> 10
    );
    drop((c, s));
    daemon.shutdown().unwrap();

    let extra = format!("{base}memory_budget = \"{BUDGET}\"\n");
    let settings = pep_daemon::config::parse(&config(&proxy_if(0), &subnet, &extra), "t.toml")
        .expect("config");
    let per = settings
        .connection_memory(n.server.addr.into())
        .expect("a budget");
    let fit = (BUDGET / per) as usize;
    assert!(
        (1..UPLOADS).contains(&fit),
        "{fit} of {UPLOADS} fit: the test proves nothing"
    );
    let daemon = start_proxy(&n.proxy, &config(&proxy_if(0), &subnet, &extra)).expect("daemon");
    let m = daemon.metrics().clone();
    let before = rss();
    let (clients, servers) = stuff(&n, UPLOADS);
    let grown = rss().saturating_sub(before);
    let (held, cap) = socket_memory(&n.proxy);
    println!(
        "budget {} MiB ({} KiB a connection, {fit} fit): {} accepted, {} refused; resident +{} KiB, \
         relay buffers {} KiB, sockets hold {} KiB, may grow to {} KiB",
        BUDGET >> 20,
        per >> 10,
        m.accepted.load(Relaxed),
        m.refused(Refusal::Memory),
        grown >> 10,
        m.buffered.load(Relaxed) >> 10,
        held >> 10,
        cap >> 10
    );
    assert_eq!(m.accepted.load(Relaxed), fit as u64);
    assert_eq!(m.refused(Refusal::Memory), (UPLOADS - fit) as u64);
    // The admitted uploads are really stuffed: each fills its relay buffer.
    assert!(
        m.buffered.load(Relaxed) as u64 >= fit as u64 * BUFFER,
        "relay buffers hold {} B",
        m.buffered.load(Relaxed)
    );
    assert!(
        grown + held <= BUDGET,
        "resident +{grown} B and sockets {held} B exceed the budget {BUDGET} B"
    );
    // And what they may still grow to: every socket's buffers at their
    // clamp, plus two relay buffers per connection.
    assert!(
        cap + 2 * BUFFER * fit as u64 <= BUDGET,
        "sockets may grow to {cap} B, beyond the budget"
    );
    drop((clients, servers));
    daemon.shutdown().unwrap();
    lab.down().unwrap();
}
