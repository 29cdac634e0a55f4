//! The sysfs/proc access layer, rooted at a directory.
//!
//! Every zmem ops feature reads and writes the kernel through [`Sys`]. With the
//! root `/` it talks to the running kernel. With any other root it works on a
//! *fixture tree* (the style of zram-generator's `tests/NN-name/` trees): a
//! directory holding `sys/`, `proc/`, `run/`, `etc/`… files. Writes into a
//! fixture tree follow the kernel's rules for the attributes that have them
//! (`comp_algorithm` selects one of the offered names, `disksize` initialises,
//! `reset` refuses while swapped on or mounted, `backing_dev` and the
//! algorithms refuse after initialisation, `hot_add`/`hot_remove` create and
//! remove device directories), and commands (`mkswap`, `swapon`, `swapoff`,
//! `mount`, `umount`) are not run but applied to the tree's `proc/swaps` and
//! `proc/mounts`. Every write and command on a fixture tree is appended to
//! `zmem-fixture.log` at the tree's top, so tests can compare the exact order.
//!
//! Fault injection for fixtures: a file `ATTR.fail` beside an attribute makes
//! writes to it fail with the errno named inside (e.g. `EBUSY`); `EINVAL numeric`
//! fails only writes of a number (a kernel without idle ages refuses `idle 3600`).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the kernel (or a fixture tree) is.
#[derive(Debug, Clone)]
pub struct Sys {
    root: PathBuf,
    fixture: bool,
    state_dir: String,
}

/// File name of the fixture log at the top of a fixture tree.
pub const FIXTURE_LOG: &str = "zmem-fixture.log";

impl Sys {
    /// The running kernel.
    pub fn real() -> Sys {
        Sys {
            root: PathBuf::from("/"),
            fixture: false,
            state_dir: "/run/zmem".into(),
        }
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

    pub fn exists(&self, abs: &str) -> bool {
        self.path(abs).exists()
    }

    /// Read a file, without its trailing newline.
    pub fn read(&self, abs: &str) -> io::Result<String> {
        let s = fs::read_to_string(self.path(abs))?;
        Ok(s.strip_suffix('\n').unwrap_or(&s).to_string())
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
        if !self.fixture {
            return fs::write(self.path(abs), value);
        }
        self.log(&format!("write {abs} {value}"))?;
        let p = self.path(abs);
        let fail = p.with_file_name(format!(
            "{}.fail",
            p.file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        ));
        if let Ok(spec) = fs::read_to_string(&fail) {
            // `ERRNO` fails every write; `ERRNO numeric` only writes of a number.
            let mut it = spec.split_whitespace();
            let errno = it.next().unwrap_or("EIO");
            let only_numeric = it.next() == Some("numeric");
            let value_t = value.trim_end_matches('\n');
            if !only_numeric || value_t.parse::<u64>().is_ok() {
                return Err(errno_error(errno));
            }
        }
        if !p.exists() {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        emulate_write(self, abs, &p, value)
    }

    /// Create a new zram device (`/sys/class/zram-control/hot_add`); its id.
    pub fn hot_add(&self) -> io::Result<u32> {
        if !self.fixture {
            let s = fs::read_to_string(self.path("/sys/class/zram-control/hot_add"))?;
            return s.trim().parse().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("hot_add returned {s:?}"),
                )
            });
        }
        if !self.exists("/sys/class/zram-control/hot_add") {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        let mut id = 0;
        while self.exists(&format!("/sys/block/zram{id}")) {
            id += 1;
        }
        self.log(&format!("hot_add zram{id}"))?;
        let dir = self.path(&format!("/sys/block/zram{id}"));
        fs::create_dir_all(&dir)?;
        let template = self.path("/sys/class/zram-control/template");
        if template.is_dir() {
            for e in fs::read_dir(&template)? {
                let e = e?;
                fs::copy(e.path(), dir.join(e.file_name()))?;
            }
        } else {
            for (name, v) in [
                ("comp_algorithm", "[lzo-rle] lzo lz4 \n"),
                ("disksize", "0\n"),
                ("initstate", "0\n"),
                ("mm_stat", "       0        0        0        0        0        0        0        0        0\n"),
                ("io_stat", "       0        0 0        0\n"),
                ("debug_stat", "version: 1\n0        0\n"),
                ("mem_limit", ""),
                ("mem_used_max", ""),
                ("reset", ""),
                ("idle", ""),
                ("compact", ""),
                ("algorithm_params", ""),
            ] {
                fs::write(dir.join(name), v)?;
            }
        }
        Ok(id)
    }

