//! IPv4 header without options (RFC 791, section 3.1 "Internet Header
//! Format"; header checksum computed as in RFC 1071).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Version|  IHL  |Type of Service|          Total Length         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         Identification        |Flags|      Fragment Offset    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Time to Live |    Protocol   |         Header Checksum       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       Source Address                          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Destination Address                        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! What this simulator accepts ([`Repr::parse`]): version 4, IHL 5 (a header
//! with options is [`Error::Unsupported`]), a verifying checksum, the reserved
//! flag clear, and no fragments (more-fragments set or a non-zero offset is
//! [`Error::Unsupported`]: nanoPU messages are split into packets by the
//! transport, never by IP). The whole Type of Service byte (DSCP and ECN,
//! RFC 2474 and RFC 3168) is kept as one value, [`Repr::tos`], so that a
//! transport can carry its priorities there.

use crate::ethernet::{read_u16, write_u16};
use crate::Error;
use std::fmt;

/// Byte ranges of the header fields.
pub mod field {
    use crate::{Field, Rest};

    /// Version (high nibble) and Internet Header Length in 32-bit words (low
    /// nibble).
    pub const VER_IHL: usize = 0;
    /// Type of Service: DSCP (high six bits) and ECN (low two bits).
    pub const TOS: usize = 1;
    /// Total length of the datagram, header included, in bytes.
    pub const LENGTH: Field = 2..4;
    /// Identification.
    pub const IDENT: Field = 4..6;
    /// Flags (high three bits: reserved, don't fragment, more fragments) and
    /// fragment offset in 8-byte units (low 13 bits).
    pub const FLG_OFF: Field = 6..8;
    /// Time to live.
    pub const TTL: usize = 8;
    /// Protocol of the payload.
    pub const PROTOCOL: usize = 9;
    /// Header checksum.
    pub const CHECKSUM: Field = 10..12;
    /// Source address.
    pub const SRC_ADDR: Field = 12..16;
    /// Destination address.
    pub const DST_ADDR: Field = 16..20;
    /// The payload of a header without options.
    pub const PAYLOAD: Rest = 20..;
}

/// Length of an IPv4 header without options, in bytes.
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// Time to live that emitters use by default (RFC 1700 / the IANA
/// recommendation of 64).
pub const DEFAULT_TTL: u8 = 64;

/// Largest payload an IPv4 header without options can announce.
pub const MAX_PAYLOAD_LEN: usize = u16::MAX as usize - HEADER_LEN;

const FLAG_RESERVED: u16 = 0x8000;
const FLAG_DONT_FRAG: u16 = 0x4000;
const FLAG_MORE_FRAGS: u16 = 0x2000;
const FRAG_OFFSET_MASK: u16 = 0x1fff;

/// An IPv4 address, in network order: `10.0.0.1` is `[10, 0, 0, 1]` and
/// the integer `0x0a000001`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ipv4Address(pub [u8; 4]);

impl Ipv4Address {
    /// `0.0.0.0`.
    pub const UNSPECIFIED: Ipv4Address = Ipv4Address([0; 4]);
    /// `255.255.255.255`.
    pub const BROADCAST: Ipv4Address = Ipv4Address([0xff; 4]);

    /// The address `a.b.c.d`.
    pub const fn new(a: u8, b: u8, c: u8, d: u8) -> Ipv4Address {
        Ipv4Address([a, b, c, d])
    }

    /// The address whose network-order integer is `bits` (`0x0a000001` is
    /// `10.0.0.1`).
    pub const fn from_bits(bits: u32) -> Ipv4Address {
        Ipv4Address(bits.to_be_bytes())
    }

    /// The network-order integer of the address (`10.0.0.1` is
    /// `0x0a000001`), as the nanoPU application header carries it.
    pub const fn to_bits(self) -> u32 {
        u32::from_be_bytes(self.0)
    }

    /// The address held in the first four bytes of `data`.
    ///
    /// # Panics
    /// If `data` is shorter than four bytes.
    pub fn from_bytes(data: &[u8]) -> Ipv4Address {
        let mut bytes = [0; 4];
        bytes.copy_from_slice(&data[..4]);
        Ipv4Address(bytes)
    }

    /// The four bytes of the address.
    pub const fn as_bytes(&self) -> &[u8; 4] {
        &self.0
    }

    /// Whether this is `0.0.0.0`.
    pub const fn is_unspecified(&self) -> bool {
        self.to_bits() == 0
    }
}

