//! Parameters of a node: cores, memory hierarchy, timer, and the core and
//! network-interface models. Every default is a named value with its source.

use crate::memory::dram_standard::StandardName;
use crate::memory::dram_timing::{DramModel, DramTimingConfig, DramTimingConfigError};
use crate::memory::fased_llc::{FasedLlcConfig, FasedLlcConfigError};
use crate::memory::llc::{LlcConfig, LlcConfigError};
use nanopu_core::netif::NetIfConfigError;
use nanopu_core::timing::{CacheConfig, CacheConfigError};
use nanopu_core::{CoreConfigError, CoreTimingConfig, NetIfConfig};
use serde::{Deserialize, Serialize};

/// DRAM base address (`nanopu-abi.md`: programs are linked at 0x80000000).
pub const DRAM_BASE: u64 = 0x8000_0000;

/// Cores of the nanoPU prototype (nanoPU §3: "a prototype quad-core nanoPU").
pub const DEFAULT_CORES: usize = 4;
/// DRAM of the prototype (nanoPU §3: "16GB of external DRAM memory").
pub const DEFAULT_DRAM_BYTES: u64 = 16 << 30;
/// L2 hit latency in core cycles. Assumption: Rocket-chip's shared
/// inclusive L2 behind the TileLink system bus answers an L1 refill in
/// about 20 cycles; the nanoPU paper does not state it.
pub const DEFAULT_L2_HIT_CYCLES: u32 = 20;
/// DRAM access latency beyond the L2. Source: nanoPU §2.1 ("A LLC miss takes
/// about 50-100ns to resolve"): the midpoint.
pub const DEFAULT_DRAM_LATENCY_NS: u32 = 75;
/// `mtime` rate: one tick per microsecond (`nanopu-abi.md`: the prototype's
/// 5 us timer slice is 5 ticks; an inference).
pub const DEFAULT_MTIME_HZ: u64 = 1_000_000;
/// How far (in core cycles) one hart may run ahead of the others before the
/// node switches harts. Bounds the skew of shared-memory interactions
/// between harts; a simulation parameter, not a hardware one.
pub const DEFAULT_QUANTUM_CYCLES: u64 = 128;

/// Parameters of one nanoPU node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NodeConfig {
    /// Number of cores (harts).
    pub cores: usize,
    /// DRAM size in bytes, mapped at 0x80000000.
    pub dram_bytes: u64,
    /// Shared L2, the last-level cache: its geometry. Source: nanoPU §3
    /// (512 KB); 8 ways and 64-byte lines are Rocket-chip's defaults.
    pub l2: CacheConfig,
    /// L2 hit latency ([`DEFAULT_L2_HIT_CYCLES`]).
    pub l2_hit_cycles: u32,
    /// Unloaded DRAM latency beyond the L2 ([`DEFAULT_DRAM_LATENCY_NS`]).
    pub dram_latency_ns: u32,
    /// The rest of the L2 model: banks, replacement, NIC DMA placement
    /// (`memory/llc.rs`, `docs/memory.md`).
    pub llc: LlcConfig,
    /// DRAM channels and bandwidth (`memory/dram_timing.rs`).
    pub dram: DramTimingConfig,
    /// FASED's last-level-cache timing model below the L2
    /// (`memory/fased_llc.rs`); off unless enabled or a preset asks for it.
    pub fased_llc: FasedLlcConfig,
    /// A named memory system (`[node.memory] preset`).
    pub memory: MemoryPresetConfig,
    /// Round trip of an uncached access to a device register (CLINT, UART,
    /// the traditional NIC). Assumption: Rocket-chip's MMIO goes through the
    /// system and periphery buses, about as far as the L2; the paper gives
    /// no figure.
    pub mmio_cycles: u32,
    pub mtime_hz: u64,
    /// Core cycles an HTIF request (a syscall, a console character) holds
    /// the hart that made it, besides its bytes
    /// ([`crate::htif::DEFAULT_HTIF_REQUEST_CYCLES`]).
    pub htif_request_cycles: u64,
    /// Bytes an HTIF request's buffer moves per core cycle; 0 makes them
    /// free ([`crate::htif::DEFAULT_HTIF_BYTES_PER_CYCLE`]).
    pub htif_bytes_per_cycle: u64,
    pub quantum_cycles: u64,
    /// Slots of the decoded-instruction cache (a simulator parameter).
    pub decode_cache_entries: usize,
    /// Fast-forward harts that sit in idle polling loops. Exact (cycle and
    /// instruction counts are the same either way); turn off only to check that.
    pub idle_skip: bool,
    pub core: CoreTimingConfig,
    pub netif: NetIfConfig,
    /// Where the devices sit on the bus, where not at their defaults.
    pub devices: DeviceMapConfig,
}

