//! Benchmarks of the daemon over plain veth links (no lab emulator), as
//! root. client - proxy - server namespaces (`pepb<pid>-{c,p,s}`, removed at
//! exit), the `pep` binary running `pep proxy run` in the proxy namespace
//! with its TPROXY rules, and measures:
//!
//! * (a) one bulk download over the path rate-limited to 1 Gbit/s (htb on
//!   the proxy's client-facing veth), through the proxy vs direct;
//! * (b) the same unthrottled, with the relay's CPU seconds per GB (the
//!   `pep` process's utime+stime) vs `socat` relaying the same path;
//! * (c) connection setup: connect + first byte from the server, p50/p99
//!   over `--connects` sequential connections, direct vs via the proxy;
//! * (d) (a) and (b) with 100 parallel downloads; and in (b) a plain
//!   splice(2) relay (`bench --splice-relay`, zero-copy) for reference;
//! * (e) the two-node tunnel (split-start and split-end both in the proxy
//!   namespace, the QUIC tunnel over its loopback), cubic and bbr: 1 and
//!   100 downloads, CPU seconds per GB of both ends, memory per flow.
//!
//! ```sh
//! cargo build --release -p pep-cli -p pep-daemon --examples
//! sudo target/release/examples/bench [--pep target/release/pep] [--mb 1000] [--connects 1000]
//! sudo target/release/examples/bench --mb 500 --relay copy   # (a), (b), (d) only, proxy.relay = copy
//! ```

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pep_lab::netns;

type Res<T> = Result<T, String>;

const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 201, 1, 1);
const PROXY_C: Ipv4Addr = Ipv4Addr::new(10, 201, 1, 2);
const PROXY_S: Ipv4Addr = Ipv4Addr::new(10, 201, 2, 1);
const SERVER: Ipv4Addr = Ipv4Addr::new(10, 201, 2, 2);
const BULK_PORT: u16 = 5001;
const FIRST_BYTE_PORT: u16 = 5002;
const SOCAT_PORT: u16 = 7100;
const SPLICE_PORT: u16 = 7101;

/// The three namespaces; deleted on drop (their veths go with them).
struct Topo {
    c: String,
    p: String,
    s: String,
}

impl Drop for Topo {
    fn drop(&mut self) {
        for ns in [&self.c, &self.p, &self.s] {
            let _ = netns::delete(ns);
        }
    }
}

fn ipn(ns: &str, args: &str) -> Res<()> {
    let mut v = vec!["-n", ns];
    v.extend(args.split_whitespace());
    netns::ip(&v).map(|_| ()).map_err(|e| e.to_string())
}

fn topo() -> Res<Topo> {
    let pre = format!("pepb{}", std::process::id());
    let t = Topo {
        c: format!("{pre}-c"),
        p: format!("{pre}-p"),
        s: format!("{pre}-s"),
    };
    for ns in [&t.c, &t.p, &t.s] {
        netns::add(ns).map_err(|e| e.to_string())?;
        ipn(ns, "link set lo up")?;
    }
    ipn(
        &t.c,
        &format!("link add c0 type veth peer name p0 netns {}", t.p),
    )?;
    ipn(
        &t.s,
        &format!("link add s0 type veth peer name p1 netns {}", t.p),
    )?;
    ipn(&t.c, &format!("addr add {CLIENT}/24 dev c0"))?;
    ipn(&t.p, &format!("addr add {PROXY_C}/24 dev p0"))?;
    ipn(&t.p, &format!("addr add {PROXY_S}/24 dev p1"))?;
    ipn(&t.s, &format!("addr add {SERVER}/24 dev s0"))?;
    for (ns, dev) in [(&t.c, "c0"), (&t.p, "p0"), (&t.p, "p1"), (&t.s, "s0")] {
        ipn(ns, &format!("link set {dev} up"))?;
    }
    ipn(&t.c, &format!("route add default via {PROXY_C}"))?;
    ipn(&t.s, &format!("route add default via {PROXY_S}"))?;
    netns::in_netns(&t.p, || netns::write_sysctl("net/ipv4/ip_forward", "1"))
        .map_err(|e| e.to_string())?;
    Ok(t)
}

