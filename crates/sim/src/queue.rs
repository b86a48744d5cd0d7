//! A deterministic event queue: events come out in time order, and events
//! at the same time in the order they were scheduled (a sequence number
//! breaks ties), so a run never depends on heap internals.

use crate::time::SimTime;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

struct Entry<E> {
    time: SimTime,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.seq) == (o.time, o.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.time, self.seq).cmp(&(o.time, o.seq))
    }
}

/// Events of type `E` ordered by (time, scheduling order).
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    seq: u64,
    now: SimTime,
    /// Events scheduled in the past and moved to `now` (a causality slip
    /// the caller should keep at zero; counted, never silently reordered).
    pub late: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
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

    /// The time of the last event taken.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Schedules `event` at `time` (at `now` if `time` has already passed).
    pub fn schedule(&mut self, time: SimTime, event: E) {
        let time = if time < self.now {
            self.late += 1;
            self.now
        } else {
            time
        };
        self.seq += 1;
        self.heap.push(Reverse(Entry {
            time,
            seq: self.seq,
            event,
        }));
    }

    /// The time of the next event.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|Reverse(e)| e.time)
    }

    /// Takes the next event if it is due at or before `until`.
    pub fn pop_until(&mut self, until: SimTime) -> Option<(SimTime, E)> {
        if self.peek_time()? > until {
            return None;
        }
        let Reverse(e) = self.heap.pop()?;
        self.now = e.time;
        Some((e.time, e.event))
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
    fn past_events_are_counted_and_run_now() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(50), 1);
        assert_eq!(q.pop_until(SimTime(100)), Some((SimTime(50), 1)));
        q.schedule(SimTime(10), 2);
        assert_eq!(q.late, 1);
        assert_eq!(q.pop_until(SimTime(100)), Some((SimTime(50), 2)));
        assert_eq!(q.pop_until(SimTime(100)), None);
    }
}
