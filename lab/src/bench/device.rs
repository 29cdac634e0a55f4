//! `zmem bench` (device mode): the corpus through an engine zram device per
//! algorithm — mm_stat after writing, write MiB/s, then random reads of
//! 2^page_cluster consecutive pages (page-cluster 0..3, as the published fio
//! method reads a swap device) with MiB/s, IOPS, mean and p99 latency — and,
//! with root and kernel zram, the same through a hot-added kernel device read
//! back with O_DIRECT preads ([`super::kernel`]), so the rows sit side by side.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;
use zmem_codec::{Params, PAGE_SIZE};
use zmem_sysfs::{BlockDevice, MmStat};
use zmem_zram::Zram;

use crate::corpus::Corpus;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Algorithms by kernel name; empty = every algorithm in registry order.
    pub algorithms: Vec<String>,
    /// Parameters for every algorithm.
    pub params: Params,
    /// Reader threads for the random-read phase (the write phase is one thread).
    pub threads: usize,
    /// Random-read requests per page-cluster value (split among the threads).
    pub requests: usize,
    /// Page-cluster values to read with (requests of 2^n pages).
    pub page_clusters: Vec<u32>,
    /// Also run a hot-added kernel zram device where possible.
    pub kernel: bool,
    /// Seed of the random offsets (same offsets for engine and kernel).
    pub seed: u64,
    /// Times the corpus is written, each pass into a fresh device (engine
    /// and kernel alike), for the write rate; 0 = enough passes to write
    /// [`WRITE_BYTES_MIN`], at most [`MAX_AUTO_WRITE_PASSES`] (one pass of
    /// the 4 MiB default corpus lasts only milliseconds).
    pub write_passes: usize,
}

/// Bytes the write phase writes at least when `write_passes` is 0.
pub const WRITE_BYTES_MIN: usize = 128 << 20;
/// At most this many automatic write passes (each kernel pass hot-adds a
/// device), so a tiny corpus does not create hundreds of devices.
pub const MAX_AUTO_WRITE_PASSES: usize = 32;

impl Options {
    /// The number of write passes for a corpus of `pages` pages.
    pub fn write_passes_for(&self, pages: usize) -> usize {
        if self.write_passes > 0 {
            return self.write_passes;
        }
        WRITE_BYTES_MIN
            .div_ceil((pages * PAGE_SIZE).max(1))
            .clamp(1, MAX_AUTO_WRITE_PASSES)
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            algorithms: Vec::new(),
            params: Params::default(),
            threads: 1,
            requests: 20_000,
            page_clusters: vec![0, 1, 2, 3],
            kernel: true,
            seed: 0x5eed_2a11,
            write_passes: 0,
        }
    }
}

/// Engine or kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    Engine,
    Kernel,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Engine => "engine",
            Target::Kernel => "kernel",
        }
    }
}

/// One (target, algorithm, page_cluster) row. Fields without numbers are
/// `None` (an unavailable algorithm has only `reason`).
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub target: Target,
    pub algo: String,
    pub corpus: String,
    pub page_cluster: Option<u32>,
    pub threads: usize,
    /// Why there are no numbers (algorithm unavailable, device error).
    pub reason: Option<String>,
    pub orig_data_size: Option<u64>,
    pub compr_data_size: Option<u64>,
    pub mem_used_total: Option<u64>,
    pub same_pages: Option<u64>,
    pub huge_pages: Option<u64>,
    pub ratio: Option<f64>,
    pub effective_ratio: Option<f64>,
    pub write_mibps: Option<f64>,
    pub read_mibps: Option<f64>,
    pub iops: Option<f64>,
    pub lat_mean_ns: Option<f64>,
    pub lat_p99_ns: Option<f64>,
    /// Reads per CPU-second of the reader threads: with idle cores this is
    /// iops / threads; under load from other processes it stays comparable
    /// across thread counts (contention inside the engine lowers it).
    pub iops_per_cpu_s: Option<f64>,
}

