//! The main job, `zmem bench` with no subcommand (and `zmem bench verdict`
//! on corpus files): this machine's
//! memory (at least 64 MiB where memory allows) plus the synthetic
//! sections, every candidate measured in interleaved rounds, and a verdict
//! this kernel can run, written as one config file for `zmem apply`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use zmem_verdict::{Decided, Progress};

use super::super::lab_run;
use super::Args;
use crate::output::Format;

/// Whether an existing config file was written by zmem (its first line).
fn ours(old: &[u8]) -> bool {
    old.starts_with(b"# zram-generator.conf from `zmem")
}

/// Where the verdict's config file goes: `--out-dir DIR/zmem.conf` (and
/// whether `--overwrite` lets it replace a file zmem did not write), or a
/// new file in the user's private state directory (`zmem_files::StateDir`).
pub enum ConfigPath {
    OutDir(PathBuf, bool),
    State(zmem_files::StateDir),
}

/// The config file's place, checked before measuring (a symbolic link,
/// another user's file or directory, a file zmem did not write unless
/// `overwrite`, an unsafe state directory are refused at once, so a refused
/// place costs no measurement).
pub fn config_path(out_dir: Option<&Path>, overwrite: bool) -> Result<ConfigPath> {
    match out_dir {
        Some(d) => {
            let p = d.join("zmem.conf");
            zmem_files::check_output(&p, lab_run::replace(&ours, overwrite))
                .map_err(lab_run::with_hint)?;
            Ok(ConfigPath::OutDir(p, overwrite))
        }
        None => Ok(ConfigPath::State(zmem_files::StateDir::open()?)),
    }
}

impl ConfigPath {
    /// Writes `text` there (once per run) and returns the file's path.
    pub fn write(self, text: &str) -> Result<PathBuf> {
        match self {
            ConfigPath::OutDir(p, overwrite) => write_config(&p, text, overwrite).map(|_| p),
            ConfigPath::State(mut s) => {
                let p = s.create_new("verdict", "conf", text.as_bytes())?;
                if let Some(n) = s.note() {
                    eprintln!("zmem: {n}");
                }
                Ok(p)
            }
        }
    }
}

/// Writes the config file, mode 0600, never through a symbolic link; an
/// existing file is replaced only when zmem wrote it (or with `overwrite`).
pub fn write_config(path: &Path, text: &str, overwrite: bool) -> Result<()> {
    zmem_files::write_output(path, text.as_bytes(), lab_run::replace(&ours, overwrite))
        .map_err(lab_run::with_hint)
}

/// What `zmem bench` (the verdict) and `zmem recommend` ask for.
pub struct Ask<'a> {
    pub corpus: &'a [PathBuf],
    pub algo: &'a [String],
    pub weights: Option<&'a str>,
    pub rounds: Option<usize>,
    /// Time for the rounds, as people write it (`60s`, `2m`); none: the default.
    pub budget: Option<&'a str>,
    pub requests: usize,
    pub kernel: bool,
    pub ram: Option<&'a str>,
    pub fs_read: Option<f64>,
}

/// The verdict's `--budget` (none: the default) with its `--rounds`, both
/// more than zero.
pub fn rounds_budget(budget: Option<&str>, rounds: Option<usize>) -> Result<std::time::Duration> {
    let budget = match budget {
        Some(b) => {
            zmem_conf::parse_duration(b).map_err(|e| anyhow::anyhow!("bad --budget: {e}"))?
        }
        None => zmem_verdict::BUDGET,
    };
    if budget.is_zero() || rounds == Some(0) {
        anyhow::bail!("--budget and --rounds must be more than zero");
    }
    Ok(budget)
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
    let budget = rounds_budget(a.budget, a.rounds)?;
    let mut bar = lab_run::Bar::default();
    let ask = zmem_verdict::Ask {
        corpus: a.corpus,
        algo: a.algo,
        weights,
        rounds: a.rounds,
        budget,
        requests: a.requests,
        kernel: a.kernel,
        ram: a.ram,
        fs_read: a.fs_read,
    };
    zmem_verdict::decide(&ask, &mut |p| {
        match p {
        Progress::Capturing(size) => eprintln!(
            "zmem: {}capturing up to {} MiB of memory from {}, plus 4 MiB of synthetic pages (the corpus lines below say how much it read)…",
            if zmem_files::euid_is_root() { "" } else { "not root, so other users' memory is closed: " },
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
    let dest = config_path(args.out_dir.as_deref(), args.overwrite)?;
    let d = decide(&Ask {
        corpus: &args.corpus,
        algo: &args.algo,
        weights: args.weights.as_deref(),
        rounds: args.rounds,
        budget: args.budget.as_deref(),
        requests: args.requests,
        kernel: !args.no_kernel,
        ram: args.ram.as_deref(),
        fs_read: args.fs_read,
    })?;
    let path = dest.write(&d.rec.config_file())?;
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
