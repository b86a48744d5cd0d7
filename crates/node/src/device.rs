//! Devices on a node's bus, in the spirit of Spike's `abstract_device_t`:
//! each device answers loads and stores at offsets within its window and,
//! if it has time of its own, says when it next changes or raises an
//! interrupt. The node keeps them in a [`DeviceMap`]: windows taken from the
//! node configuration (`[node.devices]`), looked up only for addresses that
//! are not DRAM, so memory accesses never see the map.
//!
//! Dispatch is by `match` on [`Device`] (no virtual calls); adding a device
//! is one module implementing [`BusDevice`], one arm in [`Device`] and one
//! line attaching it in `Node::new` (see `docs/devices.md`).

use crate::clint::Clint;
use crate::dram::Dram;
use crate::htif::Htif;
use crate::icenic::IceNic;
use crate::memory::MemorySystem;
use crate::nebula_queues::NebulaQueues;
use crate::rdma_doorbell::RdmaDoorbell;
use crate::uart::Uart;

/// Where a device reaches memory by DMA (or, for HTIF, reads its requests):
/// the bytes in `dram`, the timing and counters through `mem` (the LLC and
/// DRAM bandwidth).
pub struct Dma<'a> {
    pub dram: &'a mut Dram,
    pub mem: &'a mut MemorySystem,
}

impl Dma<'_> {
    /// The same memory for a shorter borrow (several transfers in a row).
    pub fn reborrow(&mut self) -> Dma<'_> {
        Dma {
            dram: &mut *self.dram,
            mem: &mut *self.mem,
        }
    }
}

/// What a store to a device did, beyond changing its registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreEffect {
    /// Nothing the node must see.
    Done,
    /// The hart must return to the node after the instruction: something
    /// that affects scheduling changed (an interrupt line), the device has
    /// output for the node (a frame for the wire) or a request to serve
    /// (HTIF's exit).
    Yield,
    /// A byte of the program's console output (a UART's transmitter).
    Output(u8),
}

/// A device on the node's bus. Offsets are from the base of the device's
/// window; `cycle` is the accessing hart's core cycle.
pub trait BusDevice {
    /// A load of `size` (1, 2, 4 or 8) bytes at `off`; `None` if nothing
    /// answers there (an access fault for the hart).
    fn mmio_load(&mut self, off: u64, size: u8, cycle: u64) -> Option<u64>;

    /// A store of the low `size` bytes of `value` at `off`; `None` if
    /// nothing answers there. `mem` is memory for DMA.
    fn mmio_store(
        &mut self,
        off: u64,
        size: u8,
        value: u64,
        cycle: u64,
        mem: Dma<'_>,
    ) -> Option<StoreEffect>;

    /// Whether a load at `off` has no side effect (a status register), so
    /// that a loop polling it may sleep until the device changes.
    fn is_status(&self, _off: u64) -> bool {
        false
    }

    /// The aligned 8-byte word at `off` (one [`is_status`](Self::is_status)
    /// accepts) as a side-effect-free load sees it at `cycle`.
    fn peek_status(&self, _off: u64, _cycle: u64) -> u64 {
        0
    }

    /// Time hook: the first cycle after `cycle` at which a status register
    /// changes with no further access (a DMA completing), if any.
    fn next_change_after(&self, _cycle: u64) -> Option<u64> {
        None
    }

    /// The `mip` bits this device drives (0: it raises no interrupt).
    fn interrupt_lines(&self) -> u64 {
        0
    }

    /// Which of its [`interrupt_lines`](Self::interrupt_lines) are raised for
    /// hart `hart` at `cycle`.
    fn interrupts(&self, _hart: usize, _cycle: u64) -> u64 {
        0
    }

    /// Time hook: the cycle at which an interrupt of hart `hart` rises with
    /// no further access (a timer), with its `mip` bit number; `None` if none
    /// is armed.
    fn next_interrupt(&self, _hart: usize) -> Option<(u64, u32)> {
        None
    }
}

/// Every device a node can have. A new device is one more arm here and in
/// the `dispatch!` below.
#[derive(Clone)]
pub enum Device {
    Clint(Clint),
    Uart(Uart),
    Htif(Box<Htif>),
    IceNic(Box<IceNic>),
    /// NEBULA's NIC queues (`nebula_queues.rs`), attached by its NIC design.
    NebulaQueues(Box<NebulaQueues>),
    RdmaDoorbell(Box<RdmaDoorbell>),
}

