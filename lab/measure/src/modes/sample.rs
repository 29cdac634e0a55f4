//! A verdict round: for each candidate, the corpus written into a fresh
//! device (the swap-out side, timed in 1 MiB chunks) and random 4 KiB reads
//! from it at page-cluster 0 (the swap-in side, each read timed), through the
//! engine or through a hot-added kernel zram device with O_DIRECT, as `zmem
//! bench` measures them (`crate::modes::kernel`).
//!
//! Both sides use medians, not means: the median read and the median 1 MiB
//! write chunk. A busy machine preempts a measurement now and then; a mean
//! takes those spikes in, a median does not.
//!
//! [`round`] measures its candidates at once, interleaved finely: every
//! device holds the corpus at the same time, the 1 MiB write chunks go to
//! the candidates in turn, and so do blocks of the same random reads. What
//! the machine does meanwhile (other work, frequency, a neighbour's cache)
//! then falls on every candidate alike, and the paired comparison of the
//! verdict sees the candidates' difference, not the machine's.

use std::os::unix::fs::FileExt;
use std::time::Instant;

use serde::Serialize;
use zmem_codec::PAGE_SIZE;
use zmem_corpus::Corpus;
use zmem_device::BlockDevice;
use zmem_zram::Zram;

use crate::engine::EngineKernel;

use crate::modes::device_rows::{self, Target};
use crate::modes::kernel;
use crate::modes::random_read::{self, read_phase, request_indexes};

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

/// The verdict's engine device: `algo`, just large enough for `pages`.
fn engine_device(algo: &str, pages: usize) -> Result<Zram, String> {
    EngineKernel::newest()
        .zram()
        .name("zram-verdict")
        .algorithm(algo, Default::default())
        .disksize((pages * PAGE_SIZE) as u64)
        .build()
        .map_err(|e| e.message)
}

/// A device of a round: the engine's, or a hot-added kernel zram device
/// opened with O_DIRECT (removed when dropped; the file is declared first
/// so it is closed first: zram refuses to reset an open device).
enum Dev {
    Engine(Box<Zram>),
    Kernel(std::fs::File, zmem_host::HotDevice),
}

impl Dev {
    fn open(algo: &str, target: Target, pages: usize) -> Result<Dev, String> {
        match target {
            Target::Kernel => {
                let d = kernel::configured_device(algo, pages, &device_rows::Options::default())?;
                let f = kernel::open_direct(&d, true)
                    .map_err(|e| format!("open {}: {e}", d.dev_path().display()))?;
                Ok(Dev::Kernel(f, d))
            }
            _ => Ok(Dev::Engine(Box::new(engine_device(algo, pages)?))),
        }
    }

    /// Write chunk `c` (pages `c·CHUNK_PAGES..`); seconds per full chunk.
    fn write_chunk(&self, corpus: &Corpus, c: usize, buf: &mut [u8]) -> Result<f64, String> {
        let first = c * CHUNK_PAGES;
        let n = CHUNK_PAGES.min(corpus.page_count() - first);
        let data = &corpus.bytes()[first * PAGE_SIZE..(first + n) * PAGE_SIZE];
        let t = match self {
            Dev::Engine(dev) => {
                let t = Instant::now();
                for (j, p) in data.chunks(PAGE_SIZE).enumerate() {
                    dev.write_page(first + j, p)
                        .map_err(|e| format!("write: {e}"))?;
                }
                t.elapsed()
            }
            Dev::Kernel(f, _) => {
                // Only the syscall is timed, not filling the aligned buffer.
                buf[..data.len()].copy_from_slice(data);
                let t = Instant::now();
                f.write_all_at(&buf[..data.len()], (first * PAGE_SIZE) as u64)
                    .map_err(|e| format!("pwrite: {e}"))?;
                t.elapsed()
            }
        };
        Ok(t.as_secs_f64() / n as f64 * CHUNK_PAGES as f64)
    }

    fn mm_stat(&self) -> Result<zmem_kernel::MmStat, String> {
        match self {
            Dev::Engine(dev) => Ok(dev.mm_stat()),
            Dev::Kernel(f, d) => {
                f.sync_all().map_err(|e| format!("fsync: {e}"))?;
                let m = d
                    .read_attr(zmem_kernel::attr::MM_STAT)
                    .map_err(|e| format!("mm_stat: {e}"))?;
                zmem_kernel::MmStat::parse(&m).ok_or_else(|| format!("cannot parse mm_stat {m:?}"))
            }
        }
    }

    /// Read page `i` into `buf` (4 KiB, aligned); ns it took.
    fn read(&self, i: usize, buf: &mut [u8]) -> Result<f64, String> {
        let t = Instant::now();
        match self {
            Dev::Engine(dev) => dev
                .read_at((i * PAGE_SIZE) as u64, buf)
                .map_err(|e| e.to_string())?,
            Dev::Kernel(f, _) => f
                .read_exact_at(buf, (i * PAGE_SIZE) as u64)
                .map_err(|e| e.to_string())?,
        }
        Ok(t.elapsed().as_nanos() as f64)
    }
}

