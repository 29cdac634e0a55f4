//! Step 2, the prediction: what each configuration this kernel can run would
//! cost the workload, from the lab's measurements of its own pages.
//!
//! The model (docs/tune.md, "The model"):
//! * the workload's anonymous footprint `W` (its peak without pressure) does
//!   not fit under the limit `M`; the overflow `O = W − M` goes to swap, and
//!   every page that goes out comes back once;
//! * a page costs its swap-out (4 KiB at the tier's measured write speed)
//!   plus its swap-in (the tier's measured 4 KiB random-read latency): zram
//!   from the lab's kernel rows, zswap compressors from the same rows (the
//!   same compressor and zsmalloc; engine rows where the kernel's zram lacks
//!   the compressor), the disk from a file in the swap directory (random
//!   4 KiB O_DIRECT reads, 1 MiB writes synced);
//! * zram's memory is not charged to the workload's memory cgroup (zsmalloc
//!   allocates its pages without `__GFP_ACCOUNT`), on cgroup v1 or v2;
//! * zswap's pool is charged to the cgroup **on cgroup v2 only** (mm/zswap.c
//!   charges every entry to the page's obj_cgroup, and mm/memcontrol.c
//!   `obj_cgroup_charge_zswap` returns without charging unless the memory
//!   controller is on the unified hierarchy): memory.current includes the
//!   pool, memory.zswap.current shows it. On v2, `S` swapped bytes leave
//!   `M − S/ratio` for resident pages, so `S = O × ratio / (ratio − 1)`, up
//!   to the pool's bound the trials set with memory.zswap.max (`P` % of `M`,
//!   `P` = zswap's max_pool_percent): past it the pool holds `P·M` (its
//!   pages `P·M × ratio`), `S = O + P·M`, and the rest is written back to
//!   the disk; when `S` is nearly the whole footprint the workload cannot run
//!   (predicted OOM). On v1 the pool is outside the cgroup: `S = O`, all in
//!   the pool, as with zram;
//! * `zram:ALGO+disk` sizes zram as zmem recommend would for a machine with
//!   `M` of RAM (`M/2 × ratio`); what does not fit goes to the disk;
//! * no swap with an overflow is an OOM kill, and so is swap too small for
//!   what must go out: the trials' swap (`--swap-size`: the disk file, and
//!   zram devices without a size) holds every swapped page at its
//!   uncompressed size (zram's disksize, zswap's slots in the disk file).

use serde::Serialize;
use zmem_trial::{CgroupVersion, SwapConfig, TrialConfig};

const PAGE: f64 = 4096.0;
const MIB: f64 = 1048576.0;

/// What one page costs on a tier, from a measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Costs {
    /// Swap-out of one 4 KiB page, ns.
    pub out_ns: f64,
    /// Swap-in of one 4 KiB page, ns.
    pub in_ns: f64,
    /// Effective compression ratio (1 for the disk).
    pub ratio: f64,
    /// Where the figures come from (`kernel zram rows`, `engine rows`, …).
    pub source: String,
}

impl Costs {
    /// From a read latency (ns) and a write speed (MiB/s).
    pub fn from_speeds(read_lat_ns: f64, write_mibps: f64, ratio: f64, source: &str) -> Costs {
        Costs {
            out_ns: PAGE / (write_mibps.max(1e-6) * MIB) * 1e9,
            in_ns: read_lat_ns,
            ratio,
            source: source.into(),
        }
    }

    /// Swap-in speed in MiB/s (what the swappiness formula compares).
    pub fn read_mibps(&self) -> f64 {
        PAGE / MIB / (self.in_ns.max(1e-3) / 1e9)
    }

    fn per_page_s(&self) -> f64 {
        (self.out_ns + self.in_ns) / 1e9
    }
}

/// Everything the model needs.
#[derive(Debug, Clone)]
pub struct ModelInputs {
    /// The workload's anonymous footprint at its peak, bytes.
    pub footprint_bytes: u64,
    /// The memory limit the trials run under, bytes.
    pub memory_limit: u64,
    /// Wall time of the unpressured run, s.
    pub base_wall_s: f64,
    /// Per algorithm the kernel's zram offers.
    pub zram: Vec<(String, Costs)>,
    /// Per compressor zswap can use.
    pub zswap: Vec<(String, Costs)>,
    pub disk: Costs,
    /// The trials' swap size, bytes: the disk swap file, and zram devices
    /// without a size of their own.
    pub swap_bytes: u64,
    /// The cgroup interface the trials run under: zswap's pool is charged
    /// to the cgroup on v2, not on v1.
    pub cgroup: CgroupVersion,
    /// zswap's max_pool_percent: on v2 the trials bound a zswap run's pool
    /// at this percent of the memory limit (memory.zswap.max).
    pub zswap_pool_percent: u32,
}

