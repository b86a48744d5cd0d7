//! The one list of RV64GC instructions: mnemonic, operand format, match and mask.
//!
//! An instruction word `w` is opcode `op` when `w & mask == match`. The table
//! is grouped by major opcode (bits 6..0) so the decoder scans a short bucket.

/// Which register file an operand names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegFile {
    /// The operand slot is unused.
    None,
    /// Integer register x0..x31.
    X,
    /// Floating-point register f0..f31.
    F,
}

/// Operand layout of an instruction: which fields it uses and which register
/// file each register field names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// rd, rs1, rs2 (integer).
    R,
    /// rd, rs1, 12-bit signed immediate.
    I,
    /// rd, rs1, shift amount in `imm`.
    Shift,
    /// Integer load: rd, imm(rs1).
    Load,
    /// Integer store: rs2, imm(rs1).
    Store,
    /// Conditional branch: rs1, rs2, pc-relative offset.
    Branch,
    /// rd, upper immediate (already shifted left by 12).
    U,
    /// Jump and link: rd, pc-relative offset.
    J,
    /// CSR access with a register source: rd, csr (in `imm`), rs1.
    Csr,
    /// CSR access with a 5-bit immediate source (in the rs1 field).
    CsrI,
    /// Atomic memory operation: rd, rs2, (rs1).
    Amo,
    /// Load-reserved: rd, (rs1).
    Lr,
    /// No operands (ecall, mret, fences...).
    None,
    /// Zicbop cache-block prefetch hint: offset(rs1), the offset a multiple
    /// of 32 (imm[11:5] of an ORI with rd = x0).
    Prefetch,
    /// Floating-point load: f rd, imm(x rs1).
    FLoad,
    /// Floating-point store: f rs2, imm(x rs1).
    FStore,
    /// f rd, f rs1, f rs2, rounding mode.
    FR,
    /// f rd, f rs1, f rs2 (rounding-mode field is part of the opcode).
    FRNoRm,
    /// Fused multiply-add: f rd, f rs1, f rs2, f rs3, rounding mode.
    FR4,
    /// f rd, f rs1, rounding mode (fsqrt, fcvt.s.d).
    F1,
    /// Compare: x rd, f rs1, f rs2.
    FCmp,
    /// Float to integer: x rd, f rs1, rounding mode.
    FToX,
    /// Move or classify: x rd, f rs1.
    FToXNoRm,
    /// Integer to float: f rd, x rs1, rounding mode.
    XToF,
    /// Move: f rd, x rs1.
    XToFNoRm,
}

impl Format {
    /// Register files of (rd, rs1, rs2, rs3).
    pub const fn operands(self) -> [RegFile; 4] {
        use RegFile::{None as N, F, X};
        match self {
            Format::R | Format::Amo => [X, X, X, N],
            Format::I | Format::Shift | Format::Load | Format::Csr | Format::Lr => [X, X, N, N],
            Format::Store | Format::Branch => [N, X, X, N],
            Format::Prefetch => [N, X, N, N],
            Format::U | Format::J | Format::CsrI => [X, N, N, N],
            Format::None => [N, N, N, N],
            Format::FLoad => [F, X, N, N],
            Format::FStore => [N, X, F, N],
            Format::FR | Format::FRNoRm => [F, F, F, N],
            Format::FR4 => [F, F, F, F],
            Format::F1 => [F, F, N, N],
            Format::FCmp => [X, F, F, N],
            Format::FToX | Format::FToXNoRm => [X, F, N, N],
            Format::XToF | Format::XToFNoRm => [F, X, N, N],
        }
    }

    /// Whether the instruction carries a rounding-mode field.
    pub const fn has_rm(self) -> bool {
        matches!(
            self,
            Format::FR | Format::FR4 | Format::F1 | Format::FToX | Format::XToF
        )
    }
}

/// One row of the instruction table.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub opcode: Opcode,
    pub mnemonic: &'static str,
    pub format: Format,
    pub bits: u32,
    pub mask: u32,
}

