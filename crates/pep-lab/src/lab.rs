//! Building a topology as namespaces and emulated links, and taking it down.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::daemon::NodeProcess;
use crate::emu::{DirReport, EmuOptions, LinkEmulator, ServiceStart};
use crate::error::{require_root, LabError, Result};
use crate::ethtool;
use crate::netns;
use crate::state::{self, Endpoint, LabState, LinkState, NodeState, ProcState};
use crate::topology::{
    emu_ifname, link_addr, link_addr6, link_mac, link_netns, mac_string, node_ifname, node_netns,
    valid_id, LabTopology, Role,
};
use pep_io::clock::{Clock, IdlePolling};

/// How to build a lab.
#[derive(Clone, Debug, Default)]
pub struct LabOptions {
    /// The lab's id (`[a-z0-9-]`, at most 24): its namespaces are
    /// `pepl-<id>.<node>` and `pepl-<id>+l<link>`. Default: `<pid>-<n>`,
    /// unique per process, so parallel test binaries never clash.
    pub id: Option<String>,
    pub emu: EmuOptions,
    /// Give every node IPv6 addresses too ([`link_addr6`]), with static
    /// neighbours and routes like the IPv4 ones. Default false: IPv6 is
    /// disabled, so nothing but the experiment's traffic crosses the links.
    pub ipv6: bool,
    /// The links' schedules, traces and LEO presets wait for
    /// [`Lab::start_services`] (a run's clock zero) instead of starting
    /// with their emulators. Default false.
    pub services_from_run: bool,
}

/// A running lab. Dropping it takes everything down (best effort);
/// [`Lab::down`] does the same and reports errors.
pub struct Lab {
    state: LabState,
    topo: LabTopology,
    clock: Clock,
    emulators: Vec<LinkEmulator>,
    /// When the links' services start ([`LabOptions::services_from_run`]).
    services: ServiceStart,
    /// Programs started in the nodes ([`Lab::spawn`]): stopped first.
    processes: Vec<NodeProcess>,
    /// Dropped with the lab, after the emulators have stopped.
    idle_polling: Option<IdlePolling>,
    finished: bool,
}

static NEXT_ID: AtomicU32 = AtomicU32::new(0);

/// The bridge in a [`LabTopology::wire`] link's namespace.
const BRIDGE: &str = "br0";

/// Sysctls of every node namespace with [`LabOptions::ipv6`]: addresses
/// usable at once (no duplicate address detection), and no router
/// solicitations or advertisements crossing the links.
const NODE_SYSCTLS_V6: &[(&str, &str)] = &[
    ("net/ipv6/conf/all/disable_ipv6", "0"),
    ("net/ipv6/conf/default/disable_ipv6", "0"),
    ("net/ipv6/conf/all/accept_dad", "0"),
    ("net/ipv6/conf/default/accept_dad", "0"),
    ("net/ipv6/conf/all/accept_ra", "0"),
    ("net/ipv6/conf/default/accept_ra", "0"),
    ("net/ipv6/conf/all/router_solicitations", "0"),
    ("net/ipv6/conf/default/router_solicitations", "0"),
];

/// Sysctls of every node namespace, and why.
const NODE_SYSCTLS: &[(&str, &str)] = &[
    // IPv4 only: no router solicitations or DAD probes crossing the links.
    ("net/ipv6/conf/all/disable_ipv6", "1"),
    ("net/ipv6/conf/default/disable_ipv6", "1"),
    // Each connection starts from the defaults, not from what an earlier
    // run to the same address left in the route cache (ssthresh, RTT).
    ("net/ipv4/tcp_no_metrics_save", "1"),
    // Return paths may differ from forward ones; never drop for that.
    ("net/ipv4/conf/all/rp_filter", "0"),
    ("net/ipv4/conf/default/rp_filter", "0"),
];

