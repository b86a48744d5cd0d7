//! One nanoPU node, its NIC, a full-duplex link and a client, wired
//! together and run in time order.
//!
//! Wiring (all of it happens here):
//!
//! ```text
//!  cores ── netRX/netTX FIFOs ── NanoNic ── link ── Client
//! ```
//!
//! Timed events (frames arriving, the NIC's own events, the client's
//! arrivals, the cores' commands and messages) go through one
//! [`EventQueue`]. The cores run in between, never more than the node's
//! quantum ahead of the next event, so a message the NIC delivers is seen
//! by the core at the right cycle: the cores' RX FIFOs hold each word with
//! the cycle from which it is visible.

use crate::client::{Client, ClientAction, LoadConfig, LoadReport};
use crate::link::LinkDirection;
use nanopu_core::netif::CoreToNic;
use nanopu_nic::{CoreCommand, NanoNic, NicAction, NicConfig, NicEvent, NicStats};
use nanopu_node::{Node, NodeError, RunEnd};
use nanopu_sim::{EventQueue, SimDuration, SimTime};
use nanopu_wire::PcapWriter;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The node's IPv4 address (10.0.0.1).
pub const NODE_IP: u32 = 0x0a00_0001;
/// The client's IPv4 address (10.0.0.2).
pub const CLIENT_IP: u32 = 0x0a00_0002;

/// Which NIC the node has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NicKind {
    /// The nanoPU fast path into the register file.
    #[default]
    NanoPu,
    /// A traditional DMA NIC (IceNIC-like, `nanopu_node::icenic`).
    Traditional,
}

/// Parameters of the system around the node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SystemConfig {
    /// Which NIC: `nano-pu` (default) or `traditional`.
    pub nic_kind: NicKind,
    pub nic: NicConfig,
    /// Propagation delay of the link between the client and the node.
    /// Response times are measured at the node's wire, so it only shifts
    /// when things happen. Default: 0 (the client is on the wire).
    pub link_propagation_ps: u64,
}

impl SystemConfig {
    /// Checks the NIC's parameters and the link's; the error names the key.
    pub fn validate(&self) -> Result<(), SystemError> {
        self.nic
            .validate()
            .map_err(|e| SystemError::Config(format!("system.nic.{e}")))?;
        SimDuration::try_from_ps(self.link_propagation_ps).map_err(|_| {
            SystemError::Config(format!(
                "system.link_propagation_ps = {}: too long for the simulated time base",
                self.link_propagation_ps
            ))
        })?;
        Ok(())
    }
}

/// Why a system run failed.
#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    #[error(transparent)]
    Node(#[from] NodeError),
    /// A node of a network failed (a guest fault, ...).
    #[error("host {host} (a nanoPU node): {source}")]
    Host { host: usize, source: NodeError },
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("cannot write the packet trace: {0}")]
    Pcap(std::io::Error),
    #[error(
        "the simulation stopped making progress: no event is pending and every core waits\n{0}"
    )]
    Stalled(String),
}

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

enum Event {
    /// A frame's first bit reaches the NIC.
    AtNic(Vec<u8>),
    /// A frame's last bit reaches the client.
    AtClient(Vec<u8>),
    Nic(NicEvent),
    ClientTick,
    ClientStart,
    ClientTimeout(u64),
    /// A command a core gave at this time.
    FromCore(usize, CoreCommand),
    /// A message a core finished writing at this time.
    CoreMessage {
        core: usize,
        context: u16,
        words: Vec<u64>,
    },
}

/// A node, its NIC, a link and (optionally) a client.
pub struct System {
    pub node: Node,
    kind: NicKind,
    pub nic: NanoNic,
    pub client: Option<Client>,
    to_nic: LinkDirection,
    to_client: LinkDirection,
    queue: EventQueue<Event>,
    period: SimDuration,
    actions: Vec<NicAction>,
    client_actions: Vec<ClientAction>,
    pcap: Option<PcapWriter<std::io::BufWriter<std::fs::File>>>,
    /// Messages the NIC could not put into a core's RX FIFO.
    pub delivery_failures: u64,
    /// Frames that reached the client side with no client attached.
    pub frames_to_nowhere: u64,
    /// When the program's boot message reached the wire, if it did.
    pub booted_at: Option<SimTime>,
}

