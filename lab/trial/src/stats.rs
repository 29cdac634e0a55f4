//! Medians and distribution-free confidence intervals over repeated rounds.
//!
//! The interval for a median is the pair of order statistics
//! `(x_(k), x_(n+1-k))` with the largest `k` whose coverage,
//! `1 − 2·P(Binomial(n, ½) ≤ k − 1)`, is still at least 90 % (for 5 rounds:
//! the smallest and largest value, 93.8 %). It assumes nothing about the
//! distribution of the noise, only that rounds are independent, which the
//! interleaving (every candidate once per round, in a rotated order) is
//! there to make plausible.
//!
//! The one copy: trial's `--metric` decision, tune's comparison and the
//! verdict's rounds all use it. It lives in trial, the lowest crate of the
//! three (trial must not depend on the engine, the verdict does).

use serde::{Deserialize, Serialize};

/// A median with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub median: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

impl Interval {
    /// Whether the two intervals share a point: the difference is within noise.
    pub fn overlaps(&self, o: &Interval) -> bool {
        self.ci_low <= o.ci_high && o.ci_low <= self.ci_high
    }

    /// `median [low, high]`, each divided by `scale`, `prec` decimals.
    pub fn show(&self, scale: f64, prec: usize) -> String {
        format!(
            "{:.p$} [{:.p$}, {:.p$}]",
            self.median / scale,
            self.ci_low / scale,
            self.ci_high / scale,
            p = prec
        )
    }
}

fn binom_cdf_half(n: usize, k: usize) -> f64 {
    // P(X <= k) for X ~ Binomial(n, 1/2).
    let mut c = 1.0f64;
    let mut sum = 0.0;
    for i in 0..=k.min(n) {
        if i > 0 {
            c = c * (n + 1 - i) as f64 / i as f64;
        }
        sum += c;
    }
    sum / 2f64.powi(n as i32)
}

/// The order-statistic index `k` (1-based) of the interval, and its coverage:
/// the narrowest with at least 90 %, else the widest there is.
pub fn ci_rank(n: usize) -> (usize, f64) {
    rank_at(n, 0.90).unwrap_or((1, 1.0 - 2.0 * binom_cdf_half(n, 0)))
}

/// The order-statistic index `k` (1-based) with the narrowest interval whose
/// coverage is at least `level`, and that coverage; `None` when even the
/// smallest and largest of `n` values do not reach it.
pub fn rank_at(n: usize, level: f64) -> Option<(usize, f64)> {
    let cover = |k: usize| 1.0 - 2.0 * binom_cdf_half(n, k - 1);
    if n < 2 || cover(1) < level {
        return None;
    }
    let mut k = 1;
    while k < n / 2 && cover(k + 1) >= level {
        k += 1;
    }
    Some((k, cover(k)))
}

/// The finite values of `xs`, sorted.
fn sorted_finite(xs: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The median of sorted values (not empty) and the interval between the
/// `k`-th smallest and `k`-th largest.
fn at_rank(v: &[f64], k: usize) -> Interval {
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Interval {
        median,
        ci_low: v[k - 1],
        ci_high: v[n - k],
    }
}

/// Median of `xs` with an interval of coverage at least `level`, and that
/// coverage; `None` when there are too few finite values to reach it.
pub fn interval_at(xs: &[f64], level: f64) -> Option<(Interval, f64)> {
    let v = sorted_finite(xs);
    let (k, cov) = rank_at(v.len(), level)?;
    Some((at_rank(&v, k), cov))
}

/// Median and interval of `xs` (NaN for no finite values).
pub fn interval(xs: &[f64]) -> Interval {
    let v = sorted_finite(xs);
    if v.is_empty() {
        return Interval {
            median: f64::NAN,
            ci_low: f64::NAN,
            ci_high: f64::NAN,
        };
    }
    at_rank(&v, ci_rank(v.len()).0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_and_coverage() {
        let (k, c) = ci_rank(5);
        assert_eq!(k, 1);
        assert!((c - 0.9375).abs() < 1e-9);
        let (k, c) = ci_rank(9);
        assert_eq!(k, 2);
        assert!((c - (1.0 - 20.0 / 512.0)).abs() < 1e-9);
        assert_eq!(ci_rank(20).0, 6);
    }

    #[test]
    fn median_and_interval() {
        let i = interval(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!((i.median, i.ci_low, i.ci_high), (3.0, 1.0, 5.0));
        let i = interval(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
        assert_eq!((i.median, i.ci_low, i.ci_high), (5.0, 2.0, 8.0));
        assert!(interval(&[1.0, 2.0]).overlaps(&interval(&[2.0, 3.0])));
        assert!(!interval(&[1.0, 1.5]).overlaps(&interval(&[2.0, 3.0])));
    }

    #[test]
    fn intervals_at_a_level() {
        assert_eq!(rank_at(5, 0.95), None);
        assert_eq!(rank_at(6, 0.95).unwrap().0, 1);
        assert_eq!(rank_at(11, 0.9875).unwrap().0, 2);
        assert_eq!(rank_at(20, 1.0 - 0.05 / 16.0).unwrap().0, 4);
        let (i, c) = interval_at(&[3.0, 1.0, 2.0, 6.0, 5.0, 4.0], 0.95).unwrap();
        assert_eq!((i.median, i.ci_low, i.ci_high), (3.5, 1.0, 6.0));
        assert!((c - (1.0 - 2.0 / 64.0)).abs() < 1e-12);
    }
}
