//! Capture a corpus from real memory: the anonymous private writable mappings
//! of processes (through /proc/PID/maps, /proc/PID/pagemap and /proc/PID/mem),
//! or the pages of a zram device.
//!
//! Only resident or swapped pages are taken (pagemap bits 63 and 62): pages a
//! process never touched are not memory the kernel would ever swap, and reading
//! them would only add zero pages. Regions that cannot be read are skipped and
//! listed in the sidecar. With a size limit, whole 64 KiB blocks are sampled
//! evenly over everything that could be taken, deterministically.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use zmem_codec::PAGE_SIZE;
use zmem_kernel::attr;

use crate::sidecar::{self, Region, Sidecar, Skipped};
use crate::user;

const PAGE: u64 = PAGE_SIZE as u64;
/// Sampling unit: 16 pages (64 KiB), so neighbouring pages stay together.
const BLOCK_PAGES: u64 = 16;
/// Pages read per `pread`.
const READ_PAGES: u64 = 256;

/// One line of /proc/PID/maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub perms: String,
    pub inode: u64,
    pub name: String,
}

impl Mapping {
    /// Anonymous, private and writable: the memory that goes to swap.
    pub fn is_anon_private_writable(&self) -> bool {
        let p = self.perms.as_bytes();
        let anon_name = self.name.is_empty()
            || self.name == "[heap]"
            || self.name.starts_with("[stack")
            || self.name.starts_with("[anon:");
        p.len() >= 4 && p[0] == b'r' && p[1] == b'w' && p[3] == b'p' && self.inode == 0 && anon_name
    }
}

/// Parse /proc/PID/maps. Lines that do not parse are ignored.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.splitn(6, char::is_whitespace);
            let range = f.next()?;
            let perms = f.next()?.to_string();
            let _offset = f.next()?;
            let _dev = f.next()?;
            let inode: u64 = f.next()?.parse().ok()?;
            let name = f.next().unwrap_or("").trim().to_string();
            let (a, b) = range.split_once('-')?;
            let start = u64::from_str_radix(a, 16).ok()?;
            let end = u64::from_str_radix(b, 16).ok()?;
            (end > start).then_some(Mapping {
                start,
                end,
                perms,
                inode,
                name,
            })
        })
        .collect()
}

/// A run of pages to read: `pages` pages from page number `first` of a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    /// Index of the source (process region or device) this run belongs to.
    src: usize,
    first: u64,
    pages: u64,
}

/// Keep at most `max_pages` pages out of `runs`, taking whole blocks of
/// `BLOCK_PAGES` spread evenly (Bresenham) over all blocks. Deterministic.
fn sample(runs: &[Run], max_pages: Option<u64>) -> Vec<Run> {
    let total: u64 = runs.iter().map(|r| r.pages).sum();
    let Some(max) = max_pages.filter(|&m| m < total) else {
        return runs.to_vec();
    };
    // Take a block whenever the pages taken fall behind the proportional quota
    // of the pages seen so far: even spread, never more than `max`.
    let mut out: Vec<Run> = Vec::new();
    let mut seen = 0u64;
    let mut taken = 0u64;
    for r in runs {
        let mut off = 0;
        while off < r.pages {
            let n = BLOCK_PAGES.min(r.pages - off);
            seen += n;
            let quota = (seen as u128 * max as u128 / total as u128) as u64;
            if taken < quota {
                let n = n.min(max - taken);
                let first = r.first + off;
                match out.last_mut() {
                    Some(last) if last.src == r.src && last.first + last.pages == first => {
                        last.pages += n
                    }
                    _ => out.push(Run {
                        src: r.src,
                        first,
                        pages: n,
                    }),
                }
                taken += n;
            }
            off += BLOCK_PAGES.min(r.pages - off);
        }
    }
    out
}

