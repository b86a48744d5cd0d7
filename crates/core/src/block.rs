//! Blocks of pre-decoded instructions: the unobserved run loop's unit of
//! execution.
//!
//! A basic block is the straight-line run of instructions from a start pc
//! up to and including the first one that may redirect fetch or change
//! the hart's mode (a branch, jump, CSR access other than a read of the
//! cycle or instruction counter, system instruction, AMO, netRX/netTX
//! access or jump to self). A block is one basic block or a trace of
//! several (below), at most [`MAX_BLOCK_OPS`] instructions long.
//! The block engine ([`Hart::run_blocks`]) runs a block's instructions
//! with exactly the timing of the per-instruction loop (the reference):
//! only the work that does not depend on run-time state moves to block
//! build time (decode, the decode-cache tag check, which instructions
//! start a new L1I line, the choice of the handler, which sources can
//! possibly stall an instruction: [`stall_sources`]). The remaining
//! scoreboard checks, L1D, MSHRs and branch prediction stay per
//! instruction, and anything unusual (an event) leaves the block for the
//! shared slow path (`block/run.rs` holds the run loop).
//!
//! Blocks are numbered in build order and chained: a block remembers the
//! block that ran after it (one link for falling through, one for a taken
//! branch or jump), checked by its start pc, so most block changes need no
//! index lookup.
//!
//! A block is a *trace*: it goes on past a forward conditional branch (on
//! the path where it is not taken), a forward `jal` and a call (`jal` with
//! a link register, into the callee), along the path a static predictor
//! expects. The branches it went past are *guards*: one that goes the
//! other way ends the block there (`Event::GuardExit`), exactly as the
//! basic block it ends would have, and the run loop chains from where it
//! went. A trace stops at the first backward branch or backward jump other
//! than a call (a loop's end: loops are run from their start, below), an
//! indirect jump (`jalr`, a return), and anything else that ends a basic
//! block. A change of block
//! costs several times a simple instruction, and compiled code has a
//! branch every five or six instructions.
//!
//! A loop whose body is one block (it ends with a branch or jump going on,
//! as expected, to its own start) is unrolled: the block holds as many
//! copies of the body as fit in [`MAX_BLOCK_OPS`], and the last branch of
//! each copy but the last is a guard ([`Op::GUARD_TAKEN`] for a backward
//! branch): taken, the block goes on with the next copy, exactly as the
//! next iteration would run; not taken, the block ends there. A tight
//! loop (matmul's) changed block every eight instructions.
//!
//! Blocks live in the node's [`DecodeCache`] and are forgotten with it
//! (`fence.i`, program load); code changed without a `fence.i` may keep
//! executing the old instructions, which RISC-V allows.

mod run;

use crate::bus::Bus;
use crate::csr;
use crate::decode_cache::{DecodeCache, Decoded};
use crate::timing::{Class, Latencies, ITERATIVE_UNIT, NO_REG};
use nanopu_isa::Opcode;

