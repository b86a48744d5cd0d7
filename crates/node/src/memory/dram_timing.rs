//! DRAM timing: channels with a latency and a bandwidth, and the byte
//! counters per source and over time. (`crate::dram` holds the bytes.)
//!
//! Model: addresses are interleaved across channels every
//! `interleave_bytes`. Each channel's data bus serves `channel_mb_per_s`,
//! accounted in buckets of `bucket_ns` (`buckets.rs`: a request books its
//! bytes in the bucket of its own time and spills into later buckets when
//! that one is full, so requests reaching the model out of time order by a
//! quantum are served sensibly and deterministically, and no bucket carries
//! more than the channel's bandwidth). A read's data arrives `latency` after
//! its service starts: the configured latency is the unloaded one (it
//! includes moving the line), and queueing adds an M/D/1 wait that grows
//! with the channel's utilisation, then, once the bucket is full, the wait
//! for a later bucket. Writes (LLC write-backs, NIC DMA writes that bypass
//! the LLC) consume bandwidth the same way; nobody waits for a write-back.
//! This is the `fluid` model (the default): no banks, rows, refresh,
//! read/write turnaround or scheduling. `model = "banked"` selects the DRAM
//! with that structure instead (`dram_banked.rs`, standards in
//! `dram_standard.rs`); the counters here serve both.

use super::buckets::TimeBuckets;
use super::dram_banked::{BankedDram, BankedStats, MAX_READ_QUEUE, MAX_WRITE_QUEUE};
use super::dram_standard::{DramStandard, StandardName};
use serde::{Deserialize, Serialize};

/// Channels. Assumption: the nanoPU prototype's FireSim target has one
/// DDR3 channel (the paper states only "16GB of external DRAM").
pub const DEFAULT_DRAM_CHANNELS: u32 = 1;
/// Bandwidth of a channel in MB/s (10^6 bytes). Assumption: one 64-bit
/// DDR3-2000 channel, 2000 MT/s x 8 bytes = 16 GB/s; the paper states none.
pub const DEFAULT_CHANNEL_MB_PER_S: u32 = 16_000;
/// Bytes of consecutive addresses on one channel before the next.
/// Assumption: 256 bytes (4 lines), a common controller interleave.
pub const DEFAULT_INTERLEAVE_BYTES: u32 = 256;
/// Time bucket of the bandwidth accounting: a simulation parameter.
/// Assumption: 100 ns, more than the skew of a 128-cycle quantum at
/// 3.2 GHz (40 ns) and small against any bandwidth measurement.
pub const DEFAULT_BUCKET_NS: u32 = 100;
/// Initial window of the bandwidth time series (doubles, merging
/// neighbours, whenever the series would exceed [`SERIES_POINTS`]).
pub const DEFAULT_SERIES_WINDOW_NS: u32 = 1000;
/// Most points the bandwidth time series keeps.
pub const SERIES_POINTS: usize = 1024;

/// DRAM timing parameters (`[node.dram]`); the unloaded latency stays
/// `[node] dram_latency_ns`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DramTimingConfig {
    /// Memory channels ([`DEFAULT_DRAM_CHANNELS`]).
    pub channels: u32,
    /// Peak bandwidth of one channel, MB/s ([`DEFAULT_CHANNEL_MB_PER_S`]).
    pub channel_mb_per_s: u32,
    /// Channel interleave granule, a power of two of at least one LLC
    /// line ([`DEFAULT_INTERLEAVE_BYTES`]).
    pub interleave_bytes: u32,
    /// Bandwidth accounting bucket ([`DEFAULT_BUCKET_NS`]).
    pub bucket_ns: u32,
    /// First window of the bandwidth time series ([`DEFAULT_SERIES_WINDOW_NS`]).
    pub series_window_ns: u32,
    /// Which DRAM model: `"fluid"` (the default: bandwidth buckets and an
    /// unloaded latency, `[node] dram_latency_ns`) or `"banked"` (ranks,
    /// banks, rows, refresh, FR-FCFS: `banked` below; `channels` still
    /// counts the channels, the other keys above are the fluid model's).
    pub model: DramModel,
    /// The banked model's parameters.
    pub banked: BankedDramConfig,
}

/// The DRAM model (`[node.dram] model`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DramModel {
    #[default]
    Fluid,
    Banked,
}

