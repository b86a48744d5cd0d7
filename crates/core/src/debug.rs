//! What debuggers and tracers need from a hart: an [`Observer`] of the run
//! loop, and register and CSR access without side effects.
//!
//! The observed run loop ([`Hart::run_observed`]) is a separate
//! monomorphisation of the run loop: the plain [`Hart::run`] carries no
//! observer calls, so an unobserved run costs nothing.

use crate::bus::Bus;
use crate::csr::{num, MARCHID_ROCKET, MISA_VALUE};
use crate::decode_cache::Decoded;
use crate::hart::Hart;

/// Watches (and may stop) a hart instruction by instruction.
pub trait Observer {
    /// Called before the instruction `d` at `hart.pc()` executes. Returning
    /// true stops the hart there, before it executes (the run returns
    /// [`Stop::Break`](crate::Stop::Break)); it executes when the hart runs again.
    fn before(&mut self, hart: &Hart, d: &Decoded) -> bool;

    /// Called after the instruction `d` at `pc`, issued at core cycle
    /// `issue`, executed. `retired` is false when it did not complete (it
    /// trapped: `hart.pc()` is then the handler; or it stalls on netRX/netTX
    /// and will be retried). `mem` reads cacheable memory as it is now.
    fn after(
        &mut self,
        hart: &Hart,
        issue: u64,
        pc: u64,
        d: &Decoded,
        retired: bool,
        mem: &mut dyn MemoryPeek,
    );

    /// Flushes buffered output (at the end of a run).
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Reads memory without side effects: DRAM only (device registers answer `None`).
pub trait MemoryPeek {
    /// `size` (1, 2, 4 or 8) bytes at `addr`, little-endian, zero-extended.
    fn peek(&mut self, addr: u64, size: u8) -> Option<u64>;
}

/// A [`MemoryPeek`] over a hart's bus.
pub(crate) struct BusPeek<'a, B> {
    pub bus: &'a mut B,
    pub hart: usize,
    pub cycle: u64,
}

impl<B: Bus> MemoryPeek for BusPeek<'_, B> {
    fn peek(&mut self, addr: u64, size: u8) -> Option<u64> {
        if self.bus.uncached_cycles(addr).is_some() {
            return None;
        }
        self.bus.load(self.hart, self.cycle, addr, size).ok()
    }
}

/// The instruction trace of `nanopu run --trace` as an [`Observer`].
pub struct TextTrace<W> {
    out: W,
}

impl<W: std::io::Write> TextTrace<W> {
    pub fn new(out: W) -> TextTrace<W> {
        TextTrace { out }
    }
}

impl<W: std::io::Write> Observer for TextTrace<W> {
    fn before(&mut self, _hart: &Hart, _d: &Decoded) -> bool {
        false
    }

    fn after(
        &mut self,
        hart: &Hart,
        issue: u64,
        pc: u64,
        d: &Decoded,
        retired: bool,
        _mem: &mut dyn MemoryPeek,
    ) {
        hart.trace_line(&mut self.out, issue, pc, d, retired);
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// The CSRs a debugger shows: every machine-mode CSR the hart implements
/// with state, the FP CSRs and the nanoPU LNIC CSRs (number, name).
pub const DEBUG_CSRS: &[(u16, &str)] = &[
    (num::FFLAGS, "fflags"),
    (num::FRM, "frm"),
    (num::FCSR, "fcsr"),
    (num::LMSGSRDY, "lmsgsrdy"),
    (num::LCURCONTEXT, "lcurcontext"),
    (num::LNICCMD, "lniccmd"),
    (num::LCURPRIORITY, "lcurpriority"),
    (num::LNICUCMD, "lnicucmd"),
    (num::LNICRDY, "lnicrdy"),
    (num::LTARGETCONTEXT, "ltargetcontext"),
    (num::LTARGETPRIORITY, "ltargetpriority"),
    (num::LMSGCYCLES, "lmsgcycles"),
    (num::LIDLECYCLES, "lidlecycles"),
    (num::CYCLE, "cycle"),
    (num::INSTRET, "instret"),
    (num::MSTATUS, "mstatus"),
    (num::MISA, "misa"),
    (num::MIE, "mie"),
    (num::MTVEC, "mtvec"),
    (num::MCOUNTEREN, "mcounteren"),
    (num::MCOUNTINHIBIT, "mcountinhibit"),
    (num::MSCRATCH, "mscratch"),
    (num::MEPC, "mepc"),
    (num::MCAUSE, "mcause"),
    (num::MTVAL, "mtval"),
    (num::MIP, "mip"),
    (num::PMPCFG0, "pmpcfg0"),
    (num::PMPADDR0, "pmpaddr0"),
    (num::MCYCLE, "mcycle"),
    (num::MINSTRET, "minstret"),
    (num::MVENDORID, "mvendorid"),
    (num::MARCHID, "marchid"),
    (num::MIMPID, "mimpid"),
    (num::MHARTID, "mhartid"),
];

/// Why a debugger's register write was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegisterWriteError {
    #[error("CSR {0:#x} is not implemented")]
    NoSuchCsr(u16),
    #[error("CSR {0:#x} is read-only")]
    ReadOnly(u16),
    #[error("CSR {0:#x} has side effects on the NIC and cannot be written from a debugger")]
    SideEffects(u16),
}

impl Hart {
    /// Sets integer register `r` (writes to x0 are ignored), for a debugger.
    pub fn write_x(&mut self, r: usize, value: u64) {
        if r != 0 && r < 32 {
            self.x[r] = value;
        }
    }

