//! The parameters of `/sys/module/zswap/parameters/` and their setters, with
//! the kernel's errors (`param_set_bool`, `param_set_uint`,
//! `param_set_uint_minmax`, `zswap_compressor_param_set`).

use zmem_kernel::{kstrtobool, kstrtoull, memparse, sysfs_streq};
use zmem_kernel::{AttrError, Errno};

/// What a store does with a page that does not compress below PAGE_SIZE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incompressible {
    /// 6.18: keep the page raw in the pool (`stored_incompressible_pages`),
    /// preserving LRU/writeback order.
    Store,
    /// ≤ 6.17: reject the store (`reject_compress_poor` when the result does
    /// not fit, `reject_compress_fail` on a compressor error); the page goes
    /// to the backing store.
    Reject,
}

impl Incompressible {
    pub fn name(self) -> &'static str {
        match self {
            Incompressible::Store => "store",
            Incompressible::Reject => "reject",
        }
    }
}

/// When the shrink worker runs after a store was refused because the pool is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShrinkWorker {
    /// Right after the refused store (the kernel queues a work item; here it
    /// completes before the next store).
    Inline,
    /// Only when [`crate::Zswap::run_shrink_worker`] is called (tests and
    /// callers that schedule it themselves).
    Manual,
    /// Queued, then run alongside the swap path as the kernel's workqueue
    /// runs it: each later store or load first lets the queued run make
    /// this many steps of its loop (a step is one `shrink_memcg` attempt or
    /// the end of a cgroup walk). A refused store while a run is queued
    /// does not queue another (`queue_work` on pending work is a no-op).
    Paced(u32),
}

/// Current parameter values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// `enabled`: gate for new stores; loads keep working when off.
    pub enabled: bool,
    /// `compressor`: kernel algorithm name (codec registry).
    pub compressor: String,
    /// `max_pool_percent`: pool limit as a share of the configured RAM size.
    pub max_pool_percent: u32,
    /// `accept_threshold_percent`: any uint, as the kernel's; 100 or more disables hysteresis.
    pub accept_threshold_percent: u32,
    /// `shrinker_enabled`: memory-pressure-driven writeback.
    pub shrinker_enabled: bool,
    /// `zpool` (removed in 6.18, where zsmalloc is used directly).
    pub zpool: String,
    /// zmem extension `max_pool_bytes`: a byte limit overriding the percent (0 = use the percent).
    pub max_pool_bytes: u64,
    /// zmem extension `incompressible`: `store` (6.18) or `reject` (≤ 6.17).
    pub incompressible: Incompressible,
}

impl Default for Params {
    /// The kernel defaults except `enabled` (Y here: an engine is built to be used)
    /// and `compressor` lzo (upstream's CONFIG default).
    fn default() -> Self {
        Params {
            enabled: true,
            compressor: zmem_codec::ZSWAP_DEFAULT.name.into(),
            max_pool_percent: 20,
            accept_threshold_percent: 90,
            shrinker_enabled: false,
            zpool: "zsmalloc".into(),
            max_pool_bytes: 0,
            incompressible: Incompressible::Store,
        }
    }
}

fn shown(s: &str) -> &str {
    s.strip_suffix('\n').unwrap_or(s)
}

/// `param_set_bool`: the kernel's `kstrtobool`; anything it refuses is EINVAL.
pub fn param_bool(name: &str, s: &str) -> Result<bool, AttrError> {
    kstrtobool(s).ok_or_else(|| {
        AttrError::new(
            Errno::EINVAL,
            format!(
                "{name}: {:?} is not a boolean (use Y/N, 1/0, on/off)",
                shown(s)
            ),
        )
    })
}

/// `param_set_uint`: kstrtouint base 0; EINVAL if not a number, ERANGE if over u32.
pub fn parse_uint(name: &str, s: &str) -> Result<u32, AttrError> {
    let v =
        kstrtoull(s, 0).map_err(|e| AttrError::new(e.errno, format!("{name}: {}", e.message)))?;
    u32::try_from(v).map_err(|_| {
        AttrError::new(
            Errno::ERANGE,
            format!("{name}: {:?} is out of range for uint", shown(s)),
        )
    })
}

