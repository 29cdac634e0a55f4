//! `zmem bench recomp ALGO`: what recompressing idle pages with a
//! secondary algorithm buys (docs/recompress.md).
//!
//! 1. A zmem zram device with the primary algorithm (e.g. lz4) and ALGO as
//!    priority 1 stores the corpus; compact; measure.
//! 2. `idle all`, then `recompress type=idle`; compact; measure again.
//! 3. For comparison, a device with ALGO alone as primary stores the same
//!    corpus; compact; measure.
//!
//! The effective ratio is `orig_data_size / mem_used_total` (what the pages
//! would take uncompressed over the allocator pages they do take).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use zmem_codec::{Params, PAGE_SIZE};
use zmem_corpus::Corpus;
use zmem_device::BlockDevice;
use zmem_kernel::MmStat;
use zmem_zram::{RecompressParams, Zram};

use super::BenchMode;
use crate::engine::EngineKernel;

/// Recompression: the corpus written with the primary, all marked idle and recompressed
/// with ALGO; ratio and memory before and after, against ALGO alone
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The recompression algorithm
    #[arg(value_name = "ALGO")]
    pub with: String,
    /// Corpus files of raw 4 KiB pages; without any, a heap-like corpus
    pub corpus: Vec<PathBuf>,
    /// The primary algorithm the corpus is written with
    #[arg(long, value_name = "ALGO", default_value = zmem_codec::backend::lz4::INFO.name)]
    pub primary: String,
}

impl BenchMode for Args {
    type Output = Vec<RecompResult>;
    fn run(&self) -> Result<Self::Output> {
        super::per_corpus(&self.corpus, || heap_corpus(8), |c| {
            run(c, &self.primary, &self.with)
        })
    }
}

/// The numbers of one `--recomp` run.
#[derive(Debug, Clone, Serialize)]
pub struct RecompResult {
    pub corpus: String,
    pub pages: usize,
    pub primary: String,
    pub secondary: String,
    /// Primary only, after writing (and compaction).
    pub before: Measure,
    /// After `idle all` + `recompress type=idle` + compaction.
    pub after: Measure,
    /// The secondary algorithm alone as primary.
    pub alone: Measure,
    pub candidates: u64,
    pub recompressed: u64,
    pub incompressible: u64,
    /// Time to write the corpus with the primary.
    pub write_primary_s: f64,
    /// Time to write the corpus with the secondary as primary.
    pub write_alone_s: f64,
    /// Time of `idle all`.
    pub idle_s: f64,
    /// Time of the recompress pass.
    pub recompress_s: f64,
    /// Whether every page read back identical after recompression.
    pub verified: bool,
}

/// mm_stat figures of one state.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Measure {
    pub orig_data_size: u64,
    pub compr_data_size: u64,
    pub mem_used_total: u64,
    pub huge_pages: u64,
    /// orig_data_size / mem_used_total.
    pub effective_ratio: f64,
}

impl Measure {
    pub fn of(m: &MmStat) -> Self {
        Measure {
            orig_data_size: m.orig_data_size,
            compr_data_size: m.compr_data_size,
            mem_used_total: m.mem_used_total,
            huge_pages: m.huge_pages,
            effective_ratio: if m.mem_used_total == 0 {
                0.0
            } else {
                m.orig_data_size as f64 / m.mem_used_total as f64
            },
        }
    }
}

impl RecompResult {
    /// How far the recompressed device's effective ratio is below ALGO alone, in percent.
    pub fn gap_percent(&self) -> f64 {
        if self.alone.effective_ratio == 0.0 {
            return 0.0;
        }
        (self.alone.effective_ratio - self.after.effective_ratio) / self.alone.effective_ratio
            * 100.0
    }
}

/// Write every page of `corpus` at its index; the time it took.
pub(crate) fn write_corpus(dev: &Zram, corpus: &Corpus) -> Result<Duration> {
    let t = Instant::now();
    for (i, p) in corpus.pages().enumerate() {
        dev.write_page(i, p)
            .with_context(|| format!("writing page {i}"))?;
    }
    Ok(t.elapsed())
}

