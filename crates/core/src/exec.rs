//! Instruction semantics: one short arm per instruction (RISC-V unprivileged
//! spec v20191213 and privileged spec v20211203, machine and user mode).

use crate::bus::{Bus, BusError};
use crate::csr::{mstatus, Privilege};
use crate::fpu;
use crate::hart::{Event, Hart, Stop};
use crate::trap::{Exception, Trap};
use nanopu_isa::{Inst, Opcode};

type Exec = Result<(), Event>;

fn illegal(inst: &Inst) -> Event {
    Event::Trap(Trap::new(Exception::IllegalInstruction, inst.raw as u64))
}

#[inline(always)]
pub(crate) fn sext32(v: u64) -> u64 {
    v as i32 as i64 as u64
}

impl Hart {
    #[inline(always)]
    fn next(&mut self, inst: &Inst) {
        self.pc = self.pc.wrapping_add(inst.len as u64);
    }

    #[inline(always)]
    fn set_x(&mut self, rd: u8, v: u64) {
        self.x[rd as usize] = v;
    }

    #[inline(always)]
    fn rs1(&self, i: &Inst) -> u64 {
        self.x[i.rs1 as usize]
    }

    #[inline(always)]
    fn rs2(&self, i: &Inst) -> u64 {
        self.x[i.rs2 as usize]
    }

    #[inline(always)]
    fn alu(&mut self, i: &Inst, v: u64) -> Exec {
        self.set_x(i.rd, v);
        self.next(i);
        Ok(())
    }

    #[inline(always)]
    pub(crate) fn branch(&mut self, i: &Inst, taken: bool) -> Exec {
        if self.predictor.branch(self.pc, taken) {
            self.cycle += self.pipeline.mispredict_cycles as u64;
        }
        if taken {
            let back = i.imm <= 0;
            self.pc = self.pc.wrapping_add(i.imm as i64 as u64);
            if back && (self.polled_empty || self.cycle >= self.next_probe) {
                return Err(Event::LoopBack);
            }
        } else {
            self.next(i);
        }
        Ok(())
    }

    #[inline(always)]
    fn load<B: Bus, const NB: bool>(
        &mut self,
        bus: &mut B,
        i: &Inst,
        size: u8,
    ) -> Result<u64, Event> {
        let addr = self.rs1(i).wrapping_add(i.imm as i64 as u64);
        self.load_at::<B, NB>(bus, addr, size)
    }

    /// A load of `size` bytes at `addr` (timing and value).
    #[inline(always)]
    pub(crate) fn load_at<B: Bus, const NB: bool>(
        &mut self,
        bus: &mut B,
        addr: u64,
        size: u8,
    ) -> Result<u64, Event> {
        self.dcache_load::<B, NB>(bus, addr, size);
        bus.load(self.id, self.cycle, addr, size).map_err(|_| {
            self.load_arrival = 0;
            Event::Trap(Trap::new(Exception::LoadAccessFault, addr))
        })
    }

    /// After a load wrote its destination: leaves the fast path if the
    /// line is still in flight (non-blocking L1D; see `Event::LoadPending`).
    /// `NB`: the L1D has MSHRs (with none, no line is ever in flight).
    #[inline(always)]
    pub(crate) fn load_done<const NB: bool>(&self) -> Exec {
        if NB && self.load_arrival != 0 {
            return Err(Event::LoadPending);
        }
        Ok(())
    }

    /// An integer load's result.
    #[inline(always)]
    fn load_x<const NB: bool>(&mut self, i: &Inst, v: u64) -> Exec {
        self.set_x(i.rd, v);
        self.next(i);
        self.load_done::<NB>()
    }

    #[inline(always)]
    fn store<B: Bus, const NB: bool>(
        &mut self,
        bus: &mut B,
        i: &Inst,
        size: u8,
        value: u64,
    ) -> Exec {
        let addr = self.rs1(i).wrapping_add(i.imm as i64 as u64);
        let next_pc = self.pc.wrapping_add(i.len as u64);
        self.store_at::<B, NB>(bus, addr, size, value, next_pc)
    }

