//! The lossless program (`protocol = "none"`): the transport of the
//! one-node microbenchmarks, for a lossless wire. No acknowledgements, no
//! credit, no retransmission: every new data packet is taken into
//! reassembly, every message is sent whole at once
//! ([`Delivery::Lossless`]). Its pipelines cost the NIC's ingress and
//! egress stages (NanoTransport Table 1, NDP's by default).

use crate::config::{StageLatencies, NDP_LATENCIES};
use crate::metadata::{EgressMetadata, GetRxMsgInfoReq, IngressMetadata, PacketHeaders};
use crate::program::{
    Delivery, IngressExterns, IngressVerdict, PacketGenerator, ProgramParams, Refusal,
    TransportProgram,
};
use nanopu_wire::Flags;

/// The lossless program: stateless.
#[derive(Clone, Copy, Debug)]
pub struct Lossless {
    latencies: StageLatencies,
}

impl Lossless {
    /// The program with pipeline latencies `latencies`.
    pub fn new(latencies: StageLatencies) -> Lossless {
        Lossless { latencies }
    }
}

impl Default for Lossless {
    fn default() -> Self {
        Lossless::new(NDP_LATENCIES)
    }
}

impl TransportProgram for Lossless {
    fn name(&self) -> &'static str {
        "none"
    }

    fn latencies(&self) -> StageLatencies {
        self.latencies
    }

    fn delivery(&self) -> Delivery {
        Delivery::Lossless
    }

    fn ingress(&mut self, hdr: &PacketHeaders, x: &mut IngressExterns<'_>) -> IngressVerdict {
        // Control and trimmed packets have no place on a lossless wire.
        if !hdr.flags.contains(Flags::DATA) || hdr.flags.contains(Flags::CHOP) {
            return IngressVerdict::Drop;
        }
        let info = x.get_rx_msg_info(GetRxMsgInfoReq {
            mark_received: true,
            src_ip: hdr.src_ip,
            src_port: hdr.src_port,
            tx_msg_id: hdr.tx_msg_id,
            msg_len: hdr.msg_len,
            pkt_offset: hdr.pkt_offset,
        });
        if info.inconsistent {
            return IngressVerdict::Refuse(Refusal::Inconsistent);
        }
        if info.fail {
            return IngressVerdict::Refuse(Refusal::NoResources);
        }
        if !info.is_new_pkt {
            return IngressVerdict::Refuse(Refusal::Duplicate);
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

    fn generate(&mut self, _event: &EgressMetadata, _g: &mut PacketGenerator<'_>) {}

    /// The whole message: nothing waits for credit.
    fn initial_credit(&self, packets: u16, _params: &ProgramParams) -> u16 {
        packets
    }
}
