//! Root tests of the daemon in the lab: client - proxy - server namespaces,
//! emulated links, the daemon in the proxy's namespace with TPROXY rules.
//! Needs root (`#[ignore]`d: `-- --include-ignored`). One at a time (a global
//! lock); each lab is removed on success and failure (`Lab`'s `Drop`), the
//! daemon (declared after the lab) stops first.
//!
//! `cargo test -p pep-daemon --test root lab:: -- --include-ignored --nocapture` prints the numbers.

use crate::common;

use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration as StdDuration;

use common::*;
use pep_core::{Duration, Rate};
use pep_daemon::metrics::Refusal;
use pep_lab::traffic::{self, Amount, FlowSpec, TrafficOptions};
use pep_lab::DirParams;

fn fast() -> DirParams {
    DirParams::new(Rate::mbps(100), Duration::from_millis(1), 1000)
}

/// Half-close both ways, resets both ways, refused and unreachable
/// destinations: each reaches the other side as it should, with either
/// relay.
#[test]
#[ignore = "needs root"]
fn half_close_resets_and_unreachable_destinations() {
    let _g = root_test("half_close_resets");
    for relay in ["splice", "copy"] {
        println!("relay = {relay}");
        half_close_resets_and_unreachable(relay);
    }
}

fn half_close_resets_and_unreachable(relay: &str) {
    let lab = three_nodes("dmn-sem", fast(), fast());
    let n = nodes(&lab);
    let cfg = config(
        &proxy_if(0),
        &format!("{}/32", n.client.addr),
        &format!("relay = \"{relay}\""),
    );
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let m = daemon.metrics().clone();
    let l = listen(&n.server, 7000);

    // Client half-closes first; the server answers after seeing the EOF.
    let mut c = connect(&n.client, n.server.addr, 7000).unwrap();
    let mut s = accept(&l);
    c.write_all(b"request").unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(
        read_all(&mut s).unwrap(),
        b"request",
        "FIN reached the server"
    );
    let reply = vec![42u8; 3 << 20];
    s.write_all(&reply).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(read_all(&mut c).unwrap(), reply, "reply after half-close");
    drop((c, s));

    // Server half-closes first; the client keeps sending.
    let mut c = connect(&n.client, n.server.addr, 7000).unwrap();
    let mut s = accept(&l);
    s.write_all(b"banner").unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(read_all(&mut c).unwrap(), b"banner");
    c.write_all(b"still talking").unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(read_all(&mut s).unwrap(), b"still talking");
    drop((c, s));

    // A reset by either side reaches the other as a reset, not an EOF.
    for client_resets in [true, false] {
        let mut c = connect(&n.client, n.server.addr, 7000).unwrap();
        let mut s = accept(&l);
        c.write_all(b"x").unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).unwrap();
        let (gone, mut other) = if client_resets { (c, s) } else { (s, c) };
        reset(gone);
        let e = other.read(&mut [0u8; 16]);
        assert!(
            matches!(&e, Err(e) if e.kind() == ErrorKind::ConnectionReset),
            "client_resets={client_resets}: {e:?}"
        );
    }

    // The client routes the silent address through the proxy.
    let via = lab.state().nodes[1].addrs[0].to_string();
    pep_lab::netns::ip(&[
        "-n",
        &n.client.netns,
        "route",
        "add",
        "198.18.1.77/32",
        "via",
        &via,
    ])
    .unwrap();
    // Closed port, and an address nobody answers for: the client's
    // connection was accepted by the proxy, and must end in a RST.
    for (addr, port, what) in [
        (n.server.addr, 7999, "refused"),
        (std::net::Ipv4Addr::new(198, 18, 1, 77), 80, "unreachable"),
    ] {
        let t0 = std::time::Instant::now();
        let mut c = connect(&n.client, addr, port).unwrap();
        let e = c.read(&mut [0u8; 16]);
        println!("{what}: {e:?} after {:?}", t0.elapsed());
        assert!(
            matches!(&e, Err(e) if e.kind() == ErrorKind::ConnectionReset),
            "{what}: {e:?}"
        );
    }
    assert!(wait_for(5, || m.active.load(Relaxed) == 0));
    assert_eq!(m.ended_count("connect_failed"), 2);
    assert_eq!(m.ended_count("reset_by_client"), 1);
    assert_eq!(m.ended_count("reset_by_server"), 1);
    assert_eq!(m.ended_count("clean"), 2);
    daemon.shutdown().unwrap();
    lab.down().unwrap();
}