    /// A store of the low `size` bytes of `value` at `addr`; the pc moves
    /// to `next_pc` if it completes.
    #[inline(always)]
    pub(crate) fn store_at<B: Bus, const NB: bool>(
        &mut self,
        bus: &mut B,
        addr: u64,
        size: u8,
        value: u64,
        next_pc: u64,
    ) -> Exec {
        self.dcache_store::<B, NB>(bus, addr);
        match bus.store(self.id, self.cycle, addr, size, value) {
            Ok(()) => {
                self.pc = next_pc;
                Ok(())
            }
            Err(BusError::Yield) => {
                self.pc = next_pc;
                Err(Event::Stop(Stop::Yield))
            }
            Err(BusError::Unmapped) => {
                Err(Event::Trap(Trap::new(Exception::StoreAccessFault, addr)))
            }
        }
    }

    /// Executes one instruction at `self.pc`. On success the pc points at
    /// the next instruction; on a trap it is unchanged. `NB`: the L1D has
    /// MSHRs (a compile-time switch: the blocking cache's loop carries no
    /// in-flight checks).
    #[inline(always)]
    pub(crate) fn execute<B: Bus, const NB: bool>(&mut self, i: &Inst, bus: &mut B) -> Exec {
        use Opcode::*;
        let imm = i.imm as i64 as u64;
        match i.op {
            Lui => self.alu(i, imm),
            Auipc => self.alu(i, self.pc.wrapping_add(imm)),
            Jal => {
                let ret = self.pc.wrapping_add(i.len as u64);
                self.predictor.jal(i.rd, ret);
                self.set_x(i.rd, ret);
                self.pc = self.pc.wrapping_add(imm);
                if i.imm <= 0 && (self.polled_empty || self.cycle >= self.next_probe) {
                    return Err(Event::LoopBack);
                }
                Ok(())
            }
            Jalr => {
                let ret = self.pc.wrapping_add(i.len as u64);
                let target = self.rs1(i).wrapping_add(imm) & !1;
                if self.predictor.jalr(self.pc, i.rd, i.rs1, target, ret) {
                    self.cycle += self.pipeline.mispredict_cycles as u64;
                }
                self.set_x(i.rd, ret);
                let back = target <= self.pc;
                self.pc = target;
                if back && self.polled_empty {
                    return Err(Event::LoopBack);
                }
                Ok(())
            }
            Beq => self.branch(i, self.rs1(i) == self.rs2(i)),
            Bne => self.branch(i, self.rs1(i) != self.rs2(i)),
            Blt => self.branch(i, (self.rs1(i) as i64) < (self.rs2(i) as i64)),
            Bge => self.branch(i, (self.rs1(i) as i64) >= (self.rs2(i) as i64)),
            Bltu => self.branch(i, self.rs1(i) < self.rs2(i)),
            Bgeu => self.branch(i, self.rs1(i) >= self.rs2(i)),
            Lb => {
                let v = self.load::<B, NB>(bus, i, 1)? as i8 as i64 as u64;
                self.load_x::<NB>(i, v)
            }
            Lh => {
                let v = self.load::<B, NB>(bus, i, 2)? as i16 as i64 as u64;
                self.load_x::<NB>(i, v)
            }
            Lw => {
                let v = sext32(self.load::<B, NB>(bus, i, 4)?);
                self.load_x::<NB>(i, v)
            }
            Ld => {
                let v = self.load::<B, NB>(bus, i, 8)?;
                self.load_x::<NB>(i, v)
            }
            Lbu => {
                let v = self.load::<B, NB>(bus, i, 1)?;
                self.load_x::<NB>(i, v)
            }
            Lhu => {
                let v = self.load::<B, NB>(bus, i, 2)?;
                self.load_x::<NB>(i, v)
            }
            Lwu => {
                let v = self.load::<B, NB>(bus, i, 4)?;
                self.load_x::<NB>(i, v)
            }
            Sb => self.store::<B, NB>(bus, i, 1, self.rs2(i)),
            Sh => self.store::<B, NB>(bus, i, 2, self.rs2(i)),
            Sw => self.store::<B, NB>(bus, i, 4, self.rs2(i)),
            Sd => self.store::<B, NB>(bus, i, 8, self.rs2(i)),
            Addi => self.alu(i, self.rs1(i).wrapping_add(imm)),
            Slti => self.alu(i, ((self.rs1(i) as i64) < (imm as i64)) as u64),
            Sltiu => self.alu(i, (self.rs1(i) < imm) as u64),
            Xori => self.alu(i, self.rs1(i) ^ imm),
            Ori => self.alu(i, self.rs1(i) | imm),
            PrefetchR | PrefetchW => {
                // Zicbop: a hint, never a fault (architecturally `ori x0`).
                self.prefetch(bus, self.rs1(i).wrapping_add(imm));
                self.next(i);
                Ok(())
            }
            PrefetchI => {
                self.next(i);
                Ok(())
            }
            Andi => self.alu(i, self.rs1(i) & imm),
            Slli => self.alu(i, self.rs1(i) << (i.imm & 63)),
            Srli => self.alu(i, self.rs1(i) >> (i.imm & 63)),
            Srai => self.alu(i, ((self.rs1(i) as i64) >> (i.imm & 63)) as u64),
            Add => self.alu(i, self.rs1(i).wrapping_add(self.rs2(i))),
            Sub => self.alu(i, self.rs1(i).wrapping_sub(self.rs2(i))),
            Sll => self.alu(i, self.rs1(i) << (self.rs2(i) & 63)),
            Slt => self.alu(i, ((self.rs1(i) as i64) < (self.rs2(i) as i64)) as u64),
            Sltu => self.alu(i, (self.rs1(i) < self.rs2(i)) as u64),
            Xor => self.alu(i, self.rs1(i) ^ self.rs2(i)),
            Srl => self.alu(i, self.rs1(i) >> (self.rs2(i) & 63)),
            Sra => self.alu(i, ((self.rs1(i) as i64) >> (self.rs2(i) & 63)) as u64),
            Or => self.alu(i, self.rs1(i) | self.rs2(i)),
            And => self.alu(i, self.rs1(i) & self.rs2(i)),
            Addiw => self.alu(i, sext32(self.rs1(i).wrapping_add(imm))),
            Slliw => self.alu(i, sext32(self.rs1(i) << (i.imm & 31))),
            Srliw => self.alu(i, sext32((self.rs1(i) as u32 >> (i.imm & 31)) as u64)),
            Sraiw => self.alu(i, ((self.rs1(i) as i32) >> (i.imm & 31)) as i64 as u64),
            Addw => self.alu(i, sext32(self.rs1(i).wrapping_add(self.rs2(i)))),
            Subw => self.alu(i, sext32(self.rs1(i).wrapping_sub(self.rs2(i)))),
            Sllw => self.alu(i, sext32(self.rs1(i) << (self.rs2(i) & 31))),
            Srlw => self.alu(i, sext32((self.rs1(i) as u32 >> (self.rs2(i) & 31)) as u64)),
            Sraw => self.alu(
                i,
                ((self.rs1(i) as i32) >> (self.rs2(i) & 31)) as i64 as u64,
            ),
            Mul => self.alu(i, self.rs1(i).wrapping_mul(self.rs2(i))),
            // The prototype's byte reversals (ALU.scala:96-99): the low 2,
            // 4 or 8 bytes of rs1 reversed, the bytes above kept.
            Revs => {
                let a = self.rs1(i);
                self.alu(i, (a & !0xffff) | (a as u16).swap_bytes() as u64)
            }
            Revi => {
                let a = self.rs1(i);
                self.alu(i, (a & !0xffff_ffff) | (a as u32).swap_bytes() as u64)
            }
            Revl => self.alu(i, self.rs1(i).swap_bytes()),
            Mulh => {
                let p = (self.rs1(i) as i64 as i128) * (self.rs2(i) as i64 as i128);
                self.alu(i, (p >> 64) as u64)
            }
            Mulhsu => {
                let p = (self.rs1(i) as i64 as i128).wrapping_mul(self.rs2(i) as u128 as i128);
                self.alu(i, (p >> 64) as u64)
            }
            Mulhu => {
                let p = (self.rs1(i) as u128) * (self.rs2(i) as u128);
                self.alu(i, (p >> 64) as u64)
            }
            Div => {
                let (a, b) = (self.rs1(i) as i64, self.rs2(i) as i64);
                let q = if b == 0 { -1 } else { a.wrapping_div(b) };
                self.alu(i, q as u64)
            }
            Divu => {
                let (a, b) = (self.rs1(i), self.rs2(i));
                self.alu(i, a.checked_div(b).unwrap_or(u64::MAX))
            }
            Rem => {
                let (a, b) = (self.rs1(i) as i64, self.rs2(i) as i64);
                let r = if b == 0 { a } else { a.wrapping_rem(b) };
                self.alu(i, r as u64)
            }
            Remu => {
                let (a, b) = (self.rs1(i), self.rs2(i));
                self.alu(i, if b == 0 { a } else { a % b })
            }
            Mulw => self.alu(i, sext32(self.rs1(i).wrapping_mul(self.rs2(i)))),
            Divw => {
                let (a, b) = (self.rs1(i) as i32, self.rs2(i) as i32);
                let q = if b == 0 { -1 } else { a.wrapping_div(b) };
                self.alu(i, q as i64 as u64)
            }
            Divuw => {
                let (a, b) = (self.rs1(i) as u32, self.rs2(i) as u32);
                let q = a.checked_div(b).unwrap_or(u32::MAX);
                self.alu(i, sext32(q as u64))
            }
            Remw => {
                let (a, b) = (self.rs1(i) as i32, self.rs2(i) as i32);
                let r = if b == 0 { a } else { a.wrapping_rem(b) };
                self.alu(i, r as i64 as u64)
            }
            Remuw => {
                let (a, b) = (self.rs1(i) as u32, self.rs2(i) as u32);
                let r = if b == 0 { a } else { a % b };
                self.alu(i, sext32(r as u64))
            }
            Fence => {
                if NB {
                    self.drain_misses();
                }
                self.next(i);
                Ok(())
            }
            FenceI => {
                self.next(i);
                Err(Event::FenceI)
            }
            Ecall => {
                let cause = match self.privilege {
                    Privilege::Machine => Exception::EcallFromM,
                    Privilege::User => Exception::EcallFromU,
                };
                Err(Event::Trap(Trap::new(cause, 0)))
            }
            Ebreak => Err(Event::Trap(Trap::new(Exception::Breakpoint, self.pc))),
            Mret => {
                if self.privilege != Privilege::Machine {
                    return Err(illegal(i));
                }
                let s = self.csr.mstatus;
                let mpp = (s & mstatus::MPP) >> 11;
                self.privilege = if mpp == 3 {
                    Privilege::Machine
                } else {
                    Privilege::User
                };
                let mie = if s & mstatus::MPIE != 0 {
                    mstatus::MIE
                } else {
                    0
                };
                let mut s = (s & !(mstatus::MIE | mstatus::MPP)) | mie | mstatus::MPIE;
                if self.privilege != Privilege::Machine {
                    s &= !mstatus::MPRV;
                }
                self.csr.mstatus = s;
                self.pc = self.csr.mepc;
                Err(Event::CheckInterrupts)
            }
            Wfi => {
                if self.privilege == Privilege::User && self.csr.mstatus & mstatus::TW != 0 {
                    return Err(illegal(i));
                }
                self.next(i);
                if self.interrupt_waiting() {
                    Err(Event::CheckInterrupts)
                } else {
                    Err(Event::Stop(Stop::Wfi))
                }
            }
            Csrrw | Csrrs | Csrrc | Csrrwi | Csrrsi | Csrrci => self.exec_csr(i, bus),
            LrW | ScW | AmoswapW | AmoaddW | AmoxorW | AmoandW | AmoorW | AmominW | AmomaxW
            | AmominuW | AmomaxuW | LrD | ScD | AmoswapD | AmoaddD | AmoxorD | AmoandD | AmoorD
            | AmominD | AmomaxD | AmominuD | AmomaxuD | AmocasW | AmocasD => self.exec_amo(i, bus),
            AmocasQ => self.exec_amocas_q(i, bus),
            Illegal => Err(illegal(i)),
            _ => self.exec_fp::<B, NB>(i, bus),
        }
    }

