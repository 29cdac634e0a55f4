//! `zmem bench zswap`: the corpus replayed through zswap (a compressed LRU
//! cache over a backing file) and through zram in front of the same kind of
//! backing file (a lower-priority disk swap), at the same RAM budget.
//!
//! Every corpus page is swapped out once (swap offset = page index); then
//! `accesses` swap-ins follow a hot/cold pattern: a share `hot` of the pages
//! gets a share `hot_access` of the accesses. Each access is a swap-in (its
//! latency is measured; the slot is freed, as the kernel's exclusive load)
//! followed by a swap-out of the same page (it is reclaimed again). A hit is
//! an access served from RAM (zswap pool / zeromap, or the zram device).
//!
//! zram keeps whichever pages arrived while it had room and never moves them
//! (no writeback in this model); zswap's limit path writes the LRU tail back,
//! so hot pages stay in RAM.
//!
//! [`run_with_kernel`] adds the kernel's zswap on the same corpus and sequence
//! ([`super::zswap_kernel`]) and the engine at exactly the kernel's pool limit
//! beside it. The engine rows behave as one kernel version's zswap and zram
//! ([`Options::kernel_model`]; with kernel rows, the running kernel's: its
//! same-filled and incompressible pages, its zsmalloc; docs/zswap.md, "Which
//! kernel's zswap"), and the kernel's zswap uses the engine's allocator
//! where it has a `zpool` parameter.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::engine::EngineKernel;
use anyhow::{Context, Result};
use serde::Serialize;
use zmem_codec::{Params, PAGE_SIZE};
use zmem_corpus::Corpus;
use zmem_device::BlockDevice;
use zmem_kernel::KernelModel;
use zmem_zswap::{Backing, ShrinkWorker, Source, Zswap};

use super::device_rows::Target;
use super::zswap_counters::Measured;
use super::zswap_kernel;
pub use super::zswap_kernel::KernelOptions;

/// The engine's shrink worker in the bench: queued by a refused store, then
/// 4 steps of its loop per later store or load. Calibrated against this
/// machine's kernel (docs/zswap.md: with it the engine's limit hits, pages
/// written back and hit rate land within a few percent of the kernel's on
/// 1.15 GiB of process memory; the synchronous `Inline` worker is 7× off).
pub const DEFAULT_WORKER: ShrinkWorker = ShrinkWorker::Paced(4);

/// `--worker`: `inline` or `paced:N`.
pub fn parse_worker(s: &str) -> Result<ShrinkWorker> {
    if s == "inline" {
        return Ok(ShrinkWorker::Inline);
    }
    match s.strip_prefix("paced:").map(str::parse::<u32>) {
        Some(Ok(n)) if n > 0 => Ok(ShrinkWorker::Paced(n)),
        _ => anyhow::bail!("--worker {s:?}: give `inline` or `paced:N` with N ≥ 1 (e.g. paced:4)"),
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Compressor (kernel name) for both engines.
    pub algorithm: String,
    /// zswap allocator (zsmalloc, zbud, z3fold); zram uses zsmalloc.
    pub zpool: String,
    /// RAM budget as a share of the corpus size (used when `budget_bytes` is None).
    pub budget_fraction: f64,
    /// RAM budget in bytes: zswap's pool limit and zram's mem_limit.
    pub budget_bytes: Option<u64>,
    /// Share of the pages that is hot (0 < hot < 1).
    pub hot: f64,
    /// Share of the accesses that go to the hot pages (0..=1).
    pub hot_access: f64,
    /// Number of swap-ins after the initial swap-out of every page.
    pub accesses: usize,
    /// zswap `accept_threshold_percent`.
    pub accept_threshold_percent: u32,
    /// When the engine's shrink worker runs (default [`DEFAULT_WORKER`]).
    pub worker: ShrinkWorker,
    /// Seed of the hot set and the access sequence (same for both engines).
    pub seed: u64,
    /// Directory for the backing files (removed afterwards).
    pub dir: PathBuf,
    /// The kernel version whose zswap (and zram) the engine rows behave as;
    /// `None`: the running kernel's when kernel rows are measured, else the
    /// newest modeled ([`EngineKernel::pick`]).
    pub kernel_model: Option<KernelModel>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            algorithm: zmem_codec::ZSWAP_DEFAULT.name.into(),
            zpool: "zsmalloc".into(),
            budget_fraction: 0.1,
            budget_bytes: None,
            hot: 0.2,
            hot_access: 0.8,
            accesses: 50_000,
            accept_threshold_percent: 90,
            worker: DEFAULT_WORKER,
            seed: 0x2a5_a9c0,
            dir: std::env::temp_dir(),
            kernel_model: None,
        }
    }
}

