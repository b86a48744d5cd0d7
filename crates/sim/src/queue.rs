//! A deterministic event queue: events come out in time order, and events
//! at the same time in the order they were scheduled (a sequence number
//! breaks ties), so a run never depends on the queue's internals.
//!
//! The near future is a timing wheel: [`WHEEL_BUCKETS`] buckets of
//! 2^[`TICK_SHIFT`] fs (about a nanosecond) each, so scheduling is a push
//! and taking the next event looks at one small bucket (sorted when it
//! becomes the current one). Events beyond the wheel's reach (timeouts)
//! wait in a 4-ary heap and move onto the wheel as it turns.

use crate::time::SimTime;
use dary_heap::QuaternaryHeap;
use std::cmp::Reverse;

/// What the heap orders: an event's time, its scheduling order, and the
/// slot holding the event. The events themselves stay put in `slots`, so a
/// heap operation moves 24 bytes however large `E` is; a 4-ary heap is
/// half as deep as a binary one (queues hold tens of thousands of pending
/// timeouts in long runs).
#[derive(Clone, Copy)]
struct Key {
    time: SimTime,
    seq: u64,
    slot: u32,
}

impl PartialEq for Key {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.seq) == (o.time, o.seq)
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
        (self.time, self.seq).cmp(&(o.time, o.seq))
    }
}

/// A wheel bucket spans 2^TICK_SHIFT fs (1.05 ns): a network's events are
/// spread a few per nanosecond at the most.
const TICK_SHIFT: u32 = 20;
/// Buckets on the wheel: 4,096 ticks (4.3 us) ahead of the current one.
const WHEEL_BUCKETS: usize = 4096;

fn tick(t: SimTime) -> u64 {
    t.0 >> TICK_SHIFT
}

/// Bits of a scheduling place below the origin ([`EventQueue::with_origin`]):
/// 2^48 places per origin.
const ORIGIN_SHIFT: u32 = 48;

/// A place in scheduling order (see [`EventQueue::reserve`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reserved(u64);

/// Events of type `E` ordered by (time, scheduling order).
pub struct EventQueue<E> {
    /// Keys due in ticks `tick .. tick + WHEEL_BUCKETS`, in bucket
    /// `tick % WHEEL_BUCKETS` onwards (allocated on first use).
    wheel: Vec<Vec<Key>>,
    /// The current tick: no pending key is earlier.
    tick: u64,
    /// Whether the current tick's bucket is sorted (latest first).
    sorted: bool,
    /// Keys on the wheel.
    on_wheel: usize,
    /// One bit per bucket, set while it holds keys: the next key is found
    /// 64 buckets at a time (a partitioned run has many sparse queues).
    occupied: Vec<u64>,
    /// Keys due at `tick + WHEEL_BUCKETS` or later.
    far: QuaternaryHeap<Reverse<Key>>,
    /// Pending events, by slot; freed slots are reused (no allocation per
    /// event once the queue has reached its largest size).
    slots: Vec<Option<E>>,
    free: Vec<u32>,
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
            wheel: Vec::new(),
            tick: 0,
            sorted: false,
            on_wheel: 0,
            occupied: Vec::new(),
            far: QuaternaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
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
    pub fn reserve(&mut self) -> Reserved {
        self.seq += 1;
        Reserved(self.seq)
    }

