//! `zmem bench`: the main job. Modes are chosen by flags; each mode lives in
//! `zmem_lab`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use crate::output::{Format, Table};

mod device;
pub(crate) mod verdict;
mod zswap;

/// Arguments of `zmem bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Corpus files of raw 4 KiB pages (e.g. `dd if=/dev/zram0 of=pages.bin`): the device
    /// table per algorithm. With none (and no mode flag), the main job: a 64 MiB sample of this
    /// machine's memory plus synthetic pages, every candidate in interleaved rounds, and the
    /// verdict with the config file to apply (docs/lab.md)
    pub corpus: Vec<PathBuf>,
    /// Codec level only: ratio, compress/decompress/reclaim MB/s and per-page latency
    #[arg(long)]
    pub codecs: bool,
    /// Algorithms to run (comma-separated kernel names); default: all
    #[arg(long, value_delimiter = ',')]
    pub algo: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Codecs mode: `level` for every algorithm run (as zram's algorithm_params level=)
    #[arg(long, allow_negative_numbers = true)]
    pub level: Option<i32>,
    /// Codecs mode: dictionary file for every algorithm run (lz4, lz4hc, zstd take one)
    #[arg(long, value_name = "FILE")]
    pub dict: Option<PathBuf>,
    /// Codecs mode: minimum milliseconds of each throughput measurement
    #[arg(long, value_name = "MS", default_value_t = 200)]
    pub min_time_ms: u64,
    /// The verdict (the default with no corpus and no mode): every candidate in this many
    /// interleaved rounds; the decision uses the median score and its interval
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// The verdict on the given corpus files (without files it is the default)
    #[arg(long)]
    pub verdict: bool,
    /// Verdict: write the recommended configuration as DIR/zmem.conf [default: a file in the
    /// temporary directory]
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Device mode: reader threads for the random-read phase
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Device mode: random-read requests per page-cluster value
    #[arg(long, default_value_t = 20_000)]
    pub requests: usize,
    /// Device and zswap modes: skip the kernel rows
    #[arg(long)]
    pub no_kernel: bool,
    /// Device mode: add `codec` rows, the floor under any engine: the codec alone on the same
    /// pages and the same random requests (no slot table, allocator or locks), with the
    /// codec/kernel ratios beside engine/kernel (docs/lab.md, "The codec floor")
    #[arg(long, conflicts_with_all = [
        "codecs", "zswap", "recomp", "fastpath", "writeback", "verdict", "full", "report", "weights",
    ])]
    pub floor: bool,
    /// The complete table: codec and device figures for every algorithm plus zstd with a
    /// dictionary trained on the corpus, page-cluster 0..3, weighted score, best-for lines and
    /// the recommendation (implied by --report and --weights)
    #[arg(long)]
    pub full: bool,
    /// Full mode: also write a self-contained HTML report with charts
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Full mode: score weights, e.g. latency=0.4,ratio=0.4,throughput=0.2 (the default)
    #[arg(long, value_name = "latency=W,ratio=W,throughput=W")]
    pub weights: Option<String>,
    /// Full mode: RAM size for the recommendation (default: this machine's MemTotal)
    #[arg(long, value_name = "SIZE")]
    pub ram: Option<String>,
    /// Full mode: filesystem random 4 KiB read speed in MiB/s for vm.swappiness (default: measured)
    #[arg(long, value_name = "MIB_S")]
    pub fs_read: Option<f64>,
    /// zswap mode: the corpus through zswap and through zram + disk swap at the same RAM budget,
    /// with a hot/cold access pattern (hit rate, writeback, RAM, load latency, backing I/O)
    #[arg(long)]
    pub zswap: bool,
    /// zswap mode: share of the pages that is hot
    #[arg(long, value_name = "SHARE", default_value_t = 0.2)]
    pub hot: f64,
    /// zswap mode: share of the accesses that go to the hot pages
    #[arg(long, value_name = "SHARE", default_value_t = 0.8)]
    pub hot_access: f64,
    /// zswap mode: RAM budget (zswap pool limit = zram mem_limit): a share of the corpus or a size (64M)
    #[arg(long, value_name = "SHARE|SIZE", default_value = "0.1")]
    pub budget: String,
    /// zswap mode: swap-ins after every page was swapped out once
    #[arg(long, default_value_t = 50_000)]
    pub accesses: usize,
    /// zswap mode: zswap allocator (zsmalloc, zbud, z3fold)
    #[arg(long, default_value = "zsmalloc")]
    pub zpool: String,
    /// zswap mode: run the kernel rows even if other swap areas are active or zswap is enabled
    #[arg(long)]
    pub force: bool,
    /// zswap mode: when the engine's shrink worker runs: `paced:N` (queued by a refused store,
    /// then N steps of its loop per later store or load, as the kernel's workqueue) or `inline`
    /// (to the end, right after the refused store)
    #[arg(long, value_name = "inline|paced:N", default_value = "paced:4")]
    pub worker: String,
    /// Recompression: write the corpus with the primary (first --algo, default lz4), mark
    /// all idle, recompress with ALGO; ratio and mem_used_total before/after, against ALGO
    /// alone. Without corpus files, a heap-like corpus is used
    #[arg(long, value_name = "ALGO")]
    pub recomp: Option<String>,
    /// Fast path: write the corpus with the fast algorithm ALGO and with the primary (first
    /// --algo, default lz4) side by side, timing every write (mean, p50, p99); then recompress
    /// the fast-path slots back to the primary (`recompress type=idle from=ALGO`) and compare
    /// the effective ratio with the primary alone. Without corpus files, a heap-like corpus is used
    #[arg(long, value_name = "ALGO", conflicts_with = "recomp")]
    pub fastpath: Option<String>,
    /// Fast-path mode: write passes into fresh devices (latencies pooled over all passes)
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub passes: usize,
    /// Writeback: write the corpus (default corpus without files) with the first --algo
    /// (default lz4) on a device with a backing file, mark all idle, write back --wb-type;
    /// mem_used_total/orig/compr and effective ratio before/after, pages written back,
    /// bd_stat, times; every page read back and compared
    #[arg(long, conflicts_with_all = ["recomp", "fastpath"])]
    pub writeback: bool,
    /// Writeback mode: the pages written back (idle, huge, huge_idle, incompressible, all)
    #[arg(long, value_name = "TYPE", default_value = "idle")]
    pub wb_type: String,
    /// Writeback mode: write the compressed objects (writeback_compressed=1)
    #[arg(long)]
    pub wb_compressed: bool,
    /// Writeback mode: backing file (an existing one is used as is and kept; a new one is
    /// created and removed) [default: a temporary file]
    #[arg(long, value_name = "FILE")]
    pub backing_dev: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if args.zswap {
        return zswap::run(&args);
    }
    if let Some(algo) = &args.recomp {
        return run_recomp(&args, algo);
    }
    if let Some(algo) = &args.fastpath {
        return run_fastpath(&args, algo);
    }
    if args.writeback {
        return run_writeback(&args);
    }
    if args.codecs {
        return run_codecs(args);
    }
    if args.verdict {
        return verdict::run(&args);
    }
    if args.full || args.report.is_some() || args.weights.is_some() {
        return run_full(&args);
    }
    if args.corpus.is_empty() && args.threads == 1 && !args.floor {
        // The main job: this machine's memory, the verdict.
        return verdict::run(&args);
    }
    device::run(&args)
}

