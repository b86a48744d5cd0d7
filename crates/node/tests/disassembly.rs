//! The decoder against an independent one: every instruction in the SDK's
//! programs, decoded by us and by GNU objdump, must name the same
//! instruction (objdump's compressed mnemonics mapped to their expansions).

mod common;

use common::*;
use nanopu_isa::{decode, Opcode};
use std::process::Command;

/// objdump's mnemonic (with `-M no-aliases`) as the base instruction ours names.
fn normalize(m: &str) -> String {
    let m = m
        .trim_end_matches(".aqrl")
        .trim_end_matches(".aq")
        .trim_end_matches(".rl");
    let base = match m {
        "c.li" | "c.addi16sp" | "c.addi4spn" | "c.nop" | "c.addi" => "addi",
        "c.mv" | "c.add" => "add",
        "c.j" => "jal",
        "c.jr" | "c.jalr" => "jalr",
        "c.beqz" => "beq",
        "c.bnez" => "bne",
        "c.ldsp" => "ld",
        "c.lwsp" => "lw",
        "c.sdsp" => "sd",
        "c.swsp" => "sw",
        "c.fldsp" => "fld",
        "c.fsdsp" => "fsd",
        m => m.strip_prefix("c.").unwrap_or(m),
    };
    base.to_string()
}

#[test]
fn decoder_agrees_with_objdump_on_every_sdk_instruction() {
    let mut checked = 0;
    for name in [
        "isa_diff",
        "fp_check",
        "traps",
        "multihart",
        "coremark_like",
        "loopback",
    ] {
        let out = Command::new("riscv64-unknown-elf-objdump")
            .args(["-d", "-M", "no-aliases"])
            .arg(program(name))
            .output()
            .expect("riscv64-unknown-elf-objdump");
        let text = String::from_utf8(out.stdout).unwrap();
        for line in text.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() < 3 || !f[0].trim_end().ends_with(':') {
                continue;
            }
            let Ok(raw) = u32::from_str_radix(f[1].trim(), 16) else {
                continue;
            };
            let theirs = f[2].trim();
            if theirs.starts_with('.') || theirs == "unimp" || theirs == "c.unimp" {
                continue; // data in the text section
            }
            let ours = decode(raw);
            assert_ne!(ours.op, Opcode::Illegal, "{name}: {line}");
            assert_eq!(ours.op.mnemonic(), normalize(theirs), "{name}: {line}");
            checked += 1;
        }
    }
    assert!(checked > 5_000, "only {checked} instructions checked");
}
