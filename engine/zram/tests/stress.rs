//! Several threads write, read, discard and overwrite overlapping pages at
//! once; every read is checked against the versions that could be there.
mod common;
use common::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use zmem_device::BlockDevice;
use zmem_zram::PAGE_SIZE;

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
