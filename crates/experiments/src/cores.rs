//! The host cores the experiments share.
//!
//! `nanopu reproduce` runs its experiments side by side: an experiment
//! with a single long point (othello) or a serial phase between two sweeps
//! would otherwise leave the other host cores idle. A thread does
//! simulation work only while it holds one of the runner's cores; a thread
//! that waits for others (a sweep's caller while its points run) lends its
//! core out ([`Cores::lend`]). When several threads wait for a core, the
//! experiment earliest in the report's order gets it first (then the one
//! that asked first), so the experiments finish roughly in order and a
//! later one only fills cores the earlier ones leave idle.
//!
//! Which thread runs what changes nothing in the results: every point is
//! deterministic on its own (its own seed), whatever runs beside it.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::marker::PhantomData;
use std::sync::{Condvar, Mutex};

/// A count of free host cores, handed out by rank.
pub struct Cores {
    state: Mutex<State>,
    freed: Condvar,
}

struct State {
    free: usize,
    /// Threads waiting, as (rank, ticket): the first is served first.
    waiting: BTreeSet<(usize, u64)>,
    next_ticket: u64,
}

thread_local! {
    /// Whether this thread holds one of the cores (of whichever [`Cores`]:
    /// a thread works for one runner at a time).
    static HOLDS_CORE: Cell<bool> = const { Cell::new(false) };
}

impl Cores {
    /// `count` cores (at least one).
    pub fn new(count: usize) -> Cores {
        Cores {
            state: Mutex::new(State {
                free: count.max(1),
                waiting: BTreeSet::new(),
                next_ticket: 0,
            }),
            freed: Condvar::new(),
        }
    }

    /// Waits for a core, for work of `rank` (lower first); holds it until
    /// the guard drops.
    pub fn hold(&self, rank: usize) -> Held<'_> {
        self.acquire(rank);
        Held {
            cores: self,
            _this_thread: PhantomData,
        }
    }

    /// Gives this thread's core, if it holds one, to others until the guard
    /// drops (then waits for one again, at `rank`): for a thread about to
    /// wait for work it handed out.
    pub fn lend(&self, rank: usize) -> Lent<'_> {
        let lent = HOLDS_CORE.get();
        if lent {
            self.release();
        }
        Lent {
            cores: self,
            rank,
            lent,
            _this_thread: PhantomData,
        }
    }

    fn acquire(&self, rank: usize) {
        debug_assert!(!HOLDS_CORE.get(), "a thread holds one core at most");
        let mut s = self.state.lock().expect("no panics while holding the lock");
        let me = (rank, s.next_ticket);
        s.next_ticket += 1;
        s.waiting.insert(me);
        while s.free == 0 || s.waiting.first() != Some(&me) {
            s = self
                .freed
                .wait(s)
                .expect("no panics while holding the lock");
        }
        s.waiting.remove(&me);
        s.free -= 1;
        // Another core may be free for the next in line.
        if s.free > 0 && !s.waiting.is_empty() {
            self.freed.notify_all();
        }
        HOLDS_CORE.set(true);
    }

    fn release(&self) {
        HOLDS_CORE.set(false);
        let mut s = self.state.lock().expect("no panics while holding the lock");
        s.free += 1;
        if !s.waiting.is_empty() {
            self.freed.notify_all();
        }
    }
}

/// A core held ([`Cores::hold`]) by this thread (so not `Send`: the
/// thread's mark goes with it).
pub struct Held<'a> {
    cores: &'a Cores,
    _this_thread: PhantomData<*const ()>,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.cores.release();
    }
}

/// A core lent out ([`Cores::lend`]) by this thread (not `Send`, as [`Held`]).
pub struct Lent<'a> {
    cores: &'a Cores,
    rank: usize,
    lent: bool,
    _this_thread: PhantomData<*const ()>,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if self.lent {
            self.cores.acquire(self.rank);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn never_more_holders_than_cores() {
        let cores = Arc::new(Cores::new(2));
        let busy = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|s| {
            for rank in 0..8 {
                let (cores, busy, most) = (cores.clone(), busy.clone(), most.clone());
                s.spawn(move || {
                    for _ in 0..50 {
                        let _held = cores.hold(rank);
                        let now = busy.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        busy.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert!((1..=2).contains(&most.load(Ordering::SeqCst)));
        // All were given back; one taken leaves the other.
        assert_eq!(cores.state.lock().unwrap().free, 2);
        let _first = cores.hold(0);
        assert_eq!(cores.state.lock().unwrap().free, 1);
    }

    #[test]
    fn the_lowest_rank_waiting_is_served_first() {
        let cores = Cores::new(1);
        let order = Mutex::new(Vec::new());
        let queued = |n: usize| while cores.state.lock().unwrap().waiting.len() < n {};
        std::thread::scope(|s| {
            let held = cores.hold(0);
            for (k, rank) in [3, 1, 2].into_iter().enumerate() {
                let (cores, order) = (&cores, &order);
                s.spawn(move || {
                    let _held = cores.hold(rank);
                    order.lock().unwrap().push(rank);
                });
                queued(k + 1);
            }
            drop(held);
        });
        assert_eq!(*order.lock().unwrap(), vec![1, 2, 3]);
    }

    #[test]
    fn a_lent_core_serves_others_and_comes_back() {
        let cores = Cores::new(1);
        let held = cores.hold(0);
        {
            let _lent = cores.lend(0);
            // With the core lent, another thread gets it.
            std::thread::scope(|s| {
                s.spawn(|| drop(cores.hold(5)));
            });
        }
        assert!(HOLDS_CORE.get());
        assert_eq!(cores.state.lock().unwrap().free, 0);
        drop(held);
        assert_eq!(cores.state.lock().unwrap().free, 1);
        // A thread without a core lends nothing.
        drop(cores.lend(0));
        assert_eq!(cores.state.lock().unwrap().free, 1);
    }
}
