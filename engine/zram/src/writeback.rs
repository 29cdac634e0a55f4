//! Writeback to a backing file (CONFIG_ZRAM_WRITEBACK, zram_drv.c `writeback_store`): the
//! `backing_dev` store, its free-block bitmap, the `writeback` command with
//! the 6.16+ syntax (and the legacy forms), `writeback_limit[_enable]`,
//! `writeback_batch_size` (6.19), `compressed_writeback` (7.0) and `bd_stat`.
//!
//! * **Backing store** ([`Backing`], `backing.rs`): a regular file or a block
//!   device, free-block bitmap (block 0 never used); reserving a block counts
//!   `bd_count++`, releasing `bd_count--` (done here, with the stats).
//! * **A pass** ([`Zram::writeback`]): the requested ranges are scanned into
//!   the post-processing buckets of [`crate::pp`] (allocated, not WB, not SAME,
//!   mode filter), then processed largest first in batches (6.19+): per slot
//!   limit check (EIO), a free request (when `writeback_batch_size` are in
//!   flight, they are written and completed first), block reservation
//!   (ENOSPC), the slot read under its lock, the limit charged. Completion
//!   re-locks and — if PP_SLOT survived — frees the slot (`slot_free`) and
//!   makes it WB with handle = block; otherwise the block is released.
//!   `pages_stored` stays counted, `compr_data_size` drops. A write error
//!   gives back the block and the limit charge, is remembered, the page stays
//!   in RAM and the pass goes on. `pp_in_progress` excludes a concurrent
//!   `recompress` (EAGAIN).
//! * **Reading** a WB slot reads its block (`bd_reads++`); the slot stays WB.
//!   Unlike the kernel, which drops the slot lock before the block read, the
//!   engine reads with the slot locked, so a concurrent free cannot hand the
//!   block to another slot mid-read.
//! * **compressed_writeback** (7.0): the object itself (padded to a
//!   page) is written; size, priority, HUGE and FAST stay in the WB slot and
//!   the read path decompresses the block with the algorithm that stored it.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

use zmem_kernel::page_type;

pub use crate::backing::{Backing, BackingFault, BdOp};
use crate::device::{Meta, Zram};
use crate::pp::PpCtl;
use crate::slot::{Flag, SlotGuard};
use zmem_kernel::{kstrtobool, kstrtoull, next_args};
use zmem_kernel::{AttrError, Errno};

/// `writeback_limit_enable` and the remaining `writeback_limit` budget (in
/// 4 KiB units). Device-level, like the kernel's `wb_limit_enable` and
/// `bd_wb_limit`, which `reset` does not touch.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WbLimit {
    pub enable: bool,
    pub remaining: u64,
}

/// Mode bits of a scan (`PAGE_WRITEBACK` = 0: no flag filter).
pub mod mode {
    pub const PAGE_WRITEBACK: u32 = 0;
    pub const HUGE_WRITEBACK: u32 = 1 << 0;
    pub const IDLE_WRITEBACK: u32 = 1 << 1;
    pub const INCOMPRESSIBLE_WRITEBACK: u32 = 1 << 2;
}

/// One scan of a range with a mode, as `writeback_store` runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WbScan {
    pub mode: u32,
    /// First page.
    pub lo: u64,
    /// One past the last page; `u64::MAX` = end of the device.
    pub hi: u64,
}

/// The scans of one writeback pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WritebackParams {
    pub scans: Vec<WbScan>,
}

