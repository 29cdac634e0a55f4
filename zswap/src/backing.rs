//! The backing store: a file of PAGE_SIZE slots addressed by swap offset (the
//! swap device zswap sits in front of). Tracks which slots hold data.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::PAGE_SIZE;

/// A backing-file failure.
#[derive(Debug, thiserror::Error)]
pub enum BackingError {
    #[error("cannot create backing file {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("backing file {path} is full (writing slot {offset}): {source}")]
    Full {
        path: PathBuf,
        offset: u64,
        source: std::io::Error,
    },
    #[error("backing file {path}: I/O error at slot {offset}: {source}")]
    Io {
        path: PathBuf,
        offset: u64,
        source: std::io::Error,
    },
    #[error("swap offset {offset} is beyond the backing store's {slots} slots")]
    OutOfRange { offset: u64, slots: u64 },
}

/// A file of `slots` pages.
#[derive(Debug)]
pub struct Backing {
    file: File,
    path: PathBuf,
    slots: u64,
    /// Slots whose contents are valid data (written and not freed).
    used: Mutex<HashSet<u64>>,
}

impl Backing {
    /// Opens (creating if needed) `path` as a backing store of `slots` pages.
    /// A regular file is truncated and sized sparsely to `slots × PAGE_SIZE`;
    /// a device (e.g. a block device, or /dev/full in tests) is used as is.
    pub fn create(path: impl AsRef<Path>, slots: u64) -> Result<Backing, BackingError> {
        let path = path.as_ref().to_path_buf();
        let err = |source| BackingError::Create {
            path: path.clone(),
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(err)?;
        let meta = file.metadata().map_err(err)?;
        if meta.is_file() {
            file.set_len(0).map_err(err)?;
            file.set_len(slots * PAGE_SIZE as u64).map_err(err)?;
        }
        Ok(Backing {
            file,
            path,
            slots,
            used: Mutex::new(HashSet::new()),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn slots(&self) -> u64 {
        self.slots
    }

    fn check(&self, offset: u64) -> Result<(), BackingError> {
        if offset >= self.slots {
            return Err(BackingError::OutOfRange {
                offset,
                slots: self.slots,
            });
        }
        Ok(())
    }

    /// Whether slot `offset` holds data.
    pub fn contains(&self, offset: u64) -> bool {
        self.used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&offset)
    }

    /// Number of slots holding data.
    pub fn used_slots(&self) -> u64 {
        self.used.lock().unwrap_or_else(|e| e.into_inner()).len() as u64
    }

    /// Writes one page to slot `offset`; the slot holds data afterwards.
    pub fn write(&self, offset: u64, page: &[u8]) -> Result<(), BackingError> {
        self.check(offset)?;
        debug_assert_eq!(page.len(), PAGE_SIZE);
        self.file
            .write_all_at(page, offset * PAGE_SIZE as u64)
            .map_err(|source| {
                if source.raw_os_error() == Some(28)
                    || source.kind() == std::io::ErrorKind::WriteZero
                {
                    BackingError::Full {
                        path: self.path.clone(),
                        offset,
                        source,
                    }
                } else {
                    BackingError::Io {
                        path: self.path.clone(),
                        offset,
                        source,
                    }
                }
            })?;
        self.used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(offset);
        Ok(())
    }

    /// Reads slot `offset` into `page`.
    pub fn read(&self, offset: u64, page: &mut [u8]) -> Result<(), BackingError> {
        self.check(offset)?;
        self.file
            .read_exact_at(page, offset * PAGE_SIZE as u64)
            .map_err(|source| BackingError::Io {
                path: self.path.clone(),
                offset,
                source,
            })
    }

    /// Frees slot `offset` (its data is no longer needed); returns whether it held data.
    pub fn free(&self, offset: u64) -> bool {
        self.used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&offset)
    }

    /// Flushes written slots to stable storage (`fdatasync`).
    pub fn sync(&self) -> Result<(), BackingError> {
        self.file.sync_data().map_err(|source| BackingError::Io {
            path: self.path.clone(),
            offset: 0,
            source,
        })
    }
}
