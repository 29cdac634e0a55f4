//! A backing device or file, checked and claimed before zmem writes to it,
//! as the kernel's `backing_dev_store` claims one: the one check every mode
//! uses (`zmem serve --backing-dev` in zram and zswap mode, `zmem bench
//! writeback --backing-dev`, `zmem apply`'s writeback-device).
//!
//! * A symbolic link is resolved and the target is what is checked, claimed
//!   and handed on ([`Claimed::path`]); [`Claimed::describe`] says so.
//! * A block device is never used while it or one of its partitions is
//!   mounted (/proc/self/mountinfo) or swapped on (/proc/swaps), and is
//!   claimed with `O_EXCL`, as the kernel claims it, so a mount, swapon or
//!   md/dm/zram holder refuses it (EBUSY) and nobody else can claim it while
//!   zmem writes to it.
//! * A regular file is never used while it is swapped on or the backing
//!   file of a loop device (/sys/block/loop*/loop/backing_file), and is
//!   locked (`flock(LOCK_EX)`) so two zmem processes never share one.
//! * Either is refused while it holds data (a filesystem, swap area or
//!   partition table signature, [`zmem_files::signature::probe`]; in a regular
//!   file any non-zero byte anywhere) unless the user says `--force`.
//!
//! The claim lasts as long as the [`Claimed`]; [`Claimed::release`] gives it
//! up right before a kernel zram device takes the device (the kernel's own
//! exclusive claim would otherwise fail with EBUSY).

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use zmem_files::signature::{probe, Signature};

/// The page size of the blocks writeback uses.
const PAGE: u64 = 4096;

/// A block device or regular file checked and claimed for writeback.
#[derive(Debug)]
pub struct Claimed {
    /// What is claimed: the path given, or the target of its symbolic link.
    pub path: PathBuf,
    /// The path as given, when it was a symbolic link to [`Claimed::path`].
    pub link: Option<PathBuf>,
    /// A block device (else a regular file).
    pub block: bool,
    /// Its size in bytes.
    pub bytes: u64,
    /// It held nothing (no signature, no data): zmem zeroes what it wrote
    /// afterwards, so it is left as found ([`Claimed::zero_pages`]).
    pub was_clean: bool,
    /// What `--force` allowed zmem to overwrite, if anything.
    pub forced_over: Option<String>,
    /// The `O_EXCL` (block) or locked (file) descriptor; None while released.
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

/// The swap areas of /proc/swaps that `is_it` says are the one checked.
fn swapped_on(swaps: &str, is_it: &dyn Fn(&std::fs::Metadata) -> bool) -> Vec<String> {
    swaps
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .filter(|p| std::fs::metadata(p).ok().is_some_and(|m| is_it(&m)))
        .map(String::from)
        .collect()
}

/// The loop devices whose backing file is `file` (by device and inode).
fn loop_devices_of(file: &std::fs::Metadata) -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .flatten()
    {
        let b = std::fs::read_to_string(e.path().join("loop/backing_file")).unwrap_or_default();
        let b = b.trim_end_matches('\n').trim_end_matches(" (deleted)");
        if b.is_empty() {
            continue;
        }
        if std::fs::metadata(b).is_ok_and(|m| m.dev() == file.dev() && m.ino() == file.ino()) {
            v.push(format!("/dev/{}", e.file_name().to_string_lossy()));
        }
    }
    v
}

/// Whether what was found may be overwritten: nothing, or anything with
/// `--force`. The error says what is there and how to proceed.
pub(crate) fn signature_allows(
    path: &Path,
    found: Option<&Signature>,
    force: bool,
) -> Result<Option<String>, String> {
    match (found, force) {
        (None, _) => Ok(None),
        (Some(s), true) => Ok(Some(s.to_string())),
        (Some(s), false) => Err(format!(
            "{} holds {s}: writeback would overwrite it; name an empty device or file, or add --force to overwrite it",
            path.display()
        )),
    }
}

/// The first non-zero byte of a regular file anywhere in it (its data
/// extents, `SEEK_DATA`/`SEEK_HOLE`: a sparse file costs nothing).
pub fn first_data(file: &File, len: u64) -> io::Result<Option<u64>> {
    let fd = file.as_raw_fd();
    let mut off = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    while off < len {
        // SAFETY: lseek on a descriptor this function borrows; no memory is touched.
        let data = unsafe { libc::lseek(fd, off as libc::off_t, libc::SEEK_DATA) };
        if data < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENXIO) => Ok(None),
                _ => Err(e),
            };
        }
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(fd, data, libc::SEEK_HOLE) };
        let end = if hole < 0 {
            len
        } else {
            (hole as u64).min(len)
        };
        let mut at = data as u64;
        while at < end {
            let n = ((end - at) as usize).min(buf.len());
            let got = file.read_at(&mut buf[..n], at)?;
            if got == 0 {
                return Ok(None);
            }
            if let Some(i) = buf[..got].iter().position(|&b| b != 0) {
                return Ok(Some(at + i as u64));
            }
            at += got as u64;
        }
        off = end.max(off + 1);
    }
    Ok(None)
}