// Major opcodes (bits 6..0).
const LOAD: u32 = 0x03;
const LOAD_FP: u32 = 0x07;
const MISC_MEM: u32 = 0x0f;
const OP_IMM: u32 = 0x13;
const AUIPC: u32 = 0x17;
const OP_IMM_32: u32 = 0x1b;
const STORE: u32 = 0x23;
const STORE_FP: u32 = 0x27;
const AMO: u32 = 0x2f;
const OP: u32 = 0x33;
const LUI: u32 = 0x37;
const OP_32: u32 = 0x3b;
const MADD: u32 = 0x43;
const MSUB: u32 = 0x47;
const NMSUB: u32 = 0x4b;
const NMADD: u32 = 0x4f;
const OP_FP: u32 = 0x53;
const BRANCH: u32 = 0x63;
const JALR: u32 = 0x67;
const JAL: u32 = 0x6f;
const SYSTEM: u32 = 0x73;

// Masks by field layout.
const M_OPCODE: u32 = 0x0000_007f;
const M_F3: u32 = 0x0000_707f;
const M_F7_F3: u32 = 0xfe00_707f;
const M_F6_F3: u32 = 0xfc00_707f;
const M_AMO: u32 = 0xf800_707f;
const M_LR: u32 = 0xf9f0_707f;
const M_F7: u32 = 0xfe00_007f;
const M_F7_RS2: u32 = 0xfff0_007f;
const M_F7_RS2_F3: u32 = 0xfff0_707f;
const M_R4: u32 = 0x0600_007f;
const M_ALL: u32 = 0xffff_ffff;
/// Zicbop prefetches: ORI with rd = x0 and imm[4:0] selecting the kind.
const M_PREFETCH: u32 = 0x01f0_7fff;

const fn f3(op: u32, f3: u32) -> u32 {
    op | (f3 << 12)
}
const fn r(op: u32, f3: u32, f7: u32) -> u32 {
    op | (f3 << 12) | (f7 << 25)
}
const fn amo(f5: u32, f3: u32) -> u32 {
    AMO | (f3 << 12) | (f5 << 27)
}
const fn fp(f7: u32, rs2: u32, f3: u32) -> u32 {
    OP_FP | (f3 << 12) | (rs2 << 20) | (f7 << 25)
}
const fn r4(op: u32, fmt: u32) -> u32 {
    op | (fmt << 25)
}

macro_rules! opcode_table {
    ($( $variant:ident = $mnemonic:literal, $format:ident, $bits:expr, $mask:expr; )*) => {
        /// Every RV64GC instruction the simulator implements, plus `Illegal`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Opcode {
            $( $variant, )*
            /// Not a valid RV64GC encoding (or one this machine does not implement).
            Illegal,
        }

        /// The instruction table, indexed by `Opcode as usize`.
        pub const TABLE: &[Entry] = &[
            $( Entry { opcode: Opcode::$variant, mnemonic: $mnemonic, format: Format::$format, bits: $bits, mask: $mask }, )*
        ];
    };
}