impl Options {
    /// Checks the pattern parameters.
    pub fn validate(&self) -> Result<()> {
        anyhow::ensure!(
            self.hot > 0.0 && self.hot < 1.0,
            "--hot must be between 0 and 1 (exclusive), got {}",
            self.hot
        );
        anyhow::ensure!(
            (0.0..=1.0).contains(&self.hot_access),
            "--hot-access must be between 0 and 1, got {}",
            self.hot_access
        );
        anyhow::ensure!(
            self.budget_bytes.is_some()
                || (self.budget_fraction > 0.0 && self.budget_fraction <= 1.0),
            "the RAM budget share must be in (0, 1], got {}",
            self.budget_fraction
        );
        anyhow::ensure!(
            self.accept_threshold_percent <= 100,
            "accept threshold must be 0..=100"
        );
        zmem_codec::find(&self.algorithm)?;
        anyhow::ensure!(
            zmem_zpool_names().contains(&self.zpool.as_str()),
            "unknown zpool {:?}",
            self.zpool
        );
        Ok(())
    }
}

fn zmem_zpool_names() -> [&'static str; 3] {
    ["zsmalloc", "zbud", "z3fold"]
}

/// One engine's results.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub engine: String,
    /// The engine (zmem's library) or the running kernel's zswap.
    pub target: Target,
    /// The kernel version an engine row behaves as; the running kernel's
    /// release for a kernel row.
    pub kernel: String,
    pub algo: String,
    pub allocator: String,
    pub corpus: String,
    pub pages: usize,
    pub budget_bytes: u64,
    pub accesses: usize,
    pub hits: u64,
    pub hit_rate: f64,
    /// zswap: entries written back by the shrink worker; zram: 0 (no writeback in this model).
    #[serde(rename = "written_back_pages")]
    pub written_back: u64,
    /// RAM holding compressed pages at the end (pool bytes / zram mem_used_total).
    #[serde(rename = "ram_used_bytes")]
    pub ram_used: u64,
    /// Peak of the same during the run.
    #[serde(rename = "ram_peak_bytes")]
    pub ram_peak: u64,
    pub lat_mean_ns: f64,
    pub lat_p99_ns: f64,
    #[serde(rename = "backing_read_pages")]
    pub backing_reads: u64,
    #[serde(rename = "backing_written_pages")]
    pub backing_writes: u64,
    /// Pages in the pool at the end (zswap `stored_pages`; zram: pages in the device).
    pub stored_pages: u64,
    /// `ram_used_bytes` / `stored_pages`.
    pub bytes_per_stored_page: Option<f64>,
    /// zswap `pool_limit_hit`; zram: writes refused at mem_limit. None when unknown.
    pub pool_limit_hit: Option<u64>,
    /// zswap: Σ `reject_*` (compress_poor, compress_fail, alloc_fail,
    /// kmemcache_fail, reclaim_fail); None for zram.
    pub rejects: Option<u64>,
    /// zswap: stored pages and pool bytes right after every page was swapped
    /// out once (before the accesses).
    pub fill_stored_pages: Option<u64>,
    pub fill_pool_bytes: Option<u64>,
}

