//! Root test of `pep proxy run` as its own process, as systemd would run
//! it: it sets up as root, becomes `nobody` keeping only CAP_NET_ADMIN and
//! CAP_NET_RAW, relays traffic, and on SIGTERM still removes its rules
//! (the `nft` it runs inherits CAP_NET_ADMIN as an ambient capability).
//! Needs root (`#[ignore]`d; as root add `-- --include-ignored`). Uses a
//! lab's namespaces only.
#![cfg(feature = "daemon")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration as StdDuration, Instant};

use pep_core::{Duration, Rate};
use pep_lab::{netns, DirParams, Lab, LabOptions, LabTopology, Role};

fn in_ns<T: Send>(ns: &str, f: impl FnOnce() -> std::io::Result<T> + Send) -> T {
    netns::in_netns(ns, || {
        f().map_err(|e| pep_lab::LabError::Traffic(e.to_string()))
    })
    .unwrap()
}

fn status_field(pid: u32, key: &str) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(key))
        .map(|v| v.trim().to_string())
}

fn nft_tables(ns: &str) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "nft", "list", "tables"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// client - proxy - server over 100 Mbit/s, 1 ms links.
fn three_nodes(name: &str) -> Lab {
    let d = DirParams::new(Rate::mbps(100), Duration::from_millis(1), 1000);
    let mut t = LabTopology::new(name, 7);
    t.node("client", Role::Host);
    t.node("proxy", Role::Router);
    t.node("server", Role::Host);
    t.link("client", "proxy", d, d);
    t.link("proxy", "server", d, d);
    Lab::up(&t, &LabOptions::default()).expect("lab up")
}

#[test]
#[ignore = "needs root"]
fn runs_as_nobody_with_two_capabilities_and_cleans_up() {
    pep_lab::error::require_root_for_test("runs_as_nobody_with_two_capabilities_and_cleans_up");
    let lab = three_nodes("cli-priv");
    let client = lab.endpoint("client").unwrap();
    let proxy = lab.endpoint("proxy").unwrap();
    let server = lab.endpoint("server").unwrap();

    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("pep.toml");
    std::fs::write(
        &cfg,
        format!(
            "[proxy]\nipv6 = false\nuser = \"nobody\"\ndrain_timeout = \"1s\"\n\
             [intercept]\ninterfaces = [\"{}\"]\nsubnets = [\"{}/32\"]\n",
            pep_lab::topology::node_ifname(0),
            client.addr
        ),
    )
    .unwrap();
    // `ip netns exec` execs the command: the child's pid is the proxy's.
    let mut child = Command::new("ip")
        .args(["netns", "exec", &proxy.netns, env!("CARGO_BIN_EXE_pep")])
        .args(["proxy", "run", "--install-rules", "--config"])
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let pid = child.id();
    let t0 = Instant::now();
    while status_field(pid, "Uid:").as_deref() != Some("65534\t65534\t65534\t65534") {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the proxy exited early"
        );
        assert!(
            t0.elapsed() < StdDuration::from_secs(10),
            "no switch to nobody"
        );
        std::thread::sleep(StdDuration::from_millis(20));
    }
    // CAP_NET_ADMIN (12) and CAP_NET_RAW (13), nothing else; NET_ADMIN
    // ambient for the rule tools; the bounding set cut to the same two.
    assert_eq!(status_field(pid, "CapEff:").unwrap(), "0000000000003000");
    assert_eq!(status_field(pid, "CapPrm:").unwrap(), "0000000000003000");
    assert_eq!(status_field(pid, "CapAmb:").unwrap(), "0000000000001000");
    assert_eq!(status_field(pid, "CapBnd:").unwrap(), "0000000000003000");
    assert!(
        nft_tables(&proxy.netns).contains("pepkit"),
        "rules installed"
    );

    // It relays, byte-exact, as nobody (server legs need SO_MARK:
    // CAP_NET_ADMIN in use).
    let addr = SocketAddr::from((server.addr, 7100));
    let l = in_ns(&server.netns, || TcpListener::bind(addr));
    let mut c = in_ns(&client.netns, || {
        TcpStream::connect_timeout(&addr, StdDuration::from_secs(5))
    });
    c.set_read_timeout(Some(StdDuration::from_secs(20)))
        .unwrap();
    let (mut s, peer) = l.accept().unwrap();
    assert_ne!(
        peer.ip(),
        std::net::IpAddr::V4(client.addr),
        "split by the proxy"
    );
    let data: Vec<u8> = (0..2_000_000u32).map(|i| (i * 31 % 255) as u8).collect();
    s.write_all(&data).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut got = Vec::new();
    c.read_to_end(&mut got).unwrap();
    assert!(
        got == data,
        "byte-exact ({} of {} bytes)",
        got.len(),
        data.len()
    );
    drop((c, s));

    // SIGTERM: drains, removes the rules (as nobody), exits 0.
    // SAFETY: signalling our child.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(
        !nft_tables(&proxy.netns).contains("pepkit"),
        "rules removed"
    );
    let rules = Command::new("ip")
        .args(["netns", "exec", &proxy.netns, "ip", "rule"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&rules.stdout).contains("fwmark"),
        "policy rule removed"
    );
    lab.down().unwrap();
}

/// The pids of `pid`'s children.
fn children(pid: u32) -> Vec<u32> {
    // By each process's parent (gVisor has no /proc/PID/task/PID/children).
    let want = pid.to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| status_field(p, "PPid:").as_deref() == Some(want.as_str()))
        .collect()
}

