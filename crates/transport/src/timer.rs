//! Per-message timers checked by a sequential scan (NanoTransport §3.5,
//! §4.3).
//!
//! The hardware keeps one entry per message id in a single memory: a valid
//! bit, a 64-bit expiry time and metadata. A background scanner visits the
//! entries one after another and, when it finds a valid entry whose expiry
//! has passed, clears it and triggers a timeout event with its metadata.
//! Scheduling (`ScheduleEvent`), re-scheduling (`ReScheduleEvent`) and
//! cancelling (`CancelEvent`) are single writes to the entry. Timers do not
//! fire exactly on time nor in expiry order, but within a bound: one full
//! scan of the memory.
//!
//! The simulator does not step the scanner. Entry `k` is visited at
//! `k * check + n * entries * check` for n = 0, 1, 2, … from time zero, so a
//! timer's firing time is known when it is written: the first visit of its
//! entry at or after its expiry. Armed timers sit in a binary heap keyed by
//! firing time; [`TimerModule::next_fire`] is O(1), [`TimerModule::poll`] pops
//! what is due, and an idle module costs nothing. Nothing allocates after
//! construction: superseded heap items are skipped when they reach the top
//! and purged in place when the heap's preallocated capacity fills.
//! Moving a timer later (what a reassembly timer gets on every packet)
//! touches only its entry: its heap item, keyed earlier, is moved to the
//! true firing time when it reaches the top, so the top always holds the
//! true earliest firing time.
//!
//! Assumptions where the paper is silent:
//! - The scanner checks one entry per `check` (e.g. one 312.5 ps NIC clock),
//!   starts at entry 0 at time zero and never stalls; a full scan takes
//!   `entries * check`, so a timer fires less than `entries * check` after
//!   it expires (and never before).
//! - A write at instant `t` is seen by a visit at `t`: the firing time is the
//!   first visit at or after the expiry. An expiry already in the past is
//!   treated as expiring at the latest `now` passed to [`TimerModule::poll`],
//!   so a reported firing time is never earlier than a previous poll; callers
//!   normally schedule `now + timeout` and never hit this case.
//! - Firing clears the valid bit (the timeout handler re-schedules if it
//!   wants another timer, NT §3.4.3).
//! - Ids outside `0..entries` are ignored: scheduling them does nothing and
//!   the other operations report "not armed". Hardware would index with the
//!   low bits; here a bad id is a transport bug that should not corrupt
//!   another message's timer.
//! - A firing time beyond `u64::MAX` femtoseconds (five hours) never comes:
//!   such a timer stays armed and never fires.

use nanopu_sim::{SimDuration, SimTime};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// An armed entry: the valid bit is `Some`.
#[derive(Clone, Copy, Debug)]
struct Armed<M> {
    expires: SimTime,
    meta: M,
    /// First visit at or after `expires`, in fs; `None` if beyond `u64`.
    fire: Option<u64>,
}

/// One timer entry.
#[derive(Clone, Copy, Debug)]
struct Entry<M> {
    armed: Option<Armed<M>>,
    /// Incremented whenever the entry gets a new heap item, so items of
    /// earlier writes are recognised as stale.
    seq: u64,
    /// The key of the entry's live heap item (the one with `seq`), if it
    /// has one: at most its firing time (later if the timer was moved
    /// since). An armed timer that will fire always has one.
    queued: Option<u64>,
}

/// A heap item: (firing time in fs, entry id, write sequence number),
/// smallest first; equal firing times pop the lower id first.
type Item = Reverse<(u64, usize, u64)>;

/// A timer module: one timer per message id, checked by a sequential scan
/// (NT §3.5, §4.3). `M` is the metadata returned when a timer fires (e.g.
/// `rtx_offset` for the packetization module, NT §3.4.3).
#[derive(Clone, Debug)]
pub struct TimerModule<M: Copy> {
    /// Entries `0..entries.len()`; those beyond (never armed) are disarmed.
    entries: Vec<Entry<M>>,
    /// Number of entries (message ids `0..size`).
    size: usize,
    check_fs: u64,
    /// `size * check_fs`, if that fits in a `u64` (it does for any real
    /// configuration; visits are then computed without 128-bit division).
    period_fs: Option<u64>,
    /// Armed timers by firing time; may hold stale items, but never at the
    /// top.
    heap: BinaryHeap<Item>,
    armed: usize,
    /// Latest `now` given to `poll`, in fs.
    watermark: u64,
}

