//! The priority scheduler extern (NanoTransport §3.2, §4.4).
//!
//! The scheduler stores stateful objects, each with a key and a rank (lower
//! rank is higher priority), and on request returns the highest-priority
//! object for which a predicate holds. Homa uses it for SRPT granting: the
//! rank is the message's remaining size and the predicate "has less than
//! one BDP outstanding". The prototype keeps a fixed number of objects (16)
//! in registers and compares them all in parallel; the rest wait in a FIFO
//! queue "until a register space opens" (§4.4).
//!
//! Objects in the FIFO are invisible to [`PriorityScheduler::apply`] and
//! [`PriorityScheduler::best`]: that is the hardware's limitation, and a
//! high-priority message stuck behind the slots is not granted until a slot
//! frees. The simulator reproduces it rather than sorting everything.
//!
//! Assumptions where the paper is silent:
//! - A freed slot is refilled from the FIFO head at once (in the same
//!   operation), so whenever the FIFO holds anything every slot is full.
//! - Equal ranks are broken by insertion order (earliest inserted first),
//!   which is also FIFO order, so an object that waited in the FIFO is
//!   never preferred over an equal-rank object inserted before it.
//! - Keys are unique among the objects held (slots and FIFO); inserting a
//!   key already present is refused. Lookups by key and removal search the
//!   slots and then the FIFO, O(slots + FIFO length): the hardware matches
//!   the slots in parallel, and the FIFO is short in practice.
//! - Ranks can be changed for objects in the FIFO too; the new rank counts
//!   once the object reaches a slot.
//! - When both the slots and the FIFO are full an insert is refused and the
//!   object is dropped (the caller decides what that means for the message).

use std::collections::VecDeque;

/// Why an object could not be inserted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchedulerFull {
    /// Every slot and every FIFO place is taken.
    #[error("priority scheduler full: every slot and FIFO place is taken")]
    Full,
    /// An object with this key is already in the scheduler.
    #[error("priority scheduler already holds an object with this key")]
    DuplicateKey,
}

/// One stored object.
#[derive(Clone, Debug)]
struct Held<T> {
    key: u32,
    rank: u32,
    /// Insertion order, for tie-breaking.
    seq: u64,
    obj: T,
}

impl<T> Held<T> {
    /// Priority order: lower rank first, then earlier insertion.
    fn order(&self) -> (u32, u64) {
        (self.rank, self.seq)
    }
}

/// The priority scheduler extern: `slots` objects compared in parallel and
/// a FIFO of up to `fifo_capacity` objects waiting for a slot (NT §3.2,
/// §4.4). Nothing allocates after construction.
#[derive(Clone, Debug)]
pub struct PriorityScheduler<T> {
    /// The slotted objects, in no particular order (at most `slots`).
    slots: Vec<Held<T>>,
    slot_count: usize,
    fifo: VecDeque<Held<T>>,
    fifo_capacity: usize,
    next_seq: u64,
}

impl<T> PriorityScheduler<T> {
    /// A scheduler with `slots` parallel slots (16 in the prototype) and a
    /// FIFO of `fifo_capacity` places.
    ///
    /// # Panics
    /// If `slots` is zero: such a scheduler could never return anything.
    pub fn new(slots: usize, fifo_capacity: usize) -> Self {
        assert!(slots > 0, "priority scheduler: at least one slot is needed");
        PriorityScheduler {
            slots: Vec::with_capacity(slots),
            slot_count: slots,
            fifo: VecDeque::with_capacity(fifo_capacity),
            fifo_capacity,
            next_seq: 0,
        }
    }

    fn find(&self, key: u32) -> Option<&Held<T>> {
        self.slots
            .iter()
            .chain(self.fifo.iter())
            .find(|h| h.key == key)
    }

    fn find_mut(&mut self, key: u32) -> Option<&mut Held<T>> {
        self.slots
            .iter_mut()
            .chain(self.fifo.iter_mut())
            .find(|h| h.key == key)
    }

