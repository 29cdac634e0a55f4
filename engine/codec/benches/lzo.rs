//! lzo speed, side by side with liblzo2 (Debian's liblzo2-2, loaded with
//! dlopen; without it only our numbers are measured, with a note).
//!
//! Run: `cargo bench -p zmem-codec --bench lzo`
//!
//! Pages: heap-like (synthetic malloc-heap pages and this process's own
//! `[heap]` without same-filled pages), plus text and zero-heavy pages.
//! Compression: ours (`lzo`, `lzo-rle`) against liblzo2 `lzo1x_1_compress`.
//! Decompression: ours against liblzo2 `lzo1x_decompress_safe`, both decoding
//! the same lzo streams (ours); ours also on lzo-rle streams.
//! Results are recorded in docs/lzo.md.

#[path = "../tests/lzo_support/mod.rs"]
mod lzo_support;

use std::hint::black_box;

use criterion::{criterion_group, Criterion, Throughput};
use lzo_support::liblzo::{LibLzo, LZO1X_1_MEM_COMPRESS};
use lzo_support::{Corpus, PAGE};
use zmem_codec::backend::lzo::{decompress, worst_compress, Compressor};

fn corpora() -> Vec<Corpus> {
    let mut heap = lzo_support::heap_process(256);
    if heap.pages.len() < 64 {
        eprintln!(
            "note: only {} pages in this process's [heap]",
            heap.pages.len()
        );
    }
    heap.name = "heap-process";
    vec![
        heap,
        lzo_support::heap_synthetic(256, 1),
        lzo_support::text(256),
        lzo_support::zero_heavy(256, 2),
    ]
}

