//! First-ready first-come-first-served among queued reads, for callers
//! that can wait for a read's answer (a trace replayed open loop, as
//! DRAMsim3's front end does): reads wait in the scheduler's window
//! undecided, and a bank's next access is chosen only when its first
//! command could issue, from the reads that have arrived by then: a row
//! hit first, the oldest first among equals.
//!
//! The rule, as both controllers the model is compared with have it:
//! FASED's FR-FCFS model (l-nic/firesim `FRFCFSModel.scala` lines 107-135,
//! 151-155: the column arbiter takes the oldest ready entry, a row hit;
//! an activate or precharge goes to the oldest entry wanting one; a bank
//! is precharged only once no ready entry of it is left, `mayPRE`, lines
//! 199-212) and DRAMsim3's (`command_queue.cc`, `ArbitratePrecharge`: no
//! precharge while a row hit to the open row is queued). A hart's read
//! (`BankedDram::read`) is answered at once instead: it cannot wait for
//! later arrivals.
//!
//! Time moves with the calls: `submit_*` at clock `t` first decides every
//! access whose first command falls at or before `t`, so requests must be
//! submitted in time order (a trace's order). Deterministic: decisions
//! depend only on the requests and their order.

use super::{BankedDram, Place, NO_ROW};

/// A read waiting in a channel's window, undecided.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Queued {
    place: Place,
    /// Index of its bank in the channel.
    bank: u32,
    /// Clock it entered the window.
    admitted: u64,
    tag: u64,
}

/// A queued read's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadDone {
    /// The caller's tag for the read.
    pub tag: u64,
    /// Clock it entered the scheduler's window.
    pub admitted: u64,
    /// Clock its data left the controller.
    pub data: u64,
}

impl BankedDram {
    /// Queues a read of the access at `addr` arriving at clock `t` (no
    /// earlier than any request submitted before it). Answers, its own
    /// included, go to `done` as they are decided; the return value is the
    /// clock the read entered the window (later than `t` when the window
    /// was full: the caller holds its next request until then).
    pub fn submit_read(
        &mut self,
        addr: u64,
        t: u64,
        tag: u64,
        done: &mut impl FnMut(ReadDone),
    ) -> u64 {
        self.advance(t, done);
        self.stats.reads += 1;
        let p = self.map.decode(addr);
        let line = addr >> self.map.offset_bits;
        let c = p.channel as usize;
        let ch = &self.channels[c];
        if ch.writes[..ch.nwrites].iter().any(|w| w.line == line) {
            self.stats.write_buffer_hits += 1;
            done(ReadDone {
                tag,
                admitted: t,
                data: t + 1,
            });
            return t;
        }
        let mut admit = t;
        while let Some(next) = self.window_full_until(c, admit) {
            admit = next;
            self.advance(admit, done);
        }
        let bank = self.bank_index(p) as u32;
        let ch = &mut self.channels[c];
        ch.queue[ch.nqueued] = Queued {
            place: p,
            bank,
            admitted: admit,
            tag,
        };
        ch.nqueued += 1;
        self.advance(admit, done);
        admit
    }

    /// A write (posted, as [`write`](Self::write)) in the same time order
    /// as [`submit_read`](Self::submit_read).
    pub fn submit_write(&mut self, addr: u64, t: u64, done: &mut impl FnMut(ReadDone)) -> u64 {
        self.advance(t, done);
        self.write(addr, t)
    }

    /// Decides every queued read: the end of a trace.
    pub fn finish(&mut self, done: &mut impl FnMut(ReadDone)) {
        self.advance(u64::MAX, done);
    }

    /// `None` if a read arriving at `t` finds room in channel `c`'s window;
    /// else the next clock at which that may change.
    fn window_full_until(&self, c: usize, t: u64) -> Option<u64> {
        let ch = &self.channels[c];
        let log = &ch.cas;
        // Decided reads whose column command is still ahead.
        let from = log.first_above(t, |e| e.time);
        let mut waiting = ch.nqueued;
        let mut first_cas = u64::MAX;
        for i in from..log.len {
            let e = log.get(i);
            if !e.write {
                waiting += 1;
                first_cas = first_cas.min(e.time);
            }
        }
        if waiting < self.read_queue {
            return None;
        }
        let first_decision = (0..ch.nqueued)
            .map(|i| self.decision(c, &ch.queue[i]))
            .min()
            .unwrap_or(u64::MAX);
        Some(first_cas.min(first_decision).max(t + 1))
    }

    /// When the scheduler decides queued read `q`: a row hit (or a read of
    /// a closed bank) when it arrives, a read of another row when the
    /// bank's precharge could issue, if no row hit has come by then.
    #[inline]
    fn decision(&self, c: usize, q: &Queued) -> u64 {
        let bank = &self.channels[c].banks[q.bank as usize];
        if bank.open_row == q.place.row || bank.open_row == NO_ROW {
            q.admitted
        } else {
            q.admitted.max(bank.next_pre)
        }
    }

