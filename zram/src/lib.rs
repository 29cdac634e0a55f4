//! zram as a library.

pub mod blockdev;

pub use blockdev::{AttrError, BlockDevice, Errno, IoError};
