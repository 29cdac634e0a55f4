//! `zmem bench writeback`: what writing idle (or huge) pages back to a
//! backing file frees in RAM (docs/writeback.md).
//!
//! 1. A zmem zram device with a backing file stores the corpus; compact;
//!    measure (mm_stat).
//! 2. `idle all`, then `writeback type=<wb-type>`; compact; measure again.
//! 3. Every page is read back and compared (from RAM or the backing file);
//!    bd_stat is taken after the reads.
//!
//! The backing file is a temporary file (removed at the end) unless the
//! caller names one: an existing file or block device is used as it is and
//! kept; a path that does not exist is created with the corpus size plus one
//! page (block 0 is never used) and removed at the end. An existing file or
//! block device is checked and claimed first (`zmem_host::backing`: never
//! mounted, swapped on or holding data without `--force`).
//!
//! 4. The kernel rows (`writeback_kernel`, when asked for): the same pages,
//!    step by step, through a kernel zram device whose backing_dev is that
//!    block device, beside an engine device; SKIP with the reason where the
//!    kernel has no writeback or no block device was named. A device that
//!    held nothing before has the pages writeback can have used zeroed again.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use zmem_codec::{Params, PAGE_SIZE};
use zmem_corpus::Corpus;
use zmem_device::BlockDevice;
use zmem_host::backing::{self as backing_check, Claimed};
use zmem_kernel::{BdStat, KernelModel};
use zmem_zram::WritebackParams;

use super::recomp::{measure, verify, write_corpus, Measure};
use super::writeback_kernel::{compare, engine_batch_size, KernelOptions, TempBacking};
pub use super::writeback_kernel::{relative, KernelRows, State as KernelState, StepRow, COMPARED};
use super::BenchMode;
use crate::engine::EngineKernel;

/// Writeback: idle pages written back to a backing file; memory and ratio before and
/// after, bd_stat, every page read back and compared; kernel rows where the running
/// kernel's zram has backing_dev (with --backing-dev /dev/X)
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Corpus files of raw 4 KiB pages; without any, a synthetic corpus
    pub corpus: Vec<PathBuf>,
    /// The algorithm the corpus is written with
    #[arg(long, value_name = "ALGO", default_value = zmem_codec::backend::lz4::INFO.name)]
    pub algo: String,
    /// The pages written back (idle, huge, huge_idle, incompressible, all)
    #[arg(long, value_name = "TYPE", default_value = zmem_kernel::page_type::IDLE)]
    pub wb_type: String,
    /// Write the compressed objects (compressed_writeback=1)
    #[arg(long)]
    pub wb_compressed: bool,
    /// Backing file or block device (an existing one is used as is and kept; a new file is
    /// created and removed) [default: a temporary file]. A block device is also the kernel
    /// rows' backing_dev; it is refused while mounted or swapped on, and when it holds a
    /// filesystem, swap area or data (unless --force)
    #[arg(long, value_name = "FILE|/dev/X")]
    pub backing_dev: Option<PathBuf>,
    /// Use a --backing-dev block device that holds a signature or data (overwritten)
    #[arg(long)]
    pub force: bool,
    /// writeback_batch_size on the engine's devices and the kernel's, where their kernel has
    /// it (6.19+; without it a pass writes one page at a time, and a note says so)
    #[arg(long, value_name = "N")]
    pub wb_batch_size: Option<u32>,
    /// Skip the kernel rows
    #[arg(long)]
    pub no_kernel: bool,
    /// The engine devices behave as this kernel version's zram (6.1 to 7.3) [default: the
    /// running kernel's when kernel rows run (root, zram, --backing-dev /dev/X), else the
    /// newest modeled]
    #[arg(long, value_name = "VERSION", value_parser = KernelModel::parse)]
    pub kernel: Option<KernelModel>,
}

