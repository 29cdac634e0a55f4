//! `zmem trial`'s results for people and programs: the table (one row per
//! configuration), the CSV and the self-contained HTML page. The numbers
//! come from `zmem_trial` (`TrialReport`, its summaries); nothing here
//! measures or decides.

use std::fmt::Write as _;

use zmem_trial::report::metric_names;
use zmem_trial::report::{csv_field, esc, pressure_note, settings_note, svg_bars};
use zmem_trial::{
    interval, metric_value, unit_of, CgroupVersion, ConfigSummary, Interval, MetricDecision,
    Standing, Stats, TrialReport,
};

const HEADERS: [&str; 19] = [
    "config",
    "ok",
    "wall s",
    "min",
    "max",
    "vs base",
    "user s",
    "sys s",
    "maj faults",
    "pswpin",
    "pswpout",
    "zswpin",
    "zswpout",
    "zswpwb",
    "psi some s",
    "psi full s",
    "peak MiB",
    "comp ratio",
    "notes",
];

fn cells(s: &ConfigSummary, baseline: &str) -> Vec<String> {
    let f2 = |v: Option<Stats>, pick: fn(&Stats) -> f64| {
        v.map(|x| format!("{:.2}", pick(&x)))
            .unwrap_or_else(|| "-".into())
    };
    let int = |v: Option<Stats>| {
        v.map(|x| format!("{:.0}", x.median))
            .unwrap_or_else(|| "-".into())
    };
    let mut notes = s.failures.join(", ");
    if s.config == baseline {
        if !notes.is_empty() {
            notes.push_str(", ");
        }
        notes.push_str("baseline");
    }
    vec![
        s.config.clone(),
        format!("{}/{}", s.ok, s.runs),
        f2(s.wall_s, |x| x.median),
        f2(s.wall_s, |x| x.min),
        f2(s.wall_s, |x| x.max),
        s.wall_vs_baseline
            .map(|r| format!("{r:.2}x"))
            .unwrap_or_else(|| "-".into()),
        f2(s.user_s, |x| x.median),
        f2(s.sys_s, |x| x.median),
        int(s.major_faults),
        int(s.pswpin),
        int(s.pswpout),
        int(s.zswpin),
        int(s.zswpout),
        int(s.zswpwb),
        f2(s.psi_some_total_s, |x| x.median),
        f2(s.psi_full_total_s, |x| x.median),
        s.cgroup_peak_bytes
            .map(|x| format!("{:.0}", x.median / (1u64 << 20) as f64))
            .unwrap_or_else(|| "-".into()),
        s.compression_ratio
            .map(|x| format!("{:.2}", x.median))
            .unwrap_or_else(|| "-".into()),
        notes,
    ]
}

