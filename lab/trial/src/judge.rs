//! `--metric`: the configurations judged by one figure, with the verdict's
//! method ([`crate::separate`]).
//!
//! * A configuration with a run that failed (exit code, signal, OOM kill,
//!   setup failure) or that did not report the metric cannot win
//!   ([`Standing::Failed`]).
//! * Of the others, the best median leads. Each other one is compared with
//!   it round by round (both ran in the same round, so the machine's drift
//!   cancels): the paired differences (the leader's advantage, in the
//!   metric's unit) get a distribution-free interval, and the comparison is
//!   *behind* (the whole interval beyond the margin), *equivalent* (inside
//!   ±margin) or *undecided*. The trial looks once, after all its rounds,
//!   so the interval needs the coverage of the verdict's first look
//!   (`1 − look_error(1)`, 95 %): six rounds at least.
//! * The margin is a difference a user would feel: by default
//!   [`MARGIN_SHARE`] of the leader's median, or what `--metric
//!   NAME:DIR:MARGIN` gives (`10%`, or an amount in the metric's unit).

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::measure::RunRecord;
use crate::metrics::{direction_of, valid_name, Direction};
use crate::{interval, interval_at, look_error, separate, Call, Interval};

/// The default margin: this share of the leader's median (5 %).
pub const MARGIN_SHARE: f64 = 0.05;

/// The trial's own figures `--metric` takes besides the workload's, and
/// what each is.
pub const BUILTIN_METRICS: &[(&str, &str)] = &[
    ("wall_s", "wall time of the workload, s"),
    ("user_s", "user CPU time of the workload, s"),
    ("sys_s", "system CPU time of the workload, s"),
    ("major_faults", "major page faults of the workload"),
];

/// The value of metric `name` in run `r`: a built-in, else the workload's.
pub fn value(r: &RunRecord, name: &str) -> Option<f64> {
    match name {
        "wall_s" => Some(r.wall_s),
        "user_s" => Some(r.user_s),
        "sys_s" => Some(r.sys_s),
        "major_faults" => Some(r.major_faults as f64),
        _ => r.metrics.iter().find(|m| m.name == name).map(|m| m.value),
    }
}

/// The margin of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarginSpec {
    /// This share of the leader's median.
    Share(f64),
    /// This amount, in the metric's unit.
    Amount(f64),
}

/// One `--metric NAME[:lower|:higher][:MARGIN]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricSpec {
    pub name: String,
    pub direction: Direction,
    pub margin: MarginSpec,
}

impl MetricSpec {
    /// Wall time, the default: lower is better, 5 %.
    pub fn wall() -> MetricSpec {
        MetricSpec {
            name: "wall_s".into(),
            direction: Direction::Lower,
            margin: MarginSpec::Share(MARGIN_SHARE),
        }
    }
}

impl FromStr for MetricSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut f = s.split(':');
        let name = f.next().unwrap_or_default().to_string();
        if !valid_name(&name) {
            return Err(format!(
                "metric name {name:?}: 1 to 64 of A-Z a-z 0-9 _ . -, starting with a letter"
            ));
        }
        let (mut direction, mut margin) = (None, MarginSpec::Share(MARGIN_SHARE));
        for part in f {
            match part {
                "lower" => direction = Some(Direction::Lower),
                "higher" => direction = Some(Direction::Higher),
                m => margin = parse_margin(m)?,
            }
        }
        let direction = direction.or_else(|| direction_of(&name)).ok_or_else(|| {
            format!(
                "--metric {name}: which way is better is not known from its name (a time ends in _ns, _us, _ms or _s, a rate in _per_s, _rps, _tps, _qps or _iops); give {name}:lower or {name}:higher"
            )
        })?;
        Ok(MetricSpec {
            name,
            direction,
            margin,
        })
    }
}

fn parse_margin(m: &str) -> Result<MarginSpec, String> {
    let bad = || {
        format!("--metric margin {m:?}: a share such as 5% or a positive amount in the metric's unit (or lower/higher)")
    };
    let (num, share) = match m.strip_suffix('%') {
        Some(n) => (n, true),
        None => (m, false),
    };
    let x: f64 = num.parse().map_err(|_| bad())?;
    if !(x.is_finite() && x > 0.0) || (share && x >= 100.0) {
        return Err(bad());
    }
    Ok(if share {
        MarginSpec::Share(x / 100.0)
    } else {
        MarginSpec::Amount(x)
    })
}

