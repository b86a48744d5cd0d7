//! Reassembly (nanoPU Fig. 1, step 2): packets are placed into a buffer for
//! their whole message, in any order, until every packet has arrived.

use crate::message::{Message, PacketInfo};
use std::collections::BTreeMap;

/// Identifies a message in reassembly: sender address, sender context, the
/// sender's message id.
type Key = (u32, u16, u16);

struct Partial {
    payload: Vec<u64>,
    /// One bit per packet (`receivedBitmap` in NanoTransport).
    received: Vec<u64>,
    missing: u32,
    info: PacketInfo,
}

/// Why a packet was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReassemblyError {
    /// The packet's offset or size does not fit the message it belongs to.
    Inconsistent,
    /// The packet was already received (a duplicate).
    Duplicate,
}

/// Message buffers being filled.
#[derive(Default)]
pub struct Reassembly {
    partial: BTreeMap<Key, Partial>,
}

impl Reassembly {
    /// Messages waiting for more packets.
    pub fn in_progress(&self) -> usize {
        self.partial.len()
    }

    /// Adds a packet with `payload` bytes; returns the message when complete.
    pub fn packet(
        &mut self,
        info: PacketInfo,
        payload: &[u8],
        mtu_payload: u32,
    ) -> Result<Option<Message>, ReassemblyError> {
        let packets = (info.msg_len as u32).div_ceil(mtu_payload).max(1);
        let offset = info.pkt_offset as u32;
        let start = (offset * mtu_payload) as usize;
        let expected = (info.msg_len as usize)
            .saturating_sub(start)
            .min(mtu_payload as usize);
        if offset >= packets || payload.len() < expected {
            return Err(ReassemblyError::Inconsistent);
        }
        let key = (info.src_ip, info.src_context, info.tx_msg_id);
        let p = self.partial.entry(key).or_insert_with(|| Partial {
            payload: vec![0; (info.msg_len as usize).div_ceil(8)],
            received: vec![0; (packets as usize).div_ceil(64)],
            missing: packets,
            info,
        });
        if p.info.msg_len != info.msg_len || p.info.dst_context != info.dst_context {
            return Err(ReassemblyError::Inconsistent);
        }
        let (word, bit) = (offset as usize / 64, offset % 64);
        if p.received[word] & (1 << bit) != 0 {
            return Err(ReassemblyError::Duplicate);
        }
        p.received[word] |= 1 << bit;
        p.missing -= 1;
        // Copy the payload bytes into the message's words (little-endian:
        // word i holds bytes 8i..8i+8 as the core reads them).
        for (i, chunk) in payload[..expected].chunks(8).enumerate() {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            p.payload[start / 8 + i] = u64::from_le_bytes(b);
        }
        if p.missing > 0 {
            return Ok(None);
        }
        let p = self.partial.remove(&key).expect("present");
        Ok(Some(Message {
            peer_ip: p.info.src_ip,
            peer_context: p.info.src_context,
            local_context: p.info.dst_context,
            len: p.info.msg_len,
            payload: p.payload,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(len: u16, offset: u16) -> PacketInfo {
        PacketInfo {
            src_ip: 1,
            dst_ip: 2,
            src_context: 3,
            dst_context: 4,
            msg_len: len,
            pkt_offset: offset,
            tx_msg_id: 7,
        }
    }

    fn bytes(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn single_packet_message() {
        let mut r = Reassembly::default();
        let m = r
            .packet(info(16, 0), &bytes(&[5, 6]), 1024)
            .unwrap()
            .unwrap();
        assert_eq!(m.payload, vec![5, 6]);
        assert_eq!((m.peer_context, m.local_context, m.len), (3, 4, 16));
    }

    #[test]
    fn packets_out_of_order() {
        let mut r = Reassembly::default();
        let words: Vec<u64> = (0..200).collect(); // 1600 bytes: 2 packets of 1 KB
        let b = bytes(&words);
        assert_eq!(r.packet(info(1600, 1), &b[1024..], 1024), Ok(None));
        assert_eq!(r.in_progress(), 1);
        let m = r.packet(info(1600, 0), &b[..1024], 1024).unwrap().unwrap();
        assert_eq!(m.payload, words);
        assert_eq!(r.in_progress(), 0);
    }

    #[test]
    fn duplicates_and_nonsense_are_rejected() {
        let mut r = Reassembly::default();
        let b = bytes(&(0..200).collect::<Vec<_>>());
        r.packet(info(1600, 0), &b[..1024], 1024).unwrap();
        assert_eq!(
            r.packet(info(1600, 0), &b[..1024], 1024),
            Err(ReassemblyError::Duplicate)
        );
        assert_eq!(
            r.packet(info(1600, 2), &b[..8], 1024),
            Err(ReassemblyError::Inconsistent)
        );
        assert_eq!(
            r.packet(info(64, 0), &b[..8], 1024),
            Err(ReassemblyError::Inconsistent)
        );
    }
}
