//! A nanoPU node with its NIC on a wire, and a built-in client on the other
//! end of it: everything needed to measure a program's response time and
//! throughput through the NIC.
//!
//! - [`host`]: the one host interface ([`host::HostModel`]) and the hosts:
//!   a node with its NIC and clock, a built-in traffic host, a load generator.
//! - [`nics`]: the NIC interface and the designs (crate `nanopu_nics`).
//! - [`client`]: the load generator (its parameters and report apart).
//! - [`system`]: one node and a load generator on a cable.
//! - [`cluster`]: the co-simulation loop: hosts on a network (its building
//!   and its threads settings apart).
//! - [`records`]: what a run records (workload messages, nodes' messages).
//! - [`config`]: the one configuration schema; [`host_set`]: its host sets.
//! - [`workload`]: what built-in hosts send.
//! - [`timeline`]: `--timeline` traces of a whole run.

pub mod client;
pub mod cluster;
pub mod config;
pub mod connections;
mod error;
pub mod host;
pub mod host_set;
pub mod memory;
pub mod nics;
mod node_table;
mod partition;
pub mod records;
pub mod system;
pub mod timeline;
pub mod workload;

pub use client::{Expect, LoadConfig, LoadMode, LoadReport, Pattern, ServiceTime, Start};
pub use config::{Config, ConfigError};
pub use error::SystemError;
pub use nics::NicKind;
pub use partition::DEFAULT_PARTITIONS;
pub use system::{System, SystemEnd, CLIENT_IP, NODE_IP};
