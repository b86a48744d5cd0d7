//! A nanoPU node with its NIC on a wire, and a built-in client on the other
//! end of it: everything needed to measure a program's response time and
//! throughput through the NIC.
//!
//! - [`host`]: a node with its NIC and clock, a built-in traffic host, a load generator.
//! - [`nics`]: the NIC interface and the designs (nanoPU, IceNIC).
//! - [`client`]: the load generator.
//! - [`system`]: the wiring and the run loop.
//! - [`cluster`]: the co-simulation loop: hosts on a network.
//! - [`config`]: the one configuration schema.
//! - [`timeline`]: `--timeline` traces of a whole run.

pub mod client;
pub mod cluster;
pub mod config;
pub mod connections;
pub mod host;
pub mod memory;
pub mod nics;
mod partition;
pub mod system;
pub mod timeline;
pub mod workload;

pub use client::{Expect, LoadConfig, LoadMode, LoadReport, Pattern, ServiceTime, Start};
pub use config::{Config, ConfigError};
pub use nics::NicKind;
pub use partition::DEFAULT_PARTITIONS;
pub use system::{System, SystemEnd, SystemError, CLIENT_IP, NODE_IP};
