//! What `zmem tune` found, as data: the learning run ([`Learn`]) and the
//! whole result ([`Tune`]), made by the steps and read by the findings and
//! the renderer.

use serde::Serialize;
use zmem_trial::TrialReport;
use zmem_verdict::Ranking;

use crate::candidates::Candidate;
use crate::check::{ModelCheck, ModelErrors};
use crate::compare::{Decision, Measured};
use crate::predict::{Costs, Prediction};

/// Whether the trialed candidate predicted best ran fastest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Held {
    /// It led, or ran within the margin of the leader beyond noise.
    Held,
    /// The runs could not separate it from the leader.
    CannotTell,
    /// The leader was faster by more than the margin, or one of its runs failed.
    DidNotHold,
}

/// Step 1's result, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct Learn {
    /// The unpressured run's wall time without the time spent capturing, s.
    pub wall_s: f64,
    pub peak_anon_bytes: u64,
    pub cgroup_peak_bytes: Option<u64>,
    /// Time spent capturing, s (the workload ran on meanwhile).
    pub capture_s: f64,
    /// Where the predicted pages come from.
    pub corpus: String,
    pub pages: usize,
    /// The workload's anonymous memory when the kept capture was taken
    /// (none with --corpus).
    pub captured_at_anon_bytes: Option<u64>,
}

/// Everything `zmem tune` found.
#[derive(Debug, Clone, Serialize)]
pub struct Tune {
    pub workload: String,
    pub memory_limit_bytes: u64,
    pub repeat: u32,
    pub learn: Learn,
    pub overflow_bytes: u64,
    /// The disk's per-page costs, measured in the swap directory.
    pub disk: Costs,
    /// Every configuration this kernel can run, predicted, best first.
    pub predictions: Vec<Prediction>,
    /// The trialed ones.
    pub candidates: Vec<Candidate>,
    /// Their measurements, best first.
    pub measured: Vec<Measured>,
    /// The pick; `None` when no candidate finished all its runs.
    pub winner: Option<String>,
    /// How the pick was made; `None` when no candidate finished all its runs.
    pub decision: Option<Decision>,
    /// When no candidate finished all its runs: that no configuration held
    /// the workload under the limit, and the peaks seen (the error tune exits with).
    pub no_fit: Option<String>,
    /// Whether the trialed candidate predicted best ran fastest (or
    /// equivalent to the fastest); `None` without a pick.
    pub prediction_held: Option<Held>,
    /// Spearman's rank correlation of predicted and measured ranks.
    pub rank_correlation: Option<f64>,
    /// The model against each trialed candidate's runs, in candidate order.
    pub model_check: Vec<ModelCheck>,
    /// The measured/predicted factors across candidates.
    pub model_errors: ModelErrors,
    /// What the comparison means, in sentences.
    pub findings: Vec<String>,
    /// The winner's config file (what `--out-dir` writes).
    pub config_text: Option<String>,
    pub ranking: Ranking,
    pub trial: TrialReport,
}
