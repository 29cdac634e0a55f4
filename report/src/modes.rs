//! The measurement modes of `zmem bench` for people (`recomp`, `fastpath`,
//! `writeback`: those `zmem_measure`'s `measured!` registers), each result as
//! text lines, through [`Text`] (JSON is the result serialised as it is).

use zmem_codec::PAGE_SIZE;
use zmem_measure::fastpath::FastpathResult;
use zmem_measure::recomp::{Measure, RecompResult};
use zmem_measure::writeback::{relative, KernelRows, WritebackResult, COMPARED};
use zmem_measure::Renders;

/// The text of every measurement mode registered in `zmem_measure`'s
/// `measured!` (one `Renders` impl each: the mode's renderer).
pub struct Text;

impl Renders<Vec<RecompResult>> for Text {
    fn text(&self, out: &Vec<RecompResult>) -> String {
        out.iter().map(recomp_text).collect()
    }
}

impl Renders<Vec<FastpathResult>> for Text {
    fn text(&self, out: &Vec<FastpathResult>) -> String {
        out.iter().map(fastpath_text).collect()
    }
}

impl Renders<Vec<WritebackResult>> for Text {
    fn text(&self, out: &Vec<WritebackResult>) -> String {
        out.iter().map(writeback_text).collect()
    }
}

/// The result as text lines.
pub fn recomp_text(r: &RecompResult) -> String {
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let row = |name: &str, m: &Measure| {
        format!(
            "{name:<28} {:>8.3} {:>12.2} {:>12.2} {:>6}\n",
            m.effective_ratio,
            mib(m.mem_used_total),
            mib(m.compr_data_size),
            m.huge_pages
        )
    };
    let mut s = format!(
        "corpus {} ({} pages); primary {}, recompression with {}\n",
        r.corpus, r.pages, r.primary, r.secondary
    );
    s.push_str(&format!(
        "{:<28} {:>8} {:>12} {:>12} {:>6}\n",
        "state", "eff.ratio", "mem_used MiB", "compr MiB", "huge"
    ));
    s.push_str(&row(&format!("{} (before)", r.primary), &r.before));
    s.push_str(&row(
        &format!("{} + {} idle (after)", r.primary, r.secondary),
        &r.after,
    ));
    s.push_str(&row(&format!("{} alone", r.secondary), &r.alone));
    s.push_str(&format!(
        "candidates {}, recompressed {}, marked incompressible {}; read-back verified: {}\n",
        r.candidates, r.recompressed, r.incompressible, r.verified
    ));
    s.push_str(&format!(
        "time: write with {} {:.3} s, idle all {:.4} s, recompress {:.3} s; write with {} alone {:.3} s\n",
        r.primary, r.write_primary_s, r.idle_s, r.recompress_s, r.secondary, r.write_alone_s
    ));
    s.push_str(&format!(
        "effective ratio after recompression is {:.2}% below {} alone (mem_used_total after compaction)\n",
        r.gap_percent(),
        r.secondary
    ));
    s
}

/// The result as text lines.
pub fn fastpath_text(r: &FastpathResult) -> String {
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let mut s = format!(
        "corpus {} ({} pages); primary {}, fast path {}; {} write pass(es), every write timed\n",
        r.corpus, r.pages, r.primary, r.fast, r.passes
    );
    s.push_str(&format!(
        "{:<28} {:>9} {:>9} {:>9} {:>9}\n",
        "write latency", "mean us", "p50 us", "p99 us", "total s"
    ));
    for (name, l) in [
        (format!("{} (fast path)", r.fast), &r.write_fast),
        (format!("{} (primary)", r.primary), &r.write_primary),
    ] {
        s.push_str(&format!(
            "{name:<28} {:>9.2} {:>9.2} {:>9.2} {:>9.3}\n",
            l.mean_us, l.p50_us, l.p99_us, l.total_s
        ));
    }
    s.push_str(&format!(
        "fast/primary mean write latency: {:.3} ({:+.1}%)\n",
        r.latency_ratio,
        (r.latency_ratio - 1.0) * 100.0
    ));
    s.push_str(&format!(
        "{:<28} {:>9} {:>12} {:>12} {:>6}\n",
        "state", "eff.ratio", "mem_used MiB", "compr MiB", "huge"
    ));
    let row = |name: &str, m: &Measure| {
        format!(
            "{name:<28} {:>9.3} {:>12.2} {:>12.2} {:>6}\n",
            m.effective_ratio,
            mib(m.mem_used_total),
            mib(m.compr_data_size),
            m.huge_pages
        )
    };
    s.push_str(&row(&format!("{} fast path (before)", r.fast), &r.before));
    s.push_str(&row(&format!("back to {} (after)", r.primary), &r.after));
    s.push_str(&row(&format!("{} alone", r.primary), &r.primary_alone));
    s.push_str(&format!(
        "candidates {}, recompressed {}, kept with {} {}; idle all + recompress {:.3} s; read-back verified: {}\n",
        r.candidates, r.recompressed, r.fast, r.kept_fast, r.recompress_s, r.verified
    ));
    let gap = r.gap_percent();
    s.push_str(&format!(
        "effective ratio after recompression is {:.2}% {} {} alone (mem_used_total after compaction)\n",
        gap.abs(),
        if gap >= 0.0 { "below" } else { "above" },
        r.primary
    ));
    s
}

