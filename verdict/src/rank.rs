//! The lab's verdict: which algorithm to deploy on this kernel, decided by
//! measurements that survive the noise of a busy machine (docs/lab.md,
//! "How the verdict is made").
//!
//! `rank(corpus, options, progress) -> Ranking`:
//! * every candidate — each algorithm the kernel's zram offers, measured
//!   through the kernel's own device where it can be (else the engine), plus
//!   every engine-only algorithm as an "if your kernel had it" row — is
//!   measured once per round, in [`Options::rounds`] rounds; the order
//!   rotates every round, so drift of the machine spreads over all;
//! * in every round each deployable candidate gets a score from the four
//!   quantities that matter for swap, each relative to the best candidate of
//!   that round: swap-in latency, effective ratio (orig_data_size /
//!   mem_used_total), and throughput in both directions (write = swap-out,
//!   read = swap-in, half the throughput weight each);
//! * a candidate's score is the median over rounds, with a distribution-free
//!   interval ([`crate::stats`]);
//! * the leader (best median) is compared with every other candidate round
//!   by round: the per-round differences are paired (both measured in the
//!   same round, so the machine's drift cancels), and the other candidate is
//!   tied with the leader when the median difference is below [`MARGIN`] or
//!   its interval reaches zero; then the rule in [`TIE_RULE`] decides.

use anyhow::{bail, Result};
use serde::Serialize;
use zmem_corpus::Corpus;
use zmem_lab::device::Target;
use zmem_lab::sample::{self as measure, Sample};
use zmem_lab::ReadResult;

use crate::score::Weights;
use crate::stats::{self, Interval};

/// How ties within noise are broken: memory is the scarcer resource, and the
/// effective ratio is exact (the same bytes give the same mm_stat every round).
pub const TIE_RULE: &str =
    "the higher effective ratio wins a tie (memory is what zram saves, and the ratio is exact, not noisy)";

/// Score differences below this (2 % of the best possible score) are not
/// worth acting on: a tie even when the measurements could tell them apart.
pub const MARGIN: f64 = 0.02;

/// What to measure.
#[derive(Debug, Clone)]
pub struct Options {
    /// Rounds; each candidate is measured once per round.
    pub rounds: usize,
    /// Random 4 KiB reads per candidate per round.
    pub requests: usize,
    pub weights: Weights,
    /// Measure the kernel's zram where it can be used (root, zram present).
    pub kernel: bool,
    /// Algorithms to consider (kernel names); empty: all the engine knows.
    pub algorithms: Vec<String>,
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rounds: 5,
            requests: 4000,
            weights: Weights::default(),
            kernel: true,
            algorithms: Vec::new(),
            seed: 0x0076_6572_6469_6374,
        }
    }
}

/// One candidate's results over all rounds.
#[derive(Debug, Clone, Serialize)]
pub struct Ranked {
    pub algo: String,
    /// `kernel` or `engine`.
    pub target: String,
    /// Score, median over rounds (deployable candidates only).
    pub score: Option<Interval>,
    /// Median 4 KiB swap-in latency per round, ns.
    #[serde(rename = "lat_p50_ns")]
    pub read_lat_ns: Interval,
    pub read_mibps: Interval,
    pub write_mibps: Interval,
    pub orig_data_size: u64,
    pub compr_data_size: u64,
    pub mem_used_total: u64,
    pub effective_ratio: f64,
    /// The score of every round, in round order (deployable candidates).
    pub round_scores: Vec<f64>,
    /// The leader's score minus this one's, paired by round (median and interval).
    pub behind_leader: Option<Interval>,
}

/// A tie within noise and how it was broken.
#[derive(Debug, Clone, Serialize)]
pub struct Tie {
    /// Every candidate whose score interval overlaps the best one's.
    pub between: Vec<String>,
    pub rule: String,
}

/// An engine-only algorithm against the winner, both through the engine.
#[derive(Debug, Clone, Serialize)]
pub struct IfKernelHad {
    pub algo: String,
    /// mem_used_total relative to the winner's: −0.21 is 21 % less memory.
    pub memory_change: f64,
    /// Swap-in latency relative to the winner's: 2.1 is 2.1× slower.
    pub read_lat_factor: f64,
    /// Swap-out throughput relative to the winner's.
    pub write_mibps_factor: f64,
}

