//! Packets on the wire: Ethernet, IPv4 and the nanoPU transport header
//! (`nanopu_wire`), to and from the [`PacketInfo`] the NIC stages use.

use super::message::PacketInfo;
use nanopu_wire::ethernet::ETHERTYPE_IPV4;
use nanopu_wire::nanotransport::PROTOCOL;
use nanopu_wire::{
    EthernetAddress, EthernetRepr, Flags, FrameRepr, Ipv4Address, Ipv4Repr, NanoTransportRepr,
};

/// Why the ingress pipeline refused a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// Not a well-formed nanoPU frame (truncated, bad checksum, other protocol).
    Malformed,
    /// Well formed but not a data packet this NIC handles.
    NotForUs,
}

/// A node's MAC address, derived from its IPv4 address (locally
/// administered: 02:00 followed by the address).
pub fn mac_of(ip: u32) -> EthernetAddress {
    EthernetAddress::for_ipv4(ip)
}

/// Builds the frame of one data packet carrying `payload`.
pub fn encode(info: &PacketInfo, payload: &[u8]) -> Vec<u8> {
    let repr = FrameRepr::new(
        EthernetRepr {
            src_addr: mac_of(info.src_ip),
            dst_addr: mac_of(info.dst_ip),
            ethertype: ETHERTYPE_IPV4,
        },
        Ipv4Repr {
            src_addr: Ipv4Address::from_bits(info.src_ip),
            dst_addr: Ipv4Address::from_bits(info.dst_ip),
            protocol: PROTOCOL,
            payload_len: 0,
            ttl: 64,
            tos: 0,
            ident: 0,
            dont_frag: true,
        },
        NanoTransportRepr {
            flags: Flags::DATA,
            src_context: info.src_context,
            dst_context: info.dst_context,
            msg_len: info.msg_len,
            pkt_offset: info.pkt_offset,
            pull_offset: 0,
            tx_msg_id: info.tx_msg_id,
            buf_ptr: 0,
            buf_size_class: 0,
            priority: 0,
            grant_offset: 0,
        },
        payload.len(),
    );
    let mut buf = vec![0u8; repr.frame_len()];
    repr.emit(payload, &mut buf).expect("sized for the frame");
    buf
}

/// Parses a frame into the packet's header fields and its payload.
pub fn decode(frame: &[u8]) -> Result<(PacketInfo, &[u8]), DropReason> {
    let (repr, payload) = FrameRepr::parse(frame).map_err(|_| DropReason::Malformed)?;
    if !repr.nt.flags.contains(Flags::DATA) {
        return Err(DropReason::NotForUs);
    }
    Ok((
        PacketInfo {
            src_ip: repr.ip.src_addr.to_bits(),
            dst_ip: repr.ip.dst_addr.to_bits(),
            src_context: repr.nt.src_context,
            dst_context: repr.nt.dst_context,
            msg_len: repr.nt.msg_len,
            pkt_offset: repr.nt.pkt_offset,
            tx_msg_id: repr.nt.tx_msg_id,
        },
        payload,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_8_byte_message_is_a_72_byte_frame() {
        let info = PacketInfo {
            src_ip: 0x0a00_0002,
            dst_ip: 0x0a00_0001,
            src_context: 1,
            dst_context: 0,
            msg_len: 8,
            pkt_offset: 0,
            tx_msg_id: 3,
        };
        let f = encode(&info, &42u64.to_le_bytes());
        assert_eq!(f.len(), 72);
        let (back, payload) = decode(&f).unwrap();
        assert_eq!(back, info);
        assert_eq!(payload, 42u64.to_le_bytes());
    }

    #[test]
    fn garbage_is_malformed_not_a_panic() {
        for len in 0..100 {
            let junk: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            assert!(decode(&junk).is_err());
        }
    }
}
