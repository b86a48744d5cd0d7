//! The run loop of a hart with the out-of-order timing model
//! (`timing/ooo/`): the reference loop's functional path (`exec.rs`, the
//! same events), timed instruction by instruction by the window.
//!
//! While an instruction executes, `Hart::cycle` is its issue cycle (what
//! the L1D, its MSHRs, the memory system below and the devices see);
//! between instructions it is the front end's cycle (what the node
//! schedules, and where the next instruction dispatches). CSR accesses and
//! the other serialising instructions issue once the window has drained,
//! so what software reads from `mcycle` counts every older instruction.

use crate::bus::Bus;
use crate::debug::{BusPeek, Observer};
use crate::decode_cache::{DecodeCache, Decoded, READS_NETRX, WRITES_NETTX};
use crate::hart::{Event, Hart, Stop};
use crate::timing::{Class, OooCore};
use crate::trap::{Exception, Trap};

/// An observer that watches nothing: the plain run's monomorphisation.
pub(crate) struct Unobserved;

impl Observer for Unobserved {
    #[inline(always)]
    fn before(&mut self, _: &Hart, _: &Decoded) -> bool {
        false
    }
    #[inline(always)]
    fn after(
        &mut self,
        _: &Hart,
        _: u64,
        _: u64,
        _: &Decoded,
        _: bool,
        _: &mut dyn crate::debug::MemoryPeek,
    ) {
    }
}

/// Whether an instruction drains the window before it issues.
#[inline(always)]
fn serialising(d: &Decoded) -> bool {
    matches!(d.timing.class, Class::Csr | Class::System | Class::Amo)
        || d.flags & (READS_NETRX | WRITES_NETTX) != 0
}

impl Hart {
    /// Runs until cycle `limit` or a stop, on the out-of-order model
    /// (`self.ooo` is set), calling `observer` around every instruction.
    pub(crate) fn run_ooo<B: Bus, O: Observer + ?Sized>(
        &mut self,
        bus: &mut B,
        dc: &mut DecodeCache,
        mut limit: u64,
        observer: &mut O,
    ) -> Stop {
        let mut ooo = self.ooo.take().expect("an out-of-order hart");
        let stop = self.ooo_loop(bus, dc, &mut limit, observer, &mut ooo);
        self.ooo = Some(ooo);
        stop
    }

    fn ooo_loop<B: Bus, O: Observer + ?Sized>(
        &mut self,
        bus: &mut B,
        dc: &mut DecodeCache,
        limit: &mut u64,
        observer: &mut O,
        ooo: &mut OooCore,
    ) -> Stop {
        ooo.stall_front_end(self.cycle);
        self.cycle = ooo.front_end();
        if let Some(stop) = self.take_pending_interrupt() {
            return stop;
        }
        while self.cycle < *limit {
            let d = match dc.get(self.pc, bus) {
                Ok(d) => d,
                Err(addr) => {
                    let t = Trap::new(Exception::InstructionAccessFault, addr);
                    self.cycle = self.cycle.max(ooo.drained());
                    let r = self.take_trap(t, None);
                    ooo.stall_front_end(self.cycle);
                    match r {
                        Ok(()) => continue,
                        Err(stop) => return stop,
                    }
                }
            };
            if observer.before(self, d) {
                return Stop::Break;
            }
            // Fetch: an L1I miss holds the front end until the line arrives.
            self.fetch_timing(bus);
            ooo.stall_front_end(self.cycle);
            let pc = self.pc;
            let class = d.timing.class;
            // The address, before the instruction overwrites its base.
            let addr = self.x[d.inst.rs1 as usize].wrapping_add(d.inst.imm as i64 as u64);
            // Device registers are accessed in program order (uncached,
            // strongly ordered I/O): such an access drains the window too.
            let serial = serialising(d)
                || (matches!(class, Class::Load | Class::Store)
                    && bus.uncached_cycles(addr).is_some());
            let issue = ooo.dispatch(&d.timing, serial);
            self.cycle = issue;
            let mispredicts = self.predictor.mispredicts;
            let result = if d.flags == 0 {
                self.execute::<B, true>(&d.inst, bus)
            } else {
                self.execute_flagged::<B, true>(d, bus)
            };
            self.x[0] = 0;
            let retired = result.as_ref().map_or_else(Event::retires, |_| true);
            // Stalls inside execution (every MSHR busy, a device's round
            // trip, a fence draining misses) delay the issue.
            let after = self.cycle;
            let arrival = std::mem::take(&mut self.load_arrival);
            let done = match class {
                Class::Load | Class::FpLoad => {
                    ooo.load_done(addr, after, (after + ooo.latency(class)).max(arrival))
                }
                Class::Store | Class::FpStore => {
                    let done = after + ooo.latency(class);
                    ooo.note_store(addr, done);
                    done
                }
                // A mispredicted branch's in-order penalty (added by
                // `exec`) is the front end's business here.
                Class::Branch | Class::Jump => issue + 1,
                _ => after + ooo.latency(class),
            };
            if retired {
                let taken = matches!(class, Class::Branch | Class::Jump)
                    && self.pc != pc.wrapping_add(d.inst.len as u64);
                let mispredicted = self.predictor.mispredicts != mispredicts;
                ooo.retire(&d.timing, done, taken, mispredicted, serial);
            }
            let mut mem = BusPeek {
                bus: &mut *bus,
                hart: self.id,
                cycle: self.cycle,
            };
            observer.after(self, issue, pc, d, retired, &mut mem);
            match result {
                Ok(()) | Err(Event::LoadPending) => {
                    self.instret += 1;
                    self.cycle = ooo.front_end();
                }
                Err(event) => {
                    let d = *d;
                    if retired {
                        self.cycle = ooo.front_end();
                    } else {
                        // A trap is taken when the instruction reaches the
                        // head of the ROB.
                        self.cycle = after.max(ooo.drained());
                    }
                    let stop = self.handle_event(event, &d, issue, dc);
                    ooo.stall_front_end(self.cycle);
                    if let Some(stop) = stop {
                        return stop;
                    }
                    if self.net.hts.dirty {
                        *limit = (*limit).min(self.hts_slice_bound());
                    }
                }
            }
        }
        Stop::Limit
    }
}
