//! Lab harness for the daemon's root tests: client - proxy - server, the
//! daemon running in the proxy's namespace with its TPROXY rules installed
//! there, sockets opened inside node namespaces.
#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration as StdDuration;

use pep_daemon::{config, Daemon, StartOptions};
use pep_lab::netns;
use pep_lab::{DirParams, Endpoint, Lab, LabOptions, LabTopology, Role};

static SERIAL: Mutex<()> = Mutex::new(());

/// The lock. The tests taking it are `#[ignore = "needs root"]`; run
/// anyway without root, they fail here saying why.
pub fn root_test(name: &str) -> MutexGuard<'static, ()> {
    pep_lab::error::require_root_for_test(name);
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Link 0: client - proxy (`client_side` both ways); link 1: proxy - server.
pub fn three_nodes(name: &str, client_side: DirParams, server_side: DirParams) -> Lab {
    let mut t = LabTopology::new(name, 7);
    t.node("client", Role::Host);
    t.node("proxy", Role::Router);
    t.node("server", Role::Host);
    t.link("client", "proxy", client_side, client_side);
    t.link("proxy", "server", server_side, server_side);
    Lab::up(&t, &LabOptions::default()).expect("lab up")
}

/// client - proxy - server on plain bridged wires (no emulator): for tests
/// of the proxy itself, not of a link.
pub fn wired_three(name: &str) -> Lab {
    let mut t = LabTopology::new(name, 7);
    t.node("client", Role::Host);
    t.node("proxy", Role::Router);
    t.node("server", Role::Host);
    t.wire("client", "proxy");
    t.wire("proxy", "server");
    Lab::up(&t, &LabOptions::default()).expect("lab up")
}

/// client - start - long link - end - server, the two-node PEP's lab:
/// `long` both ways between start and end. The access segments are
/// bridged, not emulated: an emulator per segment would forward the same
/// traffic through user space again, and the CPU it takes is the tunnel's
/// (the 2-core machine was 85-95 % busy with six emulated directions at
/// 100 Mbit/s).
pub fn split_pair_lab(name: &str, long: DirParams) -> Lab {
    let mut t = LabTopology::new(name, 7);
    t.node("client", Role::Host);
    t.node("start", Role::Router);
    t.node("end", Role::Router);
    t.node("server", Role::Host);
    t.wire("client", "start");
    t.link("start", "end", long, long);
    t.wire("end", "server");
    Lab::up(&t, &LabOptions::default()).expect("lab up")
}

pub struct Nodes {
    pub client: Endpoint,
    pub proxy: Endpoint,
    pub server: Endpoint,
}

pub fn nodes(lab: &Lab) -> Nodes {
    Nodes {
        client: lab.endpoint("client").unwrap(),
        proxy: lab.endpoint("proxy").unwrap(),
        server: lab.endpoint("server").unwrap(),
    }
}

/// Interface of the proxy on link `i` (0: client side, 1: server side).
pub fn proxy_if(i: usize) -> String {
    pep_lab::topology::node_ifname(i)
}

/// A config intercepting connections from `subnet` arriving on `iface`.
pub fn config(iface: &str, subnet: &str, extra: &str) -> String {
    format!(
        "[proxy]\nipv6 = false\nconnect_timeout = \"2s\"\ndrain_timeout = \"2s\"\n{extra}\n\
         [intercept]\ninterfaces = [\"{iface}\"]\nsubnets = [\"{subnet}\"]\n"
    )
}

/// Starts the daemon inside the proxy's namespace, rules installed there.
pub fn start_proxy(proxy: &Endpoint, toml: &str) -> Result<Daemon, String> {
    let s = config::parse(toml, "test.toml").map_err(|e| e.to_string())?;
    let opts = StartOptions {
        install_rules: true,
        ..StartOptions::default()
    };
    start_in(proxy, s, opts)
}

