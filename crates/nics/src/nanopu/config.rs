//! Parameters of the nanoPU NIC. Each default names its source; where the
//! papers give no number, the doc comment says so and what was assumed.

use nanopu_sim::SimDuration;
use nanopu_transport::config::{NDP_LATENCIES, PACKETIZE_PS, REASSEMBLY_PS};
use nanopu_transport::TransportConfigError;
use serde::{Deserialize, Serialize};

use crate::NicKind;

/// A NIC parameter no NIC can work with; names the key (under `nic.`
/// in a configuration file).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NicConfigError {
    /// `key = value` is out of its range.
    #[error("{key} = {value}: {reason}")]
    Invalid {
        key: &'static str,
        value: String,
        reason: String,
    },
    /// The transport's parameters.
    #[error(transparent)]
    Transport(#[from] TransportConfigError),
    /// The RDMA NIC's parameters (`[nic.rdma]`).
    #[error(transparent)]
    Rdma(#[from] crate::rdma::params::RdmaParamsError),
}

fn invalid(key: &'static str, value: impl ToString, reason: impl Into<String>) -> NicConfigError {
    NicConfigError::Invalid {
        key,
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// Message buffers of the NIC's transmit side. Source: the nanoPU
/// prototype's packetization module has 128 message buffers (l-nic/lnic
/// cbfa155, `LNIC.scala:60-61`, `MSG_BUFFER_COUNT`: 64 of 1 KB and 64 of
/// 2 KB) and stops taking words from a core when none fits the message
/// (`Packetize.scala:229-230`, "assert back pressure to the CPU if there
/// are no available buffers"), which fills the core's TX queue and stalls
/// its netTX writes.
pub const DEFAULT_TX_BUFFERS: u32 = 128;

/// Per-stage latencies and sizes of the NIC fast path (nanoPU Fig. 1 and 2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NicConfig {
    /// Which NIC design the nodes have: `nanopu` (the register-file fast
    /// path, default) or `icenic` (a traditional DMA NIC, a device on the
    /// node's bus: `node.icenic` holds its parameters). The stage latencies
    /// below are the nanoPU NIC's; the MAC latencies, MTU and message limit
    /// apply to every design. The link rate is `[network.link] gbps`.
    pub kind: NicKind,
    /// Payload bytes per packet. Source: `nanopu-abi.md` (1 KB MTU payload;
    /// a 2 KB message is two packets).
    pub mtu_payload_bytes: u32,
    /// Largest message the NIC accepts. Source: nanoPU §3.2 (2 KB on the
    /// evaluated build; configurable, 38-packet messages were tried).
    pub max_message_bytes: u32,
    /// Ethernet MAC and serial I/O, receive side. Source: nanoPU §5.2.1 and
    /// footnote 10: 69 ns wire-to-wire minus 17 ns through the fast path
    /// leaves 52 ns of MAC and serial I/O, "real values measured on a 100GE
    /// switch"; split equally between receive and transmit (an assumption).
    pub mac_serial_rx_ps: u64,
    /// Ethernet MAC and serial I/O, transmit side (see `mac_serial_rx_ps`).
    pub mac_serial_tx_ps: u64,
    /// Ingress pipeline: header checks, the layer-4 port match, the
    /// transport's ingress processing. Source: NanoTransport Table 1, NDP
    /// ingress (5 ns).
    pub ingress_ps: u64,
    /// Reassembly into the message buffer. Source: NanoTransport Table 1 (0.94 ns).
    pub reassembly_ps: u64,
    /// Extra receive-side latency after the transport, before the global
    /// RX queue (any program). 0: the transport's own stages already cost
    /// what NanoTransport Table 1 gives.
    pub transport_rx_ps: u64,
    /// Global RX queue and core selection to the core's local RX FIFO.
    /// Assumption: one NIC clock (3.2 GHz); the papers give no figure.
    pub core_dispatch_ps: u64,
    /// Core's local TX FIFO to the NIC's global TX queue. Assumption: one
    /// NIC clock; the papers give no figure.
    pub tx_queue_ps: u64,
    /// Messages the transmit side holds between the cores' TX FIFOs and
    /// the wire (the global TX queue and packetization buffers): a message
    /// takes one when the NIC takes it from a core and gives it back when
    /// its last packet has left for the wire (the lossless program, which
    /// keeps nothing) or when the transport's packetization module admits
    /// it (a reliable program, whose own buffers, `transport.buffer_classes`,
    /// hold it from there until it is acknowledged). With none free the NIC
    /// leaves messages in the cores' TX FIFOs, and a core writing netTX
    /// stalls once its FIFO is full. Source: [`DEFAULT_TX_BUFFERS`].
    pub tx_buffers: u32,
    /// Packetization (message buffer to packets). Source: NanoTransport
    /// Table 1 (2.81 ns).
    pub packetize_ps: u64,
    /// Egress pipeline. Source: NanoTransport Table 1, NDP egress (0.31 ns).
    pub egress_ps: u64,
    /// JBSQ bound: messages of one application a core may hold. Source:
    /// nanoPU §2.3 and §3.3 (JBSQ(2)).
    pub jbsq_depth: u32,
    /// Core selection: `jbsq` (the nanoPU's) or `random` (RSS-style, the
    /// baseline of nanoPU §5.2.3).
    pub core_selection: super::core_selection::Policy,
    /// Seed of the random core selection.
    pub core_selection_seed: u64,
    /// The transport layer (NanoTransport, always): `protocol = "none"`
    /// (default, the lossless program of the one-node benchmarks, whose
    /// stages cost `ingress_ps`, `reassembly_ps`, `packetize_ps` and
    /// `egress_ps` above), `"ndp"`, `"homa"` or `"homa-tr"`, and its
    /// parameters. With a reliable program, the program's pipeline
    /// latencies and `transport.reassembly_ps` / `transport.packetize_ps`
    /// replace those four.
    pub transport: nanopu_transport::TransportConfig,
    /// The RDMA NIC's parameters (`kind = "rdma"`; `[nic.rdma]`), each
    /// named and sourced in [`crate::rdma::params::RdmaParams`].
    pub rdma: crate::rdma::params::RdmaParams,
    /// NEBULA's NIC's parameters (`kind = "nebula..."`; `[nic.nebula]`),
    /// each sourced in [`crate::nebula::NebulaConfig`].
    pub nebula: crate::nebula::NebulaConfig,
}

impl Default for NicConfig {
    fn default() -> Self {
        NicConfig {
            kind: NicKind::Nanopu,
            mtu_payload_bytes: 1024,
            max_message_bytes: nanopu_wire::MAX_MESSAGE_BYTES,
            mac_serial_rx_ps: 26_000,
            mac_serial_tx_ps: 26_000,
            ingress_ps: NDP_LATENCIES.ingress_ps,
            reassembly_ps: REASSEMBLY_PS,
            transport_rx_ps: 0,
            core_dispatch_ps: 312,
            tx_queue_ps: 312,
            tx_buffers: DEFAULT_TX_BUFFERS,
            packetize_ps: PACKETIZE_PS,
            egress_ps: NDP_LATENCIES.egress_ps,
            jbsq_depth: 2,
            core_selection: super::core_selection::Policy::Jbsq,
            core_selection_seed: 1,
            transport: nanopu_transport::TransportConfig::default(),
            rdma: crate::rdma::params::RdmaParams::default(),
            nebula: crate::nebula::NebulaConfig::default(),
        }
    }
}

impl NicConfig {
    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), NicConfigError> {
        if self.mtu_payload_bytes == 0
            || !self.mtu_payload_bytes.is_multiple_of(8)
            || self.mtu_payload_bytes > 9000
        {
            return Err(invalid(
                "mtu_payload_bytes",
                self.mtu_payload_bytes,
                "must be a positive multiple of 8, at most 9000",
            ));
        }
        if self.max_message_bytes == 0 || self.max_message_bytes > 65535 {
            return Err(invalid(
                "max_message_bytes",
                self.max_message_bytes,
                "must be between 1 and 65535 (16-bit length field)",
            ));
        }
        if self.jbsq_depth == 0 {
            return Err(invalid("jbsq_depth", 0, "must be at least 1"));
        }
        if !(1..=1 << 16).contains(&self.tx_buffers) {
            return Err(invalid(
                "tx_buffers",
                self.tx_buffers,
                "must be between 1 and 65536",
            ));
        }
        for (key, ps) in [
            ("mac_serial_rx_ps", self.mac_serial_rx_ps),
            ("mac_serial_tx_ps", self.mac_serial_tx_ps),
            ("ingress_ps", self.ingress_ps),
            ("reassembly_ps", self.reassembly_ps),
            ("transport_rx_ps", self.transport_rx_ps),
            ("core_dispatch_ps", self.core_dispatch_ps),
            ("tx_queue_ps", self.tx_queue_ps),
            ("packetize_ps", self.packetize_ps),
            ("egress_ps", self.egress_ps),
        ] {
            if SimDuration::try_from_ps(ps).is_err() {
                return Err(invalid(
                    key,
                    ps,
                    "too long for the simulated time base (at most about 5 hours)",
                ));
            }
        }
        self.transport.validate()?;
        self.rdma.validate()?;
        Ok(())
    }

    pub fn d(ps: u64) -> SimDuration {
        SimDuration::from_ps(ps)
    }

    /// Packets needed for a message of `len` bytes (a zero-length message
    /// still takes one packet).
    pub fn packets_for(&self, len: u32) -> u32 {
        len.div_ceil(self.mtu_payload_bytes).max(1)
    }
}
