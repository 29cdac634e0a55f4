use thiserror::Error;

/// Errors from the codec layer. None of them is ever a panic.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CodecError {
    /// The compressed result does not fit in the destination buffer.
    #[error("compressed data does not fit in {capacity} bytes")]
    DstTooSmall { capacity: usize },
    /// The compressed stream is malformed, truncated, or decodes to the wrong length.
    #[error("corrupt {algo} stream: {reason}")]
    Corrupt { algo: &'static str, reason: String },
    /// Input that the codec cannot take (for example not exactly one page).
    #[error("invalid input for {algo}: {reason}")]
    InvalidInput { algo: &'static str, reason: String },
    /// No algorithm by that name; lists the valid ones.
    #[error("unknown algorithm '{name}'; valid algorithms: {valid}")]
    UnknownAlgorithm { name: String, valid: String },
    /// A parameter that the algorithm does not take, or a bad value.
    #[error("{algo}: {reason}")]
    InvalidParam { algo: &'static str, reason: String },
    /// A failure inside a bound C library.
    #[error("{algo}: library error: {reason}")]
    Library { algo: &'static str, reason: String },
}

impl CodecError {
    pub fn corrupt(algo: &'static str, reason: impl Into<String>) -> Self {
        CodecError::Corrupt {
            algo,
            reason: reason.into(),
        }
    }
    pub fn invalid_param(algo: &'static str, reason: impl Into<String>) -> Self {
        CodecError::InvalidParam {
            algo,
            reason: reason.into(),
        }
    }
}
