//! The reversible actions zmem takes on a machine, and the one line each is
//! written as in a [journal](crate::journal).
//!
//! An action is both a change (`zmem apply`'s steps) and an undo (what the
//! [guard](crate::undo::Guard) and `--revert`/`--recover` run). A journal
//! line is the action's tab-separated fields; paths are kernel paths inside
//! the [`Sys`] root:
//!
//! | line | action |
//! |---|---|
//! | `write PATH VALUE` | write an attribute, sysctl or module parameter |
//! | `restore PATH VALUE` | write a setting's old value back, checked by reading it back |
//! | `run ARG…` | a command (`mount`, `umount`, `mkfs.*`) |
//! | `hot_add ID` | create zramID (`/sys/class/zram-control/hot_add`) |
//! | `hot_remove ID` | remove zramID |
//! | `zram ID INODE` | reset and remove zramID, a device zmem hot-added, if it is still there and still the same device: its sysfs directory's inode, which the kernel numbers anew at every hot_add (fs/kernfs/dir.c allocates it cyclically), so a number reused by someone else is told apart; a line of an older zmem without the inode is replayed by number, and says so |
//! | `mkswap PATH` | write a swap signature over the whole device or file |
//! | `swapon PRIORITY OPTIONS PATH` | swapon(2) with a priority and `swapon -o` options |
//! | `swapoff PATH` | swapoff(2), retried until the area is gone from `/proc/swaps` |
//! | `remove PATH` | delete a file zmem created (a swap file) |
//! | `rmdir PATH` | kill what is left in a cgroup zmem created and remove it |
//!
//! Swap areas are turned on and off by the system calls ([`crate::swap`]),
//! never by the `swapon`/`swapoff` programs; an action still shows (and a
//! fixture tree logs) as the command line that does the same, so a plan reads
//! as what a user would type.

use std::fmt;
use std::io;
use std::path::Path;

use zmem_kernel::attr;
use zmem_kernel::Errno;

use crate::knob::{self, knob_equal, read_knob};
use crate::Sys;

/// One change to the machine, or one undo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Write `value` to the attribute at `path`.
    Write { path: String, value: String },
    /// Write a setting's old `value` back; it must read back as written.
    Restore { path: String, value: String },
    /// Run a command.
    Run(Vec<String>),
    /// Create zramN through hot_add (fails unless hot_add returns N).
    HotAdd(u32),
    /// Remove zramN through hot_remove.
    HotRemove(u32),
    /// Reset and hot-remove zramN, a device zmem hot-added, if it still
    /// exists and is the same device (its [`zram_incarnation`], when known).
    RemoveZram(u32, Option<u64>),
    /// Write a swap signature over the whole device or file at the path.
    Mkswap(String),
    /// Activate a swap area (`options` as `swapon -o` takes them; may be empty).
    Swapon {
        path: String,
        priority: i32,
        options: String,
    },
    /// Deactivate a swap area.
    Swapoff(String),
    /// Delete a file zmem created.
    RemoveFile(String),
    /// Kill what is left in a cgroup zmem created and remove it.
    RemoveCgroup(String),
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Write { path, value } => write!(f, "write {path} {value}"),
            Action::Restore { path, value } => write!(f, "restore {path} = {value}"),
            Action::Run(argv) => write!(f, "run {}", argv.join(" ")),
            Action::HotAdd(id) => write!(f, "hot_add zram{id}"),
            Action::HotRemove(id) => write!(f, "hot_remove zram{id}"),
            Action::RemoveZram(id, _) => write!(f, "reset and hot_remove zram{id}"),
            Action::Mkswap(_) | Action::Swapon { .. } | Action::Swapoff(_) => {
                write!(f, "run {}", self.command_line().join(" "))
            }
            Action::RemoveFile(path) => write!(f, "remove {path}"),
            Action::RemoveCgroup(path) => write!(f, "rmdir {path}"),
        }
    }
}

/// A journal field: `None` if it cannot be written on one line.
fn field(s: &str) -> Option<&str> {
    (!s.contains(['\t', '\n'])).then_some(s)
}

