//! Steps 3 and 4: what the trials measured, ranked, and set beside the
//! prediction.
//!
//! A candidate's wall time is the median over its runs with the verdict's
//! distribution-free interval (`zmem_verdict::interval`). The fastest
//! candidate whose every run finished leads; every other candidate is
//! compared with it round by round (both ran in the same round, so the
//! machine's drift cancels): it ties with the leader when the median of the
//! paired differences is below 2 % of the leader's time
//! (`zmem_verdict::MARGIN`) or the differences' interval reaches zero.
//! A tie goes to the higher compression ratio measured (memory is what
//! compression saves). Candidates with a failed run (OOM kill, error) rank
//! after every candidate whose runs all finished.

use serde::Serialize;
use zmem_trial::{RunRecord, TrialReport};
use zmem_verdict::{interval, Interval, MARGIN};

/// One candidate as the trials saw it.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    pub config: String,
    pub runs: u32,
    /// Runs that exited 0.
    pub ok: u32,
    /// Outcomes of the other runs, e.g. `2× oom-killed`.
    pub failures: Vec<String>,
    /// Wall time over the runs that exited 0: median and interval, s.
    pub wall_s: Option<Interval>,
    pub user_s: Option<f64>,
    pub sys_s: Option<f64>,
    pub major_faults: Option<f64>,
    pub pswpin: Option<f64>,
    pub pswpout: Option<f64>,
    pub zswpin: Option<f64>,
    pub zswpout: Option<f64>,
    pub zswpwb: Option<f64>,
    /// The cgroup's peak memory, bytes (median over runs).
    pub cgroup_peak_bytes: Option<f64>,
    /// The compressed tier's ratio at its fullest (median over runs).
    pub compression_ratio: Option<f64>,
    /// This candidate's wall time minus the leader's, paired by round, s.
    pub behind_leader: Option<Interval>,
    /// 1 is best; candidates tied with the winner share rank 1.
    #[serde(rename = "measured_rank")]
    pub rank: usize,
    pub tied_with_winner: bool,
}

impl Measured {
    /// Every run finished with exit code 0.
    pub fn complete(&self) -> bool {
        self.runs > 0 && self.ok == self.runs
    }

    /// Pages swapped out by any tier (disk and zram count in pswpout, zswap in zswpout).
    pub fn swapped_out(&self) -> Option<f64> {
        Some(self.pswpout? + self.zswpout.unwrap_or(0.0))
    }
}

/// The measured side of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// Best first.
    pub measured: Vec<Measured>,
    /// `None` when no candidate finished a run.
    pub winner: Option<String>,
    /// The candidates tied with the leader (the leader included), when more than one.
    pub tie: Vec<String>,
}

fn walls_by_round(runs: &[RunRecord], config: &str) -> Vec<(u32, f64)> {
    runs.iter()
        .filter(|r| r.config == config && r.outcome.ok())
        .map(|r| (r.round, r.wall_s))
        .collect()
}

fn measured_of(report: &TrialReport, config: &str) -> Measured {
    let s = report.summaries.iter().find(|s| s.config == config);
    let med = |f: fn(&zmem_trial::ConfigSummary) -> Option<zmem_trial::Stats>| {
        s.and_then(f).map(|x| x.median)
    };
    let walls: Vec<f64> = walls_by_round(&report.runs, config)
        .into_iter()
        .map(|w| w.1)
        .collect();
    Measured {
        config: config.into(),
        runs: s.map_or(0, |s| s.runs),
        ok: s.map_or(0, |s| s.ok),
        failures: s.map(|s| s.failures.clone()).unwrap_or_default(),
        wall_s: (!walls.is_empty()).then(|| interval(&walls)),
        user_s: med(|s| s.user_s),
        sys_s: med(|s| s.sys_s),
        major_faults: med(|s| s.major_faults),
        pswpin: med(|s| s.pswpin),
        pswpout: med(|s| s.pswpout),
        zswpin: med(|s| s.zswpin),
        zswpout: med(|s| s.zswpout),
        zswpwb: med(|s| s.zswpwb),
        cgroup_peak_bytes: med(|s| s.cgroup_peak_bytes),
        compression_ratio: med(|s| s.compression_ratio),
        behind_leader: None,
        rank: 0,
        tied_with_winner: false,
    }
}

/// Sort key: complete candidates first, then those with some finished runs,
/// then the rest; within each, the median wall time.
fn order_key(m: &Measured) -> (u8, f64) {
    let class = if m.complete() {
        0
    } else if m.ok > 0 {
        1
    } else {
        2
    };
    (class, m.wall_s.map_or(f64::INFINITY, |w| w.median))
}

/// The paired per-round differences `other − leader`, s.
fn paired(runs: &[RunRecord], leader: &str, other: &str) -> Option<Interval> {
    let l = walls_by_round(runs, leader);
    let d: Vec<f64> = walls_by_round(runs, other)
        .into_iter()
        .filter_map(|(round, w)| Some(w - l.iter().find(|x| x.0 == round)?.1))
        .collect();
    (!d.is_empty()).then(|| interval(&d))
}

