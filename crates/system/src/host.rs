//! The hosts on a network, each behind one narrow interface that the
//! co-simulation loop ([`crate::cluster`]) drives: frames in, frames out
//! (through the network), its own timed events, and for a node, "run your
//! cores up to this time" and "when could you next send something".
//!
//! - [`NodeHost`]: a node, its NIC (any [`crate::nics`] design) and its clock.
//! - [`BuiltinHost`]: a NIC's transport driven by a workload, no cores.
//! - [`ClientHost`]: the built-in load generator ([`crate::client`]).

use crate::client::{Client, ClientAction};
use crate::nics::{Cores, NicIo, NodeNic, NodeNicEvent};
use nanopu_nics::mac::Mac;
use nanopu_node::{Node, NodeError};
use nanopu_sim::{Reserved, SimDuration, SimTime};
use nanopu_transport::NanoTransport;
use std::collections::VecDeque;

/// A node, its NIC and its clock.
pub struct NodeHost {
    pub node: Node,
    pub nic: NodeNic,
    /// The cores' clock period.
    pub period: SimDuration,
    pub(crate) io: NicIo<NodeNicEvent>,
    /// The cores wait for something only the network can bring.
    pub deadlocked: bool,
}

impl NodeHost {
    pub fn new(node: Node, nic: NodeNic) -> NodeHost {
        let period = SimDuration::clock_period_mhz(node.cfg().core.clock_mhz as u64);
        NodeHost {
            node,
            nic,
            period,
            io: NicIo::default(),
            deadlocked: false,
        }
    }

    fn cores(&mut self) -> (Cores<'_>, &mut NodeNic, &mut NicIo<NodeNicEvent>) {
        (
            Cores {
                node: &mut self.node,
                period: self.period,
            },
            &mut self.nic,
            &mut self.io,
        )
    }

    /// Runs the cores up to `limit` (unless the program has exited), then
    /// lets the NIC take what they sent.
    pub fn advance(&mut self, limit: SimTime) -> Result<(), NodeError> {
        if self.node.exit().is_some() {
            return Ok(());
        }
        match self.node.run(limit.to_cycle_ceil(self.period)) {
            Ok(_) => self.deadlocked = false,
            // Every core waits for a message: the network may bring one.
            Err(NodeError::Deadlock(_)) => self.deadlocked = true,
            Err(e) => return Err(e),
        }
        let (mut cores, nic, io) = self.cores();
        nic.take_from_cores(&mut cores, io);
        Ok(())
    }

    /// The earliest time the cores could still send something, if they can.
    pub fn output_horizon(&self) -> Option<SimTime> {
        if self.node.exit().is_some() {
            return None;
        }
        self.node
            .output_horizon()
            .map(|c| SimTime::from_cycle(c, self.period))
    }

    /// How far the node's clock has gone: its hart furthest ahead.
    pub fn clock(&self) -> SimTime {
        SimTime::from_cycle(self.node.latest_cycle(), self.period)
    }

    /// Whether the cores can still do something before `until`.
    pub fn can_run(&self, until: SimTime) -> bool {
        if self.node.exit().is_some() {
            return false;
        }
        let until = until.to_cycle_ceil(self.period);
        self.node.lead_cycle().is_some_and(|c| c < until)
            || self.node.next_wake_cycle().is_some_and(|c| c < until)
    }

    pub fn frame_in(&mut self, frame: &[u8], first_bit: SimTime) {
        let (mut cores, nic, io) = self.cores();
        nic.frame_in(frame, first_bit, &mut cores, io);
    }

    pub fn handle(&mut self, event: NodeNicEvent, now: SimTime) {
        let (mut cores, nic, io) = self.cores();
        nic.handle(event, now, &mut cores, io);
    }

    /// The NIC's counters, with the traditional NIC's device counters.
    pub fn nic_stats(&self) -> serde_json::Value {
        let mut v = self.nic.stats();
        if let Some(dev) = self.node.icenic() {
            v["device"] = serde_json::to_value(&dev.stats).expect("counters serialize");
        }
        v
    }
}

/// A built-in host: a NIC's transport and MAC, no cores.
pub struct BuiltinHost {
    pub transport: NanoTransport,
    pub mac: Mac,
}

/// The built-in load generator on a host of its own.
pub struct ClientHost {
    /// `None`: a host that only counts what reaches it.
    pub client: Option<Client>,
    /// The host it sends to.
    pub server: usize,
    /// More hosts an application sends to (`[[clients]] servers`): a client
    /// that starts at its servers' boot waits for all of them.
    pub more_servers: Vec<usize>,
    /// Its link's rate (frames are handed to it at their last bit).
    pub link_gbps: u64,
    /// When the server's boot message reached it, if it did.
    pub booted_at: Option<SimTime>,
    /// Frames that reached a host with no client.
    pub frames_to_nowhere: u64,
    pub(crate) actions: Vec<ClientAction>,
    /// Pending timeouts `(at, place in the event order, key)`, earliest
    /// first: only the first is in the cluster's event queue (one event
    /// per client, not one per outstanding request).
    pub(crate) timeouts: VecDeque<(SimTime, Reserved, u64)>,
}

impl ClientHost {
    pub fn new(client: Option<Client>, server: usize, link_gbps: u64) -> ClientHost {
        ClientHost {
            client,
            server,
            more_servers: Vec::new(),
            link_gbps,
            booted_at: None,
            frames_to_nowhere: 0,
            actions: Vec::new(),
            timeouts: VecDeque::new(),
        }
    }

    /// Whether every request has been answered (true with no client).
    pub fn done(&self) -> bool {
        self.client.as_ref().is_none_or(|c| c.done())
    }

    /// A frame whose last bit reached the client at `last_bit`.
    pub fn frame_in(&mut self, frame: &[u8], last_bit: SimTime) {
        let Some(c) = self.client.as_mut() else {
            self.frames_to_nowhere += 1;
            return;
        };
        if c.frame_in(frame, last_bit, &mut self.actions) && self.booted_at.is_none() {
            self.booted_at = Some(last_bit);
        }
    }
}

/// A host of the network.
pub enum Host {
    Node(Box<NodeHost>),
    Builtin(Box<BuiltinHost>),
    Client(Box<ClientHost>),
}

impl Host {
    pub fn as_node(&self) -> Option<&NodeHost> {
        match self {
            Host::Node(n) => Some(n),
            _ => None,
        }
    }

    pub fn as_node_mut(&mut self) -> Option<&mut NodeHost> {
        match self {
            Host::Node(n) => Some(n),
            _ => None,
        }
    }

    pub fn as_client(&self) -> Option<&ClientHost> {
        match self {
            Host::Client(c) => Some(c),
            _ => None,
        }
    }

    /// The host's NanoTransport, if it runs one.
    pub fn transport(&self) -> Option<&NanoTransport> {
        match self {
            Host::Builtin(b) => Some(&b.transport),
            Host::Node(n) => n.nic.transport(),
            Host::Client(_) => None,
        }
    }

    /// Takes a consumed frame buffer for reuse; returns it if not taken.
    pub(crate) fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        match self {
            Host::Builtin(b) if b.transport.wants_frames() => b.transport.recycle(frame),
            Host::Node(n) if n.nic.wants_frames() => n.nic.recycle(frame),
            Host::Client(c) => match c.client.as_mut() {
                Some(client) => client.recycle(frame),
                None => Some(frame),
            },
            _ => Some(frame),
        }
    }
}
