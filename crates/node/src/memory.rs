//! The memory system of a node as the harts see it: DRAM, the devices
//! (`device.rs`: the CLINT, HTIF, the UART, a NIC design's devices), the shared LLC and DRAM timing below the L1s (`memory/`:
//! `llc.rs`, `dram_timing.rs`, `buckets.rs`, put together in `system.rs`;
//! `docs/memory.md`) and LR/SC reservations.
//!
//! DRAM is tried first on every access; only other addresses reach the
//! device map.

pub mod buckets;
pub mod dram_banked;
pub mod dram_standard;
pub mod dram_timing;
pub mod fased_llc;
pub mod llc;
pub mod system;

use crate::bus_device::{Dma, DmaWritten, StoreEffect};
use crate::device::DeviceMap;
use crate::dram::Dram;
use nanopu_core::{Bus, BusError, RefillKind};
pub use system::{MemoryStats, MemorySystem};

/// Memory and devices shared by the harts of a node.
pub struct NodeBus {
    dram: Dram,
    devices: DeviceMap,
    /// UART output when the program has no HTIF to collect it.
    uart_output: Vec<u8>,
    /// The LLC and DRAM timing.
    mem: MemorySystem,
    /// Reservation granule (8-byte aligned address) held by each hart.
    reservations: Vec<Option<u64>>,
    active_reservations: usize,
    /// Whether a store may need more than the write: a reservation to
    /// break, a watched word (`active_reservations > 0 || !watched.empty`).
    /// While it is set every store takes the general path; the fast path
    /// costs one test of it.
    store_checks: bool,
    /// Core cycles of an uncached device-register access.
    mmio_cycles: u32,
    /// Device accesses by the harts so far (any may change what wakes a
    /// sleeping hart: the node's scheduler looks at this count).
    device_accesses: u64,
    /// The memory words (8-byte aligned) that sleeping harts' polling loops
    /// read: a store to one ends the storing hart's slice after it
    /// ([`BusError::Yield`]), so that the node wakes the poller at the
    /// store's cycle, not a slice later (or, if nothing else runs then, at
    /// the poller's own, earlier cycle).
    watched: WatchedWords,
}

/// A small set of 8-byte words with a one-word filter (a bit per word
/// address modulo 64) that makes the common miss one test.
#[derive(Clone, Debug, Default)]
struct WatchedWords {
    filter: u64,
    words: Vec<u64>,
}

impl WatchedWords {
    fn bit(word: u64) -> u64 {
        1 << ((word >> 3) & 63)
    }

    /// Whether a store to `[addr, addr + size)` writes a watched word.
    fn hit(&self, addr: u64, size: u8) -> bool {
        let first = addr & !7;
        let last = (addr + size as u64 - 1) & !7;
        self.filter & (Self::bit(first) | Self::bit(last)) != 0
            && self.words.iter().any(|&w| w == first || w == last)
    }

    fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    fn clear(&mut self) {
        self.filter = 0;
        self.words.clear();
    }

    fn insert(&mut self, word: u64) {
        let word = word & !7;
        self.filter |= Self::bit(word);
        if !self.words.contains(&word) {
            self.words.push(word);
        }
    }
}

/// How a copy of a node's bus gets its DRAM.
pub(crate) enum DramCopy {
    /// Pages of its own, copied ([`Dram::try_clone`]).
    Whole,
    /// This DRAM's pages, made equal ([`Dram::copy_into`]).
    Into(Dram),
    /// The frozen original's pages until written ([`Dram::cow_fork`]).
    OnWrite,
}

impl NodeBus {
    /// A copy, its DRAM made as `how` says.
    pub(crate) fn fork(&self, how: DramCopy) -> std::io::Result<NodeBus> {
        let dram = match how {
            DramCopy::Whole => self.dram.try_clone()?,
            DramCopy::Into(mut into) => {
                self.dram.copy_into(&mut into)?;
                into
            }
            DramCopy::OnWrite => self.dram.cow_fork()?,
        };
        Ok(NodeBus {
            dram,
            devices: self.devices.clone(),
            uart_output: self.uart_output.clone(),
            mem: self.mem.clone(),
            reservations: self.reservations.clone(),
            active_reservations: self.active_reservations,
            store_checks: self.store_checks,
            mmio_cycles: self.mmio_cycles,
            device_accesses: self.device_accesses,
            watched: self.watched.clone(),
        })
    }

    pub fn new(
        harts: usize,
        dram: Dram,
        devices: DeviceMap,
        mem: MemorySystem,
        mmio_cycles: u32,
    ) -> Self {
        NodeBus {
            dram,
            devices,
            uart_output: Vec::new(),
            mem,
            reservations: vec![None; harts],
            active_reservations: 0,
            store_checks: false,
            mmio_cycles,
            device_accesses: 0,
            watched: WatchedWords::default(),
        }
    }