impl ModelInputs {
    /// The overflow `O`, bytes.
    pub fn overflow(&self) -> u64 {
        self.footprint_bytes.saturating_sub(self.memory_limit)
    }
}

/// The model's outcome for a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    Runs,
    OomKilled,
}

/// One configuration's prediction.
#[derive(Debug, Clone, Serialize)]
pub struct Prediction {
    pub config: TrialConfig,
    pub outcome: Expect,
    /// Pages expected to go out (and come back), 4 KiB each.
    pub swapped_pages: u64,
    /// Time spent swapping, s.
    pub swap_s: f64,
    /// The unpressured run's wall time plus `swap_s`.
    pub wall_s: f64,
    /// How the figure was reached, in one sentence.
    pub basis: String,
    /// 1 is best; equal predictions share a rank.
    pub rank: usize,
}

fn pages(bytes: f64) -> u64 {
    (bytes / PAGE).ceil() as u64
}

fn runs(
    config: TrialConfig,
    m: &ModelInputs,
    swapped: f64,
    swap_s: f64,
    basis: String,
) -> Prediction {
    Prediction {
        config,
        outcome: Expect::Runs,
        swapped_pages: pages(swapped),
        swap_s,
        wall_s: m.base_wall_s + swap_s,
        basis,
        rank: 0,
    }
}

fn oom(config: TrialConfig, basis: String) -> Prediction {
    Prediction {
        config,
        outcome: Expect::OomKilled,
        swapped_pages: 0,
        swap_s: f64::INFINITY,
        wall_s: f64::INFINITY,
        basis,
        rank: 0,
    }
}

fn mib(b: f64) -> String {
    format!("{:.0} MiB", b / MIB)
}

/// An OOM kill when swap of `capacity` bytes cannot hold `swapped` bytes.
fn swap_full(config: &TrialConfig, swapped: f64, capacity: u64) -> Option<Prediction> {
    (swapped > capacity as f64).then(|| {
        oom(
            config.clone(),
            format!(
                "the swap ({}) cannot hold the {} that must go out",
                mib(capacity as f64),
                mib(swapped)
            ),
        )
    })
}

fn zram(algo: &str, c: &Costs, m: &ModelInputs) -> Prediction {
    let o = m.overflow() as f64;
    let cfg = SwapConfig::Zram {
        algo: algo.into(),
        size: None,
    };
    let basis = format!(
        "{} overflow × ({:.1} µs out + {:.1} µs in) per page ({}); zram's memory is not charged to the cgroup",
        mib(o),
        c.out_ns / 1e3,
        c.in_ns / 1e3,
        c.source
    );
    let cfg: TrialConfig = cfg.into();
    if let Some(p) = swap_full(&cfg, o, m.swap_bytes) {
        return p;
    }
    runs(cfg, m, o, pages(o) as f64 * c.per_page_s(), basis)
}

/// The zram size zmem recommend would give a machine with `limit` of RAM.
pub fn zram_size_for(limit: u64, ratio: f64) -> u64 {
    let half = limit as f64 * 0.5 * ratio.max(1.0);
    ((half / MIB).floor() as u64).max(1) << 20
}

fn zram_disk(algo: &str, c: &Costs, m: &ModelInputs) -> Prediction {
    let o = m.overflow() as f64;
    let size = zram_size_for(m.memory_limit, c.ratio);
    let in_zram = o.min(size as f64);
    let on_disk = (o - size as f64).max(0.0);
    let cfg = SwapConfig::ZramDisk {
        algo: algo.into(),
        size: Some(size),
    };
    let swap_s =
        pages(in_zram) as f64 * c.per_page_s() + pages(on_disk) as f64 * m.disk.per_page_s();
    let basis = format!(
        "zram sized M/2 × {:.2} = {}: {} in zram ({}), {} on disk",
        c.ratio,
        mib(size as f64),
        mib(in_zram),
        c.source,
        mib(on_disk)
    );
    let cfg: TrialConfig = cfg.into();
    if let Some(p) = swap_full(&cfg, o, size + m.swap_bytes) {
        return p;
    }
    runs(cfg, m, o, swap_s, basis)
}

