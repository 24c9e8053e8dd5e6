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

/// systemd's notify socket, played by the test: every state line with
/// the pid of the process that sent it (`SCM_CREDENTIALS`, which systemd
/// reads to tell the main process from others), in arrival order.
struct Notices {
    log: std::sync::Arc<std::sync::Mutex<Vec<(u32, String)>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for Notices {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// One datagram and its sender's pid.
fn recv_with_pid(s: &std::os::unix::net::UnixDatagram, buf: &mut [u8]) -> Option<(u32, usize)> {
    use std::os::fd::AsRawFd;
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; 8];
    // SAFETY: a zeroed msghdr pointed at live buffers of the given sizes;
    // the credentials are read only from a header the kernel wrote.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
        let n = libc::recvmsg(s.as_raw_fd(), &mut msg, 0);
        if n < 0 {
            return None;
        }
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_CREDENTIALS {
                let cred = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::ucred);
                return Some((cred.pid as u32, n as usize));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        None
    }
}

impl Notices {
    fn bind(path: &std::path::Path) -> Notices {
        use std::os::fd::AsRawFd;
        let sock = std::os::unix::net::UnixDatagram::bind(path).unwrap();
        let on: libc::c_int = 1;
        // SAFETY: an int option on our own socket.
        let r = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PASSCRED,
                &on as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0, "SO_PASSCRED");
        sock.set_read_timeout(Some(StdDuration::from_millis(50)))
            .unwrap();
        let n = Notices {
            log: Default::default(),
            stop: Default::default(),
        };
        let (log, stop) = (n.log.clone(), n.stop.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some((pid, k)) = recv_with_pid(&sock, &mut buf) {
                    let text = String::from_utf8_lossy(&buf[..k]).into_owned();
                    let mut log = log.lock().unwrap();
                    log.extend(text.lines().map(|l| (pid, l.to_string())));
                }
            }
        });
        n
    }

    fn lines(&self) -> Vec<(u32, String)> {
        self.log.lock().unwrap().clone()
    }

    /// The index of the first line from `from` (any sender if `None`)
    /// that is `line`, waiting up to 10 s for it.
    fn wait_for(&self, from: Option<u32>, line: &str) -> usize {
        let t0 = Instant::now();
        loop {
            let log = self.lines();
            let hit = log
                .iter()
                .position(|(p, l)| l == line && from.is_none_or(|f| f == *p));
            if let Some(i) = hit {
                return i;
            }
            assert!(
                t0.elapsed() < StdDuration::from_secs(10),
                "no {line:?} from {from:?} in {log:?}"
            );
            std::thread::sleep(StdDuration::from_millis(20));
        }
    }

    /// Watchdog pings from `pid` after line `i`.
    fn pings_after(&self, i: usize, pid: u32) -> usize {
        self.lines()[i + 1..]
            .iter()
            .filter(|(p, l)| *p == pid && l == "WATCHDOG=1")
            .count()
    }
}

/// Sends SIGUSR2 to the proxy `pid` and returns the pid of the `pep proxy
/// upgrade` it starts (found by its command line naming `sock`, not as
/// `pid`'s child: a proxy with no connection hands over and exits at once,
/// and its successor passes to init), once that runs.
fn upgrade(pid: u32, sock: &std::path::Path, known: &[u32]) -> u32 {
    // SAFETY: signalling a proxy this test started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGUSR2) }, 0);
    let sock = sock.to_str().unwrap();
    let t0 = Instant::now();
    loop {
        let found = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|p| *p != pid && !known.contains(p))
            .find(|p| {
                let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
                let args: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
                args.contains(&&b"upgrade"[..]) && args.contains(&sock.as_bytes())
            });
        if let Some(p) = found {
            return p;
        }
        assert!(t0.elapsed() < StdDuration::from_secs(10), "no new process");
        std::thread::sleep(StdDuration::from_millis(20));
    }
}

