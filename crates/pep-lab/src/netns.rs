//! Network namespaces: create, enter, delete, and run `ip` inside them.
//!
//! Namespaces are named ones (`ip netns add`, a bind mount under
//! `/run/netns`), so they outlive a crashed lab and can be found by name and
//! removed. Entering one is per thread (`setns(2)` changes only the calling
//! thread's namespace), and a socket stays in the namespace it was created
//! in, so the lab opens sockets on short-lived or dedicated threads and then
//! uses them from anywhere.

use std::fs::{self, File};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::{io_err, last_os, LabError, Result};

/// Where `ip netns` keeps its namespaces.
pub const NETNS_DIR: &str = "/run/netns";

/// Creates a named namespace; fails if it exists.
pub fn add(name: &str) -> Result<()> {
    ip(&["netns", "add", name]).map(drop)
}

/// Deletes a named namespace; a missing one is not an error. The kernel
/// frees it, and the interfaces in it (veth peers included), once nothing
/// refers to it any more.
pub fn delete(name: &str) -> Result<()> {
    if !exists(name) {
        return Ok(());
    }
    ip(&["netns", "delete", name]).map(drop)
}

pub fn exists(name: &str) -> bool {
    Path::new(NETNS_DIR).join(name).exists()
}

/// Names of all named namespaces, sorted.
pub fn list() -> Result<Vec<String>> {
    let dir = match fs::read_dir(NETNS_DIR) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(io_err(format!("read {NETNS_DIR}"))(e)),
    };
    let mut names: Vec<String> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    Ok(names)
}

/// Moves the calling thread into namespace `name`. Only for threads that
/// stay there (emulator and traffic threads); see [`in_netns`] otherwise.
pub fn enter(name: &str) -> Result<()> {
    let path = Path::new(NETNS_DIR).join(name);
    let f = File::open(&path).map_err(io_err(format!("open {}", path.display())))?;
    // SAFETY: a valid namespace fd; CLONE_NEWNET checks its type.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(last_os(format!("setns into {name}")));
    }
    Ok(())
}

/// Runs `f` on a fresh thread inside namespace `name` and returns its
/// result; the caller's own namespace is untouched. An empty `name` runs
/// `f` in the caller's namespace (tests over loopback).
pub fn in_netns<T, F>(name: &str, f: F) -> Result<T>
where
    F: FnOnce() -> Result<T> + Send,
    T: Send,
{
    std::thread::scope(|s| {
        s.spawn(|| {
            if !name.is_empty() {
                enter(name)?;
            }
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(LabError::Topology(format!("a thread in {name} panicked"))))
    })
}

/// Writes a sysctl of the calling thread's namespace, e.g.
/// `("net/ipv4/ip_forward", "1")`. `/proc/sys/net` resolves to the
/// namespace of the task that opens it, so this works from a thread that
/// entered a namespace: no `ip netns exec sysctl` process per setting.
pub fn write_sysctl(key: &str, value: &str) -> Result<()> {
    let path = format!("/proc/sys/{key}");
    let mut f = fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .map_err(io_err(format!("open {path}")))?;
    f.write_all(value.as_bytes())
        .map_err(io_err(format!("write {value} to {path}")))
}

/// Reads a sysctl of the calling thread's namespace.
pub fn read_sysctl(key: &str) -> Result<String> {
    let path = format!("/proc/sys/{key}");
    fs::read_to_string(&path)
        .map(|s| s.trim().to_string())
        .map_err(io_err(format!("read {path}")))
}

/// Runs `ip` with `args`; returns its standard output.
pub fn ip(args: &[&str]) -> Result<String> {
    let cmd = || format!("ip {}", args.join(" "));
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| LabError::Command {
            cmd: cmd(),
            detail: format!("cannot run ip (is iproute2 installed?): {e}"),
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(LabError::Command {
            cmd: cmd(),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Runs `ip -batch -` (inside `netns` if given) with one command per line:
/// one process per namespace instead of one per setting.
pub fn ip_batch(netns: Option<&str>, commands: &[String]) -> Result<()> {
    if commands.is_empty() {
        return Ok(());
    }
    let mut args: Vec<&str> = Vec::new();
    if let Some(ns) = netns {
        args.extend(["-n", ns]);
    }
    args.extend(["-batch", "-"]);
    let shown = || {
        format!(
            "ip {} <<< {:?}",
            args.join(" "),
            commands.first().map_or("", String::as_str)
        )
    };
    let mut child = Command::new("ip")
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| LabError::Command {
            cmd: shown(),
            detail: format!("cannot run ip (is iproute2 installed?): {e}"),
        })?;
    let mut input = commands.join("\n");
    input.push('\n');
    if let Some(mut stdin) = child.stdin.take() {
        // A write error shows up as the exit status below.
        let _ = stdin.write_all(input.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(io_err("wait for ip -batch"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(LabError::Command {
            cmd: shown(),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}
