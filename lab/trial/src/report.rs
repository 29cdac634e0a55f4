//! The trial's results: every run, a summary per configuration (median, min
//! and max over the runs that exited 0, plus the ratio of median wall time to
//! the baseline's), the notes under the table, and the helpers tune's page
//! still uses (the table, CSV and page are zmem-report's `trial_*`).
//! Everything serialises with serde so the lab's report can chart it.

use std::fmt::Write as _;

use super::measure::RunRecord;
use crate::judge::MetricDecision;
use crate::stats::{interval, Interval};
use zmem_host::CgroupVersion;

/// Median, minimum and maximum of a set of measurements.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Stats {
    /// `None` for no values (NaNs are ignored). The median of an even count is
    /// the mean of the two middle values.
    pub fn of(values: &[f64]) -> Option<Stats> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Stats {
            median,
            min: v[0],
            max: v[n - 1],
        })
    }
}

/// One configuration's runs summarised.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConfigSummary {
    pub config: String,
    pub runs: u32,
    /// Runs that exited 0 (the statistics are over these).
    pub ok: u32,
    /// Outcomes of the other runs, e.g. `2× oom-killed`.
    pub failures: Vec<String>,
    pub wall_s: Option<Stats>,
    /// Median wall time divided by the baseline's median wall time.
    pub wall_vs_baseline: Option<f64>,
    pub user_s: Option<Stats>,
    pub sys_s: Option<Stats>,
    pub major_faults: Option<Stats>,
    pub pswpin: Option<Stats>,
    pub pswpout: Option<Stats>,
    pub zswpin: Option<Stats>,
    pub zswpout: Option<Stats>,
    pub zswpwb: Option<Stats>,
    pub cgroup_peak_bytes: Option<Stats>,
    /// Memory stall time over a run (PSI `some` and `full` totals), s.
    #[serde(default)]
    pub psi_some_total_s: Option<Stats>,
    #[serde(default)]
    pub psi_full_total_s: Option<Stats>,
    /// Original bytes / compressed bytes at the compressed tier's fullest
    /// (zram: orig_data_size / compr_data_size; zswap: Zswapped / Zswap).
    pub compression_ratio: Option<Stats>,
    /// The workload's own figures over its runs that exited 0, in the order
    /// they were first reported.
    #[serde(default)]
    pub metrics: Vec<MetricSummary>,
}

/// One of the workload's figures over a configuration's runs that exited 0.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MetricSummary {
    pub name: String,
    pub unit: Option<String>,
    /// `ZMEM_METRICS` or the reader it came from.
    pub source: String,
    /// Runs that exited 0 and reported it.
    pub runs: u32,
    /// Median with its distribution-free interval (the verdict's).
    pub interval: Interval,
    pub min: f64,
    pub max: f64,
}

/// Every metric name the runs reported, in first-seen order.
pub fn metric_names(runs: &[RunRecord]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for m in runs.iter().flat_map(|r| &r.metrics) {
        if !names.contains(&m.name) {
            names.push(m.name.clone());
        }
    }
    names
}

fn metric_summaries(names: &[String], ok: &[&RunRecord]) -> Vec<MetricSummary> {
    names
        .iter()
        .filter_map(|n| {
            let found: Vec<&crate::Metric> = ok
                .iter()
                .filter_map(|r| r.metrics.iter().find(|m| &m.name == n))
                .collect();
            let first = found.first()?;
            let v: Vec<f64> = found.iter().map(|m| m.value).collect();
            let st = Stats::of(&v)?;
            Some(MetricSummary {
                name: n.clone(),
                unit: first.unit.clone(),
                source: first.source.clone(),
                runs: v.len() as u32,
                interval: interval(&v),
                min: st.min,
                max: st.max,
            })
        })
        .collect()
}

