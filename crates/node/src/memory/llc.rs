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
    #[error("l2.ways = {0}: the LLC model has at most 256 ways")]
    Ways(u32),
}

impl LlcConfig {
    pub fn validate(&self, geometry: &CacheConfig) -> Result<(), LlcConfigError> {
        if geometry.ways > MAX_LLC_WAYS {
            return Err(LlcConfigError::Ways(geometry.ways));
        }
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
///
/// Compact, because a large LLC's bookkeeping is larger than the host's
/// caches (16 MB of 64-byte lines: 262,144 lines), so each lookup is a host
/// cache miss per array touched: per line one word holding the line
/// address and the dirty bit, and one byte of recency rank, rather than a
/// tag, a 64-bit time stamp and a dirty flag in three arrays.
#[derive(Clone)]
pub struct Llc {
    ways: usize,
    set_mask: u64,
    line_shift: u32,
    /// Per line: `(line address + 1) << 1 | dirty` (0: invalid).
    lines: Box<[u64]>,
    /// Per line: its recency rank in its set, 0 the most recently used. The
    /// ranks of a set are a permutation of `0..ways`: exact LRU, the order
    /// time stamps of the last use would give (every use touches one line,
    /// so no two lines in use tie).
    ranks: Box<[u8]>,
    replacement: Replacement,
    rng: u64,
    banks: Vec<TimeBuckets>,
    bank_busy: u64,
    pub stats: LlcStats,
}

/// Most ways an LLC can have (ranks are bytes).
pub const MAX_LLC_WAYS: u32 = 256;

/// The dirty bit of a word of [`Llc::lines`].
const DIRTY: u64 = 1;

/// `n` zero words, each host page of them written once. A zeroed
/// allocation this large comes from the host's kernel unbacked, and the
/// lookups read a set before they write it: the first read of a page would
/// map the kernel's shared zero page and the first write then replace it,
/// which flushes that page from the TLB of every host core the process runs
/// on (an interrupt per page: 3 % of `nb-mica --scale quick`'s host time,
/// where each point builds a 16 MB LLC). Written first, a page is backed at
/// once.
fn written_zeros(n: usize) -> Box<[u64]> {
    let mut words = vec![0u64; n].into_boxed_slice();
    for page in words.chunks_mut(4096 / 8) {
        // Volatile: a plain store of the zero already there may be dropped.
        // SAFETY: a valid, aligned, exclusively borrowed element.
        unsafe { std::ptr::write_volatile(&mut page[0], 0) };
    }
    words
}

/// Marks line `i` of a set (`ranks` its ranks) the most recently used.
#[inline(always)]
fn touch(ranks: &mut [u8], i: usize) {
    let r = ranks[i];
    for x in ranks.iter_mut() {
        // Branch-free, so the loop vectorises.
        *x += (*x < r) as u8;
    }
    ranks[i] = 0;
}

/// The first way of a set whose word satisfies `is`, without a branch per
/// way (once inlined where the set's length is a constant, a few compares
/// and conditional moves).
#[inline(always)]
fn first_way(words: &[u64], is: impl Fn(u64) -> bool) -> Option<usize> {
    let mut first = usize::MAX;
    for (i, &w) in words.iter().enumerate().rev() {
        first = if is(w) { i } else { first };
    }
    (first != usize::MAX).then_some(first)
}

/// The way of the highest rank (the first of them, were ranks to tie; in a
/// set they never do), without a branch per way.
#[inline(always)]
fn oldest_way(ranks: &[u8]) -> usize {
    let (mut oldest, mut rank) = (0, ranks[0]);
    for (i, &r) in ranks.iter().enumerate().skip(1) {
        let older = r > rank;
        oldest = if older { i } else { oldest };
        rank = if older { r } else { rank };
    }
    oldest
}

/// The way of rank `ways - 1` in a set of 4, 8 or 16 ways: the least
/// recently used, since a set's ranks are a permutation of `0..ways` (what
/// [`oldest_way`] finds by comparing them all). The ranks are read as one
/// integer and the byte equal to that rank found by the carry-free zero-byte
/// test: a byte can look zero by mistake only above a zero one, so the
/// lowest that looks zero is the one.
#[inline(always)]
fn least_recent_way(ranks: &[u8]) -> usize {
    macro_rules! lowest_equal {
        ($t:ty, $n:expr) => {{
            let bytes: [u8; $n] = ranks.try_into().expect("the set's ways");
            let x = <$t>::from_le_bytes(bytes) ^ (<$t>::MAX / 255 * ($n - 1));
            let ones = <$t>::MAX / 255;
            let zero = x.wrapping_sub(ones) & !x & (ones << 7);
            (zero.trailing_zeros() / 8) as usize
        }};
    }
    match ranks.len() {
        4 => lowest_equal!(u32, 4),
        8 => lowest_equal!(u64, 8),
        16 => lowest_equal!(u128, 16),
        _ => oldest_way(ranks),
    }
}

impl Llc {
    /// `geometry.ways` must be at most [`MAX_LLC_WAYS`] (checked by
    /// [`LlcConfig::validate`]).
    pub fn new(geometry: &CacheConfig, cfg: &LlcConfig) -> Llc {
        let lines = (geometry.size_bytes / geometry.line_bytes) as usize;
        let ways = geometry.ways as usize;
        assert!(ways as u32 <= MAX_LLC_WAYS, "validated: at most 256 ways");
        let sets = lines / ways;
        Llc {
            ways,
            set_mask: sets as u64 - 1,
            line_shift: geometry.line_bytes.trailing_zeros(),
            lines: written_zeros(lines),
            // Way i starts at rank i: never used, so any order will do
            // (invalid lines are chosen before any rank is looked at).
            ranks: (0..lines).map(|i| (i % ways) as u8).collect(),
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
        // The usual geometries get a copy of the set walk with the way
        // count known, which the compiler unrolls into branch-free compares.
        // A search stopping at the match mispredicted its exit whenever
        // matches landed in varying ways: `pointer_chase` (random misses)
        // ran 17 % faster in host time without it.
        match self.ways {
            4 => self.access_in::<4>(addr, write, alloc),
            8 => self.access_in::<8>(addr, write, alloc),
            16 => self.access_in::<16>(addr, write, alloc),
            _ => self.access_in::<0>(addr, write, alloc),
        }
    }

    /// [`access`](Self::access) for sets of `WAYS` ways (0: any number).
    #[inline(always)]
    fn access_in<const WAYS: usize>(&mut self, addr: u64, write: bool, alloc: Alloc) -> Outcome {
        let line = addr >> self.line_shift;
        let set = (line & self.set_mask) as usize;
        let ways = if WAYS > 0 { WAYS } else { self.ways };
        let base = set * ways;
        let word = (line + 1) << 1;
        // The set's ways as slices: one bounds check per access, not per way.
        let words = &mut self.lines[base..base + ways];
        let ranks = &mut self.ranks[base..base + ways];
        if let Some(i) = first_way(words, |w| w & !DIRTY == word) {
            touch(ranks, i);
            words[i] |= write as u64;
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
            Alloc::All => ways,
            Alloc::Ways(n) => (n as usize).min(ways),
        };
        let victim = match first_way(&words[..n], |w| w == 0) {
            Some(i) => i,
            None => match self.replacement {
                // The least recently used: the highest rank.
                Replacement::Lru if n == ways && WAYS > 0 => {
                    let way = least_recent_way(ranks);
                    debug_assert_eq!(way, oldest_way(ranks));
                    way
                }
                Replacement::Lru => oldest_way(&ranks[..n]),
                Replacement::Random => (Self::next_random(&mut self.rng) % n as u64) as usize,
            },
        };
        let old = words[victim];
        let writeback = if old & DIRTY != 0 {
            self.stats.dirty_evictions += 1;
            Some(((old >> 1) - 1) << self.line_shift)
        } else {
            None
        };
        words[victim] = word | write as u64;
        touch(ranks, victim);
        Outcome {
            hit: false,
            writeback,
        }
    }

    /// The words of the set holding `addr`'s line, and that line's word
    /// (without the dirty bit).
    fn set_of(&self, addr: u64) -> (std::ops::Range<usize>, u64) {
        let line = addr >> self.line_shift;
        let base = (line & self.set_mask) as usize * self.ways;
        (base..base + self.ways, (line + 1) << 1)
    }

    /// Drops the line of `addr` if present (its dirty data is overwritten
    /// by the caller's write to DRAM). Returns whether it was present.
    pub fn invalidate(&mut self, addr: u64) -> bool {
        let (ways, word) = self.set_of(addr);
        match self.lines[ways].iter_mut().find(|w| **w & !DIRTY == word) {
            Some(w) => {
                *w = 0;
                true
            }
            None => false,
        }
    }

    /// Whether the line of `addr` is present (no state change).
    pub fn contains(&self, addr: u64) -> bool {
        let (ways, word) = self.set_of(addr);
        self.lines[ways].iter().any(|w| w & !DIRTY == word)
    }

    /// Whether the line of `addr` is present and dirty.
    pub fn is_dirty(&self, addr: u64) -> bool {
        let (ways, word) = self.set_of(addr);
        self.lines[ways].contains(&(word | DIRTY))
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

    /// The time-stamp LRU the rank model replaced: the reference.
    struct StampLlc {
        ways: usize,
        tags: Vec<u64>,
        stamps: Vec<u64>,
        dirty: Vec<bool>,
        clock: u64,
    }

    impl StampLlc {
        fn access(&mut self, line: u64, sets: u64, write: bool, alloc: Alloc) -> Outcome {
            let base = (line % sets) as usize * self.ways;
            let r = base..base + self.ways;
            self.clock += 1;
            if let Some(i) = self.tags[r.clone()].iter().position(|&t| t == line + 1) {
                self.stamps[base + i] = self.clock;
                self.dirty[base + i] |= write;
                return Outcome {
                    hit: true,
                    writeback: None,
                };
            }
            let n = match alloc {
                Alloc::No => {
                    return Outcome {
                        hit: false,
                        writeback: None,
                    }
                }
                Alloc::All => self.ways,
                Alloc::Ways(n) => n as usize,
            };
            let v = base
                + match self.tags[base..base + n].iter().position(|&t| t == 0) {
                    Some(i) => i,
                    None => (0..n).min_by_key(|&i| self.stamps[base + i]).unwrap(),
                };
            let writeback = (self.tags[v] != 0 && self.dirty[v]).then(|| (self.tags[v] - 1) * 64);
            (self.tags[v], self.stamps[v], self.dirty[v]) = (line + 1, self.clock, write);
            Outcome {
                hit: false,
                writeback,
            }
        }

        fn invalidate(&mut self, line: u64, sets: u64) {
            let base = (line % sets) as usize * self.ways;
            for i in base..base + self.ways {
                if self.tags[i] == line + 1 {
                    (self.tags[i], self.dirty[i]) = (0, false);
                }
            }
        }
    }

    proptest::proptest! {
        /// The least recent way found from the whole set's ranks at once is
        /// the one of the highest rank.
        #[test]
        fn least_recent_way_is_the_highest_rank(
            ways in proptest::sample::select(vec![4usize, 8, 16]),
            order in proptest::collection::vec(proptest::num::u64::ANY, 16),
        ) {
            let mut ranks: Vec<u8> = (0..ways as u8).collect();
            // A permutation: ranks sorted by random keys.
            ranks.sort_by_key(|&r| order[r as usize]);
            proptest::prop_assert_eq!(least_recent_way(&ranks), oldest_way(&ranks));
        }

        /// Ranks choose the victims time stamps of the last use choose, for
        /// any mix of reads, writes, restricted and no allocation and
        /// invalidations.
        #[test]
        fn rank_lru_matches_time_stamp_lru(
            ops in proptest::collection::vec((0u64..40, 0u8..8), 1..400),
            ways in proptest::sample::select(vec![1u32, 2, 3, 4, 5, 6, 7, 8, 12, 16]),
        ) {
            let sets = 2u64;
            let g = CacheConfig { size_bytes: 64 * ways * sets as u32, ways, line_bytes: 64 };
            let mut c = Llc::new(&g, &LlcConfig::default());
            let n = ways as usize * sets as usize;
            let mut r = StampLlc { ways: ways as usize, tags: vec![0; n], stamps: vec![0; n], dirty: vec![false; n], clock: 0 };
            for (line, op) in ops {
                let addr = line * 64;
                if op == 7 {
                    let had = c.contains(addr);
                    proptest::prop_assert_eq!(c.invalidate(addr), had);
                    r.invalidate(line, sets);
                    continue;
                }
                let alloc = match op % 3 {
                    0 => Alloc::All,
                    1 => Alloc::Ways(ways.div_ceil(2)),
                    _ => Alloc::No,
                };
                let write = op >= 3;
                proptest::prop_assert_eq!(c.access(addr, write, alloc), r.access(line, sets, write, alloc));
                proptest::prop_assert_eq!(c.is_dirty(addr), {
                    let base = (line % sets) as usize * ways as usize;
                    (base..base + ways as usize).any(|i| r.tags[i] == line + 1 && r.dirty[i])
                });
            }
        }
    }

    #[test]
    fn more_than_256_ways_is_refused() {
        let g = CacheConfig {
            size_bytes: 64 * 512,
            ways: 512,
            line_bytes: 64,
        };
        let e = LlcConfig::default().validate(&g).unwrap_err();
        assert_eq!(
            e.to_string(),
            "l2.ways = 512: the LLC model has at most 256 ways"
        );
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
