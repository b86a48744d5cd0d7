//! A whole nanoPU frame: Ethernet II, IPv4 without options, the nanoPU
//! transport header, then the message bytes the packet carries.
//!
//! ```text
//! 0          14                34                          64
//! +----------+-----------------+---------------------------+-----------
//! | Ethernet | IPv4            | nanoPU transport          | payload ...
//! +----------+-----------------+---------------------------+-----------
//! ```
//!
//! The headers take [`HEADER_LEN`] = 64 bytes, so an 8-byte message travels
//! in a 72-byte frame (nanoPU, OSDI 2021, section 5.2.1).
//!
//! # What a frame is, and what the wire adds
//!
//! A frame buffer here runs from the destination MAC address to the last
//! payload byte: no preamble, no start-of-frame delimiter, no frame check
//! sequence (FCS), as a pcap capture shows it. On the wire, IEEE 802.3
//! (clauses 3.1 and 4.4) adds a 7-byte preamble and 1-byte SFD before each
//! frame, pads frames to a minimum size, and leaves an inter-packet gap of
//! at least 96 bit times (12 bytes) after it. [`wire_bits`] counts those: the
//! frame padded to [`MIN_FRAME`], plus [`PREAMBLE_LEN`] and [`IFG_LEN`]. It
//! does not add the 4-byte FCS (IEEE 802.3 counts the FCS inside its 64-byte
//! minimum; this simulator, like the nanoPU paper's packet sizes, does not
//! model it). Every nanoPU frame is at least [`HEADER_LEN`] = [`MIN_FRAME`]
//! bytes, so the padding only matters for other traffic.

use crate::ethernet::{self, ETHERTYPE_IPV4};
use crate::ipv4;
use crate::nanotransport::{self, PROTOCOL};
use crate::{Error, EthernetRepr, Ipv4Repr, NanoTransportRepr};

/// Length of the Ethernet, IPv4 and nanoPU transport headers together.
pub const HEADER_LEN: usize = ethernet::HEADER_LEN + ipv4::HEADER_LEN + nanotransport::HEADER_LEN;

const _: () = assert!(HEADER_LEN == 64);

/// Offset of the IPv4 header in a frame.
pub const IPV4_OFFSET: usize = ethernet::HEADER_LEN;

/// Offset of the nanoPU transport header in a frame.
pub const NANOTRANSPORT_OFFSET: usize = IPV4_OFFSET + ipv4::HEADER_LEN;

/// Smallest frame on the wire, in bytes (without FCS, see the module
/// documentation); shorter frames are padded with zeros when serialized.
pub const MIN_FRAME: usize = 64;

/// Preamble (7 bytes) and start-of-frame delimiter (1 byte) sent before
/// every frame (IEEE 802.3 clause 4.2.5).
pub const PREAMBLE_LEN: usize = 8;

/// Minimum inter-frame gap, 96 bit times (IEEE 802.3 clause 4.4.2).
pub const IFG_LEN: usize = 12;

/// Line rate of the nanoPU's links, Gb/s. Source: nanoPU §3 ("200Gb/s
/// links"), `nanopu-abi.md`. The default of `[network.link] gbps`, the one
/// setting every NIC, link and switch takes its rate from.
pub const DEFAULT_LINK_GBPS: u64 = 200;

/// Bytes a frame occupies on the wire beyond its own: preamble and start
/// delimiter plus the minimum inter-frame gap (IEEE 802.3). The one
/// definition every link, serializer and rate calculation uses.
pub const WIRE_OVERHEAD_LEN: usize = PREAMBLE_LEN + IFG_LEN;

/// Largest payload a frame can carry: what the IPv4 total length leaves
/// after the IPv4 and transport headers.
pub const MAX_PAYLOAD_LEN: usize = ipv4::MAX_PAYLOAD_LEN - nanotransport::HEADER_LEN;

/// Bits a frame of `frame_len` bytes occupies on an Ethernet link: the frame
/// padded to [`MIN_FRAME`], plus preamble and SFD ([`PREAMBLE_LEN`]) and the
/// minimum inter-frame gap ([`IFG_LEN`]), times 8. No FCS is counted (see
/// the module documentation). Dividing by the link rate gives the time the
/// link is busy with the frame; a 72-byte nanoPU frame takes 736 bits.
pub const fn wire_bits(frame_len: usize) -> u64 {
    let padded = if frame_len < MIN_FRAME {
        MIN_FRAME
    } else {
        frame_len
    };
    ((padded + PREAMBLE_LEN + IFG_LEN) as u64) * 8
}

