//! Queue samples and the pcap tap.

mod common;

use common::{data, ns, Harness};
use nanopu_network::{NetworkConfig, TopologyConfig};
use nanopu_sim::SimTime;
use nanopu_wire::PcapWriter;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

fn single(hosts: usize) -> NetworkConfig {
    NetworkConfig {
        topology: TopologyConfig::SingleSwitch { hosts },
        ..NetworkConfig::default()
    }
}

#[test]
fn queue_samples_follow_occupancy() {
    let mut h = Harness::new(&single(4));
    let down = h.net.host_downlink(3).unwrap();
    h.net.watch_queue(down);
    for src in 0..3 {
        h.send(src, data(src, 3, 8), ns(0));
    }
    h.run();
    let t = |fs: u64| SimTime(fs);
    assert_eq!(
        h.net.queue_samples(down),
        [
            (ns(343), 72),
            (ns(343), 144),
            (ns(343), 216),
            // Last bits leave 2.88 ns after each start, starts 3.68 ns apart.
            (t(345_880_000), 144),
            (t(349_560_000), 72),
            (t(353_240_000), 0),
        ]
    );
    assert_eq!(h.net.port_stats(down).max_bytes, 216);
    // Unwatched: nothing.
    assert!(h
        .net
        .queue_samples(h.net.host_downlink(0).unwrap())
        .is_empty());
}

/// A writer the test can read back.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn capture_writes_both_directions_of_a_host_link() {
    let mut h = Harness::new(&single(3));
    let buf = Shared::default();
    let w: Box<dyn Write + Send> = Box::new(buf.clone());
    h.net.capture(0, PcapWriter::new(w).unwrap());
    h.send(0, data(0, 1, 8), ns(0));
    h.send(1, data(1, 0, 16), ns(0));
    h.send(1, data(1, 2, 8), ns(0));
    h.run();
    h.net.finish_capture().unwrap();
    let bytes = buf.0.lock().unwrap().clone();
    assert_eq!(&bytes[..4], &0xa1b2_3c4du32.to_le_bytes());
    let mut records = Vec::new();
    let mut rest = &bytes[24..];
    while !rest.is_empty() {
        let u = |i: usize| u32::from_le_bytes(rest[i..i + 4].try_into().unwrap());
        let (ts, len) = (
            u64::from(u(0)) * 1_000_000_000 + u64::from(u(4)),
            u(8) as usize,
        );
        records.push((ts, rest[16..16 + len].to_vec()));
        rest = &rest[16 + len..];
    }
    // Host 0's frame leaves at 0; host 1's reaches host 0's downlink at
    // 43 + 300 ns. Host 1's frame to host 2 is not on this link.
    assert_eq!(records, [(0, data(0, 1, 8)), (343, data(1, 0, 16))]);
    // Finishing twice is harmless; nothing more is written.
    h.net.finish_capture().unwrap();
}
