//! Homa (Montazeri et al., SIGCOMM'18) as NanoTransport Algorithm 5, and
//! Homa-Tr (§4.4: Homa plus NDP's trimming and NACKs).
//!
//! Receiver: a message's first BDP of packets is unscheduled; the rest is
//! granted in SRPT order through the priority scheduler extern (rank =
//! packets still missing), to at most `homa_overcommit` messages at once,
//! keeping one BDP outstanding for each. A GRANT carries the credit and
//! the priority the sender must use. Sender: GRANTs update a dual-ported
//! memory of message priorities that the egress pipeline reads into the
//! IPv4 ToS of every data packet.
//!
//! Priorities (8 levels, higher served first; the paper does not give its
//! assignment): control packets 7, unscheduled data 6, granted data 5 for
//! the best-ranked message down to 0.
//!
//! Differences from the pseudocode, for reliability: every data packet is
//! acknowledged (Algorithm 5 leaves the `DeliveredEvent` trigger to "any
//! control packet"; the packetization module needs acknowledgements to
//! free a message), duplicates too, and a duplicate of a scheduled message
//! is answered with its current grant (a lost GRANT must not stall it).
//! Plain Homa resends nothing on a trimmed packet (it expects drops and
//! relies on the sender's timeout); Homa-Tr NACKs them and the sender
//! resends at once. A receiver with no room for a new message, and plain
//! Homa's receiver of a trimmed packet, answer with a GRANT of nothing
//! (Homa's BUSY): the sender's credit and priorities stay as they were,
//! but it knows its receiver is alive and does not give up (issue #55).

use super::{reply_to, CONTROL_PRIORITY};
use crate::config::{StageLatencies, HOMA_LATENCIES};
use crate::metadata::{
    EgressHeaders, EgressMetadata, GetRxMsgInfoReq, IngressMetadata, PacketHeaders, RxMsgId,
};
use crate::program::{
    CreditTx, IngressExterns, IngressVerdict, PacketGenerator, ProgramParams, Refusal,
    TransportProgram,
};
use crate::scheduler::PriorityScheduler;
use crate::state::{DualPortMemory, RawOp, Register};
use nanopu_wire::Flags;

/// Priority of unscheduled data packets.
pub const UNSCHEDULED_PRIORITY: u8 = 6;
/// Priority of the best-ranked granted message; the next ones get less.
pub const SCHEDULED_PRIORITY: u8 = 5;

/// What the grant scheduler keeps per scheduled message.
#[derive(Clone, Copy, Debug)]
struct Scheduled {
    /// The reply address of the message's sender.
    reply: PacketHeaders,
    packets: u16,
}

/// The Homa (or Homa-Tr) program's state.
pub struct Homa {
    trimming: bool,
    /// Packets of a message sent unscheduled (one BDP).
    unscheduled: u16,
    /// `msgState[rx_msg_id].grantedIdx`: credit granted so far.
    granted: Register<u16>,
    /// `msgState[rx_msg_id].remaining_size`, in packets.
    remaining: Register<u16>,
    /// Messages that need grants, ranked by remaining packets.
    grant_scheduler: PriorityScheduler<Scheduled>,
    /// `msgPrio[tx_msg_id]`: shared by the ingress (GRANTs write it) and
    /// egress (data packets read it) pipelines.
    msg_prio: DualPortMemory<u8>,
    best: Vec<u32>,
}

impl Homa {
    pub fn new(params: &ProgramParams, trimming: bool) -> Homa {
        Homa {
            trimming,
            unscheduled: params.bdp_packets,
            granted: Register::new(params.max_rx_messages as usize),
            remaining: Register::new(params.max_rx_messages as usize),
            grant_scheduler: PriorityScheduler::new(
                params.scheduler_slots as usize,
                params.max_rx_messages as usize,
            ),
            msg_prio: DualPortMemory::new(1 << 16),
            best: Vec::with_capacity(params.homa_overcommit as usize),
        }
    }