/// The meaning of a whole nanoPU frame's headers, and its payload length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameRepr {
    /// The Ethernet header; `ethertype` is [`ETHERTYPE_IPV4`].
    pub eth: EthernetRepr,
    /// The IPv4 header; `protocol` is [`PROTOCOL`] and `payload_len` is
    /// `nanotransport::HEADER_LEN + payload_len`.
    pub ip: Ipv4Repr,
    /// The nanoPU transport header.
    pub nt: NanoTransportRepr,
    /// Bytes of message data after the headers.
    pub payload_len: usize,
}

impl FrameRepr {
    /// A frame of the given headers carrying `payload_len` bytes, with the
    /// fields that tie the layers together set to agree: the EtherType to
    /// IPv4, the IP protocol to [`PROTOCOL`], and the IPv4 payload length.
    pub fn new(
        mut eth: EthernetRepr,
        mut ip: Ipv4Repr,
        nt: NanoTransportRepr,
        payload_len: usize,
    ) -> FrameRepr {
        eth.ethertype = ETHERTYPE_IPV4;
        ip.protocol = PROTOCOL;
        ip.payload_len = nanotransport::HEADER_LEN + payload_len;
        FrameRepr {
            eth,
            ip,
            nt,
            payload_len,
        }
    }

    /// Length of the frame: [`HEADER_LEN`] plus the payload.
    pub const fn frame_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Parses and validates a frame; returns its headers and its payload.
    ///
    /// Checks, in order: the Ethernet header is present and its type is IPv4
    /// (`Unsupported` otherwise); the IPv4 header as [`Ipv4Repr::parse`]
    /// does (version, no options, checksum, no fragments) and that the
    /// buffer holds the total length (`Truncated`); the protocol is
    /// [`PROTOCOL`] (`Unsupported`); the transport header is present and
    /// valid. Bytes after the IPv4 total length (Ethernet padding) are
    /// ignored. Never panics, whatever the input.
    pub fn parse(frame: &[u8]) -> Result<(FrameRepr, &[u8]), Error> {
        match Self::parse_valid(frame) {
            Some(parsed) => Ok(parsed),
            None => Self::parse_layers(frame),
        }
    }

    /// [`FrameRepr::parse`] of a frame every check passes, reading the
    /// fixed header positions at once; `None` if any check fails (the
    /// layer-by-layer parse then says which).
    fn parse_valid(frame: &[u8]) -> Option<(FrameRepr, &[u8])> {
        let h: &[u8; HEADER_LEN] = frame.first_chunk()?;
        let eth = ethernet::Packet::new_unchecked(&h[..IPV4_OFFSET]);
        let ip = ipv4::Packet::new_unchecked(&h[IPV4_OFFSET..NANOTRANSPORT_OFFSET]);
        let total_len = usize::from(ip.total_len());
        // IPv4 with no options, not a fragment (the don't-fragment flag
        // alone may be set), carrying the transport header, within the
        // buffer; the checksum verifies.
        let ok = eth.ethertype() == ETHERTYPE_IPV4
            && ip.version() == 4
            && usize::from(ip.header_len()) == ipv4::HEADER_LEN
            && !ip.reserved_flag()
            && !ip.more_frags()
            && ip.frag_offset() == 0
            && ip.protocol() == PROTOCOL
            && total_len >= ipv4::HEADER_LEN + nanotransport::HEADER_LEN
            && IPV4_OFFSET + total_len <= frame.len()
            && ip.verify_checksum();
        if !ok {
            return None;
        }
        let nt = NanoTransportRepr::parse(&nanotransport::Packet::new_unchecked(
            &h[NANOTRANSPORT_OFFSET..],
        ))
        .ok()?;
        let payload_len = total_len - ipv4::HEADER_LEN - nanotransport::HEADER_LEN;
        let repr = FrameRepr {
            eth: EthernetRepr {
                src_addr: eth.src_addr(),
                dst_addr: eth.dst_addr(),
                ethertype: ETHERTYPE_IPV4,
            },
            ip: Ipv4Repr {
                src_addr: ip.src_addr(),
                dst_addr: ip.dst_addr(),
                protocol: PROTOCOL,
                payload_len: total_len - ipv4::HEADER_LEN,
                ttl: ip.ttl(),
                tos: ip.tos(),
                ident: ip.ident(),
                dont_frag: ip.dont_frag(),
            },
            nt,
            payload_len,
        };
        Some((repr, &frame[HEADER_LEN..HEADER_LEN + payload_len]))
    }

