//! `zmem bench`: the main job. Modes are chosen by flags; each mode lives in
//! `zmem_lab::bench`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use crate::output::{Format, Table};

/// Arguments of `zmem bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Corpus files of raw 4 KiB pages (e.g. `dd if=/dev/zram0 of=pages.bin`).
    /// With none, a default corpus is built from this machine's memory plus synthetic pages.
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
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if args.codecs {
        return run_codecs(args);
    }
    anyhow::bail!("`zmem bench` without a mode is not implemented yet; use `zmem bench --codecs [CORPUS...]`")
}

fn run_codecs(args: Args) -> anyhow::Result<()> {
    use zmem_lab::bench::codecs;
    use zmem_lab::corpus;

    let mut params = zmem_codec::Params { level: args.level, ..Default::default() };
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
            let mut t = Table::new(&codecs::COLUMNS);
            for r in &rows {
                t.push(r.cells());
            }
            if args.format == Format::Csv {
                print!("{}", t.render_csv());
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
        .map(|r| format!("{} on {}: {}", r.algorithm, r.corpus, r.reason.as_deref().unwrap_or("")))
        .collect();
    if !failed.is_empty() {
        anyhow::bail!("round-trip verification failed: {}", failed.join("; "));
    }
    Ok(())
}
