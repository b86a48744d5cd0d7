//! The Rocket-like timing model: a 5-stage, in-order, single-issue pipeline.
//!
//! Functional execution (in `exec`) decides *what* an instruction does; this
//! module decides *when*. Each decoded instruction carries a [`Timing`]
//! record (class, source and destination registers) computed once at decode.
//! The pipeline keeps a scoreboard of the cycle at which each register's
//! value becomes available; an instruction issues when the previous one has
//! issued and its operands are ready (interlocks), and costs one cycle plus
//! any stall: L1 misses (a refill from the shared L2 or DRAM: blocking, or
//! overlapped through MSHRs, see below),
//! branch mispredictions, pipeline flushes (traps, `mret`, `fence.i`, CSR
//! writes with side effects) and the unpipelined multiply/divide and FP
//! divide/sqrt units.
//!
//! Assumptions (stated so a reader can judge the model):
//! - L1 hits cost nothing beyond the load-to-use latency. The L1 data cache
//!   tracks dirty lines (a store marks its line, write-allocate) and hands a
//!   dirty victim to `Bus::writeback` (off the critical path: Rocket drains
//!   write-backs through a buffer).
//! - With `l1d_mshrs = 0` (the nanoPU default: Rocket's blocking `DCache`)
//!   an L1D miss stalls the pipeline for the whole refill. With N > 0 MSHRs
//!   (`mshr.rs`; Rocket's `NonBlockingDCache`): a load miss takes an MSHR
//!   and the pipeline goes on; the load's destination becomes ready when the
//!   line arrives (or the load-to-use latency after issue, if later), so the
//!   pipeline stalls only at the first use (scoreboard). Hits proceed under
//!   misses; up to N lines are in flight; a miss to a line already in flight
//!   merges with its MSHR (no second refill); a store miss takes an MSHR and
//!   does not stall (the store data is merged when the line arrives); a miss
//!   (load, store or prefetch) with every MSHR busy stalls the pipeline until
//!   the earliest one frees. A Zicbop prefetch that misses takes a free MSHR
//!   without a destination, or is dropped if none is free (it is a hint);
//!   `prefetch.i` does nothing (the I-cache has no MSHRs); with 0 MSHRs every
//!   prefetch does nothing.
//! - Ordering with MSHRs: `fence`, AMOs and LR/SC first wait until every
//!   outstanding miss has arrived (drain), then access the cache blocking;
//!   device (uncached) accesses do not wait for misses. Not modelled: the
//!   write-after-write hazard on a pending load's destination (functionally
//!   harmless here; Rocket would stall the later writer), a trap or flush
//!   cancelling a pending load (it still completes), and the L1I and the
//!   MSHRs sharing the path to the L2.
//! - Taken branches and jumps that are predicted correctly cost no bubble
//!   (the BTB is assumed to hit); conditional branches are predicted by a
//!   bimodal table of 2-bit counters, returns by a return-address stack,
//!   other indirect jumps by a direct-mapped target buffer.
//! - Coherence between the cores' L1s is not modelled (memory is shared and
//!   always coherent functionally; no invalidation misses).

pub mod branch;
pub mod cache;
pub mod mshr;
pub mod ooo;

use nanopu_isa::{Inst, Opcode, RegFile};
use serde::{Deserialize, Serialize};

pub use branch::BranchPredictor;
pub use cache::{Cache, CacheConfig, CacheConfigError, Lookup};
pub use mshr::MshrFile;
pub use ooo::{CoreModel, CorePreset, OooConfig, OooCore};

/// Core clock of the nanoPU prototype (nanoPU §5: "All nanoPU times are at
/// the 3.2 GHz target clock"; `nanopu-abi.md`).
pub const CORE_CLOCK_MHZ: u32 = 3200;

/// The most L1D MSHRs a core may have (the registers are searched linearly
/// on a miss; real designs have a handful: Rocket 1-8, Xeons 10-16).
pub const MAX_L1D_MSHRS: u32 = 64;

