//! Many hosts on a datacenter network (`nanopu_network`), each a NIC with
//! NanoTransport: either a nanoPU node (cores running a program, the
//! nanoPU NIC with NanoTransport) or a built-in traffic source and sink
//! (the NIC's transport driven directly by a workload). The setting of the
//! NanoTransport incast and the nanoPU 80-to-1 incast.
//!
//! Wiring (all of it happens here):
//!
//! ```text
//!  traffic ── NanoTransport ── MAC ── host link ── switches ── … ── MAC ── NanoTransport ── sink
//! ```
//!
//! Nodes run in time order with the events, as in [`crate::System`]: before
//! events at time `t` are handled, every node has run to `t` or to where it
//! could next send something, whichever is earlier. A node's boot message
//! (to 0.0.0.0) is taken by the wiring, not sent.
//!
//! A built-in host has no cores: a message "from the core" enters the
//! transport at the time the workload names, and a delivered message is
//! recorded when the reassembly module hands it on. Messages carry their
//! index in the workload in their first payload word, so each delivery is
//! matched to its send (shorter messages are only counted, in
//! `unmatched_deliveries`; `nanopu net`'s workloads refuse them).

use crate::SystemError;
use nanopu_core::netif::CoreToNic;
use nanopu_network::{host_ip, NetAction, NetEvent, Network, NetworkConfig};
use nanopu_nic::mac::Mac;
use nanopu_nic::{CoreCommand, NanoNic, NicAction, NicConfig, NicEvent};
use nanopu_node::{Node, NodeConfig, NodeError};
use nanopu_sim::{EventQueue, SimDuration, SimTime};
use nanopu_transport::program::{ProgramParams, TransportProgram};
use nanopu_transport::{
    NanoTransport, Occupancy, OutMessage, TransportAction, TransportEvent, TransportStats, TxLink,
};
use nanopu_wire::PcapWriter;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A network of built-in hosts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    pub network: NetworkConfig,
    /// Every host's NIC: link rate, MTU, MAC latencies and `transport`
    /// (the protocol must be a NanoTransport program).
    pub nic: NicConfig,
    /// Cores and memory of the hosts that are nanoPU nodes.
    pub node: NodeConfig,
    /// Hosts that are nanoPU nodes and the program each runs; every other
    /// host is built in.
    pub programs: Vec<HostProgram>,
}

/// Hosts that run a program.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostProgram {
    /// Which hosts: `"0"`, `"1-80"`, `"0,2,5-7"`.
    pub hosts: String,
    /// The program (a RISC-V ELF).
    pub program: PathBuf,
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

enum Ev {
    Net(NetEvent),
    Nic(usize, NicEvent),
    /// A command a node's core gave at this time.
    FromCore(usize, usize, CoreCommand),
    /// A message a node's core finished writing at this time.
    CoreMessage {
        host: usize,
        core: usize,
        context: u16,
        words: Vec<u64>,
    },
    /// A frame's first bit reaches a host's NIC.
    AtHost(usize, Vec<u8>),
    Transport(usize, TransportEvent),
    Send(usize),
}

/// A built-in host: a NIC's transport and MAC, no cores.
struct Builtin {
    transport: NanoTransport,
    mac: Mac,
}

/// A nanoPU node: cores and the nanoPU NIC.
struct NodeHost {
    node: Node,
    nic: NanoNic,
    period: SimDuration,
}

enum Host {
    Builtin(Box<Builtin>),
    Node(Box<NodeHost>),
}

/// Built-in hosts on a network, run in time order.
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
    /// What nodes' cores sent and received (nodes only).
    pub node_sends: Vec<NodeMessage>,
    pub node_deliveries: Vec<NodeMessage>,
    /// When each node sent its boot message.
    pub booted: Vec<(usize, SimTime)>,
    /// Messages a NIC could not put into a core's RX FIFO.
    pub delivery_failures: u64,
    nic_actions: Vec<NicAction>,
    /// The least time from a node's core sending to any other host's NIC
    /// receiving: how far nodes may run past each other.
    lookahead: SimDuration,
    /// The hosts that are nanoPU nodes.
    nodes: Vec<usize>,
    /// Consumed frame buffers, for the hosts that send to reuse (frames go
    /// from senders to receivers; this brings the buffers back).
    spare_frames: Vec<Vec<u8>>,
}

