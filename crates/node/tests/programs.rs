//! Guest C programs that check their own results, run on a default node.

mod common;

use common::*;
use nanopu_node::NodeConfig;

fn assert_ok(name: &str) -> (String, nanopu_node::Node) {
    let (code, out, node) = run_program(name, NodeConfig::default());
    assert_eq!(code, 0, "{name} exited with {code}; output:\n{out}");
    (out, node)
}

#[test]
fn hello_prints_and_exits() {
    let (out, node) = assert_ok("hello");
    assert!(out.contains("Hello from hart 0 of 4"), "{out}");
    // The other harts waited for hart 0's start-up, then parked in wfi.
    for h in 1..4 {
        assert_eq!(node.hart_state(h), nanopu_node::HartState::Wfi, "hart {h}");
        assert!(node.hart(h).instret() < 20_000);
    }
}

#[test]
fn matmul_self_check() {
    let (out, node) = assert_ok("matmul");
    assert!(out.contains("matmul: OK"), "{out}");
    // The timing model is on: a Rocket-like core with an 8-cycle iterative
    // multiplier cannot reach one instruction per cycle on matmul.
    let h = node.hart(0);
    let ipc = h.instret() as f64 / h.cycle() as f64;
    assert!(ipc > 0.2 && ipc < 1.0, "IPC {ipc}");
}

#[test]
fn coremark_like_self_check() {
    let (out, _) = assert_ok("coremark_like");
    assert!(out.contains("OK"), "{out}");
}

#[test]
fn floating_point_self_check() {
    let (out, _) = assert_ok("fp_check");
    assert!(out.contains("0 failed"), "{out}");
}

#[test]
fn harts_share_memory_with_atomics() {
    let (out, _) = assert_ok("multihart");
    assert!(out.contains("4 of 4 harts"), "{out}");
}

#[test]
fn traps_and_timer_interrupt() {
    let (out, _) = assert_ok("traps");
    assert!(out.contains("timer interrupt"), "{out}");
}

#[test]
fn same_program_same_cycles() {
    let (_, a) = assert_ok("coremark_like");
    let (_, b) = assert_ok("coremark_like");
    assert_eq!(a.hart_summaries(), b.hart_summaries());
}

#[test]
fn fewer_cores_run_the_same_program() {
    let cfg = NodeConfig {
        cores: 1,
        ..NodeConfig::default()
    };
    let (code, out, _) = run_program("hello", cfg);
    assert_eq!(code, 0);
    assert!(out.contains("Hello from hart 0"), "{out}");
}

#[test]
fn pointer_chase_pays_the_memory_latency() {
    let (out, _) = assert_ok("pointer_chase");
    // "... : 156.89 cycles per dependent load"
    let per_load: f64 = out
        .split(": ")
        .last()
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no cycle figure in {out:?}"));
    // The 1 MB table is twice the L2: about half the loads go to DRAM, the
    // rest hit the L2; every load misses the 16 KB L1. So a load costs
    // between half a DRAM access and a whole DRAM access plus an L2 hit.
    let cfg = NodeConfig::default();
    let (dram, l2) = (cfg.dram_cycles() as f64, cfg.l2_hit_cycles as f64);
    assert!(
        per_load > (dram + l2) / 2.0 && per_load < dram + 2.0 * l2,
        "{per_load} cycles per load (DRAM {dram}, L2 {l2})"
    );
}

#[test]
fn hashing_self_check() {
    let (out, node) = assert_ok("hashing");
    assert!(out.contains("8 rounds: OK"), "{out}");
    // Branchy, multiply-heavy code on an in-order core with an iterative
    // multiplier and mispredictions: well below one instruction per cycle.
    let h = node.hart(0);
    let ipc = h.instret() as f64 / h.cycle() as f64;
    assert!(ipc > 0.2 && ipc < 1.0, "IPC {ipc}");
}