/// `[node.memory]`: a named memory system below the L2, set in one key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryPresetConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<MemoryPreset>,
}

/// The named memory systems (`docs/memory.md`, "Presets").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryPreset {
    /// What the nanoPU prototype's FireSim runs had below the L2: FASED's
    /// 4 MiB LLC model in front of its quad-rank DDR3 FR-FCFS model, both
    /// at the target's clock (`DDR3FRFCFSLLC4MB_FireSimLNICQuadRocketConfig`,
    /// l-nic/firesim `deploy/workloads/lnic-evaluation/
    /// config_build_recipes_lnic.ini` line 15; `config_hwdb_lnic.ini` line
    /// 12: `customruntimeconfig=None`, so FASED's default runtime settings).
    FiresimLnic,
    /// A real DDR4-3200 channel at real nanoseconds, no LLC model.
    #[serde(rename = "ddr4-3200")]
    Ddr43200,
    /// The fluid DRAM model (the default without a preset).
    Fluid,
}

/// Base addresses of the node's devices where they are not at the
/// device's own default (each device module owns its window: base and
/// size; the defaults are the nanoPU prototype's, `nanopu-abi.md`, which the
/// SDK's programs are built for). A window is checked when its device is
/// attached: it may overlap neither DRAM nor another device's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeviceMapConfig {
    /// The CLINT (timer and software interrupts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clint: Option<u64>,
    /// The SiFive UART.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uart: Option<u64>,
    /// The traditional NIC (IceNIC), for `[nic] kind = "icenic"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icenic: Option<u64>,
    /// The RDMA NIC's doorbell page, for `[nic] kind = "rdma"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rdma_doorbell: Option<u64>,
}

impl DeviceMapConfig {
    /// The base of the device attached as `name`: the configured one, or
    /// `default` (the device's own) if the key is not set or names no
    /// configurable window.
    pub fn base(&self, name: &str, default: u64) -> u64 {
        let set = match name {
            "clint" => self.clint,
            "uart" => self.uart,
            "icenic" => self.icenic,
            "rdma_doorbell" => self.rdma_doorbell,
            _ => None,
        };
        set.unwrap_or(default)
    }
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            cores: DEFAULT_CORES,
            dram_bytes: DEFAULT_DRAM_BYTES,
            l2: CacheConfig {
                size_bytes: 512 * 1024,
                ways: 8,
                line_bytes: 64,
            },
            l2_hit_cycles: DEFAULT_L2_HIT_CYCLES,
            dram_latency_ns: DEFAULT_DRAM_LATENCY_NS,
            llc: LlcConfig::default(),
            dram: DramTimingConfig::default(),
            fased_llc: FasedLlcConfig::default(),
            memory: MemoryPresetConfig::default(),
            mmio_cycles: DEFAULT_L2_HIT_CYCLES,
            mtime_hz: DEFAULT_MTIME_HZ,
            htif_request_cycles: crate::htif::DEFAULT_HTIF_REQUEST_CYCLES,
            htif_bytes_per_cycle: crate::htif::DEFAULT_HTIF_BYTES_PER_CYCLE,
            quantum_cycles: DEFAULT_QUANTUM_CYCLES,
            decode_cache_entries: 1 << 16,
            idle_skip: true,
            core: CoreTimingConfig::default(),
            netif: NetIfConfig::default(),
            devices: DeviceMapConfig::default(),
        }
    }
}