    /// [`FrameRepr::parse`], one layer after the other.
    fn parse_layers(frame: &[u8]) -> Result<(FrameRepr, &[u8]), Error> {
        let eth_packet = ethernet::Packet::new_checked(frame)?;
        let eth = EthernetRepr::parse(&eth_packet)?;
        if eth.ethertype != ETHERTYPE_IPV4 {
            return Err(Error::Unsupported);
        }
        let ip_packet = ipv4::Packet::new_checked(eth_packet.payload())?;
        let ip = Ipv4Repr::parse(&ip_packet)?;
        if ip.protocol != PROTOCOL {
            return Err(Error::Unsupported);
        }
        let nt_packet = nanotransport::Packet::new_checked(ip_packet.payload())?;
        let nt = NanoTransportRepr::parse(&nt_packet)?;
        let payload_len = nt_packet.payload().len();
        // All lengths are checked: the IPv4 payload lies within the buffer.
        let end = NANOTRANSPORT_OFFSET + ip.payload_len;
        let payload = &frame[HEADER_LEN..end];
        Ok((
            FrameRepr {
                eth,
                ip,
                nt,
                payload_len,
            },
            payload,
        ))
    }

    /// Writes the whole frame (headers with the IPv4 checksum computed, then
    /// `payload`) at the start of `buf`; returns its length.
    ///
    /// `Err(Malformed)` if `payload` is not `payload_len` bytes, if the
    /// layers disagree (EtherType not IPv4, protocol not [`PROTOCOL`], IPv4
    /// payload length not transport header plus payload; [`FrameRepr::new`]
    /// sets them) or if the payload exceeds [`MAX_PAYLOAD_LEN`];
    /// `Err(Truncated)` if `buf` is shorter than the frame. Nothing is
    /// written on error.
    pub fn emit(&self, payload: &[u8], buf: &mut [u8]) -> Result<usize, Error> {
        if payload.len() != self.payload_len
            || self.payload_len > MAX_PAYLOAD_LEN
            || self.eth.ethertype != ETHERTYPE_IPV4
            || self.ip.protocol != PROTOCOL
            || self.ip.payload_len != nanotransport::HEADER_LEN + self.payload_len
        {
            return Err(Error::Malformed);
        }
        let len = self.frame_len();
        if buf.len() < len {
            return Err(Error::Truncated);
        }
        let buf = &mut buf[..len];
        buf[..HEADER_LEN].copy_from_slice(&self.header_bytes());
        buf[HEADER_LEN..].copy_from_slice(payload);
        Ok(len)
    }

