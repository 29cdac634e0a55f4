//! Multi-algorithm recompression (CONFIG_ZRAM_MULTI_COMP, zram_drv.c `recompress_store`):
//! `recomp_algorithm`, the `recompress` command with the kernel's syntax,
//! rules and quirks, and the debugfs `block_state` dump.
//!
//! Priority 0 is the primary algorithm (`comp_algorithm`), priorities 1..3
//! are secondary (`recomp_algorithm`). At `disksize` every configured
//! priority gets its own [`StreamPool`](zmem_codec::StreamPool) (see
//! `Zram::init`), and a slot records the priority that compressed it, so the
//! read path decompresses with the right algorithm.
//!
//! A `recompress` pass (zram_drv.c: `recompress_store`, `scan_slots_for_recompress`, `recompress_slot`):
//! 1. scan every slot, keep the candidates (allocated; type filter; not WB,
//!    SAME or INCOMPRESSIBLE; `priority + 1 < prio_max`) in the
//!    post-processing buckets of [`crate::pp`], flagged PP_SLOT;
//! 2. take them largest first; skip a slot whose PP_SLOT was cleared (it was
//!    accessed or freed meanwhile) or that is below the threshold; decompress
//!    it, clear IDLE, and try each configured priority of the range until the
//!    new size lands in a strictly smaller size class (and under the
//!    threshold); each slot that reached that loop consumes one `max_pages`;
//! 3. on success replace the object (`slot_free` semantics, then the new
//!    handle, size and priority; never HUGE); when the last configured
//!    algorithm was tried without progress, set INCOMPRESSIBLE.
//!
//! The engine entry point is [`Zram::recompress`], which also reports what a
//! pass did ([`RecompressReport`]); the attribute is a parser on top of it.
//! Writeback (§5) shares the buckets and the `pp_in_progress` exclusion.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{AcqRel, Relaxed};

use zmem_codec::{max_compressed, CodecError, PAGE_SIZE};
use zmem_kernel::page_type;
use zmem_zpool::ZpoolError;

use crate::device::{Meta, Zram};
use crate::pp::PpCtl;
use crate::slot::{Flag, SlotGuard};
use crate::streams::{MAX_COMPS, PRIMARY};
use zmem_kernel::{kstrtoint, kstrtoull, next_args};
use zmem_kernel::{AttrError, Errno, KernelModel};

/// The first secondary priority (`ZRAM_SECONDARY_COMP`).
pub const SECONDARY: usize = 1;

/// The kernel's global `huge_class_size`: set once, at the first `disksize`
/// of any device in the process, and 0 before. `recompress` compares its
/// threshold with this global *before* checking that the device is
/// initialised, so before any device was ever initialised every threshold
/// (even 0) is refused. One kernel has one page size; the engine keeps one
/// global per page size it models (4, 16, 64 KiB), so devices of different
/// page sizes in one process do not share it.
static HUGE_CLASS_SIZE: [AtomicUsize; 3] = [const { AtomicUsize::new(0) }; 3];

fn slot_of(page_size: usize) -> &'static AtomicUsize {
    &HUGE_CLASS_SIZE[match page_size {
        16384 => 1,
        65536 => 2,
        _ => 0,
    }]
}

/// Record `huge_class_size` at a device's initialisation (first one wins,
/// as the kernel computes it once).
pub(crate) fn note_huge_class_size(n: usize, page_size: usize) {
    let _ = slot_of(page_size).compare_exchange(0, n, AcqRel, Relaxed);
}

/// The global `huge_class_size` of 4 KiB-page devices (0 until one was
/// initialised).
pub fn global_huge_class_size() -> usize {
    huge_class_size_at(PAGE_SIZE)
}

/// The global `huge_class_size` of devices with `page_size`-byte pages.
pub fn huge_class_size_at(page_size: usize) -> usize {
    slot_of(page_size).load(Relaxed)
}

