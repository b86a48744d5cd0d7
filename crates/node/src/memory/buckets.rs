//! Capacity of a shared resource (a DRAM channel's data bus, an LLC bank)
//! accounted in fixed time buckets.
//!
//! The harts of a node run in quanta, so requests reach the memory system
//! out of time order by up to a quantum (`quantum_cycles`). A queue that
//! serves requests in arrival order (a "busy until" cycle) would make an
//! early request that arrives late wait behind later ones. Here time is cut
//! into buckets of `bucket_cycles`, each able to serve `capacity` units
//! (bytes for a channel, busy cycles for a bank). A request books its units
//! in the bucket of its own time; what does not fit spills into the
//! following buckets. The order in which requests of one bucket arrive only
//! decides which of them spills, so the total served per bucket never
//! exceeds the capacity, and the result is deterministic for a given
//! arrival order.
//!
//! The wait a request sees:
//! - fits in its own bucket: an M/D/1 queueing delay for the bucket's
//!   utilisation before it, `s * rho / (2 (1 - rho))` (`s` its service time,
//!   `rho` = booked / capacity), capped at the end of the bucket: zero on
//!   an idle resource, rising with load;
//! - spilled: until the first bucket with room, plus the service time of
//!   what that bucket already holds (first come, first served there).
//!
//! The buckets are a ring: a request older than the ring's span (which the
//! node's quanta never produce) is treated as arriving at the oldest bucket
//! still held, so it is delayed, never served for free. The run of full
//! buckets at the head of a backlog is skipped in one step, so an
//! overloaded resource costs no more per request than an idle one.

/// One bucket of the ring: which bucket of time it holds and what is booked.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    index: u64,
    booked: u64,
}

/// A resource serving `capacity` units per `bucket_cycles`.
#[derive(Clone, Debug)]
pub struct TimeBuckets {
    bucket_cycles: u64,
    capacity: u64,
    slots: Box<[Slot; RING_BUCKETS]>,
    /// Highest bucket index booked so far.
    newest: u64,
    /// A run of full buckets `[full_from, full_to)`: under overload the
    /// backlog, which a request skips in one step.
    full_from: u64,
    full_to: u64,
    /// The bucket of the last request, `(index, first cycle)`: most
    /// requests fall in it or the next, sparing a division.
    last: (u64, u64),
}

/// Buckets in the ring: with 100 ns buckets, 400 us of history and future,
/// far beyond a quantum's skew and any backlog a blocking core builds.
pub const RING_BUCKETS: usize = 4096;

/// How far beyond the newest booked bucket [`TimeBuckets::book`]
/// prefetches: the next cache line of slots (16-byte slots, 64-byte lines).
const PREFETCH_AHEAD: u64 = 4;

impl TimeBuckets {
    /// `bucket_cycles` and `capacity` must be at least 1 (checked by the
    /// configurations that build one).
    pub fn new(bucket_cycles: u64, capacity: u64) -> TimeBuckets {
        assert!(bucket_cycles > 0 && capacity > 0);
        TimeBuckets {
            bucket_cycles,
            capacity,
            slots: Box::new([Slot::default(); RING_BUCKETS]),
            newest: 0,
            full_from: 0,
            full_to: 0,
            last: (0, 0),
        }
    }

