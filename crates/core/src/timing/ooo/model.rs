//! The out-of-order core's state and its per-instruction timing rules
//! (`mod.rs` lists them). Every structure is sized once; nothing is
//! allocated per instruction.

use super::calendar::Calendar;
use super::{Unit, MEM_COUNTER};
use crate::timing::{Class, CoreTimingConfig, Latencies, Timing};

/// A counter no class uses (always free): the second of a class's pair.
const NONE_COUNTER: (usize, u8) = (6, u8::MAX);

/// Counters of the out-of-order model (what limited dispatch, and how much).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct OooStats {
    /// Instructions timed (retired).
    pub retired: u64,
    /// Instructions whose dispatch waited for a free ROB entry, and the
    /// cycles they waited.
    pub rob_full: u64,
    pub rob_full_cycles: u64,
    /// The same for the load and store queues.
    pub lq_full: u64,
    pub sq_full: u64,
    /// Mispredicted branches and jumps that redirected the front end.
    pub mispredicts: u64,
    /// Serialising instructions (they drained the window).
    pub serialised: u64,
}

/// The out-of-order window of one core.
#[derive(Clone, Debug)]
pub struct OooCore {
    width: u32,
    retire_width: usize,
    issue_width: u8,
    /// Per class: the calendar counters it books (its unit, and the shared
    /// memory ports for loads and stores).
    counters: [[(usize, u8); 2]; Class::Amo as usize + 1],
    lat: Latencies,
    mispredict_cycles: u64,
    /// Cycle at which each register's value is ready (indices as
    /// [`Timing`]'s; 64 is the sink of instructions without a destination).
    ready: [u64; 256],
    /// Per ROB entry: the cycle it is free again (its instruction's
    /// retirement + 1); `rob_pos` is the entry the next instruction takes.
    rob: Box<[u64]>,
    rob_pos: usize,
    lq: Box<[u64]>,
    lq_pos: usize,
    sq: Box<[u64]>,
    sq_pos: usize,
    /// The front end: the cycle the next instruction may dispatch in, and
    /// how many dispatched in it already.
    fe: u64,
    fe_used: u32,
    /// Retirement cycle of the youngest retired instruction.
    last_retire: u64,
    /// Cycle the unpipelined divider (integer and FP) frees.
    div_free: u64,
    cal: Calendar,
    /// Recent stores by 8-byte word (direct-mapped: word, cycle its data is
    /// ready): a load of a word an in-flight store writes gets its value
    /// forwarded, no earlier than the store's data. A store overwritten in
    /// this table by another word is forgotten (the load is then timed
    /// as if the store had drained).
    stores: Box<[(u64, u64)]>,
    pub stats: OooStats,
}

/// Entries of the store-forwarding table (a power of two, above any store queue).
const STORE_TABLE: usize = 1024;

fn unit_of(c: Class) -> Unit {
    match c {
        Class::Load | Class::FpLoad | Class::Amo => Unit::Load,
        Class::Store | Class::FpStore => Unit::Store,
        Class::Mul | Class::MulW | Class::Div | Class::DivW => Unit::Mul,
        Class::FpFmaS | Class::FpFmaD | Class::FpMisc | Class::FpDivS | Class::FpDivD => Unit::Fp,
        Class::Alu | Class::Branch | Class::Jump | Class::Csr | Class::System => Unit::Alu,
    }
}

/// Classes whose unit is not pipelined (a divide holds it until done).
#[inline]
fn unpipelined(c: Class) -> bool {
    matches!(c, Class::Div | Class::DivW | Class::FpDivS | Class::FpDivD)
}

/// Whether the class holds a load-queue entry.
#[inline]
fn is_load(c: Class) -> bool {
    matches!(c, Class::Load | Class::FpLoad | Class::Amo)
}

#[inline]
fn is_store(c: Class) -> bool {
    matches!(c, Class::Store | Class::FpStore)
}

