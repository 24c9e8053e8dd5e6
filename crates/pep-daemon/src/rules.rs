//! The interception rules: TPROXY in the mangle prerouting hook for the
//! configured interfaces and client subnets only, and the policy route
//! that delivers marked packets to the local stack.
//!
//! Two kinds of packets are diverted:
//! * packets of connections the proxy already owns transparently (`socket
//!   transparent 1 socket wildcard 0`), which is how replies reach server
//!   legs that kept the client's address. Only sockets bound to one
//!   address: the listener, bound to the wildcard address, would match
//!   every packet to its port from anywhere, and hijack connections to
//!   that port on hosts beyond (issue 38);
//! * new TCP connections from `subnets` arriving on `interfaces`, except to
//!   `bypass` destinations, sent to the proxy's port with `tproxy_mark`.
//!
//! Packets carrying `out_mark` (the proxy's own server legs) are returned
//! first, so a server leg is never intercepted again even where it loops
//! back through this host.
//!
//! Routes that set `initcwnd`/`initrwnd` become routes in a dedicated table
//! (`out_table`) that `out_mark` selects: only server legs use them, and
//! the host's own tables are not touched. Each copies the next hop the host
//! uses for that subnet when the rules are installed (`ip route get`); a
//! destination outside them falls through to the usual tables.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::config::{Backend, Settings};
use crate::net::Cidr;

const TABLE: &str = "pepkit";

fn set(name: &str, ty: &str, cidrs: &[&Cidr]) -> String {
    let elems: Vec<String> = cidrs.iter().map(|c| c.to_string()).collect();
    format!(
        "  set {name} {{ type {ty}; flags interval; elements = {{ {} }} }}\n",
        elems.join(", ")
    )
}

/// The nftables script (`nft -f`).
pub fn nft_script(s: &Settings) -> String {
    let (c4, c6): (Vec<&Cidr>, Vec<&Cidr>) = s.subnets.iter().partition(|c| c.is_v4());
    let (b4, b6): (Vec<&Cidr>, Vec<&Cidr>) = s.bypass.iter().partition(|c| c.is_v4());
    let ifaces: Vec<String> = s.interfaces.iter().map(|i| format!("\"{i}\"")).collect();
    let mut o = format!("table inet {TABLE} {{\n");
    for (name, ty, v) in [
        ("clients4", "ipv4_addr", &c4),
        ("clients6", "ipv6_addr", &c6),
        ("bypass4", "ipv4_addr", &b4),
        ("bypass6", "ipv6_addr", &b6),
    ] {
        if !v.is_empty() {
            o += &set(name, ty, v);
        }
    }
    let (tm, om, port) = (s.tproxy_mark, s.out_mark, s.port);
    o += "  chain prerouting {\n    type filter hook prerouting priority mangle; policy accept;\n";
    o += &format!("    meta mark {om:#x} return\n");
    // `wildcard 0`: not the listener (iptables' socket match skips it
    // unless `--nowildcard`).
    o += &format!(
        "    meta l4proto tcp socket transparent 1 socket wildcard 0 meta mark set {tm:#x} accept\n"
    );
    o += &format!("    iifname != {{ {} }} return\n", ifaces.join(", "));
    if !b4.is_empty() {
        o += "    ip daddr @bypass4 return\n";
    }
    if !b6.is_empty() {
        o += "    ip6 daddr @bypass6 return\n";
    }
    if !c4.is_empty() {
        o += &format!("    ip saddr @clients4 meta l4proto tcp tproxy ip to :{port} meta mark set {tm:#x} accept\n");
    }
    if !c6.is_empty() && s.ipv6 {
        o += &format!("    ip6 saddr @clients6 meta l4proto tcp tproxy ip6 to :{port} meta mark set {tm:#x} accept\n");
    }
    o += "  }\n}\n";
    o
}

