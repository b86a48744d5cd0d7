//! The official RISC-V ISA tests (riscv-software-src/riscv-tests, `-p`
//! environment, rv64ui/um/ua/uc/uf/ud/mi), built: every one must pass on a
//! one-hart node within a cycle limit.
//!
//! The built tests are not in this repository: they are looked for in
//! `$NANOPU_RISCV_TESTS` or `../shared/riscv-tests/isa` beside the repository
//! (`scripts/riscv-tests.sh` builds and runs them from a riscv-tests
//! checkout). Without them the test fails when `CI=true` and otherwise says
//! it skipped.

use nanopu_node::{Node, NodeConfig, RunEnd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Far more than any test needs (the longest take about a million cycles).
const CYCLE_LIMIT: u64 = 20_000_000;

fn tests_dir() -> PathBuf {
    match std::env::var_os("NANOPU_RISCV_TESTS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/riscv-tests/isa"),
    }
}

/// Runs one test: `Ok(())` on a pass, else why it failed.
fn run_one(path: &Path) -> Result<(), String> {
    let cfg = NodeConfig {
        cores: 1,
        ..NodeConfig::default()
    };
    let mut node = Node::with_program(cfg, path).map_err(|e| format!("does not load: {e}"))?;
    match node.run(CYCLE_LIMIT) {
        Ok(RunEnd::Exited(0)) => Ok(()),
        Ok(RunEnd::Exited(code)) => Err(format!("failed case {code}")),
        Ok(RunEnd::Limit) => Err(format!("did not finish within {CYCLE_LIMIT} cycles")),
        Err(e) => Err(format!("simulator error: {e}")),
    }
}

#[test]
fn official_isa_tests_pass() {
    let dir = tests_dir();
    let mut tests: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect(),
        Err(e) => {
            let msg = format!(
                "the built RISC-V ISA tests are not at {} ({e}): set NANOPU_RISCV_TESTS to their directory, \
                 or build them with scripts/riscv-tests.sh",
                dir.display()
            );
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{msg}");
            }
            eprintln!("SKIPPED official_isa_tests_pass: {msg}");
            return;
        }
    };
    tests.sort();
    assert!(!tests.is_empty(), "no tests in {}", dir.display());
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(tests.len());
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while let Some(t) = tests.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if let Err(why) = run_one(t) {
                        let name = t.file_name().unwrap_or_default().to_string_lossy();
                        failures.lock().unwrap().push(format!("{name}: {why}"));
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    assert!(
        failures.is_empty(),
        "{} of {} official ISA tests failed:\n  {}",
        failures.len(),
        tests.len(),
        failures.join("\n  ")
    );
    eprintln!(
        "{} official ISA tests passed ({})",
        tests.len(),
        dir.display()
    );
}