    /// Inserts `obj` under `key` with `rank` (lower is higher priority): into
    /// a free slot, else at the FIFO tail.
    ///
    /// Refused, dropping `obj`, with [`SchedulerFull::DuplicateKey`] if `key`
    /// is already held, or [`SchedulerFull::Full`] if the slots and the FIFO
    /// are all taken.
    pub fn insert(&mut self, key: u32, rank: u32, obj: T) -> Result<(), SchedulerFull> {
        if self.find(key).is_some() {
            return Err(SchedulerFull::DuplicateKey);
        }
        let held = Held {
            key,
            rank,
            seq: self.next_seq,
            obj,
        };
        if self.slots.len() < self.slot_count {
            self.slots.push(held);
        } else if self.fifo.len() < self.fifo_capacity {
            self.fifo.push_back(held);
        } else {
            return Err(SchedulerFull::Full);
        }
        self.next_seq += 1;
        Ok(())
    }

    /// Removes the object under `key`, from a slot or from the FIFO. A freed
    /// slot is refilled from the FIFO head at once. `None` if not held.
    pub fn remove(&mut self, key: u32) -> Option<T> {
        if let Some(i) = self.slots.iter().position(|h| h.key == key) {
            let held = self.slots.swap_remove(i);
            if let Some(next) = self.fifo.pop_front() {
                self.slots.push(next);
            }
            return Some(held.obj);
        }
        let i = self.fifo.iter().position(|h| h.key == key)?;
        self.fifo.remove(i).map(|h| h.obj)
    }

    /// Changes the rank of the object under `key` (in a slot or the FIFO).
    /// False if not held.
    pub fn set_rank(&mut self, key: u32, rank: u32) -> bool {
        match self.find_mut(key) {
            Some(h) => {
                h.rank = rank;
                true
            }
            None => false,
        }
    }

    /// The object under `key`, in a slot or the FIFO.
    pub fn get(&self, key: u32) -> Option<&T> {
        self.find(key).map(|h| &h.obj)
    }

    /// The object under `key`, in a slot or the FIFO, writable.
    pub fn get_mut(&mut self, key: u32) -> Option<&mut T> {
        self.find_mut(key).map(|h| &mut h.obj)
    }

    /// The rank of the object under `key`.
    pub fn rank(&self, key: u32) -> Option<u32> {
        self.find(key).map(|h| h.rank)
    }

    /// Whether an object is held under `key` (in a slot or the FIFO).
    pub fn contains(&self, key: u32) -> bool {
        self.find(key).is_some()
    }

    /// Whether the object under `key` is in a slot (visible to `apply` and
    /// `best`) rather than waiting in the FIFO.
    pub fn is_slotted(&self, key: u32) -> bool {
        self.slots.iter().any(|h| h.key == key)
    }

    /// The slotted object of lowest rank (highest priority) for which `pred`
    /// holds; ties: earliest inserted. FIFO objects are not considered.
    /// `pred` is called once per slotted object.
    pub fn apply(&mut self, mut pred: impl FnMut(u32, &T) -> bool) -> Option<(u32, &mut T)> {
        let mut best: Option<usize> = None;
        for (i, h) in self.slots.iter().enumerate() {
            if pred(h.key, &h.obj) && best.is_none_or(|b| h.order() < self.slots[b].order()) {
                best = Some(i);
            }
        }
        let h = &mut self.slots[best?];
        Some((h.key, &mut h.obj))
    }

    /// Up to `limit` slotted keys for which `pred` holds, in priority order
    /// (for Homa overcommitment: grant the best k messages). FIFO objects
    /// are not considered. Writes into `out`, cleared first; allocates only
    /// if `out` has less capacity than the number of slots. `pred` is called
    /// once per slotted object.
    pub fn best(&self, limit: usize, mut pred: impl FnMut(u32, &T) -> bool, out: &mut Vec<u32>) {
        out.clear();
        // Collect slot positions, sort them by priority, then turn them into
        // keys in place.
        out.extend(
            self.slots
                .iter()
                .enumerate()
                .filter(|(_, h)| pred(h.key, &h.obj))
                .map(|(i, _)| i as u32),
        );
        out.sort_unstable_by_key(|&i| self.slots[i as usize].order());
        out.truncate(limit);
        for i in out.iter_mut() {
            *i = self.slots[*i as usize].key;
        }
    }

