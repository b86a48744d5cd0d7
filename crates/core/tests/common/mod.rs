//! Flat test memory shared by the core's integration tests: their buses
//! differ only in what they record and how long a refill takes.

use nanopu_core::BusError;

/// `code` (32-bit words) at address 0 of a 256 KB memory.
pub fn memory_with(code: &[u32]) -> Vec<u8> {
    let mut mem = vec![0u8; 0x40000];
    for (i, w) in code.iter().enumerate() {
        mem[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    mem
}

/// A little-endian load of `size` bytes at `addr`.
pub fn load(mem: &[u8], addr: u64, size: u8) -> Result<u64, BusError> {
    let a = addr as usize;
    let bytes = mem.get(a..a + size as usize).ok_or(BusError::Unmapped)?;
    Ok(bytes.iter().rev().fold(0, |v, &b| v << 8 | b as u64))
}

/// A little-endian store of the low `size` bytes of `value` at `addr`.
pub fn store(mem: &mut [u8], addr: u64, size: u8, value: u64) -> Result<(), BusError> {
    let a = addr as usize;
    let bytes = mem
        .get_mut(a..a + size as usize)
        .ok_or(BusError::Unmapped)?;
    bytes.copy_from_slice(&value.to_le_bytes()[..size as usize]);
    Ok(())
}
