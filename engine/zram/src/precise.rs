//! Precise recompression (zmem extension of `recompress`): `from=ALGO`
//! selects the slots by the algorithm that stored them — the fast algorithm
//! (slots flagged FAST) or a configured priority — and recompresses them with
//! `algo=` (any configured algorithm, the primary included) or, by default,
//! the **primary**. This is how fast-path slots go back to the primary; the
//! kernel's syntax only moves slots to a higher secondary priority.
//!
//! Rules (the kernel's where they apply, see [`crate::recompress`]):
//! * checks: parse errors, `threshold >= huge_class_size`, not initialised,
//!   another pass (EAGAIN) as the kernel's; then `from=` must name the fast
//!   algorithm or a configured one, `algo=` a configured one (EINVAL), the
//!   two must differ (EINVAL), and `priority=` is refused (EINVAL: the target
//!   is chosen by `algo=`);
//! * candidates: allocated, type filter (`idle`, `huge`, `huge_idle`), not WB
//!   or SAME or UNMOVED, stored by `from`. INCOMPRESSIBLE does not exclude a slot (it
//!   says the *secondary* algorithms made no progress);
//! * largest first through the pp buckets with PP_SLOT; a slot accessed or
//!   freed since the scan is skipped; below `threshold` skipped without
//!   consuming `max_pages`; every slot that is compressed consumes one;
//! * progress: the new object lands in the **same or a smaller** size class
//!   (same class costs the same allocator memory and moves the slot off the
//!   source algorithm) and under the threshold (if any). A HUGE slot whose
//!   page is still huge with the target is relabelled in place when the
//!   target is the primary (the raw page is what a primary write stores);
//! * no progress: the slot keeps its object and is **not** flagged
//!   INCOMPRESSIBLE (that is the secondaries' verdict); it gets the zmem flag
//!   UNMOVED instead, and later precise passes skip it until it is rewritten
//!   (kernel-syntax `recompress` to a secondary still takes it); IDLE is
//!   cleared as in the kernel's pass;
//! * success: `slot_free` semantics (huge_pages−1 if it was huge,
//!   compr_data_size −old +new), new handle, size and priority, FAST cleared;
//!   unlike the kernel's pass the slot keeps its access time, so pages that
//!   came back from the fast path do not look idle for writeback at once.

use zmem_codec::CodecError;

use crate::device::Meta;
use crate::pp::PpCtl;
use crate::recompress::{RecompressParams, RecompressReport, SECONDARY};
use crate::slot::Flag;
use crate::streams::{MAX_COMPS, PRIMARY};
use zmem_kernel::{AttrError, Errno};

impl Meta {
    /// `recompress from=…` after the kernel's common checks (pp_in_progress held).
    pub(crate) fn precise_pass(
        &self,
        p: &RecompressParams,
        from: &str,
        names: &[Option<String>; MAX_COMPS],
    ) -> Result<RecompressReport, AttrError> {
        if p.prio_param.is_some() || (p.prio, p.prio_max) != (SECONDARY as u32, MAX_COMPS as u32) {
            return Err(AttrError::new(
                Errno::EINVAL,
                "recompress from=: choose the target with algo= (priority= is for the kernel syntax)",
            ));
        }
        let configured = |q: usize| self.comps[q].is_some() && names[q].is_some();
        let known_from = self.fast.as_ref().is_some_and(|c| c.name == from)
            || (0..MAX_COMPS).any(|q| configured(q) && names[q].as_deref() == Some(from));
        if !known_from {
            return Err(AttrError::new(
                Errno::EINVAL,
                format!(
                    "from={from}: not the fast algorithm nor a configured algorithm of this device"
                ),
            ));
        }
        let target = match &p.algo {
            None => PRIMARY,
            Some(a) => (0..MAX_COMPS)
                .find(|&q| configured(q) && names[q].as_deref() == Some(a.as_str()))
                .ok_or_else(|| {
                    AttrError::new(
                        Errno::EINVAL,
                        format!("algo={a}: not a configured algorithm"),
                    )
                })?,
        };
        let target_name = self.comps[target].as_ref().map(|c| c.name).unwrap_or("");
        if target_name == from {
            return Err(AttrError::new(
                Errno::EINVAL,
                format!("from={from} and the target ({target_name}) are the same algorithm"),
            ));
        }
        let mut ctl = PpCtl::for_page(self.page);
        self.scan_candidates(p, &mut ctl, |g| {
            g.test(Flag::Unmoved) || self.stored_by(g) != Some(from)
        });
        self.process_candidates(&mut ctl, p.max_pages, |index, page, buf, budget, rep| {
            self.precise_slot(index, page, buf, budget, p.threshold, target, rep)
        })
    }

    /// One slot of a precise pass.
    #[allow(clippy::too_many_arguments)]
    fn precise_slot(
        &self,
        index: usize,
        page: &mut [u8],
        buf: &mut [u8],
        budget: &mut u64,
        threshold: u32,
        target: usize,
        rep: &mut RecompressReport,
    ) -> Result<(), AttrError> {
        let Some((mut g, size_old)) = self.lock_candidate(index, threshold, page)? else {
            return Ok(());
        };
        let comp = self.comps[target].as_ref().ok_or_else(|| {
            AttrError::new(Errno::EINVAL, format!("no compressor of priority {target}"))
        })?;
        let res = comp.streams.compress(page, buf);
        if *budget != 0 {
            *budget -= 1;
        }
        rep.attempted += 1;
        let len = match res {
            Ok(n) => n,
            Err(CodecError::DstTooSmall { .. }) => usize::MAX,
            Err(e) => {
                return Err(AttrError::new(
                    Errno::EIO,
                    format!("recompress: {} failed: {e}", comp.name),
                ))
            }
        };
        let under_threshold = |n: usize| threshold == 0 || n < threshold as usize;
        if len >= self.huge_class_size {
            // Still huge with the target: the object is the raw page either way.
            if g.test(Flag::Huge) && target == PRIMARY && under_threshold(self.page) {
                g.clear(Flag::Fast);
                g.set_priority(PRIMARY as u8);
                rep.recompressed += 1;
                rep.bytes_before += size_old as u64;
                rep.bytes_after += size_old as u64;
            } else {
                g.set(Flag::Unmoved);
            }
            return Ok(());
        }
        let class_old = self.pool.class_index(size_old);
        if self.pool.class_index(len) > class_old || !under_threshold(len) {
            g.set(Flag::Unmoved);
            return Ok(());
        }
        self.install_recompressed(g, &buf[..len], target, true, rep)
    }
}
