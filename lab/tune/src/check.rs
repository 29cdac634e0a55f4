//! What the trials say about the model: per trialed candidate, the swap
//! traffic (pages out and in), the swap time and the compression ratio the
//! model predicted beside what the trials measured, the measured/predicted
//! factor of each quantity across candidates, and sentences naming the model's
//! inputs that were off. Nothing is fitted or corrected: the factors are
//! reported, for the user and for the next change to the model.

use serde::Serialize;

use crate::candidates::Candidate;
use crate::compare::Measured;
use crate::predict::Expect;

/// A factor this close to 1 (within 0.8–1.25) counts as the model holding.
const HOLDS: (f64, f64) = (0.8, 1.25);

/// The model against one candidate's trials (the measured figures are
/// medians over its runs that exited 0; `None` without such a run).
#[derive(Debug, Clone, Serialize)]
pub struct ModelCheck {
    pub config: String,
    /// The model: every overflow page goes out once and comes back once.
    pub predicted_swap_out_pages: Option<u64>,
    pub predicted_swap_in_pages: Option<u64>,
    pub measured_swap_out_pages: Option<f64>,
    pub measured_swap_in_pages: Option<f64>,
    pub predicted_swap_s: Option<f64>,
    /// The median wall time under the limit minus the unpressured run's, s.
    pub measured_swap_s: Option<f64>,
    /// The lab's effective ratio on the workload's pages.
    pub predicted_ratio: Option<f64>,
    /// The tier's ratio at its fullest in the trials.
    pub measured_ratio: Option<f64>,
    /// Measured over predicted.
    pub swap_out_factor: Option<f64>,
    pub swap_in_factor: Option<f64>,
    pub swap_time_factor: Option<f64>,
    /// Swap time per page moved (out or in), measured over predicted.
    pub page_cost_factor: Option<f64>,
}

fn factor(measured: Option<f64>, predicted: Option<f64>) -> Option<f64> {
    let (m, p) = (measured?, predicted?);
    (p > 0.0 && p.is_finite() && m.is_finite()).then(|| m / p)
}

/// The model against `m`'s trials; `base_wall_s` is the unpressured run's
/// wall time, `lab_ratio` the lab's ratio for the candidate's tier.
pub fn check(c: &Candidate, m: &Measured, base_wall_s: f64, lab_ratio: Option<f64>) -> ModelCheck {
    let p = &c.prediction;
    let runs = p.outcome == Expect::Runs;
    let pages = runs.then_some(p.swapped_pages);
    let pred_s = runs.then_some(p.swap_s).filter(|s| s.is_finite());
    let meas_s = m.median_wall().map(|w| (w - base_wall_s).max(0.0));
    let (out, inn) = (m.swapped_out(), m.swapped_in());
    let moved = |a: Option<f64>, b: Option<f64>| Some(a? + b?).filter(|&x| x > 0.0);
    let pred_moved = pages.map(|x| 2.0 * x as f64);
    let per_page = |s: Option<f64>, n: Option<f64>| Some(s? / n?);
    ModelCheck {
        config: m.config.clone(),
        predicted_swap_out_pages: pages,
        predicted_swap_in_pages: pages,
        measured_swap_out_pages: out,
        measured_swap_in_pages: inn,
        predicted_swap_s: pred_s,
        measured_swap_s: meas_s,
        predicted_ratio: lab_ratio,
        measured_ratio: m.compression_ratio,
        swap_out_factor: factor(out, pages.map(|x| x as f64)),
        swap_in_factor: factor(inn, pages.map(|x| x as f64)),
        swap_time_factor: factor(meas_s, pred_s),
        page_cost_factor: factor(
            per_page(meas_s, moved(out, inn)),
            per_page(pred_s, pred_moved.filter(|&x| x > 0.0)),
        ),
    }
}

/// One quantity's measured/predicted factor across candidates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub candidates: usize,
}

impl Spread {
    fn of(xs: impl Iterator<Item = f64>) -> Option<Spread> {
        let v: Vec<f64> = xs.filter(|x| x.is_finite()).collect();
        let s = zmem_trial::Stats::of(&v)?;
        Some(Spread {
            median: s.median,
            min: s.min,
            max: s.max,
            candidates: v.len(),
        })
    }

