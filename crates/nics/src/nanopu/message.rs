//! Messages and packets as the NIC's stages pass them along.

/// Mask of the length field of an application header (`nanopu-abi.md`).
pub const LEN_MASK: u64 = 0xffff;

/// What the transport header of one packet says, in the form the NIC
/// stages use (the bytes on the wire are `nanopu_wire`'s business).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketInfo {
    pub src_ip: u32,
    pub dst_ip: u32,
    pub src_context: u16,
    pub dst_context: u16,
    /// Bytes of the whole message.
    pub msg_len: u16,
    /// Index of this packet within its message.
    pub pkt_offset: u16,
    /// The sender's message id (with the source address, names the message).
    pub tx_msg_id: u16,
}

/// A whole message between the NIC and a core.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    /// The other end: the source of a received message, the destination of
    /// a sent one.
    pub peer_ip: u32,
    pub peer_context: u16,
    /// The context on this node (destination of a received message, source
    /// of a sent one).
    pub local_context: u16,
    /// Bytes of payload (the length field of the application header).
    pub len: u16,
    /// Payload words (`len` rounded up to whole words).
    pub payload: Vec<u64>,
    /// Its flow in the timeline (`--timeline`); 0 when not traced.
    pub flow: u32,
}

impl Message {
    /// The words a core reads from netRX: the RX application header
    /// (source IP, source context, length), then the payload.
    pub fn rx_words(&self) -> Vec<u64> {
        let mut w = Vec::with_capacity(1 + self.payload.len());
        self.rx_words_into(&mut w);
        w
    }

    /// [`Message::rx_words`] into `w` (cleared first; its buffer reused).
    pub fn rx_words_into(&self, w: &mut Vec<u64>) {
        let header =
            ((self.peer_ip as u64) << 32) | ((self.peer_context as u64) << 16) | self.len as u64;
        w.clear();
        w.push(header);
        w.extend_from_slice(&self.payload);
    }

    /// A message written to netTX by context `local_context`: header
    /// (destination IP, destination context, length) and payload words.
    pub fn from_tx_words(local_context: u16, words: &[u64]) -> Message {
        let header = words.first().copied().unwrap_or(0);
        Message {
            peer_ip: (header >> 32) as u32,
            peer_context: (header >> 16) as u16,
            local_context,
            len: (header & LEN_MASK) as u16,
            payload: words.get(1..).unwrap_or(&[]).to_vec(),
            flow: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_swap_direction() {
        let tx = Message::from_tx_words(5, &[(0x0a00_0002 << 32) | (9 << 16) | 16, 1, 2]);
        assert_eq!(
            (tx.peer_ip, tx.peer_context, tx.len, tx.local_context),
            (0x0a00_0002, 9, 16, 5)
        );
        let rx = tx.rx_words();
        // The same word layout names the source on receive.
        assert_eq!(rx, vec![(0x0a00_0002 << 32) | (9 << 16) | 16, 1, 2]);
    }
}
