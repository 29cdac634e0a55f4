//! The complete table of `zmem bench full`: per algorithm (the nine, plus zstd with a
//! trained dictionary) and page-cluster 0..3, the codec figures (ratio,
//! compress/decompress/reclaim MB/s, from `zmem_measure::codecs`) beside the device
//! figures (mm_stat ratio and effective ratio, read MiB/s, IOPS, mean/p99
//! latency, from `zmem_measure::device`), engine and kernel rows side by side; then
//! the weighted score and the "best for" lines.

use serde::Serialize;

use crate::score::{self, BestFor, Metrics, Weights};
use zmem_measure::{codecs, device};

/// One line of the complete table.
#[derive(Debug, Clone, Serialize)]
pub struct FullRow {
    /// `engine` or `kernel`.
    pub target: String,
    /// Kernel name, or `zstd+dict`.
    pub algo: String,
    pub page_cluster: u32,
    /// orig_data_size / compr_data_size (mm_stat).
    pub ratio: Option<f64>,
    /// orig_data_size / mem_used_total: with same-filled pages and allocator overhead.
    pub effective_ratio: Option<f64>,
    /// Codec level, MB/s (10^6 B/s of uncompressed data).
    #[serde(rename = "compress_mbps")]
    pub compress_mb_s: Option<f64>,
    #[serde(rename = "decompress_mbps")]
    pub decompress_mb_s: Option<f64>,
    #[serde(rename = "reclaim_mbps")]
    pub reclaim_mb_s: Option<f64>,
    /// Codec level, per page, µs.
    #[serde(
        rename = "decompress_lat_mean_ns",
        serialize_with = "zmem_measure::opt_us_as_ns"
    )]
    pub decompress_us_mean: Option<f64>,
    #[serde(
        rename = "decompress_lat_p99_ns",
        serialize_with = "zmem_measure::opt_us_as_ns"
    )]
    pub decompress_us_p99: Option<f64>,
    /// Device level.
    #[serde(rename = "write_mibps")]
    pub write_mib_s: Option<f64>,
    #[serde(rename = "read_mibps")]
    pub read_mib_s: Option<f64>,
    pub iops: Option<f64>,
    pub lat_mean_ns: Option<f64>,
    pub lat_p99_ns: Option<f64>,
    pub score: Option<f64>,
}

impl FullRow {
    /// The figures the score uses: read MiB/s, effective ratio (or ratio), mean latency, IOPS.
    pub fn metrics(&self) -> Option<Metrics> {
        Some(Metrics {
            throughput: self.read_mib_s?,
            ratio: self.effective_ratio.or(self.ratio)?,
            latency: self.lat_mean_ns?,
            iops: self.iops?,
        })
    }

    /// `lz4 pc0 (kernel)`.
    pub fn label(&self) -> String {
        format!("{} pc{} ({})", self.algo, self.page_cluster, self.target)
    }
}

/// A row that has no numbers, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Missing {
    pub target: String,
    pub algo: String,
    pub reason: String,
}

/// The complete table with its score and best-for lines.
#[derive(Debug, Clone, Serialize)]
pub struct FullTable {
    /// What the corpus was.
    pub corpus: String,
    pub pages: usize,
    pub weights: Weights,
    pub rows: Vec<FullRow>,
    pub missing: Vec<Missing>,
    /// Why kernel rows are absent, if they are.
    pub kernel_missing: Option<String>,
    pub best: Option<BestFor>,
    /// Notes shown under the table (how the dictionary was trained, …).
    pub notes: Vec<String>,
}

/// Join codec rows and device rows into the complete table. `dict_codec` and
/// `dict_device` are the zstd-with-dictionary runs (labelled `zstd+dict`).
pub fn assemble(
    corpus: &str,
    pages: usize,
    codec_rows: &[codecs::Row],
    device_rows: &[device::Row],
    kernel_missing: Option<String>,
    weights: Weights,
) -> FullTable {
    let mut rows = Vec::new();
    let mut missing = Vec::new();
    let mut order: Vec<String> = Vec::new();
    for d in device_rows {
        if !order.contains(&d.algo) {
            order.push(d.algo.clone());
        }
    }
    for c in codec_rows {
        if !order.contains(&c.algorithm) {
            order.push(c.algorithm.clone());
        }
    }
    for algo in &order {
        let codec = codec_rows
            .iter()
            .find(|c| &c.algorithm == algo && c.status == codecs::Status::Ok);
        if let Some(c) = codec_rows
            .iter()
            .find(|c| &c.algorithm == algo && c.status != codecs::Status::Ok)
        {
            missing.push(Missing {
                target: "codec".into(),
                algo: algo.clone(),
                reason: c
                    .reason
                    .clone()
                    .unwrap_or_else(|| format!("{:?}", c.status).to_lowercase()),
            });
        }
        let devs: Vec<&device::Row> = device_rows.iter().filter(|d| &d.algo == algo).collect();
        let mut pcs: Vec<u32> = devs.iter().filter_map(|d| d.page_cluster).collect();
        pcs.sort_unstable();
        pcs.dedup();
        for d in devs.iter().filter(|d| d.page_cluster.is_none()) {
            missing.push(Missing {
                target: d.target.name().into(),
                algo: algo.clone(),
                reason: d.reason.clone().unwrap_or_default(),
            });
        }
        if pcs.is_empty() {
            // Codec figures only (no device run).
            if let Some(c) = codec {
                rows.push(row_from(algo, "engine", 0, Some(c), None));
            }
            continue;
        }
        for pc in pcs {
            for target in [device::Target::Engine, device::Target::Kernel] {
                if let Some(d) = devs
                    .iter()
                    .find(|d| d.target == target && d.page_cluster == Some(pc))
                {
                    // Codec speeds are the engine's codecs; the kernel's own are not measured.
                    let c = if target == device::Target::Engine {
                        codec
                    } else {
                        None
                    };
                    rows.push(row_from(algo, target.name(), pc, c, Some(d)));
                }
            }
        }
    }
    let mut t = FullTable {
        corpus: corpus.to_string(),
        pages,
        weights,
        rows,
        missing,
        kernel_missing,
        best: None,
        notes: Vec::new(),
    };
    t.rescore(weights);
    t
}

