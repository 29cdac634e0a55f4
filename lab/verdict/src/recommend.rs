//! `zmem recommend`: a zram/zswap configuration from measured figures, with
//! the arithmetic and the reasons shown, as a ready zram-generator.conf and a
//! sysctl.d snippet.
//!
//! * **Algorithms**: the best weighted score at page-cluster 0 among the
//!   algorithms the running kernel offers (kernel rows when measured, engine
//!   rows otherwise); a recompression algorithm when another offered algorithm
//!   stores idle pages at least 10% smaller.
//! * **Sizes**: the compressed store may use at most half the RAM
//!   (`mem_limit`); disksize is what that holds at the measured effective
//!   ratio, at most 2 × RAM (the kernel documentation's advice). Memory when
//!   full: RAM − disksize/ratio + disksize.
//! * **vm.swappiness**: the kernel reads swappiness as the relative IO cost of
//!   anon vs file pages (mm/vmscan.c, `get_scan_count`): with swap-in x times faster than file
//!   reads, swappiness / (200 − swappiness) = x, so swappiness = 200·x/(x+1)
//!   (x = 2 → 133).
//! * **vm.page-cluster**: the page-cluster with the best score for the chosen
//!   algorithm (in practice 0): zram is a synchronous swap device, and a page
//!   mapped once (swap count 1) is read alone, skipping readahead entirely.

use anyhow::{bail, Result};
use serde::Serialize;

use zmem_conf::{Algo, Algorithms, DeviceConfig, Entry, SizeExpr, Writer};
use zmem_kernel::page_type;

use crate::table::{FullRow, FullTable};

const MIB: u64 = 1 << 20;

/// What the recommendation is made from besides the table.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub ram_bytes: u64,
    /// Random 4 KiB read speed of the filesystem, MiB/s.
    pub fs_read_mib_s: f64,
    /// Where that number came from ("measured in /var/tmp with O_DIRECT", "--fs-read").
    pub fs_read_source: String,
    /// Algorithms the running kernel's zram offers; empty = unknown (then the kernel's backend list).
    pub kernel_algos: Vec<String>,
    /// Swap devices other than zram (from /proc/swaps).
    pub disk_swap: Vec<String>,
    /// Whether zswap is enabled now, if known.
    pub zswap_enabled: Option<bool>,
}

/// disksize and mem_limit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sizes {
    pub ram_mib: u64,
    /// The ratio used (the measured effective ratio, rounded down to 0.01, at least 1).
    pub ratio: f64,
    pub mem_limit_mib: u64,
    pub disksize_mib: u64,
    /// Whether the 2 × RAM cap applied.
    pub capped: bool,
    /// RAM − disksize/ratio + disksize, MiB.
    pub memory_when_full_mib: f64,
}

/// The sizes for `ram_mib` MiB of RAM at `ratio` (see the module doc).
pub fn sizes(ram_mib: u64, measured_ratio: f64) -> Sizes {
    let ratio = ((measured_ratio.max(1.0) * 100.0).floor() / 100.0).max(1.0);
    let ram = ram_mib as f64;
    let mem_limit_mib = (ram * 0.5).floor() as u64;
    let uncapped = ram * 0.5 * ratio;
    let capped = uncapped > ram * 2.0;
    let disksize_mib = uncapped.min(ram * 2.0).floor() as u64;
    let memory_when_full_mib = ram - disksize_mib as f64 / ratio + disksize_mib as f64;
    Sizes {
        ram_mib,
        ratio,
        mem_limit_mib,
        disksize_mib,
        capped,
        memory_when_full_mib,
    }
}

/// vm.swappiness for swap-in `x` times as fast as file reads: 200·x/(x+1), rounded, 0..=200.
pub fn swappiness(x: f64) -> u32 {
    if !x.is_finite() {
        return if x > 0.0 { 200 } else { 0 };
    }
    if x <= 0.0 {
        return 0;
    }
    (200.0 * x / (x + 1.0)).round().clamp(0.0, 200.0) as u32
}

