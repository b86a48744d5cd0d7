//! A hart: architectural state, the run loop, traps and idle detection.
//!
//! The run loop fetches from the shared [`DecodeCache`], times the
//! instruction with the [`Pipeline`] scoreboard, executes it (`exec.rs`) and
//! retires it. Anything unusual (a trap, netRX/netTX access, a CSR write
//! that may enable an interrupt, a detected idle loop) leaves the fast path
//! through an [`Event`].

use crate::bus::{Bus, RefillKind};
use crate::csr::{mstatus, MachineCsrs, Privilege};
use crate::debug::{BusPeek, Observer, TextTrace};
use crate::decode_cache::{DecodeCache, Decoded, READS_NETRX, SELF_LOOP, WRITES_NETTX};
use crate::netif::{NetIf, NetIfConfig, TxError};
use crate::timing::{
    BranchPredictor, Cache, CoreModel, CoreTimingConfig, Lookup, MshrFile, OooCore, Pipeline,
};
use crate::trap::{irq, Exception, GuestFault, Trap, INTERRUPT_BIT};
use nanopu_isa::decode;

/// Why [`Hart::run`] returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The cycle limit was reached.
    Limit,
    /// `wfi` with no interrupt pending: asleep until one is.
    Wfi,
    /// An idle loop: every `period_cycles` the hart is back at this pc with
    /// the same state, having retired `period_instret` instructions and
    /// changed nothing outside itself. It will keep doing so until an
    /// interrupt or a change in `lmsgsrdy` (see [`Hart::skip_idle_iterations`]).
    Poll {
        period_cycles: u64,
        period_instret: u64,
    },
    /// Reading netRX with an empty RX FIFO: stalled until a word arrives.
    RxEmpty,
    /// Writing netTX with a full TX FIFO: stalled until the NIC drains it.
    TxFull,
    /// The hart must return to the node after the instruction: HTIF
    /// served a request, a CLINT register changed, or the NIC has something
    /// to take (a complete message or a command).
    Yield,
    /// A trap the guest cannot handle.
    Fault(GuestFault),
    /// The observer of [`Hart::run_observed`] stopped the hart before the
    /// instruction at its pc (a breakpoint, a completed single step).
    Break,
}

/// Leaves the fast path of the run loop.
pub(crate) enum Event {
    /// Take this exception (pc still at the faulting instruction).
    Trap(Trap),
    /// Stop running (pc at the next instruction unless the stop says otherwise).
    Stop(Stop),
    /// The instruction retired; re-check interrupts before the next one.
    CheckInterrupts,
    /// The instruction retired; flush the instruction caches (`fence.i`).
    FenceI,
    /// A taken backward branch after polling `lmsgsrdy` (or a jump to self):
    /// check whether the hart is in an idle loop.
    LoopBack,
    /// The instruction retired; nothing to do but what the run loop checks
    /// after every event (the thread scheduler's deadlines).
    Retired,
    /// A load retired whose line is still in flight (non-blocking L1D): its
    /// destination becomes ready at [`Hart::load_arrival`].
    LoadPending,
    /// A guard of a block went the other way than its trace (the block
    /// engine's, see `block.rs`): the block ends after the branch, nothing
    /// else to do.
    GuardExit,
}

impl Event {
    /// Whether the instruction that raised the event retired.
    pub(crate) fn retires(&self) -> bool {
        !matches!(
            self,
            Event::Trap(_) | Event::Stop(Stop::RxEmpty) | Event::Stop(Stop::TxFull)
        )
    }
}

/// Statistics of one hart.
#[derive(Clone, Debug, Default)]
pub struct HartStats {
    pub traps: u64,
    pub interrupts: u64,
    pub icache_misses: u64,
    pub dcache_misses: u64,
    /// Dirty L1D lines evicted (handed to `Bus::writeback`).
    pub dcache_writebacks: u64,
    /// Prefetches that took an MSHR, and those dropped because none was free.
    pub prefetches: u64,
    pub prefetches_dropped: u64,
    /// Cycles skipped while idle (wfi, polling loops, stalls on netRX/netTX).
    pub idle_cycles: u64,
    /// Instructions retired by skipped iterations of polling loops
    /// ([`Hart::skip_idle_iterations`]): counted in minstret, never
    /// executed one by one (speed figures leave them out).
    pub idle_instret: u64,
    /// Thread switches through the scheduler interrupt: taken, and the
    /// cycles from taking it to the handler's `mret` having refetched (the
    /// target thread's first instruction can issue), summed and at most.
    pub ctx_switches: u64,
    pub ctx_switch_cycles: u64,
    pub ctx_switch_max_cycles: u64,
}

/// State at the head of a suspected idle loop.
#[derive(Clone)]
struct PollSnapshot {
    pc: u64,
    x: [u64; 32],
    f: [u64; 32],
    fcsr: u16,
    effects: u64,
    cycle: u64,
    instret: u64,
    period: Option<(u64, u64)>,
}

