//! A deterministic event queue: events come out in time order, and events
//! at the same time in the order they were scheduled (a sequence number
//! breaks ties), so a run never depends on the queue's internals.
//!
//! The near future is a timing wheel: [`WHEEL_BUCKETS`] buckets of
//! 2^[`TICK_SHIFT`] fs (about a nanosecond) each, so scheduling is a push
//! and taking the next event looks at one small bucket (sorted when it
//! becomes the current one). Events beyond the wheel's reach (timeouts)
//! wait in a 4-ary heap and move onto the wheel as it turns.
//!
//! Events stay in one slab of slots from scheduling to handling; a bucket
//! is a list threaded through the slots, so scheduling and taking an event
//! allocate nothing once the slab has reached the queue's largest size,
//! and an event is moved twice (in, out) however long it waits.

use crate::time::SimTime;
use dary_heap::QuaternaryHeap;
use std::cmp::Reverse;

/// What the heap and the current bucket order: an event's time, its
/// scheduling order, and the slot holding the event (24 bytes, however
/// large the event is). A 4-ary heap is half as deep as a binary one
/// (queues hold tens of thousands of pending timeouts in long runs).
#[derive(Clone, Copy)]
struct Key {
    time: SimTime,
    seq: u64,
    slot: u32,
}

impl Key {
    /// Time, then scheduling order, as one number: compared in two
    /// branch-free instructions (sorting a tick's keys is most of turning
    /// the wheel).
    #[inline]
    fn order(&self) -> u128 {
        ((self.time.0 as u128) << 64) | self.seq as u128
    }
}

impl PartialEq for Key {
    fn eq(&self, o: &Self) -> bool {
        self.order() == o.order()
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.order().cmp(&o.order())
    }
}

/// A wheel bucket spans 2^TICK_SHIFT fs (1.05 ns): a network's events are
/// spread a few per nanosecond at the most.
const TICK_SHIFT: u32 = 20;
/// Buckets on the wheel: 4,096 ticks (4.3 us) ahead of the current one.
const WHEEL_BUCKETS: usize = 4096;
// `occupied_words` has one bit per word of `occupied`.
const _: () = assert!(WHEEL_BUCKETS / 64 <= 64);

fn tick(t: SimTime) -> u64 {
    t.0 >> TICK_SHIFT
}

/// No slot (the end of a list).
const NIL: u32 = u32::MAX;

/// Bits of a scheduling place below the origin ([`EventQueue::with_origin`]):
/// 2^48 places per origin.
const ORIGIN_SHIFT: u32 = 48;

/// A place in scheduling order (see [`EventQueue::reserve`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reserved(u64);

/// A pending event and its key, or a free slot.
struct Slot<E> {
    time: SimTime,
    seq: u64,
    /// The next slot of its wheel bucket, or of the free list.
    next: u32,
    event: Option<E>,
}

