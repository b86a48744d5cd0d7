//! NEBULA's in-LLC receive buffer manager (NEBULA §V-C, Fig. 5): the
//! receive buffer is an array of cache-block-sized slots, a bitvector has a
//! bit per slot, an incoming RPC takes `ceil(size / 64 B)` contiguous slots
//! at the head pointer, `free_buffer` clears them, and when the head
//! meets allocated slots the manager scrubs the bitvector for the next free
//! range (off the critical path in hardware). No room: the NIC NACKs.

/// Bytes of one slot: a cache block (§V-C: "a bit for every
/// cache-block-sized (64B) slot in the receive buffer").
pub const SLOT_BYTES: u64 = 64;

/// Why a free was refused (software freed what it did not hold).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FreeError {
    #[error("free_buffer of {len} B at offset {offset}: outside the {size}-byte receive buffer")]
    OutOfRange { offset: u64, len: u64, size: u64 },
    #[error("free_buffer of {len} B at offset {offset}: slot {slot} is not allocated")]
    NotAllocated { offset: u64, len: u64, slot: usize },
}

/// The bitvector allocator. Offsets are bytes from the buffer's base.
#[derive(Clone, Debug)]
pub struct BufferManager {
    bits: Vec<u64>,
    slots: usize,
    head: usize,
    allocated: usize,
    /// Allocations that needed a scrub (the slots at the head were taken).
    pub scrubs: u64,
}

impl BufferManager {
    /// A buffer of `bytes` (rounded down to whole slots).
    pub fn new(bytes: u64) -> BufferManager {
        let slots = (bytes / SLOT_BYTES) as usize;
        BufferManager {
            bits: vec![0; slots.div_ceil(64)],
            slots,
            head: 0,
            allocated: 0,
            scrubs: 0,
        }
    }

    /// Slots in the buffer.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Slots allocated now.
    pub fn allocated(&self) -> usize {
        self.allocated
    }

    fn is_set(&self, s: usize) -> bool {
        self.bits[s / 64] >> (s % 64) & 1 != 0
    }

    fn set(&mut self, s: usize, on: bool) {
        if on {
            self.bits[s / 64] |= 1 << (s % 64);
        } else {
            self.bits[s / 64] &= !(1 << (s % 64));
        }
    }

    /// Whether `n` slots from `start` are all free (and inside the buffer).
    fn free_run(&self, start: usize, n: usize) -> bool {
        start + n <= self.slots && (start..start + n).all(|s| !self.is_set(s))
    }

    /// Allocates contiguous slots for `len` bytes (at least one slot): the
    /// byte offset of the first, or `None` if no run is free (a NACK).
    pub fn alloc(&mut self, len: u64) -> Option<u64> {
        let n = (len.div_ceil(SLOT_BYTES) as usize).max(1);
        if n > self.slots - self.allocated {
            return None;
        }
        let start = if self.free_run(self.head, n) {
            self.head
        } else {
            // Scrub: the first free run after the head, wrapping once.
            self.scrubs += 1;
            (0..self.slots)
                .map(|i| (self.head + i) % self.slots)
                .find(|&s| self.free_run(s, n))?
        };
        for s in start..start + n {
            self.set(s, true);
        }
        self.allocated += n;
        self.head = (start + n) % self.slots;
        Some(start as u64 * SLOT_BYTES)
    }

