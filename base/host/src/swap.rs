//! swapon, swapoff and mkswap, without external tools: the swap signature
//! is the layout mkswap writes (include/linux/swap.h `union swap_header`:
//! version 1, `last_page`, `SWAPSPACE2` at the end of the first page), and
//! swapon/swapoff are the system calls (mm/swapfile.c), the one way zmem
//! turns swap on and off. This module records nothing and undoes nothing:
//! [`Sys`](crate::Sys) calls it for the running kernel (a fixture tree is
//! emulated instead) and [`Action`](crate::Action) decides when.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

// include/linux/swap.h
const SWAP_FLAG_PREFER: libc::c_int = 0x8000;
const SWAP_FLAG_PRIO_MASK: libc::c_int = 0x7fff;
const SWAP_FLAG_DISCARD: libc::c_int = 0x10000;
const SWAP_FLAG_DISCARD_ONCE: libc::c_int = 0x20000;
const SWAP_FLAG_DISCARD_PAGES: libc::c_int = 0x40000;

/// Swap priority zmem gives the zram tier it turns on; higher is used first.
pub const ZRAM_PRIORITY: i32 = 100;
/// Swap priority zmem gives a disk swap file it turns on (below zram's).
pub const DISK_PRIORITY: i32 = 10;

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

/// Which file a swap file is: (device, inode), from the descriptor that
/// created it.
pub type FileId = (u64, u64);

/// Create a new swap file of `bytes` bytes (mode 0600 whatever the umask,
/// fully allocated, no holes) with a swap signature: `O_CREAT|O_EXCL|
/// O_NOFOLLOW`, so a file or link put there first is an error and left
/// alone. Its identity, for [`verify_swap_file`] right before swapon.
pub fn create_swap_file(path: &Path, bytes: u64) -> io::Result<FileId> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let bytes = bytes / page_size() * page_size();
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    let m = f.metadata()?;
    let id = (m.dev(), m.ino());
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
    write_signature(&mut f, bytes)?;
    Ok(id)
}

/// Right before swapon: the file at `path` is still the one
/// [`create_swap_file`] made (`id`), opened without following a link and
/// compared by descriptor (`fstat`) and by path (`lstat`), a regular file of
/// this user's, mode 0600. Anything else is refused naming what is there.
pub fn verify_swap_file(path: &Path, id: FileId) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let refuse = |why: String| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{}: {why}; not swapping on it", path.display()),
        )
    };
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| refuse(format!("cannot open the swap file zmem made ({e})")))?;
    let (fd, at) = (f.metadata()?, std::fs::symlink_metadata(path)?);
    let me = rustix::process::geteuid().as_raw();
    if (fd.dev(), fd.ino()) != id || (at.dev(), at.ino()) != id {
        return Err(refuse("not the file zmem created (replaced)".into()));
    }
    if !fd.is_file() || fd.uid() != me || fd.mode() & 0o7777 != 0o600 {
        return Err(refuse(format!(
            "not a mode 600 regular file of yours (uid {}, mode {:o})",
            fd.uid(),
            fd.mode() & 0o7777
        )));
    }
    Ok(())
}

/// Write a swap signature over the whole of a block device or file (its
/// size is where it ends), as `mkswap PATH` does.
pub fn mkswap(path: &Path) -> io::Result<()> {
    use std::io::Seek;
    let mut f = OpenOptions::new().write(true).open(path)?;
    let bytes = f.seek(io::SeekFrom::End(0))?;
    write_signature(&mut f, bytes)
        .map_err(|e| io::Error::new(e.kind(), format!("mkswap {}: {e}", path.display())))
}

/// The swapon(2) flags of `swapon -p PRIORITY -o OPTIONS`, as util-linux
/// swapon(8) makes them: a negative priority leaves it to the kernel (no
/// SWAP_FLAG_PREFER); `discard`, `discard=once`, `discard=pages` set the
/// discard flags; other options (`nofail`, `pri=`, `defaults`…) add none.
pub fn swapon_flags(priority: i32, options: &str) -> libc::c_int {
    let mut flags = 0;
    if priority >= 0 {
        flags |= SWAP_FLAG_PREFER | (priority.min(SWAP_FLAG_PRIO_MASK) & SWAP_FLAG_PRIO_MASK);
    }
    for o in options.split(',').map(str::trim) {
        flags |= match o {
            "discard" => SWAP_FLAG_DISCARD,
            "discard=once" => SWAP_FLAG_DISCARD | SWAP_FLAG_DISCARD_ONCE,
            "discard=pages" => SWAP_FLAG_DISCARD | SWAP_FLAG_DISCARD_PAGES,
            _ => 0,
        };
    }
    flags
}

