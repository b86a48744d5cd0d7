//! The nanoPU NIC (nanoPU Fig. 1): the fast path from the wire to the cores
//! and back, as a timed state machine.
//!
//! Receive: MAC and serial I/O, the ingress pipeline (header checks and the
//! layer-4 port match), reassembly, the transport, the application's global
//! RX queue and JBSQ core selection, the core's local RX FIFO. Transmit:
//! the core's local TX FIFO, the global TX queue, the transport,
//! packetization, the egress pipeline, MAC and serial I/O.
//!
//! The NIC is driven through four inputs ([`NanoNic::frame_in`],
//! [`NanoNic::message_from_core`], [`NanoNic::core_command`],
//! [`NanoNic::handle`]) and answers with [`NicAction`]s; it owns no clock
//! and no queue of its own, so it can be tested alone. Stages are fixed
//! latencies (`NicConfig`) and fully pipelined: they add delay, never
//! queueing, except the global RX queues (JBSQ) and the link.

use crate::config::NicConfig;
use crate::core_selection::CoreSelector;
use crate::frames::{self, DropReason};
use crate::message::{Message, PacketInfo};
use crate::reassembly::{Reassembly, ReassemblyError};
use nanopu_sim::{SimDuration, SimTime};

/// Something the NIC needs done.
#[derive(Debug)]
pub enum NicAction {
    /// Put `words` (RX header first) into `core`'s RX FIFO for `context`,
    /// visible from `at`.
    Deliver {
        core: usize,
        context: u16,
        words: Vec<u64>,
        at: SimTime,
    },
    /// A frame is ready to be serialized onto the link at `ready`.
    Transmit { frame: Vec<u8>, ready: SimTime },
    /// Call [`NanoNic::handle`] with `event` at `at`.
    Schedule { at: SimTime, event: NicEvent },
}

/// The NIC's own timed events.
#[derive(Debug)]
pub enum NicEvent {
    /// A reassembled message leaves the transport for its global RX queue.
    MessageReady(Message),
}

/// A command from a core (`lniccmd` / `lnicucmd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreCommand {
    /// A thread of `context` was registered on the core.
    Registered { context: u16 },
    /// The core finished a message of `context`.
    MessageDone { context: u16 },
}

/// Counters of everything the NIC did not deliver, and of what it did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NicStats {
    pub rx_frames: u64,
    pub rx_messages: u64,
    pub tx_messages: u64,
    pub tx_frames: u64,
    /// Frames dropped by the ingress pipeline, by reason.
    pub drop_malformed: u64,
    pub drop_not_for_us: u64,
    /// Messages for a context no core has registered (the port match
    /// table misses): dropped and counted, never delivered.
    pub drop_unregistered_context: u64,
    pub drop_too_large: u64,
    pub drop_duplicate: u64,
    /// Messages a core sent that exceed the maximum message size.
    pub tx_too_large: u64,
}

/// The NIC of one nanoPU node.
pub struct NanoNic {
    pub cfg: NicConfig,
    /// This node's IPv4 address.
    pub ip: u32,
    reassembly: Reassembly,
    pub selector: CoreSelector,
    next_msg_id: u16,
    pub stats: NicStats,
}

impl NanoNic {
    pub fn new(cfg: NicConfig, ip: u32) -> NanoNic {
        NanoNic {
            selector: CoreSelector::new(cfg.jbsq_depth),
            cfg,
            ip,
            reassembly: Reassembly::default(),
            next_msg_id: 0,
            stats: NicStats::default(),
        }
    }

    fn ps(&self, ps: u64) -> SimDuration {
        SimDuration::from_ps(ps)
    }

