//! A set-associative cache model (tags only, LRU replacement), used for the
//! cores' L1s and the node's shared L2. Data always lives in memory; the
//! model only decides hit or miss, and (through [`Cache::access_data`], the
//! L1 data cache's path) which lines are dirty, so that evicting one can be
//! charged as a write-back.

use serde::{Deserialize, Serialize};

/// Geometry of a cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    pub size_bytes: u32,
    pub ways: u32,
    pub line_bytes: u32,
}

/// A cache geometry no model can work with; `name` is the cache's key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{name}: size_bytes {size_bytes} / ways {ways} / line_bytes {line_bytes} must give a power-of-two number of sets of power-of-two lines")]
pub struct CacheConfigError {
    pub name: &'static str,
    pub size_bytes: u32,
    pub ways: u32,
    pub line_bytes: u32,
}

impl CacheConfig {
    /// Checks the geometry of the cache called `name` (`l1i`, `l2`, ...).
    pub fn validate(&self, name: &'static str) -> Result<(), CacheConfigError> {
        let ok = self.line_bytes.is_power_of_two()
            && self.ways > 0
            && self
                .size_bytes
                .is_multiple_of(self.ways.saturating_mul(self.line_bytes))
            && (self.size_bytes / (self.ways * self.line_bytes)).is_power_of_two();
        if ok {
            Ok(())
        } else {
            Err(CacheConfigError {
                name,
                size_bytes: self.size_bytes,
                ways: self.ways,
                line_bytes: self.line_bytes,
            })
        }
    }
}

/// Tag state of a set-associative cache.
#[derive(Clone, Debug)]
pub struct Cache {
    /// `sets * ways` line addresses, each set ordered most recently used first.
    tags: Vec<u64>,
    ways: usize,
    set_mask: u64,
    line_shift: u32,
    /// The most recently accessed line: the common case is checked first.
    last_line: u64,
    pub hits: u64,
    pub misses: u64,
}

const INVALID: u64 = u64::MAX;
/// Tag bit of a dirty line: line addresses use at most 64 - 6 bits, so the
/// top bit of a tag is free. [`INVALID`] has it set but never matches a
/// line and is never reported as a victim.
const DIRTY: u64 = 1 << 63;

/// Moves way `i` of a set to the front (most recent), the ones before it
/// back by one: `ways[..=i].rotate_right(1)`, written out (a set has a
/// handful of ways; the library's rotation is slower at that size).
#[inline(always)]
fn move_to_front(ways: &mut [u64], i: usize) {
    // Within `..=i`: one bounds check, none in the loop.
    let ways = &mut ways[..=i];
    let t = ways[i];
    for j in (1..ways.len()).rev() {
        ways[j] = ways[j - 1];
    }
    ways[0] = t;
}

/// What a data access ([`Cache::access_data`]) found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    Hit,
    /// The line was allocated; `dirty_victim` is the address of the dirty
    /// line it evicted, which must be written back.
    Miss {
        dirty_victim: Option<u64>,
    },
}

impl Cache {
    pub fn new(c: &CacheConfig) -> Cache {
        let sets = (c.size_bytes / (c.ways * c.line_bytes)) as usize;
        Cache {
            tags: vec![INVALID; sets * c.ways as usize],
            ways: c.ways as usize,
            set_mask: sets as u64 - 1,
            line_shift: c.line_bytes.trailing_zeros(),
            last_line: INVALID,
            hits: 0,
            misses: 0,
        }
    }

    /// The line address (address without the offset bits) of `addr`.
    #[inline]
    pub fn line_of(&self, addr: u64) -> u64 {
        addr >> self.line_shift
    }

    /// log2 of the line size in bytes.
    #[inline]
    pub fn line_shift(&self) -> u32 {
        self.line_shift
    }

    /// Bytes per line.
    pub fn line_bytes(&self) -> u64 {
        1 << self.line_shift
    }

    /// Accesses `addr`; returns true on a hit. A miss allocates the line,
    /// evicting the least recently used one.
    #[inline]
    pub fn access(&mut self, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        if line == self.last_line {
            self.hits += 1;
            return true;
        }
        self.last_line = line;
        // The most recent line of its set: a hit with no LRU change.
        let set = (line & self.set_mask) as usize * self.ways;
        if self.tags.get(set).is_some_and(|&t| t & !DIRTY == line) {
            self.hits += 1;
            return true;
        }
        self.access_slow(set, line)
    }

