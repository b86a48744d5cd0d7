//! Named out-of-order cores (`[node.core] preset = "..."`): the cores the
//! nanoPU's baselines were measured on, and a BOOM-like core. A preset sets
//! every key of `[node.core]` it names here; keys written beside it in the
//! configuration override it (`docs/ooo-core.md`, "Presets").
//!
//! Sources, cited per value below:
//! - [Intel] Intel 64 and IA-32 Architectures Optimization Reference Manual
//!   (order no. 248966): chapter 2, the sections "Haswell
//!   Microarchitecture" (whose out-of-order engine Broadwell keeps, section
//!   "Broadwell Microarchitecture") and "Intel Microarchitecture Code Name
//!   Sandy Bridge": their out-of-order engine, execution-port and cache
//!   tables.
//! - [Agner] Agner Fog, "The microarchitecture of Intel, AMD and VIA CPUs":
//!   the Sandy Bridge and Haswell/Broadwell chapters (branch misprediction
//!   penalty); "Instruction tables": IMUL/DIV/ADDSD/DIVSD latencies.
//! - [NEBULA] Sutherland et al., ISCA'20, Table II (Cortex-A57 as simulated:
//!   2 GHz, 3-wide dispatch/retirement, 128-entry ROB, 32KB 2-way L1d, 48KB
//!   3-way L1i, 2 ports, 32 MSHRs, 3-cycle latency).
//! - [A57] ARM Cortex-A57 Software Optimization Guide: the pipeline
//!   overview (8 issue pipelines: 2 integer, 1 multi-cycle integer, 1
//!   branch, 2 FP/ASIMD, 1 load, 1 store) and the instruction latency tables.
//! - [BOOM] riscv-boom `src/main/scala/common/config-mixins.scala`,
//!   `WithNMediumBooms` as chipyard's `MediumBoomConfig` uses it:
//!   fetchWidth 4, decodeWidth 2, numRobEntries 64, issue queues MEM 1-wide,
//!   INT 2-wide, FP 1-wide, numLdqEntries 16, numStqEntries 16, FPU
//!   sfma/dfmaLatency 4, DCache/ICache 64 sets x 4 ways, nMSHRs 2.
//!
//! Clocks: the simulator's clock period is a whole number of femtoseconds
//! (`CoreTimingConfig::validate`), so a clock that does not divide 10^9 MHz
//! evenly is replaced by the nearest one that does (said per preset).

use super::{CoreModel, OooConfig};
use crate::timing::{CacheConfig, CoreTimingConfig};
use serde::{Deserialize, Serialize};

/// The named cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CorePreset {
    /// Intel Xeon E5-2640 v4 (Broadwell): eRPC's CX4 cluster (eRPC §6).
    Broadwell,
    /// Intel Xeon E5-2680 (Sandy Bridge): G-Opt's server (G-Opt §6).
    SandyBridge,
    /// ARM Cortex-A57 as NEBULA simulated it (NEBULA Table II).
    CortexA57,
    /// A 2-wide BOOM (chipyard's MediumBoomConfig).
    Boom,
    /// The nanoPU prototype's Rocket core (the defaults; in-order).
    Rocket,
}

impl CorePreset {
    /// The whole core configuration this preset names.
    pub fn config(self) -> CoreTimingConfig {
        match self {
            CorePreset::Broadwell => broadwell(),
            CorePreset::SandyBridge => sandy_bridge(),
            CorePreset::CortexA57 => cortex_a57(),
            CorePreset::Boom => boom(),
            CorePreset::Rocket => CoreTimingConfig::default(),
        }
    }
}

fn cache(size_bytes: u32, ways: u32) -> CacheConfig {
    CacheConfig {
        size_bytes,
        ways,
        line_bytes: 64,
    }
}

