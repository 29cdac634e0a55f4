//! Block I/O in bytes (512-byte sectors, as a block device sees them) on top
//! of the page paths, with read-modify-write of partial pages, and the
//! [`BlockDevice`] implementation.

use std::sync::atomic::Ordering::Relaxed;

use crate::device::{Meta, Zram};
use zmem_device::{BlockDevice, IoError};
use zmem_kernel::AttrError;

const SECTOR: u64 = 512;

fn check(meta: Option<&Meta>, offset: u64, len: u64) -> Result<&Meta, IoError> {
    if !offset.is_multiple_of(SECTOR) || !len.is_multiple_of(SECTOR) {
        return Err(IoError::Unaligned { offset, len });
    }
    let size = meta.map_or(0, |m| m.disksize);
    match meta {
        Some(m) if offset.checked_add(len).is_some_and(|end| end <= size) => Ok(m),
        _ => Err(IoError::OutOfRange { offset, len, size }),
    }
}

impl Meta {
    fn read_bytes(&self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        let page = self.page;
        let p = page as u64;
        let mut done = 0usize;
        while done < buf.len() {
            let pos = offset + done as u64;
            let index = (pos / p) as usize;
            let off = (pos % p) as usize;
            let n = (page - off).min(buf.len() - done);
            if n == page {
                self.read_page(index, &mut buf[done..done + page])?;
            } else {
                let mut bounce = vec![0u8; page];
                self.read_page(index, &mut bounce)?;
                buf[done..done + n].copy_from_slice(&bounce[off..off + n]);
            }
            done += n;
        }
        Ok(())
    }

    fn write_bytes(&self, offset: u64, data: &[u8], dev: &Zram) -> Result<(), IoError> {
        let page = self.page;
        let p = page as u64;
        let mut done = 0usize;
        while done < data.len() {
            let pos = offset + done as u64;
            let index = (pos / p) as usize;
            let off = (pos % p) as usize;
            let n = (page - off).min(data.len() - done);
            if n == page {
                let fast = dev.fast_path.use_fast(self, dev.limit_pages.load(Relaxed));
                self.write_page(index, &data[done..done + page], &dev.limit_pages, fast)?;
            } else {
                // Partial I/O: read the whole page, modify, write it back.
                let mut whole = vec![0u8; page];
                self.read_page(index, &mut whole)?;
                whole[off..off + n].copy_from_slice(&data[done..done + n]);
                let fast = dev.fast_path.use_fast(self, dev.limit_pages.load(Relaxed));
                self.write_page(index, &whole, &dev.limit_pages, fast)?;
            }
            done += n;
        }
        Ok(())
    }
}

impl Zram {
    /// Read one page by index (the in-process fast path).
    pub fn read_page(&self, index: usize, dst: &mut [u8]) -> Result<(), IoError> {
        let g = self.meta();
        let p = self.page_size() as u64;
        let m = check(g.as_deref(), index as u64 * p, p)?;
        if dst.len() != m.page {
            return Err(IoError::Unaligned {
                offset: index as u64 * p,
                len: dst.len() as u64,
            });
        }
        m.read_page(index, dst).inspect_err(|_| {
            m.stats.failed_reads.fetch_add(1, Relaxed);
        })
    }

    /// Write one page by index (with the fast algorithm when `fast_path`
    /// says so).
    pub fn write_page(&self, index: usize, page: &[u8]) -> Result<(), IoError> {
        self.write_page_with(index, page, None)
    }

    /// Write one page by index with the fast algorithm (`fast_algorithm`),
    /// whatever `fast_path` says; with the primary when the device has no
    /// fast algorithm.
    pub fn write_page_fast(&self, index: usize, page: &[u8]) -> Result<(), IoError> {
        self.write_page_with(index, page, Some(true))
    }

    /// Write one page by index with the primary algorithm, whatever
    /// `fast_path` says.
    pub fn write_page_primary(&self, index: usize, page: &[u8]) -> Result<(), IoError> {
        self.write_page_with(index, page, Some(false))
    }