/// Split `[first, first+pages)` into runs of pages whose pagemap entry says
/// present or swapped. Returns the runs and the count of pages left out.
fn resident_runs(
    pagemap: &File,
    src: usize,
    first: u64,
    pages: u64,
) -> io::Result<(Vec<Run>, u64)> {
    let mut runs: Vec<Run> = Vec::new();
    let mut absent = 0u64;
    let mut buf = vec![0u8; 8 * 4096];
    let mut done = 0u64;
    while done < pages {
        let n = (pages - done).min(4096);
        let b = &mut buf[..(n * 8) as usize];
        pagemap.read_exact_at(b, (first + done) * 8)?;
        for (i, e) in b.chunks_exact(8).enumerate() {
            let v = u64::from_le_bytes(e.try_into().unwrap());
            let pn = first + done + i as u64;
            if v & (3 << 62) != 0 {
                match runs.last_mut() {
                    Some(last) if last.first + last.pages == pn => last.pages += 1,
                    _ => runs.push(Run {
                        src,
                        first: pn,
                        pages: 1,
                    }),
                }
            } else {
                absent += 1;
            }
        }
        done += n;
    }
    Ok((runs, absent))
}

/// The command name of a process, or `?`.
pub fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Why a process's memory could not be opened, as a sentence. Under root a
/// refusal is not a missing privilege: it names what refused (Yama's
/// ptrace_scope 3, kernel lockdown, or another user namespace).
fn open_error(pid: u32, what: &str, e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => format!("no process with PID {pid} (/proc/{pid} does not exist)"),
        io::ErrorKind::PermissionDenied if zmem_files::euid_is_root() => format!(
            "cannot read {what} of PID {pid} ({}): permission denied although zmem runs as root; {}",
            comm(pid),
            root_refusal_reason()
        ),
        io::ErrorKind::PermissionDenied => format!(
            "cannot read {what} of PID {pid} ({}): permission denied; {}",
            comm(pid),
            user_refusal_reason()
        ),
        _ => format!("cannot read {what} of PID {pid} ({}): {e}", comm(pid)),
    }
}

/// What stops root from reading another process's memory on this machine.
fn root_refusal_reason() -> String {
    let yama = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").unwrap_or_default();
    if yama.trim() == "3" {
        return "kernel.yama.ptrace_scope is 3 (no process may read another's memory)".into();
    }
    let lockdown = std::fs::read_to_string("/sys/kernel/security/lockdown").unwrap_or_default();
    if let Some(mode) = lockdown
        .split_whitespace()
        .find(|w| w.starts_with('[') && *w != "[none]")
    {
        return format!("the kernel is in lockdown mode {mode}");
    }
    "the process may belong to another user namespace or be protected by an LSM (SELinux, AppArmor)"
        .into()
}

/// What stops a user from reading another process's memory: Yama's
/// ptrace_scope 1 and 2 refuse even the process's owner (a non-dumpable
/// process too, which the caller cannot tell apart).
fn user_refusal_reason() -> String {
    let yama = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").unwrap_or_default();
    match yama.trim() {
        "1" => "kernel.yama.ptrace_scope is 1: only a process's ancestors may read its memory; run as root".into(),
        s @ ("2" | "3") => format!("kernel.yama.ptrace_scope is {s}: only root may read another process's memory"),
        _ => "run as root or as the process's owner (a process that made itself non-dumpable is closed to its owner too)".into(),
    }
}

/// Whether `pid` is a kernel thread (PF_KTHREAD in /proc/PID/stat's flags,
/// include/linux/sched.h): it has no user memory to capture.
fn is_kernel_thread(pid: u32) -> bool {
    const PF_KTHREAD: u64 = 0x0020_0000;
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    rest.split_whitespace()
        .nth(6)
        .and_then(|f| f.parse::<u64>().ok())
        .is_some_and(|flags| flags & PF_KTHREAD != 0)
}

/// Whether `pid` is gone (exited since /proc was listed).
fn has_exited(pid: u32, e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
        || e.raw_os_error() == Some(libc::ESRCH)
        || !Path::new(&format!("/proc/{pid}")).exists()
}

