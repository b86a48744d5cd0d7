//! The RDMA NIC's packets on our network: RoCE v2 (InfiniBand transport
//! headers in UDP/IPv4, destination port 4791), one packet per message.
//! Layout and field meanings: `docs/rdma-wire-format.md`.
//!
//! ```text
//! Ethernet (14) | IPv4 (20, protocol 17) | UDP (8, dst 4791) | BTH (12) | extension headers | payload | ICRC (4)
//! ```

use nanopu_wire::frame::IPV4_OFFSET;

pub const ROCE_UDP_PORT: u16 = 4791;
const ETH: usize = 14;
const IP: usize = 20;
const UDP: usize = 8;
pub const BTH_OFFSET: usize = ETH + IP + UDP;
const BTH: usize = 12;
pub const ICRC: usize = 4;

/// Base transport header opcodes (IB spec Table 35): transport in the top
/// three bits (RC 0x00, UC 0x20, UD 0x60), operation in the low five.
pub mod opcode {
    pub const RC_SEND_ONLY: u8 = 0x04;
    pub const RC_WRITE_ONLY: u8 = 0x0a;
    pub const RC_READ_REQUEST: u8 = 0x0c;
    pub const RC_READ_RESPONSE_ONLY: u8 = 0x10;
    pub const RC_ACK: u8 = 0x11;
    pub const RC_ATOMIC_ACK: u8 = 0x12;
    pub const RC_CMP_SWAP: u8 = 0x13;
    pub const RC_FETCH_ADD: u8 = 0x14;
    pub const UC_SEND_ONLY: u8 = 0x24;
    pub const UC_WRITE_ONLY: u8 = 0x2a;
    pub const UD_SEND_ONLY: u8 = 0x64;
}

/// AETH syndromes (IB spec 9.7.5.1.2): ACK, or NAK with a reason.
pub mod syndrome {
    pub const ACK: u8 = 0x00;
    pub const NAK_REMOTE_ACCESS: u8 = 0x62;
    pub const NAK_INVALID_REQUEST: u8 = 0x61;
}

/// A packet's transport content (what follows the UDP header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub opcode: u8,
    pub dst_qp: u32,
    pub psn: u32,
    /// RETH / AtomicETH: virtual address, rkey, DMA length.
    pub va: u64,
    pub rkey: u32,
    pub dma_len: u32,
    /// AtomicETH: swap (or add) and compare data.
    pub swap_add: u64,
    pub compare: u64,
    /// AETH: syndrome (and MSN, unused: 0).
    pub syndrome: u8,
    /// AtomicAckETH: the original data.
    pub orig: u64,
    /// DETH: source QP (the Q_Key is not checked).
    pub src_qp: u32,
}

impl Header {
    pub fn new(opcode: u8, dst_qp: u32, psn: u32) -> Header {
        Header {
            opcode,
            dst_qp,
            psn,
            va: 0,
            rkey: 0,
            dma_len: 0,
            swap_add: 0,
            compare: 0,
            syndrome: 0,
            orig: 0,
            src_qp: 0,
        }
    }

    /// Extension headers this opcode carries, in wire order.
    fn layout(opcode: u8) -> Option<(bool, bool, bool, bool, bool)> {
        use opcode::*;
        // (RETH, AtomicETH, AETH, AtomicAckETH, DETH)
        Some(match opcode {
            RC_SEND_ONLY | UC_SEND_ONLY => (false, false, false, false, false),
            RC_WRITE_ONLY | UC_WRITE_ONLY | RC_READ_REQUEST => (true, false, false, false, false),
            RC_READ_RESPONSE_ONLY | RC_ACK => (false, false, true, false, false),
            RC_ATOMIC_ACK => (false, false, true, true, false),
            RC_CMP_SWAP | RC_FETCH_ADD => (false, true, false, false, false),
            UD_SEND_ONLY => (false, false, false, false, true),
            _ => return None,
        })
    }

    /// Bytes of BTH and extension headers.
    pub fn len(opcode: u8) -> usize {
        let Some((reth, aeth_atomic, aeth, ack, deth)) = Self::layout(opcode) else {
            return BTH;
        };
        BTH + 16 * reth as usize
            + 28 * aeth_atomic as usize
            + 4 * aeth as usize
            + 8 * ack as usize
            + 8 * deth as usize
    }
}