impl BenchMode for Args {
    type Output = Vec<WritebackResult>;
    fn run(&self) -> Result<Self::Output> {
        let opts = Options {
            algo: self.algo.clone(),
            wb_type: self.wb_type.clone(),
            compressed: self.wb_compressed,
            backing_dev: self.backing_dev.clone(),
            kernel: !self.no_kernel,
            force: self.force,
            batch_size: self.wb_batch_size,
            kernel_model: self.kernel,
            ..Default::default()
        };
        let default = || Ok(zmem_corpus::default_corpus());
        super::per_corpus(&self.corpus, default, |c| run(c, &opts))
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The device's algorithm (comp_algorithm).
    pub algo: String,
    /// `writeback` mode: idle, huge, huge_idle, incompressible, or all (every page).
    pub wb_type: String,
    /// `compressed_writeback`.
    pub compressed: bool,
    /// Backing file; a temporary one when None.
    pub backing_dev: Option<PathBuf>,
    /// Run the kernel rows.
    pub kernel: bool,
    /// Use a block device that holds a signature or data.
    pub force: bool,
    /// `writeback_batch_size` (engine, and the kernel where it has it).
    pub batch_size: Option<u32>,
    /// The idle age of the kernel rows' `idle AGE` step, seconds.
    pub age_s: u64,
    /// The kernel version whose zram the engine devices behave as; `None`:
    /// the running kernel's when the kernel rows can run (root, kernel zram, a
    /// block device as `backing_dev`), else the newest ([`EngineKernel::pick`]).
    pub kernel_model: Option<KernelModel>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            algo: zmem_codec::backend::lz4::INFO.name.into(),
            wb_type: zmem_kernel::page_type::IDLE.into(),
            compressed: false,
            backing_dev: None,
            kernel: false,
            force: false,
            batch_size: None,
            age_s: 2,
            kernel_model: None,
        }
    }
}

/// The numbers of one `--writeback` run.
#[derive(Debug, Clone, Serialize)]
pub struct WritebackResult {
    pub corpus: String,
    pub pages: usize,
    pub algo: String,
    pub wb_type: String,
    pub writeback_compressed: bool,
    pub backing_dev: String,
    /// The kernel version whose zram the engine devices behave as, and why that one.
    pub engine_kernel: String,
    pub engine_kernel_why: String,
    /// After writing (and compaction).
    pub before: Measure,
    /// After `idle all` + `writeback` + compaction.
    pub after: Measure,
    /// Slots the scan selected.
    pub candidates: u64,
    /// Pages written back (slots now WB).
    #[serde(rename = "written_back_pages")]
    pub written: u64,
    /// bd_stat after the verification reads (4 KiB units).
    pub bd_count: u64,
    pub bd_reads: u64,
    pub bd_writes: u64,
    pub write_s: f64,
    pub idle_s: f64,
    pub writeback_s: f64,
    /// Reading every page back (from RAM or the backing file) and comparing.
    pub verify_s: f64,
    pub verified: bool,
    /// The block device check (empty for a file).
    pub backing_check: String,
    /// What was not set as asked (a kernel without `writeback_batch_size`).
    pub notes: Vec<String>,
    /// The kernel rows (SKIP with the reason when not run).
    pub kernel: KernelRows,
}

/// Removes a backing file this run created.
struct Cleanup(Option<PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(&p);
            if let Some(d) = p.parent().filter(|d| {
                d.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("zmem-bench-wb-"))
            }) {
                let _ = std::fs::remove_dir(d);
            }
        }
    }
}

fn create_backing(path: &Path, pages: usize) -> Result<()> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("creating backing file {}", path.display()))?;
    f.set_len((pages as u64 + 1) * PAGE_SIZE as u64)
        .with_context(|| format!("sizing backing file {}", path.display()))?;
    Ok(())
}

fn params(wb_type: &str) -> Result<WritebackParams> {
    let p = WritebackParams::new();
    Ok(match wb_type {
        zmem_kernel::page_type::IDLE => p.idle(),
        "huge" => p.huge(),
        "huge_idle" => p.huge_idle(),
        "incompressible" => p.incompressible(),
        "all" => p.all(),
        t => bail!("--wb-type {t:?}: use idle, huge, huge_idle, incompressible or all"),
    })
}