macro_rules! dispatch {
    ($self:expr, $d:ident => $call:expr) => {
        match $self {
            Device::Clint($d) => $call,
            Device::Uart($d) => $call,
            Device::Htif($d) => $call,
            Device::IceNic($d) => $call,
            Device::NebulaQueues($d) => $call,
            Device::RdmaDoorbell($d) => $call,
        }
    };
}

impl BusDevice for Device {
    fn mmio_load(&mut self, off: u64, size: u8, cycle: u64) -> Option<u64> {
        dispatch!(self, d => d.mmio_load(off, size, cycle))
    }

    fn mmio_store(
        &mut self,
        off: u64,
        size: u8,
        value: u64,
        cycle: u64,
        mem: Dma<'_>,
    ) -> Option<StoreEffect> {
        dispatch!(self, d => d.mmio_store(off, size, value, cycle, mem))
    }

    fn is_status(&self, off: u64) -> bool {
        dispatch!(self, d => d.is_status(off))
    }

    fn peek_status(&self, off: u64, cycle: u64) -> u64 {
        dispatch!(self, d => d.peek_status(off, cycle))
    }

    fn next_change_after(&self, cycle: u64) -> Option<u64> {
        dispatch!(self, d => d.next_change_after(cycle))
    }

    fn interrupt_lines(&self) -> u64 {
        dispatch!(self, d => d.interrupt_lines())
    }

    fn interrupts(&self, hart: usize, cycle: u64) -> u64 {
        dispatch!(self, d => d.interrupts(hart, cycle))
    }

    fn next_interrupt(&self, hart: usize) -> Option<(u64, u32)> {
        dispatch!(self, d => d.next_interrupt(hart))
    }
}

/// A device and the addresses it answers.
#[derive(Clone)]
struct Mapped {
    base: u64,
    size: u64,
    device: Device,
}

/// Why a device cannot be attached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} window [{base:#x}, {end:#x}) overlaps {other}")]
pub struct OverlapError {
    pub name: &'static str,
    pub base: u64,
    pub end: u64,
    pub other: String,
}

/// The devices of a node by address, with typed access to the ones the
/// node itself uses (the interrupt controller, HTIF, the traditional NIC).
#[derive(Clone, Default)]
pub struct DeviceMap {
    mapped: Vec<Mapped>,
    /// The window of HTIF, the one device that lies in DRAM (its `tohost`
    /// word): stores there go to memory, then to the device. `[lo, hi)`;
    /// empty if none.
    ram_window: (u64, u64),
    /// Devices that drive interrupt lines, and the union of those lines.
    irq_sources: Vec<usize>,
    irq_lines: u64,
    clint: Option<usize>,
    htif: Option<usize>,
    icenic: Option<usize>,
    nebula: Option<usize>,
    rdma_doorbell: Option<usize>,
}

impl DeviceMap {
    /// Attaches `device` at `[base, base + size)`; refused if the window
    /// overlaps another device's. HTIF's window is its `tohost` word in
    /// DRAM: stores there reach it after the memory write (loads never do).
    pub fn attach(
        &mut self,
        name: &'static str,
        base: u64,
        size: u64,
        device: Device,
    ) -> Result<(), OverlapError> {
        let end = base.saturating_add(size);
        if let Some(m) = self
            .mapped
            .iter()
            .find(|m| base < m.base + m.size && m.base < end)
        {
            return Err(OverlapError {
                name,
                base,
                end,
                other: format!("a device at [{:#x}, {:#x})", m.base, m.base + m.size),
            });
        }
        let index = self.mapped.len();
        match &device {
            Device::Clint(_) => self.clint = Some(index),
            Device::IceNic(_) => self.icenic = Some(index),
            Device::Htif(_) => {
                self.htif = Some(index);
                self.ram_window = (base, end);
            }
            Device::Uart(_) => {}
            Device::NebulaQueues(_) => self.nebula = Some(index),
            Device::RdmaDoorbell(_) => self.rdma_doorbell = Some(index),
        }
        let lines = device.interrupt_lines();
        if lines != 0 {
            self.irq_sources.push(index);
            self.irq_lines |= lines;
        }
        self.mapped.push(Mapped { base, size, device });
        Ok(())
    }