    fn holds(&self) -> bool {
        (HOLDS.0..=HOLDS.1).contains(&self.median)
    }

    /// `3.0× (2.9–3.1× over 3 candidates)`.
    fn show(&self) -> String {
        let same = format!("{:.2}", self.min) == format!("{:.2}", self.max);
        match (self.candidates, same) {
            (1, _) => format!("{:.2}×", self.median),
            (n, true) => format!("{:.2}× (all {n} candidates)", self.median),
            (n, false) => format!(
                "{:.2}× ({:.2}–{:.2}× over {n} candidates)",
                self.median, self.min, self.max
            ),
        }
    }
}

/// The factors of each quantity across the candidates.
#[derive(Debug, Clone, Serialize)]
pub struct ModelErrors {
    pub swap_out_factor: Option<Spread>,
    pub swap_in_factor: Option<Spread>,
    pub swap_time_factor: Option<Spread>,
    pub page_cost_factor: Option<Spread>,
}

pub fn errors(checks: &[ModelCheck]) -> ModelErrors {
    let of = |f: fn(&ModelCheck) -> Option<f64>| Spread::of(checks.iter().filter_map(f));
    ModelErrors {
        swap_out_factor: of(|c| c.swap_out_factor),
        swap_in_factor: of(|c| c.swap_in_factor),
        swap_time_factor: of(|c| c.swap_time_factor),
        page_cost_factor: of(|c| c.page_cost_factor),
    }
}

fn traffic_sentence(e: &ModelErrors) -> Option<String> {
    let out = e.swap_out_factor?;
    let inn = e.swap_in_factor;
    let in_text = inn.map_or(String::new(), |s| format!(", swap-ins {}", s.show()));
    if out.holds() && inn.is_none_or(|s| s.holds()) {
        return Some(format!(
            "The model's swap traffic held: measured/predicted swap-outs {}{in_text}.",
            out.show()
        ));
    }
    let why = if out.median > HOLDS.1 {
        "pages went out and came back more than once (the workload re-read a working set larger than the limit)"
    } else {
        "the kernel kept more of the overflow resident, or swapped less of it, than the model assumed"
    };
    Some(format!(
        "The model's swap traffic was off: it assumes every overflow page goes out once and comes back once; measured/predicted swap-outs {}{in_text}: {why}.",
        out.show()
    ))
}

/// The candidates whose page cost was off in one direction, with their factors.
fn off_by_cost(checks: &[ModelCheck], over: bool) -> Option<String> {
    let v: Vec<String> = checks
        .iter()
        .filter_map(|c| {
            let f = c.page_cost_factor?;
            let off = if over { f > HOLDS.1 } else { f < HOLDS.0 };
            off.then(|| format!("{} ({f:.2}×)", c.config))
        })
        .collect();
    (!v.is_empty()).then(|| v.join(", "))
}

fn time_sentence(e: &ModelErrors, checks: &[ModelCheck], base_wall_s: f64) -> Option<String> {
    let t = e.swap_time_factor?;
    let head = format!(
        "Swap time (each candidate's median wall time minus the unpressured run's {base_wall_s:.2} s) was {} the model's",
        t.show()
    );
    let Some(c) = e.page_cost_factor else {
        return Some(format!("{head}."));
    };
    let mut parts = Vec::new();
    if let Some(v) = off_by_cost(checks, true) {
        parts.push(format!(
            "per page moved it cost more than the model priced for {v}: the per-page costs (the lab's compression and decompression of these pages, the disk's 4 KiB reads and writes) leave out the kernel's page-fault and reclaim work"
        ));
    }
    if let Some(v) = off_by_cost(checks, false) {
        parts.push(format!(
            "less for {v}: a swapped page cost less than priced (the disk's swap-ins read ahead several pages at a time, where the model priced random 4 KiB reads)"
        ));
    }
    if parts.is_empty() {
        return Some(format!(
            "{head}; per page moved the costs held ({}): the time error is the traffic's.",
            c.show()
        ));
    }
    Some(format!("{head}; {}.", parts.join("; ")))
}