    /// Objects held, in slots and in the FIFO.
    pub fn len(&self) -> usize {
        self.slots.len() + self.fifo.len()
    }

    /// Whether no object is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slots occupied.
    pub fn slots_used(&self) -> usize {
        self.slots.len()
    }

    /// Objects waiting in the FIFO.
    pub fn fifo_len(&self) -> usize {
        self.fifo.len()
    }

    /// Number of slots.
    pub fn slot_count(&self) -> usize {
        self.slot_count
    }

    /// FIFO capacity.
    pub fn fifo_capacity(&self) -> usize {
        self.fifo_capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn keys_in_order<T>(s: &PriorityScheduler<T>) -> Vec<u32> {
        let mut out = Vec::new();
        s.best(usize::MAX, |_, _| true, &mut out);
        out
    }

    #[test]
    fn insert_fills_slots_then_fifo_then_refuses() {
        let mut s = PriorityScheduler::new(2, 2);
        assert!(s.is_empty());
        for k in 0..4 {
            s.insert(k, 10, k).unwrap();
        }
        assert_eq!((s.slots_used(), s.fifo_len(), s.len()), (2, 2, 4));
        assert!(s.is_slotted(0) && s.is_slotted(1));
        assert!(!s.is_slotted(2) && s.contains(2));
        assert_eq!(s.insert(9, 0, 9), Err(SchedulerFull::Full));
        assert_eq!(s.len(), 4);
        assert!(!s.contains(9));
    }

    #[test]
    fn duplicate_keys_are_refused_wherever_they_are() {
        let mut s = PriorityScheduler::new(1, 4);
        s.insert(5, 1, 'a').unwrap();
        s.insert(6, 1, 'b').unwrap();
        assert_eq!(s.insert(5, 0, 'x'), Err(SchedulerFull::DuplicateKey));
        assert_eq!(s.insert(6, 0, 'x'), Err(SchedulerFull::DuplicateKey));
        assert_eq!(s.get(5), Some(&'a'));
        assert_eq!(s.get(6), Some(&'b'));
        assert_eq!(s.len(), 2);
        // Full and duplicate: the duplicate is reported.
        let mut s = PriorityScheduler::new(1, 0);
        s.insert(1, 1, ()).unwrap();
        assert_eq!(s.insert(1, 1, ()), Err(SchedulerFull::DuplicateKey));
        assert_eq!(s.insert(2, 1, ()), Err(SchedulerFull::Full));
    }

    #[test]
    fn apply_returns_lowest_rank_satisfying_pred() {
        let mut s = PriorityScheduler::new(16, 0);
        // Homa: rank = remaining bytes, pred = grantable.
        s.insert(1, 5000, (true, 0)).unwrap();
        s.insert(2, 300, (false, 0)).unwrap();
        s.insert(3, 1200, (true, 0)).unwrap();
        s.insert(4, 9000, (true, 0)).unwrap();
        let (k, obj) = s.apply(|_, o| o.0).unwrap();
        assert_eq!(k, 3);
        obj.1 += 1;
        assert_eq!(s.get(3), Some(&(true, 1)));
        assert_eq!(s.apply(|_, _| true).map(|(k, _)| k), Some(2));
        assert_eq!(s.apply(|k, _| k == 4 || k == 1).map(|(k, _)| k), Some(1));
        assert!(s.apply(|_, _| false).is_none());
        let mut calls = 0;
        s.apply(|_, _| {
            calls += 1;
            true
        });
        assert_eq!(calls, 4);
    }

    #[test]
    fn equal_ranks_go_to_the_earliest_inserted() {
        let mut s = PriorityScheduler::new(4, 0);
        s.insert(30, 7, ()).unwrap();
        s.insert(10, 7, ()).unwrap();
        s.insert(20, 7, ()).unwrap();
        assert_eq!(s.apply(|_, _| true).map(|(k, _)| k), Some(30));
        s.remove(30);
        assert_eq!(s.apply(|_, _| true).map(|(k, _)| k), Some(10));
        // Removal reorders the slot array internally; order is unaffected.
        s.insert(5, 7, ()).unwrap();
        assert_eq!(keys_in_order(&s), vec![10, 20, 5]);
    }

    #[test]
    fn fifo_objects_are_invisible_until_a_slot_opens() {
        let mut s = PriorityScheduler::new(2, 4);
        s.insert(1, 100, 'a').unwrap();
        s.insert(2, 200, 'b').unwrap();
        s.insert(3, 1, 'c').unwrap(); // best rank, but waits in the FIFO
        s.insert(4, 0, 'd').unwrap();
        assert_eq!(s.apply(|_, _| true).map(|(k, _)| k), Some(1));
        assert_eq!(keys_in_order(&s), vec![1, 2]);
        // Still reachable by key.
        assert_eq!(s.get(3), Some(&'c'));
        assert_eq!(s.rank(3), Some(1));
        *s.get_mut(4).unwrap() = 'D';
        // Removing a slotted object promotes the FIFO head (3, not 4).
        assert_eq!(s.remove(1), Some('a'));
        assert_eq!((s.slots_used(), s.fifo_len()), (2, 1));
        assert!(s.is_slotted(3) && !s.is_slotted(4));
        assert_eq!(s.apply(|_, _| true).map(|(k, _)| k), Some(3));
        assert_eq!(s.remove(2), Some('b'));
        assert_eq!(keys_in_order(&s), vec![4, 3]);
        assert_eq!(s.get(4), Some(&'D'));
    }

    #[test]
    fn remove_from_the_fifo_keeps_its_order() {
        let mut s = PriorityScheduler::new(1, 4);
        for k in 0..4 {
            s.insert(k, 0, k).unwrap();
        }
        assert_eq!(s.remove(2), Some(2));
        assert_eq!(s.remove(2), None);
        assert_eq!(s.remove(99), None);
        assert_eq!(s.remove(0), Some(0));
        assert!(s.is_slotted(1));
        assert_eq!(s.remove(1), Some(1));
        assert!(s.is_slotted(3));
        assert_eq!(s.remove(3), Some(3));
        assert!(s.is_empty());
        assert_eq!((s.slots_used(), s.fifo_len()), (0, 0));
    }

    #[test]
    fn set_rank_reorders() {
        let mut s = PriorityScheduler::new(2, 2);
        s.insert(1, 10, ()).unwrap();
        s.insert(2, 20, ()).unwrap();
        s.insert(3, 30, ()).unwrap();
        assert!(s.set_rank(2, 5));
        assert_eq!(s.rank(2), Some(5));
        assert_eq!(keys_in_order(&s), vec![2, 1]);
        // In the FIFO: takes effect once slotted.
        assert!(s.set_rank(3, 0));
        assert_eq!(keys_in_order(&s), vec![2, 1]);
        s.remove(1);
        assert_eq!(keys_in_order(&s), vec![3, 2]);
        assert!(!s.set_rank(1, 0));
        assert_eq!(s.rank(1), None);
    }

    #[test]
    fn best_returns_up_to_limit_in_priority_order() {
        let mut s = PriorityScheduler::new(8, 0);
        for (k, r) in [(1, 50), (2, 10), (3, 40), (4, 20), (5, 30)] {
            s.insert(k, r, k % 2 == 1).unwrap();
        }
        let mut out = Vec::with_capacity(8);
        let cap = out.capacity();
        out.push(77);
        s.best(2, |_, _| true, &mut out);
        assert_eq!(out, vec![2, 4]);
        s.best(10, |_, odd| *odd, &mut out);
        assert_eq!(out, vec![5, 3, 1]);
        s.best(0, |_, _| true, &mut out);
        assert!(out.is_empty());
        s.best(3, |k, _| k > 100, &mut out);
        assert!(out.is_empty());
        assert_eq!(out.capacity(), cap);
    }

    #[test]
    #[should_panic(expected = "at least one slot")]
    fn zero_slots_is_rejected() {
        let _: PriorityScheduler<()> = PriorityScheduler::new(0, 4);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u32, u32, bool),
        Remove(u32),
        SetRank(u32, u32),
        Apply,
    }

