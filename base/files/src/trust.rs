//! Rendezvous points checked before zmem trusts them: a socket it connects
//! to, a lock it takes, a journal it replays, a directory it swaps or
//! writes in, a `--root` tree it changes. Whoever can change such a place
//! can hand root a store, a command or a file of theirs, so each one is
//! checked for:
//!
//! * its owner: the caller or root;
//! * its mode: a file or socket writable by no group or other user; a
//!   directory writable by group or others only when sticky (as /tmp);
//! * every directory above it, from `/` down: each the caller's or
//!   root's, writable by no other user unless sticky. A symbolic link on
//!   the way is followed only when the caller or root owns it (in a
//!   directory already checked: `/var/run -> /run`); inside a `--root`
//!   tree ([`trusted_in_tree`]) none is followed at all.
//!
//! Every refusal names the path and why.

use std::ffi::OsString;
use std::fs::{self, Metadata};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

/// What a checked file must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A regular file (a journal, a lock, a state file, a swap file).
    File,
    /// A Unix socket (the keeper's, a control socket).
    Socket,
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn refuse(path: &Path, why: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{}: {why}", path.display()),
    )
}

fn owner_flaw(m: &Metadata) -> Option<String> {
    let uid = m.uid();
    (uid != euid() && uid != 0).then(|| {
        format!(
            "owned by {}, not by you or root",
            crate::output::user_name(uid)
        )
    })
}

/// Why another user could change what is in the directory `m`, if one could.
fn dir_flaw(m: &Metadata) -> Option<String> {
    if !m.is_dir() {
        return Some("not a directory".into());
    }
    if let Some(f) = owner_flaw(m) {
        return Some(format!("the directory is {f}"));
    }
    let writable = m.mode() & 0o022 != 0;
    let sticky = m.mode() & 0o1000 != 0;
    (writable && !sticky).then(|| {
        format!(
            "the directory's mode {:o} lets other users replace what is in it",
            m.mode() & 0o7777
        )
    })
}

/// Why another user could change the file `m` (or it is not a `kind`).
fn file_flaw(m: &Metadata, kind: Kind) -> Option<String> {
    let t = m.file_type();
    let is = match kind {
        Kind::File => t.is_file(),
        Kind::Socket => t.is_socket(),
    };
    if t.is_symlink() {
        return Some("a symbolic link".into());
    }
    if !is {
        return Some(format!(
            "not a {}",
            if kind == Kind::File {
                "regular file"
            } else {
                "socket"
            }
        ));
    }
    if let Some(f) = owner_flaw(m) {
        return Some(f);
    }
    (m.mode() & 0o022 != 0)
        .then(|| format!("mode {:o} lets other users write it", m.mode() & 0o7777))
}

fn absolute(path: &Path) -> io::Result<PathBuf> {
    if path.is_absolute() {
        Ok(path.to_path_buf())
    } else {
        Ok(std::env::current_dir()?.join(path))
    }
}

/// `dir` and every directory above it, walked from `/`: each must exist and
/// be one no other user can change (see the module). Returns the real path
/// (the trusted links followed).
pub fn trusted_dir(dir: &Path) -> io::Result<PathBuf> {
    let abs = absolute(dir)?;
    let mut todo: Vec<OsString> = Vec::new();
    for c in abs.components().rev() {
        match c {
            Component::Normal(n) => todo.push(n.to_os_string()),
            Component::ParentDir => todo.push("..".into()),
            _ => {}
        }
    }
    let mut real = PathBuf::from("/");
    check_one_dir(&real, dir)?;
    let mut hops = 0;
    while let Some(name) = todo.pop() {
        if name == ".." {
            real.pop();
            continue;
        }
        let next = real.join(&name);
        let m = fs::symlink_metadata(&next)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", next.display())))?;
        if m.file_type().is_symlink() {
            hops += 1;
            if let Some(f) = owner_flaw(&m).filter(|_| hops <= 40) {
                return Err(refuse(&next, format!("a symbolic link {f}; not followed")));
            }
            if hops > 40 {
                return Err(refuse(dir, "too many symbolic links".into()));
            }
            let to = fs::read_link(&next)?;
            if to.is_absolute() {
                real = PathBuf::from("/");
            }
            for c in to.components().rev() {
                match c {
                    Component::Normal(n) => todo.push(n.to_os_string()),
                    Component::ParentDir => todo.push("..".into()),
                    _ => {}
                }
            }
            continue;
        }
        real = next;
        check_one_dir(&real, dir)?;
    }
    Ok(real)
}

fn check_one_dir(real: &Path, asked: &Path) -> io::Result<()> {
    let m = fs::symlink_metadata(real)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", real.display())))?;
    match dir_flaw(&m) {
        None => Ok(()),
        Some(f) if real == asked => Err(refuse(real, format!("{f}; choose a directory of yours"))),
        Some(f) => Err(refuse(
            real,
            format!(
                "{f} (a directory above {}); choose a directory of yours",
                asked.display()
            ),
        )),
    }
}

/// The file at `path` (not followed if a link), a `kind` that only the
/// caller or root can change, in a directory [`trusted_dir`] accepts. Its
/// metadata (`lstat`), to compare with the descriptor opened after.
pub fn trusted_file(path: &Path, kind: Kind) -> io::Result<Metadata> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        trusted_dir(dir)?;
    } else {
        trusted_dir(Path::new("."))?;
    }
    let m = fs::symlink_metadata(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    match file_flaw(&m, kind) {
        None => Ok(m),
        Some(f) => Err(refuse(path, format!("{f}; zmem does not trust it"))),
    }
}