    fn data(&mut self, hdr: &PacketHeaders, x: &mut IngressExterns<'_>) -> IngressVerdict {
        let trimmed = hdr.flags.contains(Flags::CHOP);
        let info = x.get_rx_msg_info(GetRxMsgInfoReq {
            mark_received: !trimmed,
            src_ip: hdr.src_ip,
            src_port: hdr.src_port,
            tx_msg_id: hdr.tx_msg_id,
            msg_len: hdr.msg_len,
            pkt_offset: hdr.pkt_offset,
        });
        if info.fail {
            if info.inconsistent {
                return IngressVerdict::Drop;
            }
            // No id or buffer for a new message: a GRANT of nothing (Homa's
            // BUSY: alive, no room yet) keeps the sender from giving up; it
            // sends again at its next timeout (issue #55).
            x.ctrl_pkt_event(Self::busy(hdr));
            return IngressVerdict::Refuse(Refusal::NoResources);
        }
        let id = info.rx_msg_id;
        let bdp = x.params().bdp_packets;
        let new_data = !trimmed && info.is_new_pkt;
        if info.is_new_msg || new_data {
            // ifElseRAW on the message state: a new message (even one whose
            // first packet arrived trimmed) starts with all packets missing.
            let remaining = self.remaining.if_else_raw(
                id as usize,
                info.is_new_msg,
                RawOp::Set(info.packets - new_data as u16),
                RawOp::Add(u16::MAX), // -1, wrapping
            );
            if info.is_new_msg {
                let unscheduled = info.packets.min(bdp);
                self.granted.write(id as usize, unscheduled);
                if info.packets > unscheduled {
                    // Scheduler full: the message keeps only its unscheduled
                    // packets granted until the sender's timeout probes again.
                    let _ = self.grant_scheduler.insert(
                        id as u32,
                        remaining as u32,
                        Scheduled {
                            reply: *hdr,
                            packets: info.packets,
                        },
                    );
                }
            } else {
                self.grant_scheduler.set_rank(id as u32, remaining as u32);
            }
        }
        if trimmed {
            if self.trimming {
                // Homa-Tr: NACK, the sender resends at once (within its
                // credit).
                x.ctrl_pkt_event(reply_to(hdr, Flags::NACK, 0));
            } else {
                // Plain Homa does not resend on a trimmed header (it
                // recovers by the sender's timeout), but the header says
                // the sender is trying (and, read-only, kept the message's
                // state alive): a GRANT of nothing tells it the receiver
                // is alive, so that it waits for its timeout instead of
                // giving up.
                x.ctrl_pkt_event(Self::busy(hdr));
            }
            return IngressVerdict::Drop;
        }
        x.ctrl_pkt_event(reply_to(hdr, Flags::ACK, 0));
        if !info.is_new_pkt {
            let granted = self.granted.read(id as usize);
            if self.grant_scheduler.get(id as u32).is_some() || granted > bdp {
                let mut g = reply_to(hdr, Flags::GRANT, granted.min(info.packets));
                g.rank = SCHEDULED_PRIORITY;
                x.ctrl_pkt_event(g);
            }
            return IngressVerdict::Drop;
        }
        if info.is_last_pkt {
            self.grant_scheduler.remove(id as u32);
        }
        self.grant(x, bdp);
        IngressVerdict::Reassemble(IngressMetadata {
            remote_ip: hdr.src_ip,
            remote_port: hdr.src_port,
            msg_len: hdr.msg_len,
            pkt_offset: hdr.pkt_offset,
            local_port: hdr.dst_port,
            rx_msg_id: id,
            tx_msg_id: hdr.tx_msg_id,
            is_last_pkt: info.is_last_pkt,
        })
    }

    /// A GRANT of nothing answering `hdr` (Homa's BUSY): the receiver is
    /// alive; the sender's credit and priorities are left alone.
    fn busy(hdr: &PacketHeaders) -> EgressMetadata {
        reply_to(hdr, Flags::GRANT, 0)
    }

