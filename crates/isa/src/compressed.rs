//! RVC: expanding 16-bit compressed instructions (RV64C) to their 32-bit forms.
//!
//! Each arm cites the instruction it expands (RISC-V unprivileged spec,
//! chapter "C" Standard Extension, RV64 column). Reserved encodings and the
//! all-zero word return `None`.

const OP_IMM: u32 = 0x13;
const OP_IMM_32: u32 = 0x1b;
const OP: u32 = 0x33;
const OP_32: u32 = 0x3b;
const LOAD: u32 = 0x03;
const LOAD_FP: u32 = 0x07;
const STORE: u32 = 0x23;
const STORE_FP: u32 = 0x27;

fn bits(x: u16, hi: u32, lo: u32) -> u32 {
    ((x as u32) >> lo) & ((1 << (hi - lo + 1)) - 1)
}
fn bit(x: u16, b: u32) -> u32 {
    ((x as u32) >> b) & 1
}
fn sext(v: u32, width: u32) -> i32 {
    ((v << (32 - width)) as i32) >> (32 - width)
}
fn i_type(op: u32, f3: u32, rd: u32, rs1: u32, imm: i32) -> u32 {
    ((imm as u32 & 0xfff) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op
}
fn s_type(op: u32, f3: u32, rs1: u32, rs2: u32, imm: i32) -> u32 {
    let imm = imm as u32;
    ((imm >> 5 & 0x7f) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((imm & 0x1f) << 7) | op
}
fn r_type(op: u32, f3: u32, f7: u32, rd: u32, rs1: u32, rs2: u32) -> u32 {
    (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op
}
fn b_type(f3: u32, rs1: u32, rs2: u32, imm: i32) -> u32 {
    let i = imm as u32;
    ((i >> 12 & 1) << 31)
        | ((i >> 5 & 0x3f) << 25)
        | (rs2 << 20)
        | (rs1 << 15)
        | (f3 << 12)
        | ((i >> 1 & 0xf) << 8)
        | ((i >> 11 & 1) << 7)
        | 0x63
}
fn j_type(rd: u32, imm: i32) -> u32 {
    let i = imm as u32;
    ((i >> 20 & 1) << 31)
        | ((i >> 1 & 0x3ff) << 21)
        | ((i >> 11 & 1) << 20)
        | ((i >> 12 & 0xff) << 12)
        | (rd << 7)
        | 0x6f
}

/// Expands a compressed instruction to the equivalent 32-bit encoding.
///
/// `None` for reserved or illegal encodings (and for words whose low two
/// bits are `11`, which are not compressed).
pub fn expand_compressed(c: u16) -> Option<u32> {
    let f3 = bits(c, 15, 13);
    // Register fields: full 5-bit and the 3-bit "prime" forms (x8..x15).
    let rd = bits(c, 11, 7);
    let rs2 = bits(c, 6, 2);
    let rdp = bits(c, 4, 2) + 8;
    let rs1p = bits(c, 9, 7) + 8;
    let imm6 = sext(bit(c, 12) << 5 | bits(c, 6, 2), 6);
    match (c & 3, f3) {
        (0, 0) => {
            // C.ADDI4SPN
            let imm = bits(c, 12, 11) << 4 | bits(c, 10, 7) << 6 | bit(c, 6) << 2 | bit(c, 5) << 3;
            (imm != 0).then(|| i_type(OP_IMM, 0, rdp, 2, imm as i32))
        }
        (0, 1) => Some(i_type(LOAD_FP, 3, rdp, rs1p, ld_off(c))), // C.FLD
        (0, 2) => Some(i_type(LOAD, 2, rdp, rs1p, lw_off(c))),    // C.LW
        (0, 3) => Some(i_type(LOAD, 3, rdp, rs1p, ld_off(c))),    // C.LD
        (0, 5) => Some(s_type(STORE_FP, 3, rs1p, rdp, ld_off(c))), // C.FSD
        (0, 6) => Some(s_type(STORE, 2, rs1p, rdp, lw_off(c))),   // C.SW
        (0, 7) => Some(s_type(STORE, 3, rs1p, rdp, ld_off(c))),   // C.SD
        (1, 0) => Some(i_type(OP_IMM, 0, rd, rd, imm6)),          // C.ADDI / C.NOP
        (1, 1) => (rd != 0).then(|| i_type(OP_IMM_32, 0, rd, rd, imm6)), // C.ADDIW
        (1, 2) => Some(i_type(OP_IMM, 0, rd, 0, imm6)),           // C.LI
        (1, 3) if rd == 2 => {
            // C.ADDI16SP
            let imm = bit(c, 12) << 9
                | bit(c, 6) << 4
                | bit(c, 5) << 6
                | bits(c, 4, 3) << 7
                | bit(c, 2) << 5;
            (imm != 0).then(|| i_type(OP_IMM, 0, 2, 2, sext(imm, 10)))
        }
        (1, 3) => {
            // C.LUI
            (imm6 != 0).then_some(((imm6 as u32) << 12) | (rd << 7) | 0x37)
        }
        (1, 4) => {
            let shamt = bit(c, 12) << 5 | bits(c, 6, 2);
            match bits(c, 11, 10) {
                0 => Some(i_type(OP_IMM, 5, rs1p, rs1p, shamt as i32)), // C.SRLI
                1 => Some(i_type(OP_IMM, 5, rs1p, rs1p, (shamt | 0x400) as i32)), // C.SRAI
                2 => Some(i_type(OP_IMM, 7, rs1p, rs1p, imm6)),         // C.ANDI
                _ => {
                    let (op, f3, f7) = match (bit(c, 12), bits(c, 6, 5)) {
                        (0, 0) => (OP, 0, 0x20),    // C.SUB
                        (0, 1) => (OP, 4, 0),       // C.XOR
                        (0, 2) => (OP, 6, 0),       // C.OR
                        (0, 3) => (OP, 7, 0),       // C.AND
                        (1, 0) => (OP_32, 0, 0x20), // C.SUBW
                        (1, 1) => (OP_32, 0, 0),    // C.ADDW
                        _ => return None,
                    };
                    Some(r_type(op, f3, f7, rs1p, rs1p, rdp))
                }
            }
        }
        (1, 5) => {
            // C.J
            let off = bit(c, 12) << 11
                | bit(c, 11) << 4
                | bits(c, 10, 9) << 8
                | bit(c, 8) << 10
                | bit(c, 7) << 6
                | bit(c, 6) << 7
                | bits(c, 5, 3) << 1
                | bit(c, 2) << 5;
            Some(j_type(0, sext(off, 12)))
        }
        (1, 6) | (1, 7) => {
            // C.BEQZ / C.BNEZ
            let off = bit(c, 12) << 8
                | bits(c, 11, 10) << 3
                | bits(c, 6, 5) << 6
                | bits(c, 4, 3) << 1
                | bit(c, 2) << 5;
            Some(b_type(f3 - 6, rs1p, 0, sext(off, 9)))
        }
        (2, 0) => {
            // C.SLLI
            let shamt = bit(c, 12) << 5 | bits(c, 6, 2);
            Some(i_type(OP_IMM, 1, rd, rd, shamt as i32))
        }
        (2, 1) => Some(i_type(LOAD_FP, 3, rd, 2, ldsp_off(c))), // C.FLDSP
        (2, 2) => {
            // C.LWSP
            let off = bit(c, 12) << 5 | bits(c, 6, 4) << 2 | bits(c, 3, 2) << 6;
            (rd != 0).then(|| i_type(LOAD, 2, rd, 2, off as i32))
        }
        (2, 3) => (rd != 0).then(|| i_type(LOAD, 3, rd, 2, ldsp_off(c))), // C.LDSP
        (2, 4) => match (bit(c, 12), rd, rs2) {
            (0, 0, 0) => None,
            (0, _, 0) => Some(i_type(0x67, 0, 0, rd, 0)), // C.JR
            (0, _, _) => Some(r_type(OP, 0, 0, rd, 0, rs2)), // C.MV
            (1, 0, 0) => Some(0x0010_0073),               // C.EBREAK
            (1, _, 0) => Some(i_type(0x67, 0, 1, rd, 0)), // C.JALR
            _ => Some(r_type(OP, 0, 0, rd, rd, rs2)),     // C.ADD
        },
        (2, 5) => Some(s_type(STORE_FP, 3, 2, rs2, sdsp_off(c))), // C.FSDSP
        (2, 6) => {
            // C.SWSP
            let off = bits(c, 12, 9) << 2 | bits(c, 8, 7) << 6;
            Some(s_type(STORE, 2, 2, rs2, off as i32))
        }
        (2, 7) => Some(s_type(STORE, 3, 2, rs2, sdsp_off(c))), // C.SDSP
        _ => None,
    }
}

/// Offset of C.LW / C.SW: uimm[5:3] = c[12:10], uimm[2] = c[6], uimm[6] = c[5].
fn lw_off(c: u16) -> i32 {
    (bits(c, 12, 10) << 3 | bit(c, 6) << 2 | bit(c, 5) << 6) as i32
}
/// Offset of C.LD / C.SD / C.FLD / C.FSD: uimm[5:3] = c[12:10], uimm[7:6] = c[6:5].
fn ld_off(c: u16) -> i32 {
    (bits(c, 12, 10) << 3 | bits(c, 6, 5) << 6) as i32
}
/// Offset of C.LDSP / C.FLDSP: uimm[5] = c[12], uimm[4:3] = c[6:5], uimm[8:6] = c[4:2].
fn ldsp_off(c: u16) -> i32 {
    (bit(c, 12) << 5 | bits(c, 6, 5) << 3 | bits(c, 4, 2) << 6) as i32
}
/// Offset of C.SDSP / C.FSDSP: uimm[5:3] = c[12:10], uimm[8:6] = c[9:7].
fn sdsp_off(c: u16) -> i32 {
    (bits(c, 12, 10) << 3 | bits(c, 9, 7) << 6) as i32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{decode, Opcode};

    fn dec(c: u16) -> crate::Inst {
        decode(c as u32)
    }

    #[test]
    fn zero_is_illegal() {
        assert_eq!(expand_compressed(0), None);
    }

    #[test]
    fn expands_known_encodings() {
        // c.addi sp, -16  (0x1141)
        let i = dec(0x1141);
        assert_eq!(
            (i.op, i.rd, i.rs1, i.imm, i.len),
            (Opcode::Addi, 2, 2, -16, 2)
        );
        // c.sdsp ra, 8(sp) (0xe406)
        let i = dec(0xe406);
        assert_eq!((i.op, i.rs1, i.rs2, i.imm), (Opcode::Sd, 2, 1, 8));
        // c.ldsp ra, 8(sp) (0x60a2)
        let i = dec(0x60a2);
        assert_eq!((i.op, i.rd, i.rs1, i.imm), (Opcode::Ld, 1, 2, 8));
        // c.ret = c.jr ra (0x8082)
        let i = dec(0x8082);
        assert_eq!((i.op, i.rd, i.rs1, i.imm), (Opcode::Jalr, 0, 1, 0));
        // c.mv a0, a1 (0x852e)
        let i = dec(0x852e);
        assert_eq!((i.op, i.rd, i.rs1, i.rs2), (Opcode::Add, 10, 0, 11));
        // c.li a0, -1 (0x557d)
        let i = dec(0x557d);
        assert_eq!((i.op, i.rd, i.rs1, i.imm), (Opcode::Addi, 10, 0, -1));
        // c.j . (0xa001)
        let i = dec(0xa001);
        assert_eq!((i.op, i.rd, i.imm), (Opcode::Jal, 0, 0));
        // c.beqz a0, -2 (0xdd7d)
        let i = dec(0xdd7d);
        assert_eq!((i.op, i.rs1, i.rs2, i.imm), (Opcode::Beq, 10, 0, -2));
        // c.lui a0, 0xfffff (0x757d) -> lui a0, -4096
        let i = dec(0x757d);
        assert_eq!((i.op, i.rd, i.imm), (Opcode::Lui, 10, -4096));
        // c.addi16sp sp, -64 (0x7139)
        let i = dec(0x7139);
        assert_eq!((i.op, i.rd, i.rs1, i.imm), (Opcode::Addi, 2, 2, -64));
        // c.addi4spn a0, sp, 16 (0x0808)
        let i = dec(0x0808);
        assert_eq!((i.op, i.rd, i.rs1, i.imm), (Opcode::Addi, 10, 2, 16));
        // c.ebreak (0x9002)
        assert_eq!(dec(0x9002).op, Opcode::Ebreak);
        // c.srai a0, 63? c.srai a5, 1 (0x8785)
        let i = dec(0x8785);
        assert_eq!((i.op, i.rd, i.imm), (Opcode::Srai, 15, 1));
        // c.subw a0, a1 (0x9d0d)
        let i = dec(0x9d0d);
        assert_eq!((i.op, i.rd, i.rs1, i.rs2), (Opcode::Subw, 10, 10, 11));
        // c.fld fa0, 8(a0) (0x2508)
        let i = dec(0x2508);
        assert_eq!((i.op, i.rd, i.rs1, i.imm), (Opcode::Fld, 10, 10, 8));
    }

    #[test]
    fn reserved_encodings_are_illegal() {
        // c.addiw with rd = 0
        assert_eq!(expand_compressed(0x2001), None);
        // c.lwsp with rd = 0
        assert_eq!(expand_compressed(0x4002), None);
        // c.jr with rs1 = 0
        assert_eq!(expand_compressed(0x8002), None);
        // c.addi16sp with imm = 0
        assert_eq!(expand_compressed(0x6101), None);
    }
}
