//! What `zmem tune` prints: the comparison's verdict in sentences, the
//! table, CSV rows, JSON and the HTML page.

use std::fmt::Write as _;

use serde_json::{json, Value};
use zmem_trial::report::{csv_field, esc, svg_bars};
use zmem_trial::Stats;
use zmem_units::format_size;

use crate::candidates::Candidate;
use crate::compare::{self, Measured, Outcome};
use crate::predict::Expect;
use crate::Tune;

/// Whether the trialed candidate predicted best won or tied with the winner.
pub fn prediction_held(chosen: &[Candidate], o: &Outcome) -> Option<bool> {
    let winner = o.winner.as_ref()?;
    let best = chosen.iter().map(|c| c.prediction.rank).min()?;
    Some(
        chosen
            .iter()
            .filter(|c| c.prediction.rank == best)
            .any(|c| {
                let name = c.config().to_string();
                &name == winner || o.tie.contains(&name)
            }),
    )
}

/// Spearman's ρ of the predicted and the measured ranks of the trialed candidates.
pub fn rank_correlation(chosen: &[Candidate], measured: &[Measured]) -> Option<f64> {
    let mut p = Vec::new();
    let mut m = Vec::new();
    for c in chosen {
        let x = measured
            .iter()
            .find(|x| x.config == c.config().to_string())?;
        p.push(c.prediction.rank as f64);
        m.push(x.rank as f64);
    }
    compare::spearman(&p, &m)
}

fn measured<'a>(t: &'a Tune, config: &str) -> Option<&'a Measured> {
    t.measured.iter().find(|m| m.config == config)
}

fn median(m: Option<&Measured>) -> Option<f64> {
    m?.wall_s.map(|w| w.median)
}

/// The first sentence: did the prediction hold.
fn verdict_sentence(t: &Tune) -> String {
    let Some(w) = &t.winner else {
        return format!(
            "No candidate finished a run under {}: the limit is too small for this workload with any of them.",
            format_size(t.memory_limit_bytes)
        );
    };
    let wm = median(measured(t, w)).unwrap_or(f64::NAN);
    let best = t.candidates.iter().min_by_key(|c| c.prediction.rank);
    let Some(best) = best.map(|c| c.config().to_string()) else {
        return String::new();
    };
    match t.prediction_held {
        Some(true) if &best == w => format!(
            "The prediction held: {best} was predicted fastest and ran fastest ({wm:.2} s median)."
        ),
        Some(true) => format!(
            "The prediction held within noise: {best} was predicted fastest and tied with the winner {w} ({wm:.2} s median)."
        ),
        _ => match median(measured(t, &best)) {
            Some(b) => format!(
                "The prediction did not hold: {best} was predicted fastest, but {w} ran fastest ({wm:.2} s against {b:.2} s)."
            ),
            None => format!(
                "The prediction did not hold: {best} was predicted fastest but finished no run; {w} won ({wm:.2} s median)."
            ),
        },
    }
}

/// Where the model and a trial disagree about a candidate's outcome or traffic.
fn disagreements(t: &Tune, out: &mut Vec<String>) {
    for c in &t.candidates {
        let name = c.config().to_string();
        let Some(m) = measured(t, &name) else {
            continue;
        };
        let p = &c.prediction;
        if p.outcome == Expect::Runs && !m.failures.is_empty() {
            let why = if c.config().swap.zswap_compressor().is_some() {
                ": zswap's pool counts against the cgroup's limit, leaving too little for the workload's own pages"
            } else {
                ": the cgroup's OOM killer ended it (reclaim under the limit did not free memory as fast as the workload faulted its pages back in; the model has no term for that)"
            };
            out.push(format!(
                "{name}: {} of {} runs failed ({}) although the model expected it to run{why}.",
                m.runs - m.ok,
                m.runs,
                m.failures.join(", ")
            ));
        }
        if p.outcome == Expect::OomKilled && m.ok > 0 {
            out.push(format!(
                "{name} ran ({} of {} runs) although the model expected an OOM kill ({}).",
                m.ok, m.runs, p.basis
            ));
        }
        if let (Some(sw), true) = (m.swapped_out(), p.swapped_pages > 0 && m.complete()) {
            let f = sw / p.swapped_pages as f64;
            if !(0.5..=2.0).contains(&f) {
                out.push(format!(
                    "{name}: the trial swapped out {:.0} pages, the model expected {} ({f:.1}×){}.",
                    sw,
                    p.swapped_pages,
                    if f > 2.0 {
                        ": pages went out and came back more than once (repeated access to a working set larger than the limit)"
                    } else {
                        ": the kernel kept more resident than the model assumed"
                    }
                ));
            }
        }
    }
}

/// A warning when the pages the prediction used were captured well below
/// the workload's anonymous peak (it exited, or grew too fast, for a later
/// capture): under half of it.
fn capture_finding(l: &crate::steps::Learn) -> Option<String> {
    let at = l.captured_at_anon_bytes?;
    (at.saturating_mul(2) < l.peak_anon_bytes).then(|| {
        format!(
            "The pages were captured when the workload held {} of anonymous memory, under half of its peak ({}): a later capture was cut short or never taken. The prediction may not represent its memory at the peak; capture it at its peak yourself (zmem capture --pid PID -o FILE) and give --corpus FILE.",
            format_size(at),
            format_size(l.peak_anon_bytes)
        )
    })
}

