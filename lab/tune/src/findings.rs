//! What the comparison means: whether the prediction held, the rank
//! correlation of predicted and measured order, how the pick was made (or
//! why there is none), and the findings in sentences (computed once, when the
//! steps finish; the renderer shows them).

use zmem_conf::format_size;

use crate::candidates::Candidate;
use crate::check;
use crate::compare::{self, Decision, Measured, Outcome, Standing};
use crate::outcome::{Held, Learn, Tune};
use crate::predict::Expect;

fn held_of(s: Standing) -> Held {
    match s {
        Standing::Leader | Standing::Equivalent => Held::Held,
        Standing::Undecided => Held::CannotTell,
        Standing::Behind | Standing::Failed => Held::DidNotHold,
    }
}

/// The trialed candidates predicted best (equal predictions share a rank).
fn predicted_best(chosen: &[Candidate]) -> impl Iterator<Item = &Candidate> {
    let best = chosen.iter().map(|c| c.prediction.rank).min();
    chosen
        .iter()
        .filter(move |c| Some(c.prediction.rank) == best)
}

fn find<'a>(measured: &'a [Measured], config: &str) -> Option<&'a Measured> {
    measured.iter().find(|m| m.config == config)
}

/// Whether the prediction held, and for which of the predicted best (the
/// one that fared best).
fn best_and_held<'a>(
    chosen: &[Candidate],
    measured: &'a [Measured],
) -> Option<(&'a Measured, Held)> {
    let rank = |h: Held| match h {
        Held::Held => 0,
        Held::CannotTell => 1,
        Held::DidNotHold => 2,
    };
    predicted_best(chosen)
        .filter_map(|c| {
            let m = find(measured, &c.config().to_string())?;
            Some((m, held_of(m.standing)))
        })
        .min_by_key(|x| rank(x.1))
}

/// Whether the trialed candidate predicted best ran fastest: held (it led or
/// was equivalent to the leader), cannot tell (undecided against the
/// leader), did not hold (behind the leader, or a run failed).
pub fn prediction_held(chosen: &[Candidate], o: &Outcome) -> Option<Held> {
    o.decision.as_ref()?;
    best_and_held(chosen, &o.measured).map(|x| x.1)
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
        // Candidates with a failed run tie at the bottom (their order is no measurement).
        m.push(if x.standing == Standing::Failed {
            f64::INFINITY
        } else {
            x.rank as f64
        });
    }
    compare::spearman(&p, &m)
}

pub(crate) fn measured<'a>(t: &'a Tune, config: &str) -> Option<&'a Measured> {
    t.measured.iter().find(|m| m.config == config)
}

/// The median of the deciding metric (the wall time without `--metric`).
fn median(m: Option<&Measured>) -> Option<f64> {
    Some(m?.metric?.median)
}

/// A value of the deciding metric with its unit (s for wall time).
fn val(d: &Decision, x: f64) -> String {
    if d.by_wall() {
        return format!("{x:.2} s");
    }
    let unit = d
        .unit
        .as_deref()
        .map(|u| format!(" {u}"))
        .unwrap_or_default();
    let a = x.abs();
    let p = if a >= 100.0 {
        1
    } else if a >= 1.0 || a == 0.0 {
        2
    } else {
        3
    };
    format!("{x:.p$}{unit}")
}

/// Bytes as MiB with one decimal, as the table shows them.
fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / 1048576.0)
}

fn secs(x: Option<f64>) -> String {
    x.map_or("-".into(), |s| format!("{s:.2} s"))
}

