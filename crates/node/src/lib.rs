//! A nanoPU node: RV64GC harts with their L1s, a shared L2 (the LLC) and
//! DRAM with bandwidth (`memory/`), the devices on its bus (`device.rs`:
//! the CLINT, HTIF host I/O, the UART, and whatever device a NIC design
//! attaches through the seam of `bus_device.rs`), and the run loop that
//! schedules the harts in time.

pub mod bus_device;
pub mod clint;
pub mod config;
pub mod device;
pub mod dram;
pub mod htif;
pub mod loader;
pub mod memory;
pub mod node;
pub mod uart;

pub use bus_device::{BusDevice, Dma, DmaTiming, DmaWritten, NicDevice, StoreEffect};
pub use config::{DeviceMapConfig, NodeConfig, NodeConfigError};
pub use device::{Device, DeviceMap, OverlapError};
pub use loader::{LoadError, Program};
pub use node::{
    CoreOutput, FrozenNode, HartState, HartSummary, Node, NodeError, ObservedEnd, RunEnd,
    SentMessage, TxSink, STOP_CHECK_CYCLES,
};
