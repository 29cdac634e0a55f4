//! The main job, `zmem bench` with no subcommand (and `zmem bench verdict`
//! on corpus files): this machine's
//! memory (at least 64 MiB where memory allows) plus the synthetic
//! sections, every candidate measured in interleaved rounds, and a verdict
//! this kernel can run, written as one config file for `zmem apply`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use zmem_verdict::{Decided, Progress};

use super::super::lab_run;
use crate::output::Format;

/// The verdict's flags: the main job's (`zmem bench` alone), and `zmem bench verdict`'s with
/// its corpus files.
#[derive(clap::Args, Debug)]
pub struct Flags {
    /// Algorithms to run (comma-separated kernel names); default: all
    #[arg(long, value_delimiter = ',')]
    algo: Vec<String>,
    /// Time for the interleaved rounds: they go on until the decision is settled or this
    /// is spent (e.g. 60s, 2m)
    #[arg(long, value_name = "DURATION", default_value = super::ROUND_BUDGET)]
    budget: String,
    /// At most this many interleaved rounds (every candidate once per round); default: until
    /// settled or the budget is spent
    #[arg(long)]
    rounds: Option<usize>,
    /// Write the recommended configuration as DIR/zmem.conf [default: a new private file in
    /// your state directory: /var/lib/zmem for root, else ~/.local/state/zmem]
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Replace an existing DIR/zmem.conf that zmem did not write (never a link or another
    /// user's file)
    #[arg(long)]
    overwrite: bool,
    /// Random-read requests per page-cluster value
    #[arg(long, default_value_t = super::REQUESTS)]
    requests: usize,
    /// Skip the kernel rows
    #[arg(long)]
    no_kernel: bool,
    /// Score weights, e.g. latency=0.4,ratio=0.4,throughput=0.2 (the default)
    #[arg(long, value_name = "latency=W,ratio=W,throughput=W")]
    weights: Option<String>,
    /// RAM size for the recommendation (default: this machine's MemTotal)
    #[arg(long, value_name = "SIZE")]
    ram: Option<String>,
    /// Filesystem random 4 KiB read speed in MiB/s for vm.swappiness (default: measured)
    #[arg(long, value_name = "MIB_S")]
    fs_read: Option<f64>,
}

/// The verdict (what `zmem bench` runs) on corpus files: every candidate in interleaved
/// rounds, the decision on the median score and its interval, and the config file
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Corpus files of raw 4 KiB pages; without any, this machine's memory plus synthetic pages
    corpus: Vec<PathBuf>,
    #[command(flatten)]
    flags: Flags,
}

impl Args {
    /// The main job: the verdict on this machine's memory.
    pub fn main(flags: Flags) -> Args {
        Args {
            corpus: Vec::new(),
            flags,
        }
    }
}

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

pub fn run(args: &Args, format: Format) -> Result<()> {
    let f = &args.flags;
    let dest = config_path(f.out_dir.as_deref(), f.overwrite)?;
    let d = decide(&Ask {
        corpus: &args.corpus,
        algo: &f.algo,
        weights: f.weights.as_deref(),
        rounds: f.rounds,
        budget: Some(f.budget.as_str()),
        requests: f.requests,
        kernel: !f.no_kernel,
        ram: f.ram.as_deref(),
        fs_read: f.fs_read,
    })?;
    let path = dest.write(&d.rec.config_file())?;
    match format {
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
