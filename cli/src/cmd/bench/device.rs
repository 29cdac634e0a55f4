//! `zmem bench [CORPUS...]` without `--codecs`: the device-level benchmark
//! (engine zram device per algorithm, kernel zram beside it where possible).

use std::io::{IsTerminal, Write};

use zmem_corpus::Corpus;
use zmem_lab::device::{self, Options, Report, Row, Target};

use crate::output::{Format, Table};

const COLUMNS: [&str; 18] = [
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

fn cells(r: &Row) -> Vec<String> {
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

/// A one-line progress bar on stderr (only when stderr is a terminal).
struct Bar {
    on: bool,
}

impl Bar {
    fn show(&self, p: &device::Progress) {
        if !self.on {
            return;
        }
        let w = 30;
        let filled = (p.done.min(p.total) * w).checked_div(p.total).unwrap_or(0);
        let mut e = std::io::stderr().lock();
        let _ = write!(
            e,
            "\r\x1b[2K[{}{}] {}/{} {}",
            "=".repeat(filled),
            " ".repeat(w - filled),
            p.done,
            p.total,
            p.what
        );
        let _ = e.flush();
    }
    fn clear(&self) {
        if self.on {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
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

/// The benchmark options from the command line; an unknown algorithm is an error.
fn options(args: &super::Args) -> anyhow::Result<Options> {
    let params = zmem_codec::Params {
        level: args.level,
        ..Default::default()
    };
    let opts = Options {
        algorithms: args.algo.clone(),
        params,
        threads: args.threads.max(1),
        requests: args.requests,
        kernel: !args.no_kernel,
        floor: args.floor,
        ..Options::default()
    };
    for a in &opts.algorithms {
        if zmem_codec::find(a).is_err() {
            anyhow::bail!(
                "unknown algorithm '{a}'; valid algorithms: {}",
                zmem_codec::names().join(", ")
            );
        }
    }
    Ok(opts)
}

/// The measured rows of every report as a table.
fn measured_table(reports: &[Report]) -> Table {
    let mut t = Table::new(&COLUMNS);
    for r in reports
        .iter()
        .flat_map(|r| &r.rows)
        .filter(|r| r.reason.is_none())
    {
        t.push(cells(r));
    }
    t
}

/// The rows without numbers and why, then why kernel rows are missing.
fn print_unavailable(reports: &[Report]) {
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
        println!("unavailable:");
        for u in unavailable {
            println!("{u}");
        }
    }
    if let Some(why) = reports.first().and_then(|r| r.kernel_missing.as_ref()) {
        println!("kernel rows missing: {why}");
    }
}

/// Engine against kernel, and the engine's overhead over the codec alone.
fn print_comparisons(reports: &[Report]) {
    for r in reports {
        for line in comparisons(r) {
            println!("{line}");
        }
        for o in &r.overhead {
            println!(
                "{} overhead: write+read through the engine {:.0} MiB/s = {:.0}% of compress+decompress by the codec alone ({:.0} MiB/s, {} pages)",
                o.algo,
                o.engine_mibps,
                o.engine_share * 100.0,
                o.codec_mibps,
                o.pages
            );
        }
    }
}

/// What the columns mean and how often each corpus was written.
fn print_legend(corpora: &[Corpus], opts: &Options) {
    println!(
        "pc = page-cluster: random reads of 2^pc consecutive pages; thr = reader threads; reads/cpu_s = reads per CPU-second of the reader threads (comparable across thread counts on a busy machine); sizes in bytes (mm_stat); \
         ratio = orig/compr, eff_ratio = orig/mem_used; kernel: O_DIRECT pwrite/pread on a hot-added /dev/zramN"
    );
    if opts.floor {
        println!(
            "codec: the floor under any engine: the codec alone on the same pages and requests, objects packed back to back in memory already touched, an index lookup and a prefetch per page, no slot table, allocator or locks (mem_used = the bytes stored)"
        );
    }
    let passes: Vec<String> = corpora
        .iter()
        .map(|c| opts.write_passes_for(c.page_count()).to_string())
        .collect();
    println!(
        "write_MiB/s: the corpus written {} time(s) (per corpus), each pass into a fresh device, engine and kernel alike; only the writes are timed",
        passes.join("/")
    );
}

/// The text output: the table, the corpora, what is missing, the
/// comparisons and the legend.
fn print_text(reports: &[Report], corpora: &[Corpus], opts: &Options) {
    print!("{}", measured_table(reports).render_table());
    for c in corpora {
        println!("corpus {}: {} pages ({})", c.name, c.page_count(), c.source);
    }
    print_unavailable(reports);
    print_comparisons(reports);
    print_legend(corpora, opts);
}

pub fn run(args: &super::Args) -> anyhow::Result<()> {
    let opts = options(args)?;
    let corpora = zmem_corpus::files_or_default(&args.corpus)?;
    let bar = Bar {
        on: std::io::stderr().is_terminal(),
    };
    let mut reports = Vec::new();
    for c in &corpora {
        reports.push(device::run(c, &opts, &mut |p| bar.show(&p)));
    }
    bar.clear();
    match args.format {
        Format::Json => {
            let rows: Vec<&Row> = reports.iter().flat_map(|r| &r.rows).collect();
            println!("{}", serde_json::to_string_pretty(&rows)?);
        }
        Format::Csv => {
            let rows: Vec<&Row> = reports.iter().flat_map(|r| &r.rows).collect();
            print!("{}", crate::output::csv_of(&rows));
        }
        Format::Table => print_text(&reports, &corpora, &opts),
    }
    Ok(())
}
