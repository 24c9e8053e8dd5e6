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

#[test]
#[ignore = "needs root"]
fn runs_as_nobody_with_two_capabilities_and_cleans_up() {
    pep_lab::error::require_root_for_test("runs_as_nobody_with_two_capabilities_and_cleans_up");
    let d = DirParams::new(Rate::mbps(100), Duration::from_millis(1), 1000);
    let mut t = LabTopology::new("cli-priv", 7);
    t.node("client", Role::Host);
    t.node("proxy", Role::Router);
    t.node("server", Role::Host);
    t.link("client", "proxy", d, d);
    t.link("proxy", "server", d, d);
    let lab = Lab::up(&t, &LabOptions::default()).expect("lab up");
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