/// htb at `rate` on the proxy's client-facing veth (the download's
/// bottleneck), or none.
fn throttle(t: &Topo, rate: Option<&str>) -> Res<()> {
    let _ = Command::new("ip")
        .args([
            "netns", "exec", &t.p, "tc", "qdisc", "del", "dev", "p0", "root",
        ])
        .stderr(Stdio::null())
        .status();
    if let Some(rate) = rate {
        for args in [
            "qdisc add dev p0 root handle 1: htb default 1".to_string(),
            format!("class add dev p0 parent 1: classid 1:1 htb rate {rate}"),
        ] {
            let st = Command::new("ip")
                .args(["netns", "exec", &t.p, "tc"])
                .args(args.split_whitespace())
                .status()
                .map_err(|e| format!("tc: {e}"))?;
            if !st.success() {
                return Err(format!("tc {args} failed"));
            }
        }
    }
    Ok(())
}

fn bind(ns: &str, port: u16) -> Res<TcpListener> {
    netns::in_netns(ns, || {
        TcpListener::bind((SERVER, port)).map_err(|e| pep_lab::LabError::Traffic(e.to_string()))
    })
    .map_err(|e| e.to_string())
}

/// The server: on `port` each connection gets `bytes` then EOF.
fn serve(ns: &str, port: u16, bytes: u64) -> Res<()> {
    let bulk = bind(ns, port)?;
    std::thread::spawn(move || {
        for s in bulk.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = s;
                let buf = vec![0x5au8; 1 << 18];
                let mut left = bytes;
                while left > 0 {
                    let k = left.min(buf.len() as u64) as usize;
                    if s.write_all(&buf[..k]).is_err() {
                        return;
                    }
                    left -= k as u64;
                }
            });
        }
    });
    Ok(())
}

/// On `FIRST_BYTE_PORT` each connection gets one byte at once.
fn serve_first_byte(ns: &str) -> Res<()> {
    let fb = bind(ns, FIRST_BYTE_PORT)?;
    std::thread::spawn(move || {
        for mut s in fb.incoming().flatten() {
            let _ = s.write_all(b"!");
        }
    });
    Ok(())
}

/// `n` parallel downloads from `to`; returns (total bytes, seconds).
fn downloads(ns: &str, to: SocketAddr, n: usize, each: u64) -> Res<(u64, f64)> {
    let t0 = Instant::now();
    let got = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..n)
            .map(|_| {
                sc.spawn(move || -> Res<u64> {
                    netns::enter(ns).map_err(|e| e.to_string())?;
                    let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(5))
                        .map_err(|e| format!("connect {to}: {e}"))?;
                    let mut buf = vec![0u8; 1 << 18];
                    let mut total = 0u64;
                    loop {
                        match s.read(&mut buf) {
                            Ok(0) => return Ok(total),
                            Ok(k) => total += k as u64,
                            Err(e) => return Err(format!("read: {e}")),
                        }
                    }
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("panicked".into())))
            .collect::<Res<Vec<u64>>>()
    })?;
    let secs = t0.elapsed().as_secs_f64();
    let total: u64 = got.iter().sum();
    if total != n as u64 * each {
        return Err(format!("got {total} of {} bytes", n as u64 * each));
    }
    Ok((total, secs))
}

/// Connect + first byte, `n` times sequentially; (p50, p99, connect p50) in µs.
fn setup_latency(ns: &str, to: SocketAddr, n: usize) -> Res<(f64, f64, f64)> {
    netns::in_netns(ns, || {
        let mut fb = Vec::with_capacity(n);
        let mut conn = Vec::with_capacity(n);
        for _ in 0..n {
            let t0 = Instant::now();
            let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(5))
                .map_err(|e| pep_lab::LabError::Traffic(format!("connect: {e}")))?;
            conn.push(t0.elapsed().as_secs_f64() * 1e6);
            let mut b = [0u8; 1];
            s.read_exact(&mut b)
                .map_err(|e| pep_lab::LabError::Traffic(format!("first byte: {e}")))?;
            fb.push(t0.elapsed().as_secs_f64() * 1e6);
        }
        fb.sort_by(f64::total_cmp);
        conn.sort_by(f64::total_cmp);
        Ok((fb[n / 2], fb[n * 99 / 100], conn[n / 2]))
    })
    .map_err(|e| e.to_string())
}

