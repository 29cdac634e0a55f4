//! Settings and the removals the undo actions are made of, all through one
//! [`Sys`]: how a setting (zswap's module parameters, the vm sysctls) reads
//! and compares, whether a swap area is active, swapoff until it is gone, and
//! removing the zram devices and cgroups zmem created. These functions record
//! nothing; [`Action`](crate::Action) and the [`Guard`](crate::Guard) decide
//! what to call and when.

use std::io;
use std::time::{Duration, Instant};

use zmem_kernel::SwapEntry;

use crate::Sys;

/// zswap module parameters (mm/zswap.c `module_param_cb`).
pub const ZSWAP_PARAMS: &str = "/sys/module/zswap/parameters";
/// vm.swappiness.
pub const SWAPPINESS: &str = "/proc/sys/vm/swappiness";
/// vm.page-cluster.
pub const PAGE_CLUSTER: &str = "/proc/sys/vm/page-cluster";

/// How long a cgroup may take to empty after its processes were killed.
const CGROUP_RMDIR_TIMEOUT: Duration = Duration::from_secs(20);

/// Read a one-line kernel setting without its trailing newline.
pub fn read_knob(sys: &Sys, abs: &str) -> io::Result<String> {
    sys.read(abs)
}

/// Settings compare loosely: the kernel prints `Y`/`N` for booleans
/// (kernel/params.c `param_get_bool`) but accepts `1`/`0` too.
pub fn knob_equal(a: &str, b: &str) -> bool {
    let norm = |s: &str| match s.trim() {
        "1" | "y" | "Y" => "Y".to_string(),
        "0" | "n" | "N" => "N".to_string(),
        o => o.to_string(),
    };
    norm(a) == norm(b)
}

/// The current entry of a selection file like `lzo [lz4] zstd` (the
/// bracketed one), or the whole text when there are no brackets.
pub fn selected(s: &str) -> String {
    if let (Some(a), Some(b)) = (s.find('['), s.find(']')) {
        if a < b {
            return s[a + 1..b].to_string();
        }
    }
    s.to_string()
}

/// The active swap areas (`/proc/swaps`, mm/swapfile.c `swap_show`).
pub fn active_swaps(sys: &Sys) -> io::Result<Vec<SwapEntry>> {
    sys.swaps()
}

/// Whether `path` (a kernel path) is an active swap area.
pub fn is_active(sys: &Sys, path: &str) -> bool {
    active_swaps(sys)
        .map(|v| v.iter().any(|a| a.device == path))
        .unwrap_or(false)
}

/// swapoff, retried: it can fail transiently (EBUSY/ENOMEM while
/// mm/swapfile.c `try_to_unuse` brings the pages back). Done once the area
/// is no longer in `/proc/swaps`.
pub fn swapoff_settled(sys: &Sys, path: &str) -> io::Result<()> {
    let mut last = Ok(());
    for attempt in 0..5 {
        last = sys.swapoff(path);
        if last.is_ok() || !is_active(sys, path) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200 << attempt));
    }
    last
}

/// Reset and hot-remove `zram{id}` (Documentation/admin-guide/blockdev/zram.rst,
/// "hot_remove"). `Ok(false)` when the device was gone already.
pub fn remove_zram(sys: &Sys, id: u32) -> io::Result<bool> {
    let dir = format!("/sys/block/zram{id}");
    if !sys.exists(&dir) {
        return Ok(false);
    }
    // Reset frees the memory even if the remove below is refused; both are
    // retried while the device is busy (crate::teardown).
    crate::teardown::retry_busy(sys, id, "hot_remove", || {
        let _ = sys.write(&format!("{dir}/reset"), "1");
        sys.hot_remove(id)
    })
    .map_err(|e| io::Error::new(e.kind(), format!("hot_remove zram{id}: {e}")))?;
    Ok(true)
}

/// The processes in the cgroup at `abs` (its `cgroup.procs`).
pub fn cgroup_pids(sys: &Sys, abs: &str) -> Vec<i32> {
    sys.read(&format!("{abs}/cgroup.procs"))
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Kill everything left in the cgroup at `abs` and remove it, retrying while
/// the killed processes exit (rmdir fails with EBUSY until the cgroup is
/// empty, Documentation/admin-guide/cgroup-v2.rst). `Ok(false)` when it was
/// gone already. Only call it on a cgroup a trial created.
pub fn remove_cgroup(sys: &Sys, abs: &str) -> io::Result<bool> {
    let deadline = Instant::now() + CGROUP_RMDIR_TIMEOUT;
    loop {
        for pid in cgroup_pids(sys, abs) {
            // SAFETY: kill has no memory-safety preconditions; the pids were
            // read from a cgroup a zmem trial created for its workload.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        match sys.remove_dir(abs) {
            Ok(()) => return Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) if Instant::now() >= deadline => {
                let left = cgroup_pids(sys, abs);
                return Err(io::Error::new(
                    e.kind(),
                    format!("rmdir {abs}: {e} (processes left: {left:?})"),
                ));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_kernel::proc::parse_swaps;

    #[test]
    fn parses_proc_swaps() {
        let t = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                 /dev/zram1                              partition\t1048572\t\t0\t\t100\n\
                 /var/tmp/my\\040swap                     file\t\t262140\t\t128\t\t-2\n";
        let v = parse_swaps(t);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].device, "/dev/zram1");
        assert_eq!(v[0].priority, 100);
        assert_eq!(v[1].device, "/var/tmp/my swap");
        assert_eq!(v[1].kind, "file");
        assert_eq!(v[1].used, 128 * 1024);
        assert_eq!(v[1].priority, -2);
        assert!(parse_swaps("Filename Type Size Used Priority\n").is_empty());
    }

    #[test]
    fn settings_compare_like_the_kernel_prints_them() {
        assert!(knob_equal("Y", "1") && knob_equal("N", "n") && !knob_equal("Y", "N"));
        assert_eq!(selected("lzo [lz4] zstd"), "lz4");
        assert_eq!(selected("60"), "60");
    }
}
