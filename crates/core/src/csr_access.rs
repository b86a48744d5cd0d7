//! Executing the Zicsr instructions: privilege checks, side effects and the
//! nanoPU's LNIC CSRs.

use crate::bus::Bus;
use crate::csr::{mstatus, num, Privilege, MARCHID_ROCKET, MIP_MASK, MISA_VALUE};
use crate::hart::{Event, Hart};
use crate::trap::{Exception, Trap};
use nanopu_isa::{Inst, Opcode};

/// What a CSR write requires of the pipeline.
pub(crate) enum AfterWrite {
    /// Nothing: the next instruction proceeds.
    Continue,
    /// Flush and re-check interrupts (Rocket flushes after CSR writes with
    /// side effects; an interrupt may have become enabled).
    Flush,
    /// No flush (an LNIC CSR, see `csr_write`), but the thread scheduler's
    /// state changed: the hart re-bounds its slice at the cycle its
    /// interrupt becomes pending (`Hts::next_interrupt`), where it is taken.
    Rebound,
    /// No flush, and return to the node: the NIC has a command to take.
    Yield,
}

impl Hart {
    pub(crate) fn exec_csr<B: Bus>(&mut self, i: &Inst, bus: &mut B) -> Result<(), Event> {
        let csr = (i.imm as u32 & 0xfff) as u16;
        let illegal = || Event::Trap(Trap::new(Exception::IllegalInstruction, i.raw as u64));
        let src = match i.op {
            Opcode::Csrrw | Opcode::Csrrs | Opcode::Csrrc => self.x[i.rs1 as usize],
            _ => i.rs1 as u64,
        };
        let writes = match i.op {
            Opcode::Csrrw | Opcode::Csrrwi => true,
            _ => i.rs1 != 0,
        };
        if (csr >> 8) & 3 > self.privilege as u16 || (writes && csr >> 10 == 3) {
            return Err(illegal());
        }
        let old = self.csr_read(csr, bus).ok_or_else(illegal)?;
        let mut after = AfterWrite::Continue;
        if writes {
            let new = match i.op {
                Opcode::Csrrw | Opcode::Csrrwi => src,
                Opcode::Csrrs | Opcode::Csrrsi => old | src,
                _ => old & !src,
            };
            after = self.csr_write(csr, new)?;
        }
        self.x[i.rd as usize] = old;
        self.pc = self.pc.wrapping_add(i.len as u64);
        match after {
            AfterWrite::Continue => Ok(()),
            AfterWrite::Flush => Err(Event::CheckInterrupts),
            AfterWrite::Rebound => {
                if self.net.hts.in_use() {
                    self.sync_hts();
                }
                if self.pending_interrupt().is_some() {
                    // Already pending (not the delayed effect of a report):
                    // taken when the node resumes the hart, at once.
                    Err(Event::Stop(crate::hart::Stop::Yield))
                } else {
                    Err(Event::Retired)
                }
            }
            AfterWrite::Yield => Err(Event::Stop(crate::hart::Stop::Yield)),
        }
    }

    /// Reads a CSR; `None` if it does not exist (or is not accessible now).
    fn csr_read<B: Bus>(&mut self, csr: u16, bus: &mut B) -> Option<u64> {
        let c = &self.csr;
        let fp = |v: u64| c.fs_enabled().then_some(v);
        let user_counter = |bit: u64| {
            self.privilege == Privilege::Machine || self.csr.mcounteren & (1 << bit) != 0
        };
        Some(match csr {
            num::FFLAGS => fp(c.fflags as u64)?,
            num::FRM => fp(c.frm as u64)?,
            num::FCSR => fp(((c.frm as u64) << 5) | c.fflags as u64)?,
            num::LMSGSRDY => {
                let ready = self.net.msgs_ready(self.cycle);
                if !ready {
                    self.polled_empty = true;
                }
                ready as u64
            }
            num::LCURCONTEXT => self.net.current_context as u64,
            num::LCURPRIORITY => {
                // A demotion may have lowered it since the last look.
                self.net.hts_advance(self.cycle);
                self.net.current_priority as u64
            }
            num::LNICCMD | num::LNICUCMD => 0,
            num::LNICRDY => 1,
            // The hardware thread scheduler's choice (hts.rs).
            num::LTARGETCONTEXT => self.net.hts_target(self.cycle).0 as u64,
            num::LTARGETPRIORITY => self.net.hts_target(self.cycle).1 as u64,
            num::LMSGCYCLES => self.net.lmsgcycles,
            num::LIDLECYCLES => self.net.lidlecycles,
            num::CYCLE if user_counter(0) => {
                self.effects += 1;
                self.mcycle()
            }
            num::TIME if user_counter(1) => {
                self.effects += 1;
                bus.mtime_at(self.cycle)
            }
            num::INSTRET if user_counter(2) => {
                self.effects += 1;
                self.minstret()
            }
            0xc03..=0xc1f if user_counter((csr - 0xc00) as u64) => 0,
            num::MSTATUS => c.mstatus_read(),
            num::MISA => MISA_VALUE,
            num::MIE => c.mie,
            num::MTVEC => c.mtvec,
            num::MCOUNTEREN => c.mcounteren,
            num::MCOUNTINHIBIT => 0,
            0x323..=0x33f => 0, // mhpmevent3..31: no events
            num::MSCRATCH => c.mscratch,
            num::MEPC => c.mepc,
            num::MCAUSE => c.mcause,
            num::MTVAL => c.mtval,
            num::MIP => {
                self.effects += 1;
                self.sync_hts();
                self.csr.mip
            }
            0x3a0 | 0x3a2 => c.pmpcfg[((csr - 0x3a0) / 2) as usize],
            0x3b0..=0x3bf => c.pmpaddr[(csr - num::PMPADDR0) as usize],
            // No debug triggers: tselect reads 0 and tdata1 reports type 0.
            num::TSELECT..=num::TDATA3 => 0,
            num::MCYCLE => {
                self.effects += 1;
                self.mcycle()
            }
            num::MINSTRET => {
                self.effects += 1;
                self.minstret()
            }
            0xb03..=0xb1f => 0, // mhpmcounter3..31
            num::MVENDORID | num::MIMPID | num::MCONFIGPTR => 0,
            num::MARCHID => MARCHID_ROCKET,
            num::MHARTID => self.id as u64,
            _ => return None,
        })
    }

