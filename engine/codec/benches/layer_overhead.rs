//! Per-page speed of the four C-library-bound codecs through zmem's layer
//! (StreamPool → Stream) against calling the library directly on the same
//! pages, in the same run. Target: the layer within 10% of direct.
//!
//! lz4 and lz4hc compress with our own encoders of the kernel's compressors,
//! not liblz4's: their compress/layer against compress/direct is our encoder
//! against liblz4 1.10's (acceleration 1; HC level 9), different bytes on
//! some pages, each decoding to the page.
//!
//! Run: `cargo bench -p zmem-codec --bench layer_overhead`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use zmem_codec::{find, Params, StreamPool, MAX_COMPRESSED, PAGE_SIZE};

/// 64 pages: text, heap-like (pointers, small integers), sparse; deterministic.
fn pages() -> Vec<Vec<u8>> {
    let mut s: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rnd = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let words = [
        "the ", "page ", "zram ", "slot ", "handle ", "memory ", "swap ", "of ", "\n", "0x7ffd ",
    ];
    (0..64)
        .map(|i| {
            let mut p = vec![0u8; PAGE_SIZE];
            match i % 3 {
                0 => {
                    let mut o = 0;
                    while o < PAGE_SIZE {
                        for &b in words[(rnd() % words.len() as u64) as usize].as_bytes() {
                            if o < PAGE_SIZE {
                                p[o] = b;
                                o += 1;
                            }
                        }
                    }
                }
                1 => {
                    for c in p.chunks_exact_mut(8) {
                        let r = rnd();
                        let v = match r % 4 {
                            0 => 0,
                            1 => 0x0000_7f3a_0000_0000 | (r >> 20) & 0xff_fff8,
                            2 => r % 1000,
                            _ => r >> 3,
                        };
                        c.copy_from_slice(&v.to_le_bytes());
                    }
                }
                _ => {
                    for _ in 0..24 {
                        let o = (rnd() % 512) as usize * 8;
                        p[o..o + 8].copy_from_slice(&rnd().to_le_bytes());
                    }
                }
            }
            p
        })
        .collect()
}

/// Direct library calls with the same settings our backends use.
trait Direct {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> usize;
    fn decompress(&mut self, src: &[u8], dst: &mut [u8]);
}

struct Lz4;
impl Direct for Lz4 {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> usize {
        lzzzz::lz4::compress(src, dst, 1).unwrap()
    }
    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) {
        lzzzz::lz4::decompress(src, dst).unwrap();
    }
}

struct Lz4Hc;
impl Direct for Lz4Hc {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> usize {
        lzzzz::lz4_hc::compress(src, dst, 9).unwrap()
    }
    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) {
        lzzzz::lz4::decompress(src, dst).unwrap();
    }
}

struct Zstd(zstd_safe::CCtx<'static>, zstd_safe::DCtx<'static>);
impl Direct for Zstd {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> usize {
        self.0.compress2(dst, src).unwrap()
    }
    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) {
        self.1.decompress(dst, src).unwrap();
    }
}

struct Deflate(flate2::Compress, flate2::Decompress);
impl Direct for Deflate {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> usize {
        self.0.reset();
        self.0
            .compress(src, dst, flate2::FlushCompress::Finish)
            .unwrap();
        self.0.total_out() as usize
    }
    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) {
        self.1.reset(false);
        self.1
            .decompress(src, dst, flate2::FlushDecompress::Finish)
            .unwrap();
    }
}

fn direct(name: &str) -> Box<dyn Direct> {
    match name {
        "lz4" => Box::new(Lz4),
        "lz4hc" => Box::new(Lz4Hc),
        "zstd" => {
            let mut c = zstd_safe::CCtx::create();
            c.set_parameter(zstd_safe::CParameter::CompressionLevel(3))
                .unwrap();
            Box::new(Zstd(c, zstd_safe::DCtx::create()))
        }
        "deflate" => Box::new(Deflate(
            flate2::Compress::new_with_window_bits(flate2::Compression::new(6), false, 11),
            flate2::Decompress::new_with_window_bits(false, 15),
        )),
        _ => unreachable!(),
    }
}

fn layer_vs_direct(c: &mut Criterion) {
    let pages = pages();
    let bytes = (pages.len() * PAGE_SIZE) as u64;
    for name in ["lz4", "lz4hc", "zstd", "deflate"] {
        let pool = StreamPool::new(find(name).unwrap(), Params::default()).unwrap();
        let mut lib = direct(name);
        let mut dst = vec![0u8; MAX_COMPRESSED];
        let mut out = vec![0u8; PAGE_SIZE];
        // Both sides must write the same bytes (same library, same settings);
        // lz4's and lz4hc's encoders differ, so there both must decode to the page.
        let compressed: Vec<Vec<u8>> = pages
            .iter()
            .map(|p| {
                let n = pool.compress(p, &mut dst).unwrap();
                let ours = dst[..n].to_vec();
                let m = lib.compress(p, &mut dst);
                if name == "lz4" || name == "lz4hc" {
                    lib.decompress(&dst[..m], &mut out);
                    assert!(
                        out == *p,
                        "{name}: direct output does not decode to the page"
                    );
                } else {
                    assert_eq!(&dst[..m], &ours[..], "{name}: layer and direct differ");
                }
                ours
            })
            .collect();

        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Bytes(bytes));
        g.bench_function("compress/layer", |b| {
            b.iter(|| {
                for p in &pages {
                    black_box(pool.compress(p, &mut dst).unwrap());
                }
            })
        });
        g.bench_function("compress/direct", |b| {
            b.iter(|| {
                for p in &pages {
                    black_box(lib.compress(p, &mut dst));
                }
            })
        });
        g.bench_function("decompress/layer", |b| {
            b.iter(|| {
                for s in &compressed {
                    pool.decompress(s, &mut out).unwrap();
                    black_box(&out);
                }
            })
        });
        g.bench_function("decompress/direct", |b| {
            b.iter(|| {
                for s in &compressed {
                    lib.decompress(s, &mut out);
                    black_box(&out);
                }
            })
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = layer_vs_direct
}
criterion_main!(benches);