opcode_table! {
    // RV64I
    Lui = "lui", U, LUI, M_OPCODE;
    Auipc = "auipc", U, AUIPC, M_OPCODE;
    Jal = "jal", J, JAL, M_OPCODE;
    Jalr = "jalr", I, f3(JALR, 0), M_F3;
    Beq = "beq", Branch, f3(BRANCH, 0), M_F3;
    Bne = "bne", Branch, f3(BRANCH, 1), M_F3;
    Blt = "blt", Branch, f3(BRANCH, 4), M_F3;
    Bge = "bge", Branch, f3(BRANCH, 5), M_F3;
    Bltu = "bltu", Branch, f3(BRANCH, 6), M_F3;
    Bgeu = "bgeu", Branch, f3(BRANCH, 7), M_F3;
    Lb = "lb", Load, f3(LOAD, 0), M_F3;
    Lh = "lh", Load, f3(LOAD, 1), M_F3;
    Lw = "lw", Load, f3(LOAD, 2), M_F3;
    Ld = "ld", Load, f3(LOAD, 3), M_F3;
    Lbu = "lbu", Load, f3(LOAD, 4), M_F3;
    Lhu = "lhu", Load, f3(LOAD, 5), M_F3;
    Lwu = "lwu", Load, f3(LOAD, 6), M_F3;
    Sb = "sb", Store, f3(STORE, 0), M_F3;
    Sh = "sh", Store, f3(STORE, 1), M_F3;
    Sw = "sw", Store, f3(STORE, 2), M_F3;
    Sd = "sd", Store, f3(STORE, 3), M_F3;
    Addi = "addi", I, f3(OP_IMM, 0), M_F3;
    Slti = "slti", I, f3(OP_IMM, 2), M_F3;
    Sltiu = "sltiu", I, f3(OP_IMM, 3), M_F3;
    Xori = "xori", I, f3(OP_IMM, 4), M_F3;
    // Zicbop hints, nested inside ORI (rd = x0): listed before it so the
    // decoder, which takes the first match of a bucket, finds them first.
    PrefetchI = "prefetch.i", Prefetch, f3(OP_IMM, 6), M_PREFETCH;
    PrefetchR = "prefetch.r", Prefetch, f3(OP_IMM, 6) | (1 << 20), M_PREFETCH;
    PrefetchW = "prefetch.w", Prefetch, f3(OP_IMM, 6) | (3 << 20), M_PREFETCH;
    Ori = "ori", I, f3(OP_IMM, 6), M_F3;
    Andi = "andi", I, f3(OP_IMM, 7), M_F3;
    Slli = "slli", Shift, r(OP_IMM, 1, 0), M_F6_F3;
    Srli = "srli", Shift, r(OP_IMM, 5, 0), M_F6_F3;
    Srai = "srai", Shift, r(OP_IMM, 5, 0x20), M_F6_F3;
    Add = "add", R, r(OP, 0, 0), M_F7_F3;
    Sub = "sub", R, r(OP, 0, 0x20), M_F7_F3;
    Sll = "sll", R, r(OP, 1, 0), M_F7_F3;
    Slt = "slt", R, r(OP, 2, 0), M_F7_F3;
    Sltu = "sltu", R, r(OP, 3, 0), M_F7_F3;
    Xor = "xor", R, r(OP, 4, 0), M_F7_F3;
    Srl = "srl", R, r(OP, 5, 0), M_F7_F3;
    Sra = "sra", R, r(OP, 5, 0x20), M_F7_F3;
    Or = "or", R, r(OP, 6, 0), M_F7_F3;
    And = "and", R, r(OP, 7, 0), M_F7_F3;
    Addiw = "addiw", I, f3(OP_IMM_32, 0), M_F3;
    Slliw = "slliw", Shift, r(OP_IMM_32, 1, 0), M_F7_F3;
    Srliw = "srliw", Shift, r(OP_IMM_32, 5, 0), M_F7_F3;
    Sraiw = "sraiw", Shift, r(OP_IMM_32, 5, 0x20), M_F7_F3;
    Addw = "addw", R, r(OP_32, 0, 0), M_F7_F3;
    Subw = "subw", R, r(OP_32, 0, 0x20), M_F7_F3;
    Sllw = "sllw", R, r(OP_32, 1, 0), M_F7_F3;
    Srlw = "srlw", R, r(OP_32, 5, 0), M_F7_F3;
    Sraw = "sraw", R, r(OP_32, 5, 0x20), M_F7_F3;
    Fence = "fence", None, f3(MISC_MEM, 0), M_F3;
    FenceI = "fence.i", None, f3(MISC_MEM, 1), M_F3;
    Ecall = "ecall", None, 0x0000_0073, M_ALL;
    Ebreak = "ebreak", None, 0x0010_0073, M_ALL;
    // Privileged (machine mode only; no supervisor mode)
    Mret = "mret", None, 0x3020_0073, M_ALL;
    Wfi = "wfi", None, 0x1050_0073, M_ALL;
    // Zicsr
    Csrrw = "csrrw", Csr, f3(SYSTEM, 1), M_F3;
    Csrrs = "csrrs", Csr, f3(SYSTEM, 2), M_F3;
    Csrrc = "csrrc", Csr, f3(SYSTEM, 3), M_F3;
    Csrrwi = "csrrwi", CsrI, f3(SYSTEM, 5), M_F3;
    Csrrsi = "csrrsi", CsrI, f3(SYSTEM, 6), M_F3;
    Csrrci = "csrrci", CsrI, f3(SYSTEM, 7), M_F3;
    // M
    Mul = "mul", R, r(OP, 0, 1), M_F7_F3;
    Mulh = "mulh", R, r(OP, 1, 1), M_F7_F3;
    Mulhsu = "mulhsu", R, r(OP, 2, 1), M_F7_F3;
    Mulhu = "mulhu", R, r(OP, 3, 1), M_F7_F3;
    Div = "div", R, r(OP, 4, 1), M_F7_F3;
    Divu = "divu", R, r(OP, 5, 1), M_F7_F3;
    Rem = "rem", R, r(OP, 6, 1), M_F7_F3;
    Remu = "remu", R, r(OP, 7, 1), M_F7_F3;
    Mulw = "mulw", R, r(OP_32, 0, 1), M_F7_F3;
    Divw = "divw", R, r(OP_32, 4, 1), M_F7_F3;
    Divuw = "divuw", R, r(OP_32, 5, 1), M_F7_F3;
    Remw = "remw", R, r(OP_32, 6, 1), M_F7_F3;
    Remuw = "remuw", R, r(OP_32, 7, 1), M_F7_F3;
    // A
    LrW = "lr.w", Lr, amo(0x02, 2), M_LR;
    ScW = "sc.w", Amo, amo(0x03, 2), M_AMO;
    AmoswapW = "amoswap.w", Amo, amo(0x01, 2), M_AMO;
    AmoaddW = "amoadd.w", Amo, amo(0x00, 2), M_AMO;
    AmoxorW = "amoxor.w", Amo, amo(0x04, 2), M_AMO;
    AmoandW = "amoand.w", Amo, amo(0x0c, 2), M_AMO;
    AmoorW = "amoor.w", Amo, amo(0x08, 2), M_AMO;
    AmominW = "amomin.w", Amo, amo(0x10, 2), M_AMO;
    AmomaxW = "amomax.w", Amo, amo(0x14, 2), M_AMO;
    AmominuW = "amominu.w", Amo, amo(0x18, 2), M_AMO;
    AmomaxuW = "amomaxu.w", Amo, amo(0x1c, 2), M_AMO;
    LrD = "lr.d", Lr, amo(0x02, 3), M_LR;
    ScD = "sc.d", Amo, amo(0x03, 3), M_AMO;
    AmoswapD = "amoswap.d", Amo, amo(0x01, 3), M_AMO;
    AmoaddD = "amoadd.d", Amo, amo(0x00, 3), M_AMO;
    AmoxorD = "amoxor.d", Amo, amo(0x04, 3), M_AMO;
    AmoandD = "amoand.d", Amo, amo(0x0c, 3), M_AMO;
    AmoorD = "amoor.d", Amo, amo(0x08, 3), M_AMO;
    AmominD = "amomin.d", Amo, amo(0x10, 3), M_AMO;
    AmomaxD = "amomax.d", Amo, amo(0x14, 3), M_AMO;
    AmominuD = "amominu.d", Amo, amo(0x18, 3), M_AMO;
    AmomaxuD = "amomaxu.d", Amo, amo(0x1c, 3), M_AMO;
    // Zacas (atomic compare-and-swap): beyond RV64GC, implemented because
    // the RISC-V ISA test suite's rv64ua includes it.
    AmocasW = "amocas.w", Amo, amo(0x05, 2), M_AMO;
    AmocasD = "amocas.d", Amo, amo(0x05, 3), M_AMO;
    AmocasQ = "amocas.q", Amo, amo(0x05, 4), M_AMO;
    // F
    Flw = "flw", FLoad, f3(LOAD_FP, 2), M_F3;
    Fsw = "fsw", FStore, f3(STORE_FP, 2), M_F3;
    FmaddS = "fmadd.s", FR4, r4(MADD, 0), M_R4;
    FmsubS = "fmsub.s", FR4, r4(MSUB, 0), M_R4;
    FnmsubS = "fnmsub.s", FR4, r4(NMSUB, 0), M_R4;
    FnmaddS = "fnmadd.s", FR4, r4(NMADD, 0), M_R4;
    FaddS = "fadd.s", FR, fp(0x00, 0, 0), M_F7;
    FsubS = "fsub.s", FR, fp(0x04, 0, 0), M_F7;
    FmulS = "fmul.s", FR, fp(0x08, 0, 0), M_F7;
    FdivS = "fdiv.s", FR, fp(0x0c, 0, 0), M_F7;
    FsqrtS = "fsqrt.s", F1, fp(0x2c, 0, 0), M_F7_RS2;
    FsgnjS = "fsgnj.s", FRNoRm, fp(0x10, 0, 0), M_F7_F3;
    FsgnjnS = "fsgnjn.s", FRNoRm, fp(0x10, 0, 1), M_F7_F3;
    FsgnjxS = "fsgnjx.s", FRNoRm, fp(0x10, 0, 2), M_F7_F3;
    FminS = "fmin.s", FRNoRm, fp(0x14, 0, 0), M_F7_F3;
    FmaxS = "fmax.s", FRNoRm, fp(0x14, 0, 1), M_F7_F3;
    FcvtWS = "fcvt.w.s", FToX, fp(0x60, 0, 0), M_F7_RS2;
    FcvtWuS = "fcvt.wu.s", FToX, fp(0x60, 1, 0), M_F7_RS2;
    FcvtLS = "fcvt.l.s", FToX, fp(0x60, 2, 0), M_F7_RS2;
    FcvtLuS = "fcvt.lu.s", FToX, fp(0x60, 3, 0), M_F7_RS2;
    FmvXW = "fmv.x.w", FToXNoRm, fp(0x70, 0, 0), M_F7_RS2_F3;
    FeqS = "feq.s", FCmp, fp(0x50, 0, 2), M_F7_F3;
    FltS = "flt.s", FCmp, fp(0x50, 0, 1), M_F7_F3;
    FleS = "fle.s", FCmp, fp(0x50, 0, 0), M_F7_F3;
    FclassS = "fclass.s", FToXNoRm, fp(0x70, 0, 1), M_F7_RS2_F3;
    FcvtSW = "fcvt.s.w", XToF, fp(0x68, 0, 0), M_F7_RS2;
    FcvtSWu = "fcvt.s.wu", XToF, fp(0x68, 1, 0), M_F7_RS2;
    FcvtSL = "fcvt.s.l", XToF, fp(0x68, 2, 0), M_F7_RS2;
    FcvtSLu = "fcvt.s.lu", XToF, fp(0x68, 3, 0), M_F7_RS2;
    FmvWX = "fmv.w.x", XToFNoRm, fp(0x78, 0, 0), M_F7_RS2_F3;
    // D
    Fld = "fld", FLoad, f3(LOAD_FP, 3), M_F3;
    Fsd = "fsd", FStore, f3(STORE_FP, 3), M_F3;
    FmaddD = "fmadd.d", FR4, r4(MADD, 1), M_R4;
    FmsubD = "fmsub.d", FR4, r4(MSUB, 1), M_R4;
    FnmsubD = "fnmsub.d", FR4, r4(NMSUB, 1), M_R4;
    FnmaddD = "fnmadd.d", FR4, r4(NMADD, 1), M_R4;
    FaddD = "fadd.d", FR, fp(0x01, 0, 0), M_F7;
    FsubD = "fsub.d", FR, fp(0x05, 0, 0), M_F7;
    FmulD = "fmul.d", FR, fp(0x09, 0, 0), M_F7;
    FdivD = "fdiv.d", FR, fp(0x0d, 0, 0), M_F7;
    FsqrtD = "fsqrt.d", F1, fp(0x2d, 0, 0), M_F7_RS2;
    FsgnjD = "fsgnj.d", FRNoRm, fp(0x11, 0, 0), M_F7_F3;
    FsgnjnD = "fsgnjn.d", FRNoRm, fp(0x11, 0, 1), M_F7_F3;
    FsgnjxD = "fsgnjx.d", FRNoRm, fp(0x11, 0, 2), M_F7_F3;
    FminD = "fmin.d", FRNoRm, fp(0x15, 0, 0), M_F7_F3;
    FmaxD = "fmax.d", FRNoRm, fp(0x15, 0, 1), M_F7_F3;
    FcvtSD = "fcvt.s.d", F1, fp(0x20, 1, 0), M_F7_RS2;
    FcvtDS = "fcvt.d.s", F1, fp(0x21, 0, 0), M_F7_RS2;
    FeqD = "feq.d", FCmp, fp(0x51, 0, 2), M_F7_F3;
    FltD = "flt.d", FCmp, fp(0x51, 0, 1), M_F7_F3;
    FleD = "fle.d", FCmp, fp(0x51, 0, 0), M_F7_F3;
    FclassD = "fclass.d", FToXNoRm, fp(0x71, 0, 1), M_F7_RS2_F3;
    FcvtWD = "fcvt.w.d", FToX, fp(0x61, 0, 0), M_F7_RS2;
    FcvtWuD = "fcvt.wu.d", FToX, fp(0x61, 1, 0), M_F7_RS2;
    FcvtLD = "fcvt.l.d", FToX, fp(0x61, 2, 0), M_F7_RS2;
    FcvtLuD = "fcvt.lu.d", FToX, fp(0x61, 3, 0), M_F7_RS2;
    FmvXD = "fmv.x.d", FToXNoRm, fp(0x71, 0, 0), M_F7_RS2_F3;
    FcvtDW = "fcvt.d.w", XToF, fp(0x69, 0, 0), M_F7_RS2;
    FcvtDWu = "fcvt.d.wu", XToF, fp(0x69, 1, 0), M_F7_RS2;
    FcvtDL = "fcvt.d.l", XToF, fp(0x69, 2, 0), M_F7_RS2;
    FcvtDLu = "fcvt.d.lu", XToF, fp(0x69, 3, 0), M_F7_RS2;
    FmvDX = "fmv.d.x", XToFNoRm, fp(0x79, 0, 0), M_F7_RS2_F3;
    // The nanoPU prototype's byte-reversal instructions (custom, in the OP
    // space with funct7 0x2A): l-nic/rocket-chip lnic-dev 33813784,
    // src/main/scala/rocket/Instructions.scala:29-31 (REVS, REVI, REVL),
    // IDecode.scala:101-103, ALU.scala:96-99. The artifact's programs use
    // them for ntohs/ntohi/ntohl (chipyard tests-icenic/icenic.h).
    Revs = "revs", R, r(OP, 0, 0x2a), M_F7_F3;
    Revi = "revi", R, r(OP, 1, 0x2a), M_F7_F3;
    Revl = "revl", R, r(OP, 2, 0x2a), M_F7_F3;
}