    /// The device answering `addr` and the offset within its window (HTIF's
    /// window is in DRAM, which callers have ruled out).
    #[inline]
    fn find(&self, addr: u64) -> Option<(usize, u64)> {
        self.mapped
            .iter()
            .position(|m| addr.wrapping_sub(m.base) < m.size)
            .map(|i| (i, addr - self.mapped[i].base))
    }

    /// A hart's load at a non-DRAM address, and whether it read a status
    /// register ([`BusDevice::is_status`]: no effect on the device).
    pub(crate) fn load(&mut self, addr: u64, size: u8, cycle: u64) -> Option<(u64, bool)> {
        let (i, off) = self.find(addr)?;
        let device = &mut self.mapped[i].device;
        let status = device.is_status(off);
        device.mmio_load(off, size, cycle).map(|v| (v, status))
    }

    /// A hart's store at a non-DRAM address.
    pub(crate) fn store(
        &mut self,
        addr: u64,
        size: u8,
        value: u64,
        cycle: u64,
        mem: Dma<'_>,
    ) -> Option<StoreEffect> {
        let (i, off) = self.find(addr)?;
        self.mapped[i]
            .device
            .mmio_store(off, size, value, cycle, mem)
    }

    /// Whether a DRAM store of `size` bytes at `addr` touches a device window.
    #[inline(always)]
    pub(crate) fn ram_window_hit(&self, addr: u64, size: u8) -> bool {
        addr < self.ram_window.1 && addr + size as u64 > self.ram_window.0
    }

    /// See [`BusDevice::is_status`].
    pub(crate) fn is_status(&self, addr: u64) -> bool {
        self.find(addr)
            .is_some_and(|(i, off)| self.mapped[i].device.is_status(off))
    }

    /// See [`BusDevice::peek_status`]; 0 where no device answers.
    pub(crate) fn peek_status(&self, addr: u64, cycle: u64) -> u64 {
        self.find(addr)
            .map_or(0, |(i, off)| self.mapped[i].device.peek_status(off, cycle))
    }

    /// The first cycle after `cycle` at which the device answering `addr`
    /// changes by itself.
    pub(crate) fn next_change_after(&self, addr: u64, cycle: u64) -> Option<u64> {
        let (i, _) = self.find(addr)?;
        self.mapped[i].device.next_change_after(cycle)
    }

    /// The `mip` bits devices drive.
    #[inline]
    pub fn interrupt_lines(&self) -> u64 {
        self.irq_lines
    }

    /// The device interrupts raised for `hart` at `cycle` (within
    /// [`interrupt_lines`](Self::interrupt_lines)).
    #[inline]
    pub fn interrupts(&self, hart: usize, cycle: u64) -> u64 {
        self.irq_sources
            .iter()
            .fold(0, |m, &i| m | self.mapped[i].device.interrupts(hart, cycle))
    }

    /// Every armed device interrupt of `hart`: (cycle, `mip` bit number).
    #[inline]
    pub fn next_interrupts(&self, hart: usize) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.irq_sources
            .iter()
            .filter_map(move |&i| self.mapped[i].device.next_interrupt(hart))
    }

    /// The interrupt controller (timer and software interrupts), if attached.
    pub fn clint(&self) -> Option<&Clint> {
        match &self.mapped.get(self.clint?)?.device {
            Device::Clint(c) => Some(c),
            _ => None,
        }
    }

    /// HTIF host I/O, if the program has a `tohost` word.
    pub fn htif(&self) -> Option<&Htif> {
        match &self.mapped.get(self.htif?)?.device {
            Device::Htif(h) => Some(h),
            _ => None,
        }
    }

    pub fn htif_mut(&mut self) -> Option<&mut Htif> {
        match &mut self.mapped.get_mut(self.htif?)?.device {
            Device::Htif(h) => Some(h),
            _ => None,
        }
    }

    /// A hart's DRAM store that touched HTIF's window (see
    /// [`ram_window_hit`](Self::ram_window_hit)), after the memory write.
    pub(crate) fn ram_store(
        &mut self,
        addr: u64,
        size: u8,
        value: u64,
        cycle: u64,
        mem: Dma<'_>,
    ) -> Option<StoreEffect> {
        let m = &mut self.mapped[self.htif?];
        let off = addr.saturating_sub(m.base);
        m.device.mmio_store(off, size, value, cycle, mem)
    }

    /// The traditional NIC, if attached.
    pub fn icenic(&self) -> Option<&IceNic> {
        match &self.mapped.get(self.icenic?)?.device {
            Device::IceNic(n) => Some(n),
            _ => None,
        }
    }

    pub fn icenic_mut(&mut self) -> Option<&mut IceNic> {
        match &mut self.mapped.get_mut(self.icenic?)?.device {
            Device::IceNic(n) => Some(n),
            _ => None,
        }
    }

    /// NEBULA's NIC queues, if attached.
    pub fn nebula_queues(&self) -> Option<&NebulaQueues> {
        match &self.mapped.get(self.nebula?)?.device {
            Device::NebulaQueues(n) => Some(n),
            _ => None,
        }
    }

    pub fn nebula_queues_mut(&mut self) -> Option<&mut NebulaQueues> {
        match &mut self.mapped.get_mut(self.nebula?)?.device {
            Device::NebulaQueues(n) => Some(n),
            _ => None,
        }
    }
}

