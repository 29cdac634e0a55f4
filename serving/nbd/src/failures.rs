//! Failed requests by kind, counted by the server and reported when it
//! stops (and, with `-v`, logged one by one with the device's reason).
//!
//! What a client is told differs from the kernel's zram on purpose
//! (docs/serve.md, "Errors"): `zram_bio_read`/`zram_bio_write` end every
//! failure with BLK_STS_IOERR, so a kernel zram user sees EIO whatever went
//! wrong; zmem answers ENOSPC at mem_limit (a client can tell "full" from
//! "broken", and qemu's `werror=enospc` pauses a guest instead of failing
//! it) and EINVAL beyond the end of the device, as the NBD protocol asks.

use std::sync::atomic::{AtomicU64, Ordering};

use zmem_device::IoError;

/// Counters, one per kind of failure.
#[derive(Debug, Default)]
pub struct Failures {
    invalid: AtomicU64,
    no_space: AtomicU64,
    io: AtomicU64,
}

/// A snapshot of [`Failures`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FailureCounts {
    /// Out of range or unaligned: answered EINVAL.
    pub invalid: u64,
    /// mem_limit or the allocator full: answered ENOSPC.
    pub no_space: u64,
    /// Corrupt data, backing device errors: answered EIO.
    pub io: u64,
}

impl Failures {
    pub fn count(&self, e: &IoError) {
        let c = match e {
            IoError::OutOfRange { .. } | IoError::Unaligned { .. } => &self.invalid,
            IoError::NoSpace(_) => &self.no_space,
            IoError::Io(_) => &self.io,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> FailureCounts {
        FailureCounts {
            invalid: self.invalid.load(Ordering::Relaxed),
            no_space: self.no_space.load(Ordering::Relaxed),
            io: self.io.load(Ordering::Relaxed),
        }
    }
}

impl std::fmt::Display for FailureCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "failed requests: {} no space (answered ENOSPC), {} out of range or unaligned (EINVAL), {} I/O errors (EIO); the kernel's zram answers EIO to all",
            self.no_space, self.invalid, self.io
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_kind() {
        let f = Failures::default();
        f.count(&IoError::NoSpace("mem_limit".into()));
        f.count(&IoError::NoSpace("mem_limit".into()));
        f.count(&IoError::Unaligned { offset: 1, len: 1 });
        f.count(&IoError::Io("corrupt".into()));
        let c = f.snapshot();
        assert_eq!((c.no_space, c.invalid, c.io), (2, 1, 1));
        assert!(c.to_string().contains("2 no space"));
    }
}
