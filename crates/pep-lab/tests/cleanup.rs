//! `pep lab down` leaves nothing behind, also when the lab's process was
//! killed. Needs root (`#[ignore]`d: `-- --include-ignored`).
//!
//! The lab is held by a child process: this test binary run again with
//! `PEPL_HOLD_ID` set, executing only `lab_holder`.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use pep_core::{Duration, Rate};
use pep_lab::lab::{Lab, LabOptions};
use pep_lab::state::{self, LabState};
use pep_lab::topology::{DirParams, LabTopology, Role};

const HOLD_ENV: &str = "PEPL_HOLD_ID";

/// Not a test of its own: the child's body. Builds a small lab (two hosts
/// and a router) under the given id and sleeps until killed.
#[test]
#[ignore = "run by the cleanup tests as a child process"]
fn lab_holder() {
    let Ok(id) = std::env::var(HOLD_ENV) else {
        return;
    };
    let d = DirParams::new(Rate::mbps(10), Duration::from_millis(5), 100);
    let mut t = LabTopology::new("holder", 1);
    t.node("a", Role::Host);
    t.node("r", Role::Router);
    t.node("b", Role::Host);
    t.link("a", "r", d, d);
    t.link("r", "b", d, d);
    let opts = LabOptions {
        id: Some(id),
        ..LabOptions::default()
    };
    let _lab = Lab::up(&t, &opts).expect("lab up");
    std::thread::sleep(StdDuration::from_secs(60));
}

/// The child holding lab `id`. Dropping it (also when an assertion
/// fails) kills the child and removes the lab.
struct Holder {
    id: String,
    child: Child,
}

impl Holder {
    fn spawn(id: &str) -> Holder {
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "lab_holder", "--ignored", "--nocapture"])
            .env(HOLD_ENV, id)
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn the holder");
        Holder {
            id: id.to_string(),
            child,
        }
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = state::down(Some(&self.id));
    }
}

/// Waits until lab `id` is fully up (3 node + 2 link namespaces and the
/// emulators' threads), or fails after 15 s.
fn wait_until_up(id: &str, child: &mut Child) {
    let until = StdInstant::now() + StdDuration::from_secs(15);
    loop {
        let ns = state::namespaces_of(id).unwrap();
        if ns.len() == 5 && emulator_threads(child.id()) == 4 {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("holder exited early: {status}");
        }
        assert!(StdInstant::now() < until, "lab {id} not up: {ns:?}");
        std::thread::sleep(StdDuration::from_millis(50));
    }
}

/// Threads of `pid` named like emulator threads (`pepl-<link>-<dir>`).
fn emulator_threads(pid: u32) -> usize {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
        .filter(|c| c.starts_with("pepl-"))
        .count()
}

fn assert_gone(id: &str, child_pid: u32) {
    assert!(
        state::namespaces_of(id).unwrap().is_empty(),
        "namespaces left"
    );
    assert!(!Path::new(&LabState::path(id)).exists(), "state file left");
    assert!(state::process_start(child_pid).is_none(), "process left");
    // Nothing of the lab was ever in this namespace; check it stayed so.
    let links = std::fs::read_dir("/sys/class/net").unwrap();
    for l in links.filter_map(|e| e.ok()) {
        let name = l.file_name().into_string().unwrap_or_default();
        assert!(
            !name.starts_with("pep") && !name.starts_with("side-"),
            "{name} in the root namespace"
        );
    }
}

/// One test at a time: a holder's `Lab::up` reaps labs whose owner is
/// dead, and would take the killed lab of the other test before its `down`.
static SERIAL: Mutex<()> = Mutex::new(());

/// The lock. The tests taking it are `#[ignore = "needs root"]`; run
/// anyway without root, they fail here saying why.
fn root() -> MutexGuard<'static, ()> {
    pep_lab::error::require_root_for_test(std::thread::current().name().unwrap_or("cleanup"));
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
#[ignore = "needs root"]
fn down_cleans_up_after_a_killed_lab() {
    let _serial = root();
    let id = format!("{}-killed", std::process::id());
    let mut h = Holder::spawn(&id);
    wait_until_up(&id, &mut h.child);
    h.child.kill().unwrap(); // SIGKILL: no destructor runs
    h.child.wait().unwrap();
    assert_eq!(
        state::namespaces_of(&id).unwrap().len(),
        5,
        "a crash leaves the namespaces"
    );
    let report = state::down(Some(&id)).unwrap();
    assert_eq!(report.namespaces.len(), 5);
    assert!(report.stopped.is_empty(), "the owner was already dead");
    assert_gone(&id, h.child.id());
}

#[test]
#[ignore = "needs root"]
fn down_stops_a_running_lab() {
    let _serial = root();
    let id = format!("{}-running", std::process::id());
    let mut h = Holder::spawn(&id);
    wait_until_up(&id, &mut h.child);
    let report = state::down(Some(&id)).unwrap();
    h.child.wait().unwrap();
    assert_eq!(report.stopped, vec![h.child.id()]);
    assert_eq!(report.namespaces.len(), 5);
    assert_gone(&id, h.child.id());
}
