//! zsmalloc's size classes at PAGE_SHIFT 14 and 16 (16 and 64 KiB pages),
//! against the kernel's own formulas, written out here a second time from
//! the text of mm/zsmalloc.c (6.12 and 7.3: the macros and
//! `calculate_zspage_chain_size`; 6.1: `get_pages_per_zspage` with
//! ZS_MAX_ZSPAGE_ORDER 2) and `zs_create_pool`'s top-down walk that merges
//! a class into the one above when pages_per_zspage and objs_per_zspage
//! agree, and sets huge_class_size from the first class that is not huge.

use zmem_zpool::class::{ClassTable, Geometry};
use zmem_zpool::{ChainRule, PoolOptions, Zpool, ZpoolError, ZsPool};

/// One class as `zs_create_pool` makes it: (index, size, pages, objs).
type Kclass = (usize, usize, usize, usize);

/// `zs_create_pool` at `page_shift`, from the macros of mm/zsmalloc.c:
/// ZS_MIN_ALLOC_SIZE = MAX(32, ZS_MAX_PAGES_PER_ZSPAGE << PAGE_SHIFT >>
/// OBJ_INDEX_BITS), OBJ_INDEX_BITS = BITS_PER_LONG − (MAX_POSSIBLE_PHYSMEM_BITS
/// − PAGE_SHIFT), ZS_MAX_ALLOC_SIZE = PAGE_SIZE, ZS_SIZE_CLASS_DELTA =
/// PAGE_SIZE >> CLASS_BITS (8), ZS_SIZE_CLASSES = DIV_ROUND_UP(MAX − MIN,
/// DELTA) + 1. Returns the distinct classes (largest first) and
/// huge_class_size.
fn kernel_classes(page_shift: u32, chain: usize, old_rule: bool) -> (Vec<Kclass>, usize) {
    let page_size = 1usize << page_shift;
    let obj_index_bits = 64 - (52 - page_shift);
    let min = 32usize.max((chain << page_shift) >> obj_index_bits);
    let delta = page_size >> 8;
    let n = (page_size - min).div_ceil(delta) + 1;
    let mut out: Vec<Kclass> = Vec::new();
    let mut huge_class_size = 0;
    for i in (0..n).rev() {
        let mut size = min + i * delta;
        if size > page_size {
            size = page_size;
        }
        let pages = if old_rule {
            // get_pages_per_zspage: highest whole-percent use, first wins.
            let (mut best, mut max_usedpc) = (1, 0);
            for k in 1..=chain {
                let zspage_size = k * page_size;
                let waste = zspage_size % size;
                let usedpc = (zspage_size - waste) * 100 / zspage_size;
                if usedpc > max_usedpc {
                    max_usedpc = usedpc;
                    best = k;
                }
            }
            best
        } else if size.is_power_of_two() {
            1
        } else {
            // calculate_zspage_chain_size: least tail waste, first wins.
            let (mut best, mut min_waste) = (1, usize::MAX);
            for k in 1..=chain {
                let waste = (k * page_size) % size;
                if waste < min_waste {
                    min_waste = waste;
                    best = k;
                }
            }
            best
        };
        let objs = pages * page_size / size;
        if pages != 1 && objs != 1 && huge_class_size == 0 {
            huge_class_size = size - (8 - 1);
        }
        // can_merge(prev_class, pages_per_zspage, objs_per_zspage)
        if let Some(prev) = out.last() {
            if prev.2 == pages && prev.3 == objs {
                continue;
            }
        }
        out.push((i, size, pages, objs));
    }
    (out, huge_class_size)
}

fn ours(page_shift: u32, chain: usize, rule: ChainRule) -> (Vec<Kclass>, usize) {
    let t = ClassTable::for_page(Geometry { page_shift }, chain, rule);
    let classes = t
        .classes
        .iter()
        .rev()
        .map(|c| (c.index, c.size, c.pages_per_zspage, c.objs_per_zspage))
        .collect();
    (classes, t.huge_class_size)
}

#[test]
fn class_tables_at_16k_and_64k_are_the_kernels() {
    for shift in [12, 14, 16] {
        for chain in 4..=16 {
            assert_eq!(
                ours(shift, chain, ChainRule::LeastWaste),
                kernel_classes(shift, chain, false),
                "PAGE_SHIFT {shift}, chain {chain}"
            );
        }
        assert_eq!(
            ours(shift, 4, ChainRule::MostUsedPercent),
            kernel_classes(shift, 4, true),
            "PAGE_SHIFT {shift}, 6.1's rule"
        );
    }
}