/// Random reads per candidate before the next candidate's turn.
const READ_BLOCK: usize = 64;

/// One round of several candidates, interleaved finely (see the module
/// documentation): every candidate gets the same writes and the same
/// `requests` random reads (from `seed`). One result per candidate, in order.
pub fn round(
    corpus: &Corpus,
    cands: &[(&str, Target)],
    requests: usize,
    seed: u64,
) -> Vec<Result<Sample, String>> {
    let pages = corpus.page_count();
    let mut devs: Vec<Result<Dev, String>> =
        cands.iter().map(|(a, t)| Dev::open(a, *t, pages)).collect();
    let n = devs.len();
    if n == 0 {
        return Vec::new();
    }
    let mut chunks: Vec<Vec<f64>> = vec![Vec::new(); n];
    let (mut raw, off) = random_read::aligned_buffer(CHUNK_PAGES * PAGE_SIZE);
    let buf = &mut raw[off..off + CHUNK_PAGES * PAGE_SIZE];
    for c in 0..pages.div_ceil(CHUNK_PAGES) {
        for j in 0..n {
            let k = (j + c) % n;
            if let Ok(d) = &devs[k] {
                match d.write_chunk(corpus, c, buf) {
                    Ok(t) => chunks[k].push(t),
                    Err(e) => devs[k] = Err(e),
                }
            }
        }
    }
    let stats: Vec<Result<zmem_kernel::MmStat, String>> = devs
        .iter()
        .map(|d| d.as_ref().map_err(Clone::clone).and_then(Dev::mm_stat))
        .collect();
    let plan = request_indexes(pages, 0, requests, 1, seed).concat();
    let mut lat: Vec<Vec<f64>> = vec![Vec::with_capacity(plan.len()); n];
    let page = &mut buf[..PAGE_SIZE];
    for (b, block) in plan.chunks(READ_BLOCK).enumerate() {
        for j in 0..n {
            let k = (j + b) % n;
            let Ok(d) = &devs[k] else { continue };
            for &i in block {
                match d.read(i, page) {
                    Ok(ns) => lat[k].push(ns),
                    Err(e) => {
                        devs[k] = Err(format!("read page {i}: {e}"));
                        break;
                    }
                }
            }
        }
    }
    (0..n)
        .map(|k| {
            let m = stats[k].clone()?;
            devs[k].as_ref().map_err(Clone::clone)?;
            Ok(round_sample(&chunks[k], &mut lat[k], &m))
        })
        .collect()
}

/// A round's figures from its write chunks and read latencies.
fn round_sample(chunks: &[f64], lat: &mut [f64], m: &zmem_kernel::MmStat) -> Sample {
    lat.sort_by(f64::total_cmp);
    let p50 = lat
        .get(lat.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(f64::NAN);
    Sample {
        write_mibps: chunk_mibps(chunks),
        read_lat_ns: p50,
        read_mibps: PAGE_SIZE as f64 / p50.max(1.0) * 1e9 / (1 << 20) as f64,
        orig_data_size: m.orig_data_size,
        compr_data_size: m.compr_data_size,
        mem_used_total: m.mem_used_total,
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
) -> Result<Vec<crate::modes::random_read::ReadResult>, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> Corpus {
        let data = zmem_corpus::generate(zmem_corpus::Kind::Text, 3, 300);
        Corpus::from_bytes("text", "test", data).unwrap()
    }

    /// Interleaving changes when pages are written, not what is stored: each
    /// candidate's mm_stat in a round equals its mm_stat in a round of its own,
    /// and a candidate that cannot be made fails alone.
    #[test]
    fn an_interleaved_round_stores_what_one_candidate_alone_stores() {
        let c = corpus();
        let set = [
            ("lz4", Target::Engine),
            ("zstd", Target::Engine),
            ("nope", Target::Engine),
        ];
        let r = round(&c, &set, 500, 9);
        assert_eq!(r.len(), 3);
        for (k, algo) in ["lz4", "zstd"].iter().enumerate() {
            let s = r[k].as_ref().unwrap();
            let alone = round(&c, &[(*algo, Target::Engine)], 500, 9)
                .remove(0)
                .unwrap();
            assert_eq!(
                (s.orig_data_size, s.compr_data_size, s.mem_used_total),
                (
                    alone.orig_data_size,
                    alone.compr_data_size,
                    alone.mem_used_total
                ),
                "{algo}"
            );
            assert!(s.read_lat_ns > 0.0 && s.write_mibps > 0.0, "{algo}: {s:?}");
        }
        assert!(r[2].is_err(), "an unknown algorithm fails alone");
    }
}
