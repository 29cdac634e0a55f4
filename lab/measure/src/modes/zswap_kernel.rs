//! The kernel side of `zmem bench zswap`: the same corpus and the same
//! access sequence through the running kernel's zswap.
//!
//! Set-up (every change recorded in a [`zmem_host::Guard`] first, with the
//! crash journal of `zmem trial`, and undone on return, error, panic and
//! Ctrl-C): a new swap file (mkswap + swapon) in `--swap-dir` (a filesystem
//! that can hold one; the CLI checks before the run), zswap's
//! parameters (`compressor`, `zpool` where the kernel has it (before 6.18),
//! `max_pool_percent`, `accept_threshold_percent`,
//! `shrinker_enabled` = N, then `enabled` = Y), `vm.page-cluster` = 0 (no swap
//! readahead, so a swap-in is one page, as the engine's), debugfs mounted on
//! /sys/kernel/debug if it is not mounted (unmounted after), and a
//! memory-limited cgroup for the worker (removed after). On cgroup v2 the
//! pool is charged to that cgroup, so its memory.max is the pool limit plus
//! room for the worker, memory.zswap.max is `max` (only max_pool_percent
//! bounds the pool, as for the engine at the same limit), memory.zswap.writeback
//! is 1 where the kernel has it (6.8+) and memory.swap.max is `max`; the
//! settings go with the cgroup. On v1 none of these exist and the pool is
//! not charged.
//!
//! The worker is a forked child in that cgroup, pinned to one CPU. It copies
//! the corpus into an anonymous mapping and pushes every page out with
//! `madvise(MADV_PAGEOUT)` (mm/madvise.c: reclaim of exactly those pages,
//! through `swap_writeout` → `zswap_store`); then, for each access of the
//! sequence, it writes to the page (a write fault: the swap-in, after which
//! `do_swap_page` frees the swap slot as the engine's exclusive load does),
//! checks the page against the corpus, and pages it out again. Counters come
//! from /proc/vmstat (`zswpin`, `zswpout`, `zswpwb`, `pswpin`, `pswpout`),
//! /sys/kernel/debug/zswap and /proc/meminfo (`Zswap:`, `Zswapped:`).
//!
//! The kernel's pool limit is a percent of RAM (`max_pool_percent`), so the
//! kernel runs at the smallest percent whose limit holds the budget (at least
//! 1 %), and the engine runs once more at exactly that limit beside it.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use zmem_codec::PAGE_SIZE;
use zmem_corpus::Corpus;
use zmem_host::Sys;

use super::zswap_counters::Measured;

/// zswap's module parameters.
const PARAMS: &str = "/sys/module/zswap/parameters";
/// Where debugfs is mounted for the run.
const DEBUGFS: &str = "/sys/kernel/debug";
/// The worker's cgroup limit beyond what the pool may be charged (v2).
const CGROUP_BASE: u64 = 32 << 20;

/// How the kernel rows are run.
#[derive(Debug, Clone)]
pub struct KernelOptions {
    /// Run even if other swap areas are active or zswap is already enabled.
    pub force: bool,
    /// Directory of the swap file (`--swap-dir`; a filesystem that can hold one).
    pub dir: PathBuf,
}

/// Why kernel rows cannot be produced here (`None` when they can). `kernel`
/// is the running kernel's model: which allocators its zswap can use.
pub fn unavailable(
    sys: &Sys,
    kernel: Option<&zmem_kernel::KernelModel>,
    zpool: &str,
    compressor: &str,
    force: bool,
) -> Option<String> {
    if !zmem_files::euid_is_root() {
        return Some(
            "not root (the kernel rows need swapon, zswap parameters and a cgroup)".into(),
        );
    }
    if !sys.exists(&format!("{PARAMS}/enabled")) {
        return Some(format!(
            "the kernel has no zswap ({PARAMS}/enabled missing)"
        ));
    }
    let zpools = kernel.map_or(&["zsmalloc"][..], |m| m.zswap_zpools());
    if !zpools.contains(&zpool) {
        return Some(format!(
            "the kernel's zswap allocates from {} only, not {zpool}",
            zpools.join(", ")
        ));
    }
    let have = zmem_host::zswap_compressors(sys, &zmem_codec::zswap_names());
    if !have.iter().any(|c| c == compressor) {
        return Some(format!(
            "the kernel's zswap has no compressor {compressor} (it has: {})",
            if have.is_empty() {
                "none".to_string()
            } else {
                have.join(", ")
            }
        ));
    }
    if let Err(e) = zmem_host::memory_hierarchy(sys) {
        return Some(e);
    }
    if force {
        return None;
    }
    let mut busy = Vec::new();
    for a in sys.swaps().unwrap_or_default() {
        busy.push(format!("swap is active on {}", a.device));
    }
    if sys
        .read(&format!("{PARAMS}/enabled"))
        .is_ok_and(|v| v.trim() == "Y")
    {
        busy.push("zswap is enabled".into());
    }
    (!busy.is_empty()).then(|| {
        format!(
            "{} (it would mix with the bench's pages; --force runs anyway)",
            busy.join("; ")
        )
    })
}

