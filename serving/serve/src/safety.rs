//! Safe as swap: whether the serving process may back a swap device, and
//! making it so before any thread starts.
//!
//! A server backing swap deadlocks when, to finish a swap-out, it needs
//! (a) one of its own pages that was swapped out to the device it serves, or
//! (b) memory whose reclaim waits on writeback to that device. (a) is closed
//! by `mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)`: a page that has
//! ever held data is never swapped out. (b) is closed by
//! `prctl(PR_SET_IO_FLUSHER)`: the task's allocations (page faults
//! included) are `GFP_NOIO`, so reclaim on its behalf never starts or waits
//! on I/O; mlockall alone does not give that. The flag is the task's and
//! copied to threads it creates later, so it is set before the device is
//! built: the maintenance worker, the pool's `zmem-populate` threads and
//! every connection's threads inherit it.
//!
//! Why on fault and not a preallocated pool: the slot table is a sparse
//! anonymous mapping (32 bytes a slot: 2 GiB for 256 GiB) and the pool grows
//! in chunks; locking them whole would cost that up front. A page not yet
//! touched holds nothing to swap back in; touching it later is a `GFP_NOIO`
//! allocation, which can fail under extreme pressure but not wait on this
//! device, as the kernel's own zram allocates zsmalloc pages with
//! `GFP_NOIO` in its write path. `--mem-limit` bounds how far the pool grows.
//! What mlockall needs is checked up front (CAP_IPC_LOCK or an unlimited
//! RLIMIT_MEMLOCK): with a finite limit a mapping made later (a pool chunk,
//! a thread's stack) would fail under MCL_FUTURE instead.

use std::io;

/// What `zmem serve` was asked about swap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SwapUse {
    /// Neither flag: swap-safe when the privileges allow, else a block
    /// device only, said on stderr.
    #[default]
    Auto,
    /// `--swap`: refuse to start unless swap-safe.
    Swap,
    /// `--block-only`: neither IO_FLUSHER nor locked memory.
    BlockOnly,
}

/// What the server is, with the line stderr gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Safety {
    pub swap_safe: bool,
    pub line: String,
}

/// The verdict from what was asked and what each call gave (`Err`: why it
/// is missing). `Err` from here is the refusal.
fn decide(
    want: SwapUse,
    flusher: Result<(), String>,
    lock: Result<(), String>,
    mem_limit: Option<u64>,
) -> Result<Safety, String> {
    if want == SwapUse::BlockOnly {
        return Ok(Safety {
            swap_safe: false,
            line: "block-only (--block-only): not swap-safe, do not swapon this device".into(),
        });
    }
    let missing: Vec<String> = [flusher.err(), lock.err()].into_iter().flatten().collect();
    if missing.is_empty() {
        let bound = match mem_limit {
            Some(b) => format!("the pool grows to at most mem_limit {b} bytes"),
            None => "no --mem-limit: the pool grows with what is stored".into(),
        };
        return Ok(Safety {
            swap_safe: true,
            line: format!("swap-safe: PR_SET_IO_FLUSHER set (allocations never wait on I/O), memory locked (mlockall on fault); {bound}"),
        });
    }
    let missing = missing.join("; ");
    match want {
        SwapUse::Swap => Err(format!("--swap: not swap-safe: {missing}. Run as root with CAP_SYS_RESOURCE and CAP_IPC_LOCK, or serve with --block-only when the device will not be swapped on (qemu images, nbdcopy, a filesystem)")),
        _ => Ok(Safety {
            swap_safe: false,
            line: format!("not swap-safe ({missing}): serving as a block device only, do not swapon it (--swap refuses to start instead; --block-only says this is meant)"),
        }),
    }
}

/// Why PR_SET_IO_FLUSHER failed, in words.
fn flusher_missing(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::PermissionDenied => {
            "PR_SET_IO_FLUSHER needs CAP_SYS_RESOURCE, which this process lacks".into()
        }
        io::ErrorKind::InvalidInput => {
            "PR_SET_IO_FLUSHER is not in this kernel (Linux 5.6 added it)".into()
        }
        _ => format!("PR_SET_IO_FLUSHER: {e}"),
    }
}

/// Whether mlockall can lock everything the server will map, in words when not.
fn lock_precheck(cap_ipc_lock: bool, limit: io::Result<Option<u64>>) -> Result<(), String> {
    match limit {
        _ if cap_ipc_lock => Ok(()),
        Ok(None) => Ok(()),
        Ok(Some(n)) => Err(format!("mlockall needs CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK (it is {} KiB: a pool chunk or a thread's stack mapped later could not be locked)", n / 1024)),
        Err(e) => Err(format!("mlockall: reading RLIMIT_MEMLOCK: {e}")),
    }
}

