//! `deflate`: as `backend_deflate.c` writes it: zlib's deflate at level 6
//! (`Z_DEFAULT_COMPRESSION`) with window bits -11 (`DEFLATE_DEF_WINBITS`), i.e.
//! raw deflate (RFC 1951) with a 2 KiB window. `deflate.winbits=W` is passed
//! as the kernel passes it to zlib: -15..=-9 raw deflate with a 2^|W| window,
//! 9..=15 a zlib (RFC 1950) wrapper.
//!
//! The kernel's `lib/zlib_deflate` is classic zlib (the 1.1 lineage) with
//! `MAX_MEM_LEVEL` 8, the same on every kernel zram has deflate in (the VM
//! lab's 6.12 and 7.3; Debian's 6.1 zram does not offer it). Bound to classic
//! zlib (1.3.1, built from source and linked statically by `libz-sys`) through
//! `flate2` at memLevel 8: its match finder and block splitting are the
//! kernel's, so every page compresses to the kernel's length
//! (engine/codec/tests/kernel_sizes.rs, at levels 1, 6 and 9). zlib-rs, a zlib-ng
//! port, finds other matches (-2.3 % at level 6, +32 % at level 1, where it
//! uses deflate_quick), and libdeflate has no window size. Each stream owns
//! one deflate and one inflate state, reset per page as the kernel does. The
//! decoder accepts any window up to 32 KiB.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use zmem_kernel::KernelSpan;

use super::check_page;
use crate::{
    AlgorithmInfo, Backend, CodecError, LevelRange, OutOfRange, ParamInfo, Params, Stream,
};

const NAME: &str = "deflate";
/// `Z_DEFAULT_COMPRESSION` as zlib maps it.
pub const DEFAULT_LEVEL: i32 = 6;
/// `DEFLATE_DEF_WINBITS` in `backend_deflate.c` (negative: raw deflate).
pub const DEFAULT_WINBITS: i32 = -11;

/// What is known about `deflate` (the registry's facts).
pub static INFO: AlgorithmInfo = AlgorithmInfo {
    name: NAME,
    description:
        "raw deflate (RFC 1951), 2 KiB window by default, as zram writes it; classic zlib via flate2",
    params: &PARAMS,
    // backend_deflate.c: zlib_deflateInit2() returns Z_STREAM_ERROR outside -1..=9, so
    // creating the stream fails and so does the disksize write.
    level: Some(LevelRange {
        min: -1,
        max: 9,
        kernel: OutOfRange::Refused,
    }),
    zram: Some(KernelSpan::since(4, 7)),
    zram_kconfig: Some("CONFIG_ZRAM_BACKEND_DEFLATE"),
    crypto: Some(NAME),
    zswap: Some(KernelSpan::since(3, 11)),
};

/// The `deflate` backend.
pub struct DeflateBackend;
/// The `deflate` backend (registry entry).
pub static DEFLATE: DeflateBackend = DeflateBackend;

const PARAMS: [ParamInfo; 2] = [
    ParamInfo {
        key: "level",
        default: "6",
        range: "-1..=9",
        help: "zlib level; -1 is zlib's default (6), 0 stores",
    },
    ParamInfo {
        key: "deflate.winbits",
        default: "-11",
        range: "-15..=-9 | 9..=15",
        help: "window bits as zlib takes them: negative = raw deflate, positive = zlib wrapper",
    },
];

impl Backend for DeflateBackend {
    fn info(&self) -> &'static AlgorithmInfo {
        &INFO
    }
    fn new_stream(&self, params: &Params) -> Result<Box<dyn Stream>, CodecError> {
        params.reject_dict(NAME)?;
        let level = match params.level_in(NAME, DEFAULT_LEVEL, -1, 9)? {
            -1 => DEFAULT_LEVEL,
            l => l,
        };
        let winbits = params.deflate_winbits.unwrap_or(DEFAULT_WINBITS);
        if !(9..=15).contains(&winbits.abs()) {
            return Err(CodecError::invalid_param(
                NAME,
                format!(
                    "deflate.winbits={winbits} is out of range; valid: deflate.winbits=-15..=-9 \
                     (raw deflate) or 9..=15 (zlib wrapper) (default {DEFAULT_WINBITS})"
                ),
            ));
        }
        let zlib_header = winbits > 0;
        let bits = winbits.unsigned_abs() as u8;
        Ok(Box::new(DeflateStream {
            comp: Compress::new_with_window_bits(Compression::new(level as u32), zlib_header, bits),
            decomp: Decompress::new_with_window_bits(zlib_header, 15),
            zlib_header,
        }))
    }
}

struct DeflateStream {
    comp: Compress,
    decomp: Decompress,
    zlib_header: bool,
}

impl Stream for DeflateStream {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
        check_page(NAME, src)?;
        self.comp.reset();
        match self.comp.compress(src, dst, FlushCompress::Finish) {
            Ok(Status::StreamEnd) => Ok(self.comp.total_out() as usize),
            Ok(_) => Err(CodecError::DstTooSmall {
                capacity: dst.len(),
            }),
            Err(e) => Err(CodecError::Library {
                algo: NAME,
                reason: e.to_string(),
            }),
        }
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
        self.decomp.reset(self.zlib_header);
        let status = self
            .decomp
            .decompress(src, dst, FlushDecompress::Finish)
            .map_err(|e| CodecError::corrupt(NAME, e.to_string()))?;
        let (read, written) = (
            self.decomp.total_in() as usize,
            self.decomp.total_out() as usize,
        );
        match status {
            Status::StreamEnd if written == dst.len() && read == src.len() => Ok(()),
            Status::StreamEnd if written != dst.len() => Err(CodecError::corrupt(
                NAME,
                format!("decodes to {written} bytes, expected {}", dst.len()),
            )),
            Status::StreamEnd => Err(CodecError::corrupt(
                NAME,
                format!(
                    "{} trailing bytes after the end of the stream",
                    src.len() - read
                ),
            )),
            _ if written == dst.len() => Err(CodecError::corrupt(
                NAME,
                format!("decodes to more than {written} bytes"),
            )),
            _ => Err(CodecError::corrupt(
                NAME,
                format!("truncated after {written} bytes"),
            )),
        }
    }
}
