//! Basic blocks of pre-decoded instructions: the unobserved run loop's unit
//! of execution.
//!
//! A block is the straight-line run of instructions from a start pc up to
//! and including the first one that may redirect fetch or change the
//! hart's mode (a branch, jump, CSR access, system instruction, AMO,
//! netRX/netTX access or jump to self), at most [`MAX_BLOCK_OPS`] long.
//! The block engine ([`Hart::run_blocks`]) runs a block's instructions
//! with exactly the timing of the per-instruction loop (the reference):
//! only the work that does not depend on run-time state moves to block
//! build time (decode, the decode-cache tag check, which instructions
//! start a new L1I line, the choice of the handler). The scoreboard
//! interlock, L1D, MSHRs and branch prediction stay per instruction, and
//! anything unusual (an event) leaves the block for the shared slow path.
//!
//! Blocks live in the node's [`DecodeCache`] and are forgotten with it
//! (`fence.i`, program load); code changed without a `fence.i` may keep
//! executing the old instructions, which RISC-V allows.

use crate::bus::Bus;
use crate::decode_cache::{DecodeCache, Decoded};
use crate::hart::{Hart, Stop};
use crate::timing::Class;
use crate::trap::{Exception, Trap};
use nanopu_isa::Opcode;

/// The longest block (instructions): bounds the work to rebuild one.
pub const MAX_BLOCK_OPS: usize = 64;

/// Blocks indexed (direct-mapped by start pc).
const INDEX_ENTRIES: usize = 4096;

/// Instructions kept in all blocks at most: beyond, the cache starts over
/// (blocks evicted from the index leave their instructions behind).
const MAX_OPS: usize = 1 << 16;

/// How a block instruction is executed: a specialised handler for common
/// forms, or the general interpreter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// The interpreter's `execute` (any instruction without flags).
    Generic,
    /// The interpreter's `execute_flagged` (netRX/netTX, jump to self).
    Flagged,
}

/// One pre-decoded instruction of a block.
#[derive(Clone, Copy)]
pub(crate) struct Op {
    pub d: Decoded,
    pub pc: u64,
    pub kind: Kind,
    /// The instruction is the first of the block or starts another L1I line
    /// than the one before it: the fetch timing is checked here.
    pub new_line: bool,
}

#[derive(Clone, Copy)]
struct Entry {
    pc: u64,
    start: u32,
    len: u32,
}

const EMPTY: Entry = Entry {
    pc: u64::MAX,
    start: 0,
    len: 0,
};

/// The blocks built so far, indexed by start pc.
pub(crate) struct BlockCache {
    index: Vec<Entry>,
    pub ops: Vec<Op>,
    /// log2 of the L1I line size the blocks' `new_line` marks were computed for.
    line_shift: u32,
    pub builds: u64,
}

impl BlockCache {
    pub fn new() -> BlockCache {
        BlockCache {
            index: Vec::new(),
            ops: Vec::new(),
            line_shift: 0,
            builds: 0,
        }
    }

    /// Forgets every block.
    pub fn invalidate(&mut self) {
        self.index.clear();
        self.ops.clear();
    }
}

impl DecodeCache {
    /// The range of [`BlockCache::ops`] holding the block that starts at
    /// `pc`, built on a miss for an L1I of `2^line_shift`-byte lines.
    /// `Err(addr)` when instruction memory at `addr` (the block's first
    /// instruction) cannot be read.
    #[inline(always)]
    pub(crate) fn block<B: Bus>(
        &mut self,
        pc: u64,
        bus: &mut B,
        line_shift: u32,
    ) -> Result<(usize, usize), u64> {
        let i = (pc >> 1) as usize & (INDEX_ENTRIES - 1);
        if let Some(e) = self.blocks.index.get(i) {
            if e.pc == pc && self.blocks.line_shift == line_shift {
                let start = e.start as usize;
                return Ok((start, start + e.len as usize));
            }
        }
        self.build_block(i, pc, bus, line_shift)
    }