/// A node setting no model can work with; the message names the key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NodeConfigError {
    #[error("cores = {0}: must be between 1 and 64")]
    Cores(usize),
    #[error("dram_bytes = {0}: must be at least 1 MiB and a multiple of 4096")]
    DramBytes(u64),
    #[error("dram_bytes = {0}: at most 1 TiB")]
    DramTooLarge(u64),
    #[error("mtime_hz = {mtime_hz}: must be between 1 and the core clock ({clock_hz} Hz)")]
    MtimeHz { mtime_hz: u64, clock_hz: u64 },
    #[error("quantum_cycles must be at least 1")]
    QuantumCycles,
    #[error("decode_cache_entries = {0}: must be between 1 and 16777216")]
    DecodeCacheEntries(usize),
    /// The message names the cache (`l2`).
    #[error(transparent)]
    L2(CacheConfigError),
    #[error(transparent)]
    Llc(LlcConfigError),
    #[error(transparent)]
    Dram(DramTimingConfigError),
    #[error(transparent)]
    FasedLlc(FasedLlcConfigError),
    #[error("dram_latency_ns = {0}: must be between 1 and 100000")]
    DramLatency(u32),
    #[error("l2_hit_cycles = {0}: must be between 1 and 10000")]
    L2HitCycles(u32),
    // The inner errors are part of the messages (not `source`s), so that a
    // printed error chain shows them once.
    #[error("core.{0}")]
    Core(CoreConfigError),
    #[error("netif.{0}")]
    NetIf(NetIfConfigError),
}

impl NodeConfig {
    /// Checks values no model can work with; the message names the key.
    pub fn validate(&self) -> Result<(), NodeConfigError> {
        if !(1..=64).contains(&self.cores) {
            return Err(NodeConfigError::Cores(self.cores));
        }
        if self.dram_bytes < (1 << 20) || !self.dram_bytes.is_multiple_of(4096) {
            return Err(NodeConfigError::DramBytes(self.dram_bytes));
        }
        if self.dram_bytes > (1 << 40) {
            return Err(NodeConfigError::DramTooLarge(self.dram_bytes));
        }
        // The core first: mtime_hz is checked against its clock.
        self.core.validate().map_err(NodeConfigError::Core)?;
        let clock_hz = self.core.clock_mhz as u64 * 1_000_000;
        if self.mtime_hz == 0 || self.mtime_hz > clock_hz {
            return Err(NodeConfigError::MtimeHz {
                mtime_hz: self.mtime_hz,
                clock_hz,
            });
        }
        if self.quantum_cycles == 0 {
            return Err(NodeConfigError::QuantumCycles);
        }
        if self.decode_cache_entries == 0 || self.decode_cache_entries > 1 << 24 {
            return Err(NodeConfigError::DecodeCacheEntries(
                self.decode_cache_entries,
            ));
        }
        self.l2.validate("l2").map_err(NodeConfigError::L2)?;
        self.llc.validate(&self.l2).map_err(NodeConfigError::Llc)?;
        let (dram, fased_llc) = self.memory_below_l2();
        dram.validate(self.l2.line_bytes, self.core.clock_mhz)
            .map_err(NodeConfigError::Dram)?;
        if fased_llc.enabled {
            fased_llc
                .validate(self.l2.line_bytes)
                .map_err(NodeConfigError::FasedLlc)?;
        }
        if !(1..=100_000).contains(&self.dram_latency_ns) {
            return Err(NodeConfigError::DramLatency(self.dram_latency_ns));
        }
        if !(1..=10_000).contains(&self.l2_hit_cycles) {
            return Err(NodeConfigError::L2HitCycles(self.l2_hit_cycles));
        }
        self.netif.validate().map_err(NodeConfigError::NetIf)
    }

    /// The DRAM and FASED-LLC settings in effect: `[node.dram]` and
    /// `[node.fased_llc]` as written, with a `[node.memory] preset`'s
    /// choices on top (the model, the standard, the LLC model on or off;
    /// the other keys stay as written).
    pub fn memory_below_l2(&self) -> (DramTimingConfig, FasedLlcConfig) {
        let mut dram = self.dram.clone();
        let mut llc = self.fased_llc.clone();
        match self.memory.preset {
            None => {}
            Some(MemoryPreset::Fluid) => {
                dram.model = DramModel::Fluid;
                llc.enabled = false;
            }
            Some(MemoryPreset::FiresimLnic) => {
                dram.model = DramModel::Banked;
                dram.banked.standard = StandardName::Ddr3Fased;
                // FASED models one channel (one memory port of the target).
                dram.channels = 1;
                llc.enabled = true;
            }
            Some(MemoryPreset::Ddr43200) => {
                dram.model = DramModel::Banked;
                dram.banked.standard = StandardName::Ddr4_3200;
                llc.enabled = false;
            }
        }
        (dram, llc)
    }

    /// DRAM latency in core cycles (rounded up).
    pub fn dram_cycles(&self) -> u32 {
        (self.dram_latency_ns as u64 * self.core.clock_mhz as u64).div_ceil(1000) as u32
    }
}