/// 50 parallel transfers of random sizes (1 B to 50 MB, log-uniform, both
/// ends included) arrive byte-identical through the proxy (splice relay,
/// the default).
#[test]
#[ignore = "needs root"]
fn fifty_parallel_transfers_are_byte_exact() {
    let _g = root_test("fifty_parallel");
    let lab = three_nodes("dmn-exact", fast(), fast());
    let n = nodes(&lab);
    let cfg = config(
        &proxy_if(0),
        &format!("{}/32", n.client.addr),
        "buffer = \"256KiB\"",
    );
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let mut rng = 0x9e3779b97f4a7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let max = 50_000_000f64;
    let flows: Vec<FlowSpec> = (0..50)
        .map(|i| {
            let bytes = match i {
                0 => 1,
                1 => max as u64,
                _ => max.powf(next()).round() as u64,
            };
            let mut f = FlowSpec::new(
                &format!("f{i}"),
                n.client.clone(),
                n.server.clone(),
                Amount::Bytes(bytes),
            );
            f.port = 6000 + i as u16;
            f.seed = i as u64 + 1;
            f
        })
        .collect();
    let total: u64 = flows
        .iter()
        .map(|f| match f.amount {
            Amount::Bytes(b) => b,
            _ => 0,
        })
        .sum();
    let opts = TrafficOptions {
        deadline: Duration::from_secs(90),
        ..TrafficOptions::default()
    };
    let t0 = std::time::Instant::now();
    let r = traffic::run(&flows, &opts).unwrap();
    println!("50 transfers, {total} bytes in {:?}", t0.elapsed());
    for (f, spec) in r.flows.iter().zip(&flows) {
        assert!(f.error.is_none(), "{}: {:?}", f.name, f.error);
        assert!(f.byte_exact(), "{}: {f:?}", f.name);
        assert_eq!(Amount::Bytes(f.delivered_bytes), spec.amount, "{}", f.name);
    }
    let m = daemon.metrics().clone();
    assert!(wait_for(5, || m.active.load(Relaxed) == 0));
    assert_eq!(m.accepted.load(Relaxed), 50);
    assert_eq!(m.ended_count("clean"), 50);
    assert_eq!(m.bytes_up.load(Relaxed), total);
    assert_eq!(
        m.splice_fallbacks.load(Relaxed),
        0,
        "every connection spliced"
    );
    daemon.shutdown().unwrap();
    lab.down().unwrap();
}

