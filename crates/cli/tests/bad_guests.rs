//! Bad guest programs given to `nanopu run`: each ends with exit code 125
//! and exactly one `error:` line naming the problem (never a panic or hang).

use nanopu_testkit::bare_metal_elf;
use std::path::PathBuf;
use std::process::{Command, Output};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nanopu-bad-guests-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let p = tmp(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn le(data: &[u8], at: usize, width: usize) -> u64 {
    let mut b = [0u8; 8];
    b[..width].copy_from_slice(&data[at..at + width]);
    u64::from_le_bytes(b)
}

fn nanopu(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .args(args)
        .output()
        .expect("nanopu runs")
}

/// (what, program path, text stderr must contain)
fn rows() -> Vec<(&'static str, PathBuf, String)> {
    let exit0 = "li a0, 1\nla a1, tohost\nsd a0, 0(a1)\n1: j 1b\n";
    let good = bare_metal_elf("good", exit0);
    let mut rows = Vec::new();

    let storm = bare_metal_elf(
        "storm",
        "la a0, handler\ncsrw mtvec, a0\nli sp, 0x1000\necall\n.align 2\nhandler:\naddi sp, sp, -16\nsd ra, 8(sp)\nmret\n",
    );
    rows.push((
        "trap storm",
        write("storm.elf", &storm),
        "trap storm".into(),
    ));
    rows.push((
        "no trap handler",
        write("illegal.elf", &bare_metal_elf("illegal", ".word 0\n")),
        "illegal instruction".into(),
    ));

    let mut misaligned = good.clone();
    let entry = le(&misaligned, 24, 8) + 1;
    misaligned[24..32].copy_from_slice(&entry.to_le_bytes());
    rows.push((
        "misaligned entry",
        write("misaligned.elf", &misaligned),
        format!("entry point {entry:#x} is not 2-byte aligned"),
    ));

    let shoff = le(&good, 0x28, 8) as usize;
    rows.push((
        "truncated in the section table",
        write("trunc.elf", &good[..shoff + 8]),
        "truncated ELF file: the section header table".into(),
    ));
    rows.push((
        "truncated in the ELF header",
        write("trunc-header.elf", &good[..20]),
        "truncated ELF file: the file ends at byte 20".into(),
    ));
    let (phentsize, phnum) = (le(&good, 0x36, 2) as usize, le(&good, 0x38, 2) as usize);
    let phoff = (0..phnum)
        .map(|i| le(&good, 0x20, 8) as usize + i * phentsize)
        .find(|&at| le(&good, at, 4) == 1)
        .expect("a PT_LOAD segment");
    let data_offset = le(&good, phoff + 8, 8) as usize;
    let data_size = le(&good, phoff + 32, 8) as usize;
    let mut cut = good.clone();
    // Keep the header tables but cut the first segment's bytes short: move
    // the section table to the front so that it stays inside the file.
    cut[0x28..0x30].copy_from_slice(&0u64.to_le_bytes());
    cut[0x3c..0x3e].copy_from_slice(&0u16.to_le_bytes());
    cut.truncate(data_offset + data_size / 2);
    rows.push((
        "truncated in a segment",
        write("trunc-seg.elf", &cut),
        "truncated ELF file: segment at 0x80000000".into(),
    ));

    let mut corrupt = good.clone();
    let (shentsize, shnum) = (le(&good, 0x3a, 2) as usize, le(&good, 0x3c, 2) as usize);
    let symtab = (0..shnum)
        .find(|&i| le(&good, shoff + i * shentsize + 4, 4) == 2)
        .expect("a symbol table");
    let at = shoff + symtab * shentsize + 24;
    corrupt[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    rows.push((
        "corrupt section table",
        write("corrupt.elf", &corrupt),
        "the section header table is corrupt".into(),
    ));

    let mut outside = good.clone();
    outside[phoff + 24..phoff + 32].copy_from_slice(&0x1000u64.to_le_bytes());
    rows.push((
        "segment outside DRAM",
        write("outside.elf", &outside),
        "segment at 0x1000".into(),
    ));

    rows.push(("/dev/zero", "/dev/zero".into(), "not a regular file".into()));
    let dir = tmp("a-directory");
    std::fs::create_dir_all(&dir).unwrap();
    rows.push(("a directory", dir, "a directory".into()));
    rows.push((
        "an empty file",
        write("empty.elf", b""),
        "empty file".into(),
    ));
    rows.push((
        "text",
        write("text.elf", b"#!/bin/sh\necho hi\n"),
        "not an ELF file".into(),
    ));
    rows.push((
        "a missing file",
        tmp("missing.elf"),
        "No such file or directory (os error 2)".into(),
    ));
    let huge = tmp("huge.elf");
    let f = std::fs::File::create(&huge).unwrap();
    f.set_len(300 << 20).unwrap(); // sparse
    rows.push((
        "a file over the size limit",
        huge,
        "more than the 268435456-byte (256 MiB) limit".into(),
    ));
    rows
}

#[test]
fn bad_guest_programs_get_one_error_line_and_exit_125() {
    let rows = rows();
    for (what, program, needle) in &rows {
        let o = nanopu(&["run", program.to_str().unwrap()]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(125), "{what}: {e}");
        assert!(
            e.starts_with("error: ") && e.ends_with('\n') && e.lines().count() == 1,
            "{what}: not one error line: {e:?}"
        );
        assert!(
            e.contains(needle.as_str()),
            "{what}: expected {needle:?} in {e}"
        );
        assert!(
            e.contains(program.to_str().unwrap())
                || what.contains("trap")
                || what.contains("handler"),
            "{what}: the file is named: {e}"
        );
        // Each cause once (no "cause: cause" chains).
        let body = e.trim_start_matches("error: ").trim_end();
        for part in body.split(": ") {
            if part.len() > 12 {
                assert_eq!(
                    body.matches(part).count(),
                    1,
                    "{what}: {part:?} repeated in {e}"
                );
            }
        }
    }
    eprintln!("{} bad guest programs refused", rows.len());
}
