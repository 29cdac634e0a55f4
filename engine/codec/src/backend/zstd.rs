//! `zstd`: standard zstd frames (RFC 8878: magic, frame header with the
//! content size, no checksum), as `backend_zstd.c` writes them, so any libzstd
//! reads them. `level` defaults to 3 (`ZSTD_CLEVEL_DEFAULT`); negative levels
//! are zstd's fast modes; `dict=FILE` takes a zstd dictionary (from
//! `zstd --train` or `zmem dict`) or raw content.
//!
//! Bound to libzstd 1.5.7 through `zstd-safe`. Each stream owns one CCtx and
//! one DCtx, created once with the level and dictionary loaded, and reused
//! for every page (`ZSTD_compress2` / `ZSTD_decompressDCtx`).
//!
//! The kernels differ by the zstd in their `lib/zstd`, not by what zram asks
//! of it (engine/codec/tests/kernel_sizes.rs, 170 fixture pages, Debian's kernels;
//! the versions read from each kernel image, docs/codecs.md "Why zstd differs
//! on 6.1 and 6.12"):
//! * 7.3 (lib/zstd 1.5.7; `backend_zstd.c`: `zstd_get_params(level,
//!   PAGE_SIZE)`): every page equals libzstd 1.5.7's, at levels 1, 3 and 9.
//! * 6.12 (lib/zstd 1.5.2, imported in 6.2; the same backend): equal at
//!   levels 1 and 9. Level 3, the only double-fast level at page size,
//!   differs from 1.5.7 by upstream zstd's 632677516 (2024, in 1.5.7: which
//!   of a short and a long match double-fast keeps); for `Params::kernel`
//!   6.12 to 6.14 without a dictionary, level 3 runs 1.5.2's double-fast
//!   (`zstd_dfast.rs`) under libzstd 1.5.7's entropy stage
//!   (`zstd_producer.rs`), and every fixture page equals 6.12's.
//! * 6.1 (lib/zstd 1.4.10, imported in 5.16; the crypto API, `crypto/zstd.c`:
//!   `zstd_get_params(3, 0)` set one by one with the page as the pledged
//!   size, so `ZSTD_compress2` shrinks it to window 2^12, hash 2^13, chain
//!   2^12, min match 5, double-fast): for `Params::kernel` 5.16 to 6.1 at
//!   level 3 (zram there has no level to set) without a dictionary, 1.4.10's
//!   double-fast at those parameters runs under libzstd 1.5.7's entropy
//!   stage, and every fixture page equals 6.1's.

use zstd_safe::{CCtx, CParameter, DCtx, ParamSwitch};

use zmem_kernel::KernelSpan;

use super::check_page;
use super::zstd_dfast::Finder;
use super::zstd_producer::{crypto_dfast_params, dfast_params, OldDfast};
use crate::{
    AlgorithmInfo, Backend, CodecError, LevelRange, OutOfRange, ParamInfo, Params, Stream,
};

const NAME: &str = "zstd";
/// `ZSTD_CLEVEL_DEFAULT`.
pub const DEFAULT_LEVEL: i32 = 3;

/// What is known about `zstd` (the registry's facts).
pub static INFO: AlgorithmInfo = AlgorithmInfo {
    name: NAME,
    description: "zstd frames (RFC 8878) with content size, no checksum; libzstd via zstd-safe",
    params: &PARAMS,
    // backend_zstd.c passes the level to zstd_get_params(); lib/zstd clamps it to
    // ZSTD_minCLevel()..=ZSTD_MAX_CLEVEL (22).
    level: Some(LevelRange {
        min: -131072,
        max: 22,
        kernel: OutOfRange::Clamped,
    }),
    zram: Some(KernelSpan::since(4, 14)),
    zram_kconfig: Some("CONFIG_ZRAM_BACKEND_ZSTD"),
    crypto: Some(NAME),
    zswap: Some(KernelSpan::since(4, 14)),
};