impl<M: Copy> TimerModule<M> {
    /// A module of `entries` timers (one per message id), all disarmed,
    /// whose scanner takes `check` to check one entry.
    ///
    /// # Panics
    /// If `check` is zero (configuration is validated upstream).
    pub fn new(entries: usize, check: SimDuration) -> Self {
        assert!(
            check.0 > 0,
            "timer module: the time to check one entry must be positive"
        );
        TimerModule {
            // Grown on first use of an id: an idle host's module costs
            // nothing however many ids it has.
            entries: Vec::new(),
            size: entries,
            check_fs: check.0,
            period_fs: (entries as u64).checked_mul(check.0),
            heap: BinaryHeap::new(),
            armed: 0,
            watermark: 0,
        }
    }

    /// Number of entries (message ids `0..entries`).
    pub fn entries(&self) -> usize {
        self.size
    }

    /// Time the scanner takes to check one entry.
    pub fn check(&self) -> SimDuration {
        SimDuration(self.check_fs)
    }

    /// Time for one full scan of all entries: the bound on how late a timer
    /// can fire after its expiry (exclusive).
    pub fn scan_period(&self) -> SimDuration {
        SimDuration(self.check_fs.saturating_mul(self.size as u64))
    }

    /// The first visit of entry `id` at or after `t`, in fs; `None` if it
    /// does not fit in a `u64`. `id` must be in range.
    fn first_visit_fs(&self, id: usize, t: u64) -> Option<u64> {
        if let Some(period) = self.period_fs {
            // `id < size`, so `base < period` fits; a visit beyond `u64` is
            // `None` either way.
            let base = id as u64 * self.check_fs;
            if t <= base {
                return Some(base);
            }
            return (t - base)
                .div_ceil(period)
                .checked_mul(period)?
                .checked_add(base);
        }
        let check = self.check_fs as u128;
        let base = id as u128 * check;
        let period = self.size as u128 * check;
        let t = t as u128;
        let visit = if t <= base {
            base
        } else {
            base + (t - base).div_ceil(period) * period
        };
        u64::try_from(visit).ok()
    }

    /// The first time at or after `t` at which the scanner visits entry `id`;
    /// `None` if `id` is out of range or the time is beyond `SimTime::MAX`.
    pub fn first_visit(&self, id: usize, t: SimTime) -> Option<SimTime> {
        if id >= self.size {
            return None;
        }
        self.first_visit_fs(id, t.0).map(SimTime)
    }

    /// Writes entry `id` armed with `expires` and `meta`.
    fn arm(&mut self, id: usize, expires: SimTime, meta: M) {
        let fire = self.first_visit_fs(id, expires.0.max(self.watermark));
        if id >= self.entries.len() {
            self.entries.resize(
                id + 1,
                Entry {
                    armed: None,
                    seq: 0,
                    queued: None,
                },
            );
        }
        let e = &mut self.entries[id];
        if e.armed.is_none() {
            self.armed += 1;
        }
        e.armed = Some(Armed {
            expires,
            meta,
            fire,
        });
        match fire {
            // The live item is keyed no later: it is moved when it reaches
            // the top (`settle`).
            Some(fire) if e.queued.is_some_and(|key| key <= fire) => {}
            Some(fire) => {
                e.seq += 1;
                e.queued = Some(fire);
                let seq = e.seq;
                self.push(Reverse((fire, id, seq)));
            }
            // Never fires: a live item is dropped when it reaches the top.
            None => {}
        }
        self.settle();
    }

    fn push(&mut self, item: Item) {
        // The heap grows to room for every entry twice; then stale items
        // are purged when it is full, leaving at least `size` free places,
        // so pushes never grow it further.
        if self.heap.len() == self.heap.capacity() && self.heap.capacity() >= 2 * self.size + 2 {
            let entries = &self.entries;
            self.heap.retain(|item| Self::is_live(entries, item));
        }
        self.heap.push(item);
    }