/// The recommendation.
#[derive(Debug, Clone, Serialize)]
pub struct Recommendation {
    pub primary: String,
    pub recompress: Option<String>,
    pub algorithm_reasons: Vec<String>,
    pub sizes: Sizes,
    pub size_arithmetic: Vec<String>,
    pub swappiness: u32,
    pub swappiness_arithmetic: Vec<String>,
    pub page_cluster: u32,
    pub page_cluster_reasons: Vec<String>,
    /// `zram` or `zswap`.
    pub use_: String,
    pub use_reasons: Vec<String>,
    pub zram_generator_conf: String,
    pub sysctl_conf: String,
}

impl Recommendation {
    /// The one file `zmem apply` and `zmem persist` take as is: the
    /// zram-generator.conf sections, then `[sysctl]`, then `[zswap]` when
    /// zswap must be turned off in front of zram.
    pub fn config_file(&self) -> String {
        let mut f = format!("{}\n{}", self.zram_generator_conf, self.sysctl_conf);
        if self.use_ == "zram"
            && self
                .use_reasons
                .iter()
                .any(|r| r.starts_with("disable zswap"))
        {
            let mut w = Writer::new();
            w.blank().zswap(&[Entry::new("enabled", "N")]);
            f.push_str(&w.finish());
        }
        f
    }
}

fn allowed(algo: &str, inp: &Inputs) -> bool {
    if inp.kernel_algos.is_empty() {
        zmem_codec::find(algo)
            .map(|b| b.in_kernel())
            .unwrap_or(false)
    } else {
        inp.kernel_algos.iter().any(|a| a == algo)
    }
}

fn ratio_of(r: &FullRow) -> f64 {
    r.effective_ratio.or(r.ratio).unwrap_or(0.0)
}

/// The rows a recommendation may choose from: scored rows of algorithms the
/// kernel offers, kernel rows where the kernel was measured, engine rows
/// otherwise. Returns the target those rows are from and the rows.
fn candidates<'t>(t: &'t FullTable, inp: &Inputs) -> (&'static str, Vec<&'t FullRow>) {
    let kernel_measured = t
        .rows
        .iter()
        .any(|r| r.target == "kernel" && r.score.is_some());
    let target = if kernel_measured { "kernel" } else { "engine" };
    let cand = t
        .rows
        .iter()
        .filter(|r| r.target == target && r.score.is_some() && allowed(&r.algo, inp))
        .collect();
    (target, cand)
}

/// The recompression algorithm: any allowed algorithm (engine or kernel
/// figures) whose ratio at page-cluster 0 is at least 10% better than the
/// primary's, the best such; with the reason for it or for having none.
fn recompression(t: &FullTable, inp: &Inputs, best: &FullRow) -> (Option<String>, String) {
    let primary = &best.algo;
    let better = t
        .rows
        .iter()
        .filter(|r| r.page_cluster == 0 && &r.algo != primary && allowed(&r.algo, inp))
        .filter(|r| ratio_of(r) >= ratio_of(best) * 1.10)
        .max_by(|a, b| ratio_of(a).partial_cmp(&ratio_of(b)).unwrap());
    match better {
        Some(r) => (
            Some(r.algo.clone()),
            format!(
                "recompress idle pages with {}: {:.2}:1 vs {:.2}:1 ({:+.0}% more data in the same memory); it is slower, so only idle pages pay for it. zram-generator only configures it: run `zmem policy` (or write `recompress type=idle`) to trigger it",
                r.algo,
                ratio_of(r),
                ratio_of(best),
                (ratio_of(r) / ratio_of(best) - 1.0) * 100.0
            ),
        ),
        None => (
            None,
            format!(
                "no recompression: no other algorithm this kernel offers stores these pages ≥ 10% smaller than {primary}"
            ),
        ),
    }
}