fn run_codecs(args: Args) -> anyhow::Result<()> {
    use zmem_corpus as corpus;
    use zmem_lab::codecs;

    let mut params = zmem_codec::Params {
        level: args.level,
        ..Default::default()
    };
    if let Some(d) = &args.dict {
        params = params.dict_file(d)?;
    }
    let opts = codecs::Options {
        algorithms: args.algo.clone(),
        params,
        min_time: Duration::from_millis(args.min_time_ms),
        ..Default::default()
    };
    // Check the algorithm names before loading anything.
    codecs::select(&opts.algorithms)?;
    let corpora = if args.corpus.is_empty() {
        vec![corpus::default_corpus()]
    } else {
        corpus::load_all(&args.corpus)?
    };

    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .context("progress bar template")?
            .progress_chars("=> "),
    );
    let rows = codecs::run(&corpora, &opts, &mut |p| {
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
        bar.set_message(format!("{} on {}", p.algorithm, p.corpus));
    })?;
    bar.finish_and_clear();

    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
        Format::Csv | Format::Table => {
            let mut t = Table::new(&zmem_report::CODECS_COLUMNS);
            for r in &rows {
                t.push(zmem_report::codec_cells(r));
            }
            if args.format == Format::Csv {
                print!("{}", crate::output::csv_of(&rows));
            } else {
                print!("{}", t.render_table());
                for c in &corpora {
                    println!("corpus {}: {} pages ({})", c.name, c.page_count(), c.source);
                }
                println!(
                    "MB/s = 10^6 bytes of pages per second, same-filled pages excluded (zram stores only \
                     their word); reclaim = compress MB/s x (1 - 1/ratio); latency in microseconds per page"
                );
            }
        }
    }
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| r.status == codecs::Status::Failed)
        .map(|r| {
            format!(
                "{} on {}: {}",
                r.algorithm,
                r.corpus,
                r.reason.as_deref().unwrap_or("")
            )
        })
        .collect();
    if !failed.is_empty() {
        anyhow::bail!("round-trip verification failed: {}", failed.join("; "));
    }
    Ok(())
}