    /// [`access`](Self::access) beyond the set's most recent way.
    #[inline(never)]
    fn access_slow(&mut self, set: usize, line: u64) -> bool {
        let ways = &mut self.tags[set..set + self.ways];
        match ways.iter().position(|&t| t & !DIRTY == line) {
            Some(i) => {
                move_to_front(ways, i);
                self.hits += 1;
                true
            }
            None => {
                let n = ways.len();
                move_to_front(ways, n - 1);
                ways[0] = line;
                self.misses += 1;
                false
            }
        }
    }

    /// Like [`access`](Self::access), for the L1 data cache: a store
    /// (`write`) marks the line dirty, and a miss reports the dirty line it
    /// evicted.
    #[inline(always)]
    pub fn access_data(&mut self, addr: u64, write: bool) -> Lookup {
        let line = addr >> self.line_shift;
        if line == self.last_line {
            self.hits += 1;
            if write {
                // The last line accessed is the most recent of its set.
                let set = (line & self.set_mask) as usize * self.ways;
                self.tags[set] |= DIRTY;
            }
            return Lookup::Hit;
        }
        self.last_line = line;
        // The most recent line of its set: a hit with no LRU change.
        let set = (line & self.set_mask) as usize * self.ways;
        if let Some(t) = self.tags.get_mut(set) {
            if *t & !DIRTY == line {
                if write {
                    *t |= DIRTY;
                }
                self.hits += 1;
                return Lookup::Hit;
            }
        }
        self.access_data_slow(set, line, write)
    }

    /// [`access_data`](Self::access_data) beyond the set's most recent way.
    #[inline(never)]
    fn access_data_slow(&mut self, set: usize, line: u64, write: bool) -> Lookup {
        let dirty = if write { DIRTY } else { 0 };
        let ways = &mut self.tags[set..set + self.ways];
        match ways.iter().position(|&t| t & !DIRTY == line) {
            Some(i) => {
                move_to_front(ways, i);
                ways[0] |= dirty;
                self.hits += 1;
                Lookup::Hit
            }
            None => {
                let n = ways.len();
                let victim = ways[n - 1];
                move_to_front(ways, n - 1);
                ways[0] = line | dirty;
                self.misses += 1;
                let dirty_victim = (victim != INVALID && victim & DIRTY != 0)
                    .then(|| (victim & !DIRTY) << self.line_shift);
                Lookup::Miss { dirty_victim }
            }
        }
    }

    /// Whether the line holding `addr` is present (no LRU update, no counts).
    pub fn contains(&self, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        let set = (line & self.set_mask) as usize * self.ways;
        self.tags[set..set + self.ways]
            .iter()
            .any(|&t| t & !DIRTY == line)
    }

    /// Whether the line holding `addr` is present and dirty.
    pub fn is_dirty(&self, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        let set = (line & self.set_mask) as usize * self.ways;
        self.tags[set..set + self.ways].contains(&(line | DIRTY))
    }

    /// Forgets the line holding `addr`, if present (a probe from an
    /// inclusive L2, e.g. when a DMA engine writes the line); returns whether
    /// it was present. The remaining lines of the set keep their LRU order.
    pub fn invalidate_line(&mut self, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        if line == self.last_line {
            self.last_line = INVALID;
        }
        let set = (line & self.set_mask) as usize * self.ways;
        let ways = &mut self.tags[set..set + self.ways];
        match ways.iter().position(|&t| t & !DIRTY == line) {
            Some(i) => {
                ways[i..].rotate_left(1);
                ways[self.ways - 1] = INVALID;
                true
            }
            None => false,
        }
    }

