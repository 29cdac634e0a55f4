//! The swap checks of `zmem doctor`: zswap in front of zram, no swap under memory pressure,
//! zram's priority against disk swap, vm.page-cluster and vm.swappiness with zram swap.

use super::{Finding, Machine, Severity};
use zmem_host::{read_knob, Sys, PAGE_CLUSTER, SWAPPINESS, ZRAM_PRIORITY, ZSWAP_PARAMS};

/// PSI `some` averages (percent of wall time stalled on memory) above which a machine without
/// swap counts as under memory pressure: 10% over the last minute or 5% over five minutes.
pub const PSI_SOME_AVG60: f64 = 10.0;
pub const PSI_SOME_AVG300: f64 = 5.0;

/// The sysctl.d file the fixes name.
const SYSCTL_FILE: &str = "/etc/sysctl.d/99-zram.conf";

/// zswap enabled while swap goes to zram: every page is compressed by zswap first, and zram
/// only gets what zswap rejects or writes back (zram-generator #156).
pub fn zswap_over_zram(sys: &Sys, m: &Machine) -> Option<Finding> {
    let path = format!("{ZSWAP_PARAMS}/enabled");
    let enabled = read_knob(sys, &path).ok()?;
    if !(enabled == "Y" || enabled == "1") || m.zram_swaps().is_empty() {
        return None;
    }
    let comp = read_knob(sys, &format!("{ZSWAP_PARAMS}/compressor")).unwrap_or_else(|_| "?".into());
    Some(
        Finding::new(
            "zswap-over-zram",
            Severity::Warning,
            format!(
                "{path} = {enabled} ({comp}) while swap goes to {}: pages are compressed twice, zswap first (zram-generator #156)",
                m.zram_swap_names()
            ),
        )
        .fix(format!("echo N > {path}"))
        .permanent("kernel command line zswap.enabled=0 (or `[zswap] enabled = N` in zmem.conf, then `zmem persist zmem.conf`)"),
    )
}

/// No swap at all while the machine stalls on memory (PSI above the thresholds).
pub fn no_swap_pressure(m: &Machine) -> Option<Finding> {
    let psi = m.psi?;
    let (a60, a300) = (psi.some.avg60, psi.some.avg300);
    if !m.swaps.is_empty() || (a60 < PSI_SOME_AVG60 && a300 < PSI_SOME_AVG300) {
        return None;
    }
    Some(
        Finding::new(
            "no-swap-pressure",
            Severity::Warning,
            format!(
                "no swap in /proc/swaps while /proc/pressure/memory some avg60={a60:.2} avg300={a300:.2} \
                 (thresholds {PSI_SOME_AVG60}/{PSI_SOME_AVG300}%): anonymous memory cannot be reclaimed"
            ),
        )
        .fix("printf '[zram0]\\nzram-size = ram / 2\\n' > /etc/zmem/zmem.conf && zmem apply /etc/zmem/zmem.conf")
        .permanent("zmem persist /etc/zmem/zmem.conf (zram-generator.conf for boot)"),
    )
}

/// The highest swap priority swapon(2) takes (`SWAP_FLAG_PRIO_MASK`, include/linux/swap.h).
const SWAP_PRIORITY_MAX: i32 = 0x7fff;

/// A zram swap whose priority is not above every disk swap's: the kernel fills the higher
/// priority first, so disk would be used while zram still has room.
pub fn priority(m: &Machine) -> Vec<Finding> {
    let Some(disk) = m.disk_swaps().into_iter().max_by_key(|s| s.priority) else {
        return Vec::new();
    };
    m.zram_swaps()
        .into_iter()
        .filter(|z| z.priority <= disk.priority)
        .map(|z| {
            let name = z.device.trim_start_matches("/dev/");
            let want = ZRAM_PRIORITY.max(disk.priority + 1).min(SWAP_PRIORITY_MAX);
            // A disk swap at the highest priority the kernel takes: zram cannot go above it, so
            // the disk swap comes down one (swapon(2) refuses SWAP_FLAG_PRIO_MASK + 1).
            let (fix, permanent) = if disk.priority >= SWAP_PRIORITY_MAX {
                (
                    format!(
                        "swapoff {disk} && swapon -p {low} {disk} && swapoff {d} && swapon -p {want} {d}",
                        disk = disk.device,
                        low = SWAP_PRIORITY_MAX - 1,
                        d = z.device
                    ),
                    format!(
                        "/etc/fstab: `pri={}` for {}; zram-generator.conf: `swap-priority = {want}` in [{name}]",
                        SWAP_PRIORITY_MAX - 1,
                        disk.device
                    ),
                )
            } else {
                (
                    format!("swapoff {d} && swapon -p {want} {d}", d = z.device),
                    format!("zram-generator.conf: `swap-priority = {want}` in [{name}]"),
                )
            };
            Finding::new(
                "zram-priority",
                Severity::Warning,
                format!(
                    "{} has swap priority {} but {} has {}: the kernel swaps to disk before zram is full",
                    z.device, z.priority, disk.device, disk.priority
                ),
            )
            .fix(fix)
            .permanent(permanent)
        })
        .collect()
}

/// A sysctl as a number, when readable.
fn sysctl_num(sys: &Sys, path: &str) -> Option<i64> {
    read_knob(sys, path).ok()?.trim().parse().ok()
}

/// vm.page-cluster not 0 with zram swap: every swap-in reads 2^N pages ahead, each one
/// decompressed, where zram has no seek to save.
pub fn page_cluster(sys: &Sys, m: &Machine) -> Option<Finding> {
    let v = sysctl_num(sys, PAGE_CLUSTER)?;
    if v == 0 || m.zram_swaps().is_empty() {
        return None;
    }
    Some(
        Finding::new(
            "page-cluster",
            Severity::Warning,
            format!(
                "vm.page-cluster = {v} while swap goes to {}: each swap-in reads {} pages ahead and decompresses them all",
                m.zram_swap_names(),
                1u64 << v.clamp(0, 30)
            ),
        )
        .fix("sysctl -w vm.page-cluster=0")
        .permanent(format!("{SYSCTL_FILE}: vm.page-cluster = 0")),
    )
}

/// vm.swappiness below 100 with zram swap: anonymous pages are reclaimed less eagerly than
/// file pages although zram swap-in costs no disk I/O.
pub fn swappiness(sys: &Sys, m: &Machine) -> Option<Finding> {
    let v = sysctl_num(sys, SWAPPINESS)?;
    if v >= 100 || m.zram_swaps().is_empty() {
        return None;
    }
    Some(
        Finding::new(
            "swappiness",
            Severity::Warning,
            format!(
                "vm.swappiness = {v} (below 100) while swap goes to {}: the kernel prefers dropping page cache to using zram",
                m.zram_swap_names()
            ),
        )
        .fix("sysctl -w vm.swappiness=100")
        .permanent(format!("{SYSCTL_FILE}: vm.swappiness = 100 (up to 200 favours zram further)")),
    )
}