/// Why a frame is not an RDMA packet we can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    #[error("frame too short for RoCE v2 headers")]
    Short,
    #[error("not IPv4/UDP to port 4791")]
    NotRoce,
    #[error("BTH opcode {0:#04x} is not one this NIC implements")]
    Opcode(u8),
    #[error("IPv4 or UDP length disagrees with the frame")]
    Length,
}

/// A parsed packet: header, source address, payload range in the frame.
#[derive(Clone, Copy, Debug)]
pub struct Parsed {
    pub hdr: Header,
    pub src_ip: u32,
    pub payload: (usize, usize),
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0, |a, &x| (a << 8) | x as u64)
}

fn put(buf: &mut [u8], v: u64) {
    let n = buf.len();
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (v >> (8 * (n - 1 - i))) as u8;
    }
}

/// Writes a packet into `frame` (cleared first): Ethernet, IPv4, UDP, BTH,
/// the opcode's extension headers, `payload`, ICRC (zeros: the network
/// corrupts nothing, and a truncated packet fails the length checks).
pub fn emit(frame: &mut Vec<u8>, src_ip: u32, dst_ip: u32, h: &Header, payload: &[u8]) {
    let hl = Header::len(h.opcode);
    let total = BTH_OFFSET + hl + payload.len() + ICRC;
    frame.clear();
    frame.resize(total.max(nanopu_wire::frame::MIN_FRAME), 0);
    // Ethernet: locally administered MACs derived from the addresses.
    frame[0..2].copy_from_slice(&[0x02, 0x00]);
    put(&mut frame[2..6], dst_ip as u64);
    frame[6..8].copy_from_slice(&[0x02, 0x00]);
    put(&mut frame[8..12], src_ip as u64);
    put(&mut frame[12..14], 0x0800);
    // IPv4.
    let ip = &mut frame[IPV4_OFFSET..IPV4_OFFSET + IP];
    ip[0] = 0x45;
    put(&mut ip[2..4], (total - ETH) as u64);
    ip[8] = 64;
    ip[9] = 17;
    put(&mut ip[12..16], src_ip as u64);
    put(&mut ip[16..20], dst_ip as u64);
    let sum = nanopu_wire::ipv4::checksum(ip);
    put(&mut ip[10..12], sum as u64);
    // UDP: the source port spreads flows over ECMP paths (RoCE v2 practice).
    let udp = &mut frame[ETH + IP..BTH_OFFSET];
    put(&mut udp[0..2], 0xc000 | (h.dst_qp as u64 & 0x3fff));
    put(&mut udp[2..4], ROCE_UDP_PORT as u64);
    put(&mut udp[4..6], (total - ETH - IP) as u64);
    // BTH.
    let b = &mut frame[BTH_OFFSET..];
    b[0] = h.opcode;
    put(&mut b[2..4], 0xffff);
    put(&mut b[5..8], h.dst_qp as u64 & 0xff_ffff);
    put(&mut b[9..12], h.psn as u64 & 0xff_ffff);
    let mut o = BTH_OFFSET + BTH;
    let (reth, atomic, aeth, ack, deth) = Header::layout(h.opcode).expect("emitted opcodes exist");
    if reth {
        put(&mut frame[o..o + 8], h.va);
        put(&mut frame[o + 8..o + 12], h.rkey as u64);
        put(&mut frame[o + 12..o + 16], h.dma_len as u64);
        o += 16;
    }
    if atomic {
        put(&mut frame[o..o + 8], h.va);
        put(&mut frame[o + 8..o + 12], h.rkey as u64);
        put(&mut frame[o + 12..o + 20], h.swap_add);
        put(&mut frame[o + 20..o + 28], h.compare);
        o += 28;
    }
    if aeth {
        frame[o] = h.syndrome;
        o += 4;
    }
    if ack {
        put(&mut frame[o..o + 8], h.orig);
        o += 8;
    }
    if deth {
        put(&mut frame[o..o + 4], 0x1111_1111);
        put(&mut frame[o + 5..o + 8], h.src_qp as u64 & 0xff_ffff);
        o += 8;
    }
    frame[o..o + payload.len()].copy_from_slice(payload);
}

