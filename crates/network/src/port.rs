//! An output port: strict-priority FIFO queues in front of a serializer that
//! drives one direction of a link, as htsim models a link (a queue, then a
//! pipe).
//!
//! Timing, as `nanopu-system`'s `LinkDirection`: a frame of `len` bytes
//! occupies the serializer for its wire length, `len` (padded to the
//! 64-byte Ethernet minimum) plus 20 bytes of preamble and inter-frame gap
//! ([`nanopu_wire::frame::wire_bits`]); its last bit leaves `len` bytes'
//! time after its first. The receiver sees the first bit one propagation
//! delay after it left.
//!
//! Buffer occupancy counts a frame's bytes from when it joins the queue
//! until its last bit has left. When a frame's last bit leaves, the next
//! frame is chosen at once (highest band first) and starts after the
//! inter-frame gap: a higher-band frame that arrives during that gap goes
//! after the one already chosen (a real scheduler also commits ahead of the
//! wire).
//!
//! A port is either a switch's output port (`priority_bands` bands, buffer
//! limits enforced by [`crate::switch`]) or a host NIC's uplink (one band,
//! no limit: the NIC's own egress queue). Each port needs at most one
//! pending event, the end of the frame it is sending.

use nanopu_sim::{Reserved, SimDuration, SimTime};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::VecDeque;

use crate::topology::Endpoint;

/// Index of a capture in the network's list (a port records into it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Capture(pub(crate) usize);

/// Which allowance a queued frame's bytes are charged to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Charge {
    /// A host uplink: no limit.
    Unlimited,
    /// The data buffer (`buffer_bytes`).
    Buffer,
    /// The trimmed-header allowance (`trim_queue_bytes`).
    Trim,
}

/// A frame waiting in a queue.
#[derive(Debug)]
pub(crate) struct Queued {
    pub frame: Vec<u8>,
    pub charge: Charge,
    /// When it joined the queue (for the timeline).
    pub since: SimTime,
}

/// The end of a switch port's frame in flight for which no event was
/// scheduled (the network's lazy mode, [`crate::Network::set_lazy_tx_done`]):
/// when its last bit leaves and the place in the event order its event
/// would have had. It takes effect (the bytes are released) before the
/// first event after that place, or becomes a real event if a frame
/// queues behind it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingDone {
    pub at: SimTime,
    /// `None` until the caller has reserved the place.
    pub key: Option<Reserved>,
}

impl PendingDone {
    /// Whether its event would have come before the event at `now` with
    /// place `key` (a place not reserved yet is the present event's own
    /// frame's, which ends later anyway).
    pub fn before(&self, now: SimTime, key: Reserved) -> bool {
        self.at < now || (self.at == now && self.key.is_some_and(|k| k < key))
    }
}

/// What an output port did, for [`crate::Network::port_stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PortStats {
    /// Frames that started serialization.
    pub frames: u64,
    /// Their bytes (without preamble and gap).
    pub bytes: u64,
    /// Most bytes held at once (queued and in flight, trimmed headers
    /// included).
    pub max_bytes: u64,
}

/// One output port and the link direction it drives.
#[derive(Debug)]
pub(crate) struct OutputPort {
    /// The switch this port belongs to (`None`: a host uplink).
    pub owner: Option<usize>,
    /// Where the link leads.
    pub peer: Endpoint,
    /// Propagation delay of the link.
    pub propagation: SimDuration,
    /// Line rate of the link.
    pub gbps: u64,
    /// Faults are injected here (a random stream of its own).
    pub faults: Option<ChaCha8Rng>,
    /// Where frames leaving here are recorded.
    pub capture: Option<Capture>,
    /// `(time, bytes held)` at every change, when watched.
    pub samples: Option<Vec<(SimTime, u64)>>,
    /// Bytes charged to the data buffer (queued and in flight).
    pub buffer_bytes: u64,
    /// Bytes charged to the trimmed-header allowance.
    pub trim_bytes: u64,
    pub stats: PortStats,
    /// The end of the frame in flight, when it has no event (yet).
    pub pending_done: Option<PendingDone>,
    bands: Vec<VecDeque<Queued>>,
    waiting: usize,
    /// Bytes and charge of the frame being serialized.
    in_flight: Option<(u64, Charge)>,
    /// When the serializer can start the next frame.
    free_at: SimTime,
}

impl OutputPort {
    pub fn new(
        owner: Option<usize>,
        peer: Endpoint,
        propagation: SimDuration,
        gbps: u64,
        bands: usize,
    ) -> OutputPort {
        OutputPort {
            owner,
            peer,
            propagation,
            gbps,
            faults: None,
            capture: None,
            samples: None,
            buffer_bytes: 0,
            trim_bytes: 0,
            stats: PortStats::default(),
            pending_done: None,
            bands: (0..bands).map(|_| VecDeque::new()).collect(),
            waiting: 0,
            in_flight: None,
            free_at: SimTime::ZERO,
        }
    }

    /// A host uplink's frame of `len` bytes, ready at `ready`, starts as
    /// soon as the serializer is free, in the order frames are handed over
    /// (the NIC hands them over in time order): returns its start. Used
    /// instead of the queue when nothing waits in it, so a frame costs no
    /// event on its uplink. (Such an uplink keeps no occupancy samples.)
    pub fn serialize_in_order(&mut self, len: usize, ready: SimTime) -> SimTime {
        let at = ready.max(self.free_at);
        self.free_at = at + wire_time(len, self.gbps);
        self.stats.frames += 1;
        self.stats.bytes += len as u64;
        at
    }

