//! zstd frames as an older lib/zstd writes them at a double-fast level:
//! our [`DoubleFast`] (1.4.10's or 1.5.2's match finder) registered on a
//! libzstd 1.5.7 CCtx as its block-level external sequence producer
//! (`ZSTD_registerSequenceProducer`), so 1.5.7's entropy stage encodes the
//! old finder's sequences. That stage equals 1.5.2's (levels 1 and 9 give
//! 6.12's bytes) and 1.4.10's (at level 9, lazy2, which neither version
//! changed at page size, 1.4.10 and 1.5.2 give every fixture page the same
//! length; docs/codecs.md "Why zstd differs on 6.1 and 6.12").
//!
//! The fallback to libzstd's own match finder is off, so a producer error
//! fails the compression instead of silently writing 1.5.7's bytes.
//! Repcodes: libzstd turns raw offsets into repcodes itself
//! (`ZSTD_finalizeOffBase`) only when `searchForExternalRepcodes` is on,
//! and then also for a new offset that happens to equal an older repcode,
//! which the old double-fast stores as a new offset. With it off (its
//! default below level 10) libzstd stores `offset + 3` as the sequence's
//! offset code, unchecked (`validateSequences` off); so the producer passes
//! each sequence's offset code minus 3, and repcode 1 (code 1) as
//! `1 - 3` modulo 2^32, which libzstd's `OFFSET_TO_OFFBASE` turns back into
//! code 1. The sequence store then holds exactly the old finder's offset codes.

use std::ffi::{c_int, c_uint, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

use zstd_sys as sys;

use super::zstd_dfast::{DoubleFast, Finder, Sequence};
use crate::PAGE_SIZE;

/// `ZSTD_SEQUENCE_PRODUCER_ERROR`.
const PRODUCER_ERROR: usize = usize::MAX;

/// The match finder's parameters (`hashLog`, `chainLog`, `minMatch`) when
/// `level` at a page of `page` bytes is a double-fast level
/// (`ZSTD_getCParams(level, PAGE_SIZE, 0)`, the table and size adjustment
/// 1.5.2 and 1.5.7 share: level 3 only at 4 KiB), `None` otherwise.
pub(super) fn dfast_params(level: i32, page: usize) -> Option<(u32, u32, u32)> {
    // SAFETY: a pure function of its arguments, no pointers.
    let cp = unsafe { sys::ZSTD_getCParams(level, page as u64, 0) };
    (cp.strategy == sys::ZSTD_strategy::ZSTD_dfast).then_some((
        cp.hashLog,
        cp.chainLog,
        cp.minMatch,
    ))
}

/// The match finder's parameters behind 6.1's crypto API (`crypto/zstd.c`):
/// `zstd_get_params(3, 0)` (the row for an unknown source size: window
/// 2^21, hash 2^17, chain 2^16, min match 5, double-fast), set one by one
/// with the page as the pledged source size, which `ZSTD_compress2` shrinks
/// to the page (`ZSTD_adjustCParams`; at 4 KiB: window 2^12, hash 2^13,
/// chain 2^12).
pub(super) fn crypto_dfast_params(page: usize) -> (u32, u32, u32) {
    // SAFETY: pure functions of their arguments, no pointers.
    let cp = unsafe { sys::ZSTD_adjustCParams(sys::ZSTD_getCParams(3, 0, 0), page as u64, 0) };
    (cp.hashLog, cp.chainLog, cp.minMatch)
}

/// The producer's state, boxed so its address stays where libzstd keeps it.
struct Producer {
    finder: DoubleFast,
    seqs: Vec<Sequence>,
}

/// A libzstd CCtx with an old double-fast as its sequence producer.
pub(super) struct OldDfast {
    // Dropped (freed) before the producer it points to.
    cctx: NonNull<sys::ZSTD_CCtx>,
    producer: Box<Producer>,
}

// SAFETY: the CCtx and the producer it points to are owned by this value
// alone and used only through `&mut self`; libzstd's CCtx has no thread
// affinity (it may be used from any thread, one at a time).
unsafe impl Send for OldDfast {}

impl Drop for OldDfast {
    fn drop(&mut self) {
        // SAFETY: created by ZSTD_createCCtx in `new`, freed once, here.
        unsafe { sys::ZSTD_freeCCtx(self.cctx.as_ptr()) };
    }
}

/// libzstd's name for an error code.
pub(super) fn error_name(code: usize) -> &'static str {
    // SAFETY: ZSTD_getErrorName returns a static NUL-terminated string for
    // any value.
    unsafe { CStr::from_ptr(sys::ZSTD_getErrorName(code)) }
        .to_str()
        .unwrap_or("unknown error")
}