/// Past the connection limit new connections are reset at once and the
/// others carry on; a receiver that stops reading costs the proxy at most
/// its buffer bound; a client vanishing mid-transfer disturbs no one.
#[test]
#[ignore = "needs root"]
fn limits_memory_bound_and_vanishing_clients() {
    let _g = root_test("limits");
    let lab = three_nodes("dmn-limits", fast(), fast());
    let n = nodes(&lab);
    let cfg = config(
        &proxy_if(0),
        &format!("{}/32", n.client.addr),
        "max_connections = 4\nbuffer = \"1MiB\"",
    );
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let m = daemon.metrics().clone();
    let l = listen(&n.server, 7000);
    let mut held: Vec<_> = (0..4)
        .map(|_| {
            let c = connect(&n.client, n.server.addr, 7000).unwrap();
            (c, accept(&l))
        })
        .collect();
    // The kernel completes the handshake before the proxy refuses, so the
    // RST may already have come when `connect` returns (it then fails,
    // seen under load) or comes to the first read.
    match connect(&n.client, n.server.addr, 7000) {
        Err(e) => assert!(e.to_string().contains("reset"), "{e}"),
        Ok(mut extra) => {
            let e = extra.read(&mut [0u8; 4]);
            assert!(
                matches!(&e, Err(e) if e.kind() == ErrorKind::ConnectionReset),
                "{e:?}"
            );
        }
    }
    assert_eq!(m.refused(Refusal::Limit), 1);
    for (c, s) in &mut held {
        c.write_all(b"ping").unwrap();
        let mut b = [0u8; 4];
        s.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"ping", "held connections unaffected");
    }

    // A receiver that stops reading: the server pushes 200 MB, the client
    // reads nothing. The proxy's buffers stay within 1 MiB per direction.
    let rss0 = rss();
    let (c, mut s) = held.pop().unwrap();
    let pusher = std::thread::spawn(move || {
        let chunk = vec![7u8; 1 << 20];
        let mut sent = 0u64;
        s.set_write_timeout(Some(StdDuration::from_secs(3)))
            .unwrap();
        while sent < 200 << 20 {
            match s.write(&chunk) {
                Ok(k) => sent += k as u64,
                Err(_) => break, // blocked: the window closed
            }
        }
        (sent, s)
    });
    let (sent, mut s) = pusher.join().unwrap();
    let (alloc, buffered, rss1) = (m.allocated.load(Relaxed), m.buffered.load(Relaxed), rss());
    println!(
        "stalled receiver: server wrote {sent} B before blocking; proxy buffered {buffered} B, \
         allocated {alloc} B; test process RSS {} -> {} KiB",
        rss0 / 1024,
        rss1 / 1024
    );
    assert!(sent < 100 << 20, "backpressure must stop the sender");
    // The stalled direction holds at most its 1 MiB bound, in the splice
    // pipe (the default relay): counted as buffered, no user memory. How
    // much below the bound depends on the fragments: a pipe runs out of
    // its 256 page slots first, and the kernel's fragment sizes vary from
    // run to run (CI saw 558 B a slot, 143 KB; quiet runs 1.4 KB, 355 KB).
    assert!(buffered <= 1 << 20, "{buffered}");
    assert!(buffered > 0, "the pipe holds the stalled data");
    assert_eq!(alloc, 0, "splicing allocates no relay buffers");
    assert!(
        rss1 < rss0 + (8 << 20),
        "RSS grew {} KiB",
        (rss1 - rss0) / 1024
    );

    // That client vanishes (RST) with data in flight; the others carry on.
    reset(c);
    assert!(wait_for(5, || m.ended_count("reset_by_client") == 1));
    let _ = s.write(b"more");
    for (c, s) in &mut held {
        s.write_all(b"pong").unwrap();
        let mut b = [0u8; 4];
        c.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"pong");
    }
    // The reset connection's pipe is emptied and closed.
    assert!(
        wait_for(5, || m.buffered.load(Relaxed) == 0),
        "buffers freed"
    );
    drop(held);
    daemon.shutdown().unwrap();
    lab.down().unwrap();
}

/// Malformed config fields and unknown congestion controls are refused
/// with errors naming the field; nothing is left installed.
#[test]
#[ignore = "needs root"]
fn bad_config_is_refused_by_name() {
    let _g = root_test("bad_config");
    let lab = three_nodes("dmn-bad", fast(), fast());
    let n = nodes(&lab);
    let base = config(&proxy_if(0), "198.18.0.0/24", "");
    let e = start_proxy(&n.proxy, &format!("{base}[server_leg]\ncc = \"warp9\"\n"))
        .err()
        .unwrap();
    println!("unknown cc: {e}");
    assert!(e.contains("server_leg.cc") && e.contains("warp9"), "{e}");
    let e = start_proxy(
        &n.proxy,
        &config(&proxy_if(0), "198.18.0.0/24", "buffer = \"-3MiB\""),
    )
    .err()
    .unwrap();
    println!("bad buffer: {e}");
    assert!(e.contains("proxy.buffer"), "{e}");
    let e = start_proxy(
        &n.proxy,
        &format!("{base}[[route]]\ndst = \"10.0.0.0/99\"\n"),
    )
    .err()
    .unwrap();
    assert!(e.contains("route[0].dst"), "{e}");
    // Nothing installed by the failed starts.
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", &n.proxy.netns, "nft", "list", "tables"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("pepkit"));
    lab.down().unwrap();
}

