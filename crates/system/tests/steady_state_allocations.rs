//! Once warm, a nanoPU node serving the built-in client's closed-loop load
//! allocates (next to) nothing per request: frame buffers, message words and
//! payloads are reused along the whole path, client, wire, NIC, cores and
//! back. Allocations are counted by this test binary's global allocator, so
//! this file holds only this test (another running in parallel would be
//! counted too).

use nanopu_node::{Node, NodeConfig};
use nanopu_sim::SimTime;
use nanopu_system::{Config, LoadConfig, LoadMode, System};
use nanopu_testkit::program;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Allocations per reply while the load runs from `warm` to `end`.
fn allocations_per_reply(bytes: u16, window: u32, warm: SimTime, end: SimTime) -> f64 {
    let node = Node::with_program(NodeConfig::default(), &program("loopback")).unwrap();
    let load = LoadConfig {
        message_bytes: bytes,
        count: 1_000_000,
        mode: LoadMode::Closed { window },
        ..LoadConfig::default()
    };
    let mut s = System::new(node, &Config::default(), Some(load)).unwrap();
    s.run(warm).unwrap();
    let (a0, r0) = (
        ALLOCATIONS.load(Ordering::Relaxed),
        s.load_report().unwrap().received,
    );
    s.run(end).unwrap();
    let (a1, r1) = (
        ALLOCATIONS.load(Ordering::Relaxed),
        s.load_report().unwrap().received,
    );
    let r = s.load_report().unwrap();
    assert_eq!((r.wrong_replies, r.unexpected_replies), (0, 0), "{r:?}");
    assert!(r1 - r0 >= 1_000, "only {} replies measured", r1 - r0);
    // `load_report` itself allocates a little (its summary): not per reply.
    (a1 - a0) as f64 / (r1 - r0) as f64
}

#[test]
fn a_warm_node_and_client_allocate_next_to_nothing_per_request() {
    let warm = SimTime(50_000_000_000); // 50 us
    let end = SimTime(500_000_000_000); // 500 us
                                        // One packet per message, and two (the MTU is 1 KB).
    for (bytes, window) in [(64u16, 16u32), (2048, 4)] {
        let per_reply = allocations_per_reply(bytes, window, warm, end);
        // The client's table of outstanding requests (a B-tree) allocates a
        // node now and then; everything else is reused. Before buffers were
        // reused end to end this was about 5 per reply.
        assert!(
            per_reply < 0.2,
            "{bytes} B, window {window}: {per_reply:.3} allocations per reply"
        );
        eprintln!("{bytes} B, window {window}: {per_reply:.4} allocations per reply");
    }
}
