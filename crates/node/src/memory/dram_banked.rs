//! DRAM with structure: channels of ranks, bank groups and banks with open
//! rows, a command-timing model per JEDEC (the constraints DRAMsim3's
//! `timing.cc` and FASED's `DramCommon.scala` both derive from the device
//! timings), read/write turnaround, refresh, and a controller that buffers
//! writes and drains them first-ready first-come-first-served.
//!
//! A read is scheduled when it arrives: the harts need its completion time
//! then. So reads are served per bank in arrival order (an open-page
//! controller; a row hit is served at once, a miss activates, a conflict
//! precharges first), and across banks and ranks in parallel, limited by
//! the shared command constraints (tRRD, tFAW, CAS-to-CAS, turnaround) that
//! stand for the data bus. Requests may reach the model out of time order
//! (the node's harts run in quanta): column commands and activates are
//! kept in short time-sorted logs, and a request fits into the earliest gap
//! those leave (so an early request arriving late does not queue behind
//! later ones); a bank's own state is kept in arrival order. Callers that
//! can wait for an answer queue reads instead (`submit_read`,
//! `dram_banked/frfcfs.rs`): those are scheduled first-ready
//! first-come-first-served among the reads queued.
//!
//! Writes are posted: they wait in a bounded write buffer (a read of a
//! buffered line is answered from it) until it is full, or holds more than
//! a few and the channel is idle; then it drains, row hits first, oldest
//! first among equals (FR-FCFS), as DRAMsim3's controller does.
//!
//! Reads beyond the scheduler's window (`read_queue`) wait outside it:
//! a read is admitted when the oldest of the reads ahead of it that are
//! still waiting for their column command issues it.
//!
//! Refresh: every rank refreshes every tREFI (staggered across ranks or
//! all at once), precharging its banks (tRP) and then taking tRFC; it
//! closes the rank's rows, and no command reaches the rank meanwhile.
//!
//! Nothing is allocated per access: the logs and buffers are fixed arrays.

use super::dram_standard::DramStandard;
use serde::Serialize;

mod frfcfs;
pub use frfcfs::ReadDone;

/// Most entries the column-command log of a channel keeps, and the
/// activate log of a rank; older ones no longer constrain anything (and
/// if they would, the log's `floor` keeps them out of the way). Small,
/// so that the model stays in the host's L1 cache beside the harts.
const CAS_LOG: usize = 64;
const ACT_LOG: usize = 16;
/// Most writes a channel buffers.
pub const MAX_WRITE_QUEUE: u32 = 64;
/// Most reads a scheduler's window holds.
pub const MAX_READ_QUEUE: u32 = (CAS_LOG / 2) as u32;
/// A write buffer holding more than this drains when the channel is idle
/// (DRAMsim3 `controller.cc`: `write_buffer_.size() > 8 && cmd_queue_.QueueEmpty()`).
const WRITE_DRAIN_IDLE: usize = 8;
const NO_ROW: u32 = u32::MAX;

/// Counters of the banked model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BankedStats {
    pub reads: u64,
    pub writes: u64,
    /// Column accesses to the open row.
    pub row_hits: u64,
    /// Accesses to a closed bank (an activate).
    pub row_misses: u64,
    /// Accesses to a bank with another row open (a precharge and an activate).
    pub row_conflicts: u64,
    /// Reads answered from the write buffer.
    pub write_buffer_hits: u64,
    /// Times a write buffer drained.
    pub write_drains: u64,
    /// Accesses that waited for a refresh to finish.
    pub refresh_waits: u64,
    /// Accesses whose row a refresh had closed (a miss where the row would
    /// have been open).
    pub refresh_closed_rows: u64,
}

/// Constraints between column commands, in clocks, from the standard.
#[derive(Clone, Copy, Debug)]
struct Cas {
    rd_rd_l: u64,
    rd_rd_s: u64,
    rd_rd_o: u64,
    rd_wr: u64,
    rd_wr_o: u64,
    wr_rd_l: u64,
    wr_rd_s: u64,
    wr_rd_o: u64,
    wr_wr_l: u64,
    wr_wr_s: u64,
    wr_wr_o: u64,
    /// The largest of them (how far back the log matters).
    max: u64,
}

