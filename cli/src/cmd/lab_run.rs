//! Shared by `zmem bench --full` (also implied by `--report` and `--weights`)
//! and `zmem recommend`: the
//! complete table (codec and device figures, engine and kernel rows, zstd with
//! a trained dictionary), the weighted score, the best-for lines and the
//! recommendation; optionally an HTML report.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use zmem_lab::corpus::{self, Corpus};
use zmem_lab::full;
use zmem_lab::recommend::{self, Inputs, Recommendation};
use zmem_lab::score::Weights;
use zmem_lab::table::FullTable;

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
}

/// The largest dictionary zmem reads (zstd's own trainer makes ~112 KiB ones).
const DICT_MAX_BYTES: u64 = 64 << 20;

/// The corpus: the given files joined, or the default (this machine's memory + synthetic).
pub fn load_corpus(paths: &[PathBuf]) -> Result<(Corpus, Vec<String>)> {
    match paths {
        [] => {
            eprintln!("zmem: building the default corpus (this machine's memory, at most 16 MiB, plus 4 MiB synthetic)…");
            Ok(zmem_lab::machine::default_corpus_with_memory(
                zmem_lab::machine::DEFAULT_CAPTURE,
            ))
        }
        [one] => Ok((Corpus::load(one)?, vec![])),
        many => {
            let cs = corpus::load_all(many)?;
            let mut data = Vec::new();
            for c in &cs {
                data.extend_from_slice(c.bytes());
            }
            let name = cs
                .iter()
                .map(|c| c.name.clone())
                .collect::<Vec<_>>()
                .join(" + ");
            Ok((Corpus::from_bytes(name.clone(), name, data)?, vec![]))
        }
    }
}

/// Run the complete table with a progress bar on stderr.
pub fn table(r: &Run<'_>) -> Result<FullTable> {
    let weights: Weights = match r.weights {
        Some(w) => w.parse()?,
        None => Weights::default(),
    };
    let dict = match r.dict {
        Some(p) => full::Dict::Given(
            zmem_host::input::read_input("dictionary", p, DICT_MAX_BYTES)?,
            p.display().to_string(),
        ),
        None => full::Dict::Train(zmem_lab::dict::DEFAULT_SIZE),
    };
    let opts = full::Options {
        algorithms: r.algo.to_vec(),
        weights,
        min_time: Duration::from_millis(r.min_time_ms),
        requests: r.requests,
        kernel: r.kernel,
        dict,
        ..Default::default()
    };
    // Check names before the (possibly long) corpus capture.
    zmem_lab::bench::codecs::select(&opts.algorithms)?;
    let (c, notes) = load_corpus(r.corpus)?;
    let bar = indicatif::ProgressBar::new(0);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    let mut t = full::run(&c, &opts, &mut |what, done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        bar.set_message(what.to_string());
    })?;
    bar.finish_and_clear();
    t.notes.extend(notes);
    Ok(t)
}

/// Where to measure filesystem reads: /var/tmp (disk-backed on most systems), else the temp dir.
pub fn fs_dir() -> PathBuf {
    let v = PathBuf::from("/var/tmp");
    if v.is_dir() {
        v
    } else {
        std::env::temp_dir()
    }
}

/// Recommendation inputs from this machine (RAM overridable, filesystem speed measured unless given).
pub fn inputs(ram: Option<&str>, fs_read: Option<f64>, fs_dir: &Path) -> Result<Inputs> {
    let (mem, disk_swap, zswap, kernel_algos) = recommend::machine_facts();
    let ram_bytes = match ram {
        Some(s) => crate::args::size_of("--ram", s)?,
        None => mem.context("cannot read MemTotal from /proc/meminfo; give --ram")?,
    };
    if ram_bytes < (64 << 20) {
        anyhow::bail!("--ram {} is too small: at least 64M", ram.unwrap_or(""));
    }
    let (fs_read_mib_s, fs_read_source) = match fs_read {
        Some(v) if v > 0.0 => (v, "given with --fs-read".to_string()),
        Some(v) => anyhow::bail!("--fs-read must be a positive MiB/s figure, got {v}"),
        None => {
            eprintln!(
                "zmem: measuring random 4 KiB reads from the filesystem at {}…",
                fs_dir.display()
            );
            let m = zmem_lab::fsread::measure(fs_dir, 64, 2000)?;
            (
                m.mib_s,
                format!(
                    "measured: {} random reads from a 64 MiB file in {}{}",
                    m.reads,
                    fs_dir.display(),
                    if m.direct_io {
                        " with O_DIRECT"
                    } else {
                        " (no O_DIRECT here: cached pages dropped first)"
                    }
                ),
            )
        }
    };
    Ok(Inputs {
        ram_bytes,
        fs_read_mib_s,
        fs_read_source,
        kernel_algos,
        disk_swap,
        zswap_enabled: zswap,
    })
}

/// Print the table (and recommendation) in `format`; write the report if asked.
pub fn print(
    t: &FullTable,
    rec: &Result<Recommendation>,
    format: Format,
    report: Option<&Path>,
) -> Result<()> {
    match format {
        Format::Table => {
            // The configuration this kernel can run first, then the table.
            match rec {
                Ok(r) => println!("{}", r.render_text()),
                Err(e) => println!("no recommendation: {e:#}\n"),
            }
            print!("{}", t.render_text());
        }
        Format::Csv => print!("{}", t.render_csv()),
        Format::Json => {
            let mut v = t.to_json_value();
            v["recommendation"] = match rec {
                Ok(r) => zmem_lab::recommend::to_json_value(r),
                Err(e) => zmem_lab::recommend::error_json(&format!("{e:#}")),
            };
            println!("{}", zmem_lab::recommend::pretty(&v));
        }
    }
    if let Some(p) = report {
        let html = zmem_lab::report::render(
            t,
            rec.as_ref().ok(),
            rec.as_ref().err().map(|e| format!("{e:#}")).as_deref(),
            "zmem bench",
        );
        std::fs::write(p, html).with_context(|| format!("writing report {}", p.display()))?;
        eprintln!("zmem: report written to {}", p.display());
    }
    Ok(())
}
