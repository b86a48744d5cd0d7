//! The devices on a node's bus: each answers loads and stores at offsets
//! within its window and, if it has time of its own, says when it next
//! changes or raises an interrupt ([`BusDevice`], `bus_device.rs`). The node
//! keeps them in a [`DeviceMap`], looked up only for addresses that are not
//! DRAM, so memory accesses never see the map.
//!
//! The node's own devices (CLINT, UART, HTIF) are dispatched by `match` on
//! [`Device`], no virtual call on the way to a timer or the console; a NIC
//! design's host-side devices sit behind one dynamically dispatched arm,
//! [`Device::Nic`], attached by the design (`Node::attach_device`) and
//! found again by type (`Node::device::<T>()`). See `docs/devices.md`.

pub use crate::bus_device::{BusDevice, Dma, DmaWritten, NicDevice, StoreEffect};
use crate::clint::Clint;
use crate::htif::Htif;
use crate::uart::Uart;

/// Every device a node can have: the node's own, statically dispatched
/// (they are on the path of timers, interrupts and console output), and a
/// NIC design's, behind one virtual call (see the module documentation).
#[derive(Clone)]
pub enum Device {
    Clint(Clint),
    Uart(Uart),
    Htif(Box<Htif>),
    /// A NIC design's host-side device (the IceNIC's registers, the RDMA
    /// NIC's doorbell page, NEBULA's queues), attached by the design.
    Nic(Box<dyn NicDevice>),
}

impl Device {
    /// The name `docs/devices.md` lists the node's own devices under (the
    /// NIC designs' devices are listed under the names they attach with).
    pub const OWN: [&'static str; 3] = ["clint", "uart", "htif"];
}

macro_rules! dispatch {
    ($self:expr, $d:ident => $call:expr) => {
        match $self {
            Device::Clint($d) => $call,
            Device::Uart($d) => $call,
            Device::Htif($d) => $call,
            Device::Nic($d) => $call,
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

    fn has_output(&self) -> bool {
        dispatch!(self, d => d.has_output())
    }

    fn discard_output_beyond(&mut self, keep: usize) {
        dispatch!(self, d => d.discard_output_beyond(keep))
    }

    fn take_dma_written(&mut self) -> Option<DmaWritten> {
        dispatch!(self, d => d.take_dma_written())
    }
}

/// A device and the addresses it answers.
#[derive(Clone)]
struct Mapped {
    name: &'static str,
    base: u64,
    size: u64,
    device: Device,
}

/// Why a device cannot be attached: its window (named by the
/// `[node.devices]` key that moves it) overlaps DRAM or another device's, or
/// runs past the end of the address space.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("devices.{name} = {base:#x}: the window [{base:#x}, {end:#x}) {other}")]
pub struct OverlapError {
    pub name: &'static str,
    pub base: u64,
    pub end: u64,
    pub other: String,
}

/// The devices of a node by address, with typed access to the ones the
/// node itself uses (the interrupt controller, HTIF) and to the NIC
/// designs' by type ([`DeviceMap::device`]).
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
    /// The NIC designs' devices ([`Device::Nic`]), in attachment order.
    nics: Vec<usize>,
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
        let err = |end: u64, other: String| OverlapError {
            name,
            base,
            end,
            other,
        };
        let Some(end) = base.checked_add(size) else {
            return Err(err(
                u64::MAX,
                "runs past the end of the address space".into(),
            ));
        };
        if let Some(m) = self
            .mapped
            .iter()
            .find(|m| base < m.base + m.size && m.base < end)
        {
            return Err(err(end, format!("overlaps devices.{}'s", m.name)));
        }
        let index = self.mapped.len();
        match &device {
            Device::Clint(_) => self.clint = Some(index),
            Device::Htif(_) => {
                self.htif = Some(index);
                self.ram_window = (base, end);
            }
            Device::Uart(_) => {}
            Device::Nic(_) => self.nics.push(index),
        }
        let lines = device.interrupt_lines();
        if lines != 0 {
            self.irq_sources.push(index);
            self.irq_lines |= lines;
        }
        self.mapped.push(Mapped {
            name,
            base,
            size,
            device,
        });
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

    /// The NIC device of type `T` a NIC design attached, if any.
    pub fn device<T: 'static>(&self) -> Option<&T> {
        self.nics
            .iter()
            .find_map(|&i| match &self.mapped[i].device {
                Device::Nic(d) => d.as_any().downcast_ref(),
                _ => None,
            })
    }

    /// See [`device`](Self::device).
    pub fn device_mut<T: 'static>(&mut self) -> Option<&mut T> {
        let i = *self.nics.iter().find(|&&i| match &self.mapped[i].device {
            Device::Nic(d) => d.as_any().is::<T>(),
            _ => false,
        })?;
        match &mut self.mapped[i].device {
            Device::Nic(d) => d.as_any_mut().downcast_mut(),
            _ => None,
        }
    }

    /// Whether a NIC device holds output for its design
    /// ([`BusDevice::has_output`]).
    #[inline]
    pub fn nic_output(&self) -> bool {
        self.nics
            .iter()
            .any(|&i| self.mapped[i].device.has_output())
    }

    /// With no NIC design attached: every NIC device keeps at most `keep`
    /// items of output ([`BusDevice::discard_output_beyond`]).
    #[inline]
    pub(crate) fn discard_nic_output_beyond(&mut self, keep: usize) {
        for &i in &self.nics {
            self.mapped[i].device.discard_output_beyond(keep);
        }
    }

    /// One range a NIC device wrote by DMA since it was last asked
    /// ([`BusDevice::take_dma_written`]).
    #[inline]
    pub(crate) fn take_dma_written(&mut self) -> Option<DmaWritten> {
        for &i in &self.nics {
            if let Some(w) = self.mapped[i].device.take_dma_written() {
                return Some(w);
            }
        }
        None
    }

    /// The names the devices were attached under, in attachment order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.mapped.iter().map(|m| m.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clint::{CLINT_BASE, CLINT_SIZE};
    use crate::dram::Dram;

    /// DMA timing that answers at once (the devices here do no DMA).
    struct NoTiming;

    impl crate::bus_device::DmaTiming for NoTiming {
        fn dma_read(&mut self, _: u64, _: u64, cycle: u64, _: usize) -> u64 {
            cycle
        }

        fn dma_write(&mut self, _: u64, _: u64, cycle: u64, _: usize) -> u64 {
            cycle
        }
    }
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
            "devices.uart2 = 0x54000800: the window [0x54000800, 0x54001800) overlaps devices.uart's"
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
        assert!(m.htif().is_none() && m.device::<Uart>().is_none());
        assert!(!m.ram_window_hit(0x8000_0000, 8), "no HTIF, no window");
    }

    #[test]
    fn interrupt_lines_come_from_the_clint() {
        let mut m = map();
        let timer = 1 << nanopu_core::trap::irq::MACHINE_TIMER;
        assert_ne!(m.interrupt_lines() & timer, 0);
        assert_eq!(m.next_interrupts(1).count(), 0, "disarmed");
        let mut dram = Dram::new(0x8000_0000, 1 << 20).unwrap();
        let mem = Dma {
            dram: &mut dram,
            mem: &mut NoTiming,
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
