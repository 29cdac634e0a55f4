//! The crash journal: what a running zmem has changed and not yet undone,
//! kept on disk in `DIR/<pid>.journal` — `/run/zmem-trial` for trials, tunes
//! and `bench zswap`, `/run/zmem/apply-journal` for `zmem apply`. One
//! undo [`Action`](crate::Action) per line (its journal line), oldest first,
//! undone bottom to top; lines starting with `#` are comments. The file is
//! rewritten atomically and fsynced on every change, before the change is
//! made (or right after, for things that exist only once made). A process
//! that dies without running its cleanup — SIGKILL, the OOM killer taking
//! zmem itself, a crash — leaves its journal behind; `zmem trial --recover`
//! and `zmem apply --revert` replay it ([`crate::recover`]).
//!
//! This module only stores lines; what they mean (and how they are replayed)
//! is [`crate::Action`]'s business.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::Sys;

/// Directory of the journals of trials, tunes and `bench zswap` (a path
/// inside the [`Sys`] root).
pub const JOURNAL_DIR: &str = "/run/zmem-trial";

/// The journal of one running process.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    lines: Vec<String>,
}

impl Journal {
    /// Start this process's journal in [`JOURNAL_DIR`].
    pub fn create(sys: &Sys) -> io::Result<Self> {
        Self::create_in(sys, JOURNAL_DIR, std::process::id())
    }

    /// Start a journal in [`JOURNAL_DIR`] under another pid's name (tests).
    pub fn create_for_pid(sys: &Sys, pid: u32) -> io::Result<Self> {
        Self::create_in(sys, JOURNAL_DIR, pid)
    }

    /// Start the journal of `pid` in `dir` (a kernel path in the root).
    pub fn create_in(sys: &Sys, dir: &str, pid: u32) -> io::Result<Self> {
        let dir = sys.path(dir);
        sys.check_in_tree(&dir)?;
        // 0700, whatever the umask; an existing one no other user may change.
        zmem_files::private_dir(&dir)?;
        let path = dir.join(format!("{pid}.journal"));
        if fs::metadata(&path).is_ok_and(|m| m.len() > 0) {
            // An earlier trial that had this pid died with actions pending: never overwrite them.
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} exists (an earlier zmem with this pid died); run `zmem trial --recover` (or `zmem apply --revert`)",
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
        write_file(&self.path, "", &self.lines)
    }

    /// Record an action (a line as documented above).
    pub fn push(&mut self, line: String) {
        self.lines.push(line);
        self.save_or_warn();
        test_pause_point();
    }

    /// Record several actions at once (one write and fsync): what undoes
    /// one step of a plan.
    pub fn push_all(&mut self, lines: impl IntoIterator<Item = String>) -> io::Result<()> {
        self.lines.extend(lines);
        self.save()?;
        test_pause_point();
        Ok(())
    }

    fn save_or_warn(&self) {
        if let Err(e) = self.save() {
            eprintln!(
                "zmem: cannot write the crash journal {}: {e}",
                self.path.display()
            );
        }
    }

    /// Forget an action (it was undone): the newest line equal to `line`.
    pub fn remove(&mut self, line: &str) {
        if let Some(i) = self.lines.iter().rposition(|l| l == line) {
            self.lines.remove(i);
        }
        self.save_or_warn();
    }

    /// Forget the actions after the first `n` (a step that was not made).
    pub fn truncate(&mut self, n: usize) {
        if n < self.lines.len() {
            self.lines.truncate(n);
            self.save_or_warn();
        }
    }

