//! Steps 3 and 4: what the trials measured, ranked, and the decision.
//!
//! The candidates are judged by one metric — wall time by default, or what
//! `zmem tune --metric` names — with trial's judgement
//! ([`zmem_trial::judge`]), the same code `zmem trial --metric` uses:
//!
//! * A candidate with a failed run (OOM kill, crash, setup failure) or a run
//!   that did not report the metric cannot win: a configuration that
//!   sometimes kills the workload is not deployable, however good its other
//!   runs were. It ranks after every candidate whose runs all finished
//!   ([`Standing::Failed`]).
//! * The best median of the others leads. Every other complete candidate is
//!   compared with it round by round (both ran in the same round, so the
//!   machine's drift cancels) with the verdict's three-way call on the paired
//!   differences against ±[`MARGIN_SHARE`] of the leader's median:
//!   *behind*, *equivalent* or *undecided*. Tune looks once, after all its
//!   runs, so the interval needs the coverage of the verdict's first look
//!   (`1 − look_error(1)`, 95 %); fewer runs than reach it leave every
//!   comparison undecided.
//! * The pick, among the leader and the candidates not separated from it
//!   (equivalent or undecided), is the higher effective ratio the lab
//!   measured on the workload's pages (the same pages give the same figure
//!   every run: never a noisy quantity), then candidate order. It is proven
//!   when none of them is undecided.
//! * When no candidate finished all its runs there is no pick: no
//!   configuration held the workload under that limit.

use serde::Serialize;
use zmem_trial::{interval, judge, metric_value, Interval, MetricSpec, RunRecord, TrialReport};

pub use zmem_trial::{Standing, MARGIN_SHARE};

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
    /// The deciding metric over the runs that exited 0 and reported it
    /// (the wall time's again without `--metric`).
    pub metric: Option<Interval>,
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
    /// The leader's advantage over this candidate in the deciding metric,
    /// paired by round (for wall time: this candidate's minus the leader's,
    /// s): median and the interval the call used.
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
    /// The metric that decided (`wall_s` by default), its unit and direction.
    pub metric: String,
    pub unit: Option<String>,
    pub direction: zmem_trial::Direction,
    /// The best candidate in it whose every run finished.
    pub leader: String,
    /// The pick among the leader and the candidates not separated from it.
    pub winner: String,
    /// Candidates within ±margin of the leader, beyond noise.
    pub equivalent: Vec<String>,
    /// Candidates the runs could not separate from the leader.
    pub undecided: Vec<String>,
    /// No candidate was left undecided: the pick is as good as any, within the margin.
    pub proven: bool,
    /// The margin in the metric's unit (s for wall time): `MARGIN_SHARE`
    /// of the leader's median.
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

impl Decision {
    /// Decided by wall time (the model predicts it), not by a figure of the workload's.
    pub fn by_wall(&self) -> bool {
        self.metric == "wall_s"
    }
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

fn values(runs: &[RunRecord], config: &str, metric: &str) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.config == config && r.outcome.ok())
        .filter_map(|r| metric_value(r, metric))
        .collect()
}

fn measured_of(report: &TrialReport, e: &Entrant, metric: &str) -> Measured {
    let s = report.summaries.iter().find(|s| s.config == e.config);
    let med = |f: fn(&zmem_trial::ConfigSummary) -> Option<zmem_trial::Stats>| {
        s.and_then(f).map(|x| x.median)
    };
    let iv = |name: &str| {
        let v = values(&report.runs, &e.config, name);
        (!v.is_empty()).then(|| interval(&v))
    };
    let (runs, ok) = s.map_or((0, 0), |s| (s.runs, s.ok));
    Measured {
        config: e.config.clone(),
        runs,
        ok,
        failures: s.map(|s| s.failures.clone()).unwrap_or_default(),
        wall_s: iv("wall_s"),
        metric: iv(metric),
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
        standing: Standing::Failed,
        rank: 0,
    }
}

/// Rank the trialed candidates (`entrants`, in candidate order) by `metric` and decide.
pub fn compare(report: &TrialReport, entrants: &[Entrant], metric: &MetricSpec) -> Outcome {
    let configs: Vec<String> = entrants.iter().map(|e| e.config.clone()).collect();
    let d = judge(&report.runs, &configs, metric);
    // The judgement's order: those that may win first, then by median.
    let m: Vec<Measured> = d
        .judged
        .iter()
        .filter_map(|j| {
            let e = entrants.iter().find(|e| e.config == j.config)?;
            let mut x = measured_of(report, e, &metric.name);
            x.standing = j.standing;
            x.behind_leader = j.behind_leader;
            Some(x)
        })
        .collect();
    let decision = d.leader.as_ref().map(|leader| Decision {
        metric: d.metric.clone(),
        unit: d.unit.clone(),
        direction: d.direction,
        leader: leader.clone(),
        winner: pick(&m, entrants, leader),
        equivalent: d.equivalent.clone(),
        proven: d.settled,
        undecided: d.undecided.clone(),
        margin_s: d.margin,
        coverage_needed: d.coverage_needed,
        coverage: d.coverage,
        rounds: d.rounds,
        suggest_repeat: d.suggest_repeat,
    });
    Outcome {
        measured: rank_in_order(m),
        decision,
    }
}

