//! `nanopu run`: one program on one node.

use crate::config_file::load_or_default;
use anyhow::{bail, Context, Result};
use nanopu_node::{Node, RunEnd};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct RunArgs {
    /// The program: a bare-metal RV64 ELF linked at 0x80000000.
    pub program: PathBuf,
    /// Number of cores (harts); overrides the configuration file.
    #[arg(long)]
    pub cores: Option<usize>,
    /// Stop with an error after this many core cycles.
    #[arg(long)]
    pub max_cycles: Option<u64>,
    /// Write run statistics as JSON to this file.
    #[arg(long)]
    pub stats_json: Option<PathBuf>,
    /// Write an instruction trace to this file (`-` for standard error):
    /// hart, cycle, pc, encoding, disassembly, value written.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Configuration file (TOML); see `nanopu config`.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Arguments passed to the program (argv[1..]) through HTIF.
    #[arg(last = true)]
    pub args: Vec<String>,
}

/// Runs the program; returns its exit code (clamped to 1..=255 when non-zero).
pub fn run(a: RunArgs) -> Result<u8> {
    let mut cfg = load_or_default(a.config.as_deref())?;
    if let Some(n) = a.cores {
        cfg.node.cores = n;
    }
    let mut node = Node::with_program(cfg.node.clone(), &a.program)?;
    match node.bus.htif.as_mut() {
        Some(h) => {
            h.echo = true;
            h.args = std::iter::once(a.program.display().to_string())
                .chain(a.args.iter().cloned())
                .collect();
        }
        None => eprintln!(
            "warning: {} defines no `tohost` symbol: it cannot print or report an exit code",
            a.program.display()
        ),
    }
    if let Some(path) = &a.trace {
        node.trace = Some(if path.as_os_str() == "-" {
            Box::new(std::io::stderr())
        } else {
            let f = std::fs::File::create(path)
                .with_context(|| format!("cannot create trace file {}", path.display()))?;
            Box::new(std::io::BufWriter::new(f))
        });
    }
    let limit = a.max_cycles.unwrap_or(u64::MAX);
    let start = Instant::now();
    let end = node.run(limit)?;
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(mut t) = node.trace.take() {
        t.flush().context("writing the trace")?;
    }
    if let Some(h) = &node.bus.htif {
        for (num, count) in &h.unsupported {
            eprintln!("warning: the program made {count} unsupported HTIF syscall(s) number {num}");
        }
    }
    let code = match end {
        RunEnd::Exited(code) => code,
        RunEnd::Limit => {
            let waits = node.describe_waits();
            bail!("the program did not exit within --max-cycles {limit}\n{waits}");
        }
    };
    let (_, exit_hart) = node.exit.expect("exited");
    let cycles = node.harts[exit_hart].cycle;
    let instret = node.instret();
    let sim_ns = node.time_fs(exit_hart) as f64 / 1e6;
    if let Some(path) = &a.stats_json {
        let harts: Vec<_> = node
            .harts
            .iter()
            .map(|h| {
                json!({
                    "cycles": h.cycle,
                    "instret": h.instret,
                    "icache_misses": h.stats.icache_misses,
                    "dcache_misses": h.stats.dcache_misses,
                    "branch_mispredicts": h.predictor.mispredicts,
                    "traps": h.stats.traps,
                    "interrupts": h.stats.interrupts,
                    "idle_cycles": h.stats.idle_cycles,
                })
            })
            .collect();
        let stats = json!({
            "exit_code": code,
            "cycles": cycles,
            "instret": instret,
            "sim_ns": sim_ns,
            "wall_s": wall_s,
            "mips": instret as f64 / wall_s.max(1e-9) / 1e6,
            "harts": harts,
            "config": cfg,
        });
        std::fs::write(path, serde_json::to_string_pretty(&stats)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(match code {
        0 => 0,
        c => c.clamp(1, 255) as u8,
    })
}
