//! Root tests of what an operator does to a running daemon: reload it with
//! SIGHUP (good and bad files), read its metrics over HTTP, run it with
//! `keep_client_source`, and starve it of file descriptors. Same harness
//! and rules as `lab.rs`: one at a time, namespaces only, cleaned up.

use crate::common;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration as StdDuration;

use common::*;
use pep_core::{Duration, Rate};
use pep_daemon::metrics::Refusal;
use pep_daemon::{config, Daemon, StartOptions};
use pep_lab::{netns, DirParams, Endpoint};

fn fast() -> DirParams {
    DirParams::new(Rate::mbps(100), Duration::from_millis(1), 1000)
}

/// Starts the daemon in the proxy's namespace from a file, with the signal
/// handlers a foreground run installs.
fn start_from_file(proxy: &Endpoint, path: &std::path::Path) -> Daemon {
    let s = config::load(path).expect("config");
    let opts = StartOptions {
        install_rules: true,
        signals: true,
        config_path: Some(path.to_path_buf()),
        drop_privileges: false,
        ..StartOptions::default()
    };
    start_in(proxy, s, opts).expect("daemon")
}

/// Congestion control of the proxy's established sockets toward `port`
/// (the server legs), as `ss` reports them.
fn server_leg_ccs(proxy: &Endpoint, port: u16) -> Vec<String> {
    let text = ss_established(proxy, &format!("( dport = :{port} )"));
    let mut ccs: Vec<String> = text
        .split_whitespace()
        .filter(|w| ["reno", "cubic", "bbr"].contains(w))
        .map(str::to_string)
        .collect();
    ccs.sort();
    ccs
}

/// GET /metrics from inside the proxy's namespace.
fn scrape(proxy: &Endpoint, addr: SocketAddr) -> String {
    netns::in_netns(&proxy.netns, || {
        let mut s = TcpStream::connect_timeout(&addr, StdDuration::from_secs(5))
            .map_err(|e| pep_lab::LabError::Traffic(e.to_string()))?;
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
            .map_err(|e| pep_lab::LabError::Traffic(e.to_string()))?;
        let mut body = String::new();
        s.read_to_string(&mut body)
            .map_err(|e| pep_lab::LabError::Traffic(e.to_string()))?;
        Ok(body)
    })
    .expect("scrape")
}

/// Echo of one message over a fresh proxied connection: the payload comes
/// back byte for byte.
fn round_trip(
    n: &Nodes,
    l: &std::net::TcpListener,
    port: u16,
    msg: &[u8],
) -> (TcpStream, TcpStream) {
    let mut c = connect(&n.client, n.server.addr, port).expect("connect");
    let mut s = accept(l);
    c.write_all(msg).unwrap();
    let mut got = vec![0u8; msg.len()];
    s.read_exact(&mut got).unwrap();
    assert_eq!(got, msg);
    (c, s)
}

