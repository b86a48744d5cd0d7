//! The memory system below the L1s: the shared LLC (`llc.rs`) in front of
//! DRAM (`dram_timing.rs`), as the cores' refills and write-backs and the
//! traditional NIC's DMA use it. `docs/memory.md` describes the model.

use super::dram_banked::BankedStats;
pub use super::dram_timing::Source;
use super::dram_timing::{BandwidthSeries, DramTiming, SourceBytes};
use super::fased_llc::{FasedLlc, FasedLlcStats};
use super::llc::{Alloc, DmaAllocation, Llc, LlcStats};
use crate::config::NodeConfig;
use nanopu_core::RefillKind;
use serde::Serialize;

pub use crate::bus_device::MAX_DMA_OUTSTANDING;

/// The LLC and DRAM of a node.
#[derive(Clone)]
pub struct MemorySystem {
    pub llc: Llc,
    /// FASED's LLC model between the L2 and DRAM, when configured.
    pub fased_llc: Option<FasedLlc>,
    pub dram: DramTiming,
    hit_cycles: u64,
    dma_allocation: DmaAllocation,
    clock_mhz: u32,
    peak_bytes_per_s: u64,
}

/// Counters of the memory system, for `run --stats-json` and reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryStats {
    pub llc: LlcStats,
    pub dram_read_bytes: u64,
    pub dram_write_bytes: u64,
    /// Bytes per source: `core0`.., `nic`, `llc_writeback`.
    pub by_source: Vec<SourceBytes>,
    /// The configured peak (all channels), GB/s.
    pub configured_peak_gb_s: f64,
    /// The busiest window of the time series, GB/s.
    pub peak_gb_s: f64,
    /// All bytes over the time to the last transfer, GB/s.
    pub mean_gb_s: f64,
    /// Mean cycles a DRAM read waited beyond the unloaded latency.
    pub mean_read_queue_cycles: f64,
    /// The series' window in ns.
    pub series_window_ns: f64,
    pub series: BandwidthSeries,
    /// The banked DRAM model's counters (row hits, misses, conflicts,
    /// write drains, refresh delays), when it is the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub banked: Option<BankedStats>,
    /// FASED's LLC model's counters, when it is there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fased_llc: Option<FasedLlcStats>,
}

impl MemorySystem {
    /// Built from a validated configuration.
    pub fn new(cfg: &NodeConfig) -> MemorySystem {
        let (dram, fased_llc) = cfg.memory_below_l2();
        MemorySystem {
            llc: Llc::new(&cfg.l2, &cfg.llc),
            fased_llc: fased_llc.enabled.then(|| FasedLlc::new(&fased_llc)),
            dram: DramTiming::new(
                &dram,
                cfg.cores,
                cfg.dram_cycles() as u64,
                cfg.core.clock_mhz,
            ),
            hit_cycles: cfg.l2_hit_cycles as u64,
            dma_allocation: cfg.llc.dma_allocation,
            clock_mhz: cfg.core.clock_mhz,
            peak_bytes_per_s: dram.peak_bytes_per_s(cfg.core.clock_mhz),
        }
    }

    fn line(&self) -> u64 {
        self.llc.line_bytes()
    }

    /// Writes back a dirty victim at `cycle` (nobody waits for it).
    #[inline]
    fn write_back(&mut self, victim: Option<u64>, cycle: u64) {
        if let Some(addr) = victim {
            self.below_write(addr, cycle, Source::LlcWriteback);
        }
    }

    /// A line read below the L2 (FASED's LLC model, if any, then DRAM):
    /// the cycle it arrives.
    #[inline]
    fn below_read(&mut self, addr: u64, cycle: u64, source: Source) -> u64 {
        self.below(addr, cycle, source, false)
    }

    /// A line written below the L2: the cycle it is acknowledged.
    #[inline]
    fn below_write(&mut self, addr: u64, cycle: u64, source: Source) -> u64 {
        self.below(addr, cycle, source, true)
    }

    #[inline]
    fn below(&mut self, addr: u64, cycle: u64, source: Source, write: bool) -> u64 {
        if self.fased_llc.is_some() {
            return self.below_fased_llc(addr, cycle, source, write);
        }
        let line = self.line();
        if write {
            self.dram.write(addr, cycle, line, source)
        } else {
            self.dram.read(addr, cycle, line, source)
        }
    }

