//! The backing device `zmem bench writeback` is given (`--backing-dev /dev/X`),
//! checked before anything is written to it: a block device is never used
//! while it is mounted (it or one of its partitions, /proc/self/mountinfo)
//! or swapped on (/proc/swaps), nor while it holds a filesystem, swap area,
//! partition table or other data (`zmem_host::signature::probe`) unless the
//! user says `--force`. It is claimed with `O_EXCL`, as the kernel's
//! `backing_dev_store` claims it, so a mount, swapon or md/dm/zram holder
//! refuses it (EBUSY) and nobody else can claim it while the engine writes
//! to it. The claim is given up right before a kernel zram device takes it
//! (the kernel's own exclusive claim would otherwise fail with EBUSY).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use zmem_codec::PAGE_SIZE;
use zmem_host::signature::{probe, Signature};

/// A block device checked and claimed for writeback.
#[derive(Debug)]
pub struct Claimed {
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// It held nothing (no signature, first MiB zero): zmem zeroes what it
    /// wrote afterwards, so it is left as found ([`Claimed::zero_pages`]).
    pub was_clean: bool,
    /// What `--force` allowed zmem to overwrite, if anything.
    pub forced_over: Option<String>,
    /// The `O_EXCL` descriptor; None while released.
    file: Option<File>,
}

/// (major, minor) of a device number, as glibc's `major()`/`minor()`.
fn split_dev(rdev: u64) -> (u32, u32) {
    (
        (((rdev >> 32) & 0xffff_f000) | ((rdev >> 8) & 0xfff)) as u32,
        (((rdev >> 12) & 0xffff_ff00) | (rdev & 0xff)) as u32,
    )
}

/// The mount points of /proc/self/mountinfo whose source is one of `devs`
/// (field 3 is `major:minor`).
pub(crate) fn mounted_at(mountinfo: &str, devs: &[(u32, u32)]) -> Vec<String> {
    mountinfo
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (maj, min) = f.get(2)?.split_once(':')?;
            let d = (maj.parse().ok()?, min.parse().ok()?);
            devs.contains(&d)
                .then(|| f.get(4).copied().unwrap_or("?").to_string())
        })
        .collect()
}

/// The device and its partitions (`/sys/dev/block/MAJ:MIN/*/partition`).
fn device_and_partitions(dev: (u32, u32)) -> Vec<(u32, u32)> {
    let mut v = vec![dev];
    let dir = format!("/sys/dev/block/{}:{}", dev.0, dev.1);
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().join("partition").exists() {
            let d = std::fs::read_to_string(e.path().join("dev")).unwrap_or_default();
            if let Some((a, b)) = d.trim().split_once(':') {
                if let (Ok(a), Ok(b)) = (a.parse(), b.parse()) {
                    v.push((a, b));
                }
            }
        }
    }
    v
}

/// The swap areas of /proc/swaps that are one of `devs` (by the device
/// number of the path /proc/swaps names).
fn swapped_on(swaps: &str, devs: &[(u32, u32)]) -> Vec<String> {
    swaps
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .filter(|p| {
            std::fs::metadata(p)
                .ok()
                .filter(|m| m.file_type().is_block_device())
                .is_some_and(|m| devs.contains(&split_dev(m.rdev())))
        })
        .map(String::from)
        .collect()
}

/// Whether what [`probe`] found may be overwritten: nothing, or anything
/// with `--force`. The error says what is there and how to proceed.
pub(crate) fn signature_allows(
    path: &Path,
    found: Option<&Signature>,
    force: bool,
) -> Result<Option<String>, String> {
    match (found, force) {
        (None, _) => Ok(None),
        (Some(s), true) => Ok(Some(s.to_string())),
        (Some(s), false) => Err(format!(
            "{} holds {s}: writeback would overwrite it; name an empty device, or add --force to overwrite it",
            path.display()
        )),
    }
}

/// Check `path` and claim it; Ok(None) when it is not a block device (a
/// regular file the engine alone may use; the kernel's rows need a block device).
pub fn check(path: &Path, force: bool) -> Result<Option<Claimed>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.file_type().is_block_device() {
        return Ok(None);
    }
    let dev = split_dev(meta.rdev());
    let devs = device_and_partitions(dev);
    let mounts = mounted_at(
        &std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default(),
        &devs,
    );
    if !mounts.is_empty() {
        return Err(format!(
            "{} is mounted (at {}): never used as a backing device",
            path.display(),
            mounts.join(", ")
        ));
    }
    let swaps = swapped_on(
        &std::fs::read_to_string("/proc/swaps").unwrap_or_default(),
        &devs,
    );
    if !swaps.is_empty() {
        return Err(format!(
            "{} is swapped on ({}): never used as a backing device",
            path.display(),
            swaps.join(", ")
        ));
    }
    let file = claim(path)?;
    let found = probe(&file).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let forced_over = signature_allows(path, found.as_ref(), force)?;
    let bytes = {
        use std::io::{Seek, SeekFrom};
        (&file)
            .seek(SeekFrom::End(0))
            .map_err(|e| format!("size of {}: {e}", path.display()))?
    };
    Ok(Some(Claimed {
        path: path.to_path_buf(),
        bytes,
        was_clean: found.is_none(),
        forced_over,
        file: Some(file),
    }))
}

