//! zsmalloc geometry and accounting against the spec (§7.3, §7.4, §7.9, §12).

use zmem_zpool::class::{nominal_size, size_class_index, ClassTable};
use zmem_zpool::{Zpool, ZpoolError, ZsPool, PAGE_SIZE};

/// The spec's distinct-class table for chain 8 (§7.4), verbatim.
const SPEC_CHAIN8: &str = "
32:1:128[0]  48:3:256[1]  64:1:64[2]  80:5:256[3]  96:3:128[4]  112:7:256[5]  128:1:32[6]  144:7:199[7]
160:5:128[8]  176:4:93[9]  192:3:64[10]  208:3:59[11]  224:7:128[12]  240:1:17[13]  256:1:16[14]  272:1:15[15]
288:5:71[16]  304:7:94[17]  320:5:64[18]  336:6:73[19]  352:8:93[20]  368:8:89[21]  384:3:32[22]  400:5:51[23]
416:6:59[24]  432:7:66[25]  448:7:64[26]  464:5:44[27]  480:2:17[28]  496:4:33[29]  512:1:8[30]  528:4:31[31]
544:2:15[32]  560:7:51[33]  576:1:7[34]  592:8:55[35]  608:7:47[36]  624:2:13[37]  640:5:32[38]  656:5:31[39]
672:1:6[40]  688:8:47[41]  704:5:29[42]  720:3:17[43]  736:2:11[44]  752:7:38[45]  768:3:16[46]  784:5:26[47]
816:1:5[48-49]  832:8:39[50]  848:5:24[51]  864:7:33[52]  880:8:37[53]  896:7:32[54]  912:7:31[55]  928:5:22[56]
944:3:13[57]  960:4:17[58]  976:6:25[59]  992:8:33[60]  1024:1:4[61-62]  1056:8:31[63-64]  1072:5:19[65]  1088:4:15[66]
1104:3:11[67]  1120:8:29[68]  1136:5:18[69]  1168:2:7[70-71]  1184:7:24[72]  1200:5:17[73]  1216:3:10[74]  1232:7:23[75]
1248:4:13[76]  1280:5:16[77-78]  1296:7:22[79]  1360:1:3[80-83]  1424:8:23[84-87]  1440:6:17[88]  1456:5:14[89]  1488:4:11[90-91]
1504:7:19[92]  1536:3:8[93-94]  1552:8:21[95]  1568:5:13[96]  1584:7:18[97]  1632:2:5[98-100]  1680:7:17[101-103]  1696:5:12[104]
1712:8:19[105]  1744:3:7[106-107]  1792:7:16[108-110]  1808:4:9[111]  1856:5:11[112-114]  1888:6:13[115-116]  1904:7:15[117]  1920:8:17[118]
2048:1:2[119-126]  2176:8:15[127-134]  2192:7:13[135]  2224:6:11[136-137]  2272:5:9[138-140]  2336:4:7[141-144]  2384:7:12[145-147]  2448:3:5[148-151]
2512:8:13[152-155]  2560:5:8[156-158]  2592:7:11[159-160]  2720:2:3[161-168]  2864:7:10[169-177]  2912:5:7[178-180]  2976:8:11[181-184]  3072:3:4[185-190]
3184:7:9[191-197]  3264:4:5[198-202]  3408:5:6[203-211]  3504:6:7[212-217]  3584:7:8[218-222]  3632:8:9[223-225]  4096:1:1[226-254]
";

/// (size, pages_per_zspage, objs_per_zspage, first raw index, last raw index).
fn parse_spec() -> Vec<(usize, usize, usize, usize, usize)> {
    SPEC_CHAIN8
        .split_whitespace()
        .map(|tok| {
            let (geom, range) = tok.split_once('[').unwrap();
            let range = range.trim_end_matches(']');
            let (lo, hi) = match range.split_once('-') {
                Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                None => (range.parse().unwrap(), range.parse().unwrap()),
            };
            let g: Vec<usize> = geom.split(':').map(|x| x.parse().unwrap()).collect();
            (g[0], g[1], g[2], lo, hi)
        })
        .collect()
}

