//! Shared by the integration tests: building and finding the guest programs.

#![allow(dead_code)]

use nanopu_node::{Node, NodeConfig, RunEnd};

#[allow(unused_imports)]
pub use nanopu_testkit::{program, repo, sdk_build};

/// Runs a program to completion on a default node; returns (exit code, output, node).
pub fn run_program(name: &str, cfg: NodeConfig) -> (u64, String, Node) {
    let mut node = Node::with_program(cfg, &program(name)).expect("program loads");
    let end = node
        .run(20_000_000_000)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let out = String::from_utf8_lossy(&node.htif().unwrap().output).into_owned();
    match end {
        RunEnd::Exited(code) => (code, out, node),
        RunEnd::Limit => panic!("{name} did not finish; output so far:\n{out}"),
    }
}

/// Assembles and links a small bare-metal program (text at 0x80000000,
/// `tohost`/`fromhost` on the page after it) and returns the ELF image.
pub fn assemble(name: &str, body: &str) -> Vec<u8> {
    let source = format!(
        "    .section .text.init, \"ax\"\n    .globl _start\n_start:\n{body}\n\
         \n    .section .tohost, \"aw\", @progbits\n    .align 6\n    .globl tohost\ntohost: .dword 0\n\
         \n    .align 6\n    .globl fromhost\nfromhost: .dword 0\n"
    );
    nanopu_testkit::assemble(name, &source, Some(LINK_SCRIPT), &[])
}

/// Text at 0x80000000, `tohost` page-aligned after it.
const LINK_SCRIPT: &str = "ENTRY(_start)\nSECTIONS {\n . = 0x80000000;\n .text.init : { *(.text.init) }\n .text : { *(.text) }\n          . = ALIGN(0x1000);\n .tohost : { *(.tohost) }\n .data : { *(.data) }\n .bss : { *(.bss) }\n}\n";

/// Assembly that exits through HTIF with the value in register `reg`.
pub fn exit_with(reg: &str) -> String {
    format!("    slli {reg}, {reg}, 1\n    ori {reg}, {reg}, 1\n    la a7, tohost\n    sd {reg}, 0(a7)\n1:  j 1b\n")
}

/// Registers context 0 with priority 0 on the running hart.
pub const REGISTER_CONTEXT_0: &str = "    csrwi 0x053, 0\n    csrwi 0x055, 0\n    csrwi 0x054, 1\n";

/// Builds a node (one core unless given) running an assembled program.
pub fn asm_node(name: &str, body: &str, cores: usize) -> Node {
    let cfg = NodeConfig {
        cores,
        ..NodeConfig::default()
    };
    Node::with_program_bytes(cfg, name, &assemble(name, body)).expect("loads")
}

/// Runs `body` on one core (after `setup`: a device attached, say), idle
/// skipping on and off; returns what the program stored at 0x80100000
/// (mcycle, minstret, ...), the final cycle and instret, the skipped
/// cycles and the instructions of skipped iterations, for each.
pub fn skip_on_and_off(
    name: &str,
    body: &str,
    setup: impl Fn(&mut Node),
) -> Vec<([u64; 3], u64, u64, u64, u64)> {
    let elf = assemble(name, body);
    [true, false]
        .into_iter()
        .map(|idle_skip| {
            let cfg = NodeConfig {
                cores: 1,
                idle_skip,
                ..NodeConfig::default()
            };
            let mut node = Node::with_program_bytes(cfg, name, &elf).unwrap();
            setup(&mut node);
            assert_eq!(node.run(u64::MAX).unwrap(), RunEnd::Exited(0));
            let h = node.hart(0);
            (
                result_of(&node),
                h.cycle(),
                h.instret(),
                h.stats().idle_cycles,
                h.stats().idle_instret,
            )
        })
        .collect()
}

/// Stores mcycle, minstret and a2 at 0x80100000 and exits with 0.
pub fn record_and_exit() -> String {
    format!(
        "    csrr a0, mcycle\n    csrr a1, minstret\n    li a3, 0x80100000\n\
         sd a0, 0(a3)\n    sd a1, 8(a3)\n    sd a2, 16(a3)\n    li a0, 0\n{}",
        exit_with("a0")
    )
}

/// The three words the program stored at 0x80100000.
pub fn result_of(node: &Node) -> [u64; 3] {
    let base = 0x8010_0000;
    let d = node.dram().slice(base, 24).unwrap();
    [0, 1, 2].map(|i| u64::from_le_bytes(d[i * 8..i * 8 + 8].try_into().unwrap()))
}
