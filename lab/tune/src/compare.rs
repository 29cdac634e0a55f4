//! Steps 3 and 4: what the trials measured, ranked, and the decision.
//!
//! A candidate's wall time is the median over its runs with the verdict's
//! distribution-free interval (`zmem_trial::interval`).
//!
//! * A candidate with a failed run (OOM kill, crash, setup failure) cannot
//!   win: a configuration that sometimes kills the workload is not
//!   deployable, however fast its other runs were. It ranks after every
//!   candidate whose runs all finished ([`Standing::Failed`]).
//! * The fastest candidate whose every run finished leads. Every other
//!   complete candidate is compared with it round by round (both ran in the
//!   same round, so the machine's drift cancels) with the verdict's
//!   three-way call ([`zmem_trial::separate`]) on the paired differences
//!   (candidate − leader, s) against ±[`MARGIN_SHARE`] of the leader's
//!   median wall time: *behind* (the leader is faster by more than the
//!   margin), *equivalent* (within ±margin) or *undecided*. Tune looks once,
//!   after all its runs, so the interval needs the coverage of the verdict's
//!   first look (`1 − look_error(1)`, 95 %); fewer runs than reach it leave
//!   every comparison undecided.
//! * The pick, among the leader and the candidates not separated from it
//!   (equivalent or undecided), is the higher effective ratio the lab
//!   measured on the workload's pages (the same pages give the same figure
//!   every run: never a noisy quantity), then candidate order. It is proven
//!   when none of them is undecided.
//! * When no candidate finished all its runs there is no pick: no
//!   configuration held the workload under that limit.

use serde::Serialize;
use zmem_trial::{RunRecord, TrialReport};
use zmem_trial::{interval, interval_at, look_error, separate, Call, Interval};

/// The margin: a difference in wall time a user would feel, as a share of
/// the leader's median wall time (5 %).
pub const MARGIN_SHARE: f64 = 0.05;

/// Where a candidate stands against the leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// The fastest candidate whose every run finished.
    Leader,
    /// Its difference with the leader lies within ±margin, beyond noise.
    Equivalent,
    /// The runs cannot tell: its difference's interval straddles the margin.
    Undecided,
    /// The leader is faster by more than the margin, beyond noise.
    Behind,
    /// A run failed (OOM kill, crash, setup failure): it cannot win.
    Failed,
}

impl Standing {
    pub fn word(self) -> &'static str {
        match self {
            Standing::Leader => "leader",
            Standing::Equivalent => "equivalent",
            Standing::Undecided => "undecided",
            Standing::Behind => "behind",
            Standing::Failed => "failed",
        }
    }

    /// Not separated from the leader (the leader included): may be picked.
    pub fn contends(self) -> bool {
        matches!(
            self,
            Standing::Leader | Standing::Equivalent | Standing::Undecided
        )
    }
}

/// A trialed candidate as the comparison takes it: its name as the trial
/// reports it and the tie-break's ratio (the lab's effective ratio on the
/// workload's pages; 1 without a compressed tier).
#[derive(Debug, Clone)]
pub struct Entrant {
    pub config: String,
    pub ratio: f64,
}

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
    /// Memory stall time over a run (PSI some and full), s (median over runs).
    pub psi_some_total_s: Option<f64>,
    pub psi_full_total_s: Option<f64>,
    /// The compressed tier's ratio at its fullest (median over runs).
    pub compression_ratio: Option<f64>,
    /// The tie-break: the lab's effective ratio on the workload's pages.
    pub tie_break_ratio: f64,
    /// This candidate's wall time minus the leader's, paired by round, s:
    /// median and the interval the call used.
    pub behind_leader: Option<Interval>,
    pub standing: Standing,
    /// 1 is best; the candidates not separated from the leader share rank 1.
    #[serde(rename = "measured_rank")]
    pub rank: usize,
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

    /// Pages swapped in from any tier (pswpin, plus zswpin for zswap).
    pub fn swapped_in(&self) -> Option<f64> {
        Some(self.pswpin? + self.zswpin.unwrap_or(0.0))
    }

    pub fn median_wall(&self) -> Option<f64> {
        self.wall_s.map(|w| w.median)
    }
}

