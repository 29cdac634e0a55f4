//! `zmem bench fastpath ALGO`: what the fast path costs and buys.
//!
//! Two zmem zram devices get the same corpus in the same loop, page by page
//! (alternating which device goes first): device F writes every page with
//! the fast algorithm ALGO (`Zram::write_page_fast`), device P with the
//! primary alone. Each write is timed on its own, so the two latency
//! distributions (mean, p99) come from the same pages in the same run. The
//! write phase is repeated `passes` times into fresh devices (all timings
//! pooled), so one noisy moment on a shared machine weighs less.
//! Then F is measured (after compaction), gets `idle all` +
//! `recompress type=idle from=ALGO` (the background pass of the maintenance
//! worker: precise recompression back to the primary), is compacted and
//! measured again; P is measured for the primary alone. Every page of both
//! devices must read back identical.
//!
//! The effective ratio is `orig_data_size / mem_used_total`, as in
//! `zmem bench recomp`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use zmem_codec::{Params, PAGE_SIZE};
use zmem_corpus::Corpus;
use zmem_device::BlockDevice;
use zmem_zram::{RecompressParams, Zram};

use crate::engine::EngineKernel;

use super::recomp::{heap_corpus, measure, verify, Measure};
use super::BenchMode;

/// Fast path: writes with the fast ALGO beside the primary (mean, p50, p99), then the
/// fast-path slots recompressed back to the primary
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The fast algorithm
    #[arg(value_name = "ALGO")]
    pub fast: String,
    /// Corpus files of raw 4 KiB pages; without any, a heap-like corpus
    pub corpus: Vec<PathBuf>,
    /// The primary algorithm the fast-path slots are recompressed back to
    #[arg(long, value_name = "ALGO", default_value = zmem_codec::backend::lz4::INFO.name)]
    pub primary: String,
    /// Write passes into fresh devices (latencies pooled over all passes)
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub passes: usize,
}

impl BenchMode for Args {
    type Output = Vec<FastpathResult>;
    fn run(&self) -> Result<Self::Output> {
        super::per_corpus(&self.corpus, || heap_corpus(8), |c| {
            run(c, &self.primary, &self.fast, self.passes)
        })
    }
}

/// Write latency of one path.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Latency {
    #[serde(rename = "lat_mean_ns", serialize_with = "crate::fields::us_as_ns")]
    pub mean_us: f64,
    #[serde(rename = "lat_p50_ns", serialize_with = "crate::fields::us_as_ns")]
    pub p50_us: f64,
    #[serde(rename = "lat_p99_ns", serialize_with = "crate::fields::us_as_ns")]
    pub p99_us: f64,
    /// Sum of the per-page write times.
    pub total_s: f64,
}

impl Latency {
    fn of(mut ns: Vec<u64>) -> Latency {
        if ns.is_empty() {
            return Latency {
                mean_us: 0.0,
                p50_us: 0.0,
                p99_us: 0.0,
                total_s: 0.0,
            };
        }
        ns.sort_unstable();
        let total: u64 = ns.iter().sum();
        let q = |p: f64| super::percentile(&ns, p) / 1000.0;
        Latency {
            mean_us: total as f64 / ns.len() as f64 / 1000.0,
            p50_us: q(0.50),
            p99_us: q(0.99),
            total_s: total as f64 / 1e9,
        }
    }
}

/// The numbers of one `--fastpath` run.
#[derive(Debug, Clone, Serialize)]
pub struct FastpathResult {
    pub corpus: String,
    pub pages: usize,
    /// Write passes into fresh devices; latencies pool every pass.
    pub passes: usize,
    pub primary: String,
    pub fast: String,
    /// Writes with the fast algorithm.
    pub write_fast: Latency,
    /// Writes of the same pages with the primary.
    pub write_primary: Latency,
    /// Mean fast latency over mean primary latency.
    pub latency_ratio: f64,
    /// The fast-path device after writing (and compaction).
    pub before: Measure,
    /// After `idle all` + `recompress type=idle from=ALGO` + compaction.
    pub after: Measure,
    /// The primary alone.
    pub primary_alone: Measure,
    pub candidates: u64,
    pub recompressed: u64,
    /// Slots kept with the fast algorithm (the primary would need a larger size class).
    pub kept_fast: u64,
    /// Time of `idle all` plus the precise recompress pass.
    pub recompress_s: f64,
    pub verified: bool,
}

impl FastpathResult {
    /// How far the effective ratio after recompression is below the primary alone, in percent.
    pub fn gap_percent(&self) -> f64 {
        if self.primary_alone.effective_ratio == 0.0 {
            return 0.0;
        }
        (self.primary_alone.effective_ratio - self.after.effective_ratio)
            / self.primary_alone.effective_ratio
            * 100.0
    }
}

fn timed(f: impl FnOnce() -> Result<(), zmem_device::IoError>) -> Result<u64> {
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_nanos() as u64)
}