impl Action {
    /// `write PATH VALUE`.
    pub fn write(path: impl Into<String>, value: impl Into<String>) -> Action {
        Action::Write {
            path: path.into(),
            value: value.into(),
        }
    }

    /// `run ARG…`.
    pub fn run(argv: &[&str]) -> Action {
        Action::Run(argv.iter().map(|s| s.to_string()).collect())
    }

    /// The swap actions as the command that does the same (what a plan and a
    /// fixture log show).
    pub fn command_line(&self) -> Vec<String> {
        match self {
            Action::Mkswap(path) => vec!["mkswap".into(), path.clone()],
            Action::Swapon {
                path,
                priority,
                options,
            } => {
                let mut v = vec!["swapon".into(), "-p".into(), priority.to_string()];
                if !options.is_empty() {
                    v.push("-o".into());
                    v.push(options.clone());
                }
                v.push(path.clone());
                v
            }
            Action::Swapoff(path) => vec!["swapoff".into(), path.clone()],
            Action::Run(argv) => argv.clone(),
            _ => Vec::new(),
        }
    }

    /// The journal line (`None` when a field holds a tab or a newline).
    pub fn to_line(&self) -> Option<String> {
        Some(match self {
            Action::Write { path, value } => format!("write\t{}\t{}", field(path)?, field(value)?),
            Action::Restore { path, value } => {
                format!("restore\t{}\t{}", field(path)?, field(value)?)
            }
            Action::Run(argv) => {
                let f: Option<Vec<&str>> = argv.iter().map(|a| field(a)).collect();
                format!("run\t{}", f?.join("\t"))
            }
            Action::HotAdd(id) => format!("hot_add\t{id}"),
            Action::HotRemove(id) => format!("hot_remove\t{id}"),
            Action::RemoveZram(id, None) => format!("zram\t{id}"),
            Action::RemoveZram(id, Some(ino)) => format!("zram\t{id}\t{ino}"),
            Action::Mkswap(path) => format!("mkswap\t{}", field(path)?),
            Action::Swapon {
                path,
                priority,
                options,
            } => format!("swapon\t{priority}\t{}\t{}", field(options)?, field(path)?),
            Action::Swapoff(path) => format!("swapoff\t{}", field(path)?),
            Action::RemoveFile(path) => format!("remove\t{}", field(path)?),
            Action::RemoveCgroup(path) => format!("rmdir\t{}", field(path)?),
        })
    }

    /// Read a journal line back (`None` if it is not one).
    pub fn parse(line: &str) -> Option<Action> {
        let (kind, rest) = line.split_once('\t')?;
        let one = || (!rest.is_empty()).then(|| rest.to_string());
        Some(match kind {
            "write" | "restore" => {
                let (path, value) = rest.split_once('\t').unwrap_or((rest, ""));
                let (path, value) = (path.to_string(), value.to_string());
                if kind == "write" {
                    Action::Write { path, value }
                } else {
                    Action::Restore { path, value }
                }
            }
            "run" => Action::Run(rest.split('\t').map(str::to_string).collect()),
            "hot_add" => Action::HotAdd(rest.parse().ok()?),
            "hot_remove" => Action::HotRemove(rest.parse().ok()?),
            "zram" => {
                let (id, ino) = rest
                    .split_once('\t')
                    .map_or((rest, None), |(a, b)| (a, Some(b)));
                let ino = match ino {
                    Some(i) => Some(i.parse().ok()?),
                    None => None,
                };
                Action::RemoveZram(id.parse().ok()?, ino)
            }
            "mkswap" => Action::Mkswap(one()?),
            "swapon" => {
                let mut f = rest.splitn(3, '\t');
                let priority = f.next()?.parse().ok()?;
                let options = f.next()?.to_string();
                let path = f.next().filter(|p| !p.is_empty())?.to_string();
                Action::Swapon {
                    path,
                    priority,
                    options,
                }
            }
            "swapoff" => Action::Swapoff(one()?),
            "remove" => Action::RemoveFile(one()?),
            "rmdir" => Action::RemoveCgroup(one()?),
            _ => return None,
        })
    }