/// xorshift64*: deterministic, same sequence for both engines.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The access sequence: page indices.
pub fn accesses(pages: usize, opts: &Options) -> Vec<usize> {
    let mut rng = Rng(opts.seed | 1);
    let mut order: Vec<usize> = (0..pages).collect();
    for i in (1..pages).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let n_hot =
        ((pages as f64 * opts.hot).round() as usize).clamp(1, pages.saturating_sub(1).max(1));
    let (hot, cold) = order.split_at(n_hot);
    (0..opts.accesses)
        .map(|_| {
            if cold.is_empty() || rng.unit() < opts.hot_access {
                hot[rng.below(hot.len())]
            } else {
                cold[rng.below(cold.len())]
            }
        })
        .collect()
}

struct Tally {
    hits: u64,
    lat: Vec<u64>,
    peak: u64,
}

impl Tally {
    /// An empty tally for `requests` timed swap-ins.
    fn new(requests: usize) -> Self {
        Tally {
            hits: 0,
            lat: Vec::with_capacity(requests),
            peak: 0,
        }
    }

    fn finish(mut self, base: Row) -> Row {
        self.lat.sort_unstable();
        let n = self.lat.len().max(1) as f64;
        Row {
            hits: self.hits,
            hit_rate: self.hits as f64 / n,
            lat_mean_ns: self.lat.iter().sum::<u64>() as f64 / n,
            lat_p99_ns: super::percentile(&self.lat, 0.99),
            ram_peak: self.peak.max(base.ram_used),
            ..base
        }
    }
}

fn backing_path(dir: &Path, engine: &str) -> PathBuf {
    dir.join(format!(
        "zmem-bench-zswap-{}-{engine}.swap",
        std::process::id()
    ))
}

/// The RAM budget in bytes for `corpus`.
fn budget_of(corpus: &Corpus, opts: &Options) -> u64 {
    opts.budget_bytes
        .unwrap_or(((corpus.page_count() * PAGE_SIZE) as f64 * opts.budget_fraction) as u64)
        .max(PAGE_SIZE as u64)
}

/// zswap's pool limit: bytes (the bench's budget) or, as the kernel sets it,
/// a percent of a RAM size.
#[derive(Debug, Clone, Copy)]
enum PoolLimit {
    Bytes(u64),
    Percent { ram: u64, pct: u32 },
}

/// Runs both engines on `corpus`.
pub fn run(corpus: &Corpus, opts: &Options) -> Result<Vec<Row>> {
    opts.validate()?;
    let pages = corpus.page_count();
    anyhow::ensure!(
        pages >= 2,
        "corpus {} has {} pages; need at least 2",
        corpus.name,
        pages
    );
    let budget = budget_of(corpus, opts);
    let seq = accesses(pages, opts);
    Ok(vec![
        run_zswap(corpus, opts, PoolLimit::Bytes(budget), &seq)?,
        run_zram(corpus, opts, budget, &seq)?,
    ])
}

/// Every corpus with every algorithm (`base` with its algorithm set): the
/// engine rows, with `kernel` also the kernel's zswap beside them
/// ([`run_with_kernel`]); then the distinct reasons kernel rows could not run.
pub fn run_all(
    corpora: &[Corpus],
    algos: &[String],
    base: &Options,
    kernel: Option<&KernelOptions>,
) -> Result<(Vec<Row>, Vec<String>)> {
    let mut rows: Vec<Row> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for c in corpora {
        for a in algos {
            let o = Options {
                algorithm: a.clone(),
                ..base.clone()
            };
            let Some(k) = kernel else {
                rows.extend(run(c, &o)?);
                continue;
            };
            let (r, why) = run_with_kernel(c, &o, k)?;
            rows.extend(r);
            if let Some(why) = why {
                if !notes.contains(&why) {
                    notes.push(why);
                }
            }
        }
    }
    Ok((rows, notes))
}

