//! A leg's `shape_rate` (issue 34: Shikama's shaping between the legs, the
//! simulator's `split` agent's `shape_rate`, as the daemon's relay runs
//! it): uploads through a shaped server leg arrive at the rate counted on
//! the wire, payload `rate x mss / (mss + 52)` (IPv4, TCP, timestamps),
//! on a path that would carry gigabits; downloads, into the unshaped
//! client leg, are not held back; a finite upload ends, its FIN after
//! the last shaped byte.
//!
//! Expectation: 20 Mbit/s on the wire is 19.31 Mbit/s of payload with
//! 1448 B segments; the bucket cannot be exceeded (upper bound 2 %: the
//! bucket's depth over the 3 s window) and may lose credit only to late
//! wake-ups (lower bound 7 %), in both relay modes.
//!
//! `cargo test -p pep-daemon --test root shape:: -- --include-ignored --nocapture`

use crate::common;
use crate::rate_cap::{blast, drain};

use std::io::{Read, Write};
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
        // A finite upload ends: its FIN follows the last shaped byte (in
        // splice mode a FIN behind a full pipe once left the relay
        // spinning on a readable socket, and the upload never ended).
        let c = connect(&n.client, n.server.addr, port).expect("connect");
        let mut s = accept(&l);
        let t0 = Instant::now();
        let sender = std::thread::spawn(move || {
            let mut c = c;
            c.write_all(&vec![0x5au8; 2_000_000]).unwrap();
            c.shutdown(std::net::Shutdown::Write).unwrap();
            c
        });
        let mut got = Vec::new();
        s.read_to_end(&mut got).expect("the upload ends");
        let took = t0.elapsed().as_secs_f64();
        drop(sender.join().unwrap());
        assert_eq!(got.len(), 2_000_000, "{relay}");
        assert!(got.iter().all(|&b| b == 0x5a), "{relay}");
        // 2 MB at 19.31 Mbit/s is 0.83 s (less the bucket).
        println!("{relay}: 2 MB upload ended after {took:.2} s");
        assert!((0.75..3.0).contains(&took), "{relay}: {took:.2} s");
        let down = run(false);
        println!("{relay}: download {:.1} Mbit/s (unshaped)", down / 1e6);
        assert!(down > 3.0 * want, "{relay}: the download was shaped too");
        daemon.shutdown().unwrap();
    }
    lab.down().unwrap();
}
