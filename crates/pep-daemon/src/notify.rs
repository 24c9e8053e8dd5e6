//! systemd's readiness protocol (`Type=notify`, `WatchdogSec=`), spoken
//! directly: one datagram per state to the socket named by
//! `NOTIFY_SOCKET` (a path, or an abstract name written `@name`). Outside
//! systemd the variable is unset and nothing is sent.

use std::ffi::OsString;
use std::os::unix::net::UnixDatagram;
use std::time::Duration;

/// Where to tell the service manager about the daemon, read from the
/// environment once, when the daemon starts.
#[derive(Clone, Debug, Default)]
pub struct Notifier {
    socket: Option<OsString>,
    /// Half of `WATCHDOG_USEC`, when it is set for this process
    /// (`WATCHDOG_PID` unset or ours, or this process takes over).
    pub watchdog_every: Option<Duration>,
}

impl Notifier {
    /// `successor`: this process takes over from the running proxy
    /// ([`crate::upgrade`]) and becomes the service's main process, so the
    /// watchdog is its to feed although `WATCHDOG_PID` (inherited from the
    /// process that started it) names its predecessor.
    pub fn from_env(successor: bool) -> Notifier {
        let watchdog_every = std::env::var("WATCHDOG_USEC")
            .ok()
            .and_then(|u| u.parse::<u64>().ok())
            .filter(|&u| u > 0)
            .filter(|_| match std::env::var("WATCHDOG_PID") {
                Ok(pid) => successor || pid.parse::<u32>().ok() == Some(std::process::id()),
                Err(_) => true,
            })
            .map(|u| Duration::from_micros(u / 2));
        Notifier {
            socket: std::env::var_os("NOTIFY_SOCKET"),
            watchdog_every,
        }
    }

    /// Sends `state` (e.g. `READY=1`), if there is a service manager.
    pub fn notify(&self, state: &str) {
        let Some(path) = &self.socket else {
            return;
        };
        let Ok(sock) = UnixDatagram::unbound() else {
            return;
        };
        let sent = match path.as_encoded_bytes().strip_prefix(b"@") {
            Some(name) => {
                use std::os::linux::net::SocketAddrExt;
                std::os::unix::net::SocketAddr::from_abstract_name(name)
                    .and_then(|a| sock.send_to_addr(state.as_bytes(), &a))
            }
            None => sock.send_to(state.as_bytes(), path),
        };
        if let Err(e) = sent {
            tracing::debug!("NOTIFY_SOCKET: {e}");
        }
    }
}
