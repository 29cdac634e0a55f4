//! Restore and cleanup: every change a trial makes is recorded here *before*
//! (or, for things that only exist once made, right after) it is made, and
//! undone in reverse order when the guard is unwound or dropped — on normal
//! exit, on error and on panic. Ctrl-C/SIGTERM/SIGHUP only raise a flag
//! ([`SignalWatch`]) so that the trial stops at the next check and this same
//! unwinding runs.

use std::cell::RefCell;
use std::fs;
use std::io;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zmem_sysfs::{HotDevice, Sys};

use super::journal::{self, Journal};
use super::swap;

/// zswap module parameters (mm/zswap.c `module_param_cb`).
pub const ZSWAP_PARAMS: &str = "/sys/module/zswap/parameters";
/// vm.swappiness.
pub const SWAPPINESS: &str = "/proc/sys/vm/swappiness";
/// vm.page-cluster.
pub const PAGE_CLUSTER: &str = "/proc/sys/vm/page-cluster";

/// Read a one-line kernel setting without its trailing newline.
pub fn read_knob(sys: &Sys, abs: &str) -> io::Result<String> {
    sys.read(abs)
}

/// One thing to undo.
#[derive(Debug)]
pub enum Undo {
    /// Write `value` back to the setting at `path` (a kernel path for [`Sys`]).
    Restore { path: String, value: String },
    /// `swapoff` a swap area zmem activated.
    Swapoff { path: PathBuf },
    /// Delete a file zmem created (a swap file).
    RemoveFile { path: PathBuf },
    /// Reset and hot-remove a zram device zmem hot-added.
    Zram(HotDevice),
}

impl Undo {
    fn describe(&self) -> String {
        match self {
            Undo::Restore { path, value } => format!("restore {path} = {value}"),
            Undo::Swapoff { path } => format!("swapoff {}", path.display()),
            Undo::RemoveFile { path } => format!("remove {}", path.display()),
            Undo::Zram(d) => format!("reset and hot_remove zram{}", d.id()),
        }
    }

    fn run(self, sys: &Sys) -> Result<(), String> {
        let what = self.describe();
        let r = match self {
            Undo::Restore { path, value } => {
                // Writing the same value back is harmless; compare to report drift.
                sys.write(&path, &value)
                    .map_err(|e| e.to_string())
                    .and_then(|()| {
                        let now = read_knob(sys, &path).map_err(|e| e.to_string())?;
                        if knob_equal(&now, &value) {
                            Ok(())
                        } else {
                            Err(format!("reads back {now:?}"))
                        }
                    })
            }
            Undo::Swapoff { path } => {
                // swapoff can fail transiently (EBUSY/ENOMEM while pages come back).
                let mut last = Ok(());
                for attempt in 0..5 {
                    last = swap::swapoff(&path).map_err(|e| e.to_string());
                    if last.is_ok() || !swap::is_active(sys, &path) {
                        last = Ok(());
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(200 << attempt));
                }
                last
            }
            Undo::RemoveFile { path } => match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e.to_string()),
                _ => Ok(()),
            },
            Undo::Zram(dev) => {
                let sys = dev.sys_path().to_path_buf();
                drop(dev);
                if sys.exists() {
                    Err(format!("{} still exists after hot_remove", sys.display()))
                } else {
                    Ok(())
                }
            }
        };
        r.map_err(|e| format!("{what}: {e}"))
    }
}

/// Settings compare loosely: the kernel prints `Y`/`N` for booleans.
fn knob_equal(a: &str, b: &str) -> bool {
    let norm = |s: &str| match s.trim() {
        "1" | "y" | "Y" => "Y".to_string(),
        "0" | "n" | "N" => "N".to_string(),
        o => o.to_string(),
    };
    norm(a) == norm(b)
}

/// A stack of undo actions, run newest first.
#[derive(Debug)]
pub struct Guard {
    sys: Sys,
    label: String,
    stack: Vec<Undo>,
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

    /// Record an undo action for a change that was just made.
    pub fn push(&mut self, u: Undo) {
        if let Some(j) = &self.journal {
            // Unjournalable entries still get a line so pops stay paired.
            let line = journal::line_of(&u).unwrap_or_else(|| "unjournalable".into());
            j.borrow_mut().push(line);
        }
        self.stack.push(u);
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
        self.push(Undo::Restore {
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
        while let Some(u) = self.stack.pop() {
            let line = journal::line_of(&u).unwrap_or_else(|| "unjournalable".into());
            match u.run(&self.sys) {
                // Undone: the crash journal forgets it.
                Ok(()) => {
                    if let Some(j) = &self.journal {
                        j.borrow_mut().remove(&line);
                    }
                }
                // Not undone: it stays in the journal for `zmem trial --recover`.
                Err(e) => errors.push(format!("{}: {e}", self.label)),
            }
        }
        errors
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        for e in self.unwind() {
            eprintln!("zmem trial: cleanup failed: {e} — restore it by hand");
        }
    }
}

fn selected(s: &str) -> String {
    if let (Some(a), Some(b)) = (s.find('['), s.find(']')) {
        if a < b {
            return s[a + 1..b].to_string();
        }
    }
    s.to_string()
}

/// Ctrl-C, SIGTERM and SIGHUP raise a flag instead of killing zmem, so the
/// trial stops at its next check and restores everything. Dropping the watch
/// restores the previous behaviour.
pub struct SignalWatch {
    flag: Arc<AtomicBool>,
    ids: Vec<signal_hook::SigId>,
}

impl SignalWatch {
    /// Install the handlers.
    pub fn install() -> io::Result<Self> {
        let flag = Arc::new(AtomicBool::new(false));
        let mut ids = Vec::new();
        for sig in [
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
        ] {
            ids.push(signal_hook::flag::register(sig, Arc::clone(&flag))?);
        }
        Ok(SignalWatch { flag, ids })
    }

    /// A watch that never fires (library use without handlers, tests).
    pub fn inert() -> Self {
        SignalWatch {
            flag: Arc::new(AtomicBool::new(false)),
            ids: Vec::new(),
        }
    }

    /// Whether a signal arrived.
    pub fn fired(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// The flag itself (to share with a loop that polls it).
    pub fn flag(&self) -> &AtomicBool {
        &self.flag
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        g.push(Undo::RemoveFile { path: made.clone() });
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
        g.push(Undo::Restore {
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
