//! The main job, `zmem bench` with no corpus and no mode: this machine's
//! memory (at least 64 MiB where memory allows) plus the synthetic
//! sections, every candidate measured in interleaved rounds, and a verdict
//! this kernel can run, written as one config file for `zmem apply`.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use zmem_lab::recommend::{self, Recommendation};
use zmem_lab::verdict::{self, Ranking};

use super::Args;
use crate::output::Format;

/// Captured memory in the main job's corpus: large enough not to sit in the
/// CPU cache, bounded by an eighth of the memory available now.
fn capture_size() -> u64 {
    let avail = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemAvailable:"))?
                .split_whitespace()
                .nth(1)?
                .parse::<u64>()
                .ok()
        })
        .map_or(u64::MAX, |kb| kb * 1024 / 8);
    (64u64 << 20).min(avail).max(4 << 20)
}

fn corpus(paths: &[PathBuf]) -> Result<(zmem_lab::corpus::Corpus, Vec<String>)> {
    if !paths.is_empty() {
        return super::super::lab_run::load_corpus(paths);
    }
    let size = capture_size();
    eprintln!(
        "zmem: capturing this machine's memory ({} MiB, sampled from every readable process) plus 4 MiB of synthetic pages…",
        size >> 20
    );
    Ok(zmem_lab::machine::default_corpus_with_memory(size))
}

fn progress_bar() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(0);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Where the verdict's config file goes: `--out-dir DIR/zmem.conf`, or a
/// file in the temporary directory.
fn config_path(args: &Args) -> PathBuf {
    match &args.out_dir {
        Some(d) => d.join("zmem.conf"),
        None => std::env::temp_dir().join("zmem-verdict.conf"),
    }
}

/// Writes the config file; an existing file is replaced only when zmem wrote it.
pub fn write_config(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    if let Ok(old) = std::fs::read_to_string(path) {
        if !old.starts_with("# zram-generator.conf from `zmem") {
            anyhow::bail!(
                "{} exists and was not written by zmem; not replacing it",
                path.display()
            );
        }
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// What `zmem bench` (the verdict) and `zmem recommend` ask for.
pub struct Ask<'a> {
    pub corpus: &'a [PathBuf],
    pub algo: &'a [String],
    pub weights: Option<&'a str>,
    pub rounds: usize,
    pub requests: usize,
    pub kernel: bool,
    pub ram: Option<&'a str>,
    pub fs_read: Option<f64>,
}

/// The verdict and the recommendation built on it.
pub struct Decided {
    pub corpus: zmem_lab::corpus::Corpus,
    pub notes: Vec<String>,
    pub ranking: Ranking,
    pub rec: Recommendation,
}

/// Measure (with a progress bar on stderr) and decide.
pub fn decide(a: &Ask) -> Result<Decided> {
    let weights = match a.weights {
        Some(w) => w.parse()?,
        None => zmem_lab::score::Weights::default(),
    };
    for x in a.algo {
        zmem_codec::find(x)?;
    }
    if let Some(r) = a.ram {
        crate::args::size_of("--ram", r)?;
    }
    let (c, notes) = corpus(a.corpus)?;
    let opts = verdict::Options {
        rounds: a.rounds.max(1),
        requests: a.requests,
        weights,
        kernel: a.kernel,
        algorithms: a.algo.to_vec(),
        ..Default::default()
    };
    let bar = progress_bar();
    let ranking = verdict::rank(&c, &opts, &mut |done, total, what| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        bar.set_message(what.to_string());
    })?;
    bar.set_message("page-cluster reads of the winner, filesystem reads");
    let pcs = verdict::winner_page_clusters(&c, &ranking, a.requests.div_ceil(4))?;
    let table = verdict::to_table(&ranking, &pcs);
    let inputs = super::super::lab_run::inputs(a.ram, a.fs_read, &super::super::lab_run::fs_dir())?;
    bar.finish_and_clear();
    let rec = recommend::recommend_ranked(&table, &inputs, &ranking)?;
    Ok(Decided {
        corpus: c,
        notes,
        ranking,
        rec,
    })
}

/// The verdict as JSON: corpus, ranking, recommendation, config file.
pub fn json(d: &Decided, path: Option<&Path>) -> serde_json::Value {
    serde_json::json!({
        "corpus": {"name": d.corpus.name, "pages": d.corpus.page_count(), "notes": d.notes},
        "ranking": d.ranking,
        "recommendation": recommend::to_json_value(&d.rec),
        "config_file": path,
    })
}

pub fn run(args: &Args) -> Result<()> {
    let d = decide(&Ask {
        corpus: &args.corpus,
        algo: &args.algo,
        weights: args.weights.as_deref(),
        rounds: args.rounds,
        requests: args.requests,
        kernel: !args.no_kernel,
        ram: args.ram.as_deref(),
        fs_read: args.fs_read,
    })?;
    let path = config_path(args);
    write_config(&path, &d.rec.config_file())?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&json(&d, Some(&path)))?),
        _ => print_verdict(&d.corpus, &d.notes, &d.ranking, &d.rec, &path),
    }
    Ok(())
}

fn first(v: &[String]) -> &str {
    v.first().map(String::as_str).unwrap_or("")
}

fn print_verdict(
    c: &zmem_lab::corpus::Corpus,
    notes: &[String],
    r: &Ranking,
    rec: &Recommendation,
    path: &Path,
) {
    let mut o = std::io::stdout().lock();
    let mut p = |s: String| {
        let _ = writeln!(o, "{s}");
    };
    p(format!(
        "corpus: {} pages ({:.1} MiB): {}",
        c.page_count(),
        (c.page_count() * 4096) as f64 / 1048576.0,
        c.source
    ));
    for n in notes {
        p(format!("  {n}"));
    }
    p(String::new());
    p(verdict::render::render_table(r).trim_end().to_string());
    p(String::new());
    p("Verdict for this kernel:".into());
    let s = &rec.sizes;
    let lines = [
        ("use", rec.use_.clone(), first(&rec.use_reasons).to_string()),
        (
            "algorithm",
            rec.primary.clone(),
            first(&rec.algorithm_reasons).to_string(),
        ),
        (
            "recompression",
            rec.recompress.clone().unwrap_or_else(|| "none".into()),
            rec.algorithm_reasons.get(1).cloned().unwrap_or_default(),
        ),
        (
            "disksize",
            format!("{} MiB", s.disksize_mib),
            rec.size_arithmetic.get(2).cloned().unwrap_or_default(),
        ),
        (
            "mem_limit",
            format!("{} MiB", s.mem_limit_mib),
            rec.size_arithmetic.get(1).cloned().unwrap_or_default(),
        ),
        (
            "vm.swappiness",
            rec.swappiness.to_string(),
            rec.swappiness_arithmetic
                .last()
                .cloned()
                .unwrap_or_default(),
        ),
        (
            "vm.page-cluster",
            rec.page_cluster.to_string(),
            rec.page_cluster_reasons
                .iter()
                .rev()
                .nth(1)
                .cloned()
                .unwrap_or_default(),
        ),
    ];
    for (k, v, why) in lines {
        p(format!("  {k:<16} {v:<10} {why}"));
    }
    p(String::new());
    p(format!("config: {}", path.display()));
    p(format!("preview: zmem apply {} --dry-run", path.display()));
    p(format!(
        "apply:   sudo zmem apply {}   (undo: sudo zmem apply --revert)",
        path.display()
    ));
    p(format!("persist: sudo zmem persist {}", path.display()));
}
