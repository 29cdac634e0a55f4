//! Where an output may go, checked by descriptor: the directory (opened
//! `O_DIRECTORY|O_NOFOLLOW`, yours or root's, writable by no other user
//! unless sticky), the file already there (absent, or a regular file of
//! yours that zmem wrote, or any regular file of yours with `--force`), and
//! the new file's creation (`O_CREAT|O_EXCL|O_NOFOLLOW`, its mode exact).
//! Every error names the path it is about.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

/// When an existing output may be replaced (never when it is a symbolic
/// link, not a regular file, or another user's).
#[derive(Clone, Copy)]
pub enum Replace<'a> {
    /// Only when `ours` says zmem wrote what is there (its marker, read as
    /// bytes: a file in any encoding is judged the same way).
    IfOurs(&'a dyn Fn(&[u8]) -> bool),
    /// Whatever is there (`--force`), still never through a symbolic link.
    Always,
}

/// Who may read an output file (and a directory made for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readers {
    /// 0600, directories 0700: answers, reports, configs, captures, state.
    Owner,
    /// 0644, directories 0755: files the system reads at boot (`zmem persist`'s, under /etc).
    Everyone,
}

impl Readers {
    /// (file mode, directory mode).
    pub(super) fn modes(self) -> (u32, u32) {
        match self {
            Readers::Owner => (0o600, 0o700),
            Readers::Everyone => (0o644, 0o755),
        }
    }
}

pub(super) fn err(kind: io::ErrorKind, msg: String) -> io::Error {
    io::Error::new(kind, msg)
}

/// `e`, prefixed with the path it is about.
pub(super) fn named(e: io::Error, path: &Path) -> io::Error {
    err(e.kind(), format!("{}: {e}", path.display()))
}

pub(super) fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

pub(super) fn is_symlink(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// `uid 65534 (nobody)`, `root`: a user as an error names it.
pub(crate) fn user_name(uid: u32) -> String {
    if uid == 0 {
        return "root".into();
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let name = passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 2 && f[2].parse() == Ok(uid)).then(|| f[0].to_string())
    });
    match name {
        Some(n) => format!("uid {uid} ({n})"),
        None => format!("uid {uid}"),
    }
}

/// Opens `dir` as a directory without following a symbolic link.
pub(super) fn open_dir(dir: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::open(dir, flags, Mode::empty()).map_err(|e| match e {
        Errno::LOOP | Errno::NOTDIR if is_symlink(dir) => err(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is a symbolic link; zmem writes its outputs only into a real directory",
                dir.display()
            ),
        ),
        e => named(e.into(), dir),
    })
}

/// Checks that no other user can replace what zmem writes in the open
/// directory: it is yours or root's, and if group or others may write it,
/// it is sticky (as /tmp) or the group is your own.
pub(super) fn check_dir(fd: &OwnedFd, dir: &Path) -> io::Result<()> {
    let st = rustix::fs::fstat(fd).map_err(|e| named(e.into(), dir))?;
    let me = euid();
    let refuse = |why: String| {
        Err(err(
            io::ErrorKind::PermissionDenied,
            format!(
                "{}: {why}, who could replace what zmem writes there; choose a directory of \
                 yours",
                dir.display()
            ),
        ))
    };
    if st.st_uid != me && st.st_uid != 0 {
        return refuse(format!(
            "the directory is owned by {}, not by you or root",
            user_name(st.st_uid)
        ));
    }
    let sticky = st.st_mode & 0o1000 != 0;
    let my_group = st.st_gid == rustix::process::getegid().as_raw();
    if !sticky && (st.st_mode & 0o002 != 0 || (st.st_mode & 0o020 != 0 && !my_group)) {
        return refuse(format!(
            "the directory's mode {:o} lets other users write it",
            st.st_mode & 0o7777
        ));
    }
    Ok(())
}

/// The directory and the file name of an output path.
pub(super) fn split(path: &Path) -> io::Result<(PathBuf, String)> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| {
            err(
                io::ErrorKind::InvalidInput,
                format!("{}: not a file name", path.display()),
            )
        })?
        .to_string();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.components().collect(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name))
}

/// Makes `dir` and its missing parents with `mode`; returns the ones it
/// made, outermost first (so a failed write can remove them again).
pub(crate) fn make_dirs(dir: &Path, mode: u32) -> io::Result<Vec<PathBuf>> {
    use std::os::unix::fs::DirBuilderExt;
    let mut missing = Vec::new();
    let mut d = dir;
    while !is_symlink(d) && std::fs::symlink_metadata(d).is_err() {
        missing.push(d.to_path_buf());
        match d.parent() {
            Some(p) if !p.as_os_str().is_empty() => d = p,
            _ => break,
        }
    }
    let mut made = Vec::new();
    for m in missing.into_iter().rev() {
        match std::fs::DirBuilder::new().mode(mode).create(&m) {
            Ok(()) => made.push(m),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                remove_dirs(&made);
                return Err(err(e.kind(), format!("creating {}: {e}", m.display())));
            }
        }
    }
    Ok(made)
}

