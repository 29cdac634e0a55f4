//! Streams allocate nothing per page: after a warm-up page, compressing and
//! decompressing more pages makes no heap allocation (counted by a global
//! allocator, on this thread only).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use common::sample_pages;
use zmem_codec::{find, Params, MAX_COMPRESSED, PAGE_SIZE};

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; it only
// counts allocations in a thread-local (which itself never allocates).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(|c| c.get())
}

#[test]
fn bound_codecs_allocate_nothing_per_page() {
    let pages = sample_pages();
    let dict = Arc::new(pages[2].1.repeat(2));
    for name in ["lz4", "lz4hc", "zstd", "deflate"] {
        for with_dict in [false, true] {
            if with_dict && name == "deflate" {
                continue;
            }
            let params = if with_dict {
                Params {
                    dict: Some(dict.clone()),
                    ..Params::default()
                }
            } else {
                Params::default()
            };
            let mut s = find(name).unwrap().new_stream(&params).unwrap();
            let mut dst = vec![0u8; MAX_COMPRESSED];
            let mut out = vec![0u8; PAGE_SIZE];
            // Warm-up: per-thread library state and first-use buffers.
            for (_, p) in &pages {
                let n = s.compress(p, &mut dst).unwrap();
                s.decompress(&dst[..n], &mut out).unwrap();
            }
            let before = allocs();
            for _ in 0..20 {
                for (_, p) in &pages {
                    let n = s.compress(p, &mut dst).unwrap();
                    s.decompress(&dst[..n], &mut out).unwrap();
                    assert_eq!(&out, p);
                }
            }
            let n = allocs() - before;
            assert_eq!(
                n, 0,
                "{name} (dict: {with_dict}): {n} allocations in 200 pages"
            );
        }
    }
}
