//! The undo list: every change is recorded here *before* it is made (or, for
//! things that only exist once made, right after), and undone in reverse
//! order when the list is unwound or dropped — on normal exit, on error, on
//! panic, and after Ctrl-C/SIGTERM/SIGHUP, which only raise a flag
//! ([`crate::SignalWatch`]) so the run stops at its next check and unwinds
//! here.
//!
//! Each pending [`Action`] is also a line of the crash [`crate::journal`], so
//! that `zmem trial --recover` and `zmem apply --revert` can undo what a
//! killed process left behind ([`recover`]).

use std::cell::RefCell;
use std::io;
use std::rc::Rc;

use crate::journal::{self, Journal};
use crate::knob::{knob_equal, read_knob, selected};
use crate::{Action, HotDevice, MemoryHierarchy, Sys};

/// One pending undo: the action, and the device it removes when zmem holds
/// one ([`Guard::push_zram`]: dropping it resets and removes it, retrying
/// while udev still has it open).
#[derive(Debug)]
struct Entry {
    action: Action,
    device: Option<HotDevice>,
}

impl Entry {
    fn line(&self) -> String {
        // Unjournalable entries still get a line so pops stay paired.
        self.action
            .to_line()
            .unwrap_or_else(|| "unjournalable".into())
    }

    fn run(self, sys: &Sys) -> Result<(), String> {
        match self.device {
            Some(dev) => {
                let dir = format!("/sys/block/zram{}", dev.id());
                drop(dev);
                if sys.exists(&dir) {
                    Err(format!(
                        "{}: {dir} still exists after hot_remove",
                        self.action
                    ))
                } else {
                    Ok(())
                }
            }
            None => self.action.execute(sys),
        }
    }
}

/// A stack of undo actions, run newest first.
#[derive(Debug)]
pub struct Guard {
    sys: Sys,
    label: String,
    stack: Vec<Entry>,
    journal: Option<Rc<RefCell<Journal>>>,
}

impl Guard {
    /// An empty guard; `label` names it in error messages.
    pub fn new(sys: &Sys, label: impl Into<String>) -> Self {
        Guard {
            sys: sys.clone(),
            label: label.into(),
            stack: Vec::new(),
            journal: None,
        }
    }

    /// A guard that also records its actions in the crash journal.
    pub fn with_journal(
        sys: &Sys,
        label: impl Into<String>,
        journal: Rc<RefCell<Journal>>,
    ) -> Self {
        Guard {
            sys: sys.clone(),
            label: label.into(),
            stack: Vec::new(),
            journal: Some(journal),
        }
    }

    fn push_entry(&mut self, e: Entry) {
        if let Some(j) = &self.journal {
            j.borrow_mut().push(e.line());
        }
        self.stack.push(e);
    }

    /// Record the undo action of a change (before it is made, or right
    /// after for what exists only once made).
    pub fn push(&mut self, action: Action) {
        self.push_entry(Entry {
            action,
            device: None,
        });
    }

    /// Record a zram device zmem hot-added: undone by resetting and removing it.
    pub fn push_zram(&mut self, dev: HotDevice) {
        self.push_entry(Entry {
            action: Action::RemoveZram(dev.id(), dev.incarnation()),
            device: Some(dev),
        });
    }

    /// Enable the memory controller for new cgroups where cgroup v2 was
    /// booted without it in `cgroup.subtree_control` (`h.enable`), recording
    /// `-memory` as the undo first; nothing where it is enabled already.
    pub fn enable_memory_controller(&mut self, h: &MemoryHierarchy) -> io::Result<()> {
        let Some(file) = &h.enable else {
            return Ok(());
        };
        self.push(Action::Write {
            path: file.clone(),
            value: "-memory".into(),
        });
        self.sys.write(file, "+memory").map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("enabling the memory controller in {file}: {e}"),
            )
        })
    }

    /// How many actions are pending.
    pub fn len(&self) -> usize {
        self.stack.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }

    /// Set a kernel setting, remembering its old value first. A setting that
    /// already has the value is left alone (and nothing is recorded).
    pub fn set_knob(&mut self, path: &str, value: &str) -> io::Result<()> {
        let old = read_knob(&self.sys, path)?;
        if knob_equal(&old, value) {
            return Ok(());
        }
        // The old value of a selection file like "[lzo] lz4" is the bracketed one.
        let old = selected(&old);
        self.push(Action::Restore {
            path: path.to_string(),
            value: old,
        });
        self.sys
            .write(path, value)
            .map_err(|e| io::Error::new(e.kind(), format!("writing {value:?} to {path}: {e}")))
    }

    /// Undo everything, newest first. Returns one message per action that failed
    /// (every action is attempted even if earlier ones fail).
    pub fn unwind(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        while let Some(e) = self.stack.pop() {
            let line = e.line();
            match e.run(&self.sys) {
                // Undone: the crash journal forgets it.
                Ok(()) => {
                    if let Some(j) = &self.journal {
                        j.borrow_mut().remove(&line);
                    }
                }
                // Not undone: it stays in the journal for `--recover`.
                Err(e) => errors.push(format!("{}: {e}", self.label)),
            }
        }
        errors
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        for e in self.unwind() {
            eprintln!("zmem: cleanup failed: {e} — restore it by hand");
        }
    }
}

