//! zstd level 3 per page as each kernel writes it, in one run on the same
//! pages (the 170 fixture pages of `tests/kernel_sizes.rs`): Linux 6.1's
//! (lib/zstd 1.4.10's double-fast at the crypto API's parameters, ours, as
//! libzstd's sequence producer) and 6.12's (1.5.2's double-fast, the same
//! way) against 7.3's (libzstd 1.5.7 alone), compress and decompress.
//!
//! Run: `cargo bench -p zmem-codec --bench zstd_kernels`

use std::hint::black_box;
use std::io::Read;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use zmem_codec::{find, Params, MAX_COMPRESSED, PAGE_SIZE};
use zmem_kernel::KernelVersion;

fn pages() -> Vec<Vec<u8>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/kernel-pages.bin.gz"
    );
    let mut data = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).expect(path))
        .read_to_end(&mut data)
        .expect("gunzip the page fixture");
    data.chunks(PAGE_SIZE).map(<[u8]>::to_vec).collect()
}

fn bench(c: &mut Criterion) {
    let pages = pages();
    let mut g = c.benchmark_group("zstd-level-3");
    g.throughput(Throughput::Bytes((pages.len() * PAGE_SIZE) as u64));
    for (name, kernel) in [("6.1", (6, 1)), ("6.12", (6, 12)), ("7.3", (7, 3))] {
        let params = Params {
            level: Some(3),
            kernel: Some(KernelVersion::new(kernel.0, kernel.1)),
            ..Params::default()
        };
        let mut s = find("zstd").unwrap().new_stream(&params).unwrap();
        let mut dst = vec![0u8; MAX_COMPRESSED];
        let total: usize = pages.iter().map(|p| s.compress(p, &mut dst).unwrap()).sum();
        println!(
            "zstd level 3 as {name}: {total} bytes for {} pages",
            pages.len()
        );
        g.bench_function(format!("compress/{name}"), |b| {
            b.iter(|| {
                for p in &pages {
                    black_box(s.compress(black_box(p), &mut dst).unwrap());
                }
            })
        });
        let frames: Vec<Vec<u8>> = pages
            .iter()
            .map(|p| {
                let n = s.compress(p, &mut dst).unwrap();
                dst[..n].to_vec()
            })
            .collect();
        let mut out = vec![0u8; PAGE_SIZE];
        g.bench_function(format!("decompress/{name}"), |b| {
            b.iter(|| {
                for f in &frames {
                    s.decompress(black_box(f), &mut out).unwrap();
                }
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
