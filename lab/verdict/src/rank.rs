//! The lab's verdict: which algorithm to deploy on this kernel, decided by
//! measurements that survive the noise of a busy machine (docs/lab.md,
//! "How the verdict is made").
//!
//! `rank(corpus, options, progress) -> Ranking`:
//! * every candidate — each algorithm the kernel's zram offers, measured
//!   through the kernel's own device where it can be (else the engine), plus
//!   every engine-only algorithm as an "if your kernel had it" row — is
//!   measured once per round; the order rotates every round, so drift of the
//!   machine spreads over all. The engine-only rows inform, they do not
//!   decide: they run in [`INFO_ROUNDS`] rounds of their own after the decision;
//! * in every round each deployable candidate gets a score from the four
//!   quantities that matter for swap, each relative to the best candidate of
//!   that round: swap-in latency, effective ratio (orig_data_size /
//!   mem_used_total), and throughput in both directions (write = swap-out,
//!   read = swap-in, half the throughput weight each);
//! * rounds go on until the decision is settled or the time budget ends
//!   (sequential testing): at each look ([`zmem_trial::separate`]) the leader (best
//!   median score) is compared with every other candidate on their paired
//!   per-round differences, and each is called ahead-of, equivalent or
//!   undecided against the margin ([`crate::decision`]).

use anyhow::{bail, Result};
use serde::Serialize;
use zmem_corpus::Corpus;
use zmem_measure::device::Target;
use zmem_measure::sample::{self as measure, Sample};
use zmem_measure::ReadResult;

use std::time::{Duration, Instant};

use crate::decision::{self, Decision};
pub use crate::ranked::Ranked;
use crate::score::Weights;
use zmem_trial as settle;
use zmem_trial as stats;

/// Rounds of the rows that inform (engine-only algorithms, and the winner
/// through the engine beside them), after the decision: enough for a median.
pub const INFO_ROUNDS: usize = 3;

/// The default time budget of the rounds.
pub const BUDGET: Duration = Duration::from_secs(60);

/// What to measure.
#[derive(Debug, Clone)]
pub struct Options {
    /// The most rounds to run (each candidate once per round); the rounds
    /// stop earlier when the decision is settled or the budget is spent.
    pub rounds: usize,
    /// Time for the rounds: no round starts once it would likely end past
    /// this, except to reach the first look ([`settle::FIRST_LOOK`]).
    pub budget: Duration,
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
            rounds: usize::MAX,
            budget: BUDGET,
            requests: 4000,
            weights: Weights::default(),
            kernel: true,
            algorithms: Vec::new(),
            seed: 0x0076_6572_6469_6374,
        }
    }
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
    /// The coverage of each candidate's score interval for this many rounds.
    pub ci_coverage: f64,
    /// The rounds' budget and the time the deciding rounds took, s.
    pub budget_s: f64,
    pub elapsed_s: f64,
    /// `kernel` when the deployable candidates were measured through the kernel.
    pub target: String,
    pub weights: Weights,
    /// Deployable candidates, best first.
    pub ranked: Vec<Ranked>,
    /// Engine-only algorithms (and engine rows of the kernel's), measured too.
    pub engine: Vec<Ranked>,
    /// The pick: the leader, or by [`decision::TIE_RULE`] among the leader
    /// and the candidates equivalent to it or not separated from it.
    pub winner: String,
    pub decision: Decision,
    pub if_kernel_had: Vec<IfKernelHad>,
    /// Why a candidate could not be measured.
    pub failed: Vec<(String, String)>,
    /// Which algorithms this kernel's zram offers, and how that is known.
    pub offered: Vec<String>,
    pub offered_source: String,
    /// Why the kernel's own rows are missing and what root would add (none
    /// when they were measured or not asked for).
    pub kernel_rows: Option<String>,
}

/// The candidates: (algorithm, target, deployable).
fn candidates(opts: &Options, offered: &[String], measurable: bool) -> Vec<(String, Target, bool)> {
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
        if in_kernel && measurable {
            v.push((a.clone(), Target::Kernel, true));
        }
        // Engine rows for everything: the comparison "if your kernel had it"
        // is engine against engine; without kernel rows they are the candidates.
        v.push((a.clone(), Target::Engine, in_kernel && !measurable));
    }
    v
}

