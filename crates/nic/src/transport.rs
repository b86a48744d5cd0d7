//! The transport stage: where reliable message delivery belongs (nanoPU
//! §2.3, NanoTransport). This stand-in assumes a lossless link and only adds
//! a fixed latency each way; the programmable transport (NDP, Homa) replaces
//! it behind the same two calls.

use nanopu_sim::{SimDuration, SimTime};

/// A fixed-latency transport.
#[derive(Clone, Debug)]
pub struct TransportStandIn {
    pub rx_latency: SimDuration,
}

impl TransportStandIn {
    /// When a reassembled message at `t` is handed to its global RX queue.
    pub fn message_received(&self, t: SimTime) -> SimTime {
        t + self.rx_latency
    }

    /// When a message leaving the TX queue at `t` may be packetized (no
    /// credit or pacing in the stand-in).
    pub fn message_to_send(&self, t: SimTime) -> SimTime {
        t
    }
}