/// Parameters of one recompression pass, as the kernel's local variables of
/// `recompress_store` after parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecompressParams {
    /// `type=idle` / `huge_idle`: only IDLE slots.
    pub idle: bool,
    /// `type=huge` / `huge_idle`: only HUGE slots.
    pub huge: bool,
    /// `max_pages=`: slots that may still be attempted (u64::MAX = unlimited).
    pub max_pages: u64,
    /// `threshold=`: only slots of at least this size, results must be smaller (0 = off).
    pub threshold: u32,
    /// `algo=`: use exactly this secondary algorithm.
    pub algo: Option<String>,
    /// Lowest priority tried (`priority=`, default 1).
    pub prio: u32,
    /// Exclusive upper priority bound before clamping to `num_active_comps`.
    pub prio_max: u32,
    /// zmem extension `from=ALGO` (precise recompression): only slots stored
    /// by this algorithm, recompressed with `algo=` or else the primary.
    pub from: Option<String>,
    /// `priority=` as given (7.3 checks it is 1..3 and tries only it; before,
    /// 0 became 1 and a range was tried: `prio`, `prio_max`).
    pub prio_param: Option<i32>,
}

impl Default for RecompressParams {
    fn default() -> Self {
        RecompressParams {
            idle: false,
            huge: false,
            max_pages: u64::MAX,
            threshold: 0,
            algo: None,
            prio: SECONDARY as u32,
            prio_max: MAX_COMPS as u32,
            from: None,
            prio_param: None,
        }
    }
}

impl RecompressParams {
    /// Every slot, every configured secondary algorithm.
    pub fn new() -> Self {
        Self::default()
    }
    /// Only IDLE slots (`type=idle`).
    pub fn idle(mut self) -> Self {
        self.idle = true;
        self
    }
    /// Only HUGE slots (`type=huge`).
    pub fn huge(mut self) -> Self {
        self.huge = true;
        self
    }
    /// `max_pages=`.
    pub fn max_pages(mut self, n: u64) -> Self {
        self.max_pages = n;
        self
    }
    /// `threshold=`.
    pub fn threshold(mut self, bytes: u32) -> Self {
        self.threshold = bytes;
        self
    }
    /// `algo=`.
    pub fn algo(mut self, name: impl Into<String>) -> Self {
        self.algo = Some(name.into());
        self
    }
    /// `from=` (zmem): precise recompression of the slots stored by `name`.
    pub fn from(mut self, name: impl Into<String>) -> Self {
        self.from = Some(name.into());
        self
    }
    /// `priority=` (0 is turned into 1, as the kernel does).
    pub fn priority(mut self, p: u32) -> Self {
        self.prio = if p == PRIMARY as u32 {
            SECONDARY as u32
        } else {
            p
        };
        self.prio_max = self.prio.wrapping_add(1);
        self.prio_param = Some(i32::try_from(p).unwrap_or(i32::MAX));
        self
    }

    /// Parse the `recompress` attribute as 6.18's `recompress_store` does:
    /// unknown keys ignored, a token without a value is EINVAL, an unknown
    /// `type` value leaves the filter unchanged.
    pub fn parse(buf: &str) -> Result<Self, AttrError> {
        Self::parse_tokens(buf, false)
    }

    /// Parse the `recompress` attribute as `kernel`'s zram does: 7.3 also
    /// refuses an unknown `type` value while no type was given before it
    /// (EINVAL) and reads `priority=` with kstrtoint, checked later.
    pub fn parse_for(buf: &str, kernel: &KernelModel) -> Result<Self, AttrError> {
        Self::parse_tokens(buf, kernel.one_priority_recompress())
    }

    fn parse_tokens(buf: &str, one: bool) -> Result<Self, AttrError> {
        let mut p = RecompressParams::default();
        for (key, val) in next_args(buf) {
            let val = match val {
                Some(v) if !v.is_empty() => v,
                _ => {
                    return Err(AttrError::new(
                        Errno::EINVAL,
                        format!("'{key}' needs a value (key=value)"),
                    ))
                }
            };
            match key.as_str() {
                "type" => match val.as_str() {
                    page_type::IDLE => (p.idle, p.huge) = (true, false),
                    "huge" => (p.idle, p.huge) = (false, true),
                    "huge_idle" => (p.idle, p.huge) = (true, true),
                    _ if one && !p.idle && !p.huge => {
                        return Err(AttrError::new(
                            Errno::EINVAL,
                            format!("unknown recompress type '{val}' (idle, huge or huge_idle)"),
                        ))
                    }
                    // 6.18 compares with strcmp and ignores other values.
                    _ => {}
                },
                "max_pages" => p.max_pages = kstrtoull(&val, 10)?,
                "threshold" => p.threshold = kstrtouint(&val)?,
                "algo" => p.algo = Some(val),
                "priority" if one => p.prio_param = Some(kstrtoint(&val, 10)?),
                "priority" => p = p.priority(kstrtouint(&val)?),
                "from" => p.from = Some(val),
                _ => {}
            }
        }
        Ok(p)
    }
}