struct ProcSource {
    pid: u32,
    mem: File,
    region: Region,
}

/// A process whose memory can be read: its /proc/PID/mem, its pagemap when
/// readable, and the mappings that go to swap.
struct OpenProcess {
    mem: File,
    pagemap: Option<File>,
    regions: Vec<Mapping>,
}

/// Open `pid` for capture. A process that cannot be read, or has nothing
/// that goes to swap, is an error with `strict`, else listed in `sc.skipped`
/// and None.
fn open_process(pid: u32, strict: bool, sc: &mut Sidecar) -> Result<Option<OpenProcess>> {
    if !strict && is_kernel_thread(pid) {
        sc.kernel_threads_skipped += 1;
        return Ok(None);
    }
    let mut skip = |what: String, reason: String| -> Result<Option<OpenProcess>> {
        if strict {
            bail!(reason);
        }
        sc.skipped.push(Skipped { what, reason });
        Ok(None)
    };
    let maps = match std::fs::read_to_string(format!("/proc/{pid}/maps")) {
        Ok(m) => m,
        Err(e) if !strict && has_exited(pid, &e) => {
            sc.exited_skipped += 1;
            return Ok(None);
        }
        Err(e) => return skip(format!("pid {pid}"), open_error(pid, "the memory map", &e)),
    };
    let mem = match File::open(format!("/proc/{pid}/mem")) {
        Ok(f) => f,
        Err(e) if !strict && has_exited(pid, &e) => {
            sc.exited_skipped += 1;
            return Ok(None);
        }
        Err(e) => {
            let msg = open_error(pid, "the memory", &e);
            return skip(format!("pid {pid} ({})", comm(pid)), msg);
        }
    };
    let pagemap = File::open(format!("/proc/{pid}/pagemap")).ok();
    let regions: Vec<Mapping> = parse_maps(&maps)
        .into_iter()
        .filter(Mapping::is_anon_private_writable)
        .collect();
    if regions.is_empty() {
        if maps.is_empty() && !strict {
            // The mm went away between the listing and now: exited.
            sc.exited_skipped += 1;
            return Ok(None);
        }
        let why = if maps.is_empty() {
            "no memory map (kernel thread or exited)"
        } else {
            "no anonymous private writable mappings"
        };
        if strict {
            bail!("PID {pid} ({}) has {why}", comm(pid));
        }
        return skip(format!("pid {pid} ({})", comm(pid)), why.into());
    }
    Ok(Some(OpenProcess {
        mem,
        pagemap,
        regions,
    }))
}

/// Add the regions of an opened process: one source each, and its resident
/// runs (the whole region when the pagemap cannot be read).
fn add_regions(
    pid: u32,
    p: OpenProcess,
    sources: &mut Vec<ProcSource>,
    runs: &mut Vec<Run>,
) -> Result<()> {
    for m in p.regions {
        let src = sources.len();
        let (first, pages) = (m.start / PAGE, (m.end - m.start) / PAGE);
        let (mut rr, absent) = match &p.pagemap {
            Some(pm) => match resident_runs(pm, src, first, pages) {
                Ok(x) => x,
                Err(_) => (vec![Run { src, first, pages }], 0),
            },
            None => (vec![Run { src, first, pages }], 0),
        };
        runs.append(&mut rr);
        let mem = p
            .mem
            .try_clone()
            .context("duplicating /proc/PID/mem handle")?;
        sources.push(ProcSource {
            pid,
            mem,
            region: Region {
                pid,
                range: format!("{:x}-{:x}", m.start, m.end),
                name: m.name.clone(),
                pages: 0,
                not_resident: absent,
            },
        });
    }
    Ok(())
}

/// The error when no process could be opened, listing why each was skipped.
fn nothing_to_capture(sc: &Sidecar) -> anyhow::Error {
    let why: Vec<String> = sc
        .skipped
        .iter()
        .map(|s| format!("{}: {}", s.what, s.reason))
        .collect();
    anyhow::anyhow!(
        "nothing to capture: {}",
        if why.is_empty() {
            "no processes given".into()
        } else {
            why.join("; ")
        }
    )
}

