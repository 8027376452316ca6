//! The `mosaic` binary, the only composition root of the workspace.
//!
//! Today it offers `mosaic shell`: a single-node storage-engine shell over a data directory
//! (put/get/delete/scan/flush/compact/stats/levels), reading commands from stdin so it works
//! both interactively and in scripts. The CQL server and the local cluster arrive with the
//! CQL and cluster issues.

mod shell;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "mosaic",
    version,
    about = "Mosaic: a wide-column store that speaks CQL"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Open a storage engine on a data directory and run commands from stdin.
    Shell(shell::ShellArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Shell(args) => shell::run(args),
    }
}
