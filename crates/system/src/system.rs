//! One node, its NIC, a cable and a load generator: the setting of
//! `nanopu run --load` and of the one-node experiments. It is a two-host
//! network (a direct link, no switch) run by the same co-simulation loop as
//! every other ([`crate::cluster`]): host 0 is the node, host 1 the client.
//!
//! ```text
//!  cores ── NIC ── cable ── Client
//! ```

use crate::client::{LoadConfig, LoadReport};
use crate::cluster::{client_host, node_nic, Cluster, ClusterEnd, StopWhen};
use crate::config::Config;
use crate::host::{ClientHost, Host, NodeHost};
use crate::nics::NodeNic;
use nanopu_network::{host_ip, LinkConfig, Network, NetworkConfig, TopologyConfig};
use nanopu_nics::nanopu::{NanoNic, NicStats};
use nanopu_nics::NicKind;
use nanopu_node::Node;
use nanopu_sim::{SimDuration, SimTime};
use nanopu_transport::TxLink;
use std::net::Ipv4Addr;
use std::path::Path;

pub use crate::error::SystemError;

/// The node's default IPv4 address (10.0.0.1); it is host 0.
pub const NODE_IP: u32 = host_ip(NODE);
/// The client's default IPv4 address (10.0.0.2); it is host 1.
pub const CLIENT_IP: u32 = host_ip(CLIENT);

/// The node's host number.
const NODE: usize = 0;
/// The client's host number.
const CLIENT: usize = 1;

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemEnd {
    /// The client received every reply.
    ClientDone,
    /// The program exited with this code.
    Exited(u64),
    /// The time limit was reached.
    TimeLimit,
}

/// A node, its NIC, a cable and (optionally) a client.
pub struct System {
    cluster: Cluster,
}

impl System {
    /// Wires `node` to a NIC of `cfg.nic.kind` and, if `load` is given, a
    /// client, on a cable of `cfg.network.link.gbps` (the rest of
    /// `cfg.network` is for networks of hosts). The node is 10.0.0.1, the
    /// client 10.0.0.2.
    pub fn new(node: Node, cfg: &Config, load: Option<LoadConfig>) -> Result<System, SystemError> {
        Self::with_addresses(
            node,
            cfg,
            load,
            Ipv4Addr::from_bits(NODE_IP),
            Ipv4Addr::from_bits(CLIENT_IP),
        )
    }

