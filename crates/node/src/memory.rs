//! The memory system of a node as the harts see it: DRAM, the CLINT, HTIF,
//! the UART, the traditional NIC (IceNIC, when configured), the shared L2
//! model and LR/SC reservations.

use crate::clint::{Clint, CLINT_BASE, CLINT_SIZE};
use crate::dram::Dram;
use crate::htif::{Htif, HtifRequest};
use crate::icenic::{Dma, IceNic, RxPlacement, ICENIC_BASE, ICENIC_SIZE};
use crate::uart::{Uart, UartWrite, UART_BASE, UART_SIZE};
use nanopu_core::timing::Cache;
use nanopu_core::{Bus, BusError};

/// Memory and devices shared by the harts of a node.
pub struct NodeBus {
    pub dram: Dram,
    pub clint: Clint,
    pub htif: Option<Htif>,
    pub uart: Uart,
    /// UART output when the program has no HTIF to collect it.
    pub uart_output: Vec<u8>,
    pub l2: Cache,
    l2_hit_cycles: u32,
    dram_cycles: u32,
    /// Reservation granule (8-byte aligned address) held by each hart.
    reservations: Vec<Option<u64>>,
    active_reservations: usize,
    /// The last HTIF request that needs the node's attention (exit or error).
    pub htif_request: Option<HtifRequest>,
    /// A CLINT register changed: timers or software interrupts must be re-read.
    pub clint_changed: bool,
    /// Core cycles of an uncached device-register access.
    pub mmio_cycles: u32,
    /// The traditional DMA NIC, if the node has one.
    pub icenic: Option<IceNic>,
}

impl NodeBus {
    pub fn new(dram: Dram, clint: Clint, l2: Cache, l2_hit_cycles: u32, dram_cycles: u32) -> Self {
        let harts = clint.msip.len();
        NodeBus {
            dram,
            clint,
            htif: None,
            uart: Uart::default(),
            uart_output: Vec::new(),
            l2,
            l2_hit_cycles,
            dram_cycles,
            reservations: vec![None; harts],
            active_reservations: 0,
            htif_request: None,
            clint_changed: false,
            mmio_cycles: 0,
            icenic: None,
        }
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
    }

    /// A frame whose last bit reached the traditional NIC at `cycle` (see
    /// [`IceNic::frame_in`]); `None` if dropped or there is no such NIC.
    pub fn icenic_frame_in(&mut self, frame: &[u8], cycle: u64) -> Option<RxPlacement> {
        let nic = self.icenic.as_mut()?;
        let dma = Dma {
            dram: &mut self.dram,
            l2: &mut self.l2,
            dram_cycles: self.dram_cycles,
        };
        let placed = nic.frame_in(frame, cycle, dma)?;
        self.break_reservations(placed.addr, placed.len);
        Some(placed)
    }

    #[cold]
    fn load_icenic(&mut self, addr: u64, size: u8, cycle: u64) -> Result<u64, BusError> {
        match self.icenic.as_mut() {
            Some(nic) if addr.wrapping_sub(ICENIC_BASE) < ICENIC_SIZE => {
                Ok(nic.load(addr - ICENIC_BASE, size, cycle))
            }
            _ => Err(BusError::Unmapped),
        }
    }

    /// Breaks the other harts' reservations on the granule of `addr`.
    #[inline(always)]
    fn snoop(&mut self, hart: usize, addr: u64, size: u8) {
        if self.active_reservations == 0 {
            return;
        }
        let first = addr & !7;
        let last = (addr + size as u64 - 1) & !7;
        for (h, r) in self.reservations.iter_mut().enumerate() {
            if h != hart && matches!(*r, Some(g) if g == first || g == last) {
                *r = None;
                self.active_reservations -= 1;
            }
        }
    }

