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

use crate::bus::{Bus, RefillKind};
use crate::decode_cache::{DecodeCache, Decoded};
use crate::exec::sext32;
use crate::hart::{Event, Hart, Stop};
use crate::timing::{Class, Latencies, ITERATIVE_UNIT, NO_REG};
use crate::trap::{Exception, Trap};
use nanopu_isa::Opcode;

/// The longest block (instructions): bounds the work to rebuild one.
pub const MAX_BLOCK_OPS: usize = 64;

/// Blocks indexed (direct-mapped by start pc).
const INDEX_ENTRIES: usize = 4096;

/// Instructions kept in all blocks at most: beyond, the cache starts over
/// (blocks evicted from the index leave their instructions behind).
const MAX_OPS: usize = 1 << 15;

/// How a block instruction is executed: a specialised handler for common
/// forms, or the general interpreter. The specialised integer forms never
/// write x0 (those are `Nop` or `Generic`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// An integer computation into x0: only time passes.
    Nop,
    /// `lui`, `auipc`: rd = the constant in `imm`.
    Li,
    Addi,
    Addiw,
    Andi,
    Ori,
    Xori,
    Slti,
    Sltiu,
    Slli,
    Srli,
    Srai,
    Slliw,
    Srliw,
    Sraiw,
    Add,
    Sub,
    Addw,
    Subw,
    And,
    Or,
    Xor,
    Sll,
    Srl,
    Sra,
    Sllw,
    Srlw,
    Sraw,
    Slt,
    Sltu,
    Mul,
    Mulw,
    // The handlers from here on read or advance the cycle (`Hart::timed`).
    /// The interpreter's `execute` (any instruction without flags).
    Generic,
    /// The interpreter's `execute_flagged` (netRX/netTX, jump to self).
    Flagged,
    Lb,
    Lh,
    Lw,
    Ld,
    Lbu,
    Lhu,
    Lwu,
    Sb,
    Sh,
    Sw,
    Sd,
    Beq,
    Bne,
    Blt,
    Bge,
    Bltu,
    Bgeu,
}

impl Kind {
    /// The handler of `d`, an instruction at `pc`; `imm` its operand.
    fn of(d: &Decoded, pc: u64) -> (Kind, u64) {
        use Opcode as O;
        let i = &d.inst;
        let imm = i.imm as i64 as u64;
        if d.flags != 0 {
            return (Kind::Flagged, imm);
        }
        let kind = match i.op {
            O::Beq => Kind::Beq,
            O::Bne => Kind::Bne,
            O::Blt => Kind::Blt,
            O::Bge => Kind::Bge,
            O::Bltu => Kind::Bltu,
            O::Bgeu => Kind::Bgeu,
            O::Sb => Kind::Sb,
            O::Sh => Kind::Sh,
            O::Sw => Kind::Sw,
            O::Sd => Kind::Sd,
            // A load into x0 still accesses memory: the interpreter's.
            _ if i.rd == 0 && d.timing.class == Class::Load => return (Kind::Generic, imm),
            O::Lb => Kind::Lb,
            O::Lh => Kind::Lh,
            O::Lw => Kind::Lw,
            O::Ld => Kind::Ld,
            O::Lbu => Kind::Lbu,
            O::Lhu => Kind::Lhu,
            O::Lwu => Kind::Lwu,
            O::Lui => Kind::Li,
            O::Auipc => Kind::Li,
            O::Addi => Kind::Addi,
            O::Addiw => Kind::Addiw,
            O::Andi => Kind::Andi,
            O::Ori => Kind::Ori,
            O::Xori => Kind::Xori,
            O::Slti => Kind::Slti,
            O::Sltiu => Kind::Sltiu,
            O::Slli => Kind::Slli,
            O::Srli => Kind::Srli,
            O::Srai => Kind::Srai,
            O::Slliw => Kind::Slliw,
            O::Srliw => Kind::Srliw,
            O::Sraiw => Kind::Sraiw,
            O::Add => Kind::Add,
            O::Sub => Kind::Sub,
            O::Addw => Kind::Addw,
            O::Subw => Kind::Subw,
            O::And => Kind::And,
            O::Or => Kind::Or,
            O::Xor => Kind::Xor,
            O::Sll => Kind::Sll,
            O::Srl => Kind::Srl,
            O::Sra => Kind::Sra,
            O::Sllw => Kind::Sllw,
            O::Srlw => Kind::Srlw,
            O::Sraw => Kind::Sraw,
            O::Slt => Kind::Slt,
            O::Sltu => Kind::Sltu,
            O::Mul => Kind::Mul,
            O::Mulw => Kind::Mulw,
            _ => return (Kind::Generic, imm),
        };
        let integer_result = !matches!(
            kind,
            Kind::Beq
                | Kind::Bne
                | Kind::Blt
                | Kind::Bge
                | Kind::Bltu
                | Kind::Bgeu
                | Kind::Sb
                | Kind::Sh
                | Kind::Sw
                | Kind::Sd
        );
        if integer_result && i.rd == 0 {
            // A computation into x0 (loads into x0 returned above).
            return (Kind::Nop, imm);
        }
        let imm = if i.op == O::Auipc {
            pc.wrapping_add(imm)
        } else {
            imm
        };
        (kind, imm)
    }
}