    fn exec_amo<B: Bus>(&mut self, i: &Inst, bus: &mut B) -> Exec {
        use Opcode::*;
        let addr = self.rs1(i);
        let word = matches!(
            i.op,
            LrW | ScW
                | AmoswapW
                | AmoaddW
                | AmoxorW
                | AmoandW
                | AmoorW
                | AmominW
                | AmomaxW
                | AmominuW
                | AmomaxuW
                | AmocasW
        );
        let size: u8 = if word { 4 } else { 8 };
        if !addr.is_multiple_of(size as u64) {
            let cause = if matches!(i.op, LrW | LrD) {
                Exception::LoadMisaligned
            } else {
                Exception::StoreMisaligned
            };
            return Err(Event::Trap(Trap::new(cause, addr)));
        }
        self.dcache_amo(bus, addr);
        let load_fault = |_| Event::Trap(Trap::new(Exception::LoadAccessFault, addr));
        let store_fault = |_| Event::Trap(Trap::new(Exception::StoreAccessFault, addr));
        let ext = |v: u64| if word { sext32(v) } else { v };
        match i.op {
            LrW | LrD => {
                let v = bus
                    .load(self.id, self.cycle, addr, size)
                    .map_err(load_fault)?;
                bus.reserve(self.id, addr);
                return self.alu(i, ext(v));
            }
            ScW | ScD => {
                // Check the address is writable before consuming the reservation.
                bus.load(self.id, self.cycle, addr, size)
                    .map_err(store_fault)?;
                let ok = bus.take_reservation(self.id, addr);
                if ok {
                    match bus.store(self.id, self.cycle, addr, size, self.rs2(i)) {
                        Ok(()) => {}
                        Err(BusError::Yield) => {
                            self.alu(i, 0)?;
                            return Err(Event::Stop(Stop::Yield));
                        }
                        Err(e) => return Err(store_fault(e)),
                    }
                }
                return self.alu(i, (!ok) as u64);
            }
            _ => {}
        }
        let old = ext(bus
            .load(self.id, self.cycle, addr, size)
            .map_err(store_fault)?);
        let src = ext(self.rs2(i));
        if matches!(i.op, AmocasW | AmocasD) {
            // Zacas: store rs2 only if memory holds the expected value (rd).
            if old == ext(self.x[i.rd as usize]) {
                match bus.store(self.id, self.cycle, addr, size, src) {
                    Ok(()) => {}
                    Err(BusError::Yield) => {
                        self.alu(i, old)?;
                        return Err(Event::Stop(Stop::Yield));
                    }
                    Err(e) => return Err(store_fault(e)),
                }
            }
            return self.alu(i, old);
        }
        let new = match i.op {
            AmoswapW | AmoswapD => src,
            AmoaddW | AmoaddD => old.wrapping_add(src),
            AmoxorW | AmoxorD => old ^ src,
            AmoandW | AmoandD => old & src,
            AmoorW | AmoorD => old | src,
            AmominW | AmominD => (old as i64).min(src as i64) as u64,
            AmomaxW | AmomaxD => (old as i64).max(src as i64) as u64,
            AmominuW => (old as u32).min(src as u32) as u64,
            AmomaxuW => (old as u32).max(src as u32) as u64,
            AmominuD => old.min(src),
            AmomaxuD => old.max(src),
            _ => unreachable!(),
        };
        match bus.store(self.id, self.cycle, addr, size, new) {
            Ok(()) => {}
            Err(BusError::Yield) => {
                self.alu(i, old)?;
                return Err(Event::Stop(Stop::Yield));
            }
            Err(e) => return Err(store_fault(e)),
        }
        self.alu(i, old)
    }

