//! Find a backend by the kernel's name.
//!
//! The order is the kernel's backend table (`lzo-rle lzo lz4 lz4hc zstd deflate 842`),
//! followed by zmem's in-memory codecs (`lz4m wkdm`), which the kernel lacks.

use crate::backend;
use crate::{Backend, CodecError};

static ALL: [&dyn Backend; 9] = [
    &backend::lzo::LZO_RLE,
    &backend::lzo::LZO,
    &backend::lz4::LZ4,
    &backend::lz4hc::LZ4HC,
    &backend::zstd::ZSTD,
    &backend::deflate::DEFLATE,
    &backend::sw842::SW842,
    &backend::lz4m::LZ4M,
    &backend::wkdm::WKDM,
];

/// Every algorithm, in the kernel's table order, then zmem's extensions.
pub fn all() -> &'static [&'static dyn Backend] {
    &ALL
}

/// Every algorithm name, in registry order.
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|b| b.name()).collect()
}

/// Find a backend by its kernel name. One trailing newline is ignored, as
/// sysfs does. An unknown name is an error that lists the valid ones.
pub fn find(name: &str) -> Result<&'static dyn Backend, CodecError> {
    let n = name.strip_suffix('\n').unwrap_or(name);
    ALL.iter()
        .copied()
        .find(|b| b.name() == n)
        .ok_or_else(|| CodecError::UnknownAlgorithm {
            name: n.to_string(),
            valid: names().join(", "),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_name_and_rejects_unknown() {
        for b in all() {
            assert_eq!(find(b.name()).unwrap().name(), b.name());
        }
        assert_eq!(find("lz4\n").unwrap().name(), "lz4");
        let e = find("lz5").err().expect("lz5 is unknown").to_string();
        assert!(
            e.contains("lz5") && e.contains("lzo-rle") && e.contains("wkdm"),
            "{e}"
        );
    }

    #[test]
    fn kernel_order() {
        assert_eq!(
            names(),
            ["lzo-rle", "lzo", "lz4", "lz4hc", "zstd", "deflate", "842", "lz4m", "wkdm"]
        );
    }
}