/// One pre-decoded instruction of a block, with its static timing.
#[derive(Clone, Copy)]
pub(crate) struct Op {
    pub kind: Kind,
    pub rd: u8,
    pub rs1: u8,
    pub rs2: u8,
    /// The instruction is the first of the block or starts another L1I line
    /// than the one before it: the fetch timing is checked here.
    pub new_line: bool,
    /// Scoreboard indices ([`crate::timing::Timing`]) of the sources and of
    /// the destinations: an instruction of the unpipelined multiply/divide
    /// unit (none has a third source) waits for it through `srcs[2]` and
    /// occupies it through `dst2` ([`ITERATIVE_UNIT`]); for the others
    /// `dst2` is the sink [`NO_REG`].
    pub srcs: [u8; 3],
    pub dst: u8,
    pub dst2: u8,
    /// Cycles from issue until the result can be used (its class's latency).
    pub lat: u32,
    /// The sign-extended immediate (the result, for `Kind::Li`).
    pub imm: u64,
    pub pc: u64,
    pub next_pc: u64,
    pub d: Decoded,
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
        lat: &Latencies,
    ) -> Result<(usize, usize), u64> {
        let i = (pc >> 1) as usize & (INDEX_ENTRIES - 1);
        if let Some(e) = self.blocks.index.get(i) {
            if e.pc == pc && self.blocks.line_shift == line_shift {
                let start = e.start as usize;
                return Ok((start, start + e.len as usize));
            }
        }
        self.build_block(i, pc, bus, line_shift, lat)
    }

    #[cold]
    #[inline(never)]
    fn build_block<B: Bus>(
        &mut self,
        i: usize,
        pc: u64,
        bus: &mut B,
        line_shift: u32,
        lat: &Latencies,
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
            let (kind, imm) = Kind::of(&d, at);
            let t = d.timing;
            let mut srcs = t.srcs;
            let mut dst2 = NO_REG;
            if t.class.iterative() {
                debug_assert_eq!(srcs[2], 0, "{}", d.inst);
                srcs[2] = ITERATIVE_UNIT;
                dst2 = ITERATIVE_UNIT;
            }
            let next_pc = at.wrapping_add(d.inst.len as u64);
            self.blocks.ops.push(Op {
                kind,
                rd: d.inst.rd,
                rs1: d.inst.rs1,
                rs2: d.inst.rs2,
                new_line: prev_line != Some(line),
                srcs,
                dst: t.dst,
                dst2,
                lat: lat.of(t.class),
                imm,
                pc: at,
                next_pc,
                d,
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
            let (start, end) = match dc.block(self.pc, bus, line_shift, &self.pipeline.lat) {
                Ok(r) => r,
                Err(addr) => {
                    let t = Trap::new(Exception::InstructionAccessFault, addr);
                    match self.take_trap(t, None) {
                        Ok(()) => continue,
                        Err(stop) => return stop,
                    }
                }
            };
            // The cycle and the retired count live in registers while the
            // block runs; handlers that read or advance the cycle (memory,
            // branches, the interpreter) get it in `self.cycle`, and the
            // interpreter the count in `self.instret` (see `exec_op`).
            let mut cycle = self.cycle;
            let mut instret = self.instret;
            let mut exit = None;
            for op in &dc.blocks.ops[start..end] {
                if cycle >= limit {
                    self.cycle = cycle;
                    self.instret = instret;
                    return Stop::Limit;
                }
                debug_assert_eq!(self.pc, op.pc);
                debug_assert_eq!(op.lat, self.pipeline.lat.of(op.d.timing.class));
                if op.new_line {
                    cycle = self.fetch_line(bus, op.pc, line_shift, cycle);
                }
                // The operands' ready cycles first: the chain through
                // `cycle` from one instruction to the next stays short.
                let r = &self.pipeline.ready;
                let operands = r[op.srcs[0] as usize]
                    .max(r[op.srcs[1] as usize])
                    .max(r[op.srcs[2] as usize]);
                let issue = cycle.max(operands);
                cycle = issue + 1;
                match self.exec_op::<B, NB>(op, bus, &mut cycle, &mut instret) {
                    Ok(()) => {
                        let ready = issue + op.lat as u64;
                        self.pipeline.ready[op.dst as usize] = ready;
                        self.pipeline.ready[op.dst2 as usize] = ready;
                        instret += 1;
                    }
                    Err(event) => {
                        exit = Some((event, op.d, issue));
                        break;
                    }
                }
            }
            self.cycle = cycle;
            self.instret = instret;
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

    /// The fetch timing of the instruction at `pc` at `cycle` (the
    /// reference's `fetch_timing`): the L1I is consulted when fetch moves
    /// to another line. Returns the cycle after a miss's refill.
    #[inline(always)]
    fn fetch_line<B: Bus>(&mut self, bus: &mut B, pc: u64, line_shift: u32, cycle: u64) -> u64 {
        let line = pc >> line_shift;
        if line == self.last_fetch_line {
            return cycle;
        }
        self.last_fetch_line = line;
        if self.l1i.access(pc) {
            return cycle;
        }
        self.stats.icache_misses += 1;
        bus.refill(self.id, pc, cycle, RefillKind::Fetch)
    }

    #[inline(always)]
    fn xr(&self, r: u8) -> u64 {
        self.x[(r & 31) as usize]
    }

    /// Writes integer register `r` (never x0: see [`Kind`]).
    #[inline(always)]
    fn xw(&mut self, r: u8, v: u64) {
        self.x[(r & 31) as usize] = v;
    }

    /// An integer result: rd = v, on to the next instruction.
    #[inline(always)]
    fn op_alu(&mut self, op: &Op, v: u64) -> Result<(), Event> {
        self.xw(op.rd, v);
        self.pc = op.next_pc;
        Ok(())
    }

    /// A load of `size` bytes into rd, extended by `ext`.
    #[inline(always)]
    fn op_load<B: Bus, const NB: bool>(
        &mut self,
        op: &Op,
        bus: &mut B,
        size: u8,
        ext: fn(u64) -> u64,
    ) -> Result<(), Event> {
        let addr = self.xr(op.rs1).wrapping_add(op.imm);
        let v = self.load_at::<B, NB>(bus, addr, size)?;
        self.xw(op.rd, ext(v));
        self.pc = op.next_pc;
        self.load_done::<NB>()
    }

    #[inline(always)]
    fn op_store<B: Bus, const NB: bool>(
        &mut self,
        op: &Op,
        bus: &mut B,
        size: u8,
    ) -> Result<(), Event> {
        let addr = self.xr(op.rs1).wrapping_add(op.imm);
        let value = self.xr(op.rs2);
        self.store_at::<B, NB>(bus, addr, size, value, op.next_pc)
    }

    /// Executes one block instruction (the semantics of `exec.rs`) issued
    /// at `*cycle - 1`. Integer computations leave the cycle alone; every
    /// other handler gets it in `self.cycle` ([`timed`](Self::timed)) and
    /// may advance it.
    #[inline(always)]
    fn exec_op<B: Bus, const NB: bool>(
        &mut self,
        op: &Op,
        bus: &mut B,
        cycle: &mut u64,
        instret: &mut u64,
    ) -> Result<(), Event> {
        let a = self.xr(op.rs1);
        let b = self.xr(op.rs2);
        let imm = op.imm;
        match op.kind {
            Kind::Nop => {
                self.pc = op.next_pc;
                Ok(())
            }
            Kind::Li => self.op_alu(op, imm),
            Kind::Addi => self.op_alu(op, a.wrapping_add(imm)),
            Kind::Addiw => self.op_alu(op, sext32(a.wrapping_add(imm))),
            Kind::Andi => self.op_alu(op, a & imm),
            Kind::Ori => self.op_alu(op, a | imm),
            Kind::Xori => self.op_alu(op, a ^ imm),
            Kind::Slti => self.op_alu(op, ((a as i64) < (imm as i64)) as u64),
            Kind::Sltiu => self.op_alu(op, (a < imm) as u64),
            Kind::Slli => self.op_alu(op, a << (imm & 63)),
            Kind::Srli => self.op_alu(op, a >> (imm & 63)),
            Kind::Srai => self.op_alu(op, ((a as i64) >> (imm & 63)) as u64),
            Kind::Slliw => self.op_alu(op, sext32(a << (imm & 31))),
            Kind::Srliw => self.op_alu(op, sext32((a as u32 >> (imm & 31)) as u64)),
            Kind::Sraiw => self.op_alu(op, ((a as i32) >> (imm & 31)) as i64 as u64),
            Kind::Add => self.op_alu(op, a.wrapping_add(b)),
            Kind::Sub => self.op_alu(op, a.wrapping_sub(b)),
            Kind::Addw => self.op_alu(op, sext32(a.wrapping_add(b))),
            Kind::Subw => self.op_alu(op, sext32(a.wrapping_sub(b))),
            Kind::And => self.op_alu(op, a & b),
            Kind::Or => self.op_alu(op, a | b),
            Kind::Xor => self.op_alu(op, a ^ b),
            Kind::Sll => self.op_alu(op, a << (b & 63)),
            Kind::Srl => self.op_alu(op, a >> (b & 63)),
            Kind::Sra => self.op_alu(op, ((a as i64) >> (b & 63)) as u64),
            Kind::Sllw => self.op_alu(op, sext32(a << (b & 31))),
            Kind::Srlw => self.op_alu(op, sext32((a as u32 >> (b & 31)) as u64)),
            Kind::Sraw => self.op_alu(op, ((a as i32) >> (b & 31)) as i64 as u64),
            Kind::Slt => self.op_alu(op, ((a as i64) < (b as i64)) as u64),
            Kind::Sltu => self.op_alu(op, (a < b) as u64),
            Kind::Mul => self.op_alu(op, a.wrapping_mul(b)),
            Kind::Mulw => self.op_alu(op, sext32(a.wrapping_mul(b))),
            // The interpreter may also read minstret (a CSR).
            Kind::Generic => self.timed(cycle, |h| {
                h.instret = *instret;
                let r = h.execute::<B, NB>(&op.d.inst, bus);
                *instret = h.instret;
                h.x[0] = 0;
                r
            }),
            Kind::Flagged => self.timed(cycle, |h| {
                h.instret = *instret;
                let r = h.execute_flagged::<B, NB>(&op.d, bus);
                *instret = h.instret;
                h.x[0] = 0;
                r
            }),
            Kind::Lb => self.timed(cycle, |h| {
                h.op_load::<B, NB>(op, bus, 1, |v| v as i8 as i64 as u64)
            }),
            Kind::Lh => self.timed(cycle, |h| {
                h.op_load::<B, NB>(op, bus, 2, |v| v as i16 as i64 as u64)
            }),
            Kind::Lw => self.timed(cycle, |h| h.op_load::<B, NB>(op, bus, 4, sext32)),
            Kind::Ld => self.timed(cycle, |h| h.op_load::<B, NB>(op, bus, 8, |v| v)),
            Kind::Lbu => self.timed(cycle, |h| h.op_load::<B, NB>(op, bus, 1, |v| v)),
            Kind::Lhu => self.timed(cycle, |h| h.op_load::<B, NB>(op, bus, 2, |v| v)),
            Kind::Lwu => self.timed(cycle, |h| h.op_load::<B, NB>(op, bus, 4, |v| v)),
            Kind::Sb => self.timed(cycle, |h| h.op_store::<B, NB>(op, bus, 1)),
            Kind::Sh => self.timed(cycle, |h| h.op_store::<B, NB>(op, bus, 2)),
            Kind::Sw => self.timed(cycle, |h| h.op_store::<B, NB>(op, bus, 4)),
            Kind::Sd => self.timed(cycle, |h| h.op_store::<B, NB>(op, bus, 8)),
            Kind::Beq => self.timed(cycle, |h| h.branch(&op.d.inst, a == b)),
            Kind::Bne => self.timed(cycle, |h| h.branch(&op.d.inst, a != b)),
            Kind::Blt => self.timed(cycle, |h| h.branch(&op.d.inst, (a as i64) < (b as i64))),
            Kind::Bge => self.timed(cycle, |h| h.branch(&op.d.inst, (a as i64) >= (b as i64))),
            Kind::Bltu => self.timed(cycle, |h| h.branch(&op.d.inst, a < b)),
            Kind::Bgeu => self.timed(cycle, |h| h.branch(&op.d.inst, a >= b)),
        }
    }

    /// Runs a handler that reads or advances the cycle with it in
    /// `self.cycle`.
    #[inline(always)]
    fn timed(
        &mut self,
        cycle: &mut u64,
        handler: impl FnOnce(&mut Hart) -> Result<(), Event>,
    ) -> Result<(), Event> {
        self.cycle = *cycle;
        let r = handler(self);
        *cycle = self.cycle;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nanopu_isa::decode;

    fn kind(word: u32, pc: u64) -> (Kind, u64) {
        Kind::of(&Decoded::new(decode(word)), pc)
    }

    #[test]
    fn handlers_are_chosen_by_form() {
        // addi a0, a0, 1
        assert_eq!(kind(0x0015_0513, 0), (Kind::Addi, 1));
        // auipc a0, 1: the result is a constant of the block
        assert_eq!(kind(0x0000_1517, 0x8000_0000), (Kind::Li, 0x8000_1000));
        // nop (addi x0, x0, 0) and auipc x0, 1 only take time
        assert_eq!(kind(0x0000_0013, 0).0, Kind::Nop);
        assert_eq!(kind(0x0000_1017, 0x8000_0000).0, Kind::Nop);
        // ld a0, 8(sp); a load into x0 still accesses memory: the interpreter
        assert_eq!(kind(0x0081_3503, 0).0, Kind::Ld);
        assert_eq!(kind(0x0081_3003, 0).0, Kind::Generic);
        // sd ra, 8(sp)
        assert_eq!(kind(0x0011_3423, 0), (Kind::Sd, 8));
        // div a0, a1, a2: the interpreter (and the iterative unit)
        assert_eq!(kind(0x02c5_c533, 0).0, Kind::Generic);
        // a read of netRX (add a0, x30, x0) goes through the flagged path
        assert_eq!(kind(0x000f_0533, 0).0, Kind::Flagged);
    }

    #[test]
    fn blocks_end_where_control_or_mode_may_change() {
        let end = |word: u32| ends_block(&Decoded::new(decode(word)));
        assert!(!end(0x0015_0513)); // addi
        assert!(!end(0x0081_3503)); // ld
        assert!(end(0xfe05_1ee3)); // bne a0, x0, -4
        assert!(end(0x0000_8067)); // ret
        assert!(end(0x3400_2573)); // csrr a0, mscratch
        assert!(end(0x0000_100f)); // fence.i
        assert!(end(0x0000_0073)); // ecall
        assert!(end(0x0000_0000)); // illegal
    }
}
