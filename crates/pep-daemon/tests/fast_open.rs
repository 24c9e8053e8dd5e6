//! TCP Fast Open through the proxy (`proxy.fast_open`, issue 38): a
//! client's bytes sent in its SYN are taken by the proxy's listener and
//! leave in the server leg's SYN, so the server has them one round trip
//! earlier. Each socket's `TCP_INFO` says whether its SYN's data was
//! accepted (`TCPI_OPT_SYN_DATA`): the client's for the client leg, the
//! server's for the server leg. With the switch off, the same client's
//! SYN data is refused and sent again after the handshake.
//!
//! The test sets `net.ipv4.tcp_fastopen` inside its own namespaces only,
//! to send and take data without a cookie (0x4 and 0x200), so the first
//! connection already carries data.
//!
//! `cargo test -p pep-daemon --test root fast_open:: -- --include-ignored --nocapture`

use crate::common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use common::*;
use pep_lab::{netns, Endpoint};
use socket2::{Domain, Protocol, Socket, Type};

const PORT: u16 = 7320;
const TCPI_OPT_SYN_DATA: u8 = 32;

fn sysctl(node: &Endpoint, value: u32) {
    let st = std::process::Command::new("ip")
        .args(["netns", "exec", &node.netns, "sysctl", "-qw"])
        .arg(format!("net.ipv4.tcp_fastopen={value}"))
        .status()
        .expect("sysctl");
    assert!(st.success(), "tcp_fastopen={value} in {}", node.netns);
}

/// Whether the SYN of `fd`'s connection carried data the peer accepted.
fn syn_data(fd: &impl AsRawFd) -> bool {
    // SAFETY: tcp_info is plain data; the kernel writes at most `len`.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut info as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    assert_eq!(r, 0, "TCP_INFO");
    info.tcpi_options & TCPI_OPT_SYN_DATA != 0
}

/// One exchange: the client sends `payload` in its SYN (`MSG_FASTOPEN`),
/// the server reads it and answers one byte. Returns (what the server
/// read, client SYN data taken, server SYN data taken).
fn exchange(n: &Nodes, payload: &[u8]) -> (Vec<u8>, bool, bool) {
    let to = SocketAddr::from((n.server.addr, PORT));
    let l = netns::in_netns(&n.server.netns, || {
        let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        s.set_reuse_address(true).unwrap();
        let q: libc::c_int = 16;
        // SAFETY: TCP_FASTOPEN reads one int.
        let r = unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_FASTOPEN,
                &q as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0, "TCP_FASTOPEN on the server");
        s.bind(&to.into()).unwrap();
        s.listen(8).unwrap();
        Ok(std::net::TcpListener::from(s))
    })
    .unwrap();
    std::thread::scope(|sc| {
        let server = sc.spawn(|| {
            let mut c = accept(&l);
            let taken = syn_data(&c);
            let mut got = vec![0u8; payload.len()];
            c.read_exact(&mut got).unwrap();
            c.write_all(b"k").unwrap();
            (got, taken)
        });
        let mut c = netns::in_netns(&n.client.netns, || {
            let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
            let sent = s
                .send_to_with_flags(payload, &to.into(), libc::MSG_FASTOPEN)
                .map_err(|e| pep_lab::LabError::Traffic(format!("sendto MSG_FASTOPEN: {e}")))?;
            assert_eq!(sent, payload.len());
            Ok(std::net::TcpStream::from(s))
        })
        .unwrap();
        let mut k = [0u8];
        c.read_exact(&mut k).unwrap();
        let client_taken = syn_data(&c);
        let (got, server_taken) = server.join().unwrap();
        (got, client_taken, server_taken)
    })
}

#[test]
#[ignore = "needs root"]
fn data_in_the_syn_reaches_the_server_in_its_syn() {
    let _g = root_test("fast_open");
    let lab = wired_three("dmn-tfo");
    let n = nodes(&lab);
    // Client: send SYN data without a cookie; proxy: both; server: take it.
    sysctl(&n.client, 0x1 | 0x4);
    sysctl(&n.proxy, 0x1 | 0x2 | 0x4 | 0x200);
    sysctl(&n.server, 0x2 | 0x200);
    // One segment's worth, a pattern that shows any shift.
    let payload: Vec<u8> = (0..1200u32).map(|i| (i * 13 % 251) as u8).collect();
    let subnet = format!("{}/32", n.client.addr);
    for relay in ["splice", "copy"] {
        for on in [false, true] {
            let extra = format!("fast_open = {on}\nrelay = \"{relay}\"\n");
            let daemon =
                start_proxy(&n.proxy, &config(&proxy_if(0), &subnet, &extra)).expect("daemon");
            let (got, client_leg, server_leg) = exchange(&n, &payload);
            println!(
                "relay {relay}, fast_open {on}: SYN data taken on the client leg {client_leg}, \
                 on the server leg {server_leg}; {} bytes byte-exact: {}",
                got.len(),
                got == payload
            );
            assert_eq!(got, payload, "byte-exact");
            assert_eq!(
                (client_leg, server_leg),
                (on, on),
                "relay {relay}, fast_open {on}"
            );
            assert_eq!(
                daemon
                    .metrics()
                    .accepted
                    .load(std::sync::atomic::Ordering::Relaxed),
                1
            );
            daemon.shutdown().unwrap();
        }
    }
    // A server that speaks first (SMTP, SSH): the client sends nothing, so
    // the server leg must not wait for bytes to put in its SYN.
    let daemon = start_proxy(
        &n.proxy,
        &config(&proxy_if(0), &subnet, "fast_open = true\n"),
    )
    .expect("daemon");
    let l = listen(&n.server, PORT + 1);
    let mut c = connect(&n.client, n.server.addr, PORT + 1).expect("connect");
    let mut s = accept(&l);
    s.write_all(b"220 ready\r\n").unwrap();
    let mut greeting = [0u8; 11];
    c.read_exact(&mut greeting).expect("the server's greeting");
    assert_eq!(&greeting, b"220 ready\r\n");
    drop((c, s));
    daemon.shutdown().unwrap();
    lab.down().unwrap();
}
