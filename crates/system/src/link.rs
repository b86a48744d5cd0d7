//! A link direction: a serializer (one frame at a time, at the line rate)
//! followed by a pipe (propagation delay), as in htsim.

use nanopu_sim::{SimDuration, SimTime};

/// Bytes a frame occupies on an Ethernet wire beyond its own: preamble and
/// start delimiter (8) and the minimum inter-frame gap (12). IEEE 802.3.
pub const WIRE_OVERHEAD_BYTES: u64 = 20;

/// One direction of a point-to-point link.
#[derive(Clone, Debug)]
pub struct LinkDirection {
    pub gbps: u64,
    pub propagation: SimDuration,
    /// When the serializer is free for the next frame.
    free_at: SimTime,
    pub frames: u64,
    pub bytes: u64,
}

/// When a frame sent on a link was on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    /// First bit leaves the sender.
    pub first_bit_out: SimTime,
    /// Last bit leaves the sender.
    pub last_bit_out: SimTime,
    /// First bit reaches the receiver.
    pub first_bit_in: SimTime,
}

impl LinkDirection {
    pub fn new(gbps: u64, propagation: SimDuration) -> LinkDirection {
        LinkDirection {
            gbps,
            propagation,
            free_at: SimTime::ZERO,
            frames: 0,
            bytes: 0,
        }
    }

    /// Serializes a frame of `len` bytes that is ready at `ready`.
    pub fn send(&mut self, len: usize, ready: SimTime) -> Departure {
        let start = ready.max(self.free_at);
        let frame = SimDuration::serialization(len as u64, self.gbps);
        let occupied = SimDuration::serialization(len as u64 + WIRE_OVERHEAD_BYTES, self.gbps);
        self.free_at = start + occupied;
        self.frames += 1;
        self.bytes += len as u64;
        Departure {
            first_bit_out: start,
            last_bit_out: start + frame,
            first_bit_in: start + self.propagation,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_to_back_frames_queue_at_the_serializer() {
        let mut l = LinkDirection::new(200, SimDuration::from_ns(10));
        let a = l.send(72, SimTime::ZERO);
        assert_eq!(a.last_bit_out, SimTime(2_880_000));
        assert_eq!(a.first_bit_in, SimTime(10_000_000));
        let b = l.send(72, SimTime::ZERO);
        // 72 + 20 bytes at 200 Gb/s = 3.68 ns later.
        assert_eq!(b.first_bit_out, SimTime(3_680_000));
    }
}