    #[cold]
    #[inline(never)]
    fn build_block<B: Bus>(
        &mut self,
        i: usize,
        pc: u64,
        bus: &mut B,
        line_shift: u32,
    ) -> Result<(usize, usize), u64> {
        if self.blocks.index.is_empty()
            || self.blocks.line_shift != line_shift
            || self.blocks.ops.len() + MAX_BLOCK_OPS > MAX_OPS
        {
            self.blocks.invalidate();
            self.blocks.index.resize(INDEX_ENTRIES, EMPTY);
            self.blocks.line_shift = line_shift;
        }
        self.blocks.builds += 1;
        let start = self.blocks.ops.len();
        let mut at = pc;
        let mut prev_line = None;
        for n in 0..MAX_BLOCK_OPS {
            let d = match self.get(at, bus) {
                Ok(d) => *d,
                // The first instruction's fault is the caller's; a later
                // one ends the block before it (it faults when reached).
                Err(addr) if n == 0 => return Err(addr),
                Err(_) => break,
            };
            let line = at >> line_shift;
            let kind = if d.flags != 0 {
                Kind::Flagged
            } else {
                Kind::Generic
            };
            self.blocks.ops.push(Op {
                d,
                pc: at,
                kind,
                new_line: prev_line != Some(line),
            });
            prev_line = Some(line);
            at = at.wrapping_add(d.inst.len as u64);
            if ends_block(&d) {
                break;
            }
        }
        let end = self.blocks.ops.len();
        self.blocks.index[i] = Entry {
            pc,
            start: start as u32,
            len: (end - start) as u32,
        };
        Ok((start, end))
    }
}

/// Whether the instruction may redirect fetch, change the hart's mode or
/// interrupt state, or needs the node: the last of its block.
fn ends_block(d: &Decoded) -> bool {
    d.flags != 0
        || d.inst.op == Opcode::Illegal
        || matches!(
            d.timing.class,
            Class::Branch | Class::Jump | Class::Csr | Class::System | Class::Amo
        )
}

impl Hart {
    /// The block engine: the unobserved run loop. Same contract and, cycle
    /// for cycle, the same behaviour as the per-instruction loop
    /// (`run_loop`, the reference), which observers and traces use.
    #[inline(always)]
    pub(crate) fn run_blocks<B: Bus, const NB: bool>(
        &mut self,
        bus: &mut B,
        dc: &mut DecodeCache,
        mut limit: u64,
    ) -> Stop {
        if let Some(stop) = self.take_pending_interrupt() {
            return stop;
        }
        let line_shift = self.l1i.line_shift();
        while self.cycle < limit {
            let (start, end) = match dc.block(self.pc, bus, line_shift) {
                Ok(r) => r,
                Err(addr) => {
                    let t = Trap::new(Exception::InstructionAccessFault, addr);
                    match self.take_trap(t, None) {
                        Ok(()) => continue,
                        Err(stop) => return stop,
                    }
                }
            };
            let mut exit = None;
            for op in &dc.blocks.ops[start..end] {
                if self.cycle >= limit {
                    return Stop::Limit;
                }
                debug_assert_eq!(self.pc, op.pc);
                if op.new_line {
                    self.fetch_timing(bus);
                }
                let issue = self.pipeline.issue_cycle(&op.d.timing, self.cycle);
                self.cycle = issue + 1;
                let result = match op.kind {
                    Kind::Generic => self.execute::<B, NB>(&op.d.inst, bus),
                    Kind::Flagged => self.execute_flagged::<B, NB>(&op.d, bus),
                };
                self.x[0] = 0;
                match result {
                    Ok(()) => {
                        self.pipeline.complete(&op.d.timing, issue);
                        self.instret += 1;
                    }
                    Err(event) => {
                        exit = Some((event, op.d, issue));
                        break;
                    }
                }
            }
            if let Some((event, d, issue)) = exit {
                if let Some(stop) = self.handle_event(event, &d, issue, dc) {
                    return stop;
                }
                if self.net.hts.dirty {
                    // A CSR write moved the thread scheduler's deadlines:
                    // end the slice where its interrupt would become pending.
                    limit = limit.min(self.hts_slice_bound());
                }
            }
        }
        Stop::Limit
    }
}
