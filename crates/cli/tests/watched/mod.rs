//! Runs of `nanopu` watched for memory and time (issue 53: no run over
//! 500 MB where the work needs little, nothing that waits forever): shared
//! by the tests of misbehaving guests.
#![allow(dead_code)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Far above what any of these runs needs (tens of MB), far below what
/// the defects grew to (GBs).
pub const RSS_LIMIT_KB: u64 = 500_000;
pub const TIME_LIMIT: Duration = Duration::from_secs(120);

pub struct Ran {
    pub code: Option<i32>,
    /// The first MiB of stdout and stderr, and how many bytes stdout had.
    pub stdout: String,
    pub stdout_bytes: u64,
    pub stderr: String,
    /// The largest resident set seen, sampled every 10 ms.
    pub peak_rss_kb: u64,
    /// Killed for going past a limit: which, and when.
    pub killed: Option<String>,
}

impl Ran {
    /// The last line of stderr, or of stdout if stderr is empty.
    pub fn last_line(&self) -> &str {
        let out = if self.stderr.trim().is_empty() {
            &self.stdout
        } else {
            &self.stderr
        };
        out.trim_end().lines().last().unwrap_or("")
    }
}

/// Keeps the first `keep` bytes of `r`, counts them all.
fn drain(
    mut r: impl Read + Send + 'static,
    keep: usize,
) -> std::thread::JoinHandle<(Vec<u8>, u64)> {
    std::thread::spawn(move || {
        let (mut kept, mut total, mut buf) = (Vec::new(), 0u64, vec![0u8; 1 << 16]);
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n as u64;
            let room = keep.saturating_sub(kept.len()).min(n);
            kept.extend_from_slice(&buf[..room]);
        }
        (kept, total)
    })
}

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// `nanopu ARGS` in `cwd`, watched: killed past [`RSS_LIMIT_KB`] or
/// [`TIME_LIMIT`] (then `killed` says which).
pub fn nanopu(args: &[&str], cwd: &Path) -> Ran {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .args(args)
        .current_dir(cwd)
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nanopu runs");
    let out = drain(child.stdout.take().unwrap(), 1 << 20);
    let err = drain(child.stderr.take().unwrap(), 1 << 20);
    let start = Instant::now();
    let (mut peak, mut killed) = (0, None);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        peak = peak.max(rss_kb(child.id()));
        if peak > RSS_LIMIT_KB || start.elapsed() > TIME_LIMIT {
            killed = Some(format!("killed at {peak} KB after {:?}", start.elapsed()));
            child.kill().unwrap();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let (stdout, stdout_bytes) = out.join().unwrap();
    let (stderr, _) = err.join().unwrap();
    Ran {
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stdout_bytes,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        peak_rss_kb: peak,
        killed,
    }
}
