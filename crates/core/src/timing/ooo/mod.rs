//! An out-of-order core timing model beside the in-order (Rocket) one,
//! in the style of ZSim's OOO core (Sanchez and Kozyrakis, ISCA'13,
//! `ooo_core.cpp`): instruction-driven, each retired instruction is timed
//! once, in program order, through the stages it would pass in a real core.
//! Functional execution is unchanged (the same `exec`, netRX/netTX, CSRs,
//! `Bus`); only the cycles differ. `docs/ooo-core.md` describes the rules and
//! the validation.
//!
//! Per instruction ([`model::OooCore`]):
//! - front end: at most `width` instructions per cycle are decoded and
//!   dispatched; a taken branch or jump ends the cycle's group; an L1I miss
//!   stalls fetch (the existing L1I path);
//! - dispatch into the reorder buffer (`rob_entries`), load and store queues
//!   (`lq_entries`, `sq_entries`): an instruction dispatches no earlier than
//!   the cycle the entry it reuses was freed by its retirement;
//! - issue when its sources are ready (a per-register ready-cycle
//!   scoreboard) on a free port of its class, at most `issue_width` per
//!   cycle ([`calendar::Calendar`]);
//! - loads access the L1D when they issue: a hit is ready `load_to_use_cycles`
//!   later, a miss takes an L1D MSHR (`l1d_mshrs`, waiting for one if all are
//!   busy) and is ready when its line arrives. Independent misses overlap
//!   while the window holds them: memory-level parallelism is what the ROB,
//!   the load queue and the MSHRs allow, nothing more;
//! - a mispredicted branch (the existing predictor) redirects the front end
//!   `branch_mispredict_cycles` after it resolves;
//! - retirement in order, at most `retire_width` per cycle.
//!
//! Assumptions (stated so a reader can judge them): memory dependences are
//! predicted perfectly (a load does not wait for older stores' addresses;
//! the functional model already forwards the data); CSR accesses, `fence`,
//! AMOs, LR/SC, system instructions, netRX/netTX accesses and device
//! (uncached) loads and stores are serialising
//! (they wait for the window to drain and the front end resumes after them,
//! as BOOM's "unique" instructions do); wrong-path instructions are not
//! executed (their cache pollution is not modelled); the predictor is the
//! in-order core's (bimodal, RAS, BTB), sized per preset.

pub mod calendar;
pub mod model;
pub mod presets;

use serde::{Deserialize, Serialize};

pub use model::{OooCore, OooStats};
pub use presets::CorePreset;

/// Which timing model a core uses (`[node.core] model`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoreModel {
    /// The Rocket-like 5-stage in-order pipeline (`timing/mod.rs`).
    #[default]
    InOrder,
    /// The out-of-order model of this module.
    OutOfOrder,
}

impl CoreModel {
    /// Whether this is the default (kept out of serialised configurations).
    pub fn is_in_order(&self) -> bool {
        *self == CoreModel::InOrder
    }
}

/// Issue-port classes: which execution units an instruction may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Unit {
    /// Integer ALU: arithmetic, logic, branches, jumps, CSR and system.
    Alu = 0,
    /// Load address generation and L1D read port.
    Load = 1,
    /// Store address and data.
    Store = 2,
    /// Integer multiply and divide.
    Mul = 3,
    /// Floating point.
    Fp = 4,
}

/// Index of the shared memory-port counter in the calendar (loads and
/// stores both count against `mem_ports`).
pub const MEM_COUNTER: usize = 5;

/// The most entries of one structure (ROB, LQ, SQ) a configuration may ask for.
pub const MAX_WINDOW: u32 = 4096;

/// `[node.core.ooo]`: the out-of-order window's parameters. The defaults
/// are the BOOM-like preset's ([`CorePreset::Boom`]); every preset names
/// its sources in `presets.rs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OooConfig {
    /// Instructions decoded, renamed and dispatched per cycle.
    pub width: u32,
    /// Instructions retired per cycle.
    pub retire_width: u32,
    /// Reorder-buffer entries: instructions in flight between dispatch and
    /// retirement.
    pub rob_entries: u32,
    /// Load-queue entries (held from dispatch to retirement).
    pub lq_entries: u32,
    /// Store-queue entries (held from dispatch to retirement).
    pub sq_entries: u32,
    /// Instructions issued to execution units per cycle, all ports together.
    pub issue_width: u32,
    /// Integer ALU ports (also branches, jumps, CSR and system instructions).
    pub alu_ports: u32,
    /// Load ports.
    pub load_ports: u32,
    /// Store ports.
    pub store_ports: u32,
    /// Address-generation ports that loads and stores share.
    pub mem_ports: u32,
    /// Integer multiply/divide ports (multiplies are pipelined; a divide
    /// holds its unit until it is done).
    pub mul_ports: u32,
    /// Floating-point ports.
    pub fp_ports: u32,
}

impl Default for OooConfig {
    fn default() -> Self {
        presets::boom_window()
    }
}

/// An out-of-order parameter no model can work with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OooConfigError {
    #[error("ooo.{key} = {value}: must be between {min} and {max}")]
    Range {
        key: &'static str,
        value: u32,
        min: u32,
        max: u32,
    },
    #[error("l1d_mshrs = 0: the out-of-order model needs a non-blocking L1D (l1d_mshrs >= 1)")]
    BlockingL1d,
}

impl OooConfig {
    /// Checks the parameters (`retire_width` at most `rob_entries`: the
    /// retirement rule looks back that far in the ROB).
    pub fn validate(&self) -> Result<(), OooConfigError> {
        let ports = 255; // one byte per counter in the calendar
        for (key, value, min, max) in [
            ("width", self.width, 1, 16),
            ("retire_width", self.retire_width, 1, 16),
            ("rob_entries", self.rob_entries, 1, MAX_WINDOW),
            ("lq_entries", self.lq_entries, 1, MAX_WINDOW),
            ("sq_entries", self.sq_entries, 1, MAX_WINDOW),
            ("issue_width", self.issue_width, 1, ports),
            ("alu_ports", self.alu_ports, 1, ports),
            ("load_ports", self.load_ports, 1, ports),
            ("store_ports", self.store_ports, 1, ports),
            ("mem_ports", self.mem_ports, 1, ports),
            ("mul_ports", self.mul_ports, 1, ports),
            ("fp_ports", self.fp_ports, 1, ports),
        ] {
            if !(min..=max).contains(&value) {
                return Err(OooConfigError::Range {
                    key,
                    value,
                    min,
                    max,
                });
            }
        }
        if self.retire_width > self.rob_entries {
            return Err(OooConfigError::Range {
                key: "retire_width",
                value: self.retire_width,
                min: 1,
                max: self.rob_entries,
            });
        }
        Ok(())
    }

    /// Whether these are the defaults (kept out of serialised configurations).
    pub fn is_default(&self) -> bool {
        *self == OooConfig::default()
    }
}

#[cfg(test)]
mod tests;