impl Cas {
    fn new(s: &DramStandard) -> Cas {
        let b = s.burst_cycles() as i64;
        let rl = (s.al + s.cl) as i64;
        let wl = (s.al + s.cwl) as i64;
        let (ccd_l, wtr_l) = if s.bankgroups == 1 {
            (s.tccd_s, s.twtr_s)
        } else {
            (s.tccd_l, s.twtr_l)
        };
        let rtrs = s.trtrs as i64;
        let c = |v: i64| v.max(0) as u64;
        // As DRAMsim3's timing.cc derives them (and FASED's rank tracker).
        let mut t = Cas {
            rd_rd_l: c(b.max(ccd_l as i64)),
            rd_rd_s: c(b.max(s.tccd_s as i64)),
            rd_rd_o: c(b + rtrs),
            rd_wr: c(rl + b - wl + rtrs),
            rd_wr_o: c((rl + b) + b + rtrs - (wl + b)),
            wr_rd_l: c(wl + b + wtr_l as i64),
            wr_rd_s: c(wl + b + s.twtr_s as i64),
            wr_rd_o: c((wl + b) + b + rtrs - (rl + b)),
            wr_wr_l: c(b.max(ccd_l as i64)),
            wr_wr_s: c(b.max(s.tccd_s as i64)),
            wr_wr_o: c(b),
            max: 0,
        };
        t.max = [
            t.rd_rd_l, t.rd_rd_s, t.rd_rd_o, t.rd_wr, t.rd_wr_o, t.wr_rd_l, t.wr_rd_s, t.wr_rd_o,
            t.wr_wr_l, t.wr_wr_s, t.wr_wr_o,
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        t
    }

    /// Clocks from a column command `a` to a later one `b`.
    #[inline]
    fn gap(&self, a: &CasEntry, b: &CasEntry) -> u64 {
        let same_rank = a.rank == b.rank;
        let same_bg = same_rank && a.bg == b.bg;
        match (a.write, b.write) {
            (false, false) if same_bg => self.rd_rd_l,
            (false, false) if same_rank => self.rd_rd_s,
            (false, false) => self.rd_rd_o,
            (false, true) if same_rank => self.rd_wr,
            (false, true) => self.rd_wr_o,
            (true, false) if same_bg => self.wr_rd_l,
            (true, false) if same_rank => self.wr_rd_s,
            (true, false) => self.wr_rd_o,
            (true, true) if same_bg => self.wr_wr_l,
            (true, true) if same_rank => self.wr_wr_s,
            (true, true) => self.wr_wr_o,
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct CasEntry {
    time: u64,
    rank: u8,
    bg: u8,
    write: bool,
}

impl CasEntry {
    /// A column command to place `p` at `time`.
    fn at(p: Place, time: u64, write: bool) -> CasEntry {
        CasEntry {
            time,
            rank: p.rank as u8,
            bg: p.bg as u8,
            write,
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct ActEntry {
    time: u64,
    bg: u8,
}

/// A time-sorted ring of at most `N` entries: inserting a full one
/// drops the earliest, whose time it remembers (`floor`), so that nothing
/// is later scheduled where the dropped entry would have forbidden it.
#[derive(Clone, Debug)]
struct Log<T: Copy + Default, const N: usize> {
    items: [T; N],
    head: usize,
    len: usize,
    floor: u64,
}

impl<T: Copy + Default, const N: usize> Log<T, N> {
    fn new() -> Self {
        Log {
            items: [T::default(); N],
            head: 0,
            len: 0,
            floor: 0,
        }
    }

    /// The `i`-th entry in time order.
    #[inline]
    fn get(&self, i: usize) -> &T {
        &self.items[(self.head + i) & (N - 1)]
    }

    #[inline]
    fn last(&self) -> Option<&T> {
        (self.len > 0).then(|| self.get(self.len - 1))
    }

    /// The index of the first entry whose `key` exceeds `bound`, found
    /// from the end (the entries that matter are the latest few).
    #[inline]
    fn first_above(&self, bound: u64, key: impl Fn(&T) -> u64) -> usize {
        let mut i = self.len;
        while i > 0 && key(self.get(i - 1)) > bound {
            i -= 1;
        }
        i
    }

    /// Inserts keeping the order by `key` (usually at the end).
    fn insert(&mut self, item: T, key: impl Fn(&T) -> u64) {
        if self.len == N {
            self.floor = self.floor.max(key(self.get(0)));
            self.head = (self.head + 1) & (N - 1);
            self.len -= 1;
        }
        let k = key(&item);
        let mut i = self.len;
        while i > 0 && key(self.get(i - 1)) > k {
            let prev = *self.get(i - 1);
            self.items[(self.head + i) & (N - 1)] = prev;
            i -= 1;
        }
        self.items[(self.head + i) & (N - 1)] = item;
        self.len += 1;
    }
}

#[derive(Clone, Copy, Debug)]
struct Bank {
    open_row: u32,
    /// Earliest activate, precharge and column command.
    next_act: u64,
    next_pre: u64,
    next_cas: u64,
    /// Time of the bank's last command (to see whether a refresh came since).
    last: u64,
    /// The row a conflict closed (`NO_ROW` if none), the time of that
    /// precharge, and the earliest next column command to that row: a
    /// request to it that can issue before the precharge is a row hit
    /// (first ready), as an FR-FCFS scheduler serves hits queued ahead of
    /// the precharge of a conflict.
    prev_row: u32,
    prev_pre: u64,
    prev_next_cas: u64,
}

impl Default for Bank {
    fn default() -> Self {
        Bank {
            open_row: NO_ROW,
            next_act: 0,
            next_pre: 0,
            next_cas: 0,
            last: 0,
            prev_row: NO_ROW,
            prev_pre: 0,
            prev_next_cas: 0,
        }
    }
}

/// A decoded address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Place {
    channel: u32,
    rank: u32,
    bg: u32,
    bank: u32,
    row: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct Field {
    shift: u32,
    mask: u64,
}

impl Field {
    #[inline]
    fn get(self, line: u64) -> u32 {
        ((line >> self.shift) & self.mask) as u32
    }
}

/// Where an address's fields sit (DRAMsim3's `SetAddressMapping`: the
/// mapping lists fields from the most significant; below them the bytes of
/// one access, and the column's burst bits).
#[derive(Clone, Copy, Debug)]
struct AddressMap {
    offset_bits: u32,
    channel: Field,
    rank: Field,
    bg: Field,
    bank: Field,
    row: Field,
}

/// An address mapping that is not six of `ch ra bg ba ro co` each once.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("address_mapping = {0:?}: must name each of ch, ra, bg, ba, ro, co once (e.g. \"rochrababgco\")")]
pub struct AddressMappingError(pub String);

fn log2(v: u64) -> u32 {
    63 - v.max(1).leading_zeros()
}

impl AddressMap {
    fn new(
        s: &DramStandard,
        channels: u32,
        mapping: &str,
    ) -> Result<AddressMap, AddressMappingError> {
        let err = || AddressMappingError(mapping.to_string());
        if mapping.len() != 12 || !mapping.is_ascii() {
            return Err(err());
        }
        let width = |f: &str| -> Option<u32> {
            Some(match f {
                "ch" => log2(channels as u64),
                "ra" => log2(s.ranks as u64),
                "bg" => log2(s.bankgroups as u64),
                "ba" => log2(s.banks_per_group as u64),
                "ro" => log2(s.rows),
                "co" => log2(s.columns as u64) - log2(s.bl as u64),
                _ => return None,
            })
        };
        let mut fields = [Field::default(); 6];
        let mut seen = [false; 6];
        let names = ["ch", "ra", "bg", "ba", "ro", "co"];
        let mut pos = 0;
        for i in (0..6).rev() {
            let f = &mapping[2 * i..2 * i + 2];
            let k = names.iter().position(|n| *n == f).ok_or_else(err)?;
            if seen[k] {
                return Err(err());
            }
            seen[k] = true;
            let w = width(f).ok_or_else(err)?;
            fields[k] = Field {
                shift: pos,
                mask: (1u64 << w) - 1,
            };
            pos += w;
        }
        Ok(AddressMap {
            offset_bits: log2(s.access_bytes() as u64),
            channel: fields[0],
            rank: fields[1],
            bg: fields[2],
            bank: fields[3],
            row: fields[4],
        })
    }

    #[inline]
    fn decode(&self, addr: u64) -> Place {
        let line = addr >> self.offset_bits;
        Place {
            channel: self.channel.get(line),
            rank: self.rank.get(line),
            bg: self.bg.get(line),
            bank: self.bank.get(line),
            row: self.row.get(line),
        }
    }
}

/// A span of time with the same latest refresh of a rank.
#[derive(Clone, Copy, Debug, Default)]
struct RefreshWindow {
    from: u64,
    to: u64,
    last: Option<u64>,
}

#[derive(Clone, Copy, Debug, Default)]
struct PendingWrite {
    line: u64,
    place: Place,
    /// Index of its bank in the channel.
    bank: u32,
    arrival: u64,
}

/// One channel's controller.
#[derive(Clone, Debug)]
struct Channel {
    banks: Vec<Bank>,
    cas: Log<CasEntry, CAS_LOG>,
    acts: Vec<Log<ActEntry, ACT_LOG>>,
    /// The write buffer (`write_queue` entries, `nwrites` in use).
    writes: Vec<PendingWrite>,
    nwrites: usize,
    /// Reads waiting undecided (`frfcfs.rs`; `read_queue` entries,
    /// `nqueued` in use).
    queue: Vec<frfcfs::Queued>,
    nqueued: usize,
}

/// The banked DRAM: channels, their controllers, the counters.
#[derive(Clone, Debug)]
pub struct BankedDram {
    s: DramStandard,
    map: AddressMap,
    cas_t: Cas,
    channels: Vec<Channel>,
    banks_per_rank: u32,
    /// Refresh offset of each rank within tREFI.
    refresh_offset: Vec<u64>,
    refresh_cache: Vec<RefreshWindow>,
    read_latency: u64,
    write_queue: usize,
    read_queue: usize,
    pub stats: BankedStats,
}

impl BankedDram {
    /// A model of `channels` channels of standard `s` with the given
    /// address mapping; the queue depths are checked by the configuration.
    pub fn new(
        s: &DramStandard,
        channels: u32,
        mapping: &str,
    ) -> Result<BankedDram, AddressMappingError> {
        let map = AddressMap::new(s, channels, mapping)?;
        let banks_per_rank = s.bankgroups * s.banks_per_group;
        let channel = Channel {
            banks: vec![Bank::default(); (s.ranks * banks_per_rank) as usize],
            cas: Log::new(),
            acts: vec![Log::new(); s.ranks as usize],
            writes: vec![PendingWrite::default(); s.write_queue.clamp(1, MAX_WRITE_QUEUE) as usize],
            nwrites: 0,
            queue: vec![frfcfs::Queued::default(); s.read_queue.clamp(1, MAX_READ_QUEUE) as usize],
            nqueued: 0,
        };
        let refresh_offset = (0..s.ranks as u64)
            .map(|r| {
                if s.refresh_staggered {
                    r * s.trefi as u64 / s.ranks as u64
                } else {
                    0
                }
            })
            .collect();
        Ok(BankedDram {
            map,
            cas_t: Cas::new(s),
            channels: vec![channel; channels as usize],
            banks_per_rank,
            refresh_cache: vec![RefreshWindow::default(); s.ranks as usize],
            refresh_offset,
            read_latency: (s.al + s.cl + s.burst_cycles() + s.backend) as u64,
            write_queue: s.write_queue.clamp(1, MAX_WRITE_QUEUE) as usize,
            read_queue: s.read_queue.clamp(1, MAX_READ_QUEUE) as usize,
            s: s.clone(),
            stats: BankedStats::default(),
        })
    }

    pub fn standard(&self) -> &DramStandard {
        &self.s
    }

    /// Clocks from a read's arrival to its data at an idle, closed bank:
    /// activate, tRCD, CL, the burst and the back end.
    pub fn unloaded_read_clocks(&self) -> u64 {
        (self.s.trcd - self.s.al.min(self.s.trcd)) as u64 + self.read_latency
    }

    /// A read of the access at `addr` arriving at clock `t`: the clock its
    /// data has left the controller.
    #[inline]
    pub fn read(&mut self, addr: u64, t: u64) -> u64 {
        self.read_admitted(addr, t).1
    }

    /// A read as [`read`](Self::read), with the clock it entered the
    /// scheduler's window (later than `t` when the window was full).
    pub fn read_admitted(&mut self, addr: u64, t: u64) -> (u64, u64) {
        self.stats.reads += 1;
        let p = self.map.decode(addr);
        let line = addr >> self.map.offset_bits;
        let ch = &self.channels[p.channel as usize];
        if ch.writes[..ch.nwrites].iter().any(|w| w.line == line) {
            // DRAMsim3 controller.cc: a read of a buffered write is answered
            // from the buffer the next clock.
            self.stats.write_buffer_hits += 1;
            return (t, t + 1);
        }
        let admit = self.admission(p.channel as usize, t);
        let cas = self.issue(p, admit, false);
        (admit, cas + self.read_latency)
    }

    /// When a read arriving at `t` enters the scheduler's window: once fewer
    /// than `read_queue` reads ahead of it still wait for their column command.
    #[inline]
    fn admission(&self, channel: usize, t: u64) -> u64 {
        let log = &self.channels[channel].cas;
        let mut waiting = 0;
        let mut i = log.len;
        while i > 0 {
            let e = log.get(i - 1);
            if e.time <= t {
                break;
            }
            if !e.write {
                waiting += 1;
                if waiting == self.read_queue {
                    // The earliest of the last `read_queue` waiting reads
                    // so far; any earlier waiting one moves it on below.
                    break;
                }
            }
            i -= 1;
        }
        if waiting < self.read_queue {
            return t;
        }
        // `read_queue` reads wait from index i - 1 on; more may wait before
        // them: the window frees when the (waiting - read_queue + 1)-th
        // earliest waiting read issues, the read_queue-th latest.
        log.get(i - 1).time
    }

    /// A write of the access at `addr` arriving at clock `t` (posted: the
    /// controller acknowledges it at once); the clock it is acknowledged.
    pub fn write(&mut self, addr: u64, t: u64) -> u64 {
        self.stats.writes += 1;
        let p = self.map.decode(addr);
        let line = addr >> self.map.offset_bits;
        let c = p.channel as usize;
        let bank = self.bank_index(p) as u32;
        let ch = &mut self.channels[c];
        if !ch.writes[..ch.nwrites].iter().any(|w| w.line == line) {
            ch.writes[ch.nwrites] = PendingWrite {
                line,
                place: p,
                bank,
                arrival: t,
            };
            ch.nwrites += 1;
        }
        let idle = ch.cas.last().is_none_or(|e| e.time + self.cas_t.max <= t);
        if ch.nwrites >= self.write_queue || (ch.nwrites > WRITE_DRAIN_IDLE && idle) {
            self.drain(c, t);
        }
        t + 1
    }

    /// Issues every buffered write of channel `c` from `t`: row hits first,
    /// the oldest first among equals.
    fn drain(&mut self, c: usize, t: u64) {
        self.stats.write_drains += 1;
        while self.channels[c].nwrites > 0 {
            let ch = &self.channels[c];
            let pending = &ch.writes[..ch.nwrites];
            let hit = |w: &PendingWrite| ch.banks[w.bank as usize].open_row == w.place.row;
            let pick = pending
                .iter()
                .enumerate()
                .min_by_key(|(_, w)| (!hit(w), w.arrival))
                .map(|(i, _)| i)
                .unwrap_or(0);
            let w = pending[pick];
            let ch = &mut self.channels[c];
            ch.writes.copy_within(pick + 1..ch.nwrites, pick);
            ch.nwrites -= 1;
            self.issue(w.place, t, true);
        }
    }

    #[inline]
    fn bank_index(&self, p: Place) -> usize {
        (p.rank * self.banks_per_rank + p.bg * self.s.banks_per_group + p.bank) as usize
    }

    /// The latest refresh of `rank` at or before `t` (if any) and the
    /// first after it. Remembers the answer's interval: most accesses fall
    /// in the same one as the last (and spare the division).
    #[inline]
    fn refresh_around(&mut self, rank: u32, t: u64) -> (Option<u64>, u64) {
        let r = rank as usize;
        let c = self.refresh_cache[r];
        if c.from <= t && t < c.to {
            return (c.last, c.to);
        }
        let off = self.refresh_offset[r];
        let period = self.s.trefi as u64;
        let c = if period == 0 {
            RefreshWindow {
                from: 0,
                to: u64::MAX,
                last: None,
            }
        } else if t < off + period {
            RefreshWindow {
                from: 0,
                to: off + period,
                last: None,
            }
        } else {
            let last = off + (t - off) / period * period;
            RefreshWindow {
                from: last,
                to: last + period,
                last: Some(last),
            }
        };
        self.refresh_cache[r] = c;
        (c.last, c.to)
    }

    /// Schedules the commands of one access from `t`: the clock of its
    /// column command.
    #[inline]
    fn issue(&mut self, p: Place, t: u64, write: bool) -> u64 {
        let bi = self.bank_index(p);
        let c = p.channel as usize;
        let trp = self.s.trp as u64;
        // A refresh first precharges the rank's banks (tRP), then takes
        // tRFC (JEDEC: REF needs all banks idle; FASED's refresh unit and
        // DRAMsim3 issue the precharges first).
        let trfc = self.s.trfc as u64 + trp;
        let act_to_cas = (self.s.trcd - self.s.al.min(self.s.trcd)) as u64;
        let mut start = t;
        let mut waited = false;
        let mut closed = false;
        // At most a few rounds: each moves past a refresh.
        for _ in 0..4 {
            let bank = self.channels[c].banks[bi];
            let mut open = bank.open_row;
            let mut next_act = bank.next_act;
            // A refresh since the bank's last command closed its row; one
            // under way holds the rank.
            let (last_refresh, next) = self.refresh_around(p.rank, start);
            if let Some(r) = last_refresh {
                if start < r + trfc {
                    start = r + trfc;
                    waited = true;
                }
                if bank.last < r && open != NO_ROW {
                    open = NO_ROW;
                    closed = true;
                }
                if bank.last < r + trfc {
                    next_act = next_act.max(r + trfc);
                }
            }
            if open != NO_ROW && bank.prev_row == p.row {
                // First ready: a hit to the row a committed conflict will
                // close, if it can issue before that precharge.
                let to_pre = self.to_pre(write);
                let ready = start.max(bank.prev_next_cas);
                if ready + to_pre <= bank.prev_pre {
                    let x = self.cas_slot(c, p, write, ready);
                    if x + to_pre <= bank.prev_pre && x < next {
                        self.commit_hit_before_precharge(p, bi, x, write);
                        return x;
                    }
                }
            }
            let (act, cas_ready) = if open == p.row {
                (None, start.max(bank.next_cas))
            } else {
                let pre = start.max(bank.next_pre);
                let pre_done = if open == NO_ROW { start } else { pre + trp };
                let a = self.act_slot(c, p, pre_done.max(next_act));
                (Some((pre, a)), a + act_to_cas)
            };
            let cas = self.cas_slot(c, p, write, cas_ready);
            // A refresh between the first command and the column command
            // comes first: start again after it.
            if cas >= next && next != u64::MAX {
                start = next + trfc;
                waited = true;
                continue;
            }
            self.commit(p, bi, open, act, cas, write);
            self.stats.refresh_waits += waited as u64;
            self.stats.refresh_closed_rows += closed as u64;
            return cas;
        }
        // Unreachable in practice (a refresh interval is far longer than an
        // access); serve it after the last refresh considered.
        let cas = self.cas_slot(c, p, write, start + act_to_cas);
        self.commit(p, bi, NO_ROW, Some((start, start)), cas, write);
        cas
    }

    /// Clocks from a column command to the bank's next precharge.
    #[inline]
    fn to_pre(&self, write: bool) -> u64 {
        let s = &self.s;
        if write {
            (s.al + s.cwl + s.burst_cycles() + s.twr) as u64
        } else {
            (s.al + s.trtp) as u64
        }
    }

    /// Records a row hit to a bank's previous row ahead of the precharge
    /// that closes it.
    fn commit_hit_before_precharge(&mut self, p: Place, bi: usize, cas: u64, write: bool) {
        self.stats.row_hits += 1;
        let ch = &mut self.channels[p.channel as usize];
        let bank = &mut ch.banks[bi];
        bank.prev_next_cas = bank.prev_next_cas.max(cas + 1);
        ch.cas.insert(CasEntry::at(p, cas, write), |e| e.time);
    }

    /// Records the commands of an access and counts what kind it was.
    #[inline]
    fn commit(
        &mut self,
        p: Place,
        bi: usize,
        open: u32,
        act: Option<(u64, u64)>,
        cas: u64,
        write: bool,
    ) {
        let s = &self.s;
        match (act, open) {
            (None, _) => self.stats.row_hits += 1,
            (Some(_), NO_ROW) => self.stats.row_misses += 1,
            (Some(_), _) => self.stats.row_conflicts += 1,
        }
        let ch = &mut self.channels[p.channel as usize];
        let bank = &mut ch.banks[bi];
        if let Some((pre, a)) = act {
            if open == NO_ROW {
                bank.prev_row = NO_ROW;
            } else {
                bank.prev_row = open;
                bank.prev_pre = pre;
                bank.prev_next_cas = bank.next_cas;
            }
            bank.open_row = p.row;
            bank.next_act = a + s.trc as u64;
            bank.next_pre = a + s.tras as u64;
            ch.acts[p.rank as usize].insert(
                ActEntry {
                    time: a,
                    bg: p.bg as u8,
                },
                |e| e.time,
            );
        }
        let to_pre = if write {
            (s.al + s.cwl + s.burst_cycles() + s.twr) as u64
        } else {
            (s.al + s.trtp) as u64
        };
        bank.next_pre = bank.next_pre.max(cas + to_pre);
        bank.next_act = bank.next_act.max(bank.next_pre + s.trp as u64);
        bank.next_cas = bank.next_cas.max(cas + 1);
        bank.last = bank.last.max(cas);
        ch.cas.insert(CasEntry::at(p, cas, write), |e| e.time);
    }

    /// The earliest activate at or after `t` that keeps tRRD and tFAW with
    /// the rank's logged activates.
    #[inline]
    fn act_slot(&self, c: usize, p: Place, t: u64) -> u64 {
        let s = &self.s;
        let log = &self.channels[c].acts[p.rank as usize];
        let (rrd_s, rrd_l, faw) = (s.trrd_s as u64, s.trrd_l as u64, s.tfaw as u64);
        let mut x = if log.floor > 0 {
            t.max(log.floor + faw.max(rrd_l))
        } else {
            t
        };
        if log.len == 0 {
            return x;
        }
        // Each round moves x forward; a handful suffice.
        for _ in 0..ACT_LOG {
            let mut moved = false;
            let from = log.first_above(x.saturating_sub(rrd_l.max(rrd_s)), |e| e.time);
            for i in from..log.len {
                let e = log.get(i);
                if e.time >= x + rrd_l.max(rrd_s) {
                    break;
                }
                let d = if e.bg as u32 == p.bg { rrd_l } else { rrd_s };
                if e.time < x + d && x < e.time + d {
                    x = e.time + d;
                    moved = true;
                }
            }
            // tFAW: at most four activates in any window of tFAW.
            let upto = log.first_above(x, |e| e.time);
            if upto >= 4 {
                let e = log.get(upto - 4);
                if x < e.time + faw {
                    x = e.time + faw;
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        x
    }

    /// The earliest column command at or after `t` that keeps every
    /// CAS-to-CAS constraint with the channel's logged column commands,
    /// before and after it.
    #[inline]
    fn cas_slot(&self, c: usize, p: Place, write: bool, t: u64) -> u64 {
        let log = &self.channels[c].cas;
        let new = CasEntry {
            time: 0,
            rank: p.rank as u8,
            bg: p.bg as u8,
            write,
        };
        let max = self.cas_t.max;
        let mut x = if log.floor > 0 {
            t.max(log.floor + max)
        } else {
            t
        };
        for _ in 0..CAS_LOG {
            let mut moved = false;
            // Entries from the first that could constrain x, in time order.
            let from = log.first_above(x.saturating_sub(max), |e| e.time);
            for i in from..log.len {
                let e = log.get(i);
                if e.time >= x + max {
                    break;
                }
                let after = self.cas_t.gap(e, &new);
                let before = self.cas_t.gap(&new, e);
                if x < e.time + after && x + before > e.time {
                    x = e.time + after;
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::dram_standard::{ddr3_fased, ddr4_3200};

    fn ddr4() -> BankedDram {
        let s = ddr4_3200();
        BankedDram::new(&s, 1, s.address_mapping).unwrap()
    }

    /// An address of DDR4-3200's `rochrababgco` map (64-byte accesses,
    /// 7 column bits, 2+2 bank bits).
    fn at(bg: u64, bank: u64, row: u64, col: u64) -> u64 {
        (((row << 2 | bank) << 2 | bg) << 7 | col) << 6
    }

    #[test]
    fn a_row_hit_costs_cl_and_a_miss_adds_trcd_and_a_conflict_adds_trp() {
        let s = ddr4_3200();
        let mut d = ddr4();
        let (cl, b, rcd, rp) = (s.cl as u64, 4, s.trcd as u64, s.trp as u64);
        // Closed bank: ACT, tRCD, CL, burst.
        assert_eq!(d.read(at(0, 0, 5, 0), 1000) - 1000, rcd + cl + b);
        // Same row, later: CAS, CL, burst.
        assert_eq!(d.read(at(0, 0, 5, 1), 2000) - 2000, cl + b);
        // Another row of the same bank: PRE, tRP, ACT, tRCD, CAS.
        assert_eq!(d.read(at(0, 0, 6, 0), 3000) - 3000, rp + rcd + cl + b);
        assert_eq!(
            (d.stats.row_hits, d.stats.row_misses, d.stats.row_conflicts),
            (1, 1, 1)
        );
    }

    #[test]
    fn a_conflict_waits_for_tras_of_the_open_row() {
        let s = ddr4_3200();
        let mut d = ddr4();
        d.read(at(1, 2, 5, 0), 0); // ACT at 0
        let done = d.read(at(1, 2, 9, 0), 1);
        // PRE no earlier than tRAS after the ACT, then tRP, tRCD, CL, burst.
        let expect = s.tras as u64 + (s.trp + s.trcd + s.cl + 4) as u64;
        assert_eq!(done, expect);
    }

    #[test]
    fn different_banks_overlap_and_one_bank_serialises() {
        let mut spread = ddr4();
        let mut same = ddr4();
        let mut last_spread = 0;
        let mut last_same = 0;
        for i in 0..16 {
            // Sixteen banks, closed: activates overlap (tRRD, tFAW permitting).
            last_spread = last_spread.max(spread.read(at(i % 4, i / 4, 3, 0), 0));
            // One bank, sixteen rows: each a conflict.
            last_same = last_same.max(same.read(at(0, 0, i, 0), 0));
        }
        assert!(last_same > 4 * last_spread, "{last_same} {last_spread}");
        assert_eq!(same.stats.row_conflicts, 15);
    }

    #[test]
    fn reads_after_writes_pay_the_turnaround() {
        let s = ddr4_3200();
        // Read, read to an open row: CAS-to-CAS tCCD_L apart.
        let mut d = ddr4();
        d.read(at(0, 0, 1, 0), 0);
        let r1 = d.read(at(0, 0, 1, 1), 0);
        let r2 = d.read(at(0, 0, 1, 2), 0);
        assert_eq!(r2 - r1, s.tccd_l as u64);
        // Drain a write to the same row, then read: WL + burst + tWTR_L.
        let mut w = ddr4();
        w.read(at(0, 0, 1, 0), 0);
        let wq = s.write_queue as u64;
        for i in 0..wq {
            w.write(at(0, 0, 1, 10 + i), 100);
        }
        assert_eq!(w.stats.write_drains, 1);
        let last_write_cas = w.channels[0].cas.last().unwrap().time;
        let r = w.read(at(0, 0, 1, 3), 100);
        let read_cas = r - w.read_latency;
        assert_eq!(
            read_cas - last_write_cas,
            (s.cwl + 4 + s.twtr_l) as u64,
            "write-to-read turnaround"
        );
    }

    #[test]
    fn a_hit_to_the_row_a_conflict_will_close_goes_first() {
        let s = ddr4_3200();
        let mut d = ddr4();
        d.read(at(0, 0, 5, 0), 0); // ACT row 5 at 0; its precharge waits for tRAS
        let conflict = d.read(at(0, 0, 9, 0), 1);
        // Row 5 is still open until the conflict's precharge at tRAS: a read
        // of it arriving now is served first, as a hit, and the conflict
        // keeps its time.
        let hit = d.read(at(0, 0, 5, 1), 2);
        assert!(hit < conflict, "{hit} {conflict}");
        assert_eq!(hit, (s.trcd + s.tccd_l + s.cl + 4) as u64);
        assert_eq!(d.stats.row_hits, 1);
        // After the precharge, row 5 is a conflict again.
        let late = d.read(at(0, 0, 5, 2), s.tras as u64 + 1);
        assert!(late > conflict);
        assert_eq!(d.stats.row_conflicts, 2);
    }

    #[test]
    fn a_read_of_a_buffered_write_is_answered_from_the_buffer() {
        let mut d = ddr4();
        d.write(at(0, 1, 1, 0), 50);
        assert_eq!(d.read(at(0, 1, 1, 0), 60), 61);
        assert_eq!(d.stats.write_buffer_hits, 1);
    }

    #[test]
    fn writes_drain_row_hits_first() {
        let mut d = ddr4();
        d.read(at(0, 0, 7, 0), 0); // row 7 open in bank 0
        let n = d.write_queue as u64;
        // Alternate rows 7 and 8 of bank 0: FR-FCFS serves the row 7 hits
        // first, then opens row 8 once.
        for i in 0..n {
            d.write(at(0, 0, if i % 2 == 0 { 8 } else { 7 }, 20 + i), 100);
        }
        assert_eq!(d.stats.row_conflicts, 1, "{:?}", d.stats);
    }

    #[test]
    fn refresh_holds_the_rank_and_closes_its_rows() {
        let s = ddr3_fased();
        let mut d = BankedDram::new(&s, 1, s.address_mapping).unwrap();
        let (trefi, trfc) = (s.trefi as u64, (s.trfc + s.trp) as u64);
        // Rank 0 refreshes at tREFI (all ranks at once in FASED's model).
        d.read(0, trefi - 100); // opens row 0 of bank 0, rank 0
        let during = d.read(64, trefi + 10); // same row, during the refresh
                                             // It waits for the refresh, and the row is closed again.
        assert_eq!(
            during,
            trefi + trfc + (s.trcd + s.cl + 4 + s.backend) as u64
        );
        assert_eq!((d.stats.refresh_waits, d.stats.refresh_closed_rows), (1, 1));
        assert_eq!(d.stats.row_misses, 2);
        // Without refresh in the way, a hit.
        assert_eq!(
            d.read(128, trefi + 2000),
            trefi + 2000 + (s.cl + 4 + s.backend) as u64
        );
    }

    #[test]
    fn an_early_request_arriving_late_fits_before_later_ones() {
        // Two banks; the request for time 10 arrives after one for time 500.
        let mut d = ddr4();
        let late = d.read(at(0, 0, 1, 0), 500);
        let early = d.read(at(1, 0, 1, 0), 10);
        assert_eq!(early - 10, late - 500, "both unloaded");
    }

    #[test]
    fn the_read_window_bounds_waiting_reads() {
        let s = ddr4_3200();
        let q = s.read_queue as usize;
        let mut d = ddr4();
        // Conflicting reads to one bank at once: read k enters the window
        // when read k - q has issued its column command.
        let mut cas = Vec::new();
        for i in 0..(2 * q as u64) {
            let (admit, done) = d.read_admitted(at(0, 0, i, 0), 0);
            let k = cas.len();
            if k < q {
                assert_eq!(admit, 0);
            } else {
                assert_eq!(admit, cas[k - q], "read {k}");
            }
            cas.push(done - d.read_latency);
        }
    }

    #[test]
    fn same_requests_same_results() {
        let run = || {
            let mut d = ddr4();
            let mut x = 12345u64;
            (0..20_000u64)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let addr = (x % (1 << 30)) & !63;
                    if x.is_multiple_of(3) {
                        d.write(addr, i * 7)
                    } else {
                        d.read(addr, i * 7)
                    }
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn bad_mappings_are_refused() {
        let s = ddr4_3200();
        for m in ["rochrababg", "rochrababgxx", "rorarababgco", "rochrababgcö"] {
            assert!(BankedDram::new(&s, 1, m).is_err(), "{m}");
        }
    }
}