    /// The [`HEADER_LEN`] header bytes [`FrameRepr::emit`] writes (IPv4
    /// checksum computed), without its checks: for a sender that builds
    /// frames around payloads it appends itself. Written field by field
    /// at fixed positions (what the layers' `emit` write, see the tests),
    /// as plain stores.
    ///
    /// # Panics
    /// If the IPv4 payload length exceeds what its 16-bit total length can
    /// say ([`FrameRepr::new`] with a payload of at most
    /// [`MAX_PAYLOAD_LEN`] bytes never does).
    pub fn header_bytes(&self) -> [u8; HEADER_LEN] {
        let total_len = u16::try_from(ipv4::HEADER_LEN + self.ip.payload_len)
            .expect("IPv4 payload longer than 65515 bytes");
        let (eth, ip, nt) = (&self.eth, &self.ip, &self.nt);
        let mut h = [0u8; HEADER_LEN];
        let mut put = |at: usize, bytes: &[u8]| h[at..at + bytes.len()].copy_from_slice(bytes);
        put(0, &eth.dst_addr.0);
        put(6, &eth.src_addr.0);
        put(12, &eth.ethertype.to_be_bytes());
        const I: usize = IPV4_OFFSET;
        // Version 4, 5 words of header (no options).
        put(I, &[0x45, ip.tos]);
        put(I + 2, &total_len.to_be_bytes());
        put(I + 4, &ip.ident.to_be_bytes());
        put(I + 6, &[if ip.dont_frag { 0x40 } else { 0 }, 0]);
        put(I + 8, &[ip.ttl, ip.protocol]);
        put(I + 12, &ip.src_addr.0);
        put(I + 16, &ip.dst_addr.0);
        const N: usize = NANOTRANSPORT_OFFSET;
        put(N, &[nt.flags.bits()]);
        put(N + 1, &nt.src_context.to_be_bytes());
        put(N + 3, &nt.dst_context.to_be_bytes());
        put(N + 5, &nt.msg_len.to_be_bytes());
        put(N + 7, &nt.pkt_offset.to_be_bytes());
        put(N + 9, &nt.pull_offset.to_be_bytes());
        put(N + 11, &nt.tx_msg_id.to_be_bytes());
        put(N + 13, &nt.buf_ptr.to_be_bytes());
        put(N + 15, &[nt.buf_size_class, nt.priority]);
        put(N + 17, &nt.grant_offset.to_be_bytes());
        let sum = ipv4::checksum(&h[I..N]);
        h[I + 10..I + 12].copy_from_slice(&sum.to_be_bytes());
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EthernetAddress, Flags, Ipv4Address};

    /// An 8-byte message from 10.0.0.1 context 1 to 10.0.0.2 context 2: the
    /// 72-byte frame of nanoPU section 5.2.1. IPv4 checksum by hand:
    /// 4500+003a+0000+4000+4099+0a00+0001+0a00+0002 = 0xd9d6 -> 0x2629.
    static FRAME: [u8; 72] = [
        // Ethernet
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
        0x08, 0x00, // IPv4
        // IPv4
        0x45, 0x00, 0x00, 0x3a, // v4 IHL 5, ToS 0, total length 58
        0x00, 0x00, 0x40, 0x00, // ident 0, DF
        0x40, 0x99, 0x26, 0x29, // TTL 64, protocol 0x99, checksum
        0x0a, 0x00, 0x00, 0x01, // 10.0.0.1
        0x0a, 0x00, 0x00, 0x02, // 10.0.0.2
        // nanoPU transport
        0x01, // DATA
        0x00, 0x01, // src_context 1
        0x00, 0x02, // dst_context 2
        0x00, 0x08, // msg_len 8
        0x00, 0x00, // pkt_offset 0
        0x00, 0x00, // pull_offset 0
        0x00, 0x07, // tx_msg_id 7
        0x00, 0x03, // buf_ptr 3
        0x00, // buf_size_class
        0x00, // priority
        0x00, 0x00, // grant_offset
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // padding
        // payload: the 8-byte message
        0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
    ];

    const PAYLOAD: [u8; 8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef];

    fn repr(payload_len: usize) -> FrameRepr {
        FrameRepr::new(
            EthernetRepr {
                src_addr: EthernetAddress([0x02, 0, 0, 0, 0, 0x01]),
                dst_addr: EthernetAddress([0x02, 0, 0, 0, 0, 0x02]),
                ethertype: 0,
            },
            Ipv4Repr {
                src_addr: Ipv4Address::new(10, 0, 0, 1),
                dst_addr: Ipv4Address::new(10, 0, 0, 2),
                protocol: 0,
                payload_len: 0,
                ttl: ipv4::DEFAULT_TTL,
                tos: 0,
                ident: 0,
                dont_frag: true,
            },
            NanoTransportRepr {
                flags: Flags::DATA,
                src_context: 1,
                dst_context: 2,
                msg_len: payload_len as u16,
                tx_msg_id: 7,
                buf_ptr: 3,
                ..Default::default()
            },
            payload_len,
        )
    }

    #[test]
    fn parse_fixture() {
        let (r, payload) = FrameRepr::parse(&FRAME).unwrap();
        assert_eq!(r, repr(8));
        assert_eq!(payload, &PAYLOAD);
        assert_eq!(r.frame_len(), 72);
    }

