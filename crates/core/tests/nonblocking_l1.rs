//! The L1 data cache's MSHRs, dirty lines and prefetches, on hand-assembled
//! programs against a memory with a fixed refill latency.

use nanopu_core::{
    Bus, BusError, CoreTimingConfig, DecodeCache, Hart, NetIfConfig, RefillKind, Stop,
};

mod common;

/// Cycles from a refill request until its line arrives.
const LATENCY: u64 = 100;
/// Where the programs' data lives (x5 holds it): far from the code.
const DATA: u64 = 0x10000;

/// A flat memory with a fixed refill latency that records what the core asks.
struct FixedLatencyBus {
    mem: Vec<u8>,
    /// (address, request cycle, kind) of every refill.
    refills: Vec<(u64, u64, RefillKind)>,
    /// (address, cycle) of every write-back.
    writebacks: Vec<(u64, u64)>,
}

impl FixedLatencyBus {
    fn new(code: &[u32]) -> FixedLatencyBus {
        let mem = common::memory_with(code);
        FixedLatencyBus {
            mem,
            refills: Vec::new(),
            writebacks: Vec::new(),
        }
    }

    /// Request cycles of the data refills (loads, stores, prefetches).
    fn data_refills(&self) -> Vec<(u64, u64, RefillKind)> {
        self.refills
            .iter()
            .copied()
            .filter(|r| r.2 != RefillKind::Fetch)
            .collect()
    }
}

impl Bus for FixedLatencyBus {
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

    fn refill(&mut self, _hart: usize, addr: u64, cycle: u64, kind: RefillKind) -> u64 {
        self.refills.push((addr, cycle, kind));
        cycle + LATENCY
    }

