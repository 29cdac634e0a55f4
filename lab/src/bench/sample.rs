//! One round of one candidate: the corpus written into a fresh device (the
//! swap-out side, timed in 1 MiB chunks) and random 4 KiB reads from it at
//! page-cluster 0 (the swap-in side, each read timed), through the engine or
//! through a hot-added kernel zram device with O_DIRECT, as `zmem bench`
//! measures them (`crate::bench::kernel`).
//!
//! Both sides use medians, not means: the median read and the median 1 MiB
//! write chunk. A busy machine preempts a measurement now and then; a mean
//! takes those spikes in, a median does not.

use std::os::unix::fs::FileExt;
use std::time::Instant;

use serde::Serialize;
use zmem_codec::PAGE_SIZE;
use zmem_corpus::Corpus;
use zmem_device::BlockDevice;
use zmem_zram::Zram;

use crate::bench::device_rows::{self, Target};
use crate::bench::kernel;
use crate::bench::random_read::{read_phase, request_indexes};

/// What one round measured for one candidate.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Sample {
    /// Swap-out: MiB/s of the median 1 MiB chunk of the corpus's writes.
    pub write_mibps: f64,
    /// Swap-in: median latency of a random 4 KiB read, ns.
    pub read_lat_ns: f64,
    /// Swap-in throughput at that latency, MiB/s (4 KiB / median latency).
    pub read_mibps: f64,
    pub orig_data_size: u64,
    pub compr_data_size: u64,
    pub mem_used_total: u64,
}

impl Sample {
    /// orig_data_size / mem_used_total: what a page costs in RAM, all in.
    pub fn effective_ratio(&self) -> f64 {
        self.orig_data_size as f64 / self.mem_used_total.max(1) as f64
    }
}

/// Pages per timed write chunk: 1 MiB, as the kernel side's pwrites.
const CHUNK_PAGES: usize = 256;

/// MiB/s of the median 1 MiB chunk (`secs` per chunk).
fn chunk_mibps(secs: &[f64]) -> f64 {
    let mut v = secs.to_vec();
    v.sort_by(f64::total_cmp);
    let med = v
        .get(v.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(f64::NAN);
    1.0 / med.max(1e-12)
}

/// A round's figures: the median write chunk, the median read, the mm_stat.
fn sample(
    chunks: &[f64],
    r: &crate::bench::random_read::ReadResult,
    m: &zmem_kernel::MmStat,
) -> Sample {
    Sample {
        write_mibps: chunk_mibps(chunks),
        read_lat_ns: r.lat_p50_ns,
        read_mibps: PAGE_SIZE as f64 / r.lat_p50_ns.max(1.0) * 1e9 / (1 << 20) as f64,
        orig_data_size: m.orig_data_size,
        compr_data_size: m.compr_data_size,
        mem_used_total: m.mem_used_total,
    }
}

/// The verdict's engine device: `algo`, just large enough for `pages`.
fn engine_device(algo: &str, pages: usize) -> Result<Zram, String> {
    Zram::builder()
        .name("zram-verdict")
        .algorithm(algo, Default::default())
        .disksize((pages * PAGE_SIZE) as u64)
        .build()
        .map_err(|e| e.message)
}

/// One round on the engine.
pub fn engine(corpus: &Corpus, algo: &str, requests: usize, seed: u64) -> Result<Sample, String> {
    let pages = corpus.page_count();
    let dev = engine_device(algo, pages)?;
    let mut chunks = Vec::with_capacity(pages / CHUNK_PAGES + 1);
    let all: Vec<&[u8]> = corpus.pages().collect();
    for (c, group) in all.chunks(CHUNK_PAGES).enumerate() {
        let t = Instant::now();
        for (j, p) in group.iter().enumerate() {
            dev.write_page(c * CHUNK_PAGES + j, p)
                .map_err(|e| format!("write: {e}"))?;
        }
        chunks.push(t.elapsed().as_secs_f64() / group.len() as f64 * CHUNK_PAGES as f64);
    }
    let m = dev.mm_stat();
    let plan = request_indexes(pages, 0, requests, 1, seed);
    let r = read_phase(0, &plan, |buf, i| {
        dev.read_at((i * PAGE_SIZE) as u64, &mut buf[..PAGE_SIZE])
            .map_err(|e| e.to_string())
    })?;
    Ok(sample(&chunks, &r, &m))
}

/// One round on a fresh kernel zram device (hot-added, removed afterwards).
pub fn kernel(corpus: &Corpus, algo: &str, requests: usize, seed: u64) -> Result<Sample, String> {
    let pages = corpus.page_count();
    let d = kernel::configured_device(algo, pages, &device_rows::Options::default())?;
    let (chunks, m) = kernel::write_corpus_chunks(&d, corpus)?;
    let f = kernel::open_direct(&d, false)
        .map_err(|e| format!("open {}: {e}", d.dev_path().display()))?;
    let plan = request_indexes(pages, 0, requests, 1, seed);
    let r = read_phase(0, &plan, |buf, i| {
        f.read_exact_at(&mut buf[..PAGE_SIZE], (i * PAGE_SIZE) as u64)
            .map_err(|e| e.to_string())
    })?;
    Ok(sample(&chunks, &r, &m))
}

/// One round of `algo` on `target`.
pub fn once(
    corpus: &Corpus,
    algo: &str,
    target: Target,
    requests: usize,
    seed: u64,
) -> Result<Sample, String> {
    match target {
        Target::Kernel => kernel(corpus, algo, requests, seed),
        _ => engine(corpus, algo, requests, seed),
    }
}

/// Reads a request of pages at a page index into the buffer.
type ReadFn<'a> = dyn Fn(&mut [u8], usize) -> Result<(), String> + Sync + 'a;

/// Random reads at page-cluster 0..=3 (requests of 2^pc pages) from one
/// device holding the corpus: what vm.page-cluster changes for `algo`.
pub fn page_clusters(
    corpus: &Corpus,
    algo: &str,
    target: Target,
    requests: usize,
    seed: u64,
) -> Result<Vec<crate::bench::random_read::ReadResult>, String> {
    let pages = corpus.page_count();
    let phase = |read: &ReadFn, pc: u32| {
        let plan = request_indexes(pages, pc, requests, 1, seed);
        read_phase(pc, &plan, read)
    };
    let n = |pc: u32, i: usize| (1usize << pc).min(pages - i) * PAGE_SIZE;
    let mut out = Vec::new();
    match target {
        Target::Kernel => {
            let d = kernel::configured_device(algo, pages, &device_rows::Options::default())?;
            kernel::write_corpus(&d, corpus)?;
            let f = kernel::open_direct(&d, false).map_err(|e| e.to_string())?;
            for pc in 0..4 {
                out.push(phase(
                    &|buf, i| {
                        f.read_exact_at(&mut buf[..n(pc, i)], (i * PAGE_SIZE) as u64)
                            .map_err(|e| e.to_string())
                    },
                    pc,
                )?);
            }
        }
        _ => {
            let dev = engine_device(algo, pages)?;
            for (i, p) in corpus.pages().enumerate() {
                dev.write_page(i, p).map_err(|e| format!("write: {e}"))?;
            }
            for pc in 0..4 {
                out.push(phase(
                    &|buf, i| {
                        dev.read_at((i * PAGE_SIZE) as u64, &mut buf[..n(pc, i)])
                            .map_err(|e| e.to_string())
                    },
                    pc,
                )?);
            }
        }
    }
    Ok(out)
}