    /// Zacas `amocas.q`: a 128-bit compare-and-swap on the register pairs
    /// (rd, rd+1) and (rs2, rs2+1); odd register numbers are reserved.
    fn exec_amocas_q<B: Bus>(&mut self, i: &Inst, bus: &mut B) -> Exec {
        if i.rd % 2 == 1 || i.rs2 % 2 == 1 {
            return Err(illegal(i));
        }
        let addr = self.rs1(i);
        if !addr.is_multiple_of(16) {
            return Err(Event::Trap(Trap::new(Exception::StoreMisaligned, addr)));
        }
        self.dcache_amo(bus, addr);
        let fault = |_| Event::Trap(Trap::new(Exception::StoreAccessFault, addr));
        let pair = |h: &Hart, r: u8| {
            if r == 0 {
                (0, 0)
            } else {
                (h.x[r as usize], h.x[r as usize + 1])
            }
        };
        let lo = bus.load(self.id, self.cycle, addr, 8).map_err(fault)?;
        let hi = bus.load(self.id, self.cycle, addr + 8, 8).map_err(fault)?;
        let mut yielded = false;
        if (lo, hi) == pair(self, i.rd) {
            let (new_lo, new_hi) = pair(self, i.rs2);
            for (a, v) in [(addr, new_lo), (addr + 8, new_hi)] {
                match bus.store(self.id, self.cycle, a, 8, v) {
                    Ok(()) => {}
                    Err(BusError::Yield) => yielded = true,
                    Err(e) => return Err(fault(e)),
                }
            }
        }
        if i.rd != 0 {
            self.x[i.rd as usize] = lo;
            self.x[i.rd as usize + 1] = hi;
        }
        self.next(i);
        match yielded {
            true => Err(Event::Stop(Stop::Yield)),
            false => Ok(()),
        }
    }

