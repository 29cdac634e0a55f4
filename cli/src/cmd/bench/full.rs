//! `zmem bench full [CORPUS...]`: the complete table with the verdict's pick and the
//! recommendation, optionally as an HTML report (`super::super::lab_run`).

use std::path::PathBuf;

use crate::output::Format;

/// The complete table: codec and device figures for every algorithm plus zstd with a
/// trained dictionary, page-cluster 0..3, weighted score and the recommendation
#[derive(clap::Args, Debug)]
pub(super) struct Args {
    /// Corpus files of raw 4 KiB pages; without any, this machine's memory (at most 16 MiB)
    /// plus 4 MiB of synthetic pages
    corpus: Vec<PathBuf>,
    /// Algorithms to run (comma-separated kernel names); default: all
    #[arg(long, value_delimiter = ',')]
    algo: Vec<String>,
    /// Also write a self-contained HTML report with charts
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
    /// Replace an existing --report file that zmem did not write (never a link or another
    /// user's file)
    #[arg(long)]
    overwrite: bool,
    /// Score weights, e.g. latency=0.4,ratio=0.4,throughput=0.2 (the default)
    #[arg(long, value_name = "latency=W,ratio=W,throughput=W")]
    weights: Option<String>,
    /// RAM size for the recommendation (default: this machine's MemTotal)
    #[arg(long, value_name = "SIZE")]
    ram: Option<String>,
    /// Filesystem random 4 KiB read speed in MiB/s for vm.swappiness (default: measured)
    #[arg(long, value_name = "MIB_S")]
    fs_read: Option<f64>,
    /// Dictionary file for every algorithm run (lz4, lz4hc, zstd take one)
    #[arg(long, value_name = "FILE")]
    dict: Option<PathBuf>,
    /// Minimum milliseconds of each throughput measurement
    #[arg(long, value_name = "MS", default_value_t = super::MIN_TIME_MS)]
    min_time_ms: u64,
    /// Random-read requests per page-cluster value
    #[arg(long, default_value_t = super::REQUESTS)]
    requests: usize,
    /// Skip the kernel rows
    #[arg(long)]
    no_kernel: bool,
    /// The verdict's rounds on the same pages (it picks the algorithm): they go on until the
    /// decision is settled or this is spent (e.g. 60s, 2m)
    #[arg(long, value_name = "DURATION", default_value = super::ROUND_BUDGET)]
    budget: String,
    /// At most this many verdict rounds; default: until settled or the budget is spent
    #[arg(long)]
    rounds: Option<usize>,
}

pub(super) fn run(a: &Args, format: Format) -> anyhow::Result<()> {
    use super::super::lab_run as full;
    if let Some(w) = &a.weights {
        // Bad weights fail before anything is measured.
        w.parse::<zmem_verdict::Weights>()?;
    }
    if let Some(r) = &a.report {
        full::check_report(r, a.overwrite)?; // refused before measuring, not after
    }
    let budget = super::verdict::rounds_budget(Some(a.budget.as_str()), a.rounds)?;
    let (t, ranking) = full::table(&full::Run {
        corpus: &a.corpus,
        algo: &a.algo,
        weights: a.weights.as_deref(),
        min_time_ms: a.min_time_ms,
        requests: a.requests,
        kernel: !a.no_kernel,
        dict: a.dict.as_deref(),
        rounds: a.rounds,
        budget,
    })?;
    let rec = ranking
        .as_ref()
        .map_err(|e| anyhow::anyhow!("{e:#}"))
        .and_then(|r| {
            full::inputs(a.ram.as_deref(), a.fs_read, &full::fs_dir(), r)
                .and_then(|i| zmem_verdict::recommend_ranked(&t, &i, r))
        });
    full::print(
        &t,
        ranking.as_ref().ok(),
        &rec,
        format,
        a.report.as_deref().map(|r| (r, a.overwrite)),
    )
}
