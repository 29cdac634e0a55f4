//! `zmem bench --zswap`: the corpus replayed through zswap (a compressed LRU
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

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;
use zmem_codec::{Params, PAGE_SIZE};
use zmem_sysfs::BlockDevice;
use zmem_zram::Zram;
use zmem_zswap::{Backing, Source, Zswap};

use crate::corpus::Corpus;

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
    /// Seed of the hot set and the access sequence (same for both engines).
    pub seed: u64,
    /// Directory for the backing files (removed afterwards).
    pub dir: PathBuf,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            algorithm: "lzo".into(),
            zpool: "zsmalloc".into(),
            budget_fraction: 0.1,
            budget_bytes: None,
            hot: 0.2,
            hot_access: 0.8,
            accesses: 50_000,
            accept_threshold_percent: 90,
            seed: 0x2a5_a9c0,
            dir: std::env::temp_dir(),
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
}

pub const COLUMNS: [&str; 13] = [
    "engine",
    "algo",
    "pool",
    "pages",
    "budget",
    "accesses",
    "hit_rate",
    "written_back",
    "ram_used",
    "ram_peak",
    "lat_mean_us",
    "lat_p99_us",
    "backing_r/w",
];

impl Row {
    pub fn cells(&self) -> Vec<String> {
        vec![
            self.engine.clone(),
            self.algo.clone(),
            self.allocator.clone(),
            self.pages.to_string(),
            self.budget_bytes.to_string(),
            self.accesses.to_string(),
            format!("{:.3}", self.hit_rate),
            self.written_back.to_string(),
            self.ram_used.to_string(),
            self.ram_peak.to_string(),
            format!("{:.2}", self.lat_mean_ns / 1000.0),
            format!("{:.2}", self.lat_p99_ns / 1000.0),
            format!("{}/{}", self.backing_reads, self.backing_writes),
        ]
    }
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
    let budget = opts
        .budget_bytes
        .unwrap_or(((pages * PAGE_SIZE) as f64 * opts.budget_fraction) as u64)
        .max(PAGE_SIZE as u64);
    let seq = accesses(pages, opts);
    Ok(vec![
        run_zswap(corpus, opts, budget, &seq)?,
        run_zram(corpus, opts, budget, &seq)?,
    ])
}

fn run_zswap(corpus: &Corpus, opts: &Options, budget: u64, seq: &[usize]) -> Result<Row> {
    let pages = corpus.page_count();
    let path = backing_path(&opts.dir, "zswap");
    let backing = Backing::create(&path, pages as u64)?;
    let z = Zswap::builder()
        .compressor(opts.algorithm.clone())
        .zpool(opts.zpool.clone())
        .max_pool_bytes(budget)
        .accept_threshold_percent(opts.accept_threshold_percent)
        .build(backing)
        .map_err(|e| anyhow::anyhow!("zswap: {e}"))?;
    let res = (|| -> Result<Row> {
        let mut peak = 0;
        for i in 0..pages {
            z.swap_out(i as u64, corpus.page(i))?;
            peak = peak.max(z.pool_pages());
        }
        let mut t = Tally {
            hits: 0,
            lat: Vec::with_capacity(seq.len()),
            peak: 0,
        };
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
            algo: opts.algorithm.clone(),
            allocator: opts.zpool.clone(),
            corpus: corpus.name.clone(),
            pages,
            budget_bytes: budget,
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
        }))
    })();
    let _ = std::fs::remove_file(&path);
    res
}

fn run_zram(corpus: &Corpus, opts: &Options, budget: u64, seq: &[usize]) -> Result<Row> {
    let pages = corpus.page_count();
    let path = backing_path(&opts.dir, "zram");
    let backing = Backing::create(&path, pages as u64)?;
    let dev = Zram::builder()
        .disksize((pages * PAGE_SIZE) as u64)
        .algorithm(opts.algorithm.clone(), Params::default())
        .mem_limit(budget)
        .build()
        .map_err(|e| anyhow::anyhow!("zram: {e}"))
        .context("building the zram device")?;
    let res = (|| -> Result<Row> {
        let mut in_zram = vec![false; pages];
        let (mut reads, mut writes) = (0u64, 0u64);
        let out = |i: usize, page: &[u8], in_zram: &mut [bool], writes: &mut u64| -> Result<()> {
            let off = (i * PAGE_SIZE) as u64;
            match dev.write_at(off, page) {
                Ok(()) => in_zram[i] = true,
                Err(zmem_sysfs::IoError::NoSpace(_)) => {
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
        let mut t = Tally {
            hits: 0,
            lat: Vec::with_capacity(seq.len()),
            peak: 0,
        };
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
        Ok(t.finish(Row {
            engine: "zram".into(),
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
        }))
    })();
    let _ = std::fs::remove_file(&path);
    res
}

#[cfg(test)]
mod tests {
    use super::*;

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