/// One RV64GC hart with the nanoPU register-file network interface.
#[derive(Clone)]
pub struct Hart {
    pub(crate) id: usize,
    pub(crate) x: [u64; 32],
    pub(crate) f: [u64; 32],
    pub(crate) pc: u64,
    pub(crate) privilege: Privilege,
    pub(crate) csr: MachineCsrs,
    /// The core cycle at which the next instruction can issue.
    pub(crate) cycle: u64,
    /// Instructions retired.
    pub(crate) instret: u64,
    /// mcycle = cycle + offset (software may write mcycle).
    pub(crate) mcycle_offset: u64,
    /// minstret = instret + offset.
    pub(crate) minstret_offset: u64,
    pub(crate) pipeline: Pipeline,
    pub(crate) predictor: BranchPredictor,
    pub(crate) l1i: Cache,
    pub(crate) l1d: Cache,
    /// The L1D's miss status holding registers (none: a blocking cache).
    pub(crate) mshrs: MshrFile,
    /// Arrival cycle of the line the executing load waits for (non-blocking
    /// L1D), 0 if none: the run loop makes it the load's ready time.
    pub(crate) load_arrival: u64,
    /// Line address of the last instruction fetch (the L1I is consulted only
    /// when fetch moves to another line).
    pub(crate) last_fetch_line: u64,
    /// The core's local RX/TX queues and LNIC CSR state.
    pub(crate) net: NetIf,
    /// Counts accesses with effects outside the hart (memory, devices, NIC,
    /// time-varying CSRs): an idle loop performs none.
    pub(crate) effects: u64,
    /// `lmsgsrdy` read as zero (or a device status register read) since the
    /// last taken backward branch, or a probe for a spin loop on memory is
    /// under way: check the loop at the next one.
    pub(crate) polled_empty: bool,
    /// At the first taken backward branch at or after this cycle, probe for
    /// a spin loop on memory (a few iterations are compared).
    pub(crate) next_probe: u64,
    probe_left: u8,
    /// What the loop iteration under scrutiny loaded: its inputs (the
    /// aligned 8-byte words), at most [`MAX_WATCHED`]; `watch_overflow` if more.
    watched: [u64; MAX_WATCHED],
    /// What the iteration read from each watched word when it is memory
    /// (`None` for a device register, which the node reads as of the
    /// iteration's start): a DMA write between the load and the stop (a run
    /// may end mid-iteration) must still wake the loop.
    watched_seen: [Option<u64>; MAX_WATCHED],
    watch_len: u8,
    pub(crate) watch_overflow: bool,
    pub(crate) watching: bool,
    /// `watching && !watch_overflow`: loads are noted as inputs (one flag
    /// for the block engine's load path to test).
    pub(crate) loads_watched: bool,
    poll: Option<Box<PollSnapshot>>,
    /// Cycle at which a scheduler interrupt being handled was taken.
    ctx_switch_from: Option<u64>,
    /// Exceptions taken in a row at the same pc with the same cause and no
    /// `mret` in between: a handler that faults before it can return.
    trap_storm: TrapStorm,
    /// The least bound the thread scheduler put on a run's limit since
    /// [`begin_slice`](Self::begin_slice): a slice run in pieces must end
    /// where one run would have.
    hts_bound_in_slice: u64,
    pub(crate) stats: HartStats,
    /// The out-of-order window (`timing/ooo/`), if the core uses that
    /// model; `None`: the in-order pipeline.
    pub(crate) ooo: Option<Box<OooCore>>,
}

/// Nested exceptions with the same pc and cause, none returned from
/// (counted on the trap path only: nothing in the hot loop).
#[derive(Clone, Copy, Default)]
struct TrapStorm {
    pc: u64,
    cause: Option<Exception>,
    count: u32,
}

/// Loads a spin loop may make per iteration and still be put to sleep.
pub const MAX_WATCHED: usize = 8;

/// Cycles between probes for spin loops on memory: a loop is found within
/// this many cycles (plus three iterations) of starting to spin; a probe
/// costs a few register-file comparisons.
pub const PROBE_INTERVAL_CYCLES: u64 = 8192;

/// Nested exceptions at one pc with one cause, without an `mret`, that make
/// a trap storm: the handler faults on every entry and never returns (a
/// stack that overflowed into the handler's, say). Software that handles
/// its traps returns from them; none nests this deep at one instruction.
pub const TRAP_STORM_NESTING: u32 = 256;

impl Hart {
    pub fn new(id: usize, entry: u64, timing: &CoreTimingConfig, net: NetIfConfig) -> Hart {
        Hart {
            id,
            x: [0; 32],
            f: [0; 32],
            pc: entry,
            privilege: Privilege::Machine,
            csr: MachineCsrs::default(),
            cycle: 0,
            instret: 0,
            mcycle_offset: 0,
            minstret_offset: 0,
            pipeline: Pipeline::new(timing),
            predictor: BranchPredictor::new(
                timing.bht_entries,
                timing.ras_entries,
                timing.btb_entries,
            ),
            l1i: Cache::new(&timing.l1i),
            l1d: Cache::new(&timing.l1d),
            mshrs: MshrFile::new(timing.l1d_mshrs),
            load_arrival: 0,
            last_fetch_line: u64::MAX,
            net: NetIf::new(net),
            effects: 0,
            polled_empty: false,
            next_probe: PROBE_INTERVAL_CYCLES,
            probe_left: 0,
            watched: [0; MAX_WATCHED],
            watched_seen: [None; MAX_WATCHED],
            watch_len: 0,
            watch_overflow: false,
            watching: false,
            loads_watched: false,
            poll: None,
            ctx_switch_from: None,
            trap_storm: TrapStorm::default(),
            hts_bound_in_slice: u64::MAX,
            stats: HartStats::default(),
            ooo: (timing.model == CoreModel::OutOfOrder).then(|| Box::new(OooCore::new(timing))),
        }
    }