impl System {
    /// Wires `node` to a NIC and, if `load` is given, a client.
    pub fn new(
        mut node: Node,
        cfg: &SystemConfig,
        load: Option<LoadConfig>,
    ) -> Result<System, SystemError> {
        cfg.nic
            .validate()
            .map_err(|e| SystemError::Config(format!("nic.{e}")))?;
        if let Some(l) = &load {
            l.validate(&cfg.nic)
                .map_err(|e| SystemError::Config(e.to_string()))?;
            if cfg.nic.transport.protocol != nanopu_transport::Protocol::None {
                let unscheduled = cfg.nic.transport.bdp_packets as u32 * cfg.nic.mtu_payload_bytes;
                if l.message_bytes as u32 > unscheduled {
                    return Err(SystemError::Config(format!(
                        "message_bytes = {}: with nic.transport.protocol = {}, the built-in client \
                         sends only what fits in the unscheduled window ({unscheduled} bytes); it \
                         answers no PULL or GRANT",
                        l.message_bytes,
                        cfg.nic.transport.protocol.name()
                    )));
                }
            }
        }
        node.nic_attached = true;
        let prop = SimDuration::from_ps(cfg.link_propagation_ps);
        let period = SimDuration::clock_period_mhz(node.cfg.core.clock_mhz as u64);
        let mut queue = EventQueue::new();
        let client = load.map(|l| {
            if let crate::client::Start::AtNs(ns) = l.start {
                queue.schedule(SimTime::ZERO + SimDuration::from_ns(ns), Event::ClientStart);
            }
            let mut c = Client::new(l, CLIENT_IP, NODE_IP, cfg.nic.mtu_payload_bytes, prop);
            c.set_core_mhz(node.cfg.core.clock_mhz);
            // A transport in the node's NIC wants its packets acknowledged.
            c.acknowledge = cfg.nic.transport.protocol != nanopu_transport::Protocol::None;
            c
        });
        if cfg.nic_kind == NicKind::Traditional && node.icenic().is_none() {
            return Err(SystemError::Config(
                "nic_kind = traditional needs the node's IceNIC (node.icenic.enabled = true)"
                    .into(),
            ));
        }
        Ok(System {
            kind: cfg.nic_kind,
            node,
            nic: NanoNic::new(cfg.nic.clone(), NODE_IP),
            client,
            to_nic: LinkDirection::new(cfg.nic.link_gbps, prop),
            to_client: LinkDirection::new(cfg.nic.link_gbps, prop),
            queue,
            period,
            actions: Vec::new(),
            client_actions: Vec::new(),
            pcap: None,
            delivery_failures: 0,
            frames_to_nowhere: 0,
            booted_at: None,
        })
    }

    /// Writes every frame on the link (both directions, at the time its
    /// first bit leaves) to a pcap file.
    pub fn capture(&mut self, path: &Path) -> Result<(), SystemError> {
        let f = std::fs::File::create(path).map_err(SystemError::Pcap)?;
        self.pcap = Some(PcapWriter::new(std::io::BufWriter::new(f)).map_err(SystemError::Pcap)?);
        Ok(())
    }

    fn time_of(&self, cycle: u64) -> SimTime {
        SimTime::from_cycle(cycle, self.period)
    }