fn bench(c: &mut Criterion) {
    let lib = match LibLzo::load() {
        Ok(l) => Some(l),
        Err(e) => {
            eprintln!("note: liblzo2 not measured: {e}");
            None
        }
    };
    let mut wrk = vec![0u8; LZO1X_1_MEM_COMPRESS];
    let bound = worst_compress(PAGE) + 64;
    for corpus in corpora() {
        let pages = &corpus.pages;
        if pages.is_empty() {
            continue;
        }
        let bytes = (pages.len() * PAGE) as u64;
        let mut comp = Compressor::new();
        let mut dst = vec![0u8; bound];

        // Streams to decode: ours (lzo and lzo-rle).
        let streams = |rle: bool, comp: &mut Compressor| -> Vec<Vec<u8>> {
            pages
                .iter()
                .map(|p| {
                    let mut z = vec![0u8; bound];
                    let n = comp.compress(p, &mut z, rle).unwrap();
                    z.truncate(n);
                    z
                })
                .collect()
        };
        let lzo_streams = streams(false, &mut comp);
        let rle_streams = streams(true, &mut comp);
        let ratio = |s: &[Vec<u8>]| bytes as f64 / s.iter().map(|z| z.len()).sum::<usize>() as f64;
        eprintln!(
            "{}: {} pages, ratio lzo {:.3}, lzo-rle {:.3}",
            corpus.name,
            pages.len(),
            ratio(&lzo_streams),
            ratio(&rle_streams)
        );

        let mut g = c.benchmark_group(format!("lzo-compress/{}", corpus.name));
        g.throughput(Throughput::Bytes(bytes));
        g.bench_function("zmem-lzo", |b| {
            b.iter(|| {
                for p in pages {
                    black_box(comp.compress(black_box(p), &mut dst, false).unwrap());
                }
            })
        });
        g.bench_function("zmem-lzo-rle", |b| {
            b.iter(|| {
                for p in pages {
                    black_box(comp.compress(black_box(p), &mut dst, true).unwrap());
                }
            })
        });
        if let Some(lib) = &lib {
            g.bench_function("liblzo2-lzo1x_1", |b| {
                b.iter(|| {
                    for p in pages {
                        black_box(lib.compress_1(black_box(p), &mut dst, &mut wrk).unwrap());
                    }
                })
            });
        }
        g.finish();

        let mut out = vec![0u8; PAGE];
        let mut g = c.benchmark_group(format!("lzo-decompress/{}", corpus.name));
        g.throughput(Throughput::Bytes(bytes));
        g.bench_function("zmem-lzo", |b| {
            b.iter(|| {
                for z in &lzo_streams {
                    black_box(decompress(black_box(z), &mut out).unwrap());
                }
            })
        });
        g.bench_function("zmem-lzo-rle", |b| {
            b.iter(|| {
                for z in &rle_streams {
                    black_box(decompress(black_box(z), &mut out).unwrap());
                }
            })
        });
        if let Some(lib) = &lib {
            g.bench_function("liblzo2-decompress_safe", |b| {
                b.iter(|| {
                    for z in &lzo_streams {
                        black_box(lib.decompress_safe(black_box(z), &mut out).unwrap());
                    }
                })
            });
        }
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}

/// This thread's CPU time in seconds: time while descheduled (the machine is
/// shared) does not count.
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Best-of-rounds MB/s (10^6 B/s) of each candidate over `bytes`, in thread
/// CPU time, measured in rounds interleaved with the other candidates so
/// that load changes hit all alike.
fn interleaved(rounds: usize, bytes: usize, fs: &mut [&mut dyn FnMut()]) -> Vec<f64> {
    let mut best = vec![f64::MAX; fs.len()];
    for _ in 0..rounds {
        for (i, f) in fs.iter_mut().enumerate() {
            let t = thread_cpu();
            let mut reps = 0;
            while reps < 3 || thread_cpu() - t < 0.02 {
                f();
                reps += 1;
            }
            best[i] = best[i].min((thread_cpu() - t) / reps as f64);
        }
    }
    best.iter().map(|t| bytes as f64 / t / 1e6).collect()
}

/// The side-by-side summary: ours against liblzo2, interleaved, best of 15.
fn summary() {
    let Ok(lib) = LibLzo::load() else {
        eprintln!("summary: liblzo2 not available, no side-by-side numbers");
        return;
    };
    let mut wrk = vec![0u8; LZO1X_1_MEM_COMPRESS];
    let bound = worst_compress(PAGE) + 64;
    eprintln!("side by side (MB/s, thread CPU time, best of 15 interleaved rounds):");
    eprintln!(
        "{:15} {:>9} {:>9} {:>9} {:>6} | {:>9} {:>9} {:>9} {:>6}",
        "pages", "C lzo", "C rle", "C liblzo", "ours%", "D lzo", "D rle", "D liblzo", "ours%"
    );
    for corpus in corpora() {
        let pages = &corpus.pages;
        if pages.is_empty() {
            continue;
        }
        let bytes = pages.len() * PAGE;
        let mut comp = Compressor::new();
        let mut dst = vec![0u8; bound];
        let mut enc = |rle: bool| -> Vec<Vec<u8>> {
            pages
                .iter()
                .map(|p| {
                    let mut z = vec![0u8; bound];
                    let n = comp.compress(p, &mut z, rle).unwrap();
                    z.truncate(n);
                    z
                })
                .collect()
        };
        let (lzo_streams, rle_streams) = (enc(false), enc(true));
        let c = {
            let mut comp2 = Compressor::new();
            let mut dst2 = vec![0u8; bound];
            let mut dst3 = vec![0u8; bound];
            interleaved(
                15,
                bytes,
                &mut [
                    &mut || {
                        pages.iter().for_each(|p| {
                            black_box(comp.compress(black_box(p), &mut dst, false).unwrap());
                        })
                    },
                    &mut || {
                        pages.iter().for_each(|p| {
                            black_box(comp2.compress(black_box(p), &mut dst2, true).unwrap());
                        })
                    },
                    &mut || {
                        pages.iter().for_each(|p| {
                            black_box(lib.compress_1(black_box(p), &mut dst3, &mut wrk).unwrap());
                        })
                    },
                ],
            )
        };
        let d = {
            let (mut o1, mut o2, mut o3) = (vec![0u8; PAGE], vec![0u8; PAGE], vec![0u8; PAGE]);
            interleaved(
                15,
                bytes,
                &mut [
                    &mut || {
                        lzo_streams.iter().for_each(|z| {
                            black_box(decompress(black_box(z), &mut o1).unwrap());
                        })
                    },
                    &mut || {
                        rle_streams.iter().for_each(|z| {
                            black_box(decompress(black_box(z), &mut o2).unwrap());
                        })
                    },
                    &mut || {
                        lzo_streams.iter().for_each(|z| {
                            black_box(lib.decompress_safe(black_box(z), &mut o3).unwrap());
                        })
                    },
                ],
            )
        };
        eprintln!(
            "{:15} {:9.0} {:9.0} {:9.0} {:5.0}% | {:9.0} {:9.0} {:9.0} {:5.0}%",
            corpus.name,
            c[0],
            c[1],
            c[2],
            100.0 * c[0] / c[2],
            d[0],
            d[1],
            d[2],
            100.0 * d[0] / d[2]
        );
    }
}

fn main() {
    summary();
    // LZO_BENCH_SUMMARY_ONLY=1: only the side-by-side table, no criterion run.
    if std::env::var_os("LZO_BENCH_SUMMARY_ONLY").is_none() {
        benches();
        Criterion::default().configure_from_args().final_summary();
    }
}