/// The path to check: `path` itself, or the target of its symbolic link.
fn resolve(path: &Path) -> Result<(PathBuf, Option<PathBuf>), String> {
    let lmeta = std::fs::symlink_metadata(path).map_err(|e| {
        let errno = zmem_kernel::Errno::from_io(&e).name();
        format!("{}: {errno}: {e}", path.display())
    })?;
    if !lmeta.file_type().is_symlink() {
        return Ok((path.to_path_buf(), None));
    }
    let target = std::fs::canonicalize(path).map_err(|e| {
        format!(
            "{} is a symbolic link that does not resolve: {e}",
            path.display()
        )
    })?;
    Ok((target, Some(path.to_path_buf())))
}

/// Check `path` and claim it: a block device or a regular file (the module
/// says what is refused). A missing path is an error.
pub fn claim(path: &Path, force: bool) -> Result<Claimed, String> {
    let (real, link) = resolve(path)?;
    let meta = std::fs::metadata(&real).map_err(|e| format!("{}: {e}", real.display()))?;
    let shown = match &link {
        Some(l) => format!("{} (a symbolic link to {})", l.display(), real.display()),
        None => real.display().to_string(),
    };
    let block = meta.file_type().is_block_device();
    let (file, found) = if block {
        claim_block(&real, &shown, &meta)?
    } else if meta.file_type().is_file() {
        claim_file(&real, &shown, &meta)?
    } else {
        return Err(format!(
            "{shown} is neither a block device nor a regular file"
        ));
    };
    let forced_over = signature_allows(Path::new(&shown), found.as_ref(), force)?;
    let bytes = (&file)
        .seek(SeekFrom::End(0))
        .map_err(|e| format!("size of {shown}: {e}"))?;
    Ok(Claimed {
        path: real,
        link,
        block,
        bytes,
        was_clean: found.is_none(),
        forced_over,
        file: Some(file),
    })
}

/// A block device: not mounted, not swapped on, claimed with `O_EXCL`; what it holds.
fn claim_block(
    path: &Path,
    shown: &str,
    meta: &std::fs::Metadata,
) -> Result<(File, Option<Signature>), String> {
    let devs = device_and_partitions(split_dev(meta.rdev()));
    let mounts = mounted_at(
        &std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default(),
        &devs,
    );
    if !mounts.is_empty() {
        return Err(format!(
            "{shown} is mounted (at {}): never used as a backing device",
            mounts.join(", ")
        ));
    }
    let swaps = swapped_on(
        &std::fs::read_to_string("/proc/swaps").unwrap_or_default(),
        &|m| m.file_type().is_block_device() && devs.contains(&split_dev(m.rdev())),
    );
    if !swaps.is_empty() {
        return Err(format!(
            "{shown} is swapped on ({}): never used as a backing device",
            swaps.join(", ")
        ));
    }
    let file = open_block(path, shown)?;
    let found = probe(&file).map_err(|e| format!("reading {shown}: {e}"))?;
    Ok((file, found))
}

/// A regular file: not swapped on, not behind a loop device, locked; what it holds.
fn claim_file(
    path: &Path,
    shown: &str,
    meta: &std::fs::Metadata,
) -> Result<(File, Option<Signature>), String> {
    let same = |m: &std::fs::Metadata| m.dev() == meta.dev() && m.ino() == meta.ino();
    let swaps = swapped_on(
        &std::fs::read_to_string("/proc/swaps").unwrap_or_default(),
        &same,
    );
    if !swaps.is_empty() {
        return Err(format!(
            "{shown} is swapped on: never used as a backing file"
        ));
    }
    let loops = loop_devices_of(meta);
    if !loops.is_empty() {
        return Err(format!(
            "{shown} is the backing file of {}: never used as a backing file",
            loops.join(", ")
        ));
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| format!("opening {shown}: {e}"))?;
    // SAFETY: flock on a descriptor owned by `file`; no memory is touched.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(format!(
            "{shown} is in use (locked by another zmem process)"
        ));
    }
    let found = match probe(&file).map_err(|e| format!("reading {shown}: {e}"))? {
        Some(s) => Some(s),
        None => first_data(&file, meta.len())
            .map_err(|e| format!("reading {shown}: {e}"))?
            .map(|offset| Signature::Data { offset }),
    };
    Ok((file, found))
}

