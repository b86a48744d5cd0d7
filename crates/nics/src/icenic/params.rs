//! The IceNIC's parameters (`[node.icenic]` in a configuration file), with
//! their sources. The node's own configuration does not hold them (the node
//! crate knows no NIC design): the system's `[node]` table does
//! (`nanopu_system::config::NodeTable`), and the IceNIC design gets them
//! when it is built ([`super::IceNicPort::new`]).

use nanopu_node::bus_device::MAX_DMA_OUTSTANDING;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// Default queue depth. Source: icenet's `WithIceNIC` config fragment (the
/// one Chipyard and FireSim designs use to add IceNIC) sets
/// `ctrlQueueDepth = 64` for all four queues (`NICConfig`'s own default is
/// 10); the nanoPU artifact's traditional loopback posts 30 receive buffers
/// at once, which needs at least 30.
pub const DEFAULT_QUEUE_DEPTH: u32 = 64;
/// Bytes per DMA beat and core cycle. Source: IceNIC's 64-bit data path
/// (`NET_IF_WIDTH = 64`) at the target clock, here the core clock.
pub const DEFAULT_DMA_BYTES_PER_CYCLE: u32 = 8;
/// Fixed latency of a DMA transfer before its first beat. Assumption: about
/// one L2 access (`DEFAULT_L2_HIT_CYCLES`, 20 cycles); no published figure.
pub const DEFAULT_DMA_SETUP_CYCLES: u32 = 20;
/// Memory transactions in flight per DMA engine. Source: icenet
/// `NICConfig.nMemXacts = 8` (`NIC.scala`), with `maxAcquireBytes = 64`:
/// one 64-byte line each.
pub const DEFAULT_DMA_OUTSTANDING_LINES: u32 = 8;
/// Size of a receive buffer: a convention between driver and NIC (IceNIC
/// writes as many bytes as the frame has). The SDK's programs allocate 2 KB.
pub const DEFAULT_RECV_BUFFER_BYTES: u32 = 2048;
/// IceNIC's RX packet buffer in 8-byte flits: icenet `WithIceNIC(inBufFlits
/// = 1800)` (`Configs.scala:29`, at l-nic/icenet 512c87e, the fragment
/// chipyard's `IceNICRocketConfig` uses), 14,400 bytes. Frames wait there
/// until the writer has a posted receive buffer (`NIC.scala:281`,
/// `NetworkPacketBuffer`; the writer takes a frame only with a receive
/// request and its length, l.234-237). `usePauser = false` there: the
/// buffer always accepts the link's flits (`Buffer.scala:138`,
/// `io.stream.in.ready := true.B`) and drops a whole frame that does not
/// fit (`startDropping`, l.163-165; the head pointer is reverted, l.212).
pub const DEFAULT_RX_PACKET_BUFFER_FLITS: u32 = 1800;
/// Largest frame a send request may name (jumbo frames).
pub const DEFAULT_MAX_FRAME_BYTES: u32 = 9000;
/// The node's IPv4 address: the simulated node's, 10.0.0.1.
pub const DEFAULT_IPV4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

/// Parameters of the traditional NIC.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IceNicConfig {
    /// Whether the node's NIC is the IceNIC. The front ends set it from
    /// `[nic] kind`, and files that name it keep loading; the device itself
    /// is attached by the IceNIC design (`NicDesign::attach`, at
    /// `ICENIC_BASE` or `[node.devices] icenic`), never by the node from
    /// this key; the system refuses it `true` beside another NIC kind.
    pub enabled: bool,
    /// The node's IPv4 address; the MAC address is 02:00 followed by it (as
    /// `nanopu_nics::nanopu::frames::mac_of`).
    pub ipv4: Ipv4Addr,
    /// Send request queue entries ([`DEFAULT_QUEUE_DEPTH`]).
    pub send_req_depth: u32,
    /// Receive request (posted buffer) queue entries ([`DEFAULT_QUEUE_DEPTH`]).
    pub recv_req_depth: u32,
    /// Send completion queue entries ([`DEFAULT_QUEUE_DEPTH`]).
    pub send_comp_depth: u32,
    /// Receive completion queue entries ([`DEFAULT_QUEUE_DEPTH`]).
    pub recv_comp_depth: u32,
    /// DMA data path width in bytes per core cycle ([`DEFAULT_DMA_BYTES_PER_CYCLE`]).
    pub dma_bytes_per_cycle: u32,
    /// Fixed DMA latency in core cycles ([`DEFAULT_DMA_SETUP_CYCLES`]).
    pub dma_setup_cycles: u32,
    /// Line requests each DMA engine keeps in flight to memory
    /// ([`DEFAULT_DMA_OUTSTANDING_LINES`]).
    pub dma_outstanding_lines: u32,
    /// Bytes of a posted receive buffer ([`DEFAULT_RECV_BUFFER_BYTES`]).
    pub recv_buffer_bytes: u32,
    /// Longest frame a send request may name ([`DEFAULT_MAX_FRAME_BYTES`]).
    pub max_frame_bytes: u32,
    /// RX packet buffer in 8-byte flits ([`DEFAULT_RX_PACKET_BUFFER_FLITS`]);
    /// 0: no buffer, a frame with no receive buffer posted is dropped.
    pub rx_packet_buffer_flits: u32,
}