    /// Starts a slice that the caller may run in several pieces (several
    /// calls of [`run`](Self::run) with increasing limits, to look at a
    /// Ctrl-C flag between them, say): see [`slice_bound`](Self::slice_bound).
    pub fn begin_slice(&mut self) {
        self.hts_bound_in_slice = u64::MAX;
    }

    /// The cycle at which one run to `end` since
    /// [`begin_slice`](Self::begin_slice) would have stopped for a limit:
    /// `end`, or earlier where a CSR write moved the thread scheduler's
    /// deadline (a run lowers its own limit then, and forgets it when it
    /// returns). Running on to this bound in pieces ends where one run ends.
    pub fn slice_bound(&self, end: u64) -> u64 {
        end.min(self.hts_bound_in_slice)
    }

    /// Runs until cycle `limit` or until something stops the hart, a basic
    /// block at a time (`block.rs`).
    pub fn run<B: Bus>(&mut self, bus: &mut B, dc: &mut DecodeCache, limit: u64) -> Stop {
        if self.ooo.is_some() {
            self.run_ooo(bus, dc, limit, &mut crate::ooo_run::Unobserved)
        } else if self.mshrs.count() == 0 {
            self.run_blocks::<B, false>(bus, dc, limit)
        } else {
            self.run_blocks::<B, true>(bus, dc, limit)
        }
    }

    /// Like [`run`](Self::run), writing one line per executed instruction to
    /// `trace`: hart, cycle, pc, encoding, disassembly, and the value written
    /// to the destination register.
    pub fn run_traced<B: Bus>(
        &mut self,
        bus: &mut B,
        dc: &mut DecodeCache,
        limit: u64,
        trace: &mut dyn std::io::Write,
    ) -> Stop {
        if self.ooo.is_some() {
            return self.run_ooo(bus, dc, limit, &mut TextTrace::new(trace));
        }
        self.run_loop(bus, dc, limit, &mut TextTrace::new(trace))
    }

    /// Like [`run`](Self::run), calling `observer` before and after every
    /// instruction; it may stop the hart ([`Stop::Break`]).
    pub fn run_observed<B: Bus>(
        &mut self,
        bus: &mut B,
        dc: &mut DecodeCache,
        limit: u64,
        observer: &mut dyn Observer,
    ) -> Stop {
        if self.ooo.is_some() {
            return self.run_ooo(bus, dc, limit, observer);
        }
        self.run_loop(bus, dc, limit, observer)
    }

    /// The per-instruction run loop: the reference the block engine
    /// (`block.rs`, [`run`](Self::run)) must match cycle for cycle, used by
    /// observers and traces. It takes the non-blocking L1D's path whatever
    /// the cache: that is exact for both (with no MSHRs nothing is ever in
    /// flight).
    fn run_loop<B: Bus>(
        &mut self,
        bus: &mut B,
        dc: &mut DecodeCache,
        mut limit: u64,
        observer: &mut dyn Observer,
    ) -> Stop {
        if let Some(stop) = self.take_pending_interrupt() {
            return stop;
        }
        while self.cycle < limit {
            let d = match dc.get(self.pc, bus) {
                Ok(d) => d,
                Err(addr) => {
                    let t = Trap::new(Exception::InstructionAccessFault, addr);
                    match self.take_trap(t, None) {
                        Ok(()) => continue,
                        Err(stop) => return stop,
                    }
                }
            };
            if observer.before(self, d) {
                return Stop::Break;
            }
            self.fetch_timing(bus);
            let issue = self.pipeline.issue_cycle(&d.timing, self.cycle);
            self.cycle = issue + 1;
            let pc = self.pc;
            let result = if d.flags == 0 {
                self.execute::<B, true>(&d.inst, bus)
            } else {
                self.execute_flagged::<B, true>(d, bus)
            };
            self.x[0] = 0;
            let retired = result.as_ref().map_or_else(Event::retires, |_| true);
            let mut mem = BusPeek {
                bus: &mut *bus,
                hart: self.id,
                cycle: self.cycle,
            };
            observer.after(self, issue, pc, d, retired, &mut mem);
            match result {
                Ok(()) => {
                    self.pipeline.complete(&d.timing, issue);
                    self.instret += 1;
                }
                Err(event) => {
                    // A copy: the event may invalidate the decode cache.
                    let d = *d;
                    if let Some(stop) = self.handle_event(event, &d, issue, dc) {
                        return stop;
                    }
                    if self.net.hts.dirty {
                        // A CSR write moved the thread scheduler's deadlines:
                        // end the slice where its interrupt would become pending.
                        limit = limit.min(self.hts_slice_bound());
                    }
                }
            }
        }
        Stop::Limit
    }

