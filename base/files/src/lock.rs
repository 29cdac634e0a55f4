//! Single-instance locks: one trial (or tune) per machine, one `zmem policy`
//! per state file. A lock is `flock(LOCK_EX)` on a file that names its holder's
//! pid; the kernel drops it when the holder exits, however it exits (SIGKILL
//! too), so a stale lock file never blocks anyone. A holder that ends normally
//! removes the file while it still holds the lock ([`release_process_locks`]
//! for the process-long ones); a taker checks, once it holds the lock, that the
//! path still names the file it locked, and starts again otherwise, so removing
//! the file never lets two holders in. A file left by a killed holder stays.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where the trial lock is (a path inside the root zmem-host's `Sys` reads): trials,
/// tunes and their `--recover` take it.
pub const TRIAL_LOCK: &str = "/run/zmem/trial.lock";

/// An exclusive lock held until dropped (or the process exits).
#[derive(Debug)]
pub struct InstanceLock {
    file: File,
    path: PathBuf,
}

/// Why a lock was not taken: another process holds it (its pid, when the file
/// names one), or the lock file could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{} is held by pid {}", .path.display(), .holder.map(|p| p.to_string()).unwrap_or_else(|| "?".into()))]
    Held { path: PathBuf, holder: Option<u32> },
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
}

impl InstanceLock {
    /// Take the lock at `path` without waiting, creating the file (and its
    /// directory, mode 0755) if needed, and write this process's pid into it.
    pub fn acquire(path: &Path) -> Result<InstanceLock, LockError> {
        // A holder removes the file as it lets go: the file locked here may have
        // been removed (or replaced) in between; then take the new one.
        for _ in 0..100 {
            let lock = Self::try_once(path)?;
            if lock.still_at_path() {
                return Ok(lock);
            }
            // Dropped: its path names another file (or none), so nothing is removed.
            drop(lock);
        }
        Err(LockError::Io {
            path: path.to_path_buf(),
            source: io::Error::other("the lock file kept being replaced"),
        })
    }

    /// Whether the path still names the file this lock holds.
    fn still_at_path(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        match (self.file.metadata(), fs::symlink_metadata(&self.path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }

    fn try_once(path: &Path) -> Result<InstanceLock, LockError> {
        let io_err = |source| LockError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::shared_dir(dir).map_err(io_err)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(io_err)?;
        check_lock_file(&file).map_err(io_err)?;
        // SAFETY: flock on a descriptor this function owns; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let mut s = String::new();
                let _ = file.read_to_string(&mut s);
                return Err(LockError::Held {
                    path: path.to_path_buf(),
                    holder: s.trim().parse().ok(),
                });
            }
            return Err(io_err(e));
        }
        file.set_len(0).map_err(io_err)?;
        file.rewind().map_err(io_err)?;
        writeln!(file, "{}", std::process::id()).map_err(io_err)?;
        Ok(InstanceLock {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Where the lock file is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A lock file no other user could have made or can change: a regular file
/// of this user's or root's, writable by no one else (its directory is
/// checked before, `crate::shared_dir`). Another user's file there would let
/// them hold the lock or name a holder.
fn check_lock_file(file: &File) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let m = file.metadata()?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !m.is_file() || (m.uid() != me && m.uid() != 0) || m.mode() & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "not a lock file zmem trusts (uid {}, mode {:o}, {}); remove it",
                m.uid(),
                m.mode() & 0o7777,
                if m.is_file() {
                    "a regular file"
                } else {
                    "not a regular file"
                }
            ),
        ));
    }
    Ok(())
}