fn ratio_sentences(checks: &[ModelCheck], out: &mut Vec<String>) {
    for c in checks {
        let (Some(p), Some(m)) = (c.predicted_ratio, c.measured_ratio) else {
            continue;
        };
        if !(0.9..=1.1).contains(&(m / p)) {
            out.push(format!(
                "{}: the lab measured {p:.2}:1 on the captured pages, the trials' tier held {m:.2}:1 at its fullest: the pages that went to swap compress differently from the captured ones.",
                c.config
            ));
        }
    }
}

/// Where the model was wrong, in sentences.
pub fn model_findings(checks: &[ModelCheck], base_wall_s: f64) -> Vec<String> {
    let e = errors(checks);
    let mut out: Vec<String> = traffic_sentence(&e).into_iter().collect();
    out.extend(time_sentence(&e, checks, base_wall_s));
    ratio_sentences(checks, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mc(config: &str, out: f64, inn: f64, meas_s: f64, pages: u64, pred_s: f64) -> ModelCheck {
        let f = |m: f64, p: f64| Some(m / p);
        let cost = f(meas_s / (out + inn), pred_s / (2.0 * pages as f64));
        ModelCheck {
            config: config.into(),
            predicted_swap_out_pages: Some(pages),
            predicted_swap_in_pages: Some(pages),
            measured_swap_out_pages: Some(out),
            measured_swap_in_pages: Some(inn),
            predicted_swap_s: Some(pred_s),
            measured_swap_s: Some(meas_s),
            predicted_ratio: Some(2.0),
            measured_ratio: Some(2.0),
            swap_out_factor: f(out, pages as f64),
            swap_in_factor: f(inn, pages as f64),
            swap_time_factor: f(meas_s, pred_s),
            page_cost_factor: cost,
        }
    }

    #[test]
    fn factors_across_candidates_and_what_was_off() {
        // memalloc-like: three swap-outs and two swap-ins per overflow page,
        // and each page moved costs 4× the lab's figure.
        let checks = [
            mc("zram:lz4", 3000.0, 2000.0, 2.0, 1000, 0.1),
            mc("zram:lzo", 3100.0, 2000.0, 2.2, 1000, 0.1),
        ];
        let e = errors(&checks);
        let out = e.swap_out_factor.unwrap();
        assert!(
            (out.median - 3.05).abs() < 1e-9 && out.candidates == 2,
            "{out:?}"
        );
        assert!((e.swap_time_factor.unwrap().median - 21.0).abs() < 1e-9);
        let f = model_findings(&checks, 0.5);
        assert!(
            f[0].contains("traffic was off") && f[0].contains("3.05×"),
            "{f:?}"
        );
        assert!(f[0].contains("more than once"), "{f:?}");
        assert!(f[1].contains("0.50 s") && f[1].contains("21.00×"), "{f:?}");
        assert!(f[1].contains("page-fault and reclaim"), "{f:?}");
        assert!(f[1].contains("zram:lz4 (8.00×), zram:lzo (8.63×)"), "{f:?}");
        assert!(!f[1].contains("less for"), "{f:?}");
        assert_eq!(f.len(), 2, "{f:?}");
    }

    #[test]
    fn a_model_that_held_is_said_to_hold() {
        let checks = [mc("disk", 1050.0, 980.0, 1.0, 1000, 1.0)];
        let f = model_findings(&checks, 0.5);
        assert!(f[0].starts_with("The model's swap traffic held"), "{f:?}");
        assert!(f[1].contains("the costs held"), "{f:?}");
        let mut off = checks[0].clone();
        off.measured_ratio = Some(1.5);
        let f = model_findings(&[off], 0.5);
        assert!(f[2].contains("2.00:1") && f[2].contains("1.50:1"), "{f:?}");
    }

    #[test]
    fn no_figures_without_a_finished_run_or_a_prediction() {
        assert_eq!(factor(None, Some(1.0)), None);
        assert_eq!(factor(Some(1.0), Some(f64::INFINITY)), None);
        assert_eq!(factor(Some(1.0), Some(0.0)), None);
        assert!(model_findings(&[], 1.0).is_empty());
    }
}
