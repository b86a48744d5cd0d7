//! Differential test of the hart's execution engines: the block engine
//! (`Hart::run`, `crates/core/src/block.rs`, specialised at compile time for
//! the blocking or the non-blocking L1D) against the reference loop
//! (`Hart::run_observed`, the per-instruction interpreter every observer,
//! trace and debugger uses). On every
//! guest program in `sdk/build` and every official RISC-V test, both run in
//! the same cycle slices; after each slice and at the end, cycles, retired
//! instructions, architectural state (pc, privilege, integer and FP
//! registers, machine CSRs), the counters of each hart (traps, interrupts,
//! misses, mispredictions) and the program's output must be identical.
//! Idle skipping is off in both (an observed node never skips idle loops).
//! Hand-written programs aim at the block engine's special cases, and
//! random branchy programs (`engine_diff/random_programs.rs`) at the
//! traces and guards it builds.

mod common;
#[path = "engine_diff/random_programs.rs"]
mod random_programs;

use common::*;
use nanopu_core::decode_cache::Decoded;
use nanopu_core::timing::CacheConfig;
use nanopu_core::{Hart, MemoryPeek, Observer};
use nanopu_node::{Node, NodeConfig, ObservedEnd, RunEnd};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Cycles per slice: state is compared this often.
const SLICE_CYCLES: u64 = 250_000;
/// Cycles each program runs at most (programs driven by a NIC never end).
const MAX_CYCLES: u64 = 5_000_000;

/// The reference engine's observer: watches, never stops.
struct Watch;

impl Observer for Watch {
    fn before(&mut self, _: &Hart, _: &Decoded) -> bool {
        false
    }
    fn after(&mut self, _: &Hart, _: u64, _: u64, _: &Decoded, _: bool, _: &mut dyn MemoryPeek) {}
}

/// Everything the two engines must agree on, as text (a diff names the field).
fn state(node: &Node) -> Vec<String> {
    let mut out = Vec::new();
    for h in 0..node.cores() {
        let hart = node.hart(h);
        out.push(format!(
            "hart {h}: pc {:#x} cycle {} instret {} {:?} x {:x?} f {:x?} csr {:?} stats {:?} l1i {}/{} l1d {}/{} predictor {:?}",
            hart.pc(),
            hart.cycle(),
            hart.instret(),
            hart.privilege(),
            hart.xregs(),
            hart.fregs(),
            hart.csr(),
            hart.stats(),
            hart.l1i().hits,
            hart.l1i().misses,
            hart.l1d().hits,
            hart.l1d().misses,
            hart.predictor(),
        ));
    }
    out.push(format!("summaries {:?}", node.hart_summaries()));
    if let Some(htif) = node.htif() {
        out.push(format!(
            "output {:?}",
            String::from_utf8_lossy(&htif.output)
        ));
    }
    out
}

/// Runs `elf` under both engines; returns how many slices were compared.
fn compare(elf: &Path, cfg: &NodeConfig) -> usize {
    compare_sliced(elf, cfg, SLICE_CYCLES, MAX_CYCLES)
}

/// [`compare`] with slices of `slice` cycles, for at most `max` cycles.
fn compare_sliced(elf: &Path, cfg: &NodeConfig, slice: u64, max: u64) -> usize {
    let name = elf.display().to_string();
    let cfg = NodeConfig {
        idle_skip: false,
        ..cfg.clone()
    };
    let load = || Node::with_program(cfg.clone(), elf).unwrap_or_else(|e| panic!("{name}: {e}"));
    compare_nodes(&name, load, slice, max).0
}