fn is_error(code: usize) -> bool {
    // SAFETY: a pure function of its argument.
    unsafe { sys::ZSTD_isError(code) != 0 }
}

impl OldDfast {
    /// A CCtx at `level` (a double-fast level) writing frames with the
    /// content size and no checksum, its sequences from `finder` with the
    /// tables and minimum match of `(hash_log, chain_log, min_match)`.
    pub(super) fn new(
        level: i32,
        finder: Finder,
        (hash_log, chain_log, min_match): (u32, u32, u32),
    ) -> Result<Self, String> {
        // SAFETY: no arguments; NULL (checked) when out of memory.
        let cctx = NonNull::new(unsafe { sys::ZSTD_createCCtx() }).ok_or("cannot create a CCtx")?;
        let mut this = OldDfast {
            cctx,
            producer: Box::new(Producer {
                finder: DoubleFast::new(finder, hash_log, chain_log, min_match),
                seqs: Vec::with_capacity(PAGE_SIZE / 3),
            }),
        };
        use sys::ZSTD_cParameter::*;
        let disable = sys::ZSTD_ParamSwitch_e::ZSTD_ps_disable as c_int;
        for (what, param, value) in [
            ("set level", ZSTD_c_compressionLevel, level),
            ("set checksum", ZSTD_c_checksumFlag, 0),
            ("set content size", ZSTD_c_contentSizeFlag, 1),
            // ZSTD_c_enableSeqProducerFallback
            ("disable the fallback", ZSTD_c_experimentalParam17, 0),
            // ZSTD_c_searchForExternalRepcodes
            ("keep offset codes", ZSTD_c_experimentalParam19, disable),
            // ZSTD_c_validateSequences (the repcode codes above do not pass it)
            ("no validation", ZSTD_c_experimentalParam12, 0),
        ] {
            // SAFETY: a live CCtx; a parameter and value libzstd checks.
            let code = unsafe { sys::ZSTD_CCtx_setParameter(this.cctx.as_ptr(), param, value) };
            if is_error(code) {
                return Err(format!("{what}: {}", error_name(code)));
            }
        }
        let state: *mut Producer = &mut *this.producer;
        // SAFETY: `state` points into the box `this` owns, which does not
        // move and outlives the CCtx (freed first, in Drop); `produce`
        // matches ZSTD_sequenceProducer_F.
        unsafe {
            sys::ZSTD_registerSequenceProducer(this.cctx.as_ptr(), state.cast(), Some(produce))
        };
        Ok(this)
    }

    /// `ZSTD_compress2`: the frame's length, or libzstd's error code.
    pub(super) fn compress(&mut self, dst: &mut [u8], src: &[u8]) -> Result<usize, usize> {
        // SAFETY: a live CCtx; dst and src are valid for their lengths; the
        // producer it calls only reads `src` and writes the sequence buffer
        // libzstd hands it.
        let n = unsafe {
            sys::ZSTD_compress2(
                self.cctx.as_ptr(),
                dst.as_mut_ptr().cast(),
                dst.len(),
                src.as_ptr().cast(),
                src.len(),
            )
        };
        if is_error(n) {
            Err(n)
        } else {
            Ok(n)
        }
    }
}

