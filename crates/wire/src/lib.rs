//! Packet formats exchanged by the simulated NIC, links and load generator.
//!
//! Every format is written the smoltcp way: a `field` module declares the
//! header once as byte ranges; `Packet<T: AsRef<[u8]>>` is a typed view over
//! any buffer, with getters, setters when the buffer is writable, and
//! `new_checked`, after which no getter can panic; a small `Repr` struct holds
//! the header's meaning, with `parse` (validate a packet) and `emit` (write
//! one).
//!
//! | module | format | length |
//! |---|---|---|
//! | [`ethernet`] | Ethernet II header (IEEE 802.3) | 14 bytes |
//! | [`ipv4`] | IPv4 header without options (RFC 791) | 20 bytes |
//! | [`nanotransport`] | the nanoPU transport header, IPv4 protocol `0x99` | 30 bytes |
//! | [`frame`] | all three together, then the message bytes | 64 bytes + payload |
//! | [`pcap`] | classic pcap capture files, nanosecond timestamps | |
//!
//! The crate has no dependencies, does no `unsafe`, and neither parsing nor
//! emitting allocates: the caller owns every buffer.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod ethernet;
pub mod frame;
pub mod ipv4;
pub mod nanotransport;
pub mod pcap;

use std::fmt;

/// Largest message of the evaluated nanoPU build, bytes (nanoPU §3.2: 2 KB;
/// configurable, 38-packet messages were tried). The one definition: the
/// register-file interface's TX buffers and the NIC's default limit
/// (`[nic] max_message_bytes`) take it from here.
pub const MAX_MESSAGE_BYTES: u32 = 2048;

pub use ethernet::{EthernetAddress, Repr as EthernetRepr};
pub use frame::FrameRepr;
pub use ipv4::{Ipv4Address, Repr as Ipv4Repr};
pub use nanotransport::{Flags, Repr as NanoTransportRepr};
pub use pcap::PcapWriter;

/// Why a buffer is not a packet this crate accepts (or cannot be written).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Error {
    /// The buffer is shorter than the header, or than the length a header
    /// field announces; when emitting, the output buffer is too small.
    Truncated,
    /// A field holds a value the format forbids (an IPv4 version other than
    /// 4, a total length shorter than the header, a reserved bit set); when
    /// emitting, a `Repr` whose lengths disagree with each other or with the
    /// payload.
    Malformed,
    /// The IPv4 header checksum does not verify.
    Checksum,
    /// Valid on the wire but not handled here: IPv4 options or fragments,
    /// another ethertype or IP protocol, unknown transport flags.
    Unsupported,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::Truncated => "truncated packet",
            Error::Malformed => "malformed packet",
            Error::Checksum => "checksum error",
            Error::Unsupported => "unsupported packet",
        })
    }
}

impl std::error::Error for Error {}

/// Byte range of one header field.
pub(crate) type Field = core::ops::Range<usize>;
/// Byte range from a field's start to the end of the buffer (the payload).
pub(crate) type Rest = core::ops::RangeFrom<usize>;

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn errors_display() {
        assert_eq!(Error::Truncated.to_string(), "truncated packet");
        assert_eq!(Error::Malformed.to_string(), "malformed packet");
        assert_eq!(Error::Checksum.to_string(), "checksum error");
        assert_eq!(Error::Unsupported.to_string(), "unsupported packet");
        let e: Box<dyn std::error::Error> = Box::new(Error::Checksum);
        assert_eq!(e.to_string(), "checksum error");
    }
}
