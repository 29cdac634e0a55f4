//! The sysfs/proc access layer, rooted at a directory.
//!
//! Every zmem ops feature and every trial reads and writes the kernel through
//! [`Sys`]. With the root `/` it talks to the running kernel. With any other
//! root it works on a *fixture tree* (the style of zram-generator's
//! `tests/NN-name/` trees): a directory holding `sys/`, `proc/`, `run/`,
//! `etc/`… files, where writes and commands are emulated by
//! `fixture` (a child module) and logged to [`FIXTURE_LOG`].

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

mod fixture;
use zmem_kernel::proc::{self, SwapEntry};

/// File name of the fixture log at the top of a fixture tree.
pub const FIXTURE_LOG: &str = "zmem-fixture.log";

/// The most a fixture tree's file may hold (the kernel's sysfs files are one page; /proc files
/// a few KiB).
pub const FIXTURE_READ_MAX: u64 = 1 << 20;

/// The most one read of the running machine takes (a /proc/mounts of thousands of mounts is a
/// few hundred KiB): a config file that is a link to /dev/zero or a huge file is refused at this
/// size instead of read without end.
pub const MACHINE_READ_MAX: u64 = 16 << 20;

/// Where the kernel (or a fixture tree) is.
#[derive(Debug, Clone)]
pub struct Sys {
    root: PathBuf,
    fixture: bool,
    state_dir: String,
}

impl Sys {
    /// The running kernel.
    pub fn real() -> Sys {
        Sys::new("/")
    }

    /// Rooted at `root`: `/` is the running kernel, anything else a fixture tree.
    pub fn new(root: impl Into<PathBuf>) -> Sys {
        let root = root.into();
        let fixture = root != Path::new("/");
        Sys {
            root,
            fixture,
            state_dir: "/run/zmem".into(),
        }
    }

    /// Whether this is a fixture tree (commands are emulated, not run).
    pub fn is_fixture(&self) -> bool {
        self.fixture
    }

    /// Where zmem keeps its own state (apply's undo list, policy state), as a kernel-style
    /// absolute path inside the root: `/run/zmem` unless changed.
    pub fn state_dir(&self) -> &str {
        &self.state_dir
    }