    pub(crate) fn csr_write(&mut self, csr: u16, v: u64) -> Result<AfterWrite, Event> {
        let c = &mut self.csr;
        // Rocket's CSRFile flushes the pipeline after every CSR write but to
        // the trap-scratch registers and, on the nanoPU's core, the LNIC
        // CSRs 0x052..=0x061 ("Do not flush the pipeline on writes to LNIC
        // CSRs": l-nic/rocket-chip lnic-dev 33813784,
        // src/main/scala/rocket/CSR.scala:696-697, `io_dec.write_flush`).
        // An interrupt such a write leads to is taken where the scheduler
        // raises it (`hts.rs`, `REPORT_TO_INTERRUPT_CYCLES`), not at a flush.
        let mut after = if (num::MSCRATCH..=num::MTVAL).contains(&csr) {
            AfterWrite::Continue
        } else if (num::LMSGSRDY..=num::LIDLECYCLES).contains(&csr) {
            AfterWrite::Rebound
        } else {
            AfterWrite::Flush
        };
        match csr {
            num::FFLAGS => c.fflags = (v & 0x1f) as u8,
            num::FRM => c.frm = (v & 7) as u8,
            num::FCSR => {
                c.fflags = (v & 0x1f) as u8;
                c.frm = ((v >> 5) & 7) as u8;
            }
            num::LCURCONTEXT => self.net.set_current_context(v as u16, self.cycle),
            num::LCURPRIORITY => self.net.set_current_priority(v as u8, self.cycle),
            num::LNICCMD => {
                // Bit 1 (remove a context) is unimplemented on the prototype
                // and ignored here too.
                if v & 1 != 0 {
                    if !self.net.register_current(self.cycle) {
                        return Err(Event::Trap(Trap::new(
                            Exception::NetContextTableFull,
                            self.net.current_context as u64,
                        )));
                    }
                    after = AfterWrite::Yield;
                }
                if v & 4 != 0 {
                    self.net.restart_message_timer(self.cycle);
                }
                self.effects += 1;
            }
            num::LNICUCMD if self.net.user_command(v, self.cycle) => {
                self.effects += 1;
                after = AfterWrite::Yield;
            }
            num::LNICUCMD => {}
            num::LMSGCYCLES => self.net.set_lmsgcycles(v, self.cycle),
            num::LIDLECYCLES => self.net.set_lidlecycles(v, self.cycle),
            num::LMSGSRDY | num::LNICRDY | num::LTARGETCONTEXT | num::LTARGETPRIORITY => {
                after = AfterWrite::Continue
            }
            num::MSTATUS => {
                let mut v = v & mstatus::WRITABLE;
                // MPP is WARL: only M (3) and U (0) exist.
                if v & mstatus::MPP != mstatus::MPP {
                    v &= !mstatus::MPP;
                }
                c.mstatus = v;
            }
            num::MIE => {
                c.mie = v & MIP_MASK;
                // The scheduler's interrupt may now bound the slice.
                self.net.hts.dirty = true;
            }
            // Direct (0) and vectored (1) modes only.
            num::MTVEC => c.mtvec = v & !2,
            num::MCOUNTEREN => c.mcounteren = v & 7,
            num::MSCRATCH => c.mscratch = v,
            num::MEPC => c.mepc = v & !1,
            num::MCAUSE => c.mcause = v,
            num::MTVAL => c.mtval = v,
            // The implemented mip bits are driven by devices (read-only).
            num::MIP => {}
            0x3a0 | 0x3a2 => c.pmpcfg[((csr - 0x3a0) / 2) as usize] = v,
            0x3b0..=0x3bf => {
                // Addresses are 54 bits wide (RV64 PMP).
                c.pmpaddr[(csr - num::PMPADDR0) as usize] = v & ((1 << 54) - 1)
            }
            num::MCYCLE => self.mcycle_offset = v.wrapping_sub(self.cycle),
            num::MINSTRET => self.minstret_offset = v.wrapping_sub(self.instret + 1),
            _ => {} // WARL registers that read as zero
        }
        if csr <= num::FCSR {
            self.csr.mstatus |= mstatus::FS;
        }
        Ok(after)
    }
}