impl WritebackParams {
    /// Nothing selected (an empty `writeback` write).
    pub fn new() -> Self {
        Self::default()
    }
    fn whole(mut self, mode: u32) -> Self {
        self.scans.push(WbScan {
            mode,
            lo: 0,
            hi: u64::MAX,
        });
        self
    }
    /// `type=idle`.
    pub fn idle(self) -> Self {
        self.whole(mode::IDLE_WRITEBACK)
    }
    /// `type=huge`.
    pub fn huge(self) -> Self {
        self.whole(mode::HUGE_WRITEBACK)
    }
    /// `type=huge_idle`.
    pub fn huge_idle(self) -> Self {
        self.whole(mode::IDLE_WRITEBACK | mode::HUGE_WRITEBACK)
    }
    /// `type=incompressible`.
    pub fn incompressible(self) -> Self {
        self.whole(mode::INCOMPRESSIBLE_WRITEBACK)
    }
    /// Every allocated page of the device (no flag filter).
    pub fn all(self) -> Self {
        self.whole(mode::PAGE_WRITEBACK)
    }
    /// `page_indexes=LO-HI` (inclusive).
    pub fn page_indexes(mut self, lo: u64, hi: u64) -> Self {
        self.scans.push(WbScan {
            mode: mode::PAGE_WRITEBACK,
            lo,
            hi: hi.saturating_add(1),
        });
        self
    }
    /// `page_index=N`.
    pub fn page_index(self, n: u64) -> Self {
        self.page_indexes(n, n)
    }

    /// Parse the `writeback` attribute for a device of `nr_pages` pages
    /// (`writeback_store`, 6.16+): tokens left to right; a valueless token is
    /// a legacy mode word; `type=` scans the current range with its mode and
    /// ends parsing; `page_index=N` / `page_indexes=LO-HI` set the range and
    /// scan it with the current mode (no filter: `type=` ends parsing); other
    /// keys are ignored.
    pub fn parse(buf: &str, nr_pages: u64) -> Result<Self, AttrError> {
        let mut p = WritebackParams::new();
        let (mut lo, mut hi, mut mode) = (0u64, nr_pages, mode::PAGE_WRITEBACK);
        for (key, val) in next_args(buf) {
            match val.as_deref() {
                None | Some("") => {
                    mode = parse_mode(&key)?;
                    p.scans.push(WbScan { mode, lo, hi });
                    break;
                }
                Some(val) => match key.as_str() {
                    "type" => {
                        mode = parse_mode(val)?;
                        p.scans.push(WbScan { mode, lo, hi });
                        break;
                    }
                    "page_index" => {
                        (lo, hi) = parse_page_index(val, nr_pages)?;
                        p.scans.push(WbScan { mode, lo, hi });
                    }
                    "page_indexes" => {
                        (lo, hi) = parse_page_indexes(val, nr_pages)?;
                        p.scans.push(WbScan { mode, lo, hi });
                    }
                    _ => {}
                },
            }
        }
        Ok(p)
    }
}

/// `parse_mode`: exact words; anything else EINVAL.
fn parse_mode(val: &str) -> Result<u32, AttrError> {
    match val {
        page_type::IDLE => Ok(mode::IDLE_WRITEBACK),
        "huge" => Ok(mode::HUGE_WRITEBACK),
        "huge_idle" => Ok(mode::IDLE_WRITEBACK | mode::HUGE_WRITEBACK),
        "incompressible" => Ok(mode::INCOMPRESSIBLE_WRITEBACK),
        v => Err(AttrError::new(
            Errno::EINVAL,
            format!("unknown writeback mode {v:?} (idle, huge, huge_idle, incompressible, page_index=N, page_indexes=LO-HI)"),
        )),
    }
}

/// `writeback_store` before 6.16: the whole buffer is one mode word
/// (`incompressible` from 6.2) or `page_index=N`; anything else, and an index
/// beyond the device, is EINVAL.
fn parse_before_6_16(
    buf: &str,
    nr_pages: u64,
    incompressible: bool,
) -> Result<WritebackParams, AttrError> {
    let p = WritebackParams::new();
    let word = |w: &str| zmem_kernel::sysfs_streq(buf, w);
    if word(page_type::IDLE) {
        return Ok(p.idle());
    }
    if word("huge") {
        return Ok(p.huge());
    }
    if word("huge_idle") {
        return Ok(p.huge_idle());
    }
    if incompressible && word("incompressible") {
        return Ok(p.incompressible());
    }
    let index = buf
        .strip_prefix("page_index=")
        .and_then(|v| kstrtoull(v, 10).ok())
        .filter(|&i| i < nr_pages);
    match index {
        Some(i) => Ok(p.page_index(i)),
        None => Err(AttrError::new(
            Errno::EINVAL,
            format!(
                "writeback takes idle, huge, huge_idle{}, or page_index=N below {nr_pages}, not {:?}",
                if incompressible { ", incompressible" } else { "" },
                buf.trim_end()
            ),
        )),
    }
}