    /// Remove a zram device (`/sys/class/zram-control/hot_remove`).
    pub fn hot_remove(&self, id: u32) -> io::Result<()> {
        if !self.fixture {
            return fs::write(
                self.path("/sys/class/zram-control/hot_remove"),
                id.to_string(),
            );
        }
        self.log(&format!("hot_remove zram{id}"))?;
        let dir = self.path(&format!("/sys/block/zram{id}"));
        if !dir.exists() {
            return Err(io::Error::from_raw_os_error(libc::ENODEV));
        }
        if device_in_use(self, &format!("/dev/zram{id}"))? {
            return Err(io::Error::from_raw_os_error(libc::EBUSY));
        }
        fs::remove_dir_all(dir)
    }

    /// Run a command (`mkswap`, `swapon`, `swapoff`, `mount`, `umount`, `mkfs.*`).
    /// On a fixture tree the command is logged and its effect applied to the tree.
    pub fn run(&self, argv: &[String]) -> io::Result<()> {
        if argv.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty command"));
        }
        if self.fixture {
            self.log(&format!("run {}", argv.join(" ")))?;
            return emulate_command(self, argv);
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

    fn log(&self, line: &str) -> io::Result<()> {
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.root.join(FIXTURE_LOG))?;
        writeln!(f, "{line}")
    }

    /// `/proc/meminfo` as (key, bytes) for the `kB` lines and plain counts otherwise.
    pub fn meminfo(&self) -> io::Result<Vec<(String, u64)>> {
        let s = self.read("/proc/meminfo")?;
        Ok(s.lines()
            .filter_map(|l| {
                let (k, rest) = l.split_once(':')?;
                let mut it = rest.split_whitespace();
                let n: u64 = it.next()?.parse().ok()?;
                let n = if it.next() == Some("kB") { n * 1024 } else { n };
                Some((k.trim().to_string(), n))
            })
            .collect())
    }

    /// One `/proc/meminfo` value in bytes.
    pub fn meminfo_get(&self, key: &str) -> io::Result<Option<u64>> {
        Ok(self
            .meminfo()?
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v))
    }

    /// `/proc/vmstat` as (key, value).
    pub fn vmstat(&self) -> io::Result<Vec<(String, u64)>> {
        let s = self.read_opt("/proc/vmstat")?.unwrap_or_default();
        Ok(s.lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                Some((it.next()?.to_string(), it.next()?.parse().ok()?))
            })
            .collect())
    }

    /// `/proc/swaps` entries.
    pub fn swaps(&self) -> io::Result<Vec<SwapEntry>> {
        let s = self.read_opt("/proc/swaps")?.unwrap_or_default();
        Ok(parse_swaps(&s))
    }

    /// `/proc/mounts` entries as (device, mount point, fs type).
    pub fn mounts(&self) -> io::Result<Vec<(String, String, String)>> {
        let s = self.read_opt("/proc/mounts")?.unwrap_or_default();
        Ok(s.lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                Some((
                    it.next()?.to_string(),
                    unescape_mount(it.next()?),
                    it.next()?.to_string(),
                ))
            })
            .collect())
    }

    /// A sysctl by dotted name (`vm.swappiness`), from `/proc/sys`.
    pub fn sysctl_path(name: &str) -> String {
        format!("/proc/sys/{}", name.replace('.', "/"))
    }

    pub fn sysctl(&self, name: &str) -> io::Result<Option<String>> {
        self.read_opt(&Self::sysctl_path(name))
    }
}

