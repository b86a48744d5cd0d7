//! Miss status holding registers (MSHRs) of the non-blocking L1 data cache.
//!
//! Each register tracks one line being refilled: its line address and the
//! core cycle at which the line arrives. A register is free again from that
//! cycle on (the refill has been written into the data array). The file is
//! sized once; nothing is allocated while the hart runs.
//!
//! How the hart uses it (`hart.rs`, the model's assumptions are in
//! `timing/mod.rs`): a primary miss takes a free register (stalling the
//! pipeline until the earliest one frees if none is), a secondary miss to a
//! line in flight merges into that line's register, a prefetch takes a free
//! register or is dropped.

/// The MSHR file of one core's L1 data cache.
#[derive(Clone, Debug)]
pub struct MshrFile {
    /// Line address held by each register.
    lines: Vec<u64>,
    /// Arrival cycle of each register's line; free when at or before now.
    ready: Vec<u64>,
    /// The latest arrival of all registers: at or after it nothing is in
    /// flight (the hit path compares the cycle with it and nothing else).
    busy_until: u64,
}

impl MshrFile {
    /// A file of `count` registers (0: a blocking cache, nothing is tracked).
    pub fn new(count: u32) -> MshrFile {
        MshrFile {
            lines: vec![u64::MAX; count as usize],
            ready: vec![0; count as usize],
            busy_until: 0,
        }
    }

    /// Number of registers.
    #[inline]
    pub fn count(&self) -> usize {
        self.ready.len()
    }

    /// The cycle from which no line is in flight (0 if none ever was).
    #[inline(always)]
    pub fn busy_until(&self) -> u64 {
        self.busy_until
    }

    /// The arrival cycle of `line` if it is still in flight at `now`.
    #[inline]
    pub fn in_flight(&self, line: u64, now: u64) -> Option<u64> {
        if now >= self.busy_until {
            return None;
        }
        self.lines
            .iter()
            .zip(&self.ready)
            .find(|&(&l, &r)| l == line && r > now)
            .map(|(_, &r)| r)
    }

    /// A register free at `now`, if any.
    #[inline]
    pub fn free_at(&self, now: u64) -> Option<usize> {
        self.ready.iter().position(|&r| r <= now)
    }

    /// The register that frees first and the cycle it does (at `now` or
    /// later): where a primary miss waits when every register is busy.
    /// Panics if the file is empty (a blocking cache allocates none).
    #[inline]
    pub fn earliest_free(&self, now: u64) -> (usize, u64) {
        let (i, &r) = self
            .ready
            .iter()
            .enumerate()
            .min_by_key(|&(_, &r)| r)
            .expect("a non-blocking cache has MSHRs");
        (i, r.max(now))
    }

    /// Register `slot` now tracks `line`, arriving at `arrival`.
    #[inline]
    pub fn fill(&mut self, slot: usize, line: u64, arrival: u64) {
        self.lines[slot] = line;
        self.ready[slot] = arrival;
        self.busy_until = self.busy_until.max(arrival);
    }

    /// Registers busy at `now`.
    pub fn outstanding(&self, now: u64) -> usize {
        self.ready.iter().filter(|&&r| r > now).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_free_when_their_line_arrives() {
        let mut m = MshrFile::new(2);
        assert_eq!(m.free_at(0), Some(0));
        m.fill(0, 7, 100);
        assert_eq!(m.free_at(10), Some(1));
        m.fill(1, 9, 150);
        assert_eq!(m.free_at(10), None);
        assert_eq!(m.outstanding(10), 2);
        assert_eq!(m.earliest_free(10), (0, 100));
        assert_eq!(m.in_flight(9, 120), Some(150));
        assert_eq!(m.in_flight(7, 120), None, "arrived at 100");
        assert_eq!(m.in_flight(8, 120), None);
        assert_eq!(m.free_at(100), Some(0));
        assert_eq!(m.busy_until(), 150);
        assert_eq!(m.earliest_free(200), (0, 200));
    }
}