#[test]
fn chain8_class_table_matches_spec() {
    let spec = parse_spec();
    assert_eq!(spec.len(), 119);
    let t = ClassTable::new(8);
    assert_eq!(t.classes.len(), 119);
    for (c, &(size, ppz, objs, lo, hi)) in t.classes.iter().zip(&spec) {
        assert_eq!(
            (
                c.size,
                c.pages_per_zspage,
                c.objs_per_zspage,
                c.first_index,
                c.index
            ),
            (size, ppz, objs, lo, hi)
        );
    }
    // The spec's notation, reproduced as a whole.
    let spec_text: Vec<&str> = SPEC_CHAIN8.split_whitespace().collect();
    assert_eq!(t.describe(), spec_text.join("  "));
}

#[test]
fn distinct_class_counts_and_huge_class_size() {
    for (chain, distinct, huge) in [(4, 69, 3257), (8, 119, 3625), (16, 192, 3833)] {
        let t = ClassTable::new(chain);
        assert_eq!(t.classes.len(), distinct, "chain {chain}");
        assert_eq!(t.huge_class_size, huge, "chain {chain}");
        let pool = ZsPool::new(chain).unwrap();
        assert_eq!(pool.huge_class_size(), huge);
        // A size just below huge_class_size is stored in a multi-object class,
        // huge_class_size itself lands in a 1-page/1-object class.
        let below = pool.class_table().classes[pool.class_table().class_for_alloc(huge - 1)];
        let at = pool.class_table().classes[pool.class_table().class_for_alloc(huge)];
        assert!(!below.is_huge() && at.is_huge(), "chain {chain}");
    }
}

#[test]
fn chain_size_out_of_range_is_an_error() {
    for chain in [0, 1, 3, 17, 100] {
        assert!(
            matches!(ZsPool::new(chain), Err(ZpoolError::InvalidOption(_))),
            "chain {chain}"
        );
    }
    for chain in 4..=16 {
        assert!(ZsPool::new(chain).is_ok());
    }
}

#[test]
fn lookup_class_index_uses_raw_size() {
    let pool = ZsPool::new(8).unwrap();
    // Raw sizes, no header: 1000 → index 61 (class 1024, range 61-62 → 62).
    assert_eq!(size_class_index(1000), 61);
    assert_eq!(pool.class_index(1000), 62);
    assert_eq!(pool.class_index(32), 0);
    assert_eq!(pool.class_index(4096), 254);
    assert_eq!(pool.class_index(3632), 225);
    assert_eq!(pool.class_index(3633), 254);
    for i in 0..255 {
        assert_eq!(size_class_index(nominal_size(i)), i);
    }
}

/// Store `n` objects of `size` bytes; return the pool's pages.
fn pages_for(chain: usize, n: usize, size: usize) -> u64 {
    let pool = ZsPool::new(chain).unwrap();
    for _ in 0..n {
        pool.malloc(size).unwrap();
    }
    assert_eq!(pool.stats().objects, n as u64);
    pool.total_pages()
}

#[test]
fn spec_worked_examples() {
    // §7.9, chain 8.
    assert_eq!(pages_for(8, 1000, 1000) * PAGE_SIZE as u64, 1_024_000);
    assert_eq!(pages_for(8, 1000, 2000) * PAGE_SIZE as u64, 2_048_000);
    assert_eq!(pages_for(8, 100_000, 1200) * PAGE_SIZE as u64, 122_880_000);
    assert_eq!(pages_for(8, 1000, 3000) * PAGE_SIZE as u64, 3_072_000);
    // comp_len ≥ 3625 would be stored raw: one page per object.
    assert_eq!(pages_for(8, 10, 4096), 10);
    // §12: 3624 bytes → class 3632 (8 pages, 9 objects).
    let pool = ZsPool::new(8).unwrap();
    let c = pool.class_table().classes[pool.class_table().class_for_alloc(3624)];
    assert_eq!(
        (c.size, c.pages_per_zspage, c.objs_per_zspage),
        (3632, 8, 9)
    );
    // §12: a 1000-byte object occupies a 1024-byte chunk, four per page.
    assert_eq!(pages_for(8, 4, 1000), 1);
    assert_eq!(pages_for(8, 5, 1000), 2);
}