/// Measure and decide. `progress(done, total, what)`: seconds spent of the budget.
pub fn rank(
    corpus: &Corpus,
    opts: &Options,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<Ranking> {
    for a in &opts.algorithms {
        zmem_codec::find(a)?;
    }
    // Which algorithms this kernel offers (known without root too), and
    // whether its zram can be measured here (root, zram present).
    let known = zmem_measure::kernel::offered();
    let offered = known.algorithms.clone();
    let measurable =
        opts.kernel && !offered.is_empty() && zmem_measure::kernel::unavailable_reason().is_none();
    let kernel_rows = opts
        .kernel
        .then(zmem_measure::kernel::without_kernel_rows)
        .flatten();
    let cands = candidates(opts, &offered, measurable);
    if !cands.iter().any(|c| c.2) {
        bail!(
            "none of the algorithms asked for ({}) is one this kernel's zram offers ({}: {})",
            opts.algorithms.join(", "),
            if offered.is_empty() {
                "unknown".to_string()
            } else {
                offered.join(", ")
            },
            known.source
        );
    }
    let mut m = Measured {
        samples: vec![Vec::new(); cands.len()],
        failed: Vec::new(),
        start: Instant::now(),
    };
    let (mut rounds, mut look_at, mut last_round) = (0, settle::FIRST_LOOK, Duration::ZERO);
    let deciding: Vec<bool> = cands.iter().map(|c| c.2).collect();
    let decided = loop {
        let spent = m.start.elapsed();
        let over = rounds >= settle::FIRST_LOOK && spent + last_round > opts.budget;
        if rounds >= opts.rounds.max(1) || over {
            break decide(corpus, opts, &cands, &m, measurable, rounds)?;
        }
        let t = Instant::now();
        let what = format!("round {}", rounds + 1);
        m.round(corpus, opts, &cands, &deciding, rounds, &what, progress);
        last_round = t.elapsed();
        rounds += 1;
        if rounds == look_at {
            look_at = settle::next_look(rounds);
            let r = decide(corpus, opts, &cands, &m, measurable, rounds)?;
            if r.decision.settled {
                break r;
            }
        }
    };
    let decision_s = m.start.elapsed().as_secs_f64();
    // The rows that inform (engine-only algorithms and the winner through
    // the engine, for "if your kernel had it"), after the decision.
    let informing: Vec<bool> = cands
        .iter()
        .map(|(a, t, d)| {
            !d && *t == Target::Engine && (!offered.contains(a) || *a == decided.winner)
        })
        .collect();
    if informing.iter().any(|x| *x) {
        for round in 0..INFO_ROUNDS {
            let what = format!("if your kernel had it {}/{INFO_ROUNDS}", round + 1);
            m.round(corpus, opts, &cands, &informing, round, &what, progress);
        }
    }
    let mut r = decide(corpus, opts, &cands, &m, measurable, rounds)?;
    r.budget_s = opts.budget.as_secs_f64();
    r.elapsed_s = decision_s;
    (r.offered, r.offered_source, r.kernel_rows) = (offered, known.source, kernel_rows);
    Ok(r)
}

/// What the rounds measured so far.
struct Measured {
    samples: Vec<Vec<Sample>>,
    failed: Vec<(String, String)>,
    start: Instant,
}

impl Measured {
    /// One round over the candidates with `which[i]`, measured together and
    /// interleaved finely ([`measure::round`]); a candidate that failed once
    /// is not measured again.
    #[allow(clippy::too_many_arguments)]
    fn round(
        &mut self,
        corpus: &Corpus,
        opts: &Options,
        cands: &[(String, Target, bool)],
        which: &[bool],
        round: usize,
        what: &str,
        progress: &mut dyn FnMut(usize, usize, &str),
    ) {
        let idx: Vec<usize> = (0..cands.len())
            .filter(|&i| {
                let name = label(&cands[i].0, cands[i].1);
                which[i] && !self.failed.iter().any(|(a, _)| *a == name)
            })
            .collect();
        let names: Vec<String> = idx
            .iter()
            .map(|&i| label(&cands[i].0, cands[i].1))
            .collect();
        let total = opts.budget.as_secs() as usize;
        let done = self.start.elapsed().as_secs() as usize;
        progress(
            done.min(total),
            total,
            &format!("{what}: {}", names.join(", ")),
        );
        let set: Vec<(&str, Target)> = idx
            .iter()
            .map(|&i| (cands[i].0.as_str(), cands[i].1))
            .collect();
        let seed = opts.seed ^ round as u64;
        for ((&i, name), r) in
            idx.iter()
                .zip(names)
                .zip(measure::round(corpus, &set, opts.requests, seed))
        {
            match r {
                Ok(s) => self.samples[i].push(s),
                Err(e) => self.failed.push((name, e)),
            }
        }
    }
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
    // The sizes of the median round by mem_used_total: the same pages give
    // the same mm_stat every round, so this is exact (the median only guards
    // against a stray page of the pool).
    let mut by_mem: Vec<Sample> = s.to_vec();
    by_mem.sort_by_key(|x| x.mem_used_total);
    let last = *by_mem.get(by_mem.len() / 2).expect("measured");
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
        call: None,
    }
}

fn decide(
    corpus: &Corpus,
    opts: &Options,
    cands: &[(String, Target, bool)],
    m: &Measured,
    kernel: bool,
    rounds: usize,
) -> Result<Ranking> {
    let (samples, failed) = (&m.samples, &m.failed);
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
    let (winner, decision) =
        decision::decide(&mut ranked, &opts.weights, settle::look_index(rounds));
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
        budget_s: 0.0,
        elapsed_s: 0.0,
        target: if kernel { "kernel" } else { "engine" }.into(),
        weights: opts.weights,
        ranked,
        engine,
        winner,
        decision,
        if_kernel_had,
        failed: failed.to_vec(),
        offered: Vec::new(),
        offered_source: String::new(),
        kernel_rows: None,
    })
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
}