/// Timing parameters of one core.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoreTimingConfig {
    /// The timing model: `in-order` (this module, the default) or
    /// `out-of-order` (`ooo/`).
    #[serde(skip_serializing_if = "CoreModel::is_in_order")]
    pub model: CoreModel,
    /// A named core (`ooo/presets.rs`): sets the keys it names; keys
    /// written beside it override them (the configuration loader merges).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<CorePreset>,
    /// Core clock in MHz (nanoPU prototype: 3200).
    pub clock_mhz: u32,
    /// Cycles from a load's issue until a dependent instruction can issue.
    /// Source: nanoPU §2.1 ("the L1 cache typically takes three cycles").
    pub load_to_use_cycles: u32,
    /// 64-bit multiply. Source: Rocket `MulDivParams(mulUnroll = 8)`: 8 bits
    /// of the multiplier per cycle, 64/8 iterations; the unit is not pipelined.
    pub mul_cycles: u32,
    /// 32-bit multiply (`mulw`): 32/8 iterations (same source).
    pub mulw_cycles: u32,
    /// 64-bit divide/remainder: one quotient bit per cycle (Rocket MulDiv,
    /// `divUnroll = 1`), not pipelined. Early-out is not modelled.
    pub div_cycles: u32,
    /// 32-bit divide/remainder (same source).
    pub divw_cycles: u32,
    /// Single-precision FMA-pipe latency (add, mul, fma). Source: Rocket
    /// `FPUParams(sfmaLatency = 3)`.
    pub fp_fma_s_cycles: u32,
    /// Double-precision FMA-pipe latency. Source: Rocket `FPUParams(dfmaLatency = 4)`.
    pub fp_fma_d_cycles: u32,
    /// Compare, convert, move, sign-injection, min/max, classify: Rocket's
    /// FPToInt/IntToFP/FPToFP units (2-cycle pipes).
    pub fp_misc_cycles: u32,
    /// Single-precision divide/sqrt: Rocket's iterative `DivSqrtRecFN_small`,
    /// about one mantissa bit per cycle (24) plus setup; not pipelined.
    pub fp_div_s_cycles: u32,
    /// Double-precision divide/sqrt: 53 mantissa bits plus setup (same source).
    pub fp_div_d_cycles: u32,
    /// Cycles lost on a mispredicted branch or jump: Rocket resolves branches
    /// in the execute stage and refetches (two squashed stages plus the
    /// redirect).
    pub branch_mispredict_cycles: u32,
    /// Cycles lost when the pipeline is flushed and refetched: taking a trap,
    /// `mret`, `fence.i`, and CSR writes. Rocket flushes after every CSR
    /// write except to mscratch, mepc, mcause and mtval (CSRFile
    /// `decode.write_flush`) and, on the nanoPU's core, the LNIC CSRs
    /// (l-nic/rocket-chip lnic-dev 33813784, CSR.scala:696-697: "Do not
    /// flush the pipeline on writes to LNIC CSRs"). Same mechanism as a
    /// mispredict.
    pub pipeline_flush_cycles: u32,
    /// Cycles from a CSR read until a dependent instruction can issue:
    /// Rocket accesses the CSR file in the writeback stage and cannot
    /// bypass its result from execute or memory (RocketCore
    /// `mem_cannot_bypass`), like a load.
    pub csr_read_cycles: u32,
    /// Entries of the bimodal branch history table. Source: Rocket
    /// `BHTParams(nEntries = 512)`.
    pub bht_entries: u32,
    /// Return-address stack depth. Source: Rocket `BTBParams(nRAS = 6)`.
    pub ras_entries: u32,
    /// Indirect-jump target buffer entries. Source: Rocket `BTBParams(nEntries = 28)`
    /// (rounded to a power of two for indexing: 32).
    pub btb_entries: u32,
    /// L1 instruction cache. Source: nanoPU §3 (16 KB), Rocket defaults
    /// (4 ways, 64-byte lines).
    pub l1i: CacheConfig,
    /// L1 data cache (same source).
    pub l1d: CacheConfig,
    /// Miss status holding registers of the L1 data cache: how many lines
    /// may be refilled at once (`mshr.rs`). 0 selects Rocket's blocking
    /// data cache. Source: the nanoPU prototype (l-nic/chipyard tag
    /// nanoPU-artifact-v1.0, `LNICQuadRocketConfig` in
    /// generators/chipyard/src/main/scala/config/RocketConfigs.scala:391-408)
    /// uses `WithNBigCores`, which sets `nMSHRs = 0` (l-nic/rocket-chip
    /// lnic-dev 33813784, src/main/scala/subsystem/Configs.scala:58), and
    /// `nMSHRs == 0` instantiates the blocking `DCache` rather than
    /// `NonBlockingDCache` (src/main/scala/rocket/HellaCache.scala:235).
    /// Rocket's own `DCacheParams` default is 1.
    pub l1d_mshrs: u32,
    /// The out-of-order window (`[node.core.ooo]`), read when `model =
    /// "out-of-order"`.
    #[serde(skip_serializing_if = "OooConfig::is_default")]
    pub ooo: OooConfig,
}