/// Starts the daemon with `s` and `opts` inside the proxy's namespace.
pub fn start_in(
    proxy: &Endpoint,
    s: config::Settings,
    opts: StartOptions,
) -> Result<Daemon, String> {
    let ns = proxy.netns.clone();
    std::thread::scope(|sc| {
        sc.spawn(|| {
            netns::enter(&ns).map_err(|e| e.to_string())?;
            Daemon::start(s, opts)
        })
        .join()
        .unwrap_or_else(|_| Err("start panicked".into()))
    })
}

pub fn listen(node: &Endpoint, port: u16) -> TcpListener {
    let addr = SocketAddr::from((node.addr, port));
    netns::in_netns(&node.netns, || {
        TcpListener::bind(addr).map_err(|e| pep_lab::LabError::Traffic(e.to_string()))
    })
    .expect("listen")
}

pub fn connect(node: &Endpoint, to: Ipv4Addr, port: u16) -> io::Result<TcpStream> {
    let addr = SocketAddr::from((to, port));
    netns::in_netns(&node.netns, || {
        TcpStream::connect_timeout(&addr, StdDuration::from_secs(5))
            .map_err(|e| pep_lab::LabError::Traffic(e.to_string()))
    })
    .map_err(|e| io::Error::other(e.to_string()))
    .and_then(|s| {
        s.set_read_timeout(Some(StdDuration::from_secs(20)))?;
        s.set_write_timeout(Some(StdDuration::from_secs(20)))?;
        Ok(s)
    })
}

pub fn accept(l: &TcpListener) -> TcpStream {
    let (s, _) = l.accept().expect("accept");
    s.set_read_timeout(Some(StdDuration::from_secs(20)))
        .unwrap();
    s.set_write_timeout(Some(StdDuration::from_secs(20)))
        .unwrap();
    s
}

/// Reads to the end of the stream.
pub fn read_all(s: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    s.read_to_end(&mut v)?;
    Ok(v)
}

pub fn write_all(s: &mut TcpStream, data: &[u8]) -> io::Result<()> {
    s.write_all(data)
}

/// One short exchange as a load generator makes it: connects to `to`,
/// sends `k` and a FIN, and reads the reply to its end, which must start
/// with `!k`. Returns how long the connect took and the reply's bytes
/// after `!k`.
pub fn request_reply(to: SocketAddr, k: u64) -> Result<(StdDuration, Vec<u8>), String> {
    let t = std::time::Instant::now();
    let mut c =
        TcpStream::connect_timeout(&to, StdDuration::from_secs(5)).map_err(|e| e.to_string())?;
    let took = t.elapsed();
    c.set_read_timeout(Some(StdDuration::from_secs(10)))
        .unwrap();
    c.write_all(&k.to_be_bytes()).map_err(|e| e.to_string())?;
    c.shutdown(std::net::Shutdown::Write)
        .map_err(|e| e.to_string())?;
    let mut reply = Vec::new();
    c.read_to_end(&mut reply).map_err(|e| e.to_string())?;
    match reply.strip_prefix(&(!k).to_be_bytes()) {
        Some(rest) => Ok((took, rest.to_vec())),
        None => Err(format!("reply {reply:?} to request {k}")),
    }
}

/// Closes with a RST.
pub fn reset(s: TcpStream) {
    socket2::SockRef::from(&s)
        .set_linger(Some(StdDuration::ZERO))
        .unwrap();
    drop(s);
}

/// Resident memory of this process, bytes.
pub fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|k| k.parse::<u64>().ok())
        .map_or(0, |k| k * 1024)
}

/// Waits until `f` holds, up to `secs`.
pub fn wait_for(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < StdDuration::from_secs(secs) {
        if f() {
            return true;
        }
        std::thread::sleep(StdDuration::from_millis(20));
    }
    f()
}

