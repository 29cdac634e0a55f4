//! The cgroup v2 settings a run's cgroup gets beside its memory.max, chosen
//! by the swap configuration, and what each run's cgroup read back. cgroup v1
//! has none of these files.
//!
//! | configuration | memory.swap.max | memory.zswap.max | memory.zswap.writeback |
//! |---|---|---|---|
//! | `none` | 0 | 0 | — |
//! | `disk`, `zram:…`, `zram:…+disk` | max | 0 | — |
//! | `zswap:C[:P%]` | max | P % of the memory limit | 1 |
//!
//! * **memory.swap.max**: `none` means no swap for the workload even when
//!   other swap areas are active (`--force`); every other configuration may
//!   swap all it needs (its swap areas bound it), written explicitly so a
//!   parent's default does not decide.
//! * **memory.zswap.max**: the cgroup stands for a machine with the memory
//!   limit as its RAM. zswap's `max_pool_percent` is a percent of the whole
//!   machine's RAM, far more than the limit, so a zswap configuration's pool
//!   is bounded at that percent (the configuration's, else the kernel's
//!   current `max_pool_percent`) of the memory limit in the cgroup. On v2
//!   the pool is charged to the cgroup (memory.current includes it,
//!   memory.zswap.current shows it), so the bound also keeps the pool from
//!   taking all of memory.max. zram and disk configurations get 0: zswap
//!   stays out of them even where it is enabled (`--force`).
//! * **memory.zswap.writeback** (6.8+): 1 for zswap, so a page over the pool's
//!   bound is written back to the disk swap file as on a machine; a parent
//!   with 0 would otherwise turn writeback off.

use zmem_host::Cgroup;

use crate::config::SwapConfig;

/// memory.swap.max.
pub const SWAP_MAX: &str = "memory.swap.max";
/// memory.zswap.max (5.19+).
pub const ZSWAP_MAX: &str = "memory.zswap.max";
/// memory.zswap.writeback (6.8+).
pub const ZSWAP_WRITEBACK: &str = "memory.zswap.writeback";

/// One setting of a run's cgroup: what zmem chose, why, and what the file
/// read back after the run (`None` where this kernel has no such file).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CgroupSetting {
    pub file: String,
    pub wanted: String,
    pub why: String,
    pub value: Option<String>,
}

fn setting(file: &str, wanted: impl Into<String>, why: &str) -> CgroupSetting {
    CgroupSetting {
        file: file.into(),
        wanted: wanted.into(),
        why: why.into(),
        value: None,
    }
}

/// The settings a cgroup v2 run of `swap` gets under a memory limit of
/// `limit` bytes; `pool_percent_now` is the kernel's `max_pool_percent`
/// (used when a zswap configuration gives none).
pub fn wanted(swap: &SwapConfig, limit: u64, pool_percent_now: Option<u32>) -> Vec<CgroupSetting> {
    let no_zswap = setting(ZSWAP_MAX, "0", "zswap stays out of this configuration");
    match swap {
        SwapConfig::None => vec![
            setting(SWAP_MAX, "0", "no swap, even where other swap is active"),
            no_zswap,
        ],
        SwapConfig::Disk | SwapConfig::Zram { .. } | SwapConfig::ZramDisk { .. } => vec![
            setting(SWAP_MAX, "max", "swap bounded by its areas only"),
            no_zswap,
        ],
        SwapConfig::Zswap { pool_percent, .. } => {
            let pct = pool_percent.or(pool_percent_now).unwrap_or(20);
            let bytes = (limit as u128 * pct as u128 / 100) as u64;
            vec![
                setting(SWAP_MAX, "max", "swap bounded by its areas only"),
                setting(
                    ZSWAP_MAX,
                    bytes.to_string(),
                    &format!("the pool bounded at {pct} % of the memory limit (max_pool_percent of this cgroup's RAM)"),
                ),
                setting(
                    ZSWAP_WRITEBACK,
                    "1",
                    "pages over the pool's bound are written back to the disk swap file",
                ),
            ]
        }
    }
}

/// Write `settings` in `cg` (where this kernel has the file). The error
/// names the setting.
pub fn apply(cg: &Cgroup, settings: &[CgroupSetting]) -> Result<(), String> {
    for s in settings {
        cg.set_v2(&s.file, &s.wanted)
            .map_err(|e| format!("setting {} to {}: {e}", s.file, s.wanted))?;
    }
    Ok(())
}

/// `settings` with what `cg` reads back now.
pub fn read_back(cg: &Cgroup, settings: &[CgroupSetting]) -> Vec<CgroupSetting> {
    settings
        .iter()
        .map(|s| CgroupSetting {
            value: cg.setting(&s.file),
            ..s.clone()
        })
        .collect()
}

/// The settings for people: `memory.zswap.max=13421772 (why)`, or that
/// this kernel has no such file.
pub fn describe(settings: &[CgroupSetting]) -> String {
    settings
        .iter()
        .map(|s| match &s.value {
            Some(v) => format!("{}={v} ({})", s.file, s.why),
            None => format!("{} not set (this kernel has no such file)", s.file),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(v: &[CgroupSetting]) -> Vec<(&str, &str)> {
        v.iter()
            .map(|s| (s.file.as_str(), s.wanted.as_str()))
            .collect()
    }

    #[test]
    fn each_configuration_gets_its_settings() {
        let m = 128 << 20;
        assert_eq!(
            files(&wanted(&SwapConfig::None, m, Some(20))),
            [(SWAP_MAX, "0"), (ZSWAP_MAX, "0")]
        );
        assert_eq!(
            files(&wanted(&SwapConfig::Disk, m, Some(20))),
            [(SWAP_MAX, "max"), (ZSWAP_MAX, "0")]
        );
        let z = SwapConfig::Zswap {
            compressor: "lz4".into(),
            pool_percent: None,
        };
        // 20 % of 128 MiB, the kernel's max_pool_percent.
        let want = (m * 20 / 100).to_string();
        assert_eq!(
            files(&wanted(&z, m, Some(20))),
            [
                (SWAP_MAX, "max"),
                (ZSWAP_MAX, want.as_str()),
                (ZSWAP_WRITEBACK, "1")
            ]
        );
        let z = SwapConfig::Zswap {
            compressor: "lz4".into(),
            pool_percent: Some(50),
        };
        assert_eq!(wanted(&z, m, Some(20))[1].wanted, (m / 2).to_string());
    }

    #[test]
    fn a_file_the_kernel_lacks_is_said() {
        let mut v = wanted(&SwapConfig::Disk, 64 << 20, None);
        v[0].value = Some("max".into());
        assert_eq!(
            describe(&v),
            "memory.swap.max=max (swap bounded by its areas only), memory.zswap.max not set (this kernel has no such file)"
        );
    }
}
