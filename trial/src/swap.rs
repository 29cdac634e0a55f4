//! Swap set-up per configuration: the disk swap file zmem creates, the
//! hot-added zram device, zswap in front of the disk file, and the two-tier
//! zram+disk layout with priorities. Every step records its undo in the run's
//! [`Guard`] so the configuration is torn down again after the run.
//!
//! The swap signature is written here (the layout mkswap writes: version 1,
//! `last_page`, `SWAPSPACE2` at the end of the first page), and swapon/swapoff
//! are the system calls, so no external tool is needed.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use zmem_sysfs::{HotDevice, SwapEntry, Sys};

use super::config::{SwapConfig, DISK_PRIORITY, ZRAM_PRIORITY};
use super::guard::{read_knob, Guard, Undo, ZSWAP_PARAMS};

const SWAP_FLAG_PREFER: libc::c_int = 0x8000;
const SWAP_FLAG_PRIO_MASK: libc::c_int = 0x7fff;

/// The system page size.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as u64
    } else {
        4096
    }
}

/// The first page of a swap area of `pages` pages: what mkswap writes
/// (no bad pages, no label, a nil UUID).
pub fn swap_header(pages: u64, page_size: usize) -> Result<Vec<u8>, String> {
    if page_size < 4096 || !page_size.is_power_of_two() {
        return Err(format!("bad page size {page_size}"));
    }
    if pages < 10 {
        return Err(format!("a swap area needs at least 10 pages, got {pages}"));
    }
    let last_page = u32::try_from(pages - 1)
        .map_err(|_| format!("{pages} pages is too large for a swap header"))?;
    let mut h = vec![0u8; page_size];
    h[1024..1028].copy_from_slice(&1u32.to_ne_bytes()); // version
    h[1028..1032].copy_from_slice(&last_page.to_ne_bytes());
    // nr_badpages (1032..1036) = 0, uuid and label stay zero.
    h[page_size - 10..].copy_from_slice(b"SWAPSPACE2");
    Ok(h)
}

/// Write a swap signature at the start of `f`, covering `bytes` bytes.
fn write_signature(f: &mut File, bytes: u64) -> io::Result<()> {
    let ps = page_size();
    let h = swap_header(bytes / ps, ps as usize)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    use std::io::Seek;
    f.seek(io::SeekFrom::Start(0))?;
    f.write_all(&h)?;
    f.sync_all()
}

/// Create a new swap file of `bytes` bytes (mode 0600, fully allocated, no
/// holes) with a swap signature. Fails if the file exists.
pub fn create_swap_file(path: &Path, bytes: u64) -> io::Result<()> {
    let bytes = bytes / page_size() * page_size();
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    let fd = f.as_raw_fd();
    // SAFETY: fd is an open, writable file descriptor owned by `f`.
    let r = unsafe { libc::fallocate(fd, 0, 0, bytes as libc::off_t) };
    if r != 0 {
        let e = io::Error::last_os_error();
        if !matches!(
            e.raw_os_error(),
            Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS)
        ) {
            return Err(io::Error::new(
                e.kind(),
                format!("fallocate {}: {e}", path.display()),
            ));
        }
        // No fallocate on this filesystem: write zeros (a swap file may not have holes).
        let chunk = vec![0u8; 1 << 20];
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            f.write_all(&chunk[..n])?;
            left -= n as u64;
        }
    }
    write_signature(&mut f, bytes)
}

/// Write a swap signature onto a block device of `bytes` bytes.
pub fn mkswap_device(dev: &Path, bytes: u64) -> io::Result<()> {
    let mut f = OpenOptions::new().write(true).open(dev)?;
    write_signature(&mut f, bytes)
}

fn cpath(p: &Path) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path has a NUL byte"))
}

/// Activate a swap area with a priority (higher is used first).
pub fn swapon(path: &Path, priority: i32) -> io::Result<()> {
    let c = cpath(path)?;
    let flags = SWAP_FLAG_PREFER | (priority.clamp(0, SWAP_FLAG_PRIO_MASK) & SWAP_FLAG_PRIO_MASK);
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    if unsafe { libc::swapon(c.as_ptr(), flags) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("swapon {}: {e}", path.display()),
        ));
    }
    Ok(())
}

/// Deactivate a swap area.
pub fn swapoff(path: &Path) -> io::Result<()> {
    let c = cpath(path)?;
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    if unsafe { libc::swapoff(c.as_ptr()) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("swapoff {}: {e}", path.display()),
        ));
    }
    Ok(())
}