fn out_of_range(what: &str, nr_pages: u64) -> AttrError {
    AttrError::new(
        Errno::ERANGE,
        format!("{what} is out of range: the device has pages 0..{nr_pages}"),
    )
}

/// `parse_page_index`: kstrtoul base 10, must be < nr_pages (ERANGE).
fn parse_page_index(val: &str, nr_pages: u64) -> Result<(u64, u64), AttrError> {
    let lo = kstrtoull(val, 10)?;
    if lo >= nr_pages {
        return Err(out_of_range(&format!("page_index={val}"), nr_pages));
    }
    Ok((lo, lo + 1))
}

/// `parse_page_indexes`: `LO-HI` inclusive; no `-` EINVAL; LO or HI beyond
/// the device, or LO > HI, ERANGE (LO is checked before HI is parsed).
fn parse_page_indexes(val: &str, nr_pages: u64) -> Result<(u64, u64), AttrError> {
    let Some((a, b)) = val.split_once('-') else {
        return Err(AttrError::new(
            Errno::EINVAL,
            format!("page_indexes={val} needs LO-HI"),
        ));
    };
    let lo = kstrtoull(a, 10)?;
    if lo >= nr_pages {
        return Err(out_of_range(&format!("page_indexes={val}"), nr_pages));
    }
    let hi = kstrtoull(b, 10)?;
    if hi >= nr_pages || lo > hi {
        return Err(out_of_range(&format!("page_indexes={val}"), nr_pages));
    }
    Ok((lo, hi + 1))
}

/// `writeback_batch_size` of a new device (`zram_add`).
pub const DEFAULT_WB_BATCH_SIZE: u32 = 32;

/// One writeback request in flight (`zram_wb_req`): the slot, its reserved
/// block, the page to write and the slot's (size, priority, huge, fast).
struct WbReq {
    index: usize,
    blk: u64,
    page: Vec<u8>,
    meta: (usize, u8, bool, bool),
}

fn lock_limit(limit: &Mutex<WbLimit>) -> std::sync::MutexGuard<'_, WbLimit> {
    limit.lock().unwrap_or_else(|e| e.into_inner())
}

/// What one writeback pass did (the kernel reports nothing but errors).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WritebackReport {
    /// Slots the scans placed in the buckets (a slot in two scans counts twice).
    pub candidates: u64,
    /// Slots now WB.
    pub written: u64,
    /// Block writes that failed (those pages stayed in RAM).
    pub io_errors: u64,
    /// Object bytes (compr_data_size) the written slots held in RAM.
    pub bytes_freed: u64,
    /// Backing-device submissions: groups of at most `writeback_batch_size`
    /// block writes, each written before any of it is completed.
    pub batches: u64,
}

impl Meta {
    /// `scan_slots_for_writeback` over `[lo, hi)`.
    fn scan_for_writeback(&self, s: &WbScan, ctl: &mut PpCtl) {
        let hi = s.hi.min(self.nr_pages() as u64) as usize;
        let lo = (s.lo as usize).min(hi);
        self.scan_pp_slots(lo..hi, ctl, |g| {
            (s.mode & mode::IDLE_WRITEBACK != 0 && !g.test(Flag::Idle))
                || (s.mode & mode::HUGE_WRITEBACK != 0 && !g.test(Flag::Huge))
                || (s.mode & mode::INCOMPRESSIBLE_WRITEBACK != 0 && !g.test(Flag::Incompressible))
        });
    }

    /// Reserve a backing block (`bd_count++`).
    fn alloc_block_bdev(&self, b: &Backing) -> Option<u64> {
        let blk = b.alloc()?;
        self.stats.bd_count.fetch_add(1, Relaxed);
        Some(blk)
    }

    /// Release a backing block (`bd_count--`).
    pub(crate) fn free_block_bdev(&self, blk: u64) {
        if let Some(b) = &self.backing {
            if b.free(blk) {
                self.stats.bd_count.fetch_sub(1, Relaxed);
            }
        }
    }