/// The kernels whose zram calls `backend_zstd.c` (6.12 on: page-sized
/// parameters) on lib/zstd 1.5.2 (imported in 6.2; 1.5.7, with upstream's
/// new double-fast, came in 6.15 and is 7.3's): their double-fast level uses
/// 1.5.2's match finder. 6.2 to 6.11 also have 1.5.2, but zram reaches it
/// through the crypto API with `zstd_get_params(3, 0)`, other tables and
/// no fixture to check against, so they stay libzstd's own.
const LIB_ZSTD_1_5_2: KernelSpan = KernelSpan::between((6, 12), (6, 15));

/// The kernels with lib/zstd 1.4.10 (imported in 5.16; 1.5.2 came in 6.2),
/// whose zram reaches it through the crypto API at level 3.
const LIB_ZSTD_1_4_10: KernelSpan = KernelSpan::between((5, 16), (6, 2));

/// The `zstd` backend.
pub struct ZstdBackend;
/// The `zstd` backend (registry entry).
pub static ZSTD: ZstdBackend = ZstdBackend;

const PARAMS: [ParamInfo; 2] = [
    ParamInfo {
        key: "level",
        default: "3",
        range: "-131072..=22",
        help: "compression level; negative levels are faster, 0 means the default",
    },
    ParamInfo {
        key: "dict",
        default: "none",
        range: "FILE",
        help: "zstd dictionary (zstd --train, zmem dict) or raw content",
    },
];

fn error_name(code: usize) -> &'static str {
    zstd_safe::get_error_name(code)
}

impl Backend for ZstdBackend {
    fn info(&self) -> &'static AlgorithmInfo {
        &INFO
    }
    fn new_stream(&self, params: &Params) -> Result<Box<dyn Stream>, CodecError> {
        params.reject_winbits(NAME)?;
        let level = params.level_in(
            NAME,
            DEFAULT_LEVEL,
            zstd_safe::min_c_level(),
            zstd_safe::max_c_level(),
        )?;
        let lib = |what: &str, code: usize| CodecError::Library {
            algo: NAME,
            reason: format!("{what}: {}", error_name(code)),
        };
        let dfast = old_dfast(params, level);
        let mut cctx = CCtx::try_create().ok_or_else(|| CodecError::Library {
            algo: NAME,
            reason: "cannot create a CCtx".into(),
        })?;
        let mut dctx = DCtx::try_create().ok_or_else(|| CodecError::Library {
            algo: NAME,
            reason: "cannot create a DCtx".into(),
        })?;
        cctx.set_parameter(CParameter::CompressionLevel(level))
            .map_err(|c| lib("set level", c))?;
        cctx.set_parameter(CParameter::ChecksumFlag(false))
            .map_err(|c| lib("set checksum", c))?;
        cctx.set_parameter(CParameter::ContentSizeFlag(true))
            .map_err(|c| lib("set content size", c))?;
        // The kernel's lib/zstd is built without SIMD (no __SSE2__, no
        // __ARM_NEON), so its row-based match finder runs only above a 2^17
        // window, never on a page; libzstd here has SIMD and would use it
        // from 2^15 (a 64 KiB page). At 4 and 16 KiB this changes nothing.
        cctx.set_parameter(CParameter::UseRowMatchFinder(ParamSwitch::Disable))
            .map_err(|c| lib("set row match finder", c))?;
        if let Some(dict) = params.dict_slice() {
            if dict.is_empty() {
                return Err(CodecError::invalid_param(NAME, "dict is empty"));
            }
            let bad = |c: usize| {
                CodecError::invalid_param(NAME, format!("dict is not usable: {}", error_name(c)))
            };
            cctx.load_dictionary(dict).map_err(bad)?;
            dctx.load_dictionary(dict).map_err(bad)?;
        }
        let cctx = match dfast {
            Some((finder, p)) => Cctx::OldDfast(
                OldDfast::new(level, finder, p)
                    .map_err(|reason| CodecError::Library { algo: NAME, reason })?,
            ),
            None => Cctx::Lib(cctx),
        };
        Ok(Box::new(ZstdStream { cctx, dctx }))
    }
}