    #[cold]
    pub(crate) fn trace_line(
        &self,
        out: &mut dyn std::io::Write,
        issue: u64,
        pc: u64,
        d: &Decoded,
        ok: bool,
    ) {
        let raw = if d.inst.len == 2 {
            format!("    {:04x}", d.inst.raw)
        } else {
            format!("{:08x}", d.inst.raw)
        };
        let dst = d.timing.dst;
        let value = match dst {
            1..=31 => format!(" {}={:#x}", nanopu_isa::reg_name(dst), self.x[dst as usize]),
            32..=63 => format!(" f{}={:#x}", dst - 32, self.f[dst as usize - 32]),
            _ => String::new(),
        };
        let note = if ok { "" } else { " (did not retire)" };
        let _ = writeln!(
            out,
            "{} {issue} {pc:#x} {raw} {}{value}{note}",
            self.id, d.inst
        );
    }

    #[inline(always)]
    pub(crate) fn fetch_timing<B: Bus>(&mut self, bus: &mut B) {
        let line = self.l1i.line_of(self.pc);
        if line != self.last_fetch_line {
            self.last_fetch_line = line;
            if !self.l1i.access(self.pc) {
                self.stats.icache_misses += 1;
                self.cycle = bus.refill(self.id, self.pc, self.cycle, RefillKind::Fetch);
            }
        }
    }

    /// The data-cache side of a store at `addr`.
    #[inline(always)]
    pub(crate) fn dcache_store<B: Bus, const NB: bool>(&mut self, bus: &mut B, addr: u64) {
        self.effects += 1;
        if let Some(cycles) = bus.uncached_cycles(addr) {
            // A device register: no cache, the whole round trip stalls.
            self.cycle += cycles as u64;
            return;
        }
        // A store hit, also to a line in flight (merged into its MSHR), does
        // not stall.
        if let Lookup::Miss { dirty_victim } = self.l1d.access_data(addr, true) {
            self.dcache_miss::<B, NB>(bus, addr, dirty_victim, RefillKind::Store);
        }
    }

    /// The data-cache side of an AMO, LR or SC at `addr`: outstanding
    /// misses drain first, then the access blocks (`timing/mod.rs`).
    pub(crate) fn dcache_amo<B: Bus>(&mut self, bus: &mut B, addr: u64) {
        self.effects += 1;
        if let Some(cycles) = bus.uncached_cycles(addr) {
            self.cycle += cycles as u64;
            return;
        }
        self.drain_misses();
        match self.l1d.access_data(addr, true) {
            Lookup::Hit => {}
            Lookup::Miss { dirty_victim } => {
                self.stats.dcache_misses += 1;
                self.write_back(bus, dirty_victim);
                // Blocking, as the whole cache is with 0 MSHRs; the kind is
                // `Store`: the line is fetched for ownership.
                self.cycle = bus.refill(self.id, addr, self.cycle, RefillKind::Store);
            }
        }
    }

    /// Waits until every outstanding L1D miss has arrived (`fence`, AMOs).
    #[inline]
    pub(crate) fn drain_misses(&mut self) {
        self.cycle = self.cycle.max(self.mshrs.busy_until());
    }

    /// The data-cache side of a load at `addr`: like [`dcache_store`] but a
    /// load is no outside effect; what a loop under scrutiny loads is noted
    /// as its input, and a status-register read makes the hart check its loop.
    #[inline(always)]
    pub(crate) fn dcache_load<B: Bus, const NB: bool>(&mut self, bus: &mut B, addr: u64, size: u8) {
        if let Some(cycles) = bus.uncached_cycles(addr) {
            self.cycle += cycles as u64;
            if bus.pure_device_read(addr) {
                self.polled_empty = true;
                self.watch(addr, size, None);
            } else {
                self.effects += 1;
            }
            return;
        }
        // Once the iteration's inputs overflowed, more change nothing (and
        // between probes a loop may stay watched for thousands of loads).
        if self.loads_watched {
            let word = addr & !7;
            let seen = bus.load(self.id, self.cycle, word, 8).ok();
            self.watch(addr, size, seen);
        }
        match self.l1d.access_data(addr, false) {
            Lookup::Hit => {
                // Never true without MSHRs (nothing is ever in flight).
                if NB && self.cycle < self.mshrs.busy_until() {
                    self.load_hit_in_flight(addr);
                }
            }
            Lookup::Miss { dirty_victim } => {
                self.dcache_miss::<B, NB>(bus, addr, dirty_victim, RefillKind::Load)
            }
        }
    }

    /// A load that found its line's tag: if the line is still in flight
    /// (a secondary miss), the load waits for it, merged into its MSHR.
    #[cold]
    pub(crate) fn load_hit_in_flight(&mut self, addr: u64) {
        if let Some(arrival) = self.mshrs.in_flight(self.l1d.line_of(addr), self.cycle) {
            self.load_arrival = arrival;
        }
    }

