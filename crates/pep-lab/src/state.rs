//! What a running lab leaves on disk, and removing labs: also those whose
//! process crashed or was killed.
//!
//! Each lab writes `/run/pepkit/labs/<id>.json` before it creates anything:
//! its owner process (pid and start time, so a later process that reuses
//! the pid is not mistaken for it), and its nodes' namespaces and
//! addresses, which `pep lab traffic` and `pep lab ping` read. `/run` is a
//! tmpfs, like `/run/netns`, so neither survives a reboot: they go
//! together.
//!
//! [`down`] does not trust the file alone: it also removes every namespace
//! whose name carries the lab's prefix, so a lab that died half-built is
//! cleaned up too.

use std::fs;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use serde::{Deserialize, Serialize};

use crate::error::{io_err, LabError, Result};
use crate::netns;
use crate::topology::{lab_of_netns, valid_id, Role, NETNS_PREFIX};

/// Where state files live.
pub const STATE_DIR: &str = "/run/pepkit/labs";

/// A node as other processes need to find it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    pub node: String,
    /// The namespace to run its programs in.
    pub netns: String,
    /// Its address on its first link (what traffic is sent to).
    pub addr: Ipv4Addr,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeState {
    pub role: Role,
    #[serde(flatten)]
    pub endpoint: Endpoint,
    /// Every address, one per link, in link order.
    pub addrs: Vec<Ipv4Addr>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkState {
    pub name: String,
    /// The emulator's namespace.
    pub netns: String,
    pub a: String,
    pub b: String,
}

/// A program the lab started in one of its nodes ([`crate::daemon`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcState {
    pub pid: u32,
    /// Its start time, as [`LabState::pid_start`].
    pub pid_start: u64,
    pub node: String,
    pub what: String,
}

/// The state file of one lab.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabState {
    pub id: String,
    pub scenario: String,
    pub pid: u32,
    /// The owner's start time in clock ticks since boot (`/proc/<pid>/stat`
    /// field 22).
    pub pid_start: u64,
    pub nodes: Vec<NodeState>,
    pub links: Vec<LinkState>,
    /// Programs running in its nodes (the PEP daemons), stopped with it.
    #[serde(default)]
    pub processes: Vec<ProcState>,
}

impl LabState {
    pub fn path(id: &str) -> PathBuf {
        PathBuf::from(STATE_DIR).join(format!("{id}.json"))
    }

    /// Writes the file atomically (a reader never sees half of it).
    pub fn write(&self) -> Result<()> {
        fs::create_dir_all(STATE_DIR).map_err(io_err(format!("create {STATE_DIR}")))?;
        let path = Self::path(&self.id);
        let tmp = path.with_extension("json.tmp");
        let json = serde_json::to_string_pretty(self).expect("plain data serializes");
        fs::write(&tmp, json + "\n").map_err(io_err(format!("write {}", tmp.display())))?;
        fs::rename(&tmp, &path).map_err(io_err(format!("rename to {}", path.display())))
    }

    /// The state of lab `id`, if it has a file.
    pub fn read(id: &str) -> Result<Option<LabState>> {
        let path = Self::path(id);
        match fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| LabError::Io {
                    what: format!("parse {}", path.display()),
                    source: e.into(),
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err(format!("read {}", path.display()))(e)),
        }
    }

    /// Every lab with a readable state file, by id.
    pub fn list() -> Vec<LabState> {
        let Ok(dir) = fs::read_dir(STATE_DIR) else {
            return vec![];
        };
        let mut out: Vec<LabState> = dir
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let id = name.strip_suffix(".json")?;
                Self::read(id).ok().flatten()
            })
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    /// Whether the process that built the lab still runs.
    pub fn owner_alive(&self) -> bool {
        process_start(self.pid) == Some(self.pid_start)
    }

    pub fn endpoint(&self, node: &str) -> Option<&Endpoint> {
        self.nodes
            .iter()
            .map(|n| &n.endpoint)
            .find(|e| e.node == node)
    }
}

/// Start time of process `pid` (field 22 of `/proc/<pid>/stat`), or `None`
/// if it does not exist or has exited (a zombie waiting for its parent).
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count
    // fields from the last ')'.
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

/// Where `pep lab up` keeps the configurations, keys and logs of lab
/// `id`'s daemons; [`down`] removes it with the lab.
pub fn daemons_dir(id: &str) -> PathBuf {
    PathBuf::from(STATE_DIR).join(format!("{id}-daemons"))
}

/// What [`down`] removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DownReport {
    /// Labs that had a state file or a namespace (an id with neither is
    /// left out).
    pub labs: Vec<String>,
    pub namespaces: Vec<String>,
    /// Owner processes that were stopped (pid).
    pub stopped: Vec<u32>,
}