impl Default for CoreTimingConfig {
    fn default() -> Self {
        let l1 = CacheConfig {
            size_bytes: 16 * 1024,
            ways: 4,
            line_bytes: 64,
        };
        CoreTimingConfig {
            model: CoreModel::InOrder,
            preset: None,
            clock_mhz: CORE_CLOCK_MHZ,
            load_to_use_cycles: 3,
            mul_cycles: 8,
            mulw_cycles: 4,
            div_cycles: 64,
            divw_cycles: 32,
            fp_fma_s_cycles: 3,
            fp_fma_d_cycles: 4,
            fp_misc_cycles: 2,
            fp_div_s_cycles: 27,
            fp_div_d_cycles: 56,
            branch_mispredict_cycles: 3,
            pipeline_flush_cycles: 3,
            csr_read_cycles: 3,
            bht_entries: 512,
            ras_entries: 6,
            btb_entries: 32,
            l1i: l1,
            l1d: l1,
            l1d_mshrs: 0,
            ooo: OooConfig::default(),
        }
    }
}

/// A core timing parameter no model can work with; the message names the key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CoreConfigError {
    #[error("clock_mhz = {0}: the clock period must be a whole number of femtoseconds")]
    ClockPeriod(u32),
    #[error("{key} = {value}: must be a non-zero power of two")]
    NotPowerOfTwo { key: &'static str, value: u32 },
    #[error("l1d_mshrs = {0}: at most {MAX_L1D_MSHRS}")]
    TooManyMshrs(u32),
    /// The message names the cache (`l1i`, `l1d`).
    #[error(transparent)]
    Cache(#[from] CacheConfigError),
    #[error(transparent)]
    Ooo(#[from] ooo::OooConfigError),
}

impl CoreTimingConfig {
    /// Checks the parameters a model cannot work with.
    pub fn validate(&self) -> Result<(), CoreConfigError> {
        if self.clock_mhz == 0 || 1_000_000_000 % self.clock_mhz != 0 {
            return Err(CoreConfigError::ClockPeriod(self.clock_mhz));
        }
        for (key, n) in [
            ("bht_entries", self.bht_entries),
            ("ras_entries", self.ras_entries),
            ("btb_entries", self.btb_entries),
        ] {
            if n == 0 || (key != "ras_entries" && !n.is_power_of_two()) {
                return Err(CoreConfigError::NotPowerOfTwo { key, value: n });
            }
        }
        if self.l1d_mshrs > MAX_L1D_MSHRS {
            return Err(CoreConfigError::TooManyMshrs(self.l1d_mshrs));
        }
        self.l1i.validate("l1i")?;
        self.l1d.validate("l1d")?;
        if self.model == CoreModel::OutOfOrder {
            self.ooo.validate()?;
            if self.l1d_mshrs == 0 {
                return Err(ooo::OooConfigError::BlockingL1d.into());
            }
        }
        Ok(())
    }

    /// One core clock period in femtoseconds (3.2 GHz: 312,500 fs, exact).
    pub fn period_fs(&self) -> u64 {
        1_000_000_000 / self.clock_mhz as u64
    }
}

/// What kind of pipeline resource an instruction uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Class {
    Alu,
    Load,
    Store,
    Branch,
    Jump,
    Mul,
    MulW,
    Div,
    DivW,
    Csr,
    System,
    FpFmaS,
    FpFmaD,
    FpMisc,
    FpDivS,
    FpDivD,
    FpLoad,
    FpStore,
    Amo,
}

const CLASSES: usize = Class::Amo as usize + 1;

impl Class {
    /// Whether the instruction occupies an unpipelined iterative unit.
    #[inline]
    pub fn iterative(self) -> bool {
        matches!(
            self,
            Class::Mul | Class::MulW | Class::Div | Class::DivW | Class::FpDivS | Class::FpDivD
        )
    }

    pub fn of(op: Opcode) -> Class {
        use Opcode::*;
        match op {
            Lb | Lh | Lw | Ld | Lbu | Lhu | Lwu => Class::Load,
            Sb | Sh | Sw | Sd => Class::Store,
            Beq | Bne | Blt | Bge | Bltu | Bgeu => Class::Branch,
            Jal | Jalr => Class::Jump,
            Mul | Mulh | Mulhsu | Mulhu => Class::Mul,
            Mulw => Class::MulW,
            Div | Divu | Rem | Remu => Class::Div,
            Divw | Divuw | Remw | Remuw => Class::DivW,
            Csrrw | Csrrs | Csrrc | Csrrwi | Csrrsi | Csrrci => Class::Csr,
            Fence | FenceI | Ecall | Ebreak | Mret | Wfi | Illegal => Class::System,
            Flw | Fld => Class::FpLoad,
            Fsw | Fsd => Class::FpStore,
            FaddS | FsubS | FmulS | FmaddS | FmsubS | FnmsubS | FnmaddS => Class::FpFmaS,
            FaddD | FsubD | FmulD | FmaddD | FmsubD | FnmsubD | FnmaddD => Class::FpFmaD,
            FdivS | FsqrtS => Class::FpDivS,
            FdivD | FsqrtD => Class::FpDivD,
            LrW | ScW | AmoswapW | AmoaddW | AmoxorW | AmoandW | AmoorW | AmominW | AmomaxW
            | AmominuW | AmomaxuW | LrD | ScD | AmoswapD | AmoaddD | AmoxorD | AmoandD | AmoorD
            | AmominD | AmomaxD | AmominuD | AmomaxuD => Class::Amo,
            _ if op.format().operands().contains(&RegFile::F) => Class::FpMisc,
            _ => Class::Alu,
        }
    }
}

/// Latency (cycles from issue until the result can be used) of each class.
#[derive(Clone, Debug)]
pub struct Latencies([u32; CLASSES]);

impl Latencies {
    pub fn new(c: &CoreTimingConfig) -> Latencies {
        let mut l = [1u32; CLASSES];
        l[Class::Load as usize] = c.load_to_use_cycles;
        l[Class::FpLoad as usize] = c.load_to_use_cycles;
        l[Class::Amo as usize] = c.load_to_use_cycles;
        l[Class::Csr as usize] = c.csr_read_cycles;
        l[Class::Mul as usize] = c.mul_cycles;
        l[Class::MulW as usize] = c.mulw_cycles;
        l[Class::Div as usize] = c.div_cycles;
        l[Class::DivW as usize] = c.divw_cycles;
        l[Class::FpFmaS as usize] = c.fp_fma_s_cycles;
        l[Class::FpFmaD as usize] = c.fp_fma_d_cycles;
        l[Class::FpMisc as usize] = c.fp_misc_cycles;
        l[Class::FpDivS as usize] = c.fp_div_s_cycles;
        l[Class::FpDivD as usize] = c.fp_div_d_cycles;
        Latencies(l)
    }

    #[inline]
    pub fn of(&self, class: Class) -> u32 {
        self.0[class as usize]
    }
}

/// Scoreboard index meaning "no register" (results written there are dropped).
pub const NO_REG: u8 = 64;

/// Scoreboard index of the unpipelined multiply/divide and FP divide unit:
/// the cycle at which it frees. Kept with the registers so that the block
/// engine can treat it as one more source and destination (`block.rs`).
pub const ITERATIVE_UNIT: u8 = 65;

/// Per-instruction timing record, computed once at decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    pub class: Class,
    /// Scoreboard indices of the sources: x0..x31 are 0..31 (x0 is always
    /// ready), f0..f31 are 32..63.
    pub srcs: [u8; 3],
    /// Scoreboard index of the destination, or [`NO_REG`].
    pub dst: u8,
}