/// What the comparison means, in sentences.
pub fn findings(t: &Tune) -> Vec<String> {
    let mut out = vec![verdict_sentence(t)];
    if t.overflow_bytes == 0 {
        out.push(format!(
            "The workload's anonymous peak ({}) fits under {}: nothing had to be swapped, so the configurations differ by noise only; give a smaller --memory.",
            format_size(t.learn.peak_anon_bytes),
            format_size(t.memory_limit_bytes)
        ));
    }
    out.extend(capture_finding(&t.learn));
    if t.tie.len() > 1 {
        out.push(format!(
            "{} tie within noise (each within 2 % of the leader, or its paired difference's interval reaches zero); the tie goes to the higher compression ratio: {}.",
            t.tie.join(", "),
            t.winner.as_deref().unwrap_or("-")
        ));
    }
    disagreements(t, &mut out);
    if let Some(r) = t.rank_correlation {
        out.push(format!(
            "Rank correlation of predicted and measured order: {r:.2} over {} candidates (1 = the same order).",
            t.candidates.len()
        ));
    }
    let disk = t.measured.iter().find(|m| m.config == "disk");
    if let (Some(w), Some(d)) = (&t.winner, median(disk)) {
        if let Some(wm) = median(measured(t, w)).filter(|_| w != "disk") {
            out.push(format!(
                "{w} ran {:.1}× as fast as disk swap alone ({wm:.2} s against {d:.2} s).",
                d / wm
            ));
        }
    }
    out
}

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
    let head = [
        "config",
        "role",
        "pred",
        "meas",
        "pred swap s",
        "pred wall s",
        "wall s",
        "ci",
        "maj faults",
        "swapped out",
        "ratio",
        "notes",
    ];
    let mut rows: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for m in &t.measured {
        let Some(c) = t
            .candidates
            .iter()
            .find(|c| c.config().to_string() == m.config)
        else {
            continue;
        };
        let p = &c.prediction;
        let mut notes = m.failures.join(", ");
        if m.tied_with_winner && t.tie.len() > 1 {
            notes.push_str(if notes.is_empty() { "tie" } else { ", tie" });
        }
        if t.winner.as_deref() == Some(&m.config) {
            notes.push_str(if notes.is_empty() {
                "winner"
            } else {
                ", winner"
            });
        }
        rows.push(vec![
            m.config.clone(),
            format!("{:?}", c.role).to_lowercase(),
            p.rank.to_string(),
            m.rank.to_string(),
            if p.outcome == Expect::OomKilled {
                "oom".into()
            } else {
                format!("{:.2}", p.swap_s)
            },
            if p.outcome == Expect::OomKilled {
                "oom".into()
            } else {
                format!("{:.2}", p.wall_s)
            },
            opt(m.wall_s.map(|w| w.median), 2),
            m.wall_s
                .map_or("-".into(), |w| format!("{:.2}–{:.2}", w.ci_low, w.ci_high)),
            opt(m.major_faults, 0),
            opt(m.swapped_out(), 0),
            opt(m.compression_ratio, 2),
            notes,
        ]);
    }
    o.push_str(&columns(&rows));
    let _ = writeln!(o);
    for f in &t.findings {
        let _ = writeln!(o, "{f}");
    }
    o
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
fn candidate_json(c: &Candidate, m: &Measured) -> Value {
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
    v
}

/// The measurements of each trialed candidate, in candidate order.
fn candidate_rows(t: &Tune) -> impl Iterator<Item = (&Candidate, &Measured)> {
    t.candidates
        .iter()
        .filter_map(|c| Some((c, measured(t, &c.config().to_string())?)))
}

/// The whole result as JSON; `config_file` is where the winner's file was written.
pub fn to_json(t: &Tune, config_file: Option<&std::path::Path>) -> Value {
    let cands: Vec<Value> = candidate_rows(t)
        .map(|(c, m)| candidate_json(c, m))
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
        "tie": (t.tie.len() > 1).then(|| json!({
            "between": t.tie,
            "rule": "the higher compression ratio measured wins a tie (memory is what compression saves)",
        })),
        "prediction_held": t.prediction_held,
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
        "tied_with_winner",
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
        "compression_ratio",
    ];
    let mut o = cols.join(",");
    o.push('\n');
    for (c, m) in candidate_rows(t) {
        let v = candidate_json(c, m);
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

#[cfg(test)]
mod tests {
    use super::capture_finding;
    use crate::steps::Learn;

    fn learn(at: Option<u64>, peak: u64) -> Learn {
        Learn {
            wall_s: 1.0,
            peak_anon_bytes: peak,
            cgroup_peak_bytes: None,
            capture_s: 0.1,
            corpus: "w (captured)".into(),
            pages: 100,
            captured_at_anon_bytes: at,
        }
    }

    #[test]
    fn a_capture_well_below_the_peak_is_a_finding() {
        let f = capture_finding(&learn(Some(4 << 20), 256 << 20)).unwrap();
        assert!(f.contains(" 4M ") && f.contains("(256M)"), "{f}");
        assert!(f.contains("--corpus"), "{f}");
        assert_eq!(capture_finding(&learn(Some(200 << 20), 256 << 20)), None);
        assert_eq!(capture_finding(&learn(None, 256 << 20)), None, "--corpus");
    }
}