/// One line of `/proc/swaps` (sizes in bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwapEntry {
    pub device: String,
    pub kind: String,
    pub size: u64,
    pub used: u64,
    pub priority: i32,
}

pub fn parse_swaps(s: &str) -> Vec<SwapEntry> {
    s.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 5 {
                return None;
            }
            Some(SwapEntry {
                device: unescape_mount(f[0]),
                kind: f[1].to_string(),
                size: f[2].parse::<u64>().ok()? * 1024,
                used: f[3].parse::<u64>().ok()? * 1024,
                priority: f[4].parse().ok()?,
            })
        })
        .collect()
}

fn unescape_mount(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// An io::Error for an errno name such as `EBUSY`.
pub fn errno_error(name: &str) -> io::Error {
    let n = match name {
        "EPERM" => libc::EPERM,
        "ENOENT" => libc::ENOENT,
        "EIO" => libc::EIO,
        "E2BIG" => libc::E2BIG,
        "ENOMEM" => libc::ENOMEM,
        "EBUSY" => libc::EBUSY,
        "ENODEV" => libc::ENODEV,
        "EINVAL" => libc::EINVAL,
        "ENOSPC" => libc::ENOSPC,
        "ERANGE" => libc::ERANGE,
        "EAGAIN" => libc::EAGAIN,
        "ENOTBLK" => libc::ENOTBLK,
        "EACCES" => libc::EACCES,
        "EEXIST" => libc::EEXIST,
        "ENOTSUP" | "EOPNOTSUPP" => libc::EOPNOTSUPP,
        _ => return io::Error::other(name.to_string()),
    };
    io::Error::from_raw_os_error(n)
}

/// The errno name of an io::Error (`EBUSY`), or `EIO` when it has none.
pub fn errno_name(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EPERM) => "EPERM",
        Some(libc::ENOENT) => "ENOENT",
        Some(libc::EIO) => "EIO",
        Some(libc::E2BIG) => "E2BIG",
        Some(libc::ENOMEM) => "ENOMEM",
        Some(libc::EBUSY) => "EBUSY",
        Some(libc::ENODEV) => "ENODEV",
        Some(libc::EINVAL) => "EINVAL",
        Some(libc::ENOSPC) => "ENOSPC",
        Some(libc::ERANGE) => "ERANGE",
        Some(libc::EAGAIN) => "EAGAIN",
        Some(libc::ENOTBLK) => "ENOTBLK",
        Some(libc::EACCES) => "EACCES",
        Some(libc::EEXIST) => "EEXIST",
        Some(libc::EOPNOTSUPP) => "EOPNOTSUPP",
        _ => match e.kind() {
            io::ErrorKind::NotFound => "ENOENT",
            io::ErrorKind::PermissionDenied => "EACCES",
            io::ErrorKind::InvalidInput => "EINVAL",
            _ => "EIO",
        },
    }
}

fn einval() -> io::Error {
    io::Error::from_raw_os_error(libc::EINVAL)
}

fn ebusy() -> io::Error {
    io::Error::from_raw_os_error(libc::EBUSY)
}

/// Whether `dev` is swapped on or mounted in the tree.
fn device_in_use(sys: &Sys, dev: &str) -> io::Result<bool> {
    Ok(sys.swaps()?.iter().any(|s| s.device == dev) || sys.mounts()?.iter().any(|m| m.0 == dev))
}