/// Everything a trial produced.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrialReport {
    /// `uname -r`.
    pub kernel: String,
    /// CPUs available to zmem.
    #[serde(default)]
    pub cpus: u32,
    pub cgroup: CgroupVersion,
    /// RAM limit of the workload's cgroup (bytes).
    pub memory_limit: u64,
    /// Size of the disk swap file and default zram size (bytes).
    pub swap_size: u64,
    pub swappiness: Option<u32>,
    pub page_cluster: Option<u32>,
    /// The workload as run.
    pub command: Vec<String>,
    /// A short name for the workload (`memalloc 384M`, or the command).
    pub workload: String,
    pub repeat: u32,
    pub baseline: String,
    /// Configuration names in run order (each round runs them in this order).
    pub configs: Vec<String>,
    /// `--force` was given over these objections.
    pub forced_over: Vec<String>,
    /// Stopped early by a signal; `runs` holds what completed.
    pub interrupted: bool,
    pub runs: Vec<RunRecord>,
    pub summaries: Vec<ConfigSummary>,
    /// The configurations judged by the first `--metric` (wall time without one).
    #[serde(default)]
    pub decision: Option<MetricDecision>,
    /// The same for every further `--metric`.
    #[serde(default)]
    pub other_decisions: Vec<MetricDecision>,
    /// Configurations that ran no more once clearly behind (`zmem tune`).
    #[serde(default)]
    pub stopped_early: Vec<StoppedEarly>,
}

/// A configuration that ran no more rounds: clearly behind, or a run failed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoppedEarly {
    pub config: String,
    /// The look's round.
    pub after_round: u32,
    pub why: String,
}

fn ratio(orig: u64, compr: u64) -> Option<f64> {
    (orig > 0 && compr > 0).then(|| orig as f64 / compr as f64)
}