/// The old double-fast a stream runs, and its parameters, when it writes
/// as a kernel with lib/zstd 1.5.2 at a double-fast level or with 1.4.10 at
/// the crypto API's level 3; `None`: libzstd's own. Never with a dictionary
/// (libzstd does not pass one to a sequence producer).
fn old_dfast(params: &Params, level: i32) -> Option<(Finder, (u32, u32, u32))> {
    let kernel = params.kernel.filter(|_| params.dict.is_none())?;
    let page = params.page();
    if LIB_ZSTD_1_5_2.contains(kernel) {
        dfast_params(level, page).map(|p| (Finder::V1_5_2, p))
    } else if LIB_ZSTD_1_4_10.contains(kernel) && level == DEFAULT_LEVEL {
        Some((Finder::V1_4_10, crypto_dfast_params(page)))
    } else {
        None
    }
}

/// libzstd's compressor, or libzstd's entropy stage over an old double-fast.
enum Cctx {
    Lib(CCtx<'static>),
    OldDfast(OldDfast),
}

struct ZstdStream {
    cctx: Cctx,
    dctx: DCtx<'static>,
}

impl Stream for ZstdStream {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
        check_page(NAME, src)?;
        let n = match &mut self.cctx {
            Cctx::Lib(c) => c.compress2(dst, src),
            Cctx::OldDfast(c) => c.compress(dst, src),
        };
        n.map_err(|code| {
            let name = error_name(code);
            if name.contains("too small") {
                CodecError::DstTooSmall {
                    capacity: dst.len(),
                }
            } else {
                CodecError::Library {
                    algo: NAME,
                    reason: name.to_string(),
                }
            }
        })
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
        let n = self
            .dctx
            .decompress(dst, src)
            .map_err(|code| CodecError::corrupt(NAME, error_name(code)))?;
        if n != dst.len() {
            return Err(CodecError::corrupt(
                NAME,
                format!("decodes to {n} bytes, expected {}", dst.len()),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_kernel::KernelVersion;

    #[test]
    fn the_old_finders_are_for_5_16_to_6_14_without_a_dictionary() {
        let at = |major, minor| Params {
            kernel: Some(KernelVersion::new(major, minor)),
            ..Params::default()
        };
        let finder = |p: &Params, level| old_dfast(p, level).map(|(f, _)| f);
        assert_eq!(finder(&at(6, 12), 3), Some(Finder::V1_5_2));
        assert_eq!(finder(&at(6, 14), 3), Some(Finder::V1_5_2));
        assert_eq!(finder(&at(6, 12), 9), None, "lazy2 at level 9");
        assert_eq!(finder(&at(6, 1), 3), Some(Finder::V1_4_10));
        assert_eq!(finder(&at(5, 16), 3), Some(Finder::V1_4_10));
        assert_eq!(finder(&at(6, 1), 9), None, "the crypto API has no level");
        assert_eq!(finder(&at(5, 15), 3), None, "the older kernel port");
        assert_eq!(
            finder(&at(6, 11), 3),
            None,
            "1.5.2 through the crypto API: no fixture"
        );
        assert_eq!(finder(&at(6, 15), 3), None, "lib/zstd 1.5.7");
        assert_eq!(finder(&at(7, 3), 3), None, "lib/zstd 1.5.7");
        assert_eq!(finder(&Params::default(), 3), None, "the newest kernel");
        assert_eq!(finder(&at(6, 12).dict_bytes(vec![1; 64]), 3), None);
        assert_eq!(finder(&at(6, 1).dict_bytes(vec![1; 64]), 3), None);
    }
}