/// `kstrtouint(s, 10)`.
fn kstrtouint(s: &str) -> Result<u32, AttrError> {
    let v = kstrtoull(s, 10)?;
    u32::try_from(v).map_err(|_| {
        AttrError::new(
            Errno::ERANGE,
            format!("{:?} is out of range for an unsigned int", s.trim_end()),
        )
    })
}

/// What one recompression pass did (not in the kernel, which reports nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecompressReport {
    /// Slots the scan placed in the buckets.
    pub candidates: u64,
    /// Slots that reached the algorithm loop (each consumed one `max_pages`).
    pub attempted: u64,
    /// Slots stored again with a secondary algorithm.
    pub recompressed: u64,
    /// Slots newly flagged INCOMPRESSIBLE.
    pub incompressible: u64,
    /// Object bytes of the recompressed slots before …
    pub bytes_before: u64,
    /// … and after.
    pub bytes_after: u64,
}

impl Zram {
    /// `recomp_algorithm` read: `#P: ` and the comp_algorithm list for every
    /// configured secondary priority.
    pub(crate) fn recomp_algorithm_show(&self) -> String {
        let cfg = self.lock_config();
        let mut s = String::new();
        for (prio, alg) in cfg.comp_algs.iter().enumerate().skip(SECONDARY) {
            let Some(name) = alg.as_deref() else { continue };
            s.push_str(&format!("#{prio}: "));
            s.push_str(&self.backends().available_show(Some(name)));
        }
        s
    }

    /// `recomp_algorithm` write: `algo=NAME [priority=P]`, P in 1..3 (default 1).
    pub(crate) fn recomp_algorithm_store(&self, buf: &str) -> Result<(), AttrError> {
        let mut prio: i32 = SECONDARY as i32;
        let mut alg = None;
        for (key, val) in next_args(buf) {
            let val = match val {
                Some(v) if !v.is_empty() => v,
                _ => {
                    return Err(AttrError::new(
                        Errno::EINVAL,
                        format!("'{key}' needs a value (key=value)"),
                    ))
                }
            };
            match key.as_str() {
                "algo" => alg = Some(val),
                "priority" => prio = kstrtoint(&val, 10)?,
                _ => {}
            }
        }
        let alg = alg.ok_or_else(|| {
            AttrError::new(
                Errno::EINVAL,
                "recomp_algorithm needs algo=NAME [priority=1..3]",
            )
        })?;
        if prio < SECONDARY as i32 || prio >= MAX_COMPS as i32 {
            return Err(AttrError::new(
                Errno::EINVAL,
                format!(
                    "priority {prio} is not a secondary priority ({SECONDARY}..{})",
                    MAX_COMPS - 1
                ),
            ));
        }
        self.comp_algorithm_store(prio as usize, &alg)
    }

    /// `recompress` write.
    pub(crate) fn recompress_store(&self, buf: &str) -> Result<(), AttrError> {
        let p = RecompressParams::parse_for(buf, &self.kernel)?;
        self.recompress(&p).map(|_| ())
    }

    /// Run one recompression pass (`recompress_store` after parsing), with
    /// the kernel's checks in the kernel's order.
    pub fn recompress(&self, p: &RecompressParams) -> Result<RecompressReport, AttrError> {
        let hcs = huge_class_size_at(self.page_size());
        if p.threshold as usize >= hcs {
            return Err(AttrError::new(
                Errno::EINVAL,
                format!(
                    "threshold {} must be below huge_class_size ({hcs})",
                    p.threshold
                ),
            ));
        }
        let names = self.config().comp_algs;
        let g = self.meta();
        let m = g
            .as_deref()
            .ok_or_else(|| AttrError::new(Errno::EINVAL, "device is not initialized"))?;
        if p.from.is_none() && self.kernel.one_priority_recompress() {
            let prio = one_priority(p, &names, m)?;
            let _pp = m.begin_pp()?;
            let t = Targets {
                min: prio,
                max: prio + 1,
                one: true,
            };
            return m.recompress_pass(p, t);
        }
        let _pp = m.begin_pp()?;
        if let Some(from) = &p.from {
            return m.precise_pass(p, from, &names);
        }
        let (prio, prio_max) = range_priorities(p, &names, m)?;
        let t = Targets {
            min: prio as usize,
            max: prio_max as usize,
            one: false,
        };
        m.recompress_pass(p, t)
    }
}

