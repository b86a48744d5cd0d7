//! Building a [`Cluster`] from its configuration: who is what (host sets
//! of `[[programs]]` and `[[clients]]`, the rest built-in hosts), each
//! host's NIC or transport, the load generators' servers, and the
//! transports' timeouts and the nodes' lookahead the network implies.

use super::{Cluster, ClusterConfig};
use crate::client::{Client, LoadConfig};
use crate::config::ClientSpec;
use crate::error::SystemError;
use crate::host::{BuiltinHost, ClientHost, Host, NodeHost};
use crate::host_set::{host_args, parse_hosts};
use crate::nics::icenic::{IceNicConfig, IceNicPort};
use crate::nics::nanopu::NanoPuNic;
use crate::nics::{CustomNic, NicKind, NodeNic};
use nanopu_network::{host_ip, Network, TopologyConfig};
use nanopu_nics::mac::Mac;
use nanopu_nics::nanopu::{NanoNic, NicConfig};
use nanopu_node::Node;
use nanopu_sim::SimDuration;
use nanopu_transport::program::{ProgramParams, TransportProgram};
use nanopu_transport::{NanoTransport, TxLink};
use std::rc::Rc;

/// What a node host runs: its program (image and name) and NIC design.
type NodeSpec = (Rc<Vec<u8>>, String, NicKind, Vec<String>);

/// Per-frame framing on every link: preamble and inter-frame gap.
const LINK_OVERHEAD_BYTES: u64 = nanopu_wire::frame::WIRE_OVERHEAD_LEN as u64;

impl Cluster {
    pub fn new(cfg: &ClusterConfig) -> Result<Cluster, SystemError> {
        Self::with_programs(cfg, |_, _| None)
    }

    /// A cluster whose hosts run transport programs of your own: `program`
    /// is asked for each host's (`None`: `cfg.nic.transport.protocol`'s).
    pub fn with_programs(
        cfg: &ClusterConfig,
        program: impl Fn(usize, &ProgramParams) -> Option<Box<dyn TransportProgram>>,
    ) -> Result<Cluster, SystemError> {
        Self::build(cfg, program, |_| None)
    }

    /// A cluster whose node hosts may have a NIC design of your own:
    /// `nic` is asked for each node's (`None`: the configured kind's).
    pub fn with_nics(
        cfg: &ClusterConfig,
        nic: impl Fn(usize) -> Option<CustomNic>,
    ) -> Result<Cluster, SystemError> {
        // Before anything is derived from them (the programs' parameters
        // divide by the link rate).
        Network::validate_config(&cfg.network).map_err(|e| SystemError::Config(e.to_string()))?;
        Self::build(cfg, |_, _| None, nic)
    }

