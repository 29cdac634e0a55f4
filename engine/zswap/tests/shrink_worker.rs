//! The shrink worker step by step, as Linux 6.18 mm/zswap.c runs it
//! (`shrink_worker` → `shrink_memcg` → `shrink_memcg_cb`): one LRU entry per
//! attempt, `referenced` set on store and cleared on rotation (second
//! chance), a failed attempt counts toward `MAX_RECLAIM_RETRIES` (16), the
//! run stops at the accept threshold. And `zswap_shrinker_count`'s two
//! formulas (memcg compressed bytes; pool pages without memcg).
//!
//! Random pages are stored raw: each entry is one zsmalloc object of
//! PAGE_SIZE, i.e. exactly one pool page, so pool pages = entries.

use zmem_files::testutil::ScratchDir;
use zmem_zswap::{Backing, ShrinkWorker, StoreReject, Zswap, MAX_RECLAIM_RETRIES, PAGE_SIZE};

/// A private scratch directory for backing files, removed when dropped.
fn scratch() -> ScratchDir {
    ScratchDir::new("shrink")
}

/// A page that does not compress (xorshift bytes).
fn random_page(seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..PAGE_SIZE)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A page that compresses to a few hundred bytes.
fn text_page(seed: u64) -> Vec<u8> {
    (0..PAGE_SIZE)
        .map(|i| b"zswap shrink worker "[(i + seed as usize) % 20] ^ (i / 256) as u8)
        .collect()
}

/// A 20-page pool (accept threshold 90 % = 18 pages), worker run by hand;
/// its backing file `name` is in `dir`.
fn engine(dir: &ScratchDir, name: &str, slots: u64) -> Zswap {
    let backing = Backing::create(dir.join(name), slots).unwrap();
    Zswap::builder()
        .compressor("lzo")
        .max_pool_bytes(20 * PAGE_SIZE as u64)
        .accept_threshold_percent(90)
        .worker(ShrinkWorker::Manual)
        .build(backing)
        .unwrap()
}

fn offsets(z: &Zswap) -> Vec<u64> {
    z.lru_snapshot().into_iter().map(|(o, _)| o).collect()
}

/// Stores raw pages at `base..base + 20` (the pool is then full), and shows
/// the 21st store refused for the limit.
fn fill(z: &Zswap, base: u64) {
    for o in base..base + 20 {
        z.store(o, &random_page(o)).unwrap();
    }
    assert_eq!(z.pool_pages(), 20);
    assert_eq!(z.store(999, &random_page(999)), Err(StoreReject::LimitHit));
    assert_eq!(z.stats().pool_limit_hit, 1);
    assert!(z.lru_snapshot().iter().all(|(_, referenced)| *referenced));
}

#[test]
fn after_a_burst_a_run_writes_back_nothing_then_rotation_then_writeback() {
    let dir = scratch();
    let z = engine(&dir, "burst", 64);
    assert_eq!(z.limits(), (20, 18));
    fill(&z, 0);

    // Run 1: every entry is referenced. Each attempt looks at the oldest one,
    // clears the bit and rotates it: 16 failures end the run, nothing written.
    let r = z.run_shrink_worker();
    assert_eq!(r.written_back, 0);
    assert_eq!((r.attempts, r.failures), (16, MAX_RECLAIM_RETRIES));
    assert!(r.gave_up);
    let lru = z.lru_snapshot();
    let want: Vec<u64> = (16..20).chain(0..16).collect();
    assert_eq!(offsets(&z), want, "0..15 rotated to the young end");
    assert!(lru[..4].iter().all(|(_, r)| *r), "16..19 still referenced");
    assert!(
        lru[4..].iter().all(|(_, r)| !*r),
        "0..15 had their second chance"
    );
    assert_eq!(z.pool_pages(), 20);
    assert_eq!(z.stats().written_back_pages, 0);

    // Run 2: 16..19 are rotated (4 failures), then 0 and 1 are written back;
    // the pool is at the accept threshold (18 pages) and the run stops.
    let r = z.run_shrink_worker();
    assert_eq!((r.written_back, r.attempts, r.failures), (2, 6, 4));
    assert!(!r.gave_up);
    assert_eq!(z.pool_pages(), 18);
    assert!(!z.contains(0) && !z.contains(1));
    let want: Vec<u64> = (2..20).collect();
    assert_eq!(offsets(&z), want);
    assert!(z.lru_snapshot().iter().all(|(_, r)| !*r));
    let st = z.stats();
    assert_eq!((st.written_back_pages, st.zswpwb), (2, 2));
    assert_eq!(z.backing().used_slots(), 2);

    // At the threshold the hysteresis lets stores in again; a new entry is
    // referenced at the young end.
    z.store(30, &random_page(30)).unwrap();
    assert_eq!(z.lru_snapshot().last(), Some(&(30, true)));
    assert_eq!(z.stats().pool_limit_hit, 1);

    // A run always makes its first attempt, even at the threshold: it
    // writes back the oldest entry (2) and stops.
    let r = z.run_shrink_worker();
    assert_eq!((r.written_back, r.failures), (1, 0));
    assert!(!z.contains(2));

    // Written-back pages read back from the backing file.
    let mut buf = vec![0u8; PAGE_SIZE];
    for o in 0..3 {
        z.swap_in(o, &mut buf, true).unwrap();
        assert_eq!(buf, random_page(o), "offset {o}");
    }
}