/// How `sz` follows from RAM and the measured ratio of `primary`.
fn size_arithmetic(ram_mib: u64, primary: &str, sz: &Sizes) -> Vec<String> {
    let gib = |m: f64| m / 1024.0;
    let mut lines = vec![
        format!("RAM = {ram_mib} MiB ({:.1} GiB); measured effective ratio of {primary} = {:.2}:1 (orig_data_size / mem_used_total, with same-filled pages and allocator overhead)", gib(ram_mib as f64), sz.ratio),
        format!("mem_limit = RAM × 0.5 = {} MiB: the compressed store may use at most half of the RAM", sz.mem_limit_mib),
        format!(
            "disksize = min(mem_limit × ratio, 2 × RAM) = min({} × {:.2}, {}) = {} MiB{}",
            sz.mem_limit_mib,
            sz.ratio,
            2 * ram_mib,
            sz.disksize_mib,
            if sz.capped { " (capped: little point in more than 2 × RAM)" } else { "" }
        ),
        format!(
            "memory when full = RAM − disksize/ratio + disksize = {ram_mib} − {}/{:.2} + {} = {:.0} MiB ({:.1} GiB, {:.2} × RAM)",
            sz.disksize_mib,
            sz.ratio,
            sz.disksize_mib,
            sz.memory_when_full_mib,
            gib(sz.memory_when_full_mib),
            sz.memory_when_full_mib / ram_mib.max(1) as f64
        ),
    ];
    if sz.ratio < 1.3 {
        lines.push("warning: these pages hardly compress; zram gains little memory on them".into());
    }
    lines
}

/// vm.swappiness from the speed of zram against the filesystem.
struct SwappinessChoice {
    /// Swap-in is `x` times as fast as a file refault.
    x: f64,
    swappiness: u32,
    arithmetic: Vec<String>,
}

fn swappiness_choice(inp: &Inputs, best: &FullRow, target: &str) -> SwappinessChoice {
    let primary = &best.algo;
    let zram_speed = best.read_mib_s.unwrap_or(0.0);
    let x = if inp.fs_read_mib_s > 0.0 {
        zram_speed / inp.fs_read_mib_s
    } else {
        f64::INFINITY
    };
    let swp = swappiness(x);
    let arithmetic = vec![
        format!("zram random 4 KiB reads ({primary}, {target}, page-cluster 0): {zram_speed:.0} MiB/s"),
        format!("filesystem random 4 KiB reads: {:.1} MiB/s ({})", inp.fs_read_mib_s, inp.fs_read_source),
        format!("x = {zram_speed:.0} / {:.1} = {x:.2} (swap-in is x times as fast as a file refault)", inp.fs_read_mib_s),
        format!("swappiness / (200 − swappiness) = x  ⇒  swappiness = 200·x/(x+1) = 200 × {x:.2} / {:.2} = {swp}", x + 1.0),
    ];
    SwappinessChoice {
        x,
        swappiness: swp,
        arithmetic,
    }
}

/// vm.page-cluster: the best-scoring page-cluster of `primary` among the
/// candidates, with the figures of each.
fn page_cluster_choice(cand: &[&FullRow], primary: &str) -> (u32, Vec<String>) {
    let pc_rows: Vec<&FullRow> = cand.iter().copied().filter(|r| r.algo == primary).collect();
    let best_pc = pc_rows
        .iter()
        .max_by(|a, b| a.score.partial_cmp(&b.score).unwrap())
        .map(|r| r.page_cluster)
        .unwrap_or(0);
    let mut reasons = vec![];
    for r in &pc_rows {
        reasons.push(format!(
            "page-cluster {}: {:.0} MiB/s, {:.2} µs mean, {:.2} µs p99, score {:.3}",
            r.page_cluster,
            r.read_mib_s.unwrap_or(0.0),
            r.lat_mean_ns.unwrap_or(0.0) / 1000.0,
            r.lat_p99_ns.unwrap_or(0.0) / 1000.0,
            r.score.unwrap_or(0.0)
        ));
    }
    reasons.push(format!(
        "vm.page-cluster = {best_pc}: the best score for {primary}"
    ));
    reasons.push(
        "note: zram is a synchronous swap device; swap-in of a page mapped once (swap count 1) bypasses the swap cache and reads only that page, skipping readahead, so page-cluster matters mainly for shared pages".into(),
    );
    (best_pc, reasons)
}

