//! `zmem status`: every zram device and zswap, in words and units a person reads.

use std::fmt::Write;
use std::io;

use serde::{Serialize, Serializer};
use zmem_kernel::attr;

use crate::zram::{self, ZramDevice};
use crate::zswap::{self, Debugfs, Zswap};
use zmem_conf::{bytes, count, ratio};
use zmem_host::Sys;
use zmem_kernel::MmStat;

/// What `zmem status` shows.
#[derive(Debug, Clone)]
pub struct Status {
    pub devices: Vec<ZramDevice>,
    pub zswap: Zswap,
    pub warnings: Vec<String>,
}

/// Collect the status (mounting debugfs read-only on the real kernel if `mount_debugfs`).
pub fn collect(sys: &Sys, mount_debugfs: bool) -> io::Result<Status> {
    let devices = zram::read_all(sys)?;
    let zswap = zswap::read(
        sys,
        if mount_debugfs {
            Debugfs::MountReadOnly
        } else {
            Debugfs::ReadIfMounted
        },
    )?;
    let mut warnings = Vec::new();
    let zram_swap: Vec<&ZramDevice> = devices.iter().filter(|d| d.swap.is_some()).collect();
    if !zram_swap.is_empty() && zswap.enabled() {
        warnings.push(format!(
            "zram and zswap are both active: zswap ({}) sits in front of every swap device, including {}, so pages \
             are compressed by zswap first and zram gets mostly what zswap rejects or writes back. Pick one: disable \
             zswap (`[zswap] enabled = N` with `zmem apply`) or stop swapping on zram.",
            zswap.param("compressor").unwrap_or("?"),
            zram_swap.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(", ")
        ));
    } else if !zram_swap.is_empty() && zswap.holds_data() {
        warnings.push("zswap is disabled but still holds pages stored before it was disabled; they drain as they are read back".into());
    }
    for d in &devices {
        if d.initialised && d.mm.mem_limit > 0 && d.mm.mem_used_total >= d.mm.mem_limit {
            warnings.push(format!(
                "{}: RAM used has reached the memory limit; further writes fail",
                d.name
            ));
        }
        if d.io.failed_writes > 0 {
            warnings.push(format!(
                "{}: {} failed writes (memory limit reached or allocation failure)",
                d.name,
                count(d.io.failed_writes)
            ));
        }
    }
    Ok(Status {
        devices,
        zswap,
        warnings,
    })
}