/// Open read-write with `O_EXCL`: EBUSY when something holds it.
fn open_block(path: &Path, shown: &str) -> Result<File, String> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_EXCL)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::EBUSY) => format!(
                "{shown} is in use (EBUSY on an exclusive open: mounted, swapped on, or held by md, dm or a zram device)"
            ),
            _ => format!("opening {shown} exclusively: {e}"),
        })
}

impl Claimed {
    /// What the check found, one line.
    pub fn describe(&self) -> String {
        let link = self
            .link
            .as_ref()
            .map(|l| format!(" (named through the symbolic link {})", l.display()))
            .unwrap_or_default();
        let (kind, how) = if self.block {
            (
                "block device",
                "not mounted, not swapped on, claimed with O_EXCL",
            )
        } else {
            ("regular file", "not swapped on, no loop device, locked")
        };
        format!(
            "{}{link}: {kind} of {} MiB, {how}; {}",
            self.path.display(),
            self.bytes >> 20,
            match &self.forced_over {
                Some(s) => format!("held {s}, overwritten (--force)"),
                None => "held nothing".into(),
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
            let shown = self.path.display().to_string();
            self.file = Some(if self.block {
                open_block(&self.path, &shown)?
            } else {
                claim_file(
                    &self.path,
                    &shown,
                    &std::fs::metadata(&self.path).map_err(|e| format!("{shown}: {e}"))?,
                )?
                .0
            });
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
        let len = (pages * PAGE).min(self.bytes);
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

    fn tmp(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!("zmem-backing-{tag}-{}", std::process::id()))
    }

    #[test]
    fn a_regular_file_with_data_anywhere_needs_force_and_a_missing_one_is_an_error() {
        let p = tmp("data");
        let f = File::create(&p).unwrap();
        f.set_len(8 << 20).unwrap();
        let c = claim(&p, false).unwrap();
        assert!(c.was_clean && !c.block && c.bytes == 8 << 20, "{c:?}");
        drop(c);
        // Beyond the first MiB probe() scans: still found.
        f.write_all_at(b"x", 5 << 20).unwrap();
        let e = claim(&p, false).unwrap_err();
        assert!(e.contains("offset 5242880") && e.contains("--force"), "{e}");
        let c = claim(&p, true).unwrap();
        assert!(!c.was_clean && c.forced_over.is_some(), "{c:?}");
        let e = claim(&p, true).unwrap_err();
        assert!(
            e.contains("locked"),
            "a second claim while the first holds it: {e}"
        );
        drop(c);
        std::fs::remove_file(&p).unwrap();
        let e = claim(&p, false).unwrap_err();
        assert!(e.contains(&p.display().to_string()), "{e}");
    }

    #[test]
    fn a_symbolic_link_is_resolved_and_said() {
        let (p, l) = (tmp("target"), tmp("link"));
        File::create(&p).unwrap().set_len(1 << 20).unwrap();
        let _ = std::fs::remove_file(&l);
        std::os::unix::fs::symlink(&p, &l).unwrap();
        let c = claim(&l, false).unwrap();
        assert_eq!(c.path, std::fs::canonicalize(&p).unwrap());
        assert_eq!(c.link.as_deref(), Some(l.as_path()));
        assert!(c.describe().contains("symbolic link"), "{}", c.describe());
        drop(c);
        std::fs::write(&p, b"data").unwrap();
        let e = claim(&l, false).unwrap_err();
        assert!(
            e.contains("a symbolic link to") && e.contains("data"),
            "{e}"
        );
        for x in [&p, &l] {
            std::fs::remove_file(x).unwrap();
        }
        std::os::unix::fs::symlink("/nonexistent/zmem", &l).unwrap();
        assert!(claim(&l, false).unwrap_err().contains("does not resolve"));
        std::fs::remove_file(&l).unwrap();
    }

    #[test]
    fn neither_file_nor_block_device_is_refused() {
        let e = claim(Path::new("/dev/null"), true).unwrap_err();
        assert!(
            e.contains("neither a block device nor a regular file"),
            "{e}"
        );
    }

    #[test]
    fn swaps_on_other_devices_do_not_count() {
        let swaps = "Filename Type Size Used Priority\n/nonexistent/swapfile file 1024 0 -2\n";
        assert!(swapped_on(swaps, &|_| true).is_empty());
    }
}
