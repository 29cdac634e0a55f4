//! `lzo` and `lzo-rle`: LZO1X-1 as the kernel's `lib/lzo` writes it.
//!
//! * [`compress`]: one LZO1X-1 encoder with the kernel's parameters (a 2^13-entry
//!   dictionary of u16 positions, the `0x1824429d` multiplicative hash, the
//!   literal skip `1 + (run >> 5)`, 8-byte match extension, the 20-byte tail),
//!   so a page compresses to exactly the bytes `lzo1x_1_compress` (`lzo`) and
//!   `lzorle1x_1_compress` (`lzo-rle`) produce. `lzo-rle` is bitstream
//!   version 1: the stream starts with `17, 1` and runs of 4..=2051 zero bytes
//!   become a 4-byte instruction.
//! * [`decompress`]: one safe decoder for every LZO1X stream (the kernel's,
//!   liblzo2's, version 0 and 1). Malformed, truncated or over-long input is
//!   an error, never a panic or an access out of bounds.
//!
//! The format, the RLE extension and the fidelity results against the kernel
//! are described in `docs/lzo.md`.

pub mod compress;
pub mod decompress;

pub use compress::{worst_compress, Compressor};
pub use decompress::{decompress, DecodeError};

use zmem_kernel::KernelSpan;

use super::check_page;
use crate::{AlgorithmInfo, Backend, CodecError, Params, Stream};

/// `M2_MAX_OFFSET`: farthest distance of a 2-byte-operand match (M2).
pub(crate) const M2_MAX_OFFSET: usize = 0x0800;
/// `M3_MAX_OFFSET`: farthest distance of an M3 match.
pub(crate) const M3_MAX_OFFSET: usize = 0x4000;
/// `M4_MAX_OFFSET_V0`: farthest M4 distance in version 0 streams.
pub(crate) const M4_MAX_OFFSET_V0: usize = 0xbfff;
/// `M4_MAX_OFFSET_V1`: farthest M4 distance in version 1 streams
/// (0xbfff is the zero-run marker there).
pub(crate) const M4_MAX_OFFSET_V1: usize = 0xbffe;
/// `M2_MAX_LEN`, `M3_MAX_LEN`, `M4_MAX_LEN`: the longest match each opcode
/// holds without a length extension.
pub(crate) const M2_MAX_LEN: usize = 8;
pub(crate) const M3_MAX_LEN: usize = 33;
pub(crate) const M4_MAX_LEN: usize = 9;
/// Opcode markers.
pub(crate) const M3_MARKER: u8 = 32;
pub(crate) const M4_MARKER: u8 = 16;
/// Zero runs shorter than this are not RLE-coded (it is the 4-byte trigger).
pub(crate) const MIN_ZERO_RUN_LENGTH: usize = 4;
/// The longest zero run one RLE instruction holds (11 bits + 4).
pub(crate) const MAX_ZERO_RUN_LENGTH: usize = 2047 + MIN_ZERO_RUN_LENGTH;
/// First byte of a versioned stream; the second byte is the version.
pub(crate) const VERSION_MARKER: u8 = 17;
/// `LZO_VERSION`: the bitstream version lzo-rle writes.
pub const RLE_VERSION: u8 = 1;

/// What is known about `lzo-rle` (the registry's facts).
pub static LZO_RLE_INFO: AlgorithmInfo = AlgorithmInfo {
    name: "lzo-rle",
    description: "LZO1X-1 with zero-run RLE (bitstream v1, header 17 1), byte-exact with the kernel's lzorle1x_1",
    params: &[],
    level: None,
    zram: Some(KernelSpan::since(5, 1)),
    // backend_lzo.c registers lzo and lzo-rle under one option.
    zram_kconfig: Some("CONFIG_ZRAM_BACKEND_LZO"),
    crypto: Some("lzo-rle"),
    zswap: Some(KernelSpan::since(5, 1)),
};
/// What is known about `lzo` (the registry's facts).
pub static LZO_INFO: AlgorithmInfo = AlgorithmInfo {
    name: "lzo",
    description: "LZO1X-1 (bitstream v0), byte-exact with the kernel's lzo1x_1 (D_BITS 13)",
    params: &[],
    level: None,
    zram: Some(KernelSpan::since(3, 14)),
    zram_kconfig: Some("CONFIG_ZRAM_BACKEND_LZO"),
    crypto: Some("lzo"),
    zswap: Some(KernelSpan::since(3, 11)),
};

/// The `lzo` and `lzo-rle` backends: one encoder, with or without RLE.
pub struct LzoBackend {
    info: &'static AlgorithmInfo,
    rle: bool,
}

/// `lzo-rle`: zram's default (LZO1X-1, bitstream version 1).
pub static LZO_RLE: LzoBackend = LzoBackend {
    info: &LZO_RLE_INFO,
    rle: true,
};
/// `lzo`: plain LZO1X-1 (bitstream version 0).
pub static LZO: LzoBackend = LzoBackend {
    info: &LZO_INFO,
    rle: false,
};

impl LzoBackend {
    /// Whether this backend writes version-1 (RLE) streams.
    pub fn rle(&self) -> bool {
        self.rle
    }
}

impl Backend for LzoBackend {
    fn info(&self) -> &'static AlgorithmInfo {
        self.info
    }
    fn new_stream(&self, params: &Params) -> Result<Box<dyn Stream>, CodecError> {
        let mut given = Vec::new();
        if params.level.is_some() {
            given.push("level");
        }
        if params.dict.is_some() {
            given.push("dict");
        }
        if params.deflate_winbits.is_some() {
            given.push("deflate.winbits");
        }
        if !given.is_empty() {
            return Err(CodecError::invalid_param(
                self.info.name,
                format!(
                    "takes no parameters (got {}); the kernel's {} has no level or dictionary",
                    given.join(", "),
                    self.info.name
                ),
            ));
        }
        Ok(Box::new(LzoStream {
            name: self.info.name,
            rle: self.rle,
            compressor: Compressor::new(),
        }))
    }
}

/// A reusable lzo/lzo-rle stream: the encoder's dictionary (the kernel's
/// 16 KiB wrkmem) and a scratch buffer for destinations below the worst case.
pub struct LzoStream {
    name: &'static str,
    rle: bool,
    compressor: Compressor,
}

impl Stream for LzoStream {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
        check_page(self.name, src)?;
        self.compressor.compress(src, dst, self.rle)
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
        let n = decompress(src, dst).map_err(|e| CodecError::corrupt(self.name, e.to_string()))?;
        if n != dst.len() {
            return Err(CodecError::corrupt(
                self.name,
                format!("stream decodes to {n} bytes, expected {}", dst.len()),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
