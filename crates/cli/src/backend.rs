//! `nanopu experiment --backend ray` and `nanopu reproduce --backend ray`:
//! the experiments run as Ray tasks, one per experiment, through the Python
//! package (`python -m nanopu`, `python/nanopu/sweep.py`), which
//! writes the same files as the local backend. The interpreter is
//! `NANOPU_PYTHON`, else the checkout's `.venv/bin/python` (made by
//! `scripts/setup.sh`), else `python3`.
//!
//! The child dies with this process: Ctrl-C or SIGTERM here is passed on to
//! it (then SIGKILL if it has not ended after [`GRACE`]), and the kernel
//! kills it if this process dies any other way (`PR_SET_PDEATHSIG`).

use anyhow::{Context, Result};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// How long the child has to end after a signal is passed on to it.
const GRACE: Duration = Duration::from_secs(3);

/// The last SIGINT or SIGTERM received while the child runs (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
}

/// Records SIGINT and SIGTERM in [`SIGNAL`] (also when they were inherited
/// as ignored: the child must not outlive an explicit request to stop).
fn catch_signals() -> Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic (async-signal-safe).
        let old = unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
        if old == libc::SIG_ERR {
            anyhow::bail!("cannot install a handler for signal {sig}");
        }
    }
    Ok(())
}

/// Waits for the child, passing on a signal this process receives; returns
/// its exit status, or ends this process as the signal asks.
fn wait_for(mut child: Child) -> Result<u8> {
    let status_of = |status: std::process::ExitStatus| {
        status
            .code()
            .map_or(crate::EXIT_SIM_ERROR, |c| c.clamp(0, 255) as u8)
    };
    loop {
        if let Some(status) = child.try_wait().context("waiting for the Python side")? {
            return Ok(status_of(status));
        }
        let sig = SIGNAL.load(Ordering::SeqCst);
        if sig != 0 {
            let own = stop_child(&mut child, sig);
            if sig == libc::SIGINT {
                if let Some(status) = own {
                    // It saw the Ctrl-C too and said so.
                    return Ok(status_of(status));
                }
                eprintln!("interrupted (Ctrl-C)");
                return Ok(crate::run::EXIT_INTERRUPTED);
            }
            // SIGTERM: end as the signal would have ended us.
            // SAFETY: restoring the default action and raising it.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
            return Ok(128 + sig as u8);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Passes `sig` to the child, then kills it if it has not ended in [`GRACE`].
/// A Ctrl-C at a terminal reaches the child too: it gets a moment to stop
/// on its own first, so that it is not interrupted twice (its status then).
fn stop_child(child: &mut Child, sig: i32) -> Option<std::process::ExitStatus> {
    let own = Instant::now() + Duration::from_millis(300);
    while Instant::now() < own {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child's pid, which we have not reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    let until = Instant::now() + GRACE;
    while Instant::now() < until {
        if let Ok(Some(_)) = child.try_wait() {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("the Python side did not stop within {GRACE:?} of the signal: killing it");
    let _ = child.kill();
    let _ = child.wait();
    None
}

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
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: prctl and getppid are async-signal-safe; nothing is allocated.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                // We died before the prctl: nobody would stop this child.
                libc::_exit(125);
            }
            Ok(())
        });
    }
    catch_signals()?;
    let child = cmd.spawn().with_context(|| {
        format!(
            "cannot start {} for --backend ray (scripts/setup.sh makes .venv with the nanopu package; \
             NANOPU_PYTHON names another interpreter)",
            python.display()
        )
    })?;
    wait_for(child)
}