fn goodput_mbps(r: &traffic::TrafficReport) -> f64 {
    let f = &r.flows[0];
    assert!(
        f.error.is_none() && f.byte_exact(),
        "{}: {:?}, {} of {} bytes",
        f.name,
        f.error,
        f.delivered_bytes,
        f.sent_bytes
    );
    let secs = (f.last_byte.unwrap() - f.start).as_secs_f64();
    f.delivered_bytes as f64 * 8e-6 / secs
}

/// server - 20 Mbit/s 100 ms - proxy - 10 Mbit/s 10 ms, 1 % loss - client.
/// With the proxy (cubic on both legs) the loss is recovered over a 20 ms
/// loop instead of a 220 ms one: at least 4x end-to-end cubic. 15 s per run
/// instead of 30 s (the margin stays large; both numbers are printed).
/// The server opens the connection (the lab's traffic tool connects from
/// the sender), so the proxy intercepts on its server-side interface.
#[test]
#[ignore = "needs root"]
fn split_gains_4x_when_loss_is_near_the_pep() {
    let _g = root_test("gain");
    let lossy = DirParams::new(Rate::mbps(10), Duration::from_millis(10), 100)
        .with_loss(pep_lab::LossParams::Bernoulli { p: 0.01 });
    let long = DirParams::new(Rate::mbps(20), Duration::from_millis(100), 400);
    let lab = three_nodes("dmn-gain", lossy, long);
    let n = nodes(&lab);
    let run = |name: &str| {
        let mut f = FlowSpec::new(
            name,
            n.server.clone(),
            n.client.clone(),
            Amount::For(Duration::from_secs(15)),
        );
        f.cc = "cubic".into();
        let opts = TrafficOptions {
            deadline: Duration::from_secs(60),
            ..TrafficOptions::default()
        };
        goodput_mbps(&traffic::run(&[f], &opts).unwrap())
    };
    let e2e = run("e2e-cubic");
    let cfg = config(
        &proxy_if(1),
        &format!("{}/32", n.server.addr),
        "[client_leg]\ncc = \"cubic\"\n[server_leg]\ncc = \"cubic\"",
    );
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let pep = run("pep-cubic");
    let m = daemon.metrics().clone();
    println!("loss near the PEP: end-to-end cubic {e2e:.3} Mbit/s, split cubic/cubic {pep:.3} Mbit/s, x{:.1}", pep / e2e);
    assert_eq!(
        m.accepted.load(Relaxed),
        1,
        "the flow went through the proxy"
    );
    assert!(pep >= 4.0 * e2e, "{pep:.3} vs {e2e:.3}");
    daemon.shutdown().unwrap();
    lab.down().unwrap();
}

