//! The fixture-tree emulator behind [`Sys`] when its root is not `/`.
//!
//! Writes into a fixture tree follow the kernel's rules for the attributes
//! that have them (`comp_algorithm` selects one of the offered names,
//! `disksize` initialises, `reset` refuses while swapped on or mounted,
//! the attributes `ZRAM_ATTRS` marks `init_only` refuse after initialisation,
//! `hot_add`/`hot_remove` create and remove device directories), and commands
//! (`mount`, `umount`, `mkfs.*`) and swap calls (`mkswap`, `swapon`,
//! `swapoff`, logged as the command line that does the same) are not run but
//! applied to the tree's `proc/swaps` and `proc/mounts`. Every write and command is
//! appended to [`FIXTURE_LOG`] at the tree's top, so tests can compare the
//! exact order.
//!
//! Fault injection: a file `ATTR.fail` beside an attribute makes writes to it
//! fail with the errno named inside (e.g. `EBUSY`); `EINVAL numeric` fails only
//! writes of a number (a kernel without idle ages refuses `idle 3600`).

// A child of `sys`: `Sys` calls this module for writes and commands on a
// fixture tree, and this module reads the tree back through `Sys` (the
// emulator is `Sys`'s other half).

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use super::{Sys, FIXTURE_LOG};
use zmem_kernel::proc::{parse_swaps, unescape_mount};
use zmem_kernel::{
    attr, memparse, parse_comp_algorithm, zram_attr, Errno, Feature, KernelModel, MmStat, ZramAttr,
};

/// Appends to the tree's log: never through a link the tree's owner put
/// there, nor through a directory another user could change.
fn log(sys: &Sys, line: &str) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = sys.root().join(FIXTURE_LOG);
    sys.check_in_tree(&path)?;
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    writeln!(f, "{line}")
}

/// Writes a file of the tree as `fs::write` would, but never through a
/// link (`O_NOFOLLOW`): the emulator's every write (the paths are checked
/// with [`Sys::check_in_tree`] where a call enters the emulator).
fn write_nofollow(p: impl AsRef<Path>, text: impl AsRef<[u8]>) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let p = p.as_ref();
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(p)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
    f.write_all(text.as_ref())
}

fn einval() -> io::Error {
    Errno::EINVAL.to_io()
}

fn ebusy() -> io::Error {
    Errno::EBUSY.to_io()
}

/// The errno an `ATTR.fail` file beside `p` asks for, if it applies to `value`.
fn injected_fault(p: &Path, value: &str) -> Option<io::Error> {
    let name = p.file_name()?.to_string_lossy().into_owned();
    let spec = fs::read_to_string(p.with_file_name(format!("{name}.fail"))).ok()?;
    // `ERRNO` fails every write; `ERRNO numeric` only writes of a number;
    // `ERRNO N` the next N writes (a device busy for a while), then none.
    let mut it = spec.split_whitespace();
    let errno = it.next().unwrap_or("EIO");
    let second = it.next();
    let only_numeric = second == Some("numeric");
    if only_numeric && value.trim_end_matches('\n').parse::<u64>().is_err() {
        return None;
    }
    if let Some(n) = second.and_then(|t| t.parse::<u32>().ok()) {
        let fail = p.with_file_name(format!("{name}.fail"));
        match n {
            0 => return None,
            n => write_nofollow(&fail, format!("{errno} {}", n - 1)).ok()?,
        }
    }
    Some(
        Errno::from_name(errno)
            .map(Errno::to_io)
            .unwrap_or_else(|| io::Error::other(errno.to_string())),
    )
}

/// `Sys::write` on a fixture tree.
pub(crate) fn write(sys: &Sys, abs: &str, value: &str) -> io::Result<()> {
    log(sys, &format!("write {abs} {value}"))?;
    let p = sys.path(abs);
    sys.check_in_tree(&p)?;
    if let Some(e) = injected_fault(&p, value) {
        return Err(e);
    }
    if !p.exists() {
        return Err(Errno::ENOENT.to_io());
    }
    let value_t = value.strip_suffix('\n').unwrap_or(value);
    match zram_dir_of(abs) {
        Some((dev, attr)) => Device {
            sys,
            dev,
            dir: format!("/sys/block/{dev}"),
        }
        .store(attr, &p, value, value_t),
        // sysctls and module parameters read back with a newline.
        None => write_nofollow(p, format!("{value_t}\n")),
    }
}