/// SIGHUP re-reads the file: new connections get the new settings, the
/// ones already open keep theirs and keep working; a broken file is refused
/// and counted, and the settings before it stay. The metrics endpoint
/// shows both outcomes.
#[test]
#[ignore = "needs root"]
fn sighup_reloads_new_connections_only_and_refuses_a_bad_file() {
    let _g = root_test("sighup_reload");
    let lab = three_nodes("dmn-hup", fast(), fast());
    let n = nodes(&lab);
    let dir = std::env::temp_dir().join(format!("pep-hup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("pep.toml");
    let subnet = format!("{}/32", n.client.addr);
    let file = |cc: &str| {
        let base = config(&proxy_if(0), &subnet, "metrics = \"127.0.0.1:19187\"");
        format!("{base}[server_leg]\ncc = \"{cc}\"\n")
    };
    std::fs::write(&path, file("reno")).unwrap();
    let daemon = start_from_file(&n.proxy, &path);
    let m = daemon.metrics().clone();
    let metrics_addr = daemon.metrics_addr().expect("metrics endpoint");
    let l = listen(&n.server, 7000);
    let hup = || {
        // SAFETY: signalling our own process; the daemon's handler is
        // installed (Daemon::start returns after installing it).
        assert_eq!(unsafe { libc::kill(libc::getpid(), libc::SIGHUP) }, 0);
    };

    let (mut c1, mut s1) = round_trip(&n, &l, 7000, b"first");
    assert_eq!(server_leg_ccs(&n.proxy, 7000), ["reno"]);

    std::fs::write(&path, file("cubic")).unwrap();
    hup();
    assert!(
        wait_for(5, || m.reloads.load(Relaxed) == 1),
        "reload applied"
    );
    let (_c2, _s2) = round_trip(&n, &l, 7000, b"second");
    assert_eq!(server_leg_ccs(&n.proxy, 7000), ["cubic", "reno"]);

    // A file that does not parse: refused, counted, old settings stay.
    std::fs::write(&path, "[proxy\nport = ").unwrap();
    hup();
    assert!(
        wait_for(5, || m.reload_errors.load(Relaxed) == 1),
        "bad file counted"
    );
    let (_c3, _s3) = round_trip(&n, &l, 7000, b"third");
    assert_eq!(server_leg_ccs(&n.proxy, 7000), ["cubic", "cubic", "reno"]);

    // The first connection, opened before both reloads, still relays.
    let big: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7 + 3) as u8).collect();
    s1.write_all(&big).unwrap();
    let mut got = vec![0u8; big.len()];
    c1.read_exact(&mut got).unwrap();
    assert!(got == big, "old connection byte-exact after reloads");

    let text = scrape(&n.proxy, metrics_addr);
    assert!(text.starts_with("HTTP/1."), "{text}");
    for line in [
        "pep_reloads_total{result=\"ok\"} 1",
        "pep_reloads_total{result=\"error\"} 1",
        "pep_connections_active 3",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    drop((c1, s1));
    daemon.shutdown().unwrap();
    lab.down().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// With `keep_client_source`, the server sees the client's own address;
/// without it, the proxy's.
#[test]
#[ignore = "needs root"]
fn keep_client_source_shows_the_client_to_the_server() {
    let _g = root_test("keep_client_source");
    let lab = three_nodes("dmn-src", fast(), fast());
    let n = nodes(&lab);
    let subnet = format!("{}/32", n.client.addr);
    let l = listen(&n.server, 7001);
    let proxy_side: Ipv4Addr = lab.state().nodes[1].addrs[1];
    for (keep, expect) in [(false, proxy_side), (true, n.client.addr)] {
        let extra = format!("keep_client_source = {keep}");
        let daemon = start_proxy(&n.proxy, &config(&proxy_if(0), &subnet, &extra)).unwrap();
        let mut c = connect(&n.client, n.server.addr, 7001).unwrap();
        let (mut s, peer) = l.accept().unwrap();
        assert_eq!(peer.ip(), std::net::IpAddr::V4(expect), "keep = {keep}");
        // Replies find their way back to a connection bound to the
        // client's address (the `socket transparent` rule).
        s.write_all(b"hello from the server").unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut buf = Vec::new();
        c.read_to_end(&mut buf).unwrap();
        assert_eq!(buf, b"hello from the server");
        drop((c, s));
        daemon.shutdown().unwrap();
    }
    lab.down().unwrap();
}

/// Out of descriptors: connections beyond the limit are reset at once and
/// counted, the ones already relaying are untouched, and service resumes
/// when descriptors free up.
#[test]
#[ignore = "needs root"]
fn descriptor_exhaustion_resets_new_connections_and_recovers() {
    let _g = root_test("fd_exhaustion");
    let lab = three_nodes("dmn-fds", fast(), fast());
    let n = nodes(&lab);
    let subnet = format!("{}/32", n.client.addr);
    let l = listen(&n.server, 7002);
    // The daemon runs in this process, so everything the test holds is
    // open before it starts (its count of its own descriptors then
    // includes them), and the server leaves connections in its backlog
    // until the limit is back up.
    const CLIENTS: usize = 16;
    let clients: Vec<socket2::Socket> = netns::in_netns(&n.client.netns, || {
        (0..CLIENTS)
            .map(|_| {
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
                    .map_err(|e| pep_lab::LabError::Traffic(e.to_string()))
            })
            .collect()
    })
    .unwrap();
    // max_connections high enough that only the descriptor limit binds.
    let daemon = start_proxy(
        &n.proxy,
        &config(&proxy_if(0), &subnet, "max_connections = 5000"),
    )
    .unwrap();
    let m = daemon.metrics().clone();

    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain getrlimit/setrlimit on this process.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) };
    // The daemon counts its descriptors (those open at its start, two per
    // connection and four more when splicing, a margin) against the limit:
    // room for five connections. The limit caps descriptor numbers, so the
    // kernel itself has at least that much room below it.
    let per = pep_daemon::config::parse(&config(&proxy_if(0), &subnet, ""), "t")
        .unwrap()
        .fds_per_connection();
    let open_now = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
    let limit = open_now + per * 5 + pep_daemon::proxy::FD_MARGIN;
    let lowered = libc::rlimit {
        rlim_cur: limit,
        rlim_max: old.rlim_max,
    };
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lowered) }, 0);
    let dst: socket2::SockAddr = SocketAddr::from((n.server.addr, 7002)).into();
    let mut alive = Vec::new();
    let mut reset = 0;
    for (i, c) in clients.into_iter().enumerate() {
        c.connect_timeout(&dst, StdDuration::from_secs(5)).unwrap();
        let mut c: TcpStream = c.into();
        c.write_all(&[i as u8]).unwrap();
        c.set_read_timeout(Some(StdDuration::from_millis(500)))
            .unwrap();
        match c.peek(&mut [0u8; 1]) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => reset += 1,
            Ok(0) => reset += 1,
            _ => alive.push((i as u8, c)),
        }
    }
    // SAFETY: as above.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &old) }, 0);
    let (refused, failed) = (
        m.refused(Refusal::Descriptors),
        m.ended_count("connect_failed"),
    );
    println!(
        "limit {limit}: accepted {}, accept errors {}, active {}",
        m.accepted.load(Relaxed),
        m.accept_errors.load(Relaxed),
        m.active.load(Relaxed)
    );
    println!(
        "{} served or waiting, {reset} reset ({refused} refused at accept, {failed} failed connects)",
        alive.len()
    );
    assert!(alive.len() >= 3, "connections within the limit are served");
    assert!(reset >= 1, "connections beyond the limit are reset");
    assert_eq!(refused + failed, reset as u64, "every reset is counted");

    // The ones admitted relay both ways, each to its own server socket.
    for _ in 0..alive.len() {
        let mut s = accept(&l);
        let mut b = [0u8; 1];
        s.read_exact(&mut b).unwrap();
        s.write_all(&[b[0], b'k']).unwrap();
        let c = &mut alive
            .iter_mut()
            .find(|(i, _)| *i == b[0])
            .expect("a client")
            .1;
        c.set_read_timeout(Some(StdDuration::from_secs(10)))
            .unwrap();
        let mut r = [0u8; 2];
        c.read_exact(&mut r).unwrap();
        assert_eq!(r, [b[0], b'k']);
    }
    drop(alive);
    assert!(wait_for(5, || m.active.load(Relaxed) == 0));
    // Descriptors are back: service resumes.
    let (_c, _s) = round_trip(&n, &l, 7002, b"after");
    daemon.shutdown().unwrap();
    lab.down().unwrap();
}