    /// Whether a heap item is its entry's live item (the entry's timer may
    /// have moved later since it was pushed).
    fn is_live(entries: &[Entry<M>], item: &Item) -> bool {
        let Reverse((key, id, seq)) = *item;
        let e = &entries[id];
        e.queued == Some(key) && e.seq == seq
    }

    /// Pops stale items off the top and moves live ones whose timer moved
    /// later, so that the top, if any, is live and keyed by its true firing
    /// time.
    fn settle(&mut self) {
        while let Some(&Reverse((key, id, seq))) = self.heap.peek() {
            let e = &mut self.entries[id];
            if e.queued != Some(key) || e.seq != seq {
                self.heap.pop();
                continue;
            }
            let fire = e.armed.and_then(|a| a.fire);
            if fire == Some(key) {
                break;
            }
            self.heap.pop();
            e.queued = fire;
            if let Some(fire) = fire {
                // One popped, one pushed: no growth.
                self.heap.push(Reverse((fire, id, seq)));
            }
        }
    }

    /// `ScheduleEvent`: arms timer `id` to expire at `expires` with `meta`,
    /// replacing any timer the entry held. Ignored if `id` is out of range.
    pub fn schedule(&mut self, id: usize, expires: SimTime, meta: M) {
        if id < self.size {
            self.arm(id, expires, meta);
        }
    }

    /// `ReScheduleEvent`: moves armed timer `id` to expire at `expires`,
    /// keeping its metadata. Returns false (and does nothing) if the timer
    /// is not armed or `id` is out of range.
    pub fn reschedule(&mut self, id: usize, expires: SimTime) -> bool {
        match self.entries.get(id).and_then(|e| e.armed) {
            Some(a) => {
                self.arm(id, expires, a.meta);
                true
            }
            None => false,
        }
    }

    /// `CancelEvent`: disarms timer `id`. Returns false if it was not armed
    /// or `id` is out of range.
    pub fn cancel(&mut self, id: usize) -> bool {
        match self.entries.get_mut(id) {
            Some(e) if e.armed.is_some() => {
                e.armed = None;
                e.queued = None;
                self.armed -= 1;
                self.settle();
                true
            }
            _ => false,
        }
    }

    /// Whether timer `id` is armed (false if out of range).
    pub fn is_armed(&self, id: usize) -> bool {
        self.entries.get(id).is_some_and(|e| e.armed.is_some())
    }

    /// The expiry time of armed timer `id`.
    pub fn expires(&self, id: usize) -> Option<SimTime> {
        self.entries.get(id)?.armed.map(|a| a.expires)
    }

    /// When armed timer `id` will fire; `None` if it is not armed or will
    /// never fire.
    pub fn fire_time(&self, id: usize) -> Option<SimTime> {
        self.entries.get(id)?.armed?.fire.map(SimTime)
    }

    /// Number of armed timers.
    pub fn armed(&self) -> usize {
        self.armed
    }

    /// The earliest firing time of any armed timer: when [`TimerModule::poll`]
    /// next has something to do. `None` when no timer will fire.
    pub fn next_fire(&self) -> Option<SimTime> {
        self.heap.peek().map(|&Reverse((fire, _, _))| SimTime(fire))
    }

