//! A spurious retransmission timeout undone, as Linux undoes it: with
//! timestamps (the `linux` profile) the first ACK after the timeout echoes
//! the original's TSval, so the original arrived (RFC 3522's Eifel
//! detection, the kernel's `tcp_packet_delayed`); cwnd and ssthresh come
//! back and nothing more is resent (`tcp_try_undo_loss`).

use pep_sim::{Scenario, Simulation};

/// A bulk flow over 10 Mbit/s whose one-way delay steps from 20 ms to
/// `late` at 5 s (`profile`: a `[defaults.tcp]` line or nothing), with a queue that never overflows: nothing is lost, and a
/// step well above the RTO makes the timer fire before any ACK of the
/// packets sent after it returns.
fn delay_step(profile: &str, late: &str) -> Simulation {
    let text = format!(
        r#"
[scenario]
name = "spurious"
duration = "10s"
[defaults.tcp]
{profile}
cc = "newreno"
[defaults.sink]
rwnd = "256KiB"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "10Mbps"
delay = "20ms"
queue = {{ limit = 1000 }}
[link.forward]
schedule = [{{ at = "5s", delay = "{late}" }}]
[[flow]]
name = "f"
from = "a"
to = "b"
[output]
series = []
"#
    );
    let sc = Scenario::from_toml_str(&text, "spurious").unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulation::new(&sc);
    sim.run();
    sim
}

#[test]
fn a_delay_step_times_out_once_and_the_undo_resends_one_segment() {
    let sim = delay_step("profile = \"linux\"", "600ms");
    let st = sim.sender(0).unwrap().stats();
    assert!(st.timeouts >= 1, "the step must fire the timer: {st:?}");
    // Every timeout proved spurious, each resent its one segment, and the
    // window was not cut: no loss ever happened.
    assert_eq!(st.spurious_timeouts, st.timeouts, "{st:?}");
    assert_eq!(st.retransmitted_segments, st.timeouts, "{st:?}");
    assert_eq!(st.fast_retransmits, 0, "{st:?}");
}

#[test]
fn without_timestamps_the_timeout_resends_the_whole_flight() {
    // The default profile has no timestamps: the go-back-N resends what was
    // in flight at the step (over 100 segments at 256 KiB), all of it
    // already delivered.
    let sim = delay_step("", "600ms");
    let st = sim.sender(0).unwrap().stats();
    assert!(st.timeouts >= 1, "{st:?}");
    assert_eq!(st.spurious_timeouts, 0, "{st:?}");
    assert!(st.retransmitted_segments > 50, "{st:?}");
}