/// The banked DRAM's parameters (`[node.dram.banked]`): a standard, and
/// what a user may change of it. Unset keys take the standard's values
/// (`dram_standard.rs`, each with its source).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BankedDramConfig {
    /// `"ddr3-fased"`, `"ddr4-2400"` or `"ddr4-3200"` (the default).
    pub standard: StandardName,
    /// Ranks per channel (a power of two, at most 8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<u32>,
    /// Command clock in MHz (the standard's; FASED's DDR3: the core's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_mhz: Option<u32>,
    /// Address map, DRAMsim3's notation (e.g. `"rochrababgco"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_mapping: Option<String>,
    /// Write buffer entries per channel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_queue: Option<u32>,
    /// The scheduler's window of reads per channel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_queue: Option<u32>,
}

impl Default for BankedDramConfig {
    fn default() -> Self {
        BankedDramConfig {
            standard: StandardName::Ddr4_3200,
            ranks: None,
            clock_mhz: None,
            address_mapping: None,
            write_queue: None,
            read_queue: None,
        }
    }
}

impl BankedDramConfig {
    /// The standard with this configuration's changes.
    pub fn resolve(&self) -> DramStandard {
        let mut s = self.standard.standard();
        if let Some(r) = self.ranks {
            s.ranks = r;
        }
        if let Some(c) = self.clock_mhz {
            s.clock_mhz = Some(c);
        }
        if let Some(w) = self.write_queue {
            s.write_queue = w;
        }
        if let Some(r) = self.read_queue {
            s.read_queue = r;
        }
        s
    }

    /// The address mapping in use.
    pub fn mapping(&self) -> &str {
        self.address_mapping
            .as_deref()
            .unwrap_or(self.standard.standard().address_mapping)
    }

    /// The command clock in MHz, given the core's.
    pub fn clock_mhz(&self, core_mhz: u32) -> u32 {
        self.resolve().clock_mhz.unwrap_or(core_mhz)
    }
}

impl Default for DramTimingConfig {
    fn default() -> Self {
        DramTimingConfig {
            channels: DEFAULT_DRAM_CHANNELS,
            channel_mb_per_s: DEFAULT_CHANNEL_MB_PER_S,
            interleave_bytes: DEFAULT_INTERLEAVE_BYTES,
            bucket_ns: DEFAULT_BUCKET_NS,
            series_window_ns: DEFAULT_SERIES_WINDOW_NS,
            model: DramModel::Fluid,
            banked: BankedDramConfig::default(),
        }
    }
}

/// A DRAM timing setting no model can work with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DramTimingConfigError {
    #[error("dram.channels = {0}: must be between 1 and 64")]
    Channels(u32),
    #[error("dram.channel_mb_per_s = {0}: must be at least 10 (MB/s)")]
    Bandwidth(u32),
    #[error("dram.interleave_bytes = {bytes}: must be a power of two of at least the l2 line ({line} bytes)")]
    Interleave { bytes: u32, line: u32 },
    #[error("dram.bucket_ns = {bucket_ns}: must be between 1 and 100000, and carry at least one byte per bucket at dram.channel_mb_per_s and at least one core cycle")]
    Bucket { bucket_ns: u32 },
    #[error("dram.series_window_ns = {window}: must be a multiple of dram.bucket_ns ({bucket}) and at most 1000000000")]
    SeriesWindow { window: u32, bucket: u32 },
    #[error("dram.channels = {0}: the banked model needs a power of two")]
    BankedChannels(u32),
    #[error("dram.banked.ranks = {0}: must be a power of two between 1 and 8")]
    Ranks(u32),
    #[error("dram.banked.clock_mhz = {0}: must be between 100 and 10000")]
    ClockMhz(u32),
    #[error("dram.banked.{key} = {value}: must be between 1 and {max}")]
    Queue {
        key: &'static str,
        value: u32,
        max: u32,
    },
    #[error("dram.banked.{0}")]
    Mapping(super::dram_banked::AddressMappingError),
    #[error("dram.banked: accesses of {access} bytes do not divide the l2 line ({line} bytes)")]
    Access { access: u32, line: u32 },
}