    /// Runs until the client is done, the program exits, or `until`.
    pub fn run(&mut self, until: SimTime) -> Result<SystemEnd, SystemError> {
        let quantum = self.node.cfg.quantum_cycles;
        loop {
            if self.client.as_ref().is_some_and(|c| c.done()) {
                self.flush_pcap()?;
                return Ok(SystemEnd::ClientDone);
            }
            if let Some((code, _)) = self.node.exit {
                self.flush_pcap()?;
                return Ok(SystemEnd::Exited(code));
            }
            let next_event = self.queue.peek_time().unwrap_or(SimTime::MAX);
            if next_event > until && self.node_idle_until(until) {
                self.flush_pcap()?;
                return Ok(SystemEnd::TimeLimit);
            }
            // The cores run up to the next event (it may deliver to them), and
            // at most a quantum past the earliest core that can still send.
            let mut limit = next_event.min(until).to_cycle_ceil(self.period);
            if let Some(h) = self.node.output_horizon() {
                limit = limit.min(h.saturating_add(quantum));
            }
            let end = match self.node.run(limit) {
                Ok(end) => end,
                Err(NodeError::Deadlock(waits)) if self.queue.is_empty() => {
                    return Err(SystemError::Stalled(self.describe_stall(waits)));
                }
                Err(e) => return Err(e.into()),
            };
            if let RunEnd::Exited(_) = end {
                continue;
            }
            self.drain_cores();
            // Events before every core's position can no longer be affected
            // by what the cores send: handle them.
            let safe = self.node.output_horizon().map_or(limit, |h| h.min(limit));
            let now = self.time_of(safe);
            while let Some((t, ev)) = self.queue.pop_until(now) {
                self.handle(t, ev);
            }
        }
    }

    /// With no event before `until`: lets the cores run to `until`; true if
    /// nothing remains to do before it.
    fn node_idle_until(&mut self, until: SimTime) -> bool {
        let until_cycle = until.to_cycle_ceil(self.period);
        self.node.lead_cycle().is_none_or(|c| c >= until_cycle)
            && self.node.next_wake_cycle().is_none_or(|c| c >= until_cycle)
    }

    fn describe_stall(&self, waits: String) -> String {
        let mut s = waits;
        if let Some(c) = &self.client {
            s.push_str(&format!(
                "\n  client: {} requests sent, {} replies received{}",
                c.report.sent,
                c.report.received,
                if c.started() {
                    ""
                } else {
                    " (never started: waiting for the program's boot message)"
                }
            ));
        }
        s
    }

    /// Takes the cores' commands and finished messages into the event queue.
    fn drain_cores(&mut self) {
        while let Some((frame, ready)) = self.node.icenic_take_tx() {
            let ready = SimTime::from_cycle(ready, self.period)
                + SimDuration::from_ps(self.nic.cfg.mac_serial_tx_ps);
            let dep = self.to_client.send(frame.len(), ready);
            self.record(dep.first_bit_out, &frame);
            let last_in = dep.first_bit_in + (dep.last_bit_out - dep.first_bit_out);
            self.queue.schedule(last_in, Event::AtClient(frame));
        }
        let mut words = Vec::new();
        for (core, hart) in self.node.harts.iter_mut().enumerate() {
            while let Some(cmd) = hart.net.outbox.pop_front() {
                let (c, cycle) = match cmd {
                    CoreToNic::Registered { context, cycle, .. } => {
                        (CoreCommand::Registered { context }, cycle)
                    }
                    CoreToNic::MessageDone { context, cycle } => {
                        (CoreCommand::MessageDone { context }, cycle)
                    }
                };
                self.queue.schedule(
                    SimTime::from_cycle(cycle, self.period),
                    Event::FromCore(core, c),
                );
            }
            while let Some(m) = hart.net.take_tx_message(&mut words) {
                self.queue.schedule(
                    SimTime::from_cycle(m.cycle, self.period),
                    Event::CoreMessage {
                        core,
                        context: m.context,
                        words: std::mem::take(&mut words),
                    },
                );
            }
        }
    }

