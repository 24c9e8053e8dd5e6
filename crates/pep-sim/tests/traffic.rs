//! Pareto on/off web users carried over TCP.

use pep_sim::{Scenario, Simulation};

fn users(n: u32, duration: &str, extra: &str) -> String {
    format!(
        r#"
[scenario]
name = "web"
duration = "{duration}"
seed = 4
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
between = ["a", "b"]
rate = "100Mbps"
delay = "10ms"
[[flow]]
name = "u"
from = "a"
to = "b"
count = {n}
source = {{ kind = "pareto"{extra} }}
"#
    )
}

#[test]
fn web_users_deliver_their_mean_rate() {
    // On and off both average 500 ms at 64 kbit/s: 32 kbit/s per user on
    // average. 40 users over 400 s on an uncongested link; Pareto(1.5)
    // bursts are heavy-tailed, so the band is wide.
    let sc = Scenario::from_toml_str(&users(40, "400s", ""), "web").unwrap();
    let mut sim = Simulation::new(&sc);
    sim.run();
    let s = sim.summary();
    let per_user = s.total_delivered_bytes as f64 * 8.0 / 400.0 / 40.0;
    eprintln!("{per_user:.0} bit/s per user");
    assert!(
        (per_user / 32_000.0 - 1.0).abs() < 0.2,
        "{per_user} bit/s per user"
    );
    for f in &s.flows {
        assert!(f.delivered_bytes > 0, "{} delivered nothing", f.name);
        assert_eq!(f.completion_s, None, "an open stream never completes");
        assert_eq!(f.retransmitted_segments, 0, "no loss, no congestion");
    }
}

#[test]
fn written_bytes_arrive_as_small_segments_at_the_burst_rate() {
    // One user, a 1 s burst on average: segments carry the application's
    // 210 B writes (no coalescing while the window is open).
    let sc = Scenario::from_toml_str(&users(1, "60s", ", packet = \"210B\""), "web").unwrap();
    let mut sim = Simulation::new(&sc);
    sim.run();
    let st = *sim.sender(0).unwrap().stats();
    let delivered = sim.sink(0).delivered_bytes();
    assert!(delivered > 0);
    assert_eq!(delivered % 210, 0, "whole application writes arrive");
    assert!(st.segments_sent * 210 >= delivered);
}

#[test]
fn bad_shape_is_refused_with_the_field_named() {
    let e = Scenario::from_toml_str(&users(1, "1s", ", shape = 1.0"), "web")
        .unwrap_err()
        .to_string();
    assert!(e.contains("source.shape"), "{e}");
}
