//! Compaction at mem_limit: before a write is refused because the pool is
//! over mem_limit, the engine compacts the pool when zsmalloc says pages can
//! be freed (`zs_can_compact`), as the kernel's zsmalloc shrinker would under
//! memory pressure, and counts the freed pages in mm_stat's pages_compacted
//! exactly as the `compact` attribute does (`zs_compact`'s pages freed).

use zmem_device::{BlockDevice, IoError};

use zmem_kernel::MmStat;
use zmem_zram::{Zram, PAGE_SIZE};

const PAGES: usize = 240;

/// A page that compresses to a bit over `len` bytes: `len` pseudo-random
/// bytes (seeded by `seed`), then zeros.
fn page(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut p = vec![0u8; PAGE_SIZE];
    for b in &mut p[..len] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    p
}

fn mm(d: &Zram) -> MmStat {
    MmStat::parse(&d.attr_read("mm_stat").unwrap()).unwrap()
}

/// A device holding PAGES pages of one size class, three of every four
/// then discarded: zspages three-quarters empty, nothing freed yet.
fn fragmented() -> Zram {
    let d = Zram::new();
    d.attr_write("disksize", "4M").unwrap();
    for i in 0..PAGES {
        d.write_at((i * PAGE_SIZE) as u64, &page(i as u64, 900))
            .unwrap();
    }
    for i in (0..PAGES).filter(|i| i % 4 != 0) {
        d.discard((i * PAGE_SIZE) as u64, PAGE_SIZE as u64).unwrap();
    }
    d
}

/// The same device compacted through the `compact` attribute: the figures
/// a write at mem_limit must reach by compacting on its own.
fn compacted_twin() -> MmStat {
    let t = fragmented();
    t.attr_write("compact", "1").unwrap();
    mm(&t)
}

#[test]
fn a_write_at_mem_limit_compacts_first_and_succeeds() {
    let twin = compacted_twin();
    let d = fragmented();
    let before = mm(&d);
    assert_eq!(before.pages_compacted, 0);
    assert!(
        twin.pages_compacted > 0 && twin.mem_used_total < before.mem_used_total,
        "the layout must leave something to compact: {before:?} vs {twin:?}"
    );
    // Over the limit now, under it after compaction.
    d.attr_write("mem_limit", &twin.mem_used_total.to_string())
        .unwrap();
    let idx = PAGES + 1;
    let data = page(7777, 900);
    d.write_at((idx * PAGE_SIZE) as u64, &data).unwrap();
    let after = mm(&d);
    assert_eq!(
        after.pages_compacted, twin.pages_compacted,
        "pages_compacted counts the pages zs_compact freed"
    );
    assert!(after.mem_used_total <= twin.mem_used_total);
    // The peak keeps the total sampled before compaction (zram_can_store_page).
    assert_eq!(after.mem_used_max, before.mem_used_max);
    assert!(after.mem_used_max >= before.mem_used_total);
    let mut back = vec![0u8; PAGE_SIZE];
    d.read_at((idx * PAGE_SIZE) as u64, &mut back).unwrap();
    assert_eq!(back, data);
    // Every surviving page reads back after its object moved.
    for i in (0..PAGES).step_by(4) {
        d.read_at((i * PAGE_SIZE) as u64, &mut back).unwrap();
        assert_eq!(back, page(i as u64, 900), "page {i}");
    }
}

#[test]
fn compaction_that_frees_too_little_still_refuses_and_keeps_the_old_data() {
    let twin = compacted_twin();
    let d = fragmented();
    // Below what compaction reaches: compaction runs (and is counted), the
    // write is still refused, the slot keeps its old contents.
    let limit = twin.mem_used_total - 2 * PAGE_SIZE as u64;
    d.attr_write("mem_limit", &limit.to_string()).unwrap();
    let r = d.write_at(0, &page(4242, 900));
    assert!(matches!(r, Err(IoError::NoSpace(_))), "{r:?}");
    let after = mm(&d);
    assert_eq!(after.pages_compacted, twin.pages_compacted);
    let mut back = vec![0u8; PAGE_SIZE];
    d.read_at(0, &mut back).unwrap();
    assert_eq!(back, page(0, 900));
    // Nothing left to compact: the next refusal does not compact again.
    assert!(d.write_at(0, &page(4343, 900)).is_err());
    assert_eq!(mm(&d).pages_compacted, twin.pages_compacted);
}

#[test]
fn without_a_limit_nothing_is_compacted_behind_the_users_back() {
    let d = fragmented();
    for i in 0..PAGES {
        d.write_at(
            ((PAGES + i) * PAGE_SIZE) as u64,
            &page(1000 + i as u64, 900),
        )
        .unwrap();
    }
    assert_eq!(mm(&d).pages_compacted, 0);
}
