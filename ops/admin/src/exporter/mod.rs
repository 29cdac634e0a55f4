//! `zmem exporter`: Prometheus text-format metrics for the kernel's zram and zswap and for
//! running `zmem serve` devices (found through their control sockets).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use zmem_kernel::attr;

mod http;
pub use http::{serve, HttpLimits};

use crate::zram;
use crate::zswap::{self, Debugfs, Zswap};
use zmem_device::AttrTarget;
use zmem_host::Sys;
use zmem_host::{find_ctl_sockets, SysfsDevice};
use zmem_kernel::{parse_comp_algorithm, BdStat, IoStat, MmStat};

#[derive(Default)]
struct Family {
    help: String,
    kind: &'static str,
    samples: Vec<(String, f64)>,
}

/// Metric families in a stable order, each with HELP and TYPE once.
#[derive(Default)]
pub struct Metrics {
    families: BTreeMap<String, Family>,
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Metrics {
    pub fn add(
        &mut self,
        name: &str,
        kind: &'static str,
        help: &str,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        let f = self
            .families
            .entry(name.to_string())
            .or_insert_with(|| Family {
                help: help.to_string(),
                kind,
                ..Default::default()
            });
        let l = if labels.is_empty() {
            String::new()
        } else {
            format!(
                "{{{}}}",
                labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                    .collect::<Vec<_>>()
                    .join(",")
            )
        };
        f.samples.push((l, value));
    }
    /// Add every sample of `other`, family by family.
    pub fn extend(&mut self, other: Metrics) {
        for (name, f) in other.families {
            let mine = self.families.entry(name).or_insert_with(|| Family {
                help: f.help,
                kind: f.kind,
                ..Default::default()
            });
            mine.samples.extend(f.samples);
        }
    }
    pub fn render(&self) -> String {
        let mut o = String::new();
        for (name, f) in &self.families {
            let _ = writeln!(o, "# HELP {name} {}", f.help);
            let _ = writeln!(o, "# TYPE {name} {}", f.kind);
            for (l, v) in &f.samples {
                if v.is_finite() {
                    let _ = writeln!(o, "{name}{l} {v}");
                } else {
                    let _ = writeln!(o, "{name}{l} NaN");
                }
            }
        }
        o
    }
}

/// A metric read from one parsed stat: name, TYPE, HELP and the value.
type StatMetric<T> = (&'static str, &'static str, &'static str, fn(&T) -> f64);

/// mm_stat columns (Documentation/admin-guide/blockdev/zram.rst) and what follows from them.
const MM_STAT_METRICS: [StatMetric<MmStat>; 12] = [
    (
        "zmem_zram_orig_data_bytes",
        "gauge",
        "Data stored, uncompressed (mm_stat orig_data_size).",
        |s| s.orig_data_size as f64,
    ),
    (
        "zmem_zram_compr_data_bytes",
        "gauge",
        "Compressed size of the stored data (mm_stat compr_data_size).",
        |s| s.compr_data_size as f64,
    ),
    (
        "zmem_zram_mem_used_bytes",
        "gauge",
        "RAM used now incl. allocator overhead (mm_stat mem_used_total).",
        |s| s.mem_used_total as f64,
    ),
    (
        "zmem_zram_mem_used_peak_bytes",
        "gauge",
        "Highest RAM used since reset (mm_stat mem_used_max).",
        |s| s.mem_used_max as f64,
    ),
    (
        "zmem_zram_mem_limit_bytes",
        "gauge",
        "Memory limit; 0 means none (mm_stat mem_limit).",
        |s| s.mem_limit as f64,
    ),
    (
        "zmem_zram_same_pages",
        "gauge",
        "Same-filled pages stored without memory (mm_stat same_pages).",
        |s| s.same_pages as f64,
    ),
    (
        "zmem_zram_huge_pages",
        "gauge",
        "Pages stored uncompressed (mm_stat huge_pages).",
        |s| s.huge_pages as f64,
    ),
    (
        "zmem_zram_huge_pages_stored_total",
        "counter",
        "Huge stores since reset (mm_stat huge_pages_since).",
        |s| s.huge_pages_since as f64,
    ),
    (
        "zmem_zram_compacted_pages_total",
        "counter",
        "Pages freed by compaction (mm_stat pages_compacted).",
        |s| s.pages_compacted as f64,
    ),
    (
        "zmem_zram_compression_ratio",
        "gauge",
        "orig_data_size / compr_data_size (NaN when empty).",
        |s| s.ratio().unwrap_or(f64::NAN),
    ),
    (
        "zmem_zram_effective_ratio",
        "gauge",
        "orig_data_size / mem_used_total (NaN when empty).",
        |s| s.effective_ratio().unwrap_or(f64::NAN),
    ),
    (
        "zmem_zram_saved_bytes",
        "gauge",
        "RAM saved: orig_data_size - mem_used_total.",
        |s| s.saved() as f64,
    ),
];

/// io_stat columns.
const IO_STAT_METRICS: [StatMetric<IoStat>; 4] = [
    (
        "zmem_zram_failed_reads_total",
        "counter",
        "Failed reads (io_stat).",
        |s| s.failed_reads as f64,
    ),
    (
        "zmem_zram_failed_writes_total",
        "counter",
        "Failed writes (io_stat).",
        |s| s.failed_writes as f64,
    ),
    (
        "zmem_zram_invalid_io_total",
        "counter",
        "Invalid I/O (io_stat; always 0 on current kernels).",
        |s| s.invalid_io as f64,
    ),
    (
        "zmem_zram_notify_free_total",
        "counter",
        "Pages freed by swap-slot-free notifications and discards (io_stat).",
        |s| s.notify_free as f64,
    ),
];

/// bd_stat columns, in bytes (the kernel counts 4 KiB blocks).
const BD_STAT_METRICS: [StatMetric<BdStat>; 3] = [
    (
        "zmem_zram_backing_used_bytes",
        "gauge",
        "Backing device space holding written-back pages (bd_stat bd_count).",
        |s| (s.bd_count * 4096) as f64,
    ),
    (
        "zmem_zram_backing_read_bytes_total",
        "counter",
        "Bytes read back from the backing device (bd_stat bd_reads).",
        |s| (s.bd_reads * 4096) as f64,
    ),
    (
        "zmem_zram_backing_written_bytes_total",
        "counter",
        "Bytes written to the backing device (bd_stat bd_writes).",
        |s| (s.bd_writes * 4096) as f64,
    ),
];

/// Add one sample of each metric of a table.
fn add_all<T>(m: &mut Metrics, table: &[StatMetric<T>], labels: &[(&str, &str)], stat: &T) {
    for (name, kind, help, value) in table {
        m.add(name, kind, help, labels, value(stat));
    }
}

/// Metrics of one attribute target (kernel device or served device).
fn target_metrics(m: &mut Metrics, t: &dyn AttrTarget, source: &str) -> Result<(), String> {
    let dev = t.label();
    let mm_s = t
        .read_attr(attr::MM_STAT)
        .map_err(|e| format!("{dev}: {e}"))?;
    let mm = MmStat::parse(&mm_s).ok_or_else(|| format!("{dev}: bad mm_stat {mm_s:?}"))?;
    let algo = t
        .read_attr(attr::COMP_ALGORITHM)
        .ok()
        .and_then(|s| parse_comp_algorithm(&s).1)
        .unwrap_or_default();
    let disksize: f64 = t
        .read_attr(attr::DISKSIZE)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0.0);
    // Every series carries the same labels (device, source); the algorithm
    // is on one info series to join when wanted:
    // `zmem_zram_compr_data_bytes * on(device, source) group_left(algorithm) zmem_zram_info`.
    let d = [("device", dev.as_str()), ("source", source)];
    m.add(
        "zmem_zram_info",
        "gauge",
        "Always 1; the device's compression algorithm as a label.",
        &[
            ("device", dev.as_str()),
            ("source", source),
            ("algorithm", algo.as_str()),
        ],
        1.0,
    );
    m.add(
        "zmem_zram_disksize_bytes",
        "gauge",
        "Uncompressed capacity of the device (disksize).",
        &d,
        disksize,
    );
    add_all(m, &MM_STAT_METRICS, &d, &mm);
    if let Some(io) = t
        .read_attr(attr::IO_STAT)
        .ok()
        .and_then(|s| IoStat::parse(&s))
    {
        add_all(m, &IO_STAT_METRICS, &d, &io);
    }
    if let Some(bd) = t
        .read_attr(attr::BD_STAT)
        .ok()
        .and_then(|s| BdStat::parse(&s))
    {
        add_all(m, &BD_STAT_METRICS, &d, &bd);
    }
    Ok(())
}

/// How long one scrape waits for all served devices together (they are
/// asked at once): a stopped or slow `zmem serve` costs at most this, never
/// Prometheus's 10 s scrape timeout, and the kernel's series are kept.
pub const SERVED_DEADLINE: std::time::Duration = std::time::Duration::from_millis(1500);

/// Metrics of the served devices, each asked on its own thread (every
/// request bounded by `deadline`); those not answered whole within
/// `deadline` are left out and counted as errors (their threads end on
/// their own, each request being bounded).
fn served_metrics(
    sockets: Vec<zmem_device::CtlClient>,
    deadline: std::time::Duration,
) -> (Metrics, u64) {
    let end = std::time::Instant::now() + deadline;
    let (tx, rx) = std::sync::mpsc::channel();
    let n = sockets.len();
    for c in sockets {
        let tx2 = tx.clone();
        let c = c.with_timeout(deadline);
        let spawned = std::thread::Builder::new()
            .name("zmem-scrape".into())
            .spawn(move || {
                let mut dm = Metrics::default();
                let ok = target_metrics(&mut dm, &c, "serve").is_ok();
                let _ = tx2.send(ok.then_some(dm));
            });
        if spawned.is_err() {
            let _ = tx.send(None);
        }
    }
    drop(tx);
    let (mut m, mut answered) = (Metrics::default(), 0u64);
    let mut errors = 0u64;
    while let Some(left) = end.checked_duration_since(std::time::Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(Some(dm)) => m.extend(dm),
            Ok(None) => errors += 1,
            Err(_) => break,
        }
        answered += 1;
    }
    (m, errors + (n as u64 - answered))
}

