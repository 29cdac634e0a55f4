//! Named outputs written all or nothing: every target checked, every new
//! content written to a temporary file beside its target and synced, and only
//! then each renamed over its target. A target that existed is swapped with
//! its temporary file (`renameat2(RENAME_EXCHANGE)`), so until the last
//! rename succeeds every old file is still at hand: a failure puts each one
//! back, removes every temporary file (and the directories the write made),
//! and leaves the files as they were. A target that did not exist is
//! created without replacing anything planted since (`RENAME_NOREPLACE`).

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, RenameFlags};
use rustix::io::Errno;

use super::place::{
    check_dir, check_existing, create_temp, err, make_dirs, named, open_dir, remove_dirs, split,
    Existing, Readers, Replace,
};

/// One file of a write: where, what, when an existing file may be replaced,
/// and who may read it.
pub struct OutputFile<'a> {
    pub path: &'a Path,
    pub bytes: &'a [u8],
    pub replace: Replace<'a>,
    pub readers: Readers,
}

/// Checks, before anything is measured or written, that `path` could be
/// written: neither it nor its directory a symbolic link, the directory no
/// other user's, and any existing file one of yours that `replace` accepts.
/// A missing directory is left to the write.
pub fn check_output(path: &Path, replace: Replace) -> io::Result<()> {
    let (dir, name) = split(path)?;
    if !super::place::is_symlink(&dir) && !dir.exists() {
        return Ok(()); // made by the write; nothing there to refuse
    }
    let fd = open_dir(&dir)?;
    check_dir(&fd, &dir)?;
    check_existing(&fd, path, &name, replace).map(|_| ())
}

/// Writes every file or none: all targets are checked first, then all
/// temporary files written, then all renamed (see the module doc).
pub fn write_outputs(files: &[OutputFile]) -> io::Result<()> {
    for f in files {
        check_output(f.path, f.replace)?;
    }
    let mut staging = Staging::new();
    for f in files {
        let file = staging.add(f.path, f.replace, f.readers)?;
        file.write_all(f.bytes).map_err(|e| named(e, f.path))?;
    }
    staging.commit()
}

/// How far one file of a [`Staging`] got.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    /// Its content is in the temporary file only.
    Staged,
    /// It is at its target, which did not exist.
    Created,
    /// It is at its target; the old file is at the temporary name.
    Exchanged,
    /// It is at its target; the old file is gone (a filesystem without
    /// `RENAME_EXCHANGE`): this one cannot be put back.
    Replaced,
}

struct Staged<'a> {
    path: PathBuf,
    dir: OwnedFd,
    name: String,
    tmp: String,
    file: Option<File>,
    replace: Replace<'a>,
    step: Step,
}

/// Files being written together: each [`add`](Staging::add)ed file is a new
/// temporary file beside its target, to be written by the caller (a
/// capture streams into it); [`commit`](Staging::commit) puts them all in
/// place or none. Dropped without a commit, it removes every temporary file
/// and every directory it made.
pub struct Staging<'a> {
    staged: Vec<Staged<'a>>,
    made: Vec<PathBuf>,
    committed: bool,
}

impl Default for Staging<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> Staging<'a> {
    pub fn new() -> Self {
        Staging {
            staged: Vec::new(),
            made: Vec::new(),
            committed: false,
        }
    }

    /// Checks `path` as [`check_output`] does (making its directory, with
    /// the mode for `readers`, when missing) and creates its temporary file,
    /// mode 0600 or 0644 for `readers`, returned for writing.
    pub fn add(
        &mut self,
        path: &Path,
        replace: Replace<'a>,
        readers: Readers,
    ) -> io::Result<&mut File> {
        let (dir_path, name) = split(path)?;
        let (file_mode, dir_mode) = readers.modes();
        self.made.extend(make_dirs(&dir_path, dir_mode)?);
        let dir = open_dir(&dir_path)?;
        check_dir(&dir, &dir_path)?;
        check_existing(&dir, path, &name, replace)?;
        let (tmp, file) = create_temp(&dir, path, &name, file_mode)?;
        self.staged.push(Staged {
            path: path.to_path_buf(),
            dir,
            name,
            tmp,
            file: Some(file),
            replace,
            step: Step::Staged,
        });
        let last = self.staged.last_mut().expect("just pushed");
        Ok(last.file.as_mut().expect("staged files are open"))
    }

    /// Syncs every temporary file, checks every target again (something may
    /// have been planted since), then renames each over its target; on a
    /// failure every target done so far is put back as it was.
    pub fn commit(mut self) -> io::Result<()> {
        let mut exists = Vec::with_capacity(self.staged.len());
        for s in &mut self.staged {
            if let Some(f) = s.file.take() {
                f.sync_all().map_err(|e| named(e, &s.path))?;
            }
            exists.push(check_existing(&s.dir, &s.path, &s.name, s.replace)?);
        }
        for (i, existing) in exists.into_iter().enumerate() {
            if let Err(e) = self.staged[i].install(existing) {
                self.roll_back(i);
                return Err(e);
            }
        }
        for s in &self.staged {
            if s.step == Step::Exchanged {
                let _ = rustix::fs::unlinkat(&s.dir, s.tmp.as_str(), AtFlags::empty());
            }
            let _ = rustix::fs::fsync(s.dir.as_fd());
        }
        self.committed = true;
        Ok(())
    }

    /// Puts the targets of the first `done` files back as they were.
    fn roll_back(&mut self, done: usize) {
        for s in self.staged[..done].iter_mut().rev() {
            let back = match s.step {
                Step::Exchanged => exchange(&s.dir, &s.tmp, &s.name),
                Step::Created => rustix::fs::unlinkat(&s.dir, s.name.as_str(), AtFlags::empty()),
                Step::Staged | Step::Replaced => continue,
            };
            if back.is_ok() {
                // The temporary name now holds the new content (or nothing).
                s.step = Step::Staged;
            }
        }
    }
}