    /// An L1D miss of a load or store at `addr`: blocking without MSHRs;
    /// otherwise the refill is tracked by an MSHR (stalling only while all
    /// are busy) and a load's result waits for it ([`Event::LoadPending`]).
    #[inline(never)]
    pub(crate) fn dcache_miss<B: Bus, const NB: bool>(
        &mut self,
        bus: &mut B,
        addr: u64,
        dirty_victim: Option<u64>,
        kind: RefillKind,
    ) {
        self.stats.dcache_misses += 1;
        self.write_back(bus, dirty_victim);
        if !NB || self.mshrs.count() == 0 {
            // A miss blocks the pipeline for the refill (timing/mod.rs).
            self.cycle = bus.refill(self.id, addr, self.cycle, kind);
            return;
        }
        let line = self.l1d.line_of(addr);
        // The tag may have been evicted and re-allocated while in flight.
        let arrival = match self.mshrs.in_flight(line, self.cycle) {
            Some(arrival) => arrival,
            None => {
                let slot = match self.mshrs.free_at(self.cycle) {
                    Some(slot) => slot,
                    None => {
                        let (slot, free) = self.mshrs.earliest_free(self.cycle);
                        self.cycle = free; // structural stall: every MSHR busy
                        slot
                    }
                };
                let arrival = bus.refill(self.id, addr, self.cycle, kind);
                self.mshrs.fill(slot, line, arrival);
                arrival
            }
        };
        if kind == RefillKind::Load {
            self.load_arrival = arrival;
        }
    }

    /// A Zicbop prefetch of the line holding `addr` into the L1D: a hint.
    /// It takes a free MSHR if the line is neither present nor in flight,
    /// and is dropped if none is free; without MSHRs it does nothing.
    pub(crate) fn prefetch<B: Bus>(&mut self, bus: &mut B, addr: u64) {
        if self.mshrs.count() == 0 || bus.uncached_cycles(addr).is_some() || self.l1d.contains(addr)
        {
            return;
        }
        let Some(slot) = self.mshrs.free_at(self.cycle) else {
            self.stats.prefetches_dropped += 1;
            return;
        };
        self.stats.prefetches += 1;
        if let Lookup::Miss { dirty_victim } = self.l1d.access_data(addr, false) {
            self.write_back(bus, dirty_victim);
        }
        let arrival = bus.refill(self.id, addr, self.cycle, RefillKind::Prefetch);
        self.mshrs.fill(slot, self.l1d.line_of(addr), arrival);
    }

    /// Hands a dirty line the L1D evicted to the levels below.
    #[inline]
    fn write_back<B: Bus>(&mut self, bus: &mut B, dirty_victim: Option<u64>) {
        if let Some(victim) = dirty_victim {
            self.stats.dcache_writebacks += 1;
            bus.writeback(self.id, victim, self.cycle);
        }
    }

    #[cold]
    fn watch(&mut self, addr: u64, size: u8, seen: Option<u64>) {
        let word = addr & !7;
        if (addr + size as u64 - 1) & !7 != word {
            self.watch_overflow = true; // straddles two words
            self.loads_watched = false;
            return;
        }
        let n = self.watch_len as usize;
        if self.watched[..n].contains(&word) {
            return;
        }
        if n == MAX_WATCHED {
            self.watch_overflow = true;
            self.loads_watched = false;
        } else {
            self.watched[n] = word;
            self.watched_seen[n] = seen;
            self.watch_len += 1;
        }
    }

    /// The aligned 8-byte words (memory or device registers) the idle loop
    /// the hart stopped in (with [`Stop::Poll`]) reads: it sleeps until one
    /// of them changes, besides interrupts and messages.
    pub fn watched(&self) -> &[u64] {
        &self.watched[..self.watch_len as usize]
    }

    /// For each of [`watched`](Self::watched): the value the loop read, if
    /// the word is memory (`None` for a device register).
    pub fn watched_seen(&self) -> &[Option<u64>] {
        &self.watched_seen[..self.watch_len as usize]
    }

    /// Executes an instruction that touches netRX/netTX or is a jump to self.
    ///
    /// x30 is netRX only while the running context is registered (it then
    /// has an RX FIFO); otherwise it is an ordinary register, so programs that
    /// never receive (the ISA test suite) run unchanged. x31 always sends
    /// (see `netif.rs`).
    pub(crate) fn execute_flagged<B: Bus, const NB: bool>(
        &mut self,
        d: &Decoded,
        bus: &mut B,
    ) -> Result<(), Event> {
        let rx = d.flags & READS_NETRX != 0 && self.net.rx_active();
        let tx = d.flags & WRITES_NETTX != 0;
        if rx {
            match self.net.rx_peek(self.cycle) {
                Some(word) => self.x[30] = word,
                None => return Err(Event::Stop(Stop::RxEmpty)),
            }
        }
        if tx && self.net.tx_check(0) == Err(TxError::Full) {
            return Err(Event::Stop(Stop::TxFull));
        }
        let pc = self.pc;
        let mut result = self.execute::<B, NB>(&d.inst, bus);
        if matches!(result, Err(Event::LoadPending)) {
            // A load into netTX (`ld x31`): the word is sent when it is
            // loaded, so this load waits for its line.
            self.cycle = self.cycle.max(std::mem::take(&mut self.load_arrival));
            result = Ok(());
        }
        let mut yield_after = false;
        if (rx || tx) && result.is_ok() {
            if tx {
                let word = self.x[31];
                match self.net.tx_check(word) {
                    Ok(()) => {
                        if self.net.tx_commit(word, self.cycle) {
                            // A whole message for the NIC: let the node hand it over.
                            yield_after = true;
                        }
                    }
                    Err(TxError::Full) => unreachable!("checked before execution"),
                    Err(TxError::TooLarge) => {
                        self.pc = pc;
                        return Err(Event::Trap(Trap::new(
                            Exception::NetTxMessageTooLarge,
                            word,
                        )));
                    }
                }
            }
            if rx {
                self.net.rx_commit(self.cycle);
                if self.net.hts.dirty && !yield_after {
                    // The read started the message timer: end the slice at
                    // the demotion (see `run_loop`).
                    self.effects += 1;
                    return Err(Event::Retired);
                }
            }
            self.effects += 1;
        }
        if d.flags & SELF_LOOP != 0 && result.is_ok() && self.pc == pc {
            return Err(Event::LoopBack);
        }
        if yield_after && result.is_ok() {
            return Err(Event::Stop(Stop::Yield));
        }
        result
    }

