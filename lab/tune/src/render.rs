//! What `zmem tune` prints: the table with the findings, CSV rows, JSON and
//! the HTML page.

use std::fmt::Write as _;

use serde_json::{json, Value};
use zmem_conf::format_size;
use zmem_trial::report::{csv_field, esc, svg_bars};
use zmem_trial::Stats;

use crate::candidates::Candidate;
use crate::check::ModelCheck;
use crate::compare::{Measured, Standing};
use crate::findings::measured;
use crate::outcome::Tune;
use crate::predict::Expect;

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.prec$}"))
}

/// The table for people, then the findings.
pub fn render_table(t: &Tune) -> String {
    let mut o = String::new();
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / 1048576.0);
    let _ = writeln!(
        o,
        "workload: {}   memory limit: {}   anonymous peak: {} ({:.2} s without pressure)   overflow: {}",
        t.workload,
        mib(t.memory_limit_bytes),
        mib(t.learn.peak_anon_bytes),
        t.learn.wall_s,
        mib(t.overflow_bytes)
    );
    let at = t
        .learn
        .captured_at_anon_bytes
        .map(|b| format!(", taken at {} of anonymous memory", mib(b)))
        .unwrap_or_default();
    let _ = writeln!(
        o,
        "predicted from {} pages ({}{at}), {} lab rounds; measured in {} interleaved rounds\n",
        t.learn.pages, t.learn.corpus, t.ranking.rounds, t.repeat
    );
    o.push_str(&columns(&main_rows(t)));
    o.push_str(&metric_lines(t));
    o.push_str(match t.trial.cgroup {
        zmem_trial::CgroupVersion::V2 => "the model charges zswap's pool to the cgroup (cgroup v2: memory.current includes it, memory.zswap.current shows it); zram's memory is charged on neither\n",
        zmem_trial::CgroupVersion::V1 => "the model charges neither zswap's pool nor zram's memory to the cgroup (cgroup v1: the kernel charges zswap's pool to cgroup v2 cgroups only)\n",
    });
    o.push_str(&zmem_trial::report::pressure_note(&t.trial));
    o.push_str(&zmem_trial::report::settings_note(&t.trial));
    if t.model_check
        .iter()
        .any(|c| c.measured_swap_out_pages.is_some())
    {
        let _ = writeln!(
            o,
            "\nthe model against the trials (medians; × is measured/predicted):"
        );
        o.push_str(&columns(&model_rows(t)));
    }
    let _ = writeln!(o);
    for f in &t.findings {
        let _ = writeln!(o, "{f}");
    }
    o
}

/// With `--metric`: the deciding figure per candidate, and that the model
/// does not predict it.
fn metric_lines(t: &Tune) -> String {
    let Some(d) = t.decision.as_ref().filter(|d| !d.by_wall()) else {
        return String::new();
    };
    let unit = d
        .unit
        .as_deref()
        .map(|u| format!(" {u}"))
        .unwrap_or_default();
    let mut o = format!(
        "ranked and picked by {} ({} is better, margin ±{:.3}{unit}), as measured: the model predicts swap traffic and time, not a request's tail or a client's rate\n",
        d.metric,
        d.direction.word(),
        d.margin_s
    );
    for m in &t.measured {
        let v = m.metric.map_or("-".into(), |i| {
            format!("{:.3} [{:.3}, {:.3}]{unit}", i.median, i.ci_low, i.ci_high)
        });
        let diff = m.behind_leader.map_or(String::new(), |i| {
            format!(
                ", leader better by {:+.3} [{:+.3}, {:+.3}]",
                i.median, i.ci_low, i.ci_high
            )
        });
        let _ = writeln!(o, "  {}: {v}{diff} ({})", m.config, m.standing.word());
    }
    o
}

/// A candidate's notes: its failures, where it stands, whether it is the pick.
fn notes(t: &Tune, m: &Measured) -> String {
    let mut v: Vec<String> = m.failures.clone();
    if t.decision.is_some() && m.standing != Standing::Failed {
        v.push(m.standing.word().into());
    }
    if let Some(d) = t.decision.as_ref().filter(|d| d.winner == m.config) {
        v.push(
            if d.proven {
                "winner"
            } else {
                "winner (not proven)"
            }
            .into(),
        );
    }
    v.join(", ")
}

