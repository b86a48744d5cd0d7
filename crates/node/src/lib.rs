//! A nanoPU node: RV64GC harts with their L1s, a shared L2, DRAM, the CLINT
//! and HTIF host I/O, optionally a traditional DMA NIC (IceNIC), and the run
//! loop that schedules the harts in time.

pub mod clint;
pub mod config;
pub mod dram;
pub mod htif;
pub mod icenic;
pub mod loader;
pub mod memory;
pub mod node;
pub mod uart;

pub use config::NodeConfig;
pub use icenic::{IceNic, IceNicConfig, IceNicStats};
pub use loader::{LoadError, Program};
pub use node::{
    CoreOutput, HartState, Node, NodeError, RunEnd, SentMessage, TxSink, STOP_CHECK_CYCLES,
};