/// The longest block (instructions): bounds the work to rebuild one.
pub const MAX_BLOCK_OPS: usize = 64;
const _: () = assert!(MAX_BLOCK_OPS <= u8::MAX as usize + 1, "Op::index is a u8");

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
    /// `csrr rd, mcycle` or `cycle` (`csrrs rd, csr, x0`, rd not x0; `imm`
    /// is the CSR): loops that wait for a time read it and nothing else.
    /// Outside machine mode, the interpreter's (privilege, `mcounteren`).
    ReadCycle,
    /// `csrr rd, minstret` or `instret`, as [`Kind::ReadCycle`].
    ReadInstret,
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
    /// `jal` (`imm` is its target) and `jalr`: rd may be x0.
    Jal,
    Jalr,
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
            O::Jal => Kind::Jal,
            O::Jalr => Kind::Jalr,
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
            O::Csrrs if i.rs1 == 0 && i.rd != 0 => match (i.imm as u32 & 0xfff) as u16 {
                csr::num::MCYCLE | csr::num::CYCLE => return (Kind::ReadCycle, imm),
                csr::num::MINSTRET | csr::num::INSTRET => return (Kind::ReadInstret, imm),
                _ => return (Kind::Generic, imm),
            },
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
                | Kind::Jal
                | Kind::Jalr
                | Kind::Sb
                | Kind::Sh
                | Kind::Sw
                | Kind::Sd
        );
        if integer_result && i.rd == 0 {
            // A computation into x0 (loads into x0 returned above).
            return (Kind::Nop, imm);
        }
        let imm = match kind {
            // The result, or the branch target: constants of the block.
            Kind::Li if i.op == O::Auipc => pc.wrapping_add(imm),
            Kind::Beq | Kind::Bne | Kind::Blt | Kind::Bge | Kind::Bltu | Kind::Bgeu | Kind::Jal => {
                pc.wrapping_add(imm)
            }
            _ => imm,
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
    /// [`Op::NEW_LINE`], [`Op::GUARD_TAKEN`], [`Op::GUARD_NOT_TAKEN`].
    pub flags: u8,
    /// Its position in the block (instructions before it).
    pub index: u8,
    /// How many of `srcs` (the first ones) may not be ready when the
    /// instruction comes to issue (see [`stall_sources`]); with none it
    /// issues at the cycle it reaches.
    pub checks: u8,
    /// Scoreboard indices ([`crate::timing::Timing`]) of the sources that
    /// may stall the instruction, 0 (x0, always ready) for the others: the
    /// iterative unit ([`ITERATIVE_UNIT`]) is one for the instructions of
    /// the unpipelined multiply/divide unit.
    pub srcs: [u8; 3],
    /// The destination's scoreboard index ([`NO_REG`] if none), and
    /// [`ITERATIVE_UNIT`] for the instructions that occupy it ([`NO_REG`]
    /// for the others).
    pub dst: u8,
    pub dst2: u8,
    /// Cycles from issue until the result can be used (its class's latency).
    pub lat: u32,
    /// The sign-extended immediate (the result, for `Kind::Li`; the target,
    /// for the branches).
    pub imm: u64,
    pub pc: u64,
    pub next_pc: u64,
    pub d: Decoded,
}

impl Op {
    /// The instruction is the first of the block or starts another L1I
    /// line than the one before it: the fetch timing is checked here.
    pub const NEW_LINE: u8 = 1;
    /// A conditional branch the block goes on after only if it is taken
    /// (see the module): not taken, the block ends after it.
    pub const GUARD_TAKEN: u8 = 2;
    /// A conditional branch the block goes on after only if it is not
    /// taken: taken, the block ends after it.
    pub const GUARD_NOT_TAKEN: u8 = 4;

    /// The block instruction for `d` at `pc` (`new_line`: see
    /// [`Op::NEW_LINE`]), every source marked for checking (see
    /// [`stall_sources`]).
    fn new(d: Decoded, pc: u64, new_line: bool, lat: &Latencies) -> Op {
        let (kind, imm) = Kind::of(&d, pc);
        let t = d.timing;
        let mut srcs = t.srcs;
        let mut dst2 = NO_REG;
        if t.class.iterative() {
            debug_assert_eq!(srcs[2], 0, "{}", d.inst);
            srcs[2] = ITERATIVE_UNIT;
            dst2 = ITERATIVE_UNIT;
        }
        Op {
            kind,
            rd: d.inst.rd,
            rs1: d.inst.rs1,
            rs2: d.inst.rs2,
            flags: if new_line { Op::NEW_LINE } else { 0 },
            index: 0,
            checks: 3,
            srcs,
            dst: t.dst,
            dst2,
            lat: lat.of(t.class),
            imm,
            pc,
            next_pc: pc.wrapping_add(d.inst.len as u64),
            d,
        }
    }
}

/// A block: `len` instructions from `start` in [`BlockCache::ops`].
#[derive(Clone, Copy)]
pub(crate) struct Block {
    pub pc: u64,
    pub start: u32,
    pub len: u32,
    /// The pc after the last instruction.
    pub end_pc: u64,
    /// The last instruction does not set the pc (the block was cut short):
    /// execution falls through to `end_pc`.
    pub falls_through: bool,
    /// Chaining: the block last run after this one when it continued at
    /// `end_pc` (`next[0]`) or elsewhere (`next[1]`, also where a guard
    /// left it), [`NO_BLOCK`] if none. A block's number stays valid until
    /// the cache is cleared, so a link is checked by comparing the linked
    /// block's pc.
    pub next: [u32; 2],
}