    /// Sets floating-point register `r` (raw bits), for a debugger.
    pub fn write_f(&mut self, r: usize, value: u64) {
        if r < 32 {
            self.f[r] = value;
        }
    }

    /// CSR `csr` as software would read it now, without the read's side
    /// effects (no counter or scheduler state changes); `None` if the hart
    /// does not implement it. `time` is not available here (it is the CLINT's).
    pub fn peek_csr(&self, csr: u16) -> Option<u64> {
        let c = &self.csr;
        Some(match csr {
            num::FFLAGS => c.fflags as u64,
            num::FRM => c.frm as u64,
            num::FCSR => ((c.frm as u64) << 5) | c.fflags as u64,
            num::LMSGSRDY => self.net.msgs_ready(self.cycle) as u64,
            num::LCURCONTEXT => self.net.current_context as u64,
            num::LCURPRIORITY => self.net.current_priority as u64,
            num::LNICCMD | num::LNICUCMD => 0,
            num::LNICRDY => 1,
            num::LTARGETCONTEXT | num::LTARGETPRIORITY => {
                // The scheduler advances when read: look at a copy.
                let (context, priority) = self.net.clone().hts_target(self.cycle);
                if csr == num::LTARGETCONTEXT {
                    context as u64
                } else {
                    priority as u64
                }
            }
            num::LMSGCYCLES => self.net.lmsgcycles,
            num::LIDLECYCLES => self.net.lidlecycles,
            num::CYCLE | num::MCYCLE => self.mcycle(),
            num::INSTRET | num::MINSTRET => self.minstret(),
            0xc03..=0xc1f | 0xb03..=0xb1f | 0x323..=0x33f => 0,
            num::MSTATUS => c.mstatus_read(),
            num::MISA => MISA_VALUE,
            num::MIE => c.mie,
            num::MTVEC => c.mtvec,
            num::MCOUNTEREN => c.mcounteren,
            num::MCOUNTINHIBIT => 0,
            num::MSCRATCH => c.mscratch,
            num::MEPC => c.mepc,
            num::MCAUSE => c.mcause,
            num::MTVAL => c.mtval,
            num::MIP => c.mip,
            0x3a0 | 0x3a2 => c.pmpcfg[((csr - 0x3a0) / 2) as usize],
            0x3b0..=0x3bf => c.pmpaddr[(csr - num::PMPADDR0) as usize],
            num::TSELECT..=num::TDATA3 => 0,
            num::MVENDORID | num::MIMPID | num::MCONFIGPTR => 0,
            num::MARCHID => MARCHID_ROCKET,
            num::MHARTID => self.id as u64,
            _ => return None,
        })
    }

    /// Writes CSR `csr` as a CSR instruction in machine mode would, for a
    /// debugger. Commands to the NIC (`lniccmd`, `lnicucmd`) are refused:
    /// they would hand the NIC something outside the program's control.
    pub fn poke_csr(&mut self, csr: u16, value: u64) -> Result<(), RegisterWriteError> {
        if self.peek_csr(csr).is_none() {
            return Err(RegisterWriteError::NoSuchCsr(csr));
        }
        if csr >> 10 == 3 {
            return Err(RegisterWriteError::ReadOnly(csr));
        }
        if csr == num::LNICCMD || csr == num::LNICUCMD {
            return Err(RegisterWriteError::SideEffects(csr));
        }
        // The write's pipeline effect (a flush) does not matter while stopped.
        let _ = self.csr_write(csr, value);
        Ok(())
    }
}
