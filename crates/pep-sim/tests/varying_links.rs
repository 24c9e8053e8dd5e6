//! Links whose service changes over time, end to end through TCP: an
//! `mm-link` trace (the real cellular traces of `../shared/traces`), a
//! schedule's rate steps, the LEO preset's latency steps and loss bursts.

use std::path::PathBuf;

use pep_core::link::trace::MmTrace;
use pep_sim::{Scenario, Simulation};

use crate::support::{at_ms, parse};

/// `traces/<name>` of the shared test data: `../shared` beside the
/// checkout (CI's layout), or one level further up (a worktree's).
pub fn shared_trace(name: &str) -> PathBuf {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let found = ["../shared", "../../shared"]
        .iter()
        .map(|up| repo.join(up).join("traces").join(name))
        .find(|p| p.is_file());
    found.unwrap_or_else(|| {
        panic!("test data traces/{name} not found in ../shared beside the checkout")
    })
}

/// Hosts `a` and `b` on one link (`link` adds its fields and tables), one
/// bulk flow a -> b with 1000 B segments and a window and queue deep
/// enough that the link never idles once the flow has started.
fn scenario(duration: &str, link: &str) -> Scenario {
    let text = format!(
        r#"
[scenario]
name = "varying"
duration = "{duration}"
[defaults.tcp]
mss = "1000B"
header = "40B"
init_cwnd = 1000
[defaults.sink]
rwnd = "16MiB"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
queue = {{ kind = "droptail", limit = 40000 }}
{link}
[[flow]]
name = "bulk"
from = "a"
to = "b"
[output]
series = []
"#
    );
    parse(&text, "test.toml")
}

/// Over whole repetitions of a real cellular trace, a saturating sender
/// gets exactly the trace's opportunities x 1500 B through (within 0.5 %).
/// The segments are 1040 B on the wire, so opportunities are shared: a
/// link that wasted an opportunity's leftover would carry 31 % less.
#[test]
fn a_saturated_trace_link_carries_every_opportunity() {
    let path = shared_trace("mahimahi/Verizon-LTE-short.down");
    let trace = MmTrace::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let link = format!(
        "delay = \"20ms\"\n[link.forward]\ntrace = {:?}\n[link.reverse]\nrate = \"100Mbit/s\"\n",
        path.display().to_string()
    );
    let sc = scenario("300s", &link);
    let mut sim = Simulation::new(&sc);
    let period = trace.period().as_nanos() / 1_000_000;
    for reps in [1, 2] {
        // Everything served by the end of the repetitions has arrived
        // one delay later.
        sim.run_until(at_ms(reps * period + 20));
        let wire = sim.sink(0).delivered_bytes() as f64 * 1040.0 / 1000.0;
        let want = (reps * trace.opportunities() * 1500) as f64;
        let err = wire / want - 1.0;
        println!("{reps} x {period} ms: {wire} B on the wire, trace offers {want} B ({err:+.5})");
        assert!(err.abs() < 0.005, "{wire} vs {want}");
    }
}

/// Schedule steps down (10 -> 2 Mbit/s at 5 s) and up (back to 10 at
/// 10 s): the receiver's delivery rate follows within one round trip.
#[test]
fn a_rate_step_shows_in_the_delivery_rate_within_one_rtt() {
    let link = r#"rate = "10Mbit/s"
delay = "10ms"
[link.forward]
schedule = [{ at = "5s", rate = "2Mbit/s" }, { at = "10s", rate = "10Mbit/s" }]
"#;
    let sc = scenario("15s", link);
    let mut sim = Simulation::new(&sc);
    let rtt = 20; // ms, the propagation round trip: the strictest bound
    let mut rate = |from: u64, to: u64| {
        sim.run_until(at_ms(from));
        let a = sim.sink(0).delivered_bytes();
        sim.run_until(at_ms(to));
        let b = sim.sink(0).delivered_bytes();
        // On the wire, in Mbit/s.
        (b - a) as f64 * 1040.0 / 1000.0 * 8.0 / ((to - from) as f64 * 1e3)
    };
    for (step, before, after) in [(5000, 10.0, 2.0), (10_000, 2.0, 10.0)] {
        let was = rate(step - 300, step);
        let now = rate(step + rtt, step + rtt + 300);
        println!("step at {step} ms: {was:.3} -> {now:.3} Mbit/s");
        assert!((was / before - 1.0).abs() < 0.03, "before {step} ms: {was}");
        assert!((now / after - 1.0).abs() < 0.03, "after {step} ms: {now}");
    }
}