impl Timing {
    pub fn of(inst: &Inst) -> Timing {
        let [d, s1, s2, s3] = inst.op.format().operands();
        let idx = |file: RegFile, r: u8| match file {
            RegFile::None => 0,
            RegFile::X => r,
            RegFile::F => 32 + r,
        };
        let dst = match d {
            RegFile::None => NO_REG,
            RegFile::X if inst.rd == 0 => NO_REG,
            file => idx(file, inst.rd),
        };
        let mut srcs = [idx(s1, inst.rs1), idx(s2, inst.rs2), idx(s3, inst.rs3)];
        if matches!(inst.op, Opcode::AmocasW | Opcode::AmocasD | Opcode::AmocasQ) {
            // Compare-and-swap also reads its destination (the expected value).
            srcs[2] = inst.rd;
        }
        Timing {
            class: Class::of(inst.op),
            srcs,
            dst,
        }
    }
}

/// Pipeline state of one core: the scoreboard and the busy iterative unit.
#[derive(Clone, Debug)]
pub struct Pipeline {
    /// Cycle at which each register's value is available (index [`NO_REG`]
    /// is a sink), and at which the unpipelined multiply/divide or FP divide
    /// unit frees (index [`ITERATIVE_UNIT`]). 256 entries so that a `u8`
    /// index needs no bounds check.
    pub ready: [u64; 256],
    pub lat: Latencies,
    pub mispredict_cycles: u32,
    pub flush_cycles: u32,
}

impl Pipeline {
    pub fn new(c: &CoreTimingConfig) -> Pipeline {
        Pipeline {
            ready: [0; 256],
            lat: Latencies::new(c),
            mispredict_cycles: c.branch_mispredict_cycles,
            flush_cycles: c.pipeline_flush_cycles,
        }
    }

