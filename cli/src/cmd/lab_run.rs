//! Shared by `zmem bench full` (the old `--full`, also implied by `--report`
//! and `--weights`) and the verdict (`zmem bench`, `zmem bench verdict`,
//! `zmem recommend`): the arguments of the complete table
//! (`zmem_verdict::full_table`), the progress bar on stderr, and the table
//! (and recommendation) printed; optionally an HTML report.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use zmem_verdict::{
    Dict, FullOptions, FullTable, Inputs, Progress, RankOptions, Ranking, Recommendation, Weights,
};

use crate::output::Format;

/// What the full run needs from the command line.
pub struct Run<'a> {
    pub corpus: &'a [PathBuf],
    pub algo: &'a [String],
    pub weights: Option<&'a str>,
    pub min_time_ms: u64,
    pub requests: usize,
    pub kernel: bool,
    pub dict: Option<&'a Path>,
    /// The verdict's rounds: at most this many, within this time.
    pub rounds: Option<usize>,
    pub budget: std::time::Duration,
}

/// The largest dictionary zmem reads (zstd's own trainer makes ~112 KiB ones).
const DICT_MAX_BYTES: u64 = 64 << 20;

/// The progress bar of the verdict and the full table, made at the first step.
#[derive(Default)]
pub struct Bar(Option<indicatif::ProgressBar>);

impl Bar {
    fn bar(&mut self) -> &indicatif::ProgressBar {
        self.0.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new(0);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} {msg}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        })
    }

    /// Show what a job reports (a capture is announced by the caller, which
    /// knows what it captures for).
    pub fn show(&mut self, p: Progress) {
        match p {
            Progress::Capturing(_) => {}
            Progress::Step { done, total, what } => {
                let bar = self.bar();
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(what.to_string());
            }
            Progress::Now(what) => self.bar().set_message(what.to_string()),
            Progress::FsRead(dir) => eprintln!(
                "zmem: measuring random 4 KiB reads from the filesystem at {}…",
                dir.display()
            ),
            Progress::Measured => {
                if let Some(bar) = &self.0 {
                    bar.finish_and_clear();
                }
            }
        }
    }
}

/// Run the complete table and the verdict on the same pages, with a progress bar on stderr.
pub fn table(r: &Run<'_>) -> Result<(FullTable, Result<Ranking>)> {
    let weights: Weights = match r.weights {
        Some(w) => w.parse()?,
        None => Weights::default(),
    };
    let dict = match r.dict {
        Some(p) => Dict::Given(
            zmem_files::input::read_input("dictionary", p, DICT_MAX_BYTES)?,
            p.display().to_string(),
        ),
        None => Dict::Train(zmem_corpus::DEFAULT_DICT_SIZE),
    };
    let opts = FullOptions {
        algorithms: r.algo.to_vec(),
        weights,
        min_time: Duration::from_millis(r.min_time_ms),
        requests: r.requests,
        kernel: r.kernel,
        dict,
        ..Default::default()
    };
    let rank_opts = RankOptions {
        rounds: r.rounds.unwrap_or(usize::MAX).max(1),
        budget: r.budget,
        requests: r.requests,
        weights,
        kernel: r.kernel,
        algorithms: r.algo.to_vec(),
        ..Default::default()
    };
    let mut bar = Bar::default();
    zmem_verdict::full_table(r.corpus, &opts, &rank_opts, &mut |p| {
        match p {
        Progress::Capturing(size) => eprintln!(
            "zmem: building the default corpus (up to {} MiB of memory from {}, plus 4 MiB synthetic; the notes say how much it read)…",
            size >> 20,
            zmem_corpus::machine_scope()
        ),
        p => bar.show(p),
    }
    })
}

/// Where to measure filesystem reads: /var/tmp (disk-backed on most systems), else the temp dir.
pub fn fs_dir() -> PathBuf {
    zmem_verdict::fs_dir()
}