/// `Sys::hot_add` on a fixture tree: the next free id, its directory copied
/// from `sys/class/zram-control/template/` or filled with a fresh device's files.
pub(crate) fn hot_add(sys: &Sys) -> io::Result<u32> {
    if !sys.exists("/sys/class/zram-control/hot_add") {
        return Err(Errno::ENOENT.to_io());
    }
    let mut id = 0;
    while sys.exists(&format!("/sys/block/zram{id}")) {
        id += 1;
    }
    log(sys, &format!("hot_add zram{id}"))?;
    let dir = sys.path(&format!("/sys/block/zram{id}"));
    sys.check_in_tree(&dir.join(attr::DISKSIZE))?;
    fs::create_dir_all(&dir)?;
    let template = sys.path("/sys/class/zram-control/template");
    if template.is_dir() {
        for e in fs::read_dir(&template)? {
            let e = e?;
            fs::copy(e.path(), dir.join(e.file_name()))?;
        }
        return Ok(id);
    }
    for a in fixture_attrs() {
        write_nofollow(dir.join(a.name), initial(a.name))?;
    }
    Ok(id)
}

/// The files of a new fixture device: the newest modelled kernel's sysfs
/// attributes that every build has (no CONFIG_ZRAM_WRITEBACK or
/// CONFIG_ZRAM_MULTI_COMP ones: a test adds those to its template).
fn fixture_attrs() -> Vec<&'static ZramAttr> {
    KernelModel::newest()
        .sysfs_attrs()
        .filter(|a| a.feature == Feature::Core)
        .collect()
}

/// What a fresh device's attribute reads (write-only ones are empty files).
fn initial(name: &str) -> String {
    match name {
        attr::COMP_ALGORITHM => "[lzo-rle] lzo lz4 \n".into(),
        attr::DISKSIZE | attr::INITSTATE => "0\n".into(),
        attr::MM_STAT => MmStat::default().render(),
        attr::IO_STAT => "       0        0 0        0\n".into(),
        attr::DEBUG_STAT => "version: 1\n0        0\n".into(),
        _ => String::new(),
    }
}

/// `Sys::hot_remove` on a fixture tree: ENODEV if absent, EBUSY if in use.
pub(crate) fn hot_remove(sys: &Sys, id: u32) -> io::Result<()> {
    log(sys, &format!("hot_remove zram{id}"))?;
    if let Some(e) = injected_fault(&sys.path("/sys/class/zram-control/hot_remove"), "") {
        return Err(e);
    }
    let dir = sys.path(&format!("/sys/block/zram{id}"));
    if !dir.exists() {
        return Err(Errno::ENODEV.to_io());
    }
    if sys.device_in_use(&format!("/dev/zram{id}"))? {
        return Err(ebusy());
    }
    fs::remove_dir_all(dir)
}

fn zram_dir_of(abs: &str) -> Option<(&str, &str)> {
    let rest = abs.strip_prefix("/sys/block/")?;
    let (dev, attr) = rest.split_once('/')?;
    dev.starts_with("zram").then_some((dev, attr))
}

/// A zram device directory of a fixture tree.
struct Device<'a> {
    sys: &'a Sys,
    dev: &'a str,
    dir: String,
}

