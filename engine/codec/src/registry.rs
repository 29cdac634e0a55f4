//! Find a backend by the kernel's name.
//!
//! The order is the kernel's backend table (`lzo-rle lzo lz4 lz4hc zstd deflate 842`),
//! followed by zmem's in-memory codecs (`lz4m wkdm`), which the kernel lacks.

use crate::backend;
use crate::{AlgorithmInfo, Backend, CodecError};

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

/// Kernel algorithms to suggest where a kernel lacks one, nearest first: a
/// relation between the backends' facts, kept beside the list of them.
static NEAREST: [(&AlgorithmInfo, &[&AlgorithmInfo]); 9] = [
    (
        &backend::lzo::LZO_RLE_INFO,
        &[
            &backend::lzo::LZO_INFO,
            &backend::lz4::INFO,
            &backend::zstd::INFO,
        ],
    ),
    (
        &backend::lzo::LZO_INFO,
        &[
            &backend::lzo::LZO_RLE_INFO,
            &backend::lz4::INFO,
            &backend::zstd::INFO,
        ],
    ),
    (
        &backend::lz4::INFO,
        &[
            &backend::lzo::LZO_RLE_INFO,
            &backend::lzo::LZO_INFO,
            &backend::lz4hc::INFO,
            &backend::zstd::INFO,
        ],
    ),
    (
        &backend::lz4hc::INFO,
        &[
            &backend::lz4::INFO,
            &backend::zstd::INFO,
            &backend::lzo::LZO_RLE_INFO,
            &backend::lzo::LZO_INFO,
        ],
    ),
    (
        &backend::zstd::INFO,
        &[
            &backend::deflate::INFO,
            &backend::lz4hc::INFO,
            &backend::lzo::LZO_RLE_INFO,
            &backend::lzo::LZO_INFO,
            &backend::lz4::INFO,
        ],
    ),
    (
        &backend::deflate::INFO,
        &[
            &backend::zstd::INFO,
            &backend::lz4hc::INFO,
            &backend::lzo::LZO_RLE_INFO,
            &backend::lzo::LZO_INFO,
            &backend::lz4::INFO,
        ],
    ),
    (
        &backend::sw842::INFO,
        &[
            &backend::lzo::LZO_RLE_INFO,
            &backend::lzo::LZO_INFO,
            &backend::lz4::INFO,
            &backend::zstd::INFO,
        ],
    ),
    (
        &backend::lz4m::INFO,
        &[
            &backend::lz4::INFO,
            &backend::lzo::LZO_RLE_INFO,
            &backend::lzo::LZO_INFO,
            &backend::zstd::INFO,
        ],
    ),
    (
        &backend::wkdm::INFO,
        &[
            &backend::lzo::LZO_RLE_INFO,
            &backend::lzo::LZO_INFO,
            &backend::lz4::INFO,
            &backend::zstd::INFO,
        ],
    ),
];

/// The kernel algorithms nearest to `info`, nearest first (empty for a name
/// the registry lacks).
pub fn nearest(info: &AlgorithmInfo) -> &'static [&'static AlgorithmInfo] {
    NEAREST
        .iter()
        .find(|(a, _)| a.name == info.name)
        .map(|(_, n)| *n)
        .unwrap_or(&[])
}

/// zram's default algorithm since 5.1 (`CONFIG_ZRAM_DEF_COMP`'s default where
/// that option exists).
pub static ZRAM_DEFAULT: &AlgorithmInfo = &backend::lzo::LZO_RLE_INFO;

/// zswap's default compressor (`CONFIG_ZSWAP_COMPRESSOR_DEFAULT`'s default).
pub static ZSWAP_DEFAULT: &AlgorithmInfo = &backend::lzo::LZO_INFO;

/// The algorithms the kernel's zram knows by name (any kernel version), in
/// registry order.
pub fn kernel_names() -> Vec<&'static str> {
    ALL.iter()
        .filter(|b| b.in_kernel())
        .map(|b| b.name())
        .collect()
}

/// The crypto API names zswap can be asked for (any kernel version), in
/// registry order.
pub fn zswap_names() -> Vec<&'static str> {
    ALL.iter().filter_map(|b| b.info().crypto).collect()
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

#[cfg(test)]
mod info_tests {
    use super::*;
    use crate::Params;

    /// Each backend's facts agree with its code: the level range is the one
    /// `zmem codecs` lists and the backend accepts both ends of it; what it
    /// suggests instead are other kernel algorithms.
    #[test]
    fn facts_agree_with_backends() {
        for b in all() {
            let info = b.info();
            let level = b.params().iter().find(|p| p.key == "level");
            match (info.level, level) {
                (Some(r), Some(p)) => {
                    assert_eq!(p.range, format!("{}..={}", r.min, r.max), "{}", b.name());
                    for l in [r.min, r.max] {
                        assert!(
                            b.new_stream(&Params::with_level(l)).is_ok(),
                            "{} {l}",
                            b.name()
                        );
                    }
                }
                (None, None) => {}
                _ => panic!("{}: level in INFO and params disagree", b.name()),
            }
            assert_eq!(
                info.zram.is_some(),
                info.zram_kconfig.is_some(),
                "{}",
                b.name()
            );
            assert_eq!(info.crypto.is_some(), info.zswap.is_some(), "{}", b.name());
            assert!(!nearest(info).is_empty(), "{}", b.name());
            for n in nearest(info) {
                assert!(
                    n.in_kernel() && n.name != info.name,
                    "{}: {}",
                    b.name(),
                    n.name
                );
            }
        }
    }

    #[test]
    fn derived_lists() {
        assert_eq!(
            kernel_names(),
            ["lzo-rle", "lzo", "lz4", "lz4hc", "zstd", "deflate", "842"]
        );
        assert_eq!(zswap_names(), kernel_names());
        assert!(ZRAM_DEFAULT.in_kernel() && ZSWAP_DEFAULT.crypto.is_some());
        assert_eq!(find(ZRAM_DEFAULT.name).unwrap().name(), ZRAM_DEFAULT.name);
        assert!(find("zstd").unwrap().info().takes_dict());
        assert!(!find("842").unwrap().info().takes_dict());
    }
}