/// Runs two nodes made by `load` under the two engines; returns how many
/// slices were compared and how the runs ended (an exit code, `None` at
/// the cycle limit, or the error).
fn compare_nodes(
    name: &str,
    load: impl Fn() -> Node,
    slice: u64,
    max: u64,
) -> (usize, Result<Option<u64>, String>) {
    let (mut fast, mut reference) = (load(), load());
    let mut limit = 0;
    let mut slices = 0;
    loop {
        limit += slice;
        let a = match fast.run(limit) {
            Ok(RunEnd::Exited(code)) => Ok(Some(code)),
            Ok(RunEnd::Limit) => Ok(None),
            Err(e) => Err(e.to_string()),
        };
        let b = match reference.run_observed(limit, &mut Watch) {
            Ok(ObservedEnd::Exited(code)) => Ok(Some(code)),
            Ok(ObservedEnd::Limit) => Ok(None),
            Ok(ObservedEnd::Stopped { hart }) => panic!("{name}: hart {hart} stopped"),
            Err(e) => Err(e.to_string()),
        };
        slices += 1;
        assert_eq!(a, b, "{name}: the run ended differently at slice {slices}");
        let (sa, sb) = (state(&fast), state(&reference));
        for (x, y) in sa.iter().zip(&sb) {
            assert_eq!(
                x, y,
                "{name}: engines differ after slice {slices} (fast, reference)"
            );
        }
        if a != Ok(None) || limit >= max {
            return (slices, a);
        }
    }
}

/// [`compare_nodes`] in slices of each length in `slices`: every run must
/// end with the program's exit.
fn agree_in_slices(name: &str, load: impl Fn() -> Node, slices: &[u64]) {
    for &slice in slices {
        let (n, end) = compare_nodes(name, &load, slice, MAX_CYCLES);
        assert!(
            matches!(end, Ok(Some(_))),
            "{name}: {end:?} after {n} slices"
        );
    }
}

