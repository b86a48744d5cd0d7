//! The nanoPU transport header, carried in IPv4 with protocol number
//! [`PROTOCOL`] (`0x99`, the L-NIC protocol number of the nanoPU artifact).
//!
//! The NIC splits a message into packets and reassembles it; the header says
//! which message a packet belongs to and where it goes, and carries the
//! receiver-driven control of NDP (PULL, NACK, trimmed "chopped" payloads)
//! and Homa (GRANT, priority). Sources: Ibanez et al., "The nanoPU: A
//! Nanosecond Network Stack for Datacenters", OSDI 2021, sections 3 and 5;
//! Handley et al., "Re-architecting datacenter networks and stacks for low
//! latency and high performance" (NDP), SIGCOMM 2017; Montazeri et al.,
//! "Homa", SIGCOMM 2018.
//!
//! The header is 30 bytes, every field big-endian:
//!
//! | bytes | field | width | meaning |
//! |---|---|---|---|
//! | 0 | `flags` | u8 | [`Flags`]: bit 0 DATA, 1 ACK, 2 NACK, 3 PULL, 4 CHOP, 5 GRANT; bits 6-7 reserved |
//! | 1..3 | `src_context` | u16 | sending context (layer-4 port) |
//! | 3..5 | `dst_context` | u16 | receiving context |
//! | 5..7 | `msg_len` | u16 | length of the whole message in bytes |
//! | 7..9 | `pkt_offset` | u16 | index of this packet within the message |
//! | 9..11 | `pull_offset` | u16 | NDP/Homa credit: highest packet index the receiver allows |
//! | 11..13 | `tx_msg_id` | u16 | sender's message id |
//! | 13..15 | `buf_ptr` | u16 | sender's buffer index |
//! | 15 | `buf_size_class` | u8 | size class of that buffer |
//! | 16 | `priority` | u8 | Homa priority |
//! | 17..19 | `grant_offset` | u16 | Homa grant offset |
//! | 19..30 | padding | 11 bytes | reserved: emitted as zero, ignored on parse |
//!
//! With the 14-byte Ethernet and 20-byte IPv4 headers in front, every nanoPU
//! packet has exactly 64 bytes of headers: an 8-byte message travels in a
//! 72-byte packet (nanoPU section 5.2.1) and a 16-byte one in an 80-byte
//! packet.

use crate::ethernet::{read_u16, write_u16};
use crate::Error;
use std::fmt;
use std::ops::{BitAnd, BitOr, BitOrAssign};

/// IPv4 protocol number of the nanoPU transport: the nanoPU artifact's L-NIC
/// protocol number (153, in the range 144-252 that IANA leaves unassigned).
pub const PROTOCOL: u8 = 0x99;

/// Byte ranges of the header fields.
pub mod field {
    use crate::{Field, Rest};

    /// [`super::Flags`].
    pub const FLAGS: usize = 0;
    /// Sending context.
    pub const SRC_CONTEXT: Field = 1..3;
    /// Receiving context.
    pub const DST_CONTEXT: Field = 3..5;
    /// Message length in bytes.
    pub const MSG_LEN: Field = 5..7;
    /// Index of this packet within the message.
    pub const PKT_OFFSET: Field = 7..9;
    /// Highest packet index the receiver allows (credit).
    pub const PULL_OFFSET: Field = 9..11;
    /// Sender's message id.
    pub const TX_MSG_ID: Field = 11..13;
    /// Sender's buffer index.
    pub const BUF_PTR: Field = 13..15;
    /// Size class of the sender's buffer.
    pub const BUF_SIZE_CLASS: usize = 15;
    /// Homa priority.
    pub const PRIORITY: usize = 16;
    /// Homa grant offset.
    pub const GRANT_OFFSET: Field = 17..19;
    /// Reserved padding up to 30 bytes.
    pub const PADDING: Field = 19..30;
    /// The message bytes this packet carries.
    pub const PAYLOAD: Rest = 30..;
}