/// All metrics now. `ctl_dir` is where `zmem serve` control sockets are looked for.
pub fn collect(sys: &Sys, ctl_dir: &str) -> String {
    let mut m = Metrics::default();
    let mut errors = 0u64;
    for name in zram::list_devices(sys).unwrap_or_default() {
        let mut dm = Metrics::default();
        let read = target_metrics(&mut dm, &SysfsDevice::new(sys, &name), "kernel");
        // Removed while it was read (hot_remove by another tool): not an
        // error, and what was read of it is partial (as `zram::read_all`).
        if !zram::present(sys, &name) {
            continue;
        }
        m.extend(dm);
        if read.is_err() {
            errors += 1;
        }
    }
    let (served, failed) = served_metrics(find_ctl_sockets(sys, ctl_dir), SERVED_DEADLINE);
    m.extend(served);
    errors += failed;
    match zswap::read(sys, Debugfs::ReadIfMounted) {
        Ok(z) if z.present => zswap_metrics(&mut m, &z),
        Ok(_) => {}
        Err(_) => errors += 1,
    }
    m.add(
        "zmem_exporter_read_errors",
        "gauge",
        "Devices or sources that could not be read in this scrape.",
        &[],
        errors as f64,
    );
    m.render()
}

/// zswap's parameters, pool (/proc/meminfo), debugfs counters and traffic (/proc/vmstat).
fn zswap_metrics(m: &mut Metrics, z: &Zswap) {
    let comp = z.param("compressor").unwrap_or("").to_string();
    let lc = [("compressor", comp.as_str())];
    m.add(
        "zmem_zswap_enabled",
        "gauge",
        "1 when zswap accepts new pages.",
        &lc,
        if z.enabled() { 1.0 } else { 0.0 },
    );
    add_present(
        m,
        &[
            (
                "zmem_zswap_pool_limit_bytes",
                "gauge",
                "zswap pool limit (max_pool_percent of MemTotal).",
                z.pool_limit(),
            ),
            (
                "zmem_zswap_pool_bytes",
                "gauge",
                "zswap compressed pool size (/proc/meminfo Zswap).",
                z.pool_bytes,
            ),
            (
                "zmem_zswap_stored_bytes",
                "gauge",
                "Original data held by zswap (/proc/meminfo Zswapped).",
                z.stored_bytes,
            ),
        ],
    );
    for (k, v) in &z.debugfs {
        let (name, kind, help) = debugfs_family(k);
        m.add(&name, kind, help, &[], *v as f64);
    }
    add_present(
        m,
        &[
            (
                "zmem_zswap_loads_total",
                "counter",
                "Pages loaded back from zswap (/proc/vmstat zswpin).",
                z.zswpin,
            ),
            (
                "zmem_zswap_stores_total",
                "counter",
                "Pages stored into zswap (/proc/vmstat zswpout).",
                z.zswpout,
            ),
            (
                "zmem_zswap_written_back_total",
                "counter",
                "Pages written back from zswap to swap (/proc/vmstat zswpwb).",
                z.zswpwb,
            ),
        ],
    );
}

/// Unlabelled metrics whose value the kernel may not give (name, TYPE, HELP, value).
fn add_present(m: &mut Metrics, metrics: &[(&str, &'static str, &str, Option<u64>)]) {
    for &(name, kind, help, value) in metrics {
        if let Some(v) = value {
            m.add(name, kind, help, &[], v as f64);
        }
    }
}

/// The metric for a counter in /sys/kernel/debug/zswap: name, TYPE and HELP.
fn debugfs_family(k: &str) -> (String, &'static str, &'static str) {
    match k {
        "pool_total_size" => (
            "zmem_zswap_debugfs_pool_total_bytes".to_string(),
            "gauge",
            "zswap pool size (debugfs pool_total_size).",
        ),
        "stored_pages" => (
            "zmem_zswap_stored_pages".to_string(),
            "gauge",
            "Pages stored in zswap (debugfs).",
        ),
        "stored_incompressible_pages" => (
            "zmem_zswap_stored_incompressible_pages".to_string(),
            "gauge",
            "Pages stored raw in zswap (debugfs).",
        ),
        k => (
            format!("zmem_zswap_{k}_total"),
            "counter",
            "zswap debugfs counter of the same name.",
        ),
    }
}
