//! FASED's last-level-cache timing model: the cache FireSim's memory model
//! puts in front of its DRAM model (`DDR3FRFCFSLLC4MB`), below the target's
//! own L2. Tags, valid and dirty bits only (data lives in DRAM storage).
//!
//! As FASED implements it (l-nic/firesim `lnic-dev`,
//! `sim/midas/src/main/scala/midas/models/dram/LastLevelCache.scala`):
//! - geometry set at run time within the generated maximum: sets, ways and
//!   block size, defaults the maxima (`LLCProgrammableSettings`, lines
//!   83-88: `RuntimeSetting(llcKey.*.maxBits)`); `WithLLCModel(4096, 8)`
//!   (`FASEDTargetConfigs.scala` line 93) and the default block range of
//!   8-128 bytes (`LLCParams`, line 123) give 4096 sets of 8 ways of
//!   128-byte blocks: 4 MiB;
//! - random replacement (a 16-bit LFSR, line 227), an empty way first
//!   (lines 220-225);
//! - reads: a hit answers after the metadata access (the request queue and
//!   one metadata cycle, lines 186, 297, 347-348); a miss reads the whole
//!   block from DRAM (lines 287-295) and answers when it returns;
//! - writes allocate: a write that covers the whole block fills it, one
//!   that covers less and misses reads the block from DRAM first (lines
//!   268-269: `writes.bits.len < axi4_block_len`); the block turns dirty;
//! - evicting a dirty block writes it back to DRAM (lines 271, 300-305).
//!
//! Not modelled: the LLC's single state machine serving one request at a
//! time, its 8 MSHRs and the stall of a request whose set has one in flight.

use serde::{Deserialize, Serialize};

/// FASED's maximum and default geometry, as the prototype's runs had it.
pub const FASED_LLC_SETS: u32 = 4096;
pub const FASED_LLC_WAYS: u32 = 8;
pub const FASED_LLC_BLOCK_BYTES: u32 = 128;
/// Cycles from a request to a hit's answer: the request queue (a chisel
/// `Queue`, one cycle) and the metadata read (`llc_r_mdaccess`, one cycle).
pub const FASED_LLC_HIT_CYCLES: u32 = 2;

/// `[node.fased_llc]`: absent (`enabled = false`) unless asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FasedLlcConfig {
    pub enabled: bool,
    pub sets: u32,
    pub ways: u32,
    pub block_bytes: u32,
    /// Core cycles to a hit's answer (FASED runs at the target's clock).
    pub hit_cycles: u32,
    /// Seed of the replacement LFSR.
    pub seed: u16,
}

impl Default for FasedLlcConfig {
    fn default() -> Self {
        FasedLlcConfig {
            enabled: false,
            sets: FASED_LLC_SETS,
            ways: FASED_LLC_WAYS,
            block_bytes: FASED_LLC_BLOCK_BYTES,
            hit_cycles: FASED_LLC_HIT_CYCLES,
            seed: 1,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("fased_llc: sets ({sets}), ways ({ways}) and block_bytes ({block}) must be powers of two, sets at most 65536, ways at most 16, block_bytes 8 to 4096 and at least the l2 line ({line}); hit_cycles ({hit}) at most 10000; seed non-zero")]
pub struct FasedLlcConfigError {
    sets: u32,
    ways: u32,
    block: u32,
    line: u32,
    hit: u32,
}

impl FasedLlcConfig {
    pub fn validate(&self, line_bytes: u32) -> Result<(), FasedLlcConfigError> {
        let ok = self.sets.is_power_of_two()
            && self.sets <= 1 << 16
            && self.ways.is_power_of_two()
            && self.ways <= 16
            && self.block_bytes.is_power_of_two()
            && (8..=4096).contains(&self.block_bytes)
            && self.block_bytes >= line_bytes
            && self.hit_cycles <= 10_000
            && self.seed != 0;
        if ok {
            Ok(())
        } else {
            Err(FasedLlcConfigError {
                sets: self.sets,
                ways: self.ways,
                block: self.block_bytes,
                line: line_bytes,
                hit: self.hit_cycles,
            })
        }
    }
}

/// Counters of the FASED LLC model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FasedLlcStats {
    pub read_hits: u64,
    pub read_misses: u64,
    pub write_hits: u64,
    pub write_misses: u64,
    /// Blocks read from DRAM for a partial write that missed.
    pub write_refills: u64,
    pub writebacks: u64,
}

/// What an access needs from DRAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub hit: bool,
    /// The block to read from DRAM first (a read miss, a partial write miss).
    pub refill: Option<u64>,
    /// A dirty block evicted: write it back.
    pub writeback: Option<u64>,
}

const VALID: u64 = 1 << 63;
const DIRTY: u64 = 1 << 62;