    /// The rounding mode an FP instruction uses, or an illegal-instruction trap.
    #[inline(always)]
    fn rounding(&self, i: &Inst) -> Result<u8, Event> {
        let rm = if i.rm == 7 { self.csr.frm } else { i.rm };
        if rm > 4 {
            Err(illegal(i))
        } else {
            Ok(rm)
        }
    }

    #[inline(always)]
    fn fs(&self, r: u8) -> u32 {
        fpu::unbox_f32(self.f[r as usize])
    }

    #[inline(always)]
    fn fd(&self, r: u8) -> u64 {
        self.f[r as usize]
    }

    #[inline(always)]
    fn set_fs(&mut self, i: &Inst, v: u32) -> Exec {
        self.f[i.rd as usize] = fpu::box_f32(v);
        self.csr.mstatus |= mstatus::FS;
        self.next(i);
        Ok(())
    }

    #[inline(always)]
    fn set_fd(&mut self, i: &Inst, v: u64) -> Exec {
        self.f[i.rd as usize] = v;
        self.csr.mstatus |= mstatus::FS;
        self.next(i);
        Ok(())
    }

    /// An FP instruction writing an integer register.
    #[inline(always)]
    fn fp_to_x(&mut self, i: &Inst, v: u64) -> Exec {
        self.csr.mstatus |= mstatus::FS;
        self.alu(i, v)
    }

