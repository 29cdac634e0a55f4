//! Whether a directory can hold the swap file zmem creates, asked before a
//! trial, a tune or `zmem bench zswap` changes anything: no other user may
//! change it or a directory above it (`zmem_files::trusted_dir`), and swapon(2) refuses a
//! file on a filesystem without a swap_activate/bmap path (mm/swapfile.c
//! `setup_swap_extents`) with EINVAL, which is what a VM's 9p or a tmpfs /tmp
//! gives. The filesystem is known by statfs's `f_type` (include/uapi/linux/magic.h).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Filesystems swapon refuses a swap file on, by statfs magic.
const NO_SWAP_FILES: &[(i64, &str)] = &[
    (0x0102_1994, "tmpfs"),
    (0x8584_58f6, "ramfs"),
    (0x0102_1997, "9p"),
    (0x794c_7630, "overlayfs"),
    (0x6573_5546, "fuse"),
    (0x7371_7368, "squashfs"),
    (0x9fa0, "proc"),
    (0x6265_6572, "sysfs"),
    (0xff53_4d42, "cifs"),
    (0xfe53_4d42, "smb2"),
];

/// Free bytes for an unprivileged writer and the filesystem's magic.
fn statfs(dir: &Path) -> std::io::Result<(u64, i64)> {
    let c = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: statfs is plain old data; all-zero is valid.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `st` is writable for the call.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((
        st.f_bavail as u64 * st.f_bsize as u64,
        st.f_type as i64 & 0xffff_ffff,
    ))
}

/// The name of the filesystem `dir` is on when swapon refuses swap files
/// there (`None` for any other filesystem, or when statfs fails).
pub fn swapless_filesystem(dir: &Path) -> Option<&'static str> {
    let (_, magic) = statfs(dir).ok()?;
    NO_SWAP_FILES
        .iter()
        .find(|(m, _)| *m == magic)
        .map(|(_, n)| *n)
}

/// Why `dir` cannot hold a swap file of `bytes` bytes plus `spare` (what
/// `flag` names, e.g. `--swap-dir`), or `None` when it can: it must be a
/// directory, on a filesystem that can hold swap files, with the room.
pub fn swap_dir_refusal(dir: &Path, bytes: u64, spare: u64, flag: &str) -> Option<String> {
    let d = dir.display();
    if !dir.is_dir() {
        return Some(format!("swap file directory {d} does not exist ({flag})"));
    }
    // Whoever can change the directory (or one above it) could swap the
    // file zmem swaps on for theirs, and keep the one zmem made.
    if let Err(e) = zmem_files::trusted_dir(dir) {
        return Some(format!(
            "{e} ({flag}): another user could replace the swap file zmem creates there before it is swapped on; use a directory of yours or root's, such as /var/tmp"
        ));
    }
    if let Some(fs) = swapless_filesystem(dir) {
        return Some(format!(
            "{d} is on {fs}, which cannot hold a swap file (swapon refuses it with EINVAL); give {flag} a directory on a disk filesystem such as ext4 or xfs"
        ));
    }
    let (avail, _) = statfs(dir).ok()?;
    (avail < bytes + spare).then(|| {
        format!(
            "{d} has {} MiB free, the swap file needs {} MiB plus {} MiB to spare ({flag})",
            avail >> 20,
            bytes.div_ceil(1 << 20),
            spare >> 20
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_and_tmpfs_cannot_hold_swap_files() {
        let e = swap_dir_refusal(Path::new("/proc"), 1 << 20, 0, "--swap-dir").unwrap();
        assert!(
            e.contains("/proc is on proc") && e.contains("--swap-dir"),
            "{e}"
        );
        if swapless_filesystem(Path::new("/dev/shm")) == Some("tmpfs") {
            let e = swap_dir_refusal(Path::new("/dev/shm"), 1 << 20, 0, "--swap-dir").unwrap();
            assert!(e.contains("on tmpfs"), "{e}");
        }
    }

    #[test]
    fn a_missing_directory_and_too_little_room_are_named() {
        let e = swap_dir_refusal(Path::new("/nonexistent/zmem"), 1, 0, "--swap-dir").unwrap();
        assert!(e.contains("does not exist"), "{e}");
        let dir = std::env::current_dir().unwrap();
        if swapless_filesystem(&dir).is_none() {
            let e = swap_dir_refusal(&dir, u64::MAX / 2, 0, "--swap-dir").unwrap();
            assert!(e.contains("MiB free"), "{e}");
            assert_eq!(swap_dir_refusal(&dir, 4096, 0, "--swap-dir"), None);
        }
    }
}