/// Rows as columns: the first `left` columns and the last left-aligned,
/// the others right-aligned, two spaces apart.
fn aligned(rows: &[Vec<String>], left: usize) -> String {
    let n = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .map(|row| row[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, c) in row.iter().enumerate() {
            let pad = " ".repeat(widths[i] - c.chars().count());
            if i < left || i == n - 1 {
                line.push_str(c);
                line.push_str(&pad);
            } else {
                line.push_str(&pad);
                line.push_str(c);
            }
            line.push_str("  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A figure with four significant digits or so.
fn num(x: f64) -> String {
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn show(i: &Interval) -> String {
    format!("{} [{}, {}]", num(i.median), num(i.ci_low), num(i.ci_high))
}

/// The workload's figures: a row per metric, per configuration its median
/// [interval] over the runs that exited 0 and reported it, and how many did.
fn metrics_block(r: &TrialReport) -> String {
    let names = metric_names(&r.runs);
    if names.is_empty() {
        return String::new();
    }
    let mut head = vec!["metric".to_string(), "unit".to_string()];
    head.extend(r.summaries.iter().map(|s| s.config.clone()));
    head.push("from".into());
    let mut rows = vec![head];
    for n in &names {
        let mut row = vec![n.clone(), unit_of(&r.runs, n).unwrap_or_default()];
        let mut from = String::new();
        for s in &r.summaries {
            row.push(match s.metrics.iter().find(|m| &m.name == n) {
                Some(m) => {
                    from.clone_from(&m.source);
                    format!("{} {}/{}", show(&m.interval), m.runs, s.runs)
                }
                None => format!("- 0/{}", s.runs),
            });
        }
        row.push(from);
        rows.push(row);
    }
    let mut out = String::from(
        "the workload's figures: median [interval] over the runs that exited 0, and how many of all runs reported it\n",
    );
    out.push_str(&aligned(&rows, 2));
    for x in r.runs.iter().filter(|x| !x.metric_problems.is_empty()) {
        let _ = writeln!(
            out,
            "(round {} {}: {})",
            x.round,
            x.config,
            x.metric_problems.join("; ")
        );
    }
    out
}

/// A configuration's median and interval of `metric` over its runs that exited 0.
fn config_interval(r: &TrialReport, config: &str, metric: &str) -> Option<Interval> {
    let v: Vec<f64> = r
        .runs
        .iter()
        .filter(|x| x.config == config && x.outcome.ok())
        .filter_map(|x| metric_value(x, metric))
        .collect();
    (!v.is_empty()).then(|| interval(&v))
}

/// What a metric decided: the conclusion, then each configuration.
fn decision_text(r: &TrialReport, d: &MetricDecision) -> String {
    let unit = d
        .unit
        .as_deref()
        .map(|u| format!(" {u}"))
        .unwrap_or_default();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "decided by {} ({} is better; margin ±{}{unit}, {}; {} rounds, {:.0} % intervals of the paired differences): {}",
        d.metric,
        d.direction.word(),
        num(d.margin),
        d.margin_rule,
        d.rounds,
        d.coverage_needed * 100.0,
        conclusion(d)
    );
    for j in &d.judged {
        let med = config_interval(r, &j.config, &d.metric).map_or("-".into(), |i| show(&i));
        let diff = j.behind_leader.map(|i| show(&i)).unwrap_or_default();
        let what = match j.standing {
            Standing::Leader => format!("leader, {med}{unit}"),
            Standing::Behind => format!("behind: {med}{unit}, the leader better by {diff}{unit}"),
            Standing::Equivalent => {
                format!("equivalent: {med}{unit}, difference {diff}{unit} within the margin")
            }
            Standing::Undecided => {
                format!("cannot tell: {med}{unit}, difference {diff}{unit} straddles the margin")
            }
            Standing::Failed => format!("cannot win: {}", why_failed(r, &j.config, &d.metric)),
        };
        let _ = writeln!(o, "  {}: {what}", j.config);
    }
    o
}

/// One sentence: who is ahead, or that it cannot tell and what could.
fn conclusion(d: &MetricDecision) -> String {
    let Some(l) = &d.leader else {
        return "no configuration finished every run and reported it: nothing to decide".into();
    };
    let mut s = format!("{l} leads");
    if !d.behind.is_empty() {
        let _ = write!(s, ", ahead of {} beyond the margin", d.behind.join(", "));
    }
    if !d.equivalent.is_empty() {
        let _ = write!(s, ", equivalent to {}", d.equivalent.join(", "));
    }
    if d.settled {
        s.push_str(": settled");
    } else {
        let _ = write!(s, "; cannot tell it from {} yet", d.undecided.join(", "));
        if let Some(n) = d.suggest_repeat {
            let _ = write!(s, " (--repeat {n} could decide)");
        }
    }
    s
}

fn why_failed(r: &TrialReport, config: &str, metric: &str) -> String {
    let mine: Vec<_> = r.runs.iter().filter(|x| x.config == config).collect();
    let failed = mine.iter().filter(|x| !x.outcome.ok()).count();
    let silent = mine
        .iter()
        .filter(|x| x.outcome.ok() && metric_value(x, metric).is_none())
        .count();
    let mut why = Vec::new();
    if failed > 0 {
        why.push(format!("{failed} of {} runs failed", mine.len()));
    }
    if silent > 0 {
        why.push(format!("{silent} did not report {metric}"));
    }
    if mine.is_empty() {
        why.push("no runs".into());
    }
    why.join(", ")
}

/// The table for people: one row per configuration; times are medians with
/// min and max over the runs that exited 0, counters are medians.
pub fn trial_table(r: &TrialReport) -> String {
    let mut rows = vec![HEADERS.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
    for s in &r.summaries {
        rows.push(cells(s, &r.baseline));
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "workload: {}   memory limit: {} MiB (cgroup {})   rounds: {}   baseline: {}",
        r.workload,
        r.memory_limit >> 20,
        match r.cgroup {
            CgroupVersion::V1 => "v1",
            CgroupVersion::V2 => "v2",
        },
        r.repeat,
        r.baseline
    );
    out.push_str(&aligned(&rows, 1));
    out.push_str(&metrics_block(r));
    if let Some(d) = &r.decision {
        out.push_str(&decision_text(r, d));
    }
    for d in &r.other_decisions {
        out.push_str(&decision_text(r, d));
    }
    for s in &r.stopped_early {
        let _ = writeln!(
            out,
            "{} stopped after round {}: {}",
            s.config, s.after_round, s.why
        );
    }
    if r.interrupted {
        out.push_str("(interrupted: only the runs that completed are shown)\n");
    }
    let loads: Vec<f64> = r.runs.iter().filter_map(|x| x.load1_start).collect();
    if let Some(l) = Stats::of(&loads) {
        let _ = writeln!(
            out,
            "load average at run start: median {:.1} (min {:.1}, max {:.1}) on {} CPUs; times are noisy when it exceeds the CPU count",
            l.median, l.min, l.max, r.cpus
        );
    }
    out.push_str(&pressure_note(r));
    out.push_str(&settings_note(r));
    for f in &r.forced_over {
        let _ = writeln!(out, "(--force: {f})");
    }
    out
}

/// CSV with a header row: one row per configuration, median/min/max columns
/// for every measurement.
pub fn trial_csv(r: &TrialReport) -> String {
    let stat_cols = [
        "wall_s",
        "user_s",
        "sys_s",
        "major_faults",
        "pswpin",
        "pswpout",
        "zswpin",
        "zswpout",
        "zswpwb",
        "cgroup_peak_bytes",
        "psi_some_total_s",
        "psi_full_total_s",
        "compression_ratio",
    ];
    let mut out = String::from("config,runs,ok,wall_vs_baseline");
    for c in stat_cols {
        let _ = write!(out, ",{c}_median,{c}_min,{c}_max");
    }
    let names = metric_names(&r.runs);
    for n in &names {
        let _ = write!(out, ",{n}_median,{n}_ci_low,{n}_ci_high,{n}_runs");
    }
    if let Some(d) = &r.decision {
        let _ = write!(out, ",standing_by_{}", d.metric);
    }
    out.push_str(",failures\n");
    for s in &r.summaries {
        let _ = write!(out, "{},{},{},", csv_field(&s.config), s.runs, s.ok);
        if let Some(v) = s.wall_vs_baseline {
            let _ = write!(out, "{v:.4}");
        }
        for st in [
            s.wall_s,
            s.user_s,
            s.sys_s,
            s.major_faults,
            s.pswpin,
            s.pswpout,
            s.zswpin,
            s.zswpout,
            s.zswpwb,
            s.cgroup_peak_bytes,
            s.psi_some_total_s,
            s.psi_full_total_s,
            s.compression_ratio,
        ] {
            match st {
                Some(x) => {
                    let _ = write!(out, ",{},{},{}", x.median, x.min, x.max);
                }
                None => out.push_str(",,,"),
            }
        }
        for n in &names {
            match s.metrics.iter().find(|m| &m.name == n) {
                Some(m) => {
                    let i = m.interval;
                    let _ = write!(out, ",{},{},{},{}", i.median, i.ci_low, i.ci_high, m.runs);
                }
                None => out.push_str(",,,,0"),
            }
        }
        if let Some(d) = &r.decision {
            let j = d.judged.iter().find(|j| j.config == s.config);
            let _ = write!(out, ",{}", j.map_or("", |j| j.standing.word()));
        }
        let _ = writeln!(out, ",{}", csv_field(&s.failures.join("; ")));
    }
    out
}

/// A strip per configuration: a dot per run that exited 0 and reported the
/// metric, a bar at their median; rows without one say so.
fn svg_strip(title: &str, unit: &str, rows: &[(String, Vec<f64>)]) -> String {
    let (label_w, w, row_h) = (170.0, 420.0, 26.0);
    let max = rows
        .iter()
        .flat_map(|r| r.1.iter().copied())
        .fold(0.0f64, f64::max);
    let x = |v: f64| label_w + if max > 0.0 { v / max * w } else { 0.0 };
    let mut o = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\
         <text x=\"4\" y=\"16\" font-weight=\"bold\">{} ({})</text>",
        label_w + w + 90.0,
        40.0 + row_h * rows.len() as f64,
        esc(title),
        esc(unit)
    );
    for (i, (label, v)) in rows.iter().enumerate() {
        let y = 28.0 + row_h * i as f64;
        let _ = write!(
            o,
            "<text x=\"4\" y=\"{:.1}\">{}</text>",
            y + 15.0,
            esc(label)
        );
        if v.is_empty() {
            let _ = write!(
                o,
                "<text x=\"{label_w}\" y=\"{:.1}\" fill=\"#b33\">no runs reported it</text>",
                y + 14.0
            );
            continue;
        }
        for &p in v {
            let _ = write!(
                o,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"#4a7ebb\" fill-opacity=\"0.7\"/>",
                x(p),
                y + 9.0
            );
        }
        let med = interval(v).median;
        let _ = write!(
            o,
            "<path d=\"M{0:.1} {1:.1}V{2:.1}\" stroke=\"#222\" stroke-width=\"2\"/><text x=\"{3:.1}\" y=\"{4:.1}\">{5}</text>",
            x(med),
            y + 1.0,
            y + 17.0,
            x(max) + 8.0,
            y + 14.0,
            esc(&num(med))
        );
    }
    o.push_str("</svg>");
    o
}

/// A self-contained HTML page (no scripts, no network): median wall time per
/// configuration with min–max whiskers, pages swapped out, major faults, and
/// the table.
pub fn trial_html(r: &TrialReport) -> String {
    let note = |s: &ConfigSummary| {
        if s.failures.is_empty() {
            "no data".to_string()
        } else {
            s.failures.join(", ")
        }
    };
    let rows =
        |f: &dyn Fn(&ConfigSummary) -> Option<Stats>| -> Vec<(String, Option<Stats>, String)> {
            r.summaries
                .iter()
                .map(|s| (s.config.clone(), f(s), note(s)))
                .collect()
        };
    let swapped_out = |s: &ConfigSummary| {
        let add = |a: Option<Stats>, b: Option<Stats>| match (a, b) {
            (Some(a), Some(b)) => Some(Stats {
                median: a.median + b.median,
                min: a.min + b.min,
                max: a.max + b.max,
            }),
            (a, None) => a,
            (None, b) => b,
        };
        add(s.pswpout, s.zswpout)
    };
    let mut o = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>zmem trial</title>",
    );
    o.push_str(
        "<style>body{font-family:sans-serif;margin:2em}pre{font-size:12px}</style></head><body>",
    );
    let _ = write!(
        o,
        "<h1>zmem trial: {}</h1><p>memory limit {} MiB, {} round(s), baseline {}, kernel {}, {} CPUs</p>",
        esc(&r.workload),
        r.memory_limit >> 20,
        r.repeat,
        esc(&r.baseline),
        esc(&r.kernel),
        r.cpus
    );
    o.push_str(&svg_bars(
        "Wall time, median with min–max",
        "s",
        &rows(&|s| s.wall_s),
    ));
    o.push_str("<br>");
    o.push_str(&svg_bars(
        "Pages swapped out (pswpout + zswpout), median",
        "pages",
        &rows(&swapped_out),
    ));
    o.push_str("<br>");
    o.push_str(&svg_bars(
        "Major faults, median",
        "faults",
        &rows(&|s| s.major_faults),
    ));
    // The workload's figures: median with min–max, the deciding one first.
    let mut names = metric_names(&r.runs);
    if let Some(d) = &r.decision {
        if let Some(i) = names.iter().position(|n| n == &d.metric) {
            names[..=i].rotate_right(1);
        }
    }
    for n in names.iter().take(8) {
        let unit = unit_of(&r.runs, n).unwrap_or_default();
        let per_run: Vec<(String, Vec<f64>)> = r
            .summaries
            .iter()
            .map(|s| {
                let v = r
                    .runs
                    .iter()
                    .filter(|x| x.config == s.config && x.outcome.ok())
                    .filter_map(|x| metric_value(x, n))
                    .collect();
                (s.config.clone(), v)
            })
            .collect();
        o.push_str("<br>");
        o.push_str(&svg_strip(
            &format!("{n}, every run (median marked)"),
            &unit,
            &per_run,
        ));
    }
    let _ = writeln!(o, "<pre>{}</pre></body></html>", esc(&trial_table(r)));
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_trial::report::summarise;
    use zmem_trial::{Outcome, RunRecord, VmCounters, ZramStats};

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
    fn table_has_a_row_per_config() {
        let t = trial_table(&report());
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].contains("memalloc 384M") && lines[0].contains("256 MiB"));
        assert!(lines[1].starts_with("config"));
        assert!(
            lines[2].starts_with("none")
                && lines[2].contains("0/3")
                && lines[2].contains("3× oom-killed")
        );
        assert!(
            lines[3].starts_with("disk") && lines[3].contains("6.60") && lines[3].contains("1.00x")
        );
        assert!(
            lines[4].starts_with("zram:lz4")
                && lines[4].contains("0.29x")
                && lines[4].contains("2.50")
        );
        assert!(lines[5].starts_with("psi: not recorded"), "{t}");
        assert!(lines[6].contains("none exist on cgroup v1"), "{t}");
        assert_eq!(lines.len(), 7);
    }

    fn pressure(scope: zmem_trial::PsiScope, some: f64) -> zmem_trial::Pressure {
        zmem_trial::Pressure {
            psi_scope: scope,
            psi_some_avg10: 1.0,
            psi_some_avg60: 0.5,
            psi_some_avg300: 0.1,
            psi_some_total_s: some,
            psi_full_avg10: Some(0.5),
            psi_full_avg60: Some(0.2),
            psi_full_avg300: Some(0.05),
            psi_full_total_s: Some(some / 2.0),
        }
    }

    #[test]
    fn pressure_is_a_median_column_and_says_where_it_comes_from() {
        let mut r = report();
        let t = trial_table(&r);
        assert!(t.contains("psi: not recorded"), "{t}");
        assert!(t.contains("none exist on cgroup v1"), "{t}");
        for (i, x) in r.runs.iter_mut().enumerate() {
            x.memory_pressure = Some(pressure(zmem_trial::PsiScope::System, i as f64));
        }
        let (configs, _) = sample();
        r.summaries = summarise(&configs, "disk", &r.runs);
        // disk runs are the 2nd, 5th and 8th: 1, 4, 7 s → median 4.
        let disk = &r.summaries[1];
        assert_eq!(disk.psi_some_total_s.unwrap().median, 4.0);
        assert_eq!(disk.psi_full_total_s.unwrap().median, 2.0);
        // Failed runs do not count: none has no statistics.
        assert_eq!(r.summaries[0].psi_some_total_s, None);
        let t = trial_table(&r);
        let disk_row = t.lines().find(|l| l.starts_with("disk")).unwrap();
        assert!(
            disk_row.contains("4.00") && disk_row.contains("2.00"),
            "{t}"
        );
        assert!(
            t.contains("system-wide (cgroup v1 has no memory.pressure)"),
            "{t}"
        );
    }

    #[test]
    fn csv_is_rectangular() {
        let c = trial_csv(&report());
        let rows: Vec<Vec<&str>> = c.lines().map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 4);
        assert!(rows.iter().all(|r| r.len() == rows[0].len()), "{c}");
        assert_eq!(rows[2][0], "disk");
        assert_eq!(rows[2][4], "6.6");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
    }

    #[test]
    fn a_metric_is_a_strip_of_runs_and_a_table_block() {
        let mut r = report();
        for (i, x) in r.runs.iter_mut().enumerate() {
            x.metrics.push(zmem_trial::Metric {
                name: "get_max_ms".into(),
                value: 10.0 + i as f64,
                unit: Some("ms".into()),
                source: "ZMEM_METRICS".into(),
            });
        }
        let (configs, _) = sample();
        r.summaries = summarise(&configs, "disk", &r.runs);
        let m: zmem_trial::MetricSpec = "get_max_ms".parse().unwrap();
        r.decision = Some(zmem_trial::judge(&r.runs, &configs, &m));
        let h = trial_html(&r);
        assert_eq!(h.matches("<svg").count(), 4);
        // Six runs exited 0 (disk's and zram's three each); none's were killed.
        assert_eq!(h.matches("<circle").count(), 6, "{h}");
        assert!(h.contains("no runs reported it"));
        let t = trial_table(&r);
        assert!(t.contains("get_max_ms  ms"), "{t}");
        assert!(t.contains("- 0/3"), "{t}");
        assert!(t.contains("decided by get_max_ms (lower is better"), "{t}");
        assert!(t.contains("none: cannot win: 3 of 3 runs failed"), "{t}");
        assert!(t.contains("(--repeat 6 could decide)"), "{t}");
        let c = trial_csv(&r);
        let rows: Vec<Vec<&str>> = c.lines().map(|l| l.split(',').collect()).collect();
        assert!(rows.iter().all(|x| x.len() == rows[0].len()), "{c}");
        assert!(
            rows[0].contains(&"get_max_ms_ci_low") && rows[0].contains(&"standing_by_get_max_ms")
        );
    }

    #[test]
    fn html_page_has_charts_and_escapes() {
        let mut r = report();
        r.workload = "sh -c 'a<b'".into();
        let h = trial_html(&r);
        assert!(h.starts_with("<!DOCTYPE html>") && h.trim_end().ends_with("</html>"));
        assert_eq!(h.matches("<svg").count(), 3);
        assert!(h.contains("a&lt;b") && !h.contains("a<b"));
        assert!(h.contains(">zram:lz4<") && h.contains("3× oom-killed"));
        assert!(!h.contains("<script"));
    }
}