    fn op() -> impl Strategy<Value = Op> {
        let key = 0u32..12;
        let rank = 0u32..6;
        prop_oneof![
            (key.clone(), rank.clone(), any::<bool>()).prop_map(|(k, r, g)| Op::Insert(k, r, g)),
            key.clone().prop_map(Op::Remove),
            (key, rank).prop_map(|(k, r)| Op::SetRank(k, r)),
            Just(Op::Apply),
        ]
    }

    proptest! {
        /// Against a model: a list in insertion order whose first `slots`
        /// entries are slotted.
        #[test]
        fn matches_a_model(
            slots in 1usize..5,
            fifo in 0usize..5,
            ops in prop::collection::vec(op(), 0..120),
        ) {
            let mut s = PriorityScheduler::new(slots, fifo);
            // (key, rank, grantable), oldest first; slotted = first `slots`
            // because a slot is always refilled from the FIFO head.
            let mut model: Vec<(u32, u32, bool)> = Vec::new();
            let mut out = Vec::new();
            for op in ops {
                match op {
                    Op::Insert(k, r, g) => {
                        let expect = if model.iter().any(|m| m.0 == k) {
                            Err(SchedulerFull::DuplicateKey)
                        } else if model.len() >= slots + fifo {
                            Err(SchedulerFull::Full)
                        } else {
                            model.push((k, r, g));
                            Ok(())
                        };
                        prop_assert_eq!(s.insert(k, r, g), expect);
                    }
                    Op::Remove(k) => {
                        let i = model.iter().position(|m| m.0 == k);
                        let expect = i.map(|i| model.remove(i).2);
                        prop_assert_eq!(s.remove(k), expect);
                    }
                    Op::SetRank(k, r) => {
                        let m = model.iter_mut().find(|m| m.0 == k);
                        let present = m.is_some();
                        if let Some(m) = m {
                            m.1 = r;
                        }
                        prop_assert_eq!(s.set_rank(k, r), present);
                    }
                    Op::Apply => {
                        let slotted = &model[..model.len().min(slots)];
                        // min_by_key returns the first minimum: earliest inserted.
                        let expect = slotted.iter().filter(|m| m.2).min_by_key(|m| m.1).map(|m| m.0);
                        prop_assert_eq!(s.apply(|_, g| *g).map(|(k, _)| k), expect);
                        let mut sorted: Vec<&(u32, u32, bool)> = slotted.iter().filter(|m| m.2).collect();
                        sorted.sort_by_key(|m| m.1); // stable: insertion order on ties
                        let expect: Vec<u32> = sorted.iter().take(2).map(|m| m.0).collect();
                        s.best(2, |_, g| *g, &mut out);
                        prop_assert_eq!(&out, &expect);
                    }
                }
                prop_assert_eq!(s.len(), model.len());
                prop_assert_eq!(s.slots_used(), model.len().min(slots));
                prop_assert_eq!(s.fifo_len(), model.len().saturating_sub(slots));
                for (i, m) in model.iter().enumerate() {
                    prop_assert_eq!(s.rank(m.0), Some(m.1));
                    prop_assert_eq!(s.is_slotted(m.0), i < slots);
                }
            }
        }
    }
}
