//! # pep-daemon: a transparent split-TCP PEP for Linux
//!
//! Connections from configured client subnets, arriving on configured
//! interfaces, are diverted by TPROXY (nftables or iptables, plus a policy
//! route) to a transparent listener. The accepted socket's local address is
//! the client's original destination; the proxy opens a second connection
//! there (marked with `SO_MARK` so it is never intercepted again) and
//! relays between the two with `pep_core::relay::Relay`, the same sans-IO
//! machine the simulator can drive. Each leg has its own congestion
//! control, buffers, pacing cap, `TCP_NODELAY`, keepalive and MSS, per
//! destination subnet.
//!
//! * [`config`]: `pep.toml`, validated into [`config::Settings`].
//! * [`rules`]: the nft/iptables rules and policy routing.
//! * [`proxy`]: [`Daemon`]: listeners, admission (subnets, global and
//!   per-client limits, descriptors), reload, drain.
//! * [`conn`]: the per-connection driver of the relay.
//! * [`metrics`]: counters and the Prometheus endpoint.
//! * [`net`]: socket options, `TCP_INFO`, subnets.
//! * [`upgrade`]: handing the listeners to a new process (upgrades
//!   without drops).
//! * [`packet`]: packet mode, a bump in the wire regulating ACKs.
//!
//! The driver is the only place that reads the clock: it passes
//! `CLOCK_MONOTONIC` time since start to the relay as `pep_core::Instant`.

pub mod client_rate;
pub mod config;
pub mod conn;
pub mod metrics;
pub mod net;
pub mod notify;
pub mod packet;
pub mod privileges;
pub mod proxy;
pub mod rules;
pub mod shape;
pub mod splice;
pub mod syscheck;
pub mod tunnel;
pub mod units;
pub mod upgrade;

pub use config::Settings;
pub use proxy::{Daemon, StartOptions};

/// Logs to stderr at `level` (`error`..`trace`); for the CLI.
pub fn init_logging(level: &str) -> Result<(), String> {
    let lvl: tracing::Level = level
        .parse()
        .map_err(|_| format!("log level {level:?}: expected error, warn, info, debug or trace"))?;
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_max_level(lvl)
        .with_writer(std::io::stderr)
        // journald and log files get plain text, terminals get colour.
        .with_ansi(std::io::stderr().is_terminal())
        .try_init()
        .map_err(|e| e.to_string())
}
