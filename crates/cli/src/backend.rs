//! `nanopu experiment --backend ray` and `nanopu reproduce --backend ray`:
//! the experiments run as Ray tasks, one per experiment, through the Python
//! package (`python -m nanopu`, `python/nanopu/sweep.py`), which
//! writes the same files as the local backend. The interpreter is
//! `NANOPU_PYTHON`, else the checkout's `.venv/bin/python` (made by
//! `scripts/setup.sh`), else `python3`.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where an experiment's points run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// This process's threads (`--threads`).
    Local,
    /// Ray tasks (one per experiment) on the cluster at `--address` or
    /// `RAY_ADDRESS`, else on a local Ray instance.
    Ray,
}

/// The Python interpreter that has the `nanopu` package.
fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("NANOPU_PYTHON") {
        return p.into();
    }
    // target/release/nanopu -> the checkout's .venv
    let venv = std::env::current_exe().ok().and_then(|exe| {
        let repo = exe.parent()?.parent()?.parent()?.to_path_buf();
        Some(repo.join(".venv/bin/python")).filter(|p| p.exists())
    });
    venv.unwrap_or_else(|| "python3".into())
}

/// What the Ray run needs from the command line.
pub struct RayRun<'a> {
    pub ids: &'a [String],
    pub out: &'a Path,
    pub report: bool,
    pub scale: nanopu_experiments::Scale,
    pub seed: u64,
    pub threads: Option<usize>,
    pub config: Option<&'a Path>,
    pub address: Option<&'a str>,
}

/// Runs the experiments on Ray; returns the exit status of the Python side
/// (0, 125 for an error it printed, 130 for Ctrl-C).
pub fn run_on_ray(r: RayRun<'_>) -> Result<u8> {
    let python = python();
    let mut cmd = Command::new(&python);
    cmd.args(["-m", "nanopu", "--backend", "ray", "--out"])
        .arg(r.out)
        .args(r.ids)
        .arg("--scale")
        .arg(match r.scale {
            nanopu_experiments::Scale::Quick => "quick",
            nanopu_experiments::Scale::Full => "full",
        })
        .arg("--seed")
        .arg(r.seed.to_string())
        .arg("--threads")
        .arg(r.threads.unwrap_or(1).to_string())
        .arg("--command")
        .arg(std::env::args().collect::<Vec<_>>().join(" "));
    if r.report {
        cmd.arg("--report");
    }
    if let Some(c) = r.config {
        cmd.arg("--config").arg(c);
    }
    if let Some(a) = r.address {
        cmd.arg("--address").arg(a);
    }
    let status = cmd.status().with_context(|| {
        format!(
            "cannot start {} for --backend ray (scripts/setup.sh makes .venv with the nanopu package; \
             NANOPU_PYTHON names another interpreter)",
            python.display()
        )
    })?;
    Ok(status
        .code()
        .map_or(crate::EXIT_SIM_ERROR, |c| c.clamp(0, 255) as u8))
}