fn main_rows(t: &Tune) -> Vec<Vec<String>> {
    let head = [
        "config",
        "role",
        "pred",
        "meas",
        "pred wall s",
        "wall s",
        "ci",
        "vs leader",
        "maj faults",
        "psi some s",
        "psi full s",
        "ratio",
        "notes",
    ];
    let mut rows: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    // The leader's advantage, in the deciding metric's unit.
    rows[0][7] = match t.decision.as_ref() {
        Some(d) if !d.by_wall() => format!(
            "leader better in {}{}",
            d.metric,
            d.unit
                .as_deref()
                .map(|u| format!(" ({u})"))
                .unwrap_or_default()
        ),
        _ => "vs leader s".into(),
    };
    for m in &t.measured {
        let Some(c) = t
            .candidates
            .iter()
            .find(|c| c.config().to_string() == m.config)
        else {
            continue;
        };
        let p = &c.prediction;
        rows.push(vec![
            m.config.clone(),
            format!("{:?}", c.role).to_lowercase(),
            p.rank.to_string(),
            m.rank.to_string(),
            if p.outcome == Expect::OomKilled {
                "oom".into()
            } else {
                format!("{:.2}", p.wall_s)
            },
            opt(m.median_wall(), 2),
            m.wall_s
                .map_or("-".into(), |w| format!("{:.2}–{:.2}", w.ci_low, w.ci_high)),
            m.behind_leader.map_or("-".into(), |d| {
                format!("{:+.2} [{:+.2}, {:+.2}]", d.median, d.ci_low, d.ci_high)
            }),
            opt(m.major_faults, 0),
            opt(m.psi_some_total_s, 2),
            opt(m.psi_full_total_s, 2),
            opt(m.compression_ratio, 2),
            notes(t, m),
        ]);
    }
    rows
}

/// Predicted, measured and their factor, for a count.
fn trio(p: Option<f64>, m: Option<f64>, f: Option<f64>, prec: usize) -> [String; 3] {
    [
        opt(p, prec),
        opt(m, prec),
        f.map_or("-".into(), |x| format!("{x:.2}")),
    ]
}

fn model_rows(t: &Tune) -> Vec<Vec<String>> {
    let head = [
        "config",
        "out pred",
        "out",
        "×",
        "in pred",
        "in",
        "×",
        "swap s pred",
        "swap s",
        "×",
        "ratio lab",
        "ratio trial",
    ];
    let mut rows: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for c in &t.model_check {
        let mut r = vec![c.config.clone()];
        let pages = |x: Option<u64>| x.map(|x| x as f64);
        r.extend(trio(
            pages(c.predicted_swap_out_pages),
            c.measured_swap_out_pages,
            c.swap_out_factor,
            0,
        ));
        r.extend(trio(
            pages(c.predicted_swap_in_pages),
            c.measured_swap_in_pages,
            c.swap_in_factor,
            0,
        ));
        r.extend(trio(
            c.predicted_swap_s,
            c.measured_swap_s,
            c.swap_time_factor,
            2,
        ));
        r.push(opt(c.predicted_ratio, 2));
        r.push(opt(c.measured_ratio, 2));
        rows.push(r);
    }
    rows
}

fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let w: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut o = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<width$}", width = w[i]))
            .collect();
        let _ = writeln!(o, "{}", line.join("  ").trim_end());
    }
    o
}

/// One candidate as JSON: its prediction beside its measurements (the
/// `Measured` fields as they serialise; `compare` measures every candidate).
fn candidate_json(c: &Candidate, m: &Measured, mc: Option<&ModelCheck>) -> Value {
    let p = &c.prediction;
    let fin = |x: f64| x.is_finite().then_some(x);
    let mut v = json!({
        "role": c.role,
        "predicted_rank": p.rank,
        "predicted_outcome": p.outcome,
        "predicted_swap_s": fin(p.swap_s),
        "predicted_wall_s": fin(p.wall_s),
        "predicted_swapped_pages": p.swapped_pages,
        "basis": p.basis,
    });
    if let (Value::Object(o), Ok(Value::Object(ms))) = (&mut v, serde_json::to_value(m)) {
        o.extend(ms);
    }
    if let (Value::Object(o), Some(Ok(Value::Object(ms)))) = (&mut v, mc.map(serde_json::to_value))
    {
        o.extend(ms);
    }
    v
}

/// The measurements of each trialed candidate, in candidate order, with the model's check.
fn candidate_rows(t: &Tune) -> impl Iterator<Item = (&Candidate, &Measured, Option<&ModelCheck>)> {
    t.candidates.iter().filter_map(|c| {
        let name = c.config().to_string();
        let mc = t.model_check.iter().find(|x| x.config == name);
        Some((c, measured(t, &name)?, mc))
    })
}

