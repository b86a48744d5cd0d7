//! The co-simulation loop: hosts on a network (`nanopu_network`), run in
//! time order. Every setting runs here, from one node and its load
//! generator on a cable ([`crate::System`]) to a thousand hosts on a
//! leaf-spine. A host ([`crate::host`]) is a nanoPU node with any NIC
//! design ([`crate::nics`]), a built-in traffic host (a NIC's transport
//! driven by a workload), or a built-in load generator.
//!
//! ```text
//!  cores ── NIC ── MAC ── host link ── switches ── … ── MAC ── NIC ── cores
//! ```
//!
//! Time safety: before events at time `t` are handled, every node has run
//! to `t` or to the earliest point it could next send something, whichever
//! is earlier; nodes run ahead of the next event by at most the least time
//! a message takes from a core to another host (the lookahead), so nothing
//! is ever delivered into a core's past.
//!
//! Boot messages (to 0.0.0.0) are recorded by the wiring. On a direct link
//! they go on to the peer (a load generator waiting for them); a switched
//! network has no route for them, so there they stop at the wiring, and the
//! load generators serving from that node are started instead.
//!
//! A built-in host has no cores: a message "from the core" enters the
//! transport at the time the workload names, and a delivered message is
//! recorded when the reassembly module hands it on. Messages carry their
//! index in the workload in their first payload word, so each delivery is
//! matched to its send (shorter messages are only counted, in
//! `unmatched_deliveries`; `nanopu net`'s workloads refuse them).

use crate::client::{Client, ClientAction, LoadConfig, Start};
use crate::host::{BuiltinHost, ClientHost, Host, NodeHost};
use crate::nics::icenic::IceNicPort;
use crate::nics::nanopu::NanoPuNic;
use crate::nics::{CustomNic, NicKind, NicNote, NodeNic, NodeNicEvent};
use crate::partition::{Outcome, Parallel};
use crate::SystemError;
use nanopu_network::{host_ip, NetAction, NetEvent, NetSink, Network, TopologyConfig};
use nanopu_nics::mac::Mac;
use nanopu_nics::nanopu::{NanoNic, NicConfig};
use nanopu_node::Node;
use nanopu_sim::{EventQueue, Reserved, SimDuration, SimTime};
use nanopu_transport::program::{ProgramParams, TransportProgram};
use nanopu_transport::{
    NanoTransport, Occupancy, OutMessage, TransportAction, TransportEvent, TransportStats, TxLink,
};
use nanopu_wire::PcapWriter;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::rc::Rc;

/// Hosts on a network: the one configuration schema ([`crate::config`]).
pub type ClusterConfig = crate::config::Config;

/// Hosts that run a program.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostProgram {
    /// Which hosts: `"0"`, `"1-80"`, `"0,2,5-7"`.
    pub hosts: String,
    /// The program (a RISC-V ELF).
    pub program: PathBuf,
    /// Their NIC design, if not `nic.kind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic: Option<NicKind>,
    /// Arguments after the program's name (its `argv[1..]`). `{ip}` in an
    /// argument becomes the host's own IPv4 address (dotted) and `{host}`
    /// its number, so one entry can serve several hosts that need to know
    /// who they are (the replicated services of `sdk/programs/raft`,
    /// `chain_server`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
}

/// `args` with `{ip}` and `{host}` replaced for host `h`.
pub fn host_args(args: &[String], h: usize) -> Vec<String> {
    let ip = std::net::Ipv4Addr::from(host_ip(h)).to_string();
    args.iter()
        .map(|a| a.replace("{ip}", &ip).replace("{host}", &h.to_string()))
        .collect()
}

/// Hosts that are built-in load generators (`nanopu run --load`'s client).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientSpec {
    /// Which hosts: `"2"`, `"2-5"`.
    pub hosts: String,
    /// The host they send requests to (a node). Clients waiting for its
    /// boot message start when it boots.
    pub server: usize,
    /// What they send; each client's seed is `load.seed` plus its host
    /// number, so clients differ but runs repeat.
    #[serde(default)]
    pub load: LoadConfig,
    /// More hosts an application (`load.app`) may send requests to: its
    /// server index `i >= 1` is `servers[i - 1]` (index 0 is `server`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<usize>,
}

/// Parses a host set such as `"0,2,5-7"` (hosts of a network of `n`).
pub fn parse_hosts(spec: &str, n: usize) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let parse = |x: &str| {
            x.parse::<usize>()
                .map_err(|_| format!("hosts = {spec:?}: {x:?} is not a host number"))
        };
        let (a, b) = (parse(a)?, parse(b)?);
        if a > b || b >= n {
            return Err(format!(
                "hosts = {spec:?}: {part:?} is not a range of hosts 0..{}",
                n.saturating_sub(1)
            ));
        }
        out.extend(a..=b);
    }
    Ok(out)
}

/// A message a node's core sent, or a node's NIC delivered to a core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeMessage {
    pub host: usize,
    /// The destination (sent) or the source (delivered).
    pub peer_ip: u32,
    pub len: u16,
    pub at: SimTime,
}

/// How many of the nodes' latest messages sent (and received) a cluster
/// keeps: 8 MB of records each.
pub const NODE_MESSAGES_KEPT: usize = 1 << 18;

/// Appends `m` to `log`, dropping the oldest past [`NODE_MESSAGES_KEPT`].
fn keep_latest(log: &mut VecDeque<NodeMessage>, m: NodeMessage) {
    if log.len() == NODE_MESSAGES_KEPT {
        log.pop_front();
    }
    log.push_back(m);
}

/// One message of a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageSpec {
    pub from: usize,
    pub to: usize,
    /// Bytes of payload.
    pub len: u16,
    /// When the message enters the sender's transport, ns.
    pub at_ns: u64,
}

/// What happened to one message.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MessageRecord {
    pub sent_at: SimTime,
    /// When the receiver's transport handed the whole message on.
    pub delivered_at: Option<SimTime>,
    pub deliveries: u32,
    /// The sender gave up after its retries.
    pub failed: bool,
    /// When a reply (a message back from the receiver starting with the same
    /// index, as `loopback` sends) reached the sender: an RPC's round trip.
    pub reply_at: Option<SimTime>,
}