/// zram or zswap, from the disk swap present and the ratio, with the reasons.
fn zram_or_zswap(inp: &Inputs, ratio: f64) -> (&'static str, Vec<String>) {
    let mut reasons = Vec::new();
    let use_ = if inp.disk_swap.is_empty() {
        reasons.push(
            "zram: there is no disk swap, and zswap is only a cache in front of a swap device"
                .into(),
        );
        "zram"
    } else if ratio < 1.5 {
        reasons.push(format!(
            "zswap: disk swap exists ({}) and these pages compress poorly ({:.2}:1); zswap rejects pages that do not compress and writes cold pages to disk by itself",
            inp.disk_swap.join(", "),
            ratio
        ));
        "zswap"
    } else {
        reasons.push(format!(
            "zram: pages compress well ({:.2}:1); keep the disk swap ({}) at a lower priority than zram (swap-priority 100)",
            ratio,
            inp.disk_swap.join(", ")
        ));
        "zram"
    };
    if use_ == "zram" && inp.zswap_enabled == Some(true) {
        reasons.push("disable zswap (zswap.enabled=0 on the kernel command line, or write N to /sys/module/zswap/parameters/enabled): in front of zram it would compress every page twice".into());
    }
    (use_, reasons)
}

/// zram-generator.conf: sizes as expressions of `ram`, so the file suits
/// machines with other amounts of memory.
fn zram_generator_conf(
    t: &FullTable,
    primary: &str,
    ram_mib: u64,
    sz: &Sizes,
    recompress: Option<&str>,
) -> String {
    let from = format!("`zmem recommend` ({} on corpus {})", primary, t.corpus);
    zram_section(&from, primary, ram_mib, sz, recompress)
}

/// The `[zram0]` section (with its header comment) for `primary` at sizes
/// `sz`, as `zmem recommend` writes it; `from` names what chose it
/// (`` `zmem tune` (…) ``). The first line is the marker that lets zmem
/// replace a file it wrote.
pub fn zram_section(
    from: &str,
    primary: &str,
    ram_mib: u64,
    sz: &Sizes,
    recompress: Option<&str>,
) -> String {
    let mut algorithms = Algorithms::new(Algo::named(primary));
    if let Some(r) = recompress {
        algorithms.recompress.push(Algo::named(r));
        algorithms
            .recompress_params
            .push(("type".into(), page_type::IDLE.into()));
    }
    let mut dev = DeviceConfig::new(0, 0);
    dev.algorithms = Some(algorithms);
    let mut w = Writer::new();
    device_section(&mut w, from, ram_mib, sz, dev);
    w.finish()
}

/// `dev` as `[zram0]` with its header comment, sized as zmem recommends for `sz`: the
/// sizes are expressions of `ram`, so the file suits machines with other amounts of memory.
pub fn device_section(w: &mut Writer, from: &str, ram_mib: u64, sz: &Sizes, mut dev: DeviceConfig) {
    // A ratio too large to write is capped by `ram * 2` anyway.
    let size = match sz.ratio.is_finite() {
        true => format!("floor(min(ram * 0.5 * {:.2}, ram * 2))", sz.ratio),
        false => "floor(ram * 2)".into(),
    };
    dev.zram_size = SizeExpr::parse(&size, 0).expect("a zram-size zmem writes parses");
    dev.resident_limit = Some(SizeExpr::parse("floor(ram * 0.5)", 0).expect("parses"));
    w.comment(&format!("zram-generator.conf from {from}"))
        .comment(&format!(
            "Sizes scale with RAM (`ram` = MemTotal in MiB). On this machine ({ram_mib} MiB):"
        ))
        .comment(&format!(
            "  disksize {} MiB, mem_limit {} MiB, effective ratio {:.2}",
            sz.disksize_mib, sz.mem_limit_mib, sz.ratio
        ))
        .device(&dev);
}