/// What the comparison decided, when some candidate finished all its runs.
#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    /// The fastest candidate whose every run finished.
    pub leader: String,
    /// The pick among the leader and the candidates not separated from it.
    pub winner: String,
    /// Candidates within ±margin of the leader, beyond noise.
    pub equivalent: Vec<String>,
    /// Candidates the runs could not separate from the leader.
    pub undecided: Vec<String>,
    /// No candidate was left undecided: the pick is as fast as any, within the margin.
    pub proven: bool,
    /// The margin, s: `MARGIN_SHARE` of the leader's median wall time.
    pub margin_s: f64,
    /// The coverage a call needs (`1 − look_error(1)`).
    pub coverage_needed: f64,
    /// The coverage the runs gave (0 when too few to reach it; `None`
    /// when no other candidate finished all its runs).
    pub coverage: Option<f64>,
    /// Paired rounds per comparison (the runs per candidate).
    pub rounds: usize,
    /// When undecided: `--repeat` that could decide (the fewest runs whose
    /// interval reaches the coverage needed, else twice the runs made).
    pub suggest_repeat: Option<usize>,
}

/// The measured side of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// Best first.
    pub measured: Vec<Measured>,
    /// `None` when no candidate finished all its runs.
    pub decision: Option<Decision>,
}

impl Outcome {
    pub fn winner(&self) -> Option<&str> {
        self.decision.as_ref().map(|d| d.winner.as_str())
    }
}

fn walls_by_round(runs: &[RunRecord], config: &str) -> Vec<(u32, f64)> {
    runs.iter()
        .filter(|r| r.config == config && r.outcome.ok())
        .map(|r| (r.round, r.wall_s))
        .collect()
}