/// Frame buffers the cluster keeps for its hosts.
const SPARE_FRAMES: usize = 4096;

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
        // Before anything is derived from them (the programs' parameters
        // divide by the link rate).
        Network::validate_config(&cfg.network).map_err(|e| SystemError::Config(e.to_string()))?;
        cfg.nic
            .validate()
            .map_err(|e| SystemError::Config(format!("nic.{e}")))?;
        let custom = |h: usize| {
            program(
                h,
                &ProgramParams::new(
                    &cfg.nic.transport,
                    cfg.nic.mtu_payload_bytes,
                    TxLink {
                        gbps: cfg.network.link.gbps,
                        overhead_bytes: (nanopu_wire::frame::PREAMBLE_LEN
                            + nanopu_wire::frame::IFG_LEN)
                            as u64,
                    },
                ),
            )
        };
        let any_custom = (0..cfg.network.topology.hosts()).any(|h| custom(h).is_some());
        if !any_custom && !NanoTransport::is_program(cfg.nic.transport.protocol) {
            return Err(SystemError::Config(
                "nic.transport.protocol = none: a network of hosts needs a NanoTransport program (ndp, homa or homa-tr)".into(),
            ));
        }
        let net = Network::new(&cfg.network).map_err(|e| SystemError::Config(e.to_string()))?;
        let link = TxLink {
            gbps: cfg.network.link.gbps,
            overhead_bytes: (nanopu_wire::frame::PREAMBLE_LEN + nanopu_wire::frame::IFG_LEN) as u64,
        };
        let n = net.hosts();
        let mut programs: Vec<Option<(std::rc::Rc<Vec<u8>>, String)>> = vec![None; n];
        for p in &cfg.programs {
            let elf = std::fs::read(&p.program).map_err(|e| {
                SystemError::Config(format!("program {}: {e}", p.program.display()))
            })?;
            let elf = std::rc::Rc::new(elf);
            let name = p.program.display().to_string();
            for h in parse_hosts(&p.hosts, n).map_err(SystemError::Config)? {
                if let Some((_, other)) = &programs[h] {
                    return Err(SystemError::Config(format!(
                        "programs: host {h} is given two programs ({other} and {name}); host ranges must not overlap"
                    )));
                }
                programs[h] = Some((elf.clone(), name.clone()));
            }
        }
        let mut hosts = Vec::with_capacity(n);
        for (h, program) in programs.into_iter().enumerate() {
            if let Some((elf, name)) = program {
                let mut node = Node::with_program_bytes(cfg.node.clone(), &name, &elf)?;
                node.nic_attached = true;
                let nic = NanoNic::with_program(
                    cfg.nic.clone(),
                    host_ip(h),
                    (nanopu_wire::frame::PREAMBLE_LEN + nanopu_wire::frame::IFG_LEN) as u64,
                    custom(h),
                )
                .map_err(|e| SystemError::Config(format!("nic.{e}")))?;
                let period = SimDuration::clock_period_mhz(node.cfg.core.clock_mhz as u64);
                hosts.push(Host::Node(Box::new(NodeHost { node, nic, period })));
                continue;
            }
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
            hosts.push(Host::Builtin(Box::new(Builtin {
                transport,
                mac: Mac {
                    link_gbps: cfg.network.link.gbps,
                    rx_latency: SimDuration::from_ps(cfg.nic.mac_serial_rx_ps),
                    tx_latency: SimDuration::from_ps(cfg.nic.mac_serial_tx_ps),
                },
            })));
        }
        Ok(Cluster {
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
            node_sends: Vec::new(),
            node_deliveries: Vec::new(),
            booted: Vec::new(),
            delivery_failures: 0,
            nic_actions: Vec::new(),
            lookahead: Self::lookahead(cfg),
            spare_frames: Vec::new(),
            nodes: (0..n)
                .filter(|&h| matches!(hosts[h], Host::Node(_)))
                .collect(),
            hosts,
        })
    }

    /// A lower bound of the time from a core's last word to another host's
    /// NIC seeing the packet: the MACs, the host links' propagation and one
    /// switch (at least 1 ns, so that nodes always make progress).
    fn lookahead(cfg: &ClusterConfig) -> SimDuration {
        let ps = cfg.nic.mac_serial_tx_ps
            + cfg.nic.mac_serial_rx_ps
            + 2 * cfg.network.link.host_propagation_ps
            + cfg.network.switch.forwarding_latency_ps;
        SimDuration::from_ps(ps.max(1_000))
    }

    /// The node of `host`, if it is a nanoPU node.
    pub fn node(&self, host: usize) -> Option<&Node> {
        match &self.hosts[host] {
            Host::Node(n) => Some(&n.node),
            Host::Builtin(_) => None,
        }
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
    pub fn transport(&self, host: usize) -> &NanoTransport {
        match &self.hosts[host] {
            Host::Builtin(b) => &b.transport,
            Host::Node(n) => n.nic.nano_transport().expect("checked in new"),
        }
    }

    /// Counters of every host's transport, summed.
    pub fn transport_stats(&self) -> TransportStats {
        let mut t = TransportStats::default();
        for h in 0..self.hosts.len() {
            t.add(&self.transport(h).stats);
        }
        t
    }

    /// Resources still held by some host, if any (leak check).
    pub fn occupancy(&self) -> Option<(usize, Occupancy)> {
        (0..self.hosts.len())
            .map(|i| (i, self.transport(i).occupancy()))
            .find(|(_, o)| !o.is_empty())
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
                "a workload message from host {}: it runs a program, which sends its own",
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
        self.queue.schedule(SimTime::ZERO + at, Ev::Send(i));
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
        let f = std::fs::File::create(path).map_err(SystemError::Pcap)?;
        let w: Box<dyn std::io::Write + Send> = Box::new(std::io::BufWriter::new(f));
        self.net
            .capture(host, PcapWriter::new(w).map_err(SystemError::Pcap)?);
        Ok(())
    }

    /// Runs until no event is left or `until`; returns the last event's time.
    pub fn run(&mut self, until: SimTime) -> Result<SimTime, SystemError> {
        loop {
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
                self.advance_node(self.nodes[i], limit)?;
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
                let running = self.nodes.iter().any(|&h| self.node_can_run(h, until));
                if !running {
                    break;
                }
            }
        }
        self.net.finish_capture().map_err(SystemError::Pcap)?;
        Ok(self.now)
    }

    /// The earliest time any node could send something, if any node can.
    fn nodes_horizon(&self) -> Option<SimTime> {
        self.nodes
            .iter()
            .filter_map(|&h| match &self.hosts[h] {
                Host::Node(n) if n.node.exit.is_none() => n
                    .node
                    .output_horizon()
                    .map(|c| SimTime::from_cycle(c, n.period)),
                _ => None,
            })
            .min()
    }

    /// Whether node `h` can still do something before `until`.
    fn node_can_run(&self, h: usize, until: SimTime) -> bool {
        let Host::Node(n) = &self.hosts[h] else {
            return false;
        };
        if n.node.exit.is_some() {
            return false;
        }
        let until = until.to_cycle_ceil(n.period);
        n.node.lead_cycle().is_some_and(|c| c < until)
            || n.node.next_wake_cycle().is_some_and(|c| c < until)
    }

    /// Runs node `h` up to `limit`.
    fn advance_node(&mut self, h: usize, limit: SimTime) -> Result<(), SystemError> {
        let Host::Node(n) = &mut self.hosts[h] else {
            return Ok(());
        };
        if n.node.exit.is_some() {
            return Ok(());
        }
        match n.node.run(limit.to_cycle_ceil(n.period)) {
            Ok(_) => {}
            // Every core waits for a message: in a network one may come.
            Err(NodeError::Deadlock(_)) => {}
            Err(e) => return Err(SystemError::Host { host: h, source: e }),
        }
        self.drain_node(h);
        Ok(())
    }

    /// Takes node `h`'s commands and finished messages into the queue.
    fn drain_node(&mut self, h: usize) {
        let Host::Node(n) = &mut self.hosts[h] else {
            return;
        };
        let period = n.period;
        let mut words = Vec::new();
        for (core, hart) in n.node.harts.iter_mut().enumerate() {
            while let Some(cmd) = hart.net.outbox.pop_front() {
                let (c, cycle) = match cmd {
                    CoreToNic::Registered { context, cycle, .. } => {
                        (CoreCommand::Registered { context }, cycle)
                    }
                    CoreToNic::MessageDone { context, cycle } => {
                        (CoreCommand::MessageDone { context }, cycle)
                    }
                };
                self.queue
                    .schedule(SimTime::from_cycle(cycle, period), Ev::FromCore(h, core, c));
            }
            while let Some(m) = hart.net.take_tx_message(&mut words) {
                self.queue.schedule(
                    SimTime::from_cycle(m.cycle, period),
                    Ev::CoreMessage {
                        host: h,
                        core,
                        context: m.context,
                        words: std::mem::take(&mut words),
                    },
                );
            }
        }
    }

    /// Hands spare frame buffers to the host that is about to run.
    fn top_up(&mut self, h: usize) {
        while let Some(f) = self.spare_frames.pop() {
            let left = match &mut self.hosts[h] {
                Host::Builtin(b) if b.transport.wants_frames() => b.transport.recycle(f),
                Host::Node(n) if n.nic.wants_frames() => n.nic.recycle(f),
                _ => Some(f),
            };
            if let Some(f) = left {
                self.spare_frames.push(f);
                return;
            }
        }
    }

    fn handle(&mut self, t: SimTime, ev: Ev) {
        match &ev {
            Ev::AtHost(h, _) | Ev::Transport(h, _) | Ev::Nic(h, _) | Ev::FromCore(h, _, _) => {
                self.top_up(*h)
            }
            Ev::CoreMessage { host, .. } => self.top_up(*host),
            Ev::Send(i) => self.top_up(self.specs[*i].from),
            Ev::Net(_) => {}
        }
        let mut net_actions = std::mem::take(&mut self.net_actions);
        let mut actions = std::mem::take(&mut self.actions);
        let host = match ev {
            Ev::Net(e) => {
                self.net.handle(e, t, &mut net_actions);
                None
            }
            Ev::AtHost(h, frame) => {
                let host = match &mut self.hosts[h] {
                    Host::Builtin(b) => {
                        let in_nic = b.mac.received(t, frame.len());
                        b.transport.packet_in(&frame, in_nic, &mut actions);
                        Some(h)
                    }
                    Host::Node(n) => {
                        let mut nic_actions = std::mem::take(&mut self.nic_actions);
                        n.nic.frame_in(&frame, t, &mut nic_actions);
                        self.node_actions(h, nic_actions, &mut net_actions);
                        None
                    }
                };
                if self.spare_frames.len() < SPARE_FRAMES {
                    self.spare_frames.push(frame);
                }
                host
            }
            Ev::Transport(h, e) => {
                if let Host::Builtin(b) = &mut self.hosts[h] {
                    b.transport.handle(e, t, &mut actions);
                }
                Some(h)
            }
            Ev::Nic(h, e) => {
                if let Host::Node(n) = &mut self.hosts[h] {
                    let mut nic_actions = std::mem::take(&mut self.nic_actions);
                    n.nic.handle(e, t, &mut nic_actions);
                    self.node_actions(h, nic_actions, &mut net_actions);
                }
                None
            }
            Ev::FromCore(h, core, cmd) => {
                if let Host::Node(n) = &mut self.hosts[h] {
                    let mut nic_actions = std::mem::take(&mut self.nic_actions);
                    n.nic.core_command(core, cmd, t, &mut nic_actions);
                    self.node_actions(h, nic_actions, &mut net_actions);
                }
                None
            }
            Ev::CoreMessage {
                host: h,
                core,
                context,
                words,
            } => {
                let header = words.first().copied().unwrap_or(0);
                let (ip, len) = ((header >> 32) as u32, (header & 0xffff) as u16);
                if ip == 0 {
                    // The boot message: the node is up.
                    self.booted.push((h, t));
                } else if let Host::Node(n) = &mut self.hosts[h] {
                    self.node_sends.push(NodeMessage {
                        host: h,
                        peer_ip: ip,
                        len,
                        at: t,
                    });
                    let mut nic_actions = std::mem::take(&mut self.nic_actions);
                    n.nic
                        .message_from_core(core, context, &words, t, &mut nic_actions);
                    self.node_actions(h, nic_actions, &mut net_actions);
                }
                None
            }
            Ev::Send(i) => {
                let m = self.specs[i];
                self.records[i].sent_at = t;
                let words = (m.len as usize).div_ceil(8);
                let payload = (0..words as u64)
                    .map(|w| if w == 0 { i as u64 } else { w })
                    .collect();
                let msg = OutMessage {
                    dst_ip: host_ip(m.to),
                    dst_port: 0,
                    src_port: 0,
                    len: m.len,
                    payload,
                    tag: i as u64,
                };
                if let Host::Builtin(b) = &mut self.hosts[m.from] {
                    b.transport.send_message(msg, t, &mut actions);
                }
                Some(m.from)
            }
        };
        if let Some(h) = host {
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
                        self.net.send(h, frame, ready, &mut net_actions);
                    }
                    TransportAction::Schedule { at, event } => {
                        self.queue.schedule(at, Ev::Transport(h, event))
                    }
                    TransportAction::Sent { .. } => {}
                    TransportAction::Failed { outcome, .. } => {
                        if let Some(r) = self.records.get_mut(outcome.tag as usize) {
                            r.failed = true;
                        }
                    }
                }
            }
        }
        for a in net_actions.drain(..) {
            match a {
                NetAction::Deliver {
                    host,
                    frame,
                    first_bit,
                } => self.queue.schedule(first_bit, Ev::AtHost(host, frame)),
                NetAction::Schedule { at, event } => self.queue.schedule(at, Ev::Net(event)),
            }
        }
        self.net_actions = net_actions;
        self.actions = actions;
    }

    /// What a node's NIC asked for.
    fn node_actions(
        &mut self,
        h: usize,
        mut actions: Vec<NicAction>,
        net_actions: &mut Vec<NetAction>,
    ) {
        for a in actions.drain(..) {
            match a {
                NicAction::Deliver {
                    core,
                    context,
                    words,
                    at,
                } => {
                    let header = words.first().copied().unwrap_or(0);
                    let (src, len) = ((header >> 32) as u32, (header & 0xffff) as u16);
                    self.node_deliveries.push(NodeMessage {
                        host: h,
                        peer_ip: src,
                        len,
                        at,
                    });
                    // A workload message from a built-in host to this node.
                    if len >= 8 && words.len() > 1 {
                        let from_builtin = nanopu_network::host_of_ip(src, self.hosts.len())
                            .is_some_and(|f| matches!(self.hosts[f], Host::Builtin(_)));
                        if from_builtin {
                            self.match_delivery(h, src, words[1], at);
                        }
                    }
                    let Host::Node(n) = &mut self.hosts[h] else {
                        continue;
                    };
                    let cycle = at.to_cycle_ceil(n.period);
                    if n.node.harts[core]
                        .net
                        .deliver(context, &words, cycle)
                        .is_err()
                    {
                        self.delivery_failures += 1;
                    }
                }
                NicAction::Transmit { frame, ready } => {
                    if self.record_transmits {
                        self.transmits[h].push(ready);
                    }
                    self.net.send(h, frame, ready, net_actions)
                }
                NicAction::Schedule { at, event } => self.queue.schedule(at, Ev::Nic(h, event)),
            }
        }
        self.nic_actions = actions;
    }

    fn delivered(&mut self, host: usize, msg: nanopu_transport::RxMessage, at: SimTime) {
        if msg.len < 8 {
            self.unmatched_deliveries.push((host, at));
            return;
        }
        self.match_delivery(host, msg.src_ip, msg.payload[0], at);
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
