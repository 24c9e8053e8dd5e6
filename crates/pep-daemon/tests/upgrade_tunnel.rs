//! Upgrading split-start, the intercepting node of a two-node PEP (issue
//! 38 item 3): a new process opens a tunnel of its own to split-end, takes
//! the listening sockets (and the rules) once it is up, and the old one
//! drains its flows on the old tunnel.
//!
//! Live transfers (256 KiB each, paced over about 4 s) run across the
//! hand-over: each must arrive byte-exact over the old tunnel, the old
//! process ending them all cleanly and then exiting. New connections
//! during and after it are proxied (the server sees split-end, not the
//! client) over the new tunnel. split-end refuses to be upgraded, naming
//! why, before it touches anything.
//!
//! `cargo test -p pep-daemon --test root upgrade_tunnel:: -- --include-ignored --nocapture`

use crate::common;
use crate::upgrade::{long_transfer, serve, short_exchange, Poke};

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::time::Duration as StdDuration;

use common::*;
use pep_core::{Duration, Rate};
use pep_daemon::{config as cfg, Daemon, StartOptions};
use pep_lab::{netns, DirParams};

const LIVE: u64 = 8;
const NEW: u64 = 20;
const LONG_PORT: u16 = 7340;
const SHORT_PORT: u16 = 7341;

fn start(node: &pep_lab::Endpoint, toml: &str, sock: &std::path::Path, take_over: bool) -> Daemon {
    let opts = StartOptions {
        install_rules: true,
        upgrade_socket: Some(sock.to_path_buf()),
        take_over: take_over.then(|| sock.to_path_buf()),
        ..StartOptions::default()
    };
    let s = cfg::parse(toml, "split-start.toml").unwrap();
    start_in(node, s, opts).expect("split-start")
}

