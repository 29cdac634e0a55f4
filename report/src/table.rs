//! The complete table for people and programs: aligned text with the
//! "best for" lines and the notes, CSV, and JSON with the best-for lines.

use std::fmt::Write as _;

use zmem_verdict::{FullRow, FullTable};

/// The complete table's column heads, for the text and the HTML report.
pub(crate) const HEAD: [&str; 13] = [
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

/// One row's cells under [`HEAD`], as the text and the HTML report show them.
pub(crate) fn row_cells(r: &FullRow) -> Vec<String> {
    vec![
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
    ]
}

/// Aligned text for people.
pub fn table_text(t: &FullTable) -> String {
    let head = HEAD;
    let mut cells: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    cells.extend(t.rows.iter().map(row_cells));
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
    let _ = writeln!(out, "corpus: {} ({} pages)", t.corpus, t.pages);
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
    if let Some(k) = &t.kernel_missing {
        let _ = writeln!(out, "\nno kernel rows: {k}");
    }
    for m in &t.missing {
        let _ = writeln!(out, "{} {}: unavailable: {}", m.algo, m.target, m.reason);
    }
    for n in &t.notes {
        let _ = writeln!(out, "note: {n}");
    }
    let _ = writeln!(
        out,
        "\nscore = {}·(best mean latency / mean latency) + {}·(effective ratio / best) + {}·(read MiB/s / best)",
        t.weights.latency, t.weights.ratio, t.weights.throughput
    );
    let best = t.best_lines();
    if best.is_empty() {
        let _ = writeln!(
            out,
            "best for: nothing could be scored (no row has device figures)"
        );
    }
    for (goal, r, why) in best {
        let _ = writeln!(out, "best for {goal:<10} {:<24} {why}", t.best_label(r));
    }
    out
}

/// CSV with a header row (opens in a spreadsheet): one line per row.
pub fn table_csv(t: &FullTable) -> String {
    let mut out = String::from(
        "target,algo,page_cluster,ratio,effective_ratio,compress_mbps,decompress_mbps,reclaim_mbps,decompress_lat_mean_ns,decompress_lat_p99_ns,write_mibps,read_mibps,iops,lat_mean_ns,lat_p99_ns,score\n",
    );
    for r in &t.rows {
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
pub fn table_json(t: &FullTable) -> serde_json::Value {
    let mut v = serde_json::to_value(t).expect("table serialises");
    let best: Vec<serde_json::Value> = t
        .best_lines()
        .into_iter()
        .map(|(g, r, why)| serde_json::json!({"goal": g, "target": r.target, "algo": r.algo, "page_cluster": r.page_cluster, "why": why}))
        .collect();
    v["best_for"] = serde_json::Value::Array(best);
    v
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
    use zmem_measure::{codecs, device};
    use zmem_verdict::{assemble, Weights};

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
            kernel: None,
            page_size: None,
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
        let text = table_text(&t);
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
        let csv = table_csv(&t);
        assert_eq!(csv.lines().count(), 7);
        assert!(csv.lines().all(|l| l.split(',').count() == 16), "{csv}");
        let j = table_json(&t);
        assert_eq!(j["best_for"].as_array().unwrap().len(), 5);
        // Weighting ratio only makes zstd the overall best.
        let mut t2 = t.clone();
        t2.rescore("ratio=1".parse().unwrap());
        assert_eq!(t2.rows[t2.best.unwrap().overall].algo, "zstd");
    }
}