    /// Forget every action (they were handed on, or all undone).
    pub fn clear(&mut self) {
        self.lines.clear();
        self.save_or_warn();
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

/// Test-only hook: with `ZMEM_TEST_PAUSE_AT=N` in the environment, the
/// process stops for good right after its N-th journal record (a
/// [`Journal::push`] or [`Journal::push_all`], or a journaled
/// [`HotDevice`](crate::HotDevice), counted from 1) is on disk, and
/// before the change it records is made — the moment a SIGKILL is worst. It
/// says so on stderr (`zmem: paused after journal record N`) so a test knows
/// when to kill it (cli/tests/host_kill.rs). With `ZMEM_TEST_PAUSE_IN=STEP`
/// too, records count only from the named step on ([`test_pause_step`]): a
/// pause inside a later step of a run. Unset, it costs one environment
/// lookup per record.
pub(crate) fn test_pause_point() {
    use std::sync::atomic::Ordering;
    let Some(at) = std::env::var("ZMEM_TEST_PAUSE_AT")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
    else {
        return;
    };
    if std::env::var_os("ZMEM_TEST_PAUSE_IN").is_some() && !PAUSE_STEP.load(Ordering::SeqCst) {
        return;
    }
    let n = PAUSE_RECORDS.fetch_add(1, Ordering::SeqCst) + 1;
    if n == at {
        eprintln!("zmem: paused after journal record {n}");
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}

/// Journal records counted by [`test_pause_point`].
static PAUSE_RECORDS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
/// Whether the step named by `ZMEM_TEST_PAUSE_IN` has begun.
static PAUSE_STEP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Test-only: the run enters `step` (`zmem tune`'s `lab`). With
/// `ZMEM_TEST_PAUSE_IN=step`, [`test_pause_point`]'s count of records starts
/// here. Unset, one environment lookup.
pub fn test_pause_step(step: &str) {
    use std::sync::atomic::Ordering;
    if std::env::var("ZMEM_TEST_PAUSE_IN").is_ok_and(|v| v == step) {
        PAUSE_RECORDS.store(0, Ordering::SeqCst);
        PAUSE_STEP.store(true, Ordering::SeqCst);
    }
}

/// Journals in [`JOURNAL_DIR`] left by processes that are gone: (pid, path).
#[cfg(test)]
pub fn orphans(sys: &Sys) -> Vec<(u32, PathBuf)> {
    orphans_in(sys, JOURNAL_DIR)
}

/// Journals in `dir` left by processes that are gone: (pid, path).
pub fn orphans_in(sys: &Sys, dir: &str) -> Vec<(u32, PathBuf)> {
    let mut v = Vec::new();
    for name in sys.list(dir).unwrap_or_default() {
        // `PID.journal`, or `PID.TAG.journal` (a device's own journal).
        let Some(pid) = name
            .strip_suffix(".journal")
            .and_then(|p| p.split('.').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !alive_zmem(sys, pid) {
            v.push((pid, sys.path(&format!("{dir}/{name}"))));
        }
    }
    v.sort();
    v
}

/// This process's own journals in `dir`: `PID.journal` and its devices' `PID.TAG.journal`.
pub fn own_in(sys: &Sys, dir: &str, pid: u32) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = sys
        .list(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|name| {
            name.strip_suffix(".journal")
                .and_then(|p| p.split('.').next())
                .is_some_and(|p| p == pid.to_string())
        })
        .map(|name| sys.path(&format!("{dir}/{name}")))
        .collect();
    v.sort();
    v
}

/// Whether `pid` is a running zmem (not a recycled pid of something else,
/// nor a killed one its parent has not reaped yet: a zombie, state `Z` or
/// `X` in `/proc/PID/stat`, has undone nothing and never will).
fn alive_zmem(sys: &Sys, pid: u32) -> bool {
    let comm = sys.read(&format!("/proc/{pid}/comm")).unwrap_or_default();
    if !sys.exists(&format!("/proc/{pid}")) || !comm.trim().starts_with("zmem") {
        return false;
    }
    let stat = sys.read(&format!("/proc/{pid}/stat")).unwrap_or_default();
    // `PID (comm) S ...`: the state follows the last ')' (comm may hold one).
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    !matches!(state, Some("Z" | "X"))
}

/// The most a journal or saved undo list may hold (a few lines each step).
const JOURNAL_MAX: u64 = 4 << 20;

/// The text of a journal or saved undo list about to be replayed as root,
/// only when no other user could have written it: a regular file (never
/// through a link, never a FIFO) of the caller's or root's, writable by no
/// one else, in directories no other user can change
/// (`zmem_files::trusted_file`), the file opened the one checked, at most
/// 4 MiB. A refusal names the file and why; nothing in it is run.
pub fn read_trusted(path: &Path) -> io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let refused = |e: io::Error| io::Error::new(e.kind(), format!("refusing to replay it: {e}"));
    let seen = zmem_files::trusted_file(path, zmem_files::Kind::File).map_err(refused)?;
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let now = f.metadata()?;
    if (now.dev(), now.ino()) != (seen.dev(), seen.ino()) {
        return Err(io::Error::other(format!(
            "{}: replaced while it was checked; refusing to replay it",
            path.display()
        )));
    }
    let mut text = String::new();
    f.take(JOURNAL_MAX + 1).read_to_string(&mut text)?;
    if text.len() as u64 > JOURNAL_MAX {
        return Err(io::Error::other(format!(
            "{}: larger than {JOURNAL_MAX} bytes; refusing to replay it",
            path.display()
        )));
    }
    Ok(text)
}

/// The pending lines of a journal file, oldest first (comments left out),
/// read as [`read_trusted`] reads it.
pub fn read_pending(path: &Path) -> io::Result<Vec<String>> {
    Ok(pending_lines(&read_trusted(path)?))
}

/// The action lines of a journal's text, oldest first.
pub fn pending_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Write a journal file whole (atomically, fsynced): `header` comment lines,
/// then the action lines, oldest first. The file is mode 0600 whatever the
/// umask, written to a new temporary file beside it (`O_EXCL|O_NOFOLLOW`)
/// and renamed over it; a missing directory is made 0700.
pub fn write_file(path: &Path, header: &str, lines: &[String]) -> io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if let Some(dir) = path.parent().filter(|d| !d.exists()) {
        zmem_files::private_dir(dir)?;
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    // A temporary file a killed writer left: ours to replace (never followed).
    let _ = fs::remove_file(&tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", tmp.display())))?;
    f.set_permissions(fs::Permissions::from_mode(0o600))?;
    let mut text = String::new();
    for h in header.lines() {
        text.push_str(&format!("# {h}\n"));
    }
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    fs::rename(&tmp, path)
}

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
    fn every_action_round_trips_through_a_journal_file() {
        let (root, h) = fake("round-trip");
        let actions = crate::action::tests::every_action();
        let path = {
            let mut j = Journal::create_in(&h, "/run/zmem/apply-journal", DEAD).unwrap();
            for a in &actions[..3] {
                j.push(a.to_line().unwrap());
            }
            j.push_all(actions[3..].iter().map(|a| a.to_line().unwrap()))
                .unwrap();
            let p = j.path().to_path_buf();
            std::mem::forget(j); // killed: the file stays
            p
        };
        let back: Vec<crate::Action> = read_pending(&path)
            .unwrap()
            .iter()
            .map(|l| crate::Action::parse(l).unwrap())
            .collect();
        assert_eq!(back, actions);
        assert_eq!(orphans_in(&h, "/run/zmem/apply-journal").len(), 1);
        // A saved list with comment lines reads the same.
        let saved = h.path("/run/zmem/apply.state");
        let lines: Vec<String> = actions.iter().map(|a| a.to_line().unwrap()).collect();
        write_file(&saved, "header one\nheader two", &lines).unwrap();
        assert_eq!(read_pending(&saved).unwrap(), lines);
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
        fs::write(h.path("/proc/77/comm"), "zmem\n").unwrap();
        fs::write(h.path("/proc/77/stat"), "77 (zmem) S 1 77 77 0").unwrap();
        assert!(orphans(&h).is_empty(), "a sleeping zmem is alive");
        fs::write(h.path("/proc/77/stat"), "77 (zmem) Z 1 77 77 0").unwrap();
        assert_eq!(orphans(&h).len(), 1, "a killed, unreaped zmem is dead");
        fs::remove_dir_all(root).unwrap();
    }
}
