//! The nanoPU NIC: the fast path of nanoPU Fig. 1, stage by stage.
//!
//! - [`config`]: every latency and size, with its source.
//! - [`frames`]: packets on the wire (built on `nanopu_wire`).
//! - [`reassembly`]: packets into message buffers.
//! - [`core_selection`]: per-application global RX queues and JBSQ(n).
//! - [`nic`]: the stages put together, with their timing.

pub mod config;
pub mod core_selection;
pub mod frames;
pub mod message;
pub mod nic;
pub mod reassembly;

pub use config::NicConfig;
pub use message::{Message, PacketInfo};
pub use nic::{CoreCommand, NanoNic, NicAction, NicEvent, NicStats};
