//! A SiFive UART at 0x54000000, as on the Chipyard SoC of the nanoPU
//! prototype, whose start-up code initializes it (`uart_init` writes txctrl
//! and div) and may print through it. Transmitted bytes join the program's
//! output; the receiver is always empty.

use crate::bus_device::{BusDevice, Dma, StoreEffect};

pub const UART_BASE: u64 = 0x5400_0000;
pub const UART_SIZE: u64 = 0x1000;
const TXDATA: u64 = 0x00;
const RXDATA: u64 = 0x04;
const DIV: u64 = 0x18;

/// What a store to the UART did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UartWrite {
    /// A control register changed.
    Register,
    /// A byte to print.
    Transmit(u8),
}

/// Register state of the UART (`txctrl`, `rxctrl`, `ie`, `ip`, `div`).
#[derive(Clone, Debug, Default)]
pub struct Uart {
    regs: [u32; 7],
}

impl Uart {
    /// A load at offset `off`; `None` outside the register window.
    pub fn load(&self, off: u64) -> Option<u64> {
        match off {
            // The transmitter is never full.
            TXDATA => Some(0),
            // bit 31: receive FIFO empty.
            RXDATA => Some(1 << 31),
            o if o <= DIV && o % 4 == 0 => Some(self.regs[(o / 4) as usize] as u64),
            _ => None,
        }
    }

    /// A store at offset `off`; `None` outside the register window.
    pub fn store(&mut self, off: u64, value: u64) -> Option<UartWrite> {
        match off {
            TXDATA => Some(UartWrite::Transmit(value as u8)),
            o if o <= DIV && o % 4 == 0 => {
                self.regs[(o / 4) as usize] = value as u32;
                Some(UartWrite::Register)
            }
            _ => None,
        }
    }
}

impl BusDevice for Uart {
    fn mmio_load(&mut self, off: u64, _size: u8, _cycle: u64) -> Option<u64> {
        self.load(off)
    }

    fn mmio_store(
        &mut self,
        off: u64,
        _size: u8,
        value: u64,
        _cycle: u64,
        _mem: Dma<'_>,
    ) -> Option<StoreEffect> {
        self.store(off, value).map(|w| match w {
            UartWrite::Transmit(byte) => StoreEffect::Output(byte),
            UartWrite::Register => StoreEffect::Done,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers() {
        let mut u = Uart::default();
        assert_eq!(u.store(0x08, 1), Some(UartWrite::Register));
        assert_eq!(u.load(0x08), Some(1));
        assert_eq!(u.store(0, b'x' as u64), Some(UartWrite::Transmit(b'x')));
        assert_eq!(u.store(0x40, 1), None);
        assert_eq!(u.load(0x04), Some(1 << 31));
        assert_eq!(u.load(0x100), None);
    }
}