impl Block {
    /// Where its instructions are in [`BlockCache::ops`]: (start, length).
    #[inline(always)]
    pub fn ops(&self) -> (usize, usize) {
        (self.start as usize, self.len as usize)
    }
}

/// No block (an empty index entry or chaining link).
pub(crate) const NO_BLOCK: u32 = u32::MAX;

/// The blocks built so far, indexed by start pc.
#[derive(Clone)]
pub(crate) struct BlockCache {
    /// Block numbers, direct-mapped by start pc.
    index: Vec<u32>,
    pub blocks: Vec<Block>,
    /// Per block (same index): the delay loop it is, if the run loop may
    /// run many iterations of it at once ([`DelayLoop::of`]). Apart from
    /// [`Block`], which the run loop copies for every block it runs, since
    /// it is only looked at when a block ends unlinked.
    pub delays: Vec<Option<DelayLoop>>,
    /// Where the running hart's last steady delay-loop iteration ended
    /// (`Hart::run_delay_loop`); reset at each run. Kept here rather than
    /// in the hart, whose hot fields' layout the compute kernels are
    /// sensitive to.
    pub delay_mark: LoopMark,
    /// Iterations of delay loops run at once: a diagnostic, not a counter
    /// of the model (the reference loop runs them one by one).
    pub delay_iterations_skipped: u64,
    /// Loops unrolled into their blocks (built so far; a diagnostic).
    pub loops_unrolled: u64,
    /// Blocks built past a branch or jump (so far; a diagnostic).
    pub traced: u64,
    pub ops: Vec<Op>,
    /// log2 of the L1I line size the blocks' `new_line` marks were computed for.
    line_shift: u32,
    /// Bumped whenever the blocks are forgotten: block numbers (and chaining
    /// links) from an older epoch mean nothing.
    pub epoch: u64,
    pub builds: u64,
}

impl BlockCache {
    pub fn new() -> BlockCache {
        BlockCache {
            index: Vec::new(),
            blocks: Vec::new(),
            delays: Vec::new(),
            delay_mark: LoopMark::NONE,
            delay_iterations_skipped: 0,
            loops_unrolled: 0,
            traced: 0,
            ops: Vec::new(),
            line_shift: 0,
            epoch: 0,
            builds: 0,
        }
    }

    /// Forgets every block.
    pub fn invalidate(&mut self) {
        self.index.clear();
        self.blocks.clear();
        self.delays.clear();
        self.delay_mark = LoopMark::NONE;
        self.ops.clear();
        self.epoch += 1;
    }

    /// Links block `from` to block `to` (which starts at `pc`).
    #[inline]
    pub fn link(&mut self, from: u32, pc: u64, to: u32) {
        let b = &mut self.blocks[from as usize];
        let link = (pc != b.end_pc) as usize;
        b.next[link] = to;
    }
}

