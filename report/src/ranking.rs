//! The verdict for people: the ranking table and the "if your kernel had
//! it" lines.

use std::fmt::Write as _;

use zmem_verdict::{Call, Ranking};

/// The ranking table and the engine-only comparisons.
pub fn ranking_text(r: &Ranking) -> String {
    let mut o = String::new();
    let d = &r.decision;
    let _ = writeln!(
        o,
        "{} rounds, candidates interleaved: {}",
        r.rounds,
        zmem_verdict::stop_text(r)
    );
    let _ = writeln!(
        o,
        "median [{:.0}% interval] per candidate; weights {}; {}",
        r.ci_coverage * 100.0,
        r.weights,
        zmem_verdict::margin_text(&d.margin)
    );
    if !r.offered.is_empty() {
        let _ = writeln!(
            o,
            "candidates: the algorithms this kernel's zram offers, {} ({})",
            r.offered.join(", "),
            r.offered_source
        );
    }
    if r.offered.is_empty() && !r.offered_source.is_empty() {
        let _ = writeln!(
            o,
            "candidates: which algorithms this kernel's zram offers is unknown ({}); assumed every algorithm some kernel's zram has: check the pick with `cat /sys/block/zram0/comp_algorithm` once zram is loaded",
            r.offered_source
        );
    }
    if let Some(k) = &r.kernel_rows {
        let _ = writeln!(o, "kernel rows not measured: {k}");
    }
    let _ = writeln!(
        o,
        "{:<8} {:<7} {:<22} {:<22} {:<13} {:<22} {:<22} {:>9}",
        "algo",
        "target",
        "score",
        "behind leader",
        "call",
        "swap-in µs (p50)",
        "swap-out MiB/s",
        "eff_ratio"
    );
    for x in &r.ranked {
        let call = match x.call {
            None => "leader",
            Some(Call::Ahead) => "leader ahead",
            Some(c) => c.word(),
        };
        let _ = writeln!(
            o,
            "{:<8} {:<7} {:<22} {:<22} {:<13} {:<22} {:<22} {:>9.3}",
            x.algo,
            x.target,
            x.score.map(|s| s.show(1.0, 3)).unwrap_or_default(),
            x.behind_leader
                .map(|s| s.show(1.0, 3))
                .unwrap_or_else(|| "—".into()),
            call,
            x.read_lat_ns.show(1000.0, 2),
            x.write_mibps.show(1.0, 0),
            x.effective_ratio
        );
    }
    let _ = writeln!(
        o,
        "behind leader: paired per-round difference, interval at {:.1}% (look {}); pick: {}{}",
        (1.0 - d.look_error) * 100.0,
        d.look,
        r.winner,
        if d.settled {
            ""
        } else {
            " (NOT proven: picked by the tie rule among the unseparated)"
        }
    );
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
