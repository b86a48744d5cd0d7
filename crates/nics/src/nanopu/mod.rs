//! The nanoPU NIC: the fast path of nanoPU Fig. 1, stage by stage, and
//! [`design::NanoPuNic`], the NIC design that puts it on a node.
//!
//! - [`config`]: every latency and size, with its source.
//! - [`frames`]: packets on the wire (built on `nanopu_wire`).
//! - [`mac`](crate::mac): Ethernet MAC and serial I/O (shared by every design).
//! - The transport (ingress pipeline and port match, reassembly,
//!   packetization, egress pipeline): `nanopu_transport`'s NanoTransport,
//!   running a reliable program or the lossless one.
//! - [`core_selection`]: per-application global RX queues and JBSQ(n).
//! - [`message`]: messages between the NIC and the cores.
//! - [`nic`]: the stages put together, with their timing.
//! - [`nic_timeline`]: the stages' timeline probes (`--timeline`).
//! - [`design`]: the NIC on a node: messages from and to the cores.

pub mod config;
pub mod core_selection;
pub mod design;
pub mod frames;
pub mod message;
pub mod nic;
pub mod nic_timeline;

pub use config::{NicConfig, NicConfigError};
pub use design::{NanoPuEvent, NanoPuNic};
pub use message::{Message, PacketInfo};
pub use nic::{CoreCommand, NanoNic, NicAction, NicEvent, NicStats, TxFull};