    /// Handles an event from `execute`. Returns a stop to leave the loop.
    #[cold]
    pub(crate) fn handle_event(
        &mut self,
        event: Event,
        d: &Decoded,
        issue: u64,
        dc: &mut DecodeCache,
    ) -> Option<Stop> {
        let retire = |h: &mut Hart| {
            h.pipeline.complete(&d.timing, issue);
            h.instret += 1;
        };
        match event {
            Event::Trap(t) => self.take_trap(t, Some(&d.inst)).err(),
            Event::Stop(Stop::Yield) | Event::Stop(Stop::Wfi) => {
                retire(self);
                let stop = match event {
                    Event::Stop(s) => s,
                    _ => unreachable!(),
                };
                Some(stop)
            }
            Event::Stop(stop) => {
                // RxEmpty / TxFull: the instruction did not execute; it is
                // retried when the hart wakes. Undo the issue-slot cycle.
                self.cycle = issue;
                Some(stop)
            }
            Event::CheckInterrupts => {
                retire(self);
                self.cycle += self.pipeline.flush_cycles as u64;
                if d.inst.op == nanopu_isa::Opcode::Mret {
                    self.trap_storm.count = 0;
                    if let Some(from) = self.ctx_switch_from.take() {
                        let c = self.cycle - from;
                        self.stats.ctx_switches += 1;
                        self.stats.ctx_switch_cycles += c;
                        self.stats.ctx_switch_max_cycles = self.stats.ctx_switch_max_cycles.max(c);
                    }
                }
                self.take_pending_interrupt()
            }
            Event::FenceI => {
                retire(self);
                dc.invalidate();
                self.l1i.invalidate_all();
                self.last_fetch_line = u64::MAX;
                self.cycle += self.pipeline.flush_cycles as u64;
                None
            }
            // (The block engine ends the block itself at a `GuardExit`.)
            Event::Retired | Event::GuardExit => {
                retire(self);
                None
            }
            Event::LoadPending => {
                retire(self);
                let dst = d.timing.dst as usize;
                let ready = &mut self.pipeline.ready[dst];
                *ready = (*ready).max(std::mem::take(&mut self.load_arrival));
                None
            }
            Event::LoopBack => {
                retire(self);
                if self.cycle >= self.next_probe {
                    self.next_probe = self.cycle + PROBE_INTERVAL_CYCLES;
                    self.probe_left = 4;
                }
                let polled = self.polled_empty;
                self.polled_empty = self.probe_left > 0;
                self.probe_left = self.probe_left.saturating_sub(1);
                let stop = self.check_idle_loop();
                // The next iteration's loads are its inputs, if it is checked.
                self.watching = polled || self.polled_empty;
                if stop.is_none() {
                    self.watch_len = 0;
                    self.watch_overflow = false;
                }
                self.loads_watched = self.watching && !self.watch_overflow;
                stop
            }
        }
    }

    /// Takes the highest-priority enabled pending interrupt, if any.
    /// Returns a stop only if taking it is fatal.
    pub fn take_pending_interrupt(&mut self) -> Option<Stop> {
        if self.net.hts.in_use() {
            self.sync_hts();
        }
        let cause = self.pending_interrupt()?;
        self.stats.interrupts += 1;
        if cause == irq::THREAD_SCHEDULER {
            self.net.hts.stats.interrupts_taken += 1;
            self.net
                .hts
                .note(self.cycle, crate::hts::HtsNote::InterruptTaken);
            // The interrupt is taken at the cycle it became pending (the
            // node ends slices there): the switch latency starts now.
            self.ctx_switch_from = Some(self.cycle);
        }
        self.enter_trap(INTERRUPT_BIT | cause as u64, 0, true);
        None
    }

    /// Brings the thread scheduler to the current cycle and sets mip bit 16
    /// from its decision (`hts.rs`).
    pub fn sync_hts(&mut self) {
        let bit = 1u64 << irq::THREAD_SCHEDULER;
        if self.net.hts_pending(self.cycle) {
            self.csr.mip |= bit;
        } else {
            self.csr.mip &= !bit;
        }
    }

    /// The next cycle at which the thread scheduler's interrupt becomes
    /// pending if software does nothing (a message arriving, the message
    /// timer demoting the running context, the idle timeout), while it is
    /// enabled in `mie`; the node ends the hart's slice there.
    pub fn next_hts_event_cycle(&self) -> Option<u64> {
        if self.csr.mie & (1 << irq::THREAD_SCHEDULER) == 0 {
            return None;
        }
        self.net.hts_next_interrupt(self.cycle)
    }

