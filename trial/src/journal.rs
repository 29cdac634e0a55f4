//! The crash journal: what a running trial has changed and not yet undone,
//! kept on disk in `/run/zmem-trial/<pid>.journal` (one action per line,
//! rewritten atomically on every change). A trial that dies without running
//! its cleanup — SIGKILL, the OOM killer taking zmem itself, a crash — leaves
//! its journal behind; `zmem trial --recover` replays it newest first, and
//! every new trial refuses to start while such a journal exists.
//!
//! Lines: `restore\tPATH\tVALUE`, `swapoff\tPATH`, `remove\tPATH`,
//! `zram\tID`, `rmdir\tCGROUP`.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use zmem_sysfs::Sys;

use super::guard::Undo;
use super::swap;

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

/// The journal line of an undo action (`None` if a path cannot be written on one line).
pub fn line_of(u: &Undo) -> Option<String> {
    let p = |p: &Path| {
        let s = p.to_str()?;
        (!s.contains(['\t', '\n'])).then(|| s.to_string())
    };
    Some(match u {
        Undo::Restore { path, value } => {
            if value.contains(['\t', '\n']) {
                return None;
            }
            if path.contains(['\t', '\n']) {
                return None;
            }
            format!("restore\t{path}\t{value}")
        }
        Undo::Swapoff { path } => format!("swapoff\t{}", p(path)?),
        Undo::RemoveFile { path } => format!("remove\t{}", p(path)?),
        Undo::Zram(d) => format!("zram\t{}", d.id()),
    })
}