    pub fn bucket_cycles(&self) -> u64 {
        self.bucket_cycles
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    fn slot(&mut self, index: u64) -> &mut Slot {
        let slot = &mut self.slots[(index % RING_BUCKETS as u64) as usize];
        if slot.index != index {
            *slot = Slot { index, booked: 0 };
        }
        slot
    }

    /// Books `units` for a request at `cycle`; returns the cycles it waits
    /// before its service starts (0 on an idle resource), and the bucket
    /// index where its first unit was booked.
    #[inline(always)]
    pub fn book(&mut self, cycle: u64, units: u64) -> (u64, u64) {
        let own = self.index_of(cycle);
        self.prefetch(self.newest.max(own) + PREFETCH_AHEAD);
        // The common case, inline: the request fits in its own bucket, which
        // the ring still holds and which is not part of the backlog (what
        // `book_spilling` does for it, without the loop).
        if units > 0
            && own + (RING_BUCKETS as u64 - 1) >= self.newest
            && !(self.full_from..self.full_to).contains(&own)
        {
            let capacity = self.capacity;
            let slot = &mut self.slots[(own % RING_BUCKETS as u64) as usize];
            let before = if slot.index == own { slot.booked } else { 0 };
            if units <= capacity - before {
                *slot = Slot {
                    index: own,
                    booked: before + units,
                };
                let wait = if before == 0 {
                    0
                } else {
                    // M/D/1 for the utilisation before this request.
                    let s = (units * self.bucket_cycles).div_ceil(capacity);
                    let md1 = s * before / (2 * (capacity - before));
                    md1.min((own + 1) * self.bucket_cycles - cycle)
                };
                if before + units == capacity {
                    self.mark_full(own);
                }
                self.newest = self.newest.max(own);
                return (wait, own);
            }
        }
        self.book_spilling(cycle, units, own)
    }

    /// [`book`](Self::book) for a request that spills beyond its own bucket
    /// (or arrives at a full one, or older than the ring).
    #[inline(never)]
    fn book_spilling(&mut self, cycle: u64, units: u64, own: u64) -> (u64, u64) {
        let oldest = self.newest.saturating_sub(RING_BUCKETS as u64 - 1);
        let mut index = own.max(oldest);
        let (capacity, bucket_cycles) = (self.capacity, self.bucket_cycles);
        let mut left = units;
        let mut wait = None;
        let mut first_index = index;
        while left > 0 {
            if (self.full_from..self.full_to).contains(&index) {
                // The backlog: skip it whole rather than bucket by bucket.
                index = self.full_to;
            }
            let slot = self.slot(index);
            if slot.booked < capacity {
                let before = slot.booked;
                let take = left.min(capacity - before);
                slot.booked += take;
                left -= take;
                let now_full = slot.booked == capacity;
                if wait.is_none() {
                    first_index = index;
                    wait = Some(if index == own {
                        if before == 0 {
                            0
                        } else {
                            // M/D/1 for the utilisation before this request.
                            let s = (units * bucket_cycles).div_ceil(capacity);
                            let md1 = s * before / (2 * (capacity - before));
                            md1.min((index + 1) * bucket_cycles - cycle)
                        }
                    } else {
                        (index * bucket_cycles).saturating_sub(cycle)
                            + (before * bucket_cycles).div_ceil(capacity)
                    });
                }
                if now_full {
                    self.mark_full(index);
                }
            } else {
                self.mark_full(index);
            }
            self.newest = self.newest.max(index);
            index += 1;
        }
        (wait.unwrap_or(0), first_index)
    }

    /// Asks the host to bring the slot of bucket `index` into its cache.
    /// Bookings reach new buckets at the newest end of the ring, one new
    /// cache line of slots every few buckets, and a line comes round again
    /// only after the whole ring (64 KB per resource), long evicted: without
    /// this, each is a host cache miss (most of `book`'s time on a 16-core
    /// node whose guest data far exceeds the host's caches).
    #[inline(always)]
    fn prefetch(&self, index: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let slot: *const Slot = &self.slots[(index % RING_BUCKETS as u64) as usize];
            // SAFETY: a prefetch is a hint with no effect on the program's
            // state, and `slot` points into the ring.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(slot.cast()) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = index;
    }

    /// The bucket holding `cycle`.
    #[inline]
    fn index_of(&mut self, cycle: u64) -> u64 {
        let (index, start) = self.last;
        let offset = cycle.wrapping_sub(start);
        if offset < self.bucket_cycles {
            return index;
        }
        if offset < 2 * self.bucket_cycles {
            self.last = (index + 1, start + self.bucket_cycles);
            return index + 1;
        }
        let index = cycle / self.bucket_cycles;
        self.last = (index, index * self.bucket_cycles);
        index
    }

    /// Extends the run of full buckets with `index` (or starts a new run
    /// after the current one; full buckets outside the run are still full
    /// in their slots, only found one by one).
    fn mark_full(&mut self, index: u64) {
        if index == self.full_to {
            self.full_to += 1;
        } else if index + 1 == self.full_from {
            self.full_from = index;
        } else if index > self.full_to {
            self.full_from = index;
            self.full_to = index + 1;
        }
    }

    /// Units booked in the bucket holding `cycle` (0 if not held).
    pub fn booked_at(&self, cycle: u64) -> u64 {
        let index = cycle / self.bucket_cycles;
        let slot = &self.slots[(index % RING_BUCKETS as u64) as usize];
        if slot.index == index {
            slot.booked
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_resource_serves_at_once() {
        let mut b = TimeBuckets::new(100, 10);
        assert_eq!(b.book(1234, 1).0, 0);
    }

    #[test]
    fn the_wait_rises_with_load_in_a_bucket() {
        let mut b = TimeBuckets::new(100, 100);
        let waits: Vec<u64> = (0..10).map(|_| b.book(0, 10).0).collect();
        assert_eq!(waits[0], 0);
        assert!(waits.windows(2).all(|w| w[0] <= w[1]), "{waits:?}");
        assert!(waits[9] > waits[1], "{waits:?}");
    }

    #[test]
    fn a_full_bucket_spills_into_the_next_and_capacity_is_never_exceeded() {
        let mut b = TimeBuckets::new(100, 64);
        for _ in 0..4 {
            b.book(10, 64);
        }
        for k in 0..4 {
            assert_eq!(b.booked_at(k * 100), 64, "bucket {k}");
        }
        // The fifth waits until bucket 4 starts.
        let (wait, index) = b.book(10, 64);
        assert_eq!(index, 4);
        assert_eq!(wait, 390);
        // A request spanning buckets books its remainder onward.
        let mut c = TimeBuckets::new(100, 64);
        c.book(0, 32);
        c.book(0, 64);
        assert_eq!(c.booked_at(0), 64);
        assert_eq!(c.booked_at(100), 32);
    }

    #[test]
    fn an_early_request_arriving_late_is_not_queued_behind_later_ones() {
        let mut b = TimeBuckets::new(100, 1000);
        b.book(150, 64); // a later request first
        assert_eq!(b.book(20, 64).0, 0, "bucket 0 is still idle");
    }

    #[test]
    fn a_request_older_than_the_ring_is_delayed_not_free() {
        let mut b = TimeBuckets::new(10, 10);
        b.book(10 * (RING_BUCKETS as u64 + 5), 1);
        let (wait, index) = b.book(0, 1);
        assert!(index >= 5 && wait > 0, "{index} {wait}");
    }
}