/// Removes directories [`make_dirs`] made, innermost first, if still empty.
pub(super) fn remove_dirs(made: &[PathBuf]) {
    for d in made.iter().rev() {
        let _ = std::fs::remove_dir(d);
    }
}

/// What is at an output path now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Existing {
    Nothing,
    /// A regular file zmem may replace.
    File,
}

fn not_replaceable(path: &Path, why: &str) -> io::Error {
    err(
        io::ErrorKind::InvalidInput,
        format!("{} {why}", path.display()),
    )
}

/// Whether `name` in `dir` may be replaced: absent, or a regular file of
/// yours that `replace` accepts. A symbolic link, a FIFO, a device, a
/// directory and another user's file are always refused; nothing but a
/// regular file is ever opened.
pub(super) fn check_existing(
    dir: &OwnedFd,
    path: &Path,
    name: &str,
    replace: Replace,
) -> io::Result<Existing> {
    let st = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(Existing::Nothing),
        Err(e) => return Err(named(e.into(), path)),
    };
    check_stat(&st, path)?;
    let Replace::IfOurs(ours) = replace else {
        return Ok(Existing::File);
    };
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    let fd = rustix::fs::openat(dir, name, flags | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| named(e.into(), path))?;
    let now = rustix::fs::fstat(&fd).map_err(|e| named(e.into(), path))?;
    check_stat(&now, path)?;
    let mut head = Vec::new();
    File::from(fd)
        .take(64 << 10)
        .read_to_end(&mut head)
        .map_err(|e| named(e, path))?;
    if !ours(&head) {
        return Err(err(
            io::ErrorKind::AlreadyExists,
            format!(
                "{} exists and was not written by zmem; not replacing it",
                path.display()
            ),
        ));
    }
    Ok(Existing::File)
}

/// A regular file of yours, or the reason it may not be replaced.
fn check_stat(st: &Stat, path: &Path) -> io::Result<()> {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {}
        FileType::Symlink => {
            return Err(not_replaceable(
                path,
                "is a symbolic link; zmem never writes through one (remove it)",
            ))
        }
        FileType::Directory => return Err(not_replaceable(path, "exists and is a directory")),
        FileType::Fifo => return Err(not_replaceable(path, "exists and is a FIFO")),
        FileType::CharacterDevice | FileType::BlockDevice => {
            return Err(not_replaceable(path, "exists and is a device"))
        }
        _ => return Err(not_replaceable(path, "exists and is not a regular file")),
    }
    if st.st_uid != euid() {
        return Err(err(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is owned by {}, not by you; zmem never replaces another user's file \
                 (not even with --force)",
                path.display(),
                user_name(st.st_uid)
            ),
        ));
    }
    Ok(())
}

/// A random name part: std's hasher keys are random per process.
pub(super) fn random_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    format!("{:012x}", h.finish() & 0xffff_ffff_ffff)
}

/// Creates `name` in the directory: new, never through a link, with `mode`
/// exactly (set again after the open, which the umask may have narrowed).
pub(super) fn create_in(dir: &OwnedFd, name: &str, mode: u32) -> Result<File, Errno> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(mode))?;
    if let Err(e) = rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode)) {
        let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
        return Err(e);
    }
    Ok(File::from(fd))
}

/// A new temporary file `.NAME.zmem-XXXXXXXXXXXX` beside `name`, with `mode`.
pub(super) fn create_temp(
    dir: &OwnedFd,
    path: &Path,
    name: &str,
    mode: u32,
) -> io::Result<(String, File)> {
    loop {
        let t = format!(".{name}.zmem-{}", random_suffix());
        match create_in(dir, &t, mode) {
            Ok(f) => return Ok((t, f)),
            Err(Errno::EXIST) => continue,
            Err(e) => {
                let e = io::Error::from(e);
                return Err(err(
                    e.kind(),
                    format!("{}: cannot write: {e}", path.display()),
                ));
            }
        }
    }
}

/// Writes and syncs the new file; on failure removes it.
pub(super) fn fill(mut f: File, dir: &OwnedFd, name: &str, bytes: &[u8]) -> io::Result<()> {
    let r = f.write_all(bytes).and_then(|_| f.sync_all());
    if r.is_err() {
        let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
    }
    r
}