/// The kernel's memparse: integer (0x hex, leading-0 octal) with an optional K/M/G/T/P/E suffix.
pub fn memparse(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, radix, rest) =
        if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            let end = h.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(h.len());
            (&h[..end], 16, &h[end..])
        } else if s.len() > 1 && s.starts_with('0') {
            let end = s
                .find(|c: char| !('0'..='7').contains(&c))
                .unwrap_or(s.len());
            (&s[..end], 8, &s[end..])
        } else {
            let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            (&s[..end], 10, &s[end..])
        };
    if digits.is_empty() {
        return None;
    }
    let n = u64::from_str_radix(digits, radix).ok()?;
    let shift = match rest.chars().next().map(|c| c.to_ascii_uppercase()) {
        Some('K') => 10,
        Some('M') => 20,
        Some('G') => 30,
        Some('T') => 40,
        Some('P') => 50,
        Some('E') => 60,
        _ => 0,
    };
    n.checked_mul(1u64 << shift)
}

fn zram_dir_of(abs: &str) -> Option<(&str, &str)> {
    let rest = abs.strip_prefix("/sys/block/")?;
    let (dev, attr) = rest.split_once('/')?;
    dev.starts_with("zram").then_some((dev, attr))
}

fn emulate_write(sys: &Sys, abs: &str, p: &Path, value: &str) -> io::Result<()> {
    let value_t = value.strip_suffix('\n').unwrap_or(value);
    let Some((dev, attr)) = zram_dir_of(abs) else {
        // sysctls and module parameters read back with a newline.
        return fs::write(p, format!("{value_t}\n"));
    };
    let dir = format!("/sys/block/{dev}");
    let initialised = sys
        .read(&format!("{dir}/initstate"))
        .map(|s| s.trim() == "1")
        .unwrap_or(false);
    match attr {
        "comp_algorithm" => {
            if initialised {
                return Err(ebusy());
            }
            let cur = sys.read(abs)?;
            let names: Vec<&str> = cur
                .split_whitespace()
                .map(|a| a.trim_matches(|c| c == '[' || c == ']'))
                .collect();
            if !names.contains(&value_t) {
                return Err(einval());
            }
            fs::write(p, select_line(&names, value_t))
        }
        "recomp_algorithm" => {
            if initialised {
                return Err(ebusy());
            }
            let mut algo = None;
            let mut prio = 1u32;
            for tok in value_t.split_whitespace() {
                match tok.split_once('=') {
                    Some(("algo", a)) => algo = Some(a.to_string()),
                    Some(("priority", n)) => prio = n.parse().map_err(|_| einval())?,
                    Some(_) => {}
                    None => return Err(einval()),
                }
            }
            let algo = algo.ok_or_else(einval)?;
            if !(1..=3).contains(&prio) {
                return Err(einval());
            }
            let offered = sys.read(&format!("{dir}/comp_algorithm"))?;
            let names: Vec<&str> = offered
                .split_whitespace()
                .map(|a| a.trim_matches(|c| c == '[' || c == ']'))
                .collect();
            if !names.contains(&algo.as_str()) {
                return Err(einval());
            }
            let cur = sys.read(abs).unwrap_or_default();
            let mut lines: Vec<(u32, String)> = cur
                .lines()
                .filter_map(|l| {
                    let (p, rest) = l.strip_prefix('#')?.split_once(':')?;
                    Some((p.trim().parse().ok()?, rest.trim_start().to_string()))
                })
                .filter(|(p, _)| *p != prio)
                .collect();
            lines.push((
                prio,
                select_line(&names, &algo)
                    .trim_end_matches('\n')
                    .to_string(),
            ));
            lines.sort();
            let text: String = lines.iter().map(|(p, l)| format!("#{p}: {l}\n")).collect();
            fs::write(p, text)
        }
        "backing_dev" => {
            if initialised {
                return Err(ebusy());
            }
            fs::write(p, format!("{value_t}\n"))
        }
        "algorithm_params" => {
            if value_t.split_whitespace().any(|t| !t.contains('=')) {
                return Err(einval());
            }
            // Write-only in the kernel: nothing to read back.
            Ok(())
        }
        "disksize" => {
            if initialised {
                return Err(ebusy());
            }
            let n = memparse(value_t).filter(|n| *n > 0).ok_or_else(einval)?;
            let n = n.div_ceil(4096) * 4096;
            fs::write(p, format!("{n}\n"))?;
            fs::write(sys.path(&format!("{dir}/initstate")), "1\n")
        }
        "mem_limit" => {
            let n = memparse(value_t).ok_or_else(einval)?;
            let n = n.div_ceil(4096) * 4096;
            // Write-only: the limit reads back through mm_stat.
            set_mm_stat_field(sys, &dir, 3, n)
        }
        "reset" => {
            let n: u16 = value_t.parse().map_err(|_| einval())?;
            if n == 0 {
                return Err(einval());
            }
            if device_in_use(sys, &format!("/dev/{dev}"))? {
                return Err(ebusy());
            }
            fs::write(sys.path(&format!("{dir}/disksize")), "0\n")?;
            fs::write(sys.path(&format!("{dir}/initstate")), "0\n")?;
            let ca = sys.read(&format!("{dir}/comp_algorithm"))?;
            let names: Vec<&str> = ca
                .split_whitespace()
                .map(|a| a.trim_matches(|c| c == '[' || c == ']'))
                .collect();
            let default = sys
                .read_opt("/sys/class/zram-control/default_comp")?
                .unwrap_or_else(|| names.first().map(|s| s.to_string()).unwrap_or_default());
            fs::write(
                sys.path(&format!("{dir}/comp_algorithm")),
                select_line(&names, default.trim()),
            )?;
            if sys.exists(&format!("{dir}/recomp_algorithm")) {
                fs::write(sys.path(&format!("{dir}/recomp_algorithm")), "")?;
            }
            if sys.exists(&format!("{dir}/backing_dev")) {
                fs::write(sys.path(&format!("{dir}/backing_dev")), "none\n")?;
            }
            fs::write(
                sys.path(&format!("{dir}/mm_stat")),
                "       0        0        0        0        0        0        0        0        0\n",
            )
        }
        "idle" | "writeback" | "recompress" | "compact" => {
            // Write-only triggers; the fixture log records them.
            if !initialised {
                return Err(einval());
            }
            Ok(())
        }
        "mem_used_max" => Ok(()),
        _ => fs::write(p, value),
    }
}