    /// Carry the action out; the error names the action.
    pub fn execute(&self, sys: &Sys) -> Result<(), String> {
        let errno = |e: io::Error| format!("{self}: {} ({e})", Errno::from_io(&e));
        let plain = |e: io::Error| format!("{self}: {e}");
        match self {
            Action::Write { path, value } => match zram_reset_id(path) {
                Some(id) => {
                    crate::teardown::retry_busy(sys, id, attr::RESET, || sys.write(path, value))
                        .map_err(errno)
                }
                None => sys.write(path, value).map_err(errno),
            },
            Action::Restore { path, value } => restore(sys, path, value).map_err(plain),
            Action::Run(argv) => sys.run(argv).map_err(plain),
            Action::HotAdd(id) => {
                let got = sys.hot_add().map_err(plain)?;
                if got != *id {
                    let _ = sys.hot_remove(got);
                    return Err(format!(
                        "{self}: hot_add created zram{got}, not zram{id} (removed it again)"
                    ));
                }
                Ok(())
            }
            Action::HotRemove(id) => {
                crate::teardown::retry_busy(sys, *id, "hot_remove", || sys.hot_remove(*id))
                    .map_err(errno)
            }
            Action::RemoveZram(id, ino) => {
                if let Some(found) = other_device(sys, *id, *ino) {
                    return Err(format!("{self}: {found}"));
                }
                knob::remove_zram(sys, *id).map_err(plain)?;
                Ok(())
            }
            Action::Mkswap(path) => sys.mkswap(path).map_err(plain),
            Action::Swapon {
                path,
                priority,
                options,
            } => sys.swapon(path, *priority, options).map_err(plain),
            Action::Swapoff(path) => knob::swapoff_settled(sys, path).map_err(plain),
            Action::RemoveFile(path) => match std::fs::remove_file(sys.path(path)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(plain(e)),
                _ => Ok(()),
            },
            Action::RemoveCgroup(path) => knob::remove_cgroup(sys, path).map(|_| ()).map_err(plain),
        }
    }

    /// Undo what a dead process journaled: the action, unless there is nothing
    /// left to undo (the change it undoes was never made, or was undone
    /// already); `Ok(None)` then. Files and cgroups are only removed when
    /// their names start with `zmem-` (what zmem creates).
    pub fn replay(&self, sys: &Sys) -> Result<Option<String>, String> {
        let zram_gone = |id: &u32| !sys.exists(&format!("/sys/block/zram{id}"));
        let skip = match self {
            Action::Write { path, .. } => zram_dir(path).is_some_and(|d| !sys.exists(&d)),
            Action::HotRemove(id) | Action::RemoveZram(id, _) => zram_gone(id),
            Action::Swapoff(path) => !knob::is_active(sys, path),
            Action::Swapon { path, .. } => knob::is_active(sys, path),
            Action::Run(argv) => mount_state_matches(sys, argv),
            Action::RemoveFile(path) | Action::RemoveCgroup(path) => {
                if !made_by_zmem(path) {
                    return Err(format!("refusing to {self}: not made by zmem"));
                }
                !sys.path(path).exists()
            }
            Action::Restore { .. } | Action::HotAdd(_) | Action::Mkswap(_) => false,
        };
        if skip {
            return Ok(None);
        }
        if let Action::RemoveZram(id, ino) = self {
            if let Some(found) = other_device(sys, *id, *ino) {
                return Ok(Some(format!("left zram{id} alone: {found}")));
            }
        }
        match self {
            // The old value goes back; a read-back check would fail on a
            // fixture tree that does not normalise, and nothing else runs now.
            Action::Restore { path, value } => {
                sys.write(path, value).map_err(|e| format!("{self}: {e}"))?
            }
            _ => self.execute(sys)?,
        }
        Ok(Some(self.done()))
    }