    /// Puts the line holding `addr` in the cache as the most recent of its
    /// set without counting an access (a line pushed in from outside, e.g.
    /// NEBULA's NIC-to-core steering); returns the dirty line it evicted.
    pub fn install_line(&mut self, addr: u64) -> Option<u64> {
        let line = addr >> self.line_shift;
        // The fast path assumes the last line accessed is its set's most
        // recent: no longer true.
        self.last_line = INVALID;
        let set = (line & self.set_mask) as usize * self.ways;
        let ways = &mut self.tags[set..set + self.ways];
        if let Some(i) = ways.iter().position(|&t| t & !DIRTY == line) {
            ways[..=i].rotate_right(1);
            return None;
        }
        let victim = ways[self.ways - 1];
        ways.rotate_right(1);
        ways[0] = line;
        (victim != INVALID && victim & DIRTY != 0).then(|| (victim & !DIRTY) << self.line_shift)
    }

    /// Forgets every line (`fence.i` on the instruction cache).
    pub fn invalidate_all(&mut self) {
        self.tags.fill(INVALID);
        self.last_line = INVALID;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Cache {
        // 2 sets x 2 ways x 64 B
        Cache::new(&CacheConfig {
            size_bytes: 256,
            ways: 2,
            line_bytes: 64,
        })
    }

    #[test]
    fn hits_after_first_touch() {
        let mut c = small();
        assert!(!c.access(0x1000));
        assert!(c.access(0x1008));
        assert!(c.access(0x103f));
        assert!(!c.access(0x1040));
    }

    #[test]
    fn lru_evicts_the_oldest_line_of_a_set() {
        let mut c = small();
        // Lines 0, 2, 4 map to set 0.
        c.access(0);
        c.access(128);
        c.access(0); // 0 is now most recent
        c.access(256); // evicts 128
        assert!(c.access(0));
        assert!(!c.access(128));
    }

    #[test]
    fn invalidate_line_forgets_one_line_and_keeps_lru_order() {
        let mut c = small();
        // Lines 0 and 128 share set 0; 64 is in set 1.
        c.access(0);
        c.access(128);
        c.access(64);
        assert!(c.invalidate_line(0x10)); // the line of address 0
        assert!(!c.invalidate_line(0x10)); // already gone
        assert!(!c.invalidate_line(0x2000)); // never there
        assert!(c.access(128), "the other line of the set stays");
        assert!(c.access(64), "other sets are untouched");
        assert!(!c.access(0), "the invalidated line misses");
        // The most recently accessed line (the fast path) can be invalidated too.
        assert!(c.access(0));
        assert!(c.invalidate_line(0));
        assert!(!c.access(0));
        // LRU order survives: set 0 now holds 0 (MRU) and 128; invalidate 0,
        // touch 256 (fills the free way), then 384 evicts the LRU one, 128.
        c.invalidate_line(0);
        c.access(256);
        c.access(384);
        assert!(c.access(256));
        assert!(!c.access(128));
    }

    #[test]
    fn stores_dirty_lines_and_evictions_report_them() {
        let mut c = small();
        // Set 0 holds lines 0 and 128 (2 ways); 256 and 384 map there too.
        assert_eq!(c.access_data(0, true), Lookup::Miss { dirty_victim: None });
        assert!(c.is_dirty(0x20));
        assert_eq!(
            c.access_data(128, false),
            Lookup::Miss { dirty_victim: None }
        );
        assert!(!c.is_dirty(128));
        // A store hit through the last-line fast path marks its line too.
        assert_eq!(c.access_data(130, true), Lookup::Hit);
        assert!(c.is_dirty(128));
        assert!(c.access(0), "plain access still finds dirty lines");
        // 128 is now the LRU line of the set, and dirty.
        assert_eq!(
            c.access_data(256, false),
            Lookup::Miss {
                dirty_victim: Some(128)
            }
        );
        assert_eq!(
            c.access_data(384, false),
            Lookup::Miss {
                dirty_victim: Some(0)
            }
        );
        assert_eq!(c.access_data(256, false), Lookup::Hit);
        assert_eq!(
            c.access_data(0, false),
            Lookup::Miss { dirty_victim: None },
            "a clean victim needs no write-back"
        );
        assert!(c.contains(0) && !c.contains(384) && !c.contains(4096));
        assert!(c.invalidate_line(0) && !c.contains(0));
    }

    #[test]
    fn geometry_is_validated() {
        let bad = CacheConfig {
            size_bytes: 1000,
            ways: 3,
            line_bytes: 64,
        };
        assert!(bad.validate("l1d").is_err());
    }
}