/// The journal line for a trial cgroup (a kernel path for [`Sys`]).
pub fn cgroup_line(path: &str) -> Option<String> {
    (!path.contains(['\t', '\n'])).then(|| format!("rmdir\t{path}"))
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

/// What recovery did.
#[derive(Debug, Default)]
pub struct Recovery {
    pub done: Vec<String>,
    pub errors: Vec<String>,
}

fn replay(sys: &Sys, line: &str) -> Result<Option<String>, String> {
    let f: Vec<&str> = line.splitn(3, '\t').collect();
    match f.as_slice() {
        ["restore", path, value] => {
            sys.write(path, value)
                .map_err(|e| format!("restore {path} = {value}: {e}"))?;
            Ok(Some(format!("restored {path} = {value}")))
        }
        ["swapoff", path] => {
            if !swap::is_active(sys, Path::new(path)) {
                return Ok(None);
            }
            swap::swapoff(Path::new(path)).map_err(|e| e.to_string())?;
            Ok(Some(format!("swapoff {path}")))
        }
        ["remove", path] => {
            // Only ever the swap files trials create.
            if !path.contains("zmem-trial.") {
                return Err(format!("refusing to remove {path}: not a zmem trial file"));
            }
            match fs::remove_file(path) {
                Ok(()) => Ok(Some(format!("removed {path}"))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(format!("remove {path}: {e}")),
            }
        }
        ["zram", id] => {
            let id: u32 = id.parse().map_err(|_| format!("bad zram id {id:?}"))?;
            let dir = format!("/sys/block/zram{id}");
            if !sys.exists(&dir) {
                return Ok(None);
            }
            let _ = sys.write(&format!("{dir}/reset"), "1");
            sys.hot_remove(id)
                .map_err(|e| format!("hot_remove zram{id}: {e}"))?;
            Ok(Some(format!("reset and removed zram{id}")))
        }
        ["rmdir", path] => {
            let dir = Path::new(path);
            if !dir
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("zmem-trial."))
            {
                return Err(format!(
                    "refusing to remove cgroup {path}: not a zmem trial cgroup"
                ));
            }
            if !sys.exists(path) {
                return Ok(None);
            }
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            loop {
                let procs = sys
                    .read(&format!("{path}/cgroup.procs"))
                    .unwrap_or_default();
                for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    // SAFETY: kill has no memory-safety preconditions; the pids
                    // are the ones in a cgroup a zmem trial created.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
                match sys.remove_dir(path) {
                    Ok(()) => {
                        return Ok(Some(format!(
                            "killed what was left in and removed cgroup {path}"
                        )))
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                    Err(e) if std::time::Instant::now() > deadline => {
                        return Err(format!("rmdir {path}: {e}"))
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
                }
            }
        }
        _ => Err(format!("unreadable journal line {line:?}")),
    }
}

/// Undo what every orphaned journal records, newest action first, and remove
/// the journals that were fully replayed.
pub fn recover(sys: &Sys) -> Recovery {
    let mut r = Recovery::default();
    for (pid, path) in orphans(sys) {
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                r.errors.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        let before = r.errors.len();
        for line in text.lines().rev().filter(|l| !l.is_empty()) {
            match replay(sys, line) {
                Ok(Some(d)) => r.done.push(format!("trial {pid}: {d}")),
                Ok(None) => {}
                Err(e) => r.errors.push(format!("trial {pid}: {e}")),
            }
        }
        if r.errors.len() == before {
            let _ = fs::remove_file(&path);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::super::guard::{read_knob, Guard, SWAPPINESS, ZSWAP_PARAMS};
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    fn fake(tag: &str) -> (PathBuf, Sys) {
        let root =
            std::env::temp_dir().join(format!("zmem-journal-test.{}.{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let h = Sys::new(&root);
        fs::create_dir_all(h.path(ZSWAP_PARAMS)).unwrap();
        fs::write(h.path(ZSWAP_PARAMS).join("enabled"), "N\n").unwrap();
        fs::write(h.path(ZSWAP_PARAMS).join("compressor"), "lzo\n").unwrap();
        fs::create_dir_all(h.path("/proc/sys/vm")).unwrap();
        fs::write(h.path(SWAPPINESS), "60\n").unwrap();
        fs::write(h.path("/proc/swaps"), "Filename Type Size Used Priority\n").unwrap();
        (root, h)
    }

    /// A pid that cannot be running (above any pid_max).
    const DEAD: u32 = 4_000_000_000;

    #[test]
    fn a_killed_trial_is_recovered_from_its_journal() {
        let (root, h) = fake("killed");
        let made = root.join("zmem-trial.1.2.swap");
        fs::write(&made, b"x").unwrap();
        let cg = "/cg/zmem-trial.1.2";
        fs::create_dir_all(h.path(cg)).unwrap();
        {
            let j = Rc::new(RefCell::new(Journal::create_for_pid(&h, DEAD).unwrap()));
            let mut g = Guard::with_journal(&h, "test", Rc::clone(&j));
            g.set_knob(SWAPPINESS, "100").unwrap();
            g.set_knob(&format!("{ZSWAP_PARAMS}/compressor"), "zstd")
                .unwrap();
            g.set_knob(&format!("{ZSWAP_PARAMS}/enabled"), "Y").unwrap();
            g.push(Undo::RemoveFile { path: made.clone() });
            j.borrow_mut().push(cgroup_line(cg).unwrap());
            assert_eq!(j.borrow().lines().len(), 5);
            // SIGKILL: no destructor runs.
            std::mem::forget(g);
            std::mem::forget(j);
        }
        assert_eq!(
            read_knob(&h, &format!("{ZSWAP_PARAMS}/enabled")).unwrap(),
            "Y"
        );
        assert_eq!(orphans(&h).len(), 1);
        let r = recover(&h);
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(r.done.len(), 5, "{:?}", r.done);
        assert_eq!(read_knob(&h, SWAPPINESS).unwrap(), "60");
        assert_eq!(
            read_knob(&h, &format!("{ZSWAP_PARAMS}/compressor")).unwrap(),
            "lzo"
        );
        assert_eq!(
            read_knob(&h, &format!("{ZSWAP_PARAMS}/enabled")).unwrap(),
            "N"
        );
        assert!(!made.exists() && !h.path(cg).exists());
        assert!(
            orphans(&h).is_empty(),
            "journal removed after a clean replay"
        );
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_clean_trial_leaves_no_journal() {
        let (root, h) = fake("clean");
        {
            let j = Rc::new(RefCell::new(Journal::create_for_pid(&h, DEAD).unwrap()));
            let mut g = Guard::with_journal(&h, "test", Rc::clone(&j));
            g.set_knob(SWAPPINESS, "100").unwrap();
            assert_eq!(
                fs::read_to_string(j.borrow().path())
                    .unwrap()
                    .lines()
                    .count(),
                1
            );
            assert!(g.unwind().is_empty());
            assert!(j.borrow().lines().is_empty());
        }
        assert!(orphans(&h).is_empty());
        assert!(!h.path(JOURNAL_DIR).exists());
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn recovery_refuses_foreign_paths_and_keeps_the_journal() {
        let (root, h) = fake("foreign");
        let victim = root.join("precious.swap");
        fs::write(&victim, b"x").unwrap();
        fs::create_dir_all(h.path(JOURNAL_DIR)).unwrap();
        fs::write(
            h.path(JOURNAL_DIR).join(format!("{DEAD}.journal")),
            format!("remove\t{}\nbogus\n", victim.display()),
        )
        .unwrap();
        let r = recover(&h);
        assert_eq!(r.errors.len(), 2, "{:?}", r.errors);
        assert!(victim.exists());
        assert_eq!(orphans(&h).len(), 1, "journal kept for a human to look at");
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_failed_undo_stays_in_the_journal() {
        let (root, h) = fake("failed");
        {
            let j = Rc::new(RefCell::new(Journal::create_for_pid(&h, DEAD).unwrap()));
            let mut g = Guard::with_journal(&h, "test", Rc::clone(&j));
            g.set_knob(SWAPPINESS, "100").unwrap();
            g.push(Undo::Restore {
                path: "/proc/sys/vm/gone/knob".into(),
                value: "1".into(),
            });
            let errs = g.unwind();
            assert_eq!(errs.len(), 1);
            assert_eq!(
                j.borrow().lines().len(),
                1,
                "only the failed action is left"
            );
            assert!(j.borrow().lines()[0].contains("gone/knob"));
        }
        assert_eq!(orphans(&h).len(), 1, "the journal outlives the trial");
        fs::remove_dir_all(root).unwrap();
    }

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
