//! `pep proxy`: the transparent split-TCP PEP daemon.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use pep_daemon::{config, proxy, rules, StartOptions};

#[derive(Subcommand)]
pub enum ProxyCommand {
    /// Run the proxy in the foreground (root or CAP_NET_ADMIN). SIGTERM or
    /// Ctrl-C drains and stops; SIGHUP reloads the config file. With a
    /// `[packet]` section, runs packet mode (docs/packet-mode.md) instead.
    Run {
        #[command(flatten)]
        run: RunArgs,
    },
    /// Start this binary as the new proxy without dropping a connection:
    /// it takes the listening sockets (and the installed rules) from the
    /// proxy running with the same upgrade socket, which then stops
    /// accepting, drains its connections in place and exits. SIGUSR2 to
    /// the running proxy starts this for you (`systemctl kill -s USR2
    /// --kill-whom=main pep-proxy`). See docs/operations.md.
    Upgrade {
        #[command(flatten)]
        run: RunArgs,
    },
    /// Print the interception rules and routes for the configuration.
    Rules {
        #[command(flatten)]
        cfg: ConfigArgs,
    },
    /// Validate the configuration (and that the kernel has its congestion
    /// controls) without running.
    Check {
        #[command(flatten)]
        cfg: ConfigArgs,
        /// Also check this host: the kernel's TPROXY and socket match (the
        /// rules dry-run by the kernel; root), the congestion controls,
        /// interfaces up, forwarding, routes back to the client subnets
        /// and the descriptor limit. Exits 1 naming what is missing.
        #[arg(long)]
        system: bool,
    },
    /// Print an annotated example configuration.
    DefaultConfig,
    /// Make a key pair for one node of a two-node tunnel: `<dir>/<name>.pem`
    /// (its certificate: copy it to the peer as tunnel.peer_cert) and
    /// `<dir>/<name>.key` (private, mode 0600).
    Keygen {
        /// Directory to write into (created if missing).
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// The node's name, used for the file names.
        #[arg(long)]
        name: String,
    },
}

/// How to run (`run` and `upgrade`).
#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    cfg: ConfigArgs,
    /// Apply the interception rules (nft/iptables and policy routing)
    /// at start and remove them on exit.
    #[arg(long)]
    install_rules: bool,
    /// error, warn, info, debug or trace.
    #[arg(long, default_value = "info")]
    log_level: String,
    /// Unix socket over which the running proxy hands its listening
    /// sockets to a new one (`pep proxy upgrade`); "none" to serve no
    /// upgrades.
    #[arg(long, default_value = "/run/pep/upgrade.sock")]
    upgrade_socket: PathBuf,
}

/// The config file and flags for its common fields (flags win).
#[derive(Args)]
pub struct ConfigArgs {
    /// Configuration file (TOML); see `pep proxy default-config`.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// TPROXY port (proxy.port).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    port: Option<u16>,
    /// Interfaces clients arrive on (intercept.interfaces), repeatable.
    #[arg(long = "interface")]
    interfaces: Vec<String>,
    /// Client subnets served (intercept.subnets), repeatable.
    #[arg(long = "subnet")]
    subnets: Vec<String>,
    /// Congestion control toward clients (client_leg.cc).
    #[arg(long)]
    client_cc: Option<String>,
    /// Congestion control toward servers (server_leg.cc).
    #[arg(long)]
    server_cc: Option<String>,
    /// Buffer per direction per connection, e.g. 4MiB (proxy.buffer).
    #[arg(long)]
    buffer: Option<String>,
    /// proxy.max_connections.
    #[arg(long)]
    max_connections: Option<u32>,
    /// Prometheus endpoint address (proxy.metrics), e.g. 127.0.0.1:9187.
    #[arg(long)]
    metrics: Option<String>,
}

/// `s` as a TOML string (escaped as TOML escapes, not as Rust does).
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn list(v: &[String]) -> String {
    format!(
        "[{}]",
        v.iter().map(|s| quoted(s)).collect::<Vec<_>>().join(", ")
    )
}

