//! A writer for classic pcap capture files, with nanosecond timestamps, so
//! that simulated traffic opens in Wireshark or tcpdump.
//!
//! Format: the libpcap savefile format, pcap-savefile(5), also written up
//! as the IETF draft "PCAP Capture File Format" (draft-ietf-opsawg-pcap);
//! link type 1 is `LINKTYPE_ETHERNET` (tcpdump.org link-layer header
//! types). Everything is written little-endian; readers detect the byte
//! order from the magic number.
//!
//! File header (24 bytes):
//!
//! | bytes | field | value here |
//! |---|---|---|
//! | 0..4 | magic | `0xa1b23c4d`: timestamps in seconds and nanoseconds |
//! | 4..6 | major version | 2 |
//! | 6..8 | minor version | 4 |
//! | 8..12 | reserved (was time-zone offset) | 0 |
//! | 12..16 | reserved (was timestamp accuracy) | 0 |
//! | 16..20 | snapshot length | 65535 |
//! | 20..24 | link type (and FCS information, here none) | 1, Ethernet |
//!
//! Record header (16 bytes) before each frame: seconds, nanoseconds,
//! captured length, original length. Frames are Ethernet frames without
//! FCS, as [`crate::frame`] builds them.

use std::io::{self, Write};

/// Magic number of a pcap file whose timestamps have nanosecond resolution.
pub const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// Major version of the format.
pub const VERSION_MAJOR: u16 = 2;
/// Minor version of the format.
pub const VERSION_MINOR: u16 = 4;
/// Snapshot length: frames longer than this are cut to it in the file.
pub const SNAPLEN: u32 = 65535;
/// Link type of Ethernet (`LINKTYPE_ETHERNET`).
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Length of the file header in bytes.
pub const FILE_HEADER_LEN: usize = 24;
/// Length of a record header in bytes.
pub const RECORD_HEADER_LEN: usize = 16;

const FS_PER_S: u64 = 1_000_000_000_000_000;
const FS_PER_NS: u64 = 1_000_000;

/// Writes a pcap file: the file header on creation, then one record per
/// [`PcapWriter::write_packet`].
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Starts a capture on `out` by writing the file header.
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut h = [0u8; FILE_HEADER_LEN];
        h[0..4].copy_from_slice(&MAGIC_NANOS.to_le_bytes());
        h[4..6].copy_from_slice(&VERSION_MAJOR.to_le_bytes());
        h[6..8].copy_from_slice(&VERSION_MINOR.to_le_bytes());
        // 8..16: the two reserved fields, zero.
        h[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out })
    }

    /// Appends `frame`, seen at simulated time `time_fs` (femtoseconds since
    /// the start of the simulation).
    ///
    /// The timestamp is split into whole seconds and nanoseconds, truncating
    /// below a nanosecond; a `u64` of femtoseconds is at most about 18,447
    /// seconds, so the seconds always fit the 32-bit field. A frame longer
    /// than [`SNAPLEN`] is cut to it, its original length recorded.
    pub fn write_packet(&mut self, time_fs: u64, frame: &[u8]) -> io::Result<()> {
        let secs = (time_fs / FS_PER_S) as u32;
        let nanos = ((time_fs % FS_PER_S) / FS_PER_NS) as u32;
        let orig_len = u32::try_from(frame.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame longer than 4 GiB"))?;
        let incl_len = orig_len.min(SNAPLEN);
        let mut h = [0u8; RECORD_HEADER_LEN];
        h[0..4].copy_from_slice(&secs.to_le_bytes());
        h[4..8].copy_from_slice(&nanos.to_le_bytes());
        h[8..12].copy_from_slice(&incl_len.to_le_bytes());
        h[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&frame[..incl_len as usize])
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// Gives back the underlying writer (not flushed).
    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_header_bytes() {
        let w = PcapWriter::new(Vec::new()).unwrap();
        assert_eq!(
            w.into_inner(),
            [
                0x4d, 0x3c, 0xb2, 0xa1, // magic, little-endian
                0x02, 0x00, 0x04, 0x00, // version 2.4
                0x00, 0x00, 0x00, 0x00, // reserved
                0x00, 0x00, 0x00, 0x00, // reserved
                0xff, 0xff, 0x00, 0x00, // snaplen 65535
                0x01, 0x00, 0x00, 0x00, // Ethernet
            ]
        );
    }

    #[test]
    fn record_bytes() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        // 2 s + 123,456,789 ns + 999,999 fs: the femtoseconds are truncated.
        let t = 2 * FS_PER_S + 123_456_789 * FS_PER_NS + 999_999;
        w.write_packet(t, &[0xaa, 0xbb, 0xcc]).unwrap();
        let out = w.into_inner();
        assert_eq!(
            out[FILE_HEADER_LEN..],
            [
                0x02, 0x00, 0x00, 0x00, // 2 s
                0x15, 0xcd, 0x5b, 0x07, // 123,456,789 ns = 0x075bcd15
                0x03, 0x00, 0x00, 0x00, // captured length
                0x03, 0x00, 0x00, 0x00, // original length
                0xaa, 0xbb, 0xcc,
            ]
        );
    }

    #[test]
    fn timestamps_and_snaplen() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_packet(u64::MAX, &[]).unwrap();
        let big = vec![0x11u8; SNAPLEN as usize + 10];
        w.write_packet(999_999, &big).unwrap();
        let out = w.into_inner();
        let r = &out[FILE_HEADER_LEN..];
        let word = |i: usize| u32::from_le_bytes(r[i..i + 4].try_into().unwrap());
        // u64::MAX fs = 18446 s 744073709 ns (and 551615 fs dropped).
        assert_eq!(
            (word(0), word(4), word(8), word(12)),
            (18446, 744_073_709, 0, 0)
        );
        let r2 = 16;
        assert_eq!((word(r2), word(r2 + 4)), (0, 0));
        assert_eq!((word(r2 + 8), word(r2 + 12)), (SNAPLEN, SNAPLEN + 10));
        assert_eq!(r.len(), 16 + 16 + SNAPLEN as usize);
    }
}
