//! `lz4`: the LZ4 block format (no frame, no header; the page size is known),
//! as the kernel's `backend_lz4.c` (6.12 on) and the crypto API's
//! `crypto/lz4.c` (before) write it. `level` is the acceleration (default 1,
//! as `LZ4_ACCELERATION_DEFAULT`; the crypto API always uses 1); `dict=FILE`
//! loads a dictionary once per stream and attaches it to every page, as the
//! kernel does.
//!
//! The encoder is our own [`compress`]: the kernel's `lib/lz4/lz4_compress.c`
//! (`LZ4_compress_fast`, the same from 4.11 to at least 7.3), so pages
//! compress to the kernel's bytes (engine/codec/tests/kernel_sizes.rs: every page on
//! Debian's 6.1, 6.12 and 7.3). liblz4 1.10, used before, differed on 2 of
//! the 170 fixture pages. The decoder is liblz4 1.10 through `lzzzz`.

mod compress;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use lzzzz::lz4 as lib;

use compress::FastCompressor;

use zmem_kernel::KernelSpan;

use super::check_page;
use crate::{
    AlgorithmInfo, Backend, CodecError, LevelRange, OutOfRange, ParamInfo, Params, Stream,
};

const NAME: &str = "lz4";
/// `LZ4_ACCELERATION_DEFAULT`.
pub const DEFAULT_ACCELERATION: i32 = 1;
/// `LZ4_ACCELERATION_MAX`.
pub const MAX_ACCELERATION: i32 = 65537;

/// What is known about `lz4` (the registry's facts).
pub static INFO: AlgorithmInfo = AlgorithmInfo {
    name: NAME,
    description:
        "LZ4 block format from the kernel's fast compressor (own encoder), no frame; liblz4 decoder",
    params: &PARAMS,
    // backend_lz4.c passes the level as LZ4_compress_fast()'s acceleration; the kernel's
    // lib/lz4 turns one below 1 into 1 and has no upper bound (lz4 1.9's 65537 is not there).
    level: Some(LevelRange {
        min: 1,
        max: MAX_ACCELERATION,
        kernel: OutOfRange::Taken,
    }),
    zram: Some(KernelSpan::since(3, 15)),
    zram_kconfig: Some("CONFIG_ZRAM_BACKEND_LZ4"),
    crypto: Some(NAME),
    zswap: Some(KernelSpan::since(3, 11)),
};

/// The `lz4` backend.
pub struct Lz4Backend;
/// The `lz4` backend (registry entry).
pub static LZ4: Lz4Backend = Lz4Backend;

const PARAMS: [ParamInfo; 2] = [
    ParamInfo {
        key: "level",
        default: "1",
        range: "1..=65537",
        help: "acceleration: higher is faster with a lower ratio",
    },
    ParamInfo {
        key: "dict",
        default: "none",
        range: "FILE",
        help: "dictionary file (raw bytes; the last 64 KiB are used)",
    },
];

impl Backend for Lz4Backend {
    fn info(&self) -> &'static AlgorithmInfo {
        &INFO
    }
    fn new_stream(&self, params: &Params) -> Result<Box<dyn Stream>, CodecError> {
        params.reject_winbits(NAME)?;
        let acceleration = params.level_in(NAME, DEFAULT_ACCELERATION, 1, MAX_ACCELERATION)?;
        if params.dict.as_ref().is_some_and(|d| d.is_empty()) {
            return Err(CodecError::invalid_param(NAME, "dict is empty"));
        }
        Ok(Box::new(Lz4Stream {
            enc: FastCompressor::new(acceleration, params.dict_slice()),
            dict: params.dict.clone(),
        }))
    }
}

struct Lz4Stream {
    enc: FastCompressor,
    dict: Option<Arc<Vec<u8>>>,
}

impl Stream for Lz4Stream {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
        check_page(NAME, src)?;
        self.enc.compress(src, dst)
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
        let n = match &self.dict {
            None => lib::decompress(src, dst),
            Some(d) => lib::decompress_with_dict(src, dst, d),
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
