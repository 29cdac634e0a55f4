use std::sync::Arc;

/// Parameters as zram's `algorithm_params` has them.
///
/// `None` means the backend's default (the kernel's default for that algorithm).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    /// `level=L`: acceleration for lz4, HC level for lz4hc, zstd/deflate level.
    pub level: Option<i32>,
    /// `dict=FILE`: dictionary bytes (lz4, lz4hc, zstd).
    pub dict: Option<Arc<Vec<u8>>>,
    /// `deflate.winbits=W`: deflate window bits (the kernel's default is 11, raw deflate).
    pub deflate_winbits: Option<i32>,
}