/// The result as text lines.
pub fn writeback_text(r: &WritebackResult) -> String {
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let row = |name: &str, m: &Measure| {
        // Nothing left in the allocator: the ratio is unbounded (JSON keeps 0).
        let ratio = if m.mem_used_total == 0 {
            "inf".to_string()
        } else {
            format!("{:.3}", m.effective_ratio)
        };
        format!(
            "{name:<22} {:>9} {:>12.2} {:>12.2} {:>12.2} {:>6}\n",
            ratio,
            mib(m.mem_used_total),
            mib(m.orig_data_size),
            mib(m.compr_data_size),
            m.huge_pages
        )
    };
    let mut s = format!(
        "corpus {} ({} pages); {}, writeback type={}{}; backing_dev {}\n",
        r.corpus,
        r.pages,
        r.algo,
        r.wb_type,
        if r.writeback_compressed {
            ", compressed_writeback"
        } else {
            ""
        },
        r.backing_dev
    );
    s.push_str(&format!(
        "{:<22} {:>9} {:>12} {:>12} {:>12} {:>6}\n",
        "state", "eff.ratio", "mem_used MiB", "orig MiB", "compr MiB", "huge"
    ));
    s.push_str(&row("before writeback", &r.before));
    s.push_str(&row("after writeback", &r.after));
    s.push_str(&format!(
        "candidates {}, written back {} pages ({:.2} MiB on the backing file); read-back verified: {}\n",
        r.candidates,
        r.written,
        mib(r.written * PAGE_SIZE as u64),
        r.verified
    ));
    s.push_str(&format!(
        "bd_stat (4 KiB units): bd_count {} bd_reads {} bd_writes {}\n",
        r.bd_count, r.bd_reads, r.bd_writes
    ));
    s.push_str(&format!(
        "time: write {:.3} s, idle all {:.4} s, writeback {:.3} s, read back {:.3} s\n",
        r.write_s, r.idle_s, r.writeback_s, r.verify_s
    ));
    if !r.backing_check.is_empty() {
        s.push_str(&format!("backing device: {}\n", r.backing_check));
    }
    s.push_str(&format!(
        "engine devices: as kernel {}'s zram ({})\n",
        r.engine_kernel, r.engine_kernel_why
    ));
    for n in &r.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s.push_str(&writeback_kernel_text(&r.kernel));
    s
}

/// The kernel rows of `zmem bench writeback`: one line per step, kernel
/// beside engine, with its verdict.
pub fn writeback_kernel_text(k: &KernelRows) -> String {
    let mut s = format!(
        "kernel rows ({}): {}{}\n",
        k.kernel,
        k.verdict,
        k.reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default()
    );
    if k.steps.is_empty() {
        return s;
    }
    s.push_str(&format!(
        "  backing_dev {} (kernel), a temporary file (engine); writeback attributes: {}\n",
        k.backing_dev,
        k.attrs.join(" ")
    ));
    for n in &k.notes {
        s.push_str(&format!("  {n}\n"));
    }
    s.push_str(&format!(
        "  {:<38} {:>9} {:>13} {:>13} {:>13} {:>11} {:>9} {:>22} {:>21}  verdict\n",
        "step",
        "result",
        "bd_count k/e",
        "bd_reads k/e",
        "bd_writes k/e",
        "huge k/e",
        "limit k/e",
        "compr kernel/engine",
        "mem_used kernel/eng"
    ));
    for st in &k.steps {
        let (Some(a), Some(b)) = (&st.kernel, &st.engine) else {
            s.push_str(&format!("  {:<38} SKIP: {}\n", st.step, st.detail));
            continue;
        };
        let pair = |x: u64, y: u64| format!("{x}/{y}");
        let result = if a.result == b.result {
            a.result.clone()
        } else {
            format!("{}/{}", a.result, b.result)
        };
        s.push_str(&format!(
            "  {:<38} {:>9} {:>13} {:>13} {:>13} {:>11} {:>9} {:>22} {:>21}  {}{}\n",
            st.step,
            result,
            pair(a.bd_count, b.bd_count),
            pair(a.bd_reads, b.bd_reads),
            pair(a.bd_writes, b.bd_writes),
            pair(a.huge_pages, b.huge_pages),
            pair(a.writeback_limit, b.writeback_limit),
            format!(
                "{}/{} {:+.3}%",
                a.compr_data_size,
                b.compr_data_size,
                relative(b.compr_data_size, a.compr_data_size)
            ),
            format!("{}/{}", a.mem_used_total, b.mem_used_total),
            st.verdict,
            if st.detail.is_empty() {
                String::new()
            } else {
                format!(": {}", st.detail)
            }
        ));
    }
    s.push_str(&format!("  (k/e: kernel/engine; {COMPARED})\n"));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_measure::{fastpath, recomp, writeback};

    #[test]
    fn recompression_text() {
        let c = recomp::heap_corpus(1).unwrap();
        let r = recomp::run(&c, "lz4", "zstd").unwrap();
        assert!(recomp_text(&r).contains("recompressed"));
    }

    #[test]
    fn fast_path_text() {
        let c = recomp::heap_corpus(1).unwrap();
        let r = fastpath::run(&c, "lz4", "lz4m", 2).unwrap();
        assert!(fastpath_text(&r).contains("fast/primary mean write latency"));
    }

    #[test]
    fn writeback_text_says_what_was_written_back() {
        let c = zmem_corpus::default_corpus();
        for compressed in [false, true] {
            let r = writeback::run(
                &c,
                &writeback::Options {
                    compressed,
                    ..Default::default()
                },
            )
            .unwrap();
            let text = writeback_text(&r);
            assert!(text.contains("written back"), "{text}");
            // Without kernel rows and --kernel, the newest kernel zmem models.
            assert!(
                text.contains(&format!(
                    "engine devices: as kernel {}'s zram (the newest",
                    r.engine_kernel
                )),
                "{text}"
            );
        }
    }
}