/// A light flow (a 30-segment window: no queueing) over the LEO preset,
/// with its `[link.leo]` written as `leo`.
fn leo_run(leo: &str) -> Simulation {
    let link = format!("preset = \"leo\"\n[link.leo]\n{leo}\n");
    let mut sc = scenario("75s", &link);
    sc.flows[0].sink.rwnd = 30 * 1000;
    Simulation::new(&sc)
}

/// The reconfiguration boundaries of the first 75 s (a run starts on a
/// whole minute).
const BOUNDARIES: [u64; 5] = [12_000, 27_000, 42_000, 57_000, 72_000];

/// The LEO preset's latency: a light flow's RTT is flat within each 15 s
/// interval and steps only at the boundaries, 12, 27, 42 and 57 s past
/// the minute.
#[test]
fn the_leo_preset_steps_the_rtt_at_the_boundaries() {
    let mut sim = leo_run("min_delay = \"10ms\"\nmax_delay = \"40ms\"\nburst_loss = 0.0");
    let mut rtts: Vec<(u64, f64)> = Vec::new();
    for t in (100..75_000).step_by(5) {
        sim.run_until(at_ms(t));
        if let Some(r) = sim.sender(0).and_then(|s| s.rtt_estimator().latest()) {
            rtts.push((t, r.as_millis_f64()));
        }
    }
    // Well inside an interval (samples lag the path by about one RTT):
    // one value, to within serialization jitter.
    let mut levels = Vec::new();
    let edges = [0u64, 12_000, 27_000, 42_000, 57_000, 72_000];
    for w in edges.windows(2) {
        let inside: Vec<f64> = rtts
            .iter()
            .filter(|(t, _)| *t > w[0] + 200 && *t + 200 < w[1])
            .map(|&(_, r)| r)
            .collect();
        let (lo, hi) = inside
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), &r| (l.min(r), h.max(r)));
        println!("interval from {} ms: RTT {lo:.3} .. {hi:.3} ms", w[0]);
        assert!(hi - lo < 1.0, "RTT moved within an interval: {lo} .. {hi}");
        // Two one-way floors of 10..40 ms, plus serialization.
        assert!((20.0..82.0).contains(&lo), "{lo}");
        levels.push(lo);
    }
    let steps = levels
        .windows(2)
        .filter(|w| (w[1] - w[0]).abs() > 0.5)
        .count();
    assert!(
        steps >= 3,
        "the RTT should step at the boundaries: {levels:?}"
    );
    // Every change comes within a round trip after a boundary.
    for w in rtts.windows(2) {
        if (w[1].1 - w[0].1).abs() > 1.0 {
            let near = BOUNDARIES.iter().any(|&b| w[1].0 >= b && w[1].0 <= b + 200);
            assert!(near, "RTT changed at {} ms, far from a boundary", w[1].0);
        }
    }
    assert_eq!(sim.link("a->b").unwrap().stats.lost_packets, 0);
}

/// The LEO preset's handover bursts: packets are lost only from 20 ms
/// before to 80 ms after a boundary (the preset's window), so every
/// retransmission follows one; and at p = 0.3 each burst loses some.
#[test]
fn the_leo_preset_loses_packets_only_in_handover_bursts() {
    let mut sim = leo_run("burst_loss = 0.3");
    let mut first_rtx_after = Vec::new();
    sim.run_until(at_ms(75_000));
    let lost = sim.link("a->b").unwrap().stats.lost_packets;
    let rtx = sim.retransmissions(0);
    println!("lost {lost}, retransmissions {}", rtx.len());
    for r in rtx {
        let t = r.at.as_nanos() / 1_000_000;
        // Detected by dupacks within an RTT or by a timeout (backed off)
        // within a few seconds of the loss.
        let b = BOUNDARIES.iter().rev().find(|&&b| t + 20 >= b);
        let b = b.unwrap_or_else(|| panic!("retransmission at {t} ms, before any burst"));
        assert!(
            t <= b + 5_000,
            "retransmission at {t} ms, far after the burst at {b}"
        );
        if !first_rtx_after.contains(b) {
            first_rtx_after.push(*b);
        }
    }
    assert!(
        lost >= 5,
        "bursts of p = 0.3 over 5 boundaries lose packets"
    );
    assert!(
        first_rtx_after.len() >= 4,
        "losses after {first_rtx_after:?} only"
    );
}

const FLOW: &str = "[[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\n";

