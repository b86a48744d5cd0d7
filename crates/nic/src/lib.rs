//! The nanoPU NIC: the fast path of nanoPU Fig. 1, stage by stage.
//!
//! - [`config`]: every latency and size, with its source.
//! - [`frames`]: packets on the wire (built on `nanopu_wire`).
//! - [`mac`]: Ethernet MAC and serial I/O.
//! - [`ingress`]: header checks and the layer-4 port match table.
//! - [`reassembly`]: packets into message buffers.
//! - [`transport`]: the seam for the programmable transport (a stand-in now).
//! - [`core_selection`]: per-application global RX queues and JBSQ(n).
//! - [`packetizer`]: messages into packets.
//! - [`nic`]: the stages put together, with their timing.

pub mod config;
pub mod core_selection;
pub mod frames;
pub mod ingress;
pub mod mac;
pub mod message;
pub mod nic;
pub mod packetizer;
pub mod reassembly;
pub mod transport;

pub use config::{NicConfig, NicConfigError, NicKind};
pub use message::{Message, PacketInfo};
pub use nic::{CoreCommand, NanoNic, NicAction, NicEvent, NicStats};