const ALL_CLASSES: [Class; Class::Amo as usize + 1] = [
    Class::Alu,
    Class::Load,
    Class::Store,
    Class::Branch,
    Class::Jump,
    Class::Mul,
    Class::MulW,
    Class::Div,
    Class::DivW,
    Class::Csr,
    Class::System,
    Class::FpFmaS,
    Class::FpFmaD,
    Class::FpMisc,
    Class::FpDivS,
    Class::FpDivD,
    Class::FpLoad,
    Class::FpStore,
    Class::Amo,
];

impl OooCore {
    /// A window for the core `c` (its `ooo` table and latencies; the
    /// configuration has been validated).
    pub fn new(c: &CoreTimingConfig) -> OooCore {
        let o = &c.ooo;
        let cap = |n: u32| n.min(u8::MAX as u32) as u8;
        let caps = [
            cap(o.alu_ports),
            cap(o.load_ports),
            cap(o.store_ports),
            cap(o.mul_ports),
            cap(o.fp_ports),
        ];
        let mut counters = [[NONE_COUNTER; 2]; Class::Amo as usize + 1];
        for class in ALL_CLASSES {
            let u = unit_of(class) as usize;
            counters[class as usize][0] = (u, caps[u]);
            if matches!(unit_of(class), Unit::Load | Unit::Store) {
                counters[class as usize][1] = (MEM_COUNTER, cap(o.mem_ports));
            }
        }
        OooCore {
            width: o.width,
            retire_width: o.retire_width as usize,
            issue_width: cap(o.issue_width),
            counters,
            lat: Latencies::new(c),
            mispredict_cycles: c.branch_mispredict_cycles as u64,
            ready: [0; 256],
            rob: vec![0; o.rob_entries as usize].into_boxed_slice(),
            rob_pos: 0,
            lq: vec![0; o.lq_entries as usize].into_boxed_slice(),
            lq_pos: 0,
            sq: vec![0; o.sq_entries as usize].into_boxed_slice(),
            sq_pos: 0,
            fe: 0,
            fe_used: 0,
            last_retire: 0,
            div_free: 0,
            cal: Calendar::new(),
            stores: vec![(u64::MAX, 0); STORE_TABLE].into_boxed_slice(),
            stats: OooStats::default(),
        }
    }

    /// The front end's cycle: the next instruction dispatches no earlier.
    #[inline]
    pub fn front_end(&self) -> u64 {
        self.fe
    }

    /// The front end cannot dispatch before `cycle` (the hart stalled, an
    /// L1I miss, a trap's refetch); a new cycle starts a new group.
    #[inline]
    pub fn stall_front_end(&mut self, cycle: u64) {
        if cycle > self.fe {
            self.fe = cycle;
            self.fe_used = 0;
            self.cal.advance(cycle);
        }
    }

    /// The cycle at which every instruction timed so far has retired.
    #[inline]
    pub fn drained(&self) -> u64 {
        self.last_retire
    }

    /// Latency of `class` on this core.
    #[inline]
    pub fn latency(&self, class: Class) -> u64 {
        self.lat.of(class) as u64
    }

    /// Dispatches the next instruction (timing `t`) into the window and
    /// books its issue; returns the issue cycle. `serial`: it waits until
    /// every older instruction has retired.
    #[inline(always)]
    pub fn dispatch(&mut self, t: &Timing, serial: bool) -> u64 {
        let class = t.class;
        let mut d = self.fe + (self.fe_used >= self.width) as u64;
        let rob_free = self.rob[self.rob_pos];
        if rob_free > d {
            self.stats.rob_full += 1;
            self.stats.rob_full_cycles += rob_free - d;
            d = rob_free;
        }
        if is_load(class) && self.lq[self.lq_pos] > d {
            self.stats.lq_full += 1;
            d = self.lq[self.lq_pos];
        } else if is_store(class) && self.sq[self.sq_pos] > d {
            self.stats.sq_full += 1;
            d = self.sq[self.sq_pos];
        }
        if d > self.fe {
            self.fe = d;
            self.fe_used = 0;
            self.cal.advance(d);
        }
        self.fe_used += 1;
        let r = &self.ready;
        let mut ready = (d + 1)
            .max(r[t.srcs[0] as usize])
            .max(r[t.srcs[1] as usize])
            .max(r[t.srcs[2] as usize]);
        if serial {
            self.stats.serialised += 1;
            ready = ready.max(self.last_retire);
        }
        if unpipelined(class) {
            ready = ready.max(self.div_free);
        }
        self.cal
            .book(ready, &self.counters[class as usize], self.issue_width)
    }