fn row(out: &mut String, label: &str, value: impl AsRef<str>) {
    let _ = writeln!(out, "  {label:<22} {}", value.as_ref());
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// The text form.
pub fn render_text(st: &Status) -> String {
    let mut o = String::new();
    if st.devices.is_empty() {
        o.push_str("zram: no devices\n");
    }
    for d in &st.devices {
        let _ = writeln!(o, "{}: {}", d.name, device_role(d));
        if d.initialised {
            device_rows(&mut o, d);
        } else {
            uninitialised_rows(&mut o, d);
        }
        o.push('\n');
    }
    zswap_rows(&mut o, &st.zswap);
    for w in &st.warnings {
        let _ = writeln!(o, "\nwarning: {w}");
    }
    o
}

/// What the device is used for, from /proc/swaps and /proc/mounts.
fn device_role(d: &ZramDevice) -> String {
    match (&d.swap, &d.mount) {
        (Some(s), _) => format!("swap, priority {}", s.priority),
        (_, Some(m)) => format!("mounted on {m}"),
        _ if d.initialised => "not in use (no swap, not mounted)".into(),
        _ => "uninitialised (no disksize set)".into(),
    }
}

/// A device without disksize: what the kernel offers for it.
fn uninitialised_rows(o: &mut String, d: &ZramDevice) {
    row(
        o,
        "algorithm",
        d.algorithm.clone().unwrap_or_else(|| "-".into()),
    );
    row(o, "kernel offers", d.offered.join(", "));
    row(
        o,
        "recompression",
        if d.has_multi_comp() {
            "supported"
        } else {
            "not in this kernel (CONFIG_ZRAM_MULTI_COMP)"
        },
    );
    row(
        o,
        attr::WRITEBACK,
        if d.has_writeback() {
            "supported"
        } else {
            "not in this kernel (CONFIG_ZRAM_WRITEBACK)"
        },
    );
}

/// An initialised device: data, memory, algorithms, backing device, swap and I/O.
fn device_rows(o: &mut String, d: &ZramDevice) {
    data_rows(o, d);
    memory_rows(o, &d.mm);
    algorithm_rows(o, d);
    backing_dev_rows(o, d);
    if let Some(s) = &d.swap {
        row(
            o,
            "swap in use",
            format!("{} of {}", bytes(s.used), bytes(s.size)),
        );
    }
    row(
        o,
        "I/O",
        format!(
            "{} failed reads, {} failed writes, {} pages freed by swap/discard",
            count(d.io.failed_reads),
            count(d.io.failed_writes),
            count(d.io.notify_free)
        ),
    );
}

/// Capacity and what is stored (mm_stat orig_data_size, same_pages, huge_pages; bd_stat).
fn data_rows(o: &mut String, d: &ZramDevice) {
    let m = &d.mm;
    let pages = m.orig_data_size / 4096;
    row(
        o,
        "capacity",
        format!("{} of uncompressed data (disksize)", bytes(d.disksize)),
    );
    row(
        o,
        "data stored now",
        format!(
            "{} in {} pages ({} of capacity)",
            bytes(m.orig_data_size),
            count(pages),
            pct(m.orig_data_size, d.disksize)
        ),
    );
    row(
        o,
        "  same-filled pages",
        format!(
            "{} (e.g. all zeros; stored without memory)",
            count(m.same_pages)
        ),
    );
    row(
        o,
        "  huge pages",
        format!(
            "{} (did not compress, stored whole); {} since reset",
            count(m.huge_pages),
            count(m.huge_pages_since)
        ),
    );
    if let Some(bd) = d.bd {
        if bd.bd_count > 0 {
            row(
                o,
                "  written back",
                format!("{} on the backing device", bytes(bd.bd_count * 4096)),
            );
        }
    }
}

/// Compressed size and RAM (mm_stat compr_data_size, mem_used_total, mem_used_max, mem_limit).
fn memory_rows(o: &mut String, m: &MmStat) {
    row(
        o,
        "compressed size",
        format!("{} (ratio {})", bytes(m.compr_data_size), ratio(m.ratio())),
    );
    row(
        o,
        "RAM used now",
        format!(
            "{} incl. allocator overhead (effective ratio {})",
            bytes(m.mem_used_total),
            ratio(m.effective_ratio())
        ),
    );
    row(
        o,
        "RAM used at peak",
        format!(
            "{} (highest since reset; not current usage)",
            bytes(m.mem_used_max)
        ),
    );
    row(o, "RAM saved", bytes(m.saved()));
    row(
        o,
        "memory limit",
        if m.mem_limit == 0 {
            "none".into()
        } else {
            bytes(m.mem_limit)
        },
    );
}

/// comp_algorithm and recomp_algorithm.
fn algorithm_rows(o: &mut String, d: &ZramDevice) {
    let mut algo = d.algorithm.clone().unwrap_or_else(|| "-".into());
    match &d.recompression {
        None => {}
        Some(r) if r.is_empty() => algo.push_str("; recompression: none configured"),
        Some(r) => {
            let list: Vec<String> = r
                .iter()
                .map(|(p, a)| format!("{a} (priority {p})"))
                .collect();
            let _ = write!(algo, "; recompression: {}", list.join(", "));
        }
    }
    row(o, "algorithm", algo);
    if d.recompression.is_none() {
        row(
            o,
            "recompression",
            "not in this kernel (CONFIG_ZRAM_MULTI_COMP)",
        );
    }
}

/// backing_dev, bd_stat and the writeback_limit budget.
fn backing_dev_rows(o: &mut String, d: &ZramDevice) {
    match (&d.backing_dev, d.bd) {
        (None, _) => row(
            o,
            "backing device",
            "not in this kernel (CONFIG_ZRAM_WRITEBACK)",
        ),
        (Some(None), _) => row(o, "backing device", "none"),
        (Some(Some(b)), bd) => {
            let bd = bd.unwrap_or_default();
            row(
                o,
                "backing device",
                format!(
                    "{b}: {} in use, {} read back, {} written in total",
                    bytes(bd.bd_count * 4096),
                    bytes(bd.bd_reads * 4096),
                    bytes(bd.bd_writes * 4096)
                ),
            );
            if let Some(l) = d.writeback_limit {
                row(o, "writeback budget left", bytes(l * 4096));
            }
        }
    }
}

/// zswap: parameters, pool, traffic and refusals.
fn zswap_rows(o: &mut String, z: &Zswap) {
    if !z.present {
        o.push_str("zswap: not in this kernel\n");
        return;
    }
    let _ = writeln!(
        o,
        "zswap: {}",
        if z.enabled() { "enabled" } else { "disabled" }
    );
    zswap_param_rows(o, z);
    zswap_pool_rows(o, z);
    zswap_counter_rows(o, z);
}

/// /sys/module/zswap/parameters: compressor, max_pool_percent, accept_threshold_percent,
/// shrinker_enabled.
fn zswap_param_rows(o: &mut String, z: &Zswap) {
    let comp = z.param("compressor").unwrap_or("-");
    row(o, "compressor", comp);
    let limit = match (z.param("max_pool_percent"), z.pool_limit()) {
        (Some(p), Some(b)) => format!("{p}% of RAM = {}", bytes(b)),
        (Some(p), None) => format!("{p}% of RAM"),
        _ => "-".into(),
    };
    row(o, "pool limit", limit);
    if let Some(a) = z.param("accept_threshold_percent") {
        row(
            o,
            "after the limit",
            format!("accepts pages again below {a}% of the limit"),
        );
    }
    if let Some(s) = z.param("shrinker_enabled") {
        row(
            o,
            "shrinker",
            if s == "Y" {
                "on (writes cold pages to disk under pressure)"
            } else {
                "off"
            },
        );
    }
}

/// Data held and pool size (debugfs stored_pages and pool_total_size, else /proc/meminfo).
fn zswap_pool_rows(o: &mut String, z: &Zswap) {
    let pool = z.counter("pool_total_size").or(z.pool_bytes);
    let stored = z
        .stored_bytes
        .or(z.counter("stored_pages").map(|p| p * 4096));
    row(
        o,
        "data stored now",
        format!(
            "{}{}",
            stored.map(bytes).unwrap_or_else(|| "-".into()),
            z.counter("stored_pages")
                .map(|p| format!(" in {} pages", count(p)))
                .unwrap_or_default()
        ),
    );
    let r = match (stored, pool) {
        (Some(s), Some(p)) if p > 0 => Some(s as f64 / p as f64),
        _ => None,
    };
    row(
        o,
        "RAM used now",
        format!(
            "{} (effective ratio {})",
            pool.map(bytes).unwrap_or_else(|| "-".into()),
            ratio(r)
        ),
    );
}

/// /proc/vmstat zswpin, zswpout, zswpwb and the debugfs reject_* counters.
fn zswap_counter_rows(o: &mut String, z: &Zswap) {
    if let (Some(i), Some(out)) = (z.zswpin, z.zswpout) {
        row(
            o,
            "pages in / out",
            format!(
                "{} loaded back, {} stored, {} written back to disk (since boot)",
                count(i),
                count(out),
                z.zswpwb.map(count).unwrap_or_else(|| "-".into())
            ),
        );
    }
    if !z.debugfs.is_empty() {
        let rejects: u64 = z
            .debugfs
            .iter()
            .filter(|(k, _)| k.starts_with("reject_"))
            .map(|(_, v)| v)
            .sum();
        row(
            o,
            "refused stores",
            format!(
                "{} (poor compression {}, pool limit hit {})",
                count(rejects),
                count(z.counter("reject_compress_poor").unwrap_or(0)),
                count(z.counter("pool_limit_hit").unwrap_or(0))
            ),
        );
    } else if let Some(n) = &z.debugfs_note {
        row(o, "debug counters", n);
    }
}

// ---------------------------------------------------------------------------------------------
// The JSON form: the field order of these structs is the key order of the document.

/// The whole document of `zmem status --json`.
#[derive(Serialize)]
struct StatusJson<'a> {
    zram: Vec<DeviceJson<'a>>,
    zswap: ZswapJson<'a>,
    warnings: &'a [String],
}

