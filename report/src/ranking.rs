//! The verdict for people: the ranking table, the "if your kernel had it"
//! lines, and the one-line reason for the primary algorithm.

use std::fmt::Write as _;

use super::{Interval, Ranking};

fn iv(i: &Interval, scale: f64, prec: usize) -> String {
    format!(
        "{:.p$} [{:.p$}, {:.p$}]",
        i.median / scale,
        i.ci_low / scale,
        i.ci_high / scale,
        p = prec
    )
}

/// Why the winner is the primary algorithm, in one sentence.
pub fn primary_reason(r: &Ranking) -> String {
    let w = r
        .ranked
        .iter()
        .find(|x| x.algo == r.winner)
        .expect("winner ranked");
    let score = w.score.map(|s| iv(&s, 1.0, 3)).unwrap_or_default();
    let how = match &r.tie {
        Some(t) => format!(
            "tied with {} (the paired per-round score difference is under {:.0}% or not clearly above zero); {}",
            t.between
                .iter()
                .filter(|a| **a != r.winner)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            super::MARGIN * 100.0,
            t.rule
        ),
        None => match r.ranked.iter().find(|x| x.algo != r.winner) {
            Some(next) => format!(
                "ahead of {} by {} per round, beyond noise and the {:.0}% margin",
                next.algo,
                next.behind_leader.map(|s| iv(&s, 1.0, 3)).unwrap_or_default(),
                super::MARGIN * 100.0
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

/// The ranking table and the engine-only comparisons.
pub fn render_table(r: &Ranking) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} rounds, candidates interleaved; median [{:.0}% interval] per candidate; weights {}",
        r.rounds,
        r.ci_coverage * 100.0,
        r.weights
    );
    let _ = writeln!(
        o,
        "{:<8} {:<7} {:<22} {:<22} {:<22} {:<22} {:>9}",
        "algo",
        "target",
        "score",
        "behind leader",
        "swap-in µs (p50)",
        "swap-out MiB/s",
        "eff_ratio"
    );
    for x in &r.ranked {
        let _ = writeln!(
            o,
            "{:<8} {:<7} {:<22} {:<22} {:<22} {:<22} {:>9.3}",
            x.algo,
            x.target,
            x.score.map(|s| iv(&s, 1.0, 3)).unwrap_or_default(),
            x.behind_leader
                .map(|s| iv(&s, 1.0, 3))
                .unwrap_or_else(|| "leader".into()),
            iv(&x.read_lat_ns, 1000.0, 2),
            iv(&x.write_mibps, 1.0, 0),
            x.effective_ratio
        );
    }
    if !r.if_kernel_had.is_empty() {
        let _ = writeln!(
            o,
            "if your kernel had it (engine rows, against {} through the engine):",
            r.winner
        );
        for k in &r.if_kernel_had {
            let mem = if k.memory_change.abs() < 0.005 {
                "the same memory".to_string()
            } else if k.memory_change < 0.0 {
                format!("{:.0}% less memory", -k.memory_change * 100.0)
            } else {
                format!("{:.0}% more memory", k.memory_change * 100.0)
            };
            let _ = writeln!(
                o,
                "  with {}: {mem}, {:.1}× the swap-in latency, {:.1}× the swap-out speed",
                k.algo, k.read_lat_factor, k.write_mibps_factor
            );
        }
    }
    for (what, why) in &r.failed {
        let _ = writeln!(o, "not measured: {what}: {why}");
    }
    o
}