/// What recovery did.
#[derive(Debug, Default)]
pub struct Recovery {
    pub done: Vec<String>,
    pub errors: Vec<String>,
}

/// Undo the journal lines of a dead process, newest first: (what was done,
/// the lines that could not be undone, oldest first, with why).
fn replay_lines(sys: &Sys, lines: &[String]) -> (Vec<String>, Vec<(String, String)>) {
    let mut done = Vec::new();
    let mut failed = Vec::new();
    for line in lines.iter().rev() {
        let r = match Action::parse(line) {
            Some(a) => a.replay(sys),
            None => Err(format!("unreadable journal line {line:?}")),
        };
        match r {
            Ok(Some(d)) => done.push(d),
            Ok(None) => {}
            Err(e) => failed.push((line.clone(), e)),
        }
    }
    failed.reverse();
    (done, failed)
}

/// Undo what every orphaned journal in `dir` records, newest action first,
/// and remove the journals that were fully replayed (the others are kept for
/// a human to look at). `who` names the process kind in the report.
pub fn recover_dir(sys: &Sys, dir: &str, who: &str) -> Recovery {
    let mut r = Recovery::default();
    for (pid, path) in journal::orphans_in(sys, dir) {
        let lines = match journal::read_pending(&path) {
            Ok(l) => l,
            Err(e) => {
                r.errors.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        let (done, failed) = replay_lines(sys, &lines);
        r.done
            .extend(done.into_iter().map(|d| format!("{who} {pid}: {d}")));
        if failed.is_empty() {
            journal::discard(&path);
        }
        r.errors
            .extend(failed.into_iter().map(|(_, e)| format!("{who} {pid}: {e}")));
    }
    r
}

/// Undo what this process's own journals in `dir` record (its devices, …),
/// retrying what fails (a device its other threads still hold open answers
/// EBUSY) until `patience` runs out; the journals fully replayed are removed,
/// the others stay for `zmem trial --recover`. What a signal does in a command
/// that never polls for it ([`crate::SignalWatch::install_undoing`]).
pub fn undo_own(sys: &Sys, dir: &str, patience: std::time::Duration) -> Recovery {
    let deadline = std::time::Instant::now() + patience;
    let mut r = Recovery::default();
    for path in journal::own_in(sys, dir, std::process::id()) {
        let mut lines = match journal::read_pending(&path) {
            Ok(l) => l,
            Err(e) => {
                r.errors.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        loop {
            let (done, failed) = replay_lines(sys, &lines);
            r.done.extend(done);
            if failed.is_empty() {
                journal::discard(&path);
                break;
            }
            if std::time::Instant::now() >= deadline {
                r.errors.extend(failed.into_iter().map(|(_, e)| e));
                break;
            }
            lines = failed.into_iter().map(|(l, _)| l).collect();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    r
}

/// Undo what every orphaned trial journal ([`journal::JOURNAL_DIR`]) records.
#[cfg(test)]
pub fn recover(sys: &Sys) -> Recovery {
    recover_dir(sys, journal::JOURNAL_DIR, "trial")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{orphans, JOURNAL_DIR};
    use crate::knob::{knob_equal, PAGE_CLUSTER, SWAPPINESS, ZSWAP_PARAMS};
    use std::fs;
    use std::path::PathBuf;

    fn fake_host() -> (tempdir::Dir, Sys) {
        let d = tempdir::Dir::new();
        let h = Sys::new(d.path());
        let params = h.path(ZSWAP_PARAMS);
        fs::create_dir_all(&params).unwrap();
        for (k, v) in [
            ("enabled", "N"),
            ("compressor", "lzo"),
            ("max_pool_percent", "20"),
            ("accept_threshold_percent", "90"),
            ("shrinker_enabled", "N"),
        ] {
            fs::write(params.join(k), format!("{v}\n")).unwrap();
        }
        fs::create_dir_all(h.path("/proc/sys/vm")).unwrap();
        fs::write(h.path(SWAPPINESS), "60\n").unwrap();
        fs::write(h.path(PAGE_CLUSTER), "3\n").unwrap();
        (d, h)
    }

    fn snapshot(h: &Sys) -> Vec<(PathBuf, String)> {
        let mut v: Vec<(PathBuf, String)> = fs::read_dir(h.path(ZSWAP_PARAMS))
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                let s = fs::read_to_string(&p).unwrap();
                (p, s)
            })
            .collect();
        for k in [SWAPPINESS, PAGE_CLUSTER] {
            v.push((h.path(k), fs::read_to_string(h.path(k)).unwrap()));
        }
        v.sort();
        v
    }

    /// Our fake files do not normalise like sysfs does; compare trimmed.
    fn trimmed(v: Vec<(PathBuf, String)>) -> Vec<(PathBuf, String)> {
        v.into_iter()
            .map(|(p, s)| (p, s.trim().to_string()))
            .collect()
    }

    fn change_everything(g: &mut Guard) {
        let p = |n: &str| format!("{ZSWAP_PARAMS}/{n}");
        g.set_knob(&p("compressor"), "lz4").unwrap();
        g.set_knob(&p("max_pool_percent"), "35").unwrap();
        g.set_knob(&p("enabled"), "Y").unwrap();
        g.set_knob(SWAPPINESS, "100").unwrap();
        g.set_knob(PAGE_CLUSTER, "0").unwrap();
    }

    #[test]
    fn unwind_restores_every_setting() {
        let (_d, h) = fake_host();
        let before = trimmed(snapshot(&h));
        let mut g = Guard::new(&h, "test");
        change_everything(&mut g);
        assert_eq!(
            read_knob(&h, &format!("{ZSWAP_PARAMS}/enabled")).unwrap(),
            "Y"
        );
        assert_ne!(trimmed(snapshot(&h)), before);
        assert_eq!(g.len(), 5);
        assert!(g.unwind().is_empty());
        assert_eq!(trimmed(snapshot(&h)), before);
        assert!(g.is_empty());
    }

    #[test]
    fn drop_restores() {
        let (_d, h) = fake_host();
        let before = trimmed(snapshot(&h));
        {
            let mut g = Guard::new(&h, "test");
            change_everything(&mut g);
        }
        assert_eq!(trimmed(snapshot(&h)), before);
    }

    #[test]
    fn panic_restores() {
        let (_d, h) = fake_host();
        let before = trimmed(snapshot(&h));
        let h2 = h.clone();
        let r = std::panic::catch_unwind(move || {
            let mut g = Guard::new(&h2, "test");
            change_everything(&mut g);
            panic!("workload exploded");
        });
        assert!(r.is_err());
        assert_eq!(trimmed(snapshot(&h)), before);
    }

    #[test]
    fn unchanged_settings_are_not_touched() {
        let (_d, h) = fake_host();
        let mut g = Guard::new(&h, "test");
        g.set_knob(SWAPPINESS, "60").unwrap();
        g.set_knob(&format!("{ZSWAP_PARAMS}/enabled"), "0").unwrap();
        assert!(
            g.is_empty(),
            "no undo for a setting that already had the value"
        );
        // Nothing was written either: the file still has our own formatting.
        assert_eq!(fs::read_to_string(h.path(SWAPPINESS)).unwrap(), "60\n");
    }

    #[test]
    fn restore_order_is_newest_first_and_files_are_removed() {
        let (d, h) = fake_host();
        let made = d.path().join("zmem-trial.swap");
        fs::write(&made, b"x").unwrap();
        let mut g = Guard::new(&h, "test");
        g.push(Action::RemoveFile("/zmem-trial.swap".into()));
        // Set the same knob twice: the first old value must win.
        g.set_knob(SWAPPINESS, "100").unwrap();
        g.set_knob(SWAPPINESS, "150").unwrap();
        assert!(g.unwind().is_empty());
        assert_eq!(read_knob(&h, SWAPPINESS).unwrap(), "60");
        assert!(!made.exists());
    }

    #[test]
    fn failures_are_reported_and_the_rest_still_runs() {
        let (_d, h) = fake_host();
        let mut g = Guard::new(&h, "test");
        g.set_knob(SWAPPINESS, "100").unwrap();
        g.push(Action::Restore {
            path: "/proc/sys/vm/no_such_dir/knob".into(),
            value: "1".into(),
        });
        let errs = g.unwind();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("no_such_dir"));
        assert_eq!(read_knob(&h, SWAPPINESS).unwrap(), "60");
    }

    #[test]
    fn selection_files_restore_the_selected_entry() {
        let (d, _h) = fake_host();
        let p = d.path().join("comp_algorithm");
        fs::write(&p, "lzo [lz4] zstd\n").unwrap();
        // A real-kernel Sys writes exactly what it is given, like sysfs.
        let mut g = Guard::new(&Sys::real(), "test");
        g.set_knob(p.to_str().unwrap(), "zstd").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "zstd");
        g.unwind();
        assert_eq!(fs::read_to_string(&p).unwrap(), "lz4");
        assert!(knob_equal("Y", "1") && knob_equal("N", "n") && !knob_equal("Y", "N"));
    }

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
            g.push(Action::RemoveFile("/zmem-trial.1.2.swap".into()));
            j.borrow_mut()
                .push(Action::RemoveCgroup(cg.into()).to_line().unwrap());
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
        assert!(
            !h.path(JOURNAL_DIR).exists(),
            "--recover leaves no empty journal directory"
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

    /// Hostile finding 2: a journal another user could have written (a
    /// file or directory writable by others) is refused, naming why, and
    /// nothing in it runs; journals zmem writes are 0600 in a 0700 directory.
    #[test]
    fn a_journal_others_could_write_is_never_replayed() {
        use std::os::unix::fs::PermissionsExt;
        let (root, h) = fake("planted");
        let mode = |p: &std::path::Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        {
            let j = Journal::create_for_pid(&h, DEAD).unwrap();
            assert_eq!(mode(j.path()), 0o600);
            assert_eq!(mode(&h.path(JOURNAL_DIR)), 0o700);
            std::mem::forget(j);
        }
        let planted = h.path(JOURNAL_DIR).join(format!("{DEAD}.journal"));
        fs::write(&planted, format!("restore\t{SWAPPINESS}\t1\n")).unwrap();
        let chmod = |p: &std::path::Path, m: u32| {
            fs::set_permissions(p, fs::Permissions::from_mode(m)).unwrap()
        };
        chmod(&planted, 0o666);
        let r = recover(&h);
        assert!(r.done.is_empty(), "{:?}", r.done);
        assert!(
            r.errors[0].contains("refusing to replay it") && r.errors[0].contains("mode 666"),
            "{:?}",
            r.errors
        );
        chmod(&planted, 0o600);
        chmod(&h.path(JOURNAL_DIR), 0o777);
        let r = recover(&h);
        assert!(
            r.done.is_empty() && r.errors[0].contains("lets other users replace"),
            "{:?}",
            r.errors
        );
        assert_eq!(read_knob(&h, SWAPPINESS).unwrap(), "60", "nothing ran");
        chmod(&h.path(JOURNAL_DIR), 0o700);
        let r = recover(&h);
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(
            read_knob(&h, SWAPPINESS).unwrap(),
            "1",
            "a trusted journal is replayed"
        );
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_failed_undo_stays_in_the_journal() {
        let (root, h) = fake("failed");
        {
            let j = Rc::new(RefCell::new(Journal::create_for_pid(&h, DEAD).unwrap()));
            let mut g = Guard::with_journal(&h, "test", Rc::clone(&j));
            g.set_knob(SWAPPINESS, "100").unwrap();
            g.push(Action::Restore {
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

    /// A tiny self-removing temporary directory (no extra dependency).
    mod tempdir {
        use std::path::{Path, PathBuf};
        use std::sync::atomic::{AtomicU32, Ordering};

        pub struct Dir(PathBuf);
        impl Dir {
            pub fn new() -> Self {
                static N: AtomicU32 = AtomicU32::new(0);
                let p = std::env::temp_dir().join(format!(
                    "zmem-trial-test.{}.{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::SeqCst)
                ));
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
            pub fn path(&self) -> &Path {
                &self.0
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }
}