fn row_from(
    algo: &str,
    target: &str,
    pc: u32,
    c: Option<&codecs::Row>,
    d: Option<&device::Row>,
) -> FullRow {
    FullRow {
        target: target.to_string(),
        algo: algo.to_string(),
        page_cluster: pc,
        ratio: d.and_then(|d| d.ratio).or(c.and_then(|c| c.ratio)),
        effective_ratio: d.and_then(|d| d.effective_ratio),
        compress_mb_s: c.and_then(|c| c.compress_mb_s),
        decompress_mb_s: c.and_then(|c| c.decompress_mb_s),
        reclaim_mb_s: c.and_then(|c| c.reclaim_mb_s),
        decompress_us_mean: c.and_then(|c| c.decompress_us_mean),
        decompress_us_p99: c.and_then(|c| c.decompress_us_p99),
        write_mib_s: d.and_then(|d| d.write_mibps),
        read_mib_s: d.and_then(|d| d.read_mibps),
        iops: d.and_then(|d| d.iops),
        lat_mean_ns: d.and_then(|d| d.lat_mean_ns),
        lat_p99_ns: d.and_then(|d| d.lat_p99_ns),
        score: None,
    }
}

impl FullTable {
    /// Recompute scores and best-for lines with `w`.
    pub fn rescore(&mut self, w: Weights) {
        self.weights = w;
        let m: Vec<Option<Metrics>> = self.rows.iter().map(FullRow::metrics).collect();
        let s = score::scores(&m, &w);
        for (r, s) in self.rows.iter_mut().zip(&s) {
            r.score = *s;
        }
        self.best = score::best_for(&m, &s);
    }

    /// Whether kernel rows were measured but none for `algo`: this kernel
    /// does not offer it, so the row only shows what a kernel with it would gain.
    pub fn kernel_lacks(&self, algo: &str) -> bool {
        self.rows.iter().any(|r| r.target == "kernel")
            && !self
                .rows
                .iter()
                .any(|r| r.target == "kernel" && r.algo == algo)
    }

    /// A row's label for the "best for" lines, marked when this kernel lacks it.
    pub fn best_label(&self, r: &FullRow) -> String {
        if self.kernel_lacks(&r.algo) {
            format!("{} (engine only: if your kernel had it)", r.label())
        } else {
            r.label()
        }
    }

    /// The "best for" lines as (goal, row, why).
    pub fn best_lines(&self) -> Vec<(&'static str, &FullRow, String)> {
        let Some(b) = self.best else {
            return Vec::new();
        };
        let r = |i: usize| &self.rows[i];
        vec![
            (
                "throughput",
                r(b.throughput),
                format!(
                    "{:.0} MiB/s random reads",
                    r(b.throughput).read_mib_s.unwrap_or(0.0)
                ),
            ),
            (
                "latency",
                r(b.latency),
                format!(
                    "{:.2} µs mean per request",
                    r(b.latency).lat_mean_ns.unwrap_or(0.0) / 1000.0
                ),
            ),
            (
                "IOPS",
                r(b.iops),
                format!("{:.0} IOPS", r(b.iops).iops.unwrap_or(0.0)),
            ),
            (
                "ratio",
                r(b.ratio),
                format!(
                    "{:.2}:1 effective",
                    r(b.ratio)
                        .effective_ratio
                        .or(r(b.ratio).ratio)
                        .unwrap_or(0.0)
                ),
            ),
            (
                "overall",
                r(b.overall),
                format!(
                    "score {:.3} with weights {}",
                    r(b.overall).score.unwrap_or(0.0),
                    self.weights
                ),
            ),
        ]
    }
}