/// The sequence producer libzstd calls per block: the old double-fast over
/// the block, then the block delimiter with the last literals.
unsafe extern "C" fn produce(
    state: *mut c_void,
    out: *mut sys::ZSTD_Sequence,
    capacity: usize,
    src: *const c_void,
    size: usize,
    _dict: *const c_void,
    _dict_size: usize,
    _level: c_int,
    _window: usize,
) -> usize {
    // SAFETY: `state` is the Producer registered in OldDfast::new, used
    // only during that CCtx's ZSTD_compress2 on the same thread; libzstd
    // passes the block (`src`, `size`) and a sequence buffer of `capacity`.
    let (producer, src) = unsafe {
        (
            &mut *state.cast::<Producer>(),
            std::slice::from_raw_parts(src.cast::<u8>(), size),
        )
    };
    let Ok(last) = catch_unwind(AssertUnwindSafe(|| {
        producer.finder.parse(src, &mut producer.seqs)
    })) else {
        return PRODUCER_ERROR;
    };
    if producer.seqs.len() + 1 > capacity {
        return PRODUCER_ERROR;
    }
    // SAFETY: libzstd's buffer holds `capacity` sequences, checked above.
    let out = unsafe { std::slice::from_raw_parts_mut(out, capacity) };
    for (o, q) in out.iter_mut().zip(&producer.seqs) {
        *o = sys::ZSTD_Sequence {
            offset: q.off_base.wrapping_sub(3) as c_uint,
            litLength: q.lit,
            matchLength: q.ml,
            rep: 0,
        };
    }
    out[producer.seqs.len()] = sys::ZSTD_Sequence {
        offset: 0,
        litLength: last as c_uint,
        matchLength: 0,
        rep: 0,
    };
    producer.seqs.len() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_level_3_is_double_fast_at_page_size() {
        assert_eq!(dfast_params(3, PAGE_SIZE), Some((13, 12, 4)));
        for level in [-5, 1, 2, 4, 9, 19] {
            assert_eq!(dfast_params(level, PAGE_SIZE), None, "level {level}");
        }
    }

    #[test]
    fn the_crypto_api_parameters_shrink_to_the_page() {
        assert_eq!(crypto_dfast_params(PAGE_SIZE), (13, 12, 5));
    }

    /// Frames from either old finder decode with plain libzstd, page after
    /// page on one CCtx (the tables carry over, the window does not).
    #[test]
    fn frames_round_trip_through_libzstd() {
        round_trip(Finder::V1_5_2, dfast_params(3, PAGE_SIZE).unwrap());
        round_trip(Finder::V1_4_10, crypto_dfast_params(PAGE_SIZE));
    }

    fn round_trip(finder: Finder, params: (u32, u32, u32)) {
        let mut c = OldDfast::new(3, finder, params).unwrap();
        let mut x = 1u32;
        let mut pages = Vec::new();
        for kind in 0..6u32 {
            let page: Vec<u8> = (0..PAGE_SIZE as u32)
                .map(|i| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    match kind {
                        0 => (i % 251) as u8,
                        1 => (x >> 24) as u8,
                        2 if i % 16 < 12 => 0,
                        3 => b"heap: 0x7ffd1234 -> node { next, prev } "[i as usize % 40],
                        _ => ((x >> 28) as u8) & (kind as u8),
                    }
                })
                .collect();
            pages.push(page);
        }
        let mut dst = vec![0u8; 2 * PAGE_SIZE];
        for page in pages.iter().chain(&pages) {
            let n = c.compress(&mut dst, page).expect("compress");
            let mut out = vec![0u8; PAGE_SIZE];
            assert_eq!(
                zstd_safe::decompress(&mut out[..], &dst[..n]),
                Ok(PAGE_SIZE)
            );
            assert_eq!(&out, page, "{finder:?}");
        }
        assert!(
            matches!(c.compress(&mut dst[..8], &pages[0]), Err(e) if error_name(e).contains("too small"))
        );
    }
}
