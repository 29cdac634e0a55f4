//! Allocator round trip (malloc + write + read + free of one compressed-page
//! sized object) next to lz4 compressing the 4 KiB page it came from.
//!
//! Run: `CARGO_TARGET_DIR=... cargo bench -p zmem-zpool --bench zpool`
//! The bar: the round trip costs ≤ 10 % of the compression.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use zmem_zpool::{create, Zpool, PAGE_SIZE};

/// A page that lz4 compresses to roughly `target` bytes: text-like words with
/// a share of random bytes.
fn page_compressing_to(target: usize) -> (Vec<u8>, usize) {
    let words: [&[u8]; 8] = [
        b"zram ", b"page ", b"slot ", b"handle ", b"zspage ", b"class ", b"swap ", b"idle ",
    ];
    let mut best = (Vec::new(), 0usize);
    for noise in (0..=100).step_by(2) {
        let mut x = 0x9E3779B97F4A7C15u64;
        let mut page = Vec::with_capacity(PAGE_SIZE);
        while page.len() < PAGE_SIZE {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if (x % 100) < noise {
                page.push((x >> 24) as u8);
            } else {
                page.extend_from_slice(words[(x >> 32) as usize % 8]);
            }
        }
        page.truncate(PAGE_SIZE);
        let len = compress(&page, &mut vec![0u8; 2 * PAGE_SIZE]);
        if best.1 == 0 || len.abs_diff(target) < best.1.abs_diff(target) {
            best = (page, len);
        }
    }
    best
}

fn compress(src: &[u8], dst: &mut [u8]) -> usize {
    lzzzz::lz4::compress(src, dst, lzzzz::lz4::ACC_LEVEL_DEFAULT).expect("lz4 compress")
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("zpool");
    for target in [1024usize, 2048] {
        let (page, clen) = page_compressing_to(target);
        let mut dst = vec![0u8; 2 * PAGE_SIZE];
        let n = compress(&page, &mut dst);
        let obj = dst[..n].to_vec();
        g.bench_function(BenchmarkId::new("lz4_compress_page", clen), |b| {
            b.iter(|| compress(black_box(&page), black_box(&mut dst)))
        });
        for name in ["zsmalloc", "zbud", "z3fold"] {
            // Steady state: the pool already holds objects of the same class,
            // so the round trip neither creates nor releases a zspage.
            let pool = create(name, 8).unwrap();
            let resident: Vec<_> = (0..64).map(|_| pool.malloc(obj.len()).unwrap()).collect();
            g.bench_function(
                BenchmarkId::new(format!("{name}_roundtrip"), obj.len()),
                |b| {
                    b.iter(|| {
                        let h = pool.malloc(black_box(obj.len())).unwrap();
                        pool.write(h, black_box(&obj)).unwrap();
                        let mut sum = 0u8;
                        pool.read(h, &mut |bytes| sum = bytes[bytes.len() / 2])
                            .unwrap();
                        pool.free(h).unwrap();
                        black_box(sum)
                    })
                },
            );
            // Cold: an empty pool, so every round trip allocates and releases
            // the zspage's pages (the worst case).
            let empty = create(name, 8).unwrap();
            g.bench_function(
                BenchmarkId::new(format!("{name}_roundtrip_empty_pool"), obj.len()),
                |b| {
                    b.iter(|| {
                        let h = empty.malloc(black_box(obj.len())).unwrap();
                        empty.write(h, black_box(&obj)).unwrap();
                        let mut sum = 0u8;
                        empty.read(h, &mut |bytes| sum = bytes[0]).unwrap();
                        empty.free(h).unwrap();
                        black_box(sum)
                    })
                },
            );
            for h in resident {
                pool.free(h).unwrap();
            }
            let _: &dyn Zpool = pool.as_ref();
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