impl Row {
    pub(crate) fn unavailable(
        target: Target,
        algo: &str,
        corpus: &str,
        threads: usize,
        reason: String,
    ) -> Row {
        Row {
            target,
            algo: algo.to_string(),
            corpus: corpus.to_string(),
            page_cluster: None,
            threads,
            reason: Some(reason),
            orig_data_size: None,
            compr_data_size: None,
            mem_used_total: None,
            same_pages: None,
            huge_pages: None,
            ratio: None,
            effective_ratio: None,
            write_mibps: None,
            read_mibps: None,
            iops: None,
            lat_mean_ns: None,
            lat_p99_ns: None,
            iops_per_cpu_s: None,
        }
    }

    /// A measured row from the mm_stat after writing, the write rate and one read phase.
    pub(crate) fn measured(
        target: Target,
        algo: &str,
        corpus: &str,
        threads: usize,
        m: &MmStat,
        write_mibps: f64,
        read: &ReadResult,
    ) -> Row {
        let div = |a: u64, b: u64| (b != 0).then(|| a as f64 / b as f64);
        Row {
            target,
            algo: algo.to_string(),
            corpus: corpus.to_string(),
            page_cluster: Some(read.page_cluster),
            threads,
            reason: None,
            orig_data_size: Some(m.orig_data_size),
            compr_data_size: Some(m.compr_data_size),
            mem_used_total: Some(m.mem_used_total),
            same_pages: Some(m.same_pages),
            huge_pages: Some(m.huge_pages),
            ratio: div(m.orig_data_size, m.compr_data_size),
            effective_ratio: div(m.orig_data_size, m.mem_used_total),
            write_mibps: Some(write_mibps),
            read_mibps: Some(read.mibps),
            iops: Some(read.iops),
            lat_mean_ns: Some(read.lat_mean_ns),
            lat_p99_ns: Some(read.lat_p99_ns),
            iops_per_cpu_s: read
                .cpu_s
                .filter(|&c| c >= 0.05)
                .map(|c| read.iops * read.wall_s / c),
        }
    }
}

/// The result of one random-read phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadResult {
    pub page_cluster: u32,
    pub mibps: f64,
    pub iops: f64,
    pub lat_mean_ns: f64,
    pub lat_p99_ns: f64,
    /// CPU seconds the reader threads used (user + system, from
    /// /proc/thread-self/stat; 10 ms resolution), None where unreadable.
    pub cpu_s: Option<f64>,
    /// Wall-clock seconds of the phase.
    pub wall_s: f64,
}

/// This thread's user + system CPU time in clock ticks (/proc/thread-self/stat
/// fields 14 and 15).
fn thread_cpu_ticks() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// The random request offsets of one phase, per thread: page indexes aligned
/// to the request size (2^pc pages), as swap cluster readahead reads.
pub fn request_indexes(
    pages: usize,
    page_cluster: u32,
    requests: usize,
    threads: usize,
    seed: u64,
) -> Vec<Vec<usize>> {
    let n = 1usize << page_cluster;
    let slots = (pages / n).max(1);
    let mut x = seed ^ (page_cluster as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let per = requests.div_ceil(threads.max(1));
    (0..threads.max(1))
        .map(|_| {
            (0..per)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % slots as u64) as usize * n
                })
                .collect()
        })
        .collect()
}