/// A trace file with a bad line is refused naming the scenario's field
/// (file:line:col) and the trace file with the line; so is an empty one.
#[test]
fn bad_trace_files_are_refused_naming_the_file_and_line() {
    let dir = std::env::temp_dir().join(format!("pep-bad-traces-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        (
            "word.down",
            "0\n5\nfive\n9\n",
            ":3: \"five\" is not a whole number",
        ),
        ("back.down", "0\n5\n7\n6\n", ":4: 6 ms comes after 7 ms"),
        ("hole.down", "1\n\n2\n", ":2: empty line"),
        ("empty.down", "", ": the trace is empty"),
    ];
    for (name, body, says) in cases {
        std::fs::write(dir.join(name), body).unwrap();
        // The path is relative to the scenario file's directory.
        let text = format!(
            "[scenario]\nname = \"t\"\nduration = \"1s\"\n[[node]]\nname = \"a\"\n\
             [[node]]\nname = \"b\"\n[[link]]\nbetween = [\"a\", \"b\"]\nrate = \"1Mbit/s\"\n\
             delay = \"1ms\"\n[link.forward]\ntrace = \"{name}\"\n{FLOW}"
        );
        let origin = dir.join("s.toml").display().to_string();
        let err = Scenario::from_toml_str(&text, &origin)
            .unwrap_err()
            .to_string();
        let file = dir.join(name).display().to_string();
        println!("{err}");
        assert!(
            err.contains(&format!("{origin}:13:9: link[0].forward.trace")),
            "{err}"
        );
        assert!(err.contains(&format!("{file}{says}")), "{err}");
    }
    // A trace that reads, beside a rate written with it, is refused too.
    std::fs::write(dir.join("ok.down"), "1\n").unwrap();
    let text = "[scenario]\nname = \"t\"\nduration = \"1s\"\n[[node]]\nname = \"a\"\n\
                [[node]]\nname = \"b\"\n[[link]]\nbetween = [\"a\", \"b\"]\n\
                delay = \"1ms\"\nrate = \"1Mbit/s\"\ntrace = \"ok.down\"\n";
    let text = format!("{text}{FLOW}");
    let err = Scenario::from_toml_str(&text, &dir.join("s.toml").display().to_string())
        .unwrap_err()
        .to_string();
    assert!(err.contains("the trace sets the rate"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Schedules and the preset are checked on load, each error placed.
#[test]
fn bad_schedules_and_presets_are_refused_where_written() {
    let base = "[scenario]\nname = \"t\"\nduration = \"1s\"\n[[node]]\nname = \"a\"\n\
                [[node]]\nname = \"b\"\n[[link]]\nbetween = [\"a\", \"b\"]\n";
    let cases = [
        (
            "rate = \"1Mbps\"\ndelay = \"1ms\"\n\
             schedule = [{ at = \"2s\", rate = \"2Mbps\" }, { at = \"1s\", rate = \"3Mbps\" }]\n",
            "link[0].schedule[1].at: steps must be in time order",
        ),
        (
            "rate = \"1Mbps\"\ndelay = \"1ms\"\nschedule = [{ at = \"1s\", loss = 1.5 }]\n",
            "link[0].schedule[0].loss: a probability in [0, 1]",
        ),
        (
            "preset = \"geo\"\n",
            "link[0].preset: unknown preset \"geo\"",
        ),
        (
            "preset = \"leo\"\ndelay = \"5ms\"\n",
            "the LEO preset sets the delay",
        ),
        (
            "preset = \"leo\"\n[link.leo]\nmin_delay = \"30ms\"\nmax_delay = \"20ms\"\n",
            "link[0].leo.min_delay: min_delay 30ms is above max_delay 20ms",
        ),
        (
            "preset = \"leo\"\n[link.forward]\nschedule = [{ at = \"1s\", rate = \"1Mbps\" }]\n",
            "give one of `schedule`, `trace` and `preset`",
        ),
    ];
    for (link, says) in cases {
        let text = format!("{base}{link}{FLOW}");
        let err = Scenario::from_toml_str(&text, "t.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{link}\n=> {err}");
        assert!(err.starts_with("t.toml:"), "placed: {err}");
    }
    // And a valid preset with its defaults: 100 Mbit/s down, 10 up.
    let text = format!("{base}preset = \"leo\"\n{FLOW}");
    let sc = Scenario::from_toml_str(&text, "t.toml").unwrap();
    assert_eq!(sc.links[0].forward.rate, pep_core::Rate::mbps(100));
    assert_eq!(sc.links[0].reverse.rate, pep_core::Rate::mbps(10));
}