    /// Sets the words sleeping pollers read (see `watched`), before a slice;
    /// device registers among them are left out (a device changes them, not
    /// a store, and the node's wake memos cover that).
    pub(crate) fn watch_words(&mut self, words: impl IntoIterator<Item = u64>) {
        self.watched.clear();
        for w in words {
            if self.dram.offset(w, 8).is_some() {
                self.watched.insert(w);
            }
        }
        self.update_store_checks();
    }

    fn update_store_checks(&mut self) {
        self.store_checks = self.active_reservations > 0 || !self.watched.is_empty();
    }

    /// The DRAM, the rest of the bus dropped.
    pub(crate) fn into_dram(self) -> Dram {
        self.dram
    }

    pub fn dram(&self) -> &Dram {
        &self.dram
    }

    pub fn dram_mut(&mut self) -> &mut Dram {
        &mut self.dram
    }

    /// The LLC and DRAM timing.
    pub fn memory(&self) -> &MemorySystem {
        &self.mem
    }

    pub fn memory_mut(&mut self) -> &mut MemorySystem {
        &mut self.mem
    }

    pub fn devices(&self) -> &DeviceMap {
        &self.devices
    }

    pub fn devices_mut(&mut self) -> &mut DeviceMap {
        &mut self.devices
    }

    /// How many device accesses (loads, stores, `tohost` writes) the harts
    /// have made so far.
    pub fn device_accesses(&self) -> u64 {
        self.device_accesses
    }

    /// What the program wrote to the UART while it had no HTIF (bounded
    /// like HTIF's kept output).
    pub fn uart_output(&self) -> &[u8] {
        &self.uart_output
    }

    /// Breaks every hart's reservation on a granule in `[addr, addr + len)`
    /// (a device wrote there).
    pub fn break_reservations(&mut self, addr: u64, len: u64) {
        if self.active_reservations == 0 {
            return;
        }
        let (first, end) = (addr & !7, addr + len);
        for r in self.reservations.iter_mut() {
            if matches!(*r, Some(g) if g >= first && g < end) {
                *r = None;
                self.active_reservations -= 1;
            }
        }
        self.update_store_checks();
    }

    /// `f` on the NIC device of type `T` with the DMA port (a frame
    /// arriving at a NIC that writes it into memory); `None` if there is no
    /// such device. The caller takes what it wrote
    /// ([`take_dma_written`](Self::take_dma_written)).
    pub fn with_device_dma<T: 'static, R>(
        &mut self,
        f: impl FnOnce(&mut T, Dma<'_>) -> R,
    ) -> Option<R> {
        let device = self.devices.device_mut::<T>()?;
        let dma = Dma {
            dram: &mut self.dram,
            mem: &mut self.mem,
        };
        Some(f(device, dma))
    }

    /// One range a device wrote by DMA since the last call, with the
    /// reservations on it broken (the node invalidates the L1 lines).
    pub fn take_dma_written(&mut self) -> Option<DmaWritten> {
        let written = self.devices.take_dma_written()?;
        self.break_reservations(written.addr, written.len);
        Some(written)
    }

    /// An L1 write-back of the line at `addr` at `cycle` (a victim of a line
    /// the NIC installed).
    pub fn l1_writeback(&mut self, addr: u64, cycle: u64) {
        self.mem.writeback(addr, cycle)
    }

    /// What a store by `hart` to `[addr, addr + size)` does besides the
    /// write: breaks the other harts' reservations on its granules; returns
    /// whether it writes a word a sleeping poller reads.
    #[inline(always)]
    fn snoop(&mut self, hart: usize, addr: u64, size: u8) -> bool {
        self.store_checks && self.snoop_slow(hart, addr, size)
    }

    #[inline(never)]
    fn snoop_slow(&mut self, hart: usize, addr: u64, size: u8) -> bool {
        let first = addr & !7;
        let last = (addr + size as u64 - 1) & !7;
        if self.active_reservations > 0 {
            for (h, r) in self.reservations.iter_mut().enumerate() {
                if h != hart && matches!(*r, Some(g) if g == first || g == last) {
                    *r = None;
                    self.active_reservations -= 1;
                }
            }
            self.update_store_checks();
        }
        self.watched.hit(addr, size)
    }

    #[cold]
    fn load_device(&mut self, cycle: u64, addr: u64, size: u8) -> Result<u64, BusError> {
        // A status read changes no device (that is what makes it one): the
        // sleepers' wake memos, which this count keys, still hold. Cores
        // polling a status register must not drop every other core's memo.
        match self.devices.load(addr, size, cycle) {
            Some((v, true)) => Ok(v),
            Some((v, false)) => {
                self.device_accesses += 1;
                Ok(v)
            }
            None => {
                self.device_accesses += 1;
                Err(BusError::Unmapped)
            }
        }
    }

    #[cold]
    fn store_device(
        &mut self,
        cycle: u64,
        addr: u64,
        size: u8,
        value: u64,
    ) -> Result<(), BusError> {
        self.device_accesses += 1;
        let dma = Dma {
            dram: &mut self.dram,
            mem: &mut self.mem,
        };
        let effect = self.devices.store(addr, size, value, cycle, dma);
        self.apply(effect)
    }

