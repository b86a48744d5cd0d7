//! `nanopu`: the command-line front end of the simulator.

mod backend;
mod bench;
mod config_file;
mod gdb;
mod net;
mod output;
mod run;
mod timeline_args;

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
    ///
    /// Simulated MIPS counts the instructions executed one by one: iterations
    /// of polling loops the node skips in bulk are left out (they are
    /// printed apart).
    Bench(bench::BenchArgs),
    /// Simulate a network of hosts (nanoPU nodes or built-in traffic) from a config file.
    Net(net::NetArgs),
    /// Run experiments (`nanopu experiment` with no id lists them); writes CSV and plots.
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
    /// Where experiments run: local (this process's threads) or ray (one Ray
    /// task per experiment, through the Python package; docs/python.md).
    #[arg(long, value_enum, default_value = "local")]
    backend: backend::Backend,
    /// The Ray cluster to use with --backend ray (default: RAY_ADDRESS, else
    /// a local Ray instance).
    #[arg(long)]
    address: Option<String>,
}

fn experiment_cmd(
    ids: Vec<String>,
    out: PathBuf,
    o: ExperimentOpts,
    report: bool,
) -> anyhow::Result<u8> {
    if ids.is_empty() && !report {
        let mut list = String::new();
        for e in nanopu_experiments::all() {
            list.push_str(&format!("{:<26} {}\n", e.id, e.title));
        }
        output::write_stdout(&list)?;
        return Ok(0);
    }
    if o.backend == backend::Backend::Ray {
        return backend::run_on_ray(backend::RayRun {
            ids: &ids,
            out: &out,
            report,
            scale: o.scale,
            seed: o.seed,
            threads: o.threads,
            config: o.config.as_deref(),
            address: o.address.as_deref(),
        });
    }
    let cfg = config_file::load_or_default(o.config.as_deref())?;
    nanopu_experiments::run_experiments(&ids, &out, cfg, o.scale, o.threads, o.seed, report)?;
    Ok(0)
}

/// Parses the command line. Argument errors are the simulator's own errors:
/// one `error:` line with a hint, exit 125 (clap's 2 is what a guest
/// exiting with 2 gives). `--help` and `--version` print and exit 0.
fn parse_args() -> Result<Cli, ExitCode> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    Cli::try_parse_from(&args).map_err(|e| {
        use clap::error::ErrorKind;
        match e.kind() {
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                // Help on a closed or full stdout is not worth a panic.
                let _ = e.print();
                ExitCode::SUCCESS
            }
            _ => {
                eprintln!("error: {}", argument_error_line(&e));
                eprintln!("hint: see `{}`", help_command(&args));
                ExitCode::from(EXIT_SIM_ERROR)
            }
        }
    })
}

/// clap's message, on one line (its first, without the `error: ` prefix).
fn argument_error_line(e: &clap::Error) -> String {
    use clap::error::ErrorKind;
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return "no command given".into();
    }
    let rendered = e.render().to_string();
    let mut lines = rendered.lines().filter(|l| !l.trim().is_empty());
    let mut line = lines
        .next()
        .unwrap_or("invalid arguments")
        .trim_start_matches("error:")
        .trim()
        .to_string();
    // "the following required arguments were not provided:" lists them on
    // the lines below: bring them onto the one line.
    if line.ends_with(':') {
        for l in lines.take_while(|l| l.starts_with("  ")) {
            line.push(' ');
            line.push_str(l.trim());
        }
    }
    line
}

/// `nanopu SUBCOMMAND --help` for the subcommand named on the line, if any.
fn help_command(args: &[std::ffi::OsString]) -> String {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let sub = args
        .get(1)
        .and_then(|a| a.to_str())
        .filter(|a| cmd.get_subcommands().any(|s| s.get_name() == *a));
    match sub {
        Some(s) => format!("nanopu {s} --help"),
        None => "nanopu --help".into(),
    }
}

fn main() -> ExitCode {
    let cli = match parse_args() {
        Ok(c) => c,
        Err(code) => return code,
    };
    let result = match cli.command {
        Command::Run(args) => run::run(*args),
        Command::Bench(args) => bench::bench(args).map(|()| 0),
        Command::Net(args) => net::net(args),
        Command::Experiment { ids, out, common } => experiment_cmd(ids, out, common, false),
        Command::Reproduce { out, common } => experiment_cmd(Vec::new(), out, common, true),
        Command::Config { config } => config_file::load_or_default(config.as_deref())
            .and_then(|c| output::write_stdout(&c.to_toml()))
            .map(|()| 0),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_SIM_ERROR)
        }
    }
}