/// Compact, then take the mm_stat figures.
pub(crate) fn measure(dev: &Zram) -> Result<Measure> {
    dev.attr_write(zmem_kernel::attr::COMPACT, "1")
        .context(zmem_kernel::attr::COMPACT)?;
    Ok(Measure::of(&dev.mm_stat()))
}

/// Whether every page of the device reads back as `corpus` has it.
pub(crate) fn verify(dev: &Zram, corpus: &Corpus) -> Result<bool> {
    let mut buf = vec![0u8; PAGE_SIZE];
    let mut ok = true;
    for (i, p) in corpus.pages().enumerate() {
        dev.read_page(i, &mut buf)
            .with_context(|| format!("reading page {i}"))?;
        ok &= buf == p;
    }
    Ok(ok)
}

/// Run the comparison on `corpus`.
pub fn run(corpus: &Corpus, primary: &str, secondary: &str) -> Result<RecompResult> {
    let n = corpus.page_count();
    if n == 0 {
        bail!("corpus {} has no pages", corpus.name);
    }
    let disksize = (n * PAGE_SIZE) as u64;
    let engine = EngineKernel::newest();
    let dev = engine
        .zram()
        .algorithm(primary, Params::default())
        .secondary(1, secondary, Params::default())
        .disksize(disksize)
        .build()
        .with_context(|| format!("device with {primary} + {secondary} (priority 1)"))?;
    let write_primary = write_corpus(&dev, corpus)?;
    let before = measure(&dev)?;
    let t = Instant::now();
    dev.attr_write(zmem_kernel::attr::IDLE, "all")
        .context("idle all")?;
    let idle = t.elapsed();
    let t = Instant::now();
    let rep = dev
        .recompress(&RecompressParams::new().idle())
        .context("recompress type=idle")?;
    let recompress = t.elapsed();
    let after = measure(&dev)?;
    let verified = verify(&dev, corpus)?;
    if !verified {
        bail!("a page read back different after recompression");
    }
    drop(dev);

    let alone_dev = engine
        .zram()
        .algorithm(secondary, Params::default())
        .disksize(disksize)
        .build()
        .with_context(|| format!("device with {secondary} as primary"))?;
    let write_alone = write_corpus(&alone_dev, corpus)?;
    let alone = measure(&alone_dev)?;
    Ok(RecompResult {
        corpus: corpus.name.clone(),
        pages: n,
        primary: primary.into(),
        secondary: secondary.into(),
        before,
        after,
        alone,
        candidates: rep.candidates,
        recompressed: rep.recompressed,
        incompressible: rep.incompressible,
        write_primary_s: write_primary.as_secs_f64(),
        write_alone_s: write_alone.as_secs_f64(),
        idle_s: idle.as_secs_f64(),
        recompress_s: recompress.as_secs_f64(),
        verified,
    })
}

/// A heap-like corpus: the `heap` sections of the default corpus generator
/// for `sections` seeds (384 pages each).
pub fn heap_corpus(sections: usize) -> Result<Corpus> {
    let mut data = Vec::new();
    for seed in 0..sections as u64 {
        for s in zmem_corpus::default_sections(zmem_corpus::DEFAULT_SEED.wrapping_add(seed)) {
            if s.name == "heap" {
                data.extend_from_slice(&s.pages);
            }
        }
    }
    Corpus::from_bytes(
        "heap",
        format!("built-in: {} heap-like pages", data.len() / PAGE_SIZE),
        data,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recompression_improves_and_reads_back() {
        let c = heap_corpus(1).unwrap();
        let r = run(&c, "lz4", "zstd").unwrap();
        assert!(r.verified);
        assert_eq!(r.pages, 384);
        assert!(r.recompressed > 0, "{r:?}");
        assert!(r.after.compr_data_size < r.before.compr_data_size);
        assert!(r.after.mem_used_total <= r.before.mem_used_total);
        assert_eq!(r.after.orig_data_size, r.before.orig_data_size);
    }

    #[test]
    fn unknown_algorithm_is_an_error() {
        let c = heap_corpus(1).unwrap();
        let e = run(&c, "lz4", "nope").unwrap_err();
        assert!(format!("{e:#}").contains("nope"), "{e:#}");
    }
}