impl DramTimingConfig {
    pub fn validate(&self, line_bytes: u32, clock_mhz: u32) -> Result<(), DramTimingConfigError> {
        if !(1..=64).contains(&self.channels) {
            return Err(DramTimingConfigError::Channels(self.channels));
        }
        if self.channel_mb_per_s < 10 {
            return Err(DramTimingConfigError::Bandwidth(self.channel_mb_per_s));
        }
        if !self.interleave_bytes.is_power_of_two() || self.interleave_bytes < line_bytes {
            return Err(DramTimingConfigError::Interleave {
                bytes: self.interleave_bytes,
                line: line_bytes,
            });
        }
        if !(1..=100_000).contains(&self.bucket_ns)
            || self.bucket_capacity() == 0
            || self.bucket_cycles(clock_mhz) == 0
        {
            return Err(DramTimingConfigError::Bucket {
                bucket_ns: self.bucket_ns,
            });
        }
        if !(1..=1_000_000_000).contains(&self.series_window_ns)
            || !self.series_window_ns.is_multiple_of(self.bucket_ns)
        {
            return Err(DramTimingConfigError::SeriesWindow {
                window: self.series_window_ns,
                bucket: self.bucket_ns,
            });
        }
        if self.model == DramModel::Banked {
            self.validate_banked(line_bytes)?;
        }
        Ok(())
    }

    fn validate_banked(&self, line_bytes: u32) -> Result<(), DramTimingConfigError> {
        let b = &self.banked;
        if !self.channels.is_power_of_two() {
            return Err(DramTimingConfigError::BankedChannels(self.channels));
        }
        if let Some(r) = b.ranks {
            if !r.is_power_of_two() || r > 8 {
                return Err(DramTimingConfigError::Ranks(r));
            }
        }
        if let Some(c) = b.clock_mhz {
            if !(100..=10_000).contains(&c) {
                return Err(DramTimingConfigError::ClockMhz(c));
            }
        }
        for (key, value, max) in [
            ("write_queue", b.write_queue, MAX_WRITE_QUEUE),
            ("read_queue", b.read_queue, MAX_READ_QUEUE),
        ] {
            if let Some(v) = value {
                if !(1..=max).contains(&v) {
                    return Err(DramTimingConfigError::Queue { key, value: v, max });
                }
            }
        }
        let s = b.resolve();
        let access = s.access_bytes();
        if access > line_bytes || !line_bytes.is_multiple_of(access) {
            return Err(DramTimingConfigError::Access {
                access,
                line: line_bytes,
            });
        }
        BankedDram::new(&s, self.channels, b.mapping()).map_err(DramTimingConfigError::Mapping)?;
        Ok(())
    }

    /// Bytes a channel moves per bucket.
    pub fn bucket_capacity(&self) -> u64 {
        self.channel_mb_per_s as u64 * self.bucket_ns as u64 / 1000
    }

    pub fn bucket_cycles(&self, clock_mhz: u32) -> u64 {
        self.bucket_ns as u64 * clock_mhz as u64 / 1000
    }

    /// Peak bandwidth of all channels in bytes per second (the banked
    /// model's: its data bus at its clock, given the core's).
    pub fn peak_bytes_per_s(&self, core_mhz: u32) -> u64 {
        match self.model {
            DramModel::Fluid => self.channels as u64 * self.channel_mb_per_s as u64 * 1_000_000,
            DramModel::Banked => {
                let s = self.banked.resolve();
                self.channels as u64 * s.peak_bytes_per_s(self.banked.clock_mhz(core_mhz))
            }
        }
    }
}

/// Who caused a DRAM transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A core's LLC miss (by hart).
    Core(usize),
    /// The traditional NIC's DMA (reads that miss, writes that bypass the
    /// LLC, the fill of a partly written line).
    Nic,
    /// The LLC writing back a dirty line it evicted.
    LlcWriteback,
}

/// Bytes one source moved.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SourceBytes {
    pub source: String,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// Bytes over time in windows that double as the run grows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BandwidthSeries {
    pub window_cycles: u64,
    /// Bytes read from DRAM in window `i` (cycles `[i w, (i+1) w)`).
    pub read_bytes: Vec<u64>,
    pub write_bytes: Vec<u64>,
}

impl BandwidthSeries {
    fn new(window_cycles: u64) -> BandwidthSeries {
        BandwidthSeries {
            window_cycles,
            read_bytes: Vec::with_capacity(SERIES_POINTS),
            write_bytes: Vec::with_capacity(SERIES_POINTS),
        }
    }