/// A size with memparse suffixes (K, M, G…); nothing parsed or trailing junk is EINVAL.
pub fn param_size(name: &str, s: &str) -> Result<u64, AttrError> {
    let body = shown(s);
    let (v, n) = memparse(body);
    if n == 0 || n != body.len() {
        return Err(AttrError::new(
            Errno::EINVAL,
            format!("{name}: {:?} is not a size (e.g. 64M)", body),
        ));
    }
    Ok(v)
}

/// A compressor name known to the codec registry; unknown is ENOENT as in
/// `zswap_compressor_param_set` (`crypto_has_acomp` fails: no such algorithm).
pub fn parse_compressor(s: &str) -> Result<&'static dyn zmem_codec::Backend, AttrError> {
    zmem_codec::find(shown(s))
        .map_err(|e| AttrError::new(Errno::ENOENT, format!("compressor: {e}")))
}

/// An allocator name (`zpool` of older kernels); unknown is ENOENT as `zpool_has_pool` failing.
pub fn parse_zpool(s: &str) -> Result<&'static str, AttrError> {
    let n = shown(s);
    zmem_zpool::NAMES
        .iter()
        .copied()
        .find(|x| sysfs_streq(x, n))
        .ok_or_else(|| {
            AttrError::new(
                Errno::ENOENT,
                format!(
                    "zpool: unknown allocator {n:?}; valid: {}",
                    zmem_zpool::NAMES.join(", ")
                ),
            )
        })
}

/// `incompressible`: store | reject.
pub fn parse_incompressible(s: &str) -> Result<Incompressible, AttrError> {
    if sysfs_streq(s, "store") {
        Ok(Incompressible::Store)
    } else if sysfs_streq(s, "reject") {
        Ok(Incompressible::Reject)
    } else {
        Err(AttrError::new(
            Errno::EINVAL,
            format!("incompressible: {:?} is not 'store' or 'reject'", shown(s)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bools_like_kstrtobool() {
        for s in ["Y", "y\n", "1", "on", "ON"] {
            assert!(param_bool("enabled", s).unwrap(), "{s}");
        }
        for s in ["N", "n", "0\n", "off", "Off"] {
            assert!(!param_bool("enabled", s).unwrap(), "{s}");
        }
        for s in ["", "x", "o", "2", " 1"] {
            assert_eq!(
                param_bool("enabled", s).unwrap_err().errno,
                Errno::EINVAL,
                "{s:?}"
            );
        }
    }

    #[test]
    fn uints_and_percent() {
        assert_eq!(parse_uint("max_pool_percent", "20\n").unwrap(), 20);
        assert_eq!(parse_uint("max_pool_percent", "0x10").unwrap(), 16);
        assert_eq!(
            parse_uint("max_pool_percent", "-1").unwrap_err().errno,
            Errno::EINVAL
        );
        assert_eq!(
            parse_uint("max_pool_percent", "4294967296")
                .unwrap_err()
                .errno,
            Errno::ERANGE
        );
        assert_eq!(
            parse_uint("max_pool_percent", "abc").unwrap_err().errno,
            Errno::EINVAL
        );
        // accept_threshold_percent is a plain uint (checked on this machine's 6.18:
        // 150 is taken, 4294967296 is ERANGE).
        assert_eq!(parse_uint("accept_threshold_percent", "150").unwrap(), 150);
        let e = parse_uint("accept_threshold_percent", "4294967296").unwrap_err();
        assert_eq!(e.errno, Errno::ERANGE);
        assert!(
            e.message.contains("accept_threshold_percent"),
            "{}",
            e.message
        );
    }

    #[test]
    fn names() {
        assert_eq!(parse_compressor("lz4\n").unwrap().name(), "lz4");
        assert_eq!(
            parse_compressor("lz5").err().map(|e| e.errno),
            Some(Errno::ENOENT)
        );
        assert_eq!(parse_zpool("zbud\n").unwrap(), "zbud");
        assert_eq!(parse_zpool("zfoo").unwrap_err().errno, Errno::ENOENT);
        assert_eq!(param_size("m", "64M").unwrap(), 64 << 20);
        assert_eq!(param_size("m", "64Mx").unwrap_err().errno, Errno::EINVAL);
        assert_eq!(
            parse_incompressible("reject\n").unwrap(),
            Incompressible::Reject
        );
        assert_eq!(
            parse_incompressible("drop").unwrap_err().errno,
            Errno::EINVAL
        );
    }
}