/// The percent of RAM the kernel's pool limit is set to for `budget` bytes,
/// and that limit in bytes (mm/zswap.c `zswap_max_pages`: totalram pages ×
/// percent / 100; MemTotal is totalram pages in kB).
pub fn kernel_limit(mem_total: u64, budget: u64) -> (u32, u64) {
    let pct = (budget.saturating_mul(100))
        .div_ceil(mem_total.max(1))
        .clamp(1, 100) as u32;
    let pages = mem_total / PAGE_SIZE as u64 * pct as u64 / 100;
    (pct, pages * PAGE_SIZE as u64)
}

/// Everything the run set up; dropping it undoes it (cgroup first, then the
/// guard newest first: zswap off, parameters back, page-cluster back,
/// swapoff, swap file removed; then debugfs unmounted).
/// Fields drop in this order too (on a panic).
struct Env {
    cgroup: Option<zmem_host::Cgroup>,
    cgroup_line: Option<String>,
    guard: zmem_host::Guard,
    journal: std::rc::Rc<std::cell::RefCell<zmem_host::Journal>>,
    _debugfs: Option<DebugfsMount>,
}

impl Env {
    /// Removes the cgroup and unwinds the guard; the messages of what failed.
    fn teardown(mut self) -> Vec<String> {
        let mut errors = Vec::new();
        if let Some(cg) = self.cgroup.take() {
            match cg.remove() {
                Ok(()) => {
                    if let Some(l) = &self.cgroup_line {
                        self.journal.borrow_mut().remove(l);
                    }
                }
                Err(e) => errors.push(format!("removing the worker's cgroup: {e}")),
            }
        }
        errors.extend(self.guard.unwind());
        errors
    }
}

/// debugfs mounted by this run; unmounted on drop.
struct DebugfsMount;

