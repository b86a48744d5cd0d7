//! The nanoPU prototype's changes to the Rocket core (l-nic/rocket-chip
//! lnic-dev 33813784) that the core model follows: LNIC CSR writes do not
//! flush the pipeline (CSR.scala:696-697) and the byte-reversal
//! instructions REVS, REVI, REVL (Instructions.scala:29-31, ALU.scala:96-99).

use nanopu_core::{
    Bus, BusError, CoreTimingConfig, DecodeCache, Hart, NetIfConfig, RefillKind, Stop,
};

mod common;

/// Cycles from a refill request until its line arrives.
const LATENCY: u64 = 100;

/// A flat memory with a fixed refill latency.
struct FlatBus {
    mem: Vec<u8>,
}

impl FlatBus {
    fn new(code: &[u32]) -> FlatBus {
        let mem = common::memory_with(code);
        FlatBus { mem }
    }
}

impl Bus for FlatBus {
    fn load(&mut self, _hart: usize, _cycle: u64, addr: u64, size: u8) -> Result<u64, BusError> {
        common::load(&self.mem, addr, size)
    }

    fn store(
        &mut self,
        _hart: usize,
        _cycle: u64,
        addr: u64,
        size: u8,
        value: u64,
    ) -> Result<(), BusError> {
        common::store(&mut self.mem, addr, size, value)
    }

    fn fetch16(&mut self, addr: u64) -> Result<u16, BusError> {
        Ok(self.load(0, 0, addr, 2)? as u16)
    }

    fn refill(&mut self, _hart: usize, _addr: u64, cycle: u64, _kind: RefillKind) -> u64 {
        cycle + LATENCY
    }

    fn writeback(&mut self, _hart: usize, _addr: u64, _cycle: u64) {}

    fn uncached_cycles(&self, _addr: u64) -> Option<u32> {
        None
    }

    fn reserve(&mut self, _hart: usize, _addr: u64) {}

    fn take_reservation(&mut self, _hart: usize, _addr: u64) -> bool {
        false
    }

    fn mtime_at(&self, cycle: u64) -> u64 {
        cycle
    }
}

fn lui(rd: u32, imm20: u32) -> u32 {
    imm20 << 12 | rd << 7 | 0x37
}
fn addi(rd: u32, rs1: u32, imm: i32) -> u32 {
    ((imm as u32 & 0xfff) << 20) | rs1 << 15 | rd << 7 | 0x13
}
/// An R-type instruction in the OP space.
fn op(f7: u32, f3: u32, rd: u32, rs1: u32, rs2: u32) -> u32 {
    f7 << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | rd << 7 | 0x33
}
/// `csrrw x0, csr, rs1`.
fn csrw(csr: u32, rs1: u32) -> u32 {
    csr << 20 | rs1 << 15 | 1 << 12 | 0x73
}
const NOP: u32 = 0x0000_0013;
const WFI: u32 = 0x1050_0073;
const MTVEC: u32 = 0x305;
const LMSGCYCLES: u32 = 0x060;

/// Runs `body` then `wfi`, resuming after every yield; returns the hart.
fn run(body: &[u32]) -> Hart {
    let mut code = body.to_vec();
    code.push(WFI);
    let timing = CoreTimingConfig::default();
    let mut bus = FlatBus::new(&code);
    let mut dc = DecodeCache::new(1024);
    let mut hart = Hart::new(0, 0, &timing, NetIfConfig::default());
    loop {
        match hart.run(&mut bus, &mut dc, 1_000_000) {
            Stop::Wfi => return hart,
            Stop::Yield => continue,
            other => panic!("unexpected stop {other:?}"),
        }
    }
}

#[test]
fn byte_reversals_swap_the_low_bytes_and_keep_the_rest() {
    // x6 = 0x12345678 with bits above set by sign (0x12345 is positive).
    let h = run(&[
        lui(6, 0x12345),
        addi(6, 6, 0x678),
        op(0x2a, 0, 7, 6, 0),
        op(0x2a, 1, 8, 6, 0),
        op(0x2a, 2, 9, 6, 0),
    ]);
    assert_eq!(h.x(6), 0x1234_5678);
    assert_eq!(h.x(7), 0x1234_7856, "revs: the low halfword");
    assert_eq!(h.x(8), 0x7856_3412, "revi: the low word");
    assert_eq!(h.x(9), 0x7856_3412_0000_0000, "revl: all eight bytes");
}

/// The prototype's Rocket does not flush after LNIC CSR writes
/// (CSR.scala:696-697: `io_dec.write_flush` is false for 0x052..=0x061);
/// other CSR writes flush as on any Rocket. The interrupt such a write can
/// lead to is taken where the scheduler raises it (hts.rs,
/// `REPORT_TO_INTERRUPT_CYCLES`; crates/node/tests/hts.rs).
#[test]
fn lnic_csr_writes_do_not_flush_other_csr_writes_do() {
    const N: u64 = 8;
    let nops = run(&[NOP; N as usize]);
    let lnic = run(&[csrw(LMSGCYCLES, 6); N as usize]);
    let flushing = run(&[csrw(MTVEC, 0); N as usize]);
    let flush = CoreTimingConfig::default().pipeline_flush_cycles as u64;
    assert!(flush > 0);
    assert_eq!(
        flushing.cycle(),
        nops.cycle() + N * flush,
        "a write to mtvec flushes the pipeline"
    );
    assert_eq!(
        lnic.cycle(),
        nops.cycle(),
        "a write to an LNIC CSR issues like a nop (no flush)"
    );
}
