//! Many hosts on a datacenter network (`nanopu_network`), each a NIC with
//! NanoTransport driven by a built-in traffic source and sink: the setting
//! of the NanoTransport incast and the nanoPU 80-to-1 incast.
//!
//! Wiring (all of it happens here):
//!
//! ```text
//!  traffic ── NanoTransport ── MAC ── host link ── switches ── … ── MAC ── NanoTransport ── sink
//! ```
//!
//! A built-in host has no cores: a message "from the core" enters the
//! transport at the time the workload names, and a delivered message is
//! recorded when the reassembly module hands it on. Messages carry their
//! index in the workload in their first payload word, so each delivery is
//! matched to its send (messages shorter than 8 bytes are only counted).

use crate::SystemError;
use nanopu_network::{host_ip, host_of_ip, NetAction, NetEvent, Network, NetworkConfig};
use nanopu_nic::mac::Mac;
use nanopu_nic::NicConfig;
use nanopu_sim::{EventQueue, SimDuration, SimTime};
use nanopu_transport::{
    NanoTransport, Occupancy, OutMessage, TransportAction, TransportEvent, TransportStats, TxLink,
};
use nanopu_wire::PcapWriter;
use serde::{Deserialize, Serialize};

/// A network of built-in hosts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    pub network: NetworkConfig,
    /// Every host's NIC: link rate, MTU, MAC latencies and `transport`
    /// (the protocol must be a NanoTransport program).
    pub nic: NicConfig,
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
}

enum Ev {
    Net(NetEvent),
    /// A frame's first bit reaches a host's NIC.
    AtHost(usize, Vec<u8>),
    Transport(usize, TransportEvent),
    Send(usize),
}

struct Host {
    transport: NanoTransport,
    mac: Mac,
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
}

impl Cluster {
    pub fn new(cfg: &ClusterConfig) -> Result<Cluster, SystemError> {
        cfg.nic
            .validate()
            .map_err(|e| SystemError::Config(format!("nic.{e}")))?;
        if !NanoTransport::is_program(cfg.nic.transport.protocol) {
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
        let mut hosts = Vec::with_capacity(n);
        for h in 0..net.hosts() {
            let transport = NanoTransport::new(
                &cfg.nic.transport,
                host_ip(h),
                cfg.nic.mtu_payload_bytes,
                link,
            )
            .map_err(|e| SystemError::Config(format!("nic.{e}")))?;
            hosts.push(Host {
                transport,
                mac: Mac {
                    link_gbps: cfg.network.link.gbps,
                    rx_latency: SimDuration::from_ps(cfg.nic.mac_serial_rx_ps),
                    tx_latency: SimDuration::from_ps(cfg.nic.mac_serial_tx_ps),
                },
            });
        }
        Ok(Cluster {
            net,
            hosts,
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
        })
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

    pub fn transport(&self, host: usize) -> &NanoTransport {
        &self.hosts[host].transport
    }

    /// Counters of every host's transport, summed.
    pub fn transport_stats(&self) -> TransportStats {
        let mut t = TransportStats::default();
        for h in &self.hosts {
            let s = &h.transport.stats;
            macro_rules! add {
                ($($f:ident),*) => { $( t.$f += s.$f; )* };
            }
            add!(
                rx_packets,
                rx_data,
                rx_trimmed,
                rx_control,
                rx_malformed,
                rx_not_for_us,
                rx_no_resources,
                rx_messages,
                rx_expired,
                tx_messages,
                tx_data_packets,
                tx_retransmissions,
                tx_control_packets,
                tx_timeouts,
                tx_completed,
                tx_failed,
                tx_waited,
                stale_events
            );
            t.tx_waiting_peak = t.tx_waiting_peak.max(s.tx_waiting_peak);
        }
        t
    }

    /// Resources still held by some host, if any (leak check).
    pub fn occupancy(&self) -> Option<(usize, Occupancy)> {
        self.hosts
            .iter()
            .enumerate()
            .map(|(i, h)| (i, h.transport.occupancy()))
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
        let max = self.hosts[m.from].transport.max_message_bytes();
        if m.len as u32 > max {
            return Err(SystemError::Config(format!(
                "a message of {} bytes: the transport carries at most {max}",
                m.len
            )));
        }
        let i = self.specs.len();
        self.specs.push(m);
        self.records.push(MessageRecord::default());
        self.queue
            .schedule(SimTime::ZERO + SimDuration::from_ns(m.at_ns), Ev::Send(i));
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
        while let Some((t, ev)) = self.queue.pop_until(until) {
            self.now = t;
            self.events += 1;
            self.handle(t, ev);
        }
        self.net.finish_capture().map_err(SystemError::Pcap)?;
        Ok(self.now)
    }

    fn handle(&mut self, t: SimTime, ev: Ev) {
        let mut net_actions = std::mem::take(&mut self.net_actions);
        let mut actions = std::mem::take(&mut self.actions);
        let host = match ev {
            Ev::Net(e) => {
                self.net.handle(e, t, &mut net_actions);
                None
            }
            Ev::AtHost(h, frame) => {
                let host = &mut self.hosts[h];
                let in_nic = host.mac.received(t, frame.len());
                host.transport.packet_in(&frame, in_nic, &mut actions);
                Some(h)
            }
            Ev::Transport(h, e) => {
                self.hosts[h].transport.handle(e, t, &mut actions);
                Some(h)
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
                };
                self.hosts[m.from]
                    .transport
                    .send_message(msg, t, &mut actions);
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
                        let ready = self.hosts[h].mac.transmit_ready(at);
                        self.net.send(h, frame, ready, &mut net_actions);
                    }
                    TransportAction::Schedule { at, event } => {
                        self.queue.schedule(at, Ev::Transport(h, event))
                    }
                    TransportAction::Sent { .. } => {}
                    TransportAction::Failed { outcome, .. } => {
                        // Which message: the workload's index is not in the
                        // outcome; find the oldest unfinished message of
                        // that sender to that receiver and length.
                        let to = host_of_ip(outcome.dst_ip, self.hosts.len());
                        if let Some(i) = (0..self.specs.len()).find(|&i| {
                            let s = self.specs[i];
                            s.from == h
                                && Some(s.to) == to
                                && s.len == outcome.len
                                && !self.records[i].failed
                                && self.records[i].sent_at <= t
                                && self.records[i].delivered_at.is_none()
                        }) {
                            self.records[i].failed = true;
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

    fn delivered(&mut self, host: usize, msg: nanopu_transport::RxMessage, at: SimTime) {
        if msg.len < 8 {
            self.unmatched_deliveries.push((host, at));
            return;
        }
        let i = msg.payload[0] as usize;
        match self.records.get_mut(i) {
            Some(r) if self.specs[i].to == host => {
                r.deliveries += 1;
                if r.delivered_at.is_none() {
                    r.delivered_at = Some(at);
                }
            }
            _ => self.unknown_deliveries += 1,
        }
    }
}