    /// The page a slot is written back as: the decompressed page, or with
    /// `compressed_writeback` the object itself padded with zeros. Returns
    /// (size, priority, huge, fast) of the slot for the compressed form.
    fn wb_page_locked(
        &self,
        g: &SlotGuard<'_>,
        page: &mut [u8],
    ) -> Result<(usize, u8, bool, bool), String> {
        let meta = (
            g.size(),
            g.priority(),
            g.test(Flag::Huge),
            g.test(Flag::Fast),
        );
        if !self.wb_compressed {
            self.read_locked(g, page)?;
            return Ok(meta);
        }
        let h = Meta::handle_of(g.handle()).ok_or_else(|| "slot has no object".to_string())?;
        let size = g.size();
        let mut res = Ok(());
        self.pool
            .read(h, &mut |src: &[u8]| {
                if src.len() < size || size > self.page {
                    res = Err(format!(
                        "object is {} bytes, the slot says {size}",
                        src.len()
                    ));
                    return;
                }
                page[..size].copy_from_slice(&src[..size]);
                page[size..].fill(0);
            })
            .map_err(|e| e.to_string())?;
        res.map(|_| meta)
    }

    /// `zram_writeback_slots` (6.19+, batched): take the buckets largest
    /// first; per slot check the limit (EIO), get a free request — when all
    /// `batch` are in flight, complete them first — reserve a block (ENOSPC),
    /// read the slot under its lock into the request's page and charge the
    /// limit at submission. The engine's I/O is synchronous, so the requests
    /// in flight are written as one submission of at most `batch` blocks and
    /// then completed in order: one of the schedules the kernel's
    /// asynchronous completion allows.
    fn writeback_slots(
        &self,
        ctl: &mut PpCtl,
        limit: &Mutex<WbLimit>,
        batch: usize,
    ) -> (WritebackReport, Option<AttrError>) {
        let mut rep = WritebackReport {
            candidates: ctl.len() as u64,
            ..Default::default()
        };
        let Some(b) = self.backing.as_deref() else {
            return (
                rep,
                Some(AttrError::new(Errno::ENODEV, "no backing device")),
            );
        };
        let mut inflight: Vec<WbReq> = Vec::new();
        let mut spare: Vec<Vec<u8>> = Vec::new();
        let mut blk: Option<u64> = None;
        let mut ret = None;
        while let Some(index) = ctl.select() {
            let l = *lock_limit(limit);
            if l.enable && l.remaining == 0 {
                crate::pp::release_slot(self, index);
                ret = Some(AttrError::new(
                    Errno::EIO,
                    "writeback_limit is used up (writeback_limit_enable=1)",
                ));
                break;
            }
            if inflight.len() >= batch {
                ret = self
                    .submit_and_complete(b, &mut inflight, &mut spare, limit, &mut rep)
                    .or(ret);
            }
            let blk_idx = match blk {
                Some(x) => x,
                None => match self.alloc_block_bdev(b) {
                    Some(x) => *blk.insert(x),
                    None => {
                        crate::pp::release_slot(self, index);
                        ret = Some(AttrError::new(
                            Errno::ENOSPC,
                            format!(
                                "backing device {} is full ({} usable blocks)",
                                b.path(),
                                b.nr_pages() - 1
                            ),
                        ));
                        break;
                    }
                },
            };
            let mut page = spare.pop().unwrap_or_else(|| vec![0u8; self.page]);
            let g = self.table[index].lock();
            // Accessed or freed since the scan (the block is kept for the next slot).
            let read = if g.test(Flag::PpSlot) {
                self.wb_page_locked(&g, &mut page).ok()
            } else {
                None
            };
            drop(g);
            let Some(meta) = read else {
                spare.push(page);
                crate::pp::release_slot(self, index);
                continue;
            };
            // Charged before submission so a pass does not over-submit.
            {
                let mut l = lock_limit(limit);
                if l.enable && l.remaining > 0 {
                    l.remaining -= (self.page / 4096) as u64;
                }
            }
            inflight.push(WbReq {
                index,
                blk: blk_idx,
                page,
                meta,
            });
            blk = None;
        }
        ret = self
            .submit_and_complete(b, &mut inflight, &mut spare, limit, &mut rep)
            .or(ret);
        if let Some(x) = blk {
            self.free_block_bdev(x);
        }
        ctl.release_all(self);
        (rep, ret)
    }