    /// What a replayed action did, for `--recover`'s report.
    fn done(&self) -> String {
        match self {
            Action::Restore { path, value } => format!("restored {path} = {value}"),
            Action::Swapoff(path) => format!("swapoff {path}"),
            Action::RemoveFile(path) => format!("removed {path}"),
            Action::RemoveZram(id, Some(_)) => format!("reset and removed zram{id}"),
            Action::RemoveZram(id, None) => format!(
                "reset and removed zram{id} (an older journal line, naming it by number only: not checked to be the device that run made)"
            ),
            Action::RemoveCgroup(path) => {
                format!("killed what was left in and removed cgroup {path}")
            }
            other => other.to_string(),
        }
    }
}

/// Which incarnation of zramN is there now: the inode of its sysfs
/// directory, numbered anew by the kernel at every hot_add (kernfs allocates
/// inode numbers cyclically, fs/kernfs/dir.c), so a device removed and its
/// number taken again by someone else reads differently. `None`: no zramN.
pub fn zram_incarnation(sys: &Sys, id: u32) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(sys.path(&format!("/sys/block/zram{id}")))
        .ok()
        .map(|m| m.ino())
}

/// Why zramN, there now, is not the device a journal line recorded (`ino`),
/// if it is not; `None` when it is, or the line recorded no identity.
fn other_device(sys: &Sys, id: u32, ino: Option<u64>) -> Option<String> {
    let want = ino?;
    let now = zram_incarnation(sys, id)?;
    (now != want).then(|| {
        format!(
            "not the device the journal recorded: it was removed and its number taken again (sysfs inode {now}, the journal's {want}); someone else's, never touched"
        )
    })
}

/// `/sys/block/zramN` of an attribute path of a zram device.
fn zram_dir(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/sys/block/")?;
    let (dev, _) = rest.split_once('/')?;
    dev.starts_with("zram").then(|| format!("/sys/block/{dev}"))
}

/// A file or cgroup zmem created: its name starts with `zmem-`
/// (`zmem-trial.PID.N.swap`, `zmem-bench-zswap.PID`).
fn made_by_zmem(path: &str) -> bool {
    Path::new(path)
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("zmem-"))
}

/// `mount … DEV DIR` when DEV is mounted already, `umount DIR` when nothing is.
fn mount_state_matches(sys: &Sys, argv: &[String]) -> bool {
    let mounts = sys.mounts().unwrap_or_default();
    match argv.first().map(String::as_str) {
        Some("mount") => argv
            .iter()
            .rev()
            .nth(1)
            .is_some_and(|dev| mounts.iter().any(|m| &m.0 == dev)),
        Some("umount") => argv
            .last()
            .is_some_and(|t| !mounts.iter().any(|m| &m.0 == t || &m.1 == t)),
        _ => false,
    }
}

/// Write a setting back and check it reads back as written (writing the same
/// value again is harmless; a different read-back means something else
/// changed it meanwhile).
fn restore(sys: &Sys, path: &str, value: &str) -> io::Result<()> {
    sys.write(path, value)?;
    let now = read_knob(sys, path)?;
    if knob_equal(&now, value) {
        Ok(())
    } else {
        Err(io::Error::other(format!("reads back {now:?}")))
    }
}

