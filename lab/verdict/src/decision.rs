//! The verdict's decision at a look: the leader (best median score), every
//! other candidate called ahead-of, equivalent or undecided against it
//! ([`zmem_trial::separate`]), and the pick by a tie-break that does not vary from
//! run to run on the same pages.
//!
//! The margin is a difference a user would feel: a swap 5 % slower in both
//! directions ([`MARGIN_SLOWER`]) — swap-in latency 5 % longer and swap-out
//! and swap-in throughput 5 % lower — turned into score by the weights
//! ([`Margin::of`]), and said in µs of swap-in and MiB/s of swap-out at the
//! leader's figures.

use serde::Serialize;

use crate::ranked::Ranked;
use crate::score::Weights;
use zmem_trial::{self as settle, Call};

/// How candidates the measurements cannot tell apart (equivalent, or
/// undecided when the budget ends) are split: by a quantity that is the
/// same on every run over the same pages.
pub const TIE_RULE: &str = "the higher effective ratio wins (memory is what zram saves, and the ratio is exact: the same pages give the same mm_stat on every run); equal ratios go to the kernel's default order";

/// The slowdown a user would feel: a swap this much slower in both directions.
pub const MARGIN_SLOWER: f64 = 0.05;

/// The margin of the decision, in score and in what it means at the leader's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Margin {
    /// Score difference of a swap [`MARGIN_SLOWER`] slower in both directions.
    pub score: f64,
    /// The same, as µs added to the leader's median 4 KiB swap-in.
    pub swap_in_us: f64,
    /// The same, as MiB/s taken from the leader's median swap-out.
    pub swap_out_mibps: f64,
}

impl Margin {
    /// The margin under `w` at the leader's figures (its median swap-in
    /// latency in ns and swap-out throughput in MiB/s).
    pub fn of(w: &Weights, leader_lat_ns: f64, leader_write_mibps: f64) -> Margin {
        let total = w.latency + w.ratio + w.throughput;
        let slower = 1.0 - 1.0 / (1.0 + MARGIN_SLOWER);
        Margin {
            score: (w.latency + w.throughput) * slower / total,
            swap_in_us: leader_lat_ns * MARGIN_SLOWER / 1000.0,
            swap_out_mibps: leader_write_mibps * slower,
        }
    }
}

/// What the verdict decided, and how sure it is.
#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    /// Every candidate is either behind the leader by more than the margin
    /// or equivalent to it: the pick is proven. False: the budget ended first.
    pub settled: bool,
    /// Best median score.
    pub leader: String,
    /// Candidates within ±margin of the leader, beyond noise.
    pub equivalent: Vec<String>,
    /// Candidates the rounds could not separate from the leader.
    pub undecided: Vec<String>,
    pub margin: Margin,
    /// The look this decision was made at (1-based) and the error it spent.
    pub look: usize,
    pub look_error: f64,
    pub rule: String,
}

/// The registry's order of an algorithm (the kernel's default order): the
/// last tie-break.
fn order(algo: &str) -> usize {
    zmem_codec::registry::names()
        .iter()
        .position(|n| *n == algo)
        .unwrap_or(usize::MAX)
}

