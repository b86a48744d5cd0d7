//! Message buffers in fixed size classes, each with its own free list
//! (NanoTransport §4.2).
//!
//! The reassembly and packetization modules store each message in one
//! buffer taken from a pool carved into fixed size classes. Allocation takes
//! "the smallest available one that is large enough to store the whole
//! message": one dequeue from a class's free list; freeing is one enqueue.
//! A packet's place in its message is the buffer plus an offset, so
//! out-of-order reassembly and retransmission need no further bookkeeping.
//!
//! Assumptions where the paper is silent:
//! - A request falls through to the next larger class when every class that
//!   fits exactly is exhausted ("the smallest *available* one"); it fails
//!   only when no class large enough has a free buffer. A request of zero
//!   bytes fits the smallest class.
//! - Free lists are FIFO rings: a freed buffer goes to the tail and is
//!   reused after every other free buffer of its class. The paper speaks of
//!   a dequeue and an enqueue, which is a FIFO; it also keeps a freed
//!   buffer out of use for as long as possible, so a late packet of a
//!   finished message lands in a buffer nobody owns yet rather than in the
//!   next message's data.
//! - Buffer sizes are multiples of 8 bytes (the 64-bit words the cores and
//!   the NIC datapath move), there is at least one class and at most 255
//!   (the class number is a `u8`), classes are listed strictly ascending by
//!   size, and each has at least one buffer.
//! - Memory is zeroed once (when a class is first used) and never cleared on free: a
//!   reused buffer holds the previous message's bytes, as hardware SRAM
//!   would.
//! - The pool checks for double frees and foreign handles (an allocated
//!   bit per buffer); hardware would not, but a simulator should say so.

use crate::ids::IdQueue;
use serde::{Deserialize, Serialize};

/// One size class: `count` buffers of `bytes` bytes each.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeClass {
    /// Size of each buffer in this class, in bytes (a positive multiple of 8).
    pub bytes: u32,
    /// Number of buffers in this class (at least 1).
    pub count: u32,
}

/// Names one buffer: its size class (index into the pool's classes, in
/// ascending size) and its index within the class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferHandle {
    /// Size class, 0 being the smallest.
    pub class: u8,
    /// Buffer within the class, `0..count`.
    pub index: u32,
}

/// Why a pool could not be built or a buffer could not be freed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BufferError {
    /// The configuration lists no size classes.
    #[error("a buffer pool needs at least one size class")]
    NoClasses,
    /// More size classes than a `u8` class number can name.
    #[error("{0} size classes given, at most 255 are supported")]
    TooManyClasses(usize),
    /// A class's buffer size is zero or not a multiple of 8 bytes.
    #[error("size class {class}: buffer size {bytes} bytes is not a positive multiple of 8")]
    BadSize {
        /// Position of the class in the configuration.
        class: usize,
        /// The offending size.
        bytes: u32,
    },
    /// A class has no buffers.
    #[error("size class {class}: buffer count must be at least 1")]
    ZeroCount {
        /// Position of the class in the configuration.
        class: usize,
    },
    /// A class is not strictly larger than the one before it.
    #[error(
        "size class {class}: {bytes} bytes is not larger than the previous class ({previous} bytes); \
         classes must be strictly ascending"
    )]
    NotAscending {
        /// Position of the class in the configuration.
        class: usize,
        /// Its buffer size.
        bytes: u32,
        /// The previous class's buffer size.
        previous: u32,
    },
    /// A class's total size does not fit in the host's address space.
    #[error("size class {class}: {count} buffers of {bytes} bytes do not fit in host memory")]
    TooLarge {
        /// Position of the class in the configuration.
        class: usize,
        /// Its buffer size.
        bytes: u32,
        /// Its buffer count.
        count: u32,
    },
    /// The handle names no buffer of this pool (class or index out of range).
    #[error("buffer handle (class {class}, index {index}) does not name a buffer of this pool")]
    BadHandle {
        /// The handle's class.
        class: u8,
        /// The handle's index.
        index: u32,
    },
    /// The buffer is not allocated (freed twice, or never allocated).
    #[error("buffer (class {class}, index {index}) freed while not allocated (double free)")]
    DoubleFree {
        /// The handle's class.
        class: u8,
        /// The handle's index.
        index: u32,
    },
}

