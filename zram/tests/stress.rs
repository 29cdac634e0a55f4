//! Several threads write, read, discard and overwrite overlapping pages at
//! once; every read is checked against the versions that could be there.
mod common;
use common::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use zmem_sysfs::BlockDevice;
use zmem_zram::PAGE_SIZE;

/// The content of page `index` at version `v` (0 = zeros): the version is
/// embedded so a reader can tell which write it sees and verify the rest.
fn content(index: usize, v: u64) -> Vec<u8> {
    if v == 0 {
        return vec![0u8; PAGE_SIZE];
    }
    let mut p = page(v % 6, (index as u64) << 32 | v);
    if zmem_codec::same_filled(&p).is_some() {
        return p; // same-filled pages carry no room for a tag; checked by value
    }
    p[..8].copy_from_slice(&v.to_le_bytes());
    p[8..16].copy_from_slice(&(index as u64).to_le_bytes());
    p
}

#[test]
fn threads_on_shared_pages_always_read_a_written_version() {
    const PAGES: usize = 64;
    const THREADS: usize = 4;
    let dev = Arc::new(device((PAGES * PAGE_SIZE) as u64));
    // Per page: the highest version written so far. Writers of one page are
    // one thread (index % THREADS), so versions grow; readers accept any version
    // <= the latest and verify its full content.
    let latest: Arc<Vec<AtomicU64>> = Arc::new((0..PAGES).map(|_| AtomicU64::new(0)).collect());
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let dev = dev.clone();
            let latest = latest.clone();
            std::thread::spawn(move || {
                let mut r = Rng(t as u64 * 7919 + 13);
                let mut checked = 0u64;
                for _ in 0..4000 {
                    let index = r.below(PAGES as u64) as usize;
                    match r.below(10) {
                        0..=3 if index % THREADS == t => {
                            let v = latest[index].load(Ordering::Acquire) + 1;
                            dev.write_page(index, &content(index, v)).unwrap();
                            latest[index].store(v, Ordering::Release);
                        }
                        4 if index % THREADS == t => {
                            dev.discard((index * PAGE_SIZE) as u64, PAGE_SIZE as u64)
                                .unwrap();
                            // Discarded pages read back as zeros until the rewrite below.
                            let v = latest[index].load(Ordering::Acquire) + 1;
                            dev.write_page(index, &content(index, v)).unwrap();
                            latest[index].store(v, Ordering::Release);
                        }
                        _ => {
                            let hi = latest[index].load(Ordering::Acquire);
                            let mut b = vec![0u8; PAGE_SIZE];
                            dev.read_page(index, &mut b).unwrap();
                            let hi2 = latest[index].load(Ordering::Acquire);
                            // Zeros are legal too: a discard may be in progress on this page.
                            let ok = b.iter().all(|&x| x == 0)
                                || (hi.saturating_sub(1)..=hi2 + 1).any(|v| b == content(index, v));
                            assert!(
                                ok,
                                "page {index}: content matches no version in {hi}..={hi2}"
                            );
                            checked += 1;
                        }
                    }
                }
                checked
            })
        })
        .collect();
    let checked: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(checked > 1000);
    // Final state: every page holds its latest version; stats agree with the table.
    for (i, l) in latest.iter().enumerate() {
        let mut b = vec![0u8; PAGE_SIZE];
        dev.read_page(i, &mut b).unwrap();
        assert_eq!(b, content(i, l.load(Ordering::Relaxed)), "page {i}");
    }
    let m = dev.mm_stat();
    let slots = dev.block_state();
    assert_eq!(m.orig_data_size, slots.len() as u64 * PAGE_SIZE as u64);
    assert_eq!(
        m.compr_data_size,
        slots.iter().map(|s| s.size as u64).sum::<u64>()
    );
    assert_eq!(m.same_pages, slots.iter().filter(|s| s.same).count() as u64);
    assert_eq!(m.huge_pages, slots.iter().filter(|s| s.huge).count() as u64);
    assert_eq!(dev.io_stat().failed_reads + dev.io_stat().failed_writes, 0);
}

/// Fast-path and primary writes from several threads while the maintenance
/// worker keeps recompressing (fast slots back to lz4, idle slots to zstd):
/// every read sees exactly the last write of its page.
#[test]
fn fast_writes_during_background_recompression() {
    use std::time::Duration;
    use zmem_codec::Params;
    use zmem_zram::{MaintPolicy, MaintWorker, Zram};
    const PAGES: usize = 64;
    const THREADS: usize = 3;
    let dev = Arc::new(
        Zram::builder()
            .algorithm(ALGO, Params::default())
            .secondary(1, "zstd", Params::default())
            .fast_algorithm("lz4m")
            .disksize((PAGES * PAGE_SIZE) as u64)
            .build()
            .unwrap(),
    );
    let policy = MaintPolicy {
        interval: Duration::from_millis(1),
        fast_idle_age: Duration::ZERO,
        recompress_idle_age: Duration::ZERO,
        recompress_threshold: 0,
        writeback: false,
        min_pages: 0,
        ..MaintPolicy::default()
    };
    // Writers keep going until the worker has run 20 rounds beside them.
    let rounds = Arc::new(AtomicU64::new(0));
    let r2 = rounds.clone();
    let worker = MaintWorker::start_with(
        dev.clone(),
        policy,
        Box::new(move |_| {
            r2.fetch_add(1, Ordering::Relaxed);
        }),
    )
    .unwrap();
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let dev = dev.clone();
            let rounds = rounds.clone();
            std::thread::spawn(move || {
                let mut r = Rng(t as u64 * 104_729 + 7);
                let mut version = vec![0u64; PAGES];
                let mut n = 0u64;
                while n < 3000 || (rounds.load(Ordering::Relaxed) < 20 && n < 50_000_000) {
                    n += 1;
                    let index = r.below(PAGES as u64) as usize;
                    if index % THREADS != t {
                        continue;
                    }
                    match r.below(4) {
                        0 => {
                            version[index] += 1;
                            dev.write_page_fast(index, &content(index, version[index]))
                                .unwrap();
                        }
                        1 => {
                            version[index] += 1;
                            dev.write_page(index, &content(index, version[index]))
                                .unwrap();
                        }
                        _ => {
                            let mut b = vec![0u8; PAGE_SIZE];
                            dev.read_page(index, &mut b).unwrap();
                            assert!(
                                b == content(index, version[index]),
                                "page {index} v{}",
                                version[index]
                            );
                        }
                    }
                }
                version
            })
        })
        .collect();
    let versions: Vec<Vec<u64>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let rounds = rounds.load(Ordering::Relaxed);
    drop(worker);
    for i in 0..PAGES {
        let mut b = vec![0u8; PAGE_SIZE];
        dev.read_page(i, &mut b).unwrap();
        assert_eq!(b, content(i, versions[i % THREADS][i]), "page {i}");
    }
    let m = dev.mm_stat();
    let slots = dev.block_state();
    assert_eq!(
        m.compr_data_size,
        slots.iter().map(|s| s.size as u64).sum::<u64>()
    );
    assert_eq!(m.huge_pages, slots.iter().filter(|s| s.huge).count() as u64);
    assert!(slots.iter().all(|s| !s.pp_slot));
    println!("{rounds} maintenance rounds ran during the writes");
}
