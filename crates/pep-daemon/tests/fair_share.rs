//! Fair share of a client's rate cap among its connections (issue 38):
//! one client behind `proxy.client_rate` opens a bulk connection, and a
//! second one a second later; from then on each moves half the cap, each
//! way. Then the same through the two-node PEP: a capped client's flows
//! into the tunnel stay within the cap and share it too.
//!
//! Expectation: the sharing rule (`pep_core::fair_share`) lets no
//! connection run more than a bucket (50 ms of the cap) ahead of a
//! backlogged other, and one grant is at most a bucket, so at any instant
//! the two have moved within 100 ms of the cap of each other; over a 3 s
//! window their counts differ by at most 200 ms of it (53.3/46.7, Jain's
//! index 0.9956): ≥ 0.99 asserted (the issue asks 0.95), the rest for the
//! bytes between the proxy's read and the receiver's count. The shared
//! bucket holds the sum at the cap: ±10 % of it. Before the rule (one
//! shared bucket, first come, first served: each refill raced for) the
//! split was whatever the races made it: on main, 4 runs gave Jain 0.9989,
//! 0.9424 (7.51 + 12.45 Mbit/s up), 0.9784 (down) and 0.9262 (7.17 +
//! 12.80 up); with the rule, ≥ 0.9991 in 4 runs. split-start's tunnel
//! flows were not capped at all (188 Mbit/s against the 20 Mbit/s cap).
//!
//! `cargo test -p pep-daemon --test root fair_share:: -- --include-ignored --nocapture`

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration as StdDuration, Instant};

use crate::rate_cap::{blast, drain};
use common::*;
use pep_core::{Duration, Rate};
use pep_lab::{DirParams, Endpoint};

const PORT: u16 = 7330;
const CAP_BPS: u64 = 20_000_000;
/// The second connection starts this long after the first ...
const HEAD_START: StdDuration = StdDuration::from_secs(1);
/// ... and both are measured from this long after it, ...
const SETTLE: StdDuration = StdDuration::from_millis(700);
/// ... this long (the middle of a run that stops right after).
const WINDOW: StdDuration = StdDuration::from_secs(3);
/// Jain's index of the two shares (module docs).
const JAIN: f64 = 0.99;

/// Which end sends.
#[derive(Clone, Copy, Debug)]
enum Way {
    Up,
    Down,
}

/// Two bulk connections from `client` to `server:port`, the second
/// [`HEAD_START`] after the first, sending `way`; returns each one's
/// goodput in bit/s over [`WINDOW`], [`SETTLE`] after the second started.
fn two_staggered(client: &Endpoint, server: &Endpoint, port: u16, way: Way) -> [f64; 2] {
    let l = listen(server, port);
    let stop = AtomicBool::new(false);
    let counts = [AtomicU64::new(0), AtomicU64::new(0)];
    let rates = std::thread::scope(|sc| {
        for (k, count) in counts.iter().enumerate() {
            if k == 1 {
                std::thread::sleep(HEAD_START);
            }
            let c = connect(client, server.addr, port).expect("connect");
            let s = accept(&l);
            let (tx, rx) = match way {
                Way::Up => (c, s),
                Way::Down => (s, c),
            };
            let stop = &stop;
            sc.spawn(move || blast(tx, stop));
            sc.spawn(move || drain(rx, count));
        }
        std::thread::sleep(SETTLE);
        let (a, t) = (counts.each_ref().map(|c| c.load(Relaxed)), Instant::now());
        std::thread::sleep(WINDOW);
        let b = counts.each_ref().map(|c| c.load(Relaxed));
        let secs = t.elapsed().as_secs_f64();
        stop.store(true, Relaxed);
        [0, 1].map(|i| (b[i] - a[i]) as f64 * 8.0 / secs)
    });
    rates
}

/// Asserts `rates` share the cap fairly and together move at it.
fn assert_fair_at_cap(what: &str, rates: [f64; 2]) {
    let (j, sum) = (jain(&rates), rates.iter().sum::<f64>());
    let ratio = sum / CAP_BPS as f64;
    println!(
        "{what}: first {:.2}, second {:.2} Mbit/s; Jain {j:.4}; sum {ratio:.3} of the cap",
        rates[0] / 1e6,
        rates[1] / 1e6
    );
    assert!(
        j >= JAIN,
        "{what}: Jain's index {j:.4} < {JAIN} (first {:.2}, second {:.2} Mbit/s)",
        rates[0] / 1e6,
        rates[1] / 1e6
    );
    assert!(
        (0.9..=1.1).contains(&ratio),
        "{what}: together {:.2} Mbit/s against a cap of {} Mbit/s",
        sum / 1e6,
        CAP_BPS / 1_000_000
    );
}

fn cap_line() -> String {
    format!("client_rate = \"{}Mbps\"\n", CAP_BPS / 1_000_000)
}

#[test]
#[ignore = "needs root"]
fn a_clients_connections_share_its_cap_fairly_both_ways() {
    let _g = root_test("fair_share");
    let lab = wired_three("dmn-fair");
    let n = nodes(&lab);
    let cfg = config(
        &proxy_if(0),
        &format!("{}/32", n.client.addr),
        &format!("buffer = \"1MiB\"\n{}", cap_line()),
    );
    let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
    let up = two_staggered(&n.client, &n.server, PORT, Way::Up);
    let down = two_staggered(&n.client, &n.server, PORT + 1, Way::Down);
    daemon.shutdown().unwrap();
    lab.down().unwrap();
    assert_fair_at_cap("upload", up);
    assert_fair_at_cap("download", down);
}

#[test]
#[ignore = "needs root"]
fn a_capped_clients_tunnel_flows_share_its_cap() {
    let _g = root_test("fair_share_tunnel");
    // A long link far faster than the cap: only the cap can hold the
    // flows to it.
    let long = DirParams::new(Rate::mbps(200), Duration::from_millis(5), 1000);
    let lab = split_pair_lab("dmn-fairt", long);
    let client = lab.endpoint("client").unwrap();
    let server = lab.endpoint("server").unwrap();
    let dir = tempfile::tempdir().unwrap();
    pep_daemon::tunnel::keygen(dir.path(), "start").unwrap();
    pep_daemon::tunnel::keygen(dir.path(), "end").unwrap();
    let (start, end) = tunnel_pair_with(&lab, dir.path(), "cubic-flows", &cap_line(), "");
    let up = two_staggered(&client, &server, PORT + 2, Way::Up);
    let down = two_staggered(&client, &server, PORT + 3, Way::Down);
    // The flows' waits and fairness cuts are exported as the split
    // relay's are (they were not counted before).
    let m = start.metrics().clone();
    let waits = [0, 1].map(|i| m.rate_waits[i].load(Relaxed));
    let held = [0, 1].map(|i| m.rate_held_for_fairness[i].load(Relaxed));
    println!("tunnel flows: waits {waits:?}, held for fairness {held:?}");
    start.shutdown().unwrap();
    end.shutdown().unwrap();
    lab.down().unwrap();
    assert_fair_at_cap("tunnel upload", up);
    assert_fair_at_cap("tunnel download", down);
    assert!(
        waits.iter().chain(&held).all(|&c| c > 0),
        "pep_client_rate_waits_total {waits:?}, _held_for_fairness_total {held:?}: \
         a capped, shared tunnel counted nothing one way"
    );
}