    /// `grantScheduler.apply()`: among the best `overcommit` messages, the
    /// first with less than one BDP outstanding is granted one more BDP.
    fn grant(&mut self, x: &mut IngressExterns<'_>, bdp: u16) {
        let overcommit = x.params().homa_overcommit as usize;
        let mut best = std::mem::take(&mut self.best);
        self.grant_scheduler
            .best(overcommit, |_, _| true, &mut best);
        for (position, &key) in best.iter().enumerate() {
            let s = *self.grant_scheduler.get(key).expect("just listed");
            let granted = self.granted.read(key as usize);
            let received = s.packets - self.remaining.read(key as usize);
            if granted.saturating_sub(received) >= bdp {
                continue;
            }
            let new_grant = (received + bdp).min(s.packets);
            // RAW: grantedIdx = grant_offset.
            self.granted.write(key as usize, new_grant);
            let prio = SCHEDULED_PRIORITY.saturating_sub(position as u8);
            // A GRANT's rank is the priority it gives the sender's data
            // (the GRANT itself travels at control priority, see `egress`).
            let mut g = reply_to(&s.reply, Flags::GRANT, new_grant);
            g.rank = prio;
            x.ctrl_pkt_event(g);
            if new_grant >= s.packets {
                self.grant_scheduler.remove(key);
            }
            break;
        }
        self.best = best;
    }
}

impl TransportProgram for Homa {
    fn name(&self) -> &'static str {
        if self.trimming {
            "homa-tr"
        } else {
            "homa"
        }
    }

    fn latencies(&self) -> StageLatencies {
        HOMA_LATENCIES
    }

    fn ingress(&mut self, hdr: &PacketHeaders, x: &mut IngressExterns<'_>) -> IngressVerdict {
        if hdr.flags.contains(Flags::DATA) {
            return self.data(hdr, x);
        }
        if hdr.flags.contains(Flags::ACK) {
            x.delivered_event(hdr.tx_msg_id, 1u64 << (hdr.pkt_offset & 63));
        }
        if hdr.flags.contains(Flags::GRANT) {
            // RW on the dual-ported priority memory (a GRANT of nothing, a
            // BUSY, sets no priority).
            if hdr.grant_offset > 0 {
                self.msg_prio.write(hdr.tx_msg_id as usize, hdr.priority);
            }
            x.credit_tx_event(CreditTx {
                tx_msg_id: hdr.tx_msg_id,
                rtx_bitmap: 0,
                new_credit: Some(hdr.grant_offset),
                allow_tx: true,
            });
        }
        if hdr.flags.contains(Flags::NACK) {
            x.credit_tx_event(CreditTx {
                tx_msg_id: hdr.tx_msg_id,
                rtx_bitmap: 1u64 << (hdr.pkt_offset & 63),
                new_credit: None,
                allow_tx: true,
            });
        }
        IngressVerdict::Drop
    }

    fn generate(&mut self, ev: &EgressMetadata, g: &mut PacketGenerator<'_>) {
        g.emit(*ev);
    }

    fn egress(&mut self, meta: &EgressMetadata) -> EgressHeaders {
        let mut h = EgressHeaders::from_metadata(meta);
        if meta.flags.contains(Flags::DATA) {
            let prio = if meta.pkt_offset < self.unscheduled {
                if meta.is_new_msg {
                    // A new message: no GRANT has set its priority yet.
                    self.msg_prio
                        .write(meta.tx_msg_id as usize, SCHEDULED_PRIORITY);
                }
                UNSCHEDULED_PRIORITY
            } else {
                self.msg_prio.read(meta.tx_msg_id as usize)
            };
            // RW: hdr.ip.tos = msgPrio[tx_msg_id].
            h.tos = prio;
            h.priority = prio;
        } else {
            // Control packets at the top; a GRANT's priority field tells
            // the sender which priority its granted data must use.
            h.tos = CONTROL_PRIORITY;
        }
        h
    }

    fn rx_message_freed(&mut self, rx_msg_id: RxMsgId) {
        self.grant_scheduler.remove(rx_msg_id as u32);
    }

    fn state_in_use(&self) -> usize {
        self.grant_scheduler.len()
    }
}
