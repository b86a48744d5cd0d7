//! Ethernet II frame header (IEEE 802.3, clause 3.2 "Elements of the MAC
//! frame", with the EtherType interpretation of the length/type field, 3.2.6).
//!
//! ```text
//!  0                   6                  12        14
//! +-------------------+-------------------+---------+---------
//! | destination MAC   | source MAC        | type    | payload ...
//! +-------------------+-------------------+---------+---------
//! ```
//!
//! The preamble, start-of-frame delimiter and frame check sequence are not
//! part of the buffer: a frame here starts at the destination address and
//! ends with the last payload byte, as in a pcap capture. What the wire adds
//! around it is counted by [`crate::frame::wire_bits`].

use crate::Error;
use std::fmt;

/// Byte ranges of the header fields.
pub mod field {
    use crate::{Field, Rest};

    /// Destination MAC address.
    pub const DESTINATION: Field = 0..6;
    /// Source MAC address.
    pub const SOURCE: Field = 6..12;
    /// EtherType of the payload (big-endian).
    pub const ETHERTYPE: Field = 12..14;
    /// The payload (an IPv4 packet here).
    pub const PAYLOAD: Rest = 14..;
}

/// Length of the Ethernet II header in bytes.
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// EtherType of IPv4 (IEEE 802 numbers registry; RFC 894).
pub const ETHERTYPE_IPV4: u16 = 0x0800;

/// Smallest value of the length/type field that is an EtherType; smaller
/// values are IEEE 802.3 lengths (IEEE 802.3 clause 3.2.6).
pub const ETHERTYPE_MIN: u16 = 0x0600;

/// A 48-bit Ethernet MAC address, in transmission (network) order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    /// The broadcast address `ff:ff:ff:ff:ff:ff`.
    pub const BROADCAST: EthernetAddress = EthernetAddress([0xff; 6]);

    /// The address the simulator gives the host with IPv4 address `ip`
    /// (locally administered: `02:00` followed by the address).
    pub const fn for_ipv4(ip: u32) -> EthernetAddress {
        let b = ip.to_be_bytes();
        EthernetAddress([0x02, 0x00, b[0], b[1], b[2], b[3]])
    }

    /// The address held in the first six bytes of `data`.
    ///
    /// # Panics
    /// If `data` is shorter than six bytes.
    pub fn from_bytes(data: &[u8]) -> EthernetAddress {
        let mut bytes = [0; 6];
        bytes.copy_from_slice(&data[..6]);
        EthernetAddress(bytes)
    }

    /// The six bytes of the address.
    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// Whether this is the broadcast address.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// Whether the group bit (least significant bit of the first byte) is
    /// set: a multicast or broadcast address.
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// Whether this is an individual (unicast) address.
    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }
}

impl From<[u8; 6]> for EthernetAddress {
    fn from(bytes: [u8; 6]) -> Self {
        EthernetAddress(bytes)
    }
}

impl fmt::Display for EthernetAddress {
    /// Six lower-case hexadecimal bytes separated by colons:
    /// `02:00:00:00:00:01`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

/// A read/write view of an Ethernet II frame over a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length: accessors panic if it is
    /// shorter than [`HEADER_LEN`]. Use this to emit into a fresh buffer.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`Packet::check_len`]: no accessor can panic.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, Error> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// `Err(Truncated)` if the buffer cannot hold the header.
    pub fn check_len(&self) -> Result<(), Error> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Destination MAC address.
    pub fn dst_addr(&self) -> EthernetAddress {
        EthernetAddress::from_bytes(&self.buffer.as_ref()[field::DESTINATION])
    }

    /// Source MAC address.
    pub fn src_addr(&self) -> EthernetAddress {
        EthernetAddress::from_bytes(&self.buffer.as_ref()[field::SOURCE])
    }

    /// EtherType of the payload.
    pub fn ethertype(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::ETHERTYPE])
    }

    /// The bytes after the header (including any Ethernet padding).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the destination MAC address.
    pub fn set_dst_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&addr.0)
    }

    /// Sets the source MAC address.
    pub fn set_src_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&addr.0)
    }

    /// Sets the EtherType.
    pub fn set_ethertype(&mut self, ethertype: u16) {
        write_u16(&mut self.buffer.as_mut()[field::ETHERTYPE], ethertype)
    }

    /// The bytes after the header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// The meaning of an Ethernet II header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source MAC address.
    pub src_addr: EthernetAddress,
    /// Destination MAC address.
    pub dst_addr: EthernetAddress,
    /// EtherType of the payload ([`ETHERTYPE_IPV4`] for nanoPU traffic).
    pub ethertype: u16,
}

