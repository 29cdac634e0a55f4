//! `zmem bench device` (and `floor`) for people: the columns and cells of the
//! measured rows, then what is under the table — the corpora, the rows
//! without numbers and why, engine against kernel (and the codec floor
//! against the kernel), the engine's overhead over the codec, the legend.

use std::fmt::Write as _;

use zmem_corpus::Corpus;
use zmem_measure::device::{Options, Report, Row, Target};

/// The columns of the device table, in the order of [`device_cells`].
pub const DEVICE_COLUMNS: [&str; 18] = [
    "target",
    "algo",
    "corpus",
    "pc",
    "thr",
    "orig",
    "compr",
    "mem_used",
    "same",
    "huge",
    "ratio",
    "eff_ratio",
    "write_MiB/s",
    "read_MiB/s",
    "iops",
    "lat_mean_us",
    "lat_p99_us",
    "reads/cpu_s",
];

/// One measured row's cells, under [`DEVICE_COLUMNS`].
pub fn device_cells(r: &Row) -> Vec<String> {
    let u = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let f = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |v| format!("{v:.d$}"));
    vec![
        r.target.name().to_string(),
        r.algo.clone(),
        r.corpus.clone(),
        r.page_cluster.map_or("-".into(), |p| p.to_string()),
        r.threads.to_string(),
        u(r.orig_data_size),
        u(r.compr_data_size),
        u(r.mem_used_total),
        u(r.same_pages),
        u(r.huge_pages),
        f(r.ratio, 3),
        f(r.effective_ratio, 3),
        f(r.write_mibps, 1),
        f(r.read_mibps, 1),
        f(r.iops, 0),
        f(r.lat_mean_ns.map(|n| n / 1000.0), 2),
        f(r.lat_p99_ns.map(|n| n / 1000.0), 2),
        f(r.iops_per_cpu_s, 0),
    ]
}

/// Side-by-side ratios for the speed targets: per algorithm and page-cluster,
/// engine vs kernel mean latency and write rate, then (with `--floor`) the
/// codec floor vs the kernel: the best ratio any engine could reach.
fn comparisons(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    for (of, name) in [(Target::Engine, "engine"), (Target::Codec, "codec floor")] {
        for e in report
            .rows
            .iter()
            .filter(|r| r.target == of && r.reason.is_none())
        {
            let Some(k) = report.rows.iter().find(|k| {
                k.target == Target::Kernel
                    && k.reason.is_none()
                    && k.algo == e.algo
                    && k.corpus == e.corpus
                    && k.page_cluster == e.page_cluster
            }) else {
                continue;
            };
            let (Some(el), Some(kl), Some(ew), Some(kw)) =
                (e.lat_mean_ns, k.lat_mean_ns, e.write_mibps, k.write_mibps)
            else {
                continue;
            };
            out.push(format!(
                "{} {} pc={}: {name}/kernel mean read latency {:.2}x ({:.2} vs {:.2} us), write rate {:.2}x ({:.0} vs {:.0} MiB/s)",
                e.algo,
                e.corpus,
                e.page_cluster.unwrap_or(0),
                el / kl,
                el / 1000.0,
                kl / 1000.0,
                ew / kw,
                ew,
                kw
            ));
        }
    }
    out
}

/// The rows without numbers and why, then why kernel rows are missing.
fn write_unavailable(o: &mut String, reports: &[Report]) {
    let mut unavailable: Vec<String> = reports
        .iter()
        .flat_map(|r| &r.rows)
        .filter_map(|r| {
            r.reason
                .as_ref()
                .map(|why| format!("  {} {}: {why}", r.target.name(), r.algo))
        })
        .collect();
    unavailable.dedup();
    if !unavailable.is_empty() {
        let _ = writeln!(o, "unavailable:");
        for u in unavailable {
            let _ = writeln!(o, "{u}");
        }
    }
    if let Some(why) = reports.first().and_then(|r| r.kernel_missing.as_ref()) {
        let _ = writeln!(o, "kernel rows missing: {why}");
    }
}

/// Engine against kernel, and the engine's overhead over the codec alone.
fn write_comparisons(o: &mut String, reports: &[Report]) {
    for r in reports {
        for line in comparisons(r) {
            let _ = writeln!(o, "{line}");
        }
        for ov in &r.overhead {
            let _ = writeln!(
                o,
                "{} overhead: write+read through the engine {:.0} MiB/s = {:.0}% of compress+decompress by the codec alone ({:.0} MiB/s, {} pages)",
                ov.algo,
                ov.engine_mibps,
                ov.engine_share * 100.0,
                ov.codec_mibps,
                ov.pages
            );
        }
    }
}

/// What the columns mean and how often each corpus was written.
fn write_legend(o: &mut String, corpora: &[Corpus], opts: &Options) {
    let _ = writeln!(
        o,
        "pc = page-cluster: random reads of 2^pc consecutive pages; thr = reader threads; reads/cpu_s = reads per CPU-second of the reader threads (comparable across thread counts on a busy machine); sizes in bytes (mm_stat); \
         ratio = orig/compr, eff_ratio = orig/mem_used; kernel: O_DIRECT pwrite/pread on a hot-added /dev/zramN"
    );
    if opts.floor {
        let _ = writeln!(
            o,
            "codec: the floor under any engine: the codec alone on the same pages and requests, objects packed back to back in memory already touched, an index lookup and a prefetch per page, no slot table, allocator or locks (mem_used = the bytes stored)"
        );
    }
    let passes: Vec<String> = corpora
        .iter()
        .map(|c| opts.write_passes_for(c.page_count()).to_string())
        .collect();
    let _ = writeln!(
        o,
        "write_MiB/s: the corpus written {} time(s) (per corpus), each pass into a fresh device, engine and kernel alike; only the writes are timed",
        passes.join("/")
    );
}

/// What follows the table: the corpora, what is missing, the comparisons
/// and the legend.
pub fn device_notes(reports: &[Report], corpora: &[Corpus], opts: &Options) -> String {
    let mut o = crate::corpora::corpus_lines(corpora);
    write_unavailable(&mut o, reports);
    write_comparisons(&mut o, reports);
    write_legend(&mut o, corpora, opts);
    o
}