    /// The cycle at which to end the current slice for the thread scheduler.
    #[cold]
    pub(crate) fn hts_slice_bound(&mut self) -> u64 {
        self.net.hts.dirty = false;
        let bound = self.next_hts_event_cycle().unwrap_or(u64::MAX);
        self.hts_bound_in_slice = self.hts_bound_in_slice.min(bound);
        bound
    }

    /// The interrupt that would be taken now, if any (mip as last
    /// synchronised: see [`sync_hts`](Self::sync_hts)).
    pub fn pending_interrupt(&self) -> Option<u32> {
        let pending = self.csr.mip & self.csr.mie;
        if pending == 0 {
            return None;
        }
        if !self.interrupts_enabled() {
            return None;
        }
        irq::PRIORITY.into_iter().find(|&i| pending & (1 << i) != 0)
    }

    /// Whether interrupts are globally enabled (always in U-mode).
    pub fn interrupts_enabled(&self) -> bool {
        self.privilege == Privilege::User || self.csr.mstatus & mstatus::MIE != 0
    }

    /// Whether an interrupt is pending and enabled in `mie` (what wakes `wfi`,
    /// whatever `mstatus.MIE` says).
    pub fn interrupt_waiting(&mut self) -> bool {
        if self.net.hts.in_use() {
            self.sync_hts();
        }
        self.csr.mip & self.csr.mie != 0
    }

    /// Takes an exception raised by the instruction at `self.pc`.
    pub(crate) fn take_trap(
        &mut self,
        t: Trap,
        inst: Option<&nanopu_isa::Inst>,
    ) -> Result<(), Stop> {
        let handler = self.csr.mtvec & !3;
        let storm = &mut self.trap_storm;
        if storm.count > 0 && storm.pc == self.pc && storm.cause == Some(t.cause) {
            storm.count += 1;
        } else {
            *storm = TrapStorm {
                pc: self.pc,
                cause: Some(t.cause),
                count: 1,
            };
        }
        let fatal = if self.csr.mtvec == 0 {
            Some("no trap handler installed (mtvec is 0)")
        } else if self.pc == handler {
            Some("the trap handler itself faults")
        } else if storm.count >= TRAP_STORM_NESTING {
            Some("trap storm: the trap handler faults here on every entry and never returns (256 nested traps without mret)")
        } else {
            None
        };
        if let Some(reason) = fatal {
            let instruction = match inst {
                Some(i) => format!("{i}"),
                None if t.cause == Exception::InstructionAccessFault => "<unreadable>".into(),
                None => "<unknown>".into(),
            };
            return Err(Stop::Fault(GuestFault {
                hart: self.id,
                pc: self.pc,
                instruction,
                cause: t.cause,
                tval: t.tval,
                reason,
            }));
        }
        self.stats.traps += 1;
        self.enter_trap(t.cause.code(), t.tval, false);
        Ok(())
    }

    /// The trap-entry state change (privileged spec, "Machine Trap Handling").
    fn enter_trap(&mut self, cause: u64, tval: u64, interrupt: bool) {
        let s = self.csr.mstatus;
        let mpie = if s & mstatus::MIE != 0 {
            mstatus::MPIE
        } else {
            0
        };
        let mpp = (self.privilege as u64) << 11;
        self.csr.mstatus = (s & !(mstatus::MIE | mstatus::MPIE | mstatus::MPP)) | mpie | mpp;
        self.csr.mepc = self.pc;
        self.csr.mcause = cause;
        self.csr.mtval = tval;
        self.privilege = Privilege::Machine;
        let base = self.csr.mtvec & !3;
        let vectored = self.csr.mtvec & 3 == 1;
        self.pc = if interrupt && vectored {
            base + 4 * (cause & !INTERRUPT_BIT)
        } else {
            base
        };
        self.cycle += self.pipeline.flush_cycles as u64;
        self.poll = None;
        self.watching = false;
        self.loads_watched = false;
    }

    /// At the head of a loop that polled `lmsgsrdy` (or a jump to self):
    /// compares the state with the previous visit. Two equal iterations in a
    /// row with no outside effects and the same duration make it an idle loop.
    fn check_idle_loop(&mut self) -> Option<Stop> {
        let fcsr = ((self.csr.frm as u16) << 5) | self.csr.fflags as u16;
        if let Some(s) = self.poll.as_deref_mut() {
            let same = s.pc == self.pc
                && s.effects == self.effects
                && s.fcsr == fcsr
                && s.x == self.x
                && s.f == self.f;
            if same {
                let period = (self.cycle - s.cycle, self.instret - s.instret);
                s.cycle = self.cycle;
                s.instret = self.instret;
                // Every input of the iteration must be known (`watched`).
                let inputs_known = !self.watch_overflow;
                if s.period == Some(period) && period.0 > 0 && inputs_known {
                    return Some(Stop::Poll {
                        period_cycles: period.0,
                        period_instret: period.1,
                    });
                }
                s.period = Some(period);
                return None;
            }
        }
        let snapshot = PollSnapshot {
            pc: self.pc,
            x: self.x,
            f: self.f,
            fcsr,
            effects: self.effects,
            cycle: self.cycle,
            instret: self.instret,
            period: None,
        };
        match self.poll.as_deref_mut() {
            Some(s) => *s = snapshot,
            None => self.poll = Some(Box::new(snapshot)),
        }
        None
    }