/// `n` bulk uploads from the lab's `client` to its `server`, `secs` long,
/// on ports 6000.. with seeds 1.. (the tunnel tests' workload).
pub fn bulk_uploads(lab: &Lab, n: usize, secs: u64) -> Vec<pep_lab::traffic::FlowSpec> {
    let client = lab.endpoint("client").unwrap();
    let server = lab.endpoint("server").unwrap();
    (0..n)
        .map(|k| pep_lab::traffic::FlowSpec {
            port: 6000 + k as u16,
            seed: k as u64 + 1,
            ..pep_lab::traffic::FlowSpec::new(
                &format!("f{k}"),
                client.clone(),
                server.clone(),
                pep_lab::traffic::Amount::For(pep_core::Duration::from_secs(secs)),
            )
        })
        .collect()
}

/// The emulated link direction `name`'s busy time and the time elapsed,
/// now (utilisation between two readings is the ratio of differences).
pub fn busy(lab: &Lab, name: &str) -> (u64, pep_core::Duration) {
    let r = lab.link_reports();
    let d = r.iter().find(|d| d.name == name).unwrap();
    (d.link.busy_ns, d.elapsed)
}

/// A permanent neighbour entry on `node`: the address of end `gw_side` of
/// `link` (IPv6 if `v6`) resolves to `mac`. With a bump in the wire, each
/// host's gateway resolves to the other host's MAC.
pub fn static_neighbour(
    lab: &Lab,
    node: &str,
    link: usize,
    gw_side: usize,
    mac: [u8; 6],
    v6: bool,
) {
    use pep_lab::topology::{link_addr, link_addr6, mac_string, node_ifname};
    let ns = lab.endpoint(node).unwrap().netns;
    let addr = if v6 {
        link_addr6(link, gw_side).to_string()
    } else {
        link_addr(link, gw_side).to_string()
    };
    let family = if v6 { "-6" } else { "-4" };
    netns::ip(&[
        "-n",
        &ns,
        family,
        "neigh",
        "replace",
        &addr,
        "lladdr",
        &mac_string(mac),
        "dev",
        &node_ifname(link),
        "nud",
        "permanent",
    ])
    .expect("neighbour");
}

/// Starts a packet-mode daemon in `node`'s namespace, with the kernel's
/// forwarding off there (the daemon alone moves frames across).
pub fn start_packet_daemon(
    lab: &Lab,
    node: &str,
    settings: &pep_daemon::packet::PacketSettings,
) -> (
    pep_daemon::packet::PacketDaemon,
    std::sync::Arc<pep_daemon::metrics::Metrics>,
) {
    let m = std::sync::Arc::new(pep_daemon::metrics::Metrics::default());
    let ns = lab.endpoint(node).unwrap().netns;
    let d = std::thread::scope(|sc| {
        sc.spawn(|| {
            netns::enter(&ns).map_err(|e| e.to_string())?;
            netns::write_sysctl("net/ipv4/ip_forward", "0").map_err(|e| e.to_string())?;
            // Absent when the lab has no IPv6.
            let _ = netns::write_sysctl("net/ipv6/conf/all/forwarding", "0");
            pep_daemon::packet::PacketDaemon::start(settings, m.clone())
        })
        .join()
        .unwrap()
    })
    .expect("packet daemon");
    (d, m)
}

/// Asserts every flow arrived byte-exact; returns each flow's goodput
/// (Mbit/s) between `from` and `to` seconds.
pub fn exact_goodputs(report: &pep_lab::traffic::TrafficReport, from: u64, to: u64) -> Vec<f64> {
    for f in &report.flows {
        assert!(f.error.is_none(), "{}: {:?}", f.name, f.error);
        assert!(f.byte_exact(), "{} not byte-exact", f.name);
    }
    report
        .flows
        .iter()
        .map(|f| {
            let (a, b) = (
                pep_core::Duration::from_secs(from),
                pep_core::Duration::from_secs(to),
            );
            f.goodput_between(report.interval, a, b).as_bps() as f64 / 1e6
        })
        .collect()
}