    fn add(&mut self, cycle: u64, bytes: u64, write: bool) {
        // Most transfers land in the last window: spare the division.
        let last = self.read_bytes.len().saturating_sub(1);
        let start = last as u64 * self.window_cycles;
        if cycle >= start && cycle - start < self.window_cycles && !self.read_bytes.is_empty() {
            if write {
                self.write_bytes[last] += bytes;
            } else {
                self.read_bytes[last] += bytes;
            }
            return;
        }
        let mut i = (cycle / self.window_cycles) as usize;
        while i >= SERIES_POINTS {
            for v in [&mut self.read_bytes, &mut self.write_bytes] {
                let merged: Vec<u64> = v.chunks(2).map(|p| p.iter().sum()).collect();
                v.clear();
                v.extend_from_slice(&merged);
            }
            self.window_cycles *= 2;
            i = (cycle / self.window_cycles) as usize;
        }
        if i >= self.read_bytes.len() {
            self.read_bytes.resize(i + 1, 0);
            self.write_bytes.resize(i + 1, 0);
        }
        if write {
            self.write_bytes[i] += bytes;
        } else {
            self.read_bytes[i] += bytes;
        }
    }
}

/// The model behind the counters.
#[derive(Clone)]
enum Engine {
    Fluid {
        channels: Vec<TimeBuckets>,
        interleave_shift: u32,
    },
    Banked {
        dram: Box<BankedDram>,
        /// Core cycles to DRAM clocks and back.
        to_dram: Scale,
        to_core: Scale,
        /// Bytes of one DRAM access.
        access: u64,
    },
}

/// `ceil(v * mul / div)` with the fraction reduced, sparing the division
/// when the clocks are equal or a power of two apart.
#[derive(Clone, Copy)]
struct Scale {
    mul: u64,
    div: u64,
}

impl Scale {
    fn new(mul: u64, div: u64) -> Scale {
        let (mut a, mut b) = (mul, div);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        Scale {
            mul: mul / a,
            div: div / a,
        }
    }

    #[inline]
    fn apply(self, v: u64) -> u64 {
        let x = v * self.mul;
        if self.div == 1 {
            x
        } else if self.div.is_power_of_two() {
            (x + self.div - 1) >> self.div.trailing_zeros()
        } else {
            x.div_ceil(self.div)
        }
    }
}

/// The DRAM's timing state and counters.
#[derive(Clone)]
pub struct DramTiming {
    engine: Engine,
    latency_cycles: u64,
    /// Per hart, then the NIC, then LLC write-backs.
    bytes: Vec<(u64, u64)>,
    pub series: BandwidthSeries,
    /// Cycles reads waited beyond the unloaded latency, summed.
    pub read_wait_cycles: u64,
    pub reads: u64,
    /// Last cycle a transfer was served (for the mean bandwidth).
    pub last_cycle: u64,
}

impl DramTiming {
    /// The DRAM of a validated configuration; `latency_cycles` is the fluid
    /// model's unloaded latency (the banked model's follows from its timings).
    pub fn new(cfg: &DramTimingConfig, harts: usize, latency_cycles: u64, clock_mhz: u32) -> Self {
        let bucket_cycles = cfg.bucket_cycles(clock_mhz);
        let (engine, latency_cycles) = match cfg.model {
            DramModel::Fluid => (
                Engine::Fluid {
                    channels: (0..cfg.channels)
                        .map(|_| TimeBuckets::new(bucket_cycles, cfg.bucket_capacity()))
                        .collect(),
                    interleave_shift: cfg.interleave_bytes.trailing_zeros(),
                },
                latency_cycles,
            ),
            DramModel::Banked => {
                let s = cfg.banked.resolve();
                let dram = BankedDram::new(&s, cfg.channels, cfg.banked.mapping())
                    .expect("validated configuration");
                let dram_mhz = cfg.banked.clock_mhz(clock_mhz) as u64;
                let core_mhz = clock_mhz as u64;
                let unloaded = (dram.unloaded_read_clocks() * core_mhz).div_ceil(dram_mhz);
                (
                    Engine::Banked {
                        dram: Box::new(dram),
                        to_dram: Scale::new(dram_mhz, core_mhz),
                        to_core: Scale::new(core_mhz, dram_mhz),
                        access: s.access_bytes() as u64,
                    },
                    unloaded,
                )
            }
        };
        DramTiming {
            engine,
            latency_cycles,
            bytes: vec![(0, 0); harts + 2],
            series: BandwidthSeries::new(
                (cfg.series_window_ns as u64 * clock_mhz as u64 / 1000).max(1),
            ),
            read_wait_cycles: 0,
            reads: 0,
            last_cycle: 0,
        }
    }