/// [`run`], then the kernel's zswap on the same corpus and sequence with the
/// engine at exactly the kernel's pool limit beside it. When the kernel rows
/// cannot run here, the engine rows and the reason.
pub fn run_with_kernel(
    corpus: &Corpus,
    opts: &Options,
    k: &KernelOptions,
) -> Result<(Vec<Row>, Option<String>)> {
    let sys = zmem_host::Sys::real();
    let running = crate::engine::running_kernel();
    let running_model = running.clone().ok().and_then(|v| KernelModel::new(v).ok());
    let why = zswap_kernel::unavailable(
        &sys,
        running_model.as_ref(),
        &opts.zpool,
        &opts.algorithm,
        k.force,
    );
    let model = EngineKernel::pick(opts.kernel_model, why.is_none(), running).model;
    let opts = &Options {
        kernel_model: Some(model),
        ..opts.clone()
    };
    let mut rows = run(corpus, opts)?;
    if let Some(why) = why {
        return Ok((rows, Some(why)));
    }
    let mem_total = sys
        .meminfo_get("MemTotal")?
        .context("/proc/meminfo has no MemTotal")?;
    let (pct, limit) = zswap_kernel::kernel_limit(mem_total, budget_of(corpus, opts));
    let seq = accesses(corpus.page_count(), opts);
    let at_limit = PoolLimit::Percent {
        ram: mem_total,
        pct,
    };
    rows.push(run_zswap(corpus, opts, at_limit, &seq)?);
    let m = zswap_kernel::run(
        corpus,
        &seq,
        (&opts.algorithm, &opts.zpool),
        (pct, limit),
        opts.accept_threshold_percent,
        k,
    )
    .context("the kernel's zswap")?;
    rows.push(kernel_row(corpus, opts, limit, &m)?);
    Ok((rows, None))
}

/// Σ of the `reject_*` counters there are (6.1 has no `reject_compress_fail`);
/// None when there is none.
fn rejects(get: impl Fn(&str) -> Option<u64>) -> Option<u64> {
    let seen: Vec<u64> = [
        "reject_compress_poor",
        "reject_compress_fail",
        "reject_alloc_fail",
        "reject_kmemcache_fail",
        "reject_reclaim_fail",
    ]
    .iter()
    .filter_map(|k| get(k))
    .collect();
    (!seen.is_empty()).then(|| seen.iter().sum())
}

fn per_page(bytes: u64, pages: u64) -> Option<f64> {
    (pages > 0).then(|| bytes as f64 / pages as f64)
}

/// The kernel's row from the worker's counters.
fn kernel_row(corpus: &Corpus, opts: &Options, limit: u64, m: &Measured) -> Result<Row> {
    anyhow::ensure!(
        m.wrong_pages == 0,
        "the kernel returned wrong data for {} accesses",
        m.wrong_pages
    );
    let (s, f, e) = (&m.start, &m.filled, &m.end);
    let delta = |k: &str| Some(e.dbg(k)?.saturating_sub(s.dbg(k)?));
    let accesses = m.lat_ns.len();
    let disk_reads = e.vm("pswpin").saturating_sub(f.vm("pswpin"));
    let mut lat = m.lat_ns.clone();
    lat.sort_unstable();
    let n = lat.len().max(1) as f64;
    let hits = (accesses as u64).saturating_sub(disk_reads);
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .context("reading /proc/sys/kernel/osrelease")?;
    Ok(Row {
        engine: "zswap".into(),
        target: Target::Kernel,
        kernel: release.trim().to_string(),
        algo: opts.algorithm.clone(),
        allocator: opts.zpool.clone(),
        corpus: corpus.name.clone(),
        pages: corpus.page_count(),
        budget_bytes: limit,
        accesses,
        hits,
        hit_rate: hits as f64 / n,
        written_back: delta("written_back_pages")
            .unwrap_or(e.vm("zswpwb").saturating_sub(s.vm("zswpwb"))),
        ram_used: e.pool_bytes(),
        ram_peak: m.pool_peak,
        lat_mean_ns: lat.iter().sum::<u64>() as f64 / n,
        lat_p99_ns: super::percentile(&lat, 0.99),
        backing_reads: e.vm("pswpin").saturating_sub(s.vm("pswpin")),
        backing_writes: e.vm("pswpout").saturating_sub(s.vm("pswpout")),
        stored_pages: e.stored_pages(),
        bytes_per_stored_page: per_page(e.pool_bytes(), e.stored_pages()),
        pool_limit_hit: delta("pool_limit_hit"),
        rejects: rejects(delta),
        fill_stored_pages: Some(f.stored_pages()),
        fill_pool_bytes: Some(f.pool_bytes()),
    })
}

