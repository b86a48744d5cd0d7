//! The issue calendar: for each cycle of a window ahead of the front end,
//! how many instructions issued and how many of each port class they used
//! (ZSim's `WindowStructure`, counted per class rather than per port).
//!
//! Instructions are timed in program order but issue out of order, so a
//! younger instruction may take a slot in a cycle before an older one's.
//! Each cycle is one `u64` of byte counters (one per [`Unit`], the shared
//! memory ports, the total at the top byte). The window slides with the
//! front end, which only moves forward: nothing issues before it. An
//! instruction ready beyond the window (behind a long chain of misses) is
//! not limited by ports: contention that far ahead is rare, and the window
//! is longer than any ROB fills in cycles of issue. Each slot carries the
//! cycle it counts, so that sliding the window clears nothing (a slot of a
//! cycle gone by reads as empty): the cost is per instruction, not per
//! simulated cycle.
//!
//! [`Unit`]: super::Unit

/// Cycles the calendar covers (a power of two).
pub const HORIZON: usize = 4096;
const MASK: usize = HORIZON - 1;
const TOTAL_SHIFT: u32 = 56;

/// Per-cycle issue counters over [`HORIZON`] cycles from `base`.
#[derive(Clone, Debug)]
pub struct Calendar {
    /// Per slot: the cycle it counts (less `offset`) and its counters.
    slots: Box<[(u64, u64)]>,
    /// The first cycle still open; every earlier one is gone.
    base: u64,
    /// Cycles skipped by [`shift`](Self::shift): slots are tagged with
    /// `cycle - offset`, so a shift moves every booking at once.
    offset: u64,
}

impl Default for Calendar {
    fn default() -> Self {
        Calendar::new()
    }
}

impl Calendar {
    pub fn new() -> Calendar {
        Calendar {
            slots: vec![(u64::MAX, 0); HORIZON].into_boxed_slice(),
            base: 0,
            offset: 0,
        }
    }

    /// Forgets the cycles before `cycle` (the front end reached it).
    #[inline]
    pub fn advance(&mut self, cycle: u64) {
        self.base = self.base.max(cycle);
    }

    /// Moves every booked cycle `delta` later (an idle loop's iterations
    /// were skipped: the core is where it was, `delta` cycles on).
    pub fn shift(&mut self, delta: u64) {
        self.base += delta;
        self.offset += delta;
    }

    /// Books the first cycle at or after `from` with a free port of each
    /// counter in `counters` (index, capacity) and fewer than `width`
    /// instructions issued; returns it.
    #[inline]
    pub fn book(&mut self, from: u64, counters: &[(usize, u8)], width: u8) -> u64 {
        let mut c = from.max(self.base);
        loop {
            let off = c - self.base;
            if off >= HORIZON as u64 {
                return c;
            }
            let tag = c - self.offset;
            let (t, s) = &mut self.slots[tag as usize & MASK];
            if *t != tag {
                // A cycle gone by: this one starts empty.
                *t = tag;
                *s = 0;
            }
            let free = (*s >> TOTAL_SHIFT) < width as u64
                && counters
                    .iter()
                    .all(|&(i, cap)| (*s >> (8 * i)) & 0xff < cap as u64);
            if free {
                let mut add = 1u64 << TOTAL_SHIFT;
                for &(i, _) in counters {
                    add += 1 << (8 * i);
                }
                *s += add;
                return c;
            }
            c += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_and_width_fill_cycles_in_order() {
        let mut cal = Calendar::new();
        // Two ports of class 0, width 3.
        let alu = [(0usize, 2u8)];
        assert_eq!(cal.book(10, &alu, 3), 10);
        assert_eq!(cal.book(10, &alu, 3), 10);
        assert_eq!(cal.book(10, &alu, 3), 11, "both ports busy at 10");
        // Another class still fits cycle 10 (width 3).
        assert_eq!(cal.book(10, &[(1, 1)], 3), 10);
        assert_eq!(cal.book(10, &[(1, 1)], 3), 11);
        assert_eq!(cal.book(10, &[(2, 4)], 3), 11, "width 3 reached at 11");
        assert_eq!(cal.book(10, &[(2, 4)], 3), 12);
        cal.advance(11);
        assert_eq!(cal.book(0, &alu, 3), 12, "11 is full, earlier is gone");
        cal.advance(11 + HORIZON as u64 * 2);
        assert_eq!(cal.book(0, &alu, 3), 11 + HORIZON as u64 * 2);
        // Beyond the horizon: unconstrained.
        let far = cal.base + HORIZON as u64 + 5;
        assert_eq!(cal.book(far, &alu, 1), far);
        assert_eq!(cal.book(far, &alu, 1), far);
    }
}