fn exchange(dir: &OwnedFd, a: &str, b: &str) -> Result<(), Errno> {
    rustix::fs::renameat_with(dir, a, dir, b, RenameFlags::EXCHANGE)
}

impl Staged<'_> {
    /// Puts this file's content at its target.
    fn install(&mut self, existing: Existing) -> io::Result<()> {
        let (dir, tmp, name) = (&self.dir, self.tmp.as_str(), self.name.as_str());
        let r = match existing {
            Existing::File => match exchange(dir, tmp, name) {
                Ok(()) => Ok(Step::Exchanged),
                // A filesystem without RENAME_EXCHANGE: a plain rename, atomic but final.
                Err(Errno::INVAL) => {
                    rustix::fs::renameat(dir, tmp, dir, name).map(|_| Step::Replaced)
                }
                Err(e) => Err(e),
            },
            Existing::Nothing => {
                match rustix::fs::renameat_with(dir, tmp, dir, name, RenameFlags::NOREPLACE) {
                    Ok(()) => Ok(Step::Created),
                    // Without RENAME_NOREPLACE: a new link never replaces either.
                    Err(Errno::INVAL) => rustix::fs::linkat(dir, tmp, dir, name, AtFlags::empty())
                        .map(|_| {
                            let _ = rustix::fs::unlinkat(dir, tmp, AtFlags::empty());
                            Step::Created
                        }),
                    Err(e) => Err(e),
                }
            }
        };
        match r {
            Ok(step) => {
                self.step = step;
                Ok(())
            }
            Err(Errno::EXIST) => Err(err(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} appeared while zmem was writing it; nothing was written",
                    self.path.display()
                ),
            )),
            Err(e) => {
                let e = io::Error::from(e);
                Err(err(
                    e.kind(),
                    format!("{}: cannot write: {e}", self.path.display()),
                ))
            }
        }
    }
}