    /// Whether frames wait in the queue or one is in flight through it.
    pub fn queue_in_use(&self) -> bool {
        self.in_flight.is_some() || self.waiting > 0
    }

    /// Frames waiting behind the one in flight.
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Number of priority bands.
    pub fn bands(&self) -> usize {
        self.bands.len()
    }

    /// Bytes held (queued and in flight, both allowances).
    pub fn held(&self) -> u64 {
        self.buffer_bytes + self.trim_bytes
    }

    /// Whether a frame is being serialized (then later frames must queue).
    pub fn busy(&self) -> bool {
        self.in_flight.is_some()
    }

    /// When a frame that is ready at `now` could start, if the port is idle.
    pub fn start_time(&self, now: SimTime) -> SimTime {
        now.max(self.free_at)
    }

    /// Charges `len` bytes to `charge` at `now`.
    pub fn hold(&mut self, len: u64, charge: Charge, now: SimTime) {
        match charge {
            Charge::Unlimited | Charge::Buffer => self.buffer_bytes += len,
            Charge::Trim => self.trim_bytes += len,
        }
        let held = self.held();
        self.stats.max_bytes = self.stats.max_bytes.max(held);
        self.sample(now);
    }

    fn release(&mut self, len: u64, charge: Charge, now: SimTime) {
        match charge {
            Charge::Unlimited | Charge::Buffer => self.buffer_bytes -= len,
            Charge::Trim => self.trim_bytes -= len,
        }
        self.sample(now);
    }

    fn sample(&mut self, now: SimTime) {
        let held = self.held();
        if let Some(s) = &mut self.samples {
            s.push((now, held));
        }
    }

    /// Queues a frame behind the one in flight.
    pub fn push(&mut self, band: usize, q: Queued) {
        debug_assert!(self.busy());
        self.bands[band].push_back(q);
        self.waiting += 1;
    }

    /// Starts serializing a frame of `len` bytes at `at` (no earlier than
    /// [`OutputPort::start_time`]); returns when its last bit leaves.
    pub fn begin(&mut self, len: usize, charge: Charge, at: SimTime, gbps: u64) -> SimTime {
        debug_assert!(!self.busy() && at >= self.free_at);
        self.in_flight = Some((len as u64, charge));
        self.free_at = at + wire_time(len, gbps);
        self.stats.frames += 1;
        self.stats.bytes += len as u64;
        at + SimDuration::serialization(len as u64, gbps)
    }

    /// The last bit of the frame in flight has left at `now`: releases its
    /// bytes and returns their count and charge (for the switch's shared
    /// occupancy).
    pub fn finish(&mut self, now: SimTime) -> Option<(u64, Charge)> {
        let (len, charge) = self.in_flight.take()?;
        self.release(len, charge, now);
        Some((len, charge))
    }

    /// After [`OutputPort::finish`], the next frame (highest band first)
    /// and when it starts, or `None` if the queues are empty.
    pub fn next(&mut self, now: SimTime) -> Option<(Queued, SimTime)> {
        if self.waiting == 0 {
            return None;
        }
        let q = self.bands.iter_mut().rev().find_map(|b| b.pop_front())?;
        self.waiting -= 1;
        Some((q, self.start_time(now)))
    }
}

/// Time a frame of `len` bytes occupies a serializer at `gbps`: its wire
/// length with minimum-size padding, preamble and inter-frame gap.
pub fn wire_time(len: usize, gbps: u64) -> SimDuration {
    SimDuration::serialization(nanopu_wire::frame::wire_bits(len) / 8, gbps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(len: usize) -> Queued {
        Queued {
            frame: vec![0; len],
            charge: Charge::Buffer,
            since: SimTime::ZERO,
        }
    }

    #[test]
    fn wire_time_counts_preamble_gap_and_padding() {
        // 72 + 20 bytes at 200 Gb/s.
        assert_eq!(wire_time(72, 200), SimDuration(3_680_000));
        // A 10-byte runt is padded to 64 bytes.
        assert_eq!(wire_time(10, 200), wire_time(64, 200));
    }

    #[test]
    fn serves_highest_band_first_fifo_within() {
        let mut p = OutputPort::new(Some(0), Endpoint::Host(0), SimDuration::ZERO, 200, 4);
        p.samples = Some(Vec::new());
        let t0 = SimTime::ZERO;
        p.hold(72, Charge::Buffer, t0);
        let last = p.begin(72, Charge::Buffer, t0, 200);
        assert_eq!(last, SimTime(2_880_000));
        for (band, len) in [(0, 100), (3, 101), (1, 102), (3, 103)] {
            p.hold(len as u64, Charge::Buffer, t0);
            p.push(band, q(len));
        }
        assert_eq!(p.held(), 72 + 100 + 101 + 102 + 103);
        let mut order = Vec::new();
        let mut now = last;
        while let Some((next, at)) = p.finish(now).and_then(|_| p.next(now)) {
            let len = next.frame.len();
            order.push(len);
            // Starts after the 20-byte gap of the previous frame.
            assert!(at > now);
            now = p.begin(len, next.charge, at, 200);
        }
        assert_eq!(order, [101, 103, 102, 100]);
        assert_eq!(p.finish(now), None);
        assert_eq!(p.held(), 0);
        assert_eq!(p.stats.frames, 5);
        assert_eq!(p.stats.max_bytes, 478);
        let s = p.samples.as_ref().unwrap();
        assert_eq!(s.len(), 10);
        assert!(s.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!(s.last().unwrap().1, 0);
    }
}
