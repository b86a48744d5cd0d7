//! The shared last-level cache (the nanoPU's L2): tags, dirty bits and
//! replacement state of a set-associative, write-back, write-allocate
//! cache with banks. Data always lives in DRAM storage; the model decides
//! hit or miss, which line is evicted and whether that costs a write-back.
//!
//! Not inclusive of the L1s (NINE): an LLC eviction leaves the L1 copies
//! alone. Rocket-chip's SiFive inclusive cache back-invalidates instead, but
//! its L1s hold 4 x 16 KB against 512 KB here, so inclusion victims are
//! rare, and back-invalidating other harts' L1s from inside one hart's
//! refill is not possible at the exact cycle in this simulator (harts run in
//! quanta); `docs/memory.md` discusses it.

use super::buckets::TimeBuckets;
use nanopu_core::timing::CacheConfig;
use serde::{Deserialize, Serialize};

/// Banks of the L2. Assumption: rocket-chip's `BankedL2Params` default of
/// one bank per memory channel, one channel in the nanoPU prototype.
pub const DEFAULT_LLC_BANKS: u32 = 1;
/// Cycles a bank is busy per access. Source: SiFive's inclusive cache moves
/// a 64-byte block in `blockBeats = blockBytes / beatBytes = 64 / 16 = 4`
/// beats of the 16-byte system bus (`inclusivecache/src/Parameters.scala`).
pub const DEFAULT_LLC_BANK_BUSY_CYCLES: u32 = 4;
/// Time bucket of the banks' occupancy accounting (see `buckets.rs`): a
/// simulation parameter. Assumption: a quarter of the default quantum
/// (128 cycles), fine enough that a bank's wait reflects recent load.
pub const DEFAULT_LLC_BUCKET_CYCLES: u32 = 32;
/// Seed of the random replacement policy.
pub const DEFAULT_LLC_SEED: u64 = 0x5eed_11c0;

/// Which line of a set an allocation evicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Replacement {
    /// Least recently used (the default; SiFive's cache uses pseudo-LRU).
    Lru,
    /// A way drawn by a fixed-seed generator (`seed`): deterministic.
    Random,
}

/// Where the traditional NIC's DMA writes are placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DmaAllocation {
    /// Into any way of the LLC, like a core's write (the nanoPU prototype:
    /// IceNIC's DMA masters the front bus, whose requests the L2 serves
    /// like any other client's; icenet `NIC.scala`, `NICAttachParams`
    /// `masterWhere = FBUS`).
    All,
    /// Into at most this many ways of each set (Intel DDIO: 2 of 11 ways by
    /// default); a hit in another way is updated in place.
    Ways(u32),
    /// Not into the LLC: the write goes to DRAM and invalidates an LLC copy.
    Bypass,
}

/// Parameters of the LLC beyond its geometry (`[node] l2`) and hit latency
/// (`[node] l2_hit_cycles`), which keep their old keys.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlcConfig {
    /// Banks, interleaved by line address ([`DEFAULT_LLC_BANKS`]).
    pub banks: u32,
    /// Cycles a bank is occupied per access ([`DEFAULT_LLC_BANK_BUSY_CYCLES`]).
    pub bank_busy_cycles: u32,
    /// Time bucket of bank occupancy accounting ([`DEFAULT_LLC_BUCKET_CYCLES`]).
    pub bucket_cycles: u32,
    pub replacement: Replacement,
    /// Seed of [`Replacement::Random`] ([`DEFAULT_LLC_SEED`]).
    pub seed: u64,
    /// Placement of NIC DMA writes ([`DmaAllocation::All`], the prototype's).
    pub dma_allocation: DmaAllocation,
}

impl Default for LlcConfig {
    fn default() -> Self {
        LlcConfig {
            banks: DEFAULT_LLC_BANKS,
            bank_busy_cycles: DEFAULT_LLC_BANK_BUSY_CYCLES,
            bucket_cycles: DEFAULT_LLC_BUCKET_CYCLES,
            replacement: Replacement::Lru,
            seed: DEFAULT_LLC_SEED,
            dma_allocation: DmaAllocation::All,
        }
    }
}

/// An LLC setting no model can work with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LlcConfigError {
    #[error("llc.banks = {0}: must be a power of two between 1 and 256")]
    Banks(u32),
    #[error("llc.bank_busy_cycles = {0}: must be between 1 and llc.bucket_cycles")]
    BankBusy(u32),
    #[error("llc.bucket_cycles = {0}: must be between 1 and 1000000")]
    Bucket(u32),
    #[error("llc.dma_allocation = {{ ways = {ways} }}: must be between 1 and the l2's {l2_ways} ways (or \"bypass\")")]
    DmaWays { ways: u32, l2_ways: u32 },
}

