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
//! is longer than any ROB fills in cycles of issue.
//!
//! [`Unit`]: super::Unit

/// Cycles the calendar covers (a power of two).
pub const HORIZON: usize = 4096;
const MASK: usize = HORIZON - 1;
const TOTAL_SHIFT: u32 = 56;

/// Per-cycle issue counters over [`HORIZON`] cycles from `base`.
#[derive(Clone, Debug)]
pub struct Calendar {
    slots: Box<[u64]>,
    /// The cycle of `slots[head]`; every earlier cycle is gone.
    base: u64,
    head: usize,
}

impl Default for Calendar {
    fn default() -> Self {
        Calendar::new()
    }
}

impl Calendar {
    pub fn new() -> Calendar {
        Calendar {
            slots: vec![0; HORIZON].into_boxed_slice(),
            base: 0,
            head: 0,
        }
    }

    /// Forgets the cycles before `cycle` (the front end reached it).
    #[inline]
    pub fn advance(&mut self, cycle: u64) {
        if cycle <= self.base {
            return;
        }
        let n = cycle - self.base;
        if n >= HORIZON as u64 {
            self.slots.fill(0);
            self.head = 0;
        } else {
            for k in 0..n as usize {
                self.slots[(self.head + k) & MASK] = 0;
            }
            self.head = (self.head + n as usize) & MASK;
        }
        self.base = cycle;
    }

    /// Moves every booked cycle `delta` later (an idle loop's iterations
    /// were skipped: the core is where it was, `delta` cycles on).
    pub fn shift(&mut self, delta: u64) {
        self.base += delta;
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
            let s = &mut self.slots[(self.head + off as usize) & MASK];
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
