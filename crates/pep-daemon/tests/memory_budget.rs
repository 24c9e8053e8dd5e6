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
use pep_lab::{Endpoint, Lab};

const MIB: u64 = 1 << 20;
const BUFFER: u64 = MIB;
const BUDGET: u64 = 40 * MIB;
const UPLOADS: usize = 10;
const PORT: u16 = 7300;

fn lab() -> Lab {
    wired_three("dmn-mem")
}

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
    let lab = lab();
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

    // One client here: its share is the whole budget.
    let extra = format!("{base}memory_budget = \"{BUDGET}\"\nmemory_per_client = \"100%\"\n");
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

/// A second address on the client's wire, in the same /24: another client
/// host as far as the proxy can tell.
fn second_client(n: &Nodes) -> std::net::Ipv4Addr {
    let o = n.client.addr.octets();
    let other = std::net::Ipv4Addr::new(o[0], o[1], o[2], if o[3] == 200 { 201 } else { 200 });
    let st = std::process::Command::new("ip")
        .args(["netns", "exec", &n.client.netns, "ip", "addr", "add"])
        .arg(format!("{other}/24"))
        .args(["dev", &proxy_if(0)])
        .status()
        .expect("ip");
    assert!(st.success(), "ip addr add {other}");
    other
}

/// A connection from `from` (an address of the client node) to the
/// server's `PORT`.
fn connect_from(n: &Nodes, from: std::net::Ipv4Addr) -> std::io::Result<std::net::TcpStream> {
    use socket2::{Domain, Protocol, Socket, Type};
    let to = std::net::SocketAddr::from((n.server.addr, PORT));
    pep_lab::netns::in_netns(&n.client.netns, || {
        let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))
            .and_then(|s| {
                s.bind(&std::net::SocketAddr::from((from, 0)).into())?;
                s.connect_timeout(&to.into(), StdDuration::from_secs(5))?;
                Ok(s)
            })
            .map_err(|e| pep_lab::LabError::Traffic(e.to_string()))?;
        Ok(std::net::TcpStream::from(s))
    })
    .map_err(|e| std::io::Error::other(e.to_string()))
}

/// Whether the proxy closed `c` (refused it) rather than relaying: a
/// relayed upload into a server that never reads just stays open. The
/// RST may already have been reported to the earlier write; a read then
/// sees the end of the stream.
fn was_reset(c: &mut std::net::TcpStream) -> bool {
    use std::io::Read;
    c.set_read_timeout(Some(StdDuration::from_millis(500)))
        .unwrap();
    let mut b = [0u8; 1];
    match c.read(&mut b) {
        Ok(0) => true,
        Err(e) => e.kind() == ErrorKind::ConnectionReset,
        Ok(_) => false,
    }
}

#[test]
#[ignore = "needs root"]
fn one_client_cannot_take_more_than_its_share_of_the_budget() {
    let _g = root_test("memory_budget");
    let lab = lab();
    let n = nodes(&lab);
    let other = second_client(&n);
    let o = n.client.addr.octets();
    let subnet = format!("{}.{}.{}.0/24", o[0], o[1], o[2]);
    // 256 KiB buffers: a connection counts about 2.5 MiB, so the 40 MiB
    // budget holds 15 and a 25 % share 3.
    let extra = "relay = \"copy\"\nbuffer = \"256KiB\"\nmemory_budget = \"40MiB\"\n\
                 memory_per_client = \"25%\"\n";
    let cfg = config(&proxy_if(0), &subnet, extra);
    let settings = pep_daemon::config::parse(&cfg, "t.toml").expect("config");
    let per = settings.connection_memory(n.server.addr.into()).unwrap();
    let share = settings.memory_per_client.unwrap();
    let (fit_one, fit_all) = ((share / per) as usize, (BUDGET / per) as usize);
    assert!(
        fit_one >= 2 && fit_all > 2 * fit_one,
        "{fit_one} per client, {fit_all} in all: the test proves nothing"
    );
    let greedy = fit_all; // Enough to fill the whole budget without a share.
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let m = daemon.metrics().clone();
    let l = listen(&n.server, PORT);

    // The greedy client opens uploads and leaves them stalled (the server
    // accepts and never reads).
    let mut stalled: Vec<_> = (0..greedy)
        .filter_map(|_| connect_from(&n, n.client.addr).ok())
        .collect();
    for c in &mut stalled {
        let _ = c.write(&[0x5a; 64 << 10]);
    }
    assert!(
        wait_for(10, || m.accepted.load(Relaxed)
            + m.refused(Refusal::ClientMemory)
            >= greedy as u64),
        "accepted {}, refused {}",
        m.accepted.load(Relaxed),
        m.refused(Refusal::ClientMemory)
    );
    // A refused connection may be reset before `connect` returns.
    let reset = greedy - stalled.len() + stalled.iter_mut().map(was_reset).filter(|r| *r).count();
    println!(
        "share {} KiB, {} KiB a connection: greedy client {} admitted, {} refused (client_memory), \
         {} reset; committed {} KiB of {} KiB",
        share >> 10,
        per >> 10,
        m.accepted.load(Relaxed),
        m.refused(Refusal::ClientMemory),
        reset,
        m.memory_committed.load(Relaxed) >> 10,
        BUDGET >> 10
    );
    assert_eq!(m.accepted.load(Relaxed), fit_one as u64);
    assert_eq!(m.refused(Refusal::ClientMemory), (greedy - fit_one) as u64);
    assert_eq!(reset, greedy - fit_one, "refused connections are reset");
    assert_eq!(m.refused(Refusal::Memory), 0);

    // The other client still gets its full share, and its bytes through.
    let payload: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut mine: Vec<_> = (0..fit_one)
        .map(|_| connect_from(&n, other).expect("second client connects"))
        .collect();
    let mut servers = Vec::new();
    for _ in 0..2 * fit_one {
        servers.push(accept(&l));
    }
    assert!(wait_for(5, || m.accepted.load(Relaxed) == 2 * fit_one as u64));
    mine[0].write_all(&payload).unwrap();
    mine[0].shutdown(std::net::Shutdown::Write).unwrap();
    let from_other = servers
        .iter_mut()
        .find(|s| {
            // The greedy uploads start with 0x5a, the others send nothing.
            s.set_read_timeout(Some(StdDuration::from_millis(200)))
                .unwrap();
            let mut b = [0u8; 1];
            matches!(s.peek(&mut b), Ok(1)) && b[0] == payload[0]
        })
        .map(|s| {
            s.set_read_timeout(Some(StdDuration::from_secs(10)))
                .unwrap();
            read_all(s).unwrap()
        });
    assert_eq!(from_other.as_deref(), Some(&payload[..]), "byte-exact");
    assert_eq!(m.refused(Refusal::ClientMemory), (greedy - fit_one) as u64);
    assert_eq!(m.refused(Refusal::Memory), 0);
    drop((stalled, mine, servers));
    daemon.shutdown().unwrap();
    lab.down().unwrap();
}
