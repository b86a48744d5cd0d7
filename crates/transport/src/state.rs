//! Stateful primitives of the ingress and egress PISA pipelines
//! (NanoTransport §3.2, after Sivaraman et al., "Packet Transactions",
//! SIGCOMM'16).
//!
//! State lives in register arrays, read and written by read-modify-write
//! atoms exposed to the P4 programmer as externs:
//! - RW: read or write a state variable ([`Register::read`],
//!   [`Register::write`]);
//! - RAW: add a value to, or overwrite, a state variable ([`Register::raw`]);
//! - PRAW: RAW only if a predicate holds ([`Register::praw`]);
//! - ifElseRAW: one RAW if the predicate holds, another if not
//!   ([`Register::if_else_raw`]), e.g. NDP's per-message credit (Algorithm 4).
//!
//! Homa also needs state shared between the ingress and egress pipelines
//! (message priorities written by GRANTs on ingress, read by data packets on
//! egress, Algorithm 5): the [`DualPortMemory`].
//!
//! Assumptions where the paper is silent:
//! - An index is taken modulo the array size, so no access can fault. With a
//!   power-of-two size (as hardware memories have) that is the low bits of
//!   the index, which is what the hardware uses.
//! - A size of zero is a bug in the transport program and panics in `new`.
//! - Registers start at `T::default()` (zero).
//! - Additions wrap around, as a fixed-width hardware adder does.
//! - Each atom completes in one access: the value returned is the one after
//!   the update (NDP reads the new credit to build its PULL, Algorithm 4).

/// A value a register can hold: fixed width, zero by default, with a
/// wrapping addition (the adder of the RAW atom).
pub trait RegisterValue: Copy + Default + PartialEq + PartialOrd + std::fmt::Debug {
    /// `self + other`, wrapping on overflow.
    fn add(self, other: Self) -> Self;
}

macro_rules! wrapping_register_value {
    ($($t:ty),*) => {$(
        impl RegisterValue for $t {
            fn add(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
        }
    )*};
}

wrapping_register_value!(u8, u16, u32, u64, i8, i16, i32, i64);

/// The update of a RAW atom.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RawOp<T> {
    /// Add to the stored value (wrapping).
    Add(T),
    /// Overwrite the stored value.
    Set(T),
}

impl<T: RegisterValue> RawOp<T> {
    /// The value after applying this update to `old`.
    pub fn apply(self, old: T) -> T {
        match self {
            RawOp::Add(v) => old.add(v),
            RawOp::Set(v) => v,
        }
    }
}

/// A register array of fixed size, zero initialised, accessed through the
/// stateful atoms of NT §3.2. Indexes are taken modulo the size.
#[derive(Clone, Debug, PartialEq)]
pub struct Register<T: RegisterValue> {
    /// Registers `0..cells.len()`; the rest (never written) hold
    /// `T::default()`. Grown on first write, so an idle host's arrays cost
    /// nothing.
    cells: Vec<T>,
    size: usize,
}

impl<T: RegisterValue> Register<T> {
    /// An array of `size` registers, all `T::default()`.
    ///
    /// # Panics
    /// If `size` is zero (a bug in the transport program).
    pub fn new(size: usize) -> Self {
        assert!(size > 0, "a register array needs at least one register");
        Register {
            cells: Vec::new(),
            size,
        }
    }

    /// Number of registers.
    pub fn len(&self) -> usize {
        self.size
    }

    /// Always false: an array has at least one register.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    fn slot(&self, i: usize) -> usize {
        i % self.size
    }

    /// The cell of register `i` (already reduced), created on first use.
    fn cell(&mut self, i: usize) -> &mut T {
        if i >= self.cells.len() {
            self.cells.resize(i + 1, T::default());
        }
        &mut self.cells[i]
    }

    /// RW: the value of register `i` (modulo the size).
    pub fn read(&self, i: usize) -> T {
        self.cells.get(self.slot(i)).copied().unwrap_or_default()
    }

    /// RW: sets register `i` (modulo the size) to `v`.
    pub fn write(&mut self, i: usize, v: T) {
        let i = self.slot(i);
        *self.cell(i) = v;
    }

    /// RAW: applies `op` to register `i` (modulo the size); returns the new
    /// value.
    pub fn raw(&mut self, i: usize, op: RawOp<T>) -> T {
        let i = self.slot(i);
        let c = self.cell(i);
        let v = op.apply(*c);
        *c = v;
        v
    }

    /// PRAW: applies `op` to register `i` (modulo the size) if `pred` holds,
    /// else leaves it unchanged; returns the value after.
    pub fn praw(&mut self, i: usize, pred: bool, op: RawOp<T>) -> T {
        if pred {
            self.raw(i, op)
        } else {
            self.read(i)
        }
    }

    /// ifElseRAW: applies `if_true` to register `i` (modulo the size) if
    /// `pred` holds, else `if_false`; returns the value after.
    pub fn if_else_raw(
        &mut self,
        i: usize,
        pred: bool,
        if_true: RawOp<T>,
        if_false: RawOp<T>,
    ) -> T {
        self.raw(i, if pred { if_true } else { if_false })
    }

    /// All registers, for inspection and reports.
    pub fn to_vec(&self) -> Vec<T> {
        let mut v = self.cells.clone();
        v.resize(self.size, T::default());
        v
    }
}