/// Rank the trialed candidates (`configs`, names as the trial reports them).
pub fn compare(report: &TrialReport, configs: &[String]) -> Outcome {
    let mut m: Vec<Measured> = configs.iter().map(|c| measured_of(report, c)).collect();
    m.sort_by(|a, b| {
        let (ka, kb) = (order_key(a), order_key(b));
        ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
    });
    let Some(leader) = m.first().filter(|l| l.ok > 0).cloned() else {
        return Outcome {
            measured: rank_in_order(m),
            winner: None,
            tie: Vec::new(),
        };
    };
    let lead_wall = leader.wall_s.map_or(0.0, |w| w.median);
    for x in m.iter_mut().skip(1) {
        x.behind_leader = paired(&report.runs, &leader.config, &x.config);
        x.tied_with_winner = leader.complete()
            && x.complete()
            && x.behind_leader
                .is_some_and(|d| d.median.abs() < MARGIN * lead_wall || d.ci_low <= 0.0);
    }
    m[0].tied_with_winner = true;
    let tie: Vec<String> = m
        .iter()
        .filter(|x| x.tied_with_winner)
        .map(|x| x.config.clone())
        .collect();
    // The tie rule: the highest compression ratio among the tied (no tier: 1).
    let winner = m
        .iter()
        .filter(|x| x.tied_with_winner)
        .max_by(|a, b| {
            let r = |x: &Measured| x.compression_ratio.unwrap_or(1.0);
            r(a).total_cmp(&r(b)).then(
                b.wall_s
                    .map_or(0.0, |w| w.median)
                    .total_cmp(&a.wall_s.map_or(0.0, |w| w.median)),
            )
        })
        .map(|x| x.config.clone());
    Outcome {
        measured: rank_in_order(m),
        winner,
        tie: if tie.len() > 1 { tie } else { Vec::new() },
    }
}

/// Ranks in the sorted order: the tie group shares 1, the rest follow by position.
fn rank_in_order(mut m: Vec<Measured>) -> Vec<Measured> {
    for (i, x) in m.iter_mut().enumerate() {
        x.rank = if x.tied_with_winner { 1 } else { i + 1 };
    }
    m
}

/// Ranks 1..n of `values` (smaller first), equal values sharing the average rank.
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && values[idx[j + 1]] == values[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            ranks[k] = avg;
        }
        i = j + 1;
    }
    ranks
}

/// Spearman's rank correlation of two rankings of the same items (average
/// ranks for ties); `None` when either ranking puts everything level.
pub fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    let n = a.len();
    if n < 2 || b.len() != n {
        return None;
    }
    let (ra, rb) = (average_ranks(a), average_ranks(b));
    let mean = (n as f64 + 1.0) / 2.0;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for i in 0..n {
        let (x, y) = (ra[i] - mean, rb[i] - mean);
        sab += x * y;
        saa += x * x;
        sbb += y * y;
    }
    (saa > 0.0 && sbb > 0.0).then(|| sab / (saa * sbb).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_trial::report::summarise;
    use zmem_trial::Outcome as RunOutcome;

    fn run(config: &str, round: u32, wall: f64, ok: bool) -> RunRecord {
        let mut r = RunRecord::not_run(
            config.into(),
            round,
            if ok {
                RunOutcome::Exited { code: 0 }
            } else {
                RunOutcome::OomKilled { kills: 1 }
            },
        );
        r.wall_s = wall;
        r
    }

    fn report(runs: Vec<RunRecord>, configs: &[&str]) -> TrialReport {
        let names: Vec<String> = configs.iter().map(|c| c.to_string()).collect();
        TrialReport {
            kernel: String::new(),
            cpus: 2,
            cgroup: zmem_trial::CgroupVersion::V2,
            memory_limit: 1 << 27,
            swap_size: 1 << 28,
            swappiness: None,
            page_cluster: None,
            command: vec![],
            workload: "w".into(),
            repeat: 3,
            baseline: "disk".into(),
            configs: names.clone(),
            forced_over: vec![],
            interrupted: false,
            summaries: summarise(&names, "disk", &runs),
            runs,
        }
    }

    #[test]
    fn the_fastest_complete_candidate_wins_and_close_ones_tie() {
        let mut runs = Vec::new();
        for round in 1..=3 {
            runs.push(run("zram:lz4", round, 2.00 + 0.01 * round as f64, true));
            runs.push(run("zram:lzo", round, 2.02 + 0.01 * round as f64, true));
            runs.push(run("disk", round, 9.0, true));
            runs.push(run("zswap:lzo", round, 1.0, round != 2));
        }
        let names = ["zram:lz4", "zram:lzo", "disk", "zswap:lzo"];
        let o = compare(&report(runs, &names), &names.map(String::from));
        let order: Vec<&str> = o.measured.iter().map(|m| m.config.as_str()).collect();
        // zswap:lzo was fastest but lost a run: it ranks after every complete candidate.
        assert_eq!(order, ["zram:lz4", "zram:lzo", "disk", "zswap:lzo"]);
        assert_eq!(o.tie, ["zram:lz4", "zram:lzo"]);
        assert!(o.measured[1].tied_with_winner && o.measured[1].rank == 1);
        assert_eq!(o.measured[2].rank, 3);
        assert!(!o.measured[3].complete());
        let d = o.measured[1].behind_leader.unwrap();
        assert!((d.median - 0.02).abs() < 1e-9);
        assert_eq!(o.winner.as_deref(), Some("zram:lz4"));
    }

    #[test]
    fn nobody_wins_when_nothing_finished() {
        let runs = vec![run("none", 1, 1.0, false)];
        let o = compare(&report(runs, &["none"]), &["none".to_string()]);
        assert!(o.winner.is_none());
        assert_eq!(o.measured[0].rank, 1);
    }

    #[test]
    fn rank_correlation() {
        assert_eq!(average_ranks(&[3.0, 1.0, 2.0, 1.0]), [4.0, 1.5, 3.0, 1.5]);
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), Some(1.0));
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), Some(-1.0));
        assert_eq!(spearman(&[1.0, 1.0], &[1.0, 2.0]), None);
        let r = spearman(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]).unwrap();
        assert!((r - 0.8).abs() < 1e-12, "{r}");
        // Infinite (failed) values tie with each other at the bottom.
        assert_eq!(
            average_ranks(&[f64::INFINITY, 1.0, f64::INFINITY]),
            [2.5, 1.0, 2.5]
        );
    }
}