/// A read-only view of a RoCE v2 packet over a buffer, in the style of
/// `nanopu_wire`'s views: [`Packet::new_checked`] checks every length the
/// headers announce once, after which no accessor can panic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it: accessors panic on a buffer
    /// [`Packet::check_len`] refuses.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after [`Packet::check_len`]: no accessor can panic.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, PacketError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer is IPv4/UDP to port 4791 and holds the
    /// headers up to the BTH, the IPv4 total length, an opcode this NIC
    /// implements and its extension headers and ICRC within that length.
    /// A buffer longer than the IPv4 length is accepted (Ethernet pads
    /// short frames); the packet ends at that length.
    pub fn check_len(&self) -> Result<(), PacketError> {
        let frame = self.buffer.as_ref();
        if frame.len() < BTH_OFFSET + BTH + ICRC {
            return Err(PacketError::Short);
        }
        let ip = &frame[IPV4_OFFSET..IPV4_OFFSET + IP];
        if frame[12..14] != [0x08, 0x00]
            || ip[0] != 0x45
            || ip[9] != 17
            || be(&frame[ETH + IP + 2..ETH + IP + 4]) != ROCE_UDP_PORT as u64
        {
            return Err(PacketError::NotRoce);
        }
        let total = self.total_len();
        if total > frame.len() || total < BTH_OFFSET + BTH + ICRC {
            return Err(PacketError::Length);
        }
        let op = self.opcode();
        Header::layout(op).ok_or(PacketError::Opcode(op))?;
        if BTH_OFFSET + Header::len(op) + ICRC > total {
            return Err(PacketError::Length);
        }
        Ok(())
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Bytes of the packet from the Ethernet header to the ICRC: the
    /// Ethernet header and the IPv4 total length.
    pub fn total_len(&self) -> usize {
        let ip = &self.buffer.as_ref()[IPV4_OFFSET..IPV4_OFFSET + IP];
        ETH + be(&ip[2..4]) as usize
    }

    /// The IPv4 source address.
    pub fn src_ip(&self) -> u32 {
        be(&self.buffer.as_ref()[IPV4_OFFSET + 12..IPV4_OFFSET + 16]) as u32
    }

    /// The BTH opcode ([`opcode`]).
    pub fn opcode(&self) -> u8 {
        self.buffer.as_ref()[BTH_OFFSET]
    }

    /// The BTH's destination QP and PSN, and the opcode's extension
    /// headers (fields the opcode does not carry are 0).
    pub fn header(&self) -> Header {
        let frame = self.buffer.as_ref();
        let b = &frame[BTH_OFFSET..];
        let op = b[0];
        let (reth, atomic, aeth, ack, deth) = Header::layout(op).unwrap_or_default();
        let mut h = Header::new(op, be(&b[5..8]) as u32, be(&b[9..12]) as u32);
        let mut o = BTH_OFFSET + BTH;
        if reth {
            h.va = be(&frame[o..o + 8]);
            h.rkey = be(&frame[o + 8..o + 12]) as u32;
            h.dma_len = be(&frame[o + 12..o + 16]) as u32;
            o += 16;
        }
        if atomic {
            h.va = be(&frame[o..o + 8]);
            h.rkey = be(&frame[o + 8..o + 12]) as u32;
            h.swap_add = be(&frame[o + 12..o + 20]);
            h.compare = be(&frame[o + 20..o + 28]);
            o += 28;
        }
        if aeth {
            h.syndrome = frame[o];
            o += 4;
        }
        if ack {
            h.orig = be(&frame[o..o + 8]);
            o += 8;
        }
        if deth {
            h.src_qp = be(&frame[o + 5..o + 8]) as u32;
        }
        h
    }

    /// Where the payload lies in the buffer: after the extension headers,
    /// before the ICRC.
    pub fn payload_range(&self) -> (usize, usize) {
        (
            BTH_OFFSET + Header::len(self.opcode()),
            self.total_len() - ICRC,
        )
    }

    /// The payload.
    pub fn payload(&self) -> &[u8] {
        let (start, end) = self.payload_range();
        &self.buffer.as_ref()[start..end]
    }
}

