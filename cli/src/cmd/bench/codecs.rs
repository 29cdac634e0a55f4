//! `zmem bench codecs [CORPUS...]`: the codecs alone on the corpus pages (`zmem_measure::codecs`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use zmem_measure::codecs;

use crate::output::{Format, Table};

/// Codec level only: ratio, compress/decompress/reclaim MB/s and per-page latency
#[derive(clap::Args, Debug)]
pub(super) struct Args {
    /// Corpus files of raw 4 KiB pages; without any, a synthetic corpus
    corpus: Vec<PathBuf>,
    /// Algorithms to run (comma-separated kernel names); default: all
    #[arg(long, value_delimiter = ',')]
    algo: Vec<String>,
    /// `level` for every algorithm run (as zram's algorithm_params level=)
    #[arg(long, allow_negative_numbers = true)]
    level: Option<i32>,
    /// Dictionary file for every algorithm run (lz4, lz4hc, zstd take one)
    #[arg(long, value_name = "FILE")]
    dict: Option<PathBuf>,
    /// Minimum milliseconds of each throughput measurement
    #[arg(long, value_name = "MS", default_value_t = super::MIN_TIME_MS)]
    min_time_ms: u64,
}

fn options(a: &Args) -> anyhow::Result<codecs::Options> {
    let mut params = zmem_codec::Params {
        level: a.level,
        ..Default::default()
    };
    if let Some(d) = &a.dict {
        params = params.dict_file(d)?;
    }
    let opts = codecs::Options {
        algorithms: a.algo.clone(),
        params,
        min_time: Duration::from_millis(a.min_time_ms),
        ..Default::default()
    };
    // Check the algorithm names before loading anything.
    codecs::select(&opts.algorithms)?;
    Ok(opts)
}

fn print(
    rows: &[codecs::Row],
    corpora: &[zmem_corpus::Corpus],
    format: Format,
) -> anyhow::Result<()> {
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(rows)?),
        Format::Csv => print!("{}", crate::output::csv_of(rows)),
        Format::Table => {
            let mut t = Table::new(&zmem_report::CODECS_COLUMNS);
            for r in rows {
                t.push(zmem_report::codec_cells(r));
            }
            print!("{}", t.render_table());
            print!("{}", zmem_report::corpus_lines(corpora));
            println!(
                "MB/s = 10^6 bytes of pages per second, same-filled pages excluded (zram stores only \
                 their word); reclaim = compress MB/s x (1 - 1/ratio); latency in microseconds per page"
            );
        }
    }
    Ok(())
}

pub(super) fn run(a: &Args, format: Format) -> anyhow::Result<()> {
    let opts = options(a)?;
    let corpora = if a.corpus.is_empty() {
        vec![zmem_corpus::default_corpus()]
    } else {
        zmem_corpus::load_all(&a.corpus)?
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
    print(&rows, &corpora, format)?;
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
