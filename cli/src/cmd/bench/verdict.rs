//! The main job, `zmem bench` with no subcommand (and `zmem bench verdict`
//! on corpus files): this machine's
//! memory (at least 64 MiB where memory allows) plus the synthetic
//! sections, every candidate measured in interleaved rounds, and a verdict
//! this kernel can run, written as one config file for `zmem apply`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use zmem_verdict::{Decided, Progress};

use super::Args;
use crate::output::Format;

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

/// Check the arguments, then measure (with a progress bar on stderr) and decide.
pub fn decide(a: &Ask) -> Result<Decided> {
    let weights = match a.weights {
        Some(w) => w.parse()?,
        None => zmem_verdict::Weights::default(),
    };
    for x in a.algo {
        zmem_codec::find(x)?;
    }
    if let Some(r) = a.ram {
        crate::args::size_of("--ram", r)?;
    }
    let mut bar = super::super::lab_run::Bar::default();
    let ask = zmem_verdict::Ask {
        corpus: a.corpus,
        algo: a.algo,
        weights,
        rounds: a.rounds,
        requests: a.requests,
        kernel: a.kernel,
        ram: a.ram,
        fs_read: a.fs_read,
    };
    zmem_verdict::decide(&ask, &mut |p| {
        match p {
        Progress::Capturing(size) => eprintln!(
            "zmem: {}capturing up to {} MiB of memory from {}, plus 4 MiB of synthetic pages (the corpus lines below say how much it read)…",
            if zmem_host::euid_is_root() { "" } else { "not root, so other users' memory is closed: " },
            size >> 20,
            zmem_corpus::machine_scope(),
        ),
        p => bar.show(p),
    }
    })
}

/// The verdict as JSON: corpus, ranking, recommendation, config file.
pub fn json(d: &Decided, path: Option<&Path>) -> serde_json::Value {
    serde_json::json!({
        "corpus": {"name": d.corpus.name, "pages": d.corpus.page_count(), "notes": d.notes},
        "ranking": d.ranking,
        "recommendation": zmem_report::recommendation_json(&d.rec),
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
        _ => {
            use std::io::Write as _;
            let _ = write!(
                std::io::stdout(),
                "{}",
                zmem_report::verdict_text(&d, &path)
            );
        }
    }
    Ok(())
}