impl DecodeCache {
    /// The number of the block that starts at `pc` (see
    /// [`BlockCache::blocks`]), built on a miss for an L1I of
    /// `2^line_shift`-byte lines. `Err(addr)` when instruction memory at
    /// `addr` (the block's first instruction) cannot be read.
    #[inline(always)]
    pub(crate) fn block<B: Bus>(
        &mut self,
        pc: u64,
        bus: &mut B,
        line_shift: u32,
        lat: &Latencies,
    ) -> Result<u32, u64> {
        let i = (pc >> 1) as usize & (INDEX_ENTRIES - 1);
        if let Some(&b) = self.blocks.index.get(i) {
            if self.blocks.line_shift == line_shift
                && self
                    .blocks
                    .blocks
                    .get(b as usize)
                    .is_some_and(|b| b.pc == pc)
            {
                return Ok(b);
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
    ) -> Result<u32, u64> {
        if self.blocks.index.is_empty()
            || self.blocks.line_shift != line_shift
            || self.blocks.ops.len() + MAX_BLOCK_OPS > MAX_OPS
        {
            self.blocks.invalidate();
            self.blocks.index.resize(INDEX_ENTRIES, NO_BLOCK);
            self.blocks.line_shift = line_shift;
        }
        self.blocks.builds += 1;
        let start = self.blocks.ops.len();
        let mut at = pc;
        let mut prev_line = None;
        let mut falls_through = true;
        let mut traced = false;
        for n in 0..MAX_BLOCK_OPS {
            let d = match self.get(at, bus) {
                Ok(d) => *d,
                // The first instruction's fault is the caller's; a later
                // one ends the block before it (it faults when reached).
                Err(addr) if n == 0 => return Err(addr),
                Err(_) => break,
            };
            let line = at >> line_shift;
            let mut op = Op::new(d, at, prev_line != Some(line), lat);
            op.index = n as u8;
            prev_line = Some(line);
            at = op.next_pc;
            if ends_block(&d) {
                // A trace goes on along the expected path (see the module):
                // forward, or into a callee; not back into a loop (whose
                // body, from its start, is unrolled or a delay loop), nor
                // into its last room or code it cannot read.
                let on = continuation(&op).filter(|&(target, _)| {
                    let call = op.kind == Kind::Jal && op.rd != 0;
                    (target > op.pc || call)
                        && target != pc
                        && n + 1 < MAX_BLOCK_OPS
                        && self.get(target, bus).is_ok()
                });
                match on {
                    Some((target, guard)) => {
                        op.flags |= guard;
                        at = target;
                        traced = true;
                    }
                    None => {
                        self.blocks.ops.push(op);
                        falls_through = false;
                        break;
                    }
                }
            }
            self.blocks.ops.push(op);
        }
        self.blocks.traced += traced as u64;
        let delay = DelayLoop::of(pc, &self.blocks.ops[start..]);
        if !falls_through && delay.is_none() && unroll(&mut self.blocks.ops, start, pc, line_shift)
        {
            self.blocks.loops_unrolled += 1;
        }
        let end = self.blocks.ops.len();
        stall_sources(&mut self.blocks.ops[start..end]);
        let number = self.blocks.blocks.len() as u32;
        self.blocks.blocks.push(Block {
            pc,
            start: start as u32,
            len: (end - start) as u32,
            end_pc: at,
            falls_through,
            next: [NO_BLOCK; 2],
        });
        self.blocks.delays.push(delay);
        self.blocks.index[i] = number;
        Ok(number)
    }
}

/// Where the last iteration of a delay loop ended (`Hart::run_delay_loop`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LoopMark {
    pub block: u32,
    pub cycle: u64,
    pub instret: u64,
}

impl LoopMark {
    pub const NONE: LoopMark = LoopMark {
        block: NO_BLOCK,
        cycle: 0,
        instret: 0,
    };
}

/// A block that is a whole delay loop: one L1I line, looping to its own
/// start, whose iterations once steady all take the same cycles and change
/// its registers in a way known in advance, so the run loop can run many of
/// them at once (`Hart::run_delay_loop`, which says what steady means).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DelayLoop {
    /// `addi r, r, -1; bnez r, .` (the SDK's `service_spin`): `r` drops by
    /// one an iteration, and the loop ends when it reaches 0.
    Countdown { r: u8 },
    /// `csrr t, mcycle; sub t, t, s; bltu t, n, .` (a wait for `n` cycles
    /// from `s`, as lnic-evaluation's `serve` does): `t` grows by the
    /// iteration's cycles, and the loop ends when it reaches `n`.
    WaitCycles { t: u8, s: u8, n: u8 },
}

impl DelayLoop {
    /// The delay loop the block `ops` starting at `pc` is, if any.
    fn of(pc: u64, ops: &[Op]) -> Option<DelayLoop> {
        let one_line = ops.iter().skip(1).all(|op| op.flags & Op::NEW_LINE == 0);
        let loops = ops.last().is_some_and(|b| b.imm == pc);
        if !one_line || !loops {
            return None;
        }
        match ops {
            [add, bnez] => {
                let r = add.rd;
                let counts_down = add.kind == Kind::Addi && add.rs1 == r && add.imm == u64::MAX;
                let tests_it = bnez.kind == Kind::Bne
                    && ((bnez.rs1, bnez.rs2) == (r, 0) || (bnez.rs1, bnez.rs2) == (0, r));
                if counts_down && tests_it && add.dst == r {
                    Some(DelayLoop::Countdown { r })
                } else {
                    None
                }
            }
            [read, sub, bltu] => {
                let t = read.rd;
                let (s, n) = (sub.rs2, bltu.rs2);
                let reads_mcycle = read.kind == Kind::ReadCycle && read.dst == t;
                let since = sub.kind == Kind::Sub && sub.rd == t && sub.rs1 == t && s != t;
                let until = bltu.kind == Kind::Bltu && bltu.rs1 == t && n != t;
                if reads_mcycle && since && until {
                    Some(DelayLoop::WaitCycles { t, s, n })
                } else {
                    None
                }
            }
            _ => None,
        }
    }
}