    /// Decides, in time order, every queued read whose decision falls at
    /// or before `now`.
    fn advance(&mut self, now: u64, done: &mut impl FnMut(ReadDone)) {
        for c in 0..self.channels.len() {
            loop {
                let ch = &self.channels[c];
                // The earliest decision; the oldest read among equals.
                let mut best: Option<(u64, u64, usize)> = None;
                for i in 0..ch.nqueued {
                    let q = &ch.queue[i];
                    let key = (self.decision(c, q), q.admitted, i);
                    if key.0 <= now && best.is_none_or(|b| key < b) {
                        best = Some(key);
                    }
                }
                let Some((_, _, i)) = best else { break };
                let q = ch.queue[i];
                let ch = &mut self.channels[c];
                ch.queue.copy_within(i + 1..ch.nqueued, i);
                ch.nqueued -= 1;
                let cas = self.issue(q.place, q.admitted, false);
                done(ReadDone {
                    tag: q.tag,
                    admitted: q.admitted,
                    data: cas + self.read_latency,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::dram_standard::ddr4_3200;

    fn ddr4() -> BankedDram {
        let s = ddr4_3200();
        BankedDram::new(&s, 1, s.address_mapping).unwrap()
    }

    /// An address of DDR4-3200's `rochrababgco` map.
    fn at(bg: u64, bank: u64, row: u64, col: u64) -> u64 {
        (((row << 2 | bank) << 2 | bg) << 7 | col) << 6
    }

    /// Submits reads `(addr, t)` in order; their `(admitted, data)` by tag.
    fn run(d: &mut BankedDram, reads: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let mut out = vec![(0, 0); reads.len()];
        let mut rec = |r: ReadDone| out[r.tag as usize] = (r.admitted, r.data);
        for (i, &(addr, t)) in reads.iter().enumerate() {
            d.submit_read(addr, t, i as u64, &mut rec);
        }
        d.finish(&mut rec);
        out
    }

    #[test]
    fn a_later_row_hit_is_served_before_an_earlier_conflict() {
        let s = ddr4_3200();
        let (cl, b) = (s.cl as u64, 4);
        let late = s.tras as u64 - 2; // before the conflict's precharge may issue
        let reads = [
            (at(0, 0, 5, 0), 0),    // opens row 5
            (at(0, 0, 9, 0), 1),    // another row: precharge no earlier than tRAS
            (at(0, 0, 5, 1), late), // row 5 again, too late to fit before that precharge
        ];
        let mut d = ddr4();
        let got = run(&mut d, &reads);
        // Queued, the hit goes first and the conflict waits for it (tRTP).
        assert_eq!(got[2].1, late + cl + b, "{got:?}");
        assert!(got[1].1 > got[2].1);
        assert_eq!(got[1].1, late + (s.trtp + s.trp + s.trcd) as u64 + cl + b);
        assert_eq!(
            (d.stats.row_hits, d.stats.row_misses, d.stats.row_conflicts),
            (1, 1, 1)
        );
        // Answered at arrival instead, the conflict is committed first and
        // the late read becomes a second conflict.
        let mut now = ddr4();
        for &(addr, t) in &reads {
            now.read(addr, t);
        }
        assert_eq!(now.stats.row_conflicts, 2);
    }

    #[test]
    fn the_oldest_goes_first_among_reads_that_are_not_hits() {
        let mut d = ddr4();
        let got = run(
            &mut d,
            &[
                (at(0, 0, 5, 0), 0),
                (at(0, 0, 9, 0), 1),
                (at(0, 0, 7, 0), 2),
            ],
        );
        assert!(got[0].1 < got[1].1 && got[1].1 < got[2].1, "{got:?}");
        assert_eq!(d.stats.row_conflicts, 2);
    }

    #[test]
    fn the_window_holds_at_most_read_queue_waiting_reads() {
        let q = ddr4_3200().read_queue as usize;
        let mut d = ddr4();
        // Reads to rows of one bank at once: each a conflict.
        let reads: Vec<_> = (0..3 * q as u64).map(|i| (at(0, 0, i, 0), 0)).collect();
        let got = run(&mut d, &reads);
        let cas = |k: usize| got[k].1 - d.read_latency;
        for k in 0..got.len() {
            let admit = got[k].0;
            if k < q {
                assert_eq!(admit, 0);
            }
            let waiting = (0..k)
                .filter(|&j| got[j].0 <= admit && admit < cas(j))
                .count();
            assert!(waiting < q, "read {k}: {waiting} waiting at {admit}");
        }
        assert!(got[3 * q - 1].0 > 0);
    }

    #[test]
    fn same_requests_same_results_queued() {
        let go = || {
            let mut d = ddr4();
            let mut out = Vec::new();
            let mut rec = |r: ReadDone| out.push((r.tag, r.admitted, r.data));
            let mut x = 99u64;
            let mut t = 0;
            for i in 0..20_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                t += 1 + x % 20;
                let addr = if x.is_multiple_of(4) {
                    x % (1 << 30)
                } else {
                    at(x % 4, 1, x % 3, x % 128)
                };
                if x.is_multiple_of(5) {
                    d.submit_write(addr & !63, t, &mut rec);
                } else {
                    t = t.max(d.submit_read(addr & !63, t, i, &mut rec));
                }
            }
            d.finish(&mut rec);
            (out, d.stats.clone())
        };
        let (a, sa) = go();
        assert_eq!(a.len() as u64, sa.reads);
        assert_eq!((a, sa), go());
    }
}