/// Decide on `ranked` (deployable candidates with their round scores, all
/// of the same rounds), sorting them best median first and filling each
/// one's `behind_leader` and `call`. Returns the pick and the decision.
pub fn decide(ranked: &mut [Ranked], w: &Weights, look: usize) -> (String, Decision) {
    ranked.sort_by(|a, b| {
        let (sa, sb) = (a.score.map(|s| s.median), b.score.map(|s| s.median));
        sb.unwrap_or(f64::MIN)
            .total_cmp(&sa.unwrap_or(f64::MIN))
            .then(order(&a.algo).cmp(&order(&b.algo)))
    });
    let margin = Margin::of(
        w,
        ranked[0].read_lat_ns.median,
        ranked[0].write_mibps.median,
    );
    let error = settle::look_error(look);
    let lead = ranked[0].round_scores.clone();
    let (mut equivalent, mut undecided) = (Vec::new(), Vec::new());
    for r in ranked.iter_mut().skip(1) {
        let d: Vec<f64> = lead
            .iter()
            .zip(&r.round_scores)
            .map(|(a, b)| a - b)
            .collect();
        let s = settle::separate(&d, margin.score, error);
        r.behind_leader = Some(s.diff);
        r.call = Some(s.call);
        match s.call {
            Call::Ahead => {}
            Call::Equivalent => equivalent.push(r.algo.clone()),
            Call::Undecided => undecided.push(r.algo.clone()),
        }
    }
    let pick = ranked
        .iter()
        .filter(|r| r.call != Some(Call::Ahead))
        .max_by(|a, b| {
            a.effective_ratio
                .total_cmp(&b.effective_ratio)
                .then(order(&b.algo).cmp(&order(&a.algo)))
        })
        .map(|r| r.algo.clone())
        .unwrap_or_else(|| ranked[0].algo.clone());
    let decision = Decision {
        settled: undecided.is_empty(),
        leader: ranked[0].algo.clone(),
        equivalent,
        undecided,
        margin,
        look,
        look_error: error,
        rule: TIE_RULE.into(),
    };
    (pick, decision)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_trial::{self as stats, Interval};

    fn r(algo: &str, rounds: &[f64], ratio: f64) -> Ranked {
        let iv = Interval {
            median: 1000.0,
            ci_low: 1000.0,
            ci_high: 1000.0,
        };
        Ranked {
            algo: algo.into(),
            target: "kernel".into(),
            score: Some(stats::interval(rounds)),
            read_lat_ns: iv,
            read_mibps: iv,
            write_mibps: iv,
            orig_data_size: 0,
            compr_data_size: 0,
            mem_used_total: 0,
            effective_ratio: ratio,
            round_scores: rounds.to_vec(),
            behind_leader: None,
            call: None,
        }
    }

    fn rounds(base: f64, wobble: &[f64]) -> Vec<f64> {
        wobble.iter().map(|w| base + w).collect()
    }

    const W8: [f64; 8] = [0.0, 0.01, -0.01, 0.005, -0.005, 0.002, 0.0, -0.002];

    #[test]
    fn margin_is_a_five_percent_slower_swap() {
        let m = Margin::of(&Weights::default(), 2000.0, 1000.0);
        assert!((m.score - 0.6 * (1.0 - 1.0 / 1.05)).abs() < 1e-12);
        assert!((m.swap_in_us - 0.1).abs() < 1e-12);
        assert!((m.swap_out_mibps - 1000.0 * (1.0 - 1.0 / 1.05)).abs() < 1e-9);
    }

    #[test]
    fn clearly_ahead_wins_settled() {
        let mut v = [
            r("lzo", &rounds(0.80, &W8), 2.2),
            r("lz4", &rounds(0.92, &W8), 2.0),
        ];
        let (pick, d) = decide(&mut v, &Weights::default(), 2);
        assert_eq!(pick, "lz4");
        assert!(d.settled && d.equivalent.is_empty());
        assert_eq!(v[1].call, Some(Call::Ahead));
        // A round-wide drift cancels in the paired differences.
        let drift = [0.0, -0.2, 0.0, 0.1, 0.0, -0.1, 0.05, 0.0];
        let mut v = [
            r("lz4", &rounds(0.92, &drift), 2.0),
            r("lzo", &rounds(0.82, &drift), 2.2),
        ];
        assert_eq!(decide(&mut v, &Weights::default(), 2).0, "lz4");
    }

    #[test]
    fn equivalent_goes_to_the_better_ratio_then_the_default_order() {
        let mut v = [
            r("lz4", &rounds(0.90, &W8), 2.0),
            r("lzo-rle", &rounds(0.895, &W8), 2.2),
            r("lzo", &rounds(0.5, &W8), 2.3),
        ];
        let (pick, d) = decide(&mut v, &Weights::default(), 2);
        assert_eq!(pick, "lzo-rle");
        assert!(d.settled);
        assert_eq!(d.equivalent, ["lzo-rle"]);
        let mut same = [
            r("lz4", &rounds(0.90, &W8), 2.0),
            r("lzo", &rounds(0.90, &W8), 2.0),
        ];
        let pick = decide(&mut same, &Weights::default(), 2).0;
        let mut swapped = [
            r("lzo", &rounds(0.90, &W8), 2.0),
            r("lz4", &rounds(0.90, &W8), 2.0),
        ];
        assert_eq!(decide(&mut swapped, &Weights::default(), 2).0, pick);
    }

    #[test]
    fn unseparated_is_said_and_picked_stably() {
        let crossed = [0.10, -0.05, 0.12, -0.08, 0.09, -0.03, -0.04, 0.11];
        let mut v = [
            r("lz4", &rounds(0.9, &[0.0; 8]), 2.0),
            r("lzo", &rounds(0.85, &crossed), 2.2),
        ];
        let (pick, d) = decide(&mut v, &Weights::default(), 2);
        assert!(!d.settled);
        assert_eq!(d.undecided, ["lzo"]);
        assert_eq!(pick, "lzo", "the better ratio among the unseparated");
    }

    /// Noise on a behind candidate's rounds turns "ahead" into "undecided",
    /// never into "equivalent", so it never wins a tie it did not earn.
    #[test]
    fn noise_never_turns_behind_into_a_tie() {
        let w = Weights::default();
        for amp in [0.0, 0.02, 0.05, 0.1, 0.2, 0.5] {
            let noisy: Vec<f64> = W8
                .iter()
                .enumerate()
                .map(|(i, x)| 0.8 + x + amp * if i % 2 == 0 { 1.0 } else { -1.0 })
                .collect();
            let mut v = [r("lz4", &rounds(0.92, &W8), 2.0), r("lzo", &noisy, 2.4)];
            let (pick, d) = decide(&mut v, &w, 2);
            assert!(d.equivalent.is_empty(), "noise {amp}: {d:?}");
            if d.settled {
                assert_eq!(pick, "lz4", "noise {amp}");
            } else {
                assert_eq!(d.undecided, ["lzo"], "noise {amp}");
            }
        }
    }
}