/// One write pass into two fresh devices; the per-page times are appended.
fn write_pass(
    corpus: &Corpus,
    primary: &str,
    fast: &str,
    tf: &mut Vec<u64>,
    tp: &mut Vec<u64>,
) -> Result<(Zram, Zram)> {
    let disksize = (corpus.page_count() * PAGE_SIZE) as u64;
    let engine = EngineKernel::newest();
    let fdev = engine
        .zram()
        .algorithm(primary, Params::default())
        .fast_algorithm(fast)
        .disksize(disksize)
        .build()
        .with_context(|| format!("device with {primary} and the fast algorithm {fast}"))?;
    let pdev = engine
        .zram()
        .algorithm(primary, Params::default())
        .disksize(disksize)
        .build()
        .with_context(|| format!("device with {primary}"))?;
    // Warm up both paths (per-thread streams are created on first use);
    // page 0 is written again in the timed loop.
    let first = corpus.page(0);
    fdev.write_page_fast(0, first).context("warm-up")?;
    pdev.write_page(0, first).context("warm-up")?;
    for (i, p) in corpus.pages().enumerate() {
        let wf = || fdev.write_page_fast(i, p);
        let wp = || pdev.write_page(i, p);
        if i % 2 == 0 {
            tf.push(timed(wf).with_context(|| format!("page {i} with {fast}"))?);
            tp.push(timed(wp).with_context(|| format!("page {i} with {primary}"))?);
        } else {
            tp.push(timed(wp).with_context(|| format!("page {i} with {primary}"))?);
            tf.push(timed(wf).with_context(|| format!("page {i} with {fast}"))?);
        }
    }
    Ok((fdev, pdev))
}

/// Run the comparison on `corpus` with `passes` write passes (at least 1).
pub fn run(corpus: &Corpus, primary: &str, fast: &str, passes: usize) -> Result<FastpathResult> {
    let n = corpus.page_count();
    if n == 0 {
        bail!("corpus {} has no pages", corpus.name);
    }
    let passes = passes.max(1);
    let (mut tf, mut tp) = (
        Vec::with_capacity(n * passes),
        Vec::with_capacity(n * passes),
    );
    let (mut fdev, mut pdev) = write_pass(corpus, primary, fast, &mut tf, &mut tp)?;
    for _ in 1..passes {
        drop((fdev, pdev));
        (fdev, pdev) = write_pass(corpus, primary, fast, &mut tf, &mut tp)?;
    }
    let before = measure(&fdev)?;
    let primary_alone = measure(&pdev)?;
    let t = Instant::now();
    fdev.attr_write(zmem_kernel::attr::IDLE, "all")
        .context("idle all")?;
    let rep = fdev
        .recompress(&RecompressParams::new().idle().from(fast))
        .with_context(|| format!("recompress type=idle from={fast}"))?;
    let recompress: Duration = t.elapsed();
    let after = measure(&fdev)?;
    let kept_fast = fdev.block_state().iter().filter(|s| s.fast).count() as u64;
    let verified = verify(&fdev, corpus)? && verify(&pdev, corpus)?;
    if !verified {
        bail!("a page read back different");
    }
    let (write_fast, write_primary) = (Latency::of(tf), Latency::of(tp));
    Ok(FastpathResult {
        corpus: corpus.name.clone(),
        pages: n,
        passes,
        primary: primary.into(),
        fast: fast.into(),
        latency_ratio: if write_primary.mean_us > 0.0 {
            write_fast.mean_us / write_primary.mean_us
        } else {
            0.0
        },
        write_fast,
        write_primary,
        before,
        after,
        primary_alone,
        candidates: rep.candidates,
        recompressed: rep.recompressed,
        kept_fast,
        recompress_s: recompress.as_secs_f64(),
        verified,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_recompresses_back_and_reads_back() {
        let c = super::super::recomp::heap_corpus(1).unwrap();
        let r = run(&c, "lz4", "lz4m", 2).unwrap();
        assert_eq!(r.passes, 2);
        assert!(r.verified);
        assert_eq!(r.pages, 384);
        assert_eq!(r.candidates, r.recompressed + r.kept_fast, "{r:?}");
        assert_eq!(r.after.orig_data_size, r.primary_alone.orig_data_size);
        assert!(r.after.compr_data_size <= r.before.compr_data_size, "{r:?}");
        assert!(r.write_fast.mean_us > 0.0 && r.write_primary.p99_us >= r.write_primary.p50_us);
    }

    #[test]
    fn unknown_fast_algorithm_is_an_error() {
        let c = super::super::recomp::heap_corpus(1).unwrap();
        let e = run(&c, "lz4", "nope", 1).unwrap_err();
        assert!(format!("{e:#}").contains("nope"), "{e:#}");
    }

    #[test]
    fn latency_quantiles() {
        let l = Latency::of((1..=100).map(|i| i * 1000).collect());
        assert_eq!((l.p50_us, l.p99_us), (50.0, 99.0));
        assert!((l.mean_us - 50.5).abs() < 1e-9);
    }
}