    fn build(
        cfg: &ClusterConfig,
        program: impl Fn(usize, &ProgramParams) -> Option<Box<dyn TransportProgram>>,
        custom_nic: impl Fn(usize) -> Option<CustomNic>,
    ) -> Result<Cluster, SystemError> {
        cfg.nic
            .validate()
            .map_err(|e| SystemError::Config(format!("nic.{e}")))?;
        let link = TxLink {
            gbps: cfg.network.link.gbps,
            overhead_bytes: LINK_OVERHEAD_BYTES,
        };
        let params = ProgramParams::new(&cfg.nic.transport, cfg.nic.mtu_payload_bytes, link);
        let custom = |h: usize| program(h, &params);
        let net = Network::new(&cfg.network).map_err(|e| SystemError::Config(e.to_string()))?;
        let n = net.hosts();
        let covered;
        let cfg = match Self::covering_rtx_timeout(cfg, &net)? {
            Some(c) => {
                covered = c;
                &covered
            }
            None => cfg,
        };

        // Who is what.
        let mut programs: Vec<Option<NodeSpec>> = vec![None; n];
        for (i, p) in cfg.programs.iter().enumerate() {
            let elf = nanopu_node::loader::read_program(&p.program)
                .map_err(|e| SystemError::Config(format!("programs[{i}].program: {e}")))?;
            let elf = Rc::new(elf);
            let name = p.program.display().to_string();
            for h in parse_hosts(&p.hosts, n).map_err(SystemError::Config)? {
                if let Some((_, other, _, _)) = &programs[h] {
                    return Err(SystemError::Config(format!(
                        "programs: host {h} is given two programs ({other} and {name}); host ranges must not overlap"
                    )));
                }
                programs[h] = Some((
                    elf.clone(),
                    name.clone(),
                    p.nic.unwrap_or(cfg.nic.kind),
                    host_args(&p.args, h),
                ));
            }
        }
        let mut client_of: Vec<Option<&ClientSpec>> = vec![None; n];
        for c in &cfg.clients {
            for h in parse_hosts(&c.hosts, n).map_err(SystemError::Config)? {
                if programs[h].is_some() || client_of[h].is_some() {
                    return Err(SystemError::Config(format!(
                        "clients: host {h} is already a node or a client"
                    )));
                }
                if let Some(&s) = std::iter::once(&c.server)
                    .chain(&c.servers)
                    .find(|&&s| s >= n || programs[s].is_none())
                {
                    return Err(SystemError::Config(format!(
                        "clients: server = {s}: not a host that runs a program"
                    )));
                }
                client_of[h] = Some(c);
            }
        }
        let builtins = (0..n).any(|h| programs[h].is_none() && client_of[h].is_none());
        let any_custom = (0..n).any(|h| custom(h).is_some());
        if builtins && !any_custom && !NanoTransport::is_program(cfg.nic.transport.protocol) {
            return Err(SystemError::Config(
                "nic.transport.protocol = none: built-in traffic hosts need a NanoTransport \
                 program (ndp, homa or homa-tr)"
                    .into(),
            ));
        }
        let boot_on_wire = matches!(cfg.network.topology, TopologyConfig::Direct);

        let mut hosts = Vec::with_capacity(n);
        for (h, program) in programs.into_iter().enumerate() {
            if let Some((elf, name, kind, args)) = program {
                let mut icenic = cfg.node.icenic.clone();
                icenic.enabled = kind == NicKind::Icenic;
                // The device's MAC (02:00 and the IPv4 address) is how a
                // program learns its own address: the host's, not the
                // single-node default every host would otherwise share.
                icenic.ipv4 = std::net::Ipv4Addr::from(host_ip(h));
                let mut node = Node::with_program_bytes(cfg.node.base.clone(), &name, &elf)
                    .map_err(|error| SystemError::Host { host: h, error })?;
                if !args.is_empty() {
                    let htif = node.htif_mut().ok_or_else(|| {
                        SystemError::Config(format!(
                            "programs: {name} takes arguments but defines no `tohost` symbol to read them through"
                        ))
                    })?;
                    htif.args =
                        std::iter::once(nanopu_node::loader::argv0(std::path::Path::new(&name)))
                            .chain(args)
                            .collect();
                }
                node.attach_nic();
                let nic = match custom_nic(h) {
                    Some(nic) => NodeNic::custom(nic),
                    None => node_nic(
                        kind,
                        &cfg.nic,
                        &icenic,
                        host_ip(h),
                        link,
                        custom(h),
                        node.cores(),
                    )?,
                };
                nic.attach(&mut node).map_err(|e| SystemError::Host {
                    host: h,
                    error: e.into(),
                })?;
                let mut host = NodeHost::new(node, nic);
                host.io.boot_on_wire = boot_on_wire;
                hosts.push(Host::Node(Box::new(host)));
            } else if let Some(c) = client_of[h] {
                let load = LoadConfig {
                    seed: c.load.seed.wrapping_add(h as u64),
                    ..c.load.clone()
                };
                // Response times are measured at the server's wire.
                let to_server = net.idle_one_way(h, c.server, 0);
                let mut host = client_host(
                    load,
                    (host_ip(h), host_ip(c.server)),
                    c.server,
                    &cfg.nic,
                    cfg.network.link.gbps,
                    to_server,
                    cfg.node.core.clock_mhz,
                )?;
                if c.load.app.is_some() {
                    let servers = std::iter::once(c.server)
                        .chain(c.servers.iter().copied())
                        .map(|s| (host_ip(s), net.idle_one_way(h, s, 0)))
                        .collect();
                    let clients = client_of.iter().filter(|x| x.is_some()).count();
                    let client = client_of[..h].iter().filter(|x| x.is_some()).count();
                    let ctx = nanopu_apps::AppContext {
                        client,
                        clients,
                        servers: 0,
                    };
                    if let Some(cl) = host.client.as_mut() {
                        cl.use_app(ctx, servers)
                            .map_err(|e| SystemError::Config(format!("clients: {e}")))?;
                    }
                    host.more_servers = c.servers.clone();
                }
                hosts.push(Host::Client(Box::new(host)));
            } else {
                let transport = match custom(h) {
                    Some(p) => NanoTransport::with_program(
                        &cfg.nic.transport,
                        host_ip(h),
                        cfg.nic.mtu_payload_bytes,
                        link,
                        p,
                    ),
                    None => NanoTransport::new(
                        &cfg.nic.transport,
                        host_ip(h),
                        cfg.nic.mtu_payload_bytes,
                        link,
                    ),
                }
                .map_err(|e| SystemError::Config(format!("nic.{e}")))?;
                hosts.push(Host::Builtin(Box::new(BuiltinHost::new(
                    transport,
                    mac(&cfg.nic, cfg.network.link.gbps),
                ))));
            }
        }
        let mut c = Cluster::from_hosts(net, hosts, Self::lookahead(cfg));
        if let Some(p) = cfg.partitions {
            c.set_partitions(p)?;
        }
        if let Some(threads) = cfg.threads {
            c.set_threads(threads)?;
        }
        for h in c.clients.clone() {
            if let Some(at) = c.hosts[h].as_client().and_then(ClientHost::start_time) {
                c.start_client_at(h, at);
            }
        }
        Ok(c)
    }