    /// A frame whose first bit reaches the NIC at `first_bit`.
    pub fn frame_in(&mut self, frame: &[u8], first_bit: SimTime, out: &mut Vec<NicAction>) {
        self.stats.rx_frames += 1;
        // The MAC takes the whole frame (its FCS is at the end) before the
        // ingress pipeline sees it.
        let in_nic = first_bit
            + SimDuration::serialization(frame.len() as u64, self.cfg.link_gbps)
            + self.ps(self.cfg.mac_serial_rx_ps);
        let (info, payload) = match frames::decode(frame) {
            Ok(p) => p,
            Err(reason) => {
                self.count_drop(reason);
                return;
            }
        };
        // Ingress pipeline: address check and the layer-4 port match table.
        if info.dst_ip != self.ip {
            self.stats.drop_not_for_us += 1;
            return;
        }
        if info.msg_len as u32 > self.cfg.max_message_bytes {
            self.stats.drop_too_large += 1;
            return;
        }
        if !self.selector.has_context(info.dst_context) {
            self.stats.drop_unregistered_context += 1;
            return;
        }
        let after_ingress = in_nic + self.ps(self.cfg.ingress_ps);
        match self
            .reassembly
            .packet(info, payload, self.cfg.mtu_payload_bytes)
        {
            Ok(Some(msg)) => {
                let ready = after_ingress
                    + self.ps(self.cfg.reassembly_ps)
                    + self.ps(self.cfg.transport_rx_ps);
                out.push(NicAction::Schedule {
                    at: ready,
                    event: NicEvent::MessageReady(msg),
                });
            }
            Ok(None) => {}
            Err(ReassemblyError::Duplicate) => self.stats.drop_duplicate += 1,
            Err(ReassemblyError::Inconsistent) => self.stats.drop_malformed += 1,
        }
    }

    fn count_drop(&mut self, reason: DropReason) {
        match reason {
            DropReason::Malformed => self.stats.drop_malformed += 1,
            DropReason::NotForUs => self.stats.drop_not_for_us += 1,
        }
    }

    /// One of the NIC's own events, at `now`.
    pub fn handle(&mut self, event: NicEvent, now: SimTime, out: &mut Vec<NicAction>) {
        match event {
            NicEvent::MessageReady(msg) => {
                self.stats.rx_messages += 1;
                if let Some((core, msg)) = self.selector.message(msg) {
                    self.deliver(core, msg, now, out);
                }
            }
        }
    }

    fn deliver(&mut self, core: usize, msg: Message, now: SimTime, out: &mut Vec<NicAction>) {
        out.push(NicAction::Deliver {
            core,
            context: msg.local_context,
            words: msg.rx_words(),
            at: now + self.ps(self.cfg.core_dispatch_ps),
        });
    }

    /// A command from `core` at `at`.
    pub fn core_command(
        &mut self,
        core: usize,
        cmd: CoreCommand,
        at: SimTime,
        out: &mut Vec<NicAction>,
    ) {
        match cmd {
            CoreCommand::Registered { context } => self.selector.register(context, core),
            CoreCommand::MessageDone { context } => {
                if let Some((core, msg)) = self.selector.done(context, core) {
                    self.deliver(core, msg, at, out);
                }
            }
        }
    }

    /// A whole message `words` (TX header first) written by `context` on
    /// `core`, its last word at `at`.
    pub fn message_from_core(
        &mut self,
        _core: usize,
        context: u16,
        words: &[u64],
        at: SimTime,
        out: &mut Vec<NicAction>,
    ) {
        let msg = Message::from_tx_words(context, words);
        if msg.len as u32 > self.cfg.max_message_bytes {
            self.stats.tx_too_large += 1;
            return;
        }
        self.stats.tx_messages += 1;
        let id = self.next_msg_id;
        self.next_msg_id = self.next_msg_id.wrapping_add(1);
        let mtu = self.cfg.mtu_payload_bytes as usize;
        let bytes: Vec<u8> = msg.payload.iter().flat_map(|w| w.to_le_bytes()).collect();
        let bytes = &bytes[..(msg.len as usize).min(bytes.len())];
        let start = at
            + self.ps(self.cfg.tx_queue_ps)
            + self.ps(self.cfg.packetize_ps)
            + self.ps(self.cfg.egress_ps)
            + self.ps(self.cfg.mac_serial_tx_ps);
        let packets = self.cfg.packets_for(msg.len as u32) as usize;
        for p in 0..packets {
            let chunk = &bytes[(p * mtu).min(bytes.len())..((p + 1) * mtu).min(bytes.len())];
            let info = PacketInfo {
                src_ip: self.ip,
                dst_ip: msg.peer_ip,
                src_context: context,
                dst_context: msg.peer_context,
                msg_len: msg.len,
                pkt_offset: p as u16,
                tx_msg_id: id,
            };
            self.stats.tx_frames += 1;
            // Packets leave the pipeline back to back; the link spaces them.
            out.push(NicAction::Transmit {
                frame: frames::encode(&info, chunk),
                ready: start,
            });
        }
    }

    /// Messages waiting for more packets.
    pub fn reassembling(&self) -> usize {
        self.reassembly.in_progress()
    }
}
