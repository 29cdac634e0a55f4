//! The block-device view: zswap over a backing file behind zram's
//! [`BlockDevice`] face, so `zmem serve --mode zswap` can serve it.
//!
//! A write is a swap-out of each page (zeromap, pool, or the backing file
//! when zswap refuses it); a read is a non-exclusive swap-in (the entry stays
//! where it is on the LRU). Pages written back by the shrink worker read
//! back from the file. Partial-page writes read-modify-write the page.

use std::path::Path;
use std::sync::Mutex;

use zmem_device::{BlockDevice, IoError};

use zmem_kernel::AttrError;

use crate::backing::{Backing, BackingError};
use crate::engine::{Zswap, ZswapBuilder, ZswapError};
use crate::PAGE_SIZE;

const SECTOR: u64 = 512;
const STRIPES: usize = 64;

/// zswap as a block device of `size` bytes over a backing file.
pub struct ZswapDevice {
    zswap: Zswap,
    size: u64,
    /// Per-page write locks (striped by offset) so read-modify-write and
    /// concurrent writes of one page are serialised.
    stripes: Vec<Mutex<()>>,
}

fn io(e: ZswapError) -> IoError {
    match e {
        ZswapError::Backing(BackingError::Full { .. }) => IoError::NoSpace(e.to_string()),
        other => IoError::Io(other.to_string()),
    }
}

impl ZswapDevice {
    /// A device of `size` bytes (rounded down to whole pages) backed by the
    /// file at `path` (created; a regular file is sized sparsely), with the
    /// engine configured by `builder`. A file that cannot be created is an
    /// error naming the path; a bad parameter is the setter's error.
    /// An existing file is used as [`Backing::open`] allows (refused when it
    /// holds data or is too small, unless `force`).
    pub fn create(
        path: impl AsRef<Path>,
        size: u64,
        builder: ZswapBuilder,
        force: bool,
    ) -> Result<ZswapDevice, String> {
        let pages = size / PAGE_SIZE as u64;
        if pages == 0 {
            return Err(format!("device size {size} is smaller than one page"));
        }
        let backing = Backing::open(path, pages, force).map_err(|e| e.to_string())?;
        let zswap = builder.build(backing).map_err(|e| e.to_string())?;
        Ok(ZswapDevice::new(zswap))
    }

    /// Wraps an engine; the size is the backing store's slots.
    pub fn new(zswap: Zswap) -> ZswapDevice {
        let size = zswap.backing().slots() * PAGE_SIZE as u64;
        ZswapDevice {
            zswap,
            size,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }

    pub fn zswap(&self) -> &Zswap {
        &self.zswap
    }

    fn check(&self, offset: u64, len: u64) -> Result<(), IoError> {
        if !offset.is_multiple_of(SECTOR) || !len.is_multiple_of(SECTOR) {
            return Err(IoError::Unaligned { offset, len });
        }
        if offset.checked_add(len).is_none_or(|end| end > self.size) {
            return Err(IoError::OutOfRange {
                offset,
                len,
                size: self.size,
            });
        }
        Ok(())
    }

    fn stripe(&self, page: u64) -> std::sync::MutexGuard<'_, ()> {
        self.stripes[page as usize % STRIPES]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Applies `f` to each page range of [offset, offset+len): (page index, offset in page, length, position in buffer).
    fn pages(
        offset: u64,
        len: u64,
        mut f: impl FnMut(u64, usize, usize, usize) -> Result<(), IoError>,
    ) -> Result<(), IoError> {
        let mut pos = 0u64;
        while pos < len {
            let abs = offset + pos;
            let page = abs / PAGE_SIZE as u64;
            let in_page = (abs % PAGE_SIZE as u64) as usize;
            let n = ((PAGE_SIZE - in_page) as u64).min(len - pos) as usize;
            f(page, in_page, n, pos as usize)?;
            pos += n as u64;
        }
        Ok(())
    }

    fn write_page(&self, page: u64, in_page: usize, data: &[u8]) -> Result<(), IoError> {
        let _g = self.stripe(page);
        if data.len() == PAGE_SIZE {
            return self.zswap.swap_out(page, data).map(|_| ()).map_err(io);
        }
        let mut buf = vec![0u8; PAGE_SIZE];
        self.zswap.swap_in(page, &mut buf, false).map_err(io)?;
        buf[in_page..in_page + data.len()].copy_from_slice(data);
        self.zswap.swap_out(page, &buf).map(|_| ()).map_err(io)
    }
}

impl BlockDevice for ZswapDevice {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        self.check(offset, buf.len() as u64)?;
        let mut page_buf = vec![0u8; PAGE_SIZE];
        Self::pages(offset, buf.len() as u64, |page, in_page, n, pos| {
            self.zswap.swap_in(page, &mut page_buf, false).map_err(io)?;
            buf[pos..pos + n].copy_from_slice(&page_buf[in_page..in_page + n]);
            Ok(())
        })
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        self.check(offset, data.len() as u64)?;
        Self::pages(offset, data.len() as u64, |page, in_page, n, pos| {
            self.write_page(page, in_page, &data[pos..pos + n])
        })
    }

    fn discard(&self, offset: u64, len: u64) -> Result<(), IoError> {
        self.check(offset, len)?;
        // Only whole pages are freed (as zram's discard); partial pages keep their data.
        Self::pages(offset, len, |page, _in_page, n, _| {
            if n == PAGE_SIZE {
                let _g = self.stripe(page);
                self.zswap.swap_free(page);
            }
            Ok(())
        })
    }

    fn write_zeroes(&self, offset: u64, len: u64) -> Result<(), IoError> {
        self.check(offset, len)?;
        let zero = vec![0u8; PAGE_SIZE];
        Self::pages(offset, len, |page, in_page, n, _| {
            self.write_page(page, in_page, &zero[..n])
        })
    }

    /// Pool pages are RAM (as zram, nothing to flush); the backing file is fdatasync'ed.
    fn flush(&self) -> Result<(), IoError> {
        self.zswap
            .backing()
            .sync()
            .map_err(|e| IoError::Io(e.to_string()))
    }

    fn attr_read(&self, name: &str) -> Result<String, AttrError> {
        self.zswap.attr_read(name)
    }

    fn attr_write(&self, name: &str, value: &str) -> Result<(), AttrError> {
        self.zswap.attr_write(name, value)
    }

    fn attr_names(&self) -> Vec<&'static str> {
        self.zswap.attr_names()
    }
}
