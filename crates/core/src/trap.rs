//! Exceptions, interrupts and the trap causes the hart reports.
//!
//! Cause numbers follow the RISC-V privileged spec (table "Machine cause
//! register values"); the nanoPU adds interrupt 16 (the hardware thread
//! scheduler, per `nanopu-abi.md`) and two exceptions (24, 26) in the range the spec
//! designates for custom use (24..=31).

use std::fmt;

/// A synchronous exception (mcause with the interrupt bit clear).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Exception {
    InstructionMisaligned = 0,
    InstructionAccessFault = 1,
    IllegalInstruction = 2,
    Breakpoint = 3,
    LoadMisaligned = 4,
    LoadAccessFault = 5,
    StoreMisaligned = 6,
    StoreAccessFault = 7,
    EcallFromU = 8,
    EcallFromM = 11,
    /// nanoPU: a netTX application header announced a message that the
    /// context's TX buffer cannot hold (nanoPU §3.4: "the hardware ensures
    /// that there is sufficient buffer space for the entire message;
    /// otherwise, it generates an exception"). mtval holds the header word.
    NetTxMessageTooLarge = 24,
    /// nanoPU: `lniccmd` asked to register a context on a core whose
    /// [`MAX_CONTEXTS`](crate::netif::MAX_CONTEXTS) slots are taken. mtval
    /// holds the context.
    NetContextTableFull = 26,
}

impl Exception {
    pub fn code(self) -> u64 {
        self as u64
    }

    pub fn describe(self) -> &'static str {
        match self {
            Exception::InstructionMisaligned => "instruction address misaligned",
            Exception::InstructionAccessFault => "instruction access fault",
            Exception::IllegalInstruction => "illegal instruction",
            Exception::Breakpoint => "breakpoint",
            Exception::LoadMisaligned => "load address misaligned",
            Exception::LoadAccessFault => "load access fault",
            Exception::StoreMisaligned => "store/AMO address misaligned",
            Exception::StoreAccessFault => "store/AMO access fault",
            Exception::EcallFromU => "environment call from U-mode",
            Exception::EcallFromM => "environment call from M-mode",
            Exception::NetTxMessageTooLarge => "netTX message larger than the TX buffer",
            Exception::NetContextTableFull => "no free context slot on this core",
        }
    }
}

/// Interrupt numbers (mcause with the interrupt bit set; bit index in mip/mie).
pub mod irq {
    pub const MACHINE_SOFTWARE: u32 = 3;
    pub const MACHINE_TIMER: u32 = 7;
    pub const MACHINE_EXTERNAL: u32 = 11;
    /// The nanoPU hardware thread scheduler's interrupt (`nanopu-abi.md`).
    pub const THREAD_SCHEDULER: u32 = 16;
    /// Order in which simultaneously pending interrupts are taken: the
    /// standard machine interrupts in the spec's order, then the scheduler's.
    pub const PRIORITY: [u32; 4] = [
        MACHINE_EXTERNAL,
        MACHINE_SOFTWARE,
        MACHINE_TIMER,
        THREAD_SCHEDULER,
    ];
}

/// The interrupt bit of mcause on RV64.
pub const INTERRUPT_BIT: u64 = 1 << 63;

/// A trap about to be taken: an exception with its trap value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trap {
    pub cause: Exception,
    pub tval: u64,
}

impl Trap {
    pub fn new(cause: Exception, tval: u64) -> Trap {
        Trap { cause, tval }
    }
}

/// A trap the guest cannot handle: no handler installed, or the handler
/// itself faults. Reported to the user with pc, instruction and cause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestFault {
    pub hart: usize,
    pub pc: u64,
    /// The faulting instruction, disassembled ("<unreadable>" for fetch faults).
    pub instruction: String,
    pub cause: Exception,
    pub tval: u64,
    /// Why the trap is fatal.
    pub reason: &'static str,
}

impl fmt::Display for GuestFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "hart {}: {} at pc {:#x} ({}), mtval {:#x}: {}",
            self.hart,
            self.cause.describe(),
            self.pc,
            self.instruction,
            self.tval,
            self.reason
        )
    }
}
