//! The backing device of writeback (zram_drv.c: `backing_dev_store`): a regular file or a block
//! device opened read-write, block size = PAGE_SIZE, `nr_pages = size /
//! PAGE_SIZE`, and its free-block bitmap. As in ≤6.18 block 0 is never used
//! (handle 0 means "empty"), so a store of `nr_pages` has `nr_pages − 1`
//! usable blocks; allocation takes the first free block from 1 on, as the
//! kernel's `find_next_zero_bit`. Block I/O is `pread`/`pwrite` at
//! `block × PAGE_SIZE`, with an optional fault-injection hook.

use std::fs::File;
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::sync::{Arc, Mutex};

use zmem_kernel::{AttrError, Errno};

/// Which backing-file operation a [`BackingFault`] hook is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BdOp {
    Read,
    Write,
}

/// A fault-injection hook for the backing file: called before every block
/// read and write with the operation and block index; returning `true` makes
/// that I/O fail with an I/O error (as a failing disk would). For tests and
/// failure drills; see [`crate::ZramBuilder::backing_fault`].
pub type BackingFault = Arc<dyn Fn(BdOp, u64) -> bool + Send + Sync>;

/// The free-block bitmap and a hint: no word before `first` has a free bit,
/// so the search for the first free block (the kernel's order) starts there.
struct Bitmap {
    words: Vec<u64>,
    first: usize,
}

/// The backing device: file, size in blocks, free-block bitmap.
pub struct Backing {
    /// The path as `backing_dev` shows it.
    path: String,
    file: File,
    nr_pages: u64,
    /// One bit per block; bit set = in use. Bit 0 is never handed out.
    bitmap: Mutex<Bitmap>,
    fault: Option<BackingFault>,
}

impl std::fmt::Debug for Backing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backing")
            .field("path", &self.path)
            .field("nr_pages", &self.nr_pages)
            .finish()
    }
}

fn open_err(path: &str, e: std::io::Error) -> AttrError {
    let errno = e
        .raw_os_error()
        .and_then(Errno::from_code)
        .unwrap_or(Errno::EINVAL);
    AttrError::new(errno, format!("cannot open backing device '{path}': {e}"))
}