/// The whole result as JSON; `config_file` is where the winner's file was written.
pub fn to_json(t: &Tune, config_file: Option<&std::path::Path>) -> Value {
    let cands: Vec<Value> = candidate_rows(t)
        .map(|(c, m, mc)| candidate_json(c, m, mc))
        .collect();
    json!({
        "workload": t.workload,
        "memory_limit_bytes": t.memory_limit_bytes,
        "repeat": t.repeat,
        "learn": t.learn,
        "overflow_bytes": t.overflow_bytes,
        "disk": t.disk,
        "candidates": cands,
        "winner": t.winner.as_ref().map(|w| json!({
            "config": w,
            "config_file": config_file,
            "config_text": t.config_text,
        })),
        "decision": t.decision.as_ref().map(|d| {
            let mut v = json!(d);
            v["rule"] = json!(format!(
                "the leader is the best median in {} of the candidates whose every run finished and reported it; a candidate with a failed or silent run cannot win; the others are behind, equivalent or undecided against the leader at a margin of {:.0} % of its median, on an interval of at least {:.0} % coverage; among the leader and the equivalent and undecided ones the pick is the higher effective ratio the lab measured on the workload's pages, then the candidate order; proven when none is undecided",
                d.metric,
                crate::compare::MARGIN_SHARE * 100.0,
                d.coverage_needed * 100.0
            ));
            v
        }),
        "no_fit": t.no_fit,
        "prediction_held": t.prediction_held,
        "model_errors": t.model_errors,
        "rank_correlation": t.rank_correlation,
        "findings": t.findings,
        "predictions": t.predictions.iter().map(|p| json!({
            "config": p.config.to_string(),
            "predicted_rank": p.rank,
            "predicted_outcome": p.outcome,
            "predicted_swap_s": p.swap_s.is_finite().then_some(p.swap_s),
            "basis": p.basis,
        })).collect::<Vec<_>>(),
        "ranking": t.ranking,
        "trial": t.trial,
    })
}

/// CSV: one row per trialed candidate, the JSON fields of `candidates`
/// (`wall_s` is the median; its interval is `ci_low`, `ci_high`).
pub fn render_csv(t: &Tune) -> String {
    let cols = [
        "config",
        "role",
        "predicted_rank",
        "predicted_outcome",
        "predicted_swap_s",
        "predicted_wall_s",
        "predicted_swapped_pages",
        "measured_rank",
        "wall_s",
        "ci_low",
        "ci_high",
        "standing",
        "tie_break_ratio",
        "runs",
        "ok",
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
        "predicted_swap_in_pages",
        "measured_swap_out_pages",
        "measured_swap_in_pages",
        "measured_swap_s",
        "predicted_ratio",
        "measured_ratio",
        "swap_out_factor",
        "swap_in_factor",
        "swap_time_factor",
        "page_cost_factor",
    ];
    let mut o = cols.join(",");
    o.push('\n');
    for (c, m, mc) in candidate_rows(t) {
        let v = candidate_json(c, m, mc);
        let cell = |k: &str| -> String {
            let x = match k {
                "wall_s" | "ci_low" | "ci_high" => {
                    let key = if k == "wall_s" { "median" } else { k };
                    &v["wall_s"][key]
                }
                _ => &v[k],
            };
            match x {
                Value::Null => String::new(),
                Value::String(s) => csv_field(s),
                other => other.to_string(),
            }
        };
        let row: Vec<String> = cols.iter().map(|k| cell(k)).collect();
        o.push_str(&row.join(","));
        o.push('\n');
    }
    o
}

/// A self-contained page: predicted beside measured wall time, the table,
/// the findings and the winner's file.
pub fn render_html(t: &Tune) -> String {
    let mut pred = Vec::new();
    let mut meas = Vec::new();
    for c in &t.candidates {
        let name = c.config().to_string();
        let p = &c.prediction;
        let st = p.wall_s.is_finite().then_some(Stats {
            median: p.wall_s,
            min: p.wall_s,
            max: p.wall_s,
        });
        pred.push((name.clone(), st, "OOM kill expected".to_string()));
        let m = measured(t, &name);
        let ms = m.and_then(|m| m.wall_s).map(|w| Stats {
            median: w.median,
            min: w.ci_low,
            max: w.ci_high,
        });
        let note = m.map_or("not run".into(), |m| m.failures.join(", "));
        meas.push((name, ms, note));
    }
    let mut o = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>zmem tune</title>\
<style>body{font-family:sans-serif;margin:2em;max-width:70em}pre{background:#f4f4f4;padding:1em;overflow-x:auto}</style></head><body>",
    );
    let _ = write!(
        o,
        "<h1>zmem tune: {}</h1><p>memory limit {}, anonymous peak {}, overflow {}</p>",
        esc(&t.workload),
        esc(&format_size(t.memory_limit_bytes)),
        esc(&format_size(t.learn.peak_anon_bytes)),
        esc(&format_size(t.overflow_bytes))
    );
    o.push_str("<h2>Findings</h2><ul>");
    for f in &t.findings {
        let _ = write!(o, "<li>{}</li>", esc(f));
    }
    o.push_str("</ul><h2>Predicted and measured</h2>");
    o.push_str(&svg_bars("predicted wall time (model)", "s", &pred));
    o.push_str("<br>");
    o.push_str(&svg_bars(
        "measured wall time (median, interval)",
        "s",
        &meas,
    ));
    let _ = write!(o, "<h2>Table</h2><pre>{}</pre>", esc(&render_table(t)));
    if let Some(c) = &t.config_text {
        let _ = write!(
            o,
            "<h2>The winner's configuration</h2><pre>{}</pre>",
            esc(c)
        );
    }
    o.push_str("</body></html>\n");
    o
}