/// The buffers of one size class and their free list.
#[derive(Debug)]
struct Class {
    bytes: u32,
    count: u32,
    /// `count * bytes` bytes, buffer `i` at `i * bytes`; allocated (zeroed)
    /// when the class's first buffer is taken, so an idle host's pools
    /// cost no memory.
    storage: Vec<u8>,
    /// Free buffer indexes, in FIFO order.
    free: IdQueue,
    /// One bit per buffer, set while allocated.
    allocated: Vec<u64>,
}

impl Class {
    fn count(&self) -> usize {
        self.count as usize
    }

    fn is_allocated(&self, index: usize) -> bool {
        self.allocated[index / 64] & (1 << (index % 64)) != 0
    }

    fn set_allocated(&mut self, index: usize, on: bool) {
        let bit = 1u64 << (index % 64);
        if on {
            self.allocated[index / 64] |= bit;
        } else {
            self.allocated[index / 64] &= !bit;
        }
    }
}

/// A message buffer memory carved into fixed size classes (NT §4.2).
///
/// A class's memory is allocated when its first buffer is taken (so that
/// idle hosts cost nothing); `alloc` and `free` are O(1) in the number of
/// buffers (a scan over at most 255 classes to find one that fits) and,
/// once every class has been used, never allocate.
#[derive(Debug)]
pub struct BufferPool {
    classes: Vec<Class>,
    in_use: usize,
    capacity: usize,
    /// Whether buffers have memory ([`BufferPool::data`]); a pool built by
    /// [`BufferPool::unbacked`] only accounts for them.
    backed: bool,
}

impl BufferPool {
    /// Builds a pool with the given size classes, all buffers free and
    /// zeroed.
    ///
    /// Classes must be strictly ascending by `bytes`, each `bytes` a positive
    /// multiple of 8 and each `count` at least 1, with 1 to 255 classes.
    /// Storage is one zeroed allocation per class (`calloc`-backed, so pages
    /// never touched cost no host memory).
    pub fn new(classes: &[SizeClass]) -> Result<BufferPool, BufferError> {
        Self::check(classes)?;
        let built: Vec<Class> = classes
            .iter()
            .map(|c| {
                let count = c.count as usize;
                Class {
                    bytes: c.bytes,
                    count: c.count,
                    storage: Vec::new(),
                    free: IdQueue::new(c.count),
                    allocated: vec![0u64; count.div_ceil(64)],
                }
            })
            .collect();
        let capacity = built.iter().map(Class::count).sum();
        Ok(BufferPool {
            classes: built,
            in_use: 0,
            capacity,
            backed: true,
        })
    }

    /// A pool with the classes, free lists and allocation rules of
    /// [`BufferPool::new`] whose buffers have no memory: for a module that
    /// keeps each message's bytes itself (as its words) and needs the pool
    /// only to decide which messages fit. [`BufferPool::data`] and
    /// [`BufferPool::data_mut`] panic on it.
    pub fn unbacked(classes: &[SizeClass]) -> Result<BufferPool, BufferError> {
        let mut pool = Self::new(classes)?;
        pool.backed = false;
        Ok(pool)
    }

    /// Checks classes as [`BufferPool::new`] does, without allocating.
    pub fn check(classes: &[SizeClass]) -> Result<(), BufferError> {
        if classes.is_empty() {
            return Err(BufferError::NoClasses);
        }
        if classes.len() > 255 {
            return Err(BufferError::TooManyClasses(classes.len()));
        }
        let mut previous: Option<u32> = None;
        for (class, c) in classes.iter().enumerate() {
            if c.bytes == 0 || c.bytes % 8 != 0 {
                return Err(BufferError::BadSize {
                    class,
                    bytes: c.bytes,
                });
            }
            if c.count == 0 {
                return Err(BufferError::ZeroCount { class });
            }
            if let Some(previous) = previous {
                if c.bytes <= previous {
                    return Err(BufferError::NotAscending {
                        class,
                        bytes: c.bytes,
                        previous,
                    });
                }
            }
            let total = (c.bytes as usize).checked_mul(c.count as usize);
            if total.is_none_or(|t| t > isize::MAX as usize) {
                return Err(BufferError::TooLarge {
                    class,
                    bytes: c.bytes,
                    count: c.count,
                });
            }
            previous = Some(c.bytes);
        }
        Ok(())
    }

