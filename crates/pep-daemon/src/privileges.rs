//! Dropping root after setup (`proxy.user`).
//!
//! Everything that needs root happens before: binding the listeners and the
//! metrics endpoint, raising the descriptor limit, installing the rules.
//! What the proxy still needs afterwards is `CAP_NET_ADMIN` (the
//! `IP_TRANSPARENT` bind of server legs with `keep_client_source`, `SO_MARK`
//! on every server leg, and `nft`/`ip` to re-apply rules on reload and
//! remove them at exit) and `CAP_NET_RAW` (transparent sockets on older
//! kernels). Those two stay permitted and effective; `CAP_NET_ADMIN` is
//! also ambient so the `nft` and `ip` children inherit it. Every other
//! capability leaves the bounding set, so nothing can regain it.

use caps::{CapSet, Capability, CapsHashSet};
use nix::unistd::{Gid, Uid, User};

/// Who to become.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunAs {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

impl RunAs {
    /// Looks `name` up in the user database.
    pub fn lookup(name: &str) -> Result<RunAs, String> {
        match User::from_name(name) {
            Ok(Some(u)) => Ok(RunAs {
                name: name.to_string(),
                uid: u.uid.as_raw(),
                gid: u.gid.as_raw(),
            }),
            Ok(None) => Err(format!("no user named {name:?}")),
            Err(e) => Err(format!("looking up user {name:?}: {e}")),
        }
    }
}

/// The capabilities kept after the switch.
pub const KEPT: [Capability; 2] = [Capability::CAP_NET_ADMIN, Capability::CAP_NET_RAW];

/// Becomes `who`, keeping [`KEPT`]. A process already running as `who`
/// (a systemd unit with `User=`) is left as it is.
pub fn drop_to(who: &RunAs) -> Result<(), String> {
    let uid = Uid::current().as_raw();
    if uid == who.uid {
        return Ok(());
    }
    if uid != 0 {
        return Err(format!(
            "proxy.user: switching to {:?} needs root (running as uid {uid})",
            who.name
        ));
    }
    let kept: CapsHashSet = KEPT.into_iter().collect();
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("dropping privileges: {what}: {e}");
    for c in caps::all() {
        if !kept.contains(&c) {
            caps::drop(None, CapSet::Bounding, c).map_err(|e| fail("bounding set", &e))?;
        }
    }
    // Keep the permitted set across the uid change.
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_KEEPCAPS, 1, 0, 0, 0) } != 0 {
        return Err(fail("PR_SET_KEEPCAPS", &std::io::Error::last_os_error()));
    }
    let gid = Gid::from_raw(who.gid);
    nix::unistd::setgroups(&[gid]).map_err(|e| fail("setgroups", &e))?;
    // glibc applies set*id to every thread of the process.
    nix::unistd::setresgid(gid, gid, gid).map_err(|e| fail("setresgid", &e))?;
    let u = Uid::from_raw(who.uid);
    nix::unistd::setresuid(u, u, u).map_err(|e| fail("setresuid", &e))?;
    // SAFETY: as above.
    unsafe { libc::prctl(libc::PR_SET_KEEPCAPS, 0, 0, 0, 0) };
    caps::set(None, CapSet::Permitted, &kept).map_err(|e| fail("permitted", &e))?;
    caps::set(None, CapSet::Effective, &kept).map_err(|e| fail("effective", &e))?;
    let admin: CapsHashSet = [Capability::CAP_NET_ADMIN].into_iter().collect();
    caps::set(None, CapSet::Inheritable, &admin).map_err(|e| fail("inheritable", &e))?;
    caps::raise(None, CapSet::Ambient, Capability::CAP_NET_ADMIN)
        .map_err(|e| fail("ambient", &e))?;
    Ok(())
}