/// utime + stime of process `pid`, seconds.
fn cpu_secs(pid: u32) -> Res<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| e.to_string())?;
    let rest = s.rsplit_once(')').map(|x| x.1).ok_or("bad stat")?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let u: f64 = f.get(11).and_then(|x| x.parse().ok()).ok_or("utime")?;
    let st: f64 = f.get(12).and_then(|x| x.parse().ok()).ok_or("stime")?;
    Ok((u + st) / tick)
}

/// A relay process (pep or socat) in the proxy namespace; SIGTERM on drop.
struct Relay(Child);

impl Drop for Relay {
    fn drop(&mut self) {
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

fn wait_listening(ns: &str, addr: SocketAddr) -> Res<()> {
    for _ in 0..100 {
        let ok = netns::in_netns(ns, || {
            Ok(TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok())
        });
        if matches!(ok, Ok(true)) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("nothing listening on {addr} in {ns}"))
}

/// `pep_connections_accepted_total` from the daemon's metrics endpoint:
/// proof that the connections went through the proxy.
fn accepted(ns: &str) -> Res<u64> {
    let body = netns::in_netns(ns, || {
        let mut s = TcpStream::connect(("127.0.0.1", 9187))
            .map_err(|e| pep_lab::LabError::Traffic(e.to_string()))?;
        let _ = s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
        let mut v = String::new();
        let _ = s.read_to_string(&mut v);
        Ok(v)
    })
    .map_err(|e| e.to_string())?;
    body.lines()
        .find(|l| l.starts_with("pep_connections_accepted_total"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| "no pep_connections_accepted_total in the metrics".into())
}

fn expect_accepted(ns: &str, n: u64) -> Res<()> {
    match accepted(ns)? {
        got if got == n => Ok(()),
        got => Err(format!(
            "the proxy accepted {got} connections, expected {n}"
        )),
    }
}

fn start_pep(t: &Topo, pep: &str, relay: Option<&str>) -> Res<Relay> {
    let cfg = std::env::temp_dir().join(format!("pepb{}.toml", std::process::id()));
    // With --relay, both relays get 1 MiB: a pipe of the default 4 MiB
    // needs fs.pipe-max-size raised (or CAP_SYS_RESOURCE), and the veth
    // path's BDP is far below either.
    let extra = relay.map_or("buffer = \"4MiB\"\n".to_string(), |r| {
        format!("relay = \"{r}\"\nbuffer = \"1MiB\"\n")
    });
    std::fs::write(
        &cfg,
        format!(
            "[proxy]\nipv6 = false\nmetrics = \"127.0.0.1:9187\"\n{extra}\
             [intercept]\ninterfaces = [\"p0\"]\nsubnets = [\"10.201.1.0/24\"]\n"
        ),
    )
    .map_err(|e| e.to_string())?;
    let child = Command::new("ip")
        .args([
            "netns",
            "exec",
            &t.p,
            pep,
            "proxy",
            "run",
            "--install-rules",
            "-c",
        ])
        .arg(&cfg)
        // PEP_BENCH_LOG=1 shows the daemon's log.
        .stderr(if std::env::var_os("PEP_BENCH_LOG").is_some() {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .spawn()
        .map_err(|e| format!("{pep}: {e}"))?;
    let r = Relay(child);
    wait_listening(&t.p, SocketAddr::from(([127, 0, 0, 1], 9187)))?;
    Ok(r)
}

/// The two-node PEP with both ends in the proxy namespace, the tunnel over
/// its loopback: split-start intercepts as `start_pep` does, split-end
/// connects to the server. Returns (split-start, split-end).
fn start_tunnel(t: &Topo, pep: &str, cc: &str) -> Res<(Relay, Relay)> {
    let dir = std::env::temp_dir().join(format!("pepb{}-keys", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    pep_daemon::tunnel::keygen(&dir, "start")?;
    pep_daemon::tunnel::keygen(&dir, "end")?;
    let d = dir.display();
    let end_cfg = dir.join("end.toml");
    std::fs::write(
        &end_cfg,
        format!(
            "[proxy]\nipv6 = false\nmetrics = \"127.0.0.1:9188\"\n\
             [tunnel]\nrole = \"split-end\"\nlisten = \"127.0.0.1:4433\"\nallow = [\"{SERVER}/32\"]\n\
             cc = \"{cc}\"\ncert = \"{d}/end.pem\"\nkey = \"{d}/end.key\"\npeer_cert = \"{d}/start.pem\"\n"
        ),
    )
    .map_err(|e| e.to_string())?;
    let start_cfg = dir.join("start.toml");
    std::fs::write(
        &start_cfg,
        format!(
            "[proxy]\nipv6 = false\nmetrics = \"127.0.0.1:9187\"\n\
             [intercept]\ninterfaces = [\"p0\"]\nsubnets = [\"10.201.1.0/24\"]\n\
             [tunnel]\nrole = \"split-start\"\npeer = \"127.0.0.1:4433\"\n\
             cc = \"{cc}\"\ncert = \"{d}/start.pem\"\nkey = \"{d}/start.key\"\npeer_cert = \"{d}/end.pem\"\n"
        ),
    )
    .map_err(|e| e.to_string())?;
    let run = |cfg: &std::path::Path, rules: bool| -> Res<Relay> {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &t.p, pep, "proxy", "run", "-c"])
            .arg(cfg);
        if rules {
            c.arg("--install-rules");
        }
        let child = c
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{pep}: {e}"))?;
        Ok(Relay(child))
    };
    let end = run(&end_cfg, false)?;
    wait_listening(&t.p, SocketAddr::from(([127, 0, 0, 1], 9188)))?;
    let start = run(&start_cfg, true)?;
    wait_listening(&t.p, SocketAddr::from(([127, 0, 0, 1], 9187)))?;
    std::thread::sleep(Duration::from_millis(500));
    Ok((start, end))
}

/// Resident memory of a process, bytes.
fn rss(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|k| k.parse::<u64>().ok())
        .map_or(0, |k| k * 1024)
}

fn start_socat(t: &Topo) -> Res<Relay> {
    let child = Command::new("ip")
        .args(["netns", "exec", &t.p, "socat", "-b", "262144"])
        .arg(format!(
            "TCP-LISTEN:{SOCAT_PORT},bind={PROXY_C},reuseaddr,fork"
        ))
        .arg(format!("TCP:{SERVER}:{BULK_PORT}"))
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("socat (apt-get install -y socat): {e}"))?;
    Ok(Relay(child))
}

/// CPU of a socat process tree: the listener plus its forked children
/// (cumulative children's time, counted once they exit).
fn socat_cpu(pid: u32) -> Res<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| e.to_string())?;
    let rest = s.rsplit_once(')').map(|x| x.1).ok_or("bad stat")?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let sum: f64 = (11..=14)
        .map(|i| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0))
        .sum();
    Ok(sum / tick)
}