impl Device<'_> {
    fn attr(&self, name: &str) -> String {
        format!("{}/{name}", self.dir)
    }
    fn put(&self, name: &str, text: &str) -> io::Result<()> {
        write_nofollow(self.sys.path(&self.attr(name)), text)
    }
    fn initialised(&self) -> bool {
        self.sys
            .read(&self.attr(attr::INITSTATE))
            .map(|s| s.trim() == "1")
            .unwrap_or(false)
    }
    fn offered(&self) -> io::Result<Vec<String>> {
        Ok(parse_comp_algorithm(&self.sys.read(&self.attr(attr::COMP_ALGORITHM))?).0)
    }

    /// One attribute store, with the kernel's rules where the attribute has them.
    fn store(&self, name: &str, p: &Path, value: &str, value_t: &str) -> io::Result<()> {
        let init_only = zram_attr(name).is_some_and(|a| a.init_only);
        if init_only && self.initialised() {
            return Err(ebusy());
        }
        match name {
            attr::COMP_ALGORITHM => {
                let names = self.offered()?;
                if !names.iter().any(|n| n == value_t) {
                    return Err(einval());
                }
                write_nofollow(p, select_line(&names, value_t))
            }
            attr::RECOMP_ALGORITHM => self.store_recomp_algorithm(p, value_t),
            attr::BACKING_DEV => write_nofollow(p, format!("{value_t}\n")),
            // Write-only in the kernel: nothing to read back.
            attr::ALGORITHM_PARAMS if value_t.split_whitespace().any(|t| !t.contains('=')) => {
                Err(einval())
            }
            attr::ALGORITHM_PARAMS | attr::MEM_USED_MAX => Ok(()),
            attr::DISKSIZE => {
                let (n, used) = memparse(value_t);
                if used == 0 || n == 0 {
                    return Err(einval());
                }
                write_nofollow(p, format!("{}\n", n.div_ceil(4096) * 4096))?;
                self.put(attr::INITSTATE, "1\n")
            }
            attr::MEM_LIMIT => {
                let (n, used) = memparse(value_t);
                if used == 0 {
                    return Err(einval());
                }
                // Write-only: the limit reads back through mm_stat.
                self.set_mm_stat(|m| m.mem_limit = n.div_ceil(4096) * 4096)
            }
            attr::RESET => self.reset(value_t),
            // Write-only triggers; the fixture log records them.
            attr::IDLE | attr::WRITEBACK | attr::RECOMPRESS | attr::COMPACT
                if !self.initialised() =>
            {
                Err(einval())
            }
            attr::IDLE | attr::WRITEBACK | attr::RECOMPRESS | attr::COMPACT => Ok(()),
            _ => write_nofollow(p, value),
        }
    }

    fn store_recomp_algorithm(&self, p: &Path, value_t: &str) -> io::Result<()> {
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
        let names = self.offered()?;
        if !(1..=3).contains(&prio) || !names.contains(&algo) {
            return Err(einval());
        }
        let cur = self
            .sys
            .read(&self.attr(attr::RECOMP_ALGORITHM))
            .unwrap_or_default();
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
        write_nofollow(
            p,
            lines
                .iter()
                .map(|(p, l)| format!("#{p}: {l}\n"))
                .collect::<String>(),
        )
    }

    fn reset(&self, value_t: &str) -> io::Result<()> {
        let n: u16 = value_t.parse().map_err(|_| einval())?;
        if n == 0 {
            return Err(einval());
        }
        if self.sys.device_in_use(&format!("/dev/{}", self.dev))? {
            return Err(ebusy());
        }
        self.put(attr::DISKSIZE, "0\n")?;
        self.put(attr::INITSTATE, "0\n")?;
        let names = self.offered()?;
        let default = self
            .sys
            .read_opt("/sys/class/zram-control/default_comp")?
            .unwrap_or_else(|| names.first().cloned().unwrap_or_default());
        self.put(attr::COMP_ALGORITHM, &select_line(&names, default.trim()))?;
        if self.sys.exists(&self.attr(attr::RECOMP_ALGORITHM)) {
            self.put(attr::RECOMP_ALGORITHM, "")?;
        }
        if self.sys.exists(&self.attr(attr::BACKING_DEV)) {
            self.put(attr::BACKING_DEV, "none\n")?;
        }
        self.put(attr::MM_STAT, &MmStat::default().render())
    }

    /// Change mm_stat's fields (a device without mm_stat is left alone).
    fn set_mm_stat(&self, f: impl FnOnce(&mut MmStat)) -> io::Result<()> {
        let Some(cur) = self.sys.read_opt(&self.attr(attr::MM_STAT))? else {
            return Ok(());
        };
        let Some(mut m) = MmStat::parse(&cur) else {
            return Ok(());
        };
        f(&mut m);
        self.put(attr::MM_STAT, &m.render())
    }
}

fn select_line(names: &[String], sel: &str) -> String {
    let mut s = String::new();
    for n in names {
        if n == sel {
            s.push_str(&format!("[{n}] "));
        } else {
            s.push_str(&format!("{n} "));
        }
    }
    s.push('\n');
    s
}