    #[test]
    fn emit_fixture() {
        let mut buf = [0xa5u8; 100];
        assert_eq!(repr(8).emit(&PAYLOAD, &mut buf), Ok(72));
        assert_eq!(buf[..72], FRAME);
        assert!(buf[72..].iter().all(|&b| b == 0xa5), "wrote past the frame");
    }

    #[test]
    fn message_sizes_from_the_papers() {
        assert_eq!(HEADER_LEN, 64);
        let mut buf = [0u8; 128];
        // nanoPU section 5.2.1: an 8-byte message travels in a 72-byte packet.
        assert_eq!(repr(8).emit(&[7; 8], &mut buf), Ok(72));
        // NanoTransport Table 1: a 16-byte message in an 80-byte packet.
        assert_eq!(repr(16).emit(&[7; 16], &mut buf), Ok(80));
        let (r, payload) = FrameRepr::parse(&buf[..80]).unwrap();
        assert_eq!(r, repr(16));
        assert_eq!(payload, &[7; 16]);
    }

    #[test]
    fn ethernet_padding_ignored() {
        let mut buf = [0u8; 90];
        buf[..72].copy_from_slice(&FRAME);
        let (r, payload) = FrameRepr::parse(&buf).unwrap();
        assert_eq!(r, repr(8));
        assert_eq!(payload, &PAYLOAD);
        // An empty message is a 64-byte frame, exactly the minimum.
        let n = repr(0).emit(&[], &mut buf).unwrap();
        assert_eq!(n, MIN_FRAME);
        let (r, payload) = FrameRepr::parse(&buf[..n]).unwrap();
        assert_eq!(r.payload_len, 0);
        assert!(payload.is_empty());
    }

    #[test]
    fn every_truncation_is_an_error() {
        for len in 0..FRAME.len() {
            assert_eq!(
                FrameRepr::parse(&FRAME[..len]),
                Err(Error::Truncated),
                "len {len}"
            );
        }
    }

    /// `FRAME` with `f` applied and the IPv4 checksum recomputed.
    fn patched(f: impl FnOnce(&mut [u8; 72])) -> [u8; 72] {
        let mut buf = FRAME;
        f(&mut buf);
        ipv4::Packet::new_unchecked(&mut buf[IPV4_OFFSET..]).fill_checksum();
        buf
    }

    #[test]
    fn rejects() {
        let parse = |b: &[u8]| FrameRepr::parse(b).map(|(r, _)| r);
        // Another EtherType (IPv6).
        let b = patched(|b| b[12..14].copy_from_slice(&[0x86, 0xdd]));
        assert_eq!(parse(&b), Err(Error::Unsupported));
        // An 802.3 length instead of an EtherType.
        let b = patched(|b| b[12..14].copy_from_slice(&[0x00, 0x40]));
        assert_eq!(parse(&b), Err(Error::Unsupported));
        // Another protocol (UDP).
        let b = patched(|b| b[23] = 17);
        assert_eq!(parse(&b), Err(Error::Unsupported));
        // Bad checksum.
        let mut b = FRAME;
        b[24] ^= 0x80;
        assert_eq!(parse(&b), Err(Error::Checksum));
        // Total length beyond the buffer.
        let b = patched(|b| b[16..18].copy_from_slice(&59u16.to_be_bytes()));
        assert_eq!(parse(&b), Err(Error::Truncated));
        // Total length too short for the transport header.
        let b = patched(|b| b[16..18].copy_from_slice(&49u16.to_be_bytes()));
        assert_eq!(parse(&b), Err(Error::Truncated));
        // A shorter total length shortens the payload (the rest is padding).
        let b = patched(|b| b[16..18].copy_from_slice(&54u16.to_be_bytes()));
        let (r, payload) = FrameRepr::parse(&b).unwrap();
        assert_eq!(r.payload_len, 4);
        assert_eq!(payload, &PAYLOAD[..4]);
        // A fragment.
        let b = patched(|b| b[20] = 0x20);
        assert_eq!(parse(&b), Err(Error::Unsupported));
        // A reserved transport flag.
        let b = patched(|b| b[34] = 0x81);
        assert_eq!(parse(&b), Err(Error::Unsupported));
    }

