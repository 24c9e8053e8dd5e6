//! Upgrades without dropping a connection (as HAProxy's `expose-fd
//! listeners` and Pingora's graceful upgrade): the running proxy serves a
//! unix socket; a newly started one (`pep proxy upgrade`) connects, is
//! handed the listening sockets themselves (`SCM_RIGHTS`), starts accepting
//! on them and says `READY`. Only then does the old process stop accepting
//! and drain its own connections in place. The listening sockets never
//! close, so no SYN meets a closed port: the kernel's accept queue is
//! shared by both processes for the moment they overlap.
//!
//! The old process also hands over what it owns beyond the sockets: the
//! interception rules (the new one neither reinstalls them, which would
//! leave a gap in which packets of live connections bypass the proxy, nor
//! do both remove them) and the `tcp_tw_reuse` value to restore at exit.
//!
//! split-start (a two-node PEP's intercepting node) hands over the same
//! way: the new process opens a tunnel of its own to split-end (a new QUIC
//! connection from a new UDP port; split-end serves any number) and takes
//! the listeners only once it is up, while the old one drains its flows
//! on the old tunnel. split-end and split-start's local queue cannot be
//! handed over ([`refusal`]).
//!
//! Protocol, one line each way plus the descriptors:
//! new → old `PEP-TAKEOVER 1\n`;
//! old → new `PEP-LISTENERS 1 kinds=<l|m,...> rules=<0|1> tw=<value|->\n`
//! with one descriptor per kind (`l`: a TPROXY listener, `m`: the metrics
//! endpoint);
//! new → old `READY\n` once it accepts. Anything else, or the new process
//! going away first, leaves the old one serving as before.
//!
//! Under systemd the old process, still the main one, then names the new
//! one (`MAINPID=`, its pid from the socket's peer credentials) before it
//! starts draining: the datagram is queued before the old process can
//! exit, so systemd never sees its main process go without a successor.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

const HELLO: &str = "PEP-TAKEOVER 1\n";
const MAX_FDS: usize = 8;
/// How long the old process waits for the new one's `READY`.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// How long a split-start taking over waits for its own tunnel.
pub const TUNNEL_UP_WITHIN: Duration = Duration::from_secs(10);

/// Why a process with settings `s` cannot take over from a running proxy,
/// if it cannot (docs/daemon.md, "Upgrades of a two-node PEP").
pub fn refusal(s: &crate::config::Settings) -> Option<&'static str> {
    let t = s.tunnel.as_ref()?;
    match t.role {
        crate::tunnel::Role::SplitEnd => Some(
            "upgrade: split-end cannot be handed over: one UDP socket carries all its QUIC \
             connections, which two processes cannot share; restart it",
        ),
        crate::tunnel::Role::SplitStart if t.local_queue.is_some() => Some(
            "upgrade: split-start's local queue cannot be handed over: its NFQUEUE is bound \
             by the running process; restart it",
        ),
        crate::tunnel::Role::SplitStart => None,
    }
}

/// What the old process hands over besides the sockets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Owned {
    /// The old process installed the interception rules: the new one owns
    /// them now (removes them at its exit) and does not reinstall them.
    pub rules: bool,
    /// `net.ipv4.tcp_tw_reuse` as it was before the first proxy set it.
    pub tw_restore: Option<String>,
}

/// The sockets a new process received.
pub struct Received {
    pub listeners: Vec<std::net::TcpListener>,
    pub metrics: Option<std::net::TcpListener>,
    pub owned: Owned,
    /// Where to say `READY` once accepting.
    pub conn: UnixStream,
}

impl std::fmt::Debug for Received {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Received")
            .field("listeners", &self.listeners.len())
            .field("metrics", &self.metrics.is_some())
            .field("owned", &self.owned)
            .finish()
    }
}

impl Received {
    /// Tells the old process to stop accepting and drain.
    pub fn ready(mut self) -> Result<(), String> {
        self.conn
            .write_all(b"READY\n")
            .map_err(|e| format!("upgrade: telling the old process: {e}"))
    }
}

fn header(kinds: &[char], owned: &Owned) -> String {
    let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
    format!(
        "PEP-LISTENERS 1 kinds={} rules={} tw={}\n",
        kinds.join(","),
        u8::from(owned.rules),
        owned.tw_restore.as_deref().unwrap_or("-")
    )
}

fn parse_header(line: &str) -> Result<(Vec<char>, Owned), String> {
    let bad = || format!("upgrade: unexpected answer {line:?} from the running proxy");
    let mut w = line.trim_end().split(' ');
    if (w.next(), w.next()) != (Some("PEP-LISTENERS"), Some("1")) {
        return Err(bad());
    }
    let (mut kinds, mut owned) = (None, Owned::default());
    for kv in w {
        match kv.split_once('=') {
            Some(("kinds", v)) => {
                let k: Vec<char> = v.split(',').filter_map(|s| s.chars().next()).collect();
                if k.iter().any(|c| !matches!(c, 'l' | 'm')) {
                    return Err(bad());
                }
                kinds = Some(k);
            }
            Some(("rules", v)) => owned.rules = v == "1",
            Some(("tw", "-")) => owned.tw_restore = None,
            Some(("tw", v)) => owned.tw_restore = Some(v.to_string()),
            _ => return Err(bad()),
        }
    }
    Ok((kinds.ok_or_else(bad)?, owned))
}

