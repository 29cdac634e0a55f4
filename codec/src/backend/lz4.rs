//! `lz4`: the LZ4 block format (no frame, no header; the page size is known),
//! as the kernel's `backend_lz4.c` writes it. `level` is the acceleration
//! (default 1, as `LZ4_ACCELERATION_DEFAULT`); `dict=FILE` loads a dictionary
//! once per stream and attaches it to every page, as the kernel does.
//!
//! Bound to liblz4 1.10 through `lzzzz` (see docs/codecs.md for the choice).
//! Without a dictionary, compression uses lzzzz's per-thread LZ4 state, so no
//! page allocates or initialises a context.

use std::sync::Arc;

use lzzzz::lz4 as lib;

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
    description: "LZ4 block format (lz4_Block_format.md), no frame; liblz4 via lzzzz",
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
        let dict = match &params.dict {
            None => None,
            Some(d) => Some(Lz4Dict::new(d.clone())?),
        };
        Ok(Box::new(Lz4Stream { acceleration, dict }))
    }
}

/// A dictionary loaded once: `loaded` holds liblz4's tables for it; `work` is
/// the per-page stream it is attached to.
struct Lz4Dict {
    bytes: Arc<Vec<u8>>,
    // Boxed so its address stays fixed: `work` points at it after attach.
    loaded: Box<lib::Compressor<'static>>,
    work: lib::Compressor<'static>,
}

impl Lz4Dict {
    fn new(bytes: Arc<Vec<u8>>) -> Result<Self, CodecError> {
        if bytes.is_empty() {
            return Err(CodecError::invalid_param(NAME, "dict is empty"));
        }
        let lib_err = |e: lzzzz::Error| CodecError::Library {
            algo: NAME,
            reason: e.to_string(),
        };
        let loaded =
            Box::new(lib::Compressor::with_dict(bytes.as_slice().to_vec()).map_err(lib_err)?);
        let work = lib::Compressor::new().map_err(lib_err)?;
        Ok(Lz4Dict {
            bytes,
            loaded,
            work,
        })
    }
}

struct Lz4Stream {
    acceleration: i32,
    dict: Option<Lz4Dict>,
}

impl Stream for Lz4Stream {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
        check_page(NAME, src)?;
        let r = match &mut self.dict {
            None => lib::compress(src, dst, self.acceleration),
            Some(d) => {
                // Forget the previous page, then reference the dictionary for this one.
                d.work.attach_dict(None);
                d.work.attach_dict(Some(&mut d.loaded));
                d.work.next(src, dst, self.acceleration)
            }
        };
        // liblz4 reports only "did not fit" for a page that is in range.
        r.map_err(|_| CodecError::DstTooSmall {
            capacity: dst.len(),
        })
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
        let n = match &self.dict {
            None => lib::decompress(src, dst),
            Some(d) => lib::decompress_with_dict(src, dst, &d.bytes),
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