/// When [`Cluster::run_until`] stops early.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StopWhen {
    /// Every load generator has all its replies.
    pub clients_done: bool,
    /// A node's program exits.
    pub node_exits: bool,
}

/// How [`Cluster::run_until`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterEnd {
    /// Every load generator has all its replies (with `clients_done`).
    ClientsDone,
    /// Host `host`'s program exited with `code` (with `node_exits`).
    Exited { host: usize, code: u64 },
    /// Events remain after the time limit.
    TimeLimit,
    /// Nothing is left to do: no event is pending and no node can run.
    Idle,
    /// Nothing can happen before the pause time ([`Cluster::set_pause`]);
    /// `run_until` again goes on as if it had not stopped.
    Paused,
}

enum Ev {
    Net(NetEvent),
    /// A frame's first bit reaches a host's NIC.
    AtHost(usize, Vec<u8>),
    /// A node's NIC's event: its slot in `Cluster::nic_events` (NIC
    /// events are large; kept out of line, every event stays small).
    Nic(usize, u32),
    /// A built-in host's transport's event.
    Transport(usize, TransportEvent),
    /// Workload message `i` enters its sender's transport.
    Send(usize),
    ClientTick(usize),
    ClientStart(usize),
    /// Load generator `h`'s earliest pending timeout (the head of its
    /// FIFO of deadlines) is due.
    ClientTimeout(usize),
}

/// Hosts on a network, run in time order.
pub struct Cluster {
    net: Network,
    hosts: Vec<Host>,
    queue: EventQueue<Ev>,
    specs: Vec<MessageSpec>,
    pub records: Vec<MessageRecord>,
    /// Deliveries of messages too short to carry their index.
    pub unmatched_deliveries: Vec<(usize, SimTime)>,
    /// Deliveries whose index names no message of the workload.
    pub unknown_deliveries: u64,
    net_actions: Vec<NetAction>,
    actions: Vec<TransportAction>,
    /// Per host, when each data packet left its transport (only when
    /// [`Cluster::record_transmits`] is on).
    transmits: Vec<Vec<SimTime>>,
    record_transmits: bool,
    /// Events handled (for speed figures).
    pub events: u64,
    pub now: SimTime,
    /// What nodes' cores sent and received (nodes only): the latest
    /// [`NODE_MESSAGES_KEPT`] of each (a guest may send without end), and
    /// how many there were in all.
    pub node_sends: VecDeque<NodeMessage>,
    pub node_deliveries: VecDeque<NodeMessage>,
    pub node_messages_sent: u64,
    pub node_messages_delivered: u64,
    /// When each node sent its (first) boot message.
    pub booted: Vec<(usize, SimTime)>,
    /// Messages a NIC could not put into a core's RX FIFO.
    pub delivery_failures: u64,
    /// The least time from a node's core sending to any other host's NIC
    /// receiving: how far nodes may run past each other.
    lookahead: SimDuration,
    /// The hosts that are nodes, and those that are load generators.
    nodes: Vec<usize>,
    clients: Vec<usize>,
    /// Per node (as in `nodes`), its output horizon when last computed,
    /// `None` once the node may have changed since (it ran, or an event
    /// reached it): the run loop asks twice a turn, nodes change rarely.
    horizons: Vec<Option<Option<SimTime>>>,
    /// Per host, its index in `nodes` (`u32::MAX`: not a node).
    node_index: Vec<u32>,
    /// Consumed frame buffers, for the hosts that send to reuse (frames go
    /// from senders to receivers; this brings the buffers back).
    spare_frames: Vec<Vec<u8>>,
    /// The partitioned simulation, when threads are set
    /// ([`Cluster::set_threads`]).
    par: Option<Box<Parallel>>,
    /// Why threads were asked for but the single loop runs the network
    /// (its partitions could never run on threads of their own).
    single_loop_note: Option<String>,
    /// The most partitions of leaves, and of spines ([`Cluster::set_partitions`]).
    partitions: usize,
    /// Pending NIC events of nodes ([`Ev::Nic`]), and the free slots.
    nic_events: Vec<Option<NodeNicEvent>>,
    free_nic_events: Vec<u32>,
    /// Stop between two turns once no node can send before this time
    /// ([`Cluster::set_pause`]).
    pause_at: Option<SimTime>,
}

/// The network's actions carried out as they come ([`NetSink`]): frames
/// and network events into the cluster's queue.
struct IntoQueue<'a> {
    queue: &'a mut EventQueue<Ev>,
    hosts: &'a [Host],
}

impl NetSink for IntoQueue<'_> {
    #[inline]
    fn act(&mut self, a: NetAction) {
        match a {
            NetAction::Deliver {
                host,
                frame,
                first_bit,
            } => {
                // A load generator takes frames whole, at their last bit.
                let at = match &self.hosts[host] {
                    Host::Client(c) => {
                        first_bit + SimDuration::serialization(frame.len() as u64, c.link_gbps)
                    }
                    _ => first_bit,
                };
                self.queue.schedule(at, Ev::AtHost(host, frame))
            }
            NetAction::Schedule { at, event } => self.queue.schedule(at, Ev::Net(event)),
            NetAction::Reserve { .. } => unreachable!("the network asks NetSink::reserve"),
            NetAction::ScheduleReserved { at, key, event } => {
                self.queue.schedule_reserved(at, key, Ev::Net(event))
            }
        }
    }

    #[inline]
    fn reserve(&mut self, _port: u32) -> Option<Reserved> {
        Some(self.queue.reserve())
    }
}

/// What a node host runs: its program (image and name) and NIC design.
type NodeSpec = (Rc<Vec<u8>>, String, NicKind, Vec<String>);