/// Copy the chosen runs from process memory to `out`, counting pages in the
/// sidecar and the regions. A block that fails to read is retried page by
/// page; returns the (source, pages) that could not be read.
fn copy_runs(
    chosen: &[Run],
    sources: &mut [ProcSource],
    out: &mut dyn Write,
    sc: &mut Sidecar,
) -> Result<Vec<(usize, u64)>> {
    let mut buf = vec![0u8; (READ_PAGES * PAGE) as usize];
    let mut unreadable: Vec<(usize, u64)> = Vec::new();
    let mut keep = |s: &mut ProcSource, b: &[u8], n: u64| -> Result<()> {
        out.write_all(b).context("writing the corpus")?;
        s.region.pages += n;
        sc.pages += n;
        sc.same_filled_pages += sidecar::count_same_filled(b);
        Ok(())
    };
    for r in chosen {
        let s = &mut sources[r.src];
        let mut off = 0;
        while off < r.pages {
            let n = READ_PAGES.min(r.pages - off);
            let b = &mut buf[..(n * PAGE) as usize];
            let addr = (r.first + off) * PAGE;
            if s.mem.read_exact_at(b, addr).is_ok() {
                keep(s, b, n)?;
            } else {
                // Retry page by page; keep what can be read.
                for i in 0..n {
                    let p = &mut b[..PAGE_SIZE];
                    if s.mem.read_exact_at(p, addr + i * PAGE).is_ok() {
                        keep(s, p, 1)?;
                    } else {
                        unreadable.push((r.src, 1));
                    }
                }
            }
            off += n;
        }
    }
    Ok(unreadable)
}

/// List unreadable pages in `sc.skipped`, one entry per region with the count.
fn note_unreadable(sc: &mut Sidecar, sources: &[ProcSource], unreadable: Vec<(usize, u64)>) {
    for (src, n) in unreadable {
        let s = &sources[src];
        match sc
            .skipped
            .iter_mut()
            .find(|k| k.what == format!("pid {} region {}", s.pid, s.region.range))
        {
            Some(k) => {
                let c: u64 = k
                    .reason
                    .split_whitespace()
                    .next()
                    .and_then(|x| x.parse().ok())
                    .unwrap_or(0);
                k.reason = format!(
                    "{} unreadable pages (I/O error reading /proc/PID/mem)",
                    c + n
                );
            }
            None => sc.skipped.push(Skipped {
                what: format!("pid {} region {}", s.pid, s.region.range),
                reason: format!("{n} unreadable pages (I/O error reading /proc/PID/mem)"),
            }),
        }
    }
}

/// Capture processes. With `strict`, a PID that does not exist or cannot be
/// read is an error (explicit `--pid`); otherwise it is skipped and listed.
fn capture_procs(
    pids: &[u32],
    strict: bool,
    max_bytes: Option<u64>,
    out: &mut dyn Write,
    source: &str,
) -> Result<Sidecar> {
    let mut sc = Sidecar {
        source: source.into(),
        created_unix: sidecar::now_unix(),
        ..Default::default()
    };
    let mut sources: Vec<ProcSource> = Vec::new();
    let mut runs: Vec<Run> = Vec::new();
    for &pid in pids {
        let Some(p) = open_process(pid, strict, &mut sc)? else {
            continue;
        };
        sc.pids.push(pid);
        sc.commands.push(comm(pid));
        if p.pagemap.is_none() {
            sc.notes.push(format!(
                "pid {pid}: pagemap unreadable, untouched pages included (as zero pages)"
            ));
        }
        add_regions(pid, p, &mut sources, &mut runs)?;
    }
    if sources.is_empty() {
        return Err(nothing_to_capture(&sc));
    }
    let total: u64 = runs.iter().map(|r| r.pages).sum();
    sc.resident_pages = Some(total);
    sc.resident_pages = Some(total);
    let chosen = sample(&runs, max_bytes.map(|b| b / PAGE));
    let chosen_pages: u64 = chosen.iter().map(|r| r.pages).sum();
    if chosen_pages < total {
        sc.notes.push(format!(
            "sampled {chosen_pages} of {total} resident pages in evenly spread 64 KiB blocks (--max)"
        ));
    }
    let unreadable = copy_runs(&chosen, &mut sources, out, &mut sc)?;
    note_unreadable(&mut sc, &sources, unreadable);
    sc.regions = sources.into_iter().map(|s| s.region).collect();
    if sc.pages == 0 {
        bail!("nothing captured: the selected processes have no readable resident anonymous pages");
    }
    Ok(sc)
}

