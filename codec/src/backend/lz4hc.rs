//! `lz4hc`: the LZ4 block format written by the high-compression match finder
//! (`backend_lz4hc.c`). The output is plain LZ4, decoded by the same decoder.
//! `level` is the HC level 1..=12 (default 9, `LZ4HC_DEFAULT_CLEVEL`; 10..=12
//! use the optimal parser). `dict=FILE` as for lz4.
//!
//! Bound to liblz4 1.10 through `lzzzz`: without a dictionary it uses lzzzz's
//! per-thread HC state (the `lz4` crate mallocs the 256 KiB HC state per call).

use std::sync::Arc;

use lzzzz::{lz4, lz4_hc as lib};

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
    description: "LZ4 block format from the HC match finder, no frame; liblz4 via lzzzz",
    params: &PARAMS,
    // lib/lz4/lz4hc_compress.c: above LZ4HC_MAX_CLEVEL (12) → 12, below 1 → the default 9.
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
        help: "HC level: higher is slower with a better ratio (10..=12: optimal parser)",
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
        let dict = match &params.dict {
            None => None,
            Some(d) => Some(HcDict::new(d.clone(), level)?),
        };
        Ok(Box::new(Lz4HcStream { level, dict }))
    }
}

struct HcDict {
    bytes: Arc<Vec<u8>>,
    // lzzzz keeps the HC state on the heap, so `work` may point at it after attach.
    loaded: lib::Compressor<'static>,
    work: lib::Compressor<'static>,
}

impl HcDict {
    fn new(bytes: Arc<Vec<u8>>, level: i32) -> Result<Self, CodecError> {
        if bytes.is_empty() {
            return Err(CodecError::invalid_param(NAME, "dict is empty"));
        }
        let lib_err = |e: lzzzz::Error| CodecError::Library {
            algo: NAME,
            reason: e.to_string(),
        };
        let loaded =
            lib::Compressor::with_dict(bytes.as_slice().to_vec(), level).map_err(lib_err)?;
        let mut work = lib::Compressor::new().map_err(lib_err)?;
        work.set_compression_level(level);
        Ok(HcDict {
            bytes,
            loaded,
            work,
        })
    }
}

struct Lz4HcStream {
    level: i32,
    dict: Option<HcDict>,
}

impl Stream for Lz4HcStream {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
        check_page(NAME, src)?;
        let r = match &mut self.dict {
            None => lib::compress(src, dst, self.level),
            Some(d) => {
                d.work.attach_dict(None, self.level);
                d.work.attach_dict(Some(&d.loaded), self.level);
                d.work.next(src, dst)
            }
        };
        r.map_err(|_| CodecError::DstTooSmall {
            capacity: dst.len(),
        })
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
        let n = match &self.dict {
            None => lz4::decompress(src, dst),
            Some(d) => lz4::decompress_with_dict(src, dst, &d.bytes),
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