impl Drop for Staging<'_> {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        for s in &self.staged {
            if s.step == Step::Staged {
                let _ = rustix::fs::unlinkat(&s.dir, s.tmp.as_str(), AtFlags::empty());
            }
        }
        if self.staged.iter().all(|s| s.step == Step::Staged) {
            remove_dirs(&self.made);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::ScratchDir;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn ours(b: &[u8]) -> bool {
        b.starts_with(b"# zmem")
    }

    fn out<'a>(path: &'a Path, bytes: &'a [u8]) -> OutputFile<'a> {
        OutputFile {
            path,
            bytes,
            replace: Replace::IfOurs(&ours),
            readers: Readers::Everyone,
        }
    }

    /// The names in `dir`, sorted (temporary files included).
    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_refused_later_file_leaves_every_file_as_it_was() {
        let d = ScratchDir::new("batch-refused");
        let (a, b, c) = (
            d.join("etc/a.conf"),
            d.join("etc/b.conf"),
            d.join("new/c.conf"),
        );
        std::fs::create_dir(d.join("etc")).unwrap();
        std::fs::write(&a, "# zmem old a\n").unwrap();
        // Not zmem's, and not UTF-8 either: judged by its bytes all the same.
        std::fs::write(&b, b"admin \xe9\n").unwrap();
        let e = write_outputs(&[
            out(&a, b"# zmem a\n"),
            out(&c, b"# zmem c\n"),
            out(&b, b"x"),
        ])
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("b.conf exists and was not written by zmem"),
            "{e}"
        );
        assert_eq!(std::fs::read(&a).unwrap(), b"# zmem old a\n");
        assert_eq!(std::fs::read(&b).unwrap(), b"admin \xe9\n");
        assert!(
            !d.join("new").exists(),
            "a directory made for the write is left"
        );
        assert_eq!(names(&d.join("etc")), ["a.conf", "b.conf"]);
        // All accepted: all written, each with the modes for its readers.
        std::fs::write(&b, "# zmem old b\n").unwrap();
        write_outputs(&[
            out(&a, b"# zmem a\n"),
            out(&c, b"# zmem c\n"),
            out(&b, b"# zmem b\n"),
        ])
        .unwrap();
        for (p, want) in [(&a, "# zmem a\n"), (&b, "# zmem b\n"), (&c, "# zmem c\n")] {
            assert_eq!(std::fs::read_to_string(p).unwrap(), want);
            assert_eq!(std::fs::metadata(p).unwrap().mode() & 0o777, 0o644);
        }
        assert_eq!(
            std::fs::metadata(d.join("new")).unwrap().mode() & 0o777,
            0o755
        );
        assert_eq!(names(&d.join("etc")), ["a.conf", "b.conf"]);
    }

    #[test]
    fn a_rename_failing_midway_puts_the_earlier_files_back() {
        let d = ScratchDir::new("batch-rollback");
        let (a, b, c) = (d.join("a"), d.join("b"), d.join("c"));
        std::fs::write(&a, "# zmem old a\n").unwrap();
        let mut s = Staging::new();
        for p in [&a, &b, &c] {
            s.add(p, Replace::IfOurs(&ours), Readers::Owner)
                .unwrap()
                .write_all(b"# zmem new\n")
                .unwrap();
        }
        // The last file's temporary file vanishes: its rename fails after a and b are in place.
        let tmp_c = names(d.path())
            .into_iter()
            .find(|n| n.starts_with(".c."))
            .unwrap();
        std::fs::remove_file(d.join(&tmp_c)).unwrap();
        let e = s.commit().unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("{}: cannot write", c.display())),
            "{e}"
        );
        assert_eq!(std::fs::read(&a).unwrap(), b"# zmem old a\n");
        assert_eq!(
            names(d.path()),
            ["a"],
            "b is removed again, no temporary file is left"
        );
    }

    #[test]
    fn fifos_devices_and_links_are_refused_without_opening_them() {
        let d = ScratchDir::new("batch-special");
        let fifo = d.join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        std::os::unix::fs::symlink("/dev/zero", d.join("zero")).unwrap();
        for (p, why) in [
            (fifo, "is a FIFO"),
            (d.join("zero"), "symbolic link"),
            (PathBuf::from("/dev/null"), "is a device"),
        ] {
            for r in [Replace::IfOurs(&ours), Replace::Always] {
                let e = check_output(&p, r).unwrap_err().to_string();
                assert!(e.contains(why) && e.contains(&*p.to_string_lossy()), "{e}");
            }
        }
    }

    #[test]
    fn a_directory_other_users_can_write_is_refused_unless_sticky() {
        let d = ScratchDir::new("batch-dirmode");
        let open = d.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = write_output_to(&open.join("x")).unwrap_err().to_string();
        assert!(e.contains("mode 777 lets other users write it"), "{e}");
        assert!(!open.join("x").exists());
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        write_output_to(&open.join("x")).unwrap();
    }

    fn write_output_to(p: &Path) -> io::Result<()> {
        write_outputs(&[out(p, b"# zmem\n")])
    }

    #[test]
    fn another_users_file_or_directory_is_refused_naming_the_owner() {
        if !crate::euid_is_root() {
            crate::testutil::skip(
                "SKIP another_users_file_or_directory_is_refused_naming_the_owner: needs root to chown",
            );
            return;
        }
        let d = ScratchDir::new("batch-owner");
        let (theirs, file) = (d.join("theirs"), d.join("file"));
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
        let e = write_output_to(&theirs.join("zmem.conf"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("owned by uid 65534"), "{e}");
        // A file with zmem's marker, owned by someone else: not replaced, not even Always.
        std::fs::write(&file, "# zmem, says someone\n").unwrap();
        std::os::unix::fs::chown(&file, Some(65534), None).unwrap();
        for r in [Replace::IfOurs(&ours), Replace::Always] {
            let e = write_outputs(&[OutputFile {
                replace: r,
                ..out(&file, b"# zmem\n")
            }])
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("is owned by uid 65534") && e.contains("file"),
                "{e}"
            );
        }
        assert_eq!(std::fs::read(&file).unwrap(), b"# zmem, says someone\n");
    }

    #[test]
    fn an_unwritable_place_is_named_in_the_error() {
        let d = ScratchDir::new("batch-named");
        std::fs::write(d.join("plain"), "").unwrap();
        let e = write_output_to(&d.join("plain/sub/f.conf"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("plain"), "{e}");
    }
}