impl Backing {
    /// Open `path` read-write (`backing_dev_store` after the initstate
    /// check). A block device or (zmem extension) a regular file; anything
    /// else is ENOTBLK. Fewer than 2 pages is EINVAL (the kernel refuses 0;
    /// with block 0 reserved, 1 page would hold nothing either).
    pub(crate) fn open(
        path: &str,
        fault: Option<BackingFault>,
        page_size: usize,
    ) -> Result<Backing, AttrError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| open_err(path, e))?;
        let ft = file.metadata().map_err(|e| open_err(path, e))?.file_type();
        if !ft.is_file() && !ft.is_block_device() {
            return Err(AttrError::new(
                Errno::ENOTBLK,
                format!("backing device '{path}' is neither a block device nor a regular file"),
            ));
        }
        // A block device's metadata length is 0: ask for its end instead.
        let bytes = {
            use std::io::{Seek, SeekFrom};
            (&file)
                .seek(SeekFrom::End(0))
                .map_err(|e| open_err(path, e))?
        };
        let nr_pages = bytes / page_size as u64;
        if nr_pages < 2 {
            return Err(AttrError::new(
                Errno::EINVAL,
                format!(
                    "backing device '{path}' has {bytes} bytes; at least 2 pages ({}) are needed",
                    2 * page_size
                ),
            ));
        }
        let words = usize::try_from(nr_pages.div_ceil(64)).map_err(|_| {
            AttrError::new(
                Errno::ENOMEM,
                format!("backing device '{path}' is too large"),
            )
        })?;
        let mut bitmap = Vec::new();
        bitmap.try_reserve_exact(words).map_err(|_| {
            AttrError::new(
                Errno::ENOMEM,
                format!("cannot allocate a bitmap of {nr_pages} blocks"),
            )
        })?;
        bitmap.resize(words, 0u64);
        // The kernel's file_path(): the resolved absolute path.
        let shown = std::fs::canonicalize(path)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| path.to_string());
        Ok(Backing {
            path: shown,
            file,
            nr_pages,
            bitmap: Mutex::new(Bitmap {
                words: bitmap,
                first: 0,
            }),
            fault,
        })
    }

    /// The path `backing_dev` shows.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Blocks of the backing device (block 0 included, never used).
    pub fn nr_pages(&self) -> u64 {
        self.nr_pages
    }

    fn bitmap(&self) -> std::sync::MutexGuard<'_, Bitmap> {
        self.bitmap.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `alloc_block_bdev`: the first free block from 1 on, or None when full.
    pub(crate) fn alloc(&self) -> Option<u64> {
        let mut bm = self.bitmap();
        let start = bm.first;
        for w in start..bm.words.len() {
            // Block 0 is never used: treat its bit as taken.
            let taken = if w == 0 { bm.words[w] | 1 } else { bm.words[w] };
            if taken == u64::MAX {
                bm.first = w + 1;
                continue;
            }
            let bit = (!taken).trailing_zeros() as u64;
            let blk = w as u64 * 64 + bit;
            if blk >= self.nr_pages {
                return None;
            }
            bm.words[w] |= 1 << bit;
            return Some(blk);
        }
        None
    }

    /// `free_block_bdev`: clear the block's bit; false if it was not in use.
    pub(crate) fn free(&self, blk: u64) -> bool {
        if blk == 0 || blk >= self.nr_pages {
            return false;
        }
        let mut bm = self.bitmap();
        let (w, b) = ((blk / 64) as usize, blk % 64);
        let was = bm.words[w] & (1 << b) != 0;
        bm.words[w] &= !(1 << b);
        bm.first = bm.first.min(w);
        was
    }

    fn check(&self, op: BdOp, blk: u64) -> std::io::Result<()> {
        if blk == 0 || blk >= self.nr_pages {
            return Err(std::io::Error::other(format!(
                "block {blk} is outside 1..{}",
                self.nr_pages
            )));
        }
        if self.fault.as_ref().is_some_and(|f| f(op, blk)) {
            return Err(std::io::Error::other(format!(
                "injected {op:?} fault at block {blk}"
            )));
        }
        Ok(())
    }

    /// Write one page to block `blk`.
    pub(crate) fn write_block(&self, blk: u64, page: &[u8]) -> std::io::Result<()> {
        self.check(BdOp::Write, blk)?;
        self.file.write_all_at(page, blk * page.len() as u64)
    }

    /// Read block `blk` into one page.
    pub(crate) fn read_block(&self, blk: u64, page: &mut [u8]) -> std::io::Result<()> {
        self.check(BdOp::Read, blk)?;
        self.file.read_exact_at(page, blk * page.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PAGE_SIZE;

    #[test]
    fn blocks_first_free_from_1() {
        let p = std::env::temp_dir().join(format!("zmem-wb-bitmap-{}", std::process::id()));
        std::fs::File::create(&p)
            .unwrap()
            .set_len(200 * PAGE_SIZE as u64)
            .unwrap();
        let b = Backing::open(p.to_str().unwrap(), None, PAGE_SIZE).unwrap();
        std::fs::remove_file(&p).unwrap();
        let got: Vec<u64> = std::iter::from_fn(|| b.alloc()).collect();
        assert_eq!(
            got,
            (1..200).collect::<Vec<_>>(),
            "block 0 never, then in order, 199 usable"
        );
        assert!(b.free(130) && b.free(5) && b.free(70));
        assert!(
            !b.free(5) && !b.free(0) && !b.free(200),
            "not in use / out of range"
        );
        assert_eq!(
            (b.alloc(), b.alloc(), b.alloc(), b.alloc()),
            (Some(5), Some(70), Some(130), None)
        );
    }
}