/// A memory both pipelines (ingress and egress) read and write (NT §3.2:
/// Homa shares message priorities between them, Algorithm 5).
///
/// Dual-ported means two accesses per cycle, one from each pipeline, to any
/// two entries, so neither pipeline stalls the other. The simulator has no
/// notion of ports: it serialises the accesses in event order (same-time
/// events in insertion order), which is one of the orders the hardware
/// could produce when both ports touch the same entry in the same cycle.
/// Operations, indexing (modulo the size) and initial values are those of
/// [`Register`].
#[derive(Clone, Debug, PartialEq)]
pub struct DualPortMemory<T: RegisterValue> {
    mem: Register<T>,
}

impl<T: RegisterValue> DualPortMemory<T> {
    /// A memory of `size` entries, all `T::default()`.
    ///
    /// # Panics
    /// If `size` is zero (a bug in the transport program).
    pub fn new(size: usize) -> Self {
        DualPortMemory {
            mem: Register::new(size),
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.mem.len()
    }

    /// Always false: a memory has at least one entry.
    pub fn is_empty(&self) -> bool {
        self.mem.is_empty()
    }

    /// RW: the value of entry `i` (modulo the size).
    pub fn read(&self, i: usize) -> T {
        self.mem.read(i)
    }

    /// RW: sets entry `i` (modulo the size) to `v`.
    pub fn write(&mut self, i: usize, v: T) {
        self.mem.write(i, v)
    }

    /// RAW on entry `i` (modulo the size); returns the new value.
    pub fn raw(&mut self, i: usize, op: RawOp<T>) -> T {
        self.mem.raw(i, op)
    }

    /// PRAW on entry `i` (modulo the size); returns the value after.
    pub fn praw(&mut self, i: usize, pred: bool, op: RawOp<T>) -> T {
        self.mem.praw(i, pred, op)
    }

    /// ifElseRAW on entry `i` (modulo the size); returns the value after.
    pub fn if_else_raw(
        &mut self,
        i: usize,
        pred: bool,
        if_true: RawOp<T>,
        if_false: RawOp<T>,
    ) -> T {
        self.mem.if_else_raw(i, pred, if_true, if_false)
    }

    /// All entries, for inspection and reports.
    pub fn to_vec(&self) -> Vec<T> {
        self.mem.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_start_at_zero() {
        let r: Register<u32> = Register::new(8);
        assert_eq!(r.len(), 8);
        assert!(!r.is_empty());
        assert!(r.to_vec().iter().all(|&v| v == 0));
        let m: DualPortMemory<i64> = DualPortMemory::new(3);
        assert_eq!(m.len(), 3);
        assert!(m.to_vec().iter().all(|&v| v == 0));
    }

    #[test]
    fn rw_reads_and_writes() {
        let mut r: Register<u16> = Register::new(4);
        r.write(2, 77);
        assert_eq!(r.read(2), 77);
        assert_eq!(r.read(1), 0);
        r.write(2, 5);
        assert_eq!(r.read(2), 5);
    }

    #[test]
    fn indexes_wrap_modulo_the_size() {
        let mut r: Register<u8> = Register::new(4);
        r.write(6, 9); // low bits: 6 & 3 = 2
        assert_eq!(r.read(2), 9);
        assert_eq!(r.read(usize::MAX), r.read(3));
        assert_eq!(r.raw(10, RawOp::Add(1)), 10);
        let mut odd: Register<u8> = Register::new(3);
        odd.write(7, 1);
        assert_eq!(odd.to_vec(), &[0, 1, 0]);
    }

    #[test]
    fn raw_adds_or_sets_and_returns_the_new_value() {
        let mut r: Register<u32> = Register::new(2);
        assert_eq!(r.raw(0, RawOp::Add(3)), 3);
        assert_eq!(r.raw(0, RawOp::Add(4)), 7);
        assert_eq!(r.raw(0, RawOp::Set(100)), 100);
        assert_eq!(r.read(0), 100);
        assert_eq!(r.read(1), 0);
    }

    #[test]
    fn raw_addition_wraps() {
        let mut r: Register<u8> = Register::new(1);
        r.write(0, 250);
        assert_eq!(r.raw(0, RawOp::Add(10)), 4);
        let mut s: Register<i32> = Register::new(1);
        assert_eq!(s.raw(0, RawOp::Add(-1)), -1);
        s.write(0, i32::MAX);
        assert_eq!(s.raw(0, RawOp::Add(1)), i32::MIN);
        // Subtraction is the addition of a two's complement.
        let mut u: Register<u64> = Register::new(1);
        u.write(0, 10);
        assert_eq!(u.raw(0, RawOp::Add(3u64.wrapping_neg())), 7);
    }

    #[test]
    fn praw_updates_only_when_the_predicate_holds() {
        let mut r: Register<u32> = Register::new(2);
        assert_eq!(r.praw(1, false, RawOp::Set(9)), 0);
        assert_eq!(r.read(1), 0);
        assert_eq!(r.praw(1, true, RawOp::Set(9)), 9);
        assert_eq!(r.praw(1, true, RawOp::Add(1)), 10);
        assert_eq!(r.praw(1, false, RawOp::Add(1)), 10);
        assert_eq!(r.read(1), 10);
    }

    #[test]
    fn if_else_raw_is_ndp_credit() {
        // NDP Algorithm 4: a new message initialises its credit, later
        // packets add pull_offset_diff (1 for data, 0 for a trimmed header).
        let mut credit: Register<u32> = Register::new(16);
        let pkt = |credit: &mut Register<u32>, id, new_msg, diff| {
            credit.if_else_raw(id, new_msg, RawOp::Set(8), RawOp::Add(diff))
        };
        assert_eq!(pkt(&mut credit, 3, true, 1), 8);
        assert_eq!(pkt(&mut credit, 3, false, 1), 9);
        assert_eq!(pkt(&mut credit, 3, false, 0), 9);
        assert_eq!(pkt(&mut credit, 3, false, 1), 10);
        assert_eq!(pkt(&mut credit, 3, true, 1), 8);
        assert_eq!(credit.read(4), 0);
    }

    #[test]
    fn dual_port_memory_shares_state_between_pipelines() {
        // Homa Algorithm 5: ingress writes a GRANT's priority, egress reads it.
        let mut prio: DualPortMemory<u8> = DualPortMemory::new(8);
        prio.write(5, 3); // ingress: GRANT for tx message 5
        assert_eq!(prio.read(5), 3); // egress: data packet of message 5
        assert_eq!(prio.read(13), 3); // modulo the size
        assert_eq!(prio.raw(5, RawOp::Add(1)), 4);
        assert_eq!(prio.praw(5, false, RawOp::Set(0)), 4);
        assert_eq!(prio.praw(5, true, RawOp::Set(0)), 0);
        assert_eq!(prio.if_else_raw(1, false, RawOp::Set(7), RawOp::Add(2)), 2);
        assert_eq!(prio.if_else_raw(1, true, RawOp::Set(7), RawOp::Add(2)), 7);
        assert_eq!(prio.to_vec(), &[0, 7, 0, 0, 0, 0, 0, 0]);
        assert!(!prio.is_empty());
    }

    #[test]
    fn a_user_type_can_be_a_register_value() {
        #[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
        struct MsgState {
            remaining: u32,
            granted: u32,
        }
        impl RegisterValue for MsgState {
            fn add(self, o: Self) -> Self {
                MsgState {
                    remaining: self.remaining.wrapping_add(o.remaining),
                    granted: self.granted.wrapping_add(o.granted),
                }
            }
        }
        let mut m: DualPortMemory<MsgState> = DualPortMemory::new(4);
        let init = MsgState {
            remaining: 10,
            granted: 2,
        };
        assert_eq!(m.raw(0, RawOp::Set(init)), init);
        let after = m.raw(
            0,
            RawOp::Add(MsgState {
                remaining: u32::MAX,
                granted: 0,
            }),
        );
        assert_eq!(after.remaining, 9);
    }

    #[test]
    #[should_panic(expected = "at least one register")]
    fn size_zero_is_rejected() {
        let _: Register<u32> = Register::new(0);
    }

    #[test]
    #[should_panic(expected = "at least one register")]
    fn dual_port_size_zero_is_rejected() {
        let _: DualPortMemory<u32> = DualPortMemory::new(0);
    }
}