impl Lab {
    /// Builds `topo`: namespaces, veths with offloads off, addresses,
    /// static neighbours and routes, and one emulator per link. On failure
    /// everything already made is removed again.
    pub fn up(topo: &LabTopology, opts: &LabOptions) -> Result<Lab> {
        require_root()?;
        topo.validate()?;
        let pid = std::process::id();
        let id = match &opts.id {
            Some(id) => id.clone(),
            None => format!("{pid}-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed)),
        };
        if !valid_id(&id) {
            return Err(LabError::Topology(format!(
                "lab id {id:?}: use 1 to 24 of a-z, 0-9 and '-'"
            )));
        }
        // Labs of processes that died are cleaned here, so a killed test
        // run does not leave namespaces until someone runs `pep lab down`.
        let _ = state::reap_orphans();
        if LabState::read(&id)?.is_some() || !state::namespaces_of(&id)?.is_empty() {
            return Err(LabError::Topology(format!(
                "lab {id} exists already (`pep lab down {id}` removes it)"
            )));
        }
        let state = plan(&id, topo, pid);
        // Written first: whatever is created next can be found from it.
        state.write()?;
        let mut lab = Lab {
            state,
            topo: topo.clone(),
            clock: Clock::start(),
            emulators: vec![],
            services: if opts.services_from_run {
                ServiceStart::deferred()
            } else {
                ServiceStart::at_emulator_start()
            },
            processes: vec![],
            idle_polling: opts.emu.poll_idle.then(IdlePolling::request).flatten(),
            finished: false,
        };
        lab.build(&opts.emu, opts.ipv6)?; // on error, Drop removes what exists
        Ok(lab)
    }

    fn build(&mut self, emu: &EmuOptions, ipv6: bool) -> Result<()> {
        let id = self.state.id.clone();
        let topo = &self.topo;
        for (i, n) in topo.nodes.iter().enumerate() {
            let sack_off = topo.sack_off.contains(&i);
            let ns = node_netns(&id, &n.name);
            netns::add(&ns)?;
            let forward = if n.role == Role::Router { "1" } else { "0" };
            netns::in_netns(&ns, || {
                for (k, v) in NODE_SYSCTLS {
                    netns::write_sysctl(k, v)?;
                }
                if ipv6 {
                    for (k, v) in NODE_SYSCTLS_V6 {
                        netns::write_sysctl(k, v)?;
                    }
                    netns::write_sysctl("net/ipv6/conf/all/forwarding", forward)?;
                }
                if sack_off {
                    netns::write_sysctl("net/ipv4/tcp_sack", "0")?;
                }
                netns::write_sysctl("net/ipv4/ip_forward", forward)
            })?;
        }
        for i in 0..topo.links.len() {
            let ns = link_netns(&id, i);
            netns::add(&ns)?;
            netns::in_netns(&ns, || {
                netns::write_sysctl("net/ipv6/conf/all/disable_ipv6", "1")?;
                netns::write_sysctl("net/ipv6/conf/default/disable_ipv6", "1")
            })?;
        }
        // Each veth is created with both ends already in their namespaces:
        // nothing ever appears in the caller's namespace.
        let mut veths = vec![];
        for (i, l) in topo.links.iter().enumerate() {
            for (side, node) in [(0, l.a), (1, l.b)] {
                veths.push(format!(
                    "link add name {} address {} netns {} type veth peer name {} netns {}",
                    node_ifname(i),
                    mac_string(link_mac(i, side)),
                    node_netns(&id, &topo.nodes[node].name),
                    emu_ifname(side),
                    link_netns(&id, i),
                ));
            }
        }
        netns::ip_batch(None, &veths)?;
        for (n, node) in topo.nodes.iter().enumerate() {
            let ns = node_netns(&id, &node.name);
            let ifs: Vec<String> = topo
                .attachments(n)
                .iter()
                .map(|&(l, _)| node_ifname(l))
                .collect();
            netns::in_netns(&ns, || {
                for ifname in &ifs {
                    ethtool::disable_offloads(ifname)?;
                }
                Ok(())
            })?;
            let mut cmds = node_commands(topo, n);
            if ipv6 {
                cmds.extend(node_commands6(topo, n));
            }
            netns::ip_batch(Some(&ns), &cmds)?;
        }
        for i in 0..topo.links.len() {
            let ns = link_netns(&id, i);
            let sides = [emu_ifname(0), emu_ifname(1)];
            netns::in_netns(&ns, || {
                for ifname in sides {
                    ethtool::disable_offloads(ifname)?;
                }
                Ok(())
            })?;
            let mut up: Vec<String> = vec![];
            if topo.links[i].bridged {
                up.push(format!(
                    "link add name {BRIDGE} type bridge forward_delay 0 stp_state 0"
                ));
                up.extend(
                    sides
                        .iter()
                        .map(|s| format!("link set dev {s} master {BRIDGE}")),
                );
                up.push(format!("link set dev {BRIDGE} up"));
            }
            up.extend(sides.iter().map(|s| format!("link set dev {s} up")));
            netns::ip_batch(Some(&ns), &up)?;
        }
        for (i, l) in topo.links.iter().enumerate() {
            if l.bridged {
                continue;
            }
            let e = LinkEmulator::start_served(
                &l.name,
                &link_netns(&id, i),
                [l.forward, l.reverse],
                (l.service.clone(), self.services.clone()),
                topo.seed,
                self.clock,
                *emu,
            )?;
            self.emulators.push(e);
        }
        self.wait_wired(&id)
    }

    /// Waits until every interface of the bridged links is up. The kernel
    /// turns a new veth's carrier on up to a second late (link watch), and
    /// until then it drops what is sent there; an emulator's start takes
    /// that long anyway, a bridge's does not.
    fn wait_wired(&self, id: &str) -> Result<()> {
        let topo = &self.topo;
        let mut ifaces = vec![];
        for (i, l) in topo.links.iter().enumerate().filter(|(_, l)| l.bridged) {
            for node in [l.a, l.b] {
                ifaces.push((node_netns(id, &topo.nodes[node].name), node_ifname(i)));
            }
            for ifname in [emu_ifname(0), emu_ifname(1), BRIDGE] {
                ifaces.push((link_netns(id, i), ifname.to_string()));
            }
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        for (ns, ifname) in ifaces {
            while !netns::ip(&["-n", &ns, "link", "show", "dev", &ifname])?.contains("state UP") {
                if std::time::Instant::now() > deadline {
                    return Err(LabError::Topology(format!(
                        "{ifname} in {ns} is not up after 5 s"
                    )));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        Ok(())
    }

    pub fn id(&self) -> &str {
        &self.state.id
    }

    /// The state file's contents: nodes, namespaces, addresses.
    pub fn state(&self) -> &LabState {
        &self.state
    }

    pub fn topology(&self) -> &LabTopology {
        &self.topo
    }

    /// The clock the emulators run on (zero when the lab came up).
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Starts the links' schedules, traces and LEO presets now, and
    /// returns the clock whose zero is now: their time zero, to run the
    /// flows on ([`crate::traffic::run_from`]). Only for a lab made with
    /// [`LabOptions::services_from_run`]; otherwise they started with the
    /// lab and this changes nothing.
    pub fn start_services(&self) -> Clock {
        let zero = Clock::start();
        self.services.start(zero);
        zero
    }

    /// Where to reach `node`.
    pub fn endpoint(&self, node: &str) -> Result<Endpoint> {
        self.state
            .endpoint(node)
            .cloned()
            .ok_or_else(|| LabError::Topology(format!("no node {node:?} in lab {}", self.id())))
    }

    /// Whether idle CPUs are kept polling while this lab is up
    /// ([`EmuOptions::poll_idle`] asked and the kernel agreed).
    pub fn idle_polling(&self) -> bool {
        self.idle_polling.is_some()
    }

    /// Counters of every link direction (forward, reverse per link), as
    /// last published by the emulators.
    pub fn link_reports(&self) -> Vec<DirReport> {
        let reports = self.emulators.iter().flat_map(|e| e.reports());
        reports.map(|r| self.stamped(r)).collect()
    }

    fn stamped(&self, mut report: DirReport) -> DirReport {
        report.idle_polling = self.idle_polling();
        report
    }

    /// Stops the emulators, deletes the namespaces and the state file.
    /// Returns the emulators' final counters.
    pub fn down(mut self) -> Result<Vec<DirReport>> {
        self.teardown()
    }

    /// Starts `program args` in `node`'s namespace ([`crate::daemon`]),
    /// its output in `log`; it is recorded in the state file and stopped
    /// (SIGTERM, then SIGKILL) before the lab comes down. Call from the
    /// thread that owns the lab. Returns its index for [`Lab::process`].
    pub fn spawn(
        &mut self,
        what: &str,
        node: &str,
        program: &std::path::Path,
        args: &[String],
        log: &std::path::Path,
    ) -> Result<usize> {
        let ep = self.endpoint(node)?;
        let p = NodeProcess::spawn(what, node, &ep.netns, program, args, log)?;
        self.state.processes.push(ProcState {
            pid: p.pid(),
            pid_start: p.start_time().unwrap_or(0),
            node: node.to_string(),
            what: what.to_string(),
        });
        self.processes.push(p);
        self.state.write()?;
        Ok(self.processes.len() - 1)
    }

    /// A program started with [`Lab::spawn`].
    pub fn process(&mut self, i: usize) -> &mut NodeProcess {
        &mut self.processes[i]
    }

    /// Stops every program started with [`Lab::spawn`] (SIGTERM, SIGKILL
    /// after `grace`); returns those that had to be killed or had exited
    /// with an error, with their exit status.
    pub fn stop_processes(&mut self, grace: std::time::Duration) -> Vec<String> {
        let mut bad = vec![];
        for mut p in std::mem::take(&mut self.processes) {
            let early = p.exited();
            match (early, p.stop(grace)) {
                (Some(st), _) => bad.push(format!("{} had exited early ({st})", p.what)),
                (None, None) => bad.push(format!("{} did not stop on SIGTERM", p.what)),
                (None, Some(st)) if !st.success() => {
                    bad.push(format!("{} stopped with {st}", p.what))
                }
                _ => {}
            }
        }
        self.state.processes.clear();
        let _ = self.state.write();
        bad
    }

    fn teardown(&mut self) -> Result<Vec<DirReport>> {
        self.finished = true;
        // Daemons first: they remove their rules while the namespaces
        // and links still exist.
        self.stop_processes(std::time::Duration::from_secs(5));
        let emulators = std::mem::take(&mut self.emulators);
        let reports = emulators.into_iter().flat_map(LinkEmulator::stop);
        let reports = reports.map(|r| self.stamped(r)).collect();
        state::down(Some(&self.state.id))?;
        Ok(reports)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if !self.finished {
            if let Err(e) = self.teardown() {
                eprintln!("pep-lab: cleaning up lab {}: {e}", self.state.id);
            }
        }
    }
}

/// The state file for `topo` built as lab `id` by process `pid`.
fn plan(id: &str, topo: &LabTopology, pid: u32) -> LabState {
    let nodes = topo
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| NodeState {
            role: n.role,
            endpoint: Endpoint {
                node: n.name.clone(),
                netns: node_netns(id, &n.name),
                addr: topo.node_addr(i).unwrap_or(Ipv4Addr::UNSPECIFIED),
            },
            addrs: topo
                .attachments(i)
                .iter()
                .map(|&(l, s)| link_addr(l, s))
                .collect(),
        })
        .collect();
    let links = topo
        .links
        .iter()
        .enumerate()
        .map(|(i, l)| LinkState {
            name: l.name.clone(),
            netns: link_netns(id, i),
            a: topo.nodes[l.a].name.clone(),
            b: topo.nodes[l.b].name.clone(),
        })
        .collect();
    LabState {
        id: id.to_string(),
        scenario: topo.name.clone(),
        pid,
        pid_start: state::process_start(pid).unwrap_or(0),
        nodes,
        links,
        processes: vec![],
    }
}

/// `ip -batch` lines for node `n`: loopback, addresses, static neighbours
/// (no ARP crosses the emulated links), and /32 routes to every address of
/// every node not on a shared link.
pub fn node_commands(topo: &LabTopology, n: usize) -> Vec<String> {
    let mut cmds = vec!["link set dev lo up".to_string()];
    cmds.extend(address_plan(
        topo,
        n,
        &|l, s| link_addr(l, s).to_string(),
        24,
        32,
        "",
    ));
    cmds
}

/// The IPv6 half of [`node_commands`]: the same plan with [`link_addr6`]
/// addresses (`nodad`: usable at once).
pub fn node_commands6(topo: &LabTopology, n: usize) -> Vec<String> {
    address_plan(
        topo,
        n,
        &|l, s| link_addr6(l, s).to_string(),
        64,
        128,
        " nodad",
    )
}

/// Addresses, links up, static neighbours, and host routes through the
/// next hop for every address not on a shared subnet.
fn address_plan(
    topo: &LabTopology,
    n: usize,
    addr: &dyn Fn(usize, usize) -> String,
    prefix: u8,
    host: u8,
    flags: &str,
) -> Vec<String> {
    let mut cmds = Vec::new();
    let mine = topo.attachments(n);
    for &(l, side) in &mine {
        let dev = node_ifname(l);
        let peer = 1 - side;
        cmds.push(format!(
            "addr add {}/{prefix} dev {dev}{flags}",
            addr(l, side)
        ));
        cmds.push(format!("link set dev {dev} up"));
        cmds.push(format!(
            "neigh replace {} lladdr {} dev {dev} nud permanent",
            addr(l, peer),
            mac_string(link_mac(l, peer))
        ));
    }
    let routes = topo.routes();
    for d in 0..topo.nodes.len() {
        let Some((l, dir)) = routes.next_hop(n, d) else {
            continue;
        };
        let side = usize::from(dir == pep_model::Dir::Reverse);
        let tcp = topo.route_tcp(n, d).map(|r| r.attrs()).unwrap_or_default();
        for (dl, dside) in topo.attachments(d) {
            if let Some(&(ml, _)) = mine.iter().find(|&&(ml, _)| ml == dl) {
                // On a shared subnet the connected route serves, unless
                // TCP settings need a route of their own.
                if !tcp.is_empty() {
                    cmds.push(format!(
                        "route replace {}/{host} dev {}{tcp}",
                        addr(dl, dside),
                        node_ifname(ml)
                    ));
                }
                continue;
            }
            cmds.push(format!(
                "route replace {}/{host} via {} dev {}{tcp}",
                addr(dl, dside),
                addr(l, 1 - side),
                node_ifname(l)
            ));
        }
    }
    cmds
}

impl Lab {
    /// `node`'s IPv6 address on its first link (with [`LabOptions::ipv6`]).
    pub fn addr6(&self, node: &str) -> Option<std::net::Ipv6Addr> {
        let n = self.topo.nodes.iter().position(|x| x.name == node)?;
        let &(l, side) = self.topo.attachments(n).first()?;
        Some(link_addr6(l, side))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::DirParams;
    use pep_core::{Duration, Rate};

    /// Host s, router r, host d in a line.
    fn chain() -> LabTopology {
        let d = DirParams::new(Rate::mbps(10), Duration::from_millis(1), 10);
        let mut t = LabTopology::new("t", 1);
        t.node("s", Role::Host);
        t.node("r", Role::Router);
        t.node("d", Role::Host);
        t.link("s", "r", d, d);
        t.link("r", "d", d, d);
        t
    }

    #[test]
    fn node_commands_route_through_the_router() {
        let t = chain();
        let s = node_commands(&t, 0);
        assert!(
            s.contains(&"addr add 198.18.0.1/24 dev pep0".to_string()),
            "{s:?}"
        );
        assert!(s.contains(
            &"neigh replace 198.18.0.2 lladdr 02:70:65:00:00:02 dev pep0 nud permanent".to_string()
        ));
        assert!(s.contains(&"route replace 198.18.1.2/32 via 198.18.0.2 dev pep0".to_string()));
        // The router's address on the s-r link is connected: no route.
        assert!(!s.iter().any(|c| c.starts_with("route replace 198.18.0.2")));
        let dcmds = node_commands(&t, 2);
        assert!(dcmds.contains(&"route replace 198.18.0.1/32 via 198.18.1.1 dev pep1".to_string()));
        // The router is directly attached to both: only connected routes.
        assert!(!node_commands(&t, 1).iter().any(|c| c.starts_with("route")));
        let s6 = node_commands6(&t, 0);
        assert!(s6.contains(&"addr add fd70:6570:0:0::1/64 dev pep0 nodad".replace("0:0::", ":")));
        assert!(
            s6.contains(&"route replace fd70:6570:1::2/128 via fd70:6570::2 dev pep0".to_string()),
            "{s6:?}"
        );
        assert!(!node_commands6(&t, 1).iter().any(|c| c.starts_with("route")));
    }

    #[test]
    fn route_tcp_settings_ride_on_the_routes_to_that_node_only() {
        let mut t = chain();
        t.route_tcp.push(crate::topology::RouteTcp {
            from: 0,
            to: 2,
            initcwnd: Some(4),
            ..Default::default()
        });
        t.route_tcp.push(crate::topology::RouteTcp {
            from: 2,
            to: 0,
            initrwnd: Some(40),
            quickack: true,
            ..Default::default()
        });
        t.route_tcp.push(crate::topology::RouteTcp {
            from: 1,
            to: 2,
            initcwnd: Some(20),
            ..Default::default()
        });
        t.validate().unwrap();
        let s = node_commands(&t, 0);
        assert!(
            s.contains(
                &"route replace 198.18.1.2/32 via 198.18.0.2 dev pep0 initcwnd 4".to_string()
            ),
            "{s:?}"
        );
        let dcmds = node_commands(&t, 2);
        assert!(dcmds.contains(
            &"route replace 198.18.0.1/32 via 198.18.1.1 dev pep1 initrwnd 40 quickack 1"
                .to_string()
        ));
        // A neighbour on a shared subnet gets a host route of its own.
        let r = node_commands(&t, 1);
        assert!(
            r.contains(&"route replace 198.18.1.2/32 dev pep1 initcwnd 20".to_string()),
            "{r:?}"
        );
        assert_eq!(r.iter().filter(|c| c.starts_with("route")).count(), 1);
        // Two settings for one pair of nodes: refused.
        t.route_tcp.push(crate::topology::RouteTcp {
            from: 0,
            to: 2,
            ..Default::default()
        });
        assert!(t
            .validate()
            .unwrap_err()
            .to_string()
            .contains("a second setting"));
    }
}