/// Run one read phase: each thread issues its requests through `read`
/// (given the thread's buffer and a page index) and times each one.
pub(crate) fn read_phase<F>(
    page_cluster: u32,
    plan: &[Vec<usize>],
    read: F,
) -> Result<ReadResult, String>
where
    F: Fn(&mut [u8], usize) -> Result<(), String> + Sync,
{
    let bytes = PAGE_SIZE << page_cluster;
    let failed = AtomicU64::new(0);
    let mut cpu_ticks = Some(0u64);
    let start = Instant::now();
    let mut lats: Vec<u64> = std::thread::scope(|s| {
        let hs: Vec<_> = plan
            .iter()
            .map(|idx| {
                let read = &read;
                let failed = &failed;
                s.spawn(move || {
                    let (mut raw, off) = aligned_buffer(bytes);
                    let buf = &mut raw[off..off + bytes];
                    let mut lat = Vec::with_capacity(idx.len());
                    let cpu0 = thread_cpu_ticks();
                    for &i in idx {
                        let t = Instant::now();
                        if read(buf, i).is_err() {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                        lat.push(t.elapsed().as_nanos() as u64);
                    }
                    let cpu = cpu0
                        .zip(thread_cpu_ticks())
                        .map(|(a, b)| b.saturating_sub(a));
                    (lat, cpu)
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in hs {
            let (lat, cpu) = h.join().unwrap_or_default();
            all.extend(lat);
            cpu_ticks = cpu_ticks.zip(cpu).map(|(a, b)| a + b);
        }
        all
    });
    let wall = start.elapsed().as_secs_f64();
    if failed.load(Ordering::Relaxed) > 0 {
        return Err(format!("{} reads failed", failed.load(Ordering::Relaxed)));
    }
    let n = lats.len().max(1);
    lats.sort_unstable();
    let mean = lats.iter().sum::<u64>() as f64 / n as f64;
    let p99 = lats
        .get((n * 99).div_ceil(100).saturating_sub(1))
        .copied()
        .unwrap_or(0) as f64;
    Ok(ReadResult {
        page_cluster,
        mibps: (lats.len() * bytes) as f64 / wall / (1 << 20) as f64,
        iops: lats.len() as f64 / wall,
        lat_mean_ns: mean,
        lat_p99_ns: p99,
        // USER_HZ is 100 on Linux.
        cpu_s: cpu_ticks.map(|t| t as f64 / 100.0),
        wall_s: wall,
    })
}

/// A buffer with a 4096-aligned window of `len` bytes at the returned offset
/// (O_DIRECT needs aligned memory; over-allocating keeps this safe code).
pub(crate) fn aligned_buffer(len: usize) -> (Vec<u8>, usize) {
    let v = vec![0u8; len + 4096];
    let off = v.as_ptr().align_offset(4096);
    (v, off)
}

/// Progress events, for a progress bar.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Steps done and total (one step per algorithm and target phase).
    pub done: usize,
    pub total: usize,
    /// What is running, e.g. "lz4 engine: reads pc=2".
    pub what: String,
}

/// Engine overhead: write + read of the corpus's non-same-filled pages
/// through the engine, against compress + decompress of the same pages by
/// the codec alone (one thread, best of 3 passes each).
#[derive(Debug, Clone, Serialize)]
pub struct Overhead {
    pub algo: String,
    pub pages: usize,
    /// MiB of pages per second through compress + decompress, codec only.
    pub codec_mibps: f64,
    /// MiB of pages per second through write_page + read_page.
    pub engine_mibps: f64,
    /// engine_mibps / codec_mibps.
    pub engine_share: f64,
}

/// Measure [`Overhead`] for one algorithm; None when it is unavailable or
/// the corpus has no page that reaches the codec.
pub fn measure_overhead(corpus: &Corpus, algo: &str, params: &Params) -> Option<Overhead> {
    let pages: Vec<&[u8]> = corpus
        .pages()
        .filter(|p| zmem_codec::same_filled(p).is_none())
        .collect();
    if pages.is_empty() {
        return None;
    }
    let backend = zmem_codec::find(algo).ok()?;
    let mut stream = backend.new_stream(params).ok()?;
    let mut comp = vec![0u8; zmem_codec::MAX_COMPRESSED];
    let mut out = vec![0u8; PAGE_SIZE];
    // The codec does the same work as the engine: pages at or above
    // huge_class_size are stored raw by zram and never decompressed.
    let huge = Zram::builder()
        .algorithm(algo, params.clone())
        .disksize(PAGE_SIZE as u64)
        .build()
        .ok()?
        .huge_class_size();
    let mut best_codec = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        for p in &pages {
            let n = stream.compress(p, &mut comp).unwrap_or(PAGE_SIZE);
            if n < huge {
                stream.decompress(&comp[..n], &mut out).ok()?;
            }
        }
        best_codec = best_codec.min(t.elapsed().as_secs_f64());
    }
    let mut best_engine = f64::MAX;
    for _ in 0..3 {
        let dev = Zram::builder()
            .algorithm(algo, params.clone())
            .disksize((pages.len() * PAGE_SIZE) as u64)
            .build()
            .ok()?;
        let t = Instant::now();
        for (i, p) in pages.iter().enumerate() {
            dev.write_page(i, p).ok()?;
        }
        for i in 0..pages.len() {
            dev.read_page(i, &mut out).ok()?;
        }
        best_engine = best_engine.min(t.elapsed().as_secs_f64());
    }
    let mib = (pages.len() * PAGE_SIZE) as f64 / (1 << 20) as f64;
    let (codec_mibps, engine_mibps) = (mib / best_codec, mib / best_engine);
    Some(Overhead {
        algo: algo.to_string(),
        pages: pages.len(),
        codec_mibps,
        engine_mibps,
        engine_share: engine_mibps / codec_mibps,
    })
}

/// Everything a run produced.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub rows: Vec<Row>,
    /// Engine overhead per available algorithm.
    pub overhead: Vec<Overhead>,
    /// Why kernel rows are missing (not root, no zram, disabled), if they are.
    pub kernel_missing: Option<String>,
}

/// The algorithms to run.
pub fn algorithms(opts: &Options) -> Vec<String> {
    if opts.algorithms.is_empty() {
        zmem_codec::names().into_iter().map(String::from).collect()
    } else {
        opts.algorithms.clone()
    }
}

/// Write the corpus into an engine device with `algo`, then read it back
/// at each page-cluster value. Verifies every page after writing.
pub fn run_engine(
    corpus: &Corpus,
    algo: &str,
    opts: &Options,
    progress: &mut dyn FnMut(&str),
) -> Vec<Row> {
    let threads = opts.threads.max(1);
    let pages = corpus.page_count();
    let build = || {
        Zram::builder()
            .name("zram-bench")
            .algorithm(algo, opts.params.clone())
            .disksize((pages * PAGE_SIZE) as u64)
            .build()
    };
    progress("write");
    // Each pass writes the corpus into a fresh device (built and dropped
    // outside the timed part), as the kernel side does; the device of the
    // last pass is read back.
    let passes = opts.write_passes_for(pages);
    let mut write_s = 0.0;
    let mut dev = match build() {
        Ok(d) => d,
        Err(e) => {
            return vec![Row::unavailable(
                Target::Engine,
                algo,
                &corpus.name,
                threads,
                e.message,
            )]
        }
    };
    for pass in 0..passes {
        if pass > 0 {
            // The previous pass's device is dropped here, untimed.
            dev = match build() {
                Ok(d) => d,
                Err(e) => {
                    return vec![Row::unavailable(
                        Target::Engine,
                        algo,
                        &corpus.name,
                        threads,
                        e.message,
                    )]
                }
            };
        }
        let t = Instant::now();
        for (i, p) in corpus.pages().enumerate() {
            if let Err(e) = dev.write_page(i, p) {
                return vec![Row::unavailable(
                    Target::Engine,
                    algo,
                    &corpus.name,
                    threads,
                    format!("write failed: {e}"),
                )];
            }
        }
        write_s += t.elapsed().as_secs_f64();
    }
    let write_mibps = (passes * pages * PAGE_SIZE) as f64 / write_s / (1 << 20) as f64;
    let m = dev.mm_stat();
    // Verify everything before timing reads.
    let mut b = vec![0u8; PAGE_SIZE];
    for (i, p) in corpus.pages().enumerate() {
        if dev.read_page(i, &mut b).is_err() || b != p {
            return vec![Row::unavailable(
                Target::Engine,
                algo,
                &corpus.name,
                threads,
                format!("page {i} did not read back as written"),
            )];
        }
    }
    let mut rows = Vec::new();
    for &pc in &opts.page_clusters {
        progress(&format!("reads pc={pc}"));
        let plan = request_indexes(pages, pc, opts.requests, threads, opts.seed);
        let n = 1usize << pc;
        let r = read_phase(pc, &plan, |buf, index| {
            let len = (n.min(pages - index)) * PAGE_SIZE;
            dev.read_at((index * PAGE_SIZE) as u64, &mut buf[..len])
                .map_err(|e| e.to_string())
        });
        match r {
            Ok(r) => rows.push(Row::measured(
                Target::Engine,
                algo,
                &corpus.name,
                threads,
                &m,
                write_mibps,
                &r,
            )),
            Err(e) => rows.push(Row::unavailable(
                Target::Engine,
                algo,
                &corpus.name,
                threads,
                e,
            )),
        }
    }
    rows
}

/// The whole run: for each algorithm, the engine rows, then (where the kernel
/// has the algorithm) the kernel rows.
pub fn run(corpus: &Corpus, opts: &Options, progress: &mut dyn FnMut(Progress)) -> Report {
    let algos = algorithms(opts);
    let kernel_missing = if opts.kernel {
        super::kernel::unavailable_reason()
    } else {
        Some("kernel rows not requested".to_string())
    };
    let kernel_algos = if kernel_missing.is_none() {
        super::kernel::algorithms()
    } else {
        Vec::new()
    };
    let steps_per = 1 + opts.page_clusters.len();
    let total = algos.len() * steps_per
        + algos.iter().filter(|a| kernel_algos.contains(a)).count() * steps_per;
    let mut done = 0;
    let mut rows = Vec::new();
    let mut overhead = Vec::new();
    for algo in &algos {
        let mut step = |what: &str| {
            progress(Progress {
                done,
                total,
                what: format!("{algo} engine: {what}"),
            });
            done += 1;
        };
        let engine_rows = run_engine(corpus, algo, opts, &mut step);
        if engine_rows.iter().any(|r| r.reason.is_none()) {
            overhead.extend(measure_overhead(corpus, algo, &opts.params));
        }
        rows.extend(engine_rows);
        if kernel_algos.contains(algo) {
            let mut step = |what: &str| {
                progress(Progress {
                    done,
                    total,
                    what: format!("{algo} kernel: {what}"),
                });
                done += 1;
            };
            rows.extend(super::kernel::run_kernel(corpus, algo, opts, &mut step));
        }
    }
    progress(Progress {
        done: total,
        total,
        what: "done".into(),
    });
    Report {
        rows,
        overhead,
        kernel_missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_plan_is_aligned_in_range_and_deterministic() {
        for pc in 0..4 {
            let p = request_indexes(100, pc, 1000, 2, 7);
            assert_eq!(p.len(), 2);
            assert_eq!(p[0].len(), 500);
            for &i in p.iter().flatten() {
                assert_eq!(i % (1 << pc), 0);
                assert!(i + (1 << pc) <= 100 || (1 << pc) > 100);
            }
            assert_eq!(p, request_indexes(100, pc, 1000, 2, 7));
        }
    }

    #[test]
    fn write_passes_cover_the_minimum_within_the_cap() {
        let auto = Options::default();
        // The 4 MiB default corpus: 32 passes = 128 MiB.
        assert_eq!(auto.write_passes_for(1024), 32);
        assert!(auto.write_passes_for(1024) * 1024 * PAGE_SIZE >= WRITE_BYTES_MIN);
        // Tiny corpora stop at the cap, huge ones write once.
        assert_eq!(auto.write_passes_for(1), MAX_AUTO_WRITE_PASSES);
        assert_eq!(auto.write_passes_for(0), MAX_AUTO_WRITE_PASSES);
        assert_eq!(auto.write_passes_for(1 << 20), 1);
        assert_eq!(auto.write_passes_for(20_000), 2);
        // An explicit count is taken as is.
        assert_eq!(
            Options {
                write_passes: 3,
                ..Options::default()
            }
            .write_passes_for(1024),
            3
        );
    }

    #[test]
    fn engine_rows_carry_mm_stat_and_rates() {
        let c = crate::corpus::default_corpus();
        let opts = Options {
            requests: 200,
            kernel: false,
            write_passes: 2,
            ..Options::default()
        };
        let rows = run_engine(&c, "lz4", &opts, &mut |_| {});
        assert_eq!(rows.len(), 4);
        for (pc, r) in rows.iter().enumerate() {
            assert_eq!(r.reason, None);
            assert_eq!(r.page_cluster, Some(pc as u32));
            assert_eq!(r.orig_data_size, Some(c.page_count() as u64 * 4096));
            assert!(r.same_pages.unwrap() >= 160);
            assert!(r.ratio.unwrap() > 1.0 && r.effective_ratio.unwrap() > 1.0);
            assert!(
                r.iops.unwrap() > 0.0
                    && r.lat_p99_ns.unwrap() > 0.0
                    && r.write_mibps.unwrap() > 0.0
            );
        }
        let bad = run_engine(&c, "nope", &opts, &mut |_| {});
        assert_eq!(bad.len(), 1);
        assert!(bad[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("unknown algorithm"));
    }
}