/// Sends `data` with `fds` attached.
fn send_fds(s: &UnixStream, data: &[u8], fds: &[RawFd]) -> std::io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let bytes = std::mem::size_of_val(fds);
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(bytes as u32) } as usize;
    let mut cbuf = vec![0u64; space.div_ceil(8)];
    // SAFETY: zeroed msghdr, then every pointer set to live buffers of the
    // lengths given; the cmsg header written lies within `cbuf`.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = space as _;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(bytes as u32) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c) as *mut RawFd, fds.len());
        if libc::sendmsg(s.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Receives one message and the descriptors attached to it (close-on-exec).
fn recv_fds(s: &UnixStream, buf: &mut [u8]) -> std::io::Result<(usize, Vec<OwnedFd>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: as in `send_fds`; descriptors are taken only from SCM_RIGHTS
    // headers the kernel wrote, each exactly once.
    unsafe {
        let space = libc::CMSG_SPACE((MAX_FDS * std::mem::size_of::<RawFd>()) as u32) as usize;
        let mut cbuf = vec![0u64; space.div_ceil(8)];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = space as _;
        let n = libc::recvmsg(s.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut fds = Vec::new();
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c) as *const RawFd;
                let k = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                    / std::mem::size_of::<RawFd>();
                for i in 0..k {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        if msg.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(std::io::Error::other("descriptors truncated"));
        }
        Ok((n as usize, fds))
    }
}

/// The pid of the process at the other end of `s` (`SO_PEERCRED`, as the
/// kernel recorded it at connect).
fn peer_pid(s: &UnixStream) -> Option<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are live and sized for SO_PEERCRED's answer.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut libc::ucred as *mut libc::c_void,
            &mut len,
        )
    };
    (r == 0 && cred.pid > 0).then_some(cred.pid as u32)
}

/// The new process's side: takes the listeners of the proxy serving
/// `path`, checking they listen on `port`.
pub fn take_over(path: &Path, port: u16) -> Result<Received, String> {
    let conn = UnixStream::connect(path).map_err(|e| {
        format!(
            "upgrade: no running proxy answers at {}: {e} (is it running with this upgrade socket?)",
            path.display()
        )
    })?;
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    (&conn)
        .write_all(HELLO.as_bytes())
        .map_err(|e| format!("upgrade: {}: {e}", path.display()))?;
    let mut buf = [0u8; 512];
    let (n, fds) =
        recv_fds(&conn, &mut buf).map_err(|e| format!("upgrade: {}: {e}", path.display()))?;
    let line = String::from_utf8_lossy(&buf[..n]).to_string();
    if !line.ends_with('\n') {
        return Err(format!("upgrade: truncated answer {line:?}"));
    }
    let (kinds, owned) = parse_header(&line)?;
    if kinds.len() != fds.len() {
        return Err(format!(
            "upgrade: the running proxy announced {} sockets and sent {}",
            kinds.len(),
            fds.len()
        ));
    }
    let (mut listeners, mut metrics) = (Vec::new(), None);
    for (k, fd) in kinds.into_iter().zip(fds) {
        let l = std::net::TcpListener::from(fd);
        l.set_nonblocking(true).map_err(|e| e.to_string())?;
        let at = l.local_addr().map_err(|e| e.to_string())?;
        if k == 'm' {
            metrics = Some(l);
            continue;
        }
        if at.port() != port {
            return Err(format!(
                "upgrade: the running proxy listens on port {}, this configuration on {port}: \
                 change proxy.port with a restart",
                at.port()
            ));
        }
        listeners.push(l);
    }
    conn.set_read_timeout(None).map_err(|e| e.to_string())?;
    Ok(Received {
        listeners,
        metrics,
        owned,
        conn,
    })
}