/// Reads a packet ([`Packet::new_checked`]); never panics on any input.
pub fn parse(frame: &[u8]) -> Result<Parsed, PacketError> {
    let p = Packet::new_checked(frame)?;
    Ok(Parsed {
        hdr: p.header(),
        src_ip: p.src_ip(),
        payload: p.payload_range(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_opcode_round_trips() {
        use opcode::*;
        for op in [
            RC_SEND_ONLY,
            RC_WRITE_ONLY,
            RC_READ_REQUEST,
            RC_READ_RESPONSE_ONLY,
            RC_ACK,
            RC_ATOMIC_ACK,
            RC_CMP_SWAP,
            RC_FETCH_ADD,
            UC_SEND_ONLY,
            UC_WRITE_ONLY,
            UD_SEND_ONLY,
        ] {
            let mut h = Header::new(op, 0x123456, 0xabcdef);
            h.va = 0x8000_1000;
            h.rkey = 77;
            h.dma_len = 8;
            h.swap_add = 5;
            h.compare = 6;
            h.orig = 9;
            h.src_qp = 42;
            let mut f = Vec::new();
            emit(&mut f, 0x0a00_0001, 0x0a00_0002, &h, b"payload!");
            let p = parse(&f).unwrap();
            assert_eq!(p.src_ip, 0x0a00_0001);
            assert_eq!(&f[p.payload.0..p.payload.1], b"payload!");
            assert_eq!(p.hdr.opcode, op);
            assert_eq!(p.hdr.psn, 0xabcdef);
            assert_eq!(p.hdr.dst_qp, 0x123456);
            // Every prefix is refused or read without a panic.
            for n in 0..f.len() {
                let _ = parse(&f[..n]);
            }
        }
    }

    proptest::proptest! {
        /// No byte string panics the view: it is refused, or every
        /// accessor answers within the buffer.
        #[test]
        fn no_byte_string_panics_the_view(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..160),
            op in proptest::sample::select(vec![
                opcode::RC_SEND_ONLY, opcode::RC_WRITE_ONLY, opcode::RC_READ_REQUEST,
                opcode::RC_ATOMIC_ACK, opcode::RC_CMP_SWAP, opcode::UD_SEND_ONLY, 0x1f,
            ]),
            ip_len in 0u16..200,
        ) {
            check_any(&bytes);
            // Mostly RoCE-looking frames, so the later checks are reached.
            let mut f = bytes.clone();
            if f.len() > BTH_OFFSET {
                f[12..14].copy_from_slice(&[0x08, 0x00]);
                f[IPV4_OFFSET] = 0x45;
                f[IPV4_OFFSET + 9] = 17;
                f[IPV4_OFFSET + 2..IPV4_OFFSET + 4].copy_from_slice(&ip_len.to_be_bytes());
                f[ETH + IP + 2..ETH + IP + 4].copy_from_slice(&ROCE_UDP_PORT.to_be_bytes());
                f[BTH_OFFSET] = op;
            }
            check_any(&f);
        }
    }

    fn check_any(bytes: &[u8]) {
        if let Ok(p) = Packet::new_checked(bytes) {
            let (start, end) = p.payload_range();
            assert!(start <= end && end <= bytes.len());
            let _ = (p.header(), p.src_ip(), p.payload());
            assert_eq!(parse(bytes).unwrap().payload, (start, end));
        } else {
            assert!(parse(bytes).is_err());
        }
    }

    #[test]
    fn other_frames_are_refused() {
        let f = vec![0u8; 80];
        assert_eq!(parse(&f).unwrap_err(), PacketError::NotRoce);
        let mut f = Vec::new();
        emit(&mut f, 1, 2, &Header::new(opcode::RC_ACK, 1, 1), &[]);
        f[BTH_OFFSET] = 0x1f;
        assert_eq!(parse(&f).unwrap_err(), PacketError::Opcode(0x1f));
    }
}