    /// Takes a buffer for a message of `bytes` bytes: from the smallest class
    /// whose buffers hold `bytes` and that still has a free buffer (NT §4.2,
    /// "the smallest available one that is large enough"). `None` if no
    /// such class has a free buffer (the reassembly module then drops the
    /// packet, NT §4.2 footnote 5).
    pub fn alloc(&mut self, bytes: u32) -> Option<BufferHandle> {
        let first = self.classes.partition_point(|c| c.bytes < bytes);
        let class = (first..self.classes.len()).find(|&i| !self.classes[i].free.is_empty())?;
        let c = &mut self.classes[class];
        if self.backed && c.storage.is_empty() {
            c.storage = vec![0u8; c.bytes as usize * c.count()];
        }
        let index = c.free.pop_front().expect("a class with free buffers");
        c.set_allocated(index as usize, true);
        self.in_use += 1;
        Some(BufferHandle {
            class: class as u8,
            index,
        })
    }

    /// Returns a buffer to its class's free list (enqueued at the tail).
    ///
    /// A handle that names no buffer of this pool, or a buffer that is not
    /// allocated, is an error and changes nothing.
    pub fn free(&mut self, h: BufferHandle) -> Result<(), BufferError> {
        let bad = BufferError::BadHandle {
            class: h.class,
            index: h.index,
        };
        let c = self.classes.get_mut(h.class as usize).ok_or(bad.clone())?;
        let index = h.index as usize;
        if index >= c.count() {
            return Err(bad);
        }
        if !c.is_allocated(index) {
            return Err(BufferError::DoubleFree {
                class: h.class,
                index: h.index,
            });
        }
        c.set_allocated(index, false);
        c.free.push_back(h.index);
        self.in_use -= 1;
        Ok(())
    }

    /// Whether `h` names a buffer of this pool that is currently allocated.
    pub fn is_allocated(&self, h: BufferHandle) -> bool {
        self.classes
            .get(h.class as usize)
            .is_some_and(|c| (h.index as usize) < c.count() && c.is_allocated(h.index as usize))
    }

    /// The whole buffer (its class's size), allocated or not.
    ///
    /// # Panics
    /// If `h` names no buffer of this pool (handles returned by
    /// [`BufferPool::alloc`] always do), or if the pool is
    /// [`BufferPool::unbacked`].
    pub fn data(&self, h: BufferHandle) -> &[u8] {
        let (class, start, len) = self.locate(h);
        &self.classes[class].storage[start..start + len]
    }

    /// The whole buffer (its class's size), writable.
    ///
    /// # Panics
    /// If `h` names no buffer of this pool (handles returned by
    /// [`BufferPool::alloc`] always do), or if the pool is
    /// [`BufferPool::unbacked`].
    pub fn data_mut(&mut self, h: BufferHandle) -> &mut [u8] {
        let (class, start, len) = self.locate(h);
        &mut self.classes[class].storage[start..start + len]
    }

    fn locate(&self, h: BufferHandle) -> (usize, usize, usize) {
        match self.classes.get(h.class as usize) {
            Some(c) if (h.index as usize) < c.count() => {
                let len = c.bytes as usize;
                (h.class as usize, h.index as usize * len, len)
            }
            _ => panic!(
                "buffer handle (class {}, index {}) does not name a buffer of this pool",
                h.class, h.index
            ),
        }
    }

    /// Buffers currently allocated, over all classes.
    pub fn in_use(&self) -> usize {
        self.in_use
    }

    /// Total number of buffers, over all classes (not bytes).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Size of the largest class's buffers, in bytes: the largest message the
    /// pool can ever hold.
    pub fn largest(&self) -> u32 {
        self.classes.last().map_or(0, |c| c.bytes)
    }

    /// Size of class `class`'s buffers, in bytes; 0 if there is no such
    /// class.
    pub fn class_bytes(&self, class: u8) -> u32 {
        self.classes.get(class as usize).map_or(0, |c| c.bytes)
    }

    /// Number of size classes.
    pub fn classes(&self) -> usize {
        self.classes.len()
    }

