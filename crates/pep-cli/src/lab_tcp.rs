//! The TCP settings of a scenario's flows that Linux exposes per route or
//! per namespace, set on the lab's nodes: the initial window (route
//! `initcwnd`, and above 10 segments `initrwnd` at the receiver, so its
//! first offered window never holds the sender back, whatever the
//! kernel's default; Linux 6.18 offers 64 KB anyway), an ACK for every segment (route
//! `quickack` at the receiver) and SACK off (`net.ipv4.tcp_sack = 0` at
//! the receiver, so neither end uses it). What Linux cannot run stays
//! Linux's own and [`crate::lab_like`] names it.

use pep_lab::topology::{LabTopology, RouteTcp};
use pep_sim::scenario::{AckSpec, Scenario};

/// Linux's initial congestion window (`TCP_INIT_CWND`), in segments.
pub const LINUX_INIT_WINDOW: u32 = 10;

/// The most a first flight can carry: the receive window a SYN-ACK
/// offers is never scaled (RFC 7323), so a larger `initcwnd` stops here
/// (`pep-lab --test carried_root route_initcwnd_is_the_first_flight`).
pub const MAX_FIRST_FLIGHT: u64 = 65_535;

/// Whether the lab runs `f`'s receiver's ACK policy as the scenario gives
/// it: every segment (quickack), or Linux's own delayed ACKs.
pub fn carries_ack(ack: &AckSpec, linux: &AckSpec) -> bool {
    *ack == AckSpec::Every || ack == linux
}

