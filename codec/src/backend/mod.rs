//! One file per algorithm, as the kernel's `backend_*.c`.

pub mod deflate;
pub mod lz4;
pub mod lz4hc;
pub mod lz4m;
pub mod lzo;
pub mod sw842;
pub mod wkdm;
pub mod zstd;

use crate::{CodecError, PAGE_SIZE};

/// Check that a compressor input is exactly one page.
#[inline]
pub(crate) fn check_page(algo: &'static str, src: &[u8]) -> Result<(), CodecError> {
    if src.len() != PAGE_SIZE {
        return Err(CodecError::InvalidInput {
            algo,
            reason: format!(
                "input is {} bytes, expected one page of {PAGE_SIZE}",
                src.len()
            ),
        });
    }
    Ok(())
}
