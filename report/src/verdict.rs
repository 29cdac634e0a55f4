//! The verdict of `zmem bench` (the main job) for people: what the corpus
//! was, the ranking, the settings with their reasons, and what to run next.

use std::fmt::Write as _;
use std::path::Path;

use zmem_verdict::Decided;

fn first(v: &[String]) -> &str {
    v.first().map(String::as_str).unwrap_or("")
}

/// The verdict for people: the corpus, the ranking, the verdict's settings
/// each with its first reason, and the commands that take the config file
/// at `path`.
pub fn verdict_text(d: &Decided, path: &Path) -> String {
    let (c, notes, r, rec) = (&d.corpus, &d.notes, &d.ranking, &d.rec);
    let mut o = String::new();
    let mut p = |s: String| {
        let _ = writeln!(o, "{s}");
    };
    p(format!(
        "corpus: {} pages ({:.1} MiB): {}",
        c.page_count(),
        (c.page_count() * 4096) as f64 / 1048576.0,
        c.source
    ));
    for n in notes {
        p(format!("  {n}"));
    }
    p(String::new());
    p(crate::ranking::ranking_text(r).trim_end().to_string());
    p(String::new());
    p("Verdict for this kernel:".into());
    let s = &rec.sizes;
    let lines = [
        ("use", rec.use_.clone(), first(&rec.use_reasons).to_string()),
        (
            "algorithm",
            rec.primary.clone(),
            first(&rec.algorithm_reasons).to_string(),
        ),
        (
            "recompression",
            rec.recompress.clone().unwrap_or_else(|| "none".into()),
            rec.algorithm_reasons.get(1).cloned().unwrap_or_default(),
        ),
        (
            "disksize",
            format!("{} MiB", s.disksize_mib),
            rec.size_arithmetic.get(2).cloned().unwrap_or_default(),
        ),
        (
            "mem_limit",
            format!("{} MiB", s.mem_limit_mib),
            rec.size_arithmetic.get(1).cloned().unwrap_or_default(),
        ),
        (
            "vm.swappiness",
            rec.swappiness.to_string(),
            rec.swappiness_arithmetic
                .last()
                .cloned()
                .unwrap_or_default(),
        ),
        (
            "vm.page-cluster",
            rec.page_cluster.to_string(),
            rec.page_cluster_reasons
                .iter()
                .rev()
                .nth(1)
                .cloned()
                .unwrap_or_default(),
        ),
    ];
    for (k, v, why) in lines {
        p(format!("  {k:<16} {v:<10} {why}"));
    }
    p(String::new());
    p(format!("config: {}", path.display()));
    p(format!("preview: zmem apply {} --dry-run", path.display()));
    p(format!(
        "apply:   sudo zmem apply {}   (undo: sudo zmem apply --revert)",
        path.display()
    ));
    p(format!("persist: sudo zmem persist {}", path.display()));
    o
}