/// Xeon E5-2640 v4.
fn broadwell() -> CoreTimingConfig {
    CoreTimingConfig {
        model: CoreModel::OutOfOrder,
        preset: Some(CorePreset::Broadwell),
        // Intel ARK: 2.4 GHz base; 2400 does not divide 10^9, 2500 is the
        // nearest clock that does (4% fast).
        clock_mhz: 2500,
        // [Intel] Haswell cache table: L1D load-to-use 4 cycles (simple addressing).
        load_to_use_cycles: 4,
        // [Agner] tables, Broadwell: IMUL r64 latency 3, pipelined.
        mul_cycles: 3,
        mulw_cycles: 3,
        // [Agner] tables, Broadwell: DIV r64 35-88, DIV r32 22-29 (the low
        // ends; the operand-dependent early-out is not modelled).
        div_cycles: 35,
        divw_cycles: 22,
        // [Agner] tables, Broadwell: ADDSD/MULSD 3 (FMA 5).
        fp_fma_s_cycles: 3,
        fp_fma_d_cycles: 3,
        fp_misc_cycles: 3,
        // [Agner] tables, Broadwell: DIVSS 11, DIVSD 14 (upper ends).
        fp_div_s_cycles: 11,
        fp_div_d_cycles: 14,
        // [Agner] Haswell/Broadwell: "The branch misprediction penalty is
        // 15-20 clock cycles" (the low end: the µop cache hits in loops).
        branch_mispredict_cycles: 15,
        pipeline_flush_cycles: 15,
        csr_read_cycles: 3,
        // Not published; assumption: larger tables than Rocket's (a
        // bimodal table is a lower bound on Intel's predictor).
        bht_entries: 4096,
        ras_entries: 16,
        btb_entries: 512,
        // [Intel] Haswell cache table: 32 KB 8-way L1I and L1D, 64-byte lines.
        l1i: cache(32 * 1024, 8),
        l1d: cache(32 * 1024, 8),
        // [Intel] Haswell L1 data cache: 10 fill buffers (outstanding L1D misses).
        l1d_mshrs: 10,
        ooo: OooConfig {
            // [Intel] Haswell out-of-order engine: 4 µops renamed/allocated
            // and 4 retired per cycle.
            width: 4,
            retire_width: 4,
            // [Intel] Haswell out-of-order engine: ROB 192, 72 load and 42
            // store buffers.
            rob_entries: 192,
            lq_entries: 72,
            sq_entries: 42,
            // [Intel] Haswell execution ports: 8 ports; ALU on 0, 1, 5, 6; loads on 2, 3;
            // store data on 4; store address on 2, 3, 7; multiply on 1;
            // FP add/mul/FMA on 0, 1.
            issue_width: 8,
            alu_ports: 4,
            load_ports: 2,
            store_ports: 1,
            mem_ports: 3,
            mul_ports: 1,
            fp_ports: 2,
        },
    }
}

/// Xeon E5-2680.
fn sandy_bridge() -> CoreTimingConfig {
    CoreTimingConfig {
        model: CoreModel::OutOfOrder,
        preset: Some(CorePreset::SandyBridge),
        // G-Opt §6: 2.70 GHz; 2560 is the nearest clock dividing 10^9 (5% slow).
        clock_mhz: 2560,
        // [Intel] Sandy Bridge cache table: L1D load latency 4 cycles.
        load_to_use_cycles: 4,
        // [Agner] tables, Sandy Bridge: IMUL r64 3; DIV r64 30-94, r32 20-28 (low ends).
        mul_cycles: 3,
        mulw_cycles: 3,
        div_cycles: 30,
        divw_cycles: 20,
        // [Agner] tables, Sandy Bridge: ADDSD 3 (MULSD 5).
        fp_fma_s_cycles: 3,
        fp_fma_d_cycles: 3,
        fp_misc_cycles: 3,
        // [Agner] tables, Sandy Bridge: DIVSS 10-14, DIVSD 10-22 (upper ends).
        fp_div_s_cycles: 14,
        fp_div_d_cycles: 22,
        // [Agner] Sandy Bridge: a misprediction costs about 15 clock cycles.
        branch_mispredict_cycles: 15,
        pipeline_flush_cycles: 15,
        csr_read_cycles: 3,
        bht_entries: 4096,
        ras_entries: 16,
        btb_entries: 512,
        // [Intel] Sandy Bridge cache table: 32 KB 8-way L1I and L1D.
        l1i: cache(32 * 1024, 8),
        l1d: cache(32 * 1024, 8),
        // [Intel] Sandy Bridge L1 data cache: up to 10 outstanding misses
        // (fill buffers).
        l1d_mshrs: 10,
        ooo: OooConfig {
            // [Intel] Sandy Bridge out-of-order engine: 4 µops renamed and
            // retired per cycle.
            width: 4,
            retire_width: 4,
            // [Intel] Sandy Bridge out-of-order engine: ROB 168, 64 load and
            // 36 store buffers.
            rob_entries: 168,
            lq_entries: 64,
            sq_entries: 36,
            // [Intel] Sandy Bridge execution ports: 6 ports; ALU on 0, 1, 5; loads/store address
            // on 2 and 3 (shared); store data on 4; multiply on 1; FP
            // multiply on 0, add on 1.
            issue_width: 6,
            alu_ports: 3,
            load_ports: 2,
            store_ports: 1,
            mem_ports: 2,
            mul_ports: 1,
            fp_ports: 2,
        },
    }
}

