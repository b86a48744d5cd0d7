//! Disassembly: `Display` for [`Inst`], driven by the operand format.

use crate::decode::Inst;
use crate::opcodes::{Format, Opcode};
use std::fmt;

const XNAMES: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    // x30 and x31 are the nanoPU's network registers.
    "netrx", "nettx",
];

const FNAMES: [&str; 32] = [
    "ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1", "fa0", "fa1", "fa2",
    "fa3", "fa4", "fa5", "fa6", "fa7", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7", "fs8", "fs9",
    "fs10", "fs11", "ft8", "ft9", "ft10", "ft11",
];

const RM: [&str; 8] = ["rne", "rtz", "rdn", "rup", "rmm", "rm5", "rm6", "dyn"];

/// ABI name of integer register `r` (x30 and x31 as the nanoPU's netrx/nettx).
pub fn reg_name(r: u8) -> &'static str {
    XNAMES[r as usize & 31]
}

fn x(r: u8) -> &'static str {
    XNAMES[r as usize & 31]
}
fn f(r: u8) -> &'static str {
    FNAMES[r as usize & 31]
}

impl fmt::Display for Inst {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.op.mnemonic();
        let i = self;
        match self.op.format() {
            _ if self.op == Opcode::Illegal => write!(out, "illegal ({:#x})", i.raw),
            Format::R => write!(out, "{m} {}, {}, {}", x(i.rd), x(i.rs1), x(i.rs2)),
            Format::Amo => write!(out, "{m} {}, {}, ({})", x(i.rd), x(i.rs2), x(i.rs1)),
            Format::I | Format::Shift => write!(out, "{m} {}, {}, {}", x(i.rd), x(i.rs1), i.imm),
            Format::Load => write!(out, "{m} {}, {}({})", x(i.rd), i.imm, x(i.rs1)),
            Format::Store => write!(out, "{m} {}, {}({})", x(i.rs2), i.imm, x(i.rs1)),
            Format::Prefetch => write!(out, "{m} {}({})", i.imm, x(i.rs1)),
            Format::Branch => write!(out, "{m} {}, {}, {:+}", x(i.rs1), x(i.rs2), i.imm),
            Format::U => write!(out, "{m} {}, {:#x}", x(i.rd), (i.imm as u32) >> 12),
            Format::J => write!(out, "{m} {}, {:+}", x(i.rd), i.imm),
            Format::Csr => write!(out, "{m} {}, {:#x}, {}", x(i.rd), i.imm, x(i.rs1)),
            Format::CsrI => write!(out, "{m} {}, {:#x}, {}", x(i.rd), i.imm, i.rs1),
            Format::Lr => write!(out, "{m} {}, ({})", x(i.rd), x(i.rs1)),
            Format::None => write!(out, "{m}"),
            Format::FLoad => write!(out, "{m} {}, {}({})", f(i.rd), i.imm, x(i.rs1)),
            Format::FStore => write!(out, "{m} {}, {}({})", f(i.rs2), i.imm, x(i.rs1)),
            Format::FR => write!(
                out,
                "{m} {}, {}, {}, {}",
                f(i.rd),
                f(i.rs1),
                f(i.rs2),
                RM[i.rm as usize & 7]
            ),
            Format::FRNoRm => write!(out, "{m} {}, {}, {}", f(i.rd), f(i.rs1), f(i.rs2)),
            Format::FR4 => write!(
                out,
                "{m} {}, {}, {}, {}, {}",
                f(i.rd),
                f(i.rs1),
                f(i.rs2),
                f(i.rs3),
                RM[i.rm as usize & 7]
            ),
            Format::F1 => write!(
                out,
                "{m} {}, {}, {}",
                f(i.rd),
                f(i.rs1),
                RM[i.rm as usize & 7]
            ),
            Format::FCmp => write!(out, "{m} {}, {}, {}", x(i.rd), f(i.rs1), f(i.rs2)),
            Format::FToX => write!(
                out,
                "{m} {}, {}, {}",
                x(i.rd),
                f(i.rs1),
                RM[i.rm as usize & 7]
            ),
            Format::FToXNoRm => write!(out, "{m} {}, {}", x(i.rd), f(i.rs1)),
            Format::XToF => write!(
                out,
                "{m} {}, {}, {}",
                f(i.rd),
                x(i.rs1),
                RM[i.rm as usize & 7]
            ),
            Format::XToFNoRm => write!(out, "{m} {}, {}", f(i.rd), x(i.rs1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::decode;

    #[test]
    fn disassembles() {
        assert_eq!(decode(0xfff5_0513).to_string(), "addi a0, a0, -1");
        assert_eq!(decode(0x0011_3423).to_string(), "sd ra, 8(sp)");
        assert_eq!(decode(0x0520_27f3).to_string(), "csrrs a5, 0x52, zero");
        // mv x31, x30: the nanoPU loopback's header copy
        assert_eq!(decode(0x000f_0f93).to_string(), "addi nettx, netrx, 0");
        assert_eq!(decode(0).to_string(), "illegal (0x0)");
        assert_eq!(decode(0x0415_6013).to_string(), "prefetch.r 64(a0)");
        assert_eq!(decode(0xfe31_6013).to_string(), "prefetch.w -32(sp)");
    }
}