/// Where a configuration stands against the leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// The best median of the configurations that may win.
    Leader,
    /// Its difference with the leader lies within ±margin, beyond noise.
    Equivalent,
    /// The runs cannot tell: its difference's interval straddles the margin.
    Undecided,
    /// The leader is better by more than the margin, beyond noise.
    Behind,
    /// A run failed or did not report the metric: it cannot win.
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

/// One configuration in a metric's decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    pub config: String,
    pub standing: Standing,
    /// The leader's advantage over it, paired by round, in the metric's unit:
    /// median and the interval the call used (`None` for the leader, or
    /// without a shared round).
    pub behind_leader: Option<Interval>,
}

/// What one metric decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDecision {
    pub metric: String,
    pub direction: Direction,
    /// The unit the workload gave with it, if any.
    pub unit: Option<String>,
    /// No configuration that may win was left undecided.
    pub settled: bool,
    /// The best median of the configurations whose every run finished and
    /// reported the metric (`None`: no such configuration).
    pub leader: Option<String>,
    pub equivalent: Vec<String>,
    pub undecided: Vec<String>,
    /// The leader is ahead of these by more than the margin.
    pub behind: Vec<String>,
    /// A run failed or did not report the metric.
    pub failed: Vec<String>,
    /// The margin in the metric's unit, and how it was set.
    pub margin: f64,
    pub margin_rule: String,
    /// Rounds with a run of the leader.
    pub rounds: usize,
    /// The coverage a call needs, and the least the comparisons reached
    /// (0 when too few rounds; `None` when nothing was compared).
    pub coverage_needed: f64,
    pub coverage: Option<f64>,
    /// When undecided: a `--repeat` that could decide.
    pub suggest_repeat: Option<usize>,
    /// Every configuration, leader first, then by median.
    pub judged: Vec<Judged>,
}

/// The metric's value per round of `config`'s runs, and whether every run
/// finished and reported it.
fn by_round(runs: &[RunRecord], config: &str, name: &str) -> (Vec<(u32, f64)>, bool) {
    let mine: Vec<&RunRecord> = runs.iter().filter(|r| r.config == config).collect();
    let v: Vec<(u32, f64)> = mine
        .iter()
        .filter(|r| r.outcome.ok())
        .filter_map(|r| Some((r.round, value(r, name)?)))
        .collect();
    let complete = !mine.is_empty() && v.len() == mine.len();
    (v, complete)
}

/// The fewest paired rounds whose distribution-free interval reaches `level`.
pub fn rounds_for(level: f64) -> usize {
    (2..1000)
        .find(|&n| interval_at(&vec![0.0; n], level).is_some())
        .unwrap_or(1000)
}

/// A configuration's values of the metric by round, whether it may win,
/// and its median.
#[derive(Clone)]
struct Row {
    config: String,
    values: Vec<(u32, f64)>,
    complete: bool,
    median: f64,
}

/// The configurations' rows, those that may win first, then the better
/// median first (none last).
fn rows(runs: &[RunRecord], configs: &[String], m: &MetricSpec) -> Vec<Row> {
    let mut rows: Vec<Row> = configs
        .iter()
        .map(|c| {
            let (values, complete) = by_round(runs, c, &m.name);
            let median = interval(&values.iter().map(|x| x.1).collect::<Vec<_>>()).median;
            Row {
                config: c.clone(),
                values,
                complete,
                median,
            }
        })
        .collect();
    let key = |r: &Row| {
        let signed = match m.direction {
            Direction::Lower => r.median,
            Direction::Higher => -r.median,
        };
        (
            !r.complete,
            if signed.is_nan() {
                f64::INFINITY
            } else {
                signed
            },
        )
    };
    rows.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
    });
    rows
}

/// The leader's advantage over `r`, paired by round.
fn advantage(r: &Row, leader: &Row, d: Direction) -> Vec<f64> {
    r.values
        .iter()
        .filter_map(|(round, x)| {
            let lx = leader.values.iter().find(|y| y.0 == *round)?.1;
            Some(match d {
                Direction::Lower => x - lx,
                Direction::Higher => lx - x,
            })
        })
        .collect()
}

/// The margin in the metric's unit, and how it was set.
fn margin(m: &MetricSpec, leader: Option<&Row>) -> (f64, String) {
    match m.margin {
        MarginSpec::Amount(x) => (x, "given with --metric".into()),
        MarginSpec::Share(p) => (
            leader.map_or(0.0, |l| p * l.median.abs()),
            format!("{:.0} % of the leader's median", p * 100.0),
        ),
    }
}

