//! The complete table of `zmem bench`: per algorithm (the nine, plus zstd with a
//! trained dictionary) and page-cluster 0..3, the codec figures (ratio,
//! compress/decompress/reclaim MB/s, from `bench::codecs`) beside the device
//! figures (mm_stat ratio and effective ratio, read MiB/s, IOPS, mean/p99
//! latency, from `bench::device`), engine and kernel rows side by side; then
//! the weighted score and the "best for" lines.

use std::fmt::Write as _;

use serde::Serialize;

use crate::bench::{codecs, device};
use crate::score::{self, BestFor, Metrics, Weights};

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
        serialize_with = "crate::fields::opt_us_as_ns"
    )]
    pub decompress_us_mean: Option<f64>,
    #[serde(
        rename = "decompress_lat_p99_ns",
        serialize_with = "crate::fields::opt_us_as_ns"
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

    /// Aligned text for people.
    pub fn render_text(&self) -> String {
        let head = [
            "target",
            "algo",
            "pc",
            "ratio",
            "eff",
            "comp MB/s",
            "decomp MB/s",
            "reclaim MB/s",
            "read MiB/s",
            "IOPS",
            "mean µs",
            "p99 µs",
            "score",
        ];
        let mut cells: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
        for r in &self.rows {
            cells.push(vec![
                r.target.clone(),
                r.algo.clone(),
                r.page_cluster.to_string(),
                f(r.ratio, 2),
                f(r.effective_ratio, 2),
                f(r.compress_mb_s, 0),
                f(r.decompress_mb_s, 0),
                f(r.reclaim_mb_s, 0),
                f(r.read_mib_s, 0),
                f(r.iops, 0),
                f(r.lat_mean_ns.map(|n| n / 1000.0), 2),
                f(r.lat_p99_ns.map(|n| n / 1000.0), 2),
                f(r.score, 3),
            ]);
        }
        let widths: Vec<usize> = (0..head.len())
            .map(|i| {
                cells
                    .iter()
                    .map(|c| c[i].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        let _ = writeln!(out, "corpus: {} ({} pages)", self.corpus, self.pages);
        let mut prev_algo = String::new();
        for (n, row) in cells.iter().enumerate() {
            if n > 1 && row[1] != prev_algo {
                out.push('\n');
            }
            prev_algo = row[1].clone();
            let line: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let pad = widths[i] - c.chars().count();
                    if i < 2 {
                        format!("{c}{}", " ".repeat(pad))
                    } else {
                        format!("{}{c}", " ".repeat(pad))
                    }
                })
                .collect();
            let _ = writeln!(out, "{}", line.join("  ").trim_end());
        }
        if let Some(k) = &self.kernel_missing {
            let _ = writeln!(out, "\nno kernel rows: {k}");
        }
        for m in &self.missing {
            let _ = writeln!(out, "{} {}: unavailable: {}", m.algo, m.target, m.reason);
        }
        for n in &self.notes {
            let _ = writeln!(out, "note: {n}");
        }
        let _ = writeln!(
            out,
            "\nscore = {}·(best mean latency / mean latency) + {}·(effective ratio / best) + {}·(read MiB/s / best)",
            self.weights.latency, self.weights.ratio, self.weights.throughput
        );
        let best = self.best_lines();
        if best.is_empty() {
            let _ = writeln!(
                out,
                "best for: nothing could be scored (no row has device figures)"
            );
        }
        for (goal, r, why) in best {
            let _ = writeln!(out, "best for {goal:<10} {:<24} {why}", self.best_label(r));
        }
        out
    }

    /// CSV with a header row (opens in a spreadsheet): one line per row.
    pub fn render_csv(&self) -> String {
        let mut out = String::from(
            "target,algo,page_cluster,ratio,effective_ratio,compress_mbps,decompress_mbps,reclaim_mbps,decompress_lat_mean_ns,decompress_lat_p99_ns,write_mibps,read_mibps,iops,lat_mean_ns,lat_p99_ns,score\n",
        );
        for r in &self.rows {
            let v = [
                r.ratio,
                r.effective_ratio,
                r.compress_mb_s,
                r.decompress_mb_s,
                r.reclaim_mb_s,
                r.decompress_us_mean.map(|u| u * 1000.0),
                r.decompress_us_p99.map(|u| u * 1000.0),
                r.write_mib_s,
                r.read_mib_s,
                r.iops,
                r.lat_mean_ns,
                r.lat_p99_ns,
                r.score,
            ];
            let nums: Vec<String> = v
                .iter()
                .map(|x| x.map(|x| format!("{x:.4}")).unwrap_or_default())
                .collect();
            let _ = writeln!(
                out,
                "{},{},{},{}",
                r.target,
                r.algo,
                r.page_cluster,
                nums.join(",")
            );
        }
        out
    }

    /// JSON object (rows, missing, best-for, weights).
    pub fn to_json_value(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("table serialises");
        let best: Vec<serde_json::Value> = self
            .best_lines()
            .into_iter()
            .map(|(g, r, why)| serde_json::json!({"goal": g, "target": r.target, "algo": r.algo, "page_cluster": r.page_cluster, "why": why}))
            .collect();
        v["best_for"] = serde_json::Value::Array(best);
        v
    }
}