impl LlcConfig {
    pub fn validate(&self, geometry: &CacheConfig) -> Result<(), LlcConfigError> {
        if !self.banks.is_power_of_two() || self.banks > 256 {
            return Err(LlcConfigError::Banks(self.banks));
        }
        if !(1..=1_000_000).contains(&self.bucket_cycles) {
            return Err(LlcConfigError::Bucket(self.bucket_cycles));
        }
        if self.bank_busy_cycles == 0 || self.bank_busy_cycles > self.bucket_cycles {
            return Err(LlcConfigError::BankBusy(self.bank_busy_cycles));
        }
        if let DmaAllocation::Ways(ways) = self.dma_allocation {
            if ways == 0 || ways > geometry.ways {
                return Err(LlcConfigError::DmaWays {
                    ways,
                    l2_ways: geometry.ways,
                });
            }
        }
        Ok(())
    }
}

/// Which ways an allocation may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alloc {
    /// Any way.
    All,
    /// Ways `0..n` only.
    Ways(u32),
    /// None: a miss leaves the cache unchanged.
    No,
}

/// What an access did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub hit: bool,
    /// A dirty line evicted to make room: its address, to write to DRAM.
    pub writeback: Option<u64>,
}

/// Counters of the LLC.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LlcStats {
    pub hits: u64,
    pub misses: u64,
    /// Dirty lines evicted (each written back to DRAM).
    pub dirty_evictions: u64,
    /// Cycles requests waited for a busy bank, summed.
    pub bank_wait_cycles: u64,
}

/// The LLC's state.
pub struct Llc {
    ways: usize,
    set_mask: u64,
    line_shift: u32,
    /// Per line: line address + 1 (0: invalid).
    tags: Box<[u64]>,
    /// Per line: last use (LRU).
    stamps: Box<[u64]>,
    dirty: Box<[bool]>,
    clock: u64,
    replacement: Replacement,
    rng: u64,
    banks: Vec<TimeBuckets>,
    bank_busy: u64,
    pub stats: LlcStats,
}

impl Llc {
    pub fn new(geometry: &CacheConfig, cfg: &LlcConfig) -> Llc {
        let lines = (geometry.size_bytes / geometry.line_bytes) as usize;
        let ways = geometry.ways as usize;
        let sets = lines / ways;
        Llc {
            ways,
            set_mask: sets as u64 - 1,
            line_shift: geometry.line_bytes.trailing_zeros(),
            tags: vec![0; lines].into_boxed_slice(),
            stamps: vec![0; lines].into_boxed_slice(),
            dirty: vec![false; lines].into_boxed_slice(),
            clock: 0,
            replacement: cfg.replacement,
            rng: cfg.seed | 1,
            banks: (0..cfg.banks)
                .map(|_| TimeBuckets::new(cfg.bucket_cycles as u64, cfg.bucket_cycles as u64))
                .collect(),
            bank_busy: cfg.bank_busy_cycles as u64,
            stats: LlcStats::default(),
        }
    }

    pub fn line_bytes(&self) -> u64 {
        1 << self.line_shift
    }

    /// Cycles a request for the line of `addr` at `cycle` waits for its bank.
    #[inline]
    pub fn bank_wait(&mut self, addr: u64, cycle: u64) -> u64 {
        let line = addr >> self.line_shift;
        let bank = (line as usize) & (self.banks.len() - 1);
        let (wait, _) = self.banks[bank].book(cycle, self.bank_busy);
        self.stats.bank_wait_cycles += wait;
        wait
    }

    /// The next draw of the replacement generator `rng`.
    fn next_random(rng: &mut u64) -> u64 {
        // xorshift64: deterministic for a seed.
        let mut x = *rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *rng = x;
        x
    }

    /// Looks up the line of `addr`; on a hit marks it used (and dirty if
    /// `write`); on a miss allocates it per `alloc` (dirty if `write`),
    /// evicting a victim.
    #[inline]
    pub fn access(&mut self, addr: u64, write: bool, alloc: Alloc) -> Outcome {
        let line = addr >> self.line_shift;
        let set = (line & self.set_mask) as usize;
        let base = set * self.ways;
        let tag = line + 1;
        self.clock += 1;
        // The set's ways as slices: one bounds check per access, not per way.
        let ways = base..base + self.ways;
        let tags = &mut self.tags[ways.clone()];
        let stamps = &mut self.stamps[ways.clone()];
        let dirty = &mut self.dirty[ways];
        if let Some(i) = tags.iter().position(|&t| t == tag) {
            stamps[i] = self.clock;
            dirty[i] |= write;
            self.stats.hits += 1;
            return Outcome {
                hit: true,
                writeback: None,
            };
        }
        self.stats.misses += 1;
        let n = match alloc {
            Alloc::No => {
                return Outcome {
                    hit: false,
                    writeback: None,
                }
            }
            Alloc::All => tags.len(),
            Alloc::Ways(n) => (n as usize).min(tags.len()),
        };
        let victim = match tags[..n].iter().position(|&t| t == 0) {
            Some(i) => i,
            None => match self.replacement {
                Replacement::Lru => {
                    // The least recently used (the first of equals).
                    let (mut oldest, mut min) = (0, u64::MAX);
                    for (i, &s) in stamps[..n].iter().enumerate() {
                        if s < min {
                            (oldest, min) = (i, s);
                        }
                    }
                    oldest
                }
                Replacement::Random => (Self::next_random(&mut self.rng) % n as u64) as usize,
            },
        };
        let writeback = if tags[victim] != 0 && dirty[victim] {
            self.stats.dirty_evictions += 1;
            Some((tags[victim] - 1) << self.line_shift)
        } else {
            None
        };
        tags[victim] = tag;
        stamps[victim] = self.clock;
        dirty[victim] = write;
        Outcome {
            hit: false,
            writeback,
        }
    }