/// The verdict's measurements and decision.
#[derive(Debug, Clone, Serialize)]
pub struct Ranking {
    pub corpus: String,
    pub pages: usize,
    pub rounds: usize,
    /// The interval's coverage for this many rounds.
    pub ci_coverage: f64,
    /// `kernel` when the deployable candidates were measured through the kernel.
    pub target: String,
    pub weights: Weights,
    /// Deployable candidates, best first.
    pub ranked: Vec<Ranked>,
    /// Engine-only algorithms (and engine rows of the kernel's), measured too.
    pub engine: Vec<Ranked>,
    pub winner: String,
    pub tie: Option<Tie>,
    pub if_kernel_had: Vec<IfKernelHad>,
    /// Why a candidate could not be measured.
    pub failed: Vec<(String, String)>,
}

/// The candidates: (algorithm, target, deployable).
fn candidates(opts: &Options, offered: &[String]) -> Vec<(String, Target, bool)> {
    let all: Vec<String> = if opts.algorithms.is_empty() {
        zmem_codec::registry::names()
            .into_iter()
            .map(String::from)
            .collect()
    } else {
        opts.algorithms.clone()
    };
    let mut v = Vec::new();
    for a in &all {
        let in_kernel = if offered.is_empty() {
            zmem_codec::find(a).map(|b| b.in_kernel()).unwrap_or(false)
        } else {
            offered.contains(a)
        };
        if in_kernel && !offered.is_empty() {
            v.push((a.clone(), Target::Kernel, true));
        }
        // Engine rows for everything: the comparison "if your kernel had it"
        // is engine against engine; without kernel rows they are the candidates.
        v.push((a.clone(), Target::Engine, in_kernel && offered.is_empty()));
    }
    v
}

/// Measure and decide. `progress(done, total, what)`.
pub fn rank(
    corpus: &Corpus,
    opts: &Options,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<Ranking> {
    for a in &opts.algorithms {
        zmem_codec::find(a)?;
    }
    let offered = if opts.kernel && zmem_lab::kernel::unavailable_reason().is_none() {
        zmem_lab::kernel::algorithms()
    } else {
        Vec::new()
    };
    let cands = candidates(opts, &offered);
    let rounds = opts.rounds.max(1);
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); cands.len()];
    let mut failed: Vec<(String, String)> = Vec::new();
    let total = rounds * cands.len();
    for round in 0..rounds {
        for j in 0..cands.len() {
            // Rotate the order every round: drift spreads over every candidate.
            let i = (j + round * 7) % cands.len();
            let (algo, target, _) = &cands[i];
            progress(
                round * cands.len() + j,
                total,
                &format!("round {}/{rounds}: {algo} ({})", round + 1, target.name()),
            );
            if failed.iter().any(|(a, _)| a == &label(algo, *target)) {
                continue;
            }
            let seed = opts.seed ^ round as u64;
            match measure::once(corpus, algo, *target, opts.requests, seed) {
                Ok(s) => samples[i].push(s),
                Err(e) => failed.push((label(algo, *target), e)),
            }
        }
    }
    progress(total, total, "deciding");
    decide(corpus, opts, &cands, &samples, failed, !offered.is_empty())
}

/// Random reads at page-cluster 0..=3 for the winner on its target (what
/// vm.page-cluster changes), for [`crate::ranked_table::to_table`].
pub fn winner_page_clusters(
    corpus: &Corpus,
    r: &Ranking,
    requests: usize,
) -> Result<Vec<ReadResult>> {
    let target = if r.target == "kernel" {
        Target::Kernel
    } else {
        Target::Engine
    };
    measure::page_clusters(corpus, &r.winner, target, requests, 0x7063).map_err(anyhow::Error::msg)
}

fn label(algo: &str, target: Target) -> String {
    format!("{algo} ({})", target.name())
}

/// Per-round scores of the deployable candidates, relative to the round's best.
fn round_scores(w: &Weights, round: &[&Sample]) -> Vec<f64> {
    let best = |f: &dyn Fn(&Sample) -> f64| round.iter().map(|s| f(s)).fold(0.0f64, f64::max);
    let lat = round
        .iter()
        .map(|s| s.read_lat_ns)
        .fold(f64::INFINITY, f64::min);
    let ratio = best(&|s| s.effective_ratio());
    let (wr, rd) = (best(&|s| s.write_mibps), best(&|s| s.read_mibps));
    let total = w.latency + w.ratio + w.throughput;
    round
        .iter()
        .map(|s| {
            (w.latency * lat / s.read_lat_ns
                + w.ratio * s.effective_ratio() / ratio
                + w.throughput * 0.5 * (s.write_mibps / wr + s.read_mibps / rd))
                / total
        })
        .collect()
}