    #[test]
    fn emit_errors() {
        let mut buf = [0u8; 72];
        assert_eq!(
            repr(8).emit(&PAYLOAD, &mut buf[..71]),
            Err(Error::Truncated)
        );
        assert_eq!(repr(8).emit(&PAYLOAD[..7], &mut buf), Err(Error::Malformed));
        let mut r = repr(8);
        r.ip.payload_len += 1;
        assert_eq!(r.emit(&PAYLOAD, &mut buf), Err(Error::Malformed));
        let mut r = repr(8);
        r.ip.protocol = 17;
        assert_eq!(r.emit(&PAYLOAD, &mut buf), Err(Error::Malformed));
        let mut r = repr(8);
        r.eth.ethertype = 0x86dd;
        assert_eq!(r.emit(&PAYLOAD, &mut buf), Err(Error::Malformed));
        assert!(buf.iter().all(|&b| b == 0), "nothing written on error");
        // The largest frame fits; one more byte does not.
        let big = vec![0u8; MAX_PAYLOAD_LEN + 1];
        let mut out = vec![0u8; HEADER_LEN + big.len()];
        let n = repr(MAX_PAYLOAD_LEN)
            .emit(&big[..MAX_PAYLOAD_LEN], &mut out)
            .unwrap();
        assert_eq!(n, ethernet::HEADER_LEN + 65535);
        assert_eq!(
            FrameRepr::parse(&out).unwrap().0.payload_len,
            MAX_PAYLOAD_LEN
        );
        let r = repr(MAX_PAYLOAD_LEN + 1);
        assert_eq!(r.emit(&big, &mut out), Err(Error::Malformed));
    }

    proptest::proptest! {
        /// The fast path agrees with the layer-by-layer parse wherever it
        /// answers: on the fixture with any byte changed and any length.
        #[test]
        fn fast_parse_agrees_with_the_layers(
            at in 0usize..72,
            value in proptest::num::u8::ANY,
            len in 0usize..80,
            fix_checksum in proptest::bool::ANY,
        ) {
            let mut f = FRAME.to_vec();
            f[at] = value;
            if fix_checksum {
                f[24..26].copy_from_slice(&[0, 0]);
                let sum = ipv4::checksum(&f[IPV4_OFFSET..NANOTRANSPORT_OFFSET]);
                f[24..26].copy_from_slice(&sum.to_be_bytes());
            }
            f.resize(len, 0);
            if let Some(fast) = FrameRepr::parse_valid(&f) {
                proptest::prop_assert_eq!(Ok(fast), FrameRepr::parse_layers(&f));
            }
        }
    }

