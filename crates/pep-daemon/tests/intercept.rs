//! Interception exactly as configured (issue 38): a connection through the
//! gateway to a server that happens to listen on the proxy's own port is a
//! connection like any other. From an unconfigured subnet it passes
//! untouched; from a configured one it is relayed, not refused as a loop.

use crate::common;

use std::io::{Read, Write};
use std::net::IpAddr;
use std::sync::atomic::Ordering::Relaxed;

use common::*;
use pep_core::{Duration, Rate};
use pep_daemon::metrics::Refusal;
use pep_lab::DirParams;

const PORT: u16 = 7070;

fn fast() -> DirParams {
    DirParams::new(Rate::mbps(100), Duration::from_millis(1), 1000)
}

/// One exchange from the client to the server's `PORT` through the
/// gateway: the address the server saw the connection come from.
fn exchange(n: &Nodes, l: &std::net::TcpListener) -> IpAddr {
    let mut c = connect(&n.client, n.server.addr, PORT).expect("connect");
    // Never blocks for good: a connection the proxy took and reset never
    // reaches the server.
    l.set_nonblocking(true).unwrap();
    let mut accepted = None;
    assert!(
        wait_for(5, || {
            accepted = l.accept().ok();
            accepted.is_some()
        }),
        "the connection never reached the server"
    );
    let (mut s, from) = accepted.unwrap();
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    c.write_all(b"to the server's own 7070").unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"to the server's own 7070");
    s.write_all(b"reply").unwrap();
    drop(s);
    assert_eq!(read_all(&mut c).unwrap(), b"reply");
    from.ip()
}

#[test]
#[ignore = "needs root"]
fn the_proxys_port_on_other_hosts_is_not_hijacked() {
    let _g = root_test("proxys_port_not_hijacked");
    let lab = three_nodes("dmn-port", fast(), fast());
    let n = nodes(&lab);
    let l = listen(&n.server, PORT);
    let client = IpAddr::V4(n.client.addr);

    // Unconfigured subnet, configured interface: untouched. Before, the
    // rule for the proxy's own sockets matched the wildcard listener and
    // the daemon reset the connection as a loop.
    let cfg = config(&proxy_if(0), "192.0.2.0/24", "");
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let m = daemon.metrics().clone();
    assert_eq!(exchange(&n, &l), client, "passed through, unproxied");
    assert_eq!(m.accepted.load(Relaxed), 0);
    assert_eq!(m.refused(Refusal::Loop) + m.refused(Refusal::NotServed), 0);
    daemon.shutdown().unwrap();

    // Configured subnet: relayed like any other port (the server leg
    // leaves from the gateway), not refused as a loop.
    let cfg = config(&proxy_if(0), &format!("{}/32", n.client.addr), "");
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let m = daemon.metrics().clone();
    assert_ne!(exchange(&n, &l), client, "relayed by the proxy");
    assert_eq!(m.accepted.load(Relaxed), 1);
    assert_eq!(m.refused(Refusal::Loop), 0);
    assert!(wait_for(5, || m.active.load(Relaxed) == 0));
    assert_eq!(m.ended_count("clean"), 1);
    daemon.shutdown().unwrap();
    lab.down().unwrap();
}