/// GEO: server - 1 Gbit/s 5 ms - proxy - 20 Mbit/s 300 ms, 0.5 % loss -
/// client. End-to-end cubic and bbr, then the proxy with bbr on the long
/// leg (cubic on the short one). The proxy with bbr must
/// reach 3x end-to-end cubic and 90 % of end-to-end bbr, as the issue
/// asks: both run BBR over the same 600 ms leg, so they should be about
/// equal.
///
/// Each case runs on its own copy of the path, all at once, for 60 s, the
/// BBR cases twice. A receiver's goodput over one second swings between 0
/// and 29 Mbit/s here (every loss holds back in-order delivery for a round
/// trip), so 20 s runs one after another put split BBR at 81 % to 106 % of
/// end-to-end BBR, 40 s runs at 96 % to 104 %; this test measured 95 % to
/// 101 % (docs/daemon.md).
///
/// With `PEP_GEO_CUBIC=1` it also runs the proxy with cubic on the long
/// leg, the docs' "split cubic-long" figure. It is left out of CI: it
/// asserts nothing, and draining the proxy's buffers at its 1.3 Mbit/s
/// took a minute after the run, half of the test's time.
#[test]
#[ignore = "needs root"]
fn geo_path_split_and_congestion_control() {
    let _g = root_test("geo");
    const RUN: u64 = 60;
    let geo = DirParams::new(Rate::mbps(20), Duration::from_millis(300), 1200)
        .with_loss(pep_lab::LossParams::Bernoulli { p: 0.005 });
    let short = DirParams::new(Rate::mbps(1000), Duration::from_millis(5), 2000);
    // (name, the proxy's long-leg cc or end to end, the server's cc); the
    // BBR cases twice, on paths of their own, so the comparison rests on
    // two minutes of each.
    let mut cases = vec![
        ("e2e-cubic", None, "cubic"),
        ("e2e-bbr", None, "bbr"),
        ("pep-bbr", Some("bbr"), "cubic"),
        ("e2e-bbr-2", None, "bbr"),
        ("pep-bbr-2", Some("bbr"), "cubic"),
    ];
    if std::env::var_os("PEP_GEO_CUBIC").is_some_and(|v| v != "0") {
        cases.push(("pep-cubic", Some("cubic"), "cubic"));
    }
    let labs: Vec<_> = (0..cases.len())
        .map(|i| three_nodes(&format!("dmn-geo{i}"), geo, short))
        .collect();
    let mut daemons = vec![];
    let mut specs = vec![];
    for (lab, (name, long_cc, cc)) in labs.iter().zip(cases) {
        let n = nodes(lab);
        if let Some(long_cc) = long_cc {
            // Through the proxy the sender finishes early (1 Gbit/s leg)
            // and the proxy's buffers drain over the satellite leg
            // afterwards; with cubic the tail is long, so the proxy's
            // buffer is 2 MiB (above the 1.5 MB BDP) and the fast leg's
            // receive buffer 1 MiB. The server node opens the connection,
            // so the proxy's server leg is the satellite leg.
            let cfg = config(
                &proxy_if(1),
                &format!("{}/32", n.server.addr),
                &format!(
                    "buffer = \"2MiB\"\n[server_leg]\ncc = \"{long_cc}\"\n[client_leg]\ncc = \"cubic\"\nrcvbuf = \"1MiB\""
                ),
            );
            daemons.push(start_proxy(&n.proxy, &cfg).expect("daemon"));
        }
        let mut f = FlowSpec::new(
            name,
            n.server.clone(),
            n.client.clone(),
            Amount::For(Duration::from_secs(RUN)),
        );
        f.cc = cc.into();
        specs.push(f);
    }
    let opts = TrafficOptions {
        deadline: Duration::from_secs(RUN + 80),
        ..TrafficOptions::default()
    };
    let r = traffic::run(&specs, &opts).unwrap();
    // Goodput = bytes delivered to the client in the first RUN seconds
    // (checked byte for byte) / RUN.
    let bins = RUN as usize * 1000 / r.interval.as_millis_f64() as usize;
    let g: Vec<f64> = r
        .flows
        .iter()
        .map(|f| {
            assert!(
                f.error.is_none() && f.byte_exact(),
                "{}: {:?}",
                f.name,
                f.error
            );
            let bins = bins.min(f.goodput.len());
            f.goodput[..bins].iter().sum::<u64>() as f64 * 8e-6 / RUN as f64
        })
        .collect();
    for d in daemons {
        assert_eq!(d.metrics().accepted.load(Relaxed), 1);
        d.shutdown().unwrap();
    }
    let e2e_cubic = g[0];
    let (e2e_bbr, pep_bbr) = ((g[1] + g[3]) / 2.0, (g[2] + g[4]) / 2.0);
    let cubic_long = g
        .get(5)
        .map_or(String::new(), |c| format!(", proxy cubic-long {c:.3}"));
    println!(
        "GEO goodput (Mbit/s, {RUN} s): e2e cubic {e2e_cubic:.3}, e2e bbr {e2e_bbr:.3} \
         ({:.3}, {:.3}), proxy bbr-long {pep_bbr:.3} ({:.3}, {:.3}; {:.0} % of e2e bbr){cubic_long}",
        g[1],
        g[3],
        g[2],
        g[4],
        100.0 * pep_bbr / e2e_bbr
    );
    assert!(
        pep_bbr >= 3.0 * e2e_cubic,
        "{pep_bbr:.3} vs cubic {e2e_cubic:.3}"
    );
    assert!(pep_bbr >= 0.9 * e2e_bbr, "{pep_bbr:.3} vs bbr {e2e_bbr:.3}");
    for lab in labs {
        lab.down().unwrap();
    }
}

