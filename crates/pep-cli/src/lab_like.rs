//! Like with like: the TCP `pep lab compare` simulates is the TCP the lab's
//! kernel runs. Every flow gets the `linux` profile (docs/tcp.md,
//! "Profiles"), keeping what the lab sets per socket (the congestion
//! control `TCP_CONGESTION`, the segment size `TCP_MAXSEG`, the receive
//! window `TCP_WINDOW_CLAMP`) and per route or node ([`crate::lab_tcp`]:
//! the initial window, an ACK for every segment, SACK off). Each other
//! setting the scenario gives differently is named, with the value Linux
//! runs instead; so are the agents' settings the daemon runs its own way
//! ([`crate::lab_pep::as_the_daemon_runs_it`]).

use pep_sim::scenario::{AckSpec, CcKind, Profile, Scenario, SinkSpec, TcpSpec};

/// Linux's TCP and sink, as the `linux` profile bundles them.
fn linux() -> (TcpSpec, SinkSpec) {
    let text = "[scenario]\nname = \"linux\"\nduration = \"1s\"\n[defaults.tcp]\nprofile = \"linux\"\n\
                [[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\nbetween = [\"a\", \"b\"]\n\
                rate = \"1Mbps\"\ndelay = \"1ms\"\n[[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\n";
    let sc = Scenario::from_toml_str(text, "linux profile").expect("the linux profile validates");
    let f = &sc.flows[0];
    (f.tcp.clone(), f.sink.clone())
}

/// Bytes of TCP options Linux counts in `TCP_MAXSEG` (timestamps): a
/// segment of the lab's carries this much less payload than the flow's
/// `mss`, in packets of `mss + 40` bytes.
pub const TIMESTAMP_BYTES: u32 = 12;

/// `sc` as the lab's kernel runs it, and what changed, one line per flow
/// and setting.
pub fn as_linux_runs_it(sc: &Scenario) -> (Scenario, Vec<String>) {
    let (ltcp, lsink) = linux();
    let mut out = sc.clone();
    let mut notes = vec![];
    for f in &mut out.flows {
        let (tcp, sink) = (f.tcp.clone(), f.sink.clone());
        let mut new = ltcp.clone();
        // Linux's "reno" is NewReno's recovery (RFC 6582); SACK is on.
        new.cc = match tcp.cc {
            CcKind::Reno => CcKind::NewReno,
            cc => cc,
        };
        new.mss = tcp.mss.saturating_sub(TIMESTAMP_BYTES).max(1);
        // Carried per route or node (crate::lab_tcp).
        new.init_cwnd = tcp.init_cwnd;
        let mut new_sink = lsink.clone();
        new_sink.rwnd = sink.rwnd;
        new_sink.app = sink.app;
        new_sink.sack = sink.sack;
        if crate::lab_tcp::carries_ack(&sink.ack, &lsink.ack) {
            new_sink.ack = sink.ack.clone();
        }
        let mut differ = |field: &str, was: String, now: String| {
            if was != now {
                notes.push(format!("flow {:?}: {field} {was} -> Linux's {now}", f.name));
            }
        };
        if tcp.cc == CcKind::Reno {
            differ(
                "tcp.cc",
                "reno".into(),
                "reno, which is NewReno with SACK".into(),
            );
        }
        if tcp.header != new.header {
            differ(
                "tcp.header",
                format!("{} B", tcp.header),
                format!(
                    "{} B (timestamps: {} B of payload in {} B packets)",
                    new.header,
                    new.mss,
                    tcp.mss + 40
                ),
            );
        }
        let d = |x: pep_core::Duration| x.to_string();
        for (field, was, now) in [
            ("tcp.min_rto", d(tcp.min_rto), d(new.min_rto)),
            ("tcp.initial_rto", d(tcp.initial_rto), d(new.initial_rto)),
            ("tcp.max_rto", d(tcp.max_rto), d(new.max_rto)),
            (
                "tcp.clock_granularity",
                d(tcp.clock_granularity),
                d(new.clock_granularity),
            ),
            (
                "tcp.handshake",
                tcp.handshake.to_string(),
                new.handshake.to_string(),
            ),
            (
                "tcp.max_burst",
                format!("{:?}", tcp.max_burst),
                format!("{:?}", new.max_burst),
            ),
            ("tcp.pacing", tcp.pacing.to_string(), new.pacing.to_string()),
            ("tcp.rack", tcp.rack.to_string(), new.rack.to_string()),
            ("sink.ack", ack_text(&sink.ack), ack_text(&new_sink.ack)),
        ] {
            differ(field, was, now);
        }
        new.profile = Some(Profile::Linux);
        f.tcp = new;
        f.sink = new_sink;
    }
    notes.extend(crate::lab_pep::as_the_daemon_runs_it(&mut out));
    (out, notes)
}

fn ack_text(a: &AckSpec) -> String {
    let tick = |t: &Option<pep_core::Duration>| t.map_or(String::new(), |t| format!(", tick {t}"));
    match a {
        AckSpec::Every => "every segment".into(),
        AckSpec::Delayed {
            count,
            timeout,
            tick: t,
        } => format!("delayed ({count} segments, {timeout}{})", tick(t)),
        AckSpec::Adaptive {
            min,
            max,
            timeout,
            tick: t,
        } => format!("adaptive ({min} to {max} segments, {timeout}{})", tick(t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(rel: &str) -> Scenario {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../")
            .join(rel);
        Scenario::load(&p).unwrap()
    }

    #[test]
    fn the_asymmetric_example_is_simulated_as_linux_runs_it() {
        let (sc, notes) = as_linux_runs_it(&load("scenarios/examples/asymmetric.toml"));
        let f = &sc.flows[0];
        // Mapped: the window and the packet size on the wire (1040 B).
        assert_eq!(f.sink.rwnd, 20_000);
        assert_eq!((f.tcp.mss, f.tcp.header), (988, 52));
        // Carried by the lab's routes and nodes: IW2, quickack, SACK off.
        assert_eq!(f.tcp.init_cwnd, 2);
        assert_eq!(f.sink.ack, AckSpec::Every);
        assert!(!f.sink.sack);
        let all = notes.join("\n");
        for field in ["tcp.header 40 B", "tcp.cc reno"] {
            assert!(all.contains(field), "{field}: {all}");
        }
        for carried in ["init_cwnd", "sink.ack", "sink.sack"] {
            assert!(!all.contains(carried), "{carried} is carried: {all}");
        }
    }

    #[test]
    fn a_linux_scenario_changes_only_the_payload_per_packet() {
        let (sc, notes) = as_linux_runs_it(&load("scenarios/validation/geo-split.toml"));
        assert_eq!(sc.flows[0].tcp.mss, 1436);
        assert_eq!(notes, Vec::<String>::new());
    }
}
