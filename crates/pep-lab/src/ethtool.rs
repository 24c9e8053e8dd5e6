//! Turning off segmentation and checksum offloads with the `SIOCETHTOOL`
//! ioctl, so the lab needs no `ethtool` binary.
//!
//! Why: with TSO/GSO on, a veth hands up to 64 KB "super-packets" to the
//! emulator, which would serialize a whole burst as one packet; with GRO on,
//! the receiving side merges frames again; with transmit checksum offload
//! on, the stack leaves the TCP checksum for a NIC to fill in, and a frame
//! that crosses the emulator's packet sockets arrives with a wrong one. The
//! legacy per-feature commands (`ETHTOOL_STXCSUM`, `_SRXCSUM`, `_STSO`,
//! `_SGSO`, `_SGRO`) are used because they need no feature-name lookup;
//! the kernel maps them onto the feature bits and their dependencies (TSO
//! needs checksum offload).
//!
//! The calls resolve the interface name in the calling thread's namespace.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::error::{LabError, Result};

// From <linux/ethtool.h>.
const ETHTOOL_GRXCSUM: u32 = 0x14;
const ETHTOOL_SRXCSUM: u32 = 0x15;
const ETHTOOL_GTXCSUM: u32 = 0x16;
const ETHTOOL_STXCSUM: u32 = 0x17;
const ETHTOOL_GSG: u32 = 0x18;
const ETHTOOL_GTSO: u32 = 0x1e;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_GGSO: u32 = 0x23;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_GGRO: u32 = 0x2b;
const ETHTOOL_SGRO: u32 = 0x2c;

/// `struct ethtool_value`.
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// Offload settings of one interface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offloads {
    pub rx_checksum: bool,
    pub tx_checksum: bool,
    pub scatter_gather: bool,
    pub tso: bool,
    pub gso: bool,
    pub gro: bool,
}

impl Offloads {
    /// None of the offloads that change what the emulator sees or what
    /// the stack checks is on.
    pub fn emulation_safe(&self) -> bool {
        !(self.rx_checksum || self.tx_checksum || self.tso || self.gso || self.gro)
    }
}

fn control_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the fd is owned below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ethtool(sock: &OwnedFd, ifname: &str, cmd: u32, data: u32) -> io::Result<u32> {
    let name = ifname.as_bytes();
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "bad interface name",
        ));
    }
    let mut value = EthtoolValue { cmd, data };
    // SAFETY: ifreq is plain data; all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &b) in ifr.ifr_name.iter_mut().zip(name) {
        *dst = b as libc::c_char;
    }
    ifr.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
    // SAFETY: `ifr` points at `value`, which outlives the call.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL as _, &mut ifr) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(value.data)
    }
}

fn wrap(ifname: &str, what: &str) -> impl FnOnce(io::Error) -> LabError {
    let what = format!("ethtool {what} on {ifname}");
    move |source| LabError::Io { what, source }
}

/// Reads the offload settings of `ifname`.
pub fn offloads(ifname: &str) -> Result<Offloads> {
    let s = control_socket().map_err(wrap(ifname, "socket"))?;
    let get = |cmd, what| {
        ethtool(&s, ifname, cmd, 0)
            .map(|v| v != 0)
            .map_err(wrap(ifname, what))
    };
    Ok(Offloads {
        rx_checksum: get(ETHTOOL_GRXCSUM, "get rx-checksum")?,
        tx_checksum: get(ETHTOOL_GTXCSUM, "get tx-checksum")?,
        scatter_gather: get(ETHTOOL_GSG, "get sg")?,
        tso: get(ETHTOOL_GTSO, "get tso")?,
        gso: get(ETHTOOL_GGSO, "get gso")?,
        gro: get(ETHTOOL_GGRO, "get gro")?,
    })
}

/// Turns off GRO, GSO, TSO and checksum offload (both ways) on `ifname`
/// and returns the resulting settings, checked. Receive checksum offload
/// goes too, so every node verifies every checksum in software: a frame
/// the emulator damaged could not pass unnoticed.
pub fn disable_offloads(ifname: &str) -> Result<Offloads> {
    let s = control_socket().map_err(wrap(ifname, "socket"))?;
    for (cmd, what) in [
        (ETHTOOL_SGRO, "gro off"),
        (ETHTOOL_SGSO, "gso off"),
        (ETHTOOL_STSO, "tso off"),
        (ETHTOOL_STXCSUM, "tx-checksum off"),
        (ETHTOOL_SRXCSUM, "rx-checksum off"),
    ] {
        ethtool(&s, ifname, cmd, 0).map_err(wrap(ifname, what))?;
    }
    let now = offloads(ifname)?;
    if now.emulation_safe() {
        Ok(now)
    } else {
        Err(LabError::Topology(format!(
            "offloads still on for {ifname} after turning them off: {now:?}"
        )))
    }
}
