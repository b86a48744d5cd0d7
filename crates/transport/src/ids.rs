//! A FIFO of free ids `0..size` that costs nothing for ids never used: an
//! idle host's tables stay empty however many ids its transport has.

use std::collections::VecDeque;

/// Free ids in the order a queue initialised with `0..size` hands them out:
/// every never-used id first, in order, then freed ids in the order they
/// were freed.
#[derive(Clone, Debug)]
pub struct IdQueue {
    size: u32,
    /// Ids `fresh..size` were never handed out.
    fresh: u32,
    freed: VecDeque<u32>,
}

impl IdQueue {
    pub fn new(size: u32) -> IdQueue {
        IdQueue {
            size,
            fresh: 0,
            freed: VecDeque::new(),
        }
    }

    /// The id [`IdQueue::pop_front`] would return.
    pub fn front(&self) -> Option<u32> {
        if self.fresh < self.size {
            Some(self.fresh)
        } else {
            self.freed.front().copied()
        }
    }

    pub fn pop_front(&mut self) -> Option<u32> {
        if self.fresh < self.size {
            self.fresh += 1;
            Some(self.fresh - 1)
        } else {
            self.freed.pop_front()
        }
    }

    /// Gives back a handed-out id (it goes last).
    pub fn push_back(&mut self, id: u32) {
        self.freed.push_back(id);
    }

    /// Free ids.
    pub fn len(&self) -> usize {
        (self.size - self.fresh) as usize + self.freed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Ids ever handed out: the table entries that exist (`0..used`).
    pub fn used(&self) -> usize {
        self.fresh as usize
    }

    /// Number of ids, used or not.
    pub fn size(&self) -> usize {
        self.size as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Same ids in the same order as a queue filled with `0..size`.
        #[test]
        fn hands_out_ids_like_a_full_queue(size in 0u32..20, ops in prop::collection::vec(any::<bool>(), 0..80)) {
            let mut lazy = IdQueue::new(size);
            let mut full: VecDeque<u32> = (0..size).collect();
            let mut held = Vec::new();
            for pop in ops {
                if pop || held.is_empty() {
                    prop_assert_eq!(lazy.front(), full.front().copied());
                    let (a, b) = (lazy.pop_front(), full.pop_front());
                    prop_assert_eq!(a, b);
                    held.extend(a);
                } else {
                    let id = held.remove(0);
                    lazy.push_back(id);
                    full.push_back(id);
                }
                prop_assert_eq!(lazy.len(), full.len());
            }
        }
    }
}
