//! The jobs the commands run, start to end: the verdict (`zmem bench`'s main
//! job and `zmem recommend`: the corpus, the interleaved rounds, the
//! page-cluster reads of the winner, this machine's facts, the
//! recommendation) and the full table (`zmem bench full`). They report
//! what they do through [`Progress`]; the caller shows it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use zmem_corpus::Corpus;

use crate::full;
use crate::rank::{self, Ranking};
use crate::ranked_table::to_table;
use crate::recommend::{self, Inputs, Recommendation};
use crate::score::Weights;
use crate::table::FullTable;

/// What a job is doing, for a progress bar and notes on stderr.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// This machine's memory is about to be captured (at most this many bytes).
    Capturing(u64),
    /// `done` of `total` measurement steps, and what runs now.
    Step {
        done: usize,
        total: usize,
        what: &'a str,
    },
    /// What runs now, without a count.
    Now(&'a str),
    /// The filesystem's random reads are about to be measured in this directory.
    FsRead(&'a Path),
    /// The measurements are over.
    Measured,
}

/// What the verdict is asked for (arguments already checked).
pub struct Ask<'a> {
    /// Corpus files; none: this machine's memory plus synthetic pages.
    pub corpus: &'a [PathBuf],
    pub algo: &'a [String],
    pub weights: Weights,
    /// The most rounds (none: until settled or the budget is spent).
    pub rounds: Option<usize>,
    /// Time for the rounds.
    pub budget: std::time::Duration,
    pub requests: usize,
    pub kernel: bool,
    /// RAM to plan for, as given (`16G`); none: this machine's MemTotal.
    pub ram: Option<&'a str>,
    /// Filesystem random-read speed, MiB/s; none: measured.
    pub fs_read: Option<f64>,
}

/// The verdict and the recommendation built on it.
pub struct Decided {
    pub corpus: Corpus,
    /// What went into the corpus.
    pub notes: Vec<String>,
    pub ranking: Ranking,
    pub rec: Recommendation,
}

/// The verdict: measure every candidate in interleaved rounds on the corpus,
/// rank them, and recommend a configuration this kernel can run.
pub fn decide(a: &Ask, progress: &mut dyn FnMut(Progress)) -> Result<Decided> {
    let capture = zmem_corpus::verdict_capture();
    let (c, notes) = zmem_corpus::joined_or_machine(a.corpus, capture, || {
        progress(Progress::Capturing(capture))
    })?;
    let opts = rank::Options {
        rounds: a.rounds.unwrap_or(usize::MAX).max(1),
        budget: a.budget,
        requests: a.requests,
        weights: a.weights,
        kernel: a.kernel,
        algorithms: a.algo.to_vec(),
        ..Default::default()
    };
    let ranking = rank::rank(&c, &opts, &mut |done, total, what| {
        progress(Progress::Step { done, total, what })
    })?;
    progress(Progress::Now(
        "page-cluster reads of the winner, filesystem reads",
    ));
    let pcs = rank::winner_page_clusters(&c, &ranking, a.requests.div_ceil(4))?;
    let table = to_table(&ranking, &pcs);
    let inputs = inputs(a.ram, a.fs_read, &fs_dir(), &ranking, &mut *progress)?;
    progress(Progress::Measured);
    let rec = recommend::recommend_ranked(&table, &inputs, &ranking)?;
    Ok(Decided {
        corpus: c,
        notes,
        ranking,
        rec,
    })
}

/// The full table on the corpus files (none: this machine's memory, at most
/// [`zmem_corpus::DEFAULT_CAPTURE`], plus synthetic pages), and the
/// verdict's interleaved rounds on the same pages: the table informs, the
/// verdict decides (the same decision as `zmem bench` and `zmem recommend`).
pub fn full_table(
    corpus: &[PathBuf],
    opts: &full::Options,
    rank_opts: &rank::Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<(FullTable, Result<Ranking>)> {
    // Check names before the (possibly long) corpus capture.
    zmem_measure::codecs::select(&opts.algorithms)?;
    let capture = zmem_corpus::DEFAULT_CAPTURE;
    let (c, notes) =
        zmem_corpus::joined_or_machine(corpus, capture, || progress(Progress::Capturing(capture)))?;
    let mut t = full::run(&c, opts, &mut |what, done, total| {
        progress(Progress::Step { done, total, what })
    })?;
    t.notes.extend(notes);
    // The verdict's candidates: what the table measured, the dictionary
    // rows aside (no kernel offers zstd with a trained dictionary).
    // An error here (no algorithm asked for is one this kernel offers) is
    // the recommendation's, not the table's.
    let ranking = rank::rank(&c, rank_opts, &mut |done, total, what| {
        progress(Progress::Step {
            done,
            total,
            what: &format!("verdict: {what}"),
        })
    });
    progress(Progress::Measured);
    Ok((t, ranking))
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

/// Recommendation inputs from this machine (RAM overridable, filesystem
/// speed measured unless given) and the ranking's knowledge of which
/// algorithms this kernel's zram offers.
pub fn inputs(
    ram: Option<&str>,
    fs_read: Option<f64>,
    fs_dir: &Path,
    ranking: &Ranking,
    progress: &mut dyn FnMut(Progress),
) -> Result<Inputs> {
    let (mem, disk_swap, zswap) = recommend::machine_facts();
    let ram_bytes = match ram {
        Some(s) => zmem_conf::parse_size(s).context("bad size for --ram")?,
        None => mem.context("cannot read MemTotal from /proc/meminfo; give --ram")?,
    };
    if ram_bytes < (64 << 20) {
        anyhow::bail!("--ram {} is too small: at least 64M", ram.unwrap_or(""));
    }
    let (fs_read_mib_s, fs_read_source) = match fs_read {
        Some(v) if v > 0.0 => (v, "given with --fs-read".to_string()),
        Some(v) => anyhow::bail!("--fs-read must be a positive MiB/s figure, got {v}"),
        None => {
            progress(Progress::FsRead(fs_dir));
            let m = zmem_measure::measure_fs_read(fs_dir, 64, 2000)?;
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
        kernel_algos: ranking.offered.clone(),
        disk_swap,
        zswap_enabled: zswap,
    })
}
