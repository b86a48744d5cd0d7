//! Copies of a node: for running several experiments from one expensive
//! start (a store's preload). A whole copy ([`Node::fork`]) writes every
//! page the node touched; a frozen node's copies ([`FrozenNode::fork`])
//! share its pages until they write them.

use super::{Node, NodeError};
use crate::memory::DramCopy;

impl Node {
    /// A copy of the node in its current state (memory, caches, harts,
    /// devices), which runs on exactly as this one would: for running
    /// several experiments from one expensive start (a store's preload).
    /// The copy's DRAM holds the pages this node touched. Refused while an
    /// observer or an HTIF output sink is attached (neither can be copied,
    /// and leaving one behind would silently change what the copy reports).
    pub fn fork(&self) -> Result<Node, NodeError> {
        self.fork_with(DramCopy::Whole)
    }

    /// [`Node::fork`] into `old` (an earlier copy of this node, dropped):
    /// its DRAM pages are reused and only those that changed are written.
    /// For copying a running node again and again (a boot seed kept at
    /// every pause): each copy costs a read of the memory, not its
    /// allocation.
    pub fn fork_into(&self, old: Node) -> Result<Node, NodeError> {
        self.fork_with(DramCopy::Into(old.bus.into_dram()))
    }

    /// This node, frozen: it runs no more, and copies of it
    /// ([`FrozenNode::fork`]) share its memory until they write it.
    pub fn freeze(self) -> FrozenNode {
        FrozenNode(self)
    }

    fn fork_with(&self, how: DramCopy) -> Result<Node, NodeError> {
        if self.observer.is_some() {
            return Err(NodeError::Fork(
                "an observer (trace, commit log) is attached",
            ));
        }
        if self.bus.devices().htif().is_some_and(|h| h.sink.is_some()) {
            return Err(NodeError::Fork("its HTIF output goes to a sink"));
        }
        let bus = self.bus.fork(how).map_err(|cause| NodeError::Memory {
            bytes: self.bus.dram().size(),
            cause,
        })?;
        // Every field, so that a new one cannot be forgotten here.
        Ok(Node {
            cfg: self.cfg.clone(),
            harts: self.harts.clone(),
            states: self.states.clone(),
            bus,
            decode_cache: self.decode_cache.clone(),
            program: self.program.clone(),
            exit: self.exit,
            observer: None,
            observer_stop: self.observer_stop,
            pause_at: None,
            slice_in_progress: self.slice_in_progress,
            sent: self.sent.clone(),
            nic_attached: self.nic_attached,
            stop_request: self.stop_request.clone(),
            watches: self.watches.clone(),
            watched_stale: self.watched_stale,
            sleeping: self.sleeping,
            wake_memo: self.wake_memo.clone(),
            memo_valid: self.memo_valid,
            memo_reads_memory: self.memo_reads_memory,
            memo_recheck_at: self.memo_recheck_at.clone(),
            memo_device_accesses: self.memo_device_accesses,
            owed_check: self.owed_check,
            may_have_output: self.may_have_output,
            tx_words: Vec::new(),
            steer_victims: Vec::new(),
            memo_gen: self.memo_gen,
            wake_cache: self.wake_cache.clone(),
            reference: self.reference,
        })
    }
}

/// A node that runs no more, kept to be copied: its copies share its DRAM
/// pages copy-on-write, so a copy of a node holding a 1 GB store costs
/// what the copy writes. Nothing can change it (no `&mut` access), which
/// is what makes sharing its pages safe.
pub struct FrozenNode(Node);

impl FrozenNode {
    /// A copy that runs on exactly as the node would have when frozen (as
    /// [`Node::fork`], without copying its memory). The copy cannot itself
    /// be copied ([`Node::fork`] refuses with an error).
    pub fn fork(&self) -> Result<Node, NodeError> {
        self.0.fork_with(DramCopy::OnWrite)
    }

    /// The frozen node, to look at.
    pub fn node(&self) -> &Node {
        &self.0
    }
}