fn run_zswap(corpus: &Corpus, opts: &Options, limit: PoolLimit, seq: &[usize]) -> Result<Row> {
    let pages = corpus.page_count();
    let path = backing_path(&opts.dir, "zswap");
    let backing = Backing::create(&path, pages as u64)?;
    let builder = EngineKernel::choose(opts.kernel_model, false)
        .zswap()
        .compressor(opts.algorithm.clone())
        .zpool(opts.zpool.clone())
        .accept_threshold_percent(opts.accept_threshold_percent)
        .worker(opts.worker);
    let builder = match limit {
        PoolLimit::Bytes(b) => builder.max_pool_bytes(b),
        PoolLimit::Percent { ram, pct } => builder.ram_size(ram).max_pool_percent(pct),
    };
    let z = builder
        .build(backing)
        .map_err(|e| anyhow::anyhow!("zswap: {e}"))?;
    let shown = match limit {
        PoolLimit::Bytes(b) => b,
        PoolLimit::Percent { .. } => z.limits().0 * PAGE_SIZE as u64,
    };
    let res = replay_zswap(&z, corpus, opts, seq).map(|r| Row {
        budget_bytes: shown,
        ..r
    });
    let _ = std::fs::remove_file(&path);
    res
}

/// Every page out, then `seq` (swap-in, check, swap-out), on engine `z`.
fn replay_zswap(z: &Zswap, corpus: &Corpus, opts: &Options, seq: &[usize]) -> Result<Row> {
    let pages = corpus.page_count();
    let mut peak = 0;
    for i in 0..pages {
        z.swap_out(i as u64, corpus.page(i))?;
        peak = peak.max(z.pool_pages());
    }
    let fill = z.stats();
    let mut t = Tally::new(seq.len());
    let mut buf = vec![0u8; PAGE_SIZE];
    for &i in seq {
        let t0 = Instant::now();
        let src = z.swap_in(i as u64, &mut buf, true)?;
        t.lat.push(t0.elapsed().as_nanos() as u64);
        anyhow::ensure!(
            buf == corpus.page(i),
            "zswap returned wrong data for page {i} (from {src:?})"
        );
        if matches!(src, Source::Pool | Source::Zero) {
            t.hits += 1;
        }
        z.swap_out(i as u64, &buf)?;
        peak = peak.max(z.pool_pages());
    }
    t.peak = peak * PAGE_SIZE as u64;
    let st = z.stats();
    Ok(t.finish(Row {
        engine: "zswap".into(),
        target: Target::Engine,
        kernel: z.kernel().to_string(),
        algo: opts.algorithm.clone(),
        allocator: opts.zpool.clone(),
        corpus: corpus.name.clone(),
        pages,
        budget_bytes: 0,
        accesses: seq.len(),
        hits: 0,
        hit_rate: 0.0,
        written_back: st.written_back_pages,
        ram_used: st.pool_total_size,
        ram_peak: 0,
        lat_mean_ns: 0.0,
        lat_p99_ns: 0.0,
        backing_reads: st.backing_reads,
        backing_writes: st.backing_writes,
        stored_pages: st.stored_pages,
        bytes_per_stored_page: per_page(st.pool_total_size, st.stored_pages),
        pool_limit_hit: Some(st.pool_limit_hit),
        rejects: rejects(|k| st.get(k)),
        fill_stored_pages: Some(fill.stored_pages),
        fill_pool_bytes: Some(fill.pool_total_size),
    }))
}