    fn handle(&mut self, t: SimTime, ev: Event) {
        let mut actions = std::mem::take(&mut self.actions);
        let mut client_actions = std::mem::take(&mut self.client_actions);
        match ev {
            Event::AtNic(frame) => match self.kind {
                NicKind::NanoPu => self.nic.frame_in(&frame, t, &mut actions),
                NicKind::Traditional => {
                    // The same MAC and serial I/O, then the DMA NIC.
                    let c = &self.nic.cfg;
                    let in_nic = t
                        + SimDuration::serialization(frame.len() as u64, c.link_gbps)
                        + SimDuration::from_ps(c.mac_serial_rx_ps);
                    self.node
                        .icenic_frame_in(&frame, in_nic.to_cycle_ceil(self.period));
                }
            },
            Event::AtClient(frame) => match self.client.as_mut() {
                Some(c) => {
                    if c.frame_in(&frame, t, &mut client_actions) && self.booted_at.is_none() {
                        self.booted_at = Some(t);
                    }
                }
                None => self.frames_to_nowhere += 1,
            },
            Event::Nic(e) => self.nic.handle(e, t, &mut actions),
            Event::ClientTick => {
                if let Some(c) = self.client.as_mut() {
                    c.tick(t, &mut client_actions);
                }
            }
            Event::ClientTimeout(key) => {
                if let Some(c) = self.client.as_mut() {
                    c.timeout(key, t, &mut client_actions);
                }
            }
            Event::ClientStart => {
                if let Some(c) = self.client.as_mut() {
                    c.start(t, &mut client_actions);
                }
            }
            Event::FromCore(core, cmd) => self.nic.core_command(core, cmd, t, &mut actions),
            Event::CoreMessage {
                core,
                context,
                words,
            } => self
                .nic
                .message_from_core(core, context, &words, t, &mut actions),
        }
        for a in actions.drain(..) {
            match a {
                NicAction::Deliver {
                    core,
                    context,
                    words,
                    at,
                } => {
                    let cycle = at.to_cycle_ceil(self.period);
                    if self.node.harts[core]
                        .net
                        .deliver(context, &words, cycle)
                        .is_err()
                    {
                        self.delivery_failures += 1;
                    }
                }
                NicAction::Transmit { frame, ready } => {
                    let dep = self.to_client.send(frame.len(), ready);
                    self.record(dep.first_bit_out, &frame);
                    let last_in = dep.first_bit_in + (dep.last_bit_out - dep.first_bit_out);
                    self.queue.schedule(last_in, Event::AtClient(frame));
                }
                NicAction::Schedule { at, event } => self.queue.schedule(at, Event::Nic(event)),
            }
        }
        for a in client_actions.drain(..) {
            match a {
                ClientAction::Send { frame, ready } => {
                    let dep = self.to_nic.send(frame.len(), ready);
                    self.record(dep.first_bit_out, &frame);
                    self.queue.schedule(dep.first_bit_in, Event::AtNic(frame));
                }
                ClientAction::Wake { at } => self.queue.schedule(at, Event::ClientTick),
                ClientAction::Timeout { at, key } => {
                    self.queue.schedule(at, Event::ClientTimeout(key))
                }
            }
        }
        self.actions = actions;
        self.client_actions = client_actions;
    }

    fn record(&mut self, t: SimTime, frame: &[u8]) {
        if let Some(p) = self.pcap.as_mut() {
            if p.write_packet(t.fs(), frame).is_err() {
                // Reported when the run ends (flush fails the same way).
                self.pcap = None;
            }
        }
    }

    fn flush_pcap(&mut self) -> Result<(), SystemError> {
        if let Some(p) = self.pcap.as_mut() {
            p.flush().map_err(SystemError::Pcap)?;
        }
        Ok(())
    }

    /// The client's measurements (percentiles filled in).
    pub fn load_report(&mut self) -> Option<LoadReport> {
        self.client.as_mut().map(|c| c.finish().clone())
    }

    pub fn nic_stats(&self) -> &NicStats {
        &self.nic.stats
    }

    /// Events scheduled in the past (a causality slip; should stay zero).
    pub fn late_events(&self) -> u64 {
        self.queue.late
    }
}
