//! `tcp.profile`: the bundles, their layering, and the model pieces each
//! selects.

use pep_core::cc::{Growth, WindowUnit};
use pep_core::rtt::RttMode;
use pep_core::Duration;
use pep_sim::build::tcp_config;
use pep_sim::scenario::{AckSpec, CcKind, Profile};
use pep_sim::{Scenario, Simulation};

fn load(defaults: &str, flow: &str) -> Scenario {
    let text = format!(
        r#"
[scenario]
name = "p"
duration = "10s"
[defaults.tcp]
{defaults}
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "10Mbps"
delay = "20ms"
[[flow]]
name = "f"
from = "a"
to = "b"
{flow}
[output]
series = []
"#
    );
    Scenario::from_toml_str(&text, "p.toml").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn ns2_bundle_and_model_pieces() {
    let sc = load("profile = \"ns2\"", "");
    let f = &sc.flows[0];
    assert_eq!(f.tcp.profile, Some(Profile::Ns2));
    assert_eq!((f.tcp.mss, f.tcp.header, f.tcp.init_cwnd), (1000, 40, 2));
    assert_eq!(f.tcp.initial_rto, Duration::from_secs(3));
    assert_eq!(f.tcp.clock_granularity, Duration::from_millis(10));
    assert!(f.tcp.handshake);
    assert_eq!(f.sink.rwnd, 20_000);
    assert_eq!(f.sink.ack, AckSpec::Every);
    let cfg = tcp_config(&f.tcp, &f.sink);
    assert!(matches!(
        cfg.growth,
        Growth::Reno {
            unit: WindowUnit::Packets,
            ..
        }
    ));
    assert!(matches!(cfg.rtt_mode, RttMode::Ns2 { .. }));
    assert_eq!(cfg.rto_tick, Some(Duration::from_millis(10)));
    assert_eq!(cfg.initial_ssthresh, 20_000);
    assert!(cfg.limited_transmit);
    assert!(!cfg.prr && !cfg.hystart && !cfg.timestamps && !cfg.rack);
}

#[test]
fn linux_bundle_and_model_pieces() {
    let sc = load("profile = \"linux\"", "");
    let f = &sc.flows[0];
    assert_eq!(f.tcp.cc, CcKind::Cubic);
    assert_eq!((f.tcp.mss, f.tcp.header, f.tcp.init_cwnd), (1448, 52, 10));
    assert!(f.sink.sack);
    assert_eq!(
        f.sink.ack,
        AckSpec::Delayed {
            count: 2,
            timeout: Duration::from_millis(40),
            tick: None
        }
    );
    let cfg = tcp_config(&f.tcp, &f.sink);
    assert!(cfg.prr && cfg.timestamps && cfg.limited_transmit);
    // The kernel's CUBIC brings its own HyStart, in place of HyStart++.
    assert_eq!(cfg.growth, Growth::CubicLinux);
    assert!(!cfg.hystart);
    assert_eq!(cfg.rtt_mode, RttMode::Rfc6298);
}

/// The `linux` profile runs the kernel's growth for CUBIC and the Reno
/// family; without it `cubic` is RFC 9438's and Reno RFC 5681's, and the
/// other growths are the same under both.
#[test]
fn linux_profile_selects_the_kernels_growth() {
    for (cc, linux, plain) in [
        (
            "cubic",
            Growth::CubicLinux,
            Growth::Cubic(Default::default()),
        ),
        ("reno", Growth::RenoLinux, Growth::default()),
        ("newreno", Growth::RenoLinux, Growth::default()),
        ("westwood", Growth::Westwood, Growth::Westwood),
        ("bbr", Growth::Bbr, Growth::Bbr),
        ("cubic-ns2", Growth::CubicNs2, Growth::CubicNs2),
    ] {
        for (profile, want) in [("profile = \"linux\"\n", linux), ("", plain)] {
            let sc = load(&format!("{profile}cc = \"{cc}\""), "");
            let f = &sc.flows[0];
            assert_eq!(tcp_config(&f.tcp, &f.sink).growth, want, "{profile}{cc}");
        }
    }
}

#[test]
fn explicit_fields_override_the_profile() {
    // Same layer: the field wins whatever its position in the table.
    let sc = load(
        "mss = \"1460B\"\nprofile = \"ns2\"",
        "sink = { rwnd = \"64KB\" }",
    );
    let f = &sc.flows[0];
    assert_eq!(f.tcp.mss, 1460);
    assert_eq!(f.tcp.init_cwnd, 2);
    assert_eq!(f.sink.rwnd, 64_000);
    // The ack table refines the profile's delayed ACKs field by field.
    let sc = load(
        "profile = \"linux\"",
        "sink = { ack = { timeout = \"100ms\" } }",
    );
    assert_eq!(
        sc.flows[0].sink.ack,
        AckSpec::Delayed {
            count: 2,
            timeout: Duration::from_millis(100),
            tick: None
        }
    );
    // A flow's profile resets what the defaults wrote.
    let sc = load("mss = \"500B\"", "tcp = { profile = \"ns2\" }");
    assert_eq!(sc.flows[0].tcp.mss, 1000);
    // No profile: today's built-in defaults.
    let sc = load("", "");
    assert_eq!(sc.flows[0].tcp.profile, None);
    assert_eq!(sc.flows[0].tcp.mss, 1460);
}

#[test]
fn linux_profile_prr_keeps_sending_through_recovery() {
    // One loss in a large window: with PRR the sender keeps the ACK clock
    // (no RTO) and every byte arrives.
    let text = r#"
[scenario]
name = "prr"
duration = "10s"
[defaults.tcp]
profile = "linux"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "20Mbps"
delay = "20ms"
queue = { limit = 1000 }
loss = { kind = "drop", flow = "f", segments = [200, 203, 206] }
[[flow]]
name = "f"
from = "a"
to = "b"
source = { kind = "finite", size = "2MB" }
[output]
series = []
"#;
    let sc = Scenario::from_toml_str(text, "prr.toml").unwrap();
    let mut sim = Simulation::new(&sc);
    sim.run();
    let s = sim.sender(0).unwrap();
    assert!(s.is_complete());
    assert_eq!(s.stats().timeouts, 0);
    assert_eq!(s.stats().fast_retransmits, 1);
}

#[test]
fn linux_profile_hystart_leaves_slow_start_before_the_queue_overflows() {
    // 20 Mbit/s, 40 ms each way: BDP 200 kB (138 packets); a 1000-packet
    // queue. Plain slow start would fill it and lose hundreds of packets;
    // the kernel CUBIC's HyStart (the profile's; HyStart++ for the growths
    // without their own) sees the ACK train or the RTT rise and sets
    // ssthresh with no loss at all.
    let text = r#"
[scenario]
name = "hystart"
duration = "10s"
[defaults.tcp]
profile = "linux"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "20Mbps"
delay = "40ms"
queue = { limit = 1000 }
[[flow]]
name = "f"
from = "a"
to = "b"
[output]
series = []
"#;
    let sc = Scenario::from_toml_str(text, "hystart.toml").unwrap();
    let mut sim = Simulation::new(&sc);
    sim.run();
    let s = sim.sender(0).unwrap();
    println!(
        "hystart: ssthresh {} B ({} packets), retransmitted {}",
        s.ssthresh(),
        s.ssthresh() / 1448,
        s.stats().retransmitted_segments
    );
    assert_eq!(s.stats().retransmitted_segments, 0);
    assert!(s.ssthresh() < 400 * 1448, "ssthresh {}", s.ssthresh());
    assert!(s.ssthresh() > 100 * 1448, "ssthresh {}", s.ssthresh());
}