/// The old process's side: hands `listeners` (and `metrics`) to the first
/// new process that asks, then calls `handed` with its pid once it is
/// ready. Runs on its own thread until `stop` is set or the hand-off is
/// done.
pub struct Server {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Binds the upgrade socket at `path`, replacing a stale one. A live one
/// (another proxy answers there) is replaced only by the process that
/// took over from it (`successor`): two proxies sharing a path would hand
/// each other's sockets.
pub fn bind(path: &Path, successor: bool) -> Result<UnixListener, String> {
    if !successor && UnixStream::connect(path).is_ok() {
        return Err(format!(
            "upgrade socket {}: another proxy serves upgrades there",
            path.display()
        ));
    }
    let _ = std::fs::remove_file(path);
    let l =
        UnixListener::bind(path).map_err(|e| format!("upgrade socket {}: {e}", path.display()))?;
    // Only the daemon's own user (and root) may take its sockets.
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    l.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok(l)
}

pub fn serve(
    unix: UnixListener,
    path: PathBuf,
    listeners: Vec<RawFd>,
    metrics: Option<RawFd>,
    owned: Owned,
    handed: impl FnOnce(Option<u32>) + Send + 'static,
) -> Server {
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let thread = std::thread::Builder::new()
        .name("pep-upgrade".into())
        .spawn(move || {
            let mut kinds = vec!['l'; listeners.len()];
            let mut fds = listeners;
            if let Some(m) = metrics {
                kinds.push('m');
                fds.push(m);
            }
            let head = header(&kinds, &owned);
            while !st.load(Relaxed) {
                let conn = match unix.accept() {
                    Ok((c, _)) => c,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    }
                    Err(e) => {
                        warn!("upgrade socket: {e}");
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    }
                };
                match hand_off(&conn, &head, &fds) {
                    Ok(()) => {
                        let pid = peer_pid(&conn);
                        info!(
                            successor = pid,
                            "upgrade: the new process accepts on our listeners; draining"
                        );
                        // The path is the new process's now (it binds it
                        // again); only our descriptor closes.
                        drop(unix);
                        handed(pid);
                        return;
                    }
                    Err(e) => warn!("upgrade aborted, still serving: {e}"),
                }
            }
            // Stopping without a hand-off: the path is ours to remove,
            // unless a successor already bound it again.
            drop(unix);
            let _ = std::fs::remove_file(&path);
        })
        .ok();
    Server { stop, thread }
}

fn hand_off(conn: &UnixStream, head: &str, fds: &[RawFd]) -> Result<(), String> {
    conn.set_nonblocking(false).map_err(|e| e.to_string())?;
    conn.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let mut hello = [0u8; HELLO.len()];
    (&*conn)
        .read_exact(&mut hello)
        .map_err(|e| format!("reading the new process's request: {e}"))?;
    if hello != *HELLO.as_bytes() {
        return Err(format!(
            "unexpected request {:?}",
            String::from_utf8_lossy(&hello)
        ));
    }
    send_fds(conn, head.as_bytes(), fds).map_err(|e| format!("sending the listeners: {e}"))?;
    conn.set_read_timeout(Some(READY_WITHIN))
        .map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(conn)
        .read_line(&mut line)
        .map_err(|e| format!("waiting for the new process: {e}"))?;
    if line != "READY\n" {
        return Err(format!(
            "the new process did not become ready (said {line:?})"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_round_trips_and_bad_ones_are_named() {
        let o = Owned {
            rules: true,
            tw_restore: Some("2".into()),
        };
        let h = header(&['l', 'l', 'm'], &o);
        assert_eq!(h, "PEP-LISTENERS 1 kinds=l,l,m rules=1 tw=2\n");
        assert_eq!(parse_header(&h), Ok((vec!['l', 'l', 'm'], o)));
        let none = header(&['l'], &Owned::default());
        assert_eq!(parse_header(&none), Ok((vec!['l'], Owned::default())));
        let e = parse_header("PEP-LISTENERS 2 kinds=l\n").unwrap_err();
        assert!(e.contains("unexpected answer"), "{e}");
        assert!(parse_header("PEP-LISTENERS 1 kinds=x rules=0 tw=-\n").is_err());
    }

    #[test]
    fn listeners_pass_to_a_new_owner_who_accepts_on_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("up.sock");
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let unix = bind(&path, false).unwrap();
        assert!(bind(&path, false).unwrap_err().contains("another proxy"));
        let (tx, rx) = std::sync::mpsc::channel();
        let owned = Owned {
            rules: true,
            tw_restore: Some("0".into()),
        };
        let _srv = serve(
            unix,
            path.clone(),
            vec![l.as_raw_fd()],
            None,
            owned.clone(),
            move |pid| tx.send(pid).unwrap(),
        );
        // A port that does not match is refused before anything changes.
        let e = take_over(&path, addr.port().wrapping_add(1)).unwrap_err();
        assert!(e.contains("listens on port"), "{e}");
        assert!(rx.try_recv().is_err(), "a refused takeover is no hand-off");
        let got = take_over(&path, addr.port()).unwrap();
        assert_eq!(got.owned, owned);
        assert_eq!(got.listeners.len(), 1);
        let new = got.listeners[0].try_clone().unwrap();
        got.ready().unwrap();
        // The successor named by its pid (here: this process).
        let pid = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(pid, Some(std::process::id()));
        // The old owner closes its descriptor: the socket lives on.
        drop(l);
        let _c = std::net::TcpStream::connect(addr).unwrap();
        new.set_nonblocking(false).unwrap();
        let (_s, _) = new.accept().unwrap();
    }
}
