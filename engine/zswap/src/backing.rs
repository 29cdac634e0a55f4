//! The backing store: a file of PAGE_SIZE slots addressed by swap offset (the
//! swap device zswap sits in front of). Tracks which slots hold data.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
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
    #[error("backing file {path} {why}")]
    Refused { path: PathBuf, why: String },
    #[error("swap offset {offset} is beyond the backing store's {slots} slots")]
    OutOfRange { offset: u64, slots: u64 },
}

fn create_err(path: &Path, source: std::io::Error) -> BackingError {
    BackingError::Create {
        path: path.to_path_buf(),
        source,
    }
}

/// An existing file or device: checked, never truncated (see [`Backing::open`]).
fn open_existing(path: &Path, bytes: u64, force: bool) -> Result<File, BackingError> {
    let refused = |why: String| BackingError::Refused {
        path: path.to_path_buf(),
        why,
    };
    let ft = std::fs::metadata(path)
        .map_err(|e| create_err(path, e))?
        .file_type();
    if ft.is_fifo() || ft.is_dir() || ft.is_socket() {
        return Err(create_err(
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file or block device",
            ),
        ));
    }
    if ft.is_char_device() && !force {
        return Err(refused("is a character device".into()));
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| create_err(path, e))?;
    if ft.is_char_device() {
        return Ok(file);
    }
    let len = if ft.is_file() {
        file.metadata().map_err(|e| create_err(path, e))?.len()
    } else {
        use std::io::Seek;
        (&file)
            .seek(std::io::SeekFrom::End(0))
            .map_err(|e| create_err(path, e))?
    };
    if force {
        if ft.is_file() && len < bytes {
            file.set_len(bytes).map_err(|e| create_err(path, e))?;
        }
        return Ok(file);
    }
    if let Some(sig) = zmem_files::signature::probe(&file).map_err(|e| create_err(path, e))? {
        return Err(refused(format!(
            "holds {sig}; zmem would overwrite it: pass --force to use it anyway"
        )));
    }
    if len < bytes {
        return Err(refused(format!(
            "is too small: {len} bytes, the device needs {bytes}; pass --force to extend it"
        )));
    }
    Ok(file)
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
    /// A new backing store of `slots` pages at `path`, which must not exist
    /// yet, or an existing one that [`Backing::open`] accepts without `force`.
    pub fn create(path: impl AsRef<Path>, slots: u64) -> Result<Backing, BackingError> {
        Backing::open(path, slots, false)
    }

    /// Opens `path` as a backing store of `slots` pages without destroying
    /// anything zmem did not create:
    /// * a missing file is created, sparse, `slots × PAGE_SIZE` bytes;
    /// * an existing regular file or block device is used as is when it is
    ///   large enough and all zero (no filesystem, swap signature or data,
    ///   see [`zmem_files::signature`]); otherwise it is refused with the
    ///   reason, unless `force` (a file that is too small is then extended,
    ///   never truncated);
    /// * FIFOs, directories and sockets are always refused; character
    ///   devices (e.g. `/dev/full` in tests) only with `force`.
    pub fn open(path: impl AsRef<Path>, slots: u64, force: bool) -> Result<Backing, BackingError> {
        let path = path.as_ref().to_path_buf();
        let bytes = slots * PAGE_SIZE as u64;
        let created = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path);
        let file = match created {
            Ok(f) => {
                f.set_len(bytes).map_err(|e| create_err(&path, e))?;
                f
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                open_existing(&path, bytes, force)?
            }
            Err(e) => return Err(create_err(&path, e)),
        };
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