/// One core, idle skipping off (as an observed node), `mshrs` MSHRs.
fn one_core(mshrs: u32) -> NodeConfig {
    let mut cfg = NodeConfig {
        cores: 1,
        idle_skip: false,
        ..NodeConfig::default()
    };
    cfg.core.l1d_mshrs = mshrs;
    cfg
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
fn fast_and_reference_engines_agree_on_every_sdk_program() {
    let programs = elfs_in(&sdk_build());
    assert!(programs.len() > 30, "only {} programs", programs.len());
    let cfg = NodeConfig::default();
    for p in &programs {
        compare(p, &cfg);
    }
}

#[test]
fn fast_and_reference_engines_agree_with_mshrs() {
    // The non-blocking L1D: the fast loop's other specialisation.
    let mut cfg = NodeConfig::default();
    cfg.core.l1d_mshrs = 4;
    for name in [
        "matmul",
        "pointer_chase",
        "gopt_pointer_chase",
        "hashing",
        "multihart",
    ] {
        compare(&program(name), &cfg);
    }
}

#[test]
fn fast_and_reference_engines_agree_on_the_riscv_tests() {
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
    let cfg = NodeConfig {
        cores: 1,
        ..NodeConfig::default()
    };
    for t in &tests {
        compare(t, &cfg);
    }
}

#[test]
fn engines_agree_when_slices_end_inside_blocks() {
    // A prime slice length ends runs at arbitrary instructions of a block
    // (the block engine checks the limit before each one, as the reference).
    let cfg = NodeConfig::default();
    for name in [
        "matmul",
        "hashing",
        "coremark_like",
        "pointer_chase",
        "multihart",
    ] {
        let slices = compare_sliced(&program(name), &cfg, 7_919, 1_500_000);
        assert!(slices > 1, "{name}: {slices} slices");
    }
}

#[test]
fn engines_agree_with_other_cache_geometries() {
    // 16-byte L1I lines: blocks cross lines several times (the block
    // engine times fetch only where a block's instructions change line);
    // a small L1D and a tiny decode cache (blocks are rebuilt from
    // refetched slots) change nothing either.
    let mut cfg = NodeConfig::default();
    cfg.core.l1i = CacheConfig {
        size_bytes: 2048,
        ways: 2,
        line_bytes: 16,
    };
    cfg.core.l1d = CacheConfig {
        size_bytes: 2048,
        ways: 2,
        line_bytes: 32,
    };
    cfg.decode_cache_entries = 64;
    for name in ["matmul", "hashing", "coremark_like", "multihart", "nbody"] {
        compare(&program(name), &cfg);
    }
}

/// Every specialised handler of the block engine with edge operands (x30
/// and x31, netRX and netTX, are left alone), the counter reads (their
/// values go into the exit code), the forms into x0 (a load into x0 still accesses the L1D: it misses here),
/// both directions of every branch, misses on fresh lines, under both L1Ds.
fn specialised_forms_program() -> String {
    let mut body = String::from(
        "    la s0, buf\n    li s1, 150\n    li a0, -12345\n    li a1, 0x7fffffff\n    li a2, 0x8000000000000001\n    li s2, 0\n1:\n",
    );
    body += "    ld x0, 0(s0)\n    lw x0, 64(s0)\n    lbu x0, 256(s0)\n    lui x0, 0x12345\n    auipc x0, 1\n    addi x0, a0, 5\n    add x0, a0, a1\n";
    body += "    sd a0, 8(s0)\n    sw a1, 72(s0)\n    sh a2, 136(s0)\n    sb a0, 200(s0)\n";
    body += "    lb t0, 200(s0)\n    lbu t1, 200(s0)\n    lh t2, 136(s0)\n    lhu t3, 136(s0)\n    lw t4, 72(s0)\n    lwu s4, 72(s0)\n    ld s3, 8(s0)\n";
    for line in [
        "add a3, t0, t1",
        "sub a3, a3, t2",
        "addw a4, a3, t3",
        "subw a4, a4, t4",
        "and a5, s4, s3",
        "or a5, a5, a0",
        "xor a5, a5, a1",
        "sll a6, a5, a0",
        "srl a6, a6, a1",
        "sra a6, a6, a2",
        "sllw a7, a6, a0",
        "srlw a7, a7, a1",
        "sraw a7, a7, a2",
        "slt t0, a7, a6",
        "sltu t1, a7, a6",
        "slti t2, a0, -1",
        "sltiu t3, a0, -1",
        "slli t4, a0, 63",
        "srli t4, t4, 1",
        "srai t4, t4, 7",
        "slliw s4, a1, 31",
        "srliw s4, s4, 3",
        "sraiw s4, s4, 2",
        "addiw s3, a1, 1",
        "andi s3, s3, -16",
        "ori s3, s3, 0x7f",
        "xori s3, s3, -1",
        "lui t0, 0xfffff",
        "auipc t1, 0x7ffff",
        "mul a0, a0, a1",
        "mulw a1, a1, a2",
        "div a2, a2, a0",
        "csrr t2, mcycle",
        "csrr t3, minstret",
        "rdcycle t4",
        "rdinstret s4",
        "add s2, s2, a3",
        "xor s2, s2, a4",
        "add s2, s2, a5",
        "xor s2, s2, a6",
        "add s2, s2, a7",
        "xor s2, s2, t0",
        "add s2, s2, t1",
        "xor s2, s2, t2",
        "add s2, s2, t3",
        "xor s2, s2, t4",
        "add s2, s2, s4",
        "xor s2, s2, s3",
        "addi a1, a1, 77",
        "ori a2, a2, 3",
    ] {
        let _ = writeln!(body, "    {line}");
    }
    // Each branch both ways (data-dependent), forward and backward.
    for (n, br) in ["beq", "bne", "blt", "bge", "bltu", "bgeu"]
        .iter()
        .enumerate()
    {
        let _ = writeln!(
            body,
            "    andi t0, s1, {}\n    {br} t0, x0, 2f\n    addi s2, s2, {n}\n2:  {br} a0, a1, 3f\n    xori s2, s2, {n}\n3:",
            n + 1
        );
    }
    body += "    addi s0, s0, 320\n    addi s1, s1, -1\n    blt x0, s1, 1b\n    andi a0, s2, 127\n";
    body += &exit_with("a0");
    body += "    .section .bss\n    .align 6\nbuf: .space 65536\n    .section .text.init\n";
    body
}

#[test]
fn engines_agree_on_every_specialised_form() {
    let image = assemble("specialised_forms", &specialised_forms_program());
    for mshrs in [0, 2] {
        let cfg = one_core(mshrs);
        let load = || Node::with_program_bytes(cfg.clone(), "specialised_forms", &image).unwrap();
        let (slices, end) = compare_nodes("specialised_forms", load, 1_009, MAX_CYCLES);
        assert!(
            matches!(end, Ok(Some(_))) && slices > 5,
            "{end:?} after {slices} slices"
        );
    }
}

/// Self-modifying code: every iteration rewrites the instruction at
/// `patch` (an `addi` or an `xori`, alternately), runs `fence.i` and calls
/// it, so the block engine must forget its blocks and chaining links and
/// rebuild them; `patch` and `far` start 8 KiB apart, so their blocks
/// take turns in one entry of the block index while the links to both
/// stay in use. Returns the program and the exit code it must produce.
fn self_modifying_program(iterations: u64) -> (String, u64) {
    let body = format!(
        "    li s1, {iterations}\n    li a0, 0\n    li a1, 0\n    la s0, patch\n\
         1:\n    andi t0, s1, 0x7ff\n    slli t0, t0, 20\n    li t1, 0x00050513\n    or t1, t1, t0\n\
         \x20   andi t2, s1, 1\n    beqz t2, 2f\n    li t1, 0x00154513\n\
         2:\n    sw t1, 0(s0)\n    fence.i\n    call patch\n    call far\n\
         \x20   addi s1, s1, -1\n    bnez s1, 1b\n    add a0, a0, a1\n    andi a0, a0, 127\n{}\
         \x20   .option push\n    .option norvc\n    .balign 8192\npatch:\n    addi a0, a0, 1\n    ret\n\
         \x20   .balign 8192\nfar:\n    addi a1, a1, 3\n    ret\n    .option pop\n",
        exit_with("a0")
    );
    // The same computation: `addi a0, a0, s1 & 0x7ff` for even s1, `xori
    // a0, a0, 1` for odd; `far` adds 3 to a1 each time.
    let mut a0: u64 = 0;
    for s1 in (1..=iterations).rev() {
        if s1 & 1 == 0 {
            a0 = a0.wrapping_add(s1 & 0x7ff);
        } else {
            a0 ^= 1;
        }
    }
    let expected = a0.wrapping_add(3 * iterations) & 127;
    (body, expected)
}

#[test]
fn engines_agree_on_self_modifying_code_and_index_conflicts() {
    let (body, expected) = self_modifying_program(300);
    let image = assemble("self_modifying", &body);
    for mshrs in [0, 2] {
        let cfg = one_core(mshrs);
        let load = || Node::with_program_bytes(cfg.clone(), "self_modifying", &image).unwrap();
        let (slices, end) = compare_nodes("self_modifying", load, 997, MAX_CYCLES);
        assert_eq!(
            end,
            Ok(Some(expected)),
            "the rewritten instructions ran (after {slices} slices)"
        );
        assert!(slices > 5, "{slices} slices");
    }
}

#[test]
fn engines_agree_on_a_fatal_fetch_fault() {
    // A jump to unmapped memory with no trap handler: the run ends with
    // the fault, and the retired count and cycle must still agree.
    let body = "    li a0, 7\n    addi a0, a0, 1\n    li t0, 0x1000\n    jr t0\n";
    let image = assemble("fetch_fault", body);
    let cfg = one_core(0);
    let load = || Node::with_program_bytes(cfg.clone(), "fetch_fault", &image).unwrap();
    let (_, end) = compare_nodes("fetch_fault", load, 1_000, MAX_CYCLES);
    let err = end.expect_err("the fetch faults");
    assert!(err.contains("0x1000"), "{err}");
}

/// Delay loops, which the block engine runs many iterations at a time once
/// they are steady (`Hart::run_delay_loop`): countdowns (`addi r, r, -1;
/// bnez r, .`, the SDK's `service_spin`) from 1 to 2^20 with a counter just
/// loaded (its first iteration waits for the load) or just computed, waits
/// on `mcycle` (`csrr t, mcycle; sub t, t, s; bltu t, n, .`, as
/// lnic-evaluation waits) of 512 to 5,632 cycles, a countdown split over
/// two L1I lines (never run at once), and the cycle and instruction
/// counters read after each loop.
fn countdown_program() -> String {
    let mut body = String::from("    li s2, 0\n    la s0, counts\n    li s1, 11\n1:\n");
    body += "    ld t0, 0(s0)\n2:  addi t0, t0, -1\n    bnez t0, 2b\n";
    body += "    csrr t1, mcycle\n    csrr t2, minstret\n    add s2, s2, t1\n    xor s2, s2, t2\n";
    body += "    addi a5, s1, 40\n3:  addi a5, a5, -1\n    bnez a5, 3b\n";
    body += "    csrr t1, mcycle\n    add s2, s2, t1\n";
    body += "    slli a4, s1, 9\n    csrr a3, mcycle\n    .p2align 4\n6:  csrr a5, mcycle\n    sub a5, a5, a3\n    bltu a5, a4, 6b\n";
    body += "    add s2, s2, a5\n    csrr t2, minstret\n    xor s2, s2, t2\n";
    body += "    addi s0, s0, 8\n    addi s1, s1, -1\n    bnez s1, 1b\n";
    // Split over two L1I lines: `c.addi` ends one, `c.bnez` starts the next.
    body += "    j 5f\n    .p2align 6\n    .skip 62\n5:  li a4, 3000\n    j 4f\n    .p2align 6\n    .skip 62\n";
    body += "4:  addi a4, a4, -1\n    bnez a4, 4b\n    csrr t1, mcycle\n    add s2, s2, t1\n";
    body += "    andi a0, s2, 127\n";
    body += &exit_with("a0");
    body += "    .section .data\n    .align 3\ncounts: .dword 1, 2, 3, 4, 5, 100, 1000, 100000, 7, 1048576, 64\n";
    body += "    .section .text.init\n";
    body
}

#[test]
fn engines_agree_on_delay_loops_run_at_once() {
    let image = assemble("countdown", &countdown_program());
    let cfg = one_core(0);
    let load = || Node::with_program_bytes(cfg.clone(), "countdown", &image).unwrap();
    // Slices that end inside loops and between their instructions, and long ones.
    for slice in [101, 1_009, 250_000] {
        let (slices, end) = compare_nodes("countdown", load, slice, MAX_CYCLES);
        assert!(matches!(end, Ok(Some(_))), "{end:?} after {slices} slices");
        // The block engine did run iterations at once (else this compares nothing new).
        let mut fast = load();
        let mut limit = 0;
        while matches!(fast.run(limit + slice), Ok(RunEnd::Limit)) {
            limit += slice;
        }
        let skipped = fast.delay_iterations_skipped();
        assert!(
            skipped > 1_000_000,
            "slices of {slice}: {skipped} iterations run at once"
        );
    }
}

/// Loops whose body is one block, which the block engine unrolls (as many
/// copies as fit in a block; the branch of each but the last is a guard):
/// bodies of 3 to 7 instructions (loads, stores, the multiplier, the
/// divider through the interpreter, compressed forms, one body across two
/// L1I lines), counting down and up, run 1 to 40 times each, so that they
/// end at every copy of their unrolled blocks; a body too long to copy
/// (over half a block) and a countdown delay loop (run at once, never
/// unrolled) beside them.
fn unrolled_loops_program() -> String {
    let mut body = String::from("    li s2, 0\n    la s0, data\n    li s1, 1\n1:\n");
    // 3 instructions: 21 copies.
    body += "    mv t0, s1\n2:  add s2, s2, t0\n    addi t0, t0, -1\n    bnez t0, 2b\n";
    // 7, with a load, the multiplier and a store the next iteration reads.
    body +=
        "    mv t0, s1\n    mv t1, s0\n3:  ld t2, 0(t1)\n    mul t2, t2, t0\n    add s2, s2, t2\n";
    body += "    sd s2, 8(t1)\n    addi t1, t1, 8\n    addi t0, t0, -1\n    bnez t0, 3b\n";
    // 4, counting up, with a division (the interpreter's).
    body += "    li t0, 0\n4:  addi t0, t0, 1\n    divu t3, s2, t0\n    xor s2, s2, t3\n    blt t0, s1, 4b\n";
    // A countdown delay loop: run at once, not unrolled.
    body += "    slli t0, s1, 4\n7:  addi t0, t0, -1\n    bnez t0, 7b\n    csrr t1, mcycle\n    add s2, s2, t1\n";
    // 6 compressed instructions across an L1I line (from byte 56 of one).
    body += "    mv a3, s1\n    mv a4, s2\n    j 5f\n    .p2align 6\n    .skip 56\n";
    body += "5:  c.add a4, a3\n    c.slli a4, 1\n    c.srli a4, 1\n    c.addi a3, -1\n    c.nop\n    c.bnez a3, 5b\n";
    body += "    add s2, s2, a4\n";
    // 33 instructions: one copy fits, not unrolled.
    body += "    mv t0, s1\n6:\n";
    for i in 0..31 {
        body += &format!("    addi s2, s2, {}\n", i + 1);
    }
    body += "    addi t0, t0, -1\n    bnez t0, 6b\n";
    body += "    csrr t2, minstret\n    xor s2, s2, t2\n";
    body += "    addi s1, s1, 1\n    li t4, 41\n    blt s1, t4, 1b\n";
    body += "    andi a0, s2, 127\n";
    body += &exit_with("a0");
    body += "    .section .data\n    .align 3\ndata:\n    .rept 64\n    .dword 7\n    .endr\n";
    body += "    .section .text.init\n";
    body
}

#[test]
fn engines_agree_on_unrolled_loops() {
    let image = assemble("unrolled", &unrolled_loops_program());
    for mshrs in [0, 2] {
        let cfg = one_core(mshrs);
        let load = || Node::with_program_bytes(cfg.clone(), "unrolled", &image).unwrap();
        // Slices that end inside unrolled blocks, and long ones.
        agree_in_slices("unrolled", load, &[101, 1_009, 250_000]);
        let mut fast = load();
        assert!(matches!(fast.run(MAX_CYCLES), Ok(RunEnd::Exited(_))));
        // The four short bodies (the delay loop and the long body are not).
        assert_eq!(fast.loops_unrolled(), 4, "{mshrs} MSHRs");
    }
}

/// Traces: blocks that go on past branches and `jal`s along the statically
/// expected path, with guards that leave on either side. Loops with a
/// data-dependent forward branch (a random bit each iteration), with a call
/// whose callee branches, entered in the middle (the body's block starts
/// with its exit branch), with a jump across L1I lines over bytes that are
/// never executed, with a forward branch that is always taken (against the
/// static prediction: its guard leaves at every iteration) and closed by a
/// `jal` back to its start; each run 1 to 40 times. Then a trace cut short
/// by its length, whose guard leaves on every other pass.
fn traces_program() -> String {
    let mut body = String::from(
        "    li s2, 0\n    li s1, 1\n    li s5, 0x2545f4914f6cdd1d\n    li s6, 6364136223846793005\n    li s7, 1442695040888963407\n1:\n",
    );
    // A forward branch on a random bit.
    body += "    mv t0, s1\n2:  mul s5, s5, s6\n    add s5, s5, s7\n    srli t1, s5, 61\n    andi t1, t1, 1\n";
    body += "    beqz t1, 3f\n    addi s2, s2, 3\n    xor s2, s2, s5\n3:  addi t0, t0, -1\n    bnez t0, 2b\n";
    // A call in the loop; the callee has a forward branch of its own.
    body += "    mv t0, s1\n4:  mv a0, t0\n    jal ra, callee\n    add s2, s2, a0\n    addi t0, t0, -1\n    bnez t0, 4b\n";
    // Entered in the middle: loads until the count, exit at the top.
    body += "    la t1, data\n    li t0, 0\n    mv t3, s1\n    j 7f\n6:  beq t0, t3, 8f\n";
    body += "7:  ld t2, 0(t1)\n    add s2, s2, t2\n    addi t1, t1, 8\n    addi t0, t0, 1\n    bnez t2, 6b\n8:\n";
    // Jumps across L1I lines (from byte 52 of one) over unexecuted bytes.
    body += "    mv t0, s1\n    j 9f\n    .p2align 6\n    .skip 52\n9:  addi s2, s2, 1\n    j 10f\n    .skip 20\n";
    body += "10: c.addi t0, -1\n    c.add s2, t0\n    bnez t0, 9b\n";
    // Always taken forward (the guard leaves each time), closed by a jal.
    body += "    mv t0, s1\n11: addi t0, t0, -1\n    bgez t0, 12f\n    addi s2, s2, 100\n12: add s2, s2, t0\n";
    body += "    beqz t0, 13f\n    j 11b\n13:\n";
    body += "    csrr t2, minstret\n    xor s2, s2, t2\n";
    // A trace cut short (it falls through) with a guard that leaves on even counts.
    body += "    andi a5, s1, 1\n    beqz a5, 14f\n";
    for i in 0..70 {
        body += &format!("    addi s2, s2, {}\n", i + 1);
        if i == 19 {
            body += "14:\n";
        }
    }
    body += "    addi s1, s1, 1\n    li t4, 41\n    blt s1, t4, 1b\n";
    body += "    andi a0, s2, 127\n";
    body += &exit_with("a0");
    body += "callee:\n    slli a1, a0, 3\n    bltu a1, s1, 5f\n    addi a1, a1, 7\n5:  xor a0, a0, a1\n    ret\n";
    body += "    .section .data\n    .align 3\ndata:\n    .rept 64\n    .dword 7\n    .endr\n";
    body += "    .section .text.init\n";
    body
}

#[test]
fn engines_agree_on_traces() {
    let image = assemble("traces", &traces_program());
    for mshrs in [0, 2] {
        let cfg = one_core(mshrs);
        let load = || Node::with_program_bytes(cfg.clone(), "traces", &image).unwrap();
        agree_in_slices("traces", load, &[97, 1_009, 250_000]);
        let mut fast = load();
        assert!(matches!(fast.run(MAX_CYCLES), Ok(RunEnd::Exited(_))));
        // Every loop but the call's has a forward branch or jump in its
        // body, and the outer loop's blocks go past the inner loops' exits.
        assert!(fast.blocks_traced() >= 10, "{}", fast.blocks_traced());
        assert!(fast.loops_unrolled() >= 4, "{}", fast.loops_unrolled());
    }
}

/// Random branchy programs (`random_programs.rs`: forward branches on data,
/// inner loops, loops entered at their exit test, loads and stores, calls,
/// jumps over code never run), 24 seeds (`ENGINE_DIFF_SEEDS` in the
/// environment for more), in short and long slices: a third
/// on the default core, a third with MSHRs, a third with 16-byte L1I lines
/// (a trace changes line often) and a tiny decode cache. (600 seeds agreed
/// when this was written; four mutations of the trace code fail it.)
#[test]
fn engines_agree_on_random_programs() {
    for seed in 0..nanopu_testkit::env_count("ENGINE_DIFF_SEEDS", 24) {
        let name = format!("random-{seed}");
        let image = assemble(
            &name,
            &random_programs::program(seed.into(), 40, 20, exit_with),
        );
        let mut cfg = one_core(if seed % 3 == 1 { 2 } else { 0 });
        if seed % 3 == 2 {
            cfg.core.l1i = CacheConfig {
                size_bytes: 2048,
                ways: 2,
                line_bytes: 16,
            };
            cfg.decode_cache_entries = 64;
        }
        let load = || Node::with_program_bytes(cfg.clone(), &name, &image).unwrap();
        agree_in_slices(&name, load, &[53, 250_000]);
    }
}