/// The splice relay keeps the idle timeout (both legs reset once nothing
/// moved for `idle_timeout`) and the drain (on shutdown, a connection
/// whose receiver stopped, its bytes waiting in the pipe, is reset after
/// `drain_timeout` and its pipe freed).
#[test]
#[ignore = "needs root"]
fn splice_keeps_idle_timeout_and_drain() {
    let _g = root_test("splice_idle_drain");
    let lab = three_nodes("dmn-spl", fast(), fast());
    let n = nodes(&lab);
    let subnet = format!("{}/32", n.client.addr);
    let l = listen(&n.server, 7005);

    let cfg = config(
        &proxy_if(0),
        &subnet,
        "relay = \"splice\"\nidle_timeout = \"1s\"",
    );
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let m = daemon.metrics().clone();
    let mut c = connect(&n.client, n.server.addr, 7005).unwrap();
    let mut s = accept(&l);
    c.write_all(b"hi").unwrap();
    s.read_exact(&mut [0u8; 2]).unwrap();
    let t0 = std::time::Instant::now();
    let e = c.read(&mut [0u8; 4]);
    let idle = t0.elapsed();
    println!("idle: {e:?} after {idle:?}");
    assert!(
        matches!(&e, Err(e) if e.kind() == ErrorKind::ConnectionReset),
        "{e:?}"
    );
    assert!(idle > StdDuration::from_millis(900) && idle < StdDuration::from_secs(4));
    assert!(wait_for(5, || m.ended_count("idle") == 1));
    drop((c, s));
    daemon.shutdown().unwrap();

    // drain_timeout is 2 s (config()); the receiver never reads.
    let cfg = config(
        &proxy_if(0),
        &subnet,
        "relay = \"splice\"\nbuffer = \"1MiB\"",
    );
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let m = daemon.metrics().clone();
    let mut c = connect(&n.client, n.server.addr, 7005).unwrap();
    let mut s = accept(&l);
    s.set_nonblocking(true).unwrap();
    let chunk = vec![9u8; 64 << 10];
    let mut sent = 0;
    let t0 = std::time::Instant::now();
    while t0.elapsed() < StdDuration::from_secs(3) {
        match s.write(&chunk) {
            Ok(k) => sent += k,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(StdDuration::from_millis(20))
            }
            Err(e) => panic!("{e}"),
        }
    }
    let held = m.buffered.load(Relaxed);
    println!("stalled: server wrote {sent} B, the pipe holds {held} B");
    assert!(held > 0 && held <= 1 << 20, "{held}");
    let t0 = std::time::Instant::now();
    daemon.shutdown().unwrap();
    let drained = t0.elapsed();
    println!("shutdown took {drained:?}");
    assert!(
        drained >= StdDuration::from_millis(1900),
        "the drain waited"
    );
    assert_eq!(m.ended_count("aborted"), 1);
    assert_eq!(m.buffered.load(Relaxed), 0, "the pipe is freed");
    // The client gets what was delivered, then the reset.
    let mut buf = vec![0u8; 1 << 20];
    let e = loop {
        match c.read(&mut buf) {
            Ok(0) => break Ok(0),
            Ok(_) => continue,
            Err(e) => break Err(e),
        }
    };
    assert!(
        matches!(&e, Err(e) if e.kind() == ErrorKind::ConnectionReset),
        "{e:?}"
    );
    lab.down().unwrap();
}