    /// The cycle at which an instruction with timing `t` can issue, given
    /// that the previous instruction leaves the issue stage free at `now`.
    #[inline(always)]
    pub fn issue_cycle(&self, t: &Timing, now: u64) -> u64 {
        let r = &self.ready;
        let mut issue = now
            .max(r[t.srcs[0] as usize])
            .max(r[t.srcs[1] as usize])
            .max(r[t.srcs[2] as usize]);
        if t.class.iterative() {
            issue = issue.max(self.iterative_busy_until());
        }
        issue
    }

    /// Records the result of an instruction issued at `issue`.
    #[inline(always)]
    pub fn complete(&mut self, t: &Timing, issue: u64) {
        let lat = self.lat.of(t.class) as u64;
        self.ready[t.dst as usize] = issue + lat;
        if t.class.iterative() {
            self.ready[ITERATIVE_UNIT as usize] = issue + lat;
        }
    }

    /// Cycle at which the unpipelined multiply/divide or FP divide unit frees.
    #[inline(always)]
    pub fn iterative_busy_until(&self) -> u64 {
        self.ready[ITERATIVE_UNIT as usize]
    }

    /// Makes every register ready now (after a flush nothing is in flight
    /// that a later instruction could wait on, except iterative results).
    pub fn reset_scoreboard(&mut self) {
        let unit = self.iterative_busy_until();
        self.ready = [0; 256];
        self.ready[ITERATIVE_UNIT as usize] = unit;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nanopu_isa::decode;

    #[test]
    fn timing_records_name_the_right_registers() {
        // ld a0, 8(sp)
        let t = Timing::of(&decode(0x0081_3503));
        assert_eq!((t.class, t.srcs, t.dst), (Class::Load, [2, 0, 0], 10));
        // fmadd.d fa0, fa1, fa2, fa3
        let t = Timing::of(&decode(0x6ac5_8543));
        assert_eq!((t.class, t.srcs, t.dst), (Class::FpFmaD, [43, 44, 45], 42));
        // sd ra, 8(sp): no destination
        let t = Timing::of(&decode(0x0011_3423));
        assert_eq!((t.srcs, t.dst), ([2, 1, 0], NO_REG));
        // addi x0, x0, 0 (nop)
        assert_eq!(Timing::of(&decode(0x0000_0013)).dst, NO_REG);
        // fcvt.w.d a0, fa0: integer destination, FP source
        let t = Timing::of(&decode(0xc205_1553));
        assert_eq!((t.class, t.srcs[0], t.dst), (Class::FpMisc, 42, 10));
    }

    #[test]
    fn load_use_interlock() {
        let c = CoreTimingConfig::default();
        let mut p = Pipeline::new(&c);
        let load = Timing::of(&decode(0x0081_3503)); // ld a0, 8(sp)
        let use_ = Timing::of(&decode(0x0015_0513)); // addi a0, a0, 1
        let i0 = p.issue_cycle(&load, 10);
        p.complete(&load, i0);
        assert_eq!(
            p.issue_cycle(&use_, i0 + 1),
            10 + c.load_to_use_cycles as u64
        );
    }

    #[test]
    fn divider_is_not_pipelined() {
        let c = CoreTimingConfig::default();
        let mut p = Pipeline::new(&c);
        let div = Timing::of(&decode(0x02c5_c533)); // div a0, a1, a2
        let div2 = Timing::of(&decode(0x02c6_c6b3)); // div a3, a3, a2
        p.complete(&div, 0);
        assert_eq!(p.issue_cycle(&div2, 1), c.div_cycles as u64);
    }

    #[test]
    fn default_clock_period_is_exact() {
        assert_eq!(CoreTimingConfig::default().period_fs(), 312_500);
        assert!(CoreTimingConfig::default().validate().is_ok());
    }

    #[test]
    fn mshr_count_is_bounded_and_named() {
        let c = CoreTimingConfig {
            l1d_mshrs: MAX_L1D_MSHRS + 1,
            ..CoreTimingConfig::default()
        };
        let e = c.validate().unwrap_err().to_string();
        assert!(e.starts_with("l1d_mshrs = 65"), "{e}");
        let c = CoreTimingConfig {
            l1d_mshrs: MAX_L1D_MSHRS,
            ..CoreTimingConfig::default()
        };
        assert!(c.validate().is_ok());
        assert_eq!(
            CoreTimingConfig::default().l1d_mshrs,
            0,
            "the prototype's blocking DCache"
        );
    }
}