    /// `cfg` with the transports' retransmission timeout raised to the
    /// longest round trip `net` can impose without dropping a packet (a
    /// full-sized data packet out and its acknowledgement back, every queue
    /// on the longest path full: [`Network::worst_one_way`]), when
    /// `nic.transport.rtx_timeout_covers_queues` asks for it and the
    /// configured timeout is shorter; `None` if nothing changes. An error
    /// if the raised timeouts do not fit the simulated time base (buffers
    /// of many gigabytes).
    ///
    /// Why: a timeout shorter than the time a packet can legitimately
    /// spend in queues fires on packets that are late, not lost; the
    /// copies it sends join the same queues, and a sender that gives up
    /// after a few such timeouts abandons messages its receiver will still
    /// get (issue #55: with 1 MiB per port a leaf-spine path holds up to
    /// 165 us, the artifact's timeout is 10 us).
    pub fn covering_rtx_timeout(
        cfg: &ClusterConfig,
        net: &Network,
    ) -> Result<Option<ClusterConfig>, SystemError> {
        let t = &cfg.nic.transport;
        let n = net.hosts();
        if !t.rtx_timeout_covers_queues || n < 2 {
            return Ok(None);
        }
        // Host 0 and the last host are as far apart as any two hosts in
        // every topology (different leaves, different sides of a dumbbell).
        let data = cfg.nic.mtu_payload_bytes as usize + nanopu_wire::frame::HEADER_LEN;
        let rtt = net.worst_one_way(0, n - 1, data)
            + net.worst_one_way(n - 1, 0, nanopu_wire::frame::HEADER_LEN);
        let rtt_ns = rtt.0.div_ceil(1_000_000);
        if rtt_ns <= t.rtx_timeout_ns {
            return Ok(None);
        }
        let mut c = cfg.clone();
        c.nic.transport.rtx_timeout_ns = rtt_ns;
        c.nic.transport.validate().map_err(|e| {
            SystemError::Config(format!(
                "network.switch.buffer_bytes = {}: the network's worst round trip ({rtt_ns} ns, every \
                 queue full) as the transport's retransmission timeout makes its timers too long \
                 ({e}); use smaller buffers or nic.transport.rtx_timeout_covers_queues = false",
                cfg.network.switch.buffer_bytes
            ))
        })?;
        Ok(Some(c))
    }