/// `a, b and c`.
fn list(v: &[String]) -> String {
    match v {
        [] => String::new(),
        [a] => a.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Why there is no pick: no configuration held the workload under the
/// limit, what failed, and the peaks seen. `None` when there is a pick.
pub fn no_fit(
    workload: &str,
    limit: u64,
    learn: &Learn,
    chosen: &[Candidate],
    o: &Outcome,
    trial: &zmem_trial::TrialReport,
) -> Option<String> {
    if o.decision.is_some() {
        return None;
    }
    let failed: Vec<String> = o
        .measured
        .iter()
        .map(|m| {
            format!(
                "{}: {} of {} runs failed ({})",
                m.config,
                m.runs - m.ok,
                m.runs,
                m.failures.join(", ")
            )
        })
        .collect();
    let cg = learn
        .cgroup_peak_bytes
        .map(|b| format!(" (its cgroup's peak {})", mib(b)))
        .unwrap_or_default();
    let under = trial
        .runs
        .iter()
        .filter_map(|r| r.cgroup_peak_bytes)
        .max()
        .map(|b| format!("; under the limit the trials' cgroups peaked at {}", mib(b)))
        .unwrap_or_default();
    // The model saw it coming when it expected every candidate to be killed.
    let expected = chosen
        .iter()
        .all(|c| c.prediction.outcome == Expect::OomKilled)
        .then(|| chosen.first())
        .flatten()
        .map(|c| format!(" The model expected it ({}).", c.prediction.basis))
        .unwrap_or_default();
    Some(format!(
        "No configuration held {workload} in {}: every candidate failed in at least one run ({}). Without a limit its anonymous memory peaked at {}{cg}{under}.{expected} No configuration was chosen or written: give a larger --memory or --swap-size, or make the workload need less.",
        format_size(limit),
        failed.join("; "),
        mib(learn.peak_anon_bytes),
    ))
}

/// The first sentence: did the prediction hold.
fn verdict_sentence(chosen: &[Candidate], measured: &[Measured], d: &Decision) -> String {
    if !d.by_wall() {
        return format!(
            "Ranked by {} as the trials measured it: the model predicts swap traffic and swap time (and so the wall time), not {} (a request's tail or a client's rate), so it cannot predict it; the predictions only chose which candidates to trial.",
            d.metric, d.metric
        );
    }
    let lead = median(find(measured, &d.leader));
    let Some((m, held)) = best_and_held(chosen, measured) else {
        return String::new();
    };
    let (best, bm) = (&m.config, median(Some(m)));
    match (held, m.standing) {
        (Held::Held, Standing::Leader) => format!(
            "The prediction held: {best} was predicted fastest and ran fastest ({} median).",
            secs(bm)
        ),
        (Held::Held, _) => format!(
            "The prediction held: {best} was predicted fastest and ran within the margin of the fastest, {} ({} against {}).",
            d.leader, secs(bm), secs(lead)
        ),
        (Held::CannotTell, _) => format!(
            "Cannot tell whether the prediction held: {best} was predicted fastest and ran {} against the leader {}'s {}, a difference the runs could not separate from the margin.",
            secs(bm), d.leader, secs(lead)
        ),
        (Held::DidNotHold, Standing::Failed) => format!(
            "The prediction did not hold: {best} was predicted fastest, but {} of its {} runs failed ({}).",
            m.runs - m.ok, m.runs, m.failures.join(", ")
        ),
        (Held::DidNotHold, _) => format!(
            "The prediction did not hold: {best} was predicted fastest, but {} ran faster by more than the margin ({} against {}).",
            d.leader, secs(lead), secs(bm)
        ),
    }
}

/// How the pick was made: equivalent and undecided candidates, the tie-break,
/// what would decide, and the candidates that lost for a failed run.
fn decision_sentences(measured: &[Measured], d: &Decision, out: &mut Vec<String>) {
    let lead = median(find(measured, &d.leader)).unwrap_or(f64::NAN);
    let margin = format!(
        "±{} ({:.0} % of the leader's {} median)",
        val(d, d.margin_s),
        compare::MARGIN_SHARE * 100.0,
        val(d, lead),
    );
    let ratio = |c: &str| find(measured, c).map_or(1.0, |m| m.tie_break_ratio);
    let rule = format!(
        "the pick goes to the higher effective ratio the lab measured on the workload's pages, then the candidate order: {} ({:.3}:1)",
        d.winner,
        ratio(&d.winner)
    );
    let beyond = format!(
        "beyond noise ({:.1} % interval over {} rounds)",
        d.coverage.unwrap_or(0.0) * 100.0,
        d.rounds
    );
    if !d.equivalent.is_empty() {
        out.push(format!(
            "{} ran within {margin} of the leader, {beyond}: equivalent.",
            list(&d.equivalent)
        ));
    }
    let behind: Vec<String> = measured
        .iter()
        .filter(|m| m.standing == Standing::Behind)
        .map(|m| m.config.clone())
        .collect();
    if !behind.is_empty() {
        let worse = if d.by_wall() {
            "ran slower than".to_string()
        } else {
            format!("did worse in {} than", d.metric)
        };
        out.push(format!(
            "{} {worse} the leader {} by more than {margin}, {beyond}.",
            list(&behind),
            d.leader
        ));
    }
    if d.coverage.is_none() {
        out.push(format!(
            "{} is the only candidate that finished all its runs.",
            d.leader
        ));
    } else if d.undecided.is_empty() {
        if !d.equivalent.is_empty() {
            out.push(format!("Proven within the margin: {rule}."));
        }
    } else {
        let why = if d.coverage == Some(0.0) {
            format!(
                "{} runs per candidate cannot give the {:.0} % coverage a call needs",
                d.rounds,
                d.coverage_needed * 100.0
            )
        } else {
            "the interval of the paired difference reaches past the margin".into()
        };
        let more = match d.suggest_repeat {
            Some(n) if d.coverage == Some(0.0) => {
                format!(" --repeat {n} is the fewest runs that can decide.")
            }
            Some(n) => format!(" --repeat {n} narrows the intervals and may decide."),
            None => String::new(),
        };
        out.push(format!(
            "Not proven: the runs could not separate {} from the leader {} at the margin {margin} ({why}); {rule}.{more}",
            list(&d.undecided),
            d.leader
        ));
    }
    let failed: Vec<String> = measured
        .iter()
        .filter(|m| m.standing == Standing::Failed)
        .map(|m| format!("{} ({})", m.config, m.failures.join(", ")))
        .collect();
    if !failed.is_empty() {
        out.push(format!(
            "Cannot win, a run failed: {}. A configuration that sometimes kills the workload is not deployable, however fast its other runs.",
            failed.join(", ")
        ));
    }
}

/// Where the model and a trial disagree about a candidate's outcome (the
/// traffic and time: `check`): failures the model did not expect, in one
/// sentence, and runs it expected to be OOM-killed.
fn disagreements(t: &Tune, out: &mut Vec<String>) {
    let mut unexpected = Vec::new();
    let mut oom = false;
    for c in &t.candidates {
        let name = c.config().to_string();
        let Some(m) = measured(t, &name) else {
            continue;
        };
        let p = &c.prediction;
        if p.outcome == Expect::Runs && !m.failures.is_empty() {
            oom |= m.failures.iter().any(|f| f.contains("oom"));
            unexpected.push(format!(
                "{name} ({} of {}: {})",
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
    }
    if !unexpected.is_empty() {
        let why = match (oom, t.trial.cgroup) {
            (false, _) => "",
            (true, zmem_trial::CgroupVersion::V2) => ": the model has no term for the cgroup's OOM killer, which ends a workload when reclaim under the limit makes no progress (on cgroup v2 zswap's pool counts against the limit too)",
            (true, zmem_trial::CgroupVersion::V1) => ": the model has no term for the cgroup's OOM killer, which ends a workload when reclaim under the limit makes no progress",
        };
        out.push(format!(
            "The model expected these to run, but runs failed: {}{why}.",
            unexpected.join("; ")
        ));
    }
}

/// A warning when the pages the prediction used were captured well below
/// the workload's anonymous peak (it exited, or grew too fast, for a later
/// capture): under half of it.
fn capture_finding(l: &Learn) -> Option<String> {
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
    let mut out = Vec::new();
    match (&t.decision, &t.no_fit) {
        (Some(d), _) => {
            out.push(verdict_sentence(&t.candidates, &t.measured, d));
            decision_sentences(&t.measured, d, &mut out);
        }
        (None, Some(n)) => out.push(n.clone()),
        (None, None) => {}
    }
    if t.overflow_bytes == 0 {
        out.push(format!(
            "The workload's anonymous peak ({}) fits under {}: nothing had to be swapped, so the configurations differ by noise only; give a smaller --memory.",
            format_size(t.learn.peak_anon_bytes),
            format_size(t.memory_limit_bytes)
        ));
    }
    out.extend(capture_finding(&t.learn));
    disagreements(t, &mut out);
    out.extend(check::model_findings(&t.model_check, t.learn.wall_s));
    if let Some(r) = t.rank_correlation {
        out.push(format!(
            "Rank correlation of predicted and measured order: {r:.2} over {} candidates (1 = the same order).",
            t.candidates.len()
        ));
    }
    let disk = t.measured.iter().find(|m| m.config == "disk");
    let wall = |m: Option<&Measured>| m?.median_wall();
    if let (Some(w), Some(d)) = (&t.winner, wall(disk)) {
        if let Some(wm) = wall(measured(t, w)).filter(|_| w != "disk") {
            out.push(format!(
                "{w} ran {:.1}× as fast as disk swap alone ({wm:.2} s against {d:.2} s).",
                d / wm
            ));
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::{entrants, report, rounds, run};
    use crate::compare::{compare, Outcome};

    fn learn(at: Option<u64>, peak: u64) -> Learn {
        Learn {
            wall_s: 1.0,
            peak_anon_bytes: peak,
            cgroup_peak_bytes: Some(peak + (3 << 20)),
            capture_s: 0.1,
            corpus: "w (captured)".into(),
            pages: 100,
            captured_at_anon_bytes: at,
        }
    }

    /// zram:lz4 predicted best, zram:lzo second, disk the baseline.
    fn chosen() -> Vec<Candidate> {
        let m = crate::predict::sample_inputs(256, 128);
        let c = crate::candidates::choose(&crate::predict::predict(&m), 2, None);
        let names: Vec<String> = c.iter().map(|c| c.config().to_string()).collect();
        assert_eq!(names, ["zram:lz4", "zram:lzo", "disk"]);
        c
    }

    fn outcome(spec: &[(&str, f64, &[u32])], n: u32) -> Outcome {
        let names = ["zram:lz4", "zram:lzo", "disk"];
        let e = entrants(&[("zram:lz4", 2.0), ("zram:lzo", 2.1), ("disk", 1.0)]);
        compare(
            &report(rounds(spec, n), &names),
            &e,
            &zmem_trial::MetricSpec::wall(),
        )
    }

    fn said(o: &Outcome) -> (Option<Held>, String, Vec<String>) {
        let c = chosen();
        let d = o.decision.as_ref().unwrap();
        let mut more = Vec::new();
        decision_sentences(&o.measured, d, &mut more);
        (
            prediction_held(&c, o),
            verdict_sentence(&c, &o.measured, d),
            more,
        )
    }

    #[test]
    fn the_prediction_held_did_not_hold_or_cannot_tell() {
        // Eight rounds: lz4 leads, lzo 0.5 s and disk 7 s behind (margin 0.1 s).
        let o = outcome(
            &[
                ("zram:lz4", 2.0, &[]),
                ("zram:lzo", 2.5, &[]),
                ("disk", 9.0, &[]),
            ],
            8,
        );
        let (held, s, more) = said(&o);
        assert_eq!(held, Some(Held::Held));
        assert!(
            s.starts_with("The prediction held: zram:lz4") && s.contains("ran fastest"),
            "{s}"
        );
        assert_eq!(more.len(), 1, "{more:?}");
        assert!(more[0].starts_with("zram:lzo and disk ran slower than the leader zram:lz4 by more than ±0.10 s (5 % of the leader's 2.02 s median), beyond noise (99.2 % interval over 8 rounds)"), "{more:?}");
        // lz4 equivalent to lzo (0.01 s apart): held, within the margin.
        let o = outcome(
            &[
                ("zram:lz4", 2.01, &[]),
                ("zram:lzo", 2.0, &[]),
                ("disk", 9.0, &[]),
            ],
            8,
        );
        let (held, s, more) = said(&o);
        assert_eq!(held, Some(Held::Held));
        assert!(
            s.contains("within the margin of the fastest, zram:lzo"),
            "{s}"
        );
        // The tie goes to lzo's higher ratio, proven.
        assert!(more.iter().any(|m| m.contains("equivalent")), "{more:?}");
        assert!(
            more.iter()
                .any(|m| m.starts_with("Proven") && m.contains("zram:lzo (2.100:1)")),
            "{more:?}"
        );
        // lz4 1 s behind: did not hold.
        let o = outcome(
            &[
                ("zram:lz4", 3.0, &[]),
                ("zram:lzo", 2.0, &[]),
                ("disk", 9.0, &[]),
            ],
            8,
        );
        let (held, s, _) = said(&o);
        assert_eq!(held, Some(Held::DidNotHold));
        assert!(
            s.contains("did not hold") && s.contains("by more than the margin"),
            "{s}"
        );
        // lz4 killed once: it lost, the prediction did not hold.
        let o = outcome(
            &[
                ("zram:lz4", 1.0, &[4]),
                ("zram:lzo", 2.0, &[]),
                ("disk", 9.0, &[]),
            ],
            8,
        );
        let (held, s, more) = said(&o);
        assert_eq!(held, Some(Held::DidNotHold));
        assert!(s.contains("1 of its 8 runs failed (1× oom-killed)"), "{s}");
        assert!(
            more.iter()
                .any(|m| m.starts_with("Cannot win") && m.contains("zram:lz4")),
            "{more:?}"
        );
    }

    #[test]
    fn undecided_is_said_and_never_called_a_miss() {
        // The README's case: 3.36 s against 3.35 s in three runs.
        let o = outcome(
            &[
                ("zram:lz4", 3.36, &[]),
                ("zram:lzo", 3.35, &[]),
                ("disk", 9.0, &[]),
            ],
            3,
        );
        let (held, s, more) = said(&o);
        assert_eq!(held, Some(Held::CannotTell));
        assert!(
            s.starts_with("Cannot tell whether the prediction held"),
            "{s}"
        );
        assert!(!s.contains("did not hold"), "{s}");
        let m = more
            .iter()
            .find(|m| m.starts_with("Not proven"))
            .expect("said out loud");
        assert!(
            m.contains("zram:lz4 and disk") && m.contains("leader zram:lzo"),
            "{m}"
        );
        assert!(
            m.contains("3 runs per candidate cannot give the 95 % coverage"),
            "{m}"
        );
        assert!(m.contains("--repeat 6 is the fewest"), "{m}");
        // The pick: lzo's ratio (2.1) over lz4's (2.0) and the disk's (1).
        assert!(m.contains(": zram:lzo (2.100:1)"), "{m}");
        assert!(!o.decision.unwrap().proven);
    }

    #[test]
    fn no_pick_says_no_configuration_held_the_workload_and_the_peaks() {
        let names = ["zram:lz4", "disk"];
        let mut runs = rounds(&[("zram:lz4", 2.0, &[2]), ("disk", 9.0, &[1, 2, 3])], 3);
        runs[0].cgroup_peak_bytes = Some(64 << 20);
        let r = report(runs, &names);
        let o = compare(
            &r,
            &entrants(&[("zram:lz4", 2.0), ("disk", 1.0)]),
            &zmem_trial::MetricSpec::wall(),
        );
        assert_eq!(prediction_held(&chosen(), &o), None);
        let c = chosen();
        let n = no_fit(
            "memalloc 512M",
            64 << 20,
            &learn(None, 512 << 20),
            &c,
            &o,
            &r,
        )
        .unwrap();
        assert!(
            n.starts_with("No configuration held memalloc 512M in 64M"),
            "{n}"
        );
        assert!(
            n.contains("zram:lz4: 1 of 3 runs failed (1× oom-killed)"),
            "{n}"
        );
        assert!(
            n.contains("disk: 3 of 3 runs failed (3× oom-killed)"),
            "{n}"
        );
        assert!(
            n.contains("peaked at 512.0 MiB (its cgroup's peak 515.0 MiB)"),
            "{n}"
        );
        assert!(n.contains("the trials' cgroups peaked at 64.0 MiB"), "{n}");
        assert!(n.contains("No configuration was chosen or written"), "{n}");
        assert!(
            !n.contains("The model expected it"),
            "it expected them to run: {n}"
        );
        // With a pick, nothing to say.
        let ok = vec![run("disk", 1, 1.0, true)];
        let r = report(ok, &["disk"]);
        let o = compare(
            &r,
            &entrants(&[("disk", 1.0)]),
            &zmem_trial::MetricSpec::wall(),
        );
        assert_eq!(no_fit("w", 1, &learn(None, 1), &c, &o, &r), None);
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