fn zswap(comp: &str, c: &Costs, m: &ModelInputs) -> Prediction {
    let o = m.overflow() as f64;
    let cfg: TrialConfig = SwapConfig::Zswap {
        compressor: comp.into(),
        pool_percent: None,
    }
    .into();
    if c.ratio <= 1.05 {
        let basis = format!(
            "pages hardly compress with {comp} ({:.2}:1): zswap rejects them and they go to disk",
            c.ratio
        );
        let per = (c.out_ns + m.disk.out_ns + m.disk.in_ns) / 1e9;
        if let Some(p) = swap_full(&cfg, o, m.swap_bytes) {
            return p;
        }
        return runs(cfg, m, o, pages(o) as f64 * per, basis);
    }
    match m.cgroup {
        CgroupVersion::V1 => zswap_outside(cfg, c, m),
        CgroupVersion::V2 => zswap_charged(cfg, c, m),
    }
}

/// cgroup v1: the pool is not charged to the cgroup, so only the overflow
/// goes out, all of it into the pool.
fn zswap_outside(cfg: TrialConfig, c: &Costs, m: &ModelInputs) -> Prediction {
    let o = m.overflow() as f64;
    if let Some(p) = swap_full(&cfg, o, m.swap_bytes) {
        return p;
    }
    let basis = format!(
        "zswap's pool is not charged to a cgroup v1 cgroup: {} overflow × ({:.1} µs out + {:.1} µs in) per page ({})",
        mib(o),
        c.out_ns / 1e3,
        c.in_ns / 1e3,
        c.source
    );
    runs(cfg, m, o, pages(o) as f64 * c.per_page_s(), basis)
}

/// cgroup v2: the pool is charged to the cgroup and bounded at
/// `zswap_pool_percent` of the limit (memory.zswap.max); past the bound the
/// rest is written back to the disk.
fn zswap_charged(cfg: TrialConfig, c: &Costs, m: &ModelInputs) -> Prediction {
    let (o, w) = (m.overflow() as f64, m.footprint_bytes as f64);
    let cap = m.memory_limit as f64 * m.zswap_pool_percent as f64 / 100.0;
    let unbounded = o * c.ratio / (c.ratio - 1.0);
    let (swapped, in_pool) = if unbounded / c.ratio <= cap {
        (unbounded, unbounded)
    } else {
        (o + cap, cap * c.ratio)
    };
    let on_disk = (swapped - in_pool).max(0.0);
    if let Some(p) = swap_full(&cfg, swapped, m.swap_bytes) {
        return p;
    }
    if swapped >= 0.9 * w {
        let basis = format!(
            "zswap's pool is charged to the cgroup (v2): {} overflow at {:.2}:1 needs {} swapped, nearly the whole {} footprint",
            mib(o),
            c.ratio,
            mib(swapped),
            mib(w)
        );
        return oom(cfg, basis);
    }
    let mut basis = format!(
        "zswap's pool is charged to the cgroup (v2): {} overflow at {:.2}:1 swaps {} × ({:.1} µs out + {:.1} µs in) ({})",
        mib(o),
        c.ratio,
        mib(swapped),
        c.out_ns / 1e3,
        c.in_ns / 1e3,
        c.source
    );
    if on_disk > 0.0 {
        basis.push_str(&format!(
            "; its pool bounded at {} % of the limit ({}, memory.zswap.max) holds {}, {} is written back to disk",
            m.zswap_pool_percent,
            mib(cap),
            mib(in_pool),
            mib(on_disk)
        ));
    }
    let disk_page = (c.out_ns + m.disk.out_ns + m.disk.in_ns) / 1e9;
    let swap_s = pages(in_pool) as f64 * c.per_page_s() + pages(on_disk) as f64 * disk_page;
    runs(cfg, m, swapped, swap_s, basis)
}

fn disk(m: &ModelInputs) -> Prediction {
    let o = m.overflow() as f64;
    let basis = format!(
        "{} overflow × ({:.1} µs out + {:.1} µs in) per page ({})",
        mib(o),
        m.disk.out_ns / 1e3,
        m.disk.in_ns / 1e3,
        m.disk.source
    );
    let cfg: TrialConfig = SwapConfig::Disk.into();
    if let Some(p) = swap_full(&cfg, o, m.swap_bytes) {
        return p;
    }
    runs(cfg, m, o, pages(o) as f64 * m.disk.per_page_s(), basis)
}

