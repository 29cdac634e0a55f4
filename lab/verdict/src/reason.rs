//! Why the verdict's winner is the primary algorithm, in the one sentence
//! the recommendation gives as its first reason, and the margin said in
//! what a user would feel.

use crate::decision::{Margin, MARGIN_SLOWER};
use crate::rank::Ranking;
use zmem_trial::Call;

/// The margin in score, µs of swap-in and MiB/s of swap-out.
pub fn margin_text(m: &Margin) -> String {
    format!(
        "margin {:.3} of score = a swap {:.0}% slower both ways: +{:.2} µs per 4 KiB swap-in, −{:.0} MiB/s of swap-out at the leader's figures",
        m.score,
        MARGIN_SLOWER * 100.0,
        m.swap_in_us,
        m.swap_out_mibps
    )
}

/// How the rounds ended, e.g. `settled after 8 rounds (12 s)`.
pub fn stop_text(r: &Ranking) -> String {
    if r.decision.settled {
        format!("settled after {} rounds ({:.0} s)", r.rounds, r.elapsed_s)
    } else {
        format!(
            "NOT settled: {} rounds in {:.0} s (budget {:.0} s) could not separate {} from {}",
            r.rounds,
            r.elapsed_s,
            r.budget_s,
            r.decision.leader,
            r.decision.undecided.join(", ")
        )
    }
}

/// Why the winner is the primary algorithm, in one sentence.
pub fn primary_reason(r: &Ranking) -> String {
    let w = r
        .ranked
        .iter()
        .find(|x| x.algo == r.winner)
        .expect("winner ranked");
    let d = &r.decision;
    let score = w.score.map(|s| s.show(1.0, 3)).unwrap_or_default();
    let others: Vec<&str> = d
        .equivalent
        .iter()
        .chain(&d.undecided)
        .chain(std::iter::once(&d.leader))
        .filter(|a| **a != r.winner)
        .map(String::as_str)
        .collect();
    let how = if !d.settled {
        format!(
            "not proven: the rounds could not separate it from {}, so the tie rule picked it ({})",
            others.join(", "),
            d.rule
        )
    } else if !others.is_empty() {
        format!(
            "equivalent to {} (the paired per-round score difference lies within ±{:.3}, beyond noise); {}",
            others.join(", "),
            d.margin.score,
            d.rule
        )
    } else {
        match r.ranked.iter().find(|x| x.call == Some(Call::Ahead)) {
            Some(next) => format!(
                "ahead of {} by {} per round, beyond noise and the margin of {:.3}",
                next.algo,
                next.behind_leader
                    .map(|s| s.show(1.0, 3))
                    .unwrap_or_default(),
                d.margin.score
            ),
            None => "the only algorithm measured".into(),
        }
    };
    format!(
        "{}: score {score} over {} interleaved rounds on {} rows ({:.2}:1 effective, swap-in {:.2} µs, swap-out {:.0} MiB/s); {how}",
        r.winner,
        r.rounds,
        r.target,
        w.effective_ratio,
        w.read_lat_ns.median / 1000.0,
        w.write_mibps.median
    )
}
