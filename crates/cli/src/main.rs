//! `nanopu`: the command-line front end of the simulator.

mod bench;
mod config_file;
mod run;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit status for errors of the simulator itself (bad input, guest fault,
/// deadlock, cycle limit): distinct from the usual small program exit codes.
pub const EXIT_SIM_ERROR: u8 = 125;

#[derive(Parser)]
#[command(
    name = "nanopu",
    version,
    about = "A cycle-level simulator of nanoPU machines"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a bare-metal RV64GC program on a nanoPU node.
    Run(Box<run::RunArgs>),
    /// Measure simulator speed (simulated MIPS, simulated cycles per host second).
    Bench(bench::BenchArgs),
    /// Print the effective configuration (defaults, or a file's values) as TOML.
    Config {
        /// Configuration file to read (default: built-in defaults).
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(*args),
        Command::Bench(args) => bench::bench(args).map(|()| 0),
        Command::Config { config } => config_file::load_or_default(config.as_deref()).map(|c| {
            print!("{}", c.to_toml());
            0
        }),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_SIM_ERROR)
        }
    }
}