/// Length of the nanoPU transport header in bytes.
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// The flags byte of the nanoPU transport header.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Flags(u8);

impl Flags {
    /// The packet carries message data.
    pub const DATA: Flags = Flags(1 << 0);
    /// Acknowledges a data packet.
    pub const ACK: Flags = Flags(1 << 1);
    /// Negative acknowledgement: the data packet arrived trimmed (NDP).
    pub const NACK: Flags = Flags(1 << 2);
    /// Grants credit up to `pull_offset` (NDP pull).
    pub const PULL: Flags = Flags(1 << 3);
    /// The payload was trimmed ("chopped") by a congested switch (NDP).
    pub const CHOP: Flags = Flags(1 << 4);
    /// Grants credit up to `grant_offset` (Homa grant).
    pub const GRANT: Flags = Flags(1 << 5);
    /// Every defined flag; the other bits are reserved.
    pub const ALL: Flags = Flags(0x3f);

    const NAMES: [(Flags, &'static str); 6] = [
        (Flags::DATA, "DATA"),
        (Flags::ACK, "ACK"),
        (Flags::NACK, "NACK"),
        (Flags::PULL, "PULL"),
        (Flags::CHOP, "CHOP"),
        (Flags::GRANT, "GRANT"),
    ];

    /// No flag set.
    pub const fn empty() -> Flags {
        Flags(0)
    }

    /// The flags in `bits`, or `None` if a reserved bit is set.
    pub const fn from_bits(bits: u8) -> Option<Flags> {
        if bits & !Self::ALL.0 == 0 {
            Some(Flags(bits))
        } else {
            None
        }
    }

    /// The flags in `bits`, reserved bits kept.
    pub const fn from_bits_retain(bits: u8) -> Flags {
        Flags(bits)
    }

    /// The raw byte.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// Whether every flag of `other` is set here.
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any flag of `other` is set here.
    pub const fn intersects(self, other: Flags) -> bool {
        self.0 & other.0 != 0
    }

    /// Whether no bit is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether a reserved bit (6 or 7) is set.
    pub const fn has_reserved(self) -> bool {
        self.0 & !Self::ALL.0 != 0
    }

    /// Sets the flags of `other`.
    pub fn insert(&mut self, other: Flags) {
        self.0 |= other.0;
    }

    /// Clears the flags of `other`.
    pub fn remove(&mut self, other: Flags) {
        self.0 &= !other.0;
    }
}

impl BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

impl BitOrAssign for Flags {
    fn bitor_assign(&mut self, rhs: Flags) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for Flags {
    type Output = Flags;
    fn bitand(self, rhs: Flags) -> Flags {
        Flags(self.0 & rhs.0)
    }
}

impl fmt::Display for Flags {
    /// Flag names joined by `|` (`DATA|CHOP`), reserved bits in hex
    /// (`DATA|0x40`), `-` when empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("-");
        }
        let mut first = true;
        let mut sep = |f: &mut fmt::Formatter<'_>| {
            let s = if first { "" } else { "|" };
            first = false;
            f.write_str(s)
        };
        for (flag, name) in Self::NAMES {
            if self.contains(flag) {
                sep(f)?;
                f.write_str(name)?;
            }
        }
        let reserved = self.0 & !Self::ALL.0;
        if reserved != 0 {
            sep(f)?;
            write!(f, "{reserved:#04x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Flags({self})")
    }
}