fn cpath(p: &Path) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path has a NUL byte"))
}

/// Activate a swap area with a priority (higher is used first).
pub fn swapon(path: &Path, priority: i32) -> io::Result<()> {
    swapon_with(path, priority, "")
}

/// Activate a swap area with a priority and `swapon -o` options.
pub fn swapon_with(path: &Path, priority: i32, options: &str) -> io::Result<()> {
    let c = cpath(path)?;
    let flags = swapon_flags(priority, options);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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
    fn flags_are_those_of_swapon_8() {
        assert_eq!(swapon_flags(100, ""), 0x8000 | 100);
        assert_eq!(swapon_flags(100, "discard"), 0x18000 | 100);
        assert_eq!(swapon_flags(5, "nofail,discard=once"), 0x38000 | 5);
        assert_eq!(swapon_flags(0, "discard=pages"), 0x58000);
        assert_eq!(
            swapon_flags(-2, ""),
            0,
            "a negative priority is the kernel's"
        );
        assert_eq!(swapon_flags(40000, ""), 0x8000 | 0x7fff);
    }

    #[test]
    fn mkswap_covers_the_whole_file() {
        let p = std::env::temp_dir().join(format!("zmem-host-mkswap-test.{}", std::process::id()));
        fs::write(&p, vec![0u8; 1 << 20]).unwrap();
        mkswap(&p).unwrap();
        let data = fs::read(&p).unwrap();
        let ps = page_size() as usize;
        assert_eq!(&data[ps - 10..ps], b"SWAPSPACE2");
        let last = u32::from_ne_bytes(data[1028..1032].try_into().unwrap());
        assert_eq!(last as usize, (1 << 20) / ps - 1);
        fs::remove_file(&p).unwrap();
    }

    #[test]
    fn swap_file_has_signature_and_no_holes() {
        let dir = std::env::temp_dir();
        let p = dir.join(format!("zmem-trial-swapfile-test.{}", std::process::id()));
        let _ = fs::remove_file(&p);
        let id = create_swap_file(&p, 1 << 20).unwrap();
        verify_swap_file(&p, id).unwrap();
        let data = fs::read(&p).unwrap();
        assert_eq!(data.len(), 1 << 20);
        let ps = page_size() as usize;
        assert_eq!(&data[ps - 10..ps], b"SWAPSPACE2");
        let made = fs::metadata(&p).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&made.permissions()) & 0o777,
            0o600
        );
        // create_new: a second create must not clobber an existing file.
        assert_eq!(
            create_swap_file(&p, 1 << 20).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        fs::remove_file(&p).unwrap();
    }

    /// Hostile finding 5: a file put in the swap file's place (renamed
    /// over it, or a link) is never swapped on.
    #[test]
    fn a_swap_file_replaced_before_swapon_is_refused() {
        let d = zmem_files::testutil::ScratchDir::new("swap-replaced");
        let p = d.join("zmem-trial.x.swap");
        let id = create_swap_file(&p, 1 << 20).unwrap();
        let theirs = d.join("theirs");
        fs::write(&theirs, vec![0u8; 1 << 20]).unwrap();
        fs::set_permissions(&theirs, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        fs::rename(&theirs, &p).unwrap();
        let e = verify_swap_file(&p, id).unwrap_err().to_string();
        assert!(e.contains("not the file zmem created"), "{e}");
        fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(d.join("elsewhere"), &p).unwrap();
        assert!(verify_swap_file(&p, id).is_err());
        // A link or file already there: create refuses it and leaves it.
        assert_eq!(
            create_swap_file(&p, 1 << 20).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        assert!(fs::symlink_metadata(&p).unwrap().file_type().is_symlink());
    }
}