/// The priorities a pass tries, and which rule flags a slot INCOMPRESSIBLE.
#[derive(Debug, Clone, Copy)]
struct Targets {
    /// The lowest priority tried …
    min: usize,
    /// … and the bound (exclusive).
    max: usize,
    /// 7.3: exactly `min`; slots of that priority or above are no
    /// candidates; INCOMPRESSIBLE when no algorithm is configured above it.
    /// Before: `min..max`, INCOMPRESSIBLE after the last configured one.
    one: bool,
}

/// 7.3's choice of the one priority (`recompress_store`): `priority=` must
/// be 1..3; with `algo=` too, that priority's algorithm must be it; `algo=`
/// alone is looked up from priority 1; the priority must have a compressor.
fn one_priority(
    p: &RecompressParams,
    names: &[Option<String>; MAX_COMPS],
    m: &Meta,
) -> Result<usize, AttrError> {
    let einval = |msg: String| Err(AttrError::new(Errno::EINVAL, msg));
    let mut prio = SECONDARY;
    if let Some(r) = p.prio_param {
        if r < SECONDARY as i32 || r >= MAX_COMPS as i32 {
            return einval(format!(
                "priority {r} is not a secondary priority ({SECONDARY}..{})",
                MAX_COMPS - 1
            ));
        }
        prio = r as usize;
    }
    match (&p.algo, p.prio_param) {
        (Some(a), Some(_)) if names[prio].as_deref() != Some(a) => {
            return einval(format!("'{a}' is not the algorithm of priority {prio}"))
        }
        (Some(a), None) => match (SECONDARY..MAX_COMPS).find(|&q| names[q].as_deref() == Some(a)) {
            Some(q) => prio = q,
            None => return einval(format!("'{a}' is not a secondary algorithm of this device")),
        },
        _ => {}
    }
    if m.comps[prio].is_none() {
        return einval(format!(
            "no algorithm at priority {prio} (recomp_algorithm)"
        ));
    }
    Ok(prio)
}

/// 6.18's range (`recompress_store`): from `priority=` (default 1) up to
/// the configured ones, or the one `algo=` names.
fn range_priorities(
    p: &RecompressParams,
    names: &[Option<String>; MAX_COMPS],
    m: &Meta,
) -> Result<(u32, u32), AttrError> {
    let (mut prio, mut prio_max) = (p.prio, p.prio_max);
    if let Some(algo) = &p.algo {
        // Searched from the current prio upwards, by configured name.
        let found = (prio as usize..MAX_COMPS)
            .find(|&q| m.comps[q].is_some() && names[q].as_deref() == Some(algo));
        match found {
            Some(q) => {
                prio = q as u32;
                prio_max = prio + 1;
            }
            None => {
                return Err(AttrError::new(
                    Errno::EINVAL,
                    format!("'{algo}' is not a secondary algorithm of this device at priority {prio} or above"),
                ))
            }
        }
    }
    // Quirk kept: num_active_comps is a count used as a priority bound.
    prio_max = prio_max.min(m.num_active_comps as u32);
    if prio >= prio_max {
        return Err(AttrError::new(
            Errno::EINVAL,
            format!(
                "no secondary algorithm to use (priority {prio}, {} configured compressor(s))",
                m.num_active_comps
            ),
        ));
    }
    Ok((prio, prio_max))
}

impl Meta {
    /// `scan_slots_for_recompress`.
    fn scan_for_recompress(&self, p: &RecompressParams, t: Targets, ctl: &mut PpCtl) {
        self.scan_candidates(p, ctl, |g| {
            let prio = g.priority() as usize;
            g.test(Flag::Incompressible)
                // Already compressed with the same or a higher priority.
                || if t.one { prio >= t.min } else { prio + 1 >= t.max }
        });
    }