/// Make this process swap-safe as asked, before any thread is started.
/// In `Auto`, a process that cannot have both has neither (a block device
/// only, the same whichever call failed).
pub(crate) fn make_safe(want: SwapUse, mem_limit: Option<u64>) -> Result<Safety, String> {
    if want == SwapUse::BlockOnly {
        return decide(want, Ok(()), Ok(()), mem_limit);
    }
    let flusher = zmem_host::set_io_flusher(true).map_err(|e| flusher_missing(&e));
    let mut lock = lock_precheck(
        zmem_host::has_capability(zmem_host::CAP_IPC_LOCK),
        zmem_host::memlock_limit(),
    );
    if flusher.is_ok() && lock.is_ok() {
        lock = zmem_host::lock_all_on_fault().map_err(|e| format!("mlockall: {e}"));
    }
    if flusher.is_ok() && lock.is_err() {
        // Neither, rather than half: undone before anything else runs.
        let _ = zmem_host::set_io_flusher(false);
    }
    decide(want, flusher, lock, mem_limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPERM: &str = "PR_SET_IO_FLUSHER needs CAP_SYS_RESOURCE, which this process lacks";

    #[test]
    fn both_give_swap_safe_in_auto_and_swap() {
        for want in [SwapUse::Auto, SwapUse::Swap] {
            let s = decide(want, Ok(()), Ok(()), Some(1 << 30)).unwrap();
            assert!(s.swap_safe);
            assert!(s.line.starts_with("swap-safe: "), "{}", s.line);
            assert!(s.line.contains("mem_limit 1073741824"), "{}", s.line);
        }
        let s = decide(SwapUse::Auto, Ok(()), Ok(()), None).unwrap();
        assert!(s.line.contains("no --mem-limit"), "{}", s.line);
    }

    #[test]
    fn swap_refuses_naming_each_missing_part() {
        let lock = lock_precheck(false, Ok(Some(8 << 20))).unwrap_err();
        assert!(lock.contains("RLIMIT_MEMLOCK (it is 8192 KiB"), "{lock}");
        let e = decide(SwapUse::Swap, Err(EPERM.into()), Err(lock.clone()), None).unwrap_err();
        assert!(e.starts_with("--swap: not swap-safe: "), "{e}");
        assert!(
            e.contains("CAP_SYS_RESOURCE") && e.contains("RLIMIT_MEMLOCK"),
            "{e}"
        );
        assert!(e.contains("--block-only"), "{e}");
        let e = decide(SwapUse::Swap, Ok(()), Err(lock), None).unwrap_err();
        assert!(
            !e.contains("PR_SET_IO_FLUSHER needs"),
            "only what is missing: {e}"
        );
        let e = decide(SwapUse::Swap, Err(EPERM.into()), Ok(()), None).unwrap_err();
        assert!(e.contains(EPERM) && !e.contains("mlockall needs"), "{e}");
    }

    #[test]
    fn auto_without_privilege_serves_a_block_device_and_says_so() {
        let s = decide(SwapUse::Auto, Err(EPERM.into()), Ok(()), None).unwrap();
        assert!(!s.swap_safe);
        assert!(
            s.line.starts_with("not swap-safe (PR_SET_IO_FLUSHER needs"),
            "{}",
            s.line
        );
        assert!(s.line.contains("do not swapon"), "{}", s.line);
    }

    #[test]
    fn block_only_is_never_swap_safe_and_tries_nothing() {
        let s = decide(SwapUse::BlockOnly, Ok(()), Ok(()), None).unwrap();
        assert!(!s.swap_safe);
        assert!(
            s.line.starts_with("block-only (--block-only)"),
            "{}",
            s.line
        );
    }

    #[test]
    fn mlock_precheck() {
        assert_eq!(lock_precheck(true, Ok(Some(65536))), Ok(()));
        assert_eq!(lock_precheck(false, Ok(None)), Ok(()));
        assert!(lock_precheck(false, Err(io::Error::other("no"))).is_err());
    }

    #[test]
    fn flusher_errors_in_words() {
        let perm = io::Error::from(io::ErrorKind::PermissionDenied);
        assert_eq!(flusher_missing(&perm), EPERM);
        let old = io::Error::from(io::ErrorKind::InvalidInput);
        assert!(flusher_missing(&old).contains("Linux 5.6"));
    }
}