/// Where a trace goes on after `op`, an instruction that ends a basic
/// block, and the guard that checks it went that way: a `jal` to its
/// target (it always goes there: no guard); a conditional branch to its
/// target if that is backward (a loop's branch, taken but the last time),
/// else to the instruction after it (static prediction: backward taken,
/// forward not taken). Anything else ends the trace.
fn continuation(op: &Op) -> Option<(u64, u8)> {
    match op.kind {
        Kind::Jal => Some((op.imm, 0)),
        Kind::Beq | Kind::Bne | Kind::Blt | Kind::Bge | Kind::Bltu | Kind::Bgeu => {
            if op.imm <= op.pc {
                Some((op.imm, Op::GUARD_TAKEN))
            } else {
                Some((op.next_pc, Op::GUARD_NOT_TAKEN))
            }
        }
        _ => None,
    }
}

/// Unrolls the block `ops[start..]` starting at `pc` if it is a loop body
/// (its last instruction a branch or `jal` that goes on to `pc` as
/// [`continuation`] expects): appends copies of it while the block stays
/// within [`MAX_BLOCK_OPS`], and makes the last instruction of each copy
/// but the last a guard ([`Op::GUARD_TAKEN`] or [`Op::GUARD_NOT_TAKEN`]; a
/// `jal` needs none). A copy's first instruction checks the fetch timing if
/// it starts another L1I line than the instruction before it, as any
/// instruction of a block does. Returns whether it did.
fn unroll(ops: &mut Vec<Op>, start: usize, pc: u64, line_shift: u32) -> bool {
    let body = ops.len() - start;
    let last = ops[ops.len() - 1];
    let copies = MAX_BLOCK_OPS / body;
    let guard = match continuation(&last) {
        Some((target, guard)) if target == pc && copies >= 2 => guard,
        _ => return false,
    };
    let last_line = last.pc >> line_shift;
    for copy in 1..copies {
        for i in 0..body {
            let mut op = ops[start + i];
            op.index = (copy * body + i) as u8;
            if i == 0 {
                // (A guard it is keeps its flag: a body may start with a branch.)
                let new_line = op.pc >> line_shift != last_line;
                op.flags = (op.flags & !Op::NEW_LINE) | if new_line { Op::NEW_LINE } else { 0 };
            }
            ops.push(op);
        }
    }
    for copy in 0..copies - 1 {
        ops[start + copy * body + body - 1].flags |= guard;
    }
    true
}

/// Keeps in each instruction's `srcs` only the sources that may not be
/// ready when it comes to issue, given that the block always runs from its
/// first instruction and every instruction takes at least a cycle from
/// issue to the next one's (the cycle only ever moves forward, and the
/// scoreboard is written only by the block's own instructions while it
/// runs; anything else leaves the block). A source is ready
/// - once an earlier instruction of the block checked it (the scoreboard
///   entry has not changed since), or
/// - when its producer in the block, `d` instructions before, has a
///   latency of at most `d` cycles (most integer results, one cycle).
///
/// The first read of a source the block does not produce is checked (its
/// producer ran before the block).
fn stall_sources(ops: &mut [Op]) {
    #[derive(Clone, Copy)]
    enum State {
        /// Not produced in the block, not checked yet.
        Unknown,
        Ready,
        /// Produced by the instruction at this index with this latency.
        Pending(usize, u32),
    }
    let mut state = [State::Unknown; ITERATIVE_UNIT as usize + 1];
    for (i, op) in ops.iter_mut().enumerate() {
        let mut srcs = [0u8; 3];
        let mut n = 0;
        for s in op.srcs {
            if s == 0 {
                continue;
            }
            let must_check = match state[s as usize] {
                State::Ready => false,
                State::Pending(j, lat) => lat as usize > i - j,
                State::Unknown => true,
            };
            state[s as usize] = State::Ready;
            if must_check && !srcs[..n].contains(&s) {
                srcs[n] = s;
                n += 1;
            }
        }
        op.srcs = srcs;
        op.checks = n as u8;
        for d in [op.dst, op.dst2] {
            if d != NO_REG {
                state[d as usize] = State::Pending(i, op.lat);
            }
        }
    }
}

