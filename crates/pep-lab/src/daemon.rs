//! Programs the lab runs inside a node's namespace: the PEP daemon
//! (`pep proxy run`) for a scenario's agents, or anything else.
//!
//! A process is started directly in the node's namespace (`setns` between
//! `fork` and `exec`, as `ip netns exec` does, without the extra process),
//! with `PR_SET_PDEATHSIG` = SIGTERM: if the lab's own process dies, even
//! by SIGKILL, the kernel stops the program too, and a daemon removes its
//! rules on SIGTERM. Its pid and start time are written into the lab's
//! state file ([`crate::state::ProcState`]), so [`crate::state::down`]
//! stops it as well when the lab is removed from outside. Rules a daemon
//! installs live in the node's namespace and go with it.
//!
//! The death signal is tied to the *thread* that spawned the process:
//! spawn from a thread that lives as long as the lab (the lab's owner),
//! never from a short-lived helper thread.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use crate::error::{io_err, LabError, Result};
use crate::netns::NETNS_DIR;
use crate::state::process_start;

/// A program running in a node's namespace; stopped when dropped.
pub struct NodeProcess {
    /// What it is, for messages ("split-start at r1").
    pub what: String,
    pub node: String,
    child: Option<Child>,
    /// Where its standard output and error go.
    pub log: PathBuf,
}

impl NodeProcess {
    /// Starts `program args` in namespace `netns` (of node `node`), its
    /// output appended to `log`.
    pub fn spawn(
        what: &str,
        node: &str,
        netns: &str,
        program: &Path,
        args: &[String],
        log: &Path,
    ) -> Result<NodeProcess> {
        let ns_path = Path::new(NETNS_DIR).join(netns);
        let ns = File::open(&ns_path).map_err(io_err(format!("open {}", ns_path.display())))?;
        let out = File::create(log).map_err(io_err(format!("create {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(io_err(format!("dup {}", log.display())))?;
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        let ns_fd = ns.as_raw_fd();
        let mut cmd = Command::new(program);
        cmd.args(args).stdin(Stdio::null()).stdout(out).stderr(err);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(ns_fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent died before the death signal was armed.
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("the lab's process is gone"));
                }
                // The lab blocks termination signals in its threads
                // (`signals`); the mask survives exec.
                let mut set = std::mem::zeroed::<libc::sigset_t>();
                libc::sigemptyset(&mut set);
                libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| LabError::Command {
            cmd: format!("{} {} (in {netns})", program.display(), args.join(" ")),
            detail: e.to_string(),
        })?;
        drop(ns);
        Ok(NodeProcess {
            what: what.to_string(),
            node: node.to_string(),
            child: Some(child),
            log: log.to_path_buf(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The process's start time (`/proc/<pid>/stat`), for the state file.
    pub fn start_time(&self) -> Option<u64> {
        process_start(self.pid())
    }

    /// Its exit status if it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    /// The last `max` bytes of its log, for an error message.
    pub fn log_tail(&self, max: usize) -> String {
        let mut s = String::new();
        if let Ok(mut f) = File::open(&self.log) {
            let _ = f.read_to_string(&mut s);
        }
        let cut = s.len().saturating_sub(max);
        let cut = (cut..s.len()).find(|&i| s.is_char_boundary(i)).unwrap_or(0);
        s[cut..].trim().to_string()
    }

    /// SIGTERM, then SIGKILL after `grace`; waits for it. Returns its exit
    /// status (`None` if it had to be killed).
    pub fn stop(&mut self, grace: StdDuration) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        if let Ok(Some(st)) = child.try_wait() {
            self.child = None;
            return Some(st);
        }
        // SAFETY: kill(2) on our own child, not yet reaped.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let until = StdInstant::now() + grace;
        while StdInstant::now() < until {
            if let Ok(Some(st)) = child.try_wait() {
                self.child = None;
                return Some(st);
            }
            std::thread::sleep(StdDuration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        self.child = None;
        None
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        self.stop(StdDuration::from_secs(5));
    }
}

/// `GET /metrics` from `127.0.0.1:port` inside namespace `netns`: the
/// daemon's Prometheus text, or an error if nothing answers yet.
pub fn scrape_metrics(netns: &str, port: u16) -> Result<String> {
    use std::io::Write;
    crate::netns::in_netns(netns, || {
        let err = |e: std::io::Error| LabError::Traffic(format!("metrics in {netns}: {e}"));
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let mut s = std::net::TcpStream::connect_timeout(&addr, StdDuration::from_millis(500))
            .map_err(err)?;
        s.set_read_timeout(Some(StdDuration::from_secs(2)))
            .map_err(err)?;
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
            .map_err(err)?;
        let mut body = String::new();
        s.read_to_string(&mut body).map_err(err)?;
        Ok(body)
    })
}

/// The value of metric `name` (no labels) in Prometheus text `body`.
pub fn metric(body: &str, name: &str) -> Option<f64> {
    body.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_values_are_read_by_exact_name() {
        let body = "# HELP pep_tunnel_up x\npep_tunnel_up 1\npep_tunnel_up_total 7\n\
                    pep_bytes_total{leg=\"client\"} 5\n";
        assert_eq!(metric(body, "pep_tunnel_up"), Some(1.0));
        assert_eq!(metric(body, "pep_tunnel_up_total"), Some(7.0));
        assert_eq!(metric(body, "pep_bytes_total"), None);
    }
}