/// A read/write view of a nanoPU transport packet over a buffer.
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

    fn u16_at(&self, range: crate::Field) -> u16 {
        read_u16(&self.buffer.as_ref()[range])
    }

    /// The flags byte, reserved bits included.
    pub fn flags(&self) -> Flags {
        Flags::from_bits_retain(self.buffer.as_ref()[field::FLAGS])
    }

    /// Sending context (layer-4 port).
    pub fn src_context(&self) -> u16 {
        self.u16_at(field::SRC_CONTEXT)
    }

    /// Receiving context (layer-4 port).
    pub fn dst_context(&self) -> u16 {
        self.u16_at(field::DST_CONTEXT)
    }

    /// Length of the whole message in bytes.
    pub fn msg_len(&self) -> u16 {
        self.u16_at(field::MSG_LEN)
    }

    /// Index of this packet within the message.
    pub fn pkt_offset(&self) -> u16 {
        self.u16_at(field::PKT_OFFSET)
    }

    /// Highest packet index the receiver allows the sender to send.
    pub fn pull_offset(&self) -> u16 {
        self.u16_at(field::PULL_OFFSET)
    }

    /// Sender's message id.
    pub fn tx_msg_id(&self) -> u16 {
        self.u16_at(field::TX_MSG_ID)
    }

    /// Sender's buffer index.
    pub fn buf_ptr(&self) -> u16 {
        self.u16_at(field::BUF_PTR)
    }

    /// Size class of the sender's buffer.
    pub fn buf_size_class(&self) -> u8 {
        self.buffer.as_ref()[field::BUF_SIZE_CLASS]
    }

    /// Homa priority.
    pub fn priority(&self) -> u8 {
        self.buffer.as_ref()[field::PRIORITY]
    }

    /// Homa grant offset.
    pub fn grant_offset(&self) -> u16 {
        self.u16_at(field::GRANT_OFFSET)
    }

    /// The reserved padding bytes as received.
    pub fn padding(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PADDING]
    }

    /// The message bytes after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_u16_at(&mut self, range: crate::Field, value: u16) {
        write_u16(&mut self.buffer.as_mut()[range], value)
    }

    /// Sets the flags byte.
    pub fn set_flags(&mut self, flags: Flags) {
        self.buffer.as_mut()[field::FLAGS] = flags.bits();
    }

    /// Sets the sending context.
    pub fn set_src_context(&mut self, value: u16) {
        self.set_u16_at(field::SRC_CONTEXT, value)
    }

    /// Sets the receiving context.
    pub fn set_dst_context(&mut self, value: u16) {
        self.set_u16_at(field::DST_CONTEXT, value)
    }

    /// Sets the message length in bytes.
    pub fn set_msg_len(&mut self, value: u16) {
        self.set_u16_at(field::MSG_LEN, value)
    }

    /// Sets the packet index within the message.
    pub fn set_pkt_offset(&mut self, value: u16) {
        self.set_u16_at(field::PKT_OFFSET, value)
    }

    /// Sets the credit (highest allowed packet index).
    pub fn set_pull_offset(&mut self, value: u16) {
        self.set_u16_at(field::PULL_OFFSET, value)
    }

    /// Sets the sender's message id.
    pub fn set_tx_msg_id(&mut self, value: u16) {
        self.set_u16_at(field::TX_MSG_ID, value)
    }

    /// Sets the sender's buffer index.
    pub fn set_buf_ptr(&mut self, value: u16) {
        self.set_u16_at(field::BUF_PTR, value)
    }

    /// Sets the size class of the sender's buffer.
    pub fn set_buf_size_class(&mut self, value: u8) {
        self.buffer.as_mut()[field::BUF_SIZE_CLASS] = value;
    }

    /// Sets the Homa priority.
    pub fn set_priority(&mut self, value: u8) {
        self.buffer.as_mut()[field::PRIORITY] = value;
    }

    /// Sets the Homa grant offset.
    pub fn set_grant_offset(&mut self, value: u16) {
        self.set_u16_at(field::GRANT_OFFSET, value)
    }

    /// Zeroes the reserved padding.
    pub fn clear_padding(&mut self) {
        self.buffer.as_mut()[field::PADDING].fill(0);
    }

    /// The message bytes after the header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// The meaning of a nanoPU transport header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Packet type and state bits.
    pub flags: Flags,
    /// Sending context (layer-4 port).
    pub src_context: u16,
    /// Receiving context (layer-4 port).
    pub dst_context: u16,
    /// Length of the whole message in bytes.
    pub msg_len: u16,
    /// Index of this packet within the message.
    pub pkt_offset: u16,
    /// NDP/Homa credit: highest packet index the receiver allows.
    pub pull_offset: u16,
    /// Sender's message id.
    pub tx_msg_id: u16,
    /// Sender's buffer index.
    pub buf_ptr: u16,
    /// Size class of the sender's buffer.
    pub buf_size_class: u8,
    /// Homa priority.
    pub priority: u8,
    /// Homa grant offset.
    pub grant_offset: u16,
}

