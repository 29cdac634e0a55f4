//! How fast this machine's filesystem serves random 4 KiB reads: the other
//! side of the vm.swappiness formula (relative cost of swap-in vs file
//! refault). The scratch file's write (1 MiB writes, then fsync) gives the
//! write speed too, what a swap-out to a disk swap file costs per page. Reads a scratch file with O_DIRECT so the page cache does not
//! answer; where O_DIRECT is refused (tmpfs), reads after dropping the file's
//! cached pages (POSIX_FADV_DONTNEED), and says so.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;

use zmem_corpus::Rng;

/// The measurement.
#[derive(Debug, Clone, Serialize)]
pub struct FsRead {
    pub dir: PathBuf,
    pub mib_s: f64,
    /// Writing the scratch file and syncing it to the disk, MiB/s.
    pub write_mib_s: f64,
    pub mean_us: f64,
    pub reads: usize,
    pub direct_io: bool,
}

/// Random 4 KiB reads from a `file_mib` MiB scratch file in `dir` (removed afterwards).
pub fn measure(dir: &Path, file_mib: usize, reads: usize) -> Result<FsRead> {
    let path = dir.join(format!(".zmem-fsread-{}", std::process::id()));
    // The name is predictable and `dir` may be world-writable (/var/tmp): a file or
    // symbolic link someone put there first is neither followed, truncated nor removed.
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .with_context(|| format!("creating scratch file {}", path.display()))?;
    let res = measure_at(file, &path, file_mib, reads);
    let _ = std::fs::remove_file(&path);
    res
}

fn measure_at(mut f: File, path: &Path, file_mib: usize, reads: usize) -> Result<FsRead> {
    let dir = path.parent().unwrap_or(path);
    let mut rng = Rng::new(0xf5);
    let written = Instant::now();
    {
        let mut buf = vec![0u8; 1 << 20];
        for _ in 0..file_mib {
            rng.fill(&mut buf);
            f.write_all(&buf)?;
        }
        f.sync_all()?;
    }
    let write_s = written.elapsed().as_secs_f64().max(1e-9);
    let pages = (file_mib << 20) / 4096;
    let (f, direct) = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT | libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(f) => (f, true),
        Err(_) => (File::open(path)?, false),
    };
    // SAFETY: posix_fadvise on an open descriptor we own; it only drops clean cached pages.
    unsafe {
        libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
    }
    // A 4 KiB-aligned buffer for O_DIRECT.
    let mut raw = vec![0u8; 8192];
    let off = (4096 - raw.as_ptr() as usize % 4096) % 4096;
    let buf = &mut raw[off..off + 4096];
    let t = Instant::now();
    for _ in 0..reads {
        let p = rng.below(pages as u64);
        f.read_exact_at(buf, p * 4096)
            .context("reading the scratch file")?;
    }
    let s = t.elapsed().as_secs_f64().max(1e-9);
    Ok(FsRead {
        dir: dir.to_path_buf(),
        mib_s: (reads * 4096) as f64 / s / (1 << 20) as f64,
        write_mib_s: file_mib as f64 / write_s,
        mean_us: s * 1e6 / reads as f64,
        reads,
        direct_io: direct,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn measures_something_and_cleans_up() {
        let dir = std::env::temp_dir();
        let r = super::measure(&dir, 4, 200).unwrap();
        assert!(r.mib_s > 0.0 && r.mean_us > 0.0 && r.write_mib_s > 0.0);
        assert!(!dir
            .join(format!(".zmem-fsread-{}", std::process::id()))
            .exists());
    }

    #[test]
    fn a_link_or_file_put_where_the_scratch_file_goes_is_left_alone() {
        let dir = std::env::temp_dir().join(format!("zmem-fsread-link-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "root's file\n").unwrap();
        let at = dir.join(format!(".zmem-fsread-{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &at).unwrap();
        let e = super::measure(&dir, 1, 10).unwrap_err();
        assert!(format!("{e:#}").contains(".zmem-fsread-"), "{e:#}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's file\n");
        assert!(
            at.symlink_metadata().is_ok(),
            "someone else's link is not removed"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