fn run_full(args: &Args) -> anyhow::Result<()> {
    use super::lab_run as full;
    if let Some(w) = &args.weights {
        // Bad weights fail before anything is measured.
        w.parse::<zmem_verdict::Weights>()?;
    }
    let t = full::table(&full::Run {
        corpus: &args.corpus,
        algo: &args.algo,
        weights: args.weights.as_deref(),
        min_time_ms: args.min_time_ms,
        requests: args.requests,
        kernel: !args.no_kernel,
        dict: args.dict.as_deref(),
    })?;
    let rec = full::inputs(args.ram.as_deref(), args.fs_read, &full::fs_dir())
        .and_then(|i| zmem_verdict::recommend(&t, &i));
    full::print(&t, &rec, args.format, args.report.as_deref())
}

fn run_writeback(args: &Args) -> anyhow::Result<()> {
    use zmem_lab::writeback;
    let opts = writeback::Options {
        algo: args
            .algo
            .first()
            .cloned()
            .unwrap_or_else(|| zmem_codec::backend::lz4::INFO.name.into()),
        wb_type: args.wb_type.clone(),
        compressed: args.wb_compressed,
        backing_dev: args.backing_dev.clone(),
    };
    let default = || anyhow::Ok(zmem_corpus::default_corpus());
    per_corpus(
        args,
        default,
        |c| writeback::run(c, &opts),
        zmem_report::writeback_text,
    )
}

fn run_recomp(args: &Args, algo: &str) -> anyhow::Result<()> {
    use zmem_lab::recomp;
    let primary = args
        .algo
        .first()
        .map(String::as_str)
        .unwrap_or(zmem_codec::backend::lz4::INFO.name);
    per_corpus(
        args,
        || recomp::heap_corpus(8),
        |c| recomp::run(c, primary, algo),
        zmem_report::recomp_text,
    )
}

fn run_fastpath(args: &Args, algo: &str) -> anyhow::Result<()> {
    use zmem_lab::{fastpath, recomp};
    let primary = args
        .algo
        .first()
        .map(String::as_str)
        .unwrap_or(zmem_codec::backend::lz4::INFO.name);
    per_corpus(
        args,
        || recomp::heap_corpus(8),
        |c| fastpath::run(c, primary, algo, args.passes),
        zmem_report::fastpath_text,
    )
}

/// The one-measurement-per-corpus modes (`--recomp`, `--fastpath`,
/// `--writeback`): run on each CORPUS (or on `default` without files) and
/// print the results as JSON or as their text rendering.
fn per_corpus<R: serde::Serialize, E: Into<anyhow::Error>, F: Into<anyhow::Error>>(
    args: &Args,
    default: impl FnOnce() -> Result<zmem_corpus::Corpus, F>,
    run: impl Fn(&zmem_corpus::Corpus) -> Result<R, E>,
    render: impl Fn(&R) -> String,
) -> anyhow::Result<()> {
    let corpora = if args.corpus.is_empty() {
        vec![default().map_err(Into::into)?]
    } else {
        zmem_corpus::load_all(&args.corpus)?
    };
    let results = corpora
        .iter()
        .map(|c| run(c).map_err(Into::into))
        .collect::<anyhow::Result<Vec<R>>>()?;
    let text = match args.format {
        Format::Json => format!("{}\n", serde_json::to_string_pretty(&results)?),
        Format::Csv | Format::Table => results.iter().map(render).collect(),
    };
    print_quietly(&text)
}

fn print_quietly(text: &str) -> anyhow::Result<()> {
    // A closed pipe (`| head`) ends quietly instead of panicking.
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    match o.write_all(text.as_bytes()).and_then(|_| o.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
