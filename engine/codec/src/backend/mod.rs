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

use crate::{CodecError, Params, PAGE_SIZE};

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