#[test]
#[ignore = "needs root"]
fn split_start_hands_over_to_a_new_tunnel_and_loses_no_flow() {
    let _g = root_test("upgrade_tunnel");
    let long = DirParams::new(Rate::mbps(100), Duration::from_millis(5), 1000);
    let lab = split_pair_lab("dmn-upgt", long);
    let (client, server) = (
        lab.endpoint("client").unwrap(),
        lab.endpoint("server").unwrap(),
    );
    let start_node = lab.endpoint("start").unwrap();
    let dir = tempfile::tempdir().unwrap();
    pep_daemon::tunnel::keygen(dir.path(), "start").unwrap();
    pep_daemon::tunnel::keygen(dir.path(), "end").unwrap();
    let (start_cfg, end_cfg) = tunnel_configs(&lab, dir.path(), "cubic", "", "");
    // The old process drains for up to 20 s: the live flows finish there.
    let start_cfg = start_cfg.replace("drain_timeout = \"2s\"", "drain_timeout = \"20s\"");
    let end = start_proxy(&lab.endpoint("end").unwrap(), &end_cfg).expect("split-end");

    // split-end cannot be handed over: refused before anything is made.
    let e = start_in(
        &lab.endpoint("end").unwrap(),
        cfg::parse(&end_cfg, "split-end.toml").unwrap(),
        StartOptions {
            take_over: Some(dir.path().join("none.sock")),
            ..StartOptions::default()
        },
    )
    .err()
    .expect("split-end taking over");
    assert!(e.contains("split-end cannot be handed over"), "{e}");

    let sock = dir.path().join("upgrade.sock");
    let old = start(&start_node, &start_cfg, &sock, false);
    let old_m = old.metrics().clone();
    assert!(
        wait_for(10, || old_m.tunnel.up.load(Relaxed) == 1),
        "tunnel up"
    );

    let stop = AtomicBool::new(false);
    let (long_l, short_l) = (listen(&server, LONG_PORT), listen(&server, SHORT_PORT));
    let long_to = SocketAddr::from((server.addr, LONG_PORT));
    let short_to = SocketAddr::from((server.addr, SHORT_PORT));
    let (long_ok, short_ok) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let (stalled, bypassed) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let errors = std::sync::Mutex::new(Vec::<String>::new());
    let note = |r: Result<(), String>, ok: &AtomicUsize| match r {
        Ok(()) => {
            ok.fetch_add(1, Relaxed);
        }
        Err(e) => errors.lock().unwrap().push(e),
    };
    let (new, live_at_handoff) = std::thread::scope(|s| {
        s.spawn(|| serve(long_l, short_l, &stop, client.addr.into()));
        let _stop = Poke(&stop, &server, [LONG_PORT, SHORT_PORT]);
        let live: Vec<_> = (0..LIVE)
            .map(|k| {
                let (ns, note, long_ok) = (&client.netns, &note, &long_ok);
                s.spawn(move || {
                    netns::enter(ns).unwrap();
                    note(long_transfer(long_to, k), long_ok);
                })
            })
            .collect();
        // The live flows are under way in the old process.
        assert!(
            wait_for(10, || old_m.tunnel.flows_active.load(Relaxed)
                == LIVE as i64),
            "{} of {LIVE} flows in the old tunnel",
            old_m.tunnel.flows_active.load(Relaxed)
        );
        std::thread::sleep(StdDuration::from_millis(500));
        // New connections go on through the hand-over.
        let shorts = s.spawn(|| {
            netns::enter(&client.netns).unwrap();
            for k in 0..NEW {
                note(
                    short_exchange(short_to, 1000 + k, &stalled, &bypassed),
                    &short_ok,
                );
                std::thread::sleep(StdDuration::from_millis(100));
            }
        });
        let new = start(&start_node, &start_cfg, &sock, true);
        let live_at_handoff = old_m.tunnel.flows_active.load(Relaxed);
        // The old process exits by itself once its flows are done.
        old.wait().expect("old drains and exits");
        for t in live {
            t.join().unwrap();
        }
        shorts.join().unwrap();
        (new, live_at_handoff)
    });
    let new_m = new.metrics().clone();
    let errors = errors.into_inner().unwrap();
    println!(
        "live flows at the hand-over: {live_at_handoff}; old process: {} flows ended clean, \
         {} accepted; new: {} tunnel connects, {} accepted, {} flows ended clean; \
         long ok {}, short ok {}, stalled {}, bypassed {}; errors {errors:?}",
        old_m.tunnel.ended_count("clean"),
        old_m.accepted.load(Relaxed),
        new_m.tunnel.connects.load(Relaxed),
        new_m.accepted.load(Relaxed),
        new_m.tunnel.ended_count("clean"),
        long_ok.load(Relaxed),
        short_ok.load(Relaxed),
        stalled.load(Relaxed),
        bypassed.load(Relaxed),
    );
    new.shutdown().expect("new stops");
    end.shutdown().unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        long_ok.into_inner(),
        LIVE as usize,
        "live transfers byte-exact"
    );
    assert_eq!(short_ok.into_inner(), NEW as usize);
    assert_eq!(
        bypassed.into_inner(),
        0,
        "new connections passed the PEP by"
    );
    assert_eq!(
        stalled.into_inner(),
        0,
        "new connections waited for a SYN retry"
    );
    // The live flows were in the old tunnel at the hand-over and ended
    // there, cleanly; the new process carried new connections only, over
    // a tunnel of its own.
    // (New connections made before the new process took over count too.)
    assert!(live_at_handoff >= LIVE as i64, "{live_at_handoff}");
    assert_eq!(
        old_m.tunnel.ended_count("clean"),
        old_m.accepted.load(Relaxed),
        "every flow of the old process ended cleanly"
    );
    assert_eq!(
        old_m.accepted.load(Relaxed) + new_m.accepted.load(Relaxed),
        LIVE + NEW,
        "each connection went to one process or the other"
    );
    assert_eq!(new_m.tunnel.connects.load(Relaxed), 1);
    assert!(new_m.accepted.load(Relaxed) > 0);
    assert_eq!(
        new_m.accepted.load(Relaxed),
        new_m.tunnel.ended_count("clean"),
        "every flow of the new process ended cleanly"
    );
    let nft = std::process::Command::new("ip")
        .args(["netns", "exec", &start_node.netns, "nft", "list", "ruleset"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&nft.stdout).contains("pep"),
        "rules left behind"
    );
    lab.down().unwrap();
}