    /// Keep zmem's state somewhere else (tests on the real kernel use a private directory).
    pub fn with_state_dir(mut self, dir: &str) -> Sys {
        self.state_dir = dir.to_string();
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The real path of an absolute kernel path such as `/sys/block/zram0/mm_stat`.
    pub fn path(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    /// On a fixture tree (`--root TREE`), that `path` (a real path in the
    /// tree) is reached through no symbolic link and no directory another
    /// user could change (`zmem_files::trusted_in_tree`): the tree's owner
    /// never steers a write out of it. Nothing to check on `/`.
    pub fn check_in_tree(&self, path: &Path) -> io::Result<()> {
        if self.fixture {
            zmem_files::trusted_in_tree(&self.root, path)?;
        }
        Ok(())
    }

    pub fn exists(&self, abs: &str) -> bool {
        self.path(abs).exists()
    }

    /// Read a file, without its trailing newline. Only a regular file is read (a FIFO or a
    /// device is refused without blocking on it), at most [`MACHINE_READ_MAX`] bytes
    /// ([`FIXTURE_READ_MAX`] in a fixture tree, whose links are followed only inside it); text
    /// that is not UTF-8 is an error naming the file.
    pub fn read(&self, abs: &str) -> io::Result<String> {
        let bytes = self.read_bytes(abs)?;
        let s = String::from_utf8(bytes).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not UTF-8 text", self.path(abs).display()),
            )
        })?;
        Ok(s.strip_suffix('\n').unwrap_or(&s).to_string())
    }

    /// A file's bytes, bounded and only from a regular file (see [`Sys::read`]).
    pub fn read_bytes(&self, abs: &str) -> io::Result<Vec<u8>> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.path(abs);
        let refuse = |why: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {why}", path.display()),
            )
        };
        let (open, flags, max) = if self.fixture {
            let real = fs::canonicalize(&path)?;
            let root = fs::canonicalize(&self.root)?;
            if !real.starts_with(&root) {
                return Err(refuse(&format!(
                    "leads out of the tree {} (to {})",
                    root.display(),
                    real.display()
                )));
            }
            (real, libc::O_NONBLOCK | libc::O_NOFOLLOW, FIXTURE_READ_MAX)
        } else {
            (path.clone(), libc::O_NONBLOCK, MACHINE_READ_MAX)
        };
        let f = fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags)
            .open(&open)?;
        if !f.metadata()?.is_file() {
            return Err(refuse("not a regular file"));
        }
        let mut v = Vec::new();
        f.take(max + 1).read_to_end(&mut v)?;
        if v.len() as u64 > max {
            return Err(refuse(&format!("larger than {max} bytes")));
        }
        Ok(v)
    }

    /// Read a file if it exists; `None` when it does not (a missing kernel feature).
    pub fn read_opt(&self, abs: &str) -> io::Result<Option<String>> {
        match self.read(abs) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Names in a directory, sorted; empty when the directory does not exist.
    pub fn list(&self, abs: &str) -> io::Result<Vec<String>> {
        let mut v = Vec::new();
        match fs::read_dir(self.path(abs)) {
            Ok(rd) => {
                for e in rd {
                    v.push(e?.file_name().to_string_lossy().into_owned());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        v.sort();
        Ok(v)
    }

    /// Write an attribute. The kernel's errno comes back as the io::Error.
    pub fn write(&self, abs: &str, value: &str) -> io::Result<()> {
        if self.fixture {
            return fixture::write(self, abs, value);
        }
        fs::write(self.path(abs), value)
    }

    /// Write a whole file (a configuration under /etc, state under /run),
    /// making its directory first: written to a temporary file beside it,
    /// fsynced and renamed over it, so the file is the old one or the new one,
    /// never a part. Files are not kernel attributes: a fixture tree gets the
    /// file and no log line.
    pub fn write_file(&self, abs: &str, contents: &str) -> io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let p = self.path(abs);
        self.check_in_tree(&p)?;
        if let Some(d) = p.parent() {
            fs::create_dir_all(d)?;
        }
        let mut name = p.file_name().unwrap_or_default().to_os_string();
        name.push(".zmem-tmp");
        let tmp = p.with_file_name(name);
        // Never through a link (`O_NOFOLLOW`), and new: a leftover one is ours to replace.
        let _ = fs::remove_file(&tmp);
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)?;
        f.write_all(contents.as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, &p)
    }

    /// Make a directory, e.g. a new cgroup (`mkdir /sys/fs/cgroup/NAME`: the
    /// kernel fills it with the controller files, see
    /// Documentation/admin-guide/cgroup-v2.rst). Fails if it exists. On a
    /// fixture tree the directory is made in the tree and nothing is filled in.
    pub fn create_dir(&self, abs: &str) -> io::Result<()> {
        fs::create_dir(self.path(abs))
    }

    /// Remove an empty directory, e.g. a cgroup without processes (`rmdir`;
    /// the kernel refuses with EBUSY while processes are left in it).
    pub fn remove_dir(&self, abs: &str) -> io::Result<()> {
        fs::remove_dir(self.path(abs))
    }

    /// Create a new zram device (`/sys/class/zram-control/hot_add`); its id.
    pub fn hot_add(&self) -> io::Result<u32> {
        if self.fixture {
            return fixture::hot_add(self);
        }
        let s = fs::read_to_string(self.path("/sys/class/zram-control/hot_add"))?;
        s.trim().parse().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("hot_add returned {s:?}"),
            )
        })
    }

    /// Remove a zram device (`/sys/class/zram-control/hot_remove`).
    pub fn hot_remove(&self, id: u32) -> io::Result<()> {
        if self.fixture {
            return fixture::hot_remove(self, id);
        }
        fs::write(
            self.path("/sys/class/zram-control/hot_remove"),
            id.to_string(),
        )
    }

    /// Activate the swap area at `abs` (swapon(2), with `swapon -o` `options`).
    /// On a fixture tree it is logged as the `swapon` command line and added
    /// to the tree's `proc/swaps`.
    pub fn swapon(&self, abs: &str, priority: i32, options: &str) -> io::Result<()> {
        if self.fixture {
            return fixture::swapon_call(self, abs, priority, options);
        }
        crate::swap::swapon_with(&self.path(abs), priority, options)
    }

    /// Deactivate the swap area at `abs` (swapoff(2)); on a fixture tree,
    /// logged as `swapoff ABS` and removed from `proc/swaps`.
    pub fn swapoff(&self, abs: &str) -> io::Result<()> {
        if self.fixture {
            return fixture::run(self, &["swapoff".into(), abs.to_string()]);
        }
        crate::swap::swapoff(&self.path(abs))
    }

    /// Write a swap signature over the device or file at `abs`; on a fixture
    /// tree, logged as `mkswap ABS`.
    pub fn mkswap(&self, abs: &str) -> io::Result<()> {
        if self.fixture {
            return fixture::run(self, &["mkswap".into(), abs.to_string()]);
        }
        crate::swap::mkswap(&self.path(abs))
    }

    /// Run a command (`mount`, `umount`, `mkfs.*`; `mkswap`, `swapon` and
    /// `swapoff` lines of an older undo list).
    /// On a fixture tree the command is logged and its effect applied to the tree.
    pub fn run(&self, argv: &[String]) -> io::Result<()> {
        if argv.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty command"));
        }
        if self.fixture {
            return fixture::run(self, argv);
        }
        let out = Command::new(&argv[0]).args(&argv[1..]).output()?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(io::Error::other(format!(
                "`{}` failed ({}): {}",
                argv.join(" "),
                out.status,
                err.trim()
            )));
        }
        Ok(())
    }

    /// `/proc/meminfo` as (key, bytes) for the `kB` lines and plain counts otherwise.
    pub fn meminfo(&self) -> io::Result<Vec<(String, u64)>> {
        Ok(proc::parse_meminfo(&self.read("/proc/meminfo")?))
    }

    /// One `/proc/meminfo` value in bytes.
    pub fn meminfo_get(&self, key: &str) -> io::Result<Option<u64>> {
        Ok(proc::meminfo_value(&self.read("/proc/meminfo")?, key))
    }

    /// `/proc/vmstat` as (key, value).
    pub fn vmstat(&self) -> io::Result<Vec<(String, u64)>> {
        Ok(proc::parse_vmstat(
            &self.read_opt("/proc/vmstat")?.unwrap_or_default(),
        ))
    }

    /// `/proc/swaps` entries, never failing on a name: bytes that are not UTF-8 are kept as `\xNN`
    /// (the kernel escapes space, tab, newline and backslash itself, as octal).
    pub fn swaps(&self) -> io::Result<Vec<SwapEntry>> {
        let bytes = match self.read_bytes("/proc/swaps") {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        Ok(proc::parse_swaps(&proc::escape_invalid_utf8(&bytes)))
    }

    /// `/proc/mounts` entries as (device, mount point, fs type).
    pub fn mounts(&self) -> io::Result<Vec<(String, String, String)>> {
        Ok(proc::parse_mounts(
            &self.read_opt("/proc/mounts")?.unwrap_or_default(),
        ))
    }

    /// Whether `dev` (`/dev/zram0`) is swapped on or mounted.
    pub fn device_in_use(&self, dev: &str) -> io::Result<bool> {
        Ok(self.swaps()?.iter().any(|s| s.device == dev)
            || self.mounts()?.iter().any(|m| m.0 == dev))
    }

    /// A sysctl by dotted name (`vm.swappiness`), from `/proc/sys`.
    pub fn sysctl_path(name: &str) -> String {
        format!("/proc/sys/{}", name.replace('.', "/"))
    }

    pub fn sysctl(&self, name: &str) -> io::Result<Option<String>> {
        self.read_opt(&Self::sysctl_path(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmem_files::testutil::ScratchDir;

    /// `zmem doctor` on the running machine read /etc/systemd/zram-generator.conf: a FIFO there
    /// blocked it for ever, a link to /dev/zero or a huge file was read without end.
    #[test]
    fn a_fifo_a_device_or_a_huge_file_is_refused_at_once() {
        let d = ScratchDir::new("sys-read-bounds");
        let sys = Sys::real();
        let abs = |name: &str| d.path().join(name).to_str().unwrap().to_string();
        let fifo = abs("fifo");
        assert!(Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let e = sys.read(&fifo).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        std::os::unix::fs::symlink("/dev/zero", d.path().join("zero")).unwrap();
        let e = sys.read(&abs("zero")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let big = fs::File::create(d.path().join("big")).unwrap();
        big.set_len(MACHINE_READ_MAX + 1).unwrap();
        let e = sys.read(&abs("big")).unwrap_err();
        assert!(e.to_string().contains("larger than"), "{e}");
        fs::write(d.path().join("text"), b"ok\n").unwrap();
        assert_eq!(sys.read(&abs("text")).unwrap(), "ok");
        fs::write(d.path().join("bytes"), b"\xff\n").unwrap();
        let e = sys.read(&abs("bytes")).unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }

    #[test]
    fn swaps_with_a_name_that_is_not_utf8_are_read() {
        let d = ScratchDir::new("sys-swaps-bytes");
        fs::create_dir_all(d.path().join("proc")).unwrap();
        fs::write(
            d.path().join("proc/swaps"),
            b"Filename Type Size Used Priority\n/var/tmp/s\xffw\\012ap file 1024 0 -2\n",
        )
        .unwrap();
        let s = Sys::new(d.path()).swaps().unwrap();
        assert_eq!(s[0].device, r"/var/tmp/s\xffw\012ap");
    }
}
