//! Why the verdict's winner is the primary algorithm, in the one sentence
//! the recommendation gives as its first reason.

use crate::rank::{Ranking, MARGIN};

/// Why the winner is the primary algorithm, in one sentence.
pub fn primary_reason(r: &Ranking) -> String {
    let w = r
        .ranked
        .iter()
        .find(|x| x.algo == r.winner)
        .expect("winner ranked");
    let score = w.score.map(|s| s.show(1.0, 3)).unwrap_or_default();
    let how = match &r.tie {
        Some(t) => format!(
            "tied with {} (the paired per-round score difference is under {:.0}% or not clearly above zero); {}",
            t.between
                .iter()
                .filter(|a| **a != r.winner)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            MARGIN * 100.0,
            t.rule
        ),
        None => match r.ranked.iter().find(|x| x.algo != r.winner) {
            Some(next) => format!(
                "ahead of {} by {} per round, beyond noise and the {:.0}% margin",
                next.algo,
                next.behind_leader.map(|s| s.show(1.0, 3)).unwrap_or_default(),
                MARGIN * 100.0
            ),
            None => "the only algorithm measured".into(),
        },
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