/// Every raw class index, smallest and largest size mapping there: pages used
/// equal ceil(N / objs_per_zspage) × pages_per_zspage (spec table as oracle).
#[test]
fn every_size_class_pages_formula() {
    let spec = parse_spec();
    let geom_of = |raw: usize| *spec.iter().find(|s| (s.3..=s.4).contains(&raw)).unwrap();
    for raw in 0..255 {
        let (_, ppz, objs, _, _) = geom_of(raw);
        // Sizes S with S + 8 in class `raw`.
        let hi = nominal_size(raw) - 8;
        let lo = if raw == 0 {
            1
        } else {
            nominal_size(raw - 1) - 8 + 1
        };
        let sizes: Vec<usize> = if raw == 254 {
            vec![lo, 4096]
        } else {
            vec![lo, hi]
        };
        for s in sizes {
            assert_eq!(size_class_index(s + 8), raw);
            for n in [1, objs, 2 * objs + 1] {
                let expect = n.div_ceil(objs) * ppz;
                assert_eq!(
                    pages_for(8, n, s),
                    expect as u64,
                    "raw {raw} size {s} n {n}"
                );
            }
        }
    }
}

/// A mixed sequence: pages are the sum over classes of the formula.
#[test]
fn mixed_sequence_sums_over_classes() {
    let spec = parse_spec();
    let pool = ZsPool::new(8).unwrap();
    let mut per_class = std::collections::BTreeMap::<usize, usize>::new();
    let mut x: u64 = 0x9E3779B97F4A7C15;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let s = (x % 4096) as usize + 1;
        pool.malloc(s).unwrap();
        let raw = size_class_index(s + 8);
        let cls = spec
            .iter()
            .position(|c| (c.3..=c.4).contains(&raw))
            .unwrap();
        *per_class.entry(cls).or_default() += 1;
    }
    let expect: usize = per_class
        .iter()
        .map(|(&c, &n)| n.div_ceil(spec[c].2) * spec[c].1)
        .sum();
    assert_eq!(pool.total_pages(), expect as u64);
    let from_classes: u64 = pool.class_stats().iter().map(|c| c.pages_used).sum();
    assert_eq!(from_classes, expect as u64);
}

#[test]
fn chain_4_and_16_formula() {
    for chain in [4, 16] {
        let t = ClassTable::new(chain);
        for c in &t.classes {
            let s = c.size - 8;
            let n = c.objs_per_zspage + 1;
            assert_eq!(
                pages_for(chain, n, s),
                (2 * c.pages_per_zspage) as u64,
                "chain {chain} class {}",
                c.size
            );
        }
    }
}

#[test]
fn compaction_frees_sparse_zspages() {
    let pool = ZsPool::new(8).unwrap();
    // Class 1216: 3 pages, 10 objects. 100 objects → 10 zspages, 30 pages.
    let hs: Vec<_> = (0..100)
        .map(|i| {
            let h = pool.malloc(1200).unwrap();
            pool.write(h, &vec![i as u8; 1200]).unwrap();
            h
        })
        .collect();
    assert_eq!(pool.total_pages(), 30);
    // Free 7 of every 10 (by position): 30 left, spread over 10 zspages.
    let mut kept = Vec::new();
    for (i, h) in hs.into_iter().enumerate() {
        if i % 10 < 7 {
            pool.free(h).unwrap()
        } else {
            kept.push((i, h))
        }
    }
    assert_eq!(pool.total_pages(), 30);
    let stat = pool
        .class_stats()
        .into_iter()
        .find(|c| c.size == 1216)
        .unwrap();
    assert_eq!(stat.freeable, (100 - 30) / 10 * 3);
    let freed = pool.compact();
    // 30 objects need 3 zspages: 7 zspages (21 pages) freed.
    assert_eq!(freed, 21);
    assert_eq!(pool.total_pages(), 9);
    assert_eq!(pool.stats().pages_compacted, 21);
    for (i, h) in kept {
        pool.read(h, &mut |b| assert!(b.iter().all(|&x| x == i as u8)))
            .unwrap();
    }
    assert_eq!(pool.compact(), 0);
    assert_eq!(pool.stats().pages_compacted, 21);
}