    #[cold]
    fn store_slow(&mut self, cycle: u64, addr: u64, size: u8, value: u64) -> Result<(), BusError> {
        if addr.wrapping_sub(CLINT_BASE) < CLINT_SIZE {
            return match self.clint.store(addr - CLINT_BASE, size, value, cycle) {
                Some(()) => {
                    self.clint_changed = true;
                    Err(BusError::Yield)
                }
                None => Err(BusError::Unmapped),
            };
        }
        if addr.wrapping_sub(UART_BASE) < UART_SIZE {
            return match self.uart.store(addr - UART_BASE, value) {
                Some(UartWrite::Transmit(byte)) => {
                    match self.htif.as_mut() {
                        Some(h) => h.emit(&[byte]),
                        // Bounded like HTIF's kept output.
                        None if self.uart_output.len() < crate::htif::OUTPUT_KEEP => {
                            self.uart_output.push(byte)
                        }
                        None => {}
                    }
                    Ok(())
                }
                Some(UartWrite::Register) => Ok(()),
                None => Err(BusError::Unmapped),
            };
        }
        if let Some(nic) = self.icenic.as_mut() {
            if addr.wrapping_sub(ICENIC_BASE) < ICENIC_SIZE {
                let dma = Dma {
                    dram: &mut self.dram,
                    l2: &mut self.l2,
                    dram_cycles: self.dram_cycles,
                };
                let queued = nic.store(addr - ICENIC_BASE, size, value, cycle, dma);
                // A frame for the wire: the hart returns to the node, which hands it over.
                return if queued { Err(BusError::Yield) } else { Ok(()) };
            }
        }
        Err(BusError::Unmapped)
    }

    #[cold]
    fn serve_htif(&mut self) -> Result<(), BusError> {
        let Some(htif) = self.htif.as_mut() else {
            return Ok(());
        };
        match htif.serve(&mut self.dram) {
            HtifRequest::None => Ok(()),
            HtifRequest::Served => Err(BusError::Yield),
            request => {
                self.htif_request = Some(request);
                Err(BusError::Yield)
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
        match self.icenic.as_ref() {
            Some(nic) if word.wrapping_sub(ICENIC_BASE) < ICENIC_SIZE => {
                nic.peek_status(word - ICENIC_BASE, cycle)
            }
            _ => 0,
        }
    }
}

impl Bus for NodeBus {
    #[inline(always)]
    fn load(&mut self, _hart: usize, cycle: u64, addr: u64, size: u8) -> Result<u64, BusError> {
        if let Some(off) = self.dram.offset(addr, size as u64) {
            return Ok(self.dram.read(off, size));
        }
        if addr.wrapping_sub(CLINT_BASE) < CLINT_SIZE {
            return self
                .clint
                .load(addr - CLINT_BASE, size, cycle)
                .ok_or(BusError::Unmapped);
        }
        if addr.wrapping_sub(UART_BASE) < UART_SIZE {
            return self.uart.load(addr - UART_BASE).ok_or(BusError::Unmapped);
        }
        self.load_icenic(addr, size, cycle)
    }

    fn pure_device_read(&self, addr: u64) -> bool {
        self.icenic.is_some()
            && addr.wrapping_sub(ICENIC_BASE) < ICENIC_SIZE
            && IceNic::is_status(addr - ICENIC_BASE)
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
        let Some(off) = self.dram.offset(addr, size as u64) else {
            return self.store_slow(cycle, addr, size, value);
        };
        self.snoop(hart, addr, size);
        self.dram.write(off, size, value);
        match &self.htif {
            Some(h) if h.is_tohost_store(addr, size) => self.serve_htif(),
            _ => Ok(()),
        }
    }

    fn fetch16(&mut self, addr: u64) -> Result<u16, BusError> {
        match self.dram.offset(addr, 2) {
            Some(off) => Ok(self.dram.read(off, 2) as u16),
            None => Err(BusError::Unmapped),
        }
    }

    #[inline]
    fn refill_cycles(&mut self, _hart: usize, addr: u64) -> u32 {
        if self.l2.access(addr) {
            self.l2_hit_cycles
        } else {
            self.l2_hit_cycles + self.dram_cycles
        }
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
        }
        self.reservations[hart] = Some(addr & !7);
    }

    fn take_reservation(&mut self, hart: usize, addr: u64) -> bool {
        match self.reservations[hart].take() {
            Some(g) => {
                self.active_reservations -= 1;
                g == addr & !7
            }
            None => false,
        }
    }

    fn mtime_at(&self, cycle: u64) -> u64 {
        self.clint.mtime_at(cycle)
    }
}
