//! A nanoPU node with its NIC on a wire, and a built-in client on the other
//! end of it: everything needed to measure a program's response time and
//! throughput through the NIC.
//!
//! - [`link`]: serializer plus propagation delay, per direction.
//! - [`client`]: the load generator.
//! - [`system`]: the wiring and the run loop.
//! - [`cluster`]: many hosts with NanoTransport on a datacenter network.

pub mod client;
pub mod cluster;
pub mod link;
pub mod memory;
pub mod system;
pub mod workload;

pub use client::{Expect, LoadConfig, LoadMode, LoadReport, Pattern, ServiceTime, Start};
pub use system::{NicKind, System, SystemConfig, SystemEnd, SystemError, CLIENT_IP, NODE_IP};