/// Capture the given processes (each must exist and be readable).
pub fn capture_pids(pids: &[u32], max_bytes: Option<u64>, out: &mut dyn Write) -> Result<Sidecar> {
    if pids.is_empty() {
        bail!("no PID given");
    }
    capture_procs(pids, true, max_bytes, out, "pid")
}

/// A group of processes (e.g. a cgroup's): those that exited or cannot be
/// read in the meantime are skipped and counted, as with `--all`.
pub fn capture_group(pids: &[u32], max_bytes: Option<u64>, out: &mut dyn Write) -> Result<Sidecar> {
    capture_procs(pids, false, max_bytes, out, "cgroup")
}

/// Every process on the machine except this one; unreadable ones are skipped and listed.
pub fn capture_all(max_bytes: Option<u64>, out: &mut dyn Write) -> Result<Sidecar> {
    let me = std::process::id();
    let mut pids: Vec<u32> = std::fs::read_dir("/proc")
        .context("listing /proc")?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&p| p != me)
        .collect();
    pids.sort_unstable();
    capture_procs(&pids, false, max_bytes, out, "all")
}

/// The memory this machine can show us, bounded by `max_bytes`: every
/// readable process when root; without root, the processes of this user
/// other than zmem itself (other users' memory is closed to it, and zmem's
/// own pages say nothing about the machine's workload).
pub fn capture_machine(max_bytes: u64, out: &mut dyn Write) -> Result<Sidecar> {
    if zmem_files::euid_is_root() {
        return capture_all(Some(max_bytes), out);
    }
    let uid = user::euid().context("cannot read this process's uid from /proc/self/status")?;
    let pids = user::pids_of(uid, std::process::id()).context("listing /proc")?;
    if pids.is_empty() {
        bail!("this user runs no process besides zmem, and without root no other user's memory can be read");
    }
    capture_procs(&pids, false, Some(max_bytes), out, "user")
}

/// Whose memory [`capture_machine`] reads, for saying so before it starts:
/// `every process on this machine`, or `the processes of nobody (uid 65534)`.
pub fn machine_scope() -> String {
    if zmem_files::euid_is_root() {
        "every process on this machine".into()
    } else {
        let who = user::euid().map_or("this user".into(), user::describe);
        format!("the processes of {who}")
    }
}

/// Check that `dev` is a zram block device; return its name (`zramN`) and sysfs directory.
pub fn check_zram_device(dev: &Path) -> Result<(String, PathBuf)> {
    let real =
        std::fs::canonicalize(dev).with_context(|| format!("{} does not exist", dev.display()))?;
    let name = real
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_string();
    let is_zram_name = name
        .strip_prefix("zram")
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
    let md = std::fs::metadata(&real).with_context(|| format!("stat {}", real.display()))?;
    let sys = PathBuf::from("/sys/block").join(&name);
    if !is_zram_name || !md.file_type().is_block_device() || !sys.exists() {
        bail!(
            "{} is not a zram device (expected a block device /dev/zramN)",
            dev.display()
        );
    }
    let want = std::fs::read_to_string(sys.join("dev")).unwrap_or_default();
    let rdev = md.rdev();
    let (major, minor) = (
        ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff),
        (rdev & 0xff) | ((rdev >> 12) & !0xff),
    );
    if want.trim() != format!("{major}:{minor}") {
        bail!("{} is not a zram device (device number {major}:{minor}, /sys/block/{name}/dev says {})", dev.display(), want.trim());
    }
    Ok((name, sys))
}