/// Kills a proxy this test started when the test ends early (a panic):
/// the new process is not our child, nothing else would stop it.
struct Stop(u32);

impl Drop for Stop {
    fn drop(&mut self) {
        let cmd = std::fs::read_to_string(format!("/proc/{}/cmdline", self.0)).unwrap_or_default();
        if cmd.contains("proxy") {
            // SAFETY: signalling a proxy this test started.
            unsafe { libc::kill(self.0 as i32, libc::SIGKILL) };
        }
    }
}

/// One request byte, one reply byte (the server adds 1).
fn exchange(c: &mut TcpStream, b: u8) -> std::io::Result<u8> {
    c.write_all(&[b])?;
    let mut r = [0u8];
    c.read_exact(&mut r)?;
    Ok(r[0])
}

/// SIGUSR2, as `systemctl kill -s USR2` sends it: the running proxy starts
/// its own command line as `pep proxy upgrade`, which takes the listeners
/// and the rules; the old process keeps its connection until it closes,
/// then exits; the new one serves new connections and, on SIGTERM,
/// removes the rules it inherited.
#[test]
#[ignore = "needs root"]
fn sigusr2_upgrades_to_a_new_process_without_dropping_a_connection() {
    pep_lab::error::require_root_for_test(
        "sigusr2_upgrades_to_a_new_process_without_dropping_a_connection",
    );
    let lab = three_nodes("cli-upg");
    let (client, proxy, server) = (
        lab.endpoint("client").unwrap(),
        lab.endpoint("proxy").unwrap(),
        lab.endpoint("server").unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("pep.toml");
    std::fs::write(
        &cfg,
        format!(
            "[proxy]\nipv6 = false\ndrain_timeout = \"30s\"\n\
             [intercept]\ninterfaces = [\"{}\"]\nsubnets = [\"{}/32\"]\n",
            pep_lab::topology::node_ifname(0),
            client.addr
        ),
    )
    .unwrap();
    let sock = dir.path().join("upgrade.sock");
    let mut old = Command::new("ip")
        .args(["netns", "exec", &proxy.netns, env!("CARGO_BIN_EXE_pep")])
        .args(["proxy", "run", "--install-rules", "--config"])
        .arg(&cfg)
        .arg("--upgrade-socket")
        .arg(&sock)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let old_pid = old.id();
    let _stop_old = Stop(old_pid);
    let addr = SocketAddr::from((server.addr, 7110));
    let l = in_ns(&server.netns, || TcpListener::bind(addr));
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut b = [0u8];
                while s.read_exact(&mut b).is_ok() {
                    if s.write_all(&[b[0].wrapping_add(1)]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let connect = || {
        let c = in_ns(&client.netns, || {
            TcpStream::connect_timeout(&addr, StdDuration::from_secs(5))
        });
        c.set_read_timeout(Some(StdDuration::from_secs(10)))
            .unwrap();
        c
    };
    let t0 = Instant::now();
    while !sock.exists() {
        assert!(old.try_wait().unwrap().is_none(), "the proxy exited early");
        assert!(
            t0.elapsed() < StdDuration::from_secs(10),
            "no upgrade socket"
        );
        std::thread::sleep(StdDuration::from_millis(20));
    }
    let mut before = connect();
    assert_eq!(exchange(&mut before, 1).unwrap(), 2);

    // SAFETY: signalling our child.
    assert_eq!(unsafe { libc::kill(old_pid as i32, libc::SIGUSR2) }, 0);
    let t0 = Instant::now();
    let new_pid = loop {
        if let Some(&p) = children(old_pid).first() {
            break p;
        }
        assert!(old.try_wait().unwrap().is_none(), "the old process exited");
        assert!(t0.elapsed() < StdDuration::from_secs(10), "no new process");
        std::thread::sleep(StdDuration::from_millis(20));
    };
    let _stop_new = Stop(new_pid);
    // The old process stops accepting once the new one is ready; it stays
    // while `before` is open.
    let t0 = Instant::now();
    while std::fs::read_to_string(format!("/proc/{new_pid}/cmdline"))
        .is_ok_and(|c| !c.contains("upgrade"))
    {
        assert!(t0.elapsed() < StdDuration::from_secs(10));
        std::thread::sleep(StdDuration::from_millis(20));
    }
    std::thread::sleep(StdDuration::from_secs(1));
    assert!(
        old.try_wait().unwrap().is_none(),
        "the old process left its connection"
    );
    for k in 0..5u8 {
        let mut c = connect();
        assert_eq!(
            exchange(&mut c, 10 + k).unwrap(),
            11 + k,
            "new connection {k}"
        );
    }
    assert_eq!(
        exchange(&mut before, 3).unwrap(),
        4,
        "the old connection lives"
    );
    drop(before);
    // Drained: the old process exits by itself, leaving the rules.
    let status = old.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(
        nft_tables(&proxy.netns).contains("pepkit"),
        "rules kept for the new process"
    );
    let mut c = connect();
    assert_eq!(exchange(&mut c, 20).unwrap(), 21);
    drop(c);
    // SAFETY: a process we started (through the old one).
    assert_eq!(unsafe { libc::kill(new_pid as i32, libc::SIGTERM) }, 0);
    let t0 = Instant::now();
    while std::path::Path::new(&format!("/proc/{new_pid}")).exists() {
        assert!(
            t0.elapsed() < StdDuration::from_secs(40),
            "the new process did not stop"
        );
        std::thread::sleep(StdDuration::from_millis(50));
    }
    assert!(
        !nft_tables(&proxy.netns).contains("pepkit"),
        "rules removed"
    );
    lab.down().unwrap();
}
