//! `pep proxy check --system`: what this host must provide for a
//! configuration, checked before it runs, each finding saying what is
//! missing and how to get it. The configuration's own validity is
//! `proxy::preflight`; this is the host: the kernel's TPROXY and socket
//! match (the rules, dry-run in the kernel), the congestion controls,
//! interfaces up, forwarding, a route back to each client subnet, and the
//! descriptor limit.

use std::net::IpAddr;
use std::process::Command;

use crate::config::{Backend, Settings};
use crate::{net, rules};

/// One finding: `Ok` what holds, `Err` what is missing and the fix.
pub type Finding = Result<String, String>;

pub fn check(s: &Settings) -> Vec<Finding> {
    let mut f = Vec::new();
    // The rules as the daemon would install them, checked by the kernel
    // without being applied (`nft -c`): fails naming tproxy or socket when
    // the kernel lacks nft_tproxy / nft_socket.
    match s.backend {
        Backend::Nft => f.push(
            rules::run(
                "nft",
                &["-c".into(), "-f".into(), "-".into()],
                Some(&rules::nft_script(s)),
            )
            .map(|()| "nftables: the kernel accepts the rules (tproxy, socket match)".into())
            .map_err(|e| {
                format!(
                    "nftables: the kernel refuses the rules: {e} (load nft_tproxy and nft_socket, \
                     or run as root to check)"
                )
            }),
        ),
        Backend::Iptables => f.push(
            std::fs::read_to_string("/proc/net/ip_tables_matches")
                .ok()
                .filter(|m| m.lines().any(|l| l.trim() == "socket"))
                .map(|_| "iptables: the socket match is loaded".into())
                .ok_or_else(|| {
                    "iptables: no socket match in /proc/net/ip_tables_matches \
                     (modprobe xt_socket xt_TPROXY)"
                        .into()
                }),
        ),
    }
    for (field, cc) in s.cc_names() {
        f.push(
            net::check_cc(&cc)
                .map(|()| format!("{field}: congestion control {cc} available"))
                .map_err(|e| format!("{field}: {e}")),
        );
    }
    for name in &s.interfaces {
        let state = std::fs::read_to_string(format!("/sys/class/net/{name}/operstate"));
        f.push(match state.as_deref().map(str::trim) {
            Err(_) => Err(format!("interface {name}: not on this host")),
            Ok("down") => Err(format!("interface {name}: down (ip link set {name} up)")),
            Ok(st) => Ok(format!("interface {name}: {st}")),
        });
    }
    if s.fast_open {
        f.push(match net::fast_open_sysctl() {
            Some((true, true)) => Ok("proxy.fast_open: net.ipv4.tcp_fastopen has both bits".into()),
            _ => Err(
                "proxy.fast_open: net.ipv4.tcp_fastopen lacks the client (1) or server (2) \
                      bit: Fast Open stays off on that leg (sysctl -w net.ipv4.tcp_fastopen=3)"
                    .into(),
            ),
        });
    }
    let mut families = vec![("ipv4", "/proc/sys/net/ipv4/ip_forward")];
    if s.ipv6 {
        families.push(("ipv6", "/proc/sys/net/ipv6/conf/all/forwarding"));
    }
    for (fam, path) in families {
        f.push(
            match std::fs::read_to_string(path).as_deref().map(str::trim) {
                Ok("1") => Ok(format!("{fam} forwarding on")),
                _ => Err(format!(
                    "{fam} forwarding off: connections the proxy does not take are not routed \
                 (sysctl -w {}=1)",
                    path.trim_start_matches("/proc/sys/").replace('/', ".")
                )),
            },
        );
    }
    for c in &s.subnets {
        f.push(
            route_to(c.addr)
                .map(|via| format!("route to clients {c}: {via}"))
                .map_err(|e| {
                    format!("route to clients {c}: none ({e}): replies to them cannot leave")
                }),
        );
    }
    let need = s.max_connections as u64 * s.fds_per_connection() + 64;
    let hard = hard_nofile();
    f.push(if hard >= need {
        Ok(format!(
            "descriptors: hard limit {hard} holds max_connections ({need} needed)"
        ))
    } else {
        Err(format!(
            "descriptors: hard limit {hard} < {need} for max_connections = {} \
             (LimitNOFILE={need}, or max_connections is lowered at start)",
            s.max_connections
        ))
    });
    f
}

/// The route the kernel would take to `ip`.
fn route_to(ip: IpAddr) -> Result<String, String> {
    let out = Command::new("ip")
        .args(["-o", "route", "get", &ip.to_string()])
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

fn hard_nofile() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into `r`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0 {
        r.rlim_max
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_interface_and_congestion_control_are_named() {
        let s = crate::config::parse(
            "[intercept]\ninterfaces = [\"lo\", \"pepnosuch0\"]\nsubnets = [\"127.0.0.0/8\"]\n\
             [server_leg]\ncc = \"nosuchcc\"\n",
            "f",
        )
        .unwrap();
        let f = check(&s);
        let missing: Vec<&String> = f.iter().filter_map(|x| x.as_ref().err()).collect();
        assert!(
            missing.iter().any(|m| m.contains("pepnosuch0")),
            "{missing:?}"
        );
        assert!(
            missing.iter().any(|m| m.contains("nosuchcc")),
            "{missing:?}"
        );
        assert!(
            f.iter()
                .any(|x| x.as_ref().is_ok_and(|o| o.starts_with("interface lo"))),
            "{f:?}"
        );
        assert!(
            f.iter().any(|x| x
                .as_ref()
                .is_ok_and(|o| o.contains("route to clients 127.0.0.0/8"))),
            "{f:?}"
        );
    }
}