/// Slots the kernel reports as allocated (debugfs `block_state`), if readable.
fn allocated_slots(name: &str) -> Option<Vec<u64>> {
    let s = std::fs::read_to_string(format!("/sys/kernel/debug/zram/{name}/block_state")).ok()?;
    Some(
        s.lines()
            .filter_map(|l| l.split_whitespace().next()?.parse().ok())
            .collect(),
    )
}

/// Dump the pages of a zram device (read-only; nothing is ever written to it).
pub fn capture_device(dev: &Path, max_bytes: Option<u64>, out: &mut dyn Write) -> Result<Sidecar> {
    let (name, sys) = check_zram_device(dev)?;
    let disksize: u64 = std::fs::read_to_string(sys.join(attr::DISKSIZE))
        .context("reading disksize")?
        .trim()
        .parse()
        .context("parsing disksize")?;
    if disksize == 0 {
        bail!(
            "{} is not initialised (disksize 0): nothing to dump",
            dev.display()
        );
    }
    let mm_stat = std::fs::read_to_string(sys.join(attr::MM_STAT)).unwrap_or_default();
    let f = File::open(dev).with_context(|| format!("opening {} read-only", dev.display()))?;
    let mut sc = Sidecar {
        source: "device".into(),
        device: Some(dev.display().to_string()),
        created_unix: sidecar::now_unix(),
        ..Default::default()
    };
    sc.notes
        .push(format!("mm_stat at capture: {}", mm_stat.trim()));
    let slots = disksize / PAGE;
    let runs: Vec<Run> = match allocated_slots(&name) {
        Some(list) => {
            sc.notes
                .push("only allocated slots (debugfs block_state)".into());
            let mut runs: Vec<Run> = Vec::new();
            for s in list.into_iter().filter(|&s| s < slots) {
                match runs.last_mut() {
                    Some(l) if l.first + l.pages == s => l.pages += 1,
                    _ => runs.push(Run {
                        src: 0,
                        first: s,
                        pages: 1,
                    }),
                }
            }
            runs
        }
        None => {
            sc.notes.push("debugfs block_state unavailable: every slot read; never-written slots read as zero pages".into());
            vec![Run {
                src: 0,
                first: 0,
                pages: slots,
            }]
        }
    };
    let total: u64 = runs.iter().map(|r| r.pages).sum();
    sc.resident_pages = Some(total);
    let chosen = sample(&runs, max_bytes.map(|b| b / PAGE));
    let chosen_pages: u64 = chosen.iter().map(|r| r.pages).sum();
    if chosen_pages < total {
        sc.notes.push(format!(
            "sampled {chosen_pages} of {total} slots in evenly spread 64 KiB blocks (--max)"
        ));
    }
    let mut buf = vec![0u8; (READ_PAGES * PAGE) as usize];
    let mut bad = 0u64;
    for r in &chosen {
        let mut off = 0;
        while off < r.pages {
            let n = READ_PAGES.min(r.pages - off);
            let b = &mut buf[..(n * PAGE) as usize];
            match f.read_exact_at(b, (r.first + off) * PAGE) {
                Ok(()) => {
                    out.write_all(b).context("writing the corpus")?;
                    sc.pages += n;
                    sc.same_filled_pages += sidecar::count_same_filled(b);
                }
                Err(_) => bad += n,
            }
            off += n;
        }
    }
    if bad > 0 {
        sc.skipped.push(Skipped {
            what: format!("{bad} slots"),
            reason: "read error".into(),
        });
    }
    Ok(sc)
}

