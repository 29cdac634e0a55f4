//! Quantities on the command line: every size flag of every command goes
//! through zmem-conf's one parser of quantities (`64M`, `1.5G`, `2GiB`, …), so `12Q` is an
//! error everywhere and `1.5G` means 1.5 GiB everywhere.

use anyhow::Context;

/// For clap's `value_parser`: a size flag as bytes.
pub fn size(s: &str) -> Result<u64, String> {
    zmem_conf::parse_size(s).map_err(|e| e.to_string())
}

/// A size given to `flag`; the error reads "bad size for FLAG: why".
pub fn size_of(flag: &str, s: &str) -> anyhow::Result<u64> {
    zmem_conf::parse_size(s).with_context(|| format!("bad size for {flag}"))
}

/// For clap's `value_parser`: `--kernel VERSION` (`6.18`, or a release such
/// as `6.1.0-56-amd64`), a version zmem models.
pub fn kernel(s: &str) -> Result<zmem_kernel::KernelModel, String> {
    zmem_kernel::KernelModel::parse(s).map_err(|e| e.to_string())
}

/// For clap's `value_parser`: a kernel's page size (`4K`, `16K`, `64K`, or
/// bytes), one zmem models.
pub fn page_size(s: &str) -> Result<usize, String> {
    let n = zmem_conf::parse_size(s).map_err(|e| e.to_string())?;
    let n = usize::try_from(n).map_err(|_| format!("page size {n} is too large"))?;
    zmem_kernel::KernelModel::default()
        .with_page_size(n)
        .map(|m| m.page_size())
        .map_err(|e| e.to_string())
}

/// For clap's `value_parser`: a duration flag (`30s`, `5min`, …).
pub fn duration(s: &str) -> Result<std::time::Duration, String> {
    zmem_conf::parse_duration(s).map_err(|e| e.to_string())
}
