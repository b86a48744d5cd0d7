//! The RDMA NIC's doorbell page: the MMIO window through which a program
//! hands work to the RDMA NIC (`[nic] kind = "rdma"`). As on a ConnectX
//! card, the program builds a work-queue element (WQE) in its own memory
//! and rings the doorbell with a store of the WQE's address (HERD §2.2.2:
//! "the driver prepares a WQE in the host's memory and rings a doorbell on
//! the RNIC via Programmed IO"); the NIC then reads the WQE by DMA. The
//! device itself is a mailbox: it keeps each doorbell with the core cycle
//! of the store, and the NIC design (`engine.rs`) takes
//! them, models the PCIe crossing and does the rest.
//!
//! | offset | access | register |
//! |---|---|---|
//! | `0x00` | store 8 B | `DOORBELL`: address of a 64-byte WQE in DRAM |
//! | `0x08` | load 8 B | `ERRORS`: errors the NIC reported (CQ overflow, bad WQE, ...) |
//! | `0x10` | load 8 B | `LAST_ERROR`: the code of the last one (`verbs.h` `VERBS_ERR_*`) |
//! | `0x18` | load 8 B | `DROPPED`: doorbells refused because the queue was full |

use nanopu_node::{BusDevice, Dma, StoreEffect};
use std::collections::VecDeque;

/// Default base: after the IceNIC's window, clear of the prototype's map.
pub const RDMA_DOORBELL_BASE: u64 = 0x1002_0000;
pub const RDMA_DOORBELL_SIZE: u64 = 0x1000;

const DOORBELL: u64 = 0x00;
const ERRORS: u64 = 0x08;
const LAST_ERROR: u64 = 0x10;
const DROPPED: u64 = 0x18;

/// Doorbells not yet taken by the NIC. A real card's doorbell is a posted
/// write that cannot be refused; the bound only keeps a runaway program
/// from growing the simulator's memory, and what it refuses is counted.
pub const DOORBELL_QUEUE_DEPTH: usize = 65_536;

/// The doorbell page.
#[derive(Clone, Debug, Default)]
pub struct RdmaDoorbell {
    pending: VecDeque<(u64, u64)>,
    errors: u64,
    last_error: u64,
    dropped: u64,
    /// Loads and stores at offsets or sizes nothing answers.
    pub bad_accesses: u64,
}

impl RdmaDoorbell {
    /// Whether doorbells wait for the NIC.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The oldest doorbell: (core cycle of the store, WQE address).
    pub fn take(&mut self) -> Option<(u64, u64)> {
        self.pending.pop_front()
    }

    /// The NIC reports an error to the program (`code`: `verbs.h`'s).
    pub fn report_error(&mut self, code: u64) {
        self.errors += 1;
        self.last_error = code;
    }

    pub fn errors(&self) -> u64 {
        self.errors
    }

    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

impl BusDevice for RdmaDoorbell {
    fn mmio_load(&mut self, off: u64, size: u8, _cycle: u64) -> Option<u64> {
        if size != 8 {
            self.bad_accesses += 1;
            return Some(0);
        }
        Some(match off {
            ERRORS => self.errors,
            LAST_ERROR => self.last_error,
            DROPPED => self.dropped,
            _ => {
                self.bad_accesses += 1;
                0
            }
        })
    }

    fn mmio_store(
        &mut self,
        off: u64,
        size: u8,
        value: u64,
        cycle: u64,
        _mem: Dma<'_>,
    ) -> Option<StoreEffect> {
        if off != DOORBELL || size != 8 {
            self.bad_accesses += 1;
            return Some(StoreEffect::Done);
        }
        if self.pending.len() >= DOORBELL_QUEUE_DEPTH {
            self.dropped += 1;
            return Some(StoreEffect::Done);
        }
        self.pending.push_back((cycle, value));
        // The NIC must see the doorbell before time moves on.
        Some(StoreEffect::Yield)
    }

    fn has_output(&self) -> bool {
        self.has_pending()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doorbells_are_kept_in_order_with_their_cycle() {
        let mut d = RdmaDoorbell::default();
        let mut dram = nanopu_node::dram::Dram::new(0x8000_0000, 1 << 20).unwrap();
        let mut mem = nanopu_node::memory::MemorySystem::new(&nanopu_node::NodeConfig::default());
        for (c, v) in [(5, 0x8000_0040), (9, 0x8000_0080)] {
            let dma = Dma {
                dram: &mut dram,
                mem: &mut mem,
            };
            assert_eq!(
                d.mmio_store(DOORBELL, 8, v, c, dma),
                Some(StoreEffect::Yield)
            );
        }
        assert_eq!(d.take(), Some((5, 0x8000_0040)));
        assert_eq!(d.take(), Some((9, 0x8000_0080)));
        assert_eq!(d.take(), None);
        d.report_error(3);
        assert_eq!(d.mmio_load(ERRORS, 8, 0), Some(1));
        assert_eq!(d.mmio_load(LAST_ERROR, 8, 0), Some(3));
        assert_eq!(d.mmio_load(0x20, 8, 0), Some(0));
        assert_eq!(d.bad_accesses, 1);
    }
}
