//! The metadata that travels with a packet between NanoTransport's modules:
//! Listings 1, 2 and 3 of the paper, field for field, plus the parsed
//! headers a transport program sees.

use nanopu_wire::Flags;

/// An index into the reassembly module's message table (`rx_msg_id`).
pub type RxMsgId = u16;
/// The sender's message id, carried in every packet (`tx_msg_id`).
pub type TxMsgId = u16;

/// Listing 1: from the ingress pipeline to the reassembly module, with the
/// packet's payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IngressMetadata {
    pub remote_ip: u32,
    pub remote_port: u16,
    pub msg_len: u16,
    /// Similar to a TCP sequence number, in packets.
    pub pkt_offset: u16,
    pub local_port: u16,
    /// Set by the receiver (`GetRxMsgInfo`).
    pub rx_msg_id: RxMsgId,
    /// Set by the sender.
    pub tx_msg_id: TxMsgId,
    pub is_last_pkt: bool,
}

/// Listing 2: to the egress pipeline with a packet's payload (data packets
/// from the packetization module, control packets from the packet
/// generator).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EgressMetadata {
    pub remote_ip: u32,
    pub remote_port: u16,
    pub msg_len: u16,
    pub pkt_offset: u16,
    pub local_port: u16,
    pub tx_msg_id: TxMsgId,
    /// Similar to TCP's cwnd: packets with `pkt_offset < credit` may be
    /// sent. In a PULL or GRANT it is the credit being granted.
    pub credit: u16,
    /// The packet's priority (Homa: the switch queue, via the IPv4 ToS).
    pub rank: u8,
    /// For control packets, the flags to send; data packets carry `DATA`.
    pub flags: Flags,
    pub is_new_msg: bool,
    pub is_rtx: bool,
}

/// Listing 3, input of the `GetRxMsgInfo` extern.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GetRxMsgInfoReq {
    /// Set the packet's bit in `receivedBitmap` (false for read-only calls,
    /// such as for a trimmed packet).
    pub mark_received: bool,
    pub src_ip: u32,
    pub src_port: u16,
    pub tx_msg_id: TxMsgId,
    pub msg_len: u16,
    pub pkt_offset: u16,
}

/// Listing 3, output of the `GetRxMsgInfo` extern.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GetRxMsgInfoResp {
    /// The reassembly module could not allocate a message id or buffer, or
    /// the packet contradicts its message (see `inconsistent`).
    pub fail: bool,
    /// The failure is a contradiction: the packet's offset is beyond its
    /// message, or its length differs from the message's (an addition to
    /// Listing 3, so that a program can tell bad packets from a full table).
    pub inconsistent: bool,
    pub rx_msg_id: RxMsgId,
    /// The message was not seen before.
    pub is_new_msg: bool,
    /// This packet was not received before.
    pub is_new_pkt: bool,
    /// Every packet of the message has been received.
    pub is_last_pkt: bool,
    /// Smallest packet offset not received yet.
    pub ack_no: u16,
    /// Packets received so far (a convenience the hardware has for free:
    /// the population count of `receivedBitmap`).
    pub received: u16,
    /// Packets in the whole message.
    pub packets: u16,
}

/// The headers of an arriving packet, as the ingress parser extracts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketHeaders {
    pub src_ip: u32,
    pub dst_ip: u32,
    /// The IPv4 ToS byte (Homa: the packet's priority).
    pub tos: u8,
    pub flags: Flags,
    pub src_port: u16,
    pub dst_port: u16,
    pub msg_len: u16,
    pub pkt_offset: u16,
    pub pull_offset: u16,
    pub tx_msg_id: TxMsgId,
    pub priority: u8,
    pub grant_offset: u16,
    /// Bytes of payload the packet carries (0 for control and trimmed
    /// packets).
    pub payload_len: u16,
}

/// What the egress pipeline writes into an outgoing packet's headers
/// (Ethernet and IPv4 addresses come from the metadata).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EgressHeaders {
    /// The IPv4 ToS byte: the switches' priority band.
    pub tos: u8,
    pub flags: Flags,
    pub src_port: u16,
    pub dst_port: u16,
    pub msg_len: u16,
    pub pkt_offset: u16,
    pub pull_offset: u16,
    pub tx_msg_id: TxMsgId,
    pub priority: u8,
    pub grant_offset: u16,
}

impl EgressHeaders {
    /// `FillHeadersFromMetaData` (NanoTransport Algorithms 4 and 5): the
    /// transport header straight from the egress metadata; the credit goes
    /// into both offsets, the rank into the priority and the ToS.
    pub fn from_metadata(m: &EgressMetadata) -> EgressHeaders {
        EgressHeaders {
            tos: m.rank,
            flags: m.flags,
            src_port: m.local_port,
            dst_port: m.remote_port,
            msg_len: m.msg_len,
            pkt_offset: m.pkt_offset,
            pull_offset: m.credit,
            tx_msg_id: m.tx_msg_id,
            priority: m.rank,
            grant_offset: m.credit,
        }
    }
}