/// The payload of workload message `i`, `len` bytes, built in `payload`
/// (an empty buffer): the message's index in its first word, by which a
/// delivery is matched with its message, and zeros after it (bytes past
/// the words are sent as zeros). The bytes mean nothing else; a one-word
/// payload spares the host writing a message-sized buffer at the send and
/// copying it into every packet (until session 16 the words counted up:
/// leaf-spine-64, with messages up to 16 KB, ran ~7 % slower).
pub(crate) fn workload_payload(mut payload: Vec<u64>, i: usize, len: u16) -> Vec<u64> {
    if len > 0 {
        payload.push(i as u64);
    }
    payload
}

/// Frame buffers the cluster keeps for its hosts.
const SPARE_FRAMES: usize = 4096;

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
                let mut node_cfg = cfg.node.clone();
                node_cfg.icenic.enabled = kind == NicKind::Icenic;
                // The device's MAC (02:00 and the IPv4 address) is how a
                // program learns its own address: the host's, not the
                // single-node default every host would otherwise share.
                node_cfg.icenic.ipv4 = std::net::Ipv4Addr::from(host_ip(h));
                node_cfg.rdma_doorbell = kind == NicKind::Rdma;
                let mut node = Node::with_program_bytes(node_cfg, &name, &elf)
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
                    None => node_nic(&mut node, kind, &cfg.nic, host_ip(h), link, custom(h))?,
                };
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
                hosts.push(Host::Builtin(Box::new(BuiltinHost {
                    transport,
                    mac: mac(&cfg.nic, cfg.network.link.gbps),
                })));
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
            let start = c.hosts[h]
                .as_client()
                .and_then(|ch| ch.client.as_ref())
                .map(|x| x.cfg.start);
            if let Some(Start::AtNs(ns)) = start {
                c.start_client_at(h, SimTime::ZERO + SimDuration::from_ns(ns));
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
    pub fn from_hosts(mut net: Network, hosts: Vec<Host>, lookahead: SimDuration) -> Cluster {
        let n = hosts.len();
        assert_eq!(n, net.hosts(), "one host per network attachment");
        // Only built-in hosts: the run loop takes every event at once, and
        // idle switch ports need no event at the end of a frame (nodes and
        // load generators are kept in step by the events' times).
        net.set_lazy_tx_done(hosts.iter().all(|h| matches!(h, Host::Builtin(_))));
        Cluster {
            net,
            queue: EventQueue::new(),
            specs: Vec::new(),
            records: Vec::new(),
            unmatched_deliveries: Vec::new(),
            unknown_deliveries: 0,
            net_actions: Vec::new(),
            actions: Vec::new(),
            transmits: vec![Vec::new(); n],
            record_transmits: false,
            events: 0,
            now: SimTime::ZERO,
            node_sends: VecDeque::new(),
            node_deliveries: VecDeque::new(),
            node_messages_sent: 0,
            node_messages_delivered: 0,
            booted: Vec::new(),
            delivery_failures: 0,
            lookahead,
            spare_frames: Vec::new(),
            par: None,
            single_loop_note: None,
            partitions: crate::DEFAULT_PARTITIONS,
            nic_events: Vec::new(),
            free_nic_events: Vec::new(),
            pause_at: None,
            nodes: (0..n).filter(|&h| hosts[h].as_node().is_some()).collect(),
            horizons: vec![None; hosts.iter().filter(|h| h.as_node().is_some()).count()],
            node_index: {
                let mut next = 0;
                hosts
                    .iter()
                    .map(|h| match h.as_node() {
                        Some(_) => {
                            next += 1;
                            next - 1
                        }
                        None => u32::MAX,
                    })
                    .collect()
            },
            clients: (0..n).filter(|&h| hosts[h].as_client().is_some()).collect(),
            hosts,
        }
    }

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

    /// Simulates the network partitioned, on `threads` host threads, from
    /// now on (docs/parallel-network.md): results are the same for any
    /// number of threads, one included. Nothing may have been scheduled,
    /// captured or recorded yet.
    ///
    /// Only networks of built-in traffic hosts are partitioned: with a node
    /// or a load generator the single event loop runs the network, on one
    /// thread, whatever `threads` says (a note says so).
    /// A network whose partitions exchange frames more often than every
    /// 200 ns of simulated time (the lookahead; 43 ns on a single switch),
    /// or that is one partition, is not partitioned: threads would never
    /// pay there, and the single event loop, faster than partitions on one
    /// thread, runs it whatever `threads` says (so the results are the same
    /// for any `threads` there too; see [`Cluster::parallel_note`]).
    /// [`Cluster::force_threads`] partitions it anyway.
    pub fn set_threads(&mut self, threads: usize) -> Result<(), SystemError> {
        self.partition(threads, false)
    }

    /// The most partitions the leaves of a network are grouped into when
    /// threads are set, and its spines (default [`DEFAULT_PARTITIONS`]; set it before
    /// [`Cluster::set_threads`]): results may depend on it, never on the
    /// thread count.
    ///
    /// [`DEFAULT_PARTITIONS`]: crate::DEFAULT_PARTITIONS
    pub fn set_partitions(&mut self, partitions: usize) -> Result<(), SystemError> {
        if partitions == 0 {
            return Err(SystemError::Config(
                "partitions = 0: a network is at least one partition".into(),
            ));
        }
        if self.par.is_some() {
            return Err(SystemError::Config(format!(
                "partitions = {partitions}: set before threads"
            )));
        }
        self.partitions = partitions;
        Ok(())
    }

    /// [`Cluster::set_threads`] on exactly `threads` threads (at most one
    /// per partition), however short the lookahead: for tests and
    /// measurements of the partitioned engine itself.
    pub fn force_threads(&mut self, threads: usize) -> Result<(), SystemError> {
        self.partition(threads, true)
    }

    /// Why the partitioned simulation runs on fewer threads than asked,
    /// if it does (after a run: also how much of it ran on fewer, chosen
    /// as it went because one thread was faster on this host then).
    pub fn parallel_note(&self) -> Option<String> {
        if let Some(note) = &self.single_loop_note {
            return Some(note.clone());
        }
        let p = self.par.as_ref()?;
        let (used, asked) = p.threads();
        let share = p.threaded_share();
        if used == asked && used > 1 && share < 1.0 && self.events > 0 {
            return Some(format!(
                "threads = {asked}: {:.0}% of simulated time ran on {asked} threads, the rest \
                 on 1 (measured faster at the time on this host; results are the same)",
                share * 100.0
            ));
        }
        // More threads asked for than there are partitions.
        (used < asked).then(|| {
            format!(
                "threads = {asked}: {} partitions run on {used} thread{} (one partition per \
                 thread at most; results are the same)",
                p.partitions(),
                if used == 1 { "" } else { "s" },
            )
        })
    }

    fn partition(&mut self, threads: usize, force: bool) -> Result<(), SystemError> {
        if threads == 0 {
            return Err(SystemError::Config(
                "threads = 0: at least one thread runs the simulation".into(),
            ));
        }
        if let Some(h) = self
            .hosts
            .iter()
            .position(|h| !matches!(h, Host::Builtin(_)))
        {
            let what = if self.hosts[h].as_node().is_some() {
                "a node"
            } else {
                "a load generator"
            };
            if force {
                return Err(SystemError::Config(format!(
                    "threads = {threads}: host {h} is {what} (only networks of built-in \
                     hosts are partitioned)"
                )));
            }
            // As for a network threads could never speed up: the single
            // loop, whatever `threads` says (so results do not depend on it).
            self.par = None;
            self.single_loop_note = Some(format!(
                "threads = {threads}: host {h} is {what}, so the single event loop runs the \
                 network, on 1 thread (only networks of built-in hosts are partitioned; \
                 nodes' cores on threads measured slower, docs/parallel-network.md)"
            ));
            return Ok(());
        }
        if !self.queue.is_empty() || self.par.as_ref().is_some_and(|p| !p.is_idle()) {
            return Err(SystemError::Config(format!(
                "threads = {threads}: set before any message is sent"
            )));
        }
        if self.record_transmits || self.net.observed() {
            return Err(SystemError::Config(format!(
                "threads = {threads}: a partitioned network records no transmit times, \
                 captures or queue samples"
            )));
        }
        let par = Parallel::new(&self.net, threads, self.partitions, force)?;
        self.single_loop_note = None;
        if !force && par.partitions() == 1 {
            self.par = None;
            let why = if self.partitions == 1 {
                "partitions = 1"
            } else {
                "no link with a latency separates its parts"
            };
            self.single_loop_note = Some(format!(
                "threads = {threads}: the network is one partition ({why}); the single event \
                 loop runs it, on 1 thread"
            ));
        } else if !force && par.lookahead() < crate::partition::MIN_THREADED_LOOKAHEAD {
            self.par = None;
            self.single_loop_note = Some(format!(
                "threads = {threads}: {} partitions would exchange frames every {} ns (the \
                 lookahead), too often for threads to pay (from {} ns); the single event loop \
                 runs the network, on 1 thread, whatever the thread count",
                par.partitions(),
                par.lookahead().0 / 1_000_000,
                crate::partition::MIN_THREADED_LOOKAHEAD.0 / 1_000_000,
            ));
        } else {
            self.par = Some(Box::new(par));
        }
        Ok(())
    }

    /// The partitions and lookahead of the partitioned simulation, if on.
    pub fn partitioning(&self) -> Option<(usize, SimDuration)> {
        self.par.as_ref().map(|p| (p.partitions(), p.lookahead()))
    }

    /// Counters of the whole network.
    pub fn network_stats(&self) -> nanopu_network::NetworkStats {
        match &self.par {
            Some(p) => p.network_stats(),
            None => self.net.stats(),
        }
    }

    /// Starts load generator `h` at `at` (instead of at its server's boot).
    pub fn start_client_at(&mut self, h: usize, at: SimTime) {
        self.queue.schedule(at, Ev::ClientStart(h));
    }

    /// Events scheduled in the past (a causality slip; should stay zero).
    pub fn late_events(&self) -> u64 {
        self.queue.late + self.par.as_ref().map_or(0, |p| p.late_events())
    }

    /// Host `h`.
    pub fn host(&self, h: usize) -> &Host {
        &self.hosts[h]
    }

    pub fn host_mut(&mut self, h: usize) -> &mut Host {
        &mut self.hosts[h]
    }

    /// The measurements of load generator `h` (percentiles filled in), if
    /// `h` is one.
    pub fn client_report(&mut self, h: usize) -> Option<crate::client::LoadReport> {
        match self.hosts.get_mut(h)? {
            Host::Client(c) => c.client.as_mut().map(|c| c.finish().clone()),
            _ => None,
        }
    }

    /// The hosts that are load generators.
    pub fn client_hosts(&self) -> &[usize] {
        &self.clients
    }

    /// The node of `host`, if it is a node.
    pub fn node(&self, host: usize) -> Option<&Node> {
        self.hosts[host].as_node().map(|n| &n.node)
    }

    /// Records the time of every frame each host's transport sends.
    pub fn record_transmits(&mut self, on: bool) {
        self.record_transmits = on;
    }

    /// When `host`'s transport sent its frames (see `record_transmits`).
    pub fn transmit_times(&self, host: usize) -> &[SimTime] {
        &self.transmits[host]
    }

    pub fn hosts(&self) -> usize {
        self.hosts.len()
    }

    pub fn network(&self) -> &Network {
        &self.net
    }

    pub fn network_mut(&mut self) -> &mut Network {
        &mut self.net
    }

    /// The transport of `host` (built in or in a node's NIC).
    ///
    /// # Panics
    /// If the host runs none (a load generator, a NIC without one).
    pub fn transport(&self, host: usize) -> &NanoTransport {
        self.hosts[host]
            .transport()
            .unwrap_or_else(|| panic!("host {host} runs no NanoTransport"))
    }

    /// Counters of every host's transport, summed.
    pub fn transport_stats(&self) -> TransportStats {
        let mut t = TransportStats::default();
        for h in &self.hosts {
            if let Some(tr) = h.transport() {
                t.add(&tr.stats);
            }
        }
        t
    }

    /// Resources still held by some host, if any (leak check).
    pub fn occupancy(&self) -> Option<(usize, Occupancy)> {
        self.hosts
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.transport().map(|t| (i, t.occupancy())))
            .find(|(_, o)| !o.is_empty())
    }

    /// An incast: every host of `from` sends one `len`-byte message to
    /// host `to` at `at_ns` (added to the workload in host order).
    pub fn send_incast(
        &mut self,
        from: impl IntoIterator<Item = usize>,
        to: usize,
        len: u16,
        at_ns: u64,
    ) -> Result<(), SystemError> {
        for from in from {
            self.send(MessageSpec {
                from,
                to,
                len,
                at_ns,
            })?;
        }
        Ok(())
    }

    /// Adds a message to the workload; returns its index.
    pub fn send(&mut self, m: MessageSpec) -> Result<usize, SystemError> {
        let n = self.hosts.len();
        if m.from >= n || m.to >= n {
            return Err(SystemError::Config(format!(
                "message from host {} to host {}: the network has hosts 0..{}",
                m.from,
                m.to,
                n - 1
            )));
        }
        let Host::Builtin(b) = &self.hosts[m.from] else {
            return Err(SystemError::Config(format!(
                "a workload message from host {}: it is not a built-in traffic host (a node \
                 sends its own messages, a load generator its requests)",
                m.from
            )));
        };
        let max = b.transport.max_message_bytes();
        let at = SimDuration::try_from_ns(m.at_ns)
            .map_err(|e| SystemError::Config(format!("message at_ns: {e}")))?;
        if m.len as u32 > max {
            return Err(SystemError::Config(format!(
                "a message of {} bytes: the transport carries at most {max}",
                m.len
            )));
        }
        let i = self.specs.len();
        self.specs.push(m);
        self.records.push(MessageRecord::default());
        match &mut self.par {
            Some(p) => p.send(i, m.from, SimTime::ZERO + at),
            None => self.queue.schedule(SimTime::ZERO + at, Ev::Send(i)),
        }
        Ok(i)
    }

    /// Writes what crosses `host`'s link to a pcap file.
    pub fn capture(&mut self, host: usize, path: &std::path::Path) -> Result<(), SystemError> {
        if host >= self.hosts.len() {
            return Err(SystemError::Config(format!(
                "pcap host {host}: the network has hosts 0..{}",
                self.hosts.len() - 1
            )));
        }
        if self.par.is_some() {
            return Err(SystemError::Config(
                "pcap: a network run on threads captures nothing".into(),
            ));
        }
        let f = std::fs::File::create(path).map_err(SystemError::Pcap)?;
        let w: Box<dyn std::io::Write + Send> = Box::new(std::io::BufWriter::new(f));
        self.net
            .capture(host, PcapWriter::new(w).map_err(SystemError::Pcap)?);
        Ok(())
    }

    /// Runs until no event is left or `until`; returns the last event's time.
    pub fn run(&mut self, until: SimTime) -> Result<SimTime, SystemError> {
        self.run_until(until, StopWhen::default())?;
        Ok(self.now)
    }

    /// Runs until `until`, until nothing is left to do, or until what
    /// `stop` names happens.
    pub fn run_until(&mut self, until: SimTime, stop: StopWhen) -> Result<ClusterEnd, SystemError> {
        if self.par.is_some() {
            return self.run_partitioned(until, stop);
        }
        // Nodes may have been changed from outside (`host_mut`).
        self.horizons.fill(None);
        let end = loop {
            if let Some(end) = self.stopped(stop) {
                break end;
            }
            if let Some(at) = self.pause_at {
                // Between turns, so that the next `run_until` takes the
                // turn this one would have taken: a turn's window depends
                // only on the state (and on `until`, which the caller keeps).
                let next = self.queue.peek_time();
                let earliest = match (next, self.nodes_horizon()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                // (Nothing left to happen: the run ends by itself.)
                if earliest.is_some_and(|t| t >= at) {
                    break ClusterEnd::Paused;
                }
            }
            if self.nodes.is_empty() && (self.clients.is_empty() || !stop.clients_done) {
                // No core to keep in step and nothing to stop for between
                // events: every event up to `until` at once (the loop
                // below would take them one instant per turn).
                while let Some((t, ev)) = self.queue.pop_until(until) {
                    self.now = t;
                    self.events += 1;
                    self.handle(t, ev);
                }
                if let Some(t) = self.net.settle_through(until) {
                    self.now = self.now.max(t);
                }
                break if self.queue.is_empty() && !self.net.lazy_pending() {
                    ClusterEnd::Idle
                } else {
                    ClusterEnd::TimeLimit
                };
            }
            let next = self.queue.peek_time().unwrap_or(SimTime::MAX);
            // Nodes run no further than the next event, nor further past the
            // earliest point some node could send than a message takes to
            // cross the network: so nothing is ever delivered into a core's
            // past.
            let limit = match self.nodes_horizon() {
                Some(h) => next.min(h + self.lookahead),
                None => next,
            }
            .min(until);
            for i in 0..self.nodes.len() {
                let h = self.nodes[i];
                let node = self.hosts[h].as_node_mut().expect("a node");
                node.advance(limit)
                    .map_err(|error| SystemError::Host { host: h, error })?;
                self.horizons[i] = None;
                self.node_io(h);
            }
            // Events before every node's next possible output are final.
            let safe = self.nodes_horizon().map_or(limit, |h| h.min(limit));
            let mut handled = false;
            while let Some((t, ev)) = self.queue.pop_until(safe) {
                self.now = t;
                self.events += 1;
                self.handle(t, ev);
                handled = true;
            }
            if !handled && self.queue.peek_time().is_none_or(|t| t > until) {
                // No event left before `until`: done once no node can run.
                let running = self.nodes.iter().any(|&h| {
                    self.hosts[h]
                        .as_node()
                        .is_some_and(|n| !n.deadlocked && n.can_run(until))
                });
                if !running {
                    // A node that reached `until` still computing is not
                    // idle: the time limit stopped it.
                    let could_go_on = self.nodes.iter().any(|&h| {
                        self.hosts[h]
                            .as_node()
                            .is_some_and(|n| !n.deadlocked && n.can_run(SimTime::MAX))
                    });
                    break if let Some(end) = self.stopped(stop) {
                        end
                    } else if self.queue.is_empty() && !could_go_on {
                        ClusterEnd::Idle
                    } else {
                        ClusterEnd::TimeLimit
                    };
                }
            }
        };
        self.net.finish_capture().map_err(SystemError::Pcap)?;
        Ok(end)
    }

    /// The simulated time the run has reached: the latest clock of
    /// anything in it, the last event handled or a node's cores (which
    /// compute between events, and may run on long after the last one).
    pub fn sim_time(&self) -> SimTime {
        self.nodes
            .iter()
            .filter_map(|&h| self.hosts[h].as_node())
            .map(|n| n.clock())
            .fold(self.now, SimTime::max)
    }

    /// Makes [`Cluster::run_until`] stop ([`ClusterEnd::Paused`]) between
    /// two turns once nothing can happen before `at`: no event is due and
    /// no node can send before it, but something may later (`None`: never
    /// pause). Pausing changes nothing in the run, unlike a shorter
    /// `until`, which ends the nodes' last window there (a busy multi-core
    /// node's results depend on its windows). The single event loop only:
    /// the partitioned engine does not pause.
    pub fn set_pause(&mut self, at: Option<SimTime>) {
        self.pause_at = at;
    }

    /// Whether nothing has happened yet but the nodes' cores running: no
    /// event handled or pending, nothing sent, no frame on the network, no
    /// load generator started. The nodes' NICs and the network are then as
    /// they were built, so a fork of the nodes behind new NICs, network and
    /// load generators (built from the same configuration) runs on exactly
    /// as this cluster would.
    pub fn only_cores_ran(&self) -> bool {
        self.events == 0
            && self.queue.is_empty()
            && !self.net.lazy_pending()
            && self.node_sends.is_empty()
            && self.node_deliveries.is_empty()
            && self.booted.is_empty()
            && self.hosts.iter().all(|h| match h {
                Host::Node(n) => n.io.is_empty() && !n.deadlocked,
                Host::Client(c) => {
                    c.booted_at.is_none()
                        && c.frames_to_nowhere == 0
                        && c.timeouts.is_empty()
                        && c.client.as_ref().is_none_or(|x| !x.started())
                }
                Host::Builtin(_) => false,
            })
    }

    /// [`Cluster::run_until`] on the partitions (built-in hosts only).
    fn run_partitioned(
        &mut self,
        until: SimTime,
        stop: StopWhen,
    ) -> Result<ClusterEnd, SystemError> {
        if let Some(end) = self.stopped(stop) {
            return Ok(end);
        }
        let par = self.par.as_mut().expect("partitioned");
        let mut out = Outcome {
            records: &mut self.records,
            unmatched: &mut self.unmatched_deliveries,
            unknown: &mut self.unknown_deliveries,
            events: &mut self.events,
            now: &mut self.now,
        };
        par.run(&mut self.hosts, &self.specs, until, &mut out)?;
        Ok(if par.is_idle() {
            ClusterEnd::Idle
        } else {
            ClusterEnd::TimeLimit
        })
    }

    /// What `stop` names, if it has happened.
    fn stopped(&self, stop: StopWhen) -> Option<ClusterEnd> {
        if stop.clients_done && self.clients_done() {
            return Some(ClusterEnd::ClientsDone);
        }
        if stop.node_exits {
            if let Some((host, code)) = self.exited() {
                return Some(ClusterEnd::Exited { host, code });
            }
        }
        None
    }

    fn clients_done(&self) -> bool {
        self.clients
            .iter()
            .all(|&h| self.hosts[h].as_client().is_some_and(|c| c.done()))
    }

    fn exited(&self) -> Option<(usize, u64)> {
        self.nodes.iter().find_map(|&h| {
            let n = self.hosts[h].as_node()?;
            n.node.exit().map(|(code, _)| (h, code))
        })
    }

    /// The earliest time any node could send something, if any node can.
    fn nodes_horizon(&mut self) -> Option<SimTime> {
        let mut min = None;
        for (i, &h) in self.nodes.iter().enumerate() {
            let horizon = match self.horizons[i] {
                Some(known) => known,
                None => {
                    let x = self.hosts[h].as_node().and_then(|n| n.output_horizon());
                    self.horizons[i] = Some(x);
                    x
                }
            };
            min = match (min, horizon) {
                (Some(a), Some(b)) => Some(std::cmp::min(a, b)),
                (a, b) => a.or(b),
            };
        }
        min
    }

    /// Node host `h` has changed (an event reached it): its horizon must be
    /// asked again.
    fn node_changed(&mut self, h: usize) {
        if let Some(x) = self.horizons.get_mut(self.node_index[h] as usize) {
            *x = None;
        }
    }

    /// Hands spare frame buffers to the host that is about to run.
    fn top_up(&mut self, h: usize) {
        if self.spare_frames.is_empty() {
            // Dropped frames' buffers too, before anyone allocates one.
            self.net
                .take_discarded(&mut self.spare_frames, SPARE_FRAMES);
        }
        while let Some(f) = self.spare_frames.pop() {
            if let Some(f) = self.hosts[h].recycle(f) {
                self.spare_frames.push(f);
                return;
            }
        }
    }

    fn handle(&mut self, t: SimTime, ev: Ev) {
        match &ev {
            Ev::AtHost(h, _)
            | Ev::Transport(h, _)
            | Ev::Nic(h, _)
            | Ev::ClientTick(h)
            | Ev::ClientStart(h)
            | Ev::ClientTimeout(h) => self.top_up(*h),
            Ev::Send(i) => self.top_up(self.specs[*i].from),
            _ => {}
        }
        // Built-in hosts and the network hand their actions to the queue as
        // they come; nodes and load generators through `net_actions`,
        // carried out after everything else they asked for.
        match ev {
            Ev::Net(e) => {
                let key = self.queue.current();
                let mut sink = IntoQueue {
                    queue: &mut self.queue,
                    hosts: &self.hosts,
                };
                self.net.handle_keyed(e, t, key, &mut sink);
            }
            Ev::AtHost(h, frame) => {
                match &mut self.hosts[h] {
                    Host::Builtin(b) => {
                        let in_nic = b.mac.received(t, frame.len());
                        b.transport.packet_in(&frame, in_nic, &mut self.actions);
                        self.builtin_actions(h);
                    }
                    Host::Node(n) => {
                        n.frame_in(&frame, t);
                        self.node_changed(h);
                        self.node_io(h);
                    }
                    Host::Client(c) => {
                        c.frame_in(&frame, t); // t: the last bit
                        self.client_io(h);
                    }
                }
                if self.spare_frames.len() < SPARE_FRAMES {
                    self.spare_frames.push(frame);
                }
            }
            Ev::Transport(h, e) => {
                if let Host::Builtin(b) = &mut self.hosts[h] {
                    b.transport.handle(e, t, &mut self.actions);
                }
                self.builtin_actions(h);
            }
            Ev::Nic(h, slot) => {
                let e = self.nic_events[slot as usize]
                    .take()
                    .expect("a pending NIC event's slot is full");
                self.free_nic_events.push(slot);
                if let Some(n) = self.hosts[h].as_node_mut() {
                    n.handle(e, t);
                    self.node_changed(h);
                }
                self.node_io(h);
            }
            Ev::Send(i) => {
                let m = self.specs[i];
                self.records[i].sent_at = t;
                if let Host::Builtin(b) = &mut self.hosts[m.from] {
                    let payload = workload_payload(b.transport.payload_buffer(), i, m.len);
                    let msg = OutMessage {
                        dst_ip: host_ip(m.to),
                        dst_port: 0,
                        src_port: 0,
                        len: m.len,
                        payload,
                        tag: i as u64,
                    };
                    b.transport.send_message(msg, t, &mut self.actions);
                }
                self.builtin_actions(m.from);
            }
            Ev::ClientTick(h) | Ev::ClientStart(h) | Ev::ClientTimeout(h) => {
                if let Host::Client(c) = &mut self.hosts[h] {
                    let timeout = match ev {
                        Ev::ClientTimeout(_) => {
                            let (_, _, key) = c.timeouts.pop_front().expect("an armed timeout");
                            // The next deadline takes the place in the event
                            // order it was given when its request was sent.
                            if let Some(&(at, seq, _)) = c.timeouts.front() {
                                self.queue.schedule_reserved(at, seq, Ev::ClientTimeout(h));
                            }
                            Some(key)
                        }
                        _ => None,
                    };
                    if let Some(client) = c.client.as_mut() {
                        match (ev, timeout) {
                            (_, Some(key)) => client.timeout(key, t, &mut c.actions),
                            (Ev::ClientTick(_), _) => client.tick(t, &mut c.actions),
                            _ => client.start(t, &mut c.actions),
                        }
                    }
                }
                self.client_io(h);
            }
        }
    }

    /// Carries out the network's actions recorded in `net_actions`.
    fn network_actions(&mut self, net_actions: &mut Vec<NetAction>) {
        let mut sink = IntoQueue {
            queue: &mut self.queue,
            hosts: &self.hosts,
        };
        for a in net_actions.drain(..) {
            match a {
                NetAction::Reserve { port } => {
                    let key = sink.queue.reserve();
                    self.net.reserved(port, key);
                }
                a => sink.act(a),
            }
        }
    }

    /// What load generator `h` asked for.
    fn client_io(&mut self, h: usize) {
        let mut net_actions = std::mem::take(&mut self.net_actions);
        self.client_actions(h, &mut net_actions);
        self.network_actions(&mut net_actions);
        self.net_actions = net_actions;
    }

    /// What node `h`'s NIC asked for.
    fn node_io(&mut self, h: usize) {
        let mut net_actions = std::mem::take(&mut self.net_actions);
        self.node_io_into(h, &mut net_actions);
        self.network_actions(&mut net_actions);
        self.net_actions = net_actions;
    }

    /// What node `h`'s NIC asked for: frames onto the network, events into
    /// the queue, notes into the records.
    fn node_io_into(&mut self, h: usize, net_actions: &mut Vec<NetAction>) {
        let Host::Node(n) = &mut self.hosts[h] else {
            return;
        };
        if n.io.is_empty() {
            return;
        }
        let mut io = std::mem::take(&mut n.io);
        // Whether the node's boot message crosses the wire is its own
        // setting (its NIC's view of the world).
        let boot_on_wire = io.boot_on_wire;
        let mut requests = io.drain();
        for (frame, ready) in requests.transmit.by_ref() {
            if self.record_transmits {
                self.transmits[h].push(ready);
            }
            self.net.send(h, frame, ready, net_actions);
        }
        for (at, e) in requests.schedule.by_ref() {
            let slot = match self.free_nic_events.pop() {
                Some(slot) => {
                    self.nic_events[slot as usize] = Some(e);
                    slot
                }
                None => {
                    self.nic_events.push(Some(e));
                    (self.nic_events.len() - 1) as u32
                }
            };
            self.queue.schedule(at, Ev::Nic(h, slot));
        }
        for note in requests.notes.by_ref() {
            self.note(h, note, boot_on_wire);
        }
        drop(requests);
        if let Host::Node(n) = &mut self.hosts[h] {
            n.io = io;
        }
    }

    fn note(&mut self, h: usize, note: NicNote, boot_on_wire: bool) {
        match note {
            NicNote::Booted { at } => {
                // A node boots once; more boot messages change nothing.
                if self.booted.iter().any(|&(b, _)| b == h) {
                    return;
                }
                self.booted.push((h, at));
                if !boot_on_wire {
                    // No route for 0.0.0.0: the wiring starts the load
                    // generators that wait for this node.
                    for i in 0..self.clients.len() {
                        let c = self.clients[i];
                        if let Host::Client(ch) = &self.hosts[c] {
                            let waits = ch
                                .client
                                .as_ref()
                                .is_some_and(|x| matches!(x.cfg.start, Start::Boot));
                            let mut servers = std::iter::once(&ch.server).chain(&ch.more_servers);
                            let last_to_boot = servers.clone().any(|&s| s == h)
                                && servers.all(|&s| self.booted.iter().any(|&(b, _)| b == s));
                            if last_to_boot && waits {
                                self.queue.schedule(at, Ev::ClientStart(c));
                            }
                        }
                    }
                }
            }
            NicNote::Sent { dst_ip, len, at } => {
                self.node_messages_sent += 1;
                keep_latest(
                    &mut self.node_sends,
                    NodeMessage {
                        host: h,
                        peer_ip: dst_ip,
                        len,
                        at,
                    },
                );
            }
            NicNote::Delivered {
                src_ip,
                len,
                first_word,
                at,
            } => {
                self.node_messages_delivered += 1;
                keep_latest(
                    &mut self.node_deliveries,
                    NodeMessage {
                        host: h,
                        peer_ip: src_ip,
                        len,
                        at,
                    },
                );
                // A workload message from a built-in host to this node.
                if let (true, Some(index)) = (len >= 8, first_word) {
                    let from_builtin = nanopu_network::host_of_ip(src_ip, self.hosts.len())
                        .is_some_and(|f| matches!(self.hosts[f], Host::Builtin(_)));
                    if from_builtin {
                        self.match_delivery(h, src_ip, index, at);
                    }
                }
            }
            NicNote::DeliveryFailed => self.delivery_failures += 1,
        }
    }

    /// What built-in host `h`'s transport asked for: its own events are
    /// scheduled first, then its frames go onto the network, whose actions
    /// are carried out as they come. The event queue numbers them in the
    /// order carrying out the network's actions after all of the
    /// transport's would.
    fn builtin_actions(&mut self, h: usize) {
        let mut actions = std::mem::take(&mut self.actions);
        for a in &actions {
            if let TransportAction::Schedule { at, event } = *a {
                self.queue.schedule(at, Ev::Transport(h, event));
            }
        }
        for a in actions.drain(..) {
            match a {
                TransportAction::Deliver { msg, at } => self.delivered(h, msg, at),
                TransportAction::Transmit { frame, at } => {
                    if self.record_transmits {
                        self.transmits[h].push(at);
                    }
                    let Host::Builtin(b) = &self.hosts[h] else {
                        continue;
                    };
                    let ready = b.mac.transmit_ready(at);
                    let mut sink = IntoQueue {
                        queue: &mut self.queue,
                        hosts: &self.hosts,
                    };
                    self.net.send(h, frame, ready, &mut sink);
                }
                TransportAction::Schedule { .. } | TransportAction::Sent { .. } => {}
                TransportAction::Failed { outcome, .. } => {
                    if let Some(r) = self.records.get_mut(outcome.tag as usize) {
                        r.failed = true;
                    }
                }
            }
        }
        self.actions = actions;
    }

    /// What load generator `h` asked for.
    fn client_actions(&mut self, h: usize, net_actions: &mut Vec<NetAction>) {
        let Host::Client(c) = &mut self.hosts[h] else {
            return;
        };
        for a in c.actions.drain(..) {
            match a {
                ClientAction::Send { frame, ready } => self.net.send(h, frame, ready, net_actions),
                ClientAction::Wake { at } => self.queue.schedule(at, Ev::ClientTick(h)),
                ClientAction::Timeout { at, key } => {
                    // Deadlines are one timeout length after a send, so they
                    // come in time order: a FIFO, whose head alone is armed.
                    let seq = self.queue.reserve();
                    debug_assert!(c.timeouts.back().is_none_or(|&(last, _, _)| last <= at));
                    if c.timeouts.is_empty() {
                        self.queue.schedule_reserved(at, seq, Ev::ClientTimeout(h));
                    }
                    c.timeouts.push_back((at, seq, key));
                }
            }
        }
    }

    fn delivered(&mut self, host: usize, msg: nanopu_transport::RxMessage, at: SimTime) {
        if msg.len < 8 {
            self.unmatched_deliveries.push((host, at));
        } else {
            self.match_delivery(host, msg.src_ip, msg.payload[0], at);
        }
        if let Host::Builtin(b) = &mut self.hosts[host] {
            b.transport.recycle_payload(msg.payload);
        }
    }

    /// A message carrying workload index `index` reached `host` from `src`:
    /// the message itself, or the reply to it.
    fn match_delivery(&mut self, host: usize, src: u32, index: u64, at: SimTime) {
        let i = index as usize;
        let Some(spec) = self.specs.get(i).copied() else {
            self.unknown_deliveries += 1;
            return;
        };
        let r = &mut self.records[i];
        if spec.to == host && src == host_ip(spec.from) {
            r.deliveries += 1;
            r.delivered_at.get_or_insert(at);
        } else if spec.from == host && src == host_ip(spec.to) {
            r.reply_at.get_or_insert(at);
        } else {
            self.unknown_deliveries += 1;
        }
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

/// The NIC of `node`, of kind `kind` with address `ip` (NEBULA's designs
/// put their queues on the node's bus, or keep those a fork has).
pub fn node_nic(
    node: &mut Node,
    kind: NicKind,
    cfg: &NicConfig,
    ip: u32,
    link: TxLink,
    program: Option<Box<dyn TransportProgram>>,
) -> Result<NodeNic, SystemError> {
    Ok(match kind {
        NicKind::Nanopu => {
            let nic = NanoNic::with_program(cfg.clone(), ip, link, program)
                .map_err(|e| SystemError::Config(format!("nic.{e}")))?;
            NodeNic::nanopu(NanoPuNic::new(nic))
        }
        NicKind::Icenic => NodeNic::icenic(IceNicPort::new(mac(cfg, link.gbps))),
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
                node,
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

#[cfg(test)]
mod tests {
    #[test]
    fn events_are_small() {
        // Events move twice through the queue: a frame's Vec and a tag.
        assert!(std::mem::size_of::<super::Ev>() <= 40);
    }
}