impl Drop for InstanceLock {
    fn drop(&mut self) {
        // Still holding the lock: remove the file (a waiting taker then sees its
        // path gone and takes a new one), then closing the descriptor releases it.
        if self.still_at_path() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

static HELD: Mutex<Option<HashMap<PathBuf, InstanceLock>>> = Mutex::new(None);

/// Let go of every lock [`hold_for_process`] took, removing their files: the
/// binary calls it as a command ends (a process killed leaves its file, which
/// blocks no one).
pub fn release_process_locks() {
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    held.take();
}

/// Take the lock at `path` for the rest of this process's life; taking it
/// again in the same process is a no-op (a tune runs trial's preflight and
/// its trials, each of which asks for the trial lock).
pub fn hold_for_process(path: &Path) -> Result<(), LockError> {
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    let map = held.get_or_insert_with(HashMap::new);
    if map.contains_key(path) {
        return Ok(());
    }
    let lock = InstanceLock::acquire(path)?;
    map.insert(path.to_path_buf(), lock);
    Ok(())
}

/// Who holds a lock, for a refusal: `pid N (zmem bench zswap --kernel …)`,
/// its command line from `/proc` (cut at 80 characters), or the pid alone
/// when that is gone or unreadable, `?` when the lock file names no pid.
pub fn describe_holder(holder: Option<u32>) -> String {
    let Some(pid) = holder else {
        return "pid ?".into();
    };
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = cmdline
        .split(|&b| b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    let Some((argv0, rest)) = words.split_first() else {
        return format!("pid {pid}");
    };
    let name = Path::new(argv0)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut line = std::iter::once(name)
        .chain(rest.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    if line.chars().count() > 80 {
        line = line.chars().take(79).collect::<String>() + "…";
    }
    format!("pid {pid}: {line}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("zmem-lock-test.{}.{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_holder_is_named_by_its_command_line() {
        let me = describe_holder(Some(std::process::id()));
        assert!(
            me.starts_with(&format!("pid {}: ", std::process::id())),
            "{me}"
        );
        assert!(!me.contains('/'), "argv0 by its file name: {me}");
        assert_eq!(describe_holder(None), "pid ?");
        assert_eq!(describe_holder(Some(4_000_000_000)), "pid 4000000000");
    }

    #[test]
    fn a_lock_let_go_takes_its_file_with_it_and_the_next_taker_a_new_one() {
        let d = scratch("removed");
        let p = d.join("run/y.lock");
        let first = InstanceLock::acquire(&p).unwrap();
        // A taker that opened the file before it was removed ...
        let stale = OpenOptions::new().read(true).open(&p).unwrap();
        drop(first);
        assert!(!p.exists(), "the holder removes its file as it lets go");
        // ... holds a file no path names: acquire takes a new one at the path.
        let second = InstanceLock::acquire(&p).unwrap();
        assert!(p.exists() && second.still_at_path());
        drop(stale);
        drop(second);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_second_taker_is_refused_with_the_holders_pid_and_gets_it_once_released() {
        let d = scratch("second");
        let p = d.join("run/x.lock");
        let first = InstanceLock::acquire(&p).unwrap();
        assert_eq!(
            fs::read_to_string(&p).unwrap().trim(),
            std::process::id().to_string()
        );
        // flock conflicts between open file descriptions, also in one process.
        match InstanceLock::acquire(&p) {
            Err(LockError::Held { holder, .. }) => assert_eq!(holder, Some(std::process::id())),
            other => panic!("taken twice: {other:?}"),
        }
        drop(first);
        // Another test's fork may hold a copy of the descriptor until its child execs
        // (close-on-exec): the lock is free once that moment has passed.
        let mut again = InstanceLock::acquire(&p);
        for _ in 0..200 {
            if again.is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            again = InstanceLock::acquire(&p);
        }
        drop(again.unwrap());
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_lock_held_by_another_process_is_refused() {
        if Command::new("flock").arg("--version").output().is_err() {
            crate::testutil::skip("SKIP a_lock_held_by_another_process_is_refused: no flock(1)");
            return;
        }
        let d = scratch("other");
        fs::create_dir_all(&d).unwrap();
        let p = d.join("y.lock");
        // -o: the lock stays with flock(1) itself, so killing it releases the lock; its command
        // names a holder once the lock is taken.
        let mut child = Command::new("flock")
            .arg("-o")
            .arg(&p)
            .args(["sh", "-c", "echo 4000000000 > \"$0\"; exec sleep 30"])
            .arg(&p)
            .spawn()
            .unwrap();
        let mut held = false;
        for _ in 0..500 {
            if fs::read_to_string(&p).unwrap_or_default().trim() == "4000000000" {
                held = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let refused = held
            && matches!(
                InstanceLock::acquire(&p),
                Err(LockError::Held {
                    holder: Some(4_000_000_000),
                    ..
                })
            );
        let _ = child.kill();
        let _ = child.wait();
        assert!(refused, "another process's flock was not seen");
        // Its exit released it.
        InstanceLock::acquire(&p).unwrap();
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn held_for_the_process_is_reentrant() {
        let d = scratch("process");
        let p = d.join("z.lock");
        hold_for_process(&p).unwrap();
        hold_for_process(&p).unwrap();
        assert!(matches!(
            InstanceLock::acquire(&p),
            Err(LockError::Held { .. })
        ));
        // Let go as the binary does when a command ends: the file goes too.
        // (The only test of process-long locks: no other test's lock is let go.)
        release_process_locks();
        assert!(!p.exists());
        InstanceLock::acquire(&p).unwrap();
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    fn a_symlinked_lock_file_is_refused() {
        let d = scratch("link");
        fs::create_dir_all(&d).unwrap();
        let victim = d.join("victim");
        fs::write(&victim, "precious\n").unwrap();
        std::os::unix::fs::symlink(&victim, d.join("l.lock")).unwrap();
        assert!(matches!(
            InstanceLock::acquire(&d.join("l.lock")),
            Err(LockError::Io { .. })
        ));
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
        fs::remove_dir_all(d).unwrap();
    }
}