fn ranked_of(algo: &str, target: Target, s: &[Sample], rounds: &[f64]) -> Ranked {
    let iv = |f: &dyn Fn(&Sample) -> f64| stats::interval(&s.iter().map(f).collect::<Vec<_>>());
    let last = s.last().copied().expect("measured");
    Ranked {
        algo: algo.into(),
        target: target.name().into(),
        read_lat_ns: iv(&|x| x.read_lat_ns),
        read_mibps: iv(&|x| x.read_mibps),
        write_mibps: iv(&|x| x.write_mibps),
        orig_data_size: last.orig_data_size,
        compr_data_size: last.compr_data_size,
        mem_used_total: last.mem_used_total,
        effective_ratio: last.effective_ratio(),
        score: (!rounds.is_empty()).then(|| stats::interval(rounds)),
        round_scores: rounds.to_vec(),
        behind_leader: None,
    }
}

fn decide(
    corpus: &Corpus,
    opts: &Options,
    cands: &[(String, Target, bool)],
    samples: &[Vec<Sample>],
    failed: Vec<(String, String)>,
    kernel: bool,
) -> Result<Ranking> {
    let rounds = opts.rounds.max(1);
    let deploy: Vec<usize> = (0..cands.len())
        .filter(|&i| cands[i].2 && samples[i].len() == rounds)
        .collect();
    if deploy.is_empty() {
        bail!(
            "no algorithm this kernel offers could be measured: {}",
            failed
                .iter()
                .map(|(a, e)| format!("{a}: {e}"))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let mut per_cand: Vec<Vec<f64>> = vec![Vec::new(); deploy.len()];
    #[allow(clippy::needless_range_loop)] // r indexes every deployable candidate's samples
    for r in 0..rounds {
        let round: Vec<&Sample> = deploy.iter().map(|&i| &samples[i][r]).collect();
        for (k, s) in round_scores(&opts.weights, &round).into_iter().enumerate() {
            per_cand[k].push(s);
        }
    }
    let mut ranked: Vec<Ranked> = deploy
        .iter()
        .zip(&per_cand)
        .map(|(&i, sc)| ranked_of(&cands[i].0, cands[i].1, &samples[i], sc))
        .collect();
    ranked.sort_by(|a, b| b.score.unwrap().median.total_cmp(&a.score.unwrap().median));
    let (winner, tie) = break_ties(&mut ranked);
    let engine: Vec<Ranked> = (0..cands.len())
        .filter(|&i| cands[i].1 == Target::Engine && !samples[i].is_empty())
        .map(|i| ranked_of(&cands[i].0, Target::Engine, &samples[i], &[]))
        .collect();
    let if_kernel_had = compare_engine_only(&engine, &winner, cands);
    Ok(Ranking {
        corpus: corpus.name.clone(),
        pages: corpus.page_count(),
        rounds,
        ci_coverage: stats::ci_rank(rounds).1,
        target: if kernel { "kernel" } else { "engine" }.into(),
        weights: opts.weights,
        ranked,
        engine,
        winner,
        tie,
        if_kernel_had,
        failed,
    })
}

/// The winner: the leader (best median score) unless others are tied with
/// it — paired per-round difference below [`MARGIN`] or not clearly above
/// zero — then [`TIE_RULE`] among the tied. Fills `behind_leader`.
fn break_ties(ranked: &mut [Ranked]) -> (String, Option<Tie>) {
    let lead = ranked[0].round_scores.clone();
    let mut tied = vec![0usize];
    for (j, r) in ranked.iter_mut().enumerate().skip(1) {
        let d: Vec<f64> = lead
            .iter()
            .zip(&r.round_scores)
            .map(|(a, b)| a - b)
            .collect();
        let iv = stats::interval(&d);
        if iv.median < MARGIN || iv.ci_low <= 0.0 {
            tied.push(j);
        }
        r.behind_leader = Some(iv);
    }
    if tied.len() < 2 {
        return (ranked[0].algo.clone(), None);
    }
    let w = tied
        .iter()
        .map(|&j| &ranked[j])
        .max_by(|a, b| {
            a.effective_ratio
                .total_cmp(&b.effective_ratio)
                .then(b.read_lat_ns.median.total_cmp(&a.read_lat_ns.median))
        })
        .expect("two or more tied");
    let mut between: Vec<String> = tied.iter().map(|&j| ranked[j].algo.clone()).collect();
    between.sort();
    (
        w.algo.clone(),
        Some(Tie {
            between,
            rule: TIE_RULE.into(),
        }),
    )
}

/// Engine-only algorithms against the winner's engine row.
fn compare_engine_only(
    engine: &[Ranked],
    winner: &str,
    cands: &[(String, Target, bool)],
) -> Vec<IfKernelHad> {
    let Some(w) = engine.iter().find(|r| r.algo == winner) else {
        return Vec::new();
    };
    let deployable = |a: &str| cands.iter().any(|(c, _, d)| c == a && *d);
    engine
        .iter()
        .filter(|r| !deployable(&r.algo) && r.algo != winner)
        .map(|r| IfKernelHad {
            algo: r.algo.clone(),
            memory_change: r.mem_used_total as f64 / w.mem_used_total.max(1) as f64 - 1.0,
            read_lat_factor: r.read_lat_ns.median / w.read_lat_ns.median,
            write_mibps_factor: r.write_mibps.median / w.write_mibps.median,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(lat: f64, wr: f64, mem: u64) -> Sample {
        Sample {
            write_mibps: wr,
            read_lat_ns: lat,
            read_mibps: 4096.0 / lat * 1e9 / 1048576.0,
            orig_data_size: 1000,
            compr_data_size: mem / 2,
            mem_used_total: mem,
        }
    }

    #[test]
    fn scores_count_both_directions_and_the_ratio() {
        let w = Weights::default();
        let a = s(1000.0, 500.0, 400);
        let slow_writer = s(1000.0, 100.0, 400);
        let sc = round_scores(&w, &[&a, &slow_writer]);
        assert!((sc[0] - 1.0).abs() < 1e-9, "{sc:?}");
        assert!(sc[1] < sc[0], "swap-out speed counts: {sc:?}");
        let smaller = s(1000.0, 500.0, 200);
        let sc = round_scores(&w, &[&a, &smaller]);
        assert!(sc[1] > sc[0], "ratio counts: {sc:?}");
    }

    fn r(algo: &str, rounds: &[f64], ratio: f64) -> Ranked {
        let iv = Interval {
            median: 1.0,
            ci_low: 1.0,
            ci_high: 1.0,
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
        }
    }

    #[test]
    fn ties_within_noise_or_margin_go_to_the_better_ratio() {
        // lz4 ahead by 0.1 in every round: clear.
        let mut clear = [
            r("lz4", &[0.9, 0.92, 0.88], 2.0),
            r("lzo", &[0.8, 0.82, 0.78], 2.2),
        ];
        let (w, t) = break_ties(&mut clear);
        assert_eq!((w.as_str(), t.is_none()), ("lz4", true));
        assert!((clear[1].behind_leader.unwrap().median - 0.1).abs() < 1e-9);
        // A round-wide drift (0.7 in round 2) cancels in the paired differences.
        let mut drift = [
            r("lz4", &[0.9, 0.7, 0.9], 2.0),
            r("lzo", &[0.8, 0.6, 0.8], 2.2),
        ];
        assert_eq!(break_ties(&mut drift).0, "lz4");
        // Within the margin: a tie, the better ratio wins.
        let mut close = [
            r("lz4", &[0.90, 0.91, 0.90], 2.0),
            r("lzo-rle", &[0.89, 0.90, 0.89], 2.2),
            r("lzo", &[0.5, 0.5, 0.5], 2.3),
        ];
        let (w, t) = break_ties(&mut close);
        assert_eq!(w, "lzo-rle");
        assert_eq!(t.unwrap().between, ["lz4", "lzo-rle"]);
        // Beaten in one round: not clearly ahead, a tie.
        let mut crossed = [
            r("lz4", &[0.95, 0.95, 0.80], 2.0),
            r("lzo", &[0.85, 0.85, 0.90], 2.2),
        ];
        assert_eq!(break_ties(&mut crossed).0, "lzo");
    }
}
