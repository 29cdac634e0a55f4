//! What a run of `zmem bench device` (or `floor`) is given ([`Options`]) and what
//! each side of it, the engine device or the hot-added kernel zram device,
//! yields per algorithm and page-cluster ([`Target`], [`Row`]). Shared by
//! [`super::device`] and [`super::kernel`], and depends on neither.

use serde::Serialize;
use zmem_codec::{Params, PAGE_SIZE};
use zmem_kernel::{KernelModel, MmStat};

use zmem_zram::Zram;

use super::random_read::ReadResult;
use crate::engine::EngineKernel;

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
    /// Also measure the codec floor (`codec` rows, [`super::floor`]).
    pub floor: bool,
    /// The kernel version whose zram the engine rows behave as; `None`: the
    /// running kernel's when kernel rows are measured (so both sides are the
    /// same version), else the newest zmem models ([`EngineKernel::pick`]).
    pub kernel_model: Option<KernelModel>,
    /// The page size of the kernel the engine models (4096, 16384 or 65536;
    /// `None`: 4096): the corpus is cut into such pages, one per slot, and
    /// kernel rows are measured only when the running kernel has that page.
    pub page_size: Option<usize>,
}

impl Options {
    /// The kernel the engine devices behave as: `kernel_model` (set by
    /// [`super::device::run`]), else the newest.
    pub(crate) fn engine(&self) -> EngineKernel {
        EngineKernel::choose(self.kernel_model, false)
    }
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
            floor: false,
            kernel_model: None,
            page_size: None,
        }
    }
}

/// Engine or kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    Engine,
    Kernel,
    /// The codec alone, no device: the floor under any engine (`--floor`,
    /// [`super::floor`]).
    Codec,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Engine => "engine",
            Target::Kernel => "kernel",
            Target::Codec => "codec",
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
    /// The kernel version of the row's zram: the version an engine row
    /// behaves as, the running kernel's for a kernel row; none for codec rows.
    pub kernel: Option<String>,
    /// The page size of the row's zram (bytes per slot: 4096, or 16384 and
    /// 65536 under `--page-size`); none for codec rows.
    pub page_size: Option<usize>,
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
    #[serde(rename = "reads_per_cpu_s")]
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
            kernel: None,
            page_size: None,
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
            kernel: None,
            page_size: None,
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

/// The `huge_class_size` an engine device with `algo` uses: objects this
/// large or larger are stored as whole pages.
pub(crate) fn huge_class_size(
    engine: &EngineKernel,
    algo: &str,
    params: &Params,
) -> Result<usize, String> {
    let page = params.page();
    let kernel = engine
        .model
        .with_page_size(page)
        .map_err(|e| e.to_string())?;
    let dev = Zram::for_kernel(kernel)
        .algorithm(algo, params.clone())
        .disksize(page as u64)
        .build()
        .map_err(|e| e.message)?;
    Ok(dev.huge_class_size())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
