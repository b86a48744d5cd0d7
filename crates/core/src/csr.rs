//! Control and status registers: numbers, machine-mode state and access.
//!
//! Machine mode and user mode only (no supervisor mode, no virtual memory).
//! CSRs that exist only so standard startup code runs (PMP, triggers,
//! hardware performance counters) are plain registers with no effect; their
//! doc comments say so.

/// CSR numbers.
pub mod num {
    pub const FFLAGS: u16 = 0x001;
    pub const FRM: u16 = 0x002;
    pub const FCSR: u16 = 0x003;
    // nanoPU (nanopu-abi.md, "Control and status registers").
    pub const LMSGSRDY: u16 = 0x052;
    pub const LCURCONTEXT: u16 = 0x053;
    pub const LNICCMD: u16 = 0x054;
    pub const LCURPRIORITY: u16 = 0x055;
    pub const LNICUCMD: u16 = 0x056;
    pub const LNICRDY: u16 = 0x057;
    pub const LTARGETCONTEXT: u16 = 0x058;
    pub const LTARGETPRIORITY: u16 = 0x059;
    pub const LMSGCYCLES: u16 = 0x060;
    pub const LIDLECYCLES: u16 = 0x061;
    pub const CYCLE: u16 = 0xc00;
    pub const TIME: u16 = 0xc01;
    pub const INSTRET: u16 = 0xc02;
    pub const MSTATUS: u16 = 0x300;
    pub const MISA: u16 = 0x301;
    pub const MEDELEG: u16 = 0x302;
    pub const MIDELEG: u16 = 0x303;
    pub const MIE: u16 = 0x304;
    pub const MTVEC: u16 = 0x305;
    pub const MCOUNTEREN: u16 = 0x306;
    pub const MCOUNTINHIBIT: u16 = 0x320;
    pub const MSCRATCH: u16 = 0x340;
    pub const MEPC: u16 = 0x341;
    pub const MCAUSE: u16 = 0x342;
    pub const MTVAL: u16 = 0x343;
    pub const MIP: u16 = 0x344;
    pub const PMPCFG0: u16 = 0x3a0;
    pub const PMPADDR0: u16 = 0x3b0;
    pub const TSELECT: u16 = 0x7a0;
    pub const TDATA1: u16 = 0x7a1;
    pub const TDATA3: u16 = 0x7a3;
    pub const MCYCLE: u16 = 0xb00;
    pub const MINSTRET: u16 = 0xb02;
    pub const MVENDORID: u16 = 0xf11;
    pub const MARCHID: u16 = 0xf12;
    pub const MIMPID: u16 = 0xf13;
    pub const MHARTID: u16 = 0xf14;
    pub const MCONFIGPTR: u16 = 0xf15;
}

/// mstatus fields.
pub mod mstatus {
    pub const MIE: u64 = 1 << 3;
    pub const MPIE: u64 = 1 << 7;
    pub const MPP: u64 = 3 << 11;
    pub const FS: u64 = 3 << 13;
    pub const MPRV: u64 = 1 << 17;
    pub const TW: u64 = 1 << 21;
    /// UXL = 2 (64-bit user mode), read-only.
    pub const UXL64: u64 = 2 << 32;
    pub const SD: u64 = 1 << 63;
    /// The bits software can write.
    pub const WRITABLE: u64 = MIE | MPIE | MPP | FS | MPRV | TW;
}

/// misa: RV64 with A, C, D, F, I, M and U.
pub const MISA_VALUE: u64 = (2 << 62)
    | (1 << 0) // A
    | (1 << 2) // C
    | (1 << 3) // D
    | (1 << 5) // F
    | (1 << 8) // I
    | (1 << 12) // M
    | (1 << 20); // U

/// marchid of the Rocket core (the value the RISC-V foundation assigned to
/// Rocket), since the nanoPU prototype is a modified Rocket.
pub const MARCHID_ROCKET: u64 = 1;

/// The interrupt bits that exist in mip/mie.
pub const MIP_MASK: u64 = (1 << 3) | (1 << 7) | (1 << 11) | (1 << 16);

/// Privilege mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Privilege {
    User = 0,
    Machine = 3,
}

/// The machine-level CSR state a hart keeps as plain registers.
#[derive(Clone, Debug, Default)]
pub struct MachineCsrs {
    pub mstatus: u64,
    pub mie: u64,
    /// Pending interrupts; bits 7 (timer) and 16 (scheduler) are driven by
    /// devices, bit 3 by software or the CLINT.
    pub mip: u64,
    pub mtvec: u64,
    pub mscratch: u64,
    pub mepc: u64,
    pub mcause: u64,
    pub mtval: u64,
    pub mcounteren: u64,
    pub mcountinhibit: u64,
    /// Written only so standard startup code (riscv-tests INIT_PMP) runs;
    /// no physical memory protection is enforced.
    pub pmpcfg: [u64; 2],
    /// See `pmpcfg`.
    pub pmpaddr: [u64; 16],
    /// Accrued floating-point exception flags (fcsr bits 4..0).
    pub fflags: u8,
    /// Dynamic rounding mode (fcsr bits 7..5).
    pub frm: u8,
}

impl MachineCsrs {
    /// mstatus as read: with the read-only UXL and the summary bit SD.
    pub fn mstatus_read(&self) -> u64 {
        let sd = if self.mstatus & mstatus::FS == mstatus::FS {
            mstatus::SD
        } else {
            0
        };
        self.mstatus | mstatus::UXL64 | sd
    }

    pub fn fs_enabled(&self) -> bool {
        self.mstatus & mstatus::FS != 0
    }
}
