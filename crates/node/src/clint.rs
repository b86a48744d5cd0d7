//! The CLINT (core-local interruptor) at 0x2000000: `msip`, `mtimecmp` per
//! hart and the shared `mtime` (SiFive CLINT layout, `nanopu-abi.md`).
//!
//! `mtime` is not stored: it is a function of the reading hart's cycle, so
//! it costs nothing to keep running and is exact at every cycle.

use crate::bus_device::{BusDevice, Dma, StoreEffect};
use nanopu_core::trap::irq;

/// Base address and size of the CLINT's register window.
pub const CLINT_BASE: u64 = 0x200_0000;
pub const CLINT_SIZE: u64 = 0x1_0000;
const MSIP: u64 = 0x0;
const MTIMECMP: u64 = 0x4000;
const MTIME: u64 = 0xbff8;

/// CLINT state of a node.
#[derive(Clone, Debug)]
pub struct Clint {
    pub mtimecmp: Vec<u64>,
    pub msip: Vec<bool>,
    clock_hz: u64,
    mtime_hz: u64,
}

impl Clint {
    pub fn new(harts: usize, clock_hz: u64, mtime_hz: u64) -> Clint {
        Clint {
            mtimecmp: vec![u64::MAX; harts],
            msip: vec![false; harts],
            clock_hz,
            mtime_hz,
        }
    }

    /// `mtime` at core cycle `cycle`.
    #[inline]
    pub fn mtime_at(&self, cycle: u64) -> u64 {
        (cycle as u128 * self.mtime_hz as u128 / self.clock_hz as u128) as u64
    }

    /// The first core cycle at which `mtime >= t`.
    pub fn cycle_of_mtime(&self, t: u64) -> u64 {
        let c = (t as u128 * self.clock_hz as u128).div_ceil(self.mtime_hz as u128);
        c.min(u64::MAX as u128) as u64
    }

    /// Whether hart `h`'s timer interrupt is pending at `cycle`.
    pub fn timer_pending(&self, h: usize, cycle: u64) -> bool {
        // A disarmed timer (the reset value) never fires: skip the division.
        self.mtimecmp[h] != u64::MAX && self.mtime_at(cycle) >= self.mtimecmp[h]
    }

    /// The cycle at which hart `h`'s timer fires (`u64::MAX` if never).
    pub fn timer_cycle(&self, h: usize) -> u64 {
        match self.mtimecmp[h] {
            u64::MAX => u64::MAX,
            t => self.cycle_of_mtime(t),
        }
    }

    /// The 64-bit register containing offset `off`, and that register's offset.
    fn register(&self, off: u64, cycle: u64) -> Option<(u64, u64)> {
        let n = self.msip.len() as u64;
        match off {
            o if o < MSIP + 4 * n => {
                let base = o & !3;
                Some((self.msip[(base / 4) as usize] as u64, base))
            }
            o if (MTIMECMP..MTIMECMP + 8 * n).contains(&o) => {
                let base = o & !7;
                Some((self.mtimecmp[((base - MTIMECMP) / 8) as usize], base))
            }
            o if (MTIME..MTIME + 8).contains(&o) => Some((self.mtime_at(cycle), MTIME)),
            _ => None,
        }
    }

    /// A load at offset `off` by a hart at `cycle`; `None` if unmapped.
    pub fn load(&self, off: u64, size: u8, cycle: u64) -> Option<u64> {
        let (reg, base) = self.register(off, cycle)?;
        let shift = (off - base) * 8;
        let mask = if size == 8 {
            u64::MAX
        } else {
            (1u64 << (size * 8)) - 1
        };
        Some((reg >> shift) & mask)
    }

    /// A store at offset `off`; `None` if unmapped. Writes to `mtime` are
    /// ignored (time is the simulation's, not software's).
    pub fn store(&mut self, off: u64, size: u8, value: u64, cycle: u64) -> Option<()> {
        let (reg, base) = self.register(off, cycle)?;
        let shift = (off - base) * 8;
        let mask = if size == 8 {
            u64::MAX
        } else {
            ((1u64 << (size * 8)) - 1) << shift
        };
        let new = (reg & !mask) | ((value << shift) & mask);
        if base < MTIMECMP {
            self.msip[(base / 4) as usize] = new & 1 != 0;
        } else if base < MTIME {
            self.mtimecmp[((base - MTIMECMP) / 8) as usize] = new;
        }
        Some(())
    }
}

impl BusDevice for Clint {
    fn mmio_load(&mut self, off: u64, size: u8, cycle: u64) -> Option<u64> {
        self.load(off, size, cycle)
    }

    /// Any register change may move a timer or raise a software interrupt:
    /// the node re-reads the lines.
    fn mmio_store(
        &mut self,
        off: u64,
        size: u8,
        value: u64,
        cycle: u64,
        _mem: Dma<'_>,
    ) -> Option<StoreEffect> {
        self.store(off, size, value, cycle)
            .map(|()| StoreEffect::Yield)
    }

    fn interrupt_lines(&self) -> u64 {
        (1 << irq::MACHINE_TIMER) | (1 << irq::MACHINE_SOFTWARE)
    }

    fn interrupts(&self, hart: usize, cycle: u64) -> u64 {
        let timer = self.timer_pending(hart, cycle) as u64;
        let soft = self.msip[hart] as u64;
        timer << irq::MACHINE_TIMER | soft << irq::MACHINE_SOFTWARE
    }

    fn next_interrupt(&self, hart: usize) -> Option<(u64, u32)> {
        match self.timer_cycle(hart) {
            u64::MAX => None,
            c => Some((c, irq::MACHINE_TIMER)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtime_ticks_at_its_own_rate() {
        let c = Clint::new(4, 3_200_000_000, 1_000_000);
        assert_eq!(c.mtime_at(3199), 0);
        assert_eq!(c.mtime_at(3200), 1);
        assert_eq!(c.cycle_of_mtime(5), 16_000);
        assert_eq!(c.load(MTIME, 8, 32_000), Some(10));
    }

    #[test]
    fn mtimecmp_halves_and_timer() {
        let mut c = Clint::new(2, 3_200_000_000, 1_000_000);
        assert_eq!(c.timer_cycle(1), u64::MAX);
        c.store(MTIMECMP + 8, 4, 7, 0).unwrap();
        c.store(MTIMECMP + 12, 4, 0, 0).unwrap();
        assert_eq!(c.mtimecmp[1], 7);
        assert_eq!(c.timer_cycle(1), 7 * 3200);
        assert!(!c.timer_pending(1, 7 * 3200 - 1));
        assert!(c.timer_pending(1, 7 * 3200));
        c.store(4, 4, 1, 0).unwrap();
        assert!(c.msip[1] && !c.msip[0]);
        assert_eq!(c.load(0x20, 4, 0), None);
    }
}
