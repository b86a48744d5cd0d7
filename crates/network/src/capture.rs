//! The pcap tap on a host's link, written in time order.
//!
//! A captured link's frames are recorded when the network hands them on,
//! which is not always in the order of their timestamps: a host's uplink
//! frame is recorded when the NIC hands it over, stamped when its first bit
//! leaves (after the NIC's own latency and behind earlier frames), while
//! the other direction's frames are recorded as they come due. A capture
//! therefore holds records back until no later record can be stamped
//! earlier (the network's present time has passed them) and writes them in
//! stamp order, ties in the order they were recorded.
//!
//! Capturing changes nothing in the simulation: the tap only reads frames.

use nanopu_wire::PcapWriter;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};

/// One link's pcap file and the records not yet written.
pub(crate) struct OrderedCapture {
    out: PcapWriter<Box<dyn Write + Send>>,
    /// (stamp in fs, record number, frame), earliest first.
    held: BinaryHeap<Reverse<(u64, u64, Vec<u8>)>>,
    recorded: u64,
}

impl OrderedCapture {
    pub(crate) fn new(out: PcapWriter<Box<dyn Write + Send>>) -> Self {
        Self {
            out,
            held: BinaryHeap::new(),
            recorded: 0,
        }
    }

    /// Records `frame`, stamped `stamp_fs`, and writes every held record
    /// stamped before `settled_fs` (no later record is stamped earlier).
    pub(crate) fn record(
        &mut self,
        stamp_fs: u64,
        frame: &[u8],
        settled_fs: u64,
    ) -> io::Result<()> {
        self.held
            .push(Reverse((stamp_fs, self.recorded, frame.to_vec())));
        self.recorded += 1;
        self.write_before(settled_fs)
    }

    /// Writes the held records stamped before `settled_fs`.
    pub(crate) fn write_before(&mut self, settled_fs: u64) -> io::Result<()> {
        while let Some(Reverse((stamp, _, _))) = self.held.peek() {
            if *stamp >= settled_fs {
                break;
            }
            let Reverse((stamp, _, frame)) = self.held.pop().expect("peeked");
            self.out.write_packet(stamp, &frame)?;
        }
        Ok(())
    }

    /// Writes every held record and flushes the file.
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        while let Some(Reverse((stamp, _, frame))) = self.held.pop() {
            self.out.write_packet(stamp, &frame)?;
        }
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// The stamps of a nanosecond pcap's records, in file order.
    fn stamps(b: &[u8]) -> Vec<(u64, u8)> {
        let word = |at: usize| u64::from(u32::from_le_bytes(b[at..at + 4].try_into().unwrap()));
        let mut out = Vec::new();
        let mut at = 24;
        while at < b.len() {
            let len = word(at + 8) as usize;
            out.push((word(at) * 1_000_000_000 + word(at + 4), b[at + 16]));
            at += 16 + len;
        }
        out
    }

    #[test]
    fn records_are_written_in_stamp_order_once_settled() {
        let buf = Shared::default();
        let w: Box<dyn Write + Send> = Box::new(buf.clone());
        let mut c = OrderedCapture::new(PcapWriter::new(w).unwrap());
        let ns = 1_000_000;
        // An uplink frame stamped ahead of the present, then the other
        // direction's frames as they come due.
        c.record(500 * ns, &[1], 100 * ns).unwrap();
        c.record(200 * ns, &[2], 200 * ns).unwrap();
        c.record(500 * ns, &[3], 400 * ns).unwrap();
        let header = 24;
        // Only the record at 200 ns is settled (nothing later can be
        // stamped before 400 ns).
        assert_eq!(stamps(&buf.0.lock().unwrap()[..]).len(), 1);
        assert!(buf.0.lock().unwrap().len() > header);
        c.finish().unwrap();
        assert_eq!(
            stamps(&buf.0.lock().unwrap()[..]),
            [(200, 2), (500, 1), (500, 3)]
        );
    }
}
