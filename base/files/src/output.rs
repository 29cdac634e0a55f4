//! The one writer of the files zmem writes: the verdict's config in the
//! user's state directory, `--out-dir DIR/zmem.conf`, HTML reports, tune's
//! deployed file, `zmem persist`'s files, captures and generated corpora
//! with their sidecars, dictionaries, and `zmem policy`'s state.
//!
//! Every output is created mode 0600 (0644 for the files `zmem persist`
//! leaves for the boot, [`Readers`]) with `O_CREAT|O_EXCL|O_NOFOLLOW` inside
//! a directory opened with `O_DIRECTORY|O_NOFOLLOW`, and everything after
//! that open is relative to the directory's descriptor (`openat`,
//! `renameat2`), so neither the file nor the directory it goes in is ever
//! reached through a symbolic link, also when one is planted between a
//! check and the write. The directory must be yours or root's and writable
//! by no other user (unless sticky, as /tmp), and an existing file must be
//! a regular file of yours: root's answer never lands where another user
//! could change it (`place`).
//!
//! * [`StateDir`]: where the verdict's answer goes, per user: root
//!   `/var/lib/zmem`, others `$XDG_STATE_HOME/zmem` or
//!   `~/.local/state/zmem` (only when HOME exists and is the user's), else a
//!   new private directory under `$TMPDIR` (mkdtemp-style, never a fixed
//!   shared name); `ZMEM_STATE_DIR` overrides the choice. A state directory
//!   that is a symbolic link, not the user's, or writable by group or others
//!   is refused. [`StateDir::create_new`] writes a new timestamped file each
//!   run (`verdict-20261126T101500Z.conf`, then `-2`, `-3` on collision).
//! * [`write_output`], [`write_outputs`], [`Staging`]: named outputs
//!   (`--out-dir`, `--report`, `-o`, persist's files, the policy state),
//!   replaced whole and all or nothing (`batch`), and only when zmem wrote
//!   the file that is there (or the caller's `--force`).

mod batch;
mod place;

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::io::Errno;

pub use batch::{check_output, write_outputs, OutputFile, Staging};
use place::{create_in, err, euid, fill, is_symlink, named, open_dir, random_suffix};
pub(crate) use place::{make_dirs, user_name};
pub use place::{Readers, Replace};

/// Overrides where [`StateDir::open`] puts the answers (same checks apply).
pub const STATE_DIR_ENV: &str = "ZMEM_STATE_DIR";

/// A private directory for zmem's answers. An existing one is checked (and
/// opened by descriptor) by [`StateDir::open`], before a run measures
/// anything; a missing one is made only when the first file is written, so a
/// run that fails earlier leaves nothing behind.
#[derive(Debug)]
pub struct StateDir {
    /// Where it is or will be made; `None` until a `$TMPDIR` one is made.
    path: Option<PathBuf>,
    fd: Option<OwnedFd>,
    /// Why the usual place cannot be used (a new directory in `$TMPDIR` instead).
    why_not: Option<String>,
    euid: u32,
}

/// Why a directory cannot be the state directory.
enum Unusable {
    /// It exists and is unsafe: an error for the user, no fallback.
    Refused(io::Error),
    /// It cannot be made (no HOME, read-only, no permission): fall back.
    CannotMake(String),
}

