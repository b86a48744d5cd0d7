//! RV64GC instruction decoding and disassembly.
//!
//! This crate knows the encodings and nothing else: no state, no execution,
//! no dependencies. Every instruction is listed once, in [`opcodes`], with its
//! mnemonic, operand format and match/mask bits (the Spike way); the decoder,
//! the disassembler and the tests all read that one list. Compressed (RVC)
//! instructions are expanded to their 32-bit equivalents first
//! ([`expand_compressed`]), so the rest of the simulator sees one encoding.

mod compressed;
mod decode;
mod disasm;
pub mod opcodes;

pub use compressed::expand_compressed;
pub use decode::{decode, Inst};
pub use disasm::reg_name;
pub use opcodes::{Format, Opcode, RegFile};

/// Length in bytes of the instruction whose low 16 bits are `low`.
///
/// RV64GC has only 16- and 32-bit instructions; longer encodings are treated
/// as 32-bit and then fail to decode.
#[inline]
pub fn instruction_len(low: u16) -> u8 {
    if low & 0b11 == 0b11 {
        4
    } else {
        2
    }
}