    /// Drops the line of `addr` if present (its dirty data is overwritten
    /// by the caller's write to DRAM). Returns whether it was present.
    pub fn invalidate(&mut self, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        let base = (line & self.set_mask) as usize * self.ways;
        for i in base..base + self.ways {
            if self.tags[i] == line + 1 {
                self.tags[i] = 0;
                self.dirty[i] = false;
                return true;
            }
        }
        false
    }

    /// Whether the line of `addr` is present (no state change).
    pub fn contains(&self, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        let base = (line & self.set_mask) as usize * self.ways;
        self.tags[base..base + self.ways].contains(&(line + 1))
    }

    /// Whether the line of `addr` is present and dirty.
    pub fn is_dirty(&self, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        let base = (line & self.set_mask) as usize * self.ways;
        (base..base + self.ways).any(|i| self.tags[i] == line + 1 && self.dirty[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llc(ways: u32, replacement: Replacement) -> Llc {
        // One set of `ways` 64-byte lines.
        let g = CacheConfig {
            size_bytes: 64 * ways,
            ways,
            line_bytes: 64,
        };
        let cfg = LlcConfig {
            replacement,
            ..LlcConfig::default()
        };
        Llc::new(&g, &cfg)
    }

    #[test]
    fn lru_evicts_the_least_recently_used_line() {
        let mut c = llc(4, Replacement::Lru);
        for l in 0..4 {
            assert!(!c.access(l * 64, false, Alloc::All).hit);
        }
        assert!(c.access(0, false, Alloc::All).hit); // 0 is now most recent
        c.access(4 * 64, false, Alloc::All); // evicts line 1
        assert!(c.contains(0) && !c.contains(64) && c.contains(128));
        assert_eq!(c.stats.hits, 1);
        assert_eq!(c.stats.misses, 5);
    }

    #[test]
    fn random_replacement_is_deterministic_for_a_seed_and_differs_from_lru() {
        let run = || {
            let mut c = llc(4, Replacement::Random);
            (0..64u64)
                .map(|i| c.access((i * 7 % 9) * 64, false, Alloc::All).hit)
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
        let mut lru = llc(4, Replacement::Lru);
        let lru_hits: Vec<_> = (0..64u64)
            .map(|i| lru.access((i * 7 % 9) * 64, false, Alloc::All).hit)
            .collect();
        assert_ne!(run(), lru_hits);
    }

    #[test]
    fn dirty_evictions_are_written_back_clean_ones_are_not() {
        let mut c = llc(2, Replacement::Lru);
        c.access(0, true, Alloc::All); // dirty
        c.access(64, false, Alloc::All); // clean
        let o = c.access(128, false, Alloc::All); // evicts line 0
        assert_eq!(o.writeback, Some(0));
        let o = c.access(192, false, Alloc::All); // evicts line 1, clean
        assert_eq!(o.writeback, None);
        assert_eq!(c.stats.dirty_evictions, 1);
        // A hit by a write makes the line dirty.
        c.access(128, true, Alloc::All);
        assert!(c.is_dirty(128));
    }

    #[test]
    fn restricted_allocation_stays_in_its_ways_and_no_allocation_changes_nothing() {
        let mut c = llc(4, Replacement::Lru);
        for l in 0..4 {
            c.access(l * 64, false, Alloc::All);
        }
        // DDIO-like: two ways only; lines 0 and 1 live in ways 0 and 1.
        for l in 10..20 {
            c.access(l * 64, true, Alloc::Ways(2));
        }
        assert!(c.contains(128) && c.contains(192), "ways 2 and 3 untouched");
        assert!(!c.access(100 * 64, false, Alloc::No).hit);
        assert!(!c.contains(100 * 64));
    }

    #[test]
    fn concurrent_requests_to_one_bank_queue_and_other_banks_do_not() {
        let g = CacheConfig {
            size_bytes: 64 * 1024,
            ways: 8,
            line_bytes: 64,
        };
        let cfg = LlcConfig {
            banks: 2,
            bank_busy_cycles: 8,
            bucket_cycles: 32,
            ..LlcConfig::default()
        };
        let mut c = Llc::new(&g, &cfg);
        // Four accesses to bank 0 fill its bucket (4 x 8 = 32 busy cycles).
        let waits: Vec<u64> = (0..4).map(|i| c.bank_wait(i * 128, 0)).collect();
        assert_eq!(waits[0], 0);
        assert!(waits[3] > waits[1], "{waits:?}");
        // The fifth spills into the next bucket.
        assert!(c.bank_wait(0, 0) >= 32);
        // Bank 1 (odd lines) is idle.
        assert_eq!(c.bank_wait(64, 0), 0);
    }
}
