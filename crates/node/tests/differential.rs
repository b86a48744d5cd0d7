//! Differential tests: the same computation built for Linux and run under
//! Debian's `qemu-riscv64` (an independent RISC-V implementation) must print
//! exactly what the bare-metal build prints on the simulator.

mod common;

use common::*;
use nanopu_node::NodeConfig;
use std::process::Command;

fn qemu_output(name: &str) -> String {
    let linux = sdk_build().join(format!("{name}.linux"));
    assert!(
        linux.exists(),
        "{} missing: the Linux cross compiler is needed (scripts/setup.sh --test)",
        linux.display()
    );
    let out = Command::new("qemu-riscv64")
        .arg(&linux)
        .output()
        .expect("qemu-riscv64 (package qemu-user) is needed: scripts/setup.sh --test");
    assert!(out.status.success(), "{name} failed under qemu");
    String::from_utf8(out.stdout).unwrap()
}

fn compare(name: &str) -> usize {
    let reference = qemu_output(name);
    let (code, ours, _) = run_program(name, NodeConfig::default());
    assert_eq!(code, 0, "{name} on the simulator exited with {code}");
    let mut lines = 0;
    for (i, (a, b)) in reference.lines().zip(ours.lines()).enumerate() {
        assert_eq!(b, a, "{name}: line {} differs (simulator vs qemu)", i + 1);
        lines += 1;
    }
    assert_eq!(
        ours.lines().count(),
        reference.lines().count(),
        "{name}: line counts"
    );
    lines
}

#[test]
fn every_instruction_and_rounding_mode_matches_qemu() {
    // RV64IMA and F/D: every instruction on edge-case and random operands,
    // with each static rounding mode, and the fflags each raises.
    let lines = compare("isa_diff");
    assert!(lines > 10_000, "only {lines} cases");
}

#[test]
fn compute_kernels_match_qemu() {
    compare("matmul");
    compare("coremark_like");
    compare("fp_check");
}