    /// Advances an idle hart (stopped with [`Stop::Poll`]) by `iterations`
    /// iterations of its loop: exactly the cycles and instructions it would
    /// have spent, with no change of state.
    pub fn skip_idle_iterations(
        &mut self,
        period_cycles: u64,
        period_instret: u64,
        iterations: u64,
    ) {
        let cycles = period_cycles * iterations;
        self.cycle += cycles;
        self.instret += period_instret * iterations;
        self.stats.idle_cycles += cycles;
        self.stats.idle_instret += period_instret * iterations;
        if let Some(s) = self.poll.as_deref_mut() {
            s.cycle = self.cycle;
            s.instret = self.instret;
        }
        if let Some(o) = self.ooo.as_deref_mut() {
            o.shift(cycles);
        }
    }

    /// Advances a hart that is stalled (wfi, netRX/netTX) to `cycle`.
    pub fn stall_until(&mut self, cycle: u64) {
        if cycle > self.cycle {
            self.stats.idle_cycles += cycle - self.cycle;
            self.cycle = cycle;
        }
    }

    /// Disassembles the instruction at the current pc (for error messages).
    pub fn describe_pc<B: Bus>(&self, bus: &mut B) -> String {
        match bus.fetch16(self.pc) {
            Ok(lo) if lo & 3 != 3 => format!("{}", decode(lo as u32)),
            Ok(lo) => match bus.fetch16(self.pc + 2) {
                Ok(hi) => format!("{}", decode(lo as u32 | (hi as u32) << 16)),
                Err(_) => "<unreadable>".into(),
            },
            Err(_) => "<unreadable>".into(),
        }
    }

    /// The hart's number (`mhartid`).
    pub fn id(&self) -> usize {
        self.id
    }

    /// The pc of the next instruction.
    pub fn pc(&self) -> u64 {
        self.pc
    }

    /// Sets the pc (a program's entry point, before the hart runs).
    pub fn set_pc(&mut self, pc: u64) {
        self.pc = pc;
    }

    /// Integer register `r` (0..32).
    pub fn x(&self, r: usize) -> u64 {
        self.x[r]
    }

    /// The integer registers.
    pub fn xregs(&self) -> &[u64; 32] {
        &self.x
    }

    /// The floating-point registers (raw bits).
    pub fn fregs(&self) -> &[u64; 32] {
        &self.f
    }

    pub fn privilege(&self) -> Privilege {
        self.privilege
    }

    /// The machine-mode CSRs.
    pub fn csr(&self) -> &MachineCsrs {
        &self.csr
    }

    /// The core cycle at which the next instruction can issue.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// Instructions retired.
    pub fn instret(&self) -> u64 {
        self.instret
    }

    pub fn stats(&self) -> &HartStats {
        &self.stats
    }

    /// The out-of-order window's counters, if the core uses that model.
    pub fn ooo_stats(&self) -> Option<&crate::timing::ooo::OooStats> {
        self.ooo.as_deref().map(|o| &o.stats)
    }

    /// The branch predictor (its counters).
    pub fn predictor(&self) -> &BranchPredictor {
        &self.predictor
    }

    pub fn l1i(&self) -> &Cache {
        &self.l1i
    }

    pub fn l1d(&self) -> &Cache {
        &self.l1d
    }

    /// The L1D's miss status holding registers.
    pub fn mshrs(&self) -> &MshrFile {
        &self.mshrs
    }

    /// Drops the line holding `addr` from the L1 D-cache (a device wrote
    /// it behind the core's back).
    pub fn invalidate_l1d_line(&mut self, addr: u64) {
        self.l1d.invalidate_line(addr);
    }

    /// Installs the line of `addr` in the L1 D-cache from outside (NEBULA's
    /// NIC-to-core steering); returns the dirty line it evicted.
    pub fn install_l1d_line(&mut self, addr: u64) -> Option<u64> {
        self.l1d.install_line(addr)
    }

    /// The core's register-file network interface: RX/TX queues, LNIC CSR
    /// state, thread scheduler.
    pub fn net(&self) -> &NetIf {
        &self.net
    }

    /// The network interface, for the node (delivering messages, taking
    /// the core's output).
    pub fn net_mut(&mut self) -> &mut NetIf {
        &mut self.net
    }

    /// Sets the interrupt lines `lines` of `mip` (bits driven by devices)
    /// to `raised`, and brings the thread scheduler's line up to date.
    #[inline]
    pub fn set_interrupt_lines(&mut self, lines: u64, raised: u64) {
        self.csr.mip = (self.csr.mip & !lines) | (raised & lines);
        if self.net.hts.in_use() {
            self.sync_hts();
        }
    }

    /// Whether interrupt `line` (a `mip` bit number) is enabled in `mie`.
    #[inline]
    pub fn interrupt_enabled(&self, line: u32) -> bool {
        self.csr.mie & (1 << line) != 0
    }

    /// The value software reads from mcycle.
    pub fn mcycle(&self) -> u64 {
        self.cycle.wrapping_add(self.mcycle_offset)
    }

    /// The value software reads from minstret.
    pub fn minstret(&self) -> u64 {
        self.instret.wrapping_add(self.minstret_offset)
    }
}