/// Removes lab `id` (or every lab, with `None`): stops its owner process if
/// it runs (SIGTERM, then SIGKILL after 5 s), deletes its namespaces (which
/// deletes their interfaces) and its state file.
pub fn down(id: Option<&str>) -> Result<DownReport> {
    let ids = match id {
        Some(id) if valid_id(id) => vec![id.to_string()],
        Some(id) => return Err(LabError::Topology(format!("{id:?} is not a lab id"))),
        None => all_ids()?,
    };
    let mut report = DownReport::default();
    for id in ids {
        down_one(&id, &mut report)?;
    }
    Ok(report)
}

/// Removes the labs whose owner process is gone (crashed or killed).
pub fn reap_orphans() -> Result<DownReport> {
    let mut report = DownReport::default();
    for st in LabState::list() {
        if !st.owner_alive() {
            down_one(&st.id, &mut report)?;
        }
    }
    Ok(report)
}

/// Ids of every lab with a state file or a namespace.
pub fn all_ids() -> Result<Vec<String>> {
    let mut ids: Vec<String> = LabState::list().into_iter().map(|s| s.id).collect();
    for ns in netns::list()? {
        if let Some(id) = lab_of_netns(&ns) {
            ids.push(id.to_string());
        }
    }
    ids.sort();
    ids.dedup();
    Ok(ids)
}

/// Namespaces of lab `id`.
pub fn namespaces_of(id: &str) -> Result<Vec<String>> {
    Ok(netns::list()?
        .into_iter()
        .filter(|ns| ns.starts_with(NETNS_PREFIX) && lab_of_netns(ns) == Some(id))
        .collect())
}

fn down_one(id: &str, report: &mut DownReport) -> Result<()> {
    // Listed first: a stopped owner removes its own namespaces, and the
    // report should still name what the lab had.
    let found = namespaces_of(id)?;
    let state = LabState::read(id)?;
    let existed = state.is_some() || !found.is_empty();
    if let Some(st) = state {
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() } as u32;
        if st.pid != me && st.owner_alive() && stop_process(st.pid, st.pid_start) {
            report.stopped.push(st.pid);
        }
        // Their owner stops them, and the kernel does when it dies
        // (`PR_SET_PDEATHSIG`); this is for a stop that failed.
        for p in &st.processes {
            if process_start(p.pid) == Some(p.pid_start) && stop_process(p.pid, p.pid_start) {
                report.stopped.push(p.pid);
            }
        }
    }
    for ns in namespaces_of(id)? {
        netns::delete(&ns)?;
    }
    report.namespaces.extend(found);
    let daemons = daemons_dir(id);
    match fs::remove_dir_all(&daemons) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(format!("remove {}", daemons.display()))(e)),
    }
    let path = LabState::path(id);
    match fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(format!("remove {}", path.display()))(e)),
    }
    // Only what was there: `down` of an unknown id removes nothing, and
    // its caller can say so.
    if existed {
        report.labs.push(id.to_string());
    }
    Ok(())
}

/// SIGTERM, then SIGKILL if process `pid` has not exited within 5 s; true
/// if it is gone. The pid is only signalled while its start time matches.
fn stop_process(pid: u32, start: u64) -> bool {
    let alive = || process_start(pid) == Some(start);
    for (sig, wait) in [(libc::SIGTERM, 5), (libc::SIGKILL, 2)] {
        if !alive() {
            return true;
        }
        // SAFETY: kill(2) on a process the lab recorded, checked above.
        unsafe { libc::kill(pid as libc::pid_t, sig) };
        let until = StdInstant::now() + StdDuration::from_secs(wait);
        while alive() && StdInstant::now() < until {
            std::thread::sleep(StdDuration::from_millis(20));
        }
    }
    !alive()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_start_is_readable() {
        let me = std::process::id();
        let start = process_start(me).expect("our own /proc entry");
        assert_eq!(process_start(me), Some(start));
        assert_eq!(process_start(u32::MAX), None);
    }

    #[test]
    fn down_of_an_unknown_lab_removes_and_reports_nothing() {
        // Unique to this process, so no lab of anyone else's is touched.
        let id = format!("{}-nosuch", std::process::id());
        let r = down(Some(&id)).unwrap();
        assert_eq!(r, DownReport::default());
    }

    #[test]
    fn state_round_trips_through_json() {
        let st = LabState {
            id: "x-1".into(),
            scenario: "s".into(),
            pid: 1,
            pid_start: 2,
            nodes: vec![NodeState {
                role: Role::Router,
                endpoint: Endpoint {
                    node: "r".into(),
                    netns: "pepl-x-1.r".into(),
                    addr: Ipv4Addr::new(198, 18, 0, 2),
                },
                addrs: vec![Ipv4Addr::new(198, 18, 0, 2)],
            }],
            links: vec![],
            processes: vec![],
        };
        let json = serde_json::to_string(&st).unwrap();
        assert!(json.contains("\"role\":\"router\""), "{json}");
        assert!(json.contains("\"addr\":\"198.18.0.2\""), "{json}");
        let back: LabState = serde_json::from_str(&json).unwrap();
        assert_eq!(back, st);
        assert_eq!(
            back.endpoint("r").map(|e| e.addr),
            Some(Ipv4Addr::new(198, 18, 0, 2))
        );
    }
}
