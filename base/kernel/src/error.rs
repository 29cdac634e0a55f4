//! How an attribute read or write fails: the kernel's errno and why, in words.

use crate::Errno;

/// An attribute read or write that failed: the kernel's errno plus a message
/// that says why in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{errno}: {message}")]
pub struct AttrError {
    pub errno: Errno,
    pub message: String,
}

impl AttrError {
    pub fn new(errno: Errno, message: impl Into<String>) -> Self {
        AttrError {
            errno,
            message: message.into(),
        }
    }

    /// A failed read or write of a file: its errno, and `what` with the error in words.
    pub fn io(e: &std::io::Error, what: impl std::fmt::Display) -> Self {
        AttrError {
            errno: Errno::from_io(e),
            message: format!("{what}: {e}"),
        }
    }
}