struct Args {
    pep: String,
    mb: u64,
    connects: usize,
    /// `proxy.relay` for the runs; set, only (a), (b) and (d) run.
    relay: Option<String>,
}

fn args() -> Res<Args> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let def = exe
        .parent()
        .and_then(|d| d.parent())
        .map(|d| d.join("pep").display().to_string())
        .unwrap_or_else(|| "pep".into());
    let mut a = Args {
        pep: def,
        mb: 1000,
        connects: 1000,
        relay: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or(format!("{k} needs a value"))?;
        match k.as_str() {
            "--pep" => a.pep = v,
            "--mb" => a.mb = v.parse().map_err(|_| "--mb: a number")?,
            "--connects" => a.connects = v.parse().map_err(|_| "--connects: a number")?,
            "--relay" if v == "splice" || v == "copy" => a.relay = Some(v),
            "--relay" => return Err(format!("--relay {v}: expected splice or copy")),
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    Ok(a)
}

fn gbps(bytes: u64, secs: f64) -> f64 {
    bytes as f64 * 8e-9 / secs
}

/// `bench --splice-relay`: a minimal zero-copy relay, the reference a
/// splice-based PEP would be: accept on `PROXY_C:SPLICE_PORT`, connect to
/// the server's bulk port, and move each direction socket -> pipe ->
/// socket with splice(2), one thread per direction, 1 MiB pipes.
fn splice_relay() -> Res<()> {
    let l = TcpListener::bind((PROXY_C, SPLICE_PORT)).map_err(|e| e.to_string())?;
    for c in l.incoming() {
        let c = c.map_err(|e| e.to_string())?;
        let s = TcpStream::connect((SERVER, BULK_PORT)).map_err(|e| e.to_string())?;
        for (from, to) in [
            (c.try_clone(), s.try_clone()),
            (s.try_clone(), c.try_clone()),
        ] {
            let (from, to) = (
                from.map_err(|e| e.to_string())?,
                to.map_err(|e| e.to_string())?,
            );
            std::thread::spawn(move || splice_pump(&from, &to));
        }
    }
    Ok(())
}

fn splice_pump(from: &TcpStream, to: &TcpStream) {
    use std::os::fd::AsRawFd;
    let mut p = [0i32; 2];
    // SAFETY: pipe2/fcntl/splice on descriptors this function owns or borrows.
    unsafe {
        if libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return;
        }
        libc::fcntl(p[1], libc::F_SETPIPE_SZ, 1 << 20);
        let flags = libc::SPLICE_F_MOVE | libc::SPLICE_F_MORE;
        loop {
            let n = libc::splice(
                from.as_raw_fd(),
                std::ptr::null_mut(),
                p[1],
                std::ptr::null_mut(),
                1 << 20,
                flags,
            );
            if n <= 0 {
                break;
            }
            let mut left = n;
            while left > 0 {
                let m = libc::splice(
                    p[0],
                    std::ptr::null_mut(),
                    to.as_raw_fd(),
                    std::ptr::null_mut(),
                    left as usize,
                    flags,
                );
                if m <= 0 {
                    left = -1;
                    break;
                }
                left -= m;
            }
            if left < 0 {
                break;
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Write);
        libc::close(p[0]);
        libc::close(p[1]);
    }
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--splice-relay") {
        if let Err(e) = splice_relay() {
            eprintln!("splice relay: {e}");
            std::process::exit(1);
        }
        return;
    }
    if let Err(e) = run() {
        eprintln!("bench: {e}");
        std::process::exit(1);
    }
}