/// Judge `configs` by metric `m` over `runs`, once after all rounds (the
/// error of the verdict's first look).
pub fn judge(runs: &[RunRecord], configs: &[String], m: &MetricSpec) -> MetricDecision {
    judge_at(runs, configs, m, look_error(1))
}

/// The same at a look that may err with probability `error` (a look during
/// the rounds spends less, [`crate::look_error`]).
pub fn judge_at(
    runs: &[RunRecord],
    configs: &[String],
    m: &MetricSpec,
    error: f64,
) -> MetricDecision {
    let rows = rows(runs, configs, m);
    let leader = rows.first().filter(|r| r.complete).cloned();
    let (margin, margin_rule) = margin(m, leader.as_ref());
    let mut coverage: Option<f64> = None;
    let mut judged = Vec::new();
    for r in &rows {
        let mut j = Judged {
            config: r.config.clone(),
            standing: if r.complete {
                Standing::Undecided
            } else {
                Standing::Failed
            },
            behind_leader: None,
        };
        match &leader {
            Some(l) if l.config == r.config => j.standing = Standing::Leader,
            Some(l) => {
                let diffs = advantage(r, l, m.direction);
                if !diffs.is_empty() {
                    let s = separate(&diffs, margin, error);
                    j.behind_leader = Some(s.diff);
                    if r.complete {
                        coverage = Some(coverage.map_or(s.coverage, |c| c.min(s.coverage)));
                        j.standing = match s.call {
                            Call::Ahead => Standing::Behind,
                            Call::Equivalent => Standing::Equivalent,
                            Call::Undecided => Standing::Undecided,
                        };
                    }
                }
            }
            None => {}
        }
        judged.push(j);
    }
    let named = |s: Standing| -> Vec<String> {
        judged
            .iter()
            .filter(|j| j.standing == s)
            .map(|j| j.config.clone())
            .collect()
    };
    let undecided = named(Standing::Undecided);
    let rounds = leader.as_ref().map_or(0, |l| l.values.len());
    let needed = 1.0 - error;
    MetricDecision {
        metric: m.name.clone(),
        direction: m.direction,
        unit: unit_of(runs, &m.name),
        settled: leader.is_some() && undecided.is_empty(),
        leader: leader.map(|l| l.config),
        equivalent: named(Standing::Equivalent),
        behind: named(Standing::Behind),
        failed: named(Standing::Failed),
        suggest_repeat: (!undecided.is_empty()).then(|| {
            let fewest = rounds_for(needed);
            if rounds < fewest {
                fewest
            } else {
                2 * rounds
            }
        }),
        undecided,
        margin,
        margin_rule,
        rounds,
        coverage_needed: needed,
        coverage,
        judged,
    }
}

