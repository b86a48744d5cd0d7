//! A set-associative cache model (tags only, LRU replacement), used for the
//! cores' L1s and the node's shared L2. Data always lives in memory; the
//! model only decides hit or miss.

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
        self.access_slow(line)
    }

    fn access_slow(&mut self, line: u64) -> bool {
        let set = (line & self.set_mask) as usize * self.ways;
        let ways = &mut self.tags[set..set + self.ways];
        match ways.iter().position(|&t| t == line) {
            Some(i) => {
                ways[..=i].rotate_right(1);
                self.hits += 1;
                true
            }
            None => {
                ways.rotate_right(1);
                ways[0] = line;
                self.misses += 1;
                false
            }
        }
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
        match ways.iter().position(|&t| t == line) {
            Some(i) => {
                ways[i..].rotate_left(1);
                ways[self.ways - 1] = INVALID;
                true
            }
            None => false,
        }
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
    fn geometry_is_validated() {
        let bad = CacheConfig {
            size_bytes: 1000,
            ways: 3,
            line_bytes: 64,
        };
        assert!(bad.validate("l1d").is_err());
    }
}