/// The `[sysctl]` section for vm.swappiness and vm.page-cluster (zmem's
/// extension of zram-generator.conf: `zmem apply` writes it to /proc/sys,
/// `zmem persist` to /etc/sysctl.d/90-zmem.conf).
fn sysctl_conf(swp: &SwappinessChoice, page_cluster: u32) -> String {
    let mut w = Writer::new();
    w.comment(&format!(
        "swappiness = 200·x/(x+1) with x = zram/filesystem random-read speed = {:.2}",
        swp.x
    ))
    .sysctls(&[
        Entry::new("vm.swappiness", swp.swappiness.to_string()),
        Entry::new("vm.page-cluster", page_cluster.to_string()),
    ]);
    w.finish()
}

/// Recommend with the primary algorithm the verdict's repeated, interleaved
/// measurements chose (`crate::rank`): the one decision of `zmem bench`,
/// `zmem bench full` and `zmem recommend`; the table gives the rest
/// (recompression, sizes, page-cluster).
pub fn recommend_ranked(
    t: &FullTable,
    inp: &Inputs,
    ranking: &crate::rank::Ranking,
) -> Result<Recommendation> {
    recommend_pick(
        t,
        inp,
        &ranking.winner,
        crate::reason::primary_reason(ranking),
    )
}

/// Recommend with `pick` as the primary algorithm, for `reason`.
fn recommend_pick(
    t: &FullTable,
    inp: &Inputs,
    pick: &str,
    reason: String,
) -> Result<Recommendation> {
    let (target, cand) = candidates(t, inp);
    let Some(best) = cand
        .iter()
        .copied()
        .find(|r| r.page_cluster == 0 && r.algo == pick)
    else {
        bail!(
            "cannot recommend: the verdict's choice {pick} has no {target} figures in the table among the algorithms this kernel offers ({})",
            if inp.kernel_algos.is_empty() { "unknown".to_string() } else { inp.kernel_algos.join(", ") }
        );
    };
    recommend_for(t, inp, target, &cand, best, reason)
}

fn recommend_for(
    t: &FullTable,
    inp: &Inputs,
    target: &str,
    cand: &[&FullRow],
    best: &FullRow,
    primary_reason: String,
) -> Result<Recommendation> {
    let primary = best.algo.clone();
    let (recompress, recompress_reason) = recompression(t, inp, best);
    let algorithm_reasons = vec![primary_reason, recompress_reason];
    let ram_mib = inp.ram_bytes / MIB;
    let sz = sizes(ram_mib, ratio_of(best));
    let swp = swappiness_choice(inp, best, target);
    let (page_cluster, page_cluster_reasons) = page_cluster_choice(cand, &primary);
    let (use_, use_reasons) = zram_or_zswap(inp, sz.ratio);
    Ok(Recommendation {
        zram_generator_conf: zram_generator_conf(t, &primary, ram_mib, &sz, recompress.as_deref()),
        sysctl_conf: sysctl_conf(&swp, page_cluster),
        primary,
        recompress,
        algorithm_reasons,
        sizes: sz,
        size_arithmetic: size_arithmetic(ram_mib, &best.algo, &sz),
        swappiness: swp.swappiness,
        swappiness_arithmetic: swp.arithmetic,
        page_cluster,
        page_cluster_reasons,
        use_: use_.into(),
        use_reasons,
    })
}