    fn exec_fp<B: Bus, const NB: bool>(&mut self, i: &Inst, bus: &mut B) -> Exec {
        use Opcode::*;
        if !self.csr.fs_enabled() {
            return Err(illegal(i));
        }
        const S_SIGN: u32 = 1 << 31;
        const D_SIGN: u64 = 1 << 63;
        // Flags accumulate into a local and are merged once, below.
        let mut fl = 0u8;
        let r = match i.op {
            Flw => {
                let v = self.load::<B, NB>(bus, i, 4)?;
                self.set_fs(i, v as u32)?;
                self.load_done::<NB>()
            }
            Fld => {
                let v = self.load::<B, NB>(bus, i, 8)?;
                self.set_fd(i, v)?;
                self.load_done::<NB>()
            }
            Fsw => {
                let v = self.f[i.rs2 as usize] & 0xffff_ffff;
                self.store::<B, NB>(bus, i, 4, v)
            }
            Fsd => {
                let v = self.f[i.rs2 as usize];
                self.store::<B, NB>(bus, i, 8, v)
            }
            FmaddS | FmsubS | FnmsubS | FnmaddS => {
                let rm = self.rounding(i)?;
                let (mut a, b, mut c) = (self.fs(i.rs1), self.fs(i.rs2), self.fs(i.rs3));
                if matches!(i.op, FnmsubS | FnmaddS) {
                    a ^= S_SIGN;
                }
                if matches!(i.op, FmsubS | FnmaddS) {
                    c ^= S_SIGN;
                }
                let v = fpu::f32_mul_add(a, b, c, rm, &mut fl);
                self.set_fs(i, v)
            }
            FmaddD | FmsubD | FnmsubD | FnmaddD => {
                let rm = self.rounding(i)?;
                let (mut a, b, mut c) = (self.fd(i.rs1), self.fd(i.rs2), self.fd(i.rs3));
                if matches!(i.op, FnmsubD | FnmaddD) {
                    a ^= D_SIGN;
                }
                if matches!(i.op, FmsubD | FnmaddD) {
                    c ^= D_SIGN;
                }
                let v = fpu::f64_mul_add(a, b, c, rm, &mut fl);
                self.set_fd(i, v)
            }
            FaddS | FsubS | FmulS | FdivS => {
                let rm = self.rounding(i)?;
                let (a, b) = (self.fs(i.rs1), self.fs(i.rs2));
                let v = match i.op {
                    FaddS => fpu::f32_add(a, b, rm, &mut fl),
                    FsubS => fpu::f32_sub(a, b, rm, &mut fl),
                    FmulS => fpu::f32_mul(a, b, rm, &mut fl),
                    _ => fpu::f32_div(a, b, rm, &mut fl),
                };
                self.set_fs(i, v)
            }
            FaddD | FsubD | FmulD | FdivD => {
                let rm = self.rounding(i)?;
                let (a, b) = (self.fd(i.rs1), self.fd(i.rs2));
                let v = match i.op {
                    FaddD => fpu::f64_add(a, b, rm, &mut fl),
                    FsubD => fpu::f64_sub(a, b, rm, &mut fl),
                    FmulD => fpu::f64_mul(a, b, rm, &mut fl),
                    _ => fpu::f64_div(a, b, rm, &mut fl),
                };
                self.set_fd(i, v)
            }
            FsqrtS => {
                let rm = self.rounding(i)?;
                let v = fpu::f32_sqrt(self.fs(i.rs1), rm, &mut fl);
                self.set_fs(i, v)
            }
            FsqrtD => {
                let rm = self.rounding(i)?;
                let v = fpu::f64_sqrt(self.fd(i.rs1), rm, &mut fl);
                self.set_fd(i, v)
            }
            FsgnjS | FsgnjnS | FsgnjxS => {
                let (a, b) = (self.fs(i.rs1), self.fs(i.rs2));
                let sign = match i.op {
                    FsgnjS => b & S_SIGN,
                    FsgnjnS => !b & S_SIGN,
                    _ => (a ^ b) & S_SIGN,
                };
                self.set_fs(i, (a & !S_SIGN) | sign)
            }
            FsgnjD | FsgnjnD | FsgnjxD => {
                let (a, b) = (self.fd(i.rs1), self.fd(i.rs2));
                let sign = match i.op {
                    FsgnjD => b & D_SIGN,
                    FsgnjnD => !b & D_SIGN,
                    _ => (a ^ b) & D_SIGN,
                };
                self.set_fd(i, (a & !D_SIGN) | sign)
            }
            FminS => {
                let v = fpu::f32_min(self.fs(i.rs1), self.fs(i.rs2), &mut fl);
                self.set_fs(i, v)
            }
            FmaxS => {
                let v = fpu::f32_max(self.fs(i.rs1), self.fs(i.rs2), &mut fl);
                self.set_fs(i, v)
            }
            FminD => {
                let v = fpu::f64_min(self.fd(i.rs1), self.fd(i.rs2), &mut fl);
                self.set_fd(i, v)
            }
            FmaxD => {
                let v = fpu::f64_max(self.fd(i.rs1), self.fd(i.rs2), &mut fl);
                self.set_fd(i, v)
            }
            FcvtSD => {
                let rm = self.rounding(i)?;
                let v = fpu::f64_to_f32(self.fd(i.rs1), rm, &mut fl);
                self.set_fs(i, v)
            }
            FcvtDS => {
                self.rounding(i)?;
                let v = fpu::f32_to_f64(self.fs(i.rs1), &mut fl);
                self.set_fd(i, v)
            }
            FeqS | FltS | FleS => {
                let (a, b) = (self.fs(i.rs1), self.fs(i.rs2));
                let v = match i.op {
                    FeqS => fpu::f32_eq(a, b, &mut fl),
                    FltS => fpu::f32_lt(a, b, &mut fl),
                    _ => fpu::f32_le(a, b, &mut fl),
                };
                self.fp_to_x(i, v as u64)
            }
            FeqD | FltD | FleD => {
                let (a, b) = (self.fd(i.rs1), self.fd(i.rs2));
                let v = match i.op {
                    FeqD => fpu::f64_eq(a, b, &mut fl),
                    FltD => fpu::f64_lt(a, b, &mut fl),
                    _ => fpu::f64_le(a, b, &mut fl),
                };
                self.fp_to_x(i, v as u64)
            }
            FclassS => self.fp_to_x(i, fpu::f32_classify(self.fs(i.rs1))),
            FclassD => self.fp_to_x(i, fpu::f64_classify(self.fd(i.rs1))),
            FmvXW => self.fp_to_x(i, sext32(self.f[i.rs1 as usize])),
            FmvXD => self.fp_to_x(i, self.fd(i.rs1)),
            FmvWX => {
                let v = self.rs1(i) as u32;
                self.set_fs(i, v)
            }
            FmvDX => {
                let v = self.rs1(i);
                self.set_fd(i, v)
            }
            FcvtWS | FcvtWuS | FcvtLS | FcvtLuS => {
                let rm = self.rounding(i)?;
                let a = self.fs(i.rs1);
                let v = match i.op {
                    FcvtWS => fpu::f32_to_i32(a, rm, &mut fl),
                    FcvtWuS => fpu::f32_to_u32(a, rm, &mut fl),
                    FcvtLS => fpu::f32_to_i64(a, rm, &mut fl),
                    _ => fpu::f32_to_u64(a, rm, &mut fl),
                };
                self.fp_to_x(i, v)
            }
            FcvtWD | FcvtWuD | FcvtLD | FcvtLuD => {
                let rm = self.rounding(i)?;
                let a = self.fd(i.rs1);
                let v = match i.op {
                    FcvtWD => fpu::f64_to_i32(a, rm, &mut fl),
                    FcvtWuD => fpu::f64_to_u32(a, rm, &mut fl),
                    FcvtLD => fpu::f64_to_i64(a, rm, &mut fl),
                    _ => fpu::f64_to_u64(a, rm, &mut fl),
                };
                self.fp_to_x(i, v)
            }
            FcvtSW | FcvtSWu | FcvtSL | FcvtSLu => {
                let rm = self.rounding(i)?;
                let x = self.rs1(i);
                let v = match i.op {
                    FcvtSW => fpu::i32_to_f32(x, rm, &mut fl),
                    FcvtSWu => fpu::u32_to_f32(x, rm, &mut fl),
                    FcvtSL => fpu::i64_to_f32(x, rm, &mut fl),
                    _ => fpu::u64_to_f32(x, rm, &mut fl),
                };
                self.set_fs(i, v)
            }
            FcvtDW | FcvtDWu | FcvtDL | FcvtDLu => {
                let rm = self.rounding(i)?;
                let x = self.rs1(i);
                let v = match i.op {
                    FcvtDW => fpu::i32_to_f64(x, rm, &mut fl),
                    FcvtDWu => fpu::u32_to_f64(x, rm, &mut fl),
                    FcvtDL => fpu::i64_to_f64(x, rm, &mut fl),
                    _ => fpu::u64_to_f64(x, rm, &mut fl),
                };
                self.set_fd(i, v)
            }
            _ => Err(illegal(i)),
        };
        if r.is_ok() {
            self.csr.fflags |= fl;
        }
        r
    }
}
