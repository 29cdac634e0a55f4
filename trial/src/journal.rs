//! The crash journal: what a running trial has changed and not yet undone,
//! kept on disk in `/run/zmem-trial/<pid>.journal` (one action per line,
//! rewritten atomically on every change). A trial that dies without running
//! its cleanup — SIGKILL, the OOM killer taking zmem itself, a crash — leaves
//! its journal behind; `zmem trial --recover` replays it newest first, and
//! every new trial refuses to start while such a journal exists.
//!
//! This module only stores lines; what they mean (and how they are replayed)
//! is [`crate::undo`]'s business.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use zmem_host::Sys;

/// Directory of the journals (a path inside the [`Sys`] root).
pub const JOURNAL_DIR: &str = "/run/zmem-trial";

/// The journal of one running trial.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    lines: Vec<String>,
}

impl Journal {
    /// Start this process's journal.
    pub fn create(sys: &Sys) -> io::Result<Self> {
        Self::create_for_pid(sys, std::process::id())
    }

    /// Start a journal under another pid's name (tests).
    pub fn create_for_pid(sys: &Sys, pid: u32) -> io::Result<Self> {
        let dir = sys.path(JOURNAL_DIR);
        fs::create_dir_all(&dir)
            .map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", dir.display())))?;
        let path = dir.join(format!("{pid}.journal"));
        if fs::metadata(&path).is_ok_and(|m| m.len() > 0) {
            // An earlier trial that had this pid died with actions pending: never overwrite them.
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} exists (an earlier trial with this pid died); run `zmem trial --recover`",
                    path.display()
                ),
            ));
        }
        let j = Journal {
            path,
            lines: Vec::new(),
        };
        j.save()?;
        Ok(j)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn save(&self) -> io::Result<()> {
        let tmp = self.path.with_extension("journal.tmp");
        let mut f = fs::File::create(&tmp)?;
        for l in &self.lines {
            writeln!(f, "{l}")?;
        }
        f.sync_all()?;
        fs::rename(&tmp, &self.path)
    }

    /// Record an action (a line as documented above).
    pub fn push(&mut self, line: String) {
        self.lines.push(line);
        if let Err(e) = self.save() {
            eprintln!(
                "zmem trial: cannot write the crash journal {}: {e}",
                self.path.display()
            );
        }
    }

    /// Forget an action (it was undone): the newest line equal to `line`.
    pub fn remove(&mut self, line: &str) {
        if let Some(i) = self.lines.iter().rposition(|l| l == line) {
            self.lines.remove(i);
        }
        if let Err(e) = self.save() {
            eprintln!(
                "zmem trial: cannot write the crash journal {}: {e}",
                self.path.display()
            );
        }
    }

    /// Pending actions, oldest first.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        // Only a journal with nothing pending may go; otherwise it is exactly
        // what --recover needs.
        if self.lines.is_empty() {
            let _ = fs::remove_file(&self.path);
            // The directory goes too when this was the last trial.
            if let Some(dir) = self.path.parent() {
                let _ = fs::remove_dir(dir);
            }
        }
    }
}

/// Journals left by trials whose process is gone: (pid, path).
pub fn orphans(sys: &Sys) -> Vec<(u32, PathBuf)> {
    let mut v = Vec::new();
    for name in sys.list(JOURNAL_DIR).unwrap_or_default() {
        let Some(pid) = name
            .strip_suffix(".journal")
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !alive_zmem(sys, pid) {
            v.push((pid, sys.path(&format!("{JOURNAL_DIR}/{name}"))));
        }
    }
    v.sort();
    v
}

/// Whether `pid` is a running zmem (not a recycled pid of something else).
fn alive_zmem(sys: &Sys, pid: u32) -> bool {
    let comm = sys.read(&format!("/proc/{pid}/comm")).unwrap_or_default();
    sys.exists(&format!("/proc/{pid}")) && comm.trim().starts_with("zmem")
}

/// The pending lines of a journal file, oldest first.
pub fn read_pending(path: &Path) -> io::Result<Vec<String>> {
    Ok(fs::read_to_string(path)?
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

/// Delete a journal file whose actions were all undone.
/// Remove a replayed journal, and the journal directory when it was the
/// last one (`zmem trial --recover` leaves nothing behind).
pub fn discard(path: &Path) {
    let _ = fs::remove_file(path);
    if let Some(dir) = path.parent() {
        // Fails (and keeps the directory) while other journals remain.
        let _ = fs::remove_dir(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(tag: &str) -> (PathBuf, Sys) {
        let root =
            std::env::temp_dir().join(format!("zmem-journal-test.{}.{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        (root.clone(), Sys::new(&root))
    }

    /// A pid that cannot be running (above any pid_max).
    const DEAD: u32 = 4_000_000_000;

    #[test]
    fn a_pending_journal_is_never_overwritten() {
        let (root, h) = fake("reuse");
        fs::create_dir_all(h.path(JOURNAL_DIR)).unwrap();
        let p = h.path(JOURNAL_DIR).join(format!("{DEAD}.journal"));
        fs::write(&p, "swapoff\t/var/tmp/zmem-trial.1.1.swap\n").unwrap();
        let e = Journal::create_for_pid(&h, DEAD).unwrap_err();
        assert!(e.to_string().contains("--recover"), "{e}");
        assert_eq!(
            fs::read_to_string(&p).unwrap(),
            "swapoff\t/var/tmp/zmem-trial.1.1.swap\n"
        );
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn live_trials_are_not_orphans() {
        let (root, h) = fake("live");
        fs::create_dir_all(h.path(JOURNAL_DIR)).unwrap();
        fs::write(h.path(JOURNAL_DIR).join("77.journal"), "").unwrap();
        fs::create_dir_all(h.path("/proc/77")).unwrap();
        fs::write(h.path("/proc/77/comm"), "zmem\n").unwrap();
        assert!(orphans(&h).is_empty());
        fs::write(h.path("/proc/77/comm"), "bash\n").unwrap();
        assert_eq!(orphans(&h).len(), 1, "a recycled pid is not our trial");
        fs::remove_dir_all(root).unwrap();
    }
}