    /// Through FASED's LLC model (kept out of line: the common path
    /// without it stays small enough to inline into the harts' refill).
    #[inline(never)]
    fn below_fased_llc(&mut self, addr: u64, cycle: u64, source: Source, write: bool) -> u64 {
        let line = self.line();
        let Some(f) = &mut self.fased_llc else {
            return cycle;
        };
        let a = f.access(addr, line, write);
        let (hit_cycles, block) = (f.hit_cycles, f.block_bytes);
        if let Some(wb) = a.writeback {
            self.dram.write(wb, cycle, block, Source::LlcWriteback);
        }
        let t = cycle + hit_cycles;
        match a.refill {
            None => t,
            Some(b) => self.dram.read(b, t, block, source),
        }
    }

    /// A core's L1 refill of the line of `addr` at `cycle`: the cycle the
    /// line arrives. A store miss (write-allocate) marks the LLC line dirty
    /// at once: the L1 will write it, and until the L1 reports its dirty
    /// evictions (`writeback`) that is where the LLC learns of it; marking
    /// twice is harmless.
    #[inline]
    pub fn refill(&mut self, hart: usize, addr: u64, cycle: u64, kind: RefillKind) -> u64 {
        let t = cycle + self.llc.bank_wait(addr, cycle);
        let o = self.llc.access(addr, kind == RefillKind::Store, Alloc::All);
        self.write_back(o.writeback, t);
        if o.hit {
            t + self.hit_cycles
        } else {
            let line = self.line();
            self.below_read(addr & !(line - 1), t + self.hit_cycles, Source::Core(hart))
        }
    }

    /// A dirty L1 line written back at `cycle`: the whole line, so a miss
    /// allocates it without reading DRAM.
    #[inline]
    pub fn writeback(&mut self, addr: u64, cycle: u64) {
        let t = cycle + self.llc.bank_wait(addr, cycle);
        let o = self.llc.access(addr, true, Alloc::All);
        self.write_back(o.writeback, t);
    }

    /// The lines of `[addr, addr + len)`, each with whether the range covers it whole.
    fn lines(line: u64, addr: u64, len: u64) -> impl Iterator<Item = (u64, bool)> {
        let end = addr + len;
        let first = addr & !(line - 1);
        (0..(end - first).div_ceil(line)).map(move |i| {
            let a = first + i * line;
            (a, a >= addr && a + line <= end)
        })
    }

    /// The traditional NIC reads `[addr, addr + len)` from `cycle` with at
    /// most `outstanding` line requests in flight: the cycle the last line
    /// arrives. Hits are served by the LLC; misses read DRAM and do not
    /// allocate (DDIO's behaviour for device reads; IceNIC's reads are
    /// TileLink Gets the L2 serves either way).
    pub fn dma_read(&mut self, addr: u64, len: u64, cycle: u64, outstanding: usize) -> u64 {
        let mut window = [cycle; MAX_DMA_OUTSTANDING];
        let k = outstanding.clamp(1, MAX_DMA_OUTSTANDING);
        let mut done = cycle;
        for (i, (a, _)) in Self::lines(self.line(), addr, len).enumerate() {
            let issue = window[i % k];
            let t = issue + self.llc.bank_wait(a, issue);
            let o = self.llc.access(a, false, Alloc::No);
            let arrival = if o.hit {
                t + self.hit_cycles
            } else {
                self.below_read(a, t + self.hit_cycles, Source::Nic)
            };
            window[i % k] = arrival;
            done = done.max(arrival);
        }
        done
    }

