//! The three things a comparison can say about a candidate against the
//! leader, from paired differences (leader's advantage, one per round):
//!
//! * **ahead**: the whole interval of the difference lies beyond the margin
//!   — the leader is better by more than a user would feel;
//! * **equivalent**: the whole interval lies inside ±margin (an equivalence
//!   test): whichever is picked, the user would not feel the difference,
//!   so a stable tie-break decides;
//! * **undecided**: neither, yet — the interval straddles the margin.
//!
//! Noise only widens the interval, and a wider interval fits inside ±margin
//! less often, so noise can turn "ahead" into "undecided", never into
//! "equivalent".
//!
//! A sequential comparison looks more than once; every look may err, so each
//! look spends part of the error allowed in total ([`TOTAL_ERROR`]): look
//! `j` (1, 2, …) may err with probability `TOTAL_ERROR / 2^j`. Looks come
//! after [`FIRST_LOOK`] rounds and then whenever the rounds have grown by a
//! third ([`next_look`]), so the level per look stays reachable.

use serde::Serialize;

use crate::stats::Interval;

/// The error allowed over all looks of one comparison: at most 10 % chance
/// that any look calls a candidate ahead or equivalent wrongly.
pub const TOTAL_ERROR: f64 = 0.10;

/// Rounds before the first look: the fewest whose distribution-free interval
/// reaches the first look's level (96.9 % with six rounds).
pub const FIRST_LOOK: usize = 6;

/// What a comparison says about a candidate against the leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Call {
    /// The leader is ahead by more than the margin, beyond noise.
    Ahead,
    /// The difference lies within ±margin, beyond noise.
    Equivalent,
    /// The measurements cannot tell yet (or could not within the budget).
    Undecided,
}

impl Call {
    pub fn word(self) -> &'static str {
        match self {
            Call::Ahead => "ahead",
            Call::Equivalent => "equivalent",
            Call::Undecided => "undecided",
        }
    }
}

/// A candidate's paired difference with the leader, and what it says.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Separation {
    pub call: Call,
    /// The leader's advantage: median and interval of the paired differences.
    pub diff: Interval,
    /// The interval's coverage (at least `1 − error`).
    pub coverage: f64,
}

/// The error look `look` (1-based) may spend: 5 %, 2.5 %, 1.25 %, …
pub fn look_error(look: usize) -> f64 {
    TOTAL_ERROR / 2f64.powi(look.max(1) as i32)
}

/// The round count of the look after one at `rounds`: a third more rounds.
pub fn next_look(rounds: usize) -> usize {
    (rounds + rounds.div_ceil(3)).max(FIRST_LOOK)
}

/// The look number (1-based) of a look at `rounds` on the schedule
/// [`FIRST_LOOK`], [`next_look`], …; a look between scheduled ones (the
/// budget's end) counts as the next.
pub fn look_index(rounds: usize) -> usize {
    let (mut at, mut j) = (FIRST_LOOK, 1);
    while at < rounds {
        at = next_look(at);
        j += 1;
    }
    j
}

/// Classify paired differences `diffs` (the leader's advantage, in the
/// margin's units) against ±`margin`, with an interval whose coverage is at
/// least `1 − error`. Too few differences for that coverage: undecided.
pub fn separate(diffs: &[f64], margin: f64, error: f64) -> Separation {
    let (iv, coverage) = match crate::stats::interval_at(diffs, 1.0 - error) {
        Some(x) => x,
        None => (crate::stats::interval(diffs), 0.0),
    };
    let call = if coverage == 0.0 || iv.median.is_nan() {
        Call::Undecided
    } else if iv.ci_low > margin {
        Call::Ahead
    } else if iv.ci_low >= -margin && iv.ci_high <= margin {
        Call::Equivalent
    } else {
        Call::Undecided
    };
    Separation {
        call,
        diff: iv,
        coverage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_spend_at_most_the_total_error() {
        let spent: f64 = (1..60).map(look_error).sum();
        assert!(spent <= TOTAL_ERROR + 1e-12);
        assert_eq!(
            [6, 8, 11, 15, 20, 27].map(next_look),
            [8, 11, 15, 20, 27, 36]
        );
        assert_eq!(
            [1, 6, 7, 8, 9, 11, 36].map(look_index),
            [1, 1, 2, 2, 3, 3, 7]
        );
    }

    #[test]
    fn three_calls() {
        let e = look_error(1);
        let ahead = separate(&[0.10, 0.11, 0.09, 0.12, 0.10, 0.10], 0.03, e);
        assert_eq!(ahead.call, Call::Ahead);
        let eq = separate(&[0.01, -0.01, 0.0, 0.02, 0.005, -0.02], 0.03, e);
        assert_eq!(eq.call, Call::Equivalent);
        let open = separate(&[0.01, 0.05, 0.0, 0.08, 0.02, 0.04], 0.03, e);
        assert_eq!(open.call, Call::Undecided);
        // Too few rounds for the level: undecided, however clear.
        assert_eq!(separate(&[0.5, 0.5, 0.5], 0.03, e).call, Call::Undecided);
    }

    /// Noise added to a candidate's rounds never turns "behind" into a tie:
    /// a clearly behind candidate (the leader ahead by 0.08, beyond a 0.03
    /// margin) with ever more noise is called ahead or undecided, never
    /// equivalent.
    #[test]
    fn noise_never_makes_a_tie() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut unif = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        for noise in [0.0, 0.01, 0.05, 0.1, 0.3, 1.0, 3.0] {
            for n in [6, 8, 11, 15, 20, 27, 36] {
                for _ in 0..50 {
                    let d: Vec<f64> = (0..n).map(|_| 0.08 + noise * unif()).collect();
                    let s = separate(&d, 0.03, look_error(look_index(n)));
                    assert_ne!(s.call, Call::Equivalent, "noise {noise}, {n} rounds: {s:?}");
                    if noise == 0.0 {
                        assert_eq!(s.call, Call::Ahead);
                    }
                }
            }
        }
    }
}