impl DebugfsMount {
    /// Mounts debugfs on /sys/kernel/debug unless some debugfs is mounted.
    fn ensure(sys: &Sys) -> Result<Option<DebugfsMount>> {
        let mounted = sys
            .mounts()
            .map(|m| m.iter().any(|(_, _, t)| t == "debugfs"))
            .unwrap_or(false);
        if mounted {
            return Ok(None);
        }
        let c = |s: &str| std::ffi::CString::new(s).expect("no NUL");
        let (src, dst, fs, opts) = (c("debugfs"), c(DEBUGFS), c("debugfs"), c("mode=0700"));
        let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        // SAFETY: all pointers are valid NUL-terminated strings living across the call.
        let r = unsafe {
            libc::mount(
                src.as_ptr(),
                dst.as_ptr(),
                fs.as_ptr(),
                flags,
                opts.as_ptr().cast(),
            )
        };
        if r != 0 {
            bail!(
                "mounting debugfs on {DEBUGFS}: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(Some(DebugfsMount))
    }
}

impl Drop for DebugfsMount {
    fn drop(&mut self) {
        let dst = std::ffi::CString::new(DEBUGFS).expect("no NUL");
        // SAFETY: dst is a valid NUL-terminated path.
        if unsafe { libc::umount2(dst.as_ptr(), 0) } != 0 {
            eprintln!(
                "zmem bench: cleanup failed: umount {DEBUGFS}: {} — unmount it by hand",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// The run's parameters.
struct Plan<'a> {
    corpus: &'a Corpus,
    seq: &'a [usize],
    algorithm: &'a str,
    zpool: &'a str,
    percent: u32,
    accept: u32,
    pool_limit: u64,
}

/// Sets everything up (each step's undo recorded first).
fn prepare(sys: &Sys, plan: &Plan<'_>, k: &KernelOptions) -> Result<Env> {
    hold_trial_lock(sys)?;
    let journal = std::rc::Rc::new(std::cell::RefCell::new(
        zmem_host::Journal::create(sys).context("creating the crash journal")?,
    ));
    let guard = zmem_host::Guard::with_journal(sys, "zmem bench zswap", journal.clone());
    let mut env = Env {
        cgroup: None,
        cgroup_line: None,
        guard,
        journal,
        _debugfs: None,
    };
    env._debugfs = DebugfsMount::ensure(sys)?;
    swap_file(&mut env.guard, plan, k)?;
    let knob = |n: &str| format!("{PARAMS}/{n}");
    let g = &mut env.guard;
    g.set_knob(zmem_host::PAGE_CLUSTER, "0")?;
    g.set_knob(&knob("enabled"), "N")?;
    g.set_knob(&knob("compressor"), plan.algorithm)
        .with_context(|| format!("the kernel's zswap has no compressor {}", plan.algorithm))?;
    // Kernels before 6.18 choose the allocator (the build's default, zbud
    // in Debian's 6.1): the engine's, so both rows use the same one.
    if sys.exists(&knob("zpool")) {
        g.set_knob(&knob("zpool"), plan.zpool)
            .with_context(|| format!("the kernel's zswap has no allocator {}", plan.zpool))?;
    }
    g.set_knob(&knob("max_pool_percent"), &plan.percent.to_string())?;
    g.set_knob(&knob("accept_threshold_percent"), &plan.accept.to_string())?;
    if sys.exists(&knob("shrinker_enabled")) {
        g.set_knob(&knob("shrinker_enabled"), "N")?;
    }
    g.set_knob(&knob("enabled"), "Y")?;
    let h = zmem_host::memory_hierarchy(sys).map_err(anyhow::Error::msg)?;
    g.enable_memory_controller(&h)?;
    let limit = match h.version {
        // v1 does not charge zswap's pool to the cgroup (mm/memcontrol.c
        // obj_cgroup_charge_zswap is cgroup2 only); v2 does.
        zmem_host::CgroupVersion::V1 => CGROUP_BASE,
        zmem_host::CgroupVersion::V2 => CGROUP_BASE + plan.pool_limit,
    };
    let name = format!("zmem-bench-zswap.{}", std::process::id());
    let cg_path = format!("{}/{name}", h.parent.trim_end_matches('/'));
    if let Some(l) = zmem_host::Action::RemoveCgroup(cg_path).to_line() {
        env.journal.borrow_mut().push(l.clone());
        env.cgroup_line = Some(l);
    }
    // On an error the cgroup is gone again (`create` removes what it made)
    // and its line leaves the journal, unless removing it failed.
    let forget = |env: &mut Env| {
        if let Some(l) = env.cgroup_line.take() {
            env.journal.borrow_mut().remove(&l);
        }
    };
    let cg = match zmem_host::Cgroup::create(sys, &h, &name, limit, None) {
        Ok(cg) => cg,
        Err(e) => {
            forget(&mut env);
            return Err(anyhow::Error::new(e).context("creating the worker's cgroup"));
        }
    };
    let set = match v2_settings(&cg) {
        Ok(set) => set,
        Err(e) => {
            cg.remove().context("removing the worker's cgroup")?;
            forget(&mut env);
            return Err(e);
        }
    };
    env.cgroup = Some(cg);
    if !set.is_empty() {
        eprintln!(
            "zmem bench: the kernel rows' worker cgroup (v2): memory.max={limit}, {}",
            set.join(", ")
        );
    }
    Ok(env)
}

/// The worker cgroup's v2 settings: swap and the pool bounded only by the
/// swap file and max_pool_percent, writeback on (as the engine's). What was
/// set, `file=value`, or that this kernel has no such file.
fn v2_settings(cg: &zmem_host::Cgroup) -> Result<Vec<String>> {
    if cg.version() != zmem_host::CgroupVersion::V2 {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (file, value) in [
        ("memory.swap.max", "max"),
        ("memory.zswap.max", "max"),
        ("memory.zswap.writeback", "1"),
    ] {
        let set = cg
            .set_v2(file, value)
            .with_context(|| format!("setting {file} of the worker's cgroup"))?;
        out.push(if set {
            format!("{file}={value}")
        } else {
            format!("no {file} on this kernel")
        });
    }
    Ok(out)
}

/// The kernel run changes zswap's parameters, page-cluster and swap as a trial does: one of
/// them at a time (the trial lock, [`zmem_files::TRIAL_LOCK`]), or each would journal the
/// other's values as the ones to restore.
fn hold_trial_lock(sys: &Sys) -> Result<()> {
    let path = sys.path(zmem_files::TRIAL_LOCK);
    zmem_files::hold_for_process(&path).map_err(|e| match e {
        zmem_files::LockError::Held { holder, .. } => anyhow::anyhow!(
            "another zmem that changes swap and zswap is running ({}, holding {}): both \
             would change zswap and swap and undo each other's changes; wait for it to finish",
            zmem_files::describe_holder(holder),
            path.display()
        ),
        e => anyhow::anyhow!("cannot take the trial lock: {e}"),
    })
}

/// A new swap file big enough for every corpus page, swapped on.
fn swap_file(g: &mut zmem_host::Guard, plan: &Plan<'_>, k: &KernelOptions) -> Result<()> {
    use zmem_host::Action;
    let path = k
        .dir
        .join(format!("zmem-bench-zswap.{}.swap", std::process::id()));
    let abs = path.to_string_lossy().into_owned();
    let bytes = (plan.corpus.page_count() * PAGE_SIZE) as u64 + (16 << 20);
    let r = zmem_host::create_swap_file(&path, bytes);
    if r.as_ref().err().map(|e| e.kind()) != Some(std::io::ErrorKind::AlreadyExists) {
        g.push(Action::RemoveFile(abs.clone()));
    }
    let id = r.with_context(|| format!("creating swap file {}", path.display()))?;
    zmem_host::verify_swap_file(&path, id)?;
    Sys::real().swapon(&abs, zmem_host::DISK_PRIORITY, "")?;
    g.push(Action::Swapoff(abs));
    Ok(())
}

/// Runs the corpus and `seq` through the kernel's zswap with a pool limit of
/// `percent` % of RAM and `accept` % hysteresis.
pub fn run(
    corpus: &Corpus,
    seq: &[usize],
    (algorithm, zpool): (&str, &str),
    (percent, pool_limit): (u32, u64),
    accept: u32,
    k: &KernelOptions,
) -> Result<Measured> {
    let sys = Sys::real();
    let plan = Plan {
        corpus,
        seq,
        algorithm,
        zpool,
        percent,
        accept,
        pool_limit,
    };
    let signals = zmem_host::SignalWatch::install().context("installing signal handlers")?;
    let env = prepare(&sys, &plan, k);
    let result = env
        .as_ref()
        .map_err(|e| anyhow::anyhow!("{e:#}"))
        .and_then(|env| {
            let procs = env.cgroup.as_ref().expect("created").procs_file();
            spawn_worker(&plan, &procs, &signals)
        });
    let errors = match env {
        Ok(env) => env.teardown(),
        Err(_) => Vec::new(),
    };
    if !errors.is_empty() {
        bail!("cleanup failed, fix by hand: {}", errors.join("; "));
    }
    if signals.fired() {
        bail!("interrupted; everything the kernel run set up was removed and restored");
    }
    result
}

/// The number of this process's threads once the engines' background work
/// is done: 1 unless something else runs. Waits for the pools' populating
/// threads, then up to 1 s for the kernel to let go of their tasks (a
/// joined thread may be listed in /proc/self/task for a moment longer).
fn single_threaded() -> usize {
    zmem_zram::wait_background();
    let count = || std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    let mut n = count();
    while n != 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
        n = count();
    }
    n
}

/// Forks the worker, waits for its result (killing it on Ctrl-C/SIGTERM).
fn spawn_worker(
    plan: &Plan<'_>,
    procs: &Path,
    signals: &zmem_host::SignalWatch,
) -> Result<Measured> {
    let threads = single_threaded();
    if threads != 1 {
        bail!("the kernel run forks its worker and needs a single-threaded zmem (found {threads} threads)");
    }
    let mut fds = [0 as RawFd; 2];
    // SAFETY: fds is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!("pipe: {}", std::io::Error::last_os_error());
    }
    // SAFETY: the process is single-threaded (checked above), so the child
    // may run ordinary Rust code until it exits with _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        bail!("fork: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: fds[0] is the read end, unused in the child.
        unsafe { libc::close(fds[0]) };
        worker_main(plan, procs, fds[1]);
    }
    // SAFETY: fds[1] is the write end, unused in the parent; fds[0] is ours.
    unsafe { libc::close(fds[1]) };
    // SAFETY: fds[0] is an open descriptor owned from here on by `pipe`.
    let mut pipe = unsafe { File::from_raw_fd(fds[0]) };
    let out = read_until_exit(&mut pipe, pid, signals);
    let mut status = 0;
    // SAFETY: pid is our child; status is a valid out pointer.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    let out = out?;
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        bail!(
            "the worker failed: {}",
            String::from_utf8_lossy(&out).trim()
        );
    }
    serde_json::from_slice(&out).context("reading the worker's result")
}

/// Reads the worker's output until it closes the pipe; kills it when a
/// signal arrived.
fn read_until_exit(
    pipe: &mut File,
    pid: libc::pid_t,
    signals: &zmem_host::SignalWatch,
) -> Result<Vec<u8>> {
    use std::os::fd::AsRawFd;
    let mut out = Vec::new();
    let mut buf = [0u8; 1 << 16];
    loop {
        if signals.fired() {
            // SAFETY: pid is our child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            bail!("interrupted");
        }
        let mut p = libc::pollfd {
            fd: pipe.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: p is a valid pollfd.
        if unsafe { libc::poll(&mut p, 1, 100) } <= 0 {
            continue;
        }
        match pipe.read(&mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// The child: joins the cgroup, runs the sequence, writes the result (JSON,
/// or the error text with exit status 1) and exits.
fn worker_main(plan: &Plan<'_>, procs: &Path, fd: RawFd) -> ! {
    // SAFETY: resetting signal dispositions and asking for SIGKILL when the
    // parent dies have no memory-safety preconditions.
    unsafe {
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::signal(s, libc::SIG_DFL);
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
    let r = std::fs::write(procs, "0")
        .with_context(|| format!("joining the cgroup ({})", procs.display()))
        .and_then(|()| crate::modes::zswap_worker::run(plan.corpus, plan.seq));
    // SAFETY: fd is the pipe's write end, owned by the child from here on.
    let mut pipe = unsafe { File::from_raw_fd(fd) };
    let code = match r.and_then(|m| Ok(serde_json::to_vec(&m)?)) {
        Ok(v) => i32::from(pipe.write_all(&v).is_err()),
        Err(e) => {
            let _ = write!(pipe, "{e:#}");
            1
        }
    };
    drop(pipe);
    // SAFETY: _exit ends the child without running the parent's destructors
    // (the guard, the cgroup and the journal belong to the parent).
    unsafe { libc::_exit(code) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::zswap_counters::Snapshot;

    #[test]
    fn kernel_limit_is_the_smallest_percent_that_holds_the_budget() {
        let ram = 24_684_084 * 1024; // this machine's MemTotal
        let one = ram / 4096 / 100 * 4096;
        assert_eq!(kernel_limit(ram, 419_430), (1, one));
        assert_eq!(kernel_limit(ram, one), (1, one));
        assert_eq!(kernel_limit(ram, one + 4096 * 100).0, 2);
        assert_eq!(kernel_limit(ram, u64::MAX).0, 100);
        assert_eq!(kernel_limit(1000 * 4096, 100 * 4096), (10, 100 * 4096));
    }

    #[test]
    fn snapshot_falls_back_to_meminfo_without_debugfs() {
        let s = Snapshot {
            zswap_bytes: 8192,
            zswapped_bytes: 5 * 4096,
            ..Snapshot::default()
        };
        assert_eq!((s.pool_bytes(), s.stored_pages()), (8192, 5));
        let mut d = s.clone();
        d.debugfs.insert("stored_pages".into(), 7);
        d.debugfs.insert("pool_total_size".into(), 12288);
        assert_eq!((d.pool_bytes(), d.stored_pages()), (12288, 7));
    }
}