#[test]
fn allocation_prefers_the_fullest_zspage() {
    let pool = ZsPool::new(8).unwrap();
    // Class 1024: 1 page, 4 objects. Fill 3 zspages.
    let hs: Vec<_> = (0..12).map(|_| pool.malloc(1000).unwrap()).collect();
    // Leave zspage A with 3 objects (75 %), B with 1 (25 %), C full.
    pool.free(hs[0]).unwrap();
    pool.free(hs[4]).unwrap();
    pool.free(hs[5]).unwrap();
    pool.free(hs[6]).unwrap();
    let s = pool
        .class_stats()
        .into_iter()
        .find(|c| c.size == 1024)
        .unwrap();
    assert_eq!(s.fullness[3], 1); // 25 %: group "20-29"
    assert_eq!(s.fullness[8], 1); // 75 %: group "70-79"
    pool.malloc(1000).unwrap();
    let s = pool
        .class_stats()
        .into_iter()
        .find(|c| c.size == 1024)
        .unwrap();
    assert_eq!(s.fullness[11], 2, "the 75 % zspage was filled first");
    assert_eq!(s.fullness[3], 1);
}

/// Class 1216 (3 pages, 10 objects): chunk 3 starts at 3648 and its data
/// (3656..4856) crosses into the second page. The zspage's pages are
/// virtually contiguous (the arena's runs), so every object, straddling or
/// not, is read in place: no copy into a per-thread buffer.
#[test]
fn objects_spanning_pages() {
    let pool = ZsPool::new(8).unwrap();
    let hs: Vec<_> = (0..10u8)
        .map(|i| {
            let h = pool.malloc(1200).unwrap();
            let data: Vec<u8> = (0..1200).map(|j| (j as u8).wrapping_mul(3) ^ i).collect();
            pool.write(h, &data).unwrap();
            (h, data)
        })
        .collect();
    assert_eq!(pool.total_pages(), 3);
    let mut ptrs = Vec::new();
    for (h, data) in &hs {
        let mut p = 0usize;
        pool.read(*h, &mut |b| {
            assert_eq!(b, &data[..]);
            p = b.as_ptr() as usize;
        })
        .unwrap();
        ptrs.push(p);
    }
    // All ten chunks in place, 1216 bytes apart, including chunk 3
    // (3648..4864) and chunk 6 (7296..8512), which straddle a page boundary.
    for w in ptrs.windows(2) {
        assert_eq!(w[1] - w[0], 1216);
    }
}

/// 6.1 and 6.2 (before "zsmalloc: make zspage chain size configurable"):
/// chains of at most 4 pages, chosen by whole-percent usage. With 4 pages the
/// two rules differ only for the 208-byte class (2 pages at 99 % against 3
/// pages with 16 bytes of waste); the huge class starts at 3257 bytes, not
/// 3625 as with 6.3+'s chain of 8.
#[test]
fn pre_6_3_rule_with_a_chain_of_4() {
    use zmem_zpool::class::{pages_per_zspage, pages_per_zspage_used_pct};
    use zmem_zpool::ChainRule;
    assert_eq!(pages_per_zspage_used_pct(208, 4), 2);
    assert_eq!(pages_per_zspage(208, 4), 3);
    for size in (32..=4096).step_by(16).filter(|&s| s != 208) {
        assert_eq!(
            pages_per_zspage_used_pct(size, 4),
            pages_per_zspage(size, 4),
            "{size}"
        );
    }
    let t = ClassTable::with_rule(4, ChainRule::MostUsedPercent);
    assert_eq!((t.classes.len(), t.huge_class_size), (69, 3257));
    let c208 = t.classes[t.class_for_alloc(200)];
    assert_eq!(
        (c208.size, c208.pages_per_zspage, c208.objs_per_zspage),
        (208, 2, 39)
    );
    let pool = zmem_zpool::create(
        "zsmalloc",
        zmem_zpool::PoolOptions {
            chain_size: 4,
            chain_rule: ChainRule::MostUsedPercent,
            ..zmem_zpool::PoolOptions::default()
        },
    )
    .unwrap();
    assert_eq!(pool.huge_class_size(), 3257);
}