    fn write_page_with(
        &self,
        index: usize,
        page: &[u8],
        fast: Option<bool>,
    ) -> Result<(), IoError> {
        let g = self.meta();
        let p = self.page_size() as u64;
        let m = check(g.as_deref(), index as u64 * p, p)?;
        if page.len() != m.page {
            return Err(IoError::Unaligned {
                offset: index as u64 * p,
                len: page.len() as u64,
            });
        }
        let fast =
            fast.unwrap_or_else(|| self.fast_path.use_fast(m, self.limit_pages.load(Relaxed)));
        m.write_page(index, page, &self.limit_pages, fast)
            .inspect_err(|_| {
                m.stats.failed_writes.fetch_add(1, Relaxed);
            })
    }

    /// Swap slot-free notification for page `index`; false if the slot was
    /// busy (miss_free) or out of range.
    pub fn slot_free_notify(&self, index: usize) -> bool {
        let g = self.meta();
        match g.as_deref() {
            Some(m) if index < m.nr_pages() => m.slot_free_notify(index),
            _ => false,
        }
    }
}

impl BlockDevice for Zram {
    fn size(&self) -> u64 {
        self.disksize()
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        let g = self.meta();
        let m = check(g.as_deref(), offset, buf.len() as u64)?;
        m.read_bytes(offset, buf).inspect_err(|_| {
            m.stats.failed_reads.fetch_add(1, Relaxed);
        })
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        let g = self.meta();
        let m = check(g.as_deref(), offset, data.len() as u64)?;
        m.write_bytes(offset, data, self).inspect_err(|_| {
            m.stats.failed_writes.fetch_add(1, Relaxed);
        })
    }

    fn discard(&self, offset: u64, len: u64) -> Result<(), IoError> {
        let g = self.meta();
        let m = check(g.as_deref(), offset, len)?;
        m.discard(offset, len);
        Ok(())
    }

    /// The kernel handles WRITE_ZEROES like DISCARD (whole pages freed). Its
    /// requests are page-aligned; ours may be 512-aligned, so partial pages at
    /// either end are zeroed by read-modify-write, keeping the promise that
    /// the whole range reads back as zeros.
    fn write_zeroes(&self, offset: u64, len: u64) -> Result<(), IoError> {
        let g = self.meta();
        let m = check(g.as_deref(), offset, len)?;
        let p = m.page as u64;
        let end = offset + len;
        let first_full = offset.div_ceil(p) * p;
        let last_full = end / p * p;
        let zeros = vec![0u8; m.page];
        let r = (|| {
            if first_full >= last_full {
                // No whole page inside: zero the bytes in place.
                let mut pos = offset;
                while pos < end {
                    let n = (p - pos % p).min(end - pos);
                    m.write_bytes(pos, &zeros[..n as usize], self)?;
                    pos += n;
                }
                return Ok(());
            }
            if offset < first_full {
                m.write_bytes(offset, &zeros[..(first_full - offset) as usize], self)?;
            }
            m.discard(first_full, last_full - first_full);
            if last_full < end {
                m.write_bytes(last_full, &zeros[..(end - last_full) as usize], self)?;
            }
            Ok(())
        })();
        r.inspect_err(|_| {
            m.stats.failed_writes.fetch_add(1, Relaxed);
        })
    }

    fn flush(&self) -> Result<(), IoError> {
        Ok(())
    }

    fn attr_read(&self, name: &str) -> Result<String, AttrError> {
        self.show(name)
    }

    fn attr_write(&self, name: &str, value: &str) -> Result<(), AttrError> {
        self.store(name, value)
    }

    fn attr_names(&self) -> Vec<&'static str> {
        self.readable_attrs()
    }
    fn attr_writable(&self) -> Vec<&'static str> {
        self.writable_attrs()
    }
}
