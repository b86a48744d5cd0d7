//! The timing model seen from guest code: mcycle deltas around small
//! kernels follow the configured latencies.

mod common;

use common::*;
use nanopu_node::{NodeConfig, RunEnd};

const N: u64 = 1000;

/// Cycles per iteration of a loop running `kernel` followed by the loop
/// control (`addi s1, s1, -1; bnez s1, 1b`). Measured as the difference
/// between 2N and N iterations, so one-time costs (cold misses, predictor
/// warm-up) cancel out.
fn cycles_per_iteration(setup: &str, kernel: &str) -> f64 {
    let measure = |n: u64| {
        let body = format!(
            "{setup}\n    li s1, {n}\n    csrr s2, mcycle\n1:\n{kernel}\n    addi s1, s1, -1\n    bnez s1, 1b\n    csrr s3, mcycle\n    sub a0, s3, s2\n{}",
            exit_with("a0")
        );
        let mut node = asm_node("kernel", &body, 1);
        match node.run(100_000_000).unwrap() {
            RunEnd::Exited(c) => c as f64,
            e => panic!("{e:?}"),
        }
    };
    (measure(2 * N) - measure(N)) / N as f64
}

fn cfg() -> NodeConfig {
    NodeConfig::default()
}

#[test]
fn dependent_alu_ops_issue_back_to_back() {
    let c = cycles_per_iteration(
        "",
        "    addi a1, a1, 1\n    addi a1, a1, 1\n    addi a1, a1, 1",
    );
    assert!((c - 5.0).abs() < 0.01, "{c}");
}

#[test]
fn load_use_interlock() {
    let c = cycles_per_iteration(
        "    la a0, tohost\n    addi a0, a0, 64",
        "    ld a1, 0(a0)\n    addi a1, a1, 1",
    );
    // ld, then the dependent addi waits; the loop control follows it.
    let want = cfg().core.load_to_use_cycles as f64 + 3.0;
    assert!((c - want).abs() < 0.01, "{c} vs {want}");
}

#[test]
fn multiply_and_divide_latencies() {
    let core = cfg().core;
    let mul = cycles_per_iteration("    li a2, 3", "    mul a1, a1, a2");
    // The loop control overlaps with the multiply.
    assert!((mul - core.mul_cycles as f64).abs() < 0.01, "mul {mul}");
    let div = cycles_per_iteration("    li a1, 1000000\n    li a2, 3", "    div a1, a1, a2");
    assert!((div - core.div_cycles as f64).abs() < 0.01, "div {div}");
}

#[test]
fn mispredicted_branches_cost_the_penalty() {
    // The inner branch alternates taken / not taken: a bimodal predictor
    // mispredicts it about half the time.
    let c = cycles_per_iteration("", "    xori a3, a3, 1\n    beqz a3, 2f\n    nop\n2:");
    let base = cycles_per_iteration("", "    xori a3, a3, 0\n    beqz a3, 2f\n    nop\n2:");
    let penalty = cfg().core.branch_mispredict_cycles as f64;
    assert!(
        c - base > 0.3 * penalty && c - base < 1.1 * penalty,
        "{c} vs {base}"
    );
}

#[test]
fn cache_misses_cost_l2_and_dram_latency() {
    // A new 64-byte line every iteration, over 4 MB: misses in L1 and L2.
    let c = cycles_per_iteration(
        "    li a0, 0x80200000",
        "    ld a1, 0(a0)\n    addi a0, a0, 64",
    );
    let n = cfg();
    let want = (n.l2_hit_cycles + n.dram_cycles()) as f64;
    assert!(c > want && c < want + 5.0, "{c} vs {want}");
    // The same line over and over: L1 hits.
    let hit = cycles_per_iteration(
        "    li a0, 0x80200000",
        "    ld a1, 0(a0)\n    addi a0, a0, 0",
    );
    assert!((hit - 4.0).abs() < 0.01, "{hit}");
}
