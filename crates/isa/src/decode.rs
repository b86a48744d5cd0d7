//! Decoding a 32-bit (or expanded 16-bit) instruction word into [`Inst`].

use crate::compressed::expand_compressed;
use crate::opcodes::{Format, Opcode, TABLE};
use std::sync::OnceLock;

/// A decoded instruction: the opcode and its operand fields, ready to execute.
///
/// Fields an opcode does not use are zero. `imm` holds the sign-extended
/// immediate, the shift amount, or the CSR number, depending on the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inst {
    pub op: Opcode,
    pub rd: u8,
    pub rs1: u8,
    pub rs2: u8,
    pub rs3: u8,
    /// Rounding mode field (FP formats with a rounding mode).
    pub rm: u8,
    /// Encoded length in bytes: 2 (compressed) or 4.
    pub len: u8,
    pub imm: i32,
    /// The raw encoding as fetched (16 or 32 bits), for traps and disassembly.
    pub raw: u32,
}

impl Inst {
    /// An illegal instruction of the given length and raw bits.
    pub const fn illegal(raw: u32, len: u8) -> Inst {
        Inst {
            op: Opcode::Illegal,
            rd: 0,
            rs1: 0,
            rs2: 0,
            rs3: 0,
            rm: 0,
            len,
            imm: 0,
            raw,
        }
    }
}

/// For each major opcode (bits 6..2 of a 32-bit word), the table rows in it.
fn buckets() -> &'static [Vec<Opcode>; 32] {
    static BUCKETS: OnceLock<[Vec<Opcode>; 32]> = OnceLock::new();
    BUCKETS.get_or_init(|| {
        let mut b: [Vec<Opcode>; 32] = Default::default();
        for e in TABLE {
            b[((e.bits >> 2) & 0x1f) as usize].push(e.opcode);
        }
        b
    })
}

/// Decodes the instruction whose encoding starts with `word` (the low 16
/// bits alone for a compressed instruction; the upper half is then ignored).
///
/// Never panics: anything that is not a valid RV64GC encoding decodes to
/// [`Opcode::Illegal`] with the raw bits kept for the trap value.
pub fn decode(word: u32) -> Inst {
    if word & 0b11 != 0b11 {
        let half = word & 0xffff;
        return match expand_compressed(half as u16) {
            Some(full) => Inst {
                len: 2,
                raw: half,
                ..decode_full(full)
            },
            None => Inst::illegal(half, 2),
        };
    }
    decode_full(word)
}