    /// The unloaded read latency in core cycles (the banked model's: a read
    /// of a closed bank on an idle channel).
    pub fn latency_cycles(&self) -> u64 {
        self.latency_cycles
    }

    /// The banked model's counters, if it is the model.
    pub fn banked_stats(&self) -> Option<&BankedStats> {
        match &self.engine {
            Engine::Banked { dram, .. } => Some(&dram.stats),
            Engine::Fluid { .. } => None,
        }
    }

    fn slot(&self, source: Source) -> usize {
        let harts = self.bytes.len() - 2;
        match source {
            Source::Core(h) => h.min(harts - 1),
            Source::Nic => harts,
            Source::LlcWriteback => harts + 1,
        }
    }

    fn count(&mut self, source: Source, bytes: u64, write: bool) {
        let s = self.slot(source);
        if write {
            self.bytes[s].1 += bytes;
        } else {
            self.bytes[s].0 += bytes;
        }
    }

    /// Moves `bytes` at `addr` from `cycle`: the cycle a read's data arrives
    /// or a write is acknowledged.
    #[inline]
    fn transfer(&mut self, addr: u64, cycle: u64, bytes: u64, source: Source, write: bool) -> u64 {
        self.count(source, bytes, write);
        let done = match &mut self.engine {
            Engine::Fluid {
                channels,
                interleave_shift,
            } => {
                let ch = match channels.len() {
                    1 => 0,
                    n => ((addr >> *interleave_shift) % n as u64) as usize,
                };
                let (wait, bucket) = channels[ch].book(cycle, bytes);
                let bucket_start = bucket * channels[ch].bucket_cycles();
                // At the start of the bucket that carries it: windows are whole
                // buckets, so a window never shows more than the bandwidth allows
                // (plus the part of one request spilling into the next bucket).
                self.series.add(bucket_start, bytes, write);
                self.last_cycle = self.last_cycle.max(cycle + wait);
                return cycle + wait + self.latency_cycles;
            }
            Engine::Banked {
                dram,
                to_dram,
                to_core,
                access,
            } => {
                let t = to_dram.apply(cycle);
                let mut done = t;
                let mut a = addr & !(*access - 1);
                let end = addr + bytes.max(1);
                while a < end {
                    let d = if write {
                        dram.write(a, t)
                    } else {
                        dram.read(a, t)
                    };
                    done = done.max(d);
                    a += *access;
                }
                to_core.apply(done)
            }
        };
        self.series.add(cycle, bytes, write);
        self.last_cycle = self.last_cycle.max(done);
        done
    }

    /// A read of `bytes` at `addr` issued at `cycle`: the cycle its data arrives.
    #[inline]
    pub fn read(&mut self, addr: u64, cycle: u64, bytes: u64, source: Source) -> u64 {
        let done = self.transfer(addr, cycle, bytes, source, false);
        self.read_wait_cycles += (done - cycle).saturating_sub(self.latency_cycles);
        self.reads += 1;
        done
    }

    /// A write of `bytes` at `addr` issued at `cycle`: the cycle it is done
    /// (acknowledged); write-backs ignore it.
    #[inline]
    pub fn write(&mut self, addr: u64, cycle: u64, bytes: u64, source: Source) -> u64 {
        self.transfer(addr, cycle, bytes, source, true)
    }

    /// Bytes read and written per source: `core0`.., `nic`, `llc_writeback`.
    pub fn by_source(&self) -> Vec<SourceBytes> {
        let harts = self.bytes.len() - 2;
        self.bytes
            .iter()
            .enumerate()
            .map(|(i, &(r, w))| SourceBytes {
                source: match i {
                    i if i < harts => format!("core{i}"),
                    i if i == harts => "nic".into(),
                    _ => "llc_writeback".into(),
                },
                read_bytes: r,
                write_bytes: w,
            })
            .collect()
    }

