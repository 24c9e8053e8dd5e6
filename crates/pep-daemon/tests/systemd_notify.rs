//! systemd's `Type=notify` with the watchdog (issue 38, packaging): the
//! daemon says READY=1 once it accepts, feeds the watchdog at half of
//! `WATCHDOG_USEC` from its runtime, and says STOPPING=1 when it drains.
//! The environment is the process's: this runs under the root tests' lock
//! and puts it back.

use crate::common;

use std::os::unix::net::UnixDatagram;
use std::time::{Duration as StdDuration, Instant};

use common::*;
use pep_core::{Duration, Rate};
use pep_lab::DirParams;

fn fast() -> DirParams {
    DirParams::new(Rate::mbps(100), Duration::from_millis(1), 1000)
}

/// The states received within `secs`.
fn received(sock: &UnixDatagram, secs: f64) -> Vec<String> {
    let t0 = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while t0.elapsed().as_secs_f64() < secs {
        if let Ok(n) = sock.recv(&mut buf) {
            got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    }
    got
}

#[test]
#[ignore = "needs root"]
fn ready_watchdog_and_stopping_reach_the_service_manager() {
    let _g = root_test("systemd_notify");
    let lab = three_nodes("dmn-ntfy", fast(), fast());
    let n = nodes(&lab);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notify");
    let sock = UnixDatagram::bind(&path).unwrap();
    sock.set_read_timeout(Some(StdDuration::from_millis(50)))
        .unwrap();
    std::env::set_var("NOTIFY_SOCKET", &path);
    // 200 ms: a ping every 100 ms.
    std::env::set_var("WATCHDOG_USEC", "200000");
    std::env::remove_var("WATCHDOG_PID");
    let cfg = config(&proxy_if(0), &format!("{}/32", n.client.addr), "");
    let daemon = start_proxy(&n.proxy, &cfg);
    std::env::remove_var("NOTIFY_SOCKET");
    std::env::remove_var("WATCHDOG_USEC");
    let daemon = daemon.expect("daemon");
    let got = received(&sock, 1.0);
    assert_eq!(got.first().map(String::as_str), Some("READY=1"), "{got:?}");
    let pings = got.iter().filter(|s| *s == "WATCHDOG=1").count();
    // About ten in the second; a loaded machine may delay a few.
    assert!(
        (5..=12).contains(&pings),
        "{pings} watchdog pings in 1 s: {got:?}"
    );
    daemon.shutdown().unwrap();
    let after = received(&sock, 0.2);
    assert!(after.iter().any(|s| s == "STOPPING=1"), "{after:?}");
    lab.down().unwrap();
}