/// The active swap areas (`/proc/swaps`, mm/swapfile.c `swap_show`).
pub fn active_swaps(sys: &Sys) -> io::Result<Vec<SwapEntry>> {
    sys.swaps()
}

/// Whether `path` is an active swap area.
pub fn is_active(sys: &Sys, path: &Path) -> bool {
    active_swaps(sys)
        .map(|v| v.iter().any(|a| Path::new(&a.device) == path))
        .unwrap_or(false)
}

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
        let dev = HotDevice::with_config(algo, size).map_err(|e| e.to_string())?;
        let devpath = dev.dev_path().to_path_buf();
        out.zram_sys = Some(format!("/sys/block/zram{}", dev.id()));
        guard.push(Undo::Zram(dev));
        mkswap_device(&devpath, size)
            .map_err(|e| format!("writing swap signature to {}: {e}", devpath.display()))?;
        swapon(&devpath, ZRAM_PRIORITY).map_err(|e| e.to_string())?;
        guard.push(Undo::Swapoff {
            path: devpath.clone(),
        });
        out.areas.push(devpath);
    }
    if cfg.uses_disk() {
        let path = p.swap_dir.join(format!("zmem-trial.{}.swap", p.tag));
        // Record removal first: a half-written file is removed too.
        let r = create_swap_file(&path, p.swap_size);
        if r.as_ref().err().map(|e| e.kind()) != Some(io::ErrorKind::AlreadyExists) {
            guard.push(Undo::RemoveFile { path: path.clone() });
        }
        r.map_err(|e| format!("creating swap file {}: {e}", path.display()))?;
        swapon(&path, DISK_PRIORITY).map_err(|e| e.to_string())?;
        guard.push(Undo::Swapoff { path: path.clone() });
        out.areas.push(path);
    }
    if let SwapConfig::Zswap {
        compressor,
        pool_percent,
    } = cfg
    {
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
        let now = read_knob(p.sys, &param("compressor")).map_err(|e| e.to_string())?;
        if now != *compressor {
            return Err(format!(
                "zswap compressor reads back {now:?}, not {compressor:?}"
            ));
        }
        out.zswap = true;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use zmem_sysfs::proc::parse_swaps;

    #[test]
    fn header_layout() {
        let h = swap_header(1000, 4096).unwrap();
        assert_eq!(h.len(), 4096);
        assert_eq!(&h[4086..], b"SWAPSPACE2");
        assert_eq!(u32::from_ne_bytes(h[1024..1028].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(h[1028..1032].try_into().unwrap()), 999);
        assert_eq!(u32::from_ne_bytes(h[1032..1036].try_into().unwrap()), 0);
        assert!(h[..1024].iter().all(|&b| b == 0));
        let h = swap_header(20, 16384).unwrap();
        assert_eq!(&h[16384 - 10..], b"SWAPSPACE2");
        assert!(swap_header(5, 4096).is_err());
        assert!(swap_header(1 << 33, 4096).is_err());
        assert!(swap_header(100, 1000).is_err());
    }

    #[test]
    fn parses_proc_swaps() {
        let t = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                 /dev/zram1                              partition\t1048572\t\t0\t\t100\n\
                 /var/tmp/my\\040swap                     file\t\t262140\t\t128\t\t-2\n";
        let v = parse_swaps(t);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].device, "/dev/zram1");
        assert_eq!(v[0].priority, 100);
        assert_eq!(v[1].device, "/var/tmp/my swap");
        assert_eq!(v[1].kind, "file");
        assert_eq!(v[1].used, 128 * 1024);
        assert_eq!(v[1].priority, -2);
        assert!(parse_swaps("Filename Type Size Used Priority\n").is_empty());
    }

    #[test]
    fn swap_file_has_signature_and_no_holes() {
        let dir = std::env::temp_dir();
        let p = dir.join(format!("zmem-trial-swapfile-test.{}", std::process::id()));
        let _ = fs::remove_file(&p);
        create_swap_file(&p, 1 << 20).unwrap();
        let data = fs::read(&p).unwrap();
        assert_eq!(data.len(), 1 << 20);
        let ps = page_size() as usize;
        assert_eq!(&data[ps - 10..ps], b"SWAPSPACE2");
        // create_new: a second create must not clobber an existing file.
        assert_eq!(
            create_swap_file(&p, 1 << 20).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        fs::remove_file(&p).unwrap();
    }
}
