//! A Rocket-like RV64GC hart with the nanoPU register-file network interface.
//!
//! - [`hart`]: architectural state and the run loop; `exec` holds the
//!   instruction semantics, `csr_access` the CSR instructions.
//! - [`timing`]: the pipeline, branch predictor and cache models.
//! - [`netif`]: netRX/netTX and the per-context RX/TX FIFOs.
//! - [`hts`]: the per-core hardware thread scheduler (interrupt 16).
//! - [`fpu`]: IEEE 754 arithmetic for F and D.
//! - [`bus`]: what the hart needs from the machine around it.

mod block;
pub mod bus;
pub mod commit_log;
pub mod csr;
mod csr_access;
pub mod debug;
pub mod decode_cache;
mod exec;
pub mod fpu;
pub mod hart;
pub mod hts;
pub mod netif;
mod ooo_run;
pub mod timing;
pub mod trap;

pub use bus::{Bus, BusError, RefillKind};
pub use debug::{MemoryPeek, Observer, TextTrace};
pub use decode_cache::DecodeCache;
pub use hart::{Hart, HartStats, Stop};
pub use hts::{Hts, HtsNote, HtsStats};
pub use netif::{NetIf, NetIfConfig};
pub use timing::{CoreConfigError, CoreModel, CorePreset, CoreTimingConfig, OooConfig};
pub use trap::{Exception, GuestFault};