impl Opcode {
    /// The table row of this opcode (`None` for `Illegal`).
    #[inline]
    pub fn entry(self) -> Option<&'static Entry> {
        TABLE.get(self as usize)
    }

    /// Assembly mnemonic.
    pub fn mnemonic(self) -> &'static str {
        self.entry().map_or("illegal", |e| e.mnemonic)
    }

    /// Operand format (`Format::None` for `Illegal`).
    #[inline]
    pub fn format(self) -> Format {
        self.entry().map_or(Format::None, |e| e.format)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_indexed_by_opcode() {
        for (i, e) in TABLE.iter().enumerate() {
            assert_eq!(e.opcode as usize, i, "{}", e.mnemonic);
            assert_eq!(
                e.bits & !e.mask,
                0,
                "{}: match bits outside mask",
                e.mnemonic
            );
        }
    }

    /// Two encodings overlap when some word satisfies both: their match bits
    /// agree wherever both masks care. The one exception: a hint nested
    /// inside its base instruction (every word of the first is a word of the
    /// second), listed first so that it decodes as the hint.
    #[test]
    fn no_two_encodings_overlap() {
        for (i, a) in TABLE.iter().enumerate() {
            for b in &TABLE[i + 1..] {
                let common = a.mask & b.mask;
                let nested = a.mask & b.mask == b.mask && a.bits & b.mask == b.bits;
                if nested && a.mnemonic.starts_with("prefetch.") {
                    continue;
                }
                assert_ne!(
                    a.bits & common,
                    b.bits & common,
                    "{} overlaps {}",
                    a.mnemonic,
                    b.mnemonic
                );
            }
        }
    }
}
