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
pub fn run(cmd: GenerateCommand, mut cli: clap::Command) -> Result<(), String> {
    match cmd {
        GenerateCommand::Man { dir } => {
            create(&dir)?;
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

fn create(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}