    /// Select the slots a recompression pass may visit into `ctl`: allocated,
    /// matching the type filter (`idle`, `huge`), not WB or SAME, and not
    /// refused by `skip`.
    pub(crate) fn scan_candidates(
        &self,
        p: &RecompressParams,
        ctl: &mut PpCtl,
        skip: impl Fn(&SlotGuard<'_>) -> bool,
    ) {
        self.scan_pp_slots(0..self.nr_pages(), ctl, |g| {
            (p.idle && !g.test(Flag::Idle)) || (p.huge && !g.test(Flag::Huge)) || skip(g)
        });
    }

    /// Visit the selected slots largest first while `max_pages` lasts, with
    /// one page and one compression buffer for the whole pass; release what
    /// is left. The first error ends the pass.
    pub(crate) fn process_candidates(
        &self,
        ctl: &mut PpCtl,
        max_pages: u64,
        mut visit: impl FnMut(
            usize,
            &mut [u8],
            &mut [u8],
            &mut u64,
            &mut RecompressReport,
        ) -> Result<(), AttrError>,
    ) -> Result<RecompressReport, AttrError> {
        let mut rep = RecompressReport {
            candidates: ctl.len() as u64,
            ..Default::default()
        };
        let mut page = vec![0u8; self.page];
        let mut buf = vec![0u8; max_compressed(self.page)];
        let mut budget = max_pages;
        let mut result = Ok(());
        while budget != 0 {
            let Some(index) = ctl.select() else { break };
            let r = visit(index, &mut page, &mut buf, &mut budget, &mut rep);
            crate::pp::release_slot(self, index);
            if let Err(e) = r {
                result = Err(e);
                break;
            }
        }
        ctl.release_all(self);
        result.map(|_| rep)
    }

    /// Lock a selected slot and decompress it into `page`. `None` when it
    /// was accessed or freed since the scan (PP_SLOT cleared) or is below
    /// `threshold`; otherwise the guard (IDLE cleared: the data was touched)
    /// and the object's size.
    pub(crate) fn lock_candidate<'a>(
        &'a self,
        index: usize,
        threshold: u32,
        page: &mut [u8],
    ) -> Result<Option<(SlotGuard<'a>, usize)>, AttrError> {
        let mut g = self.table[index].lock();
        if !g.test(Flag::PpSlot) {
            return Ok(None);
        }
        if g.handle() == 0 {
            return Err(AttrError::new(
                Errno::EINVAL,
                format!("slot {index} has no object"),
            ));
        }
        let size_old = g.size();
        if size_old < threshold as usize {
            return Ok(None);
        }
        self.read_locked(&g, page)
            .map_err(|e| AttrError::new(Errno::EIO, format!("recompress: slot {index}: {e}")))?;
        g.clear(Flag::Idle);
        Ok(Some((g, size_old)))
    }

    /// Store `obj` (made by the compressor of priority `prio`) as the slot's
    /// new object: allocate and write it, free the old one with `slot_free`'s
    /// side effects, install handle, size and priority; count it in `rep`.
    /// With `keep_ac_time` the slot keeps its access time.
    pub(crate) fn install_recompressed(
        &self,
        mut g: SlotGuard<'_>,
        obj: &[u8],
        prio: usize,
        keep_ac_time: bool,
        rep: &mut RecompressReport,
    ) -> Result<(), AttrError> {
        let (len, size_old) = (obj.len(), g.size());
        let h = self.pool.malloc(len).map_err(|e| match e {
            ZpoolError::NoMemory => AttrError::new(
                Errno::ENOMEM,
                format!("recompress: allocator out of memory: {e}"),
            ),
            e => AttrError::new(
                Errno::ENOMEM,
                format!("recompress: allocation of {len} bytes failed: {e}"),
            ),
        })?;
        let hint = match self.pool.write(h, obj) {
            Ok(hint) => hint,
            Err(e) => {
                let _ = self.pool.free(h);
                return Err(AttrError::new(
                    Errno::EIO,
                    format!("recompress: writing the object failed: {e}"),
                ));
            }
        };
        let ac_time = g.ac_time();
        let old = self.release_slot(&mut g);
        g.set_handle(h.0.get());
        g.set_hint(hint.raw());
        g.set_size(len);
        g.set_priority(prio as u8);
        if keep_ac_time && self.track_actime {
            g.set_ac_time(ac_time);
        }
        drop(g);
        self.free_after_commit(old);
        self.stats.compr_data_size.fetch_add(len as u64, Relaxed);
        self.stats.pages_stored.fetch_add(1, Relaxed);
        rep.recompressed += 1;
        rep.bytes_before += size_old as u64;
        rep.bytes_after += len as u64;
        Ok(())
    }