impl From<u32> for Ipv4Address {
    fn from(bits: u32) -> Self {
        Ipv4Address::from_bits(bits)
    }
}

impl From<Ipv4Address> for u32 {
    fn from(addr: Ipv4Address) -> Self {
        addr.to_bits()
    }
}

impl From<[u8; 4]> for Ipv4Address {
    fn from(bytes: [u8; 4]) -> Self {
        Ipv4Address(bytes)
    }
}

impl From<std::net::Ipv4Addr> for Ipv4Address {
    fn from(addr: std::net::Ipv4Addr) -> Self {
        Ipv4Address(addr.octets())
    }
}

impl From<Ipv4Address> for std::net::Ipv4Addr {
    fn from(addr: Ipv4Address) -> Self {
        std::net::Ipv4Addr::from(addr.0)
    }
}

impl fmt::Display for Ipv4Address {
    /// Dotted decimal: `10.0.0.1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        write!(f, "{}.{}.{}.{}", b[0], b[1], b[2], b[3])
    }
}

/// The Internet checksum of `data` (RFC 1071): the ones' complement of the
/// ones'-complement sum of its big-endian 16-bit words, an odd last byte
/// padded with zero.
///
/// Computed over a header whose checksum field is zero it gives the value to
/// store there; computed over a header with a correct checksum it gives 0.
pub fn checksum(data: &[u8]) -> u16 {
    // A u64 accumulator cannot overflow for any slice that fits in memory
    // (2^32 words of 0xffffffff); the carries are folded back at the end.
    // Summing 32-bit words is summing their 16-bit halves (RFC 1071 §2(B):
    // 2^16 is 1 modulo 0xffff), in half the additions.
    let mut sum: u64 = 0;
    let mut quads = data.chunks_exact(4);
    for q in &mut quads {
        sum += u64::from(u32::from_be_bytes([q[0], q[1], q[2], q[3]]));
    }
    let mut words = quads.remainder().chunks_exact(2);
    for w in &mut words {
        sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A read/write view of an IPv4 packet over a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it: accessors panic if it is shorter
    /// than the header, and [`Packet::payload`] if the length fields exceed
    /// it. Use this to emit into a fresh buffer.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`Packet::check_len`]: no accessor can panic
    /// (as long as the IHL and total length are not changed afterwards).
    pub fn new_checked(buffer: T) -> Result<Packet<T>, Error> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the fixed header, the header length the
    /// IHL announces, and the total length.
    ///
    /// `Err(Truncated)` if the buffer is shorter than any of them;
    /// `Err(Malformed)` if the IHL is below 5 or the total length is shorter
    /// than the header. A buffer longer than the total length is accepted
    /// (Ethernet pads short frames); the payload ends at the total length.
    pub fn check_len(&self) -> Result<(), Error> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = usize::from(self.header_len());
        if header_len < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if header_len > len {
            return Err(Error::Truncated);
        }
        let total_len = usize::from(self.total_len());
        if total_len < header_len {
            return Err(Error::Malformed);
        }
        if total_len > len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// IP version (4 for IPv4).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL times 4).
    pub fn header_len(&self) -> u8 {
        (self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// The whole Type of Service byte (DSCP and ECN).
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref()[field::TOS]
    }

    /// Differentiated Services Code Point: the high six bits of the ToS byte.
    pub fn dscp(&self) -> u8 {
        self.tos() >> 2
    }

    /// Explicit Congestion Notification: the low two bits of the ToS byte.
    pub fn ecn(&self) -> u8 {
        self.tos() & 0x03
    }

    /// Total length of the datagram (header and payload), in bytes.
    pub fn total_len(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// Identification.
    pub fn ident(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::IDENT])
    }

    /// The reserved flag (must be zero).
    pub fn reserved_flag(&self) -> bool {
        read_u16(&self.buffer.as_ref()[field::FLG_OFF]) & FLAG_RESERVED != 0
    }

    /// The don't-fragment flag.
    pub fn dont_frag(&self) -> bool {
        read_u16(&self.buffer.as_ref()[field::FLG_OFF]) & FLAG_DONT_FRAG != 0
    }

    /// The more-fragments flag.
    pub fn more_frags(&self) -> bool {
        read_u16(&self.buffer.as_ref()[field::FLG_OFF]) & FLAG_MORE_FRAGS != 0
    }

    /// Fragment offset in bytes (the field counts 8-byte units).
    pub fn frag_offset(&self) -> u16 {
        (read_u16(&self.buffer.as_ref()[field::FLG_OFF]) & FRAG_OFFSET_MASK) << 3
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol number of the payload.
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }

    /// Header checksum as stored.
    pub fn checksum(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv4Address {
        Ipv4Address::from_bytes(&self.buffer.as_ref()[field::SRC_ADDR])
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Address {
        Ipv4Address::from_bytes(&self.buffer.as_ref()[field::DST_ADDR])
    }

    /// Whether the header checksum (over the IHL-announced header) verifies.
    pub fn verify_checksum(&self) -> bool {
        checksum(&self.buffer.as_ref()[..usize::from(self.header_len())]) == 0
    }

    /// The payload: from the end of the header to the total length.
    pub fn payload(&self) -> &[u8] {
        let range = usize::from(self.header_len())..usize::from(self.total_len());
        &self.buffer.as_ref()[range]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the version.
    pub fn set_version(&mut self, version: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (version << 4);
    }

    /// Sets the header length in bytes (a multiple of 4, at most 60).
    pub fn set_header_len(&mut self, len: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | ((len / 4) & 0x0f);
    }

    /// Sets the whole Type of Service byte.
    pub fn set_tos(&mut self, tos: u8) {
        self.buffer.as_mut()[field::TOS] = tos;
    }

    /// Sets the total length (header and payload) in bytes.
    pub fn set_total_len(&mut self, len: u16) {
        write_u16(&mut self.buffer.as_mut()[field::LENGTH], len)
    }

    /// Sets the identification.
    pub fn set_ident(&mut self, ident: u16) {
        write_u16(&mut self.buffer.as_mut()[field::IDENT], ident)
    }

    /// Sets the flags and fragment offset: reserved and more-fragments clear,
    /// offset zero, don't-fragment as given.
    pub fn set_unfragmented(&mut self, dont_frag: bool) {
        let value = if dont_frag { FLAG_DONT_FRAG } else { 0 };
        write_u16(&mut self.buffer.as_mut()[field::FLG_OFF], value)
    }

    /// Sets the raw flags-and-fragment-offset field.
    pub fn set_flags_and_frag_offset(&mut self, raw: u16) {
        write_u16(&mut self.buffer.as_mut()[field::FLG_OFF], raw)
    }

    /// Sets the time to live.
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[field::TTL] = ttl;
    }

    /// Sets the protocol number.
    pub fn set_protocol(&mut self, protocol: u8) {
        self.buffer.as_mut()[field::PROTOCOL] = protocol;
    }

    /// Sets the stored checksum.
    pub fn set_checksum(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::CHECKSUM], value)
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: Ipv4Address) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&addr.0)
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: Ipv4Address) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&addr.0)
    }

    /// Computes the header checksum and stores it.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let sum = checksum(&self.buffer.as_ref()[..usize::from(self.header_len())]);
        self.set_checksum(sum);
    }

    /// The payload, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = usize::from(self.header_len())..usize::from(self.total_len());
        &mut self.buffer.as_mut()[range]
    }
}