fn measured_of(report: &TrialReport, e: &Entrant) -> Measured {
    let s = report.summaries.iter().find(|s| s.config == e.config);
    let med = |f: fn(&zmem_trial::ConfigSummary) -> Option<zmem_trial::Stats>| {
        s.and_then(f).map(|x| x.median)
    };
    let walls: Vec<f64> = walls_by_round(&report.runs, &e.config)
        .into_iter()
        .map(|w| w.1)
        .collect();
    let (runs, ok) = s.map_or((0, 0), |s| (s.runs, s.ok));
    Measured {
        config: e.config.clone(),
        runs,
        ok,
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
        psi_some_total_s: med(|s| s.psi_some_total_s),
        psi_full_total_s: med(|s| s.psi_full_total_s),
        compression_ratio: med(|s| s.compression_ratio),
        tie_break_ratio: e.ratio,
        behind_leader: None,
        standing: if runs > 0 && ok == runs {
            Standing::Undecided
        } else {
            Standing::Failed
        },
        rank: 0,
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
    (class, m.median_wall().unwrap_or(f64::INFINITY))
}

/// The paired per-round differences `other − leader`, s.
fn paired(runs: &[RunRecord], leader: &str, other: &str) -> Vec<f64> {
    let l = walls_by_round(runs, leader);
    walls_by_round(runs, other)
        .into_iter()
        .filter_map(|(round, w)| Some(w - l.iter().find(|x| x.0 == round)?.1))
        .collect()
}

/// The fewest paired rounds whose distribution-free interval reaches `level`.
pub fn rounds_for(level: f64) -> usize {
    (2..1000)
        .find(|&n| interval_at(&vec![0.0; n], level).is_some())
        .unwrap_or(1000)
}

/// Rank the trialed candidates (`entrants`, in candidate order) and decide.
pub fn compare(report: &TrialReport, entrants: &[Entrant]) -> Outcome {
    let mut m: Vec<Measured> = entrants.iter().map(|e| measured_of(report, e)).collect();
    m.sort_by(|a, b| {
        let (ka, kb) = (order_key(a), order_key(b));
        ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
    });
    let Some(leader) = m.first().filter(|l| l.complete()).cloned() else {
        return Outcome {
            measured: rank_in_order(m),
            decision: None,
        };
    };
    let margin = MARGIN_SHARE * leader.median_wall().unwrap_or(0.0);
    let error = look_error(1);
    let mut coverage = 1.0f64;
    for x in m.iter_mut() {
        if x.config == leader.config {
            x.standing = Standing::Leader;
            continue;
        }
        let d = paired(&report.runs, &leader.config, &x.config);
        if d.is_empty() {
            continue;
        }
        let s = separate(&d, margin, error);
        x.behind_leader = Some(s.diff);
        if x.standing == Standing::Failed {
            continue;
        }
        coverage = coverage.min(s.coverage);
        x.standing = match s.call {
            Call::Ahead => Standing::Behind,
            Call::Equivalent => Standing::Equivalent,
            Call::Undecided => Standing::Undecided,
        };
    }
    let decision = decide(&m, entrants, &leader, margin, coverage);
    Outcome {
        measured: rank_in_order(m),
        decision: Some(decision),
    }
}

/// The pick among the contenders: the higher tie-break ratio, then the
/// earlier in candidate order.
fn decide(
    m: &[Measured],
    entrants: &[Entrant],
    leader: &Measured,
    margin: f64,
    coverage: f64,
) -> Decision {
    let order = |c: &str| {
        entrants
            .iter()
            .position(|e| e.config == c)
            .unwrap_or(usize::MAX)
    };
    let named = |s: Standing| -> Vec<String> {
        let mut v: Vec<&Measured> = m.iter().filter(|x| x.standing == s).collect();
        v.sort_by_key(|x| order(&x.config));
        v.into_iter().map(|x| x.config.clone()).collect()
    };
    let winner = m
        .iter()
        .filter(|x| x.standing.contends())
        .max_by(|a, b| {
            a.tie_break_ratio
                .total_cmp(&b.tie_break_ratio)
                .then(order(&b.config).cmp(&order(&a.config)))
        })
        .map_or(leader.config.clone(), |x| x.config.clone());
    let undecided = named(Standing::Undecided);
    let rounds = leader.runs as usize;
    let needed = 1.0 - look_error(1);
    let suggest_repeat = (!undecided.is_empty()).then(|| {
        let fewest = rounds_for(needed);
        if rounds < fewest {
            fewest
        } else {
            2 * rounds
        }
    });
    let compared = m
        .iter()
        .any(|x| x.standing != Standing::Leader && x.complete());
    Decision {
        leader: leader.config.clone(),
        winner,
        equivalent: named(Standing::Equivalent),
        proven: undecided.is_empty(),
        undecided,
        margin_s: margin,
        coverage_needed: needed,
        coverage: compared.then_some(coverage),
        rounds,
        suggest_repeat,
    }
}

/// Ranks in the sorted order: the contenders share 1, the rest follow by position.
fn rank_in_order(mut m: Vec<Measured>) -> Vec<Measured> {
    for (i, x) in m.iter_mut().enumerate() {
        x.rank = if x.standing.contends() { 1 } else { i + 1 };
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
pub(crate) mod tests {
    use super::*;
    use zmem_trial::report::summarise;
    use zmem_trial::Outcome as RunOutcome;

    pub(crate) fn run(config: &str, round: u32, wall: f64, ok: bool) -> RunRecord {
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

    pub(crate) fn report(runs: Vec<RunRecord>, configs: &[&str]) -> TrialReport {
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
            decision: None,
            other_decisions: vec![],
            summaries: summarise(&names, "disk", &runs),
            runs,
        }
    }

    pub(crate) fn entrants(e: &[(&str, f64)]) -> Vec<Entrant> {
        e.iter()
            .map(|(c, r)| Entrant {
                config: c.to_string(),
                ratio: *r,
            })
            .collect()
    }

    /// `rounds` rounds: each config's wall time is `base + jitter(round)`,
    /// failing in the rounds listed.
    pub(crate) fn rounds(spec: &[(&str, f64, &[u32])], n: u32) -> Vec<RunRecord> {
        let mut runs = Vec::new();
        for round in 1..=n {
            for (c, base, fail) in spec {
                let jitter = 0.01 * ((round * 7 + c.len() as u32) % 5) as f64;
                runs.push(run(c, round, base + jitter, !fail.contains(&round)));
            }
        }
        runs
    }

    fn standing(o: &Outcome, c: &str) -> Standing {
        o.measured.iter().find(|m| m.config == c).unwrap().standing
    }

    #[test]
    fn a_candidate_with_a_killed_run_never_wins() {
        // zswap:lzo is fastest and compresses best, but one run was OOM-killed.
        let names = ["zram:lz4", "zram:lzo", "disk", "zswap:lzo"];
        let runs = rounds(
            &[
                ("zram:lz4", 2.0, &[]),
                ("zram:lzo", 2.0, &[]),
                ("disk", 9.0, &[]),
                ("zswap:lzo", 1.0, &[2]),
            ],
            8,
        );
        let e = entrants(&[
            ("zram:lz4", 2.0),
            ("zram:lzo", 2.1),
            ("disk", 1.0),
            ("zswap:lzo", 3.0),
        ]);
        let o = compare(&report(runs, &names), &e);
        let order: Vec<&str> = o.measured.iter().map(|m| m.config.as_str()).collect();
        // It ranks after every complete candidate, whatever its speed.
        assert_eq!(order[3], "zswap:lzo");
        assert_eq!(standing(&o, "zswap:lzo"), Standing::Failed);
        assert_eq!(o.measured[3].rank, 4);
        // Its paired difference is still reported (it was faster when it finished).
        assert!(o.measured[3].behind_leader.unwrap().median < 0.0);
        let d = o.decision.as_ref().unwrap();
        assert_ne!(d.winner, "zswap:lzo");
        assert!(!d.undecided.contains(&"zswap:lzo".to_string()));
        // Eight rounds reach the first look's 95 %: decided.
        assert_eq!(standing(&o, "disk"), Standing::Behind);
        assert!(d.proven, "{d:?}");
        assert_eq!(d.suggest_repeat, None);
        // lz4 and lzo are equivalent (equal bases, 0.04 s of jitter against a
        // 0.1 s margin); the tie goes to lzo's higher ratio.
        assert_eq!(d.equivalent.len(), 1);
        assert_eq!(d.winner, "zram:lzo");
        assert!((d.margin_s - 0.05 * o.measured[0].median_wall().unwrap()).abs() < 1e-12);
        assert!(d.coverage.unwrap() >= d.coverage_needed);
    }

    #[test]
    fn no_pick_when_no_candidate_finished_all_its_runs() {
        // Every candidate failed at least once; some of their runs finished.
        let names = ["zram:lz4", "disk"];
        let runs = rounds(&[("zram:lz4", 2.0, &[1]), ("disk", 9.0, &[3])], 3);
        let o = compare(
            &report(runs, &names),
            &entrants(&[("zram:lz4", 2.0), ("disk", 1.0)]),
        );
        assert!(o.decision.is_none());
        assert_eq!(o.winner(), None);
        assert!(o.measured.iter().all(|m| m.standing == Standing::Failed));
        assert_eq!(o.measured[0].rank, 1);
        assert_eq!(o.measured[1].rank, 2);
        // Nothing finished at all.
        let runs = vec![run("none", 1, 1.0, false)];
        let o = compare(&report(runs, &["none"]), &entrants(&[("none", 1.0)]));
        assert!(o.decision.is_none());
    }

    #[test]
    fn too_few_runs_leave_it_undecided_and_the_pick_stable() {
        // Three runs: the interval cannot reach 95 %, however clear the gap.
        let names = ["zram:lz4", "zram:lzo", "disk"];
        let runs = rounds(
            &[
                ("zram:lz4", 2.0, &[]),
                ("zram:lzo", 2.5, &[]),
                ("disk", 9.0, &[]),
            ],
            3,
        );
        let r = report(runs, &names);
        let e = entrants(&[("zram:lz4", 2.0), ("zram:lzo", 2.0), ("disk", 1.0)]);
        let o = compare(&r, &e);
        let d = o.decision.as_ref().unwrap();
        assert_eq!(d.leader, "zram:lz4");
        assert_eq!(d.undecided, ["zram:lzo", "disk"]);
        assert!(!d.proven);
        assert_eq!(d.coverage, Some(0.0));
        // Equal ratios: candidate order decides, not the wall times.
        assert_eq!(d.winner, "zram:lz4");
        let swapped = entrants(&[("zram:lzo", 2.0), ("zram:lz4", 2.0), ("disk", 1.0)]);
        assert_eq!(compare(&r, &swapped).winner(), Some("zram:lzo"));
        // The higher ratio wins over candidate order.
        let e = entrants(&[("zram:lz4", 2.0), ("zram:lzo", 2.2), ("disk", 1.0)]);
        assert_eq!(compare(&r, &e).winner(), Some("zram:lzo"));
        // Six runs are the fewest that reach 95 %.
        assert_eq!(d.suggest_repeat, Some(6));
        assert_eq!(rounds_for(1.0 - look_error(1)), 6);
        assert!(o.measured.iter().all(|m| m.rank == 1));
    }

    #[test]
    fn noise_on_a_candidate_that_is_behind_never_makes_it_equivalent() {
        // zram:lzo is 0.5 s behind (margin 0.1 s); noise on its rounds only.
        let names = ["zram:lz4", "zram:lzo"];
        for noise in [0.0, 0.2, 1.0, 4.0] {
            let mut runs = Vec::new();
            for round in 1..=8u32 {
                let wobble = noise * (((round * 5) % 7) as f64 / 6.0 - 0.5);
                runs.push(run("zram:lz4", round, 2.0, true));
                runs.push(run("zram:lzo", round, 2.5 + wobble, true));
            }
            let o = compare(
                &report(runs, &names),
                &entrants(&[("zram:lz4", 2.0), ("zram:lzo", 2.2)]),
            );
            let s = standing(&o, "zram:lzo");
            assert_ne!(s, Standing::Equivalent, "noise {noise}");
            if noise == 0.0 {
                assert_eq!(s, Standing::Behind);
                assert_eq!(o.winner(), Some("zram:lz4"));
            }
        }
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