fn decode_full(w: u32) -> Inst {
    if w & 0b11100 == 0b11100 {
        // 48-bit and longer encodings: not part of RV64GC.
        return Inst::illegal(w, 4);
    }
    let Some(&op) = buckets()[((w >> 2) & 0x1f) as usize]
        .iter()
        .find(|&&op| TABLE[op as usize].bits == w & TABLE[op as usize].mask)
    else {
        return Inst::illegal(w, 4);
    };
    let rd = ((w >> 7) & 0x1f) as u8;
    let rs1 = ((w >> 15) & 0x1f) as u8;
    let rs2 = ((w >> 20) & 0x1f) as u8;
    let rs3 = (w >> 27) as u8;
    let rm = ((w >> 12) & 0x7) as u8;
    let format = op.format();
    let mut inst = Inst {
        op,
        rd: 0,
        rs1: 0,
        rs2: 0,
        rs3: 0,
        rm: 0,
        len: 4,
        imm: 0,
        raw: w,
    };
    let [d, s1, s2, s3] = format.operands();
    use crate::RegFile::None as Unused;
    if d != Unused {
        inst.rd = rd;
    }
    if s1 != Unused {
        inst.rs1 = rs1;
    }
    if s2 != Unused {
        inst.rs2 = rs2;
    }
    if s3 != Unused {
        inst.rs3 = rs3;
    }
    if format.has_rm() {
        inst.rm = rm;
    }
    inst.imm = match format {
        Format::I | Format::Load | Format::FLoad => (w as i32) >> 20,
        Format::Store | Format::FStore => ((w as i32) >> 25 << 5) | ((w >> 7) & 0x1f) as i32,
        Format::Branch => {
            let imm = ((w >> 31) & 1) << 12
                | ((w >> 7) & 1) << 11
                | ((w >> 25) & 0x3f) << 5
                | ((w >> 8) & 0xf) << 1;
            ((imm << 19) as i32) >> 19
        }
        Format::U => (w & 0xffff_f000) as i32,
        Format::J => {
            let imm = ((w >> 31) & 1) << 20
                | ((w >> 12) & 0xff) << 12
                | ((w >> 20) & 1) << 11
                | ((w >> 21) & 0x3ff) << 1;
            ((imm << 11) as i32) >> 11
        }
        Format::Shift => ((w >> 20) & 0x3f) as i32,
        // imm[4:0] names the kind; the offset is imm[11:5] << 5.
        Format::Prefetch => ((w as i32) >> 20) & !0x1f,
        Format::Csr => (w >> 20) as i32,
        Format::CsrI => {
            // The 5-bit immediate travels in the rs1 field.
            inst.rs1 = rs1;
            (w >> 20) as i32
        }
        _ => 0,
    };
    if format == Format::Shift && matches!(op, Opcode::Slliw | Opcode::Srliw | Opcode::Sraiw) {
        inst.imm &= 0x1f;
    }
    inst
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decodes_common_encodings() {
        // addi a0, a0, -1
        let i = decode(0xfff5_0513);
        assert_eq!((i.op, i.rd, i.rs1, i.imm), (Opcode::Addi, 10, 10, -1));
        // sd ra, 8(sp)
        let i = decode(0x0011_3423);
        assert_eq!((i.op, i.rs1, i.rs2, i.imm), (Opcode::Sd, 2, 1, 8));
        // beq a0, a1, -4
        let i = decode(0xfeb5_0ee3);
        assert_eq!((i.op, i.rs1, i.rs2, i.imm), (Opcode::Beq, 10, 11, -4));
        // jal ra, 2048
        let i = decode(0x0010_00ef);
        assert_eq!((i.op, i.rd, i.imm), (Opcode::Jal, 1, 2048));
        // lui a0, 0x80000
        let i = decode(0x8000_0537);
        assert_eq!((i.op, i.rd, i.imm), (Opcode::Lui, 10, i32::MIN));
        // srai a0, a0, 63
        let i = decode(0x43f5_5513);
        assert_eq!((i.op, i.imm), (Opcode::Srai, 63));
        // csrr a5, 0x052 (lmsgsrdy)
        let i = decode(0x0520_27f3);
        assert_eq!((i.op, i.rd, i.rs1, i.imm), (Opcode::Csrrs, 15, 0, 0x52));
        // fmadd.d fa0, fa1, fa2, fa3, rne
        let i = decode(0x6ac5_8543);
        assert_eq!(
            (i.op, i.rd, i.rs1, i.rs2, i.rs3, i.rm),
            (Opcode::FmaddD, 10, 11, 12, 13, 0)
        );
        // mret, wfi
        assert_eq!(decode(0x3020_0073).op, Opcode::Mret);
        assert_eq!(decode(0x1050_0073).op, Opcode::Wfi);
        // prefetch.r 64(a0), prefetch.w -32(sp), prefetch.i 0(a1); ori with
        // rd != x0 or another imm[4:0] stays an ori
        let i = decode(0x0415_6013);
        assert_eq!((i.op, i.rs1, i.imm), (Opcode::PrefetchR, 10, 64));
        let i = decode(0xfe31_6013);
        assert_eq!((i.op, i.rs1, i.imm), (Opcode::PrefetchW, 2, -32));
        assert_eq!(decode(0x0005_e013).op, Opcode::PrefetchI);
        assert_eq!(decode(0x0415_6513).op, Opcode::Ori);
        assert_eq!(decode(0x0425_6013).op, Opcode::Ori);
        // all-zero and all-one words are illegal
        assert_eq!(decode(0).op, Opcode::Illegal);
        assert_eq!(decode(0xffff_ffff).op, Opcode::Illegal);
    }

    #[test]
    fn every_table_entry_decodes_to_itself() {
        for e in TABLE {
            // `ori` with every operand zero is `prefetch.i 0(zero)`: give it an rd.
            let w = if e.opcode == Opcode::Ori {
                e.bits | 1 << 7
            } else {
                e.bits
            };
            let i = decode(w);
            assert_eq!(i.op, e.opcode, "{} ({w:#010x})", e.mnemonic);
        }
    }

    #[test]
    fn every_16_bit_encoding_decodes_without_panicking() {
        for half in 0..=u16::MAX {
            if half & 3 != 3 {
                let i = decode(half as u32);
                assert_eq!(i.len, 2);
            }
        }
    }

    proptest! {
        #[test]
        fn any_32_bit_word_decodes_without_panicking(w in any::<u32>()) {
            let i = decode(w);
            prop_assert!(i.len == 2 || i.len == 4);
            let _ = format!("{i}");
        }
    }
}
