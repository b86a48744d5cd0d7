//! `nanopu`: the command-line front end of the simulator.

mod bench;
mod config_file;
mod net;
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
    /// Simulate a network of hosts (nanoPU nodes or built-in traffic) from a config file.
    Net(net::NetArgs),
    /// Run experiments (ids from `nanopu experiment --list`); writes CSV and plots.
    Experiment {
        /// Experiment ids; none lists them.
        ids: Vec<String>,
        /// Output directory.
        #[arg(long, default_value = "out/experiments")]
        out: PathBuf,
        #[command(flatten)]
        common: ExperimentOpts,
    },
    /// Re-run the papers' evaluation: every experiment, then report.md and summary.json.
    Reproduce {
        /// Output directory.
        #[arg(long, default_value = "out/reproduce")]
        out: PathBuf,
        #[command(flatten)]
        common: ExperimentOpts,
    },
    /// Print the effective configuration (defaults, or a file's values) as TOML.
    Config {
        /// Configuration file to read (default: built-in defaults).
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

/// Options shared by `experiment` and `reproduce`.
#[derive(clap::Args)]
struct ExperimentOpts {
    /// full (default): the paper's sizes and 20K requests per load point (seconds);
    /// quick: fewer points and requests, for smoke tests.
    #[arg(long, value_enum, default_value = "full")]
    scale: nanopu_experiments::Scale,
    /// Host threads running points in parallel (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Seed of arrivals, payloads and random core selection (same seed, same numbers).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Configuration file (TOML); see `nanopu config`.
    #[arg(long)]
    config: Option<PathBuf>,
}

fn experiment_cmd(
    ids: Vec<String>,
    out: PathBuf,
    o: ExperimentOpts,
    report: bool,
) -> anyhow::Result<u8> {
    if ids.is_empty() && !report {
        for e in nanopu_experiments::all() {
            println!("{:<26} {}", e.id, e.title);
        }
        return Ok(0);
    }
    let cfg = config_file::load_or_default(o.config.as_deref())?;
    nanopu_experiments::run_experiments(&ids, &out, cfg, o.scale, o.threads, o.seed, report)?;
    Ok(0)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(*args),
        Command::Bench(args) => bench::bench(args).map(|()| 0),
        Command::Net(args) => net::net(args),
        Command::Experiment { ids, out, common } => experiment_cmd(ids, out, common, false),
        Command::Reproduce { out, common } => experiment_cmd(Vec::new(), out, common, true),
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