    /// Disarms every timer firing at or before `now` and appends it to
    /// `fired` as `(id, metadata, firing time)`, in firing-time order (ties:
    /// lower id first). `fired` is not cleared; it allocates only if it
    /// lacks capacity.
    pub fn poll(&mut self, now: SimTime, fired: &mut Vec<(usize, M, SimTime)>) {
        self.watermark = self.watermark.max(now.0);
        while let Some(&Reverse((fire, id, _))) = self.heap.peek() {
            if fire > now.0 {
                break;
            }
            self.heap.pop();
            let e = &mut self.entries[id];
            e.queued = None;
            let a = e
                .armed
                .take()
                .expect("the top of the timer heap is always live");
            self.armed -= 1;
            fired.push((id, a.meta, SimTime(fire)));
            self.settle();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CHECK: SimDuration = SimDuration::from_ps(312);

    fn at(checks: u64) -> SimTime {
        SimTime(checks * CHECK.0)
    }

    fn poll_all<M: Copy>(t: &mut TimerModule<M>, now: SimTime) -> Vec<(usize, M, SimTime)> {
        let mut v = Vec::new();
        t.poll(now, &mut v);
        v
    }

    #[test]
    fn visit_times_follow_the_scan() {
        let t: TimerModule<()> = TimerModule::new(4, CHECK);
        assert_eq!(t.scan_period(), SimDuration(4 * CHECK.0));
        assert_eq!(t.first_visit(0, SimTime(0)), Some(SimTime(0)));
        assert_eq!(t.first_visit(2, SimTime(0)), Some(at(2)));
        assert_eq!(t.first_visit(2, at(2)), Some(at(2)));
        assert_eq!(t.first_visit(2, SimTime(at(2).0 + 1)), Some(at(6)));
        assert_eq!(t.first_visit(0, SimTime(1)), Some(at(4)));
        assert_eq!(t.first_visit(3, at(100)), Some(at(103)));
        assert_eq!(t.first_visit(4, SimTime(0)), None);
    }

    #[test]
    fn firing_waits_for_the_scanner() {
        let mut t = TimerModule::new(8, CHECK);
        // Entry 3 is visited at 3, 11, 19, ... checks.
        t.schedule(3, at(3), 'a');
        assert_eq!(t.next_fire(), Some(at(3)));
        // Expiring just after a visit: one full scan later.
        t.schedule(3, SimTime(at(3).0 + 1), 'b');
        assert_eq!(t.fire_time(3), Some(at(11)));
        assert_eq!(t.next_fire(), Some(at(11)));
        assert!(poll_all(&mut t, SimTime(at(11).0 - 1)).is_empty());
        assert!(t.is_armed(3));
        assert_eq!(poll_all(&mut t, at(11)), vec![(3, 'b', at(11))]);
        assert!(!t.is_armed(3));
        assert_eq!(t.armed(), 0);
        assert_eq!(t.next_fire(), None);
    }

    #[test]
    fn firing_is_late_by_less_than_one_scan() {
        let mut t = TimerModule::new(5, CHECK);
        for id in 0..5 {
            for e in 0..(3 * 5 * CHECK.0 / 97) {
                let expires = SimTime(e * 97);
                t.schedule(id, expires, ());
                let fire = t.fire_time(id).unwrap();
                assert!(fire >= expires);
                assert!(fire.0 - expires.0 < t.scan_period().0);
                assert_eq!((fire.0 / CHECK.0) % 5, id as u64);
                assert_eq!(fire.0 % CHECK.0, 0);
            }
        }
    }

    #[test]
    fn cancel_prevents_firing() {
        let mut t = TimerModule::new(4, CHECK);
        t.schedule(1, at(10), 7u32);
        t.schedule(2, at(20), 8u32);
        assert_eq!(t.armed(), 2);
        assert!(t.cancel(1));
        assert!(!t.cancel(1));
        assert!(!t.is_armed(1));
        assert_eq!(t.armed(), 1);
        assert_eq!(t.next_fire(), t.fire_time(2));
        assert_eq!(poll_all(&mut t, at(1000)), vec![(2, 8, at(22))]);
        assert!(!t.cancel(2));
        assert_eq!(t.next_fire(), None);
    }

    #[test]
    fn reschedule_moves_the_timer_and_keeps_metadata() {
        let mut t = TimerModule::new(4, CHECK);
        assert!(!t.reschedule(1, at(5)));
        assert!(!t.is_armed(1));
        t.schedule(1, at(5), 42u32);
        assert_eq!(t.fire_time(1), Some(at(5)));
        // Later (the ingress timer on each arriving packet).
        assert!(t.reschedule(1, at(30)));
        assert_eq!(t.expires(1), Some(at(30)));
        assert_eq!(t.fire_time(1), Some(at(33)));
        // Earlier.
        assert!(t.reschedule(1, at(12)));
        assert_eq!(t.next_fire(), Some(at(13)));
        assert_eq!(poll_all(&mut t, at(100)), vec![(1, 42, at(13))]);
        assert!(!t.reschedule(1, at(200)));
        assert_eq!(t.armed(), 0);
    }

    #[test]
    fn schedule_rearms_with_new_metadata() {
        let mut t = TimerModule::new(4, CHECK);
        t.schedule(0, at(4), 1u8);
        t.schedule(0, at(8), 2u8);
        assert_eq!(t.armed(), 1);
        assert_eq!(poll_all(&mut t, at(100)), vec![(0, 2, at(8))]);
        // Re-armed to the same firing time: still fires once.
        t.schedule(0, at(200), 3u8);
        t.schedule(0, at(200), 4u8);
        assert_eq!(poll_all(&mut t, at(300)), vec![(0, 4, at(200))]);
    }

    #[test]
    fn poll_reports_in_firing_time_order() {
        let mut t = TimerModule::new(4, CHECK);
        // Expiry order differs from firing order: the scan decides.
        t.schedule(3, at(0), 'd'); // fires at 3
        t.schedule(0, at(1), 'a'); // fires at 4
        t.schedule(2, at(3), 'c'); // fires at 6
        t.schedule(1, at(2), 'b'); // fires at 5
        let mut fired = vec![(99, 'z', SimTime(0))];
        t.poll(at(4), &mut fired);
        assert_eq!(
            fired,
            vec![(99, 'z', SimTime(0)), (3, 'd', at(3)), (0, 'a', at(4))]
        );
        assert_eq!(t.next_fire(), Some(at(5)));
        fired.clear();
        t.poll(at(10), &mut fired);
        assert_eq!(fired, vec![(1, 'b', at(5)), (2, 'c', at(6))]);
        assert_eq!(t.next_fire(), None);
    }

    #[test]
    fn an_expiry_in_the_past_fires_no_earlier_than_the_last_poll() {
        let mut t = TimerModule::new(4, CHECK);
        assert!(poll_all(&mut t, at(50)).is_empty());
        t.schedule(1, at(3), ());
        // First visit of entry 1 at or after the poll at 50 checks.
        assert_eq!(t.fire_time(1), Some(at(53)));
        assert_eq!(poll_all(&mut t, at(60)), vec![(1, (), at(53))]);
    }

    #[test]
    fn out_of_range_ids_are_ignored() {
        let mut t = TimerModule::new(2, CHECK);
        t.schedule(2, at(0), ());
        t.schedule(usize::MAX, at(0), ());
        assert_eq!(t.armed(), 0);
        assert!(!t.is_armed(2));
        assert!(!t.reschedule(2, at(1)));
        assert!(!t.cancel(usize::MAX));
        assert_eq!(t.expires(5), None);
        assert_eq!(t.fire_time(5), None);
        assert_eq!(t.next_fire(), None);
        let mut empty: TimerModule<()> = TimerModule::new(0, CHECK);
        empty.schedule(0, at(0), ());
        assert!(poll_all(&mut empty, SimTime::MAX).is_empty());
    }

    #[test]
    fn a_firing_time_beyond_u64_never_comes() {
        let mut t = TimerModule::new(4, CHECK);
        t.schedule(3, SimTime::MAX, ());
        assert!(t.is_armed(3));
        assert_eq!(t.fire_time(3), None);
        assert_eq!(t.next_fire(), None);
        assert!(poll_all(&mut t, SimTime::MAX).is_empty());
        assert!(t.cancel(3));
    }

    #[test]
    #[should_panic(expected = "must be positive")]
    fn zero_check_time_is_rejected() {
        let _: TimerModule<()> = TimerModule::new(4, SimDuration::ZERO);
    }

    #[test]
    fn rescheduling_does_not_grow_the_heap() {
        let mut t = TimerModule::new(4, CHECK);
        let mut cap = 0;
        for i in 0..10_000u64 {
            // The heap starts empty and grows to room for every entry
            // twice (at most double that after rounding); then it stays.
            if i == 1_000 {
                cap = t.heap.capacity();
                assert!((10..=20).contains(&cap), "{cap}");
            }
            let id = (i % 4) as usize;
            t.schedule(id, at(i + 1000), i);
            if i % 3 == 0 {
                t.reschedule(id, at(i + 2000));
            }
            if i % 7 == 0 {
                t.cancel((i % 4) as usize);
            }
        }
        assert_eq!(t.heap.capacity(), cap);
        assert!(t.heap.len() <= cap);
    }

    /// One operation of the property test, at `dt` after the previous one.
    #[derive(Clone, Debug)]
    enum Op {
        Schedule { id: usize, delay: u64 },
        Reschedule { id: usize, delay: u64 },
        Cancel { id: usize },
    }

    fn op() -> impl Strategy<Value = (u64, Op)> {
        let id = 0usize..8;
        let kind = prop_oneof![
            (id.clone(), 0u64..60).prop_map(|(id, delay)| Op::Schedule { id, delay }),
            (id.clone(), 0u64..60).prop_map(|(id, delay)| Op::Reschedule { id, delay }),
            id.prop_map(|id| Op::Cancel { id }),
        ];
        (0u64..15, kind)
    }

    /// The scanner stepped one visit at a time, as the hardware does.
    struct Brute {
        entries: Vec<Option<(u64, u32)>>,
        check: u64,
        /// Next visit number: visit v is at v * check, of entry v % entries.
        next_visit: u64,
        fired: Vec<(usize, u32, SimTime)>,
    }

    impl Brute {
        /// Runs every visit at a time `< end`.
        fn run_before(&mut self, end: u64) {
            let n = self.entries.len() as u64;
            while self.next_visit * self.check < end {
                let t = self.next_visit * self.check;
                let k = (self.next_visit % n) as usize;
                if let Some((expires, meta)) = self.entries[k] {
                    if expires <= t {
                        self.entries[k] = None;
                        self.fired.push((k, meta, SimTime(t)));
                    }
                }
                self.next_visit += 1;
            }
        }

        /// The first visit at or after `from` that fires something.
        fn next_fire(&self, from: u64) -> Option<u64> {
            let n = self.entries.len() as u64;
            let horizon = self.entries.iter().flatten().map(|e| e.0).max()?;
            let mut v = from.div_ceil(self.check);
            loop {
                let t = v * self.check;
                if let Some((expires, _)) = self.entries[(v % n) as usize] {
                    if expires <= t {
                        return Some(t);
                    }
                }
                assert!(t <= horizon + n * self.check, "brute-force scan ran away");
                v += 1;
            }
        }
    }

    proptest! {
        /// The heap-based module against a visit-by-visit scan: same timers
        /// fire, with the same metadata, at the same times, in the same
        /// order; same next firing time after every operation. Operations at
        /// instant `t` happen before the scanner's visit at `t`.
        #[test]
        fn matches_a_brute_force_scan(
            entries in 1usize..7,
            check in 1u64..5,
            ops in prop::collection::vec(op(), 0..150),
        ) {
            let mut t: TimerModule<u32> = TimerModule::new(entries, SimDuration(check));
            let mut b = Brute {
                entries: vec![None; entries],
                check,
                next_visit: 0,
                fired: Vec::new(),
            };
            let mut fired = Vec::new();
            let mut now = 0u64;
            for (meta, (dt, op)) in ops.into_iter().enumerate() {
                let meta = meta as u32;
                now += dt;
                b.run_before(now);
                if now > 0 {
                    t.poll(SimTime(now - 1), &mut fired);
                }
                prop_assert_eq!(&fired, &b.fired);
                match op {
                    Op::Schedule { id, delay } => {
                        t.schedule(id, SimTime(now + delay), meta);
                        if id < entries {
                            b.entries[id] = Some((now + delay, meta));
                        }
                    }
                    Op::Reschedule { id, delay } => {
                        let armed = id < entries && b.entries[id].is_some();
                        prop_assert_eq!(t.reschedule(id, SimTime(now + delay)), armed);
                        if armed {
                            b.entries[id].as_mut().unwrap().0 = now + delay;
                        }
                    }
                    Op::Cancel { id } => {
                        let armed = id < entries && b.entries[id].is_some();
                        prop_assert_eq!(t.cancel(id), armed);
                        if armed {
                            b.entries[id] = None;
                        }
                    }
                }
                prop_assert_eq!(t.armed(), b.entries.iter().flatten().count());
                prop_assert_eq!(t.next_fire(), b.next_fire(now).map(SimTime));
            }
            let end = now + 100 + entries as u64 * check;
            b.run_before(end + 1);
            t.poll(SimTime(end), &mut fired);
            prop_assert_eq!(&fired, &b.fired);
            prop_assert_eq!(t.armed(), 0);
            prop_assert_eq!(t.next_fire(), None);
        }
    }
}