    /// Retires the instruction last dispatched: its result is ready at
    /// `done`. `taken`: a taken branch or jump (ends the fetch group);
    /// `mispredicted`: the front end refetches after it resolves;
    /// `serial`: younger instructions dispatch after it retires.
    #[inline(always)]
    pub fn retire(&mut self, t: &Timing, done: u64, taken: bool, mispredicted: bool, serial: bool) {
        let n = self.rob.len();
        let back = if self.rob_pos >= self.retire_width {
            self.rob_pos - self.retire_width
        } else {
            self.rob_pos + n - self.retire_width
        };
        let older = self.rob[back];
        let r = done.max(self.last_retire).max(older);
        self.rob[self.rob_pos] = r + 1;
        self.rob_pos = if self.rob_pos + 1 == n {
            0
        } else {
            self.rob_pos + 1
        };
        let class = t.class;
        if is_load(class) {
            self.lq[self.lq_pos] = r + 1;
            self.lq_pos = if self.lq_pos + 1 == self.lq.len() {
                0
            } else {
                self.lq_pos + 1
            };
        } else if is_store(class) {
            self.sq[self.sq_pos] = r + 1;
            self.sq_pos = if self.sq_pos + 1 == self.sq.len() {
                0
            } else {
                self.sq_pos + 1
            };
        }
        self.last_retire = r;
        self.ready[t.dst as usize] = done;
        if unpipelined(class) {
            self.div_free = done;
        }
        self.stats.retired += 1;
        if mispredicted {
            self.stats.mispredicts += 1;
            self.stall_front_end(done + self.mispredict_cycles);
        } else if serial {
            self.stall_front_end(r + 1);
        } else if taken {
            self.fe_used = self.width;
        }
    }

    /// A store to `addr` whose data is ready at `done`.
    #[inline]
    pub fn note_store(&mut self, addr: u64, done: u64) {
        let word = addr >> 3;
        self.stores[word as usize & (STORE_TABLE - 1)] = (word, done);
    }

    /// When a load of `addr` issued at `issue` has its value, given that
    /// it would have it at `done` from the cache: a store to the same word
    /// whose data is not ready at issue forwards it, `load_to_use` after
    /// the data is (the value passes the load pipeline).
    #[inline]
    pub fn load_done(&self, addr: u64, issue: u64, done: u64) -> u64 {
        let word = addr >> 3;
        let (w, ready) = self.stores[word as usize & (STORE_TABLE - 1)];
        if w == word && ready > issue {
            done.max(ready + self.lat.of(Class::Load) as u64)
        } else {
            done
        }
    }

    /// `delta` cycles passed in an idle loop's skipped iterations: the
    /// window is where it was, `delta` cycles later.
    pub fn shift(&mut self, delta: u64) {
        for v in self
            .ready
            .iter_mut()
            .chain(self.rob.iter_mut())
            .chain(self.lq.iter_mut())
            .chain(self.sq.iter_mut())
        {
            *v += delta;
        }
        for (_, ready) in self.stores.iter_mut() {
            *ready += delta;
        }
        self.fe += delta;
        self.last_retire += delta;
        self.div_free += delta;
        self.cal.shift(delta);
    }
}