impl DeviceMap {
    /// The RDMA NIC's doorbell page, if attached.
    pub fn rdma_doorbell(&self) -> Option<&RdmaDoorbell> {
        match &self.mapped.get(self.rdma_doorbell?)?.device {
            Device::RdmaDoorbell(d) => Some(d),
            _ => None,
        }
    }

    pub fn rdma_doorbell_mut(&mut self) -> Option<&mut RdmaDoorbell> {
        match &mut self.mapped.get_mut(self.rdma_doorbell?)?.device {
            Device::RdmaDoorbell(d) => Some(d),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clint::{CLINT_BASE, CLINT_SIZE};
    use crate::uart::{UART_BASE, UART_SIZE};

    fn map() -> DeviceMap {
        let mut m = DeviceMap::default();
        let clint = Clint::new(2, 3_200_000_000, 1_000_000);
        m.attach("clint", CLINT_BASE, CLINT_SIZE, Device::Clint(clint))
            .unwrap();
        m.attach("uart", UART_BASE, UART_SIZE, Device::Uart(Uart::default()))
            .unwrap();
        m
    }

    #[test]
    fn overlapping_windows_are_refused() {
        let mut m = map();
        let e = m
            .attach(
                "uart2",
                UART_BASE + 0x800,
                0x1000,
                Device::Uart(Uart::default()),
            )
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "uart2 window [0x54000800, 0x54001800) overlaps a device at [0x54000000, 0x54001000)"
        );
    }

    #[test]
    fn accesses_reach_the_device_at_their_offset() {
        let mut m = map();
        // mtime of the CLINT at 1 us = 3200 cycles.
        // Neither is a status register (reads of those count as no access).
        assert_eq!(m.load(CLINT_BASE + 0xbff8, 8, 3200), Some((1, false)));
        // UART's receive register: empty.
        assert_eq!(m.load(UART_BASE + 4, 4, 0), Some((1 << 31, false)));
        assert_eq!(m.load(0x1000, 4, 0), None, "nothing mapped there");
        assert!(!m.is_status(CLINT_BASE + 0xbff8));
        assert!(m.htif().is_none() && m.icenic().is_none());
        assert!(!m.ram_window_hit(0x8000_0000, 8), "no HTIF, no window");
    }

    #[test]
    fn interrupt_lines_come_from_the_clint() {
        let mut m = map();
        let timer = 1 << nanopu_core::trap::irq::MACHINE_TIMER;
        assert_ne!(m.interrupt_lines() & timer, 0);
        assert_eq!(m.next_interrupts(1).count(), 0, "disarmed");
        let mut dram = Dram::new(0x8000_0000, 1 << 20).unwrap();
        let mut system = MemorySystem::new(&crate::NodeConfig::default());
        let mem = Dma {
            dram: &mut dram,
            mem: &mut system,
        };
        // mtimecmp[1] = 2 ticks: 6400 cycles.
        let effect = m.store(CLINT_BASE + 0x4008, 8, 2, 0, mem);
        assert_eq!(effect, Some(StoreEffect::Yield));
        let next: Vec<_> = m.next_interrupts(1).collect();
        assert_eq!(next, [(6400, nanopu_core::trap::irq::MACHINE_TIMER)]);
        assert_eq!(m.interrupts(1, 6399), 0);
        assert_eq!(m.interrupts(1, 6400), timer);
        assert_eq!(m.interrupts(0, 6400), 0);
    }
}