    /// Frees the slots of `len` bytes at byte offset `offset` (as
    /// `free_buffer` names them); every one must be allocated.
    pub fn free(&mut self, offset: u64, len: u64) -> Result<(), FreeError> {
        let n = (len.div_ceil(SLOT_BYTES) as usize).max(1);
        let size = self.slots as u64 * SLOT_BYTES;
        if !offset.is_multiple_of(SLOT_BYTES) || offset + n as u64 * SLOT_BYTES > size {
            return Err(FreeError::OutOfRange { offset, len, size });
        }
        let first = (offset / SLOT_BYTES) as usize;
        if let Some(slot) = (first..first + n).find(|&s| !self.is_set(s)) {
            return Err(FreeError::NotAllocated { offset, len, slot });
        }
        for s in first..first + n {
            self.set(s, false);
        }
        self.allocated -= n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn allocates_contiguous_slots_from_the_head() {
        let mut b = BufferManager::new(10 * SLOT_BYTES);
        assert_eq!(b.alloc(150), Some(0), "150 B take 3 slots");
        assert_eq!(b.alloc(1), Some(3 * SLOT_BYTES));
        assert_eq!(
            b.alloc(0),
            Some(4 * SLOT_BYTES),
            "an empty RPC still takes a slot"
        );
        assert_eq!(b.allocated(), 5);
    }

    #[test]
    fn nacks_when_full_and_recovers_after_a_free() {
        // The paper's NEBULA_base buffer: 160 slots of 512 B (§VI).
        let mut b = BufferManager::new(160 * 512);
        for i in 0..160 {
            assert_eq!(b.alloc(512), Some(i * 512));
        }
        assert_eq!(b.alloc(64), None, "full: NACK");
        b.free(5 * 512, 512).unwrap();
        assert_eq!(b.alloc(512), Some(5 * 512), "the scrub finds the freed run");
        assert_eq!(b.alloc(1), None);
    }

    #[test]
    fn fragmentation_refuses_a_run_that_does_not_fit() {
        let mut b = BufferManager::new(8 * SLOT_BYTES);
        let offs: Vec<u64> = (0..8).map(|_| b.alloc(64).unwrap()).collect();
        // Free every other slot: 4 free slots, no two adjacent.
        for o in offs.iter().step_by(2) {
            b.free(*o, 64).unwrap();
        }
        assert_eq!(b.allocated(), 4);
        assert_eq!(b.alloc(128), None, "no two contiguous free slots");
        assert!(b.alloc(64).is_some());
    }

    #[test]
    fn refuses_double_and_foreign_frees() {
        let mut b = BufferManager::new(4 * SLOT_BYTES);
        let o = b.alloc(64).unwrap();
        b.free(o, 64).unwrap();
        assert!(matches!(b.free(o, 64), Err(FreeError::NotAllocated { .. })));
        assert!(matches!(
            b.free(4 * SLOT_BYTES, 64),
            Err(FreeError::OutOfRange { .. })
        ));
        assert!(matches!(b.free(3, 64), Err(FreeError::OutOfRange { .. })));
    }

    proptest! {
        /// Random allocations and frees (out of order): the count of
        /// allocated slots is always what is held, live allocations never
        /// overlap, and after freeing everything the whole buffer is one
        /// free run again (no leak).
        #[test]
        fn no_leak_under_random_alloc_free(ops in proptest::collection::vec((0u8..3, 1u64..600, any::<u16>()), 1..400)) {
            let mut b = BufferManager::new(160 * 512);
            let mut live: Vec<(u64, u64)> = Vec::new();
            for (op, len, pick) in ops {
                if op < 2 {
                    if let Some(o) = b.alloc(len) {
                        let n = len.div_ceil(SLOT_BYTES) * SLOT_BYTES;
                        for &(lo, ll) in &live {
                            let ln = ll.div_ceil(SLOT_BYTES) * SLOT_BYTES;
                            prop_assert!(o + n <= lo || lo + ln <= o, "overlap");
                        }
                        live.push((o, len));
                    }
                } else if !live.is_empty() {
                    let (o, l) = live.swap_remove(pick as usize % live.len());
                    prop_assert!(b.free(o, l).is_ok());
                }
                let held: u64 = live.iter().map(|&(_, l)| l.div_ceil(SLOT_BYTES)).sum();
                prop_assert_eq!(b.allocated() as u64, held);
            }
            for (o, l) in live.drain(..) {
                prop_assert!(b.free(o, l).is_ok());
            }
            prop_assert_eq!(b.allocated(), 0);
            prop_assert!(b.alloc(160 * 512).is_some(), "the whole buffer is free again");
        }
    }
}