/// Summarise `runs` per configuration, in `configs` order.
pub fn summarise(configs: &[String], baseline: &str, runs: &[RunRecord]) -> Vec<ConfigSummary> {
    let names = metric_names(runs);
    let mut out: Vec<ConfigSummary> = configs
        .iter()
        .map(|c| {
            let mine: Vec<&RunRecord> = runs.iter().filter(|r| &r.config == c).collect();
            let ok: Vec<&RunRecord> = mine.iter().copied().filter(|r| r.outcome.ok()).collect();
            let mut failures: Vec<(String, u32)> = Vec::new();
            for r in mine.iter().filter(|r| !r.outcome.ok()) {
                let s = r.outcome.short();
                match failures.iter_mut().find(|f| f.0 == s) {
                    Some(f) => f.1 += 1,
                    None => failures.push((s, 1)),
                }
            }
            let st = |f: &dyn Fn(&RunRecord) -> Option<f64>| {
                Stats::of(&ok.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
            };
            ConfigSummary {
                config: c.clone(),
                runs: mine.len() as u32,
                ok: ok.len() as u32,
                failures: failures
                    .into_iter()
                    .map(|(s, n)| format!("{n}× {s}"))
                    .collect(),
                wall_s: st(&|r| Some(r.wall_s)),
                wall_vs_baseline: None,
                user_s: st(&|r| Some(r.user_s)),
                sys_s: st(&|r| Some(r.sys_s)),
                major_faults: st(&|r| Some(r.major_faults as f64)),
                pswpin: st(&|r| Some(r.vm.pswpin as f64)),
                pswpout: st(&|r| Some(r.vm.pswpout as f64)),
                zswpin: st(&|r| r.vm.zswpin.map(|v| v as f64)),
                zswpout: st(&|r| r.vm.zswpout.map(|v| v as f64)),
                zswpwb: st(&|r| r.vm.zswpwb.map(|v| v as f64)),
                cgroup_peak_bytes: st(&|r| r.cgroup_peak_bytes.map(|v| v as f64)),
                psi_some_total_s: st(&|r| r.memory_pressure.map(|p| p.psi_some_total_s)),
                psi_full_total_s: st(&|r| r.memory_pressure.and_then(|p| p.psi_full_total_s)),
                compression_ratio: st(&|r| {
                    if let Some(z) = &r.zram {
                        ratio(z.mm_stat_fullest[0], z.mm_stat_fullest[1])
                    } else if let Some(z) = &r.zswap {
                        ratio(z.stored_bytes_fullest, z.pool_bytes_fullest)
                    } else {
                        None
                    }
                }),
                metrics: metric_summaries(&names, &ok),
            }
        })
        .collect();
    let base = out
        .iter()
        .find(|s| s.config == baseline)
        .and_then(|s| s.wall_s)
        .map(|s| s.median);
    if let Some(b) = base.filter(|b| *b > 0.0) {
        for s in &mut out {
            s.wall_vs_baseline = s.wall_s.map(|w| w.median / b);
        }
    }
    out
}

/// Where the psi columns come from (a line, empty without runs).
pub fn pressure_note(r: &TrialReport) -> String {
    if r.runs.is_empty() {
        return String::new();
    }
    match r.runs.iter().find_map(|x| x.memory_pressure) {
        Some(p) => format!(
            "psi some/full s: memory stall time over the run (medians), from {}; avg10/avg60/avg300 at each run's end in --format json\n",
            p.psi_scope.source()
        ),
        None => "psi: not recorded (no memory.pressure and no /proc/pressure/memory: a kernel without PSI, or booted with psi=0)\n".into(),
    }
}

/// What the run's cgroup was set to beyond its memory limit, per
/// configuration (lines; on v1, that none of these settings exist).
pub fn settings_note(r: &TrialReport) -> String {
    if r.cgroup == CgroupVersion::V1 {
        return "memory.swap.max, memory.zswap.max, memory.zswap.writeback: cgroup v2 only, none exist on cgroup v1 (nor is zswap's pool charged to a v1 cgroup)\n".into();
    }
    let mut out = String::new();
    for c in &r.configs {
        if let Some(run) = r
            .runs
            .iter()
            .find(|x| &x.config == c && !x.cgroup_settings.is_empty())
        {
            let _ = writeln!(
                out,
                "cgroup v2, {c}: {}",
                crate::cgroup_settings::describe(&run.cgroup_settings)
            );
        }
    }
    out
}

/// A CSV cell: quoted when it holds a comma, a quote or a newline.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Horizontal bars with optional min–max whiskers; rows without a value show `note`.
pub fn svg_bars(title: &str, unit: &str, rows: &[(String, Option<Stats>, String)]) -> String {
    let (label_w, bar_w, row_h) = (170.0, 420.0, 26.0);
    let max = rows
        .iter()
        .filter_map(|r| r.1.map(|s| s.max))
        .fold(0.0f64, f64::max);
    let scale = if max > 0.0 { bar_w / max } else { 0.0 };
    let h = 40.0 + row_h * rows.len() as f64;
    let mut o = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\
         <text x=\"4\" y=\"16\" font-weight=\"bold\">{t} ({u})</text>",
        w = label_w + bar_w + 90.0,
        t = esc(title),
        u = esc(unit)
    );
    for (i, (label, st, note)) in rows.iter().enumerate() {
        let y = 28.0 + row_h * i as f64;
        let _ = write!(
            o,
            "<text x=\"4\" y=\"{:.1}\">{}</text>",
            y + 15.0,
            esc(label)
        );
        match st {
            Some(st) => {
                let _ = write!(
                    o,
                    "<rect x=\"{label_w}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"18\" fill=\"#4a7ebb\"/>",
                    (st.median * scale).max(1.0)
                );
                if st.max > st.min {
                    let (x0, x1) = (label_w + st.min * scale, label_w + st.max * scale);
                    let ym = y + 9.0;
                    let _ = write!(
                        o,
                        "<path d=\"M{x0:.1} {ym:.1}H{x1:.1}M{x0:.1} {:.1}V{:.1}M{x1:.1} {:.1}V{:.1}\" stroke=\"#222\"/>",
                        y + 4.0,
                        y + 14.0,
                        y + 4.0,
                        y + 14.0
                    );
                }
                let _ = write!(
                    o,
                    "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                    label_w + st.max.max(st.median) * scale + 6.0,
                    y + 14.0,
                    esc(format!("{:.3}", st.median)
                        .trim_end_matches('0')
                        .trim_end_matches('.'))
                );
            }
            None => {
                let _ = write!(
                    o,
                    "<text x=\"{label_w}\" y=\"{:.1}\" fill=\"#b33\">{}</text>",
                    y + 14.0,
                    esc(note)
                );
            }
        }
    }
    o.push_str("</svg>");
    o
}

#[cfg(test)]
mod tests {
    use super::super::measure::{Outcome, VmCounters, ZramStats};
    use super::*;

    #[test]
    fn stats() {
        assert_eq!(Stats::of(&[]), None);
        assert_eq!(
            Stats::of(&[2.0]),
            Some(Stats {
                median: 2.0,
                min: 2.0,
                max: 2.0
            })
        );
        assert_eq!(
            Stats::of(&[3.0, 1.0, 2.0]),
            Some(Stats {
                median: 2.0,
                min: 1.0,
                max: 3.0
            })
        );
        assert_eq!(
            Stats::of(&[4.0, 1.0, 3.0, 2.0]),
            Some(Stats {
                median: 2.5,
                min: 1.0,
                max: 4.0
            })
        );
        assert_eq!(
            Stats::of(&[f64::NAN, 5.0]),
            Some(Stats {
                median: 5.0,
                min: 5.0,
                max: 5.0
            })
        );
        assert_eq!(Stats::of(&[1.0, 1.0, 100.0]).unwrap().median, 1.0);
    }

