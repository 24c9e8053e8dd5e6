//! `pep generate` (hidden): the man pages and shell completions the Debian
//! package ships, generated from this binary's own clap definition so they
//! cannot drift from the flags it accepts.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use clap_complete::Shell;

#[derive(Subcommand)]
pub enum GenerateCommand {
    /// Man pages (section 1) into DIR: pep.1 and one per subcommand
    /// (pep-sim.1, pep-sim-run.1, ...).
    Man {
        /// Directory to write into (created if missing).
        dir: PathBuf,
    },
    /// The completion script for SHELL into DIR, named as clap_complete
    /// names it (pep.bash, _pep, pep.fish, ...).
    Completions {
        shell: Shell,
        /// Directory to write into (created if missing).
        dir: PathBuf,
    },
}

/// `cli` is the whole `pep` command (`Cli::command()`).
pub fn run(cmd: GenerateCommand, cli: clap::Command) -> Result<(), String> {
    let mut cli = without_hidden(cli);
    match cmd {
        GenerateCommand::Man { dir } => {
            create(&dir)?;
            // Each page's header names the version, subcommands' too.
            cli = with_version(cli, env!("CARGO_PKG_VERSION"));
            clap_mangen::generate_to(cli, &dir)
                .map_err(|e| format!("man pages into {}: {e}", dir.display()))
        }
        GenerateCommand::Completions { shell, dir } => {
            create(&dir)?;
            let path = clap_complete::generate_to(shell, &mut cli, "pep", &dir)
                .map_err(|e| format!("{shell} completions into {}: {e}", dir.display()))?;
            println!("{}", path.display());
            Ok(())
        }
    }
}

/// `cli` less its hidden subcommands (`generate`): clap_complete's bash
/// script offers hidden ones too.
fn without_hidden(cli: clap::Command) -> clap::Command {
    let shown: Vec<clap::Command> = cli
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let hidden: Vec<String> = cli
        .get_subcommands()
        .filter(|s| s.is_hide_set())
        .map(|s| s.get_name().to_string())
        .collect();
    if hidden.is_empty() {
        return cli;
    }
    let mut top = clap::Command::new("pep")
        .version(env!("CARGO_PKG_VERSION"))
        .args(cli.get_arguments().cloned())
        .subcommands(shown);
    if let Some(a) = cli.get_about() {
        top = top.about(a.clone());
    }
    if let Some(a) = cli.get_long_about() {
        top = top.long_about(a.clone());
    }
    if let Some(a) = cli.get_after_help() {
        top = top.after_help(a.clone());
    }
    top.subcommand_required(cli.is_subcommand_required_set())
}

fn with_version(cmd: clap::Command, v: &'static str) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    let mut cmd = cmd.version(v);
    for n in names {
        cmd = cmd.mut_subcommand(n, |s| with_version(s, v));
    }
    cmd
}

fn create(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}