    /// Write the requests in flight (one submission) and complete each
    /// (`zram_writeback_complete`): a failed write gives its block and its
    /// limit charge back and leaves the page in RAM; a slot accessed or
    /// freed during the I/O gives its block back; otherwise the slot is
    /// freed and becomes WB with handle = block. Returns the last error.
    fn submit_and_complete(
        &self,
        b: &Backing,
        inflight: &mut Vec<WbReq>,
        spare: &mut Vec<Vec<u8>>,
        limit: &Mutex<WbLimit>,
        rep: &mut WritebackReport,
    ) -> Option<AttrError> {
        if inflight.is_empty() {
            return None;
        }
        rep.batches += 1;
        let results: Vec<std::io::Result<()>> = inflight
            .iter()
            .map(|r| b.write_block(r.blk, &r.page))
            .collect();
        let mut ret = None;
        for (r, res) in inflight.drain(..).zip(results) {
            if let Err(e) = res {
                {
                    let mut l = lock_limit(limit);
                    if l.enable {
                        l.remaining += (self.page / 4096) as u64;
                    }
                }
                self.free_block_bdev(r.blk);
                rep.io_errors += 1;
                ret = Some(AttrError::new(
                    Errno::EIO,
                    format!("writing page {} to block {}: {e}", r.index, r.blk),
                ));
            } else {
                self.stats.bd_writes.fetch_add(1, Relaxed);
                if let Some(freed) = self.complete_wb_slot(&r) {
                    rep.written += 1;
                    rep.bytes_freed += freed;
                }
            }
            crate::pp::release_slot(self, r.index);
            spare.push(r.page);
        }
        ret
    }

    /// A written request's slot: if it is still PP_SLOT, free it and make it
    /// WB (returns the object bytes it held); else give the block back.
    fn complete_wb_slot(&self, r: &WbReq) -> Option<u64> {
        let mut g = self.table[r.index].lock();
        if !g.test(Flag::PpSlot) {
            drop(g);
            self.free_block_bdev(r.blk);
            return None;
        }
        let (size, prio, huge, fast) = r.meta;
        let freed = g.size() as u64;
        let (incompressible, ac_time) = (g.test(Flag::Incompressible), g.ac_time());
        self.free_slot(&mut g);
        g.set(Flag::Wb);
        g.set_handle(r.blk);
        if self.wb_keeps_slot {
            // 7.0+: zram_writeback_complete frees the object, not the slot.
            if incompressible {
                g.set(Flag::Incompressible);
            }
            if self.track_actime {
                g.set_ac_time(ac_time);
            }
        }
        if self.wb_compressed || self.wb_keeps_slot {
            // Kept for the read path; huge_pages was decremented by slot_free.
            if huge {
                g.set(Flag::Huge);
            }
            g.set_size(size);
            g.set_priority(prio);
        }
        // The fast algorithm made the object (zmem): the compressed read path needs it.
        if self.wb_compressed && fast {
            g.set(Flag::Fast);
        }
        drop(g);
        self.stats.pages_stored.fetch_add(1, Relaxed);
        Some(freed)
    }

    /// `read_from_bdev` for a WB slot (locked by the caller): `bd_reads++`,
    /// read the block; with `compressed_writeback`, decompress it with the
    /// slot's priority (or copy a HUGE page).
    pub(crate) fn read_from_bdev(&self, g: &SlotGuard<'_>, dst: &mut [u8]) -> Result<(), String> {
        let b = self
            .backing
            .as_deref()
            .ok_or_else(|| "slot is written back but there is no backing device".to_string())?;
        let blk = g.handle();
        self.stats.bd_reads.fetch_add(1, Relaxed);
        if !self.wb_compressed {
            return b
                .read_block(blk, dst)
                .map_err(|e| format!("reading block {blk} of {}: {e}", b.path()));
        }
        let mut block = vec![0u8; self.page];
        b.read_block(blk, &mut block)
            .map_err(|e| format!("reading block {blk} of {}: {e}", b.path()))?;
        if g.test(Flag::Huge) {
            dst.copy_from_slice(&block);
            return Ok(());
        }
        let size = g.size();
        if size == 0 || size > self.page {
            return Err(format!(
                "written-back object of block {blk} has size {size}"
            ));
        }
        self.decompress(g, &block[..size], dst)
    }
}