    fn run(config: &str, round: u32, outcome: Outcome, wall: f64) -> RunRecord {
        let mut r = RunRecord::not_run(config.into(), round, outcome);
        r.wall_s = wall;
        r.user_s = wall / 4.0;
        r.vm = VmCounters {
            pswpin: 10 * round as u64,
            pswpout: 20,
            zswpin: Some(0),
            zswpout: Some(0),
            zswpwb: Some(0),
        };
        r.cgroup_peak_bytes = Some(64 << 20);
        r
    }

    fn sample() -> (Vec<String>, Vec<RunRecord>) {
        let configs: Vec<String> = ["none", "disk", "zram:lz4"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut runs = Vec::new();
        for round in 1..=3 {
            runs.push(run("none", round, Outcome::OomKilled { kills: 1 }, 0.5));
            runs.push(run(
                "disk",
                round,
                Outcome::Exited { code: 0 },
                [6.0, 6.6, 7.0][round as usize - 1],
            ));
            let mut z = run(
                "zram:lz4",
                round,
                Outcome::Exited { code: 0 },
                [1.8, 2.0, 1.9][round as usize - 1],
            );
            let mut m = [0u64; 9];
            m[0] = 300 << 20;
            m[1] = 120 << 20;
            z.zram = Some(ZramStats {
                mm_stat_end: [0; 9],
                mm_stat_fullest: m,
            });
            runs.push(z);
        }
        (configs, runs)
    }

    #[test]
    fn summaries_and_ratio() {
        let (configs, runs) = sample();
        let s = summarise(&configs, "disk", &runs);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].config, "none");
        assert_eq!((s[0].ok, s[0].runs), (0, 3));
        assert_eq!(s[0].failures, vec!["3× oom-killed".to_string()]);
        assert_eq!(s[0].wall_s, None);
        assert_eq!(s[0].wall_vs_baseline, None);
        assert_eq!(
            s[1].wall_s,
            Some(Stats {
                median: 6.6,
                min: 6.0,
                max: 7.0
            })
        );
        assert_eq!(s[1].wall_vs_baseline, Some(1.0));
        assert_eq!(s[1].pswpin.unwrap().median, 20.0);
        let zr = s[2].wall_vs_baseline.unwrap();
        assert!((zr - 1.9 / 6.6).abs() < 1e-12, "{zr}");
        assert!((s[2].compression_ratio.unwrap().median - 2.5).abs() < 1e-12);
        assert_eq!(s[1].compression_ratio, None);
    }

    #[test]
    fn baseline_without_successful_runs_gives_no_ratio() {
        let (configs, runs) = sample();
        let s = summarise(&configs, "none", &runs);
        assert!(s.iter().all(|x| x.wall_vs_baseline.is_none()));
    }

    fn report() -> TrialReport {
        let (configs, runs) = sample();
        TrialReport {
            kernel: "6.18".into(),
            cpus: 2,
            cgroup: CgroupVersion::V1,
            memory_limit: 256 << 20,
            swap_size: 1 << 30,
            swappiness: None,
            page_cluster: None,
            command: vec!["zmem".into()],
            workload: "memalloc 384M".into(),
            repeat: 3,
            baseline: "disk".into(),
            summaries: summarise(&configs, "disk", &runs),
            configs,
            forced_over: vec![],
            interrupted: false,
            runs,
            decision: None,
            other_decisions: vec![],
            stopped_early: vec![],
        }
    }

    #[test]
    fn cgroup_v2_settings_are_said_per_configuration() {
        let mut r = report();
        r.cgroup = CgroupVersion::V2;
        for x in r.runs.iter_mut().filter(|x| x.config == "disk") {
            let mut v = crate::cgroup_settings::wanted(&crate::SwapConfig::Disk, 256 << 20, None);
            v[0].value = Some("max".into());
            v[1].value = Some("0".into());
            x.cgroup_settings = v;
        }
        let t = settings_note(&r);
        assert!(
            t.contains("cgroup v2, disk: memory.swap.max=max (swap bounded by its areas only), memory.zswap.max=0 (zswap stays out of this configuration)"),
            "{t}"
        );
        assert!(!t.contains("cgroup v1"), "{t}");
    }

    #[test]
    fn report_round_trips_through_serde() {
        // The lab's report reads this back; make sure the derive is complete.
        fn assert_serde<T: serde::Serialize + for<'de> serde::Deserialize<'de>>() {}
        assert_serde::<TrialReport>();
    }
}