/// Open read-write with `O_EXCL`: EBUSY when something holds it.
fn claim(path: &Path) -> Result<File, String> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_EXCL)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::EBUSY) => format!(
                "{} is in use (EBUSY on an exclusive open: mounted, swapped on, or held by md, dm or a zram device)",
                path.display()
            ),
            _ => format!("opening {} exclusively: {e}", path.display()),
        })
}

impl Claimed {
    /// What the check found, one line.
    pub fn describe(&self) -> String {
        format!(
            "{}: block device of {} MiB, not mounted, not swapped on, claimed with O_EXCL; {}",
            self.path.display(),
            self.bytes >> 20,
            match &self.forced_over {
                Some(s) => format!("held {s}, overwritten (--force)"),
                None => "held nothing: what writeback wrote is zeroed afterwards".into(),
            }
        )
    }

    /// Give up the claim (before a kernel zram device claims the device).
    pub fn release(&mut self) {
        self.file = None;
    }

    /// Claim it again (after the kernel device is gone).
    pub fn reclaim(&mut self) -> Result<(), String> {
        if self.file.is_none() {
            self.file = Some(claim(&self.path)?);
        }
        Ok(())
    }

    /// Flush what was written through the page cache to the device.
    pub fn flush(&mut self) -> io::Result<()> {
        self.reclaim().map_err(io::Error::other)?;
        self.file.as_ref().expect("claimed").sync_all()
    }

    /// Zero the first `pages` pages (every block writeback of that many
    /// pages can have used, block 0 included) and flush; only when the
    /// device held nothing before. Returns the bytes zeroed.
    pub fn zero_pages(&mut self, pages: u64) -> io::Result<u64> {
        if !self.was_clean {
            return Ok(0);
        }
        self.reclaim().map_err(io::Error::other)?;
        let f = self.file.as_ref().expect("claimed");
        let len = (pages * PAGE_SIZE as u64).min(self.bytes);
        let zeros = vec![0u8; 1 << 20];
        let mut off = 0;
        while off < len {
            let n = (len - off).min(zeros.len() as u64) as usize;
            f.write_all_at(&zeros[..n], off)?;
            off += n as u64;
        }
        f.sync_all()?;
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
30 22 0:25 / /proc rw - proc proc rw
41 22 7:3 / /mnt/loop rw - ext4 /dev/loop3 rw
";

    #[test]
    fn a_mounted_device_or_partition_is_found() {
        assert_eq!(mounted_at(MOUNTINFO, &[(7, 3)]), vec!["/mnt/loop"]);
        assert_eq!(mounted_at(MOUNTINFO, &[(254, 0), (254, 1)]), vec!["/"]);
        assert!(mounted_at(MOUNTINFO, &[(254, 16)]).is_empty());
        assert!(mounted_at("garbage\n\n1 2 x:y\n", &[(7, 3)]).is_empty());
    }

    #[test]
    fn device_numbers_split_as_glibc() {
        assert_eq!(split_dev(libc::makedev(254, 1)), (254, 1));
        assert_eq!(split_dev(libc::makedev(259, 70000)), (259, 70000));
        assert_eq!(split_dev(libc::makedev(4095, 0)), (4095, 0));
    }

    #[test]
    fn a_signature_needs_force() {
        let p = Path::new("/dev/vdz");
        assert_eq!(signature_allows(p, None, false), Ok(None));
        for s in [
            Signature::Swap,
            Signature::Format("ext2/3/4 filesystem"),
            Signature::Data { offset: 4096 },
        ] {
            let e = signature_allows(p, Some(&s), false).unwrap_err();
            assert!(e.contains("/dev/vdz") && e.contains("--force"), "{e}");
            assert!(e.contains(&s.to_string()), "{e}");
            assert_eq!(signature_allows(p, Some(&s), true), Ok(Some(s.to_string())));
        }
    }

    #[test]
    fn a_regular_file_is_not_claimed_and_a_missing_one_is_an_error() {
        let p = std::env::temp_dir().join(format!("zmem-wb-check-{}", std::process::id()));
        std::fs::write(&p, b"x").unwrap();
        assert!(check(&p, false).unwrap().is_none());
        std::fs::remove_file(&p).unwrap();
        let e = check(&p, false).unwrap_err();
        assert!(e.contains(&p.display().to_string()), "{e}");
    }

    #[test]
    fn swaps_on_other_devices_do_not_count() {
        let swaps = "Filename Type Size Used Priority\n/nonexistent/swapfile file 1024 0 -2\n";
        assert!(swapped_on(swaps, &[(7, 3)]).is_empty());
    }
}