/// The model's state.
#[derive(Clone, Debug)]
pub struct FasedLlc {
    /// Per way of every set: tag | VALID | DIRTY (0: empty).
    lines: Vec<u64>,
    ways: usize,
    set_mask: u64,
    block_shift: u32,
    set_shift: u32,
    lfsr: u16,
    pub hit_cycles: u64,
    pub block_bytes: u64,
    pub stats: FasedLlcStats,
}

impl FasedLlc {
    pub fn new(cfg: &FasedLlcConfig) -> FasedLlc {
        FasedLlc {
            lines: vec![0; (cfg.sets * cfg.ways) as usize],
            ways: cfg.ways as usize,
            set_mask: cfg.sets as u64 - 1,
            block_shift: cfg.block_bytes.trailing_zeros(),
            set_shift: cfg.block_bytes.trailing_zeros() + cfg.sets.trailing_zeros(),
            lfsr: cfg.seed,
            hit_cycles: cfg.hit_cycles as u64,
            block_bytes: cfg.block_bytes as u64,
            stats: FasedLlcStats::default(),
        }
    }

    /// The next random way (chisel's `LFSR16`: taps 16, 14, 13, 11).
    fn random_way(&mut self) -> usize {
        let x = self.lfsr;
        let bit = (x ^ (x >> 2) ^ (x >> 3) ^ (x >> 5)) & 1;
        self.lfsr = (x >> 1) | (bit << 15);
        self.lfsr as usize & (self.ways - 1)
    }

    /// An access of `bytes` at `addr` (a read, or a write of the L2's line).
    pub fn access(&mut self, addr: u64, bytes: u64, write: bool) -> Access {
        let set = ((addr >> self.block_shift) & self.set_mask) as usize;
        let tag = addr >> self.set_shift;
        let block = addr & !(self.block_bytes - 1);
        let ways = &mut self.lines[set * self.ways..(set + 1) * self.ways];
        if let Some(w) = ways
            .iter()
            .position(|&l| l & VALID != 0 && l & !(VALID | DIRTY) == tag)
        {
            if write {
                ways[w] |= DIRTY;
                self.stats.write_hits += 1;
            } else {
                self.stats.read_hits += 1;
            }
            return Access {
                hit: true,
                refill: None,
                writeback: None,
            };
        }
        let empty = ways.iter().position(|&l| l & VALID == 0);
        let way = empty.unwrap_or_else(|| self.random_way());
        let ways = &mut self.lines[set * self.ways..(set + 1) * self.ways];
        let old = ways[way];
        let writeback = (old & VALID != 0 && old & DIRTY != 0).then(|| {
            ((old & !(VALID | DIRTY)) << self.set_shift) | ((set as u64) << self.block_shift)
        });
        ways[way] = tag | VALID | if write { DIRTY } else { 0 };
        let refill = (!write || bytes < self.block_bytes).then_some(block);
        if write {
            self.stats.write_misses += 1;
            self.stats.write_refills += refill.is_some() as u64;
        } else {
            self.stats.read_misses += 1;
        }
        self.stats.writebacks += writeback.is_some() as u64;
        Access {
            hit: false,
            refill,
            writeback,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> FasedLlc {
        FasedLlc::new(&FasedLlcConfig {
            enabled: true,
            sets: 4,
            ways: 2,
            ..FasedLlcConfig::default()
        })
    }

    #[test]
    fn the_default_is_fased_4_mib() {
        let c = FasedLlcConfig::default();
        assert_eq!(
            c.sets as u64 * c.ways as u64 * c.block_bytes as u64,
            4 << 20
        );
        c.validate(64).unwrap();
    }

    #[test]
    fn reads_miss_then_hit_and_fill_the_whole_block() {
        let mut l = small();
        let a = l.access(0x8000_0000, 64, false);
        assert_eq!((a.hit, a.refill), (false, Some(0x8000_0000)));
        // The other half of the 128-byte block hits.
        assert!(l.access(0x8000_0040, 64, false).hit);
    }

    #[test]
    fn partial_writes_that_miss_refill_and_dirty_victims_write_back() {
        let mut l = small();
        let a = l.access(0x8000_0000, 64, true);
        assert_eq!(
            a.refill,
            Some(0x8000_0000),
            "a 64-byte write into a 128-byte block"
        );
        let full = l.access(0x9000_0000, 128, true);
        assert_eq!(
            full.refill, None,
            "a whole-block write fills without reading"
        );
        // Two ways per set: a third block in set 0 evicts a dirty one.
        let mut wb = None;
        for i in 1..=4u64 {
            let a = l.access(0x8000_0000 + i * 4 * 128 * 16, 64, false);
            wb = wb.or(a.writeback);
        }
        assert!(
            matches!(wb, Some(0x8000_0000) | Some(0x9000_0000)),
            "{wb:x?}"
        );
        assert!(l.stats.writebacks >= 1);
    }

    #[test]
    fn replacement_is_deterministic() {
        let run = || {
            let mut l = small();
            (0..1000u64)
                .map(|i| {
                    l.access(0x8000_0000 + (i * 7919 % 64) * 128, 64, i % 3 == 0)
                        .hit
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }
}