/// SIGUSR2, as `systemctl kill -s USR2` sends it: the running proxy starts
/// its own command line as `pep proxy upgrade`, which takes the listeners
/// and the rules; the old process keeps its connection until it closes,
/// then exits; the new one serves new connections and, on SIGTERM,
/// removes the rules it inherited.
///
/// And what systemd sees (`Type=notify`, `WatchdogSec=`), on a notify
/// socket of the test's own: `READY=1` from the old process; at the
/// hand-over `MAINPID=<the new one>` sent by the old one (the main
/// process, so systemd takes it whatever `NotifyAccess=`, and before the
/// old one can exit: systemd must never see its main process go without
/// a successor) and `READY=1` from the new one; from then on watchdog
/// pings from the new process only (it inherited `WATCHDOG_PID` naming
/// its predecessor, as systemd sets it), none from the draining old one,
/// which never says `STOPPING=1` (that would stop the unit). Twice: the
/// second upgrade starts from a process that was itself an upgrade.
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
    let notices = Notices::bind(&dir.path().join("notify"));
    // As systemd starts a unit with `WatchdogSec=0.2s`: WATCHDOG_PID is
    // the main process's own pid (`exec` keeps the shell's).
    let mut old = Command::new("sh")
        .args(["-c", "export WATCHDOG_PID=$$; exec \"$@\"", "sh"])
        .args([
            "ip",
            "netns",
            "exec",
            &proxy.netns,
            env!("CARGO_BIN_EXE_pep"),
        ])
        .args(["proxy", "run", "--install-rules", "--config"])
        .arg(&cfg)
        .arg("--upgrade-socket")
        .arg(&sock)
        .env("NOTIFY_SOCKET", dir.path().join("notify"))
        .env("WATCHDOG_USEC", "200000")
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
    // Ready once it accepts (the upgrade socket is bound by then).
    let ready = notices.wait_for(Some(old_pid), "READY=1");
    assert!(sock.exists(), "no upgrade socket");
    let mut before = connect();
    assert_eq!(exchange(&mut before, 1).unwrap(), 2);
    notices.wait_for(Some(old_pid), "WATCHDOG=1");
    assert!(notices.pings_after(ready, old_pid) > 0);

    let new_pid = upgrade(old_pid, &sock, &[]);
    let _stop_new = Stop(new_pid);
    // The old process stops accepting once the new one is ready; it stays
    // while `before` is open.
    let main = notices.wait_for(None, &format!("MAINPID={new_pid}"));
    assert_eq!(
        notices.lines()[main].0,
        old_pid,
        "the main process names its successor"
    );
    notices.wait_for(Some(new_pid), "READY=1");
    std::thread::sleep(StdDuration::from_secs(1));
    assert!(
        old.try_wait().unwrap().is_none(),
        "the old process left its connection"
    );
    // Pings every 100 ms; a loaded machine may delay a few.
    let pings = notices.pings_after(main, new_pid);
    assert!(
        pings >= 5,
        "{pings} watchdog pings from the new process in 1 s: {:?}",
        notices.lines()
    );
    assert_eq!(
        notices.pings_after(main, old_pid),
        0,
        "the draining process still feeds the watchdog: {:?}",
        notices.lines()
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

    // Again, from the process that took over: it hands over in turn.
    let newer = upgrade(new_pid, &sock, &[old_pid]);
    let _stop_newer = Stop(newer);
    let main = notices.wait_for(None, &format!("MAINPID={newer}"));
    assert_eq!(notices.lines()[main].0, new_pid);
    notices.wait_for(Some(newer), "READY=1");
    let mut c = connect();
    assert_eq!(exchange(&mut c, 30).unwrap(), 31);
    drop(c);
    let t0 = Instant::now();
    while notices.pings_after(main, newer) < 3 {
        assert!(
            t0.elapsed() < StdDuration::from_secs(5),
            "no watchdog from the second successor: {:?}",
            notices.lines()
        );
        std::thread::sleep(StdDuration::from_millis(20));
    }
    // SAFETY: a process we started (through the others).
    assert_eq!(unsafe { libc::kill(newer as i32, libc::SIGTERM) }, 0);
    let t0 = Instant::now();
    while std::path::Path::new(&format!("/proc/{newer}")).exists() {
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
    // Only the last process stops the unit; those that handed over and
    // exited said nothing of it.
    notices.wait_for(Some(newer), "STOPPING=1");
    let stopping: Vec<u32> = notices
        .lines()
        .into_iter()
        .filter(|(_, l)| l == "STOPPING=1")
        .map(|(p, _)| p)
        .collect();
    assert_eq!(stopping, [newer], "{:?}", notices.lines());
    lab.down().unwrap();
}