/// Recommendation inputs from this machine (RAM overridable, filesystem speed measured unless
/// given) and the ranking's algorithms of this kernel.
pub fn inputs(
    ram: Option<&str>,
    fs_read: Option<f64>,
    fs_dir: &Path,
    ranking: &Ranking,
) -> Result<Inputs> {
    let mut bar = Bar::default();
    zmem_verdict::inputs(ram, fs_read, fs_dir, ranking, &mut |p| bar.show(p))
}

/// Whether an existing report was written by zmem (an HTML page titled `zmem …`).
fn ours_html(old: &[u8]) -> bool {
    let head = &old[..old.len().min(512)];
    head.starts_with(b"<!DOCTYPE html>") && head.windows(12).any(|w| w == b"<title>zmem ")
}

/// When an existing `--out-dir`/`--report` file may be replaced: when zmem
/// wrote it (`ours`), or whatever it is with `--overwrite` (still never a
/// link, a device or another user's file).
pub fn replace(
    ours: &'static dyn Fn(&[u8]) -> bool,
    overwrite: bool,
) -> zmem_files::Replace<'static> {
    match overwrite {
        true => zmem_files::Replace::Always,
        false => zmem_files::Replace::IfOurs(ours),
    }
}

/// `e`, with the flag that replaces a file zmem did not write.
pub fn with_hint(e: std::io::Error) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            anyhow::anyhow!("{e}; pass --overwrite to replace it")
        }
        _ => e.into(),
    }
}

/// Checks `--report FILE.html` before anything is measured (`bench full`,
/// `trial`, `tune`): a link, a device, another user's file or directory,
/// or a file that is not a zmem report (unless `overwrite`) is refused now,
/// not after the measurement.
pub fn check_report(path: &Path, overwrite: bool) -> Result<()> {
    zmem_files::check_output(path, replace(&ours_html, overwrite))
        .map_err(with_hint)
        .context("--report")
}

/// Writes an HTML report (`bench full`, `trial` and `tune --report`): mode
/// 0600, never through a symbolic link, replacing only a report zmem wrote
/// (or anything of yours with `--overwrite`).
pub fn write_report(path: &Path, html: &str, overwrite: bool) -> Result<()> {
    zmem_files::write_output(path, html.as_bytes(), replace(&ours_html, overwrite))
        .map_err(with_hint)
        .context("writing the HTML report")
}

/// Print the table (and recommendation) in `format`; write the report if asked.
pub fn print(
    t: &FullTable,
    ranking: Option<&Ranking>,
    rec: &Result<Recommendation>,
    format: Format,
    report: Option<(&Path, bool)>,
) -> Result<()> {
    match format {
        Format::Table => {
            // The verdict and the configuration this kernel can run first, then the table.
            if let Some(r) = ranking {
                println!("{}", zmem_report::ranking_text(r));
            }
            match rec {
                Ok(r) => println!("{}", zmem_report::recommendation_text(r)),
                Err(e) => println!("no recommendation: {e:#}\n"),
            }
            print!("{}", zmem_report::table_text(t));
        }
        Format::Csv => print!("{}", zmem_report::table_csv(t)),
        Format::Json => {
            let mut v = zmem_report::table_json(t);
            v["ranking"] = serde_json::to_value(ranking)?;
            v["recommendation"] = match rec {
                Ok(r) => zmem_report::recommendation_json(r),
                Err(e) => zmem_report::error_json(&format!("{e:#}")),
            };
            println!("{}", zmem_report::pretty(&v));
        }
    }
    if let Some((p, overwrite)) = report {
        let html = zmem_report::html_report(
            t,
            ranking,
            rec.as_ref().ok(),
            rec.as_ref().err().map(|e| format!("{e:#}")).as_deref(),
            "zmem bench",
        );
        write_report(p, &html, overwrite)?;
        eprintln!("zmem: report written to {}", p.display());
    }
    Ok(())
}
