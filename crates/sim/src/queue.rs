//! A deterministic event queue: events come out in time order, and events
//! at the same time in the order they were scheduled (a sequence number
//! breaks ties), so a run never depends on heap internals.

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

/// Bits of a scheduling place below the origin ([`EventQueue::with_origin`]):
/// 2^48 places per origin.
const ORIGIN_SHIFT: u32 = 48;

/// A place in scheduling order (see [`EventQueue::reserve`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reserved(u64);

/// Events of type `E` ordered by (time, scheduling order).
pub struct EventQueue<E> {
    heap: QuaternaryHeap<Reverse<Key>>,
    /// Pending events, by slot; freed slots are reused (no allocation per
    /// event once the queue has reached its largest size).
    slots: Vec<Option<E>>,
    free: Vec<u32>,
    seq: u64,
    now: SimTime,
    /// Events scheduled in the past and moved to `now` (a causality slip
    /// the caller should keep at zero; counted, never silently reordered).
    pub late: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: QuaternaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            seq: 0,
            now: SimTime::ZERO,
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
        self.heap.push(Reverse(Key {
            time,
            seq: seq.0,
            slot,
        }));
    }

    /// The time of the next event.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|Reverse(k)| k.time)
    }

    /// Takes the next event if it is due at or before `until`.
    pub fn pop_until(&mut self, until: SimTime) -> Option<(SimTime, E)> {
        if self.peek_time()? > until {
            return None;
        }
        let Reverse(k) = self.heap.pop()?;
        self.now = k.time;
        let event = self.slots[k.slot as usize]
            .take()
            .expect("a pending event's slot is full");
        self.free.push(k.slot);
        Some((k.time, event))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
        let (mut a, mut b) = (EventQueue::with_origin(1), EventQueue::with_origin(2));
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

    proptest::proptest! {
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