/// IPv6: a client on an IPv6 address is intercepted (ip6 TPROXY rules,
/// the `[::]` listener) and relayed byte-exact to the server's IPv6
/// address, which sees the proxy's own IPv6 address on the server side.
#[test]
#[ignore = "needs root"]
fn ipv6_connections_are_split_byte_exact() {
    let _g = root_test("ipv6");
    let mut t = pep_lab::LabTopology::new("dmn-v6", 7);
    t.node("client", pep_lab::Role::Host);
    t.node("proxy", pep_lab::Role::Router);
    t.node("server", pep_lab::Role::Host);
    t.link("client", "proxy", fast(), fast());
    t.link("proxy", "server", fast(), fast());
    let opts = pep_lab::LabOptions {
        ipv6: true,
        ..pep_lab::LabOptions::default()
    };
    let lab = pep_lab::Lab::up(&t, &opts).expect("lab up");
    let n = nodes(&lab);
    let client6 = lab.addr6("client").unwrap();
    let server6 = lab.addr6("server").unwrap();
    let toml = format!(
        "[proxy]\nipv6 = true\nconnect_timeout = \"2s\"\ndrain_timeout = \"2s\"\n\
         [intercept]\ninterfaces = [\"{}\"]\nsubnets = [\"{client6}/128\"]\n",
        proxy_if(0)
    );
    let daemon = start_proxy(&n.proxy, &toml).expect("daemon");
    let m = daemon.metrics().clone();
    let server_addr = SocketAddr::from((server6, 7003));
    let l = netns::in_netns(&n.server.netns, || {
        std::net::TcpListener::bind(server_addr)
            .map_err(|e| pep_lab::LabError::Traffic(e.to_string()))
    })
    .unwrap();
    let mut c = netns::in_netns(&n.client.netns, || {
        TcpStream::connect_timeout(&server_addr, StdDuration::from_secs(5))
            .map_err(|e| pep_lab::LabError::Traffic(e.to_string()))
    })
    .unwrap();
    c.set_read_timeout(Some(StdDuration::from_secs(20)))
        .unwrap();
    let (mut s, peer) = l.accept().unwrap();
    s.set_read_timeout(Some(StdDuration::from_secs(20)))
        .unwrap();
    assert_eq!(
        peer.ip(),
        std::net::IpAddr::V6(pep_lab::topology::link_addr6(1, 0)),
        "the server sees the proxy's server-side address"
    );
    assert_eq!(m.accepted.load(Relaxed), 1, "intercepted, not routed");
    let up: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let down: Vec<u8> = (0..3_000_000u32).map(|i| (i * 13 % 253) as u8).collect();
    c.write_all(&up).unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    let got = read_all(&mut s).unwrap();
    assert!(
        got == up,
        "client to server byte-exact ({} bytes)",
        got.len()
    );
    s.write_all(&down).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let got = read_all(&mut c).unwrap();
    assert!(
        got == down,
        "server to client byte-exact ({} bytes)",
        got.len()
    );
    drop((c, s));
    assert!(wait_for(5, || m.ended_count("clean") == 1));
    daemon.shutdown().unwrap();
    lab.down().unwrap();
}

