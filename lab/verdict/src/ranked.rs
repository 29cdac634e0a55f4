//! One candidate as the verdict's rounds saw it: its figures over the
//! rounds, its score, and what the decision said of it against the leader.
//! Built by `rank`, judged by `decision`.

use serde::Serialize;

use zmem_trial::{Call, Interval};

/// One candidate's results over all rounds.
#[derive(Debug, Clone, Serialize)]
pub struct Ranked {
    pub algo: String,
    /// `kernel` or `engine`.
    pub target: String,
    /// Score, median over rounds (deployable candidates only).
    pub score: Option<Interval>,
    /// Median 4 KiB swap-in latency per round, ns.
    #[serde(rename = "lat_p50_ns")]
    pub read_lat_ns: Interval,
    pub read_mibps: Interval,
    pub write_mibps: Interval,
    pub orig_data_size: u64,
    pub compr_data_size: u64,
    pub mem_used_total: u64,
    pub effective_ratio: f64,
    /// The score of every round, in round order (deployable candidates).
    pub round_scores: Vec<f64>,
    /// The leader's score minus this one's, paired by round (median and
    /// interval at the decision's look).
    pub behind_leader: Option<Interval>,
    /// What the decision says of this candidate against the leader.
    pub call: Option<Call>,
}
