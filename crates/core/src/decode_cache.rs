//! Decoded-instruction cache: decode once, execute many times.
//!
//! Direct-mapped by pc and shared by the harts of a node (they run the same
//! program image). Invalidated on `fence.i`; code changed without a
//! `fence.i` may keep executing the old instructions, which the RISC-V
//! memory model allows.

use crate::block::BlockCache;
use crate::bus::{Bus, BusError};
use crate::timing::Timing;
use nanopu_isa::{decode, Format, Inst, Opcode, RegFile};

/// The instruction reads x30 (netRX): it pops a word from the RX FIFO.
pub const READS_NETRX: u8 = 1;
/// The instruction writes x31 (netTX): it pushes a word to the TX FIFO.
pub const WRITES_NETTX: u8 = 2;
/// A branch or jump to itself (`j .`): a taken one can never change state.
pub const SELF_LOOP: u8 = 4;

/// A decoded instruction with what the hot loop needs to run and time it.
#[derive(Clone, Copy, Debug)]
pub struct Decoded {
    pub inst: Inst,
    pub timing: Timing,
    /// Bits that send the instruction down the slow path (see the consts).
    pub flags: u8,
}

impl Decoded {
    pub fn new(inst: Inst) -> Decoded {
        let [d, s1, s2, s3] = inst.op.format().operands();
        let mut flags = 0;
        let reads_x30 = [(s1, inst.rs1), (s2, inst.rs2), (s3, inst.rs3)]
            .iter()
            .any(|&(file, r)| file == RegFile::X && r == 30);
        if reads_x30 {
            flags |= READS_NETRX;
        }
        if d == RegFile::X && inst.rd == 31 {
            flags |= WRITES_NETTX;
        }
        let is_jump_to_self = match inst.op.format() {
            Format::Branch | Format::J => inst.imm == 0,
            _ => false,
        };
        if is_jump_to_self && inst.op != Opcode::Illegal {
            flags |= SELF_LOOP;
        }
        Decoded {
            timing: Timing::of(&inst),
            inst,
            flags,
        }
    }
}

#[derive(Clone, Copy)]
struct Slot {
    pc: u64,
    d: Decoded,
}

/// Direct-mapped cache of decoded instructions.
#[derive(Clone)]
pub struct DecodeCache {
    slots: Vec<Slot>,
    mask: usize,
    pub misses: u64,
    /// The block engine's blocks (`block.rs`), built from these slots.
    pub(crate) blocks: BlockCache,
}

const EMPTY_PC: u64 = u64::MAX;

impl DecodeCache {
    /// Iterations of delay loops (`addi r, r, -1; bnez r, .` and waits on
    /// `mcycle`) the block engine ran at once instead of one by one, with
    /// the same result.
    pub fn delay_iterations_skipped(&self) -> u64 {
        self.blocks.delay_iterations_skipped
    }

    /// Loops the block engine unrolled into their blocks (each time one was
    /// built: a diagnostic).
    pub fn loops_unrolled(&self) -> u64 {
        self.blocks.loops_unrolled
    }

    /// Blocks the block engine built as traces, going on past a forward
    /// branch or jump or into a callee (each time one was built: a
    /// diagnostic).
    pub fn blocks_traced(&self) -> u64 {
        self.blocks.traced
    }

    /// A cache of `entries` slots (rounded up to a power of two). 64 K
    /// entries cover 128 KB of compressed code without conflicts.
    pub fn new(entries: usize) -> DecodeCache {
        let n = entries.next_power_of_two().max(2);
        let empty = Slot {
            pc: EMPTY_PC,
            d: Decoded::new(Inst::illegal(0, 4)),
        };
        DecodeCache {
            slots: vec![empty; n],
            mask: n - 1,
            misses: 0,
            blocks: BlockCache::new(),
        }
    }

    /// The decoded instruction at `pc`, fetching and decoding it on a miss.
    /// `Err(addr)` when instruction memory at `addr` cannot be read.
    /// A reference, not a copy: the run loop reads a few fields of it.
    #[inline(always)]
    pub fn get<B: Bus>(&mut self, pc: u64, bus: &mut B) -> Result<&Decoded, u64> {
        let i = (pc >> 1) as usize & self.mask;
        if self.slots[i].pc != pc {
            self.fill(i, pc, bus)?;
        }
        Ok(&self.slots[i].d)
    }

    #[cold]
    fn fill<B: Bus>(&mut self, i: usize, pc: u64, bus: &mut B) -> Result<(), u64> {
        self.misses += 1;
        let lo = bus.fetch16(pc).map_err(|_: BusError| pc)?;
        let word = if lo & 3 == 3 {
            let hi = bus.fetch16(pc + 2).map_err(|_| pc + 2)?;
            (lo as u32) | ((hi as u32) << 16)
        } else {
            lo as u32
        };
        let d = Decoded::new(decode(word));
        self.slots[i] = Slot { pc, d };
        Ok(())
    }

    /// Blocks built by the block engine (a statistic).
    pub fn block_builds(&self) -> u64 {
        self.blocks.builds
    }

    /// Forgets every decoded instruction and block (`fence.i`, program load).
    pub fn invalidate(&mut self) {
        for s in &mut self.slots {
            s.pc = EMPTY_PC;
        }
        self.blocks.invalidate();
    }
}
