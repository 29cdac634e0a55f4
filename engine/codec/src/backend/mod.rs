//! One file per algorithm, as the kernel's `backend_*.c`.

pub mod deflate;
pub mod lz4;
mod lz4_block;
pub mod lz4hc;
pub mod lz4m;
pub mod lzo;
pub mod sw842;
pub mod wkdm;
pub mod zstd;
mod zstd_dfast;
mod zstd_producer;

use crate::{CodecError, Params, PAGE_SIZE, PAGE_SIZES};

/// Check that a compressor input is exactly one page (4, 16 or 64 KiB).
#[inline]
pub(crate) fn check_page(algo: &'static str, src: &[u8]) -> Result<(), CodecError> {
    if !PAGE_SIZES.contains(&src.len()) {
        return Err(CodecError::InvalidInput {
            algo,
            reason: format!(
                "input is {} bytes, expected one page of {PAGE_SIZE}, 16384 or 65536",
                src.len()
            ),
        });
    }
    Ok(())
}

/// Check that an input of a 4 KiB-page format is exactly 4096 bytes.
#[inline]
pub(crate) fn check_4k_page(algo: &'static str, src: &[u8]) -> Result<(), CodecError> {
    if src.len() != PAGE_SIZE {
        return Err(CodecError::InvalidInput {
            algo,
            reason: format!(
                "input is {} bytes, expected one page of {PAGE_SIZE} ({algo} is a 4 KiB-page format)",
                src.len()
            ),
        });
    }
    Ok(())
}

/// For the formats defined on 4 KiB pages (lz4m, wkdm): any other page
/// size is refused when the stream is made.
pub(crate) fn only_4k(algo: &'static str, p: &Params) -> Result<(), CodecError> {
    let page = p.page();
    if page != PAGE_SIZE {
        return Err(CodecError::invalid_param(
            algo,
            format!(
                "{algo} is a 4 KiB-page format (1024 words of 4 bytes): it has no meaning on a \
                 kernel with {} KiB pages; use lz4, zstd or lzo-rle there",
                page / 1024
            ),
        ));
    }
    Ok(())
}

/// For codecs without parameters: any set parameter is an error.
pub(crate) fn reject_params(algo: &'static str, p: &Params) -> Result<(), CodecError> {
    let set: Vec<&str> = [
        p.level.is_some().then_some("level"),
        p.dict.is_some().then_some("dict"),
        p.deflate_winbits.is_some().then_some("deflate.winbits"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if set.is_empty() {
        Ok(())
    } else {
        Err(CodecError::invalid_param(
            algo,
            format!("{algo} takes no parameters (got {})", set.join(", ")),
        ))
    }
}