    /// The traditional NIC writes `[addr, addr + len)` from `cycle`: the
    /// cycle the last line is written. Placement per
    /// [`DmaAllocation`]: allocated lines take a write-back of a dirty
    /// victim; a partly written line that misses is first read from DRAM;
    /// bypassing writes go to DRAM (invalidating an LLC copy).
    pub fn dma_write(&mut self, addr: u64, len: u64, cycle: u64, outstanding: usize) -> u64 {
        let mut window = [cycle; MAX_DMA_OUTSTANDING];
        let k = outstanding.clamp(1, MAX_DMA_OUTSTANDING);
        let mut done = cycle;
        let line = self.line();
        for (i, (a, whole)) in Self::lines(line, addr, len).enumerate() {
            let issue = window[i % k];
            let t = issue + self.llc.bank_wait(a, issue);
            let alloc = match self.dma_allocation {
                DmaAllocation::All => Alloc::All,
                DmaAllocation::Ways(n) => Alloc::Ways(n),
                DmaAllocation::Bypass => Alloc::No,
            };
            let finished = if alloc == Alloc::No {
                self.llc.invalidate(a);
                self.below_write(a, t, Source::Nic)
            } else {
                let o = self.llc.access(a, true, alloc);
                self.write_back(o.writeback, t);
                if o.hit || whole {
                    t + self.hit_cycles
                } else {
                    self.below_read(a, t + self.hit_cycles, Source::Nic)
                }
            };
            window[i % k] = finished;
            done = done.max(finished);
        }
        done
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> MemoryStats {
        let (read, write) = self.dram.total_bytes();
        let cycles_per_ns = self.clock_mhz as f64 / 1000.0;
        let window_ns = self.dram.series.window_cycles as f64 / cycles_per_ns;
        let busiest = self
            .dram
            .series
            .read_bytes
            .iter()
            .zip(&self.dram.series.write_bytes)
            .map(|(r, w)| r + w)
            .max()
            .unwrap_or(0);
        let span_ns = self.dram.last_cycle as f64 / cycles_per_ns;
        MemoryStats {
            llc: self.llc.stats.clone(),
            dram_read_bytes: read,
            dram_write_bytes: write,
            by_source: self.dram.by_source(),
            configured_peak_gb_s: self.peak_bytes_per_s as f64 / 1e9,
            peak_gb_s: busiest as f64 / window_ns,
            mean_gb_s: if span_ns > 0.0 {
                (read + write) as f64 / span_ns
            } else {
                0.0
            },
            mean_read_queue_cycles: if self.dram.reads > 0 {
                self.dram.read_wait_cycles as f64 / self.dram.reads as f64
            } else {
                0.0
            },
            series_window_ns: window_ns,
            series: self.dram.series.clone(),
            banked: self.dram.banked_stats().cloned(),
            fased_llc: self.fased_llc.as_ref().map(|f| f.stats.clone()),
        }
    }
}

/// A device's DMA goes through the LLC and DRAM as the IceNIC's does.
impl crate::bus_device::DmaTiming for MemorySystem {
    fn dma_read(&mut self, addr: u64, len: u64, cycle: u64, outstanding: usize) -> u64 {
        MemorySystem::dma_read(self, addr, len, cycle, outstanding)
    }

