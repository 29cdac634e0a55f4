//! The system calls that make a process safe to serve the swap device it
//! backs: `prctl(PR_SET_IO_FLUSHER)` (its allocations never wait on I/O, so
//! never on its own device), `mlockall` (its pages are never swapped out, so
//! it never has to read itself back through itself), and what the kernel
//! asks of the caller for each (CAP_SYS_RESOURCE; CAP_IPC_LOCK or
//! RLIMIT_MEMLOCK). The decision what to do with them is zmem-serve's.

use std::io;

/// `PR_SET_IO_FLUSHER` and `PR_GET_IO_FLUSHER` (include/uapi/linux/prctl.h,
/// Linux 5.6); the libc crate does not name them.
const PR_SET_IO_FLUSHER: libc::c_int = 57;
const PR_GET_IO_FLUSHER: libc::c_int = 58;

/// Capabilities by their number (include/uapi/linux/capability.h).
pub const CAP_IPC_LOCK: u32 = 14;
pub const CAP_SYS_RESOURCE: u32 = 24;

/// Put the calling thread in the IO_FLUSHER state (`on`) or take it out: the
/// kernel sets PF_MEMALLOC_NOIO and PF_LOCAL_THROTTLE on the task, and
/// threads created afterwards inherit them (copy_process copies the flags),
/// so call it before any thread is started. EPERM without CAP_SYS_RESOURCE,
/// EINVAL before Linux 5.6.
pub fn set_io_flusher(on: bool) -> io::Result<()> {
    // SAFETY: prctl with integer arguments only; it reads and writes no
    // memory of ours.
    let r = unsafe { libc::prctl(PR_SET_IO_FLUSHER, libc::c_ulong::from(on), 0, 0, 0) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether the calling thread is in the IO_FLUSHER state (EPERM without
/// CAP_SYS_RESOURCE, as for setting it).
pub fn io_flusher() -> io::Result<bool> {
    // SAFETY: as in `set_io_flusher`.
    let r = unsafe { libc::prctl(PR_GET_IO_FLUSHER, 0, 0, 0, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r == 1)
}

/// `mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)`: every page of the
/// process, now and in mappings made later, is locked once it is touched and
/// then never swapped out; a mapping is not populated by being locked, so a
/// sparse mapping (a 256 GiB device's slot table) costs only the pages used.
pub fn lock_all_on_fault() -> io::Result<()> {
    // SAFETY: mlockall takes only flags and touches no Rust-visible memory.
    let r = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE | libc::MCL_ONFAULT) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether capability `cap` is in this process's effective set (the
/// `CapEff` line of /proc/self/status).
pub fn has_capability(cap: u32) -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| cap_eff(&s))
        .is_some_and(|set| cap < 64 && set >> cap & 1 == 1)
}

/// The `CapEff:` bit set of a /proc/PID/status text.
fn cap_eff(status: &str) -> Option<u64> {
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

/// RLIMIT_MEMLOCK's soft limit in bytes, `None` when unlimited.
pub fn memlock_limit() -> io::Result<Option<u64>> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `rlimit` into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_eff_reads_the_effective_set() {
        let status = "Name:\tzmem\nCapInh:\t0000000000000000\nCapEff:\t000001fffeffffff\n";
        let set = cap_eff(status).unwrap();
        assert_eq!(set >> CAP_IPC_LOCK & 1, 1);
        assert_eq!(
            set >> CAP_SYS_RESOURCE & 1,
            0,
            "bit 24 is clear in 0x1fffeffffff"
        );
        assert_eq!(cap_eff("Name:\tx\n"), None);
        assert_eq!(cap_eff("CapEff:\tnot-hex\n"), None);
    }

    #[test]
    fn io_flusher_is_set_only_with_cap_sys_resource() {
        // In a thread of its own: the state belongs to the thread that sets it.
        std::thread::spawn(|| match set_io_flusher(true) {
            Ok(()) => {
                assert!(has_capability(CAP_SYS_RESOURCE));
                assert_eq!(io_flusher().ok(), Some(true));
                set_io_flusher(false).unwrap();
                assert_eq!(io_flusher().ok(), Some(false), "taken back");
            }
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}");
                assert!(!has_capability(CAP_SYS_RESOURCE));
                let get = io_flusher().unwrap_err();
                assert_eq!(
                    get.raw_os_error(),
                    Some(libc::EPERM),
                    "reading it needs the capability too"
                );
            }
        })
        .join()
        .unwrap();
    }
}
