//! PCIe between the host (cores, LLC, DRAM) and the RDMA NIC: a link of
//! two directions, each serializing transaction-layer packets (TLPs) at the
//! link's rate with their per-TLP overhead, and a fixed one-way latency
//! (parameters in [`RdmaParams`], after Neugebauer et al. SIGCOMM'18).
//!
//! - MMIO doorbell (CPU -> NIC): one posted write.
//! - DMA read (NIC <- host): a read request TLP to the host, the host's
//!   memory access (the node's memory system: LLC or DRAM), completions
//!   carrying the data back.
//! - DMA write (NIC -> host): posted writes; the data is in host memory
//!   one way later (plus the memory system's write).

use super::params::RdmaParams;
use nanopu_node::memory::buckets::TimeBuckets;
use nanopu_sim::{SimDuration, SimTime};
use serde::Serialize;

/// Size of a memory read request TLP's header (a 4-DW header with 64-bit
/// address; Neugebauer et al. §2) and of an 8-byte doorbell's payload.
const READ_REQUEST_BYTES: u64 = 0;
const DOORBELL_BYTES: u64 = 8;
/// Width of a capacity bucket, ps: small against a verb's microseconds,
/// wide enough to hold several TLPs (100 ns carry 787 bytes at 63 Gb/s).
const BUCKET_PS: u64 = 100_000;

/// Both directions of the link.
#[derive(Debug)]
pub struct Pcie {
    one_way: SimDuration,
    /// femtoseconds per byte
    fs_per_byte: u64,
    overhead: u64,
    mps: u64,
    /// Each direction's capacity, booked in time buckets of picoseconds
    /// (as the memory system's channels, `docs/memory.md`): transactions
    /// are booked out of time order (a DMA read's completion is booked
    /// before a doorbell that happens earlier), and a "busy until" queue
    /// would make the earlier one wait behind the later.
    to_nic: TimeBuckets,
    to_host: TimeBuckets,
    /// When the last posted write lands: posted writes stay in order
    /// (PCIe ordering rules), so a CQE never overtakes its data.
    last_write: SimTime,
    pub stats: PcieStats,
}

/// What crossed the link.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct PcieStats {
    pub doorbells: u64,
    pub dma_reads: u64,
    pub dma_read_bytes: u64,
    pub dma_writes: u64,
    pub dma_write_bytes: u64,
    /// Bytes on the wire of each direction, with TLP overheads.
    pub to_nic_bytes: u64,
    pub to_host_bytes: u64,
}

impl Pcie {
    pub fn new(p: &RdmaParams) -> Pcie {
        Pcie {
            one_way: SimDuration::from_ps(p.pcie_one_way_ps),
            fs_per_byte: (8.0e6 / p.pcie_gbps).round() as u64,
            overhead: p.pcie_tlp_overhead_bytes,
            mps: p.pcie_max_payload_bytes,
            to_nic: TimeBuckets::new(BUCKET_PS, Self::bucket_bytes(p)),
            to_host: TimeBuckets::new(BUCKET_PS, Self::bucket_bytes(p)),
            last_write: SimTime::ZERO,
            stats: PcieStats::default(),
        }
    }

    pub fn one_way(&self) -> SimDuration {
        self.one_way
    }

    /// Bytes on the link for `payload` bytes in TLPs of at most MPS.
    fn wire_bytes(&self, payload: u64) -> u64 {
        let tlps = payload.div_ceil(self.mps).max(1);
        payload + tlps * self.overhead
    }

    fn bucket_bytes(p: &RdmaParams) -> u64 {
        ((p.pcie_gbps * BUCKET_PS as f64 / 8000.0) as u64).max(1)
    }

    /// A transaction of `bytes` entering a direction at `at`: when its last
    /// byte is on the link.
    fn occupy(dir: &mut TimeBuckets, at: SimTime, bytes: u64, fs_per_byte: u64) -> SimTime {
        let at_ps = at.fs() / 1000;
        let (wait_ps, _) = dir.book(at_ps, bytes);
        at + SimDuration::from_ps(wait_ps) + SimDuration::from_fs(bytes * fs_per_byte)
    }

    /// A doorbell the CPU writes at `at` reaches the NIC.
    pub fn doorbell(&mut self, at: SimTime) -> SimTime {
        self.stats.doorbells += 1;
        let b = self.wire_bytes(DOORBELL_BYTES);
        self.stats.to_nic_bytes += b;
        Self::occupy(&mut self.to_nic, at, b, self.fs_per_byte) + self.one_way
    }

    /// The NIC issues a read of `len` bytes at `at`: when the request
    /// reaches host memory.
    pub fn read_request(&mut self, at: SimTime, len: u64) -> SimTime {
        self.stats.dma_reads += 1;
        self.stats.dma_read_bytes += len;
        let b = self.wire_bytes(READ_REQUEST_BYTES);
        self.stats.to_host_bytes += b;
        Self::occupy(&mut self.to_host, at, b, self.fs_per_byte) + self.one_way
    }

    /// Host memory returned `len` bytes at `at`: when the last completion
    /// reaches the NIC.
    pub fn read_completion(&mut self, at: SimTime, len: u64) -> SimTime {
        let b = self.wire_bytes(len);
        self.stats.to_nic_bytes += b;
        Self::occupy(&mut self.to_nic, at, b, self.fs_per_byte) + self.one_way
    }

    /// The NIC writes `len` bytes at `at`: when they reach the host's
    /// memory system.
    pub fn write(&mut self, at: SimTime, len: u64) -> SimTime {
        self.stats.dma_writes += 1;
        self.stats.dma_write_bytes += len;
        let b = self.wire_bytes(len);
        self.stats.to_host_bytes += b;
        let lands = Self::occupy(&mut self.to_host, at, b, self.fs_per_byte) + self.one_way;
        self.last_write = self.last_write.max(lands);
        self.last_write
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_costs_a_round_trip_and_the_data_serialization() {
        let p = RdmaParams::default();
        let mut pcie = Pcie::new(&p);
        let t0 = SimTime::ZERO;
        let at_host = pcie.read_request(t0, 64);
        // 24 B of header at 63 Gb/s, then 200 ns.
        assert!(
            (at_host.as_ns() - 203.05).abs() < 0.1,
            "{}",
            at_host.as_ns()
        );
        let back = pcie.read_completion(at_host, 64);
        assert!((back.as_ns() - at_host.as_ns() - 200.0 - 88.0 * 8.0 / 63.0).abs() < 0.1);
    }

    #[test]
    fn a_direction_carries_no_more_than_its_bandwidth() {
        let mut pcie = Pcie::new(&RdmaParams::default());
        // 100 writes of 1024 B (1120 B on the link each) at once: the last
        // lands about 100 x 142 ns later.
        let last = (0..100)
            .map(|_| pcie.write(SimTime::ZERO, 1024))
            .max()
            .unwrap();
        let us = last.as_ns() / 1e3;
        assert!(us > 14.0 && us < 15.0, "{us}");
        // A doorbell booked after them but earlier in time does not wait.
        let mut pcie = Pcie::new(&RdmaParams::default());
        pcie.read_completion(SimTime::ZERO + SimDuration::from_us(5), 4096);
        let d = pcie.doorbell(SimTime::ZERO);
        assert!(d.as_ns() < 210.0, "{}", d.as_ns());
    }
}