#[test]
fn the_figures_at_16k_and_64k() {
    // ZS_SIZE_CLASS_DELTA and ZS_SIZE_CLASSES.
    let g14 = Geometry { page_shift: 14 };
    let g16 = Geometry { page_shift: 16 };
    assert_eq!((g14.class_delta(), g14.size_classes()), (64, 257));
    assert_eq!((g16.class_delta(), g16.size_classes()), (256, 257));
    assert_eq!(g14.min_alloc_size(16), 32);
    // Distinct classes and huge_class_size, CONFIG_ZSMALLOC_CHAIN_SIZE=8.
    let count = |shift, chain, rule| {
        let t = ClassTable::for_page(Geometry { page_shift: shift }, chain, rule);
        (t.classes.len(), t.huge_class_size)
    };
    assert_eq!(count(12, 8, ChainRule::LeastWaste), (119, 3625));
    assert_eq!(count(14, 8, ChainRule::LeastWaste), (121, 14553));
    assert_eq!(count(16, 8, ChainRule::LeastWaste), (123, 58137));
    // 6.1: chains of 4 pages, the whole-percent rule.
    assert_eq!(count(14, 4, ChainRule::MostUsedPercent), (70, 13081));
    assert_eq!(count(16, 4, ChainRule::MostUsedPercent), (72, 52249));
    // The largest raw index is the page-sized (huge) class: 256 at 16 KiB.
    let t = ClassTable::for_page(g14, 8, ChainRule::LeastWaste);
    let top = t.classes.last().unwrap();
    assert_eq!((top.index, top.size, top.pages_per_zspage), (256, 16384, 1));
}

fn pool(page_size: usize) -> ZsPool {
    ZsPool::with_options(PoolOptions {
        page_size,
        ..PoolOptions::default()
    })
    .unwrap()
}

#[test]
fn a_16k_pool_stores_page_sized_objects_in_16k_pages() {
    let p = pool(16384);
    assert_eq!((p.max_alloc(), p.huge_class_size()), (16384, 14553));
    let big = p.malloc(16384).unwrap();
    let data: Vec<u8> = (0..16384u32).map(|i| (i * 7 % 251) as u8).collect();
    p.write(big, &data).unwrap();
    assert_eq!(p.total_pages(), 1, "one 16 KiB page for a huge object");
    let small: Vec<_> = (0..100).map(|_| p.malloc(1000).unwrap()).collect();
    let mut back = Vec::new();
    p.read(big, &mut |b| back.extend_from_slice(b)).unwrap();
    assert_eq!(back, data);
    // 1000 + 8 bytes land in the 1056-byte class (32 + 16 × 64), whose
    // least-waste chain is 2 pages of 16 KiB (32768 mod 1056 = 32): 31 objects.
    let c = p.class_table().classes[p.class_table().class_for_alloc(1000)];
    assert_eq!(
        (c.size, c.pages_per_zspage, c.objs_per_zspage),
        (1056, 2, 31)
    );
    assert_eq!(p.total_pages(), 1 + 2 * 100usize.div_ceil(31) as u64);
    for h in small.into_iter().chain([big]) {
        p.free(h).unwrap();
    }
    assert_eq!(p.total_pages(), 0);
    assert!(matches!(
        p.malloc(16385),
        Err(ZpoolError::TooLarge { max: 16384, .. })
    ));
}

#[test]
fn a_64k_pool_chains_64k_pages() {
    let p = pool(65536);
    let t = p.class_table();
    let c = t.classes[t.class_for_alloc(3000)];
    // 3008 + 8 rounds to the 3104-byte class (32 + 12 × 256).
    assert_eq!(c.size, 3104);
    let hs: Vec<_> = (0..(c.objs_per_zspage + 1))
        .map(|i| {
            let h = p.malloc(3000).unwrap();
            p.write(h, &vec![i as u8; 3000]).unwrap();
            h
        })
        .collect();
    assert_eq!(p.total_pages(), 2 * c.pages_per_zspage as u64);
    for (i, h) in hs.iter().enumerate() {
        p.read(*h, &mut |b| assert!(b.iter().all(|&x| x == i as u8)))
            .unwrap();
    }
}

#[test]
fn other_page_sizes_and_zbud_at_16k_are_refused() {
    for bad in [8192, 32768, 4095] {
        let e = ZsPool::with_options(PoolOptions {
            page_size: bad,
            ..PoolOptions::default()
        })
        .err()
        .unwrap();
        assert!(e.to_string().contains("16384"), "{e}");
    }
    let opts = PoolOptions {
        page_size: 16384,
        ..PoolOptions::default()
    };
    for name in ["zbud", "z3fold"] {
        let e = zmem_zpool::create(name, opts).err().unwrap();
        assert!(e.to_string().contains("4 KiB pages only"), "{e}");
    }
    assert!(zmem_zpool::create("zsmalloc", opts).is_ok());
}
