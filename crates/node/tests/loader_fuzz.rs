//! Fuzzing the ELF loader: valid programs mutated (truncation, bit flips,
//! bogus header-table offsets and sizes, huge or overlapping segments,
//! segments and entry points outside DRAM) must load or be refused with an
//! error, never panic, and never touch host memory beyond what the file
//! can fill. A short pass runs with `cargo test`; a long one:
//!
//!     PROPTEST_CASES=100000 cargo test --release -p nanopu-node --test loader_fuzz

mod common;

use nanopu_node::dram::Dram;
use nanopu_node::loader::load_bytes;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::sync::OnceLock;

const DRAM_BASE: u64 = 0x8000_0000;
const DRAM_BYTES: u64 = 1 << 30;

/// The valid programs mutated: an SDK program and a minimal one.
fn seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        vec![
            std::fs::read(common::program("hello")).unwrap(),
            common::assemble(
                "fuzzseed",
                &format!(
                    "    li a0, 0\n{}\n    .section .data\n    .dword 1, 2, 3\n    .section .bss\n    .skip 4096\n",
                    common::exit_with("a0")
                ),
            ),
        ]
    })
}

/// Where a mutation writes: an ELF header field, or a field of program or
/// section header `index` (offset and width inside the entry).
#[derive(Clone, Debug)]
enum Target {
    Ehdr(usize, usize),
    Phdr(u16, usize, usize),
    Shdr(u16, usize, usize),
}

#[derive(Clone, Debug)]
enum Mutation {
    /// Keep this fraction (per mille) of the file.
    Truncate(u16),
    FlipBit(u32, u8),
    Set(Target, Value),
}

/// Values that hit the loader's edges.
#[derive(Clone, Debug)]
enum Value {
    Fixed(u64),
    FileLen(i8),
    Any(u64),
}

// ELF64 field offsets and widths (System V gABI).
const EHDR: &[(usize, usize)] = &[
    (24, 8), // e_entry
    (32, 8), // e_phoff
    (40, 8), // e_shoff
    (54, 2), // e_phentsize
    (56, 2), // e_phnum
    (58, 2), // e_shentsize
    (60, 2), // e_shnum
    (62, 2), // e_shstrndx
];
const PHDR: &[(usize, usize)] = &[
    (0, 4),  // p_type
    (8, 8),  // p_offset
    (16, 8), // p_vaddr
    (24, 8), // p_paddr
    (32, 8), // p_filesz
    (40, 8), // p_memsz
];
const SHDR: &[(usize, usize)] = &[
    (4, 4),  // sh_type
    (24, 8), // sh_offset
    (32, 8), // sh_size
    (40, 4), // sh_link
    (56, 8), // sh_entsize
    (0, 4),  // sh_name
];

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            0,
            1,
            2,
            3,
            0xffff,
            u32::MAX as u64,
            u64::MAX,
            u64::MAX - 7,
            1 << 40,
            DRAM_BASE,
            DRAM_BASE + 1,
            DRAM_BASE - 8,
            DRAM_BASE + DRAM_BYTES - 8,
            DRAM_BASE + DRAM_BYTES,
            DRAM_BYTES,
            2 * DRAM_BYTES,
            1, /* PT_LOAD */
            2, /* SHT_SYMTAB */
        ])
        .prop_map(Value::Fixed),
        (-16i8..16).prop_map(Value::FileLen),
        any::<u64>().prop_map(Value::Any),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let target = prop_oneof![
        prop::sample::select(EHDR).prop_map(|(o, w)| Target::Ehdr(o, w)),
        (0u16..16, prop::sample::select(PHDR)).prop_map(|(i, (o, w))| Target::Phdr(i, o, w)),
        (0u16..32, prop::sample::select(SHDR)).prop_map(|(i, (o, w))| Target::Shdr(i, o, w)),
    ];
    prop_oneof![
        (0u16..1000).prop_map(Mutation::Truncate),
        (any::<u32>(), 0u8..8).prop_map(|(p, b)| Mutation::FlipBit(p, b)),
        (target, value()).prop_map(|(t, v)| Mutation::Set(t, v)),
        (target_huge_memsz())
            .prop_map(|i| Mutation::Set(Target::Phdr(i, 40, 8), Value::Fixed(DRAM_BYTES - 4096))),
    ]
}