impl Repr {
    /// Reads the header of a packet; the padding is ignored.
    ///
    /// `Err(Truncated)` if the buffer is shorter than the header,
    /// `Err(Unsupported)` if a reserved flag bit is set.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, Error> {
        packet.check_len()?;
        let flags = packet.flags();
        if flags.has_reserved() {
            return Err(Error::Unsupported);
        }
        Ok(Repr {
            flags,
            src_context: packet.src_context(),
            dst_context: packet.dst_context(),
            msg_len: packet.msg_len(),
            pkt_offset: packet.pkt_offset(),
            pull_offset: packet.pull_offset(),
            tx_msg_id: packet.tx_msg_id(),
            buf_ptr: packet.buf_ptr(),
            buf_size_class: packet.buf_size_class(),
            priority: packet.priority(),
            grant_offset: packet.grant_offset(),
        })
    }

    /// Length of the header this emits: [`HEADER_LEN`].
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header, padding zeroed, into `packet` (the payload is left
    /// alone).
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_flags(self.flags);
        packet.set_src_context(self.src_context);
        packet.set_dst_context(self.dst_context);
        packet.set_msg_len(self.msg_len);
        packet.set_pkt_offset(self.pkt_offset);
        packet.set_pull_offset(self.pull_offset);
        packet.set_tx_msg_id(self.tx_msg_id);
        packet.set_buf_ptr(self.buf_ptr);
        packet.set_buf_size_class(self.buf_size_class);
        packet.set_priority(self.priority);
        packet.set_grant_offset(self.grant_offset);
        packet.clear_padding();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static PACKET: [u8; 34] = [
        0x11, // DATA | CHOP
        0x12, 0x34, // src_context
        0x56, 0x78, // dst_context
        0x01, 0x00, // msg_len 256
        0x00, 0x02, // pkt_offset 2
        0x00, 0x05, // pull_offset 5
        0xab, 0xcd, // tx_msg_id
        0x00, 0x2a, // buf_ptr 42
        0x03, // buf_size_class
        0x07, // priority
        0x00, 0x09, // grant_offset
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // padding
        0xde, 0xad, 0xbe, 0xef, // payload
    ];

    fn repr() -> Repr {
        Repr {
            flags: Flags::DATA | Flags::CHOP,
            src_context: 0x1234,
            dst_context: 0x5678,
            msg_len: 256,
            pkt_offset: 2,
            pull_offset: 5,
            tx_msg_id: 0xabcd,
            buf_ptr: 42,
            buf_size_class: 3,
            priority: 7,
            grant_offset: 9,
        }
    }

    #[test]
    fn header_is_30_bytes() {
        assert_eq!(HEADER_LEN, 30);
        assert_eq!(field::PADDING.end, HEADER_LEN);
    }

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&PACKET[..]).unwrap();
        assert_eq!(p.flags(), Flags::DATA | Flags::CHOP);
        assert_eq!(p.src_context(), 0x1234);
        assert_eq!(p.dst_context(), 0x5678);
        assert_eq!(p.msg_len(), 256);
        assert_eq!(p.pkt_offset(), 2);
        assert_eq!(p.pull_offset(), 5);
        assert_eq!(p.tx_msg_id(), 0xabcd);
        assert_eq!(p.buf_ptr(), 42);
        assert_eq!(p.buf_size_class(), 3);
        assert_eq!(p.priority(), 7);
        assert_eq!(p.grant_offset(), 9);
        assert_eq!(p.padding(), &[0; 11]);
        assert_eq!(p.payload(), &[0xde, 0xad, 0xbe, 0xef]);
    }

    #[test]
    fn construct() {
        let mut buf = [0xffu8; 34];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_flags(Flags::DATA | Flags::CHOP);
        p.set_src_context(0x1234);
        p.set_dst_context(0x5678);
        p.set_msg_len(256);
        p.set_pkt_offset(2);
        p.set_pull_offset(5);
        p.set_tx_msg_id(0xabcd);
        p.set_buf_ptr(42);
        p.set_buf_size_class(3);
        p.set_priority(7);
        p.set_grant_offset(9);
        p.clear_padding();
        p.payload_mut().copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(buf, PACKET);
    }

    #[test]
    fn parse_and_emit() {
        let p = Packet::new_checked(&PACKET[..]).unwrap();
        assert_eq!(Repr::parse(&p), Ok(repr()));

        // Emit over garbage: the padding comes out zero.
        let mut buf = [0x5au8; 34];
        buf[30..].copy_from_slice(&PACKET[30..]);
        repr().emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, PACKET);
        assert_eq!(repr().buffer_len(), 30);
    }

    #[test]
    fn padding_ignored_on_parse() {
        let mut buf = PACKET;
        buf[19..30].fill(0xee);
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(Repr::parse(&p), Ok(repr()));
    }

    #[test]
    fn reserved_flags_unsupported() {
        for bit in [0x40, 0x80] {
            let mut buf = PACKET;
            buf[0] |= bit;
            let p = Packet::new_checked(&buf[..]).unwrap();
            assert_eq!(Repr::parse(&p), Err(Error::Unsupported));
        }
    }

    #[test]
    fn truncated() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                Packet::new_checked(&PACKET[..len]).err(),
                Some(Error::Truncated)
            );
            assert_eq!(
                Repr::parse(&Packet::new_unchecked(&PACKET[..len])),
                Err(Error::Truncated)
            );
        }
        let p = Packet::new_checked(&PACKET[..HEADER_LEN]).unwrap();
        assert!(p.payload().is_empty());
    }

    #[test]
    fn flags() {
        let bits = [(Flags::DATA, 0x01), (Flags::ACK, 0x02), (Flags::NACK, 0x04)];
        for (f, b) in bits {
            assert_eq!(f.bits(), b);
        }
        assert_eq!(Flags::PULL.bits(), 0x08);
        assert_eq!(Flags::CHOP.bits(), 0x10);
        assert_eq!(Flags::GRANT.bits(), 0x20);
        let mut f = Flags::ACK | Flags::PULL;
        assert!(f.contains(Flags::ACK) && f.contains(Flags::PULL));
        assert!(f.contains(Flags::ACK | Flags::PULL));
        assert!(!f.contains(Flags::ACK | Flags::DATA));
        assert!(f.intersects(Flags::ACK | Flags::DATA));
        f.remove(Flags::ACK);
        assert_eq!(f, Flags::PULL);
        f.insert(Flags::NACK);
        f |= Flags::GRANT;
        assert_eq!(f & Flags::NACK, Flags::NACK);
        assert_eq!(f.to_string(), "NACK|PULL|GRANT");
        assert_eq!(format!("{:?}", Flags::DATA), "Flags(DATA)");
        assert_eq!(Flags::empty().to_string(), "-");
        assert!(Flags::empty().is_empty());
        assert_eq!(Flags::from_bits(0x41), None);
        assert_eq!(Flags::from_bits(0x3f), Some(Flags::ALL));
        assert_eq!(Flags::from_bits_retain(0x41).to_string(), "DATA|0x40");
    }

    #[test]
    fn header_stack_is_64_bytes() {
        use crate::{ethernet, ipv4};
        let headers = ethernet::HEADER_LEN + ipv4::HEADER_LEN + HEADER_LEN;
        assert_eq!(headers, 64);
        // nanoPU section 5.2.1: an 8-byte message is a 72-byte packet.
        assert_eq!(headers + 8, 72);
        // NanoTransport Table 1: a 16-byte message is an 80-byte packet.
        assert_eq!(headers + 16, 80);
    }
}
