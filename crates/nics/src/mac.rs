//! Ethernet MAC and serial I/O: a fixed latency each way, plus the time the
//! frame takes to arrive (the MAC checks the frame check sequence at its
//! end, so nothing leaves the MAC before the last bit is in).

use nanopu_sim::{SimDuration, SimTime};

/// Receive and transmit sides of the MAC and serializer.
#[derive(Clone, Debug)]
pub struct Mac {
    pub link_gbps: u64,
    pub rx_latency: SimDuration,
    pub tx_latency: SimDuration,
}

impl Mac {
    /// When a frame whose first bit arrives at `first_bit` is handed to the
    /// ingress pipeline.
    pub fn received(&self, first_bit: SimTime, frame_len: usize) -> SimTime {
        first_bit + SimDuration::serialization(frame_len as u64, self.link_gbps) + self.rx_latency
    }

    /// When a frame leaving the egress pipeline at `t` is ready for the wire.
    pub fn transmit_ready(&self, t: SimTime) -> SimTime {
        t + self.tx_latency
    }
}