#[test]
fn failed_writebacks_count_and_end_the_run_with_entries_kept() {
    // Offsets 100..119 lie beyond the 8-slot backing file: every writeback fails.
    let dir = scratch();
    let z = engine(&dir, "fail", 8);
    fill(&z, 100);
    let r = z.run_shrink_worker();
    assert_eq!((r.written_back, r.failures), (0, 16), "16 rotations");
    // Run 2: 4 rotations of the still-referenced entries, then 12 failed
    // writebacks; each failed entry is rotated and stays in the pool.
    let r = z.run_shrink_worker();
    assert_eq!((r.written_back, r.attempts, r.failures), (0, 16, 16));
    assert!(r.gave_up);
    let st = z.stats();
    assert_eq!(st.reject_reclaim_fail, 12);
    assert_eq!((st.written_back_pages, st.stored_pages), (0, 20));
    let want: Vec<u64> = (112..120).chain(100..112).collect();
    assert_eq!(offsets(&z), want, "failed entries rotated to the young end");
    let mut buf = vec![0u8; PAGE_SIZE];
    for o in 100..120 {
        assert!(z.load(o, &mut buf, false).unwrap());
        assert_eq!(buf, random_page(o));
    }
}

#[test]
fn an_empty_lru_ends_the_run_without_attempts() {
    let dir = scratch();
    let z = engine(&dir, "empty", 8);
    let r = z.run_shrink_worker();
    assert_eq!((r.written_back, r.attempts, r.failures), (0, 0, 0));
}

#[test]
fn loads_do_not_set_referenced() {
    let dir = scratch();
    let z = engine(&dir, "load", 64);
    for o in 0..4 {
        z.store(o, &random_page(o)).unwrap();
    }
    z.attr_write("shrinker_enabled", "Y").unwrap();
    assert_eq!(
        z.shrinker_scan(4),
        0,
        "one pass clears the bits set on store"
    );
    let mut buf = vec![0u8; PAGE_SIZE];
    for o in 0..4 {
        assert!(z.load(o, &mut buf, false).unwrap());
    }
    assert!(z.lru_snapshot().iter().all(|(_, r)| !*r));
    assert_eq!(z.shrinker_scan(4), 4);
}

#[test]
fn shrinker_count_memcg_bytes_or_pool_pages() {
    for memcg in [true, false] {
        let dir = scratch();
        let backing = Backing::create(dir.join("count"), 64).unwrap();
        let z = Zswap::builder()
            .compressor("lzo")
            .max_pool_bytes(64 * PAGE_SIZE as u64)
            .shrinker_enabled(true)
            .memcg(memcg)
            .worker(ShrinkWorker::Manual)
            .build(backing)
            .unwrap();
        for o in 0..12 {
            z.store(o, &text_page(o)).unwrap();
        }
        let (bytes, pages) = (z.compressed_bytes(), z.pool_pages());
        assert!(
            bytes < 12 * PAGE_SIZE as u64 / 4,
            "{bytes} bytes compressed"
        );
        // mult_frac(freeable = 12, backing, stored = 12) = backing.
        let backing_pages = if memcg {
            bytes / PAGE_SIZE as u64
        } else {
            pages
        };
        assert_eq!(z.shrinker_count(), backing_pages, "memcg {memcg}");
    }
}

#[test]
fn a_paced_worker_is_queued_and_steps_with_the_swap_path() {
    let dir = scratch();
    let backing = Backing::create(dir.join("paced"), 64).unwrap();
    let z = Zswap::builder()
        .compressor("lzo")
        .max_pool_bytes(20 * PAGE_SIZE as u64)
        .accept_threshold_percent(90)
        .worker(ShrinkWorker::Paced(2))
        .build(backing)
        .unwrap();
    fill(&z, 0);
    // The refused store queued a run; nothing happened yet.
    assert!(z.worker_queued());
    assert!(z.lru_snapshot().iter().all(|(_, r)| *r));
    // Each later store or load lets the run make 2 steps: one attempt on the
    // cgroup, then the end of the cgroup walk (no failure: it had an attempt).
    let mut buf = vec![0u8; PAGE_SIZE];
    for k in 1..=15u64 {
        assert!(z.load(19, &mut buf, false).unwrap());
        assert!(z.worker_queued(), "after {k} loads");
        let cleared = z.lru_snapshot().iter().filter(|(_, r)| !*r).count();
        assert_eq!(cleared as u64, k);
    }
    // The 16th failure ends the run.
    assert!(z.load(19, &mut buf, false).unwrap());
    assert!(!z.worker_queued());
    // Another refused store while FULL queues the next run; a store refused
    // while one is queued does not start a second.
    assert_eq!(z.store(998, &random_page(998)), Err(StoreReject::LimitHit));
    assert!(z.worker_queued());
    // Its steps reach 16..19 (referenced: failures), then write back 0 and 1.
    for _ in 0..5 {
        let _ = z.load(19, &mut buf, false);
    }
    assert_eq!(z.stats().written_back_pages, 1);
    let _ = z.load(19, &mut buf, false);
    assert_eq!(z.stats().written_back_pages, 2);
    assert_eq!(z.pool_pages(), 18);
    assert!(!z.worker_queued(), "at the accept threshold the run ends");
}