/// `Sys::run` on a fixture tree: log the command and apply its effect.
pub(crate) fn run(sys: &Sys, argv: &[String]) -> io::Result<()> {
    for f in ["/proc/swaps", "/proc/mounts"] {
        sys.check_in_tree(&sys.path(f))?;
    }
    log(sys, &format!("run {}", argv.join(" ")))?;
    let prog = Path::new(&argv[0])
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    let positional = positional_args(&args);
    let option = |flag: &str| {
        args.iter()
            .position(|a| *a == flag)
            .and_then(|i| args.get(i + 1))
            .copied()
    };
    match prog.as_str() {
        "swapon" => {
            let dev = positional.first().ok_or_else(einval)?;
            swapon(
                sys,
                dev,
                option("-p").and_then(|p| p.parse().ok()).unwrap_or(-2),
            )
        }
        "swapoff" => swapoff(sys, positional.first().ok_or_else(einval)?),
        "mount" => {
            let [dev, dir, ..] = positional.as_slice() else {
                return Err(einval());
            };
            let mut cur = fs::read_to_string(sys.path("/proc/mounts")).unwrap_or_default();
            let fstype = option("-t").unwrap_or("auto");
            cur.push_str(&format!(
                "{dev} {} {fstype} rw 0 0\n",
                dir.replace(' ', "\\040")
            ));
            write_nofollow(sys.path("/proc/mounts"), cur)
        }
        "umount" => umount(sys, positional.first().ok_or_else(einval)?),
        p if p == "mkswap" || p.starts_with("mkfs") || p == "systemd-makefs" => Ok(()),
        _ => Err(io::Error::other(format!(
            "fixture tree cannot emulate `{}`",
            argv.join(" ")
        ))),
    }
}

/// [`Sys::swapon`] on a fixture tree: logged as the `swapon` command that
/// does the same.
pub(crate) fn swapon_call(sys: &Sys, dev: &str, prio: i32, options: &str) -> io::Result<()> {
    let mut argv = vec!["swapon".to_string(), "-p".into(), prio.to_string()];
    if !options.is_empty() {
        argv.push("-o".into());
        argv.push(options.to_string());
    }
    argv.push(dev.to_string());
    run(sys, &argv)
}

/// The arguments that are not options (nor the values of `-p -o -t -L -U`).
fn positional_args<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut v = Vec::new();
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
        } else if matches!(*a, "-p" | "-o" | "-t" | "-L" | "-U") {
            skip = true;
        } else if !a.starts_with('-') {
            v.push(*a);
        }
    }
    v
}

fn swapon(sys: &Sys, dev: &str, prio: i32) -> io::Result<()> {
    let swaps_path = sys.path("/proc/swaps");
    let mut cur = fs::read_to_string(&swaps_path).unwrap_or_default();
    if cur.is_empty() {
        cur = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n".into();
    }
    if parse_swaps(&cur).iter().any(|s| s.device == dev) {
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
    write_nofollow(swaps_path, cur)
}

/// Remove the first line of `path` (after `skip` header lines) that `matches`;
/// false when none did.
fn remove_line(path: &Path, skip: usize, matches: impl Fn(&str) -> bool) -> io::Result<bool> {
    let cur = fs::read_to_string(path).unwrap_or_default();
    let mut out = String::new();
    let mut found = false;
    for (i, l) in cur.lines().enumerate() {
        if !found && i >= skip && matches(l) {
            found = true;
            continue;
        }
        out.push_str(l);
        out.push('\n');
    }
    if found {
        write_nofollow(path, out)?;
    }
    Ok(found)
}

fn swapoff(sys: &Sys, dev: &str) -> io::Result<()> {
    if !remove_line(&sys.path("/proc/swaps"), 1, |l| {
        l.split_whitespace().next() == Some(dev)
    })? {
        return Err(io::Error::other(format!(
            "swapoff: {dev}: swapoff failed: Invalid argument"
        )));
    }
    Ok(())
}

fn umount(sys: &Sys, target: &str) -> io::Result<()> {
    let is_target = |l: &str| {
        let mut it = l.split_whitespace();
        let (d, m) = (
            it.next().unwrap_or(""),
            it.next().map(unescape_mount).unwrap_or_default(),
        );
        d == target || m == target
    };
    if !remove_line(&sys.path("/proc/mounts"), 0, is_target)? {
        return Err(io::Error::other(format!("umount: {target}: not mounted")));
    }
    Ok(())
}