impl ConfigArgs {
    fn load(&self) -> Result<config::Settings, String> {
        let (text, file) = match &self.config {
            Some(p) => (
                pep_sim::scenario::read_text(p, "configuration file")?,
                p.display().to_string(),
            ),
            None => (String::new(), "(flags)".to_string()),
        };
        let mut o: Vec<(String, String)> = Vec::new();
        // The flag each key came from, to blame it rather than the file.
        let mut flags: Vec<(&str, &str)> = Vec::new();
        let mut add = |k: &'static str, flag: &'static str, v: String| {
            o.push((k.to_string(), v));
            flags.push((k, flag));
        };
        if let Some(p) = self.port {
            add("proxy.port", "port", p.to_string());
        }
        if !self.interfaces.is_empty() {
            add("intercept.interfaces", "interface", list(&self.interfaces));
        }
        if !self.subnets.is_empty() {
            add("intercept.subnets", "subnet", list(&self.subnets));
        }
        if let Some(c) = &self.client_cc {
            add("client_leg.cc", "client-cc", quoted(c));
        }
        if let Some(c) = &self.server_cc {
            add("server_leg.cc", "server-cc", quoted(c));
        }
        if let Some(b) = &self.buffer {
            add("proxy.buffer", "buffer", quoted(b));
        }
        if let Some(n) = self.max_connections {
            add("proxy.max_connections", "max-connections", n.to_string());
        }
        if let Some(m) = &self.metrics {
            add("proxy.metrics", "metrics", quoted(m));
        }
        config::parse_with(&text, &file, &o).map_err(|e| match e {
            config::ConfigError::Field { field, msg, .. } => {
                let flag = flags.iter().find(|(k, _)| {
                    field == *k || field.strip_prefix(*k).is_some_and(|r| r.starts_with('['))
                });
                match flag {
                    Some((_, f)) => format!("--{f}: {field}: {msg}"),
                    None => format!("{file}: {field}: {msg}"),
                }
            }
            e => e.to_string(),
        })
    }
}

pub fn run(cmd: ProxyCommand) -> Result<(), String> {
    match cmd {
        ProxyCommand::DefaultConfig => {
            print!("{}", config::EXAMPLE);
            Ok(())
        }
        ProxyCommand::Rules { cfg } => {
            print!("{}", rules::render(&cfg.load()?));
            Ok(())
        }
        ProxyCommand::Check { cfg, system } => {
            let s = cfg.load()?;
            if system && s.packet.is_none() {
                let findings = pep_daemon::syscheck::check(&s);
                let missing = findings.iter().filter(|f| f.is_err()).count();
                for f in &findings {
                    match f {
                        Ok(m) => println!("ok: {m}"),
                        Err(m) => println!("missing: {m}"),
                    }
                }
                if missing > 0 {
                    return Err(format!("{missing} thing(s) missing on this host (above)"));
                }
            }
            if let Some(p) = &s.packet {
                println!("ok: packet mode, {}", p.summary());
                return Ok(());
            }
            proxy::preflight(&s)?;
            for note in s.unused() {
                println!("note: not used: {note}");
            }
            println!(
                "ok: port {}, {} interface(s), {} subnet(s), {} route(s), buffer {} B per direction",
                s.port,
                s.interfaces.len(),
                s.subnets.len(),
                s.routes.len(),
                s.buffer
            );
            Ok(())
        }
        ProxyCommand::Keygen { dir, name } => {
            // A leading '.' would make hidden files ("..pem" for ".").
            let ok = !name.is_empty()
                && !name.starts_with('.')
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
            if !ok {
                return Err(format!(
                    "--name {name:?}: use letters, digits, '-', '_' and '.' (not first)"
                ));
            }
            let (cert, key) = pep_daemon::tunnel::keygen(&dir, &name)?;
            println!(
                "wrote {} (give it to the peer as tunnel.peer_cert) and {} (keep it private)",
                cert.display(),
                key.display()
            );
            Ok(())
        }
        ProxyCommand::Run { run } => run_proxy(run, false),
        ProxyCommand::Upgrade { run } => run_proxy(run, true),
    }
}

fn run_proxy(run: RunArgs, take_over: bool) -> Result<(), String> {
    let RunArgs {
        cfg,
        install_rules,
        log_level,
        upgrade_socket,
    } = run;
    pep_daemon::init_logging(&log_level)?;
    let s = cfg.load()?;
    if s.packet.is_some() {
        if take_over {
            return Err("upgrade: packet mode holds no listeners to hand over; restart it".into());
        }
        return pep_daemon::packet::run_foreground(s);
    }
    let socket = (upgrade_socket.as_os_str() != "none").then_some(upgrade_socket);
    if take_over && socket.is_none() {
        return Err("upgrade: --upgrade-socket none: nothing to take over from".into());
    }
    let opts = StartOptions {
        install_rules,
        signals: true,
        config_path: cfg.config.clone(),
        drop_privileges: true,
        take_over: socket.clone().filter(|_| take_over),
        upgrade_command: socket.as_ref().map(|_| upgrade_command()),
        upgrade_socket: socket,
    };
    proxy::run_foreground(s, opts)
}

/// This command line with `run` as `upgrade`: SIGUSR2 starts it. The
/// binary is named by the path it was started by, not /proc/self/exe: an
/// upgrade replaces the file, and the new one must run.
fn upgrade_command() -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(a) = args.iter_mut().skip(1).find(|a| *a == "run") {
        *a = "upgrade".into();
    }
    args
}
