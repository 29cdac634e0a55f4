//! What the comparison means: whether the prediction held, the rank
//! correlation of predicted and measured order, and the findings in
//! sentences (computed once, when the steps finish; the renderer shows them).

use zmem_units::format_size;

use crate::candidates::Candidate;
use crate::compare::{self, Measured, Outcome};
use crate::outcome::{Learn, Tune};
use crate::predict::Expect;

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

pub(crate) fn measured<'a>(t: &'a Tune, config: &str) -> Option<&'a Measured> {
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

#[cfg(test)]
mod tests {
    use super::capture_finding;
    use crate::outcome::Learn;

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