/// This machine's facts: MemTotal, non-zram swap devices, zswap enabled.
/// (Which algorithms the kernel's zram offers is the ranking's
/// [`crate::Ranking::offered`], found once per run.)
pub fn machine_facts() -> (Option<u64>, Vec<String>, Option<bool>) {
    let sys = zmem_host::Sys::real();
    let ram = sys.meminfo_get("MemTotal").ok().flatten();
    let swaps: Vec<String> = sys
        .swaps()
        .unwrap_or_default()
        .into_iter()
        .map(|e| e.device)
        .filter(|d| !d.starts_with("/dev/zram"))
        .collect();
    let zswap = sys
        .read("/sys/module/zswap/parameters/enabled")
        .ok()
        .map(|s| s.trim() == "Y");
    (ram, swaps, zswap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::score::Weights;

    #[test]
    fn swappiness_formula() {
        assert_eq!(swappiness(1.0), 100, "equal cost");
        assert_eq!(swappiness(2.0), 133, "the kernel doc's example");
        assert_eq!(swappiness(0.5), 67);
        assert_eq!(swappiness(9.0), 180);
        assert_eq!(swappiness(0.0), 0);
        assert_eq!(swappiness(f64::INFINITY), 200);
        assert_eq!(swappiness(1e9), 200);
    }

    #[test]
    fn sizes_arithmetic() {
        // 24 GiB at 2.63:1.
        let s = sizes(24576, 2.6391);
        assert_eq!(s.ratio, 2.63);
        assert_eq!(s.mem_limit_mib, 12288);
        assert_eq!(s.disksize_mib, (12288.0f64 * 2.63).floor() as u64);
        assert_eq!(s.disksize_mib, 32317);
        assert!(!s.capped);
        assert!((s.memory_when_full_mib - (24576.0 - 32317.0 / 2.63 + 32317.0)).abs() < 1e-9);
        // A huge ratio is capped at 2 × RAM.
        let s = sizes(1000, 10.0);
        assert_eq!(
            (s.mem_limit_mib, s.disksize_mib, s.capped),
            (500, 2000, true)
        );
        assert_eq!(s.memory_when_full_mib, 1000.0 - 200.0 + 2000.0);
        // An incompressible corpus: ratio 1, disksize = mem_limit, no memory gained.
        let s = sizes(1000, 0.8);
        assert_eq!((s.ratio, s.disksize_mib), (1.0, 500));
        assert_eq!(s.memory_when_full_mib, 1000.0);
    }

    fn row(target: &str, algo: &str, pc: u32, read: f64, ratio: f64, lat: f64) -> FullRow {
        FullRow {
            target: target.into(),
            algo: algo.into(),
            page_cluster: pc,
            ratio: Some(ratio),
            effective_ratio: Some(ratio),
            compress_mb_s: None,
            decompress_mb_s: None,
            reclaim_mb_s: None,
            decompress_us_mean: None,
            decompress_us_p99: None,
            write_mib_s: None,
            read_mib_s: Some(read),
            iops: Some(read * 256.0),
            lat_mean_ns: Some(lat * (1 << pc) as f64),
            lat_p99_ns: Some(lat * 3.0),
            score: None,
        }
    }

    fn table() -> FullTable {
        let mut rows = Vec::new();
        for pc in 0..4 {
            rows.push(row(
                "engine",
                "lz4",
                pc,
                4000.0 + pc as f64 * 500.0,
                2.5,
                1000.0,
            ));
            rows.push(row("engine", "zstd", pc, 1500.0, 3.4, 3000.0));
            rows.push(row("engine", "wkdm", pc, 9000.0, 2.5, 500.0));
        }
        let mut t = FullTable {
            corpus: "test".into(),
            pages: 100,
            weights: Weights::default(),
            rows,
            missing: vec![],
            kernel_missing: None,
            best: None,
            notes: vec![],
        };
        t.rescore(Weights::default());
        t
    }

    fn inputs() -> Inputs {
        Inputs {
            ram_bytes: 8 << 30,
            fs_read_mib_s: 100.0,
            fs_read_source: "given".into(),
            kernel_algos: vec!["lzo".into(), "lz4".into(), "zstd".into()],
            disk_swap: vec![],
            zswap_enabled: Some(true),
        }
    }

    /// The recommendation around the verdict's pick.
    fn recommend(t: &FullTable, i: &Inputs) -> Result<Recommendation> {
        recommend_pick(t, i, "lz4", "the verdict's pick".into())
    }

    #[test]
    fn recommends_kernel_algorithms_only_with_reasons() {
        let r = recommend(&table(), &inputs()).unwrap();
        assert_eq!(r.primary, "lz4");
        // wkdm has figures, but the kernel lacks it: never recommended.
        let e = recommend_pick(&table(), &inputs(), "wkdm", String::new()).unwrap_err();
        assert!(e.to_string().contains("cannot recommend"), "{e}");
        assert_eq!(r.recompress.as_deref(), Some("zstd"));
        assert_eq!(r.page_cluster, 0);
        assert_eq!(r.swappiness, swappiness(40.0));
        assert_eq!(r.use_, "zram");
        assert!(r.use_reasons.iter().any(|u| u.contains("disable zswap")));
        assert!(r
            .zram_generator_conf
            .contains("compression-algorithm = lz4 zstd (type=idle)"));
        assert!(r
            .sysctl_conf
            .contains(&format!("vm.swappiness = {}", r.swappiness)));
        assert!(r.sysctl_conf.contains("vm.page-cluster = 0"));
        assert!(r
            .size_arithmetic
            .iter()
            .any(|l| l.contains("RAM − disksize/ratio + disksize")));
        // Without zstd in the kernel, no recompression.
        let mut i = inputs();
        i.kernel_algos = vec!["lz4".into(), "lzo".into()];
        assert_eq!(recommend(&table(), &i).unwrap().recompress, None);
        // A kernel offering none of the measured algorithms: a clear error.
        i.kernel_algos = vec!["842".into()];
        assert!(recommend(&table(), &i)
            .unwrap_err()
            .to_string()
            .contains("cannot recommend"));
    }

    #[test]
    fn zswap_for_poorly_compressing_pages_with_disk_swap() {
        let mut t = table();
        for r in &mut t.rows {
            r.effective_ratio = Some(1.2);
            r.ratio = Some(1.2);
        }
        t.rescore(Weights::default());
        let mut i = inputs();
        i.disk_swap = vec!["/dev/vda2".into()];
        let r = recommend(&t, &i).unwrap();
        assert_eq!(r.use_, "zswap");
    }

    /// The zram-generator.conf is read back by the ops config reader and gives
    /// the disksize and mem_limit computed here.
    #[test]
    fn generator_conf_parses_back() {
        let r = recommend(&table(), &inputs()).unwrap();
        let cfg = zmem_conf::parse(
            &r.zram_generator_conf,
            std::path::Path::new("zram-generator.conf"),
        )
        .expect("our own reader parses the recommended config");
        assert_eq!(cfg.devices.len(), 1);
        let d = &cfg.devices[0];
        let ram_mib = (8u64 << 30) >> 20;
        assert_eq!(
            d.zram_size.eval_mib(ram_mib as f64).unwrap(),
            r.sizes.disksize_mib as f64
        );
        assert_eq!(
            d.resident_limit
                .as_ref()
                .unwrap()
                .eval_mib(ram_mib as f64)
                .unwrap(),
            r.sizes.mem_limit_mib as f64
        );
        let a = d.algorithms.as_ref().unwrap();
        assert_eq!(a.primary.name, "lz4");
        assert_eq!(
            a.recompress
                .iter()
                .map(|x| x.name.as_str())
                .collect::<Vec<_>>(),
            ["zstd"]
        );
        assert_eq!(
            a.recompress_params,
            vec![("type".to_string(), "idle".to_string())]
        );
        assert_eq!(d.swap_priority, 100);
    }
}