fn run_zram(corpus: &Corpus, opts: &Options, budget: u64, seq: &[usize]) -> Result<Row> {
    let pages = corpus.page_count();
    let path = backing_path(&opts.dir, "zram");
    let backing = Backing::create(&path, pages as u64)?;
    let dev = EngineKernel::choose(opts.kernel_model, false)
        .zram()
        .disksize((pages * PAGE_SIZE) as u64)
        .algorithm(opts.algorithm.clone(), Params::default())
        .mem_limit(budget)
        .build()
        .map_err(|e| anyhow::anyhow!("zram: {e}"))
        .context("building the zram device")?;
    let res = (|| -> Result<Row> {
        let mut in_zram = vec![false; pages];
        let (mut reads, mut writes) = (0u64, 0u64);
        // Writes refused at mem_limit (each goes to the disk file).
        let out = |i: usize, page: &[u8], in_zram: &mut [bool], writes: &mut u64| -> Result<()> {
            let off = (i * PAGE_SIZE) as u64;
            match dev.write_at(off, page) {
                Ok(()) => in_zram[i] = true,
                Err(zmem_device::IoError::NoSpace(_)) => {
                    backing.write(i as u64, page)?;
                    *writes += 1;
                }
                Err(e) => return Err(e.into()),
            }
            Ok(())
        };
        for i in 0..pages {
            out(i, corpus.page(i), &mut in_zram, &mut writes)?;
        }
        let mut peak = dev.mm_stat().mem_used_total;
        let mut t = Tally::new(seq.len());
        let mut buf = vec![0u8; PAGE_SIZE];
        for &i in seq {
            let off = (i * PAGE_SIZE) as u64;
            let t0 = Instant::now();
            if in_zram[i] {
                dev.read_at(off, &mut buf)?;
                dev.discard(off, PAGE_SIZE as u64)?;
                in_zram[i] = false;
                t.hits += 1;
            } else {
                backing.read(i as u64, &mut buf)?;
                backing.free(i as u64);
                reads += 1;
            }
            t.lat.push(t0.elapsed().as_nanos() as u64);
            anyhow::ensure!(
                buf == corpus.page(i),
                "zram returned wrong data for page {i}"
            );
            out(i, &buf, &mut in_zram, &mut writes)?;
            peak = peak.max(dev.mm_stat().mem_used_total);
        }
        t.peak = peak;
        let m = dev.mm_stat();
        let stored = in_zram.iter().filter(|b| **b).count() as u64;
        Ok(t.finish(Row {
            engine: "zram".into(),
            target: Target::Engine,
            kernel: dev.kernel().to_string(),
            algo: opts.algorithm.clone(),
            allocator: "zsmalloc".into(),
            corpus: corpus.name.clone(),
            pages,
            budget_bytes: budget,
            accesses: seq.len(),
            hits: 0,
            hit_rate: 0.0,
            written_back: 0,
            ram_used: m.mem_used_total,
            ram_peak: 0,
            lat_mean_ns: 0.0,
            lat_p99_ns: 0.0,
            backing_reads: reads,
            backing_writes: writes,
            stored_pages: stored,
            bytes_per_stored_page: per_page(m.mem_used_total, stored),
            pool_limit_hit: Some(writes),
            rejects: None,
            fill_stored_pages: None,
            fill_pool_bytes: None,
        }))
    })();
    let _ = std::fs::remove_file(&path);
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_sum_the_counters_a_kernel_has() {
        let k61 = |k: &str| (k != "reject_compress_fail").then_some(2);
        assert_eq!(rejects(k61), Some(8));
        assert_eq!(rejects(|_| Some(1)), Some(5));
        assert_eq!(rejects(|_| None), None);
    }

    #[test]
    fn worker_flag() {
        assert_eq!(parse_worker("inline").unwrap(), ShrinkWorker::Inline);
        assert_eq!(parse_worker("paced:4").unwrap(), ShrinkWorker::Paced(4));
        for bad in ["paced:0", "paced:", "paced:x", "sync", ""] {
            assert!(parse_worker(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn pattern_respects_hot_share() {
        let o = Options {
            accesses: 10_000,
            ..Options::default()
        };
        let seq = accesses(1000, &o);
        let mut count = vec![0usize; 1000];
        for &i in &seq {
            count[i] += 1;
        }
        let mut sorted = count.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let top: usize = sorted[..200].iter().sum();
        assert!(top as f64 / 10_000.0 > 0.75, "hot 20% gets ~80%: {top}");
        assert_eq!(seq, accesses(1000, &o), "deterministic");
    }

    /// The engine rows behave as the kernel version asked for: 6.1 keeps
    /// zero pages as entries and rejects pages that do not compress, 6.12
    /// sends zero pages to the zeromap and rejects them too, 7.3 stores them.
    #[test]
    fn engine_rows_follow_the_kernel_model() {
        let (zero, noise, text) = (8usize, 4usize, 20usize);
        let mut data = Vec::new();
        let mut x = 0x9e37_79b9_u64;
        for i in 0..zero + noise + text {
            let page: Vec<u8> = (0..PAGE_SIZE)
                .map(|j| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    match i {
                        i if i < zero => 0,
                        i if i < zero + noise => x as u8,
                        _ => b"zswap by version "[(i + j) % 17] ^ (j / 512) as u8,
                    }
                })
                .collect();
            data.extend_from_slice(&page);
        }
        let c = Corpus::from_bytes("t", "test", data).unwrap();
        // Its own directory: the backing files are named by process id.
        let dir = zmem_files::testutil::ScratchDir::new("lab-zswap-model");
        let stored = |k: &str| {
            let o = Options {
                dir: dir.path().to_path_buf(),
                accesses: 100,
                budget_fraction: 1.0,
                algorithm: "lz4".into(),
                kernel_model: Some(KernelModel::parse(k).unwrap()),
                ..Options::default()
            };
            let r = &run(&c, &o).unwrap()[0];
            assert_eq!(r.kernel, k);
            (r.fill_stored_pages.unwrap(), r.rejects.unwrap())
        };
        assert_eq!(stored("6.1"), ((zero + text) as u64, noise as u64));
        assert_eq!(stored("6.12"), (text as u64, noise as u64));
        assert_eq!(stored("7.3"), ((noise + text) as u64, 0));
    }

    #[test]
    fn both_engines_replay_a_small_corpus() {
        let mut data = Vec::new();
        for i in 0..400u32 {
            let mut p = vec![0u8; PAGE_SIZE];
            for (j, b) in p.iter_mut().enumerate() {
                *b = if i % 5 == 0 {
                    0
                } else {
                    ((j as u32 * 7 + i) % 251) as u8 ^ (j / 97) as u8
                };
            }
            data.extend_from_slice(&p);
        }
        let c = Corpus::from_bytes("t", "test", data).unwrap();
        let o = Options {
            accesses: 2000,
            budget_fraction: 0.05,
            ..Options::default()
        };
        let rows = run(&c, &o).unwrap();
        assert_eq!(rows.len(), 2);
        let (zs, zr) = (&rows[0], &rows[1]);
        assert!(zs.written_back > 0 && zs.backing_writes > 0, "{zs:?}");
        assert!(
            zs.ram_peak <= zs.budget_bytes + PAGE_SIZE as u64 * 2,
            "{zs:?}"
        );
        assert!(
            zr.ram_peak <= zr.budget_bytes + PAGE_SIZE as u64 * 2,
            "{zr:?}"
        );
        assert!(
            zs.hit_rate > zr.hit_rate,
            "LRU keeps the hot set: {} vs {}",
            zs.hit_rate,
            zr.hit_rate
        );
        assert!(Options {
            hot: 1.5,
            ..Options::default()
        }
        .validate()
        .is_err());
        assert!(Options {
            algorithm: "lz5".into(),
            ..Options::default()
        }
        .validate()
        .is_err());
    }
}
