//! What is known about each algorithm besides its code, declared once per
//! backend (`pub static INFO` in `backend/<name>.rs`): its kernel names, its
//! parameters, the kernels whose zram and zswap have it, and what to suggest
//! where a kernel lacks it. Every list of algorithms in zmem is derived from
//! these through the registry ([`crate::all`]).
//!
//! Kernel versions are the first mainline release with the backend, from the
//! kernel's history (not checked against release tags in this session):
//! zram had lzo from its move out of staging (3.14) and lz4 from 3.15 (zcomp);
//! from 4.7 zram takes any crypto API compressor (lz4hc, deflate, 842), so
//! zstd (crypto/zstd.c, 4.14) and lzo-rle (5.1) arrived there with the crypto
//! API; 6.12 replaced the crypto API by zram's own backends, one Kconfig
//! option each (`CONFIG_ZRAM_BACKEND_*`). zswap (3.11) takes crypto API
//! compressors: lzo, lz4, lz4hc and deflate from its start, 842 with the
//! software crypto/842.c (4.1), zstd 4.14, lzo-rle 5.1.

use zmem_kernel::KernelSpan;

use crate::ParamInfo;

/// Facts about one algorithm.
#[derive(Debug)]
pub struct AlgorithmInfo {
    /// The kernel's name: what zram's `comp_algorithm` takes (`lzo-rle`, `lz4`, ...).
    pub name: &'static str,
    /// One line describing the format, for `zmem codecs`.
    pub description: &'static str,
    /// Parameters (`algorithm_params` keys) the backend accepts.
    pub params: &'static [ParamInfo],
    /// The `level` range, and what the kernel does outside it; `None`: no level.
    pub level: Option<LevelRange>,
    /// The kernels whose zram offers it; `None`: a zmem extension.
    pub zram: Option<KernelSpan>,
    /// zram's Kconfig option for it (6.12 and later).
    pub zram_kconfig: Option<&'static str>,
    /// The crypto API's name, which zswap's `compressor` takes.
    pub crypto: Option<&'static str>,
    /// The kernels whose zswap can use it (crypto API compressor).
    pub zswap: Option<KernelSpan>,
}

impl AlgorithmInfo {
    /// Whether the kernel's zram has this backend (in some version).
    pub fn in_kernel(&self) -> bool {
        self.zram.is_some()
    }

    /// Whether it takes `dict=FILE`.
    pub fn takes_dict(&self) -> bool {
        self.params.iter().any(|p| p.key == "dict")
    }
}

/// The `level` an algorithm takes: the range `zmem codecs` lists (the
/// `level` [`ParamInfo::range`]) and what the kernel's backend does outside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelRange {
    pub min: i32,
    pub max: i32,
    pub kernel: OutOfRange,
}

/// What the kernel does with a level outside an algorithm's [`LevelRange`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutOfRange {
    /// Takes it and uses the nearest level it has (a warning).
    Clamped,
    /// Takes it (a warning): lz4's acceleration has no upper bound in the kernel.
    Taken,
    /// Fails when the device is initialised (an error).
    Refused,
}
