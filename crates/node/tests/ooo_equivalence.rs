//! The out-of-order timing model changes time, nothing else: on every
//! guest program in `sdk/build` and every official RISC-V test, a node on
//! the out-of-order model (Broadwell preset) retires exactly the
//! instructions the in-order one does, with the same results, in the same
//! order: each retired instruction's pc, encoding and destination value
//! are hashed into a running digest, checkpointed every
//! [`CHECKPOINT`] instructions, and the two runs' checkpoints must agree.
//!
//! Where a program observes time its path may rightly differ: the digest
//! stops (frozen) after an instruction that reads a counter or a nanoPU
//! CSR (`cycle`, `time`, `instret`, `lmsgsrdy`, ...), loads from a device
//! (the CLINT's `mtime`) or after an interrupt; both runs must then freeze
//! at the same instruction. One core (several harts interleave by time),
//! at most [`MAX_INSTRUCTIONS`] per program.

mod common;

use common::*;
use nanopu_core::decode_cache::Decoded;
use nanopu_core::{CorePreset, Hart, MemoryPeek, Observer};
use nanopu_isa::Opcode;
use nanopu_node::{Node, NodeConfig, ObservedEnd};
use std::path::{Path, PathBuf};

const CHECKPOINT: u64 = 4096;
const MAX_INSTRUCTIONS: u64 = 1_500_000;
const MAX_CYCLES: u64 = 400_000_000;

/// The digest of one run.
#[derive(Default)]
struct Digest {
    hash: u64,
    count: u64,
    checkpoints: Vec<u64>,
    frozen: bool,
    interrupts: u64,
    /// The device load or counter read seen before this instruction.
    freeze_after: bool,
}

fn mix(h: u64, v: u64) -> u64 {
    (h ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29)
}

/// Whether `d` observes time: a counter or nanoPU CSR, a device load.
fn observes_time(hart: &Hart, d: &Decoded) -> bool {
    use Opcode::*;
    let i = &d.inst;
    match i.op {
        Csrrw | Csrrs | Csrrc | Csrrwi | Csrrsi | Csrrci => {
            let csr = (i.imm as u32) & 0xfff;
            (0xb00..0xba0).contains(&csr) || (0xc00..0xca0).contains(&csr) || csr < 0x100 && csr > 3
        }
        Lb | Lh | Lw | Ld | Lbu | Lhu | Lwu | LrW | LrD => {
            hart.x(i.rs1 as usize).wrapping_add(i.imm as i64 as u64) < 0x8000_0000
        }
        _ => false,
    }
}

impl Observer for Digest {
    fn before(&mut self, hart: &Hart, d: &Decoded) -> bool {
        if self.frozen || self.count >= MAX_INSTRUCTIONS {
            return true;
        }
        self.freeze_after = observes_time(hart, d);
        false
    }

    fn after(
        &mut self,
        hart: &Hart,
        _: u64,
        pc: u64,
        d: &Decoded,
        retired: bool,
        _: &mut dyn MemoryPeek,
    ) {
        if hart.stats().interrupts != self.interrupts {
            self.frozen = true;
            return;
        }
        if !retired {
            return;
        }
        let dst = d.timing.dst;
        let value = match dst {
            // What a time read returned differs: that is the point.
            _ if self.freeze_after => 0,
            1..=31 => hart.x(dst as usize),
            32..=63 => hart.fregs()[dst as usize - 32],
            _ => 0,
        };
        self.hash = mix(mix(mix(self.hash, pc), d.inst.raw as u64), value);
        self.count += 1;
        if self.count.is_multiple_of(CHECKPOINT) {
            self.checkpoints.push(self.hash);
        }
        if self.freeze_after {
            self.frozen = true;
        }
    }
}

fn digest(elf: &Path, cfg: &NodeConfig) -> (Digest, Result<ObservedEnd, String>) {
    let mut node = Node::with_program(cfg.clone(), elf).expect("loads");
    let mut d = Digest::default();
    let end = node
        .run_observed(MAX_CYCLES, &mut d)
        .map_err(|e| e.to_string());
    (d, end)
}

/// Runs `elf` on both models; panics where they differ. Returns the
/// instructions compared.
fn compare(elf: &Path) -> u64 {
    let name = elf.display();
    let base = NodeConfig {
        cores: 1,
        idle_skip: false,
        ..NodeConfig::default()
    };
    let ooo = NodeConfig {
        core: CorePreset::Broadwell.config(),
        ..base.clone()
    };
    let ((a, end_a), (b, end_b)) = (digest(elf, &base), digest(elf, &ooo));
    let n = a.checkpoints.len().min(b.checkpoints.len());
    for i in 0..n {
        assert_eq!(
            a.checkpoints[i],
            b.checkpoints[i],
            "{name}: the models retire different instructions by instruction {}",
            (i as u64 + 1) * CHECKPOINT
        );
    }
    // Where both stopped on their own (an exit, a fault, a time read), at
    // the same instruction with the same state.
    let ended = |d: &Digest, e: &Result<ObservedEnd, String>| {
        d.frozen || matches!(e, Ok(ObservedEnd::Exited(_)) | Err(_))
    };
    if ended(&a, &end_a) && ended(&b, &end_b) {
        assert_eq!(
            (a.count, a.hash),
            (b.count, b.hash),
            "{name}: the runs end apart"
        );
        assert_eq!(end_a, end_b, "{name}");
    }
    a.count.min(b.count)
}

fn elfs_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| p.is_file() && p.extension().is_none_or(|e| e == "elf"));
    v.sort();
    v
}

#[test]
fn the_out_of_order_model_retires_what_the_in_order_one_does_on_every_sdk_program() {
    let programs = elfs_in(&sdk_build());
    assert!(programs.len() > 30, "only {} programs", programs.len());
    let compared: u64 = programs.iter().map(|p| compare(p)).sum();
    eprintln!("{compared} instructions compared");
    assert!(
        compared > 10_000_000,
        "only {compared} instructions compared"
    );
}

#[test]
fn the_out_of_order_model_retires_what_the_in_order_one_does_on_the_riscv_tests() {
    let dir = match std::env::var_os("NANOPU_RISCV_TESTS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/riscv-tests/isa"),
    };
    let tests = elfs_in(&dir);
    if tests.is_empty() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "no riscv-tests in {}",
            dir.display()
        );
        eprintln!("skipped: no riscv-tests in {}", dir.display());
        return;
    }
    for t in &tests {
        compare(t);
    }
}