/// Cortex-A57 as NEBULA simulated it.
fn cortex_a57() -> CoreTimingConfig {
    CoreTimingConfig {
        model: CoreModel::OutOfOrder,
        preset: Some(CorePreset::CortexA57),
        // [NEBULA] Table II: 2 GHz.
        clock_mhz: 2000,
        // [NEBULA] Table II: L1 "3-cycle latency (tag+data)".
        load_to_use_cycles: 3,
        // [A57] latencies: MUL X-form 5, W-form 3; SDIV/UDIV X-form 4-36,
        // W-form 4-20 (upper ends).
        mul_cycles: 5,
        mulw_cycles: 3,
        div_cycles: 36,
        divw_cycles: 20,
        // [A57] latencies: FADD/FMUL 5 (FMA 9).
        fp_fma_s_cycles: 5,
        fp_fma_d_cycles: 5,
        fp_misc_cycles: 3,
        // [A57] latencies: FDIV S 7-17, D 7-32 (upper ends).
        fp_div_s_cycles: 17,
        fp_div_d_cycles: 32,
        // Assumption: ARM publishes no figure; about the length of the
        // A57's integer pipeline from fetch to execute (15 stages).
        branch_mispredict_cycles: 15,
        pipeline_flush_cycles: 15,
        csr_read_cycles: 3,
        bht_entries: 4096,
        ras_entries: 16,
        btb_entries: 512,
        // [NEBULA] Table II: 48KB 3-way L1i, 32KB 2-way L1d, 64B blocks.
        l1i: cache(48 * 1024, 3),
        l1d: cache(32 * 1024, 2),
        // [NEBULA] Table II: 32 MSHRs.
        l1d_mshrs: 32,
        ooo: OooConfig {
            // [NEBULA] Table II: 3-wide dispatch/retirement, 128-entry ROB.
            width: 3,
            retire_width: 3,
            rob_entries: 128,
            // Assumption: neither NEBULA nor ARM publishes the A57's load
            // and store queue sizes; a quarter of the ROB each.
            lq_entries: 32,
            sq_entries: 32,
            // [A57] pipeline overview: 8 issue pipelines (2 integer + branch as ALU: 3,
            // 1 multi-cycle, 2 FP, 1 load, 1 store); [NEBULA]: 2 L1 ports.
            issue_width: 8,
            alu_ports: 3,
            load_ports: 1,
            store_ports: 1,
            mem_ports: 2,
            mul_ports: 1,
            fp_ports: 2,
        },
    }
}

/// A 2-wide BOOM (MediumBoomConfig), at the nanoPU prototype's clock.
fn boom() -> CoreTimingConfig {
    let rocket = CoreTimingConfig::default();
    CoreTimingConfig {
        model: CoreModel::OutOfOrder,
        preset: Some(CorePreset::Boom),
        // FireSim runs BOOM at the same target clock as Rocket (3.2 GHz).
        clock_mhz: rocket.clock_mhz,
        // Assumption: BOOM v3's load pipeline (address, TLB/tag, data,
        // writeback) gives a dependent instruction its value 4 cycles after
        // issue; the BOOM documentation gives no single figure.
        load_to_use_cycles: 4,
        // BOOM's pipelined integer multiplier (`imulLatency = 3`, BOOM
        // `exu/execution-units/functional-unit.scala`); its divider is
        // Rocket's iterative one (as in the in-order model).
        mul_cycles: 3,
        mulw_cycles: 3,
        // [BOOM] FPUParams(sfmaLatency = 4, dfmaLatency = 4).
        fp_fma_s_cycles: 4,
        fp_fma_d_cycles: 4,
        // Assumption: BOOM resolves branches in execute, about 10 stages
        // after fetch (fetch F0-F3, decode, rename, dispatch, issue,
        // register read, execute); not published as one figure.
        branch_mispredict_cycles: 10,
        pipeline_flush_cycles: 10,
        // [BOOM] DCache/ICache: 64 sets x 4 ways x 64 B = 16 KB.
        l1i: cache(16 * 1024, 4),
        l1d: cache(16 * 1024, 4),
        // [BOOM] DCacheParams(nMSHRs = 2).
        l1d_mshrs: 2,
        ooo: boom_window(),
        ..rocket
    }
}

/// BOOM's window: the default of `[node.core.ooo]`.
pub(crate) fn boom_window() -> OooConfig {
    OooConfig {
        // [BOOM] decodeWidth = 2 (BOOM also retires coreWidth = decodeWidth).
        width: 2,
        retire_width: 2,
        // [BOOM] numRobEntries 64, numLdqEntries 16, numStqEntries 16.
        rob_entries: 64,
        lq_entries: 16,
        sq_entries: 16,
        // [BOOM] issue queues: MEM 1-wide (loads and stores), INT 2-wide
        // (ALUs; one also multiplies and divides), FP 1-wide.
        issue_width: 4,
        alu_ports: 2,
        load_ports: 1,
        store_ports: 1,
        mem_ports: 1,
        mul_ports: 1,
        fp_ports: 1,
    }
}