/// An install that fails half-way takes back what it put in: before, the
/// nft table and the fwmark rule stayed, and clients' connections went to
/// a port nobody listened on.
#[test]
#[ignore = "needs root"]
fn a_failed_rule_install_leaves_nothing_behind() {
    let _g = root_test("rules_rollback");
    let lab = three_nodes("dmn-rb", fast(), fast());
    let n = nodes(&lab);
    let subnet = format!("{}/32", n.client.addr);
    // The initial window needs the route's next hop, and this namespace has
    // no route to 203.0.113.0/24: the last step fails.
    let text =
        config(&proxy_if(0), &subnet, "") + "[[route]]\ndst = \"203.0.113.0/24\"\ninitcwnd = 40\n";
    let s = config::parse(&text, "t.toml").expect("config");
    let sh = |cmd: &str| -> String {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let (err, tables, rules) = netns::in_netns(&n.proxy.netns, || {
        let err = pep_daemon::rules::install(&s).expect_err("no next hop");
        Ok((err, sh("nft list tables"), sh("ip -4 rule")))
    })
    .unwrap();
    assert!(
        err.contains("the rules installed before it were removed"),
        "{err}"
    );
    assert!(!tables.contains("pepkit"), "{tables}");
    assert!(!rules.contains("fwmark 0x1"), "{rules}");
}
