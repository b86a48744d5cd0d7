//! The hart's view of the rest of the machine: memory, devices and the
//! shared cache levels below its L1s.
//!
//! The hart is generic over [`Bus`], so calls are static and inline (the
//! node's DRAM fast path costs a bounds check, not a virtual call).

/// Why a memory access did not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusError {
    /// Nothing is mapped at the address (an access fault for the hart).
    Unmapped,
    /// The access completed, and the hart must return to the node after
    /// this instruction (HTIF served a request, a CLINT register changed).
    Yield,
}

/// Why a core asks the memory system for a line (counters, and policies
/// such as whether a prefetch may be dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefillKind {
    /// Instruction fetch (L1I miss).
    Fetch,
    /// Data load or AMO (L1D miss).
    Load,
    /// Store miss (write-allocate: the line is fetched for ownership).
    Store,
    /// Software prefetch (`prefetch.r`/`.w`/`.i`): a hint.
    Prefetch,
}

/// Memory and devices as seen from one hart.
pub trait Bus {
    /// Loads `size` (1, 2, 4 or 8) bytes at `addr`, little-endian,
    /// zero-extended, for `hart` at core cycle `cycle`. Misaligned addresses
    /// are allowed.
    fn load(&mut self, hart: usize, cycle: u64, addr: u64, size: u8) -> Result<u64, BusError>;

    /// Stores the low `size` bytes of `value` at `addr`.
    fn store(
        &mut self,
        hart: usize,
        cycle: u64,
        addr: u64,
        size: u8,
        value: u64,
    ) -> Result<(), BusError>;

    /// A load from plain memory: `Some(value)` (as [`load`](Self::load)
    /// would return it) when all of `[addr, addr + size)` is cacheable
    /// memory whose reads have no side effects and do not depend on the
    /// cycle; `None` otherwise (a device, unmapped), with nothing done. The
    /// hart's fast path: one range check for the cache model and the data.
    /// Default: never (every access takes the general path).
    #[inline(always)]
    fn load_ram(&mut self, _addr: u64, _size: u8) -> Option<u64> {
        None
    }

    /// A store to plain memory: when all of `[addr, addr + size)` is
    /// cacheable memory whose writes have no effect beyond the write itself
    /// (and breaking other harts' reservations) and do not depend on the
    /// cycle, stores like [`store`](Self::store) and returns true;
    /// otherwise returns false with nothing done. Default: never.
    #[inline(always)]
    fn store_ram(&mut self, _hart: usize, _addr: u64, _size: u8, _value: u64) -> bool {
        false
    }

    /// Reads 16 bits of instruction memory at `addr`.
    fn fetch16(&mut self, addr: u64) -> Result<u16, BusError>;

    /// Requests the L1 line holding `addr` from the levels below (shared
    /// last-level cache, then DRAM) at core cycle `cycle`, updating their
    /// state; returns the core cycle at which the line arrives in the L1.
    /// Taking the request time (not returning a fixed latency) lets the
    /// memory system model queueing and bandwidth.
    fn refill(&mut self, hart: usize, addr: u64, cycle: u64, kind: RefillKind) -> u64;

    /// A dirty L1 line holding `addr` was evicted at `cycle` and is written
    /// back to the levels below. Off the core's critical path (Rocket drains
    /// write-backs through a buffer), so it returns nothing. Default: free.
    fn writeback(&mut self, _hart: usize, _addr: u64, _cycle: u64) {}

    /// `None` for cacheable memory; for a device register, the core cycles
    /// an uncached access to it takes.
    fn uncached_cycles(&self, addr: u64) -> Option<u32>;

    /// Whether a load from device register `addr` has no side effect (a
    /// status register), so that a loop polling it may sleep until the
    /// device changes. Default: none is.
    fn pure_device_read(&self, _addr: u64) -> bool {
        false
    }

    /// Registers an LR reservation of `hart` on the aligned word at `addr`.
    fn reserve(&mut self, hart: usize, addr: u64);

    /// Whether `hart` still holds a reservation on `addr` (none of the other
    /// harts stored to it since); clears the reservation either way.
    fn take_reservation(&mut self, hart: usize, addr: u64) -> bool;

    /// The CLINT's `mtime` at core cycle `cycle` (for the `time` CSR).
    fn mtime_at(&self, cycle: u64) -> u64;
}