    fn dma_write(&mut self, addr: u64, len: u64, cycle: u64, outstanding: usize) -> u64 {
        MemorySystem::dma_write(self, addr, len, cycle, outstanding)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::llc::LlcConfig;
    use nanopu_core::timing::CacheConfig;

    fn system(llc: LlcConfig) -> MemorySystem {
        let cfg = NodeConfig {
            l2: CacheConfig {
                size_bytes: 64 * 1024,
                ways: 8,
                line_bytes: 64,
            },
            llc,
            ..NodeConfig::default()
        };
        cfg.validate().unwrap();
        MemorySystem::new(&cfg)
    }

    #[test]
    fn a_refill_costs_the_hit_latency_or_hit_plus_dram_at_no_load() {
        let mut m = system(LlcConfig::default());
        let dram = m.dram.latency_cycles();
        assert_eq!(
            m.refill(0, 0x8000_0000, 100, RefillKind::Load),
            100 + 20 + dram
        );
        assert_eq!(m.refill(0, 0x8000_0008, 10_000, RefillKind::Load), 10_020);
    }

    #[test]
    fn dirty_lines_cost_dram_writes_when_evicted() {
        let mut m = system(LlcConfig::default());
        // Stores over 4x the LLC: every line dirty, 3/4 of them evicted.
        let lines = 4 * 1024;
        for i in 0..lines {
            m.refill(1, 0x8000_0000 + i * 64, i * 1000, RefillKind::Store);
        }
        let s = m.stats();
        assert_eq!(s.llc.dirty_evictions, lines - 1024);
        let wb = s
            .by_source
            .iter()
            .find(|b| b.source == "llc_writeback")
            .unwrap();
        assert_eq!(wb.write_bytes, (lines - 1024) * 64);
        let core1 = s.by_source.iter().find(|b| b.source == "core1").unwrap();
        assert_eq!(core1.read_bytes, lines * 64);
        // Loads evict clean lines: no more write-backs... after the dirty
        // ones still held are gone.
        for i in 0..2 * lines {
            m.refill(
                0,
                0x9000_0000 + i * 64,
                (lines + i) * 1000,
                RefillKind::Load,
            );
        }
        assert_eq!(m.stats().llc.dirty_evictions, lines);
    }

    #[test]
    fn an_l1_writeback_allocates_without_reading_dram() {
        let mut m = system(LlcConfig::default());
        m.writeback(0x8000_0040, 0);
        assert!(m.llc.is_dirty(0x8000_0040));
        assert_eq!(m.stats().dram_read_bytes, 0);
    }

    #[test]
    fn dma_writes_follow_the_allocation_policy() {
        // All ways: a whole-line write allocates without DRAM traffic; a
        // partial line that misses is read first.
        let mut m = system(LlcConfig::default());
        let done = m.dma_write(0x8000_0000, 100, 0, 8);
        assert!(m.llc.contains(0x8000_0000) && m.llc.contains(0x8000_0040));
        let s = m.stats();
        assert_eq!(s.dram_read_bytes, 64, "the second line is partial");
        assert!(done >= 20 + m.dram.latency_cycles());
        // Bypass: to DRAM, and an LLC copy is dropped.
        let mut b = system(LlcConfig {
            dma_allocation: DmaAllocation::Bypass,
            ..LlcConfig::default()
        });
        b.refill(0, 0x8000_0000, 0, RefillKind::Load);
        b.dma_write(0x8000_0000, 128, 1000, 8);
        assert!(!b.llc.contains(0x8000_0000));
        let nic = b
            .stats()
            .by_source
            .into_iter()
            .find(|s| s.source == "nic")
            .unwrap();
        assert_eq!(nic.write_bytes, 128);
        // DDIO-like ways: DMA over many sets never evicts the other ways.
        let mut d = system(LlcConfig {
            dma_allocation: DmaAllocation::Ways(2),
            ..LlcConfig::default()
        });
        for i in 0..1024u64 {
            d.refill(0, 0x8000_0000 + i * 64, 0, RefillKind::Load); // fill the LLC
        }
        let misses = d.llc.stats.misses;
        d.dma_write(0x9000_0000, 256 * 1024, 0, 8);
        let kept = (0..1024u64)
            .filter(|i| d.llc.contains(0x8000_0000 + i * 64))
            .count();
        assert_eq!(kept, 6 * 128, "6 of 8 ways of each of 128 sets survive");
        assert!(d.llc.stats.misses > misses);
    }

    #[test]
    fn dma_reads_of_absent_lines_read_dram_and_do_not_allocate() {
        let mut m = system(LlcConfig::default());
        let done = m.dma_read(0x8000_0000, 1024, 0, 8);
        assert!(!m.llc.contains(0x8000_0000));
        assert_eq!(
            m.stats()
                .by_source
                .iter()
                .find(|s| s.source == "nic")
                .unwrap()
                .read_bytes,
            1024
        );
        // 16 lines with 8 in flight: at least two round trips.
        assert!(done >= 2 * (20 + m.dram.latency_cycles()), "{done}");
        // Lines in the LLC are served there.
        let mut h = system(LlcConfig::default());
        h.dma_write(0x8000_0000, 1024, 0, 8);
        let done = h.dma_read(0x8000_0000, 1024, 1000, 8);
        // 16 lines through one bank busy 4 cycles each: about 64 cycles
        // of bank time, then the hit latency; no DRAM.
        assert!(
            (1000 + 20 + 32..=1000 + 20 + 64 + 20).contains(&done),
            "{done}"
        );
        assert_eq!(h.stats().dram_read_bytes, 0);
    }
}

#[cfg(test)]
mod config_tests {
    use crate::config::NodeConfig;

    /// Parses `[node]`-level TOML and validates it: the error message.
    fn error(toml_text: &str) -> String {
        let cfg: NodeConfig = toml::from_str(toml_text).expect("parses");
        cfg.validate().unwrap_err().to_string()
    }

    #[test]
    fn bad_memory_settings_name_their_key() {
        assert!(error("[llc]\nbanks = 3").contains("llc.banks = 3"));
        assert!(error("[llc]\ndma_allocation = { ways = 9 }").contains("llc.dma_allocation"));
        assert!(error("[dram]\nchannels = 0").contains("dram.channels = 0"));
        assert!(error("[dram]\nchannel_mb_per_s = 1").contains("dram.channel_mb_per_s"));
        assert!(error("[dram]\ninterleave_bytes = 32").contains("dram.interleave_bytes"));
        assert!(error("[dram]\nseries_window_ns = 150").contains("dram.series_window_ns"));
        assert!(error("dram_latency_ns = 0").contains("dram_latency_ns"));
    }

