//! DSCP copied from the client leg to the server leg (issue 38 item 5):
//! with `proxy.copy_dscp`, a client that marks its connection EF (DSCP 46,
//! TOS 0xb8) reaches the server through the proxy with the same marking;
//! without it the server leg carries none. The server reads the marking of
//! the SYN it received (`TCP_SAVE_SYN`), as the proxy does.
//!
//! `cargo test -p pep-daemon --test root dscp:: -- --include-ignored --nocapture`

use crate::common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration as StdDuration;

use common::*;
use pep_daemon::net;
use pep_lab::{netns, Lab};
use socket2::{Domain, Protocol, Socket, Type};

const PORT: u16 = 7500;
const EF: u8 = 0xb8;

fn lab() -> Lab {
    wired_three("dmn-dscp")
}

/// The DSCP the server saw on the SYN of one connection from a client
/// marking `tos`, through a proxy with `copy_dscp`.
fn server_sees(n: &Nodes, copy: bool, tos: u8) -> Option<u8> {
    let cfg = config(
        &proxy_if(0),
        &format!("{}/32", n.client.addr),
        &format!("copy_dscp = {copy}"),
    );
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let to = SocketAddr::from((n.server.addr, PORT));
    let l = netns::in_netns(&n.server.netns, || {
        let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        s.set_reuse_address(true).unwrap();
        net::set_save_syn(&s).unwrap();
        s.bind(&to.into()).unwrap();
        s.listen(8).unwrap();
        Ok(std::net::TcpListener::from(s))
    })
    .unwrap();
    let seen = std::thread::scope(|sc| {
        let server = sc.spawn(|| {
            let (mut c, peer) = l.accept().unwrap();
            assert_ne!(
                peer.ip(),
                std::net::IpAddr::V4(n.client.addr),
                "not through the proxy"
            );
            let d = net::syn_dscp(&c);
            let mut b = [0u8];
            c.read_exact(&mut b).unwrap();
            c.write_all(&b).unwrap();
            d
        });
        let mut c = netns::in_netns(&n.client.netns, || {
            let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
            s.set_tos(u32::from(tos)).unwrap();
            s.connect_timeout(&to.into(), StdDuration::from_secs(5))
                .unwrap();
            Ok(std::net::TcpStream::from(s))
        })
        .unwrap();
        c.set_read_timeout(Some(StdDuration::from_secs(10)))
            .unwrap();
        c.write_all(&[9]).unwrap();
        let mut b = [0u8];
        c.read_exact(&mut b).unwrap();
        assert_eq!(b, [9]);
        server.join().unwrap()
    });
    daemon.shutdown().unwrap();
    seen
}

#[test]
#[ignore = "needs root"]
fn the_clients_dscp_reaches_the_server_only_when_copied() {
    let _g = root_test("dscp");
    let lab = lab();
    let n = nodes(&lab);
    let copied = server_sees(&n, true, EF);
    let not = server_sees(&n, false, EF);
    let unmarked = server_sees(&n, true, 0);
    println!("server saw: copy_dscp on {copied:?}, off {not:?}, unmarked client {unmarked:?}");
    assert_eq!(copied, Some(EF));
    assert_eq!(not, Some(0));
    assert_eq!(unmarked, Some(0));
}