/// Sets the per-route and per-namespace settings of `sc`'s flows on `t`
/// (whose nodes are `sc`'s, in order). Two flows that need different
/// values of one route's setting, or SACK both on and off at one node, are
/// refused, naming both.
pub fn apply(sc: &Scenario, t: &mut LabTopology) -> Result<(), String> {
    // (from, to) -> the setting and the flow that asked for it.
    let mut routes: Vec<(RouteTcp, [Option<String>; 3])> = vec![];
    let mut set = |from: usize,
                   to: usize,
                   field: usize,
                   flow: &str,
                   apply: &dyn Fn(&mut RouteTcp)| {
        let i = match routes
            .iter()
            .position(|(r, _)| (r.from, r.to) == (from, to))
        {
            Some(i) => i,
            None => {
                routes.push((
                    RouteTcp {
                        from,
                        to,
                        ..RouteTcp::default()
                    },
                    Default::default(),
                ));
                routes.len() - 1
            }
        };
        let (r, by) = &mut routes[i];
        let before = *r;
        apply(r);
        match &by[field] {
            Some(other) if before != *r => {
                let name = ["initcwnd", "initrwnd", "quickack"][field];
                Err(format!(
                    "flows {other:?} and {flow:?}: the lab sets `{name}` once per route (from {} to \
                     {}), and they need different values; give them equal TCP settings",
                    sc.nodes[from].name, sc.nodes[to].name
                ))
            }
            _ => {
                by[field].get_or_insert_with(|| flow.to_string());
                Ok(())
            }
        }
    };
    for f in &sc.flows {
        let n = f.tcp.init_cwnd;
        // The lab's segments carry `mss - 12` B (timestamps).
        let flight = n as u64 * f.tcp.mss.saturating_sub(crate::lab_like::TIMESTAMP_BYTES) as u64;
        if flight > MAX_FIRST_FLIGHT {
            return Err(format!(
                "flow {:?}: tcp.init_cwnd = {n} ({flight} B) cannot be run on Linux: the first \
                 flight is at most {MAX_FIRST_FLIGHT} B, the window a SYN-ACK offers (never \
                 scaled, RFC 7323)",
                f.name
            ));
        }
        if n != LINUX_INIT_WINDOW {
            set(f.src, f.dst, 0, &f.name, &|r| r.initcwnd = Some(n))?;
            if n > LINUX_INIT_WINDOW {
                set(f.dst, f.src, 1, &f.name, &|r| r.initrwnd = Some(n))?;
            }
        }
        let quick = f.sink.ack == AckSpec::Every;
        set(f.dst, f.src, 2, &f.name, &|r| r.quickack = quick)?;
    }
    t.route_tcp = routes
        .into_iter()
        .map(|(r, _)| r)
        .filter(|r| {
            *r != RouteTcp {
                from: r.from,
                to: r.to,
                ..RouteTcp::default()
            }
        })
        .collect();
    // SACK is negotiated: off at the receiver, off for the connection.
    for f in sc.flows.iter().filter(|f| !f.sink.sack) {
        if let Some(g) = sc
            .flows
            .iter()
            .find(|g| g.sink.sack && [g.src, g.dst].contains(&f.dst))
        {
            return Err(format!(
                "flows {:?} and {:?}: SACK off for {:?} turns it off at node {} ({:?} uses it \
                 there); the lab sets SACK per node",
                f.name, g.name, f.name, sc.nodes[f.dst].name, g.name
            ));
        }
        if !t.sack_off.contains(&f.dst) {
            t.sack_off.push(f.dst);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(flows: &str) -> Scenario {
        let text = format!(
            "[scenario]\nname = \"t\"\nduration = \"1s\"\n\
             [[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\nbetween = [\"a\", \"b\"]\n\
             rate = \"1Mbps\"\ndelay = \"1ms\"\n{flows}"
        );
        Scenario::from_toml_str(&text, "test").unwrap()
    }

    fn topo(sc: &Scenario) -> Result<LabTopology, String> {
        let mut t = crate::lab_cmd::topology_shape(sc);
        apply(sc, &mut t).map(|()| t)
    }

    #[test]
    fn linux_defaults_set_nothing() {
        let sc = scenario(
            "[[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\ntcp = { profile = \"linux\" }\n",
        );
        let t = topo(&sc).unwrap();
        assert_eq!(t.route_tcp, vec![]);
        assert_eq!(t.sack_off, Vec::<usize>::new());
    }

    #[test]
    fn initial_window_ack_policy_and_sack_become_route_and_namespace_settings() {
        let sc = scenario(
            "[[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\n\
             tcp = { profile = \"linux\", init_cwnd = 20 }\n\
             sink = { ack = \"every\", sack = false }\n",
        );
        let t = topo(&sc).unwrap();
        assert_eq!(
            t.route_tcp,
            vec![
                RouteTcp {
                    from: 0,
                    to: 1,
                    initcwnd: Some(20),
                    ..RouteTcp::default()
                },
                RouteTcp {
                    from: 1,
                    to: 0,
                    initrwnd: Some(20),
                    quickack: true,
                    ..RouteTcp::default()
                },
            ]
        );
        assert_eq!(t.sack_off, vec![1]);
    }

    #[test]
    fn a_first_flight_above_64_kib_is_refused_by_name() {
        let sc = scenario(
            "[[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\n\
             tcp = { profile = \"linux\", init_cwnd = 46 }\n",
        );
        let e = topo(&sc).unwrap_err();
        assert!(
            e.contains("flow \"f\": tcp.init_cwnd = 46") && e.contains("65535"),
            "{e}"
        );
        let sc = scenario(
            "[[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\n\
             tcp = { profile = \"linux\", init_cwnd = 45 }\n",
        );
        assert!(topo(&sc).is_ok());
    }

    #[test]
    fn two_flows_wanting_different_values_of_one_route_are_refused_by_name() {
        let sc = scenario(
            "[[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\ntcp = { profile = \"linux\", init_cwnd = 2 }\n\
             [[flow]]\nname = \"g\"\nfrom = \"a\"\nto = \"b\"\ntcp = { profile = \"linux\", init_cwnd = 4 }\n",
        );
        let e = topo(&sc).unwrap_err();
        assert!(
            e.contains("\"f\" and \"g\"") && e.contains("initcwnd"),
            "{e}"
        );
        let sc = scenario(
            "[[flow]]\nname = \"f\"\nfrom = \"a\"\nto = \"b\"\nsink = { sack = false }\n\
             [[flow]]\nname = \"g\"\nfrom = \"b\"\nto = \"a\"\ntcp = { profile = \"linux\" }\n",
        );
        let e = topo(&sc).unwrap_err();
        assert!(e.contains("SACK off") && e.contains("node b"), "{e}");
    }
}
