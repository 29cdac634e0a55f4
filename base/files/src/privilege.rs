//! Whether this process has the privileges the kernel-facing commands and
//! tests need.

/// Whether this process's effective user is root (uid 0): what the kernel
/// checks for writes to /sys/block/zramN, swapon and cgroup limits.
pub fn euid_is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}
