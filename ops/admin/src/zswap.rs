//! Reading the kernel's zswap: parameters, debugfs counters, /proc/meminfo and /proc/vmstat.

use std::io;

use zmem_host::Sys;

pub const PARAMS: &str = "/sys/module/zswap/parameters";
pub const DEBUGFS: &str = zmem_kernel::zswap::DEBUGFS_DIR;

/// Everything zmem reads about zswap.
#[derive(Debug, Clone, Default)]
pub struct Zswap {
    /// Whether the kernel has zswap at all (`/sys/module/zswap`).
    pub present: bool,
    /// All parameters as (name, value), sorted by name.
    pub params: Vec<(String, String)>,
    /// debugfs counters (name, value), empty when debugfs is not readable.
    pub debugfs: Vec<(String, u64)>,
    /// Why the debugfs counters are missing, when they are.
    pub debugfs_note: Option<String>,
    /// `/proc/meminfo` Zswap: compressed pool size in bytes.
    pub pool_bytes: Option<u64>,
    /// `/proc/meminfo` Zswapped: bytes of original data held.
    pub stored_bytes: Option<u64>,
    /// `/proc/vmstat` zswpin / zswpout / zswpwb (pages, cumulative).
    pub zswpin: Option<u64>,
    pub zswpout: Option<u64>,
    pub zswpwb: Option<u64>,
    /// MemTotal in bytes, for the pool limit.
    pub mem_total: Option<u64>,
}

impl Zswap {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn enabled(&self) -> bool {
        matches!(self.param("enabled"), Some("Y") | Some("y") | Some("1"))
    }
    pub fn counter(&self, name: &str) -> Option<u64> {
        self.debugfs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
    }
    /// Whether zswap holds anything now.
    pub fn holds_data(&self) -> bool {
        self.stored_bytes.unwrap_or(0) > 0 || self.counter("stored_pages").unwrap_or(0) > 0
    }
    /// Pool limit in bytes (max_pool_percent of MemTotal).
    pub fn pool_limit(&self) -> Option<u64> {
        let pct: u64 = self.param("max_pool_percent")?.parse().ok()?;
        Some(self.mem_total? / 100 * pct)
    }
}

/// How to treat debugfs when it is not mounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Debugfs {
    /// Read it if it is there.
    ReadIfMounted,
    /// Mount debugfs read-only at /sys/kernel/debug when it is not mounted
    /// (only on the real kernel, as root) and unmount it after reading.
    MountReadOnly,
}

pub fn read(sys: &Sys, debugfs: Debugfs) -> io::Result<Zswap> {
    let mut z = Zswap {
        present: sys.exists("/sys/module/zswap"),
        ..Default::default()
    };
    for name in sys.list(PARAMS)? {
        if let Some(v) = sys.read_opt(&format!("{PARAMS}/{name}"))? {
            z.params.push((name, v.trim().to_string()));
        }
    }
    let mut mounted_here = false;
    if z.present {
        if !sys.exists(DEBUGFS) && debugfs == Debugfs::MountReadOnly && !sys.is_fixture() {
            mounted_here = mount_debugfs_ro(sys);
        }
        if sys.exists(DEBUGFS) {
            for name in sys.list(DEBUGFS)? {
                match sys.read_opt(&format!("{DEBUGFS}/{name}")) {
                    Ok(Some(v)) => {
                        if let Ok(n) = v.trim().parse() {
                            z.debugfs.push((name, n));
                        }
                    }
                    Ok(None) => {}
                    Err(e) => {
                        z.debugfs_note = Some(format!("cannot read {DEBUGFS}: {e}"));
                        z.debugfs.clear();
                        break;
                    }
                }
            }
        } else {
            z.debugfs_note = Some(format!(
                "{DEBUGFS} not available (debugfs not mounted or not root)"
            ));
        }
    }
    if mounted_here {
        // Leave the system as found.
        let _ = sys.run(&["umount".into(), "/sys/kernel/debug".into()]);
    }
    let mi = sys.meminfo().unwrap_or_default();
    let get = |k: &str| mi.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
    z.pool_bytes = get("Zswap");
    z.stored_bytes = get("Zswapped");
    z.mem_total = get("MemTotal");
    let vm = sys.vmstat()?;
    let getv = |k: &str| vm.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
    z.zswpin = getv("zswpin");
    z.zswpout = getv("zswpout");
    z.zswpwb = getv("zswpwb");
    Ok(z)
}

/// Mount debugfs read-only at /sys/kernel/debug for one read; whether it was mounted.
fn mount_debugfs_ro(sys: &Sys) -> bool {
    // Only when debugfs is not mounted anywhere yet; read-only so nothing can be changed through it.
    if sys
        .mounts()
        .map(|m| m.iter().any(|(_, _, t)| t == "debugfs"))
        .unwrap_or(true)
    {
        return false;
    }
    sys.run(&[
        "mount".into(),
        "-t".into(),
        "debugfs".into(),
        "-o".into(),
        "ro,nosuid,nodev,noexec".into(),
        "debugfs".into(),
        "/sys/kernel/debug".into(),
    ])
    .is_ok()
}