fn select_line(names: &[&str], sel: &str) -> String {
    let mut s = String::new();
    for n in names {
        if *n == sel {
            s.push_str(&format!("[{n}] "));
        } else {
            s.push_str(&format!("{n} "));
        }
    }
    s.push('\n');
    s
}

fn set_mm_stat_field(sys: &Sys, dir: &str, idx: usize, v: u64) -> io::Result<()> {
    let path = format!("{dir}/mm_stat");
    let Some(cur) = sys.read_opt(&path)? else {
        return Ok(());
    };
    let mut f: Vec<String> = cur.split_whitespace().map(str::to_string).collect();
    if f.len() > idx {
        f[idx] = v.to_string();
        let line: String = f.iter().map(|x| format!("{x:>8} ")).collect();
        fs::write(sys.path(&path), format!("{}\n", line.trim_end()))?;
    }
    Ok(())
}

fn emulate_command(sys: &Sys, argv: &[String]) -> io::Result<()> {
    let prog = Path::new(&argv[0])
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    let positional: Vec<&str> = {
        let mut v = Vec::new();
        let mut skip = false;
        for a in &args {
            if skip {
                skip = false;
                continue;
            }
            if matches!(*a, "-p" | "-o" | "-t" | "-L" | "-U") {
                skip = true;
                continue;
            }
            if a.starts_with('-') {
                continue;
            }
            v.push(*a);
        }
        v
    };
    let swaps_path = sys.path("/proc/swaps");
    let mounts_path = sys.path("/proc/mounts");
    match prog.as_str() {
        "swapon" => {
            let dev = positional.first().ok_or_else(einval)?;
            let prio: i32 = args
                .iter()
                .position(|a| *a == "-p")
                .and_then(|i| args.get(i + 1))
                .and_then(|p| p.parse().ok())
                .unwrap_or(-2);
            let mut cur = fs::read_to_string(&swaps_path).unwrap_or_default();
            if cur.is_empty() {
                cur = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n".into();
            }
            if parse_swaps(&cur).iter().any(|s| s.device == *dev) {
                return Err(io::Error::other(format!(
                    "swapon: {dev}: swapon failed: Device or resource busy"
                )));
            }
            let size = dev
                .strip_prefix("/dev/")
                .and_then(|n| sys.read(&format!("/sys/block/{n}/disksize")).ok())
                .and_then(|s| s.trim().parse::<u64>().ok())
                .unwrap_or(0);
            cur.push_str(&format!(
                "{dev}                               partition\t{}\t\t0\t\t{prio}\n",
                size / 1024
            ));
            fs::write(swaps_path, cur)
        }
        "swapoff" => {
            let dev = positional.first().ok_or_else(einval)?;
            let cur = fs::read_to_string(&swaps_path).unwrap_or_default();
            let mut out = String::new();
            let mut found = false;
            for (i, l) in cur.lines().enumerate() {
                if i > 0 && l.split_whitespace().next() == Some(dev) {
                    found = true;
                    continue;
                }
                out.push_str(l);
                out.push('\n');
            }
            if !found {
                return Err(io::Error::other(format!(
                    "swapoff: {dev}: swapoff failed: Invalid argument"
                )));
            }
            fs::write(swaps_path, out)
        }
        "mount" => {
            let (dev, dir) = match positional.as_slice() {
                [d, m, ..] => (*d, *m),
                _ => return Err(einval()),
            };
            let fstype = args
                .iter()
                .position(|a| *a == "-t")
                .and_then(|i| args.get(i + 1))
                .copied()
                .unwrap_or("auto");
            let mut cur = fs::read_to_string(&mounts_path).unwrap_or_default();
            cur.push_str(&format!(
                "{dev} {} {fstype} rw 0 0\n",
                dir.replace(' ', "\\040")
            ));
            fs::write(mounts_path, cur)
        }
        "umount" => {
            let target = positional.first().ok_or_else(einval)?;
            let cur = fs::read_to_string(&mounts_path).unwrap_or_default();
            let mut out = String::new();
            let mut found = false;
            for l in cur.lines() {
                let mut it = l.split_whitespace();
                let (d, m) = (
                    it.next().unwrap_or(""),
                    it.next().map(unescape_mount).unwrap_or_default(),
                );
                if !found && (d == *target || m == *target) {
                    found = true;
                    continue;
                }
                out.push_str(l);
                out.push('\n');
            }
            if !found {
                return Err(io::Error::other(format!("umount: {target}: not mounted")));
            }
            fs::write(mounts_path, out)
        }
        p if p == "mkswap" || p.starts_with("mkfs") || p == "systemd-makefs" => Ok(()),
        _ => Err(io::Error::other(format!(
            "fixture tree cannot emulate `{}`",
            argv.join(" ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memparse_follows_the_kernel() {
        assert_eq!(memparse("4096"), Some(4096));
        assert_eq!(memparse("1G"), Some(1 << 30));
        assert_eq!(memparse("512m"), Some(512 << 20));
        assert_eq!(memparse("0x10"), Some(16));
        assert_eq!(memparse("010"), Some(8));
        assert_eq!(memparse("0"), Some(0));
        assert_eq!(memparse("x"), None);
        assert_eq!(memparse(""), None);
    }

    #[test]
    fn swaps_parse() {
        let s = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/zram0                              partition\t4194300\t\t1024\t\t100\n";
        let v = parse_swaps(s);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].device, "/dev/zram0");
        assert_eq!(v[0].size, 4194300 * 1024);
        assert_eq!(v[0].used, 1024 * 1024);
        assert_eq!(v[0].priority, 100);
    }
}