/// One zram device: raw numbers in bytes, plus derived values.
#[derive(Serialize)]
struct DeviceJson<'a> {
    name: &'a str,
    initialised: bool,
    disksize_bytes: u64,
    algorithm: Option<&'a str>,
    algorithms_offered: &'a [String],
    /// `null` when the kernel has no recomp_algorithm (CONFIG_ZRAM_MULTI_COMP).
    recompression: Option<Vec<RecompJson<'a>>>,
    multi_comp: bool,
    writeback: bool,
    backing_dev: Option<&'a str>,
    orig_data_bytes: u64,
    compr_data_bytes: u64,
    mem_used_bytes: u64,
    mem_used_peak_bytes: u64,
    /// `null` when mem_limit is 0 (no limit).
    mem_limit_bytes: Option<u64>,
    same_pages: u64,
    huge_pages: u64,
    huge_pages_since: u64,
    pages_compacted: u64,
    ratio: Option<f64>,
    effective_ratio: Option<f64>,
    saved_bytes: u64,
    failed_reads: u64,
    failed_writes: u64,
    notify_free: u64,
    bd_stat: Option<BdStatJson>,
    writeback_limit_bytes: Option<u64>,
    swap: Option<SwapJson>,
    mount_point: Option<&'a str>,
}

/// A recompression algorithm and its priority (recomp_algorithm).
#[derive(Serialize)]
struct RecompJson<'a> {
    priority: u32,
    algorithm: &'a str,
}