    /// A DRAM store touched HTIF's `tohost`: serve it.
    #[cold]
    fn store_ram_device(
        &mut self,
        cycle: u64,
        addr: u64,
        size: u8,
        value: u64,
    ) -> Result<(), BusError> {
        self.device_accesses += 1;
        let dma = Dma {
            dram: &mut self.dram,
            mem: &mut self.mem,
        };
        let effect = self.devices.ram_store(addr, size, value, cycle, dma);
        self.apply(effect)
    }

    fn apply(&mut self, effect: Option<StoreEffect>) -> Result<(), BusError> {
        match effect {
            None => Err(BusError::Unmapped),
            Some(StoreEffect::Done) => Ok(()),
            Some(StoreEffect::Yield) => Err(BusError::Yield),
            Some(StoreEffect::Output(byte)) => {
                match self.devices.htif_mut() {
                    Some(h) => h.emit(&[byte]),
                    // Bounded like HTIF's kept output.
                    None if self.uart_output.len() < crate::htif::OUTPUT_KEEP => {
                        self.uart_output.push(byte)
                    }
                    None => {}
                }
                Ok(())
            }
        }
    }
}

impl NodeBus {
    /// The aligned 8-byte word at `word` (DRAM, or a device status register
    /// at `cycle`) as a polling loop sees it, without side effects.
    pub fn peek_word(&self, word: u64, cycle: u64) -> u64 {
        if let Some(off) = self.dram.offset(word, 8) {
            return self.dram.read(off, 8);
        }
        self.devices.peek_status(word, cycle)
    }
}

impl Bus for NodeBus {
    #[inline(always)]
    fn load(&mut self, _hart: usize, cycle: u64, addr: u64, size: u8) -> Result<u64, BusError> {
        if let Some(off) = self.dram.access_offset(addr, size) {
            return Ok(self.dram.read(off, size));
        }
        self.load_device(cycle, addr, size)
    }

    #[inline(always)]
    fn load_ram(&mut self, addr: u64, size: u8) -> Option<u64> {
        let off = self.dram.access_offset(addr, size)?;
        Some(self.dram.read(off, size))
    }

    #[inline(always)]
    fn store_ram(&mut self, _hart: usize, addr: u64, size: u8, value: u64) -> bool {
        let Some(off) = self.dram.access_offset(addr, size) else {
            return false;
        };
        // HTIF's `tohost`, a reservation to break or a word a sleeper polls:
        // the general path serves it.
        if self.store_checks || self.devices.ram_window_hit(addr, size) {
            return false;
        }
        self.dram.write(off, size, value);
        true
    }

    fn pure_device_read(&self, addr: u64) -> bool {
        self.devices.is_status(addr)
    }

    #[inline(always)]
    fn store(
        &mut self,
        hart: usize,
        cycle: u64,
        addr: u64,
        size: u8,
        value: u64,
    ) -> Result<(), BusError> {
        let Some(off) = self.dram.access_offset(addr, size) else {
            return self.store_device(cycle, addr, size, value);
        };
        let watched = self.snoop(hart, addr, size);
        self.dram.write(off, size, value);
        if self.devices.ram_window_hit(addr, size) {
            return self.store_ram_device(cycle, addr, size, value);
        }
        if watched {
            return Err(BusError::Yield);
        }
        Ok(())
    }

    fn fetch16(&mut self, addr: u64) -> Result<u16, BusError> {
        match self.dram.offset(addr, 2) {
            Some(off) => Ok(self.dram.read(off, 2) as u16),
            None => Err(BusError::Unmapped),
        }
    }

    #[inline]
    fn refill(&mut self, hart: usize, addr: u64, cycle: u64, kind: RefillKind) -> u64 {
        self.mem.refill(hart, addr, cycle, kind)
    }

    #[inline]
    fn writeback(&mut self, _hart: usize, addr: u64, cycle: u64) {
        self.mem.writeback(addr, cycle)
    }

    #[inline(always)]
    fn uncached_cycles(&self, addr: u64) -> Option<u32> {
        match self.dram.offset(addr, 1) {
            Some(_) => None,
            None => Some(self.mmio_cycles),
        }
    }

    fn reserve(&mut self, hart: usize, addr: u64) {
        if self.reservations[hart].is_none() {
            self.active_reservations += 1;
            self.store_checks = true;
        }
        self.reservations[hart] = Some(addr & !7);
    }

    fn take_reservation(&mut self, hart: usize, addr: u64) -> bool {
        match self.reservations[hart].take() {
            Some(g) => {
                self.active_reservations -= 1;
                self.update_store_checks();
                g == addr & !7
            }
            None => false,
        }
    }

    fn mtime_at(&self, cycle: u64) -> u64 {
        self.devices.clint().map_or(0, |c| c.mtime_at(cycle))
    }
}