/// The pick among the contenders: the higher tie-break ratio, then the
/// earlier in candidate order.
fn pick(m: &[Measured], entrants: &[Entrant], leader: &str) -> String {
    let order = |c: &str| {
        entrants
            .iter()
            .position(|e| e.config == c)
            .unwrap_or(usize::MAX)
    };
    m.iter()
        .filter(|x| x.standing.contends())
        .max_by(|a, b| {
            a.tie_break_ratio
                .total_cmp(&b.tie_break_ratio)
                .then(order(&b.config).cmp(&order(&a.config)))
        })
        .map_or(leader.to_string(), |x| x.config.clone())
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
    use zmem_trial::{look_error, rounds_for};

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
            stopped_early: vec![],
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
        let o = compare(&report(runs, &names), &e, &zmem_trial::MetricSpec::wall());
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
            &zmem_trial::MetricSpec::wall(),
        );
        assert!(o.decision.is_none());
        assert_eq!(o.winner(), None);
        assert!(o.measured.iter().all(|m| m.standing == Standing::Failed));
        assert_eq!(o.measured[0].rank, 1);
        assert_eq!(o.measured[1].rank, 2);
        // Nothing finished at all.
        let runs = vec![run("none", 1, 1.0, false)];
        let o = compare(
            &report(runs, &["none"]),
            &entrants(&[("none", 1.0)]),
            &zmem_trial::MetricSpec::wall(),
        );
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
        let o = compare(&r, &e, &zmem_trial::MetricSpec::wall());
        let d = o.decision.as_ref().unwrap();
        assert_eq!(d.leader, "zram:lz4");
        assert_eq!(d.undecided, ["zram:lzo", "disk"]);
        assert!(!d.proven);
        assert_eq!(d.coverage, Some(0.0));
        // Equal ratios: candidate order decides, not the wall times.
        assert_eq!(d.winner, "zram:lz4");
        let swapped = entrants(&[("zram:lzo", 2.0), ("zram:lz4", 2.0), ("disk", 1.0)]);
        assert_eq!(
            compare(&r, &swapped, &zmem_trial::MetricSpec::wall()).winner(),
            Some("zram:lzo")
        );
        // The higher ratio wins over candidate order.
        let e = entrants(&[("zram:lz4", 2.0), ("zram:lzo", 2.2), ("disk", 1.0)]);
        assert_eq!(
            compare(&r, &e, &zmem_trial::MetricSpec::wall()).winner(),
            Some("zram:lzo")
        );
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
                &zmem_trial::MetricSpec::wall(),
            );
            let s = standing(&o, "zram:lzo");
            assert_ne!(s, Standing::Equivalent, "noise {noise}");
            if noise == 0.0 {
                assert_eq!(s, Standing::Behind);
                assert_eq!(o.winner(), Some("zram:lz4"));
            }
        }
    }

    /// With `--metric get_max_ms`: disk has the best wall time, but zram's
    /// worst request is several times better, so zram leads and is picked,
    /// settled; the decision says by what.
    #[test]
    fn a_metric_ranks_and_picks() {
        let names = ["disk", "zram:lz4"];
        let mut runs = rounds(&[("disk", 2.0, &[]), ("zram:lz4", 2.5, &[])], 6);
        for r in &mut runs {
            let v = if r.config == "disk" { 100.0 } else { 9.0 } + r.round as f64 % 3.0;
            r.metrics.push(zmem_trial::Metric {
                name: "get_max_ms".into(),
                value: v,
                unit: Some("ms".into()),
                source: "ZMEM_METRICS".into(),
            });
        }
        let r = report(runs, &names);
        let e = entrants(&[("disk", 1.0), ("zram:lz4", 2.0)]);
        assert_eq!(
            compare(&r, &e, &MetricSpec::wall())
                .decision
                .unwrap()
                .leader,
            "disk"
        );
        let o = compare(&r, &e, &"get_max_ms".parse().unwrap());
        let d = o.decision.as_ref().unwrap();
        assert_eq!(
            (d.leader.as_str(), d.winner.as_str()),
            ("zram:lz4", "zram:lz4")
        );
        assert!(d.proven && !d.by_wall());
        assert_eq!(
            (d.metric.as_str(), d.unit.as_deref()),
            ("get_max_ms", Some("ms"))
        );
        assert_eq!(o.measured[1].standing, Standing::Behind);
        assert!(o.measured[0].metric.unwrap().median < 12.0);
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