fn run() -> Res<()> {
    let a = args()?;
    pep_lab::error::require_root().map_err(|e| e.to_string())?;
    let _ = pep_daemon::net::raise_nofile(4096);
    let t = topo()?;
    let each1 = a.mb << 20;
    let each100 = each1 / 100;
    let direct = SocketAddr::from((SERVER, BULK_PORT));
    // `each1` per connection on BULK_PORT, `each100` on BULK_PORT + 10.
    serve(&t.s, BULK_PORT, each1)?;
    serve(&t.s, BULK_PORT + 10, each100)?;
    serve_first_byte(&t.s)?;
    let direct100 = SocketAddr::from((SERVER, BULK_PORT + 10));
    println!("veth client - proxy - server, {} MB per run", a.mb);

    for (label, rate) in [("1 Gbit/s (htb)", Some("1gbit")), ("unthrottled", None)] {
        throttle(&t, rate)?;
        let (b, s) = downloads(&t.c, direct, 1, each1)?;
        let d1 = gbps(b, s);
        let (b, s) = downloads(&t.c, direct100, 100, each100)?;
        let d100 = gbps(b, s);
        let pep = start_pep(&t, &a.pep, a.relay.as_deref())?;
        let pid = pep.0.id();
        let c0 = cpu_secs(pid)?;
        let (b, s) = downloads(&t.c, direct, 1, each1)?;
        let c1 = cpu_secs(pid)?;
        let p1 = gbps(b, s);
        let (b2, s) = downloads(&t.c, direct100, 100, each100)?;
        let c2 = cpu_secs(pid)?;
        let p100 = gbps(b2, s);
        expect_accepted(&t.p, 101)?;
        drop(pep);
        println!(
            "{label}, relay {}: 1 flow direct {d1:.2} Gbit/s, via pep {p1:.2} ({:.0} %), pep CPU {:.2} s/GB; \
             100 flows direct {d100:.2}, via pep {p100:.2} ({:.0} %), pep CPU {:.2} s/GB",
            a.relay.as_deref().unwrap_or("default"),
            100.0 * p1 / d1,
            (c1 - c0) / (b as f64 / 1e9),
            100.0 * p100 / d100,
            (c2 - c1) / (b2 as f64 / 1e9),
        );
        if rate.is_none() {
            match start_socat(&t) {
                Ok(so) => {
                    let via = SocketAddr::from((PROXY_C, SOCAT_PORT));
                    // No probe connection (socat would relay it): a pause.
                    std::thread::sleep(Duration::from_millis(500));
                    let c0 = socat_cpu(so.0.id())?;
                    let (b, s) = downloads(&t.c, via, 1, each1)?;
                    std::thread::sleep(Duration::from_millis(300));
                    let c1 = socat_cpu(so.0.id())?;
                    println!(
                        "unthrottled: 1 flow via socat -b 262144 {:.2} Gbit/s ({:.0} % of direct), socat CPU {:.2} s/GB",
                        gbps(b, s),
                        100.0 * gbps(b, s) / d1,
                        (c1 - c0) / (b as f64 / 1e9)
                    );
                }
                Err(e) => println!("socat: {e}"),
            }
            let me = std::env::current_exe().map_err(|e| e.to_string())?;
            let child = Command::new("ip")
                .args(["netns", "exec", &t.p])
                .arg(&me)
                .arg("--splice-relay")
                .spawn()
                .map_err(|e| format!("splice relay: {e}"))?;
            let sp = Relay(child);
            std::thread::sleep(Duration::from_millis(500));
            let via = SocketAddr::from((PROXY_C, SPLICE_PORT));
            let c0 = socat_cpu(sp.0.id())?;
            let (b, s) = downloads(&t.c, via, 1, each1)?;
            let c1 = socat_cpu(sp.0.id())?;
            drop(sp);
            println!(
                "unthrottled: 1 flow via a plain splice relay {:.2} Gbit/s ({:.0} % of direct), relay CPU {:.2} s/GB",
                gbps(b, s),
                100.0 * gbps(b, s) / d1,
                (c1 - c0) / (b as f64 / 1e9)
            );
        }
    }
    throttle(&t, None)?;
    if a.relay.is_some() {
        return Ok(());
    }
    // (e) the two-node tunnel, both ends on one host: its own cost.
    let (d1, d100) = {
        let (b, s) = downloads(&t.c, direct, 1, each1)?;
        let (b2, s2) = downloads(&t.c, direct100, 100, each100)?;
        (gbps(b, s), gbps(b2, s2))
    };
    for cc in ["cubic", "bbr"] {
        let (start, end) = start_tunnel(&t, &a.pep, cc)?;
        let (ps, pe) = (start.0.id(), end.0.id());
        let cpu = || -> Res<f64> { Ok(cpu_secs(ps)? + cpu_secs(pe)?) };
        let c0 = cpu()?;
        let (b, s) = downloads(&t.c, direct, 1, each1)?;
        let c1 = cpu()?;
        let m0 = rss(ps) + rss(pe);
        let watch = std::thread::spawn(move || {
            let mut peak = 0;
            for _ in 0..600 {
                peak = peak.max(rss(ps) + rss(pe));
                std::thread::sleep(Duration::from_millis(50));
            }
            peak
        });
        let (b2, s2) = downloads(&t.c, direct100, 100, each100)?;
        let c2 = cpu()?;
        expect_accepted(&t.p, 101)?;
        drop((start, end));
        let peak = watch.join().unwrap_or(0);
        println!(
            "tunnel ({cc}, unthrottled, both ends on this host): 1 flow {:.2} Gbit/s ({:.0} % of direct), {:.2} CPU s/GB; \
             100 flows {:.2} Gbit/s ({:.0} %), {:.2} CPU s/GB; memory {:.0} KiB per flow (peak RSS of both ends over idle)",
            gbps(b, s),
            100.0 * gbps(b, s) / d1,
            (c1 - c0) / (b as f64 / 1e9),
            gbps(b2, s2),
            100.0 * gbps(b2, s2) / d100,
            (c2 - c1) / (b2 as f64 / 1e9),
            peak.saturating_sub(m0) as f64 / 1024.0 / 100.0,
        );
    }
    let fb = SocketAddr::from((SERVER, FIRST_BYTE_PORT));
    let (d50, d99, dc) = setup_latency(&t.c, fb, a.connects)?;
    let pep = start_pep(&t, &a.pep, a.relay.as_deref())?;
    let (p50, p99, pc) = setup_latency(&t.c, fb, a.connects)?;
    expect_accepted(&t.p, a.connects as u64)?;
    drop(pep);
    println!(
        "setup (connect + first byte, {} connects, unthrottled): direct p50 {d50:.0} µs p99 {d99:.0} µs; \
         via pep p50 {p50:.0} µs p99 {p99:.0} µs (added p50 {:.0} µs, p99 {:.0} µs); connect() alone p50 {dc:.0} / {pc:.0} µs",
        a.connects,
        p50 - d50,
        p99 - d99
    );
    Ok(())
}