    /// A cluster of hosts built by hand on `net` (host `i` is attached
    /// where the network's host `i` is).
    /// A lower bound of the time from a core's last word to another host's
    /// NIC seeing the packet: the MACs, the host links' propagation and, if
    /// there are switches, one switch (at least 1 ns, so that nodes always
    /// make progress).
    pub fn lookahead(cfg: &ClusterConfig) -> SimDuration {
        let switch = if cfg.network.topology.switches() > 0 {
            cfg.network.switch.forwarding_latency_ps
        } else {
            0
        };
        let links = if cfg.network.topology.switches() > 0 {
            2
        } else {
            1
        };
        let ps = cfg.nic.mac_serial_tx_ps
            + cfg.nic.mac_serial_rx_ps
            + links * cfg.network.link.host_propagation_ps
            + switch;
        SimDuration::from_ps(ps.max(1_000))
    }
}

/// The MAC and serial I/O of a host's NIC.
pub fn mac(nic: &NicConfig, link_gbps: u64) -> Mac {
    Mac {
        link_gbps,
        rx_latency: SimDuration::from_ps(nic.mac_serial_rx_ps),
        tx_latency: SimDuration::from_ps(nic.mac_serial_tx_ps),
    }
}

/// The NIC of a node with `cores` cores, of kind `kind` with address `ip`
/// (its devices go on the node with [`NodeNic::attach`]).
pub fn node_nic(
    kind: NicKind,
    cfg: &NicConfig,
    icenic: &IceNicConfig,
    ip: u32,
    link: TxLink,
    program: Option<Box<dyn TransportProgram>>,
    cores: usize,
) -> Result<NodeNic, SystemError> {
    Ok(match kind {
        NicKind::Nanopu => {
            let nic = NanoNic::with_program(cfg.clone(), ip, link, program)
                .map_err(|e| SystemError::Config(format!("nic.{e}")))?;
            NodeNic::nanopu(NanoPuNic::new(nic))
        }
        NicKind::Icenic => NodeNic::icenic(IceNicPort::new(mac(cfg, link.gbps), icenic.clone())),
        NicKind::Rdma => NodeNic::rdma(crate::nics::rdma::RdmaNic::new(
            cfg.rdma.clone(),
            ip,
            mac(cfg, link.gbps),
        )),
        NicKind::Nebula(design) => NodeNic::nebula(
            crate::nics::nebula::NebulaNic::new(
                design,
                cfg.nebula.clone(),
                mac(cfg, link.gbps),
                ip,
                cores,
            )
            .map_err(|e| SystemError::Config(format!("nic.kind = {kind}: {e}")))?,
        ),
    })
}

/// A load generator with address `ip` sending to host `server` at `server_ip`
/// (`addresses = (ip, server_ip)`).
pub fn client_host(
    load: LoadConfig,
    (ip, server_ip): (u32, u32),
    server: usize,
    nic: &NicConfig,
    link_gbps: u64,
    to_server: SimDuration,
    core_mhz: u32,
) -> Result<ClientHost, SystemError> {
    load.validate(nic, link_gbps)
        .map_err(|e| SystemError::Config(e.to_string()))?;
    let mut c = Client::new(load, ip, server_ip, nic.mtu_payload_bytes, to_server);
    c.use_app(nanopu_apps::AppContext::SINGLE, Vec::new())
        .map_err(|e| SystemError::Config(e.to_string()))?;
    c.set_core_mhz(core_mhz);
    // A transport in the node's NIC wants its packets acknowledged.
    c.acknowledge = nic.transport.protocol != nanopu_transport::Protocol::None;
    Ok(ClientHost::new(Some(c), server, link_gbps))
}