/// Whether the instruction may redirect fetch, change the hart's mode or
/// interrupt state, or needs the node: the last of its block.
fn ends_block(d: &Decoded) -> bool {
    d.flags != 0
        || d.inst.op == Opcode::Illegal
        || (matches!(
            d.timing.class,
            Class::Branch | Class::Jump | Class::Csr | Class::System | Class::Amo
        ) && !reads_a_counter(d))
}

/// `csrr rd, mcycle` and the like ([`Kind::ReadCycle`], [`Kind::ReadInstret`]):
/// they change nothing (outside machine mode a trap leaves the block as any
/// fault does), so a block goes on after them and a wait on `mcycle` is one
/// block ([`DelayLoop::WaitCycles`]).
fn reads_a_counter(d: &Decoded) -> bool {
    matches!(Kind::of(d, 0).0, Kind::ReadCycle | Kind::ReadInstret)
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
        // csrr a0, mcycle / cycle / minstret / instret: counter reads
        assert_eq!(kind(0xb000_2573, 0).0, Kind::ReadCycle);
        assert_eq!(kind(0xc000_2573, 0).0, Kind::ReadCycle);
        assert_eq!(kind(0xb020_2573, 0).0, Kind::ReadInstret);
        assert_eq!(kind(0xc020_2573, 0).0, Kind::ReadInstret);
        // into x0, with a write (csrrs a0, mcycle, a1), another CSR: the interpreter
        assert_eq!(kind(0xb000_2073, 0).0, Kind::Generic);
        assert_eq!(kind(0xb005_a573, 0).0, Kind::Generic);
        assert_eq!(kind(0x3000_2573, 0).0, Kind::Generic);
    }

    #[test]
    fn only_sources_that_may_stall_are_checked() {
        use crate::timing::CoreTimingConfig;
        let lat = Latencies::new(&CoreTimingConfig::default());
        let (a1, a2, a3, a4, a5, a6) = (11u8, 12u8, 13u8, 14u8, 15u8, 16u8);
        let i_type = |op: u32, f3: u32, rd: u8, rs1: u8, imm: u32| {
            (imm << 20) | ((rs1 as u32) << 15) | (f3 << 12) | ((rd as u32) << 7) | op
        };
        let r_type = |f7: u32, rd: u8, rs1: u8, rs2: u8| {
            (f7 << 25) | ((rs2 as u32) << 20) | ((rs1 as u32) << 15) | ((rd as u32) << 7) | 0x33
        };
        // matmul's inner loop: c[j] += a * b[j]
        let words = [
            i_type(0x03, 3, a4, a5, 0), // ld a4, 0(a5)
            i_type(0x03, 3, a3, a2, 0), // ld a3, 0(a2)
            r_type(1, a4, a4, a1),      // mul a4, a4, a1
            r_type(0, a4, a4, a3),      // add a4, a4, a3
            ((a4 as u32) << 20) | ((a2 as u32) << 15) | (3 << 12) | 0x23, // sd a4, 0(a2)
            i_type(0x13, 0, a5, a5, 8), // addi a5, a5, 8
            i_type(0x13, 0, a2, a2, 8), // addi a2, a2, 8
            0xfe00_1000 | ((a6 as u32) << 20) | ((a5 as u32) << 15) | 0x63 | (0x1f << 7), // bne a5, a6, ...
        ];
        let mut ops: Vec<Op> = words
            .iter()
            .enumerate()
            .map(|(n, &w)| Op::new(Decoded::new(decode(w)), 4 * n as u64, n == 0, &lat))
            .collect();
        assert_eq!(ops[7].kind, Kind::Bne);
        stall_sources(&mut ops);
        let checked: Vec<[u8; 3]> = ops.iter().map(|o| o.srcs).collect();
        assert_eq!(
            checked,
            [
                [a5, 0, 0], // first read of a register from before
                [a2, 0, 0],
                [a4, a1, ITERATIVE_UNIT], // a load 2 instructions back (3 cycles)
                [a4, a3, 0],              // the multiply (8 cycles), the load
                [0, 0, 0],                // a4 from the add: one cycle
                [0, 0, 0],                // a5 checked by the first load
                [0, 0, 0],
                [a6, 0, 0], // a5 from an add two back; a6 first read
            ]
        );
        let checks: Vec<u8> = ops.iter().map(|o| o.checks).collect();
        assert_eq!(checks, [1, 1, 3, 2, 0, 0, 0, 1]);
    }

    #[test]
    fn a_loop_body_is_unrolled_with_guards_on_all_but_its_last_branch() {
        use crate::timing::CoreTimingConfig;
        let lat = Latencies::new(&CoreTimingConfig::default());
        // At 0x100: add s2, s2, t0; addi t0, t0, -1; bnez t0, 0x100.
        let build = |words: [u32; 3]| -> Vec<Op> {
            words
                .iter()
                .enumerate()
                .map(|(n, &w)| {
                    let pc = 0x100 + 4 * n as u64;
                    let mut op = Op::new(Decoded::new(decode(w)), pc, n == 0, &lat);
                    op.index = n as u8;
                    op
                })
                .collect()
        };
        let mut ops = build([0x0059_0933, 0xfff2_8293, 0xfe02_9ce3]);
        assert_eq!(ops[2].imm, 0x100);
        assert!(unroll(&mut ops, 0, 0x100, 6));
        assert_eq!(ops.len(), 63, "21 copies of 3");
        for (n, op) in ops.iter().enumerate() {
            assert_eq!(op.index as usize, n);
            assert_eq!(op.pc, 0x100 + 4 * (n as u64 % 3));
            let guard = n % 3 == 2 && n != 62;
            assert_eq!(op.flags & Op::GUARD_TAKEN != 0, guard, "op {n}");
            // One L1I line: only the block's first instruction checks fetch.
            assert_eq!(op.flags & Op::NEW_LINE != 0, n == 0, "op {n}");
        }
        // A branch back into the block but not to its start (bnez t0, 0x104)
        // makes no loop of the block.
        let mut ops = build([0x0059_0933, 0xfff2_8293, 0xfe02_9ee3]);
        assert_eq!(ops[2].imm, 0x104);
        assert!(!unroll(&mut ops, 0, 0x100, 6));
        assert_eq!(ops.len(), 3);
    }

    /// Instruction memory only: 32-bit words from `base`.
    struct Code {
        base: u64,
        words: Vec<u32>,
    }

    impl Bus for Code {
        fn load(&mut self, _: usize, _: u64, _: u64, _: u8) -> Result<u64, crate::bus::BusError> {
            unreachable!("building a block loads nothing")
        }
        fn store(
            &mut self,
            _: usize,
            _: u64,
            _: u64,
            _: u8,
            _: u64,
        ) -> Result<(), crate::bus::BusError> {
            unreachable!("building a block stores nothing")
        }
        fn fetch16(&mut self, addr: u64) -> Result<u16, crate::bus::BusError> {
            let i = addr.wrapping_sub(self.base) as usize / 4;
            let w = self.words.get(i).ok_or(crate::bus::BusError::Unmapped)?;
            Ok((w >> (8 * (addr & 2))) as u16)
        }
        fn refill(&mut self, _: usize, _: u64, cycle: u64, _: crate::bus::RefillKind) -> u64 {
            cycle
        }
        fn uncached_cycles(&self, _: u64) -> Option<u32> {
            None
        }
        fn reserve(&mut self, _: usize, _: u64) {}
        fn take_reservation(&mut self, _: usize, _: u64) -> bool {
            false
        }
        fn mtime_at(&self, _: u64) -> u64 {
            0
        }
    }

    /// `b<cond> rs1, rs2, pc + offset` (funct3 `f3`).
    fn branch(f3: u32, rs1: u32, rs2: u32, offset: i32) -> u32 {
        let o = offset as u32;
        ((o >> 12) & 1) << 31
            | ((o >> 5) & 0x3f) << 25
            | rs2 << 20
            | rs1 << 15
            | f3 << 12
            | ((o >> 1) & 0xf) << 8
            | ((o >> 11) & 1) << 7
            | 0x63
    }

    /// `jal rd, pc + offset`.
    fn jal(rd: u32, offset: i32) -> u32 {
        let o = offset as u32;
        ((o >> 20) & 1) << 31
            | ((o >> 1) & 0x3ff) << 21
            | ((o >> 11) & 1) << 20
            | ((o >> 12) & 0xff) << 12
            | rd << 7
            | 0x6f
    }

    /// The block starting at `pc` in `code`: (pc, flags) of its instructions,
    /// its end pc and whether it falls through.
    fn build(code: &mut Code, pc: u64) -> (Vec<(u64, u8)>, u64, bool) {
        use crate::timing::CoreTimingConfig;
        let lat = Latencies::new(&CoreTimingConfig::default());
        let mut dc = DecodeCache::new(1024);
        let b = dc.block(pc, code, 6, &lat).expect("readable");
        let b = dc.blocks.blocks[b as usize];
        let (start, len) = b.ops();
        let ops = dc.blocks.ops[start..start + len].iter();
        (
            ops.map(|o| (o.pc, o.flags)).collect(),
            b.end_pc,
            b.falls_through,
        )
    }

    #[test]
    fn a_trace_goes_on_past_forward_branches_jumps_and_calls() {
        const ADDI_A0: u32 = 0x0015_0513; // addi a0, a0, 1
        const RET: u32 = 0x0000_8067;
        let (a0, a1, a2) = (10, 11, 12);
        let mut words = vec![0x0000_0013; 32]; // nops
        words[0] = ADDI_A0; // 0x100
        words[1] = branch(0, a0, a1, 12); // 0x104: beq a0, a1, 0x110 (forward)
        words[2] = jal(0, 0x18); // 0x108: j 0x120
        words[8] = jal(1, 0x20); // 0x120: call 0x140 (the next line)
        words[16] = branch(1, a0, a2, -0x3c); // 0x140: bne a0, a2, 0x104 (backward)
        let mut code = Code { base: 0x100, words };
        let (ops, end_pc, falls_through) = build(&mut code, 0x100);
        let (n, g) = (Op::NEW_LINE, Op::GUARD_NOT_TAKEN);
        assert_eq!(
            ops,
            [(0x100, n), (0x104, g), (0x108, 0), (0x120, 0), (0x140, n)],
            "a backward branch ends the trace (not a guard)"
        );
        assert_eq!((end_pc, falls_through), (0x144, false));

        // A loop entered at its exit test, closed by a `ret`-free backward
        // branch to the block's start: unrolled, with the forward exit
        // branch a guard in every copy.
        code.words[0] = branch(0, a0, a1, 12); // 0x100: beq a0, a1, 0x10c
        code.words[1] = ADDI_A0; // 0x104
        code.words[2] = branch(1, a0, a2, -8); // 0x108: bne a0, a2, 0x100
        let (ops, _, _) = build(&mut code, 0x100);
        assert_eq!(ops.len(), 63, "21 copies of 3");
        for (i, &(pc, flags)) in ops.iter().enumerate() {
            assert_eq!(pc, 0x100 + 4 * (i as u64 % 3));
            let expect = match i % 3 {
                0 => g | if i == 0 { n } else { 0 },
                2 if i != 62 => Op::GUARD_TAKEN,
                _ => 0,
            };
            assert_eq!(flags, expect, "op {i}");
        }

        // A jump to code that cannot be read, or a return: the trace ends there.
        code.words[0] = ADDI_A0;
        code.words[1] = jal(0, 0x1000);
        let (ops, end_pc, _) = build(&mut code, 0x100);
        assert_eq!(ops.iter().map(|o| o.0).collect::<Vec<_>>(), [0x100, 0x104]);
        assert_eq!(end_pc, 0x108);
        code.words[1] = RET;
        assert_eq!(build(&mut code, 0x100).0.len(), 2);
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