/// The unit of metric `name`: the first a run gave (`s` for the built-in times).
pub fn unit_of(runs: &[RunRecord], name: &str) -> Option<String> {
    if matches!(name, "wall_s" | "user_s" | "sys_s") {
        return Some("s".into());
    }
    runs.iter()
        .flat_map(|r| &r.metrics)
        .find(|x| x.name == name)
        .and_then(|x| x.unit.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metric;
    use crate::Outcome;

    fn run(config: &str, round: u32, max_ms: Option<f64>, ok: bool) -> RunRecord {
        let outcome = if ok {
            Outcome::Exited { code: 0 }
        } else {
            Outcome::OomKilled { kills: 1 }
        };
        let mut r = RunRecord::not_run(config.into(), round, outcome);
        r.wall_s = 10.0;
        r.metrics = max_ms
            .map(|v| Metric {
                name: "get_max_ms".into(),
                value: v,
                unit: Some("ms".into()),
                source: "ZMEM_METRICS".into(),
            })
            .into_iter()
            .collect();
        r
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// `n` rounds of disk around 100 ms and zram around 8 ms.
    fn rounds(n: u32) -> Vec<RunRecord> {
        let mut v = Vec::new();
        for round in 1..=n {
            let w = (round % 3) as f64;
            v.push(run("disk", round, Some(100.0 + 5.0 * w), true));
            v.push(run("zram:lz4", round, Some(8.0 + w), true));
        }
        v
    }

    #[test]
    fn specs() {
        let m: MetricSpec = "get_max_ms".parse().unwrap();
        assert_eq!(m.direction, Direction::Lower);
        assert_eq!(m.margin, MarginSpec::Share(0.05));
        let m: MetricSpec = "get_rps:10%".parse().unwrap();
        assert_eq!(
            (m.direction, m.margin),
            (Direction::Higher, MarginSpec::Share(0.1))
        );
        let m: MetricSpec = "errors:lower:2".parse().unwrap();
        assert_eq!(
            (m.direction, m.margin),
            (Direction::Lower, MarginSpec::Amount(2.0))
        );
        let e = "errors".parse::<MetricSpec>().unwrap_err();
        assert!(e.contains("give errors:lower or errors:higher"), "{e}");
        assert!("get:ms".parse::<MetricSpec>().is_err());
        assert!("x_ms:0%".parse::<MetricSpec>().is_err());
        assert!("a b".parse::<MetricSpec>().is_err());
    }

    #[test]
    fn a_clear_lead_is_settled_with_six_rounds() {
        let d = judge(
            &rounds(6),
            &names(&["disk", "zram:lz4"]),
            &"get_max_ms".parse().unwrap(),
        );
        assert_eq!(d.leader.as_deref(), Some("zram:lz4"));
        assert!(d.settled, "{d:?}");
        assert_eq!(d.behind, ["disk"]);
        assert_eq!(d.unit.as_deref(), Some("ms"));
        assert!((d.margin - 0.05 * 9.0).abs() < 1e-9, "{}", d.margin);
        let disk = &d.judged[1];
        assert_eq!(disk.standing, Standing::Behind);
        assert!(disk.behind_leader.unwrap().median > 90.0);
        // Three rounds cannot reach 95 %: it says so, and how many would.
        let d = judge(
            &rounds(3),
            &names(&["disk", "zram:lz4"]),
            &"get_max_ms".parse().unwrap(),
        );
        assert!(!d.settled);
        assert_eq!(d.leader.as_deref(), Some("zram:lz4"));
        assert_eq!(d.undecided, ["disk"]);
        assert_eq!((d.coverage, d.suggest_repeat), (Some(0.0), Some(6)));
    }

    #[test]
    fn higher_is_better_turns_the_differences() {
        let mut runs = rounds(6);
        for r in &mut runs {
            r.metrics[0].name = "get_rps".into();
        }
        let d = judge(
            &runs,
            &names(&["disk", "zram:lz4"]),
            &"get_rps".parse().unwrap(),
        );
        assert_eq!(d.leader.as_deref(), Some("disk"));
        assert_eq!(d.behind, ["zram:lz4"]);
    }

    #[test]
    fn a_failed_or_silent_run_cannot_win() {
        let mut runs = rounds(6);
        // zram's fourth run is OOM-killed; with it, zram would lead.
        runs[7] = run("zram:lz4", 4, Some(1.0), false);
        let cfg = names(&["disk", "zram:lz4"]);
        let d = judge(&runs, &cfg, &"get_max_ms".parse().unwrap());
        assert_eq!(d.leader.as_deref(), Some("disk"));
        assert_eq!(d.failed, ["zram:lz4"]);
        assert!(d.settled);
        let mut runs = rounds(6);
        runs[3] = run("zram:lz4", 2, None, true);
        let d = judge(&runs, &cfg, &"get_max_ms".parse().unwrap());
        assert_eq!(
            (d.leader.as_deref(), d.failed.clone()),
            (Some("disk"), names(&["zram:lz4"]))
        );
        // Nobody reported it: no leader, nothing settled.
        let d = judge(&rounds(6), &cfg, &"get_p99_ms".parse().unwrap());
        assert_eq!((d.leader, d.settled, d.failed.len()), (None, false, 2));
    }

    #[test]
    fn close_medians_are_equivalent_and_noise_never_makes_a_tie() {
        let mut runs = Vec::new();
        for round in 1..=8u32 {
            let w = (round % 3) as f64 * 0.01;
            runs.push(run("a", round, Some(10.0 + w), true));
            runs.push(run("b", round, Some(10.05 + w), true));
        }
        let d = judge(&runs, &names(&["a", "b"]), &"get_max_ms".parse().unwrap());
        assert_eq!(
            (d.leader.as_deref(), d.equivalent.clone()),
            (Some("a"), names(&["b"]))
        );
        for noise in [0.0, 1.0, 5.0, 20.0] {
            let mut runs = Vec::new();
            for round in 1..=8u32 {
                let wobble = noise * (((round * 5) % 7) as f64 / 6.0 - 0.5);
                runs.push(run("a", round, Some(10.0), true));
                runs.push(run("b", round, Some(15.0 + wobble), true));
            }
            let d = judge(&runs, &names(&["a", "b"]), &"get_max_ms".parse().unwrap());
            assert!(d.equivalent.is_empty(), "noise {noise}: {d:?}");
        }
    }
}
