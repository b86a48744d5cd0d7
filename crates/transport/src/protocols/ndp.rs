//! NDP (Handley et al., SIGCOMM'17) as NanoTransport Algorithm 4: the
//! receiver acknowledges every data packet, NACKs every trimmed one, and
//! pulls one more packet per packet that arrives, pacing its PULLs at its
//! link rate so that pulled packets arrive no faster than it can take them.
//!
//! Differences from the pseudocode, each needed for reliability under
//! loss and said where it happens: duplicates are acknowledged again (a
//! lost ACK must not make the sender give up) and re-pulled with the
//! current credit (a lost PULL must not stall the message); a NACK only
//! marks the packet for retransmission and the paced PULL that follows it
//! sends it (as NDP does, so retransmissions are paced too).

use super::{reply_to, CONTROL_PRIORITY};
use crate::config::{StageLatencies, NDP_LATENCIES};
use crate::metadata::{EgressMetadata, GetRxMsgInfoReq, IngressMetadata, PacketHeaders};
use crate::program::{
    CreditTx, IngressExterns, IngressVerdict, PacketGenerator, ProgramParams, Refusal,
    TransportProgram,
};
use crate::state::{RawOp, Register};
use nanopu_sim::SimTime;
use nanopu_wire::Flags;

/// The NDP program's state.
pub struct Ndp {
    /// `state credit` of Algorithm 4, per `rx_msg_id`: packets of the
    /// message the receiver has allowed so far.
    credit: Register<u16>,
    /// The PULL pacer: when the next PULL may leave.
    pacer_next: SimTime,
}

impl Ndp {
    pub fn new(params: &ProgramParams) -> Ndp {
        Ndp {
            credit: Register::new(params.max_rx_messages as usize),
            pacer_next: SimTime::ZERO,
        }
    }

    fn data(&mut self, hdr: &PacketHeaders, x: &mut IngressExterns<'_>) -> IngressVerdict {
        let trimmed = hdr.flags.contains(Flags::CHOP);
        let info = x.get_rx_msg_info(GetRxMsgInfoReq {
            // A trimmed packet names its message but brings no data.
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
            // No id or buffer for a new message: answer with a NACK alone
            // (no PULL: there is no state to pull with), so the sender
            // knows its receiver is alive but busy, waits, and tries again
            // at its next timeout rather than giving up (issue #55).
            x.ctrl_pkt_event(reply_to(hdr, Flags::NACK, 0));
            return IngressVerdict::Refuse(Refusal::NoResources);
        }
        let bdp = x.params().bdp_packets;
        let id = info.rx_msg_id as usize;
        if trimmed || info.is_new_pkt {
            let pull_offset_diff = if trimmed { 0 } else { 1 };
            // ifElseRAW: a new message starts with the unscheduled window.
            let credit = self.credit.if_else_raw(
                id,
                info.is_new_msg,
                RawOp::Set(bdp.saturating_add(pull_offset_diff)),
                RawOp::Add(pull_offset_diff),
            );
            let mut flags = if trimmed { Flags::NACK } else { Flags::ACK };
            // Pull only while there is something left to pull.
            if trimmed || credit <= info.packets {
                flags |= Flags::PULL;
            }
            x.ctrl_pkt_event(reply_to(hdr, flags, credit.min(info.packets)));
        } else {
            // A duplicate: acknowledge again, and re-pull with the current
            // credit in case a PULL was lost.
            let credit = self.credit.read(id).min(info.packets);
            x.ctrl_pkt_event(reply_to(hdr, Flags::ACK | Flags::PULL, credit));
        }
        if trimmed || !info.is_new_pkt {
            return IngressVerdict::Drop;
        }
        IngressVerdict::Reassemble(IngressMetadata {
            remote_ip: hdr.src_ip,
            remote_port: hdr.src_port,
            msg_len: hdr.msg_len,
            pkt_offset: hdr.pkt_offset,
            local_port: hdr.dst_port,
            rx_msg_id: info.rx_msg_id,
            tx_msg_id: hdr.tx_msg_id,
            is_last_pkt: info.is_last_pkt,
        })
    }
}

impl TransportProgram for Ndp {
    fn name(&self) -> &'static str {
        "ndp"
    }

    fn latencies(&self) -> StageLatencies {
        NDP_LATENCIES
    }

    fn ingress(&mut self, hdr: &PacketHeaders, x: &mut IngressExterns<'_>) -> IngressVerdict {
        if hdr.flags.contains(Flags::DATA) {
            return self.data(hdr, x);
        }
        if hdr.flags.contains(Flags::ACK) {
            x.delivered_event(hdr.tx_msg_id, 1u64 << (hdr.pkt_offset & 63));
        }
        if hdr.flags.intersects(Flags::NACK | Flags::PULL) {
            let nack = hdr.flags.contains(Flags::NACK);
            let pull = hdr.flags.contains(Flags::PULL);
            x.credit_tx_event(CreditTx {
                tx_msg_id: hdr.tx_msg_id,
                rtx_bitmap: if nack {
                    1u64 << (hdr.pkt_offset & 63)
                } else {
                    0
                },
                new_credit: pull.then_some(hdr.pull_offset),
                allow_tx: pull,
            });
        }
        IngressVerdict::Drop
    }

    /// ACKs and NACKs leave at once; PULLs leave one per MTU-packet time of
    /// this host's link (the receiver's pull pacer, NDP §3.2).
    fn generate(&mut self, ev: &EgressMetadata, g: &mut PacketGenerator<'_>) {
        if !ev.flags.contains(Flags::PULL) {
            g.emit(*ev);
            return;
        }
        let now = g.now();
        let at = now.max(self.pacer_next);
        self.pacer_next = at + g.params().mtu_packet_time;
        if at == now {
            g.emit(*ev);
            return;
        }
        let mut rest = *ev;
        rest.flags.remove(Flags::PULL);
        if !rest.flags.is_empty() {
            g.emit(rest);
        }
        let mut pull = *ev;
        pull.flags = Flags::PULL;
        g.emit_at(at, pull);
    }

    fn egress(&mut self, meta: &EgressMetadata) -> crate::metadata::EgressHeaders {
        let mut h = crate::metadata::EgressHeaders::from_metadata(meta);
        if meta.flags.contains(Flags::DATA) {
            // Data at the lowest priority; control packets at the highest.
            h.tos = 0;
            h.priority = 0;
        } else {
            h.tos = CONTROL_PRIORITY;
        }
        h
    }
}
