//! The seam between a node and the devices on its bus, in the spirit of
//! Spike's `abstract_device_t`: [`BusDevice`] (what a device answers), the
//! DMA port a device reaches memory through ([`Dma`]), and [`NicDevice`],
//! the form in which a NIC design attaches its host-side device(s)
//! (`Node::attach_device`). This module names no device and imports none,
//! so that every device can depend on it and nothing here on them.

use crate::dram::Dram;
use std::any::Any;

/// Most line requests a DMA engine may have outstanding (the bound of a
/// device's setting, as `IceNicConfig::dma_outstanding_lines`).
pub const MAX_DMA_OUTSTANDING: usize = 64;

/// The timing side of DMA: the shared L2 (the LLC) and DRAM bandwidth a
/// device's line reads and writes go through. The node's memory system
/// (`memory/system.rs`) implements it; DMA is rare next to the harts'
/// accesses, so a virtual call per transfer costs nothing measurable.
pub trait DmaTiming {
    /// A DMA read of `len` bytes at `addr` issued at core cycle `cycle` with
    /// `outstanding` line requests in flight: the cycle the last line arrives.
    fn dma_read(&mut self, addr: u64, len: u64, cycle: u64, outstanding: usize) -> u64;

    /// A DMA write of `len` bytes at `addr` from core cycle `cycle` (placed
    /// in the LLC per `[node.llc] dma_allocation`): the cycle the last line
    /// is written.
    fn dma_write(&mut self, addr: u64, len: u64, cycle: u64, outstanding: usize) -> u64;
}

/// Where a device reaches memory by DMA (or, for HTIF, reads its requests):
/// the bytes in `dram`, the timing and counters through `mem` (the LLC and
/// DRAM bandwidth).
pub struct Dma<'a> {
    pub dram: &'a mut Dram,
    pub mem: &'a mut dyn DmaTiming,
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

/// Bytes a device wrote into DRAM by DMA behind the harts' backs: the node
/// invalidates the cores' L1 D-cache lines over them and breaks the LR/SC
/// reservations on them (see [`BusDevice::take_dma_written`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaWritten {
    pub addr: u64,
    pub len: u64,
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

    /// Whether the device holds output for its NIC design (a frame for the
    /// wire, a command, a doorbell): the node's run returns after the slice
    /// that made it, so that the design takes it before time moves on.
    fn has_output(&self) -> bool {
        false
    }

    /// With no NIC design taking the device's output (a node run alone),
    /// keep at most `keep` items of it, so that none piles up unbounded.
    fn discard_output_beyond(&mut self, _keep: usize) {}

    /// One range the device wrote into DRAM by DMA since it was last asked
    /// (see [`DmaWritten`]); the node asks after every store that made the
    /// hart yield and after every DMA it lends the device.
    fn take_dma_written(&mut self) -> Option<DmaWritten> {
        None
    }
}

/// A NIC design's host-side device: any [`BusDevice`] that can be copied
/// (`Node::fork`) and sent to another thread. The node keeps it behind one
/// dynamically dispatched arm (`Device::Nic`) and hands it back by type
/// (`Node::device::<T>()`); nothing needs implementing beyond
/// [`BusDevice`] and `Clone`.
pub trait NicDevice: BusDevice + Send + 'static {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn clone_box(&self) -> Box<dyn NicDevice>;
}

impl<T: BusDevice + Clone + Send + 'static> NicDevice for T {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn clone_box(&self) -> Box<dyn NicDevice> {
        Box::new(self.clone())
    }
}

impl Clone for Box<dyn NicDevice> {
    fn clone(&self) -> Self {
        (**self).clone_box()
    }
}