fn f(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        _ => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(
        target: device::Target,
        algo: &str,
        pc: u32,
        read: f64,
        ratio: f64,
        lat: f64,
    ) -> device::Row {
        device::Row {
            target,
            algo: algo.into(),
            corpus: "c".into(),
            page_cluster: Some(pc),
            threads: 1,
            reason: None,
            orig_data_size: Some(1000),
            compr_data_size: Some(400),
            mem_used_total: Some(500),
            same_pages: Some(0),
            huge_pages: Some(0),
            ratio: Some(ratio * 1.1),
            effective_ratio: Some(ratio),
            write_mibps: Some(100.0),
            read_mibps: Some(read),
            iops: Some(read * 256.0 / (1 << pc) as f64),
            lat_mean_ns: Some(lat),
            lat_p99_ns: Some(lat * 3.0),
            iops_per_cpu_s: None,
        }
    }

    fn codec(algo: &str, ok: bool) -> codecs::Row {
        codecs::Row {
            algorithm: algo.into(),
            corpus: "c".into(),
            status: if ok {
                codecs::Status::Ok
            } else {
                codecs::Status::Unavailable
            },
            reason: (!ok).then(|| "not built".to_string()),
            pages: 10,
            same_filled_pages: 0,
            verified_pages: 10,
            orig_bytes: 40960,
            compressed_bytes: 20480,
            ratio: Some(2.0),
            compress_mb_s: ok.then_some(500.0),
            decompress_mb_s: ok.then_some(2000.0),
            reclaim_mb_s: ok.then_some(250.0),
            compress_us_mean: Some(8.0),
            compress_us_p99: Some(12.0),
            decompress_us_mean: Some(2.0),
            decompress_us_p99: Some(3.0),
        }
    }

    #[test]
    fn assembles_side_by_side_scores_and_renders() {
        use device::Target::*;
        let d = vec![
            dev(Engine, "lz4", 0, 4000.0, 2.5, 1000.0),
            dev(Engine, "lz4", 1, 5000.0, 2.5, 1800.0),
            dev(Kernel, "lz4", 0, 3000.0, 2.4, 1300.0),
            dev(Kernel, "lz4", 1, 3500.0, 2.4, 2300.0),
            dev(Engine, "zstd", 0, 1500.0, 3.5, 2800.0),
            dev(Engine, "zstd", 1, 1600.0, 3.5, 5000.0),
        ];
        let c = vec![codec("lz4", true), codec("zstd", true), codec("842", false)];
        let t = assemble("c", 10, &c, &d, None, Weights::default());
        let labels: Vec<String> = t.rows.iter().map(|r| r.label()).collect();
        assert_eq!(
            labels,
            [
                "lz4 pc0 (engine)",
                "lz4 pc0 (kernel)",
                "lz4 pc1 (engine)",
                "lz4 pc1 (kernel)",
                "zstd pc0 (engine)",
                "zstd pc1 (engine)"
            ]
        );
        assert_eq!(t.rows[0].compress_mb_s, Some(500.0));
        assert_eq!(
            t.rows[1].compress_mb_s, None,
            "kernel rows carry no engine codec speeds"
        );
        assert_eq!(t.missing.len(), 1);
        let b = t.best.unwrap();
        assert_eq!(t.rows[b.throughput].label(), "lz4 pc1 (engine)");
        assert_eq!(t.rows[b.latency].label(), "lz4 pc0 (engine)");
        assert_eq!(t.rows[b.ratio].algo, "zstd");
        assert_eq!(t.rows[b.overall].label(), "lz4 pc0 (engine)");
        let text = t.render_text();
        for goal in [
            "best for throughput",
            "best for latency",
            "best for IOPS",
            "best for ratio",
            "best for overall",
        ] {
            assert!(text.contains(goal), "{text}");
        }
        assert!(text.contains("842 codec: unavailable: not built"));
        let csv = t.render_csv();
        assert_eq!(csv.lines().count(), 7);
        assert!(csv.lines().all(|l| l.split(',').count() == 16), "{csv}");
        let j = t.to_json_value();
        assert_eq!(j["best_for"].as_array().unwrap().len(), 5);
        // Weighting ratio only makes zstd the overall best.
        let mut t2 = t.clone();
        t2.rescore("ratio=1".parse().unwrap());
        assert_eq!(t2.rows[t2.best.unwrap().overall].algo, "zstd");
    }
}
