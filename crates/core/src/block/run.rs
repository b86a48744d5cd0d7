//! The block engine's run loop ([`Hart::run_blocks`]) and the specialised
//! handlers of block instructions.
//!
//! Hot state stays in locals while a block runs: the cycle (handed to the
//! handlers that read or advance it), the retired count (only written back
//! when the block ends or a handler needs it) and the pc (written only
//! where it can be observed: before the interpreter or a path that may
//! trap, by control transfers, and when the block ends).

use super::{Block, DelayLoop, Kind, LoopMark, Op, NO_BLOCK};
use crate::bus::{Bus, RefillKind};
use crate::csr::Privilege;
use crate::decode_cache::DecodeCache;
use crate::exec::sext32;
use crate::hart::{Event, Hart, Stop};
use crate::timing::{Lookup, ITERATIVE_UNIT, NO_REG};
use crate::trap::{Exception, Trap};

impl Hart {
    /// The block engine: the unobserved run loop. Same contract and, cycle
    /// for cycle, the same behaviour as the per-instruction loop
    /// (`run_loop`, the reference), which observers and traces use.
    ///
    /// The cycle and the retired count live in locals for the whole run;
    /// `self.cycle` and `self.instret` are brought up to date before any
    /// code that reads them (the handlers that need them, events, traps)
    /// and the locals reloaded after.
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
        // The block to run next, if known (chaining: no index lookup).
        let mut block = NO_BLOCK;
        let mut cycle = self.cycle;
        let mut instret = self.instret;
        dc.blocks.delay_mark = LoopMark::NONE;
        while cycle < limit {
            if block == NO_BLOCK {
                block = match dc.block(self.pc, bus, line_shift, &self.pipeline.lat) {
                    Ok(b) => b,
                    Err(addr) => {
                        let t = Trap::new(Exception::InstructionAccessFault, addr);
                        self.cycle = cycle;
                        self.instret = instret;
                        let r = self.take_trap(t, None);
                        cycle = self.cycle;
                        match r {
                            Ok(()) => continue,
                            Err(stop) => return stop,
                        }
                    }
                };
            }
            // A copy: its end is looked at again when it has run.
            let b = dc.blocks.blocks[block as usize];
            let (start, len) = b.ops();
            let ops = &dc.blocks.ops[start..start + len];
            let mut exit = None;
            for op in ops {
                if cycle >= limit {
                    self.cycle = cycle;
                    self.instret = instret + op.index as u64;
                    self.pc = op.pc;
                    return Stop::Limit;
                }
                debug_assert_eq!(op.lat, self.pipeline.lat.of(op.d.timing.class));
                if op.flags & Op::NEW_LINE != 0 {
                    cycle = self.fetch_line(bus, op.pc, line_shift, cycle);
                }
                // Only the sources that may not be ready are looked at
                // (`stall_sources`).
                // (`srcs` beyond `checks` are x0, always ready.)
                let r = &self.pipeline.ready;
                let issue = match op.checks {
                    0 => cycle,
                    1 => cycle.max(r[op.srcs[0] as usize]),
                    _ => cycle
                        .max(r[op.srcs[0] as usize])
                        .max(r[op.srcs[1] as usize])
                        .max(r[op.srcs[2] as usize]),
                };
                cycle = issue + 1;
                if let Err(event) = self.exec_op::<B, NB>(op, bus, &mut cycle, issue, instret) {
                    exit = Some((event, op.d, issue, instret + op.index as u64));
                    break;
                }
            }
            let pc = match exit {
                None => {
                    instret += ops.len() as u64;
                    if b.falls_through {
                        self.pc = b.end_pc;
                    }
                    self.pc
                }
                // A guard ended the block: as its end, after the guard
                // (which set the pc).
                Some((Event::GuardExit, _, _, retired)) => {
                    instret = retired + 1;
                    self.pc
                }
                Some((event, d, issue, retired)) => {
                    // The event may forget the blocks (`fence.i`).
                    block = NO_BLOCK;
                    dc.blocks.delay_mark = LoopMark::NONE;
                    self.cycle = cycle;
                    self.instret = retired;
                    let stop = self.handle_event(event, &d, issue, dc);
                    cycle = self.cycle;
                    instret = self.instret;
                    if let Some(stop) = stop {
                        return stop;
                    }
                    if self.net.hts.dirty {
                        // A CSR write moved the thread scheduler's deadlines:
                        // end the slice where its interrupt would become pending.
                        limit = limit.min(self.hts_slice_bound());
                    }
                    continue;
                }
            };
            // Chaining (see `Block::next`), else looked up and linked.
            // (A delay loop is never linked: it comes here each time.)
            let next = b.next[(pc != b.end_pc) as usize];
            block = match dc.blocks.blocks.get(next as usize) {
                Some(n) if n.pc == pc => next,
                _ => {
                    // By value: the addresses of `cycle` and
                    // `instret` must not escape (see `exec_op`).
                    (cycle, instret) =
                        self.run_delay_loop(dc, block, cycle, instret, limit, line_shift);
                    self.link_next_block(bus, dc, block, line_shift)
                }
            };
        }
        self.cycle = cycle;
        self.instret = instret;
        Stop::Limit
    }

    /// After an iteration of delay loop `b` (block number `block`, of kind
    /// `delay`) that ended at `cycle` with `instret` retired: runs at
    /// once the iterations after it that take the branch again, up to the
    /// slice's `limit` and short of the next poll probe, when the loop is
    /// in its steady state. Returns the new `(cycle, instret)`.
    ///
    /// Steady: the branch is predicted taken with a saturated counter (so a
    /// taken branch costs nothing and changes nothing), the scoreboard
    /// entries of the registers the loop reads are ready, fetch stays in the
    /// loop's L1I line, no poll probe is due, and (to read `mcycle` with the
    /// block engine's own handler) the hart is in machine mode. An iteration
    /// that starts and ends steady takes `period` cycles and leaves the next
    /// one steady, so every later iteration takes `period` too, only shifted
    /// in time: its registers change as [`DelayLoop`] says and their
    /// scoreboard entries move on by `period`. The iteration just run is
    /// measured (`BlockCache::delay_mark`: where the one before ended) rather than derived
    /// from the latencies. The reference loop checks the limit before each
    /// instruction and a probe at each taken branch; the iterations run here
    /// end at or before `limit` and before `next_probe`, so neither would
    /// have fired inside them.
    #[cold]
    #[inline(never)]
    fn run_delay_loop(
        &mut self,
        dc: &mut DecodeCache,
        block: u32,
        cycle: u64,
        instret: u64,
        limit: u64,
        line_shift: u32,
    ) -> (u64, u64) {
        let Some(delay) = dc.blocks.delays[block as usize] else {
            return (cycle, instret);
        };
        let b: Block = dc.blocks.blocks[block as usize];
        let branch_pc = dc.blocks.ops[(b.start + b.len - 1) as usize].pc;
        let ready = |r: u8| self.pipeline.ready[r as usize] <= cycle;
        let registers_ready = match delay {
            DelayLoop::Countdown { r } => ready(r),
            DelayLoop::WaitCycles { t, s, n } => {
                ready(t) && ready(s) && ready(n) && self.privilege == Privilege::Machine
            }
        };
        let steady = registers_ready
            && self.pc == b.pc
            && !self.polled_empty
            && self.predictor.taken_saturated(branch_pc)
            && self.last_fetch_line == b.pc >> line_shift;
        if !steady {
            dc.blocks.delay_mark = LoopMark::NONE;
            return (cycle, instret);
        }
        let now = LoopMark {
            block,
            cycle,
            instret,
        };
        let previous = std::mem::replace(&mut dc.blocks.delay_mark, now);
        // The previous iteration ended steady and this one followed it
        // directly (nothing else retired in between).
        if previous.block != block || instret - previous.instret != b.len as u64 {
            return (cycle, instret);
        }
        let period = cycle - previous.cycle;
        // Iterations that would take the branch again.
        let taken = match delay {
            // While the counter, decremented, is not zero.
            DelayLoop::Countdown { r } => self.x[r as usize].wrapping_sub(1),
            // While the elapsed cycles, `period` more each time, are below
            // `n` (they are now: the branch was taken).
            DelayLoop::WaitCycles { t, n, .. } => {
                let (elapsed, until) = (self.x[t as usize], self.x[n as usize]);
                (until - 1 - elapsed) / period
            }
        };
        let before_limit = limit.saturating_sub(cycle) / period;
        let before_probe = self.next_probe.saturating_sub(cycle + 1) / period;
        let k = taken.min(before_limit).min(before_probe);
        if k == 0 {
            return (cycle, instret);
        }
        match delay {
            DelayLoop::Countdown { r } => {
                self.x[r as usize] = self.x[r as usize].wrapping_sub(k);
                self.pipeline.ready[r as usize] += k * period;
            }
            DelayLoop::WaitCycles { t, .. } => {
                self.x[t as usize] = self.x[t as usize].wrapping_add(k * period);
                self.pipeline.ready[t as usize] += k * period;
                // Each `mcycle` read counts as an effect (poll detection).
                self.effects += k;
            }
        }
        dc.blocks.delay_iterations_skipped += k;
        let (cycle, instret) = (cycle + k * period, instret + k * b.len as u64);
        dc.blocks.delay_mark = LoopMark {
            block,
            cycle,
            instret,
        };
        (cycle, instret)
    }

    /// The block at the pc after block `from` ran when `from` is not
    /// linked to it: looked up (and linked). [`NO_BLOCK`] if instruction
    /// memory at the pc cannot be read (the run loop takes the fault).
    #[inline(never)]
    fn link_next_block<B: Bus>(
        &mut self,
        bus: &mut B,
        dc: &mut DecodeCache,
        from: u32,
        line_shift: u32,
    ) -> u32 {
        let pc = self.pc;
        let epoch = dc.blocks.epoch;
        match dc.block(pc, bus, line_shift, &self.pipeline.lat) {
            Ok(next) => {
                // Building it may have started the cache over: `from` is
                // gone. A delay loop stays unlinked, so that its end comes
                // here and `run_delay_loop` off the chained path.
                if dc.blocks.epoch == epoch && dc.blocks.delays[from as usize].is_none() {
                    dc.blocks.link(from, pc, next);
                }
                next
            }
            Err(_) => NO_BLOCK,
        }
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

    /// Executes one block instruction (the semantics of `exec.rs`) issued
    /// at `issue`, with `*cycle` the cycle after; `instret` instructions
    /// retired before its block. Integer computations only write their register
    /// (the pc is the block's business); the other handlers may read and
    /// advance the cycle, and set the pc where it can be observed. Those
    /// that complete (`Ok`) and have a destination mark when it is ready
    /// ([`Hart::ready_at`]).
    #[inline(always)]
    fn exec_op<B: Bus, const NB: bool>(
        &mut self,
        op: &Op,
        bus: &mut B,
        cycle: &mut u64,
        issue: u64,
        instret: u64,
    ) -> Result<(), Event> {
        macro_rules! a {
            () => {
                self.xr(op.rs1)
            };
        }
        macro_rules! b {
            () => {
                self.xr(op.rs2)
            };
        }
        let imm = op.imm;
        let v = match op.kind {
            Kind::Nop => {
                self.ready_at(op, issue);
                return Ok(());
            }
            Kind::Li => imm,
            Kind::Addi => a!().wrapping_add(imm),
            Kind::Addiw => sext32(a!().wrapping_add(imm)),
            Kind::Andi => a!() & imm,
            Kind::Ori => a!() | imm,
            Kind::Xori => a!() ^ imm,
            Kind::Slti => ((a!() as i64) < (imm as i64)) as u64,
            Kind::Sltiu => (a!() < imm) as u64,
            Kind::Slli => a!() << (imm & 63),
            Kind::Srli => a!() >> (imm & 63),
            Kind::Srai => ((a!() as i64) >> (imm & 63)) as u64,
            Kind::Slliw => sext32(a!() << (imm & 31)),
            Kind::Srliw => sext32((a!() as u32 >> (imm & 31)) as u64),
            Kind::Sraiw => ((a!() as i32) >> (imm & 31)) as i64 as u64,
            Kind::Add => a!().wrapping_add(b!()),
            Kind::Sub => a!().wrapping_sub(b!()),
            Kind::Addw => sext32(a!().wrapping_add(b!())),
            Kind::Subw => sext32(a!().wrapping_sub(b!())),
            Kind::And => a!() & b!(),
            Kind::Or => a!() | b!(),
            Kind::Xor => a!() ^ b!(),
            Kind::Sll => a!() << (b!() & 63),
            Kind::Srl => a!() >> (b!() & 63),
            Kind::Sra => ((a!() as i64) >> (b!() & 63)) as u64,
            Kind::Sllw => sext32(a!() << (b!() & 31)),
            Kind::Srlw => sext32((a!() as u32 >> (b!() & 31)) as u64),
            Kind::Sraw => ((a!() as i32) >> (b!() & 31)) as i64 as u64,
            Kind::Slt => ((a!() as i64) < (b!() as i64)) as u64,
            Kind::Sltu => (a!() < b!()) as u64,
            Kind::Mul | Kind::Mulw => {
                let p = a!().wrapping_mul(b!());
                self.pipeline.ready[ITERATIVE_UNIT as usize] = issue + op.lat as u64;
                if op.kind == Kind::Mul {
                    p
                } else {
                    sext32(p)
                }
            }
            // The interpreter's `exec_csr` and `csr_read` for these, in
            // machine mode (every counter readable, nothing written). A CSR
            // instruction ends its block: the pc after it is set here.
            Kind::ReadCycle if self.privilege == Privilege::Machine => {
                self.effects += 1;
                self.pc = op.next_pc;
                (*cycle).wrapping_add(self.mcycle_offset)
            }
            Kind::ReadInstret if self.privilege == Privilege::Machine => {
                self.effects += 1;
                self.pc = op.next_pc;
                (instret + op.index as u64).wrapping_add(self.minstret_offset)
            }
            Kind::Generic | Kind::Flagged | Kind::ReadCycle | Kind::ReadInstret => {
                // By value: the cycle's address must not escape (it would
                // live in memory for the whole run loop).
                let r = self.op_interpreted::<B, NB>(op, bus, *cycle, issue, instret);
                *cycle = self.cycle;
                if r.is_ok() {
                    self.ready_at(op, issue);
                }
                return r;
            }
            Kind::Lb => {
                return self.op_load::<B, NB>(op, bus, cycle, issue, 1, |v| v as i8 as i64 as u64)
            }
            Kind::Lh => {
                return self.op_load::<B, NB>(op, bus, cycle, issue, 2, |v| v as i16 as i64 as u64)
            }
            Kind::Lw => return self.op_load::<B, NB>(op, bus, cycle, issue, 4, sext32),
            Kind::Ld => return self.op_load::<B, NB>(op, bus, cycle, issue, 8, |v| v),
            Kind::Lbu => return self.op_load::<B, NB>(op, bus, cycle, issue, 1, |v| v),
            Kind::Lhu => return self.op_load::<B, NB>(op, bus, cycle, issue, 2, |v| v),
            Kind::Lwu => return self.op_load::<B, NB>(op, bus, cycle, issue, 4, |v| v),
            Kind::Sb => return self.op_store::<B, NB>(op, bus, cycle, 1),
            Kind::Sh => return self.op_store::<B, NB>(op, bus, cycle, 2),
            Kind::Sw => return self.op_store::<B, NB>(op, bus, cycle, 4),
            Kind::Sd => return self.op_store::<B, NB>(op, bus, cycle, 8),
            Kind::Beq => return self.op_branch(op, cycle, a!() == b!()),
            Kind::Bne => return self.op_branch(op, cycle, a!() != b!()),
            Kind::Blt => return self.op_branch(op, cycle, (a!() as i64) < (b!() as i64)),
            Kind::Bge => return self.op_branch(op, cycle, (a!() as i64) >= (b!() as i64)),
            Kind::Bltu => return self.op_branch(op, cycle, a!() < b!()),
            Kind::Bgeu => return self.op_branch(op, cycle, a!() >= b!()),
            Kind::Jal => return self.op_jal(op, cycle, issue),
            Kind::Jalr => return self.op_jalr(op, cycle, issue),
        };
        self.xw(op.rd, v);
        self.ready_at(op, issue);
        Ok(())
    }

    /// The scoreboard: the destination of `op` (issued at `issue`) is ready
    /// after its latency.
    #[inline(always)]
    fn ready_at(&mut self, op: &Op, issue: u64) {
        self.pipeline.ready[op.dst as usize] = issue + op.lat as u64;
    }

    /// An instruction without a specialised handler: the interpreter's
    /// `execute` (or `execute_flagged` for netRX/netTX and jumps to self),
    /// with the hart's state as the reference has it (`instret`: retired
    /// before its block); the cycle after it in `self.cycle`.
    #[inline(never)]
    fn op_interpreted<B: Bus, const NB: bool>(
        &mut self,
        op: &Op,
        bus: &mut B,
        cycle: u64,
        issue: u64,
        instret: u64,
    ) -> Result<(), Event> {
        self.pc = op.pc;
        self.cycle = cycle;
        // The interpreter may read minstret (a CSR).
        self.instret = instret + op.index as u64;
        let r = if op.kind == Kind::Flagged {
            self.execute_flagged::<B, NB>(&op.d, bus)
        } else {
            self.execute::<B, NB>(&op.d.inst, bus)
        };
        self.x[0] = 0;
        r?;
        if op.dst2 != NO_REG {
            self.pipeline.ready[op.dst2 as usize] = issue + op.lat as u64;
        }
        Ok(())
    }

    /// A load of `size` bytes into rd, extended by `ext`. Plain memory
    /// ([`Bus::load_ram`]) takes the L1D model's path inline; devices,
    /// faults and loops under scrutiny take the interpreter's.
    #[inline(always)]
    fn op_load<B: Bus, const NB: bool>(
        &mut self,
        op: &Op,
        bus: &mut B,
        cycle: &mut u64,
        issue: u64,
        size: u8,
        ext: fn(u64) -> u64,
    ) -> Result<(), Event> {
        let addr = self.xr(op.rs1).wrapping_add(op.imm);
        // A loop under scrutiny notes its inputs (until they overflow).
        if !self.loads_watched {
            if let Some(v) = bus.load_ram(addr, size) {
                // `dcache_load` for cacheable memory.
                match self.l1d.access_data(addr, false) {
                    Lookup::Hit => {
                        // Never true without MSHRs (nothing is ever in flight).
                        if NB && *cycle < self.mshrs.busy_until() {
                            self.cycle = *cycle;
                            self.load_hit_in_flight(addr);
                        }
                    }
                    Lookup::Miss { dirty_victim } => {
                        self.cycle = *cycle;
                        self.dcache_miss::<B, NB>(bus, addr, dirty_victim, RefillKind::Load);
                        *cycle = self.cycle;
                    }
                }
                self.xw(op.rd, ext(v));
                if NB && self.load_arrival != 0 {
                    self.pc = op.next_pc;
                    return Err(Event::LoadPending);
                }
                self.ready_at(op, issue);
                return Ok(());
            }
        }
        self.pc = op.pc;
        self.cycle = *cycle;
        let r = self.load_at::<B, NB>(bus, addr, size);
        *cycle = self.cycle;
        self.xw(op.rd, ext(r?));
        self.pc = op.next_pc;
        self.load_done::<NB>()?;
        self.ready_at(op, issue);
        Ok(())
    }

    /// A store of the low `size` bytes of rs2 (no destination). Plain memory
    /// ([`Bus::store_ram`]) takes the L1D model's path inline; devices and
    /// faults take the interpreter's.
    #[inline(always)]
    fn op_store<B: Bus, const NB: bool>(
        &mut self,
        op: &Op,
        bus: &mut B,
        cycle: &mut u64,
        size: u8,
    ) -> Result<(), Event> {
        debug_assert_eq!(op.dst, NO_REG);
        let addr = self.xr(op.rs1).wrapping_add(op.imm);
        let value = self.xr(op.rs2);
        if bus.store_ram(self.id, addr, size, value) {
            // `dcache_store` for cacheable memory.
            self.effects += 1;
            if let Lookup::Miss { dirty_victim } = self.l1d.access_data(addr, true) {
                self.cycle = *cycle;
                self.dcache_miss::<B, NB>(bus, addr, dirty_victim, RefillKind::Store);
                *cycle = self.cycle;
            }
            return Ok(());
        }
        self.pc = op.pc;
        self.cycle = *cycle;
        let r = self.store_at::<B, NB>(bus, addr, size, value, op.next_pc);
        *cycle = self.cycle;
        r
    }

    /// A conditional branch (`imm` is its target, no destination): the
    /// interpreter's `branch`.
    #[inline(always)]
    fn op_branch(&mut self, op: &Op, cycle: &mut u64, taken: bool) -> Result<(), Event> {
        debug_assert_eq!(op.dst, NO_REG);
        if self.predictor.branch(op.pc, taken) {
            *cycle += self.pipeline.mispredict_cycles as u64;
        }
        if taken {
            self.pc = op.imm;
            let back = op.d.inst.imm <= 0;
            if back && (self.polled_empty || *cycle >= self.next_probe) {
                return Err(Event::LoopBack);
            }
            if op.flags & Op::GUARD_NOT_TAKEN != 0 {
                return Err(Event::GuardExit);
            }
        } else {
            self.pc = op.next_pc;
            if op.flags & Op::GUARD_TAKEN != 0 {
                return Err(Event::GuardExit);
            }
        }
        Ok(())
    }

    /// `jal` (`imm` is its target): the interpreter's.
    #[inline(always)]
    fn op_jal(&mut self, op: &Op, cycle: &mut u64, issue: u64) -> Result<(), Event> {
        self.predictor.jal(op.rd, op.next_pc);
        if op.rd != 0 {
            self.xw(op.rd, op.next_pc);
        }
        self.pc = op.imm;
        let back = op.d.inst.imm <= 0;
        if back && (self.polled_empty || *cycle >= self.next_probe) {
            return Err(Event::LoopBack);
        }
        self.ready_at(op, issue);
        Ok(())
    }

    /// `jalr`: the interpreter's.
    #[inline(always)]
    fn op_jalr(&mut self, op: &Op, cycle: &mut u64, issue: u64) -> Result<(), Event> {
        let target = self.xr(op.rs1).wrapping_add(op.imm) & !1;
        if self
            .predictor
            .jalr(op.pc, op.rd, op.rs1, target, op.next_pc)
        {
            *cycle += self.pipeline.mispredict_cycles as u64;
        }
        if op.rd != 0 {
            self.xw(op.rd, op.next_pc);
        }
        self.pc = target;
        if target <= op.pc && self.polled_empty {
            return Err(Event::LoopBack);
        }
        self.ready_at(op, issue);
        Ok(())
    }
}
