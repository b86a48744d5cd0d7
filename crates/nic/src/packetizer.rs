//! Packetization (nanoPU Fig. 1, transmit side): a message written by a core
//! is split into packets of at most one MTU of payload, each with its
//! Ethernet, IPv4 and transport headers.

use crate::frames;
use crate::message::{Message, PacketInfo};

/// Splits messages into frames and numbers them.
#[derive(Clone, Debug)]
pub struct Packetizer {
    pub ip: u32,
    pub mtu_payload_bytes: u32,
    next_msg_id: u16,
}

impl Packetizer {
    pub fn new(ip: u32, mtu_payload_bytes: u32) -> Packetizer {
        Packetizer {
            ip,
            mtu_payload_bytes,
            next_msg_id: 0,
        }
    }

    /// The frames of `msg` (one for an empty message), in order.
    pub fn packetize(&mut self, msg: &Message, mut frame: impl FnMut(Vec<u8>)) {
        let id = self.next_msg_id;
        self.next_msg_id = self.next_msg_id.wrapping_add(1);
        let mtu = self.mtu_payload_bytes as usize;
        let bytes: Vec<u8> = msg.payload.iter().flat_map(|w| w.to_le_bytes()).collect();
        let bytes = &bytes[..(msg.len as usize).min(bytes.len())];
        let packets = bytes.len().div_ceil(mtu).max(1);
        for p in 0..packets {
            let chunk = &bytes[(p * mtu).min(bytes.len())..((p + 1) * mtu).min(bytes.len())];
            let info = PacketInfo {
                src_ip: self.ip,
                dst_ip: msg.peer_ip,
                src_context: msg.local_context,
                dst_context: msg.peer_context,
                msg_len: msg.len,
                pkt_offset: p as u16,
                tx_msg_id: id,
            };
            frame(frames::encode(&info, chunk));
        }
    }
}