    /// Schedules `event` at `time` in the place `seq` reserved (at `now` if
    /// `time` has already passed).
    pub fn schedule_reserved(&mut self, time: SimTime, seq: Reserved, event: E) {
        let time = if time < self.now {
            self.late += 1;
            self.now
        } else {
            time
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(event);
                slot
            }
            None => {
                self.slots.push(Some(event));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 pending events")
            }
        };
        self.insert(Key {
            time,
            seq: seq.0,
            slot,
        });
    }

    /// Puts `k` (not earlier than the current tick) on the wheel or in the
    /// far heap.
    fn insert(&mut self, k: Key) {
        let t = tick(k.time);
        debug_assert!(t >= self.tick, "a key before the current tick");
        if t - self.tick >= WHEEL_BUCKETS as u64 {
            self.far.push(Reverse(k));
            return;
        }
        if self.wheel.is_empty() {
            self.wheel = (0..WHEEL_BUCKETS).map(|_| Vec::new()).collect();
            self.occupied = vec![0; WHEEL_BUCKETS / 64];
        }
        let i = t as usize % WHEEL_BUCKETS;
        self.occupied[i / 64] |= 1 << (i % 64);
        let bucket = &mut self.wheel[i];
        if t == self.tick && self.sorted {
            // Latest first: the key goes before every later one.
            let at = bucket.partition_point(|x| (x.time, x.seq) > (k.time, k.seq));
            bucket.insert(at, k);
        } else {
            bucket.push(k);
        }
        self.on_wheel += 1;
    }

    /// The tick of the first non-empty bucket at or after the current one,
    /// if any key is on the wheel.
    fn next_tick(&self) -> Option<u64> {
        if self.on_wheel == 0 {
            return None;
        }
        // Buckets in tick order: from the current one round the wheel.
        let start = self.tick as usize % WHEEL_BUCKETS;
        let words = WHEEL_BUCKETS / 64;
        let (w0, b0) = (start / 64, start % 64);
        for k in 0..=words {
            let w = (w0 + k) % words;
            let mut bits = self.occupied[w];
            if k == 0 {
                bits &= !0u64 << b0;
            } else if k == words {
                // Back at the first word: the buckets before the current.
                bits &= (1u64 << b0) - 1;
            }
            if bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                let ahead = (i + WHEEL_BUCKETS - start) % WHEEL_BUCKETS;
                return Some(self.tick + ahead as u64);
            }
        }
        None
    }

    /// The time of the next event.
    pub fn peek_time(&self) -> Option<SimTime> {
        match self.next_tick() {
            Some(t) => {
                let b = &self.wheel[t as usize % WHEEL_BUCKETS];
                if t == self.tick && self.sorted {
                    b.last().map(|k| k.time)
                } else {
                    b.iter().map(|k| (k.time, k.seq)).min().map(|m| m.0)
                }
            }
            None => self.far.peek().map(|Reverse(k)| k.time),
        }
    }

    /// Makes tick `t` (no key is earlier) the current one: the wheel turns,
    /// far keys it now reaches move onto it.
    fn turn_to(&mut self, t: u64) {
        if t != self.tick {
            self.tick = t;
            self.sorted = false;
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
    pub fn pop_until(&mut self, until: SimTime) -> Option<(SimTime, E)> {
        // The common case: more keys in the current (sorted) bucket, whose
        // last is the earliest of all (far keys are past the wheel).
        if self.sorted {
            let i = self.tick as usize % WHEEL_BUCKETS;
            if let Some(&k) = self.wheel[i].last() {
                if k.time > until {
                    return None;
                }
                self.wheel[i].pop();
                if self.wheel[i].is_empty() {
                    self.occupied[i / 64] &= !(1 << (i % 64));
                }
                return Some(self.take(k));
            }
        }
        let t = match self.next_tick() {
            Some(t) => t,
            None => tick(self.far.peek()?.0.time),
        };
        // Every far key is past the wheel: the next key is in bucket `t`.
        let next = match self.wheel.get(t as usize % WHEEL_BUCKETS) {
            Some(b) if t == self.tick && self.sorted => b.last().map(|k| k.time),
            Some(b) if !b.is_empty() => b.iter().map(|k| (k.time, k.seq)).min().map(|m| m.0),
            _ => self.far.peek().map(|Reverse(k)| k.time),
        };
        if next? > until {
            return None;
        }
        self.turn_to(t);
        let bucket = &mut self.wheel[t as usize % WHEEL_BUCKETS];
        if !self.sorted {
            bucket.sort_unstable_by_key(|k| Reverse((k.time, k.seq)));
            self.sorted = true;
        }
        let k = bucket.pop().expect("the next tick's bucket holds a key");
        if bucket.is_empty() {
            let i = t as usize % WHEEL_BUCKETS;
            self.occupied[i / 64] &= !(1 << (i % 64));
        }
        Some(self.take(k))
    }

    /// Takes the event of `k`, just removed from the wheel.
    fn take(&mut self, k: Key) -> (SimTime, E) {
        self.on_wheel -= 1;
        self.now = k.time;
        self.current = k.seq;
        let event = self.slots[k.slot as usize]
            .take()
            .expect("a pending event's slot is full");
        self.free.push(k.slot);
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