    /// The headers as the layers' own `emit` write them.
    fn header_bytes_by_layers(r: &FrameRepr) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        r.eth
            .emit(&mut ethernet::Packet::new_unchecked(&mut h[..IPV4_OFFSET]));
        r.ip.emit(&mut ipv4::Packet::new_unchecked(
            &mut h[IPV4_OFFSET..NANOTRANSPORT_OFFSET],
        ));
        r.nt.emit(&mut nanotransport::Packet::new_unchecked(
            &mut h[NANOTRANSPORT_OFFSET..],
        ));
        h
    }

    proptest::proptest! {
        #[test]
        fn header_bytes_are_what_the_layers_emit(
            mac in proptest::array::uniform12(proptest::num::u8::ANY),
            ips in proptest::array::uniform8(proptest::num::u8::ANY),
            small in proptest::array::uniform6(proptest::num::u8::ANY),
            words in proptest::array::uniform8(proptest::num::u16::ANY),
            dont_frag in proptest::bool::ANY,
            payload_len in 0usize..=MAX_PAYLOAD_LEN,
        ) {
            let r = FrameRepr {
                eth: EthernetRepr {
                    dst_addr: EthernetAddress::from_bytes(&mac[..6]),
                    src_addr: EthernetAddress::from_bytes(&mac[6..]),
                    ethertype: words[7],
                },
                ip: Ipv4Repr {
                    src_addr: Ipv4Address::from_bytes(&ips[..4]),
                    dst_addr: Ipv4Address::from_bytes(&ips[4..]),
                    protocol: small[0],
                    payload_len: nanotransport::HEADER_LEN + payload_len,
                    ttl: small[1],
                    tos: small[2],
                    ident: words[0],
                    dont_frag,
                },
                nt: NanoTransportRepr {
                    flags: Flags::from_bits_retain(small[3] & 0x3f),
                    src_context: words[1],
                    dst_context: words[2],
                    msg_len: words[3],
                    pkt_offset: words[4],
                    pull_offset: words[5],
                    tx_msg_id: words[6],
                    buf_ptr: words[7].rotate_left(3),
                    buf_size_class: small[4],
                    priority: small[5],
                    grant_offset: words[0] ^ words[3],
                },
                payload_len,
            };
            proptest::prop_assert_eq!(r.header_bytes(), header_bytes_by_layers(&r));
        }
    }

    #[test]
    fn fast_parse_takes_valid_frames() {
        assert!(FrameRepr::parse_valid(&FRAME).is_some());
        let mut padded = FRAME.to_vec();
        padded.extend_from_slice(&[0; 9]);
        assert_eq!(
            FrameRepr::parse_valid(&padded),
            FrameRepr::parse_layers(&padded).ok()
        );
    }

    #[test]
    fn wire_bits_counts_preamble_gap_and_padding() {
        // (64 + 8 + 12) * 8
        assert_eq!(wire_bits(64), 672);
        assert_eq!(wire_bits(72), 736);
        assert_eq!(wire_bits(80), 800);
        // Short frames are padded to the minimum.
        assert_eq!(wire_bits(0), 672);
        assert_eq!(wire_bits(42), 672);
        assert_eq!(wire_bits(1514), (1514 + 20) * 8);
    }

    /// xorshift64 (Marsaglia 2003): a deterministic, dependency-free PRNG.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// If `frame` parses, re-emitting its repr and payload gives the same
    /// bytes, except the transport padding (emitted as zero) and the IPv4
    /// checksum (0x0000 and 0xffff both verify).
    fn check_round_trip(frame: &[u8]) {
        let Ok((r, payload)) = FrameRepr::parse(frame) else {
            return;
        };
        assert_eq!(payload.len(), r.payload_len);
        let mut out = [0u8; 256];
        let n = r.emit(payload, &mut out).unwrap();
        assert!(n <= frame.len());
        for i in 0..n {
            let padding = NANOTRANSPORT_OFFSET + nanotransport::field::PADDING.start
                ..NANOTRANSPORT_OFFSET + nanotransport::field::PADDING.end;
            let csum =
                IPV4_OFFSET + ipv4::field::CHECKSUM.start..IPV4_OFFSET + ipv4::field::CHECKSUM.end;
            if !padding.contains(&i) && !csum.contains(&i) {
                assert_eq!(out[i], frame[i], "byte {i}");
            }
        }
        assert_eq!(FrameRepr::parse(&out[..n]), Ok((r, payload)));
    }

    #[test]
    fn random_buffers_never_panic() {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let mut buf = [0u8; 200];
        for _ in 0..20_000 {
            let len = rng.below(buf.len() + 1);
            for b in &mut buf[..len] {
                *b = rng.next() as u8;
            }
            check_round_trip(&buf[..len]);
        }
    }

    #[test]
    fn mutated_frames_never_panic() {
        let mut rng = XorShift(0x0123_4567_89ab_cdef);
        let mut accepted = 0;
        for _ in 0..50_000 {
            let mut buf = [0u8; 120];
            buf[..72].copy_from_slice(&FRAME);
            // Flip up to four random bytes among the first 80.
            for _ in 0..rng.below(5) {
                buf[rng.below(80)] = rng.next() as u8;
            }
            // Usually fix the checksum so the mutation reaches the layers
            // behind it.
            if rng.below(4) != 0 && buf[14] & 0x0f >= 5 {
                let ip = &mut buf[IPV4_OFFSET..];
                let header_len = usize::from(ip[0] & 0x0f) * 4;
                ip[10..12].fill(0);
                let c = ipv4::checksum(&ip[..header_len]);
                ip[10..12].copy_from_slice(&c.to_be_bytes());
            }
            let len = rng.below(buf.len() + 1);
            if FrameRepr::parse(&buf[..len]).is_ok() {
                accepted += 1;
            }
            check_round_trip(&buf[..len]);
        }
        // The test exercises the success path too, not only rejections.
        assert!(accepted > 1000, "only {accepted} mutated frames parsed");
    }
}