    fn recompress_pass(
        &self,
        p: &RecompressParams,
        t: Targets,
    ) -> Result<RecompressReport, AttrError> {
        let mut ctl = PpCtl::for_page(self.page);
        self.scan_for_recompress(p, t, &mut ctl);
        self.recompress_buckets(&mut ctl, p, t)
    }

    /// Process the selected slots largest first, then release what is left.
    fn recompress_buckets(
        &self,
        ctl: &mut PpCtl,
        p: &RecompressParams,
        t: Targets,
    ) -> Result<RecompressReport, AttrError> {
        self.process_candidates(ctl, p.max_pages, |index, page, buf, budget, rep| {
            self.recompress_slot(index, page, buf, budget, p.threshold, t, rep)
        })
    }

    /// Whether no algorithm is configured above `prio`
    /// (`highest_priority_algorithm`, 7.3).
    fn highest_configured(&self, prio: usize) -> bool {
        (prio + 1..MAX_COMPS).all(|q| self.comps[q].is_none())
    }

    /// `recompress_slot` (zram_drv.c), for one slot taken from the buckets.
    #[allow(clippy::too_many_arguments)]
    fn recompress_slot(
        &self,
        index: usize,
        page: &mut [u8],
        buf: &mut [u8],
        budget: &mut u64,
        threshold: u32,
        t: Targets,
        rep: &mut RecompressReport,
    ) -> Result<(), AttrError> {
        let (prio_min, prio_max) = (t.min, t.max);
        // Accessed or freed since the scan, or below the threshold: skipped.
        let Some((mut g, size_old)) = self.lock_candidate(index, threshold, page)? else {
            return Ok(());
        };
        let class_old = self.pool.class_index(size_old);
        let mut p = prio_min.max(g.priority() as usize + 1);
        if p >= prio_max {
            return Ok(());
        }
        let mut found = None;
        let mut err = None;
        while p < prio_max {
            let Some(comp) = self.comps[p].as_ref() else {
                p += 1;
                continue;
            };
            match comp.streams.compress(page, buf) {
                Ok(len) => {
                    let class_new = self.pool.class_index(len);
                    if class_new < class_old && (threshold == 0 || len < threshold as usize) {
                        found = Some(len);
                        break;
                    }
                }
                // Larger than two pages: no progress with this algorithm.
                Err(CodecError::DstTooSmall { .. }) => {}
                Err(e) => {
                    err = Some(AttrError::new(
                        Errno::EIO,
                        format!("recompress: {} failed: {e}", comp.name),
                    ));
                    break;
                }
            }
            p += 1;
        }
        // Spent, successful or not.
        if *budget != 0 {
            *budget -= 1;
        }
        rep.attempted += 1;
        if let Some(e) = err {
            return Err(e);
        }
        let Some(len_new) = found else {
            // 7.3: when no algorithm is configured above the one tried;
            // before: only when the last configured algorithm was tried.
            let last = if t.one {
                self.highest_configured(t.min)
            } else {
                p >= self.num_active_comps
            };
            if last {
                if !g.test(Flag::Incompressible) {
                    rep.incompressible += 1;
                }
                g.set(Flag::Incompressible);
            }
            return Ok(());
        };
        self.install_recompressed(g, &buf[..len_new], p, false, rep)
    }
}