/// A target inside the tree `root` (`--root TREE`): the tree itself as
/// [`trusted_dir`] checks it, then every directory from the tree down to
/// the one `target` goes in, none of them a symbolic link (a link in a
/// tree leads out of it) and none another user could change; `target`
/// itself, if it exists, is no link. Missing directories are fine (zmem
/// makes them, its own). `target` must lie inside `root`.
pub fn trusted_in_tree(root: &Path, target: &Path) -> io::Result<()> {
    trusted_dir(root)?;
    let rel = target
        .strip_prefix(root)
        .map_err(|_| refuse(target, format!("not inside the tree {}", root.display())))?;
    let mut at = root.to_path_buf();
    let parts: Vec<Component> = rel.components().collect();
    for (i, c) in parts.iter().enumerate() {
        let Component::Normal(n) = c else {
            return Err(refuse(target, "not a plain path inside the tree".into()));
        };
        at.push(n);
        let m = match fs::symlink_metadata(&at) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", at.display()))),
        };
        if m.file_type().is_symlink() {
            return Err(refuse(
                &at,
                format!(
                    "a symbolic link inside the tree {} (it could lead out of it); zmem never writes through one",
                    root.display()
                ),
            ));
        }
        if i + 1 < parts.len() {
            if let Some(f) = dir_flaw(&m) {
                return Err(refuse(
                    &at,
                    format!("{f} (inside the tree {})", root.display()),
                ));
            }
        }
    }
    Ok(())
}

/// Makes `dir` (mode 0755, and any missing parent) or checks the one there,
/// for what zmem puts where other users may look but not write: sockets and
/// locks in `/run/zmem`. It and every directory above it as
/// [`trusted_dir`] checks them: whoever could change one could replace a
/// socket root connects to, or swap the socket for a link before its mode
/// is set.
pub fn shared_dir(dir: &Path) -> io::Result<()> {
    made_dir(dir, 0o755)
}

/// `dir` made with `mode` where missing, then checked: itself no symbolic
/// link (zmem's own directory is a real one), it and those above trusted.
fn made_dir(dir: &Path, mode: u32) -> io::Result<()> {
    crate::output::make_dirs(dir, mode)?;
    if fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(refuse(
            dir,
            "a symbolic link; zmem keeps its sockets, locks and journals only in a real directory"
                .into(),
        ));
    }
    trusted_dir(dir).map(|_| ())
}

/// Makes `dir` (mode 0700, and any missing parent, each 0700) or checks the
/// one there, for what only the caller reads: journals, `/run/zmem-trial`.
/// As [`shared_dir`], and a directory zmem makes is private whatever the
/// umask.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    made_dir(dir, 0o700)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::ScratchDir;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_directory_others_may_write_is_refused_unless_sticky() {
        let d = ScratchDir::new("trust-dir");
        let sub = d.join("a/b");
        fs::create_dir_all(&sub).unwrap();
        assert_eq!(trusted_dir(&sub).unwrap(), sub);
        chmod(&d.join("a"), 0o777);
        let e = trusted_dir(&sub).unwrap_err().to_string();
        assert!(
            e.contains("a directory above") && e.contains("mode 777"),
            "{e}"
        );
        chmod(&d.join("a"), 0o1777);
        trusted_dir(&sub).unwrap();
        chmod(&d.join("a"), 0o770);
        assert!(trusted_dir(&sub).is_err(), "group-writable, not sticky");
    }

    #[test]
    fn links_are_followed_only_when_yours_or_roots_and_never_in_a_tree() {
        let d = ScratchDir::new("trust-link");
        fs::create_dir_all(d.join("real/x")).unwrap();
        std::os::unix::fs::symlink(d.join("real"), d.join("l")).unwrap();
        assert_eq!(trusted_dir(&d.join("l/x")).unwrap(), d.join("real/x"));
        let e = trusted_in_tree(d.path(), &d.join("l/x/f")).unwrap_err();
        assert!(
            e.to_string().contains("symbolic link inside the tree"),
            "{e}"
        );
        trusted_in_tree(d.path(), &d.join("real/x/f")).unwrap();
        trusted_in_tree(d.path(), &d.join("real/new/f")).unwrap();
    }

    #[test]
    fn a_file_others_may_write_or_a_link_is_refused() {
        let d = ScratchDir::new("trust-file");
        let f = d.join("j");
        fs::write(&f, "x").unwrap();
        chmod(&f, 0o600);
        trusted_file(&f, Kind::File).unwrap();
        assert!(trusted_file(&f, Kind::Socket)
            .unwrap_err()
            .to_string()
            .contains("not a socket"));
        chmod(&f, 0o666);
        let e = trusted_file(&f, Kind::File).unwrap_err().to_string();
        assert!(e.contains("mode 666"), "{e}");
        std::os::unix::fs::symlink(&f, d.join("l")).unwrap();
        let e = trusted_file(&d.join("l"), Kind::File)
            .unwrap_err()
            .to_string();
        assert!(e.contains("symbolic link"), "{e}");
    }

    #[test]
    fn another_users_directory_is_refused() {
        if euid() != 0 {
            return crate::testutil::skip(
                "SKIP another_users_directory_is_refused: needs root (chown)",
            );
        }
        let d = ScratchDir::new("trust-owner");
        let sub = d.join("theirs");
        fs::create_dir(&sub).unwrap();
        std::os::unix::fs::chown(&sub, Some(65534), Some(65534)).unwrap();
        let e = trusted_dir(&sub.join(".")).unwrap_err().to_string();
        assert!(e.contains("owned by uid 65534"), "{e}");
        let e = shared_dir(&sub.join("zmem")).unwrap_err().to_string();
        assert!(e.contains("owned by uid 65534"), "{e}");
    }
}