impl Repr {
    /// Reads the header of a checked packet.
    ///
    /// `Err(Unsupported)` if the type field is below [`ETHERTYPE_MIN`], that
    /// is an IEEE 802.3 length field rather than an Ethernet II EtherType.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, Error> {
        packet.check_len()?;
        let ethertype = packet.ethertype();
        if ethertype < ETHERTYPE_MIN {
            return Err(Error::Unsupported);
        }
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            ethertype,
        })
    }

    /// Length of the header this emits: [`HEADER_LEN`].
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into `packet`.
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_dst_addr(self.dst_addr);
        packet.set_src_addr(self.src_addr);
        packet.set_ethertype(self.ethertype);
    }
}

/// Reads a big-endian `u16` from a two-byte slice.
pub(crate) fn read_u16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

/// Writes a big-endian `u16` into a two-byte slice.
pub(crate) fn write_u16(b: &mut [u8], value: u16) {
    b.copy_from_slice(&value.to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    static FRAME: [u8; 18] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
        0x08, 0x00, // IPv4
        0xaa, 0xbb, 0xcc, 0xdd, // payload
    ];

    const SRC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x01]);
    const DST: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x02]);

    fn repr() -> Repr {
        Repr {
            src_addr: SRC,
            dst_addr: DST,
            ethertype: ETHERTYPE_IPV4,
        }
    }

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&FRAME[..]).unwrap();
        assert_eq!(p.dst_addr(), DST);
        assert_eq!(p.src_addr(), SRC);
        assert_eq!(p.ethertype(), ETHERTYPE_IPV4);
        assert_eq!(p.payload(), &[0xaa, 0xbb, 0xcc, 0xdd]);
    }

    #[test]
    fn construct() {
        let mut buf = [0u8; 18];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_dst_addr(DST);
        p.set_src_addr(SRC);
        p.set_ethertype(ETHERTYPE_IPV4);
        p.payload_mut().copy_from_slice(&[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(buf, FRAME);
    }

    #[test]
    fn parse_and_emit() {
        let p = Packet::new_checked(&FRAME[..]).unwrap();
        assert_eq!(Repr::parse(&p), Ok(repr()));

        let mut buf = [0u8; 18];
        buf[14..].copy_from_slice(&FRAME[14..]);
        let mut p = Packet::new_unchecked(&mut buf[..]);
        repr().emit(&mut p);
        assert_eq!(buf, FRAME);
        assert_eq!(repr().buffer_len(), 14);
    }

    #[test]
    fn truncated() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                Packet::new_checked(&FRAME[..len]).err(),
                Some(Error::Truncated)
            );
        }
        assert!(Packet::new_checked(&FRAME[..HEADER_LEN]).is_ok());
        // A wrapped short buffer still fails to parse rather than panic.
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&FRAME[..5])),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn length_field_is_unsupported() {
        let mut buf = FRAME;
        buf[12..14].copy_from_slice(&0x05dcu16.to_be_bytes()); // 1500: a length
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(Repr::parse(&p), Err(Error::Unsupported));
    }

    #[test]
    fn address_display_and_kind() {
        assert_eq!(SRC.to_string(), "02:00:00:00:00:01");
        assert_eq!(
            EthernetAddress([0xde, 0xad, 0xbe, 0xef, 0x0a, 0xff]).to_string(),
            "de:ad:be:ef:0a:ff"
        );
        assert!(SRC.is_unicast() && !SRC.is_multicast() && !SRC.is_broadcast());
        assert!(EthernetAddress::BROADCAST.is_broadcast());
        assert!(EthernetAddress::BROADCAST.is_multicast());
        assert_eq!(
            EthernetAddress::from([1, 2, 3, 4, 5, 6]).as_bytes(),
            &[1, 2, 3, 4, 5, 6]
        );
    }
}