    /// Free buffers in class `class`; 0 if there is no such class.
    pub fn free_in_class(&self, class: u8) -> usize {
        self.classes.get(class as usize).map_or(0, |c| c.free.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sc(bytes: u32, count: u32) -> SizeClass {
        SizeClass { bytes, count }
    }

    fn pool(classes: &[(u32, u32)]) -> BufferPool {
        let classes: Vec<SizeClass> = classes.iter().map(|&(b, c)| sc(b, c)).collect();
        BufferPool::new(&classes).unwrap()
    }

    #[test]
    fn rejects_bad_configurations() {
        assert_eq!(BufferPool::new(&[]).unwrap_err(), BufferError::NoClasses);
        let many: Vec<SizeClass> = (1..=256).map(|i| sc(8 * i, 1)).collect();
        assert_eq!(
            BufferPool::new(&many).unwrap_err(),
            BufferError::TooManyClasses(256)
        );
        assert!(BufferPool::new(&many[..255]).is_ok());
        assert_eq!(
            BufferPool::new(&[sc(0, 1)]).unwrap_err(),
            BufferError::BadSize { class: 0, bytes: 0 }
        );
        assert_eq!(
            BufferPool::new(&[sc(8, 1), sc(12, 1)]).unwrap_err(),
            BufferError::BadSize {
                class: 1,
                bytes: 12
            }
        );
        assert_eq!(
            BufferPool::new(&[sc(8, 1), sc(16, 0)]).unwrap_err(),
            BufferError::ZeroCount { class: 1 }
        );
        assert_eq!(
            BufferPool::new(&[sc(16, 1), sc(16, 1)]).unwrap_err(),
            BufferError::NotAscending {
                class: 1,
                bytes: 16,
                previous: 16
            }
        );
        assert_eq!(
            BufferPool::new(&[sc(64, 1), sc(16, 1)]).unwrap_err(),
            BufferError::NotAscending {
                class: 1,
                bytes: 16,
                previous: 64
            }
        );
    }

    #[test]
    fn error_messages_name_the_problem() {
        let e = BufferPool::new(&[sc(8, 1), sc(12, 1)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "size class 1: buffer size 12 bytes is not a positive multiple of 8"
        );
        let e = BufferError::DoubleFree { class: 2, index: 7 };
        assert!(e.to_string().contains("double free"));
    }

    #[test]
    fn sizes_and_counts() {
        let p = pool(&[(64, 4), (1024, 2), (16384, 1)]);
        assert_eq!(p.capacity(), 7);
        assert_eq!(p.in_use(), 0);
        assert_eq!(p.largest(), 16384);
        assert_eq!(p.classes(), 3);
        assert_eq!(p.class_bytes(0), 64);
        assert_eq!(p.class_bytes(2), 16384);
        assert_eq!(p.class_bytes(3), 0);
        assert_eq!(p.free_in_class(1), 2);
        assert_eq!(p.free_in_class(9), 0);
    }

    #[test]
    fn alloc_takes_the_smallest_class_that_fits() {
        let mut p = pool(&[(64, 2), (1024, 2), (16384, 1)]);
        assert_eq!(p.alloc(0).unwrap().class, 0);
        assert_eq!(p.alloc(64).unwrap().class, 0);
        assert_eq!(p.alloc(65).unwrap().class, 1);
        assert_eq!(p.alloc(1024).unwrap().class, 1);
        assert_eq!(p.alloc(16384).unwrap().class, 2);
        assert_eq!(p.alloc(16385), None);
        assert_eq!(p.in_use(), 5);
    }

    #[test]
    fn alloc_falls_through_to_a_larger_class_when_exhausted() {
        let mut p = pool(&[(64, 1), (1024, 1), (16384, 1)]);
        assert_eq!(p.alloc(8).unwrap().class, 0);
        assert_eq!(p.alloc(8).unwrap().class, 1);
        assert_eq!(p.alloc(8).unwrap().class, 2);
        assert_eq!(p.alloc(8), None);
        assert_eq!(p.in_use(), 3);
    }

    #[test]
    fn alloc_never_takes_a_class_too_small() {
        let mut p = pool(&[(64, 4), (128, 1)]);
        assert_eq!(p.alloc(100).unwrap().class, 1);
        // Small buffers are free, but none can hold 100 bytes.
        assert_eq!(p.alloc(100), None);
        assert_eq!(p.free_in_class(0), 4);
    }

    #[test]
    fn free_list_is_fifo() {
        let mut p = pool(&[(64, 3)]);
        let a = p.alloc(1).unwrap();
        let b = p.alloc(1).unwrap();
        let c = p.alloc(1).unwrap();
        assert_eq!((a.index, b.index, c.index), (0, 1, 2));
        p.free(b).unwrap();
        p.free(a).unwrap();
        // Freed buffers come back in the order they were freed.
        assert_eq!(p.alloc(1).unwrap(), b);
        assert_eq!(p.alloc(1).unwrap(), a);
        // A freed buffer waits behind the ones already free.
        let mut p = pool(&[(64, 3)]);
        let a = p.alloc(1).unwrap();
        p.free(a).unwrap();
        assert_eq!(p.alloc(1).unwrap().index, 1);
        assert_eq!(p.alloc(1).unwrap().index, 2);
        assert_eq!(p.alloc(1).unwrap().index, 0);
    }

    #[test]
    fn free_rejects_double_free_and_bad_handles() {
        let mut p = pool(&[(64, 2), (128, 1)]);
        let h = p.alloc(1).unwrap();
        assert!(p.is_allocated(h));
        p.free(h).unwrap();
        assert!(!p.is_allocated(h));
        assert_eq!(
            p.free(h),
            Err(BufferError::DoubleFree {
                class: h.class,
                index: h.index
            })
        );
        let never = BufferHandle { class: 1, index: 0 };
        assert_eq!(
            p.free(never),
            Err(BufferError::DoubleFree { class: 1, index: 0 })
        );
        let bad_class = BufferHandle { class: 2, index: 0 };
        assert_eq!(
            p.free(bad_class),
            Err(BufferError::BadHandle { class: 2, index: 0 })
        );
        let bad_index = BufferHandle { class: 0, index: 2 };
        assert_eq!(
            p.free(bad_index),
            Err(BufferError::BadHandle { class: 0, index: 2 })
        );
        assert!(!p.is_allocated(bad_index));
        assert_eq!(p.in_use(), 0);
        // Errors changed nothing: both buffers of class 0 are still there.
        assert_eq!(p.free_in_class(0), 2);
    }

    #[test]
    fn data_is_the_whole_buffer_and_buffers_do_not_overlap() {
        let mut p = pool(&[(64, 2), (128, 1)]);
        let a = p.alloc(10).unwrap();
        let b = p.alloc(10).unwrap();
        let c = p.alloc(100).unwrap();
        assert_eq!(p.data(a).len(), 64);
        assert_eq!(p.data(c).len(), 128);
        assert!(p.data(a).iter().all(|&x| x == 0));
        p.data_mut(a).fill(0xaa);
        p.data_mut(b).fill(0xbb);
        p.data_mut(c).fill(0xcc);
        assert!(p.data(a).iter().all(|&x| x == 0xaa));
        assert!(p.data(b).iter().all(|&x| x == 0xbb));
        assert!(p.data(c).iter().all(|&x| x == 0xcc));
        // Memory is not cleared on free: reuse sees the old bytes.
        p.free(a).unwrap();
        assert_eq!(p.alloc(10), Some(a));
        assert!(p.data(a).iter().all(|&x| x == 0xaa));
    }

    #[test]
    #[should_panic(expected = "does not name a buffer of this pool")]
    fn data_of_a_foreign_handle_panics_with_a_message() {
        let p = pool(&[(64, 1)]);
        let _ = p.data(BufferHandle { class: 0, index: 1 });
    }

    proptest! {
        /// Random alloc/free sequences against a model of which buffers are
        /// allocated: every allocation takes the smallest class that fits
        /// and has a free buffer, no buffer is handed out twice, counts match.
        #[test]
        fn alloc_free_matches_model(
            counts in prop::collection::vec(1u32..5, 1..5),
            ops in prop::collection::vec((any::<bool>(), 0u32..600, any::<prop::sample::Index>()), 0..200),
        ) {
            let classes: Vec<SizeClass> =
                counts.iter().enumerate().map(|(i, &count)| sc(64 << i, count)).collect();
            let mut p = BufferPool::new(&classes).unwrap();
            let mut held: Vec<BufferHandle> = Vec::new();
            for (is_alloc, bytes, pick) in ops {
                if is_alloc || held.is_empty() {
                    let free_per_class: Vec<usize> = counts
                        .iter()
                        .enumerate()
                        .map(|(i, &n)| n as usize - held.iter().filter(|h| h.class as usize == i).count())
                        .collect();
                    let expect = classes
                        .iter()
                        .enumerate()
                        .find(|&(i, c)| c.bytes >= bytes && free_per_class[i] > 0)
                        .map(|(i, _)| i as u8);
                    let got = p.alloc(bytes);
                    prop_assert_eq!(got.map(|h| h.class), expect);
                    if let Some(h) = got {
                        prop_assert!(!held.contains(&h));
                        prop_assert!(p.data(h).len() as u32 >= bytes);
                        held.push(h);
                    }
                } else {
                    let h = held.swap_remove(pick.index(held.len()));
                    prop_assert_eq!(p.free(h), Ok(()));
                    prop_assert_eq!(p.free(h), Err(BufferError::DoubleFree { class: h.class, index: h.index }));
                }
                prop_assert_eq!(p.in_use(), held.len());
            }
        }
    }
}
