//! `nanopu bench`: simulator speed on the bundled compute kernel and on an
//! idle node.

use crate::config_file::SimConfig;
use anyhow::{bail, Context, Result};
use nanopu_node::{Node, RunEnd};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Directory holding the bundled guest programs (default: the SDK's build directory).
    #[arg(long)]
    pub programs: Option<PathBuf>,
}

/// Where `make -C sdk` puts the guest programs.
pub fn sdk_build_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("NANOPU_SDK_BUILD") {
        return dir.into();
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sdk/build")
}

fn program(dir: &std::path::Path, name: &str) -> Result<PathBuf> {
    let p = dir.join(format!("{name}.elf"));
    if !p.exists() {
        bail!(
            "{} is missing: build the guest programs first (`make -C sdk`, needs gcc-riscv64-unknown-elf)",
            p.display()
        );
    }
    Ok(p)
}

pub fn bench(a: BenchArgs) -> Result<()> {
    let dir = a.programs.unwrap_or_else(sdk_build_dir);
    let cfg = SimConfig::default().node;

    // Compute kernel: one busy hart, timing model on.
    let kernel = program(&dir, "matmul")?;
    let mut node = Node::with_program(cfg.clone(), &kernel)?;
    let start = Instant::now();
    let end = node.run(u64::MAX).context("running the compute kernel")?;
    let kernel_s = start.elapsed().as_secs_f64();
    if end != RunEnd::Exited(0) {
        bail!("the compute kernel failed its self-check ({end:?})");
    }
    let instret = node.instret();
    let cycles = node.harts[0].cycle;
    let kernel_mips = instret as f64 / kernel_s / 1e6;
    let kernel_cycles_per_s = cycles as f64 / kernel_s;

    // Idle: four harts in lnic_wait for one simulated second.
    let idle = program(&dir, "idle_wait")?;
    let mut node = Node::with_program(cfg.clone(), &idle)?;
    let one_second = cfg.core.clock_mhz as u64 * 1_000_000;
    let start = Instant::now();
    let end = node.run(one_second).context("running the idle node")?;
    let idle_s = start.elapsed().as_secs_f64();
    if end != RunEnd::Limit {
        bail!("the idle program ended early ({end:?})");
    }
    let idle_cycles_per_s = one_second as f64 / idle_s;

    println!(
        "compute kernel (matmul): {instret} instructions, {cycles} cycles in {kernel_s:.3} s: {kernel_mips:.1} simulated MIPS, {:.1} M simulated cycles/s",
        kernel_cycles_per_s / 1e6
    );
    println!(
        "idle node ({} harts in lnic_wait, 1 simulated second): {idle_s:.4} s: {:.3e} simulated cycles/s",
        cfg.cores, idle_cycles_per_s
    );
    if let Some(path) = a.json {
        let j = json!({
            "kernel_mips": kernel_mips,
            "kernel_cycles_per_s": kernel_cycles_per_s,
            "kernel_instret": instret,
            "kernel_wall_s": kernel_s,
            "idle_cycles_per_s": idle_cycles_per_s,
            "idle_wall_s": idle_s,
        });
        std::fs::write(&path, serde_json::to_string_pretty(&j)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