    pub fn total_bytes(&self) -> (u64, u64) {
        self.bytes
            .iter()
            .fold((0, 0), |(r, w), &(a, b)| (r + a, w + b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dram(mb_per_s: u32, channels: u32) -> DramTiming {
        let cfg = DramTimingConfig {
            channels,
            channel_mb_per_s: mb_per_s,
            ..DramTimingConfig::default()
        };
        cfg.validate(64, 3200).unwrap();
        DramTiming::new(&cfg, 2, 240, 3200)
    }

    #[test]
    fn an_idle_channel_answers_in_the_configured_latency() {
        let mut d = dram(16_000, 1);
        assert_eq!(d.read(0x8000_0000, 1000, 64, Source::Core(0)), 1240);
        assert_eq!(d.read(0x8000_0000, 9000, 64, Source::Core(0)), 9240);
    }

    #[test]
    fn saturation_is_capped_at_the_bandwidth_and_latency_rises_with_load() {
        // 2 GB/s = 0.625 bytes per cycle at 3.2 GHz. Offer 4x that: a line
        // every 25.6 cycles (128 lines per 3276.8 cycles... in integers:
        // 5 lines per 128 cycles).
        let mut d = dram(2000, 1);
        let mut last = 0;
        let mut latencies = Vec::new();
        let n = 20_000u64;
        for i in 0..n {
            let t = i * 128 / 5;
            let arrival = d.read(0x8000_0000 + i * 64, t, 64, Source::Core(0));
            latencies.push(arrival - t);
            last = last.max(arrival);
        }
        let bytes = n * 64;
        let served_per_cycle = bytes as f64 / (last - 240) as f64;
        assert!(served_per_cycle <= 0.625 * 1.001, "{served_per_cycle}");
        assert!(served_per_cycle > 0.6, "{served_per_cycle}");
        // The queue builds: late requests wait far longer than early ones.
        assert!(
            latencies[n as usize - 1] > 10 * latencies[10],
            "{latencies:?}"
        );
    }

    #[test]
    fn mean_latency_rises_with_offered_load_below_saturation() {
        let mean = |gap: u64| {
            let mut d = dram(2000, 1);
            let total: u64 = (0..2000u64)
                .map(|i| d.read(0x8000_0000 + i * 64, i * gap, 64, Source::Core(0)) - i * gap)
                .sum();
            total as f64 / 2000.0
        };
        // A line per 400, 200 and 120 cycles: 16%, 32% and 53% of 0.625 B/cycle.
        let (light, mid, heavy) = (mean(400), mean(200), mean(120));
        assert!(light < mid && mid < heavy, "{light} {mid} {heavy}");
        assert!(light < 245.0, "{light}");
    }

    #[test]
    fn channels_interleave_and_counters_split_by_source() {
        let mut one = dram(2000, 1);
        let mut two = dram(2000, 2);
        let (mut l1, mut l2) = (0, 0);
        for i in 0..4000u64 {
            l1 = l1.max(one.read(0x8000_0000 + i * 64, 0, 64, Source::Nic));
            l2 = l2.max(two.read(0x8000_0000 + i * 64, 0, 64, Source::Nic));
        }
        assert!((l2 - 240) * 2 <= (l1 - 240) + 200, "{l1} {l2}");
        two.write(0x8000_0000, 0, 64, Source::LlcWriteback);
        two.read(0x8000_0000, 0, 64, Source::Core(1));
        let s = two.by_source();
        assert_eq!(s[1].source, "core1");
        assert_eq!(s[1].read_bytes, 64);
        assert_eq!(s[2].source, "nic");
        assert_eq!(s[2].read_bytes, 4000 * 64);
        assert_eq!(s[3].source, "llc_writeback");
        assert_eq!(s[3].write_bytes, 64);
    }

    #[test]
    fn the_series_stays_bounded_and_keeps_every_byte() {
        let mut d = dram(16_000, 1);
        for i in 0..100_000u64 {
            d.read(0x8000_0000, i * 1000, 64, Source::Core(0));
        }
        assert!(d.series.read_bytes.len() <= SERIES_POINTS);
        assert_eq!(d.series.read_bytes.iter().sum::<u64>(), 100_000 * 64);
    }

    #[test]
    fn same_requests_same_results() {
        let run = || {
            let mut d = dram(2000, 2);
            (0..5000u64)
                .map(|i| {
                    d.read(
                        0x8000_0000 + (i * 7919 % 4096) * 64,
                        i * 13 % 977,
                        64,
                        Source::Core(0),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }
}
