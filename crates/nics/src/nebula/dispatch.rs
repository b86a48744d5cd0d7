//! How the NIC assigns RPCs to cores (NEBULA §V-A, §V-E, §VI).
//!
//! - [`Policy::PerCore`]: multi-queue, RSS-like: each RPC goes to a core
//!   chosen uniformly at random when it arrives (§VI: "Our implementation
//!   optimistically spreads requests to cores uniformly") and waits in that
//!   core's queue however long it is (RSS, SRQ_emu).
//! - [`Policy::SingleQueue`]: one queue at the NIC; an RPC goes to a core
//!   only while that core has fewer than `bound` RPCs assigned and not yet
//!   finished, to the least loaded one (ties: round robin). `bound = 1` is
//!   RPCValet (§V-A: a core gets a new RPC "as soon as [it] becomes
//!   available"); `bound = 2` is JBSQ(2), NEBULA's (§V-E).
//!
//! A core finishes an RPC when it frees its buffer (`free_buffer`, Fig. 4).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Policy {
    PerCore,
    SingleQueue { bound: u32 },
}

/// The dispatcher's state. RPCs are numbered by the caller (tokens).
#[derive(Clone, Debug)]
pub struct Dispatcher {
    policy: Policy,
    outstanding: Vec<u32>,
    waiting: VecDeque<u32>,
    next_tie: usize,
    rng: ChaCha8Rng,
    /// RPCs assigned to a core that already had one (JBSQ's second slot).
    pub assigned_behind: u64,
    pub assigned: u64,
}

impl Dispatcher {
    pub fn new(policy: Policy, cores: usize, seed: u64) -> Dispatcher {
        Dispatcher {
            policy,
            outstanding: vec![0; cores],
            waiting: VecDeque::new(),
            next_tie: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
            assigned_behind: 0,
            assigned: 0,
        }
    }

    /// RPCs waiting at the NIC for a core.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// RPCs assigned to `core` and not finished.
    pub fn outstanding(&self, core: usize) -> u32 {
        self.outstanding[core]
    }

    fn assign(&mut self, core: usize) -> usize {
        if self.outstanding[core] > 0 {
            self.assigned_behind += 1;
        }
        self.assigned += 1;
        self.outstanding[core] += 1;
        core
    }

    /// RPC `token` arrived: the core it goes to now, or `None` (it waits).
    pub fn arrive(&mut self, token: u32) -> Option<usize> {
        let n = self.outstanding.len();
        match self.policy {
            Policy::PerCore => {
                let core = self.rng.random_range(0..n);
                Some(self.assign(core))
            }
            Policy::SingleQueue { bound } => {
                let least = (0..n)
                    .map(|i| (self.next_tie + i) % n)
                    .min_by_key(|&c| self.outstanding[c])
                    .filter(|&c| self.outstanding[c] < bound);
                match least {
                    Some(c) if self.waiting.is_empty() => {
                        self.next_tie = (c + 1) % n;
                        Some(self.assign(c))
                    }
                    _ => {
                        self.waiting.push_back(token);
                        None
                    }
                }
            }
        }
    }

    /// `core` finished an RPC: the waiting RPC it gets now, if any.
    pub fn finish(&mut self, core: usize) -> Option<u32> {
        self.outstanding[core] = self.outstanding[core].saturating_sub(1);
        match self.policy {
            Policy::PerCore => None,
            Policy::SingleQueue { bound } => {
                if self.outstanding[core] < bound {
                    let t = self.waiting.pop_front()?;
                    self.assign(core);
                    Some(t)
                } else {
                    None
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpcvalet_gives_each_core_one_at_a_time() {
        let mut d = Dispatcher::new(Policy::SingleQueue { bound: 1 }, 2, 1);
        assert_eq!(d.arrive(10), Some(0));
        assert_eq!(d.arrive(11), Some(1));
        assert_eq!(
            d.arrive(12),
            None,
            "both cores busy: the RPC waits at the NIC"
        );
        assert_eq!(d.arrive(13), None);
        assert_eq!(d.waiting(), 2);
        assert_eq!(
            d.finish(1),
            Some(12),
            "the first core free takes the oldest"
        );
        assert_eq!(d.finish(0), Some(13));
        assert_eq!(d.finish(0), None);
        assert_eq!(
            d.arrive(14),
            Some(0),
            "an idle core takes a new RPC at once"
        );
        assert_eq!(d.assigned_behind, 0);
    }

    #[test]
    fn jbsq2_queues_two_per_core_shortest_first() {
        let mut d = Dispatcher::new(Policy::SingleQueue { bound: 2 }, 2, 1);
        let cores: Vec<_> = (0..4).map(|t| d.arrive(t)).collect();
        assert_eq!(cores, vec![Some(0), Some(1), Some(0), Some(1)]);
        assert_eq!(d.assigned_behind, 2);
        assert_eq!(d.arrive(4), None, "every core holds its bound");
        assert_eq!(d.finish(1), Some(4));
        assert_eq!(d.outstanding(1), 2);
        assert_eq!(d.finish(0), None);
        assert_eq!(d.arrive(5), Some(0), "core 0 has one: shortest queue");
    }

    #[test]
    fn per_core_spreads_uniformly_and_never_waits() {
        let mut d = Dispatcher::new(Policy::PerCore, 16, 7);
        let mut counts = [0u32; 16];
        for t in 0..16_000 {
            counts[d.arrive(t).expect("never waits")] += 1;
        }
        assert_eq!(d.waiting(), 0);
        for c in counts {
            assert!((850..1150).contains(&c), "uniform: {counts:?}");
        }
        // Imbalance is the point: some core has several queued.
        assert!(d.outstanding(0) > 1);
        assert_eq!(d.finish(0), None);
    }
}