impl Zram {
    /// The debugfs `block_state` file (CONFIG_ZRAM_MEMORY_TRACKING): one line
    /// per allocated slot — index (width 12), access time as
    /// `seconds.microseconds` (seconds width 12, device clock), and the flags
    /// `s` SAME, `w` WB, `h` HUGE, `i` IDLE, `r` recompressed, `n`
    /// INCOMPRESSIBLE (`.` when clear). In the kernel this is
    /// `/sys/kernel/debug/zram/zramN/block_state`, not a sysfs attribute; zmem
    /// offers it as the readable attribute `block_state` (empty while
    /// uninitialised).
    /// As 7.3 ([`KernelModel::seconds_ac_time`]) the time is whole seconds
    /// and the microseconds always `000000`.
    pub fn block_state_show(&self) -> String {
        let seconds = self.kernel.seconds_ac_time();
        let mut s = String::new();
        for info in self.block_state() {
            let t = info.ac_time_ns;
            let us = if seconds {
                0
            } else {
                (t % 1_000_000_000) / 1_000
            };
            s.push_str(&format!(
                "{:>12} {:>12}.{:06} {}\n",
                info.index,
                t / 1_000_000_000,
                us,
                info.flag_chars()
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Release;
    use zmem_codec::Params;

    fn text(seed: u8) -> Vec<u8> {
        let words: [&[u8]; 4] = [b"slot ", b"zspage ", b"handle ", b"class "];
        let mut p = Vec::with_capacity(PAGE_SIZE);
        let mut x = seed as u32 | 1;
        while p.len() < PAGE_SIZE {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            p.extend_from_slice(words[(x >> 16) as usize % 4]);
        }
        p.truncate(PAGE_SIZE);
        p
    }

    const RANGE_1: Targets = Targets {
        min: 1,
        max: 2,
        one: false,
    };

    fn dev() -> Zram {
        Zram::builder()
            .algorithm("lz4", Params::default())
            .secondary(1, "zstd", Params::default())
            .disksize(64 * PAGE_SIZE as u64)
            .build()
            .unwrap()
    }

    #[test]
    fn slot_accessed_after_the_scan_is_skipped() {
        let dev = dev();
        dev.write_page(0, &text(1)).unwrap();
        dev.write_page(1, &text(2)).unwrap();
        let g = dev.meta();
        let m = g.as_deref().unwrap();
        let p = RecompressParams::new();
        let mut ctl = PpCtl::new();
        m.scan_for_recompress(&p, RANGE_1, &mut ctl);
        assert_eq!(ctl.len(), 2);
        assert!(dev.slot_info(0).unwrap().pp_slot && dev.slot_info(1).unwrap().pp_slot);
        // A read between the scan and the processing clears PP_SLOT.
        let mut buf = vec![0u8; PAGE_SIZE];
        m.read_page(0, &mut buf).unwrap();
        assert!(!dev.slot_info(0).unwrap().pp_slot);
        let rep = m.recompress_buckets(&mut ctl, &p, RANGE_1).unwrap();
        assert_eq!(
            (rep.candidates, rep.attempted, rep.recompressed),
            (2, 1, 1),
            "{rep:?}"
        );
        assert_eq!(dev.slot_info(0).unwrap().priority, 0, "skipped");
        assert_eq!(dev.slot_info(1).unwrap().priority, 1);
        // A slot freed (overwritten) after the scan is skipped too.
        dev.write_page(2, &text(3)).unwrap();
        let mut ctl = PpCtl::new();
        m.scan_for_recompress(&p, RANGE_1, &mut ctl);
        m.write_page(2, &text(4), &std::sync::atomic::AtomicU64::new(0), false)
            .unwrap();
        let rep = m.recompress_buckets(&mut ctl, &p, RANGE_1).unwrap();
        // Candidates: slot 0 (still priority 0) and slot 2; only slot 0 is processed.
        assert_eq!((rep.candidates, rep.attempted), (2, 1), "{rep:?}");
        assert_eq!(dev.slot_info(0).unwrap().priority, 1);
        assert_eq!(
            dev.slot_info(2).unwrap().priority,
            0,
            "overwritten after the scan: skipped"
        );
        assert!(dev.block_state().iter().all(|s| !s.pp_slot));
        let mut b = vec![0u8; PAGE_SIZE];
        m.read_page(2, &mut b).unwrap();
        assert_eq!(b, text(4));
    }

    #[test]
    fn concurrent_pass_is_eagain() {
        let dev = dev();
        dev.write_page(0, &text(1)).unwrap();
        let g = dev.meta();
        let m = g.as_deref().unwrap();
        m.pp_in_progress.store(true, Release);
        let e = dev.recompress(&RecompressParams::new()).unwrap_err();
        assert_eq!(e.errno, Errno::EAGAIN);
        // Parse and threshold errors come before it.
        let e = dev
            .recompress(&RecompressParams::new().threshold(u32::MAX))
            .unwrap_err();
        assert_eq!(e.errno, Errno::EINVAL);
        m.pp_in_progress.store(false, Release);
        dev.recompress(&RecompressParams::new()).unwrap();
        assert!(!m.pp_in_progress.load(Relaxed), "released after the pass");
        assert_eq!(dev.slot_info(0).unwrap().priority, 1);
    }
}
