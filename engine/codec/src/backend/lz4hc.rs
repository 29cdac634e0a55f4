//! `lz4hc`: the LZ4 block format written by the high-compression match finder
//! (`backend_lz4hc.c`, the crypto API's `crypto/lz4hc.c` before 6.12). The
//! output is plain LZ4, decoded by the same decoder. `level` is the HC level
//! 1..=12 (default 9, `LZ4HC_DEFAULT_CLEVEL`): `1 << (level - 1)` chain steps
//! per search. `dict=FILE` as for lz4 (its last 64 KiB).
//!
//! The encoder is our own [`compress`]: the kernel's `lib/lz4/lz4hc_compress.c`
//! (the LZ4 1.7.3 lineage, the same in every kernel from 4.11 to at least 7.3,
//! with no optimal parser at any level), so pages compress to the kernel's
//! bytes (engine/codec/tests/kernel_sizes.rs: every page at levels 4, 9 and 12 on
//! Debian's 6.1, 6.12 and 7.3). liblz4 1.10, used before, wrote 0.04 % (level
//! 9) to 0.16 % (level 12, its optimal parser) fewer bytes than the kernel.
//! The decoder is liblz4 1.10 through `lzzzz`.

mod compress;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use lzzzz::lz4;

use compress::HcCompressor;

use zmem_kernel::KernelSpan;

use super::check_page;
use crate::{
    AlgorithmInfo, Backend, CodecError, LevelRange, OutOfRange, ParamInfo, Params, Stream,
};

const NAME: &str = "lz4hc";
/// `LZ4HC_DEFAULT_CLEVEL`.
pub const DEFAULT_LEVEL: i32 = 9;
/// `LZ4HC_CLEVEL_MAX`.
pub const MAX_LEVEL: i32 = 12;

/// What is known about `lz4hc` (the registry's facts).
pub static INFO: AlgorithmInfo = AlgorithmInfo {
    name: NAME,
    description:
        "LZ4 block format from the kernel's HC match finder (own encoder), no frame; liblz4 decoder",
    params: &PARAMS,
    // lib/lz4/lz4hc_compress.c: above LZ4HC_MAX_CLEVEL (16 in include/linux/lz4.h) → 16,
    // below 1 → the default 9. The engine stops at 12 (13..=16 are refused here).
    level: Some(LevelRange {
        min: 1,
        max: MAX_LEVEL,
        kernel: OutOfRange::Clamped,
    }),
    zram: Some(KernelSpan::since(4, 7)),
    zram_kconfig: Some("CONFIG_ZRAM_BACKEND_LZ4HC"),
    crypto: Some(NAME),
    zswap: Some(KernelSpan::since(3, 11)),
};

/// The `lz4hc` backend.
pub struct Lz4HcBackend;
/// The `lz4hc` backend (registry entry).
pub static LZ4HC: Lz4HcBackend = Lz4HcBackend;

const PARAMS: [ParamInfo; 2] = [
    ParamInfo {
        key: "level",
        default: "9",
        range: "1..=12",
        help: "HC level: 2^(level-1) chain steps per search; higher is slower with a better ratio",
    },
    ParamInfo {
        key: "dict",
        default: "none",
        range: "FILE",
        help: "dictionary file (raw bytes; the last 64 KiB are used)",
    },
];

impl Backend for Lz4HcBackend {
    fn info(&self) -> &'static AlgorithmInfo {
        &INFO
    }
    fn new_stream(&self, params: &Params) -> Result<Box<dyn Stream>, CodecError> {
        params.reject_winbits(NAME)?;
        let level = params.level_in(NAME, DEFAULT_LEVEL, 1, MAX_LEVEL)?;
        if params.dict.as_ref().is_some_and(|d| d.is_empty()) {
            return Err(CodecError::invalid_param(NAME, "dict is empty"));
        }
        Ok(Box::new(Lz4HcStream {
            enc: HcCompressor::new(level, params.dict_slice()),
            dict: params.dict.clone(),
        }))
    }
}

struct Lz4HcStream {
    enc: HcCompressor,
    dict: Option<Arc<Vec<u8>>>,
}

impl Stream for Lz4HcStream {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
        check_page(NAME, src)?;
        self.enc.compress(src, dst)
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
        let n = match &self.dict {
            None => lz4::decompress(src, dst),
            Some(d) => lz4::decompress_with_dict(src, dst, d),
        }
        .map_err(|_| CodecError::corrupt(NAME, "malformed LZ4 block"))?;
        if n != dst.len() {
            return Err(CodecError::corrupt(
                NAME,
                format!("decodes to {n} bytes, expected {}", dst.len()),
            ));
        }
        Ok(())
    }
}
