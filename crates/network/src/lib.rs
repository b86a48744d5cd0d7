//! The datacenter network around nanoPU hosts: full-duplex links with a line
//! rate and a propagation delay, output-queued cut-through switches with
//! strict priorities and NDP trimming, three topologies, fault injection,
//! queue monitoring and a pcap tap.
//!
//! | module | what |
//! |---|---|
//! | [`config`] | parameters, their defaults and sources; TOML through serde |
//! | [`topology`] | single switch, dumbbell, leaf-spine: who is wired to whom, routes |
//! | [`port`] | an output port: priority queues, buffer accounting, serializer |
//! | [`switch`] | classification into bands, admission, trimming, ECMP, counters |
//! | [`faults`] | loss, duplication, reordering, trimming, truncation on a link |
//! | [`network`] | the whole network as one timed state machine |
//!
//! Like the NIC (`nanopu_nics::nanopu`), the network owns no clock and no event
//! queue: [`Network::send`] and [`Network::handle`] take the time, and
//! answer with [`NetAction`]s handed to the caller's [`NetSink`], a vector
//! or its event queue (deliver a frame to a host, or call back at a given
//! time). Frames are whole Ethernet
//! frames in the format of `nanopu-wire`.
//!
//! Hosts are numbered from 0; host `i` has the IPv4 address
//! `10.0.0.(i + 1)` ([`host_ip`]), as in `nanopu-system`, whose one-node
//! system has the node at 10.0.0.1 and the client at 10.0.0.2.

#![forbid(unsafe_code)]

mod capture;
pub mod config;
pub mod faults;
mod net_timeline;
pub mod network;
pub mod port;
pub mod switch;
pub mod topology;

pub use config::{
    BufferKind, ConfigError, FaultConfig, FaultScope, HostStop, LinkConfig, LoadBalancing,
    NetworkConfig, SwitchConfig, TopologyConfig,
};
pub use faults::FaultStats;
pub use network::{
    LinkDirection, NetAction, NetEvent, NetSink, Network, NetworkError, NetworkStats,
};
pub use port::PortStats;
pub use switch::{trim_frame, DropStats, SwitchStats};
pub use topology::{Endpoint, PortRef};

/// A host, numbered from 0.
pub type HostId = usize;

/// First host address: 10.0.0.1 is host 0.
const HOST_IP_BASE: u32 = 0x0a00_0001;

/// IPv4 address of host `i` (10.0.0.1 for host 0, 10.0.0.2 for host 1, ...),
/// as a big-endian `u32`.
pub const fn host_ip(i: HostId) -> u32 {
    HOST_IP_BASE.wrapping_add(i as u32)
}

/// The host with address `ip` in a network of `hosts` hosts.
pub fn host_of_ip(ip: u32, hosts: usize) -> Option<HostId> {
    let i = ip.wrapping_sub(HOST_IP_BASE) as usize;
    (i < hosts).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(host_ip(0), 0x0a00_0001);
        assert_eq!(host_ip(1), 0x0a00_0002);
        assert_eq!(host_ip(299), 0x0a00_012c);
        assert_eq!(host_of_ip(0x0a00_0001, 2), Some(0));
        assert_eq!(host_of_ip(0x0a00_0002, 2), Some(1));
        assert_eq!(host_of_ip(0x0a00_0003, 2), None);
        assert_eq!(host_of_ip(0x0a00_0000, 2), None);
        assert_eq!(host_of_ip(0, 2), None);
        assert_eq!(host_of_ip(u32::MAX, 2), None);
        for i in 0..1000 {
            assert_eq!(host_of_ip(host_ip(i), 1000), Some(i));
        }
    }
}
