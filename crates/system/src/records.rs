//! What a co-simulation run records: the messages of a built-in hosts'
//! workload ([`MessageSpec`]) and what happened to each ([`MessageRecord`]),
//! and the messages nodes' cores sent and received ([`NodeMessage`]).

use nanopu_network::host_ip;
use nanopu_sim::SimTime;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

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

/// What a message carrying a workload index that reached a host is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Matched {
    /// Workload message `i` itself, at its receiver.
    Delivered(usize),
    /// The reply to workload message `i`, at its sender.
    Reply(usize),
    /// Neither: an index the workload does not have, or a message between
    /// other hosts.
    Unknown,
}

/// A message carrying workload index `index` reached `host` from `src`:
/// the message itself, or the reply to it.
pub(crate) fn match_delivery(specs: &[MessageSpec], host: usize, src: u32, index: u64) -> Matched {
    let i = index as usize;
    let Some(spec) = specs.get(i) else {
        return Matched::Unknown;
    };
    if spec.to == host && src == host_ip(spec.from) {
        Matched::Delivered(i)
    } else if spec.from == host && src == host_ip(spec.to) {
        Matched::Reply(i)
    } else {
        Matched::Unknown
    }
}

impl MessageRecord {
    /// The message reached its receiver at `at`.
    pub(crate) fn delivered(&mut self, at: SimTime) {
        self.deliveries += 1;
        self.delivered_at.get_or_insert(at);
    }

    /// Its reply reached its sender at `at`.
    pub(crate) fn replied(&mut self, at: SimTime) {
        self.reply_at.get_or_insert(at);
    }
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
pub(crate) fn keep_latest(log: &mut VecDeque<NodeMessage>, m: NodeMessage) {
    if log.len() == NODE_MESSAGES_KEPT {
        log.pop_front();
    }
    log.push_back(m);
}
