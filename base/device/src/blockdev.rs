//! The public face every engine device shows: block I/O in bytes (aligned to
//! 512-byte sectors, as a block device sees them) and attributes by their
//! /sys/block/zramN names. zram devices and zswap's block view implement it;
//! the NBD server and the control socket use nothing else.

use zmem_kernel::{AttrError, Errno};

/// A block I/O that failed. Stored data is never damaged by a failed I/O.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IoError {
    /// Beyond the end of the device (or the device is not initialised).
    #[error("I/O at byte {offset}+{len} is beyond the device size {size}")]
    OutOfRange { offset: u64, len: u64, size: u64 },
    /// Not aligned to 512-byte sectors.
    #[error("I/O at byte {offset}+{len} is not aligned to 512-byte sectors")]
    Unaligned { offset: u64, len: u64 },
    /// mem_limit reached or allocator full. The kernel's zram ends such a bio
    /// with BLK_STS_IOERR (its users see EIO, as for every zram failure); zmem
    /// answers ENOSPC on purpose (serving/nbd/src/failures.rs, docs/serve.md "Errors").
    #[error("no space: {0}")]
    NoSpace(String),
    /// A failure reading or writing data (corrupt object, backing file error).
    #[error("I/O error: {0}")]
    Io(String),
}

impl IoError {
    /// The errno zmem's clients see: EINVAL out of range or unaligned (as the
    /// NBD protocol asks), ENOSPC when full, EIO otherwise. (The kernel's zram
    /// answers EIO to every failure: a deliberate difference.)
    pub fn errno(&self) -> Errno {
        match self {
            IoError::OutOfRange { .. } | IoError::Unaligned { .. } => Errno::EINVAL,
            IoError::NoSpace(_) => Errno::ENOSPC,
            IoError::Io(_) => Errno::EIO,
        }
    }
}

/// A device that can be read and written like a block device and controlled
/// through sysfs-named attributes.
pub trait BlockDevice: Send + Sync {
    /// Size in bytes (0 while not initialised).
    fn size(&self) -> u64;
    /// Read `buf.len()` bytes at `offset`; both multiples of 512.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), IoError>;
    /// Write `data` at `offset`; both multiples of 512. Partial pages are
    /// read, modified and written back.
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), IoError>;
    /// Discard (TRIM) a range: whole pages inside it are freed and read back as zeros.
    fn discard(&self, offset: u64, len: u64) -> Result<(), IoError>;
    /// Make a range read back as zeros.
    fn write_zeroes(&self, offset: u64, len: u64) -> Result<(), IoError>;
    /// Make written data durable (a no-op for RAM; syncs a backing file).
    fn flush(&self) -> Result<(), IoError>;
    /// Read an attribute by its sysfs name; the text is what the kernel prints
    /// (including the trailing newline).
    fn attr_read(&self, name: &str) -> Result<String, AttrError>;
    /// Write an attribute by its sysfs name, with the kernel's syntax and errors.
    fn attr_write(&self, name: &str, value: &str) -> Result<(), AttrError>;
    /// Names of the readable attributes, for `zmem ctl TARGET`.
    fn attr_names(&self) -> Vec<&'static str>;
    /// Names of the attributes that can be written (write-only ones such as
    /// `reset` or `recompress` included), for the control socket's `list`.
    fn attr_writable(&self) -> Vec<&'static str> {
        Vec::new()
    }
}
