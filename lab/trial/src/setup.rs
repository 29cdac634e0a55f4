//! Swap set-up per configuration: the disk swap file zmem creates, the
//! hot-added zram device, zswap in front of the disk file, and the two-tier
//! zram+disk layout with priorities. Every step goes through the host layer
//! and records its undo in the run's [`Guard`] so the configuration is torn
//! down again after the run.

use std::io;
use std::path::{Path, PathBuf};

use zmem_host::{create_swap_file, read_knob, Action, Guard, HotDevice, Sys, ZSWAP_PARAMS};

use crate::config::{SwapConfig, DISK_PRIORITY, ZRAM_PRIORITY};

/// What a configuration set up, for the measurements.
#[derive(Debug, Default)]
pub struct Prepared {
    /// `/sys/block/zramN` of the zram tier.
    pub zram_sys: Option<String>,
    /// zswap is enabled (by us) for this run.
    pub zswap: bool,
    /// Swap areas activated, highest priority first.
    pub areas: Vec<PathBuf>,
}

/// Where and how big the swap areas are.
#[derive(Debug, Clone)]
pub struct SetupParams<'a> {
    pub sys: &'a Sys,
    /// Directory for the disk swap file.
    pub swap_dir: &'a Path,
    /// Size of the disk swap file, and of zram devices without an explicit size.
    pub swap_size: u64,
    /// Unique part of file names (pid and run number).
    pub tag: &'a str,
}

/// Set up `cfg`, recording every undo in `guard`.
pub fn setup(cfg: &SwapConfig, p: &SetupParams<'_>, guard: &mut Guard) -> Result<Prepared, String> {
    let mut out = Prepared::default();
    if let Some(algo) = cfg.zram_algo() {
        let size = match cfg {
            SwapConfig::Zram { size, .. } | SwapConfig::ZramDisk { size, .. } => {
                size.unwrap_or(p.swap_size)
            }
            _ => p.swap_size,
        };
        setup_zram(p.sys, algo, size, guard, &mut out)?;
    }
    if cfg.uses_disk() {
        setup_disk(p, guard, &mut out)?;
    }
    if let SwapConfig::Zswap {
        compressor,
        pool_percent,
    } = cfg
    {
        setup_zswap(p.sys, compressor, *pool_percent, guard)?;
        out.zswap = true;
    }
    Ok(out)
}

/// A hot-added zram device of `size` bytes with `algo`, swapped on first.
fn setup_zram(
    sys: &Sys,
    algo: &str,
    size: u64,
    guard: &mut Guard,
    out: &mut Prepared,
) -> Result<(), String> {
    let dev = HotDevice::with_config(algo, size).map_err(|e| e.to_string())?;
    let devpath = dev.dev_path().to_path_buf();
    let abs = devpath.to_string_lossy().into_owned();
    out.zram_sys = Some(format!("/sys/block/zram{}", dev.id()));
    guard.push_zram(dev);
    sys.mkswap(&abs)
        .map_err(|e| format!("writing swap signature to {abs}: {e}"))?;
    swap_on(sys, &abs, ZRAM_PRIORITY, guard)?;
    out.areas.push(devpath);
    Ok(())
}

/// swapon, undone by swapoff (journaled right after: it is only there once on).
fn swap_on(sys: &Sys, abs: &str, priority: i32, guard: &mut Guard) -> Result<(), String> {
    sys.swapon(abs, priority, "").map_err(|e| e.to_string())?;
    guard.push(Action::Swapoff(abs.to_string()));
    Ok(())
}

/// The disk swap file, created new in `p.swap_dir` and swapped on behind zram.
fn setup_disk(p: &SetupParams<'_>, guard: &mut Guard, out: &mut Prepared) -> Result<(), String> {
    let path = p.swap_dir.join(format!("zmem-trial.{}.swap", p.tag));
    let abs = path.to_string_lossy().into_owned();
    // Record removal first: a half-written file is removed too.
    let r = create_swap_file(&p.sys.path(&abs), p.swap_size);
    if r.as_ref().err().map(|e| e.kind()) != Some(io::ErrorKind::AlreadyExists) {
        guard.push(Action::RemoveFile(abs.clone()));
    }
    let id = r.map_err(|e| format!("creating swap file {abs}: {e}"))?;
    // Still the file made above: never a file another user put in its place.
    zmem_host::verify_swap_file(&p.sys.path(&abs), id).map_err(|e| e.to_string())?;
    swap_on(p.sys, &abs, DISK_PRIORITY, guard)?;
    out.areas.push(path);
    Ok(())
}

/// zswap on with `compressor` (and `pool_percent`), each parameter restored
/// afterwards (Documentation/admin-guide/mm/zswap.rst).
fn setup_zswap(
    sys: &Sys,
    compressor: &str,
    pool_percent: Option<u32>,
    guard: &mut Guard,
) -> Result<(), String> {
    let param = |n: &str| format!("{ZSWAP_PARAMS}/{n}");
    guard
        .set_knob(&param("compressor"), compressor)
        .map_err(|e| format!("zswap has no compressor {compressor:?} ({e})"))?;
    if let Some(pct) = pool_percent {
        guard
            .set_knob(&param("max_pool_percent"), &pct.to_string())
            .map_err(|e| e.to_string())?;
    }
    guard
        .set_knob(&param("enabled"), "Y")
        .map_err(|e| format!("enabling zswap: {e}"))?;
    let now = read_knob(sys, &param("compressor")).map_err(|e| e.to_string())?;
    if now != compressor {
        return Err(format!(
            "zswap compressor reads back {now:?}, not {compressor:?}"
        ));
    }
    Ok(())
}