/// Jain's fairness index of `rates`.
pub fn jain(rates: &[f64]) -> f64 {
    let sum: f64 = rates.iter().sum();
    let sq: f64 = rates.iter().map(|r| r * r).sum();
    sum * sum / (rates.len() as f64 * sq)
}

/// split-start on node `start` and split-end on node `end` of a
/// client - start - end - server lab, with keys in `dir` (`tunnel::keygen`
/// for "start" and "end"); `start_extra` is appended to split-start's
/// config. Returns once the tunnel is up.
pub fn tunnel_pair(
    lab: &Lab,
    dir: &std::path::Path,
    start_extra: &str,
) -> (pep_daemon::Daemon, pep_daemon::Daemon) {
    tunnel_pair_cc(lab, dir, "cubic-flows", start_extra)
}

/// [`tunnel_pair`] with both ends' tunnel congestion control `cc`.
pub fn tunnel_pair_cc(
    lab: &Lab,
    dir: &std::path::Path,
    cc: &str,
    start_extra: &str,
) -> (pep_daemon::Daemon, pep_daemon::Daemon) {
    tunnel_pair_with(lab, dir, cc, "", start_extra)
}

/// [`tunnel_pair_cc`] with `proxy_extra` in split-start's `[proxy]`.
pub fn tunnel_pair_with(
    lab: &Lab,
    dir: &std::path::Path,
    cc: &str,
    proxy_extra: &str,
    start_extra: &str,
) -> (pep_daemon::Daemon, pep_daemon::Daemon) {
    let (start_cfg, end_cfg) = tunnel_configs(lab, dir, cc, proxy_extra, start_extra);
    let end = start_proxy(&lab.endpoint("end").unwrap(), &end_cfg).expect("split-end");
    let start = start_proxy(&lab.endpoint("start").unwrap(), &start_cfg).expect("split-start");
    let sm = start.metrics().clone();
    assert!(
        wait_for(10, || {
            sm.tunnel.up.load(std::sync::atomic::Ordering::Relaxed) == 1
        }),
        "tunnel up"
    );
    (start, end)
}

/// split-start's and split-end's configurations of [`tunnel_pair_with`].
pub fn tunnel_configs(
    lab: &Lab,
    dir: &std::path::Path,
    cc: &str,
    proxy_extra: &str,
    start_extra: &str,
) -> (String, String) {
    let d = dir.display();
    let client = lab.endpoint("client").unwrap();
    let server = lab.endpoint("server").unwrap();
    let end_addr = lab.state().nodes[2].addrs[0];
    let start_cfg = format!(
        "{}[tunnel]\nrole = \"split-start\"\npeer = \"{end_addr}:4433\"\ncc = \"{cc}\"\n\
         cert = \"{d}/start.pem\"\nkey = \"{d}/start.key\"\npeer_cert = \"{d}/end.pem\"\n{start_extra}",
        config(&proxy_if(0), &format!("{}/32", client.addr), proxy_extra)
    );
    let end_cfg = format!(
        "[proxy]\nipv6 = false\n[tunnel]\nrole = \"split-end\"\nlisten = \"0.0.0.0:4433\"\ncc = \"{cc}\"\n\
         allow = [\"{}/32\"]\ncert = \"{d}/end.pem\"\nkey = \"{d}/end.key\"\npeer_cert = \"{d}/start.pem\"\n",
        server.addr
    );
    (start_cfg, end_cfg)
}

/// `ss -tinH` for `node`'s established TCP sockets matching `filter` (an
/// ss filter expression, e.g. "( dport = :7000 )").
pub fn ss_established(node: &Endpoint, filter: &str) -> String {
    let out = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            &node.netns,
            "ss",
            "-tinH",
            "state",
            "established",
        ])
        .arg(filter)
        .output()
        .expect("ss");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