    fn writeback(&mut self, _hart: usize, addr: u64, cycle: u64) {
        self.writebacks.push((addr, cycle));
    }

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

// A few RV64I encodings.
fn i_type(op: u32, f3: u32, rd: u32, rs1: u32, imm: i32) -> u32 {
    ((imm as u32 & 0xfff) << 20) | rs1 << 15 | f3 << 12 | rd << 7 | op
}
fn ld(rd: u32, off: i32, rs1: u32) -> u32 {
    i_type(0x03, 3, rd, rs1, off)
}
fn sd(rs2: u32, off: i32, rs1: u32) -> u32 {
    let imm = off as u32 & 0xfff;
    (imm >> 5) << 25 | rs2 << 20 | rs1 << 15 | 3 << 12 | (imm & 0x1f) << 7 | 0x23
}
fn addi(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(0x13, 0, rd, rs1, imm)
}
fn add(rd: u32, rs1: u32, rs2: u32) -> u32 {
    rs2 << 20 | rs1 << 15 | rd << 7 | 0x33
}
fn lui(rd: u32, imm20: u32) -> u32 {
    imm20 << 12 | rd << 7 | 0x37
}
/// `prefetch.r off(rs1)`: ORI x0 with imm[4:0] = 1.
fn prefetch_r(off: i32, rs1: u32) -> u32 {
    i_type(0x13, 6, 0, rs1, (off & !0x1f) | 1)
}
const NOP: u32 = 0x0000_0013;
const WFI: u32 = 0x1050_0073;
const FENCE: u32 = 0x0ff0_000f;

/// x5 = DATA, then `body`, then `wfi`.
fn program(body: &[u32]) -> Vec<u32> {
    let mut p = vec![lui(5, (DATA >> 12) as u32)];
    p.extend_from_slice(body);
    p.push(WFI);
    p
}

/// Runs `body` with `mshrs` MSHRs; returns the hart (stopped at `wfi`) and the bus.
fn run(body: &[u32], mshrs: u32) -> (Hart, FixedLatencyBus) {
    let timing = CoreTimingConfig {
        l1d_mshrs: mshrs,
        ..CoreTimingConfig::default()
    };
    timing.validate().unwrap();
    let mut bus = FixedLatencyBus::new(&program(body));
    let mut dc = DecodeCache::new(1024);
    let mut hart = Hart::new(0, 0, &timing, NetIfConfig::default());
    let stop = hart.run(&mut bus, &mut dc, 1_000_000);
    assert_eq!(stop, Stop::Wfi, "the program runs to its wfi");
    (hart, bus)
}

/// Two loads of different lines, then a use of both.
fn two_misses() -> Vec<u32> {
    vec![ld(6, 0, 5), ld(7, 0x400, 5), add(8, 6, 7)]
}

#[test]
fn two_independent_misses_overlap() {
    let (blocking, b0) = run(&two_misses(), 0);
    let (overlapped, b2) = run(&two_misses(), 2);
    let r = b2.data_refills();
    assert_eq!(r.len(), 2);
    assert!(
        r[1].1 - r[0].1 <= 2,
        "the second miss is sent right after the first: {r:?}"
    );
    let r0 = b0.data_refills();
    assert!(
        r0[1].1 >= r0[0].1 + LATENCY,
        "blocking: one miss at a time: {r0:?}"
    );
    assert!(
        overlapped.cycle() + LATENCY - 5 <= blocking.cycle(),
        "overlapping saves about one refill: {} vs {}",
        overlapped.cycle(),
        blocking.cycle()
    );
}

#[test]
fn a_third_miss_waits_for_a_free_mshr() {
    let body = [ld(6, 0, 5), ld(7, 0x400, 5), ld(8, 0x800, 5), NOP];
    let (_, bus) = run(&body, 2);
    let r = bus.data_refills();
    assert_eq!(r.len(), 3);
    assert_eq!(
        r[2].1,
        r[0].1 + LATENCY,
        "sent when the first MSHR frees: {r:?}"
    );
    let (_, bus) = run(&body, 3);
    let r = bus.data_refills();
    assert!(r[2].1 - r[0].1 <= 4, "three MSHRs: no wait: {r:?}");
}

#[test]
fn a_dependent_use_stalls_until_the_line_arrives() {
    // The use right after the load: as slow as blocking.
    let immediate = [ld(6, 0, 5), addi(7, 6, 1)];
    let (h0, _) = run(&immediate, 0);
    let (h2, bus) = run(&immediate, 2);
    let arrival = bus.data_refills()[0].1 + LATENCY;
    assert!(h2.cycle() > arrival);
    assert_eq!(h2.cycle(), h0.cycle());
    assert_eq!(h2.x(7), 1);
    // Independent work between the load and the use hides under the miss.
    let mut hidden = vec![ld(6, 0, 5)];
    hidden.extend((0..20).map(|k| addi(10 + k % 4, 0, k as i32)));
    hidden.push(addi(7, 6, 1));
    let (h0, _) = run(&hidden, 0);
    let (h2, _) = run(&hidden, 2);
    assert!(
        h0.cycle() - h2.cycle() >= 20,
        "the 20 independent instructions ran under the miss: {} vs {}",
        h0.cycle(),
        h2.cycle()
    );
}

#[test]
fn a_secondary_miss_merges_with_the_line_in_flight() {
    let body = [ld(6, 0, 5), ld(7, 8, 5), add(8, 6, 7)];
    let (h, bus) = run(&body, 2);
    assert_eq!(bus.data_refills().len(), 1, "one refill for the line");
    assert_eq!(h.stats().dcache_misses, 1);
    let (h0, _) = run(&body, 0);
    // Both loads' data is ready when the line arrives (blocking, the second
    // load issues only then and adds its load-to-use latency).
    let load_to_use = CoreTimingConfig::default().load_to_use_cycles as u64;
    assert_eq!(
        h.cycle() + load_to_use,
        h0.cycle(),
        "the second load waits for the same line"
    );
}

#[test]
fn a_store_miss_does_not_stall() {
    let body = [sd(0, 0, 5), addi(6, 0, 1)];
    let (h0, _) = run(&body, 0);
    let (h2, bus) = run(&body, 2);
    assert_eq!(bus.data_refills()[0].2, RefillKind::Store);
    assert!(
        h0.cycle() >= h2.cycle() + LATENCY - 2,
        "{} vs {}",
        h0.cycle(),
        h2.cycle()
    );
    // A fence waits for it.
    let (h2f, _) = run(&[sd(0, 0, 5), FENCE, addi(6, 0, 1)], 2);
    assert!(h2f.cycle() >= h2.cycle() + LATENCY - 2);
}

/// `prefetch` (or a nop in its place), 40 independent instructions, then a
/// load of the prefetched line and its use.
fn prefetch_then_load(prefetch: bool) -> Vec<u32> {
    let mut p = vec![if prefetch { prefetch_r(64, 5) } else { NOP }];
    p.extend((0..40).map(|k| addi(10 + k % 4, 0, k as i32)));
    p.extend([ld(6, 64, 5), addi(7, 6, 1)]);
    p
}

#[test]
fn a_prefetch_makes_a_later_load_cheaper() {
    let (cold, _) = run(&prefetch_then_load(false), 2);
    let (warm, bus) = run(&prefetch_then_load(true), 2);
    let r = bus.data_refills();
    assert_eq!(r.len(), 1, "the load finds the prefetched line: {r:?}");
    assert_eq!((r[0].0, r[0].2), (DATA + 64, RefillKind::Prefetch));
    assert_eq!(warm.stats().prefetches, 1);
    assert!(
        warm.cycle() + 40 <= cold.cycle(),
        "the refill overlapped the 40 instructions: {} vs {}",
        warm.cycle(),
        cold.cycle()
    );
    // Without MSHRs a prefetch is a no-op.
    let (a, bus) = run(&prefetch_then_load(true), 0);
    let (b, _) = run(&prefetch_then_load(false), 0);
    assert_eq!(a.cycle(), b.cycle());
    assert!(bus
        .data_refills()
        .iter()
        .all(|r| r.2 != RefillKind::Prefetch));
}

#[test]
fn a_prefetch_with_every_mshr_busy_is_dropped() {
    let body = [
        ld(6, 0, 5),
        prefetch_r(0x400, 5),
        ld(7, 0x400, 5),
        add(8, 6, 7),
    ];
    let (h, bus) = run(&body, 1);
    assert_eq!(h.stats().prefetches_dropped, 1);
    assert_eq!(h.stats().prefetches, 0);
    let kinds: Vec<_> = bus.data_refills().iter().map(|r| r.2).collect();
    assert_eq!(kinds, [RefillKind::Load, RefillKind::Load]);
}

/// A store to DATA, then loads of four more lines of its set (16 KB, 4
/// ways: a set every 4 KB): the dirty line is evicted.
fn evict_dirty() -> Vec<u32> {
    let mut p = vec![sd(0, 0, 5), lui(9, 1), addi(10, 5, 0)];
    for _ in 0..4 {
        p.extend([add(10, 10, 9), ld(11, 0, 10)]);
    }
    p
}

#[test]
fn evicting_a_dirty_line_writes_it_back() {
    for mshrs in [0, 2] {
        let (h, bus) = run(&evict_dirty(), mshrs);
        assert_eq!(
            bus.writebacks.len(),
            1,
            "{mshrs} MSHRs: {:?}",
            bus.writebacks
        );
        assert_eq!(bus.writebacks[0].0, DATA);
        assert_eq!(h.stats().dcache_writebacks, 1);
        assert!(!h.l1d().contains(DATA));
    }
    // Clean lines are dropped silently.
    let mut clean = evict_dirty();
    clean[0] = ld(12, 0, 5);
    let (_, bus) = run(&clean, 0);
    assert!(bus.writebacks.is_empty());
}

#[test]
fn without_mshrs_every_miss_blocks() {
    let body = [
        ld(6, 0, 5),
        ld(7, 0x400, 5),
        sd(0, 0x800, 5),
        ld(8, 0xc00, 5),
        NOP,
    ];
    let (h, bus) = run(&body, 0);
    let r = bus.data_refills();
    assert_eq!(r.len(), 4);
    for w in r.windows(2) {
        assert!(w[1].1 >= w[0].1 + LATENCY, "one refill at a time: {r:?}");
    }
    // Every refill's latency is on the critical path, nothing more: the
    // same program with the data already cached takes LATENCY less per miss.
    let mut warm = body.to_vec();
    warm.splice(0..0, body[..4].iter().copied());
    let (hw, _) = run(&warm, 0);
    assert_eq!(
        hw.cycle() - h.cycle(),
        4,
        "four more instructions, all hits"
    );
}