fn no_swap(m: &ModelInputs) -> Prediction {
    let o = m.overflow() as f64;
    if o > 0.0 {
        oom(
            SwapConfig::None.into(),
            format!("no swap: {} does not fit under the limit", mib(o)),
        )
    } else {
        runs(
            SwapConfig::None.into(),
            m,
            0.0,
            0.0,
            "fits under the limit".into(),
        )
    }
}

/// Predict every configuration, best first, ranked (equal figures share a rank).
pub fn predict(m: &ModelInputs) -> Vec<Prediction> {
    let mut v = Vec::new();
    for (a, c) in &m.zram {
        v.push(zram(a, c, m));
    }
    for (a, c) in &m.zram {
        v.push(zram_disk(a, c, m));
    }
    for (a, c) in &m.zswap {
        v.push(zswap(a, c, m));
    }
    v.push(disk(m));
    v.push(no_swap(m));
    rank(&mut v);
    v
}

/// Sort by predicted swap time (an OOM kill last) and rank; predictions within
/// 0.1 % of each other share a rank.
pub fn rank(v: &mut [Prediction]) {
    v.sort_by(|a, b| a.swap_s.total_cmp(&b.swap_s));
    let mut prev: Option<(f64, usize)> = None;
    for (i, p) in v.iter_mut().enumerate() {
        let same = prev.is_some_and(|(s, _)| {
            s == p.swap_s || (s.is_finite() && (p.swap_s - s).abs() <= 1e-3 * s.max(1e-9))
        });
        p.rank = if same { prev.unwrap().1 } else { i + 1 };
        prev = Some((p.swap_s, p.rank));
    }
}