    #[test]
    fn the_banked_model_is_chosen_by_configuration_and_checked() {
        let cfg: NodeConfig = toml::from_str(
            "[dram]\nmodel = \"banked\"\n[dram.banked]\nstandard = \"ddr3-fased\"\nranks = 2",
        )
        .unwrap();
        cfg.validate().unwrap();
        let mut m = crate::memory::MemorySystem::new(&cfg);
        // FASED's DDR3 at the core's clock: a closed-bank read is tRCD + CL
        // + burst + back end = 14 + 14 + 4 + 2 core cycles.
        assert_eq!(m.dram.latency_cycles(), 34);
        let t = m.refill(0, 0x8000_0000, 100, nanopu_core::RefillKind::Load);
        assert_eq!(t, 100 + 20 + 34);
        let s = m.stats();
        assert_eq!(s.banked.as_ref().unwrap().row_misses, 1);
        // 64-bit DDR3 at 3.2 GHz, two transfers a clock.
        assert_eq!(s.configured_peak_gb_s, 51.2);
        assert!(error("[dram]\nmodel = \"banked\"\nchannels = 3").contains("dram.channels = 3"));
        assert!(
            error("[dram]\nmodel = \"banked\"\n[dram.banked]\nranks = 3")
                .contains("dram.banked.ranks = 3")
        );
        assert!(
            error("[dram]\nmodel = \"banked\"\n[dram.banked]\nwrite_queue = 0")
                .contains("dram.banked.write_queue")
        );
        assert!(
            error("[dram]\nmodel = \"banked\"\n[dram.banked]\naddress_mapping = \"roro\"")
                .contains("address_mapping")
        );
        assert!(
            error("[dram]\nmodel = \"banked\"\n[dram.banked]\nclock_mhz = 5")
                .contains("dram.banked.clock_mhz")
        );
        let unknown = toml::from_str::<NodeConfig>("[dram]\nmodel = \"fast\"").unwrap_err();
        assert!(unknown.to_string().contains("fast"), "{unknown}");
    }

    #[test]
    fn the_firesim_lnic_preset_puts_fased_llc_and_ddr3_below_the_l2() {
        let cfg: NodeConfig = toml::from_str("[memory]\npreset = \"firesim-lnic\"").unwrap();
        cfg.validate().unwrap();
        let mut m = crate::memory::MemorySystem::new(&cfg);
        let load = nanopu_core::RefillKind::Load;
        // L2 miss, FASED LLC miss: L2 hit latency, the LLC's 2 cycles, then
        // DDR3 reads the 128-byte block (two bursts).
        let first = m.refill(0, 0x8000_0000, 100, load) - 100;
        assert!(first > 20 + 2 + 34, "{first}");
        // The other half of the block: an L2 miss that hits the FASED LLC.
        let second = m.refill(0, 0x8000_0040, 10_000, load) - 10_000;
        assert_eq!(second, 20 + 2);
        let s = m.stats();
        let f = s.fased_llc.unwrap();
        assert_eq!((f.read_misses, f.read_hits), (1, 1));
        assert_eq!(s.dram_read_bytes, 128);
        // The realistic preset: DDR4-3200, no LLC model.
        let cfg: NodeConfig = toml::from_str("[memory]\npreset = \"ddr4-3200\"").unwrap();
        let m = crate::memory::MemorySystem::new(&cfg);
        assert!(m.fased_llc.is_none());
        // 22 + 22 + 4 clocks at 1600 MHz: 96 core cycles at 3.2 GHz.
        assert_eq!(m.dram.latency_cycles(), 96);
        assert!(toml::from_str::<NodeConfig>("[memory]\npreset = \"ddr5\"").is_err());
    }

    #[test]
    fn old_and_new_keys_parse_together() {
        let cfg: NodeConfig = toml::from_str(
            "l2 = { size_bytes = 1048576, ways = 16, line_bytes = 64 }\nl2_hit_cycles = 30\n\
             dram_latency_ns = 60\n[llc]\nreplacement = \"random\"\ndma_allocation = \"bypass\"\n\
             [dram]\nchannels = 2",
        )
        .unwrap();
        cfg.validate().unwrap();
        assert_eq!(cfg.l2.size_bytes, 1 << 20);
        assert_eq!(cfg.dram.channels, 2);
        let unknown = toml::from_str::<NodeConfig>("[llc]\nsize_bytes = 1").unwrap_err();
        assert!(unknown.to_string().contains("size_bytes"), "{unknown}");
    }
}