/// Run the writeback measurement on `corpus`, then the kernel rows if asked for.
pub fn run(corpus: &Corpus, opts: &Options) -> Result<WritebackResult> {
    let n = corpus.page_count();
    if n == 0 {
        bail!("corpus {} has no pages", corpus.name);
    }
    let wb = params(&opts.wb_type)?;
    let mut claim: Option<Claimed> = match &opts.backing_dev {
        Some(p) if p.symlink_metadata().is_ok() => {
            Some(backing_check::claim(p, opts.force).map_err(anyhow::Error::msg)?)
        }
        _ => None,
    };
    // The engine behaves as the running kernel's zram when the kernel rows can run here
    // (root, kernel zram, a block device): both sides are then the same kernel.
    let beside = opts.kernel
        && claim.as_ref().is_some_and(|c| c.block)
        && super::kernel::unavailable_reason().is_none();
    let engine_kernel = EngineKernel::choose(opts.kernel_model, beside);
    let (path, cleanup) = match &claim {
        Some(c) => (c.path.clone(), Cleanup(None)),
        None => backing_file(opts, n)?,
    };
    let mut r = engine(corpus, opts, &engine_kernel, &wb, &path)?;
    drop(cleanup);
    r.backing_check = claim.as_ref().map(Claimed::describe).unwrap_or_default();
    if let Some(c) = claim.as_mut() {
        // The engine's writes go through the page cache: on the disk before
        // a kernel device writes to it directly.
        c.flush().context("flushing the backing device")?;
    }
    r.kernel = if opts.kernel {
        kernel_rows(corpus, opts, &engine_kernel, claim.as_mut())?
    } else {
        KernelRows::skip("not asked for (--no-kernel)")
    };
    if let Some(c) = claim.as_mut() {
        c.zero_pages(n as u64 + 1)
            .with_context(|| format!("zeroing what writeback wrote to {}", c.path.display()))?;
    }
    Ok(r)
}

/// The backing file of the engine measurement and what removes it.
fn backing_file(opts: &Options, n: usize) -> Result<(PathBuf, Cleanup)> {
    Ok(match &opts.backing_dev {
        Some(p) if p.exists() => (p.clone(), Cleanup(None)),
        Some(p) => {
            create_backing(p, n)?;
            (p.clone(), Cleanup(Some(p.clone())))
        }
        None => {
            let dir = std::env::temp_dir().join(format!("zmem-bench-wb-{}", std::process::id()));
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            let p = dir.join("backing");
            let _ = std::fs::remove_file(&p);
            let c = Cleanup(Some(p.clone()));
            create_backing(&p, n)?;
            (p, c)
        }
    })
}

/// The kernel rows: the claimed block device handed to a kernel device (the
/// claim released while it has it), the engine's backing a temporary file.
fn kernel_rows(
    corpus: &Corpus,
    opts: &Options,
    engine: &EngineKernel,
    claim: Option<&mut Claimed>,
) -> Result<KernelRows> {
    let tmp = TempBacking::new(corpus.page_count()).context("engine backing file")?;
    let kopts = KernelOptions {
        algo: opts.algo.clone(),
        compressed: opts.compressed,
        batch_size: opts.batch_size,
        age_s: opts.age_s,
        engine: engine.clone(),
    };
    Ok(match claim.filter(|c| c.block) {
        Some(c) => {
            c.release();
            let rows = compare(corpus, Some(&c.path), &tmp.0, &kopts);
            c.reclaim().map_err(anyhow::Error::msg)?;
            rows
        }
        None => compare(corpus, None, &tmp.0, &kopts),
    })
}