/// bd_stat in bytes (the kernel counts 4 KiB blocks).
#[derive(Serialize)]
struct BdStatJson {
    count_bytes: u64,
    reads_bytes: u64,
    writes_bytes: u64,
}

/// The device's /proc/swaps entry.
#[derive(Serialize)]
struct SwapJson {
    priority: i32,
    size_bytes: u64,
    used_bytes: u64,
}

/// zswap: parameters and counters as read.
#[derive(Serialize)]
struct ZswapJson<'a> {
    present: bool,
    enabled: bool,
    parameters: Pairs<'a, String>,
    pool_limit_bytes: Option<u64>,
    pool_bytes: Option<u64>,
    stored_bytes: Option<u64>,
    debugfs: Pairs<'a, u64>,
    debugfs_note: Option<&'a str>,
    zswpin: Option<u64>,
    zswpout: Option<u64>,
    zswpwb: Option<u64>,
}

/// (name, value) pairs written as one JSON object, in their order.
struct Pairs<'a, V>(&'a [(String, V)]);

impl<V: Serialize> Serialize for Pairs<'_, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

impl<'a> DeviceJson<'a> {
    fn new(d: &'a ZramDevice) -> DeviceJson<'a> {
        let m = &d.mm;
        DeviceJson {
            name: &d.name,
            initialised: d.initialised,
            disksize_bytes: d.disksize,
            algorithm: d.algorithm.as_deref(),
            algorithms_offered: &d.offered,
            recompression: d.recompression.as_ref().map(|r| {
                r.iter()
                    .map(|(priority, a)| RecompJson {
                        priority: *priority,
                        algorithm: a,
                    })
                    .collect()
            }),
            multi_comp: d.has_multi_comp(),
            writeback: d.has_writeback(),
            backing_dev: d.backing_dev.as_ref().and_then(|b| b.as_deref()),
            orig_data_bytes: m.orig_data_size,
            compr_data_bytes: m.compr_data_size,
            mem_used_bytes: m.mem_used_total,
            mem_used_peak_bytes: m.mem_used_max,
            mem_limit_bytes: (m.mem_limit != 0).then_some(m.mem_limit),
            same_pages: m.same_pages,
            huge_pages: m.huge_pages,
            huge_pages_since: m.huge_pages_since,
            pages_compacted: m.pages_compacted,
            ratio: m.ratio(),
            effective_ratio: m.effective_ratio(),
            saved_bytes: m.saved(),
            failed_reads: d.io.failed_reads,
            failed_writes: d.io.failed_writes,
            notify_free: d.io.notify_free,
            bd_stat: d.bd.map(|b| BdStatJson {
                count_bytes: b.bd_count * 4096,
                reads_bytes: b.bd_reads * 4096,
                writes_bytes: b.bd_writes * 4096,
            }),
            writeback_limit_bytes: d.writeback_limit.map(|l| l * 4096),
            swap: d.swap.as_ref().map(|s| SwapJson {
                priority: s.priority,
                size_bytes: s.size,
                used_bytes: s.used,
            }),
            mount_point: d.mount.as_deref(),
        }
    }
}

impl<'a> ZswapJson<'a> {
    fn new(z: &'a Zswap) -> ZswapJson<'a> {
        ZswapJson {
            present: z.present,
            enabled: z.enabled(),
            parameters: Pairs(&z.params),
            pool_limit_bytes: z.pool_limit(),
            pool_bytes: z.pool_bytes,
            stored_bytes: z.stored_bytes,
            debugfs: Pairs(&z.debugfs),
            debugfs_note: z.debugfs_note.as_deref(),
            zswpin: z.zswpin,
            zswpout: z.zswpout,
            zswpwb: z.zswpwb,
        }
    }
}

/// The JSON form (raw numbers in bytes, plus derived values), pretty-printed.
pub fn to_json(st: &Status) -> String {
    let doc = StatusJson {
        zram: st.devices.iter().map(DeviceJson::new).collect(),
        zswap: ZswapJson::new(&st.zswap),
        warnings: &st.warnings,
    };
    serde_json::to_string_pretty(&doc).expect("the status document serialises")
}
