//! `pep`: simulate, reproduce, emulate and deploy TCP Performance Enhancing
//! Proxies. This binary only parses arguments and presents results; the work
//! happens in the libraries.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

#[cfg(target_os = "linux")]
mod allocator;
mod amp_cmd;
mod exp_cmd;
mod generate_cmd;
mod lab_cmd;
mod lab_compare;
mod lab_like;
mod lab_pep;
mod lab_tcp;
#[cfg(feature = "daemon")]
mod proxy_cmd;
// Built without the daemon: `pep proxy` says so.
#[cfg(not(feature = "daemon"))]
#[path = "proxy_absent.rs"]
mod proxy_cmd;
mod randomness;
mod reproduce_lab;
mod shard_cmd;
mod sim_cmd;
mod sim_summary;

#[derive(Parser)]
#[command(
    name = "pep",
    version,
    about = "Toolkit for TCP Performance Enhancing Proxies: simulate, emulate, deploy",
    long_about = "pepkit: simulate TCP Performance Enhancing Proxies (RFC 3135) in a fast, \
deterministic discrete-event simulator, compare them with real Linux TCP, and run them \
on real traffic.\n\nStart with `pep sim run`, which runs a built-in GEO-satellite-like \
scenario and prints a summary."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of its largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Run, check and benchmark simulations.
    #[command(subcommand)]
    Sim(sim_cmd::SimCommand),
    /// Run a paper's experiments (or `all`) and check its claims; writes a
    /// Markdown and an HTML report. Exits non-zero if any claim fails.
    Reproduce(exp_cmd::ReproduceArgs),
    /// Emulate scenarios with real Linux TCP in network namespaces (root).
    #[command(subcommand)]
    Lab(lab_cmd::LabCommand),
    /// Run the transparent split-TCP PEP daemon (root), print its rules.
    #[cfg_attr(feature = "daemon", command(subcommand))]
    #[cfg_attr(
        not(feature = "daemon"),
        command(
            about = "The split-TCP PEP daemon: not in this build (built without the `daemon` feature)"
        )
    )]
    Proxy(proxy_cmd::ProxyCommand),
    /// The AMP model of an asymmetric path: forward throughput bound
    /// min(F, A x M x P), Lakshman's k, and the two-class bidirectional table.
    Amp(amp_cmd::AmpArgs),
    /// Man pages and shell completions for packaging (scripts/package-deb.sh).
    #[command(subcommand, hide = true)]
    Generate(generate_cmd::GenerateCommand),
}

/// The simulator's commands print tables and CSV that are often piped
/// (`| head`): a reader that closes early ends the process as it ends any
/// Unix filter, instead of a "Broken pipe" panic. Only for them: the lab
/// and the daemon write to sockets, where a peer that vanishes must be an
/// error (EPIPE, Rust's default), not the end of the process. A sweep
/// killed this way resumes from its records.
fn end_quietly_on_a_closed_pipe() {
    // SAFETY: restores the default disposition of one signal before any
    // thread is started; no handler is installed.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::Sim(_) | Command::Reproduce(_) | Command::Amp(_)
    ) {
        end_quietly_on_a_closed_pipe();
    }
    let result = match cli.command {
        Command::Sim(cmd) => sim_cmd::run(cmd),
        Command::Lab(cmd) => lab_cmd::run(cmd),
        Command::Reproduce(a) => exp_cmd::reproduce(a),
        Command::Proxy(cmd) => proxy_cmd::run(cmd),
        Command::Amp(a) => amp_cmd::run(a),
        Command::Generate(cmd) => generate_cmd::run(cmd, Cli::command()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
