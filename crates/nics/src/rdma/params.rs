//! Parameters of the RDMA NIC and its PCIe link. Each default names its
//! source; where no source gives a number, the doc comment says so and what
//! was assumed (and what it decides).

use serde::{Deserialize, Serialize};

/// The RDMA NIC (`[nic] kind = "rdma"`): a ConnectX-3 behind PCIe 3.0 x8,
/// the card of HERD's Apt cluster (HERD Table 2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RdmaParams {
    /// One-way latency of a PCIe transaction layer packet between the CPU's
    /// root complex and the NIC, ps. Neugebauer et al. (SIGCOMM'18, §5,
    /// pcie-bench) measure about 500 ns for a 64 B DMA read round trip on
    /// Xeon E5 hosts, including the host's memory access (which our memory
    /// system adds itself): 200 ns each way leaves 100 ns for it.
    pub pcie_one_way_ps: u64,
    /// PCIe payload bandwidth per direction before TLP overheads, Gb/s:
    /// 3.0 x8 is 8 lanes x 8 GT/s x 128/130 = 63 Gb/s (Neugebauer et al. §2).
    pub pcie_gbps: f64,
    /// Bytes of framing, sequence number, header and LCRC per TLP with
    /// 64-bit addresses: 2 + 2 + 16 + 4 = 24 (Neugebauer et al. §2, Fig. 1).
    pub pcie_tlp_overhead_bytes: u64,
    /// Largest TLP payload (MPS), bytes: 256 on the servers Neugebauer et al.
    /// measured (§2: "typically 256 B").
    pub pcie_max_payload_bytes: u64,
    /// Largest payload a WQE may carry inline, bytes. HERD §2.2.2: "the
    /// maximum size of the inlined payload is 256 bytes" on ConnectX-3.
    pub max_inline_bytes: u32,
    /// Largest message, bytes: every message is one packet (RoCE's 1024 B
    /// path MTU, IB spec 9.7.7; multi-packet messages are not modelled).
    pub mtu_bytes: u32,
    /// Peak rate of outbound WRITEs and SENDs (inlined, small), Mops.
    /// HERD §3.2.2: "the card can achieve [35 Mops] ... and slightly exceed
    /// it for very small outbound WRITEs" (Fig. 4b).
    pub outbound_write_mops: f64,
    /// Peak rate of outbound READs (and atomics), Mops: HERD §3.2.2, 22 Mops.
    pub outbound_read_mops: f64,
    /// Peak rate of inbound WRITEs and SENDs, Mops: HERD §3.2.2 Fig. 3b,
    /// 35 Mops.
    pub inbound_write_mops: f64,
    /// Peak rate of inbound READs, Mops: HERD §3.2.2 Fig. 3b, 26 Mops.
    /// Inbound atomics are charged the same (assumption: the card does a
    /// DMA read and a write for them; HERD measures no atomics).
    pub inbound_read_mops: f64,
    /// Queue-pair contexts the NIC's SRAM caches. HERD §3.3: "RNICs have
    /// very little on-chip memory (SRAM) to cache ... queue pair contexts";
    /// outbound WRITEs over 256 active QPs fall to 21% of their peak
    /// (Fig. 6). The capacity is not published: assumption 128 (the
    /// connection count where the fall starts decides it).
    pub qp_cache_entries: usize,
    /// Bytes of one QP context fetched over PCIe on a miss: assumption 256
    /// (the size is not published; mlx4's QP context is a few hundred
    /// bytes).
    pub qp_context_bytes: u64,
    /// Context fetches the NIC can have in flight: assumption 4 (not
    /// published). With every verb missing, the rate is about this many per
    /// PCIe read round trip.
    pub qp_miss_slots: usize,
    /// Outstanding READs and atomics per RC queue pair. HERD §3.2.2: "each
    /// queue pair can only service a few outstanding READ requests (16 in
    /// our RNICs)".
    pub max_rd_atomic: usize,
    /// RC retransmission timeout, ps: the IB local ACK timeout
    /// 4.096 us x 2^timeout (IB spec 9.7.6.1.3, `timeout` = 1: 8.2 us, the
    /// shortest non-zero setting).
    pub rc_timeout_ps: u64,
    /// Retransmissions of a packet before the QP fails with a retry error:
    /// 7, the IB spec's largest `retry_cnt` (9.7.6.1.3).
    pub rc_retry_count: u32,
    /// DMA line requests the NIC keeps in flight in the node's memory
    /// system: 8, as the IceNIC (icenet `nMemXacts`).
    pub dma_outstanding_lines: usize,
}

impl Default for RdmaParams {
    fn default() -> Self {
        RdmaParams {
            pcie_one_way_ps: 200_000,
            pcie_gbps: 63.0,
            pcie_tlp_overhead_bytes: 24,
            pcie_max_payload_bytes: 256,
            max_inline_bytes: 256,
            mtu_bytes: 1024,
            outbound_write_mops: 35.0,
            outbound_read_mops: 22.0,
            inbound_write_mops: 35.0,
            inbound_read_mops: 26.0,
            qp_cache_entries: 128,
            qp_context_bytes: 256,
            qp_miss_slots: 4,
            max_rd_atomic: 16,
            rc_timeout_ps: 8_192_000,
            rc_retry_count: 7,
            dma_outstanding_lines: 8,
        }
    }
}

/// A parameter the NIC cannot work with; names the key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("rdma.{key} = {value}: {reason}")]
pub struct RdmaParamsError {
    pub key: &'static str,
    pub value: String,
    pub reason: &'static str,
}

impl RdmaParams {
    pub fn validate(&self) -> Result<(), RdmaParamsError> {
        let bad = |key, value: &dyn ToString, reason| RdmaParamsError {
            key,
            value: value.to_string(),
            reason,
        };
        for (key, v) in [
            ("pcie_gbps", self.pcie_gbps),
            ("outbound_write_mops", self.outbound_write_mops),
            ("outbound_read_mops", self.outbound_read_mops),
            ("inbound_write_mops", self.inbound_write_mops),
            ("inbound_read_mops", self.inbound_read_mops),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(bad(key, &v, "must be a positive number"));
            }
        }
        if self.pcie_max_payload_bytes == 0 {
            return Err(bad("pcie_max_payload_bytes", &0, "must be at least 1"));
        }
        if self.mtu_bytes < 64 || self.mtu_bytes > 4096 {
            return Err(bad("mtu_bytes", &self.mtu_bytes, "must be 64..=4096"));
        }
        if self.max_inline_bytes > self.mtu_bytes {
            return Err(bad(
                "max_inline_bytes",
                &self.max_inline_bytes,
                "must not exceed mtu_bytes",
            ));
        }
        for (key, v) in [
            ("qp_miss_slots", self.qp_miss_slots),
            ("max_rd_atomic", self.max_rd_atomic),
            ("dma_outstanding_lines", self.dma_outstanding_lines),
        ] {
            if v == 0 {
                return Err(bad(key, &v, "must be at least 1"));
            }
        }
        if self.rc_timeout_ps == 0 {
            return Err(bad("rc_timeout_ps", &0, "must be positive"));
        }
        for (key, ps) in [
            ("pcie_one_way_ps", self.pcie_one_way_ps),
            ("rc_timeout_ps", self.rc_timeout_ps),
        ] {
            if nanopu_sim::SimDuration::try_from_ps(ps).is_err() {
                return Err(bad(
                    key,
                    &ps,
                    "too long for the simulated time base (at most about 5 hours)",
                ));
            }
        }
        Ok(())
    }
}