/// The engine measurement (steps 1–3 of the module).
fn engine(
    corpus: &Corpus,
    opts: &Options,
    engine: &EngineKernel,
    wb: &WritebackParams,
    path: &Path,
) -> Result<WritebackResult> {
    let n = corpus.page_count();
    let dev = engine
        .zram()
        .algorithm(opts.algo.as_str(), Params::default())
        .backing_dev(path)
        .compressed_writeback(opts.compressed)
        .disksize((n * PAGE_SIZE) as u64)
        .build()
        .with_context(|| {
            format!(
                "device with {} and backing_dev {}",
                opts.algo,
                path.display()
            )
        })?;
    let notes = engine_batch_size(&dev, opts.batch_size)
        .map_err(anyhow::Error::msg)?
        .into_iter()
        .collect();
    let write = write_corpus(&dev, corpus)?;
    let before = measure(&dev)?;
    let t = Instant::now();
    dev.attr_write(zmem_kernel::attr::IDLE, "all")
        .context("idle all")?;
    let idle = t.elapsed();
    let t = Instant::now();
    let rep = dev
        .writeback(wb)
        .with_context(|| format!("writeback type={}", opts.wb_type))?;
    let writeback = t.elapsed();
    let after = measure(&dev)?;
    let t = Instant::now();
    let verified = verify(&dev, corpus)?;
    let verify = t.elapsed();
    if !verified {
        bail!("a page read back different after writeback");
    }
    let bd: BdStat = dev.bd_stat();
    Ok(WritebackResult {
        corpus: corpus.name.clone(),
        pages: n,
        algo: opts.algo.clone(),
        wb_type: opts.wb_type.clone(),
        writeback_compressed: opts.compressed,
        backing_dev: dev
            .backing_dev()
            .map(|b| b.path().to_string())
            .unwrap_or_default(),
        engine_kernel: engine.model.to_string(),
        engine_kernel_why: engine.why.clone(),
        before,
        after,
        candidates: rep.candidates,
        written: rep.written,
        bd_count: bd.bd_count,
        bd_reads: bd.bd_reads,
        bd_writes: bd.bd_writes,
        write_s: write.as_secs_f64(),
        idle_s: idle.as_secs_f64(),
        writeback_s: writeback.as_secs_f64(),
        verify_s: verify.as_secs_f64(),
        verified,
        backing_check: String::new(),
        notes,
        kernel: KernelRows::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writeback_frees_ram_and_reads_back() {
        let c = zmem_corpus::default_corpus();
        for compressed in [false, true] {
            let r = run(
                &c,
                &Options {
                    compressed,
                    ..Default::default()
                },
            )
            .unwrap();
            assert!(r.verified);
            assert!(
                r.written > 0 && r.written == r.bd_writes && r.bd_count == r.written,
                "{r:?}"
            );
            assert_eq!(r.bd_reads, r.written, "each written-back page read once");
            assert_eq!(r.after.orig_data_size, r.before.orig_data_size);
            assert!(r.after.mem_used_total < r.before.mem_used_total);
            assert_eq!(
                r.after.compr_data_size, 0,
                "idle all + type=idle: every object"
            );
            assert!(
                !Path::new(&r.backing_dev).exists(),
                "temporary backing file removed"
            );
        }
    }

    /// `--wb-batch-size` on an engine behaving as a kernel without the attribute (6.1, as
    /// the VM lab's `--wb-batch-size 4` run on Debian's 6.1): the pass runs page by page and
    /// a note names what is missing; 7.3's engine takes it.
    #[test]
    fn a_batch_size_the_model_lacks_is_a_note() {
        let c = zmem_corpus::default_corpus();
        let run_as = |v: &str| {
            run(
                &c,
                &Options {
                    batch_size: Some(4),
                    kernel_model: KernelModel::parse(v).ok(),
                    ..Default::default()
                },
            )
            .unwrap()
        };
        let (old, new) = (run_as("6.1"), run_as("7.3"));
        assert_eq!(old.engine_kernel, "6.1");
        assert!(old.verified && old.written > 0, "{old:?}");
        assert_eq!(old.notes.len(), 1, "{:?}", old.notes);
        assert!(old.notes[0].contains("writeback_batch_size"), "{:?}", old.notes);
        assert!(new.notes.is_empty(), "{:?}", new.notes);
    }

    #[test]
    fn bad_type_is_an_error() {
        let c = zmem_corpus::default_corpus();
        let e = run(
            &c,
            &Options {
                wb_type: "nope".into(),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("nope"), "{e:#}");
    }
}