/// `ip rule` and `ip route` commands (as argument lists) that route
/// `tproxy_mark` to the local stack, per family in use.
pub fn route_commands(s: &Settings, add: bool) -> Vec<Vec<String>> {
    let mark = format!("{:#x}", s.tproxy_mark);
    let table = s.table.to_string();
    let verb = if add { "add" } else { "del" };
    let mut v = Vec::new();
    let families: &[(&str, &str)] = if s.ipv6 && s.subnets.iter().any(|c| !c.is_v4()) {
        &[("-4", "0.0.0.0/0"), ("-6", "::/0")]
    } else {
        &[("-4", "0.0.0.0/0")]
    };
    for (fam, all) in families {
        let a = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        v.push(a(&[fam, "rule", verb, "fwmark", &mark, "lookup", &table]));
        v.push(a(&[
            fam, "route", verb, "local", all, "dev", "lo", "table", &table,
        ]));
    }
    v
}

/// Routes of `s` with an initial window, as (subnet, initcwnd, initrwnd):
/// the destinations' (`[[route]]`), then the client subnets'
/// (`[client_leg]`).
pub fn window_routes(s: &Settings) -> Vec<(Cidr, Option<u32>, Option<u32>)> {
    let mut v: Vec<_> = s
        .routes
        .iter()
        .filter(|r| r.initcwnd.is_some() || r.initrwnd.is_some())
        .map(|r| (r.dst, r.initcwnd, r.initrwnd))
        .collect();
    let w = s.client_windows;
    if w.is_set() {
        v.extend(s.subnets.iter().map(|c| (*c, w.initcwnd, w.initrwnd)));
    }
    v
}

fn fam(c: &Cidr) -> &'static str {
    if c.is_v4() {
        "-4"
    } else {
        "-6"
    }
}