    /// As [`System::new`], with the node and the client at the addresses
    /// given (the nanoPU prototype's FireSim runs put the node at 10.0.0.2
    /// and the load generator at 10.0.0.1). A cable needs no routes, so
    /// any two distinct host addresses will do.
    pub fn with_addresses(
        mut node: Node,
        cfg: &Config,
        load: Option<LoadConfig>,
        node_ip: Ipv4Addr,
        client_ip: Ipv4Addr,
    ) -> Result<System, SystemError> {
        for (key, ip) in [("node_ip", node_ip), ("client_ip", client_ip)] {
            if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
                return Err(SystemError::Config(format!(
                    "{key} = {ip}: not a host address"
                )));
            }
        }
        if node_ip == client_ip {
            return Err(SystemError::Config(format!(
                "node_ip and client_ip are both {node_ip}: they must differ"
            )));
        }
        cfg.nic
            .validate()
            .map_err(|e| SystemError::Config(format!("nic.{e}")))?;
        // The IceNIC's device is the IceNIC design's to attach (below);
        // the key that once attached it must agree with the design.
        if cfg.node.icenic.enabled && cfg.nic.kind != NicKind::Icenic {
            return Err(SystemError::Config(format!(
                "node.icenic.enabled = true but nic.kind = {}: the IceNIC is the NIC of nic.kind = icenic",
                cfg.nic.kind.name()
            )));
        }
        if cfg.nic.kind == NicKind::Icenic && cfg.node.icenic.ipv4 != node_ip {
            return Err(SystemError::Config(format!(
                "node_ip = {node_ip} but node.icenic.ipv4 = {}: the traditional NIC must have the node's address",
                cfg.node.icenic.ipv4
            )));
        }
        let gbps = cfg.network.link.gbps;
        let propagation_ps = load.as_ref().map_or(0, |l| l.link_propagation_ps);
        let network = NetworkConfig {
            topology: TopologyConfig::Direct,
            link: LinkConfig {
                gbps,
                host_propagation_ps: propagation_ps,
                ..LinkConfig::default()
            },
            ..NetworkConfig::default()
        };
        let net = Network::new(&network).map_err(|e| SystemError::Config(e.to_string()))?;
        node.attach_nic();
        let link = TxLink {
            gbps,
            overhead_bytes: nanopu_wire::frame::WIRE_OVERHEAD_LEN as u64,
        };
        let nic = node_nic(
            cfg.nic.kind,
            &cfg.nic,
            &cfg.node.icenic,
            node_ip.to_bits(),
            link,
            None,
            node.cores(),
        )?;
        nic.attach(&mut node)
            .map_err(|e| SystemError::Config(format!("cannot attach the NIC's device: {e}")))?;
        let core_mhz = node.cfg().core.clock_mhz;
        let mut node = NodeHost::new(node, nic);
        node.io.boot_on_wire = true;
        let client = match load {
            Some(l) => client_host(
                l,
                (client_ip.to_bits(), node_ip.to_bits()),
                NODE,
                &cfg.nic,
                gbps,
                SimDuration::from_ps(propagation_ps),
                core_mhz,
            )?,
            None => ClientHost::new(None, NODE, gbps),
        };
        let start = client.client.as_ref().map(|c| c.cfg.start);
        let hosts = vec![Host::Node(Box::new(node)), Host::Client(Box::new(client))];
        let lookahead = SimDuration::from_ps(
            (cfg.nic.mac_serial_tx_ps + cfg.nic.mac_serial_rx_ps + propagation_ps).max(1_000),
        );
        let mut cluster = Cluster::from_hosts(net, hosts, lookahead);
        if let Some(crate::client::Start::AtNs(ns)) = start {
            cluster.start_client_at(CLIENT, SimTime::ZERO + SimDuration::from_ns(ns));
        }
        Ok(System { cluster })
    }

    /// Writes every frame on the link (both directions, at the time its
    /// first bit leaves) to a pcap file.
    pub fn capture(&mut self, path: &Path) -> Result<(), SystemError> {
        self.cluster.capture(NODE, path)
    }

    /// Runs until the client is done, the program exits, or `until`.
    pub fn run(&mut self, until: SimTime) -> Result<SystemEnd, SystemError> {
        // With no pause, `run_pausing` never pauses.
        self.run_pausing(until, None)
            .map(|end| end.unwrap_or(SystemEnd::TimeLimit))
    }

    /// [`System::run`], stopping early (`Ok(None)`) between two turns of
    /// the event loop once nothing can happen before `pause` (no event
    /// due, the node unable to send). Running on afterwards (`run` or this,
    /// with the same `until`) gives exactly what an uninterrupted run gives;
    /// a run to a shorter `until` would not (see [`Cluster::set_pause`]).
    /// For progress reports and looks at signals during a long run.
    pub fn run_pausing(
        &mut self,
        until: SimTime,
        pause: Option<SimTime>,
    ) -> Result<Option<SystemEnd>, SystemError> {
        let stop = StopWhen {
            clients_done: self.client_host().client.is_some(),
            node_exits: true,
        };
        self.cluster.set_pause(pause);
        let end = self.cluster.run_until(until, stop);
        self.cluster.set_pause(None);
        let end = end.map_err(|e| match e {
            SystemError::Host { error, .. } => SystemError::Node(error),
            e => e,
        })?;
        match end {
            ClusterEnd::ClientsDone => Ok(Some(SystemEnd::ClientDone)),
            ClusterEnd::Exited { code, .. } => Ok(Some(SystemEnd::Exited(code))),
            ClusterEnd::TimeLimit => Ok(Some(SystemEnd::TimeLimit)),
            ClusterEnd::Paused => Ok(None),
            ClusterEnd::Idle if self.client_host().client.is_some() => {
                Err(SystemError::Stalled(self.describe_stall()))
            }
            ClusterEnd::Idle => Ok(Some(SystemEnd::TimeLimit)),
        }
    }

    /// Whether only the node's cores have run so far: its NIC, the link and
    /// the client are as they were built (see [`Cluster::only_cores_ran`]).
    /// A fork of the node then starts a system for another load exactly
    /// where this one stands: the node's boot (a store's preload, say) is
    /// shared by loads that differ only in what the client does.
    pub fn only_cores_ran(&self) -> bool {
        self.cluster.only_cores_ran()
            && self
                .nic()
                .as_nebula()
                .is_none_or(crate::nics::nebula::NebulaNic::untouched)
    }

    fn describe_stall(&mut self) -> String {
        let mut s = self.node_mut().describe_waits();
        if let Some(c) = &self.client_host().client {
            s.push_str(&format!(
                "\n  client: {} requests sent, {} replies received{}",
                c.report.sent,
                c.report.received,
                if c.started() {
                    ""
                } else if self.nic().as_nebula().is_some() {
                    " (never started: NEBULA's NIC announces the node when its program registers \
                     its receive buffer, `nebula_register_buffer` in sdk/include/nebula.h, and \
                     this program has not)"
                } else {
                    " (never started: waiting for the program's boot message)"
                }
            ));
        }
        s
    }

    fn node_host(&self) -> &NodeHost {
        self.cluster
            .host(NODE)
            .as_node()
            .expect("host 0 is the node")
    }

    fn client_host(&self) -> &ClientHost {
        self.cluster
            .host(CLIENT)
            .as_client()
            .expect("host 1 is the client")
    }

    /// The node.
    pub fn node(&self) -> &Node {
        &self.node_host().node
    }

    pub fn node_mut(&mut self) -> &mut Node {
        &mut self
            .cluster
            .host_mut(NODE)
            .as_node_mut()
            .expect("host 0 is the node")
            .node
    }

    /// The node's NIC.
    pub fn nic(&self) -> &NodeNic {
        &self.node_host().nic
    }

    /// The nanoPU NIC, if that is the node's NIC.
    pub fn nanopu_nic(&self) -> Option<&NanoNic> {
        self.nic().as_nanopu().map(|n| &n.nic)
    }

    /// The nanoPU NIC's counters (all zero for another design: see
    /// [`System::nic_stats_json`]).
    pub fn nic_stats(&self) -> NicStats {
        self.nanopu_nic()
            .map(|n| n.stats.clone())
            .unwrap_or_default()
    }

    /// The NIC's counters, whatever its design.
    pub fn nic_stats_json(&self) -> serde_json::Value {
        self.node_host().nic_stats()
    }

    /// The load generator, if there is one.
    pub fn client(&self) -> Option<&crate::client::Client> {
        self.client_host().client.as_ref()
    }

    /// The load generator, to set up before a run (e.g. to turn on its
    /// latency `series`).
    pub fn client_mut(&mut self) -> Option<&mut crate::client::Client> {
        match self.cluster.host_mut(CLIENT) {
            Host::Client(c) => c.client.as_mut(),
            _ => None,
        }
    }

    /// The client's measurements (percentiles filled in).
    pub fn load_report(&mut self) -> Option<LoadReport> {
        match self.cluster.host_mut(CLIENT) {
            Host::Client(c) => c.client.as_mut().map(|c| c.finish().clone()),
            _ => None,
        }
    }

    /// When the program's boot message reached the client, if it did.
    pub fn booted_at(&self) -> Option<SimTime> {
        self.client_host().booted_at
    }

    /// Messages the NIC could not put into a core's RX FIFO.
    pub fn delivery_failures(&self) -> u64 {
        self.cluster.delivery_failures
    }

    /// Frames that reached the client side with no client attached.
    pub fn frames_to_nowhere(&self) -> u64 {
        self.client_host().frames_to_nowhere
    }

    /// Events scheduled in the past (a causality slip; should stay zero).
    pub fn late_events(&self) -> u64 {
        self.cluster.late_events()
    }

    /// The network under the system (two hosts on a direct link).
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// Records the run into `timeline` (`--timeline`; see [`crate::timeline`]).
    pub fn set_timeline(&mut self, timeline: &nanopu_timeline::Timeline) {
        crate::timeline::attach(&mut self.cluster, timeline);
    }
}
