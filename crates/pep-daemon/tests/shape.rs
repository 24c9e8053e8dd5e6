//! A leg's `shape_rate` (issue 34: Shikama's shaping between the legs, the
//! simulator's `split` agent's `shape_rate`, as the daemon's relay runs
//! it): uploads through a shaped server leg arrive at the rate counted on
//! the wire, payload `rate x mss / (mss + 52)` (IPv4, TCP, timestamps),
//! on a path that would carry gigabits; downloads, into the unshaped
//! client leg, are not held back.
//!
//! Expectation: 20 Mbit/s on the wire is 19.31 Mbit/s of payload with
//! 1448 B segments; the bucket cannot be exceeded (upper bound 2 %: the
//! bucket's depth over the 3 s window) and may lose credit only to late
//! wake-ups (lower bound 7 %), in both relay modes.
//!
//! `cargo test -p pep-daemon --test root shape:: -- --include-ignored --nocapture`

use crate::common;
use crate::rate_cap::{blast, drain};

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration as StdDuration, Instant};

use common::*;

const PORT: u16 = 7320;
const RATE_BPS: u64 = 20_000_000;

/// Bits per second `count` grows at over 3 s, after 1 s.
fn measure(count: &AtomicU64) -> f64 {
    std::thread::sleep(StdDuration::from_secs(1));
    let (a, t) = (count.load(Relaxed), Instant::now());
    std::thread::sleep(StdDuration::from_secs(3));
    (count.load(Relaxed) - a) as f64 * 8.0 / t.elapsed().as_secs_f64()
}

#[test]
#[ignore = "needs root"]
fn a_shaped_server_leg_carries_its_rate_on_the_wire() {
    let _g = root_test("shape");
    let lab = wired_three("dmn-shape");
    let n = nodes(&lab);
    for (k, relay) in ["splice", "copy"].into_iter().enumerate() {
        let port = PORT + k as u16;
        let cfg = config(
            &proxy_if(0),
            &format!("{}/32", n.client.addr),
            &format!("relay = \"{relay}\"\nbuffer = \"1MiB\"\n"),
        ) + &format!(
            "[server_leg]\nshape_rate = \"{}Mbps\"\nshape_burst = \"16KiB\"\n",
            RATE_BPS / 1_000_000
        );
        let daemon = start_proxy(&n.proxy, &cfg).expect("daemon");
        let l = listen(&n.server, port);
        let stop = AtomicBool::new(false);
        let run = |upload: bool| {
            let count = AtomicU64::new(0);
            stop.store(false, Relaxed);
            std::thread::scope(|sc| {
                let c = connect(&n.client, n.server.addr, port).expect("connect");
                let s = accept(&l);
                let (from, to) = if upload { (c, s) } else { (s, c) };
                sc.spawn(|| blast(from, &stop));
                sc.spawn(|| drain(to, &count));
                let bps = measure(&count);
                stop.store(true, Relaxed);
                bps
            })
        };
        let up = run(true);
        let want = RATE_BPS as f64 * 1448.0 / 1500.0;
        let ratio = up / want;
        println!(
            "{relay}: upload {:.2} Mbit/s of payload, {ratio:.3} of {:.2}",
            up / 1e6,
            want / 1e6
        );
        assert!(
            (0.93..=1.02).contains(&ratio),
            "{relay}: upload {:.2} Mbit/s against {:.2}",
            up / 1e6,
            want / 1e6
        );
        let down = run(false);
        println!("{relay}: download {:.1} Mbit/s (unshaped)", down / 1e6);
        assert!(down > 3.0 * want, "{relay}: the download was shaped too");
        daemon.shutdown().unwrap();
    }
    lab.down().unwrap();
}
