//! Random guest programs for the engines' differential test: branchy
//! integer code of the shapes the block engine builds traces, unrolled
//! loops and guards from, drawn from a seed (the same seed, the same
//! program).
//!
//! A program runs an outer loop a few times over segments of these kinds:
//! integer computations (the divider among them), forward branches on data
//! over a few instructions (some before more straight code than a block
//! holds), inner loops (some with a forward branch inside,
//! some entered at their exit test), loads and stores to a small table,
//! calls to leaf functions that branch, and forward jumps over code never
//! run. It exits with a checksum of its registers.

use rand::{Rng as _, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::fmt::Write as _;

/// The registers segments compute with (never x30/x31, the nanoPU's
/// network registers, nor those the program's skeleton keeps).
const WORK: [&str; 12] = [
    "a0", "a1", "a2", "a3", "a4", "a5", "s2", "s3", "s4", "s5", "s6", "s7",
];

/// The program's random choices (ChaCha8: the same seed, the same program
/// on any host).
struct Rng(ChaCha8Rng);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0.random_range(0..n)
    }

    fn reg(&mut self) -> &'static str {
        WORK[self.below(WORK.len() as u64) as usize]
    }
}

/// Builds programs: labels are numbered program-wide.
struct Gen {
    rng: Rng,
    label: usize,
    text: String,
    functions: String,
}

impl Gen {
    fn label(&mut self) -> String {
        self.label += 1;
        format!("L{}", self.label)
    }

    /// `n` integer instructions into `out`.
    fn compute(&mut self, n: u64, out: &mut String) {
        for _ in 0..n {
            let (d, a, b) = (self.rng.reg(), self.rng.reg(), self.rng.reg());
            let imm = self.rng.below(64) as i64 - 32;
            let line = match self.rng.below(14) {
                0 => format!("add {d}, {a}, {b}"),
                1 => format!("sub {d}, {a}, {b}"),
                2 => format!("xor {d}, {a}, {b}"),
                3 => format!("or {d}, {a}, {b}"),
                4 => format!("and {d}, {a}, {b}"),
                5 => format!("sll {d}, {a}, {b}"),
                6 => format!("srl {d}, {a}, {b}"),
                7 => format!("mul {d}, {a}, {b}"),
                8 => format!("addi {d}, {a}, {imm}"),
                9 => format!("slli {d}, {a}, {}", imm & 63),
                10 => format!("srai {d}, {a}, {}", imm & 63),
                11 => format!("addw {d}, {a}, {b}"),
                12 => format!("sltu {d}, {a}, {b}"),
                _ => format!("divu {d}, {a}, {b}"),
            };
            let _ = writeln!(out, "    {line}");
        }
    }

    /// A conditional branch on two working registers to `target`.
    fn branch(&mut self, target: &str) -> String {
        let (a, b) = (self.rng.reg(), self.rng.reg());
        let cond = ["beq", "bne", "blt", "bge", "bltu", "bgeu"][self.rng.below(6) as usize];
        format!("    {cond} {a}, {b}, {target}\n")
    }

    /// A forward branch over a few instructions.
    fn forward_branch(&mut self, out: &mut String) {
        let skip = self.label();
        *out += &self.branch(&skip);
        let n = 1 + self.rng.below(4);
        self.compute(n, out);
        let _ = writeln!(out, "{skip}:");
    }

    fn segment(&mut self) {
        let mut out = String::new();
        match self.rng.below(8) {
            0 => {
                let n = 1 + self.rng.below(6);
                self.compute(n, &mut out);
            }
            7 => {
                // A forward branch, then more straight code than a block
                // holds: a trace cut short by its length, with a guard.
                self.forward_branch(&mut out);
                let n = 40 + self.rng.below(40);
                self.compute(n, &mut out);
            }
            1 => self.forward_branch(&mut out),
            2 => {
                // An inner loop run 1-9 times, maybe with a forward branch inside.
                let top = self.label();
                let _ = writeln!(out, "    li t0, {}\n{top}:", 1 + self.rng.below(9));
                let n = 1 + self.rng.below(5);
                self.compute(n, &mut out);
                if self.rng.below(2) == 0 {
                    self.forward_branch(&mut out);
                }
                let _ = writeln!(out, "    addi t0, t0, -1\n    bnez t0, {top}");
            }
            3 => {
                // A loop entered at its exit test (as compilers lay out `while`).
                let (test, body, done) = (self.label(), self.label(), self.label());
                let _ = writeln!(
                    out,
                    "    li t0, {}\n    j {body}\n{test}:\n    beqz t0, {done}\n{body}:",
                    self.rng.below(8)
                );
                let n = 1 + self.rng.below(4);
                self.compute(n, &mut out);
                let _ = writeln!(out, "    addi t0, t0, -1\n    bgez t0, {test}\n{done}:");
            }
            4 => {
                // A load or store at a data-dependent slot of the table.
                let (a, r) = (self.rng.reg(), self.rng.reg());
                let op = if self.rng.below(2) == 0 { "ld" } else { "sd" };
                let _ = writeln!(
                    out,
                    "    andi t1, {a}, 63\n    slli t1, t1, 3\n    add t1, t1, s0\n    {op} {r}, 0(t1)"
                );
            }
            5 => {
                // A call to a leaf function that branches.
                let f = self.label();
                let _ = writeln!(out, "    jal ra, {f}");
                let mut body = format!("{f}:\n");
                let n = 1 + self.rng.below(3);
                self.compute(n, &mut body);
                self.forward_branch(&mut body);
                body += "    ret\n";
                self.functions += &body;
            }
            _ => {
                // A forward jump over code never run.
                let over = self.label();
                let _ = writeln!(out, "    j {over}");
                let n = 1 + self.rng.below(3);
                self.compute(n, &mut out);
                let _ = writeln!(out, "{over}:");
            }
        }
        self.text += &out;
    }
}

/// The program of `seed`: `segments` segments in an outer loop run
/// `rounds` times; it exits with its registers' checksum (`exit` is the
/// exit sequence for a register, the test harness's).
pub fn program(seed: u64, segments: usize, rounds: u64, exit: impl Fn(&str) -> String) -> String {
    let mut g = Gen {
        rng: Rng(ChaCha8Rng::seed_from_u64(seed)),
        label: 0,
        text: String::new(),
        functions: String::new(),
    };
    let mut text = String::from("    la s0, table\n");
    for r in WORK {
        let _ = writeln!(text, "    li {r}, {}", g.rng.next() as i64);
    }
    let _ = writeln!(text, "    li s1, {rounds}\nouter:");
    for _ in 0..segments {
        g.segment();
    }
    text += &g.text;
    text += "    addi s1, s1, -1\n    bnez s1, outer\n";
    for r in &WORK[1..] {
        let _ = writeln!(text, "    xor a0, a0, {r}");
    }
    text += "    andi a0, a0, 127\n";
    text += &exit("a0");
    text += &g.functions;
    text += "    .section .data\n    .align 3\ntable:\n";
    for _ in 0..64 {
        let _ = writeln!(text, "    .dword {}", g.rng.next() as i64);
    }
    text += "    .section .text.init\n";
    text
}
