//! ACK regulation on an asymmetric link (Shekhar et al.): the paper's
//! tables as properties of short, seeded runs. The scenario is
//! scenarios/shekhar/asym.toml; each test changes what it varies.

use pep_sim::{Scenario, Simulation};

const BASE: &str = include_str!("../../../scenarios/shekhar/asym.toml");

/// The base scenario with `up` as the reverse rate, `secs` long, and
/// `extra` TOML appended (agents, flows) and `edits` applied as textual
/// replacements of the base.
fn scenario(up: &str, secs: u32, edits: &[(&str, &str)], extra: &str) -> Scenario {
    let mut text = BASE
        .replace("rate = \"64kbit/s\"", &format!("rate = \"{up}\""))
        .replace("duration = \"60s\"", &format!("duration = \"{secs}s\""));
    for (from, to) in edits {
        assert!(text.contains(from), "{from}");
        text = text.replace(from, to);
    }
    text.push_str(extra);
    Scenario::from_toml_str(&text, "<shekhar>").expect("valid")
}

fn run(sc: &Scenario) -> pep_sim::output::Summary {
    let mut sim = Simulation::new(sc);
    sim.run();
    sim.summary()
}

const SAD: (&str, &str) = (
    "[link.reverse]\n",
    "[link.reverse]\nqueue = { kind = \"sad\", limit = 50 }\n",
);

#[test]
fn probe() {
    for up in [
        "64kbit/s",
        "128kbit/s",
        "256kbit/s",
        "640kbit/s",
        "784kbit/s",
    ] {
        let a = run(&scenario(up, 30, &[], ""));
        let b = run(&scenario(up, 30, &[SAD], ""));
        println!(
            "{up}: reno {:.3} sad {:.3}  fr {} {} to {} {}",
            a.flows[0].goodput_mbps,
            b.flows[0].goodput_mbps,
            a.flows[0].fast_retransmits,
            b.flows[0].fast_retransmits,
            a.flows[0].timeouts,
            b.flows[0].timeouts
        );
    }
}
