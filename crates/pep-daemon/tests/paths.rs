//! Root tests of what the daemon sets on each leg's path: MSS clamps
//! (`client_leg.mss` on the listener, `server_leg.mss = "auto"` copying
//! the client leg's) and the initial windows of the route to a destination
//! subnet (`initcwnd`, `initrwnd` in the table the server legs' mark
//! selects). Same harness as `lab.rs`: namespaces, one at a time.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration as StdDuration;

use common::*;
use pep_core::{Duration, Rate};
use pep_daemon::net::tcp_info;
use pep_lab::{netns, DirParams, Endpoint};

fn fast() -> DirParams {
    DirParams::new(Rate::mbps(100), Duration::from_millis(1), 1000)
}

/// `tcpi_snd_mss` of the proxy's established sockets toward `port` (its
/// server legs), as `ss` prints it (`mss:N`).
fn server_leg_mss(proxy: &Endpoint, port: u16) -> Vec<u32> {
    server_leg_field(proxy, port, "mss:")
}

/// A `TCP_INFO` field of the proxy's established sockets toward `port`, as
/// `ss -i` prints it (`mss:`, `cwnd:`).
fn server_leg_field(proxy: &Endpoint, port: u16, key: &str) -> Vec<u32> {
    ss_field(proxy, &format!("( dport = :{port} )"), key)
}

/// The same of the proxy's client legs of connections to `port` (their
/// local port, the listener being transparent).
fn client_leg_field(proxy: &Endpoint, port: u16, key: &str) -> Vec<u32> {
    ss_field(proxy, &format!("( sport = :{port} )"), key)
}

fn ss_field(proxy: &Endpoint, filter: &str, key: &str) -> Vec<u32> {
    ss_established(proxy, filter)
        .split_whitespace()
        .filter_map(|w| w.strip_prefix(key))
        .filter_map(|v| v.parse().ok())
        .collect()
}

/// A client connection whose SYN advertises `mss` (None: the path's).
fn connect_with_mss(client: &Endpoint, to: SocketAddr, mss: Option<u32>) -> std::net::TcpStream {
    netns::in_netns(&client.netns, || {
        let e = |e: std::io::Error| pep_lab::LabError::Traffic(e.to_string());
        let s =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).map_err(e)?;
        if let Some(m) = mss {
            s.set_mss(m).map_err(e)?;
        }
        s.connect_timeout(&to.into(), StdDuration::from_secs(5))
            .map_err(e)?;
        Ok(s.into())
    })
    .expect("connect")
}

/// With timestamps on (Linux's default), the send MSS is the advertised
/// MSS less the 12-byte option.
const TS: u32 = 12;

/// The client leg advertises `client_leg.mss` (set on the listener); the
/// server leg with `mss = "auto"` advertises what the client leg
/// negotiated, so the server and the proxy's outgoing leg both send
/// segments no larger than the client's; unclamped they would be 1448.
#[test]
#[ignore = "needs root"]
fn server_leg_mss_auto_follows_the_client_leg() {
    let _g = root_test("mss_auto");
    let lab = three_nodes("dmn-mss", fast(), fast());
    let n = nodes(&lab);
    let subnet = format!("{}/32", n.client.addr);
    let cfg = format!(
        "{}[client_leg]\nmss = 1200\n[server_leg]\nmss = \"auto\"\n",
        config(&proxy_if(0), &subnet, "")
    );
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let l = listen(&n.server, 7003);
    let dst = SocketAddr::from((n.server.addr, 7003));
    // The client's own SYN: none (1460 from the path), then 1000.
    for (client_mss, leg_mss) in [(None, 1200), (Some(1000), 1000)] {
        let c = connect_with_mss(&n.client, dst, client_mss);
        let s = accept(&l);
        let (ci, si) = (tcp_info(&c).unwrap(), tcp_info(&s).unwrap());
        let out = server_leg_mss(&n.proxy, 7003);
        println!(
            "client SYN mss {client_mss:?}: client snd_mss {}, server snd_mss {}, \
             proxy's server leg snd_mss {out:?}",
            ci.mss, si.mss
        );
        assert_eq!(
            ci.mss,
            leg_mss - TS,
            "client leg: min(client, client_leg.mss)"
        );
        assert_eq!(
            si.mss,
            leg_mss - TS,
            "the server leg advertised the client leg's MSS"
        );
        assert_eq!(
            out,
            vec![leg_mss - TS],
            "the outgoing leg sends no larger segments"
        );
        drop((c, s));
        assert!(wait_for(5, || server_leg_mss(&n.proxy, 7003).is_empty()));
    }
    daemon.shutdown().unwrap();
    lab.down().unwrap();
}

fn ip_in(ns: &str, args: &[&str]) -> String {
    let out = std::process::Command::new("ip")
        .args(["-n", ns])
        .args(args)
        .output()
        .expect("ip");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A route with `initcwnd` to the server's subnet: the proxy's new server
/// leg starts with that congestion window (`tcpi_snd_cwnd` right after
/// connect, before any data); `[client_leg] initcwnd` does the same for
/// the client leg (a route to the client subnets, found through the
/// listener's mark); without them, the kernel's 10. The rule and the table
/// are gone after the daemon stops.
#[test]
#[ignore = "needs root"]
fn route_initcwnd_sets_the_server_legs_first_window() {
    let _g = root_test("initcwnd");
    let lab = three_nodes("dmn-iw", fast(), fast());
    let n = nodes(&lab);
    let subnet = format!("{}/32", n.client.addr);
    let l = listen(&n.server, 7004);
    let dst = SocketAddr::from((n.server.addr, 7004));
    let route = format!(
        "[client_leg]\ninitcwnd = 20\n[[route]]\ndst = \"{}/32\"\ninitcwnd = 24\ninitrwnd = 40\n",
        n.server.addr
    );
    for (extra, want, want_client) in [(route.as_str(), 24, 20), ("", 10, 10)] {
        let cfg = format!("{}{extra}", config(&proxy_if(0), &subnet, ""));
        let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
        let table = ip_in(&n.proxy.netns, &["route", "show", "table", "101"]);
        println!("table 101: {table:?}");
        let c = connect_with_mss(&n.client, dst, None);
        let s = accept(&l);
        let cwnd = server_leg_field(&n.proxy, 7004, "cwnd:");
        println!("initcwnd {want}: server leg cwnd {cwnd:?}");
        assert_eq!(cwnd, vec![want]);
        let ccwnd = client_leg_field(&n.proxy, 7004, "cwnd:");
        println!("client_leg.initcwnd {want_client}: client leg cwnd {ccwnd:?}");
        assert_eq!(ccwnd, vec![want_client]);
        if want != 10 {
            assert!(
                table.contains("initcwnd 24") && table.contains("initrwnd 40"),
                "{table}"
            );
        }
        drop((c, s));
        daemon.shutdown().unwrap();
        assert!(!ip_in(&n.proxy.netns, &["rule"]).contains("lookup 101"));
        assert_eq!(
            ip_in(&n.proxy.netns, &["route", "show", "table", "101"]).trim(),
            ""
        );
    }
    lab.down().unwrap();
}