/// Where the answers would go for `euid` with this environment, or why
/// there is no such place (then a new directory in `$TMPDIR` is used).
fn preferred(euid: u32, env: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf, String> {
    let abs = |k: &str| env(k).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(p) = abs(STATE_DIR_ENV) {
        return Ok(p);
    }
    if euid == 0 {
        return Ok(PathBuf::from("/var/lib/zmem"));
    }
    if let Some(x) = abs("XDG_STATE_HOME") {
        return Ok(x.join("zmem"));
    }
    let home = abs("HOME").ok_or_else(|| "HOME is not set to an absolute path".to_string())?;
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(&home) {
        Ok(m) if m.is_dir() && m.uid() == euid => Ok(home.join(".local/state/zmem")),
        Ok(_) => Err(format!(
            "HOME ({}) is not a directory of yours",
            home.display()
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err(format!("HOME ({}) does not exist", home.display()))
        }
        Err(e) => Err(format!("HOME ({}): {e}", home.display())),
    }
}

/// Checks that the open directory is the user's and writable by no one else.
fn check_private(fd: &OwnedFd, dir: &Path, euid: u32) -> io::Result<()> {
    let st = rustix::fs::fstat(fd)?;
    let refuse = |why: String| {
        Err(err(
            io::ErrorKind::PermissionDenied,
            format!(
                "state directory {}: {why}; zmem keeps its answers only in a directory of yours \
                 that no one else can write (fix it, set {STATE_DIR_ENV}, or use --out-dir)",
                dir.display()
            ),
        ))
    };
    if st.st_uid != euid {
        return refuse(format!(
            "owned by uid {}, not by you (uid {euid})",
            st.st_uid
        ));
    }
    if st.st_mode & 0o022 != 0 {
        return refuse(format!(
            "mode {:o} lets group or others write it",
            st.st_mode & 0o7777
        ));
    }
    Ok(())
}

/// Makes `dir` (and missing parents) mode 0700, opens and checks it.
fn make_private(dir: &Path, euid: u32) -> Result<OwnedFd, Unusable> {
    use std::os::unix::fs::DirBuilderExt;
    if is_symlink(dir) {
        return Err(Unusable::Refused(open_dir(dir).unwrap_err()));
    }
    if let Err(e) = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        return Err(Unusable::CannotMake(format!(
            "cannot create {}: {e}",
            dir.display()
        )));
    }
    let fd = open_dir(dir).map_err(Unusable::Refused)?;
    check_private(&fd, dir, euid).map_err(Unusable::Refused)?;
    Ok(fd)
}

/// A new directory `zmem-XXXXXXXXXXXX` in `tmp`, mode 0700 (mkdtemp's contract).
fn make_temp(tmp: &Path, euid: u32) -> io::Result<(PathBuf, OwnedFd)> {
    use std::os::unix::fs::DirBuilderExt;
    for _ in 0..100 {
        let p = tmp.join(format!("zmem-{}", random_suffix()));
        match std::fs::DirBuilder::new().mode(0o700).create(&p) {
            Ok(()) => {
                let fd = open_dir(&p)?;
                check_private(&fd, &p, euid)?;
                return Ok((p, fd));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(err(
                    e.kind(),
                    format!("creating a private directory in {}: {e}", tmp.display()),
                ))
            }
        }
    }
    Err(err(
        io::ErrorKind::AlreadyExists,
        format!("no free directory name in {}", tmp.display()),
    ))
}

impl StateDir {
    /// The user's state directory (see the module doc): an existing one is
    /// checked now (a symbolic link, someone else's or one others can write
    /// is an error); a missing one is made 0700 by the first
    /// [`create_new`](Self::create_new), or, when it cannot be made, a new
    /// private directory under `$TMPDIR`.
    pub fn open() -> io::Result<StateDir> {
        let euid = euid();
        let mut s = StateDir {
            path: None,
            fd: None,
            why_not: None,
            euid,
        };
        match preferred(euid, &|k| std::env::var_os(k)) {
            Ok(path) => {
                if std::fs::symlink_metadata(&path).is_ok() {
                    s.fd = Some(match make_private(&path, euid) {
                        Ok(fd) => fd,
                        Err(Unusable::Refused(e)) => return Err(e),
                        Err(Unusable::CannotMake(why)) => {
                            return Err(err(io::ErrorKind::Other, why))
                        }
                    });
                }
                s.path = Some(path);
            }
            Err(why) => s.why_not = Some(why),
        }
        Ok(s)
    }

    /// The directory, made now if it is not yet.
    fn ready(&mut self) -> io::Result<(&OwnedFd, &Path)> {
        if self.fd.is_none() {
            match self.path.as_deref().map(|p| make_private(p, self.euid)) {
                Some(Ok(fd)) => self.fd = Some(fd),
                Some(Err(Unusable::Refused(e))) => return Err(e),
                Some(Err(Unusable::CannotMake(why))) => self.why_not = Some(why),
                None => {}
            }
        }
        if self.fd.is_none() {
            let (path, fd) = make_temp(&std::env::temp_dir(), self.euid)?;
            (self.path, self.fd) = (Some(path), Some(fd));
        }
        match (&self.fd, &self.path) {
            (Some(fd), Some(p)) => Ok((fd, p)),
            _ => unreachable!("made above"),
        }
    }

    /// Why the usual place was not used, once a file went to a new directory in `$TMPDIR`.
    pub fn note(&self) -> Option<String> {
        let (why, p) = (self.why_not.as_ref()?, self.path.as_ref()?);
        Some(format!(
            "{why}: using a new private directory, {}",
            p.display()
        ))
    }

    /// Writes `bytes` to a new file `STEM-YYYYMMDDTHHMMSSZ.EXT` (`-2`, `-3`…
    /// when that name is taken), mode 0600, and returns its path.
    pub fn create_new(&mut self, stem: &str, ext: &str, bytes: &[u8]) -> io::Result<PathBuf> {
        let stamp = utc_stamp(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        );
        let (fd, dir) = self.ready()?;
        for n in 1..1000 {
            let name = match n {
                1 => format!("{stem}-{stamp}.{ext}"),
                n => format!("{stem}-{stamp}-{n}.{ext}"),
            };
            match create_in(fd, &name, 0o600) {
                Ok(f) => {
                    fill(f, fd, &name, bytes).map_err(|e| named(e, &dir.join(&name)))?;
                    return Ok(dir.join(name));
                }
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(named(e.into(), &dir.join(&name))),
            }
        }
        Err(err(
            io::ErrorKind::AlreadyExists,
            format!("{}: no free name for {stem}", dir.display()),
        ))
    }
}

/// `YYYYMMDDTHHMMSSZ` for seconds since the epoch (UTC, civil calendar).
pub fn utc_stamp(secs: u64) -> String {
    let [year, month, day, h, m, s] = utc_civil(secs);
    format!("{year:04}{month:02}{day:02}T{h:02}{m:02}{s:02}Z")
}

/// Year, month, day, hour, minute, second (UTC) of seconds since the epoch.
pub fn utc_civil(secs: u64) -> [i64; 6] {
    let (days, s) = (secs / 86400, (secs % 86400) as i64);
    // Days since 1970-01-01 to year, month, day (Howard Hinnant's civil_from_days).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    [year, month, day, s / 3600, s % 3600 / 60, s % 60]
}

/// Writes `bytes` to `path`, mode 0600: its directory (made 0700 if
/// missing) and the file must not be symbolic links, an existing file is
/// replaced only as `replace` allows, and the new content goes to a new
/// temporary file beside it, renamed over `path` once written and synced.
pub fn write_output(path: &Path, bytes: &[u8], replace: Replace) -> io::Result<()> {
    write_output_for(path, bytes, replace, Readers::Owner)
}

/// [`write_output`] with the modes for `readers`.
pub fn write_output_for(
    path: &Path,
    bytes: &[u8],
    replace: Replace,
    readers: Readers,
) -> io::Result<()> {
    write_outputs(&[OutputFile {
        path,
        bytes,
        replace,
        readers,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::ScratchDir;
    use std::os::unix::fs::PermissionsExt;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn root_gets_var_lib_others_xdg_then_home_then_none() {
        assert_eq!(
            preferred(0, &env(&[("XDG_STATE_HOME", "/x")])).unwrap(),
            Path::new("/var/lib/zmem")
        );
        assert_eq!(
            preferred(1000, &env(&[("XDG_STATE_HOME", "/x"), ("HOME", "/h")])).unwrap(),
            Path::new("/x/zmem")
        );
        // A relative XDG_STATE_HOME is ignored (the XDG spec); a missing HOME has no place.
        let e = preferred(
            65534,
            &env(&[("XDG_STATE_HOME", "rel"), ("HOME", "/nonexistent")]),
        )
        .unwrap_err();
        assert_eq!(e, "HOME (/nonexistent) does not exist");
        assert!(preferred(65534, &env(&[])).is_err());
        assert_eq!(
            preferred(0, &env(&[(STATE_DIR_ENV, "/s")])).unwrap(),
            Path::new("/s")
        );
    }

    #[test]
    fn home_owned_by_someone_else_is_not_used() {
        let d = ScratchDir::new("output-home");
        let uid = euid();
        let other = if uid == 0 { 1 } else { uid };
        let p = d.path().to_str().unwrap().to_string();
        let r = preferred(other + 1, &env(&[("HOME", &p)]));
        assert!(r.unwrap_err().contains("not a directory of yours"));
        if uid != 0 {
            assert_eq!(
                preferred(uid, &env(&[("HOME", &p)])).unwrap(),
                d.join(".local/state/zmem")
            );
        }
    }

    #[test]
    fn stamps_are_utc_civil_time() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
        assert_eq!(utc_stamp(1_795_688_100), "20261126T101500Z");
    }

    #[test]
    fn new_files_are_private_and_never_collide() {
        let d = ScratchDir::new("output-new");
        let mut s = StateDir {
            path: Some(d.join("state")),
            fd: None,
            why_not: None,
            euid: euid(),
        };
        let a = s.create_new("verdict", "conf", b"one").unwrap();
        let b = s.create_new("verdict", "conf", b"two").unwrap();
        assert_ne!(a, b);
        assert_eq!(std::fs::read(&a).unwrap(), b"one");
        assert_eq!(std::fs::read(&b).unwrap(), b"two");
        for p in [&a, &b] {
            let mode = std::fs::metadata(p).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{}", p.display());
        }
        let dmode = std::fs::metadata(d.join("state"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dmode & 0o777, 0o700);
    }

    #[test]
    fn temporary_state_dirs_are_new_and_private() {
        let d = ScratchDir::new("output-temp");
        let (a, _) = make_temp(d.path(), euid()).unwrap();
        let (b, _) = make_temp(d.path(), euid()).unwrap();
        assert_ne!(a, b);
        for p in [&a, &b] {
            assert_eq!(p.parent(), Some(d.path()));
            let m = std::fs::symlink_metadata(p).unwrap();
            assert!(m.is_dir());
            assert_eq!(m.permissions().mode() & 0o777, 0o700);
        }
    }

    #[test]
    fn unsafe_state_dirs_are_refused() {
        let d = ScratchDir::new("output-refuse");
        std::os::unix::fs::symlink(d.path(), d.join("link")).unwrap();
        let Err(Unusable::Refused(e)) = make_private(&d.join("link"), euid()) else {
            panic!("a symlinked state dir was accepted")
        };
        assert!(e.to_string().contains("symbolic link"), "{e}");
        std::fs::create_dir(d.join("open")).unwrap();
        std::fs::set_permissions(d.join("open"), std::fs::Permissions::from_mode(0o777)).unwrap();
        let Err(Unusable::Refused(e)) = make_private(&d.join("open"), euid()) else {
            panic!("a world-writable state dir was accepted")
        };
        assert!(e.to_string().contains("mode 777"), "{e}");
        let Err(Unusable::Refused(e)) = make_private(&d.join("state"), euid() + 1) else {
            panic!("someone else's state dir was accepted")
        };
        assert!(e.to_string().contains("not by you"), "{e}");
    }

    #[test]
    fn named_outputs_are_replaced_only_when_ours_and_never_through_links() {
        let d = ScratchDir::new("output-named");
        let ours = |b: &[u8]| b.starts_with(b"# zmem");
        let p = d.join("out/zmem.conf");
        write_output(&p, b"# zmem 1\n", Replace::IfOurs(&ours)).unwrap();
        write_output(&p, b"# zmem 2\n", Replace::IfOurs(&ours)).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"# zmem 2\n");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::fs::write(&p, "mine\n").unwrap();
        let e = write_output(&p, b"# zmem 3\n", Replace::IfOurs(&ours)).unwrap_err();
        assert!(e.to_string().contains("not written by zmem"), "{e}");
        write_output(&p, b"# zmem 3\n", Replace::Always).unwrap();
        // A link at the file or at its directory: refused, the target untouched.
        std::fs::write(d.join("victim"), "keep\n").unwrap();
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(d.join("victim"), &p).unwrap();
        for r in [Replace::IfOurs(&ours), Replace::Always] {
            let e = write_output(&p, b"# zmem\n", r).unwrap_err();
            assert!(e.to_string().contains("symbolic link"), "{e}");
        }
        std::os::unix::fs::symlink(d.join("out"), d.join("linkdir")).unwrap();
        let e = write_output(&d.join("linkdir/new.conf"), b"x", Replace::Always).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(!d.join("out/new.conf").exists());
        assert_eq!(std::fs::read(d.join("victim")).unwrap(), b"keep\n");
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(d.join("out")).unwrap().collect();
        assert_eq!(left.len(), 1);
    }
}