/// The meaning of an IPv4 header without options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source address.
    pub src_addr: Ipv4Address,
    /// Destination address.
    pub dst_addr: Ipv4Address,
    /// Protocol number of the payload
    /// ([`crate::nanotransport::PROTOCOL`] for nanoPU traffic).
    pub protocol: u8,
    /// Payload length in bytes (total length minus the 20-byte header).
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
    /// The whole Type of Service byte: DSCP in the high six bits, ECN in the
    /// low two.
    pub tos: u8,
    /// Identification.
    pub ident: u16,
    /// The don't-fragment flag.
    pub dont_frag: bool,
}

impl Repr {
    /// Reads and validates the header of a packet.
    ///
    /// Errors: those of [`Packet::check_len`]; `Malformed` for a version
    /// other than 4 or the reserved flag set; `Unsupported` for options
    /// (IHL not 5) or a fragment; `Checksum` if the checksum does not verify.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, Error> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(Error::Malformed);
        }
        if usize::from(packet.header_len()) != HEADER_LEN {
            return Err(Error::Unsupported);
        }
        if !packet.verify_checksum() {
            return Err(Error::Checksum);
        }
        if packet.reserved_flag() {
            return Err(Error::Malformed);
        }
        if packet.more_frags() || packet.frag_offset() != 0 {
            return Err(Error::Unsupported);
        }
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len()) - HEADER_LEN,
            ttl: packet.ttl(),
            tos: packet.tos(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
        })
    }

    /// Length of the header this emits: [`HEADER_LEN`].
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header, checksum included, into `packet` (the payload is
    /// left alone).
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`], or if `payload_len`
    /// exceeds [`MAX_PAYLOAD_LEN`] (use [`crate::frame::FrameRepr::emit`] for
    /// a checked emit).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        let total_len = u16::try_from(HEADER_LEN + self.payload_len)
            .expect("IPv4 payload longer than 65515 bytes");
        packet.set_version(4);
        packet.set_header_len(HEADER_LEN as u8);
        packet.set_tos(self.tos);
        packet.set_total_len(total_len);
        packet.set_ident(self.ident);
        packet.set_unfragmented(self.dont_frag);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10.0.0.1 -> 10.0.0.2, protocol 0x99, ToS 0x28, ident 0x1234, DF,
    /// TTL 64, four payload bytes. Checksum worked by hand:
    /// 4528 + 0018 + 1234 + 4000 + 4099 + 0a00 + 0001 + 0a00 + 0002
    /// = 0xec10 (no carry), so the checksum is !0xec10 = 0x13ef.
    static PACKET: [u8; 24] = [
        0x45, 0x28, 0x00, 0x18, // version 4, IHL 5, ToS, total length 24
        0x12, 0x34, 0x40, 0x00, // ident, DF
        0x40, 0x99, 0x13, 0xef, // TTL 64, protocol 0x99, checksum
        0x0a, 0x00, 0x00, 0x01, // src 10.0.0.1
        0x0a, 0x00, 0x00, 0x02, // dst 10.0.0.2
        0xde, 0xad, 0xbe, 0xef, // payload
    ];

    fn repr() -> Repr {
        Repr {
            src_addr: Ipv4Address::new(10, 0, 0, 1),
            dst_addr: Ipv4Address::new(10, 0, 0, 2),
            protocol: 0x99,
            payload_len: 4,
            ttl: 64,
            tos: 0x28,
            ident: 0x1234,
            dont_frag: true,
        }
    }

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&PACKET[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.tos(), 0x28);
        assert_eq!(p.dscp(), 10);
        assert_eq!(p.ecn(), 0);
        assert_eq!(p.total_len(), 24);
        assert_eq!(p.ident(), 0x1234);
        assert!(p.dont_frag() && !p.more_frags() && !p.reserved_flag());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), 0x99);
        assert_eq!(p.checksum(), 0x13ef);
        assert!(p.verify_checksum());
        assert_eq!(p.src_addr(), Ipv4Address::new(10, 0, 0, 1));
        assert_eq!(p.dst_addr(), Ipv4Address::new(10, 0, 0, 2));
        assert_eq!(p.payload(), &[0xde, 0xad, 0xbe, 0xef]);
    }

    #[test]
    fn construct() {
        let mut buf = [0u8; 24];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_version(4);
        p.set_header_len(20);
        p.set_tos(0x28);
        p.set_total_len(24);
        p.set_ident(0x1234);
        p.set_unfragmented(true);
        p.set_ttl(64);
        p.set_protocol(0x99);
        p.set_src_addr(Ipv4Address::new(10, 0, 0, 1));
        p.set_dst_addr(Ipv4Address::new(10, 0, 0, 2));
        p.fill_checksum();
        p.payload_mut().copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(buf, PACKET);
    }

    #[test]
    fn parse_and_emit() {
        let p = Packet::new_checked(&PACKET[..]).unwrap();
        assert_eq!(Repr::parse(&p), Ok(repr()));

        let mut buf = [0u8; 24];
        buf[20..].copy_from_slice(&PACKET[20..]);
        repr().emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, PACKET);
    }

    proptest::proptest! {
        /// The 32-bit sums give the checksum of RFC 1071's 16-bit definition.
        #[test]
        fn checksum_is_the_16_bit_ones_complement_sum(
            data in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
        ) {
            let mut sum: u64 = data
                .chunks(2)
                .map(|w| u64::from(w[0]) << 8 | u64::from(*w.get(1).unwrap_or(&0)))
                .sum();
            while sum >> 16 != 0 {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            proptest::prop_assert_eq!(checksum(&data), !(sum as u16));
        }
    }

    #[test]
    fn checksum_rfc1071_example() {
        // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to 0xddf2.
        assert_eq!(
            checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            !0xddf2
        );
        assert_eq!(checksum(&[]), 0xffff);
        assert_eq!(checksum(&[0x01]), !0x0100);
        // Wrong checksum is reported.
        let mut buf = PACKET;
        buf[11] ^= 1;
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert!(!p.verify_checksum());
        assert_eq!(Repr::parse(&p), Err(Error::Checksum));
    }

    #[test]
    fn length_checks() {
        for len in 0..PACKET.len() {
            assert_eq!(
                Packet::new_checked(&PACKET[..len]).err(),
                Some(Error::Truncated),
                "len {len}"
            );
        }
        // Ethernet padding after the datagram is fine and not payload.
        let mut padded = [0u8; 30];
        padded[..24].copy_from_slice(&PACKET);
        let p = Packet::new_checked(&padded[..]).unwrap();
        assert_eq!(p.payload().len(), 4);
        assert_eq!(Repr::parse(&p), Ok(repr()));
        // Total length shorter than the header.
        let mut buf = PACKET;
        buf[2..4].copy_from_slice(&19u16.to_be_bytes());
        assert_eq!(Packet::new_checked(&buf[..]).err(), Some(Error::Malformed));
        // IHL below 5.
        let mut buf = PACKET;
        buf[0] = 0x44;
        assert_eq!(Packet::new_checked(&buf[..]).err(), Some(Error::Malformed));
        // IHL announcing more header than the buffer holds.
        let mut buf = PACKET;
        buf[0] = 0x47;
        assert_eq!(Packet::new_checked(&buf[..]).err(), Some(Error::Truncated));
        // Unchecked wrapping of a short buffer still parses to an error.
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&PACKET[..3])),
            Err(Error::Truncated)
        );
    }

    /// `PACKET` with byte `i` set to `v` and the checksum recomputed.
    fn patched(i: usize, v: u8) -> [u8; 24] {
        let mut buf = PACKET;
        buf[i] = v;
        Packet::new_unchecked(&mut buf[..]).fill_checksum();
        buf
    }

    #[test]
    fn rejects() {
        let parse = |buf: &[u8]| Repr::parse(&Packet::new_checked(buf).unwrap());
        // Version 6.
        assert_eq!(parse(&patched(0, 0x65)), Err(Error::Malformed));
        // Options (IHL 6, total length still covers it).
        assert_eq!(parse(&patched(0, 0x46)), Err(Error::Unsupported));
        // Reserved flag.
        assert_eq!(parse(&patched(6, 0xc0)), Err(Error::Malformed));
        // More fragments.
        assert_eq!(parse(&patched(6, 0x20)), Err(Error::Unsupported));
        // Non-zero fragment offset.
        assert_eq!(parse(&patched(7, 0x01)), Err(Error::Unsupported));
        // DF clear is fine.
        let r = parse(&patched(6, 0x00)).unwrap();
        assert!(!r.dont_frag);
    }

    #[test]
    fn tos_byte_round_trips() {
        for tos in [0x00, 0x01, 0x28, 0xb8, 0xff] {
            let buf = patched(1, tos);
            let r = Repr::parse(&Packet::new_checked(&buf[..]).unwrap()).unwrap();
            assert_eq!(r.tos, tos);
            let mut out = [0u8; 24];
            out[20..].copy_from_slice(&PACKET[20..]);
            r.emit(&mut Packet::new_unchecked(&mut out[..]));
            assert_eq!(out, buf);
        }
    }

    #[test]
    fn address_conversions() {
        let a = Ipv4Address::new(10, 0, 0, 1);
        assert_eq!(a.to_bits(), 0x0a00_0001);
        assert_eq!(u32::from(a), 0x0a00_0001);
        assert_eq!(Ipv4Address::from(0x0a00_0001), a);
        assert_eq!(
            Ipv4Address::from_bits(0xc0a8_0102).to_string(),
            "192.168.1.2"
        );
        assert_eq!(a.to_string(), "10.0.0.1");
        assert_eq!(Ipv4Address::BROADCAST.to_string(), "255.255.255.255");
        assert!(Ipv4Address::UNSPECIFIED.is_unspecified());
        assert_eq!(
            std::net::Ipv4Addr::from(a),
            std::net::Ipv4Addr::new(10, 0, 0, 1)
        );
        assert_eq!(Ipv4Address::from(std::net::Ipv4Addr::new(10, 0, 0, 1)), a);
        assert_eq!(Ipv4Address::from([10, 0, 0, 1]).as_bytes(), &[10, 0, 0, 1]);
    }
}
