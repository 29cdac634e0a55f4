//! zbud and z3fold packing rules (mm/zbud.c, mm/z3fold.c as of Linux 6.14).

use zmem_zpool::{Handle, Z3foldPool, ZbudPool, Zpool, ZpoolError};

fn put(p: &dyn Zpool, size: usize, fill: u8) -> Handle {
    let h = p.malloc(size).unwrap();
    p.write(h, &vec![fill; size]).unwrap();
    h
}

fn check(p: &dyn Zpool, h: Handle, size: usize, fill: u8) {
    let mut got = Vec::new();
    p.read(h, &mut |b| got.extend_from_slice(b)).unwrap();
    assert_eq!(got, vec![fill; size]);
}

#[test]
fn zbud_pages_formula() {
    // chunks c = ceil(size/64); two buddies share a page iff 2c ≤ 63.
    for size in [1usize, 64, 65, 1000, 1984, 1985, 2000, 3000, 3968] {
        let c = size.div_ceil(64);
        for n in [1usize, 2, 3, 10, 11] {
            let p = ZbudPool::new();
            for _ in 0..n {
                p.malloc(size).unwrap();
            }
            let expect = if 2 * c <= 63 { n.div_ceil(2) } else { n };
            assert_eq!(p.total_pages(), expect as u64, "size {size} n {n}");
            assert_eq!(p.stats().internal_frag, (n * (c * 64 - size)) as u64);
        }
    }
}

#[test]
fn zbud_first_and_last_buddies() {
    let p = ZbudPool::new();
    assert_eq!(p.max_alloc(), 3968);
    assert_eq!(
        p.malloc(3969),
        Err(ZpoolError::TooLarge {
            size: 3969,
            max: 3968
        })
    );
    // 2 chunks first, then 61 chunks fit as the last buddy of the same page.
    let a = put(&p, 100, 1);
    let b = put(&p, 3900, 2);
    assert_eq!(p.total_pages(), 1);
    assert_eq!(p.page_counts(), (0, 1));
    // A third object needs a new page.
    let c = put(&p, 10, 3);
    assert_eq!(p.total_pages(), 2);
    // Freeing the first buddy leaves 63 − 61 = 2 free chunks (list 2); the
    // second page has 62 (list 62). A 2-chunk object takes the first list
    // with ≥ 2 free chunks: the page of `b`, as its first buddy.
    p.free(a).unwrap();
    let d = put(&p, 128, 4);
    assert_eq!(p.total_pages(), 2);
    check(&p, b, 3900, 2);
    check(&p, c, 10, 3);
    check(&p, d, 128, 4);
    for h in [b, c, d] {
        p.free(h).unwrap();
    }
    assert_eq!(p.total_pages(), 0);
}

#[test]
fn z3fold_three_per_page_and_headless() {
    let p = Z3foldPool::new();
    // 21 chunks each: FIRST, LAST, MIDDLE fill the 63 chunks.
    let hs: Vec<_> = (0..4).map(|i| put(&p, 21 * 64, i)).collect();
    assert_eq!(p.total_pages(), 2);
    assert_eq!(p.page_histogram(), [0, 1, 0, 1]);
    // 22 chunks: only two fit (63 − 44 = 19 < 22).
    let q = Z3foldPool::new();
    for i in 0..6 {
        put(&q, 22 * 64, i);
    }
    assert_eq!(q.total_pages(), 3);
    // > 3968 bytes: a headless page each, up to 4096.
    let h1 = put(&p, 3969, 9);
    let h2 = put(&p, 4096, 8);
    assert_eq!(p.page_histogram()[0], 2);
    assert_eq!(
        p.malloc(4097),
        Err(ZpoolError::TooLarge {
            size: 4097,
            max: 4096
        })
    );
    check(&p, h1, 3969, 9);
    check(&p, h2, 4096, 8);
    for (i, h) in hs.iter().enumerate() {
        check(&p, *h, 21 * 64, i as u8);
    }
}

#[test]
fn z3fold_middle_moves_toward_free_end() {
    let p = Z3foldPool::new();
    let a = put(&p, 10 * 64, 1); // FIRST  [1, 11)
    let b = put(&p, 10 * 64, 2); // LAST   [54, 64)
    let c = put(&p, 10 * 64, 3); // MIDDLE [11, 21)
    assert_eq!(p.page_histogram(), [0, 0, 0, 1]);
    p.free(a).unwrap();
    // Gain 64 − (10 + 11 + 10) = 33 ≥ 3: the middle moves next to LAST,
    // leaving 43 chunks before it for a new FIRST.
    let d = put(&p, 43 * 64, 4);
    assert_eq!(p.total_pages(), 1);
    check(&p, b, 640, 2);
    check(&p, c, 640, 3);
    check(&p, d, 43 * 64, 4);
}

#[test]
fn z3fold_alone_middle_becomes_first() {
    let p = Z3foldPool::new();
    let x1 = put(&p, 21 * 64, 1);
    let x2 = put(&p, 21 * 64, 2);
    let x3 = put(&p, 21 * 64, 3); // middle
    p.free(x1).unwrap();
    p.free(x2).unwrap();
    assert_eq!(p.page_histogram(), [0, 1, 0, 0]);
    // Moved to the front: 42 free chunks after it.
    let y = put(&p, 42 * 64, 4);
    assert_eq!(p.total_pages(), 1);
    check(&p, x3, 21 * 64, 3);
    check(&p, y, 42 * 64, 4);
    assert_eq!(p.stats().pages_compacted, 0);
}

#[test]
fn z3fold_single_buddy_migrates_to_another_page() {
    let p = Z3foldPool::new();
    let x1 = put(&p, 21 * 64, 1);
    let x2 = put(&p, 21 * 64, 2);
    let x3 = put(&p, 21 * 64, 3);
    let y1 = put(&p, 21 * 64, 4);
    let y2 = put(&p, 21 * 64, 5);
    assert_eq!(p.total_pages(), 2);
    p.free(x1).unwrap();
    p.free(x2).unwrap();
    // x3 alone: moved into the second page's middle slot, page released.
    assert_eq!(p.total_pages(), 1);
    assert_eq!(p.stats().pages_compacted, 1);
    assert_eq!(p.page_histogram(), [0, 0, 0, 1]);
    check(&p, x3, 21 * 64, 3);
    check(&p, y1, 21 * 64, 4);
    check(&p, y2, 21 * 64, 5);
    // The page now holds a foreign object: freeing y1 and y2 leaves x3 alone,
    // but it is not moved again; the page stays.
    p.free(y1).unwrap();
    p.free(y2).unwrap();
    check(&p, x3, 21 * 64, 3);
    p.free(x3).unwrap();
    assert_eq!(p.total_pages(), 0);
}

/// The comparison in docs/zpool.md: pages for 1000 objects of 1000 and of
/// 2000 bytes.
#[test]
fn allocator_density_comparison() {
    for (name, p1000, p2000) in [
        ("zsmalloc", 250, 500),
        ("zbud", 500, 1000),
        ("z3fold", 334, 1000),
    ] {
        for (size, expect) in [(1000, p1000), (2000, p2000)] {
            let p = zmem_zpool::create(name, 8).unwrap();
            for _ in 0..1000 {
                p.malloc(size).unwrap();
            }
            assert_eq!(p.total_pages(), expect, "{name} size {size}");
        }
    }
}