/// The next hop the host uses toward `c` for a server leg: `via GW dev
/// DEV` (or `dev DEV` on a link), from `ip route get` of its first address.
pub fn next_hop(c: &Cidr, mark: u32) -> Result<Vec<String>, String> {
    let out = Command::new("ip")
        .args([fam(c), "route", "get", &c.addr.to_string(), "mark"])
        .arg(format!("{mark:#x}"))
        .output()
        .map_err(|e| format!("ip route get {}: {e}", c.addr))?;
    if !out.status.success() {
        return Err(format!(
            "ip route get {}: {}",
            c.addr,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let w: Vec<&str> = text.split_whitespace().collect();
    let after = |k: &str| w.iter().position(|x| *x == k).and_then(|i| w.get(i + 1));
    let mut hop = Vec::new();
    if let Some(gw) = after("via") {
        hop.extend(["via".to_string(), gw.to_string()]);
    }
    match after("dev") {
        Some(d) => hop.extend(["dev".to_string(), d.to_string()]),
        None => return Err(format!("ip route get {}: no device in {text:?}", c.addr)),
    }
    Ok(hop)
}

/// `ip` commands for the initial-window routes: the rule sending `out_mark`
/// to `out_table`, and one route per subnet there (`hop` resolves a next
/// hop). Removal is the rule and a flush of the table.
pub fn window_commands(
    s: &Settings,
    add: bool,
    hop: impl Fn(&Cidr) -> Result<Vec<String>, String>,
) -> Result<Vec<Vec<String>>, String> {
    let routes = window_routes(s);
    let mark = format!("{:#x}", s.out_mark);
    let table = s.out_table.to_string();
    let mut v = Vec::new();
    for f in ["-4", "-6"] {
        if !routes.iter().any(|(c, ..)| fam(c) == f) {
            continue;
        }
        let verb = if add { "add" } else { "del" };
        let a = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        v.push(a(&[f, "rule", verb, "fwmark", &mark, "lookup", &table]));
        if !add {
            v.push(a(&[f, "route", "flush", "table", &table]));
        }
    }
    if add {
        for (c, cwnd, rwnd) in routes {
            let mut r: Vec<String> = [fam(&c), "route", "replace", &c.to_string()]
                .map(String::from)
                .into();
            r.extend(hop(&c)?);
            if let Some(n) = cwnd {
                r.extend(["initcwnd".to_string(), n.to_string()]);
            }
            if let Some(n) = rwnd {
                r.extend(["initrwnd".to_string(), n.to_string()]);
            }
            r.extend(["table".to_string(), table.clone()]);
            v.push(r);
        }
    }
    Ok(v)
}

/// iptables/ip6tables commands (for hosts without nftables).
pub fn iptables_commands(s: &Settings) -> Vec<String> {
    let (tm, om, port) = (s.tproxy_mark, s.out_mark, s.port);
    let mut v = Vec::new();
    for (tool, v4) in [("iptables", true), ("ip6tables", false)] {
        let clients: Vec<&Cidr> = s.subnets.iter().filter(|c| c.is_v4() == v4).collect();
        if clients.is_empty() || (!v4 && !s.ipv6) {
            continue;
        }
        let t = format!("{tool} -t mangle");
        v.push(format!("{t} -N PEPKIT"));
        v.push(format!(
            "{t} -A PREROUTING -m mark --mark {om:#x} -j RETURN"
        ));
        v.push(format!(
            "{t} -A PREROUTING -p tcp -m socket --transparent -j MARK --set-mark {tm:#x}"
        ));
        v.push(format!(
            "{t} -A PREROUTING -m mark --mark {tm:#x} -j ACCEPT"
        ));
        for i in &s.interfaces {
            v.push(format!("{t} -A PREROUTING -i {i} -p tcp -j PEPKIT"));
        }
        for b in s.bypass.iter().filter(|c| c.is_v4() == v4) {
            v.push(format!("{t} -A PEPKIT -d {b} -j RETURN"));
        }
        for c in clients {
            v.push(format!(
                "{t} -A PEPKIT -s {c} -p tcp -j TPROXY --on-port {port} --tproxy-mark {tm:#x}/{tm:#x}"
            ));
        }
    }
    v
}

/// split-start's local queue (`[tunnel.local_queue]`): data segments of
/// intercepted flows (`socket --transparent`; SYN, FIN and RST pass) from
/// the client interfaces go to NFQUEUE, in the `raw` table: before the
/// interception rules (mangle), which a packet accepted from the queue
/// goes on to, so TPROXY delivers it as without the queue.
/// `--queue-bypass`: with no daemon serving the queue, packets pass. An
/// iptables rule with either backend: this kernel generation's nftables
/// `queue` statement is often not built (`CONFIG_NFT_QUEUE`), the xtables
/// NFQUEUE target is. `add`: `-I`, else `-D`.
pub fn localq_commands(s: &Settings, add: bool) -> Vec<String> {
    let Some(q) = s.tunnel.as_ref().and_then(|t| t.local_queue.as_ref()) else {
        return Vec::new();
    };
    let verb = if add { "-I" } else { "-D" };
    let mut v = Vec::new();
    for (tool, v4) in [("iptables", true), ("ip6tables", false)] {
        let wanted = v4 || (s.ipv6 && s.subnets.iter().any(|c| !c.is_v4()));
        if !wanted {
            continue;
        }
        for i in &s.interfaces {
            v.push(format!(
                "{tool} -t raw {verb} PREROUTING -i {i} -p tcp --tcp-flags SYN,FIN,RST NONE \
                 -m socket --transparent -j NFQUEUE --queue-num {} --queue-bypass",
                q.nfqueue
            ));
        }
    }
    v
}

/// Everything `pep proxy rules` prints: a shell script.
pub fn render(s: &Settings) -> String {
    let mut o =
        String::from("#!/bin/sh\n# Interception rules for pep proxy (generated).\nset -e\n");
    // The modes `proxy run --install-rules` installs nothing for.
    if s.packet.is_some() {
        o += "# Packet mode intercepts nothing: it takes its packets from the [packet]\n\
              # interfaces itself (docs/packet-mode.md). No rules to install.\n";
        return o;
    }
    if s.tunnel
        .as_ref()
        .is_some_and(|t| t.role == crate::tunnel::Role::SplitEnd)
    {
        o += "# split-end intercepts nothing: its flows arrive through the tunnel.\n\
              # No rules to install.\n";
        return o;
    }
    match s.backend {
        Backend::Nft => {
            o += &format!("nft -f - <<'EOF'\n{}EOF\n", nft_script(s));
        }
        Backend::Iptables => {
            for c in iptables_commands(s) {
                o += &c;
                o.push('\n');
            }
        }
    }
    for c in localq_commands(s, true) {
        o += &c;
        o.push('\n');
    }
    for c in route_commands(s, true) {
        o += &format!("ip {}\n", c.join(" "));
    }
    if !window_routes(s).is_empty() {
        o += "# Initial windows of server legs (next hops as this host routes them now):\n";
        match window_commands(s, true, |c| next_hop(c, s.out_mark)) {
            Ok(cmds) => {
                for c in cmds {
                    o += &format!("ip {}\n", c.join(" "));
                }
            }
            Err(e) => o += &format!("# cannot resolve a next hop here: {e}\n"),
        }
    }
    o += "# Remove with: ";
    o += &match s.backend {
        Backend::Nft => format!("nft delete table inet {TABLE}"),
        Backend::Iptables => {
            "iptables -t mangle -F PREROUTING; iptables -t mangle -X PEPKIT (and ip6tables)".into()
        }
    };
    for c in localq_commands(s, false) {
        o += &format!("; {c}");
    }
    for c in route_commands(s, false) {
        o += &format!("; ip {}", c.join(" "));
    }
    for c in window_commands(s, false, |_| Ok(vec![])).unwrap_or_default() {
        o += &format!("; ip {}", c.join(" "));
    }
    o.push('\n');
    o
}

pub(crate) fn run(cmd: &str, args: &[String], stdin: Option<&str>) -> Result<(), String> {
    let shown = format!("{cmd} {}", args.join(" "));
    let mut child = Command::new(cmd)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{shown}: cannot run {cmd}: {e}"))?;
    if let (Some(text), Some(mut w)) = (stdin, child.stdin.take()) {
        let _ = w.write_all(text.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{shown}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{shown}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Applies the rules (replacing any earlier pepkit table). Needs root.
pub fn install(s: &Settings) -> Result<(), String> {
    let _ = remove(s);
    // All or nothing: rules left half-installed would steer clients'
    // connections to a port nobody listens on.
    install_all(s).map_err(|e| {
        let _ = remove(s);
        format!("{e} (the rules installed before it were removed)")
    })
}

fn install_all(s: &Settings) -> Result<(), String> {
    match s.backend {
        Backend::Nft => run("nft", &["-f".into(), "-".into()], Some(&nft_script(s)))?,
        Backend::Iptables => {
            for c in iptables_commands(s) {
                let mut w = c.split_whitespace().map(String::from);
                let tool = w.next().unwrap_or_default();
                run(&tool, &w.collect::<Vec<_>>(), None)?;
            }
        }
    }
    for c in localq_commands(s, true) {
        let mut w = c.split_whitespace().map(String::from);
        let tool = w.next().unwrap_or_default();
        run(&tool, &w.collect::<Vec<_>>(), None)?;
    }
    for c in route_commands(s, true) {
        run("ip", &c, None)?;
    }
    for c in window_commands(s, true, |c| next_hop(c, s.out_mark))? {
        run("ip", &c, None)?;
    }
    Ok(())
}

/// Removes what [`install`] added; missing pieces are not errors.
pub fn remove(s: &Settings) -> Result<(), String> {
    let mut first_err = None;
    match s.backend {
        Backend::Nft => {
            let args: Vec<String> = ["delete", "table", "inet", TABLE].map(String::from).into();
            let _ = run("nft", &args, None);
        }
        Backend::Iptables => {
            for tool in ["iptables", "ip6tables"] {
                for c in iptables_commands(s)
                    .iter()
                    .filter(|c| c.starts_with(&format!("{tool} ")))
                {
                    let del = c.replacen(" -A ", " -D ", 1);
                    if del != *c {
                        let w: Vec<String> =
                            del.split_whitespace().skip(1).map(String::from).collect();
                        let _ = run(tool, &w, None);
                    }
                }
                let _ = run(
                    tool,
                    &["-t", "mangle", "-X", "PEPKIT"].map(String::from),
                    None,
                );
            }
        }
    }
    for c in localq_commands(s, false) {
        let mut w = c.split_whitespace().map(String::from);
        let tool = w.next().unwrap_or_default();
        let _ = run(&tool, &w.collect::<Vec<_>>(), None);
    }
    for c in route_commands(s, false) {
        if let Err(e) = run("ip", &c, None) {
            first_err.get_or_insert(e);
        }
    }
    for c in window_commands(s, false, |_| Ok(vec![])).unwrap_or_default() {
        let _ = run("ip", &c, None);
    }
    first_err.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;

    fn settings(extra: &str) -> Settings {
        parse(
            &format!(
                "[intercept]\ninterfaces = [\"eth1\", \"wlan0\"]\nsubnets = [\"10.0.0.0/8\", \"fd00::/8\"]\n\
                 bypass = [\"10.9.0.0/16\"]\n{extra}"
            ),
            "t",
        )
        .unwrap()
    }

    #[test]
    fn nft_only_for_configured_interfaces_and_subnets() {
        let t = nft_script(&settings(""));
        assert!(t.contains("iifname != { \"eth1\", \"wlan0\" } return"));
        assert!(t.contains("elements = { 10.0.0.0/8 }"));
        assert!(t.contains(
            "ip saddr @clients4 meta l4proto tcp tproxy ip to :7070 meta mark set 0x1 accept"
        ));
        assert!(t.contains("ip6 saddr @clients6 meta l4proto tcp tproxy ip6 to :7070"));
        assert!(t.contains("ip daddr @bypass4 return"));
        assert!(t.contains("meta mark 0x2 return"));
        // The own-socket rule never matches the wildcard listener: a
        // connection to the proxy's port elsewhere passes untouched.
        assert!(t.contains("socket transparent 1 socket wildcard 0 meta mark set 0x1 accept"));
        // The bypass and own-mark returns come before any tproxy.
        assert!(t.find("@bypass4 return").unwrap() < t.find("tproxy").unwrap());
    }

    #[test]
    fn the_local_queue_rule_runs_before_interception() {
        let tunnel = "[tunnel]\nrole = \"split-start\"\npeer = \"192.0.2.2:4433\"\ncert = \"a\"\nkey = \"b\"\npeer_cert = \"c\"\n";
        assert!(localq_commands(&settings(tunnel), true).is_empty());
        let s = settings(&format!("{tunnel}[tunnel.local_queue]\nnfqueue = 7\n"));
        let add = localq_commands(&s, true);
        // Two interfaces, both families (the client subnets have both).
        assert_eq!(add.len(), 4);
        assert_eq!(
            add[0],
            "iptables -t raw -I PREROUTING -i eth1 -p tcp --tcp-flags SYN,FIN,RST NONE \
             -m socket --transparent -j NFQUEUE --queue-num 7 --queue-bypass"
        );
        assert!(add[3].starts_with("ip6tables -t raw -I PREROUTING -i wlan0 "));
        let del = localq_commands(&s, false);
        assert_eq!(del[0], add[0].replace(" -I ", " -D "));
        let script = render(&s);
        assert!(script.contains(&add[0]) && script.contains(&del[0]));
    }

    #[test]
    fn modes_that_intercept_nothing_print_no_rules() {
        // Before, packet mode and split-end printed a TPROXY script with an
        // empty interface set, which nft rejects.
        let packet = parse("[packet]\na = \"e1\"\nb = \"e2\"\n", "t").unwrap();
        let script = render(&packet);
        assert!(
            script.contains("Packet mode intercepts nothing"),
            "{script}"
        );
        assert!(
            !script.contains("nft") && !script.contains("ip rule"),
            "{script}"
        );
        let end =
            "[tunnel]\nrole = \"split-end\"\nlisten = \"0.0.0.0:4433\"\nallow = [\"0.0.0.0/0\"]\n\
                   cert = \"a\"\nkey = \"b\"\npeer_cert = \"c\"\n";
        let script = render(&parse(end, "t").unwrap());
        assert!(script.contains("split-end intercepts nothing"), "{script}");
        assert!(!script.contains("nft -f"), "{script}");
    }

    #[test]
    fn routes_for_both_families() {
        let r = route_commands(&settings(""), true);
        assert_eq!(r[0].join(" "), "-4 rule add fwmark 0x1 lookup 100");
        assert_eq!(
            r[1].join(" "),
            "-4 route add local 0.0.0.0/0 dev lo table 100"
        );
        assert_eq!(r[3].join(" "), "-6 route add local ::/0 dev lo table 100");
        let s = render(&settings("[proxy]\nipv6 = false\n"));
        assert!(!s.contains("-6 rule") && !s.contains("tproxy ip6"));
    }

    #[test]
    fn initial_windows_go_to_the_out_mark_table() {
        let s = settings(
            "[[route]]\ndst = \"192.0.2.0/24\"\ninitcwnd = 40\ninitrwnd = 60\n\
             [[route]]\ndst = \"198.51.100.0/24\"\nserver_leg = { cc = \"bbr\" }\n",
        );
        let hop = |_: &Cidr| {
            Ok(vec![
                "via".into(),
                "10.0.0.1".into(),
                "dev".into(),
                "eth0".into(),
            ])
        };
        let add: Vec<String> = window_commands(&s, true, hop)
            .unwrap()
            .iter()
            .map(|c| c.join(" "))
            .collect();
        assert_eq!(
            add,
            [
                "-4 rule add fwmark 0x2 lookup 101",
                "-4 route replace 192.0.2.0/24 via 10.0.0.1 dev eth0 initcwnd 40 initrwnd 60 table 101"
            ]
        );
        let del: Vec<String> = window_commands(&s, false, hop)
            .unwrap()
            .iter()
            .map(|c| c.join(" "))
            .collect();
        assert_eq!(
            del,
            [
                "-4 rule del fwmark 0x2 lookup 101",
                "-4 route flush table 101"
            ]
        );
        assert!(window_commands(&settings(""), true, hop)
            .unwrap()
            .is_empty());
        // The client subnets' routes, for the client legs.
        let s = settings("[client_leg]\ninitcwnd = 16\n");
        let add: Vec<String> = window_commands(&s, true, hop)
            .unwrap()
            .iter()
            .map(|c| c.join(" "))
            .collect();
        assert!(add.contains(
            &"-4 route replace 10.0.0.0/8 via 10.0.0.1 dev eth0 initcwnd 16 table 101".to_string()
        ));
        assert!(add.contains(&"-6 rule add fwmark 0x2 lookup 101".to_string()));
    }

    #[test]
    fn iptables_variant() {
        let v = iptables_commands(&settings(""))
            .into_iter()
            .collect::<Vec<_>>()
            .join("\n");
        assert!(v.contains("iptables -t mangle -A PREROUTING -i wlan0 -p tcp -j PEPKIT"));
        assert!(v.contains("-s 10.0.0.0/8 -p tcp -j TPROXY --on-port 7070 --tproxy-mark 0x1/0x1"));
        assert!(v.contains("ip6tables -t mangle -A PEPKIT -s fd00::/8"));
    }
}