/// The id of the zram device whose `reset` `path` is (`/sys/block/zramN/reset`).
fn zram_reset_id(path: &str) -> Option<u32> {
    path.strip_prefix("/sys/block/zram")?
        .strip_suffix("/reset")?
        .parse()
        .ok()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every kind of action, with the awkward values a line must keep.
    pub(crate) fn every_action() -> Vec<Action> {
        vec![
            Action::write("/sys/block/zram0/disksize", "1024"),
            Action::write("/sys/block/zram0/reset", ""),
            Action::write("/proc/sys/vm/swappiness", "60 with spaces"),
            Action::Restore {
                path: "/sys/module/zswap/parameters/compressor".into(),
                value: "lzo".into(),
            },
            Action::run(&["mount", "-t", "ext4", "-o", "discard", "/dev/zram1", "/a b"]),
            Action::run(&["umount", "/var/tmp"]),
            Action::HotAdd(3),
            Action::HotRemove(3),
            Action::RemoveZram(12, None),
            Action::RemoveZram(13, Some(20512)),
            Action::Mkswap("/dev/zram0".into()),
            Action::Swapon {
                path: "/dev/zram0".into(),
                priority: 100,
                options: "discard".into(),
            },
            Action::Swapon {
                path: "/swapfile".into(),
                priority: -2,
                options: String::new(),
            },
            Action::Swapoff("/var/tmp/zmem-trial.1.2.swap".into()),
            Action::RemoveFile("/var/tmp/zmem-trial.1.2.swap".into()),
            Action::RemoveCgroup("/sys/fs/cgroup/memory/zmem-trial.1.2".into()),
        ]
    }

    #[test]
    fn every_action_round_trips_through_its_journal_line() {
        for a in every_action() {
            let line = a.to_line().unwrap();
            assert!(!line.contains('\n'), "{line:?}");
            assert_eq!(Action::parse(&line), Some(a.clone()), "{line:?}");
        }
    }

    #[test]
    fn lines_that_are_no_action_are_refused() {
        for l in [
            "",
            "bogus\tx",
            "hot_add\tzram0",
            "swapon\tx\t\t/dev/zram0",
            "swapon\t5\t",
            "swapoff\t",
            "remove",
        ] {
            assert_eq!(Action::parse(l), None, "{l:?}");
        }
        assert_eq!(Action::write("/a\tb", "1").to_line(), None);
        assert_eq!(Action::run(&["mkfs.ext4", "a\nb"]).to_line(), None);
    }

    #[test]
    fn swap_actions_show_as_the_command_that_does_the_same() {
        let on = Action::Swapon {
            path: "/dev/zram0".into(),
            priority: 100,
            options: "discard".into(),
        };
        assert_eq!(on.to_string(), "run swapon -p 100 -o discard /dev/zram0");
        let on = Action::Swapon {
            path: "/swapfile".into(),
            priority: -2,
            options: String::new(),
        };
        assert_eq!(on.to_string(), "run swapon -p -2 /swapfile");
        assert_eq!(
            Action::Swapoff("/dev/zram0".into()).to_string(),
            "run swapoff /dev/zram0"
        );
        assert_eq!(
            Action::Mkswap("/dev/zram0".into()).to_string(),
            "run mkswap /dev/zram0"
        );
    }

    #[test]
    fn only_what_zmem_made_is_removed() {
        assert!(made_by_zmem("/var/tmp/zmem-trial.1.2.swap"));
        assert!(made_by_zmem("/sys/fs/cgroup/unified/zmem-bench-zswap.77"));
        assert!(!made_by_zmem("/var/tmp/precious.swap"));
        assert!(!made_by_zmem("/zmem-x/precious"));
    }

    /// Hostile finding 4: a zram device removed by hand and its number
    /// taken again is not the device a journal line names; it is left.
    #[test]
    fn a_reused_zram_number_is_left_alone() {
        let d = zmem_files::testutil::ScratchDir::new("action-zram-reused");
        let sys = Sys::new(d.path());
        std::fs::create_dir_all(d.join("sys/block/zram5")).unwrap();
        let ours = zram_incarnation(&sys, 5).unwrap();
        // Someone else's zram5 (a new directory: a new inode, as kernfs gives;
        // the old one kept elsewhere so its inode number is not reused).
        std::fs::rename(d.join("sys/block/zram5"), d.join("old-zram5")).unwrap();
        std::fs::create_dir_all(d.join("sys/block/zram5")).unwrap();
        assert_ne!(zram_incarnation(&sys, 5), Some(ours));
        let line = Action::RemoveZram(5, Some(ours)).to_line().unwrap();
        let a = Action::parse(&line).unwrap();
        let said = a.replay(&sys).unwrap().unwrap();
        assert!(
            said.contains("left zram5 alone") && said.contains("taken again"),
            "{said}"
        );
        assert!(
            d.join("sys/block/zram5").exists(),
            "the other device was touched"
        );
        // A line of an older zmem (number only) is replayed as before, and says so.
        let old = Action::parse("zram\t5").unwrap();
        assert_eq!(old, Action::RemoveZram(5, None));
        assert!(old.done().contains("by number only"));
    }
}