/// Write a capture to `path` (+ sidecar), via `f`.
///
/// Memory captures hold whatever the processes held (passwords, keys): the
/// file and its sidecar are private (0600) from the start, written beside
/// `path` and put in place together only when the capture succeeded, so a
/// failed capture loses nothing. An existing `path` that is not a zmem
/// corpus (no sidecar beside it), or a sidecar path holding something
/// else, is refused before anything is captured unless `force`
/// (`crate::private`, through zmem's one output writer).
pub fn to_file(
    path: &Path,
    force: bool,
    f: impl FnOnce(&mut dyn Write) -> Result<Sidecar>,
) -> Result<Sidecar> {
    crate::private::write_corpus_files(path, force, f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_parsing_and_filter() {
        let text = "\
55d0c000-55d0e000 r--p 00000000 fd:01 1234 /usr/bin/python3
55d0f000-55d31000 rw-p 00000000 00:00 0 [heap]
7f00000000-7f00100000 rw-p 00000000 00:00 0
7f00100000-7f00200000 rw-s 00000000 00:01 77 /dev/zero (deleted)
7f00200000-7f00201000 rw-p 00001000 fd:01 99 /usr/lib/libc.so.6
7ffc0000-7ffc2000 rw-p 00000000 00:00 0 [stack]
7ffd0000-7ffd2000 r--p 00000000 00:00 0 [vvar]
garbage line
";
        let m = parse_maps(text);
        assert_eq!(m.len(), 7);
        let anon: Vec<_> = m
            .iter()
            .filter(|m| m.is_anon_private_writable())
            .map(|m| m.name.as_str())
            .collect();
        assert_eq!(anon, ["[heap]", "", "[stack]"]);
    }

    #[test]
    fn sampling_is_even_bounded_and_deterministic() {
        let runs = vec![
            Run {
                src: 0,
                first: 0,
                pages: 1000,
            },
            Run {
                src: 1,
                first: 5000,
                pages: 1000,
            },
        ];
        assert_eq!(sample(&runs, None), runs);
        assert_eq!(sample(&runs, Some(5000)), runs);
        let s = sample(&runs, Some(320));
        let n = s.iter().map(|r| r.pages).sum::<u64>();
        assert!((320 - BLOCK_PAGES..=320).contains(&n), "{n}");
        assert!(
            s.iter().any(|r| r.src == 0) && s.iter().any(|r| r.src == 1),
            "both sources sampled"
        );
        assert_eq!(s, sample(&runs, Some(320)));
        let one = sample(&runs, Some(1));
        assert!(one.iter().map(|r| r.pages).sum::<u64>() <= 1);
    }

    #[test]
    fn captures_own_heap_data() {
        // A recognisable, resident buffer in this process.
        let marker: Vec<u8> = (0..64 * PAGE_SIZE)
            .map(|i| (i % 251) as u8 ^ 0x5a)
            .collect();
        let mut out = Vec::new();
        let sc = capture_pids(&[std::process::id()], None, &mut out).unwrap();
        std::hint::black_box(&marker);
        assert_eq!(out.len() as u64, sc.pages * PAGE);
        assert!(sc.pages >= 64);
        let off = (PAGE_SIZE - marker.as_ptr() as usize % PAGE_SIZE) % PAGE_SIZE;
        let page = &marker[off + PAGE_SIZE * 10..off + PAGE_SIZE * 11];
        assert!(
            out.chunks_exact(PAGE_SIZE).any(|p| p == page),
            "the marker page is in the capture"
        );
        assert_eq!(sc.pids, vec![std::process::id()]);
    }

    #[test]
    fn missing_pid_is_a_clear_error() {
        let e = capture_pids(&[u32::MAX - 7], None, &mut Vec::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("no process with PID"), "{e}");
    }

    #[test]
    fn non_zram_device_is_refused() {
        let e = check_zram_device(Path::new("/dev/null"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a zram device"), "{e}");
        let e = check_zram_device(Path::new("/nonexistent/zram9"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not exist"), "{e}");
    }
}
