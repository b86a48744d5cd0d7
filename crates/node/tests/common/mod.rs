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

/// Attaches the traditional NIC (IceNIC) to `node` as its NIC design does
/// (`NicDesign::attach`): at its configured window, with `[node.icenic]`.
pub fn attach_icenic(node: &mut Node) {
    use nanopu_node::icenic::{IceNic, ICENIC_BASE, ICENIC_SIZE};
    let base = node.cfg().devices.base("icenic", ICENIC_BASE);
    let nic = IceNic::new(node.cfg().icenic.clone());
    node.attach_device("icenic", base, ICENIC_SIZE, nic)
        .expect("the IceNIC's window is free");
}

/// What the IceNIC design does with the node's generic device seam, for
/// tests that drive the device directly.
pub trait IceNicNode {
    /// The IceNIC, if attached.
    fn icenic(&self) -> Option<&nanopu_node::IceNic>;
    /// A frame whose last bit reached the IceNIC at `cycle` (see
    /// `IceNic::frame_in`); false if dropped or there is no IceNIC.
    fn icenic_frame_in(&mut self, frame: &[u8], cycle: u64) -> bool;
    /// The oldest frame the IceNIC read for the wire, with its ready cycle.
    fn icenic_take_tx(&mut self) -> Option<(Vec<u8>, u64)>;
}

impl IceNicNode for Node {
    fn icenic(&self) -> Option<&nanopu_node::IceNic> {
        self.device()
    }

    fn icenic_frame_in(&mut self, frame: &[u8], cycle: u64) -> bool {
        self.with_device_dma(|nic: &mut nanopu_node::IceNic, dma| nic.frame_in(frame, cycle, dma))
            .unwrap_or(false)
    }

    fn icenic_take_tx(&mut self) -> Option<(Vec<u8>, u64)> {
        if !self.icenic()?.has_tx() {
            return None;
        }
        self.device_mut::<nanopu_node::IceNic>()?.take_tx()
    }
}