/// Events of type `E` ordered by (time, scheduling order).
pub struct EventQueue<E> {
    /// Per bucket, the first slot of its list of keys due in ticks
    /// `tick + 1 .. tick + WHEEL_BUCKETS` (bucket `t % WHEEL_BUCKETS`;
    /// allocated on first use). The current tick's keys are in `current_keys`.
    heads: Vec<u32>,
    /// One bit per bucket, set while its list is not empty, so that the
    /// next key is found by bit scans, not by walking buckets (a
    /// partitioned run has many sparse queues).
    occupied: Vec<u64>,
    /// One bit per word of `occupied`, set while the word is not zero: the
    /// next non-empty bucket is two bit scans away, however far ahead.
    occupied_words: u64,
    /// The current tick: no pending key is earlier.
    tick: u64,
    /// The current tick's keys, latest first.
    current_keys: Vec<Key>,
    /// Keys on the wheel (`current_keys` included).
    on_wheel: usize,
    /// Keys due at `tick + WHEEL_BUCKETS` or later.
    far: QuaternaryHeap<Reverse<Key>>,
    /// Pending events; freed slots are reused (a list through `next`).
    slots: Vec<Slot<E>>,
    free: u32,
    seq: u64,
    now: SimTime,
    /// The scheduling place of the last event taken.
    current: u64,
    /// Events scheduled in the past and moved to `now` (a causality slip
    /// the caller should keep at zero; counted, never silently reordered).
    pub late: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heads: Vec::new(),
            occupied: Vec::new(),
            occupied_words: 0,
            tick: 0,
            current_keys: Vec::new(),
            on_wheel: 0,
            far: QuaternaryHeap::new(),
            slots: Vec::new(),
            free: NIL,
            seq: 0,
            now: SimTime::ZERO,
            current: 0,
            late: 0,
        }
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self::default()
    }

    /// A queue whose scheduling order starts at `origin`'s own range: the
    /// places it hands out ([`EventQueue::reserve`]) are
    /// `(origin, 1), (origin, 2), ...`, so events several queues exchange
    /// (a partitioned simulation's) keep one total order, by time, then
    /// origin, then the origin's order, whichever queue holds them.
    pub fn with_origin(origin: u16) -> Self {
        EventQueue {
            seq: (origin as u64) << ORIGIN_SHIFT,
            ..Self::default()
        }
    }

    /// The time of the last event taken.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// The place in scheduling order of the last event taken: with
    /// [`EventQueue::now`], where the present is in the total order of
    /// events (an event reserved at `r` and due at `t` comes before the
    /// present iff `(t, r) < (now, current)`).
    pub fn current(&self) -> Reserved {
        Reserved(self.current)
    }

    /// Schedules `event` at `time` (at `now` if `time` has already passed).
    #[inline]
    pub fn schedule(&mut self, time: SimTime, event: E) {
        let seq = self.reserve();
        self.schedule_reserved(time, seq, event);
    }

    /// Takes the next place in scheduling order without scheduling anything
    /// yet: an event later scheduled with it (by
    /// [`EventQueue::schedule_reserved`]) is ordered among events at its
    /// time as if it had been scheduled now. A model that keeps many
    /// pending deadlines in a FIFO of its own (a load generator's
    /// timeouts) keeps only the earliest in the queue, with the same
    /// outcome as scheduling them all.
    #[inline]
    pub fn reserve(&mut self) -> Reserved {
        self.seq += 1;
        Reserved(self.seq)
    }

    /// Schedules `event` at `time` in the place `seq` reserved (at `now` if
    /// `time` has already passed).
    #[inline]
    pub fn schedule_reserved(&mut self, time: SimTime, seq: Reserved, event: E) {
        let time = if time < self.now {
            self.late += 1;
            self.now
        } else {
            time
        };
        let t = tick(time);
        // The common case, a tick ahead on the wheel (not the current one):
        // the slot joins its bucket's list.
        let bucket = (t.wrapping_sub(self.tick).wrapping_sub(1) < WHEEL_BUCKETS as u64 - 1
            && !self.heads.is_empty())
        .then_some(t as usize % WHEEL_BUCKETS);
        let next = bucket.map_or(NIL, |i| self.heads[i]);
        let slot = if self.free != NIL {
            // Filled in place: the event is moved once.
            let slot = self.free;
            let s = &mut self.slots[slot as usize];
            self.free = s.next;
            s.time = time;
            s.seq = seq.0;
            s.next = next;
            // A free slot holds `None`: nothing to drop.
            debug_assert!(s.event.is_none());
            std::mem::forget(s.event.replace(event));
            slot
        } else {
            self.slots.push(Slot {
                time,
                seq: seq.0,
                next,
                event: Some(event),
            });
            u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 pending events")
        };
        match bucket {
            Some(i) => {
                self.heads[i] = slot;
                self.occupied[i / 64] |= 1 << (i % 64);
                self.occupied_words |= 1 << (i / 64);
                self.on_wheel += 1;
            }
            None => self.insert(Key {
                time,
                seq: seq.0,
                slot,
            }),
        }
    }

    /// Puts `k` (not earlier than the current tick; its slot holds its
    /// time and place) on the wheel or in the far heap.
    fn insert(&mut self, k: Key) {
        let t = tick(k.time);
        debug_assert!(t >= self.tick, "a key before the current tick");
        let ahead = t - self.tick;
        if ahead == 0 {
            // Latest first: the key goes before every later one.
            let at = self.current_keys.partition_point(|x| x.order() > k.order());
            self.current_keys.insert(at, k);
        } else if ahead < WHEEL_BUCKETS as u64 {
            if self.heads.is_empty() {
                self.heads = vec![NIL; WHEEL_BUCKETS];
                self.occupied = vec![0; WHEEL_BUCKETS / 64];
            }
            let i = t as usize % WHEEL_BUCKETS;
            self.slots[k.slot as usize].next = self.heads[i];
            self.heads[i] = k.slot;
            self.occupied[i / 64] |= 1 << (i % 64);
            self.occupied_words |= 1 << (i / 64);
        } else {
            self.far.push(Reverse(k));
            return;
        }
        self.on_wheel += 1;
    }

    /// The tick of the first non-empty bucket after the current one, if
    /// any list holds a key.
    fn next_tick(&self) -> Option<u64> {
        if self.on_wheel == self.current_keys.len() {
            return None;
        }
        // Buckets in tick order: from the current one round the wheel (the
        // current word from the current bucket, the words after it, the
        // words before it, the current word before the current bucket).
        let start = self.tick as usize % WHEEL_BUCKETS;
        let (w0, b0) = (start / 64, start % 64);
        let here = self.occupied[w0];
        let (from_here, words_after, words_before) = (
            here & (!0u64 << b0),
            self.occupied_words & (!1u64 << w0),
            self.occupied_words & ((1u64 << w0) - 1),
        );
        let (w, bits) = if from_here != 0 {
            (w0, from_here)
        } else if words_after | words_before != 0 {
            // The first non-empty word after the current, else before it.
            let ws = if words_after != 0 {
                words_after
            } else {
                words_before
            };
            let w = ws.trailing_zeros() as usize;
            (w, self.occupied[w])
        } else if here != 0 {
            (w0, here)
        } else {
            return None;
        };
        let i = w * 64 + bits.trailing_zeros() as usize;
        let ahead = (i + WHEEL_BUCKETS - start) % WHEEL_BUCKETS;
        Some(self.tick + ahead as u64)
    }

    /// The earliest time in bucket `i`'s list.
    fn bucket_min(&self, i: usize) -> Option<SimTime> {
        let mut s = self.heads[i];
        let mut min = None;
        while s != NIL {
            let slot = &self.slots[s as usize];
            min = Some(min.map_or(slot.time, |m: SimTime| m.min(slot.time)));
            s = slot.next;
        }
        min
    }

    /// The time of the next event.
    pub fn peek_time(&self) -> Option<SimTime> {
        if let Some(k) = self.current_keys.last() {
            return Some(k.time);
        }
        match self.next_tick() {
            Some(t) => self.bucket_min(t as usize % WHEEL_BUCKETS),
            None => self.far.peek().map(|Reverse(k)| k.time),
        }
    }

    /// Makes tick `t` (no key is earlier; `current_keys` is empty) the
    /// current one: its bucket's keys become the current keys, far keys
    /// the wheel now reaches move onto it.
    fn turn_to(&mut self, t: u64) {
        debug_assert!(self.current_keys.is_empty() && t > self.tick);
        self.tick = t;
        if !self.heads.is_empty() {
            let i = t as usize % WHEEL_BUCKETS;
            let mut s = std::mem::replace(&mut self.heads[i], NIL);
            self.occupied[i / 64] &= !(1 << (i % 64));
            if self.occupied[i / 64] == 0 {
                self.occupied_words &= !(1 << (i / 64));
            }
            while s != NIL {
                let slot = &self.slots[s as usize];
                self.current_keys.push(Key {
                    time: slot.time,
                    seq: slot.seq,
                    slot: s,
                });
                s = slot.next;
            }
            if self.current_keys.len() > 1 {
                self.current_keys
                    .sort_unstable_by_key(|k| Reverse(k.order()));
            }
        }
        let reach = self.tick + WHEEL_BUCKETS as u64;
        while let Some(Reverse(k)) = self.far.peek() {
            if tick(k.time) >= reach {
                break;
            }
            let Reverse(k) = self.far.pop().expect("peeked");
            self.insert(k);
        }
    }

    /// Takes the next event if it is due at or before `until`.
    #[inline]
    pub fn pop_until(&mut self, until: SimTime) -> Option<(SimTime, E)> {
        // The common case: more keys in the current tick, whose last is
        // the earliest of all (later buckets and far keys are later).
        if self.current_keys.is_empty() && !self.advance(until) {
            return None;
        }
        let k = *self.current_keys.last()?;
        if k.time > until {
            return None;
        }
        self.current_keys.pop();
        Some(self.take(k))
    }

    /// With no key left in the current tick, turns the wheel to the next
    /// tick with a key if that key is due at or before `until`; returns
    /// whether it did.
    #[cold]
    fn advance(&mut self, until: SimTime) -> bool {
        let (t, on_wheel) = match self.next_tick() {
            Some(t) => (t, true),
            None => match self.far.peek() {
                Some(Reverse(k)) => (tick(k.time), false),
                None => return false,
            },
        };
        // The tick is not turned to unless its first key is due: events may
        // still be scheduled before it.
        let tick_last = SimTime(((t + 1) << TICK_SHIFT) - 1);
        if until < tick_last {
            let first = if on_wheel {
                self.bucket_min(t as usize % WHEEL_BUCKETS)
            } else {
                self.far.peek().map(|Reverse(k)| k.time)
            };
            if first.is_none_or(|f| f > until) {
                return false;
            }
        }
        self.turn_to(t);
        true
    }

    /// Takes the event of `k`, just removed from the current keys.
    #[inline]
    fn take(&mut self, k: Key) -> (SimTime, E) {
        self.on_wheel -= 1;
        self.now = k.time;
        self.current = k.seq;
        let slot = &mut self.slots[k.slot as usize];
        let event = slot.event.take().expect("a pending event's slot is full");
        slot.next = self.free;
        self.free = k.slot;
        (k.time, event)
    }

    pub fn len(&self) -> usize {
        self.on_wheel + self.far.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_order_then_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(20), "c");
        q.schedule(SimTime(10), "a");
        q.schedule(SimTime(20), "d");
        q.schedule(SimTime(10), "b");
        let out: Vec<_> = std::iter::from_fn(|| q.pop_until(SimTime::MAX).map(|e| e.1)).collect();
        assert_eq!(out, ["a", "b", "c", "d"]);
    }

    #[test]
    fn origins_order_ties_whichever_queue_holds_them() {
        let (mut a, mut b) = (
            EventQueue::<&str>::with_origin(1),
            EventQueue::with_origin(2),
        );
        let from_b = b.reserve();
        let from_a = a.reserve();
        // Scheduled in b after its own later event, still ordered by origin.
        b.schedule(SimTime(10), "b-late");
        b.schedule_reserved(SimTime(10), from_a, "a");
        b.schedule_reserved(SimTime(10), from_b, "b-early");
        let out: Vec<_> = std::iter::from_fn(|| b.pop_until(SimTime::MAX).map(|e| e.1)).collect();
        assert_eq!(out, ["a", "b-early", "b-late"]);
    }

    #[test]
    fn past_events_are_counted_and_run_now() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(50), 1);
        assert_eq!(q.pop_until(SimTime(100)), Some((SimTime(50), 1)));
        q.schedule(SimTime(10), 2);
        assert_eq!(q.late, 1);
        assert_eq!(q.pop_until(SimTime(100)), Some((SimTime(50), 2)));
        assert_eq!(q.pop_until(SimTime(100)), None);
    }

    #[test]
    fn a_reserved_place_orders_as_if_scheduled_then() {
        let mut q = EventQueue::new();
        let early = q.reserve();
        q.schedule(SimTime(10), "b");
        q.schedule_reserved(SimTime(10), early, "a");
        q.schedule(SimTime(5), "first");
        let out: Vec<_> = std::iter::from_fn(|| q.pop_until(SimTime::MAX).map(|e| e.1)).collect();
        assert_eq!(out, ["first", "a", "b"]);
    }

    #[test]
    fn current_is_the_place_of_the_last_event_taken() {
        let mut q = EventQueue::new();
        let early = q.reserve();
        q.schedule(SimTime(10), "b");
        let b = Reserved(early.0 + 1);
        q.schedule_reserved(SimTime(10), early, "a");
        assert_eq!(q.pop_until(SimTime::MAX), Some((SimTime(10), "a")));
        assert_eq!(q.current(), early);
        assert_eq!(q.pop_until(SimTime::MAX), Some((SimTime(10), "b")));
        assert_eq!(q.current(), b);
    }

    proptest::proptest! {
        /// As `matches_a_stable_sort`, with times spread over the wheel,
        /// past its reach (the far heap) and onto exact ties.
        #[test]
        fn matches_a_stable_sort_across_the_wheel(ops in proptest::collection::vec((0u64..6, 0u64..(1 << 34), proptest::bool::ANY), 1..400)) {
            let mut q = EventQueue::new();
            let mut pending: Vec<(u64, u64, usize)> = Vec::new();
            let (mut seq, mut now) = (0u64, 0u64);
            for (i, &(kind, x, pop)) in ops.iter().enumerate() {
                if pop {
                    pending.sort();
                    let want = (!pending.is_empty()).then(|| pending.remove(0));
                    let got = q.pop_until(SimTime::MAX);
                    proptest::prop_assert_eq!(got.map(|(t, e)| (t.0, e)), want.map(|(t, _, e)| (t, e)));
                    if let Some((t, _, _)) = want {
                        now = t;
                    }
                } else {
                    // Ties at now, the same tick, the next ticks, the whole
                    // wheel, far beyond.
                    let t = match kind {
                        0 => now,
                        1 => now + x % (1 << 20),
                        2 => now + x % (1 << 23),
                        3 => now + x % (1 << 32),
                        4 => now + x,
                        _ => x,
                    };
                    seq += 1;
                    q.schedule(SimTime(t), i);
                    pending.push((t.max(now), seq, i));
                    proptest::prop_assert_eq!(q.len(), pending.len());
                    let min = pending.iter().map(|p| (p.0, p.1)).min().map(|m| m.0);
                    proptest::prop_assert_eq!(q.peek_time().map(|t| t.0), min);
                }
            }
        }

        /// Pops bounded by `until` take the next event only if it is due by
        /// then, and a refused pop leaves the queue ready for events
        /// scheduled before the one it refused.
        #[test]
        fn bounded_pops_take_only_what_is_due(ops in proptest::collection::vec((0u64..4, 0u64..(1 << 33), 0u64..3), 1..400)) {
            let mut q = EventQueue::new();
            let mut pending: Vec<(u64, u64, usize)> = Vec::new();
            let (mut seq, mut now) = (0u64, 0u64);
            for (i, &(kind, x, op)) in ops.iter().enumerate() {
                if op == 0 {
                    pending.sort();
                    let until = now + x % (1 << (10 + 8 * kind));
                    let due = pending.first().is_some_and(|p| p.0 <= until);
                    let want = due.then(|| pending.remove(0));
                    let got = q.pop_until(SimTime(until));
                    proptest::prop_assert_eq!(got.map(|(t, e)| (t.0, e)), want.map(|(t, _, e)| (t, e)));
                    if let Some((t, _, _)) = want {
                        now = t;
                    }
                } else {
                    let t = now + x % (1 << (10 + 8 * kind));
                    seq += 1;
                    q.schedule(SimTime(t), i);
                    pending.push((t, seq, i));
                }
                proptest::prop_assert_eq!(q.len(), pending.len());
                let min = pending.iter().map(|p| (p.0, p.1)).min().map(|m| m.0);
                proptest::prop_assert_eq!(q.peek_time().map(|t| t.0), min);
            }
        }

        /// Any interleaving of schedules and pops gives the events in
        /// (time, scheduling order), late ones moved to `now`: the order a
        /// stable sort of what is pending gives.
        #[test]
        fn matches_a_stable_sort(ops in proptest::collection::vec((0u64..50, proptest::bool::ANY), 1..300)) {
            let mut q = EventQueue::new();
            let mut pending: Vec<(u64, u64, usize)> = Vec::new();
            let (mut seq, mut now) = (0u64, 0u64);
            for (i, &(t, pop)) in ops.iter().enumerate() {
                if pop {
                    pending.sort();
                    let want = (!pending.is_empty()).then(|| pending.remove(0));
                    let got = q.pop_until(SimTime::MAX);
                    proptest::prop_assert_eq!(got.map(|(t, e)| (t.0, e)), want.map(|(t, _, e)| (t, e)));
                    if let Some((t, _, _)) = want {
                        now = t;
                    }
                } else {
                    seq += 1;
                    q.schedule(SimTime(t), i);
                    pending.push((t.max(now), seq, i));
                }
            }
        }
    }
}