fn target_huge_memsz() -> impl Strategy<Value = u16> {
    0u16..8
}

fn read(data: &[u8], at: usize, width: usize) -> Option<u64> {
    let bytes = data.get(at..at.checked_add(width)?)?;
    let mut b = [0u8; 8];
    b[..width].copy_from_slice(bytes);
    Some(u64::from_le_bytes(b))
}

fn apply(data: &mut Vec<u8>, m: &Mutation) {
    match *m {
        Mutation::Truncate(per_mille) => {
            let keep = data.len() * per_mille as usize / 1000;
            data.truncate(keep);
        }
        Mutation::FlipBit(pos, bit) => {
            if !data.is_empty() {
                let i = pos as usize % data.len();
                data[i] ^= 1 << bit;
            }
        }
        Mutation::Set(ref target, ref value) => {
            let at = match *target {
                Target::Ehdr(o, _) => Some(o),
                Target::Phdr(i, o, _) => read(data, 32, 8)
                    .zip(read(data, 54, 2))
                    .map(|(off, size)| off as usize + i as usize * size as usize + o),
                Target::Shdr(i, o, _) => read(data, 40, 8)
                    .zip(read(data, 58, 2))
                    .map(|(off, size)| off as usize + i as usize * size as usize + o),
            };
            let width = match *target {
                Target::Ehdr(_, w) | Target::Phdr(_, _, w) | Target::Shdr(_, _, w) => w,
            };
            let v = match *value {
                Value::Fixed(v) | Value::Any(v) => v,
                Value::FileLen(d) => (data.len() as i64 + d as i64).max(0) as u64,
            };
            if let Some(dst) = at.and_then(|a| data.get_mut(a..a.checked_add(width)?)) {
                dst.copy_from_slice(&v.to_le_bytes()[..width]);
            }
        }
    }
}

#[test]
fn mutated_elfs_load_or_fail_cleanly_in_bounded_memory() {
    let cases = nanopu_testkit::proptest_cases(400);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let seeds = seeds();
    let strategy = (0..seeds.len(), prop::collection::vec(mutation(), 1..5));
    let (loaded, refused) = (std::cell::Cell::new(0u64), std::cell::Cell::new(0u64));
    runner
        .run(&strategy, |(seed, mutations)| {
            let mut data = seeds[seed].clone();
            for m in &mutations {
                apply(&mut data, m);
            }
            let mut dram = Dram::new(DRAM_BASE, DRAM_BYTES).unwrap();
            let result = load_bytes("fuzz", &data, &mut dram);
            // The loader writes file bytes only (a .bss is left untouched),
            // at most twice the file, each segment rounded out to pages.
            let segments = read(&data, 56, 2).unwrap_or(0);
            let bound = 2 * data.len() as u64 + (segments + 16) * 2 * 4096;
            let resident = dram.resident_bytes();
            prop_assert!(resident <= bound, "{resident} bytes touched, bound {bound}");
            match result {
                Ok(p) => {
                    prop_assert!(p.entry % 2 == 0);
                    prop_assert!(dram.offset(p.entry, 2).is_some());
                    loaded.set(loaded.get() + 1);
                }
                Err(e) => {
                    let msg = e.to_string();
                    prop_assert!(msg.starts_with("fuzz"), "{msg}");
                    prop_assert!(!msg.contains('\n'), "{msg}");
                    refused.set(refused.get() + 1);
                }
            }
            Ok(())
        })
        .unwrap();
    let (loaded, refused) = (loaded.get(), refused.get());
    eprintln!("loader fuzz: {cases} mutated ELFs, {loaded} loaded, {refused} refused");
    assert_eq!(loaded + refused, cases as u64);
}
