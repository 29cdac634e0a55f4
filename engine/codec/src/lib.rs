//! Page compressors behind one interface, as zram's `zcomp` front end has them.
//!
//! * [`Backend`] is one algorithm (`backend_*.c` in the kernel): it creates
//!   [`Stream`]s, and its [`AlgorithmInfo`] (`INFO` in its file) holds what is
//!   known about it: kernel and crypto names, parameters, level range, the
//!   kernels whose zram and zswap have it. Every list of algorithms in zmem is
//!   derived from these.
//! * A [`Stream`] is a reusable compression context with its scratch memory
//!   (the kernel keeps one per CPU). Nothing is allocated or initialised per page.
//! * [`registry`] finds a backend by the kernel's name.
//! * [`StreamPool`] hands out one stream per thread for a configured algorithm.
//!
//! Compression takes exactly one page (`PAGE_SIZE` bytes: 4 KiB, or the
//! 16 or 64 KiB of [`Params::page_size`]) and writes into a caller's buffer; a result that does not fit is [`CodecError::DstTooSmall`],
//! which callers treat as "store raw". Decompression must reproduce exactly
//! `dst.len()` bytes; anything else is an error, never a panic.

pub mod backend;
mod error;
mod info;
mod params;
pub mod registry;
mod stream_pool;

pub use error::CodecError;
pub use info::{AlgorithmInfo, LevelRange, OutOfRange};
pub use params::Params;
pub use registry::{
    all, find, kernel_names, names, nearest, zswap_names, ZRAM_DEFAULT, ZSWAP_DEFAULT,
};
pub use stream_pool::{PooledStream, StreamPool};

/// The page size zram works in by default (4 KiB: x86-64 and most arm64).
pub const PAGE_SIZE: usize = 4096;

/// The page sizes a stream compresses: those of the kernels zmem models
/// (zmem_kernel's `PAGE_SHIFTS`: 4, 16 and 64 KiB).
pub const PAGE_SIZES: [usize; 3] = {
    let s = zmem_kernel::PAGE_SHIFTS;
    [1 << s[0], 1 << s[1], 1 << s[2]]
};

/// A destination buffer that fits any codec's worst case for one 4 KiB page
/// (the kernel's zcomp buffer is 2 x PAGE_SIZE).
pub const MAX_COMPRESSED: usize = 2 * PAGE_SIZE;

/// The zcomp buffer for a page of `page_size` bytes: 2 x PAGE_SIZE.
pub const fn max_compressed(page_size: usize) -> usize {
    2 * page_size
}

/// Description of one parameter a backend accepts (for `zmem codecs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamInfo {
    /// Key as written to `algorithm_params` (`level`, `dict`, `deflate.winbits`).
    pub key: &'static str,
    /// Default shown to users, e.g. "1" or "none".
    pub default: &'static str,
    /// Accepted range or form, e.g. "1..=65537" or "FILE".
    pub range: &'static str,
    /// One line of help.
    pub help: &'static str,
}

/// One compression algorithm, as a zram backend.
pub trait Backend: Send + Sync + 'static {
    /// What is known about the algorithm: names, parameters, kernels (its `INFO`).
    fn info(&self) -> &'static AlgorithmInfo;
    /// Check parameters and create a reusable stream. Bad parameters are
    /// [`CodecError::InvalidParam`] with a message naming the valid form.
    fn new_stream(&self, params: &Params) -> Result<Box<dyn Stream>, CodecError>;

    /// The kernel's name (`lzo-rle`, `lz4`, ...).
    fn name(&self) -> &'static str {
        self.info().name
    }
    /// One line describing the format, for `zmem codecs`.
    fn description(&self) -> &'static str {
        self.info().description
    }
    /// Parameters this backend accepts.
    fn params(&self) -> &'static [ParamInfo] {
        self.info().params
    }
    /// Whether the kernel's zram ships this backend (the others are zmem extensions).
    fn in_kernel(&self) -> bool {
        self.info().in_kernel()
    }
}

/// A reusable compression context (per CPU in the kernel, per thread here).
pub trait Stream: Send {
    /// Compress exactly one page (`src.len()` is the page size the stream
    /// was made for, [`Params::page_size`]) into `dst`,
    /// returning the compressed length. If the result does not fit in `dst`,
    /// return [`CodecError::DstTooSmall`].
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError>;
    /// Decompress `src` into `dst`, which must be filled exactly.
    /// Malformed, truncated or over-long input is an error.
    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<(), CodecError>;
}

/// Whether `page` is one repeated machine word (zram's same-filled check).
/// Returns the word if so.
#[inline]
pub fn same_filled(page: &[u8]) -> Option<u64> {
    if page.len() < 8 || !page.len().is_multiple_of(8) {
        return None;
    }
    let word = |i: usize| u64::from_ne_bytes(page[i * 8..i * 8 + 8].try_into().unwrap());
    let n = page.len() / 8;
    let v = word(0);
    if word(n - 1) != v {
        return None;
    }
    page.chunks_exact(8)
        .all(|c| u64::from_ne_bytes(c.try_into().unwrap()) == v)
        .then_some(v)
}

/// Fill `page` with the repeated word `value`.
#[inline]
pub fn fill_page(page: &mut [u8], value: u64) {
    let bytes = value.to_ne_bytes();
    for c in page.chunks_exact_mut(8) {
        c.copy_from_slice(&bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_filled_detects_any_word() {
        let mut p = vec![0u8; PAGE_SIZE];
        assert_eq!(same_filled(&p), Some(0));
        fill_page(&mut p, 0xdead_beef_dead_beef);
        assert_eq!(same_filled(&p), Some(0xdead_beef_dead_beef));
        p[4095] ^= 1;
        assert_eq!(same_filled(&p), None);
        p[4095] ^= 1;
        p[100] ^= 1;
        assert_eq!(same_filled(&p), None);
    }
}
