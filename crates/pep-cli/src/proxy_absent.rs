//! `pep proxy` in a binary built without the daemon (`cargo build -p
//! pep-cli --no-default-features`): it takes any arguments and says how to
//! get a binary that has it.

use clap::Args;

/// Whatever was asked of the daemon.
#[derive(Args)]
pub struct ProxyCommand {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    _args: Vec<String>,
}

pub fn run(_: ProxyCommand) -> Result<(), String> {
    Err(
        "`pep proxy`: this pep was built without the daemon (cargo feature `daemon` off, \
         as with --no-default-features); build it with `cargo build -p pep-cli` \
         (the default features) to run the proxy"
            .into(),
    )
}