/// Figures like this machine's, for tests.
#[cfg(test)]
pub(crate) fn sample_inputs(footprint_mib: u64, limit_mib: u64) -> ModelInputs {
    ModelInputs {
        footprint_bytes: footprint_mib << 20,
        memory_limit: limit_mib << 20,
        base_wall_s: 1.0,
        zram: vec![
            (
                "lz4".into(),
                Costs::from_speeds(2_000.0, 800.0, 2.2, "kernel"),
            ),
            (
                "lzo".into(),
                Costs::from_speeds(3_000.0, 700.0, 2.3, "kernel"),
            ),
        ],
        zswap: vec![(
            "lzo".into(),
            Costs::from_speeds(3_000.0, 700.0, 2.3, "kernel"),
        )],
        disk: Costs::from_speeds(100_000.0, 200.0, 1.0, "disk"),
        swap_bytes: 1 << 30,
        cgroup: CgroupVersion::V2,
        zswap_pool_percent: 100,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(footprint_mib: u64, limit_mib: u64) -> ModelInputs {
        sample_inputs(footprint_mib, limit_mib)
    }

    fn find<'a>(v: &'a [Prediction], name: &str) -> &'a Prediction {
        v.iter().find(|p| p.config.to_string() == name).unwrap()
    }

    #[test]
    fn faster_tiers_rank_first_and_no_swap_is_an_oom_kill() {
        let v = predict(&inputs(256, 128));
        assert_eq!(v[0].config.to_string(), "zram:lz4");
        assert_eq!(v[0].rank, 1);
        let disk = find(&v, "disk");
        assert!(disk.swap_s > v[0].swap_s * 10.0);
        assert_eq!(disk.swapped_pages, 128 * 256);
        let none = find(&v, "none");
        assert_eq!(none.outcome, Expect::OomKilled);
        assert_eq!(v.last().unwrap().config.to_string(), "none");
        // 128 MiB overflow: 32768 pages × (5.1 µs out + 2 µs in) for lz4.
        let want = 32768.0 * (4096.0 / (800.0 * MIB) + 2e-6);
        assert!((v[0].swap_s - want).abs() < 1e-9, "{}", v[0].swap_s);
        assert!((v[0].wall_s - 1.0 - want).abs() < 1e-9);
    }

    #[test]
    fn zswap_pays_for_its_pool_in_the_cgroup() {
        // 2.3:1 → swapped = O × 2.3/1.3 = 1.77 O.
        let v = predict(&inputs(256, 192));
        let z = find(&v, "zswap:lzo");
        assert_eq!(z.outcome, Expect::Runs);
        let o = 64.0 * MIB;
        assert_eq!(z.swapped_pages, ((o * 2.3 / 1.3) / 4096.0).ceil() as u64);
        assert!(z.swap_s > find(&v, "zram:lzo").swap_s * 1.7);
        // 160 MiB overflow of 256: 283 MiB would have to be swapped, more than there is.
        let v = predict(&inputs(256, 96));
        assert_eq!(find(&v, "zswap:lzo").outcome, Expect::OomKilled);
    }

    #[test]
    fn on_cgroup_v1_the_pool_is_not_charged() {
        let mut m = inputs(256, 192);
        m.cgroup = CgroupVersion::V1;
        let v = predict(&m);
        let z = find(&v, "zswap:lzo");
        // Only the 64 MiB overflow goes out, as with zram.
        assert_eq!(z.swapped_pages, 64 * 256);
        assert_eq!(z.swapped_pages, find(&v, "zram:lzo").swapped_pages);
        assert!(
            z.basis.contains("not charged to a cgroup v1"),
            "{}",
            z.basis
        );
        // 160 MiB of 256 overflows: still runs on v1 (it is an OOM kill on v2).
        let mut m = inputs(256, 96);
        m.cgroup = CgroupVersion::V1;
        assert_eq!(find(&predict(&m), "zswap:lzo").outcome, Expect::Runs);
    }

    #[test]
    fn on_cgroup_v2_the_pool_is_bounded_by_memory_zswap_max() {
        // 20 % of 192 MiB = 38.4 MiB of pool; unbounded it would be 49.2 MiB.
        let mut m = inputs(256, 192);
        m.zswap_pool_percent = 20;
        let z = find(&predict(&m), "zswap:lzo").clone();
        let cap = 192.0 * MIB * 0.2;
        let o = 64.0 * MIB;
        assert_eq!(z.swapped_pages, ((o + cap) / 4096.0).ceil() as u64);
        assert!(z.basis.contains("memory.zswap.max"), "{}", z.basis);
        // What does not fit in the pool goes to disk: slower than unbounded.
        m.zswap_pool_percent = 100;
        let free = find(&predict(&m), "zswap:lzo").clone();
        assert!(z.swap_s > free.swap_s, "{} vs {}", z.swap_s, free.swap_s);
        assert!(!free.basis.contains("written back"), "{}", free.basis);
    }

    #[test]
    fn zram_with_disk_behind_spills_what_does_not_fit() {
        // M = 64 MiB, lz4 at 2.2:1 → zram 70 MiB; overflow 192 MiB → 122 MiB on disk.
        let v = predict(&inputs(256, 64));
        let zd = find(&v, "zram:lz4:70M+disk");
        assert!(zd.basis.contains("122 MiB on disk"), "{}", zd.basis);
        assert!(zd.swap_s > find(&v, "zram:lz4").swap_s);
        assert!(zd.swap_s < find(&v, "disk").swap_s);
        // Nothing spills when the overflow fits: the same figure, the same rank.
        let v = predict(&inputs(100, 64));
        assert_eq!(
            find(&v, "zram:lz4:70M+disk").rank,
            find(&v, "zram:lz4").rank
        );
    }

    #[test]
    fn swap_too_small_for_the_overflow_is_an_oom_kill() {
        // 512 MiB under 64 MiB with 128 MiB of swap: 448 MiB must go out.
        let mut m = inputs(512, 64);
        m.swap_bytes = 128 << 20;
        let v = predict(&m);
        for name in ["zram:lz4", "disk", "zswap:lzo"] {
            let p = find(&v, name);
            assert_eq!(p.outcome, Expect::OomKilled, "{name}");
            assert!(
                p.basis.contains("the swap (128 MiB) cannot hold"),
                "{}",
                p.basis
            );
        }
        // zram with the disk behind it: 70 MiB of zram plus the 128 MiB file.
        assert_eq!(find(&v, "zram:lz4:70M+disk").outcome, Expect::OomKilled);
        // With room for it, everything but no swap runs.
        m.swap_bytes = 1 << 30;
        let v = predict(&m);
        assert_eq!(find(&v, "disk").outcome, Expect::Runs);
        assert_eq!(find(&v, "zram:lz4").outcome, Expect::Runs);
    }

    #[test]
    fn a_workload_that_fits_ties_everywhere() {
        let v = predict(&inputs(100, 128));
        assert!(v.iter().all(|p| p.rank == 1 && p.swap_s == 0.0));
    }
}
