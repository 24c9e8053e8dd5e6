//! Clients that go away without a word (issue 38): a client leg whose link
//! died with data in flight is given up after `client_leg.user_timeout`,
//! not after `idle_timeout`; a client that resets while its server leg is
//! still connecting cancels the connect at once.

use crate::common;

use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration as StdDuration, Instant};

use common::*;
use pep_core::{Duration, Rate};
use pep_lab::DirParams;

fn fast() -> DirParams {
    DirParams::new(Rate::mbps(100), Duration::from_millis(1), 1000)
}

/// Drops every TCP packet to or from port `port` in `node`'s namespace
/// (its link gone, as seen by TCP).
fn blackhole(node: &pep_lab::Endpoint, port: u16) {
    let script = format!(
        "table inet dead {{\n chain i {{\n  type filter hook input priority 0; policy accept;\n  \
         tcp sport {port} drop\n  tcp dport {port} drop\n }}\n chain o {{\n  \
         type filter hook output priority 0; policy accept;\n  tcp sport {port} drop\n  \
         tcp dport {port} drop\n }}\n}}\n"
    );
    let mut c = std::process::Command::new("ip")
        .args(["netns", "exec", &node.netns, "nft", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("nft");
    c.stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    assert!(c.wait().unwrap().success(), "nft blackhole");
}

#[test]
#[ignore = "needs root"]
fn a_dead_client_is_given_up_after_the_user_timeout() {
    let _g = root_test("dead_client_user_timeout");
    let lab = three_nodes("dmn-dead", fast(), fast());
    let n = nodes(&lab);
    // idle_timeout stays at its 10 minutes: only the user timeout can free
    // the connection within the test.
    let cfg = config(
        &proxy_if(0),
        &format!("{}/32", n.client.addr),
        "[client_leg]\nuser_timeout = \"2s\"",
    );
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let m = daemon.metrics().clone();
    let l = listen(&n.server, 7000);
    let mut c = connect(&n.client, n.server.addr, 7000).unwrap();
    let mut s = accept(&l);
    c.write_all(b"hello").unwrap();
    s.read_exact(&mut [0u8; 5]).unwrap();
    // The client's link dies; the server goes on sending to it.
    blackhole(&n.client, 7000);
    let t0 = Instant::now();
    s.write_all(&[7u8; 64 << 10]).unwrap();
    assert!(
        wait_for(15, || m.active.load(Relaxed) == 0),
        "still held after {:?}",
        t0.elapsed()
    );
    let took = t0.elapsed();
    println!("dead client given up after {took:?}");
    assert!(took >= StdDuration::from_millis(1500), "{took:?}");
    assert_eq!(m.ended_count("reset_by_client"), 1);
    // The server learns by a reset.
    s.set_read_timeout(Some(StdDuration::from_secs(5))).unwrap();
    let e = s.read(&mut [0u8; 16]);
    assert!(
        matches!(&e, Err(e) if e.kind() == ErrorKind::ConnectionReset),
        "{e:?}"
    );
    drop(c);
    daemon.shutdown().unwrap();
    lab.down().unwrap();
}

#[test]
#[ignore = "needs root"]
fn a_client_reset_cancels_the_server_connect() {
    let _g = root_test("client_reset_cancels_connect");
    let lab = three_nodes("dmn-rstc", fast(), fast());
    let n = nodes(&lab);
    let cfg = format!(
        "[proxy]\nipv6 = false\nconnect_timeout = \"20s\"\ndrain_timeout = \"2s\"\n\
         [intercept]\ninterfaces = [\"{}\"]\nsubnets = [\"{}/32\"]\n",
        proxy_if(0),
        n.client.addr
    );
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let m = daemon.metrics().clone();
    // The server never answers SYNs to 7001: the server leg stays connecting.
    blackhole(&n.server, 7001);
    let c = connect(&n.client, n.server.addr, 7001).unwrap();
    assert!(wait_for(5, || m.accepted.load(Relaxed) == 1));
    let t0 = Instant::now();
    reset(c);
    assert!(
        wait_for(5, || m.active.load(Relaxed) == 0),
        "the connect went on after the client's reset"
    );
    println!("connect cancelled {:?} after the reset", t0.elapsed());
    assert_eq!(m.ended_count("reset_by_client"), 1);
    assert_eq!(m.ended_count("connect_failed"), 0);
    daemon.shutdown().unwrap();
    lab.down().unwrap();
}