impl Zram {
    /// `backing_dev` read: the path, or `none`.
    pub(crate) fn backing_dev_show(&self) -> String {
        match self
            .backing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_deref()
        {
            Some(b) => format!("{}\n", b.path()),
            None => "none\n".to_string(),
        }
    }

    /// `backing_dev` write: one trailing newline stripped; initialised →
    /// EBUSY (checked first); then open (errors named after the file).
    /// Replaces any previous backing device.
    pub(crate) fn backing_dev_store(&self, buf: &str) -> Result<(), AttrError> {
        let path = buf.strip_suffix('\n').unwrap_or(buf);
        let _cfg = self.lock_config();
        if self.is_initialized() {
            return Err(AttrError::new(
                Errno::EBUSY,
                "cannot set up a backing device for an initialized device",
            ));
        }
        if path.is_empty() {
            return Err(AttrError::new(
                Errno::ENOENT,
                "cannot open backing device '': empty path",
            ));
        }
        let b = Backing::open(path, self.backing_fault.clone(), self.page_size())?;
        *self.backing.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(b));
        Ok(())
    }

    /// The configured backing device (before or after init).
    pub fn backing_dev(&self) -> Option<Arc<Backing>> {
        self.backing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// `compressed_writeback` write (7.0): kstrtobool (EINVAL), then
    /// initialised → EBUSY.
    pub(crate) fn compressed_writeback_store(&self, buf: &str) -> Result<(), AttrError> {
        let v = kstrtobool(buf).ok_or_else(|| {
            AttrError::new(
                Errno::EINVAL,
                format!("{:?} is not a boolean (y/n/1/0/on/off)", buf.trim_end()),
            )
        })?;
        let _cfg = self.lock_config();
        if self.is_initialized() {
            return Err(AttrError::new(
                Errno::EBUSY,
                "cannot change compressed_writeback of an initialized device",
            ));
        }
        self.wb_compressed.store(v, Relaxed);
        Ok(())
    }

    /// `writeback_batch_size` write (6.19): kstrtouint base 10 (any error,
    /// overflow included, EINVAL); 0 → EINVAL. Allowed at any time; a pass
    /// reads it when it starts.
    pub(crate) fn writeback_batch_size_store(&self, buf: &str) -> Result<(), AttrError> {
        let v = kstrtoull(buf, 10)
            .ok()
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| {
                AttrError::new(
                    Errno::EINVAL,
                    format!(
                        "writeback_batch_size takes a decimal 1..{}, not {:?}",
                        u32::MAX,
                        buf.trim_end()
                    ),
                )
            })?;
        if v == 0 {
            return Err(AttrError::new(
                Errno::EINVAL,
                "writeback_batch_size must be at least 1",
            ));
        }
        self.wb_batch_size.store(v, Relaxed);
        Ok(())
    }

    /// `writeback_limit_enable` write: kstrtoull base 10 (any error EINVAL); non-zero enables.
    pub(crate) fn writeback_limit_enable_store(&self, buf: &str) -> Result<(), AttrError> {
        let v = kstrtoull(buf, 10).map_err(|e| AttrError::new(Errno::EINVAL, e.message))?;
        self.wb_limit
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .enable = v != 0;
        Ok(())
    }

    /// `writeback_limit` write: kstrtoull base 10 (any error EINVAL), the
    /// budget in 4 KiB units.
    pub(crate) fn writeback_limit_store(&self, buf: &str) -> Result<(), AttrError> {
        let v = kstrtoull(buf, 10).map_err(|e| AttrError::new(Errno::EINVAL, e.message))?;
        self.wb_limit
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remaining = v;
        Ok(())
    }

    /// `writeback_limit_enable` and the remaining `writeback_limit`.
    pub fn writeback_limit(&self) -> WbLimit {
        *self.wb_limit.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `writeback` write, in the syntax of the device's kernel version.
    pub(crate) fn writeback_store(&self, buf: &str) -> Result<(), AttrError> {
        let k = self.kernel;
        self.writeback_with(|nr_pages| {
            if k.keyed_writeback() {
                WritebackParams::parse(buf, nr_pages)
            } else {
                parse_before_6_16(buf, nr_pages, k.incompressible_writeback())
            }
        })
        .map(|_| ())
    }

    /// Run one writeback pass: the scans of `p`, then the writes. Checks in
    /// the kernel's order: not initialised EINVAL, another pass EAGAIN, no
    /// backing device ENODEV, then the ranges (ERANGE). Errors of the pass:
    /// EIO (limit used up, or a block write failed — the last error wins),
    /// ENOSPC (backing device full). Pages not written back stay in RAM.
    pub fn writeback(&self, p: &WritebackParams) -> Result<WritebackReport, AttrError> {
        self.writeback_with(|nr_pages| {
            for s in &p.scans {
                let hi = if s.hi == u64::MAX { nr_pages } else { s.hi };
                if s.lo >= nr_pages || hi > nr_pages || s.lo >= hi {
                    return Err(out_of_range(&format!("pages {}..{}", s.lo, hi), nr_pages));
                }
            }
            Ok(p.clone())
        })
    }

    fn writeback_with(
        &self,
        parse: impl FnOnce(u64) -> Result<WritebackParams, AttrError>,
    ) -> Result<WritebackReport, AttrError> {
        let g = self.meta();
        let m = g
            .as_deref()
            .ok_or_else(|| AttrError::new(Errno::EINVAL, "device is not initialized"))?;
        let _pp = m.begin_pp()?;
        if m.backing.is_none() {
            return Err(AttrError::new(
                Errno::ENODEV,
                "no backing device: write a file to backing_dev before disksize",
            ));
        }
        let p = parse(m.nr_pages() as u64)?;
        let mut ctl = PpCtl::for_page(m.page);
        for s in &p.scans {
            m.scan_for_writeback(s, &mut ctl);
        }
        // Before 6.19 a pass writes one page at a time.
        let batch = if self.kernel.batched_writeback() {
            self.wb_batch_size.load(Relaxed) as usize
        } else {
            1
        };
        match m.writeback_slots(&mut ctl, &self.wb_limit, batch) {
            (rep, None) => Ok(rep),
            (_, Some(e)) => Err(e),
        }
    }

    /// `bd_stat` as numbers (zeros while uninitialised).
    pub fn bd_stat(&self) -> zmem_kernel::BdStat {
        self.meta()
            .as_deref()
            .map(|m| m.stats.bd_stat())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_left_to_right() {
        use mode::*;
        let p = WritebackParams::parse(
            "page_index=42 page_index=99 page_indexes=100-200 page_indexes=500-700",
            1000,
        )
        .unwrap();
        assert_eq!(
            p.scans,
            vec![
                WbScan {
                    mode: PAGE_WRITEBACK,
                    lo: 42,
                    hi: 43
                },
                WbScan {
                    mode: PAGE_WRITEBACK,
                    lo: 99,
                    hi: 100
                },
                WbScan {
                    mode: PAGE_WRITEBACK,
                    lo: 100,
                    hi: 201
                },
                WbScan {
                    mode: PAGE_WRITEBACK,
                    lo: 500,
                    hi: 701
                },
            ]
        );
        // type= scans the current range and ends parsing.
        let p = WritebackParams::parse("page_indexes=1-5 type=huge page_index=999999", 10).unwrap();
        assert_eq!(
            p.scans,
            vec![
                WbScan {
                    mode: PAGE_WRITEBACK,
                    lo: 1,
                    hi: 6
                },
                WbScan {
                    mode: HUGE_WRITEBACK,
                    lo: 1,
                    hi: 6
                }
            ]
        );
        assert_eq!(
            WritebackParams::parse("idle\n", 10).unwrap().scans,
            vec![WbScan {
                mode: IDLE_WRITEBACK,
                lo: 0,
                hi: 10
            }]
        );
        assert_eq!(WritebackParams::parse("foo=bar", 10).unwrap().scans, vec![]);
        assert_eq!(WritebackParams::parse("", 10).unwrap().scans, vec![]);
    }
}