impl Default for IceNicConfig {
    fn default() -> Self {
        IceNicConfig {
            enabled: false,
            ipv4: DEFAULT_IPV4,
            send_req_depth: DEFAULT_QUEUE_DEPTH,
            recv_req_depth: DEFAULT_QUEUE_DEPTH,
            send_comp_depth: DEFAULT_QUEUE_DEPTH,
            recv_comp_depth: DEFAULT_QUEUE_DEPTH,
            dma_bytes_per_cycle: DEFAULT_DMA_BYTES_PER_CYCLE,
            dma_setup_cycles: DEFAULT_DMA_SETUP_CYCLES,
            dma_outstanding_lines: DEFAULT_DMA_OUTSTANDING_LINES,
            recv_buffer_bytes: DEFAULT_RECV_BUFFER_BYTES,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            rx_packet_buffer_flits: DEFAULT_RX_PACKET_BUFFER_FLITS,
        }
    }
}

/// A traditional NIC setting no device can work with; the message names the key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IceNicConfigError {
    #[error("{key} = {value}: must be between 1 and 255 (COUNTS has 8-bit fields)")]
    QueueDepth { key: &'static str, value: u32 },
    #[error("dma_bytes_per_cycle must be at least 1")]
    DmaWidth,
    #[error("dma_outstanding_lines = {0}: must be between 1 and 64")]
    DmaOutstanding(u32),
    #[error("recv_buffer_bytes = {0}: must be between 64 and 65535")]
    RecvBufferBytes(u32),
    #[error("max_frame_bytes = {0}: must be between 1 and 32767 (15-bit length field)")]
    MaxFrameBytes(u32),
}

impl IceNicConfig {
    /// Checks the values; the message names the key.
    pub fn validate(&self) -> Result<(), IceNicConfigError> {
        for (key, value) in [
            ("send_req_depth", self.send_req_depth),
            ("recv_req_depth", self.recv_req_depth),
            ("send_comp_depth", self.send_comp_depth),
            ("recv_comp_depth", self.recv_comp_depth),
        ] {
            if !(1..=255).contains(&value) {
                return Err(IceNicConfigError::QueueDepth { key, value });
            }
        }
        if self.dma_bytes_per_cycle == 0 {
            return Err(IceNicConfigError::DmaWidth);
        }
        if !(1..=MAX_DMA_OUTSTANDING as u32).contains(&self.dma_outstanding_lines) {
            return Err(IceNicConfigError::DmaOutstanding(
                self.dma_outstanding_lines,
            ));
        }
        if !(64..=65535).contains(&self.recv_buffer_bytes) {
            return Err(IceNicConfigError::RecvBufferBytes(self.recv_buffer_bytes));
        }
        if !(1..=0x7fff).contains(&self.max_frame_bytes) {
            return Err(IceNicConfigError::MaxFrameBytes(self.max_frame_bytes));
        }
        Ok(())
    }

    /// The MAC address: 02:00 followed by the IPv4 address (locally
    /// administered; the same rule as `nanopu_nics::nanopu::frames::mac_of`).
    pub fn mac(&self) -> [u8; 6] {
        let b = self.ipv4.octets();
        [0x02, 0x00, b[0], b[1], b[2], b[3]]
    }
}
