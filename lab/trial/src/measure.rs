//! Running one workload and measuring it: wall/user/sys time and major faults
//! of the process tree (wait4's rusage), the exit status (or the signal, or an
//! OOM kill seen in the cgroup's counters), the swap counters from
//! /proc/vmstat as deltas over the run, the cgroup's peak memory, and what the
//! compressed tier held at its fullest (zram mm_stat, zswap's pool from
//! /proc/meminfo), sampled while the workload runs because everything is freed
//! when it exits; and the memory pressure (PSI) of the run: the cgroup's
//! `memory.pressure` at its end on cgroup v2, else `/proc/pressure/memory`
//! (system-wide) as its change over the run. The workload's standard output
//! is copied to zmem's standard error as it comes and its first
//! [`STDOUT_KEEP`] bytes are offered to the load generators' readers
//! ([`crate::readers`]); `ZMEM_METRICS` names the run's metrics file.

use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use zmem_host::Sys;
use zmem_kernel::proc;

use zmem_host::{Cgroup, Pressure, PsiScope};

use crate::cgroup_settings::CgroupSetting;
use crate::metrics::{Metric, Parsed, METRICS_ENV};

/// Bytes of the workload's standard output the readers see (the rest is
/// still copied to zmem's standard error).
pub const STDOUT_KEEP: usize = 4 << 20;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// Exited by itself with this code.
    Exited { code: i32 },
    /// Killed by a signal (not the OOM killer).
    Signaled { signal: i32 },
    /// The cgroup's OOM killer killed (part of) it.
    OomKilled { kills: u64 },
    /// The swap configuration could not be set up; the workload did not run.
    SetupFailed { error: String },
    /// Stopped by Ctrl-C/SIGTERM.
    Interrupted,
    /// `--service`: it exited before it was ready or while the fill or the
    /// load ran, was not ready in time, or the fill failed.
    ServiceFailed { error: String },
}

impl Outcome {
    /// Exited with 0.
    pub fn ok(&self) -> bool {
        matches!(self, Outcome::Exited { code: 0 })
    }

    /// Short text for tables.
    pub fn short(&self) -> String {
        match self {
            Outcome::Exited { code } => format!("exit {code}"),
            Outcome::Signaled { signal } => format!("signal {signal}"),
            Outcome::OomKilled { .. } => "oom-killed".into(),
            Outcome::SetupFailed { error } => format!("setup failed: {error}"),
            Outcome::Interrupted => "interrupted".into(),
            Outcome::ServiceFailed { error } => format!("service failed: {error}"),
        }
    }
}

/// Swap activity over a run, from /proc/vmstat (system-wide counters, in pages).
/// zswap counters are `None` on kernels without zswap.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VmCounters {
    pub pswpin: u64,
    pub pswpout: u64,
    pub zswpin: Option<u64>,
    pub zswpout: Option<u64>,
    pub zswpwb: Option<u64>,
}

/// /proc/vmstat as name → value (the tests' input for [`VmCounters::delta`]).
#[cfg(test)]
fn parse_vmstat(text: &str) -> HashMap<String, u64> {
    proc::parse_vmstat(text).into_iter().collect()
}

impl VmCounters {
    /// Counters `after − before`.
    pub fn delta(before: &HashMap<String, u64>, after: &HashMap<String, u64>) -> Self {
        let d = |k: &str| Some(after.get(k)?.saturating_sub(*before.get(k)?));
        VmCounters {
            pswpin: d("pswpin").unwrap_or(0),
            pswpout: d("pswpout").unwrap_or(0),
            zswpin: d("zswpin"),
            zswpout: d("zswpout"),
            zswpwb: d("zswpwb"),
        }
    }
}

/// /proc/vmstat of `sys` as name → value.
fn vmstat(sys: &Sys) -> io::Result<HashMap<String, u64>> {
    Ok(sys.vmstat()?.into_iter().collect())
}

/// zram at the end of the run, and at its fullest during it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ZramStats {
    /// mm_stat after the workload exited (mem_used_max keeps the peak).
    pub mm_stat_end: [u64; 9],
    /// mm_stat sampled when orig_data_size was largest.
    pub mm_stat_fullest: [u64; 9],
}

/// zswap's pool at its fullest during the run (from /proc/meminfo).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ZswapStats {
    /// `Zswap:` (compressed pool size) in bytes when `Zswapped:` was largest.
    pub pool_bytes_fullest: u64,
    /// `Zswapped:` (original bytes stored) at its largest.
    pub stored_bytes_fullest: u64,
    /// `Zswap:` / `Zswapped:` after the workload exited.
    pub pool_bytes_end: u64,
    pub stored_bytes_end: u64,
    /// Deltas of zswap's debugfs event counters over the run (pool_limit_hit,
    /// reject_*, decompress_fail, written_back_pages) when debugfs is mounted;
    /// the trial does not mount it.
    #[serde(default)]
    pub debugfs: Option<std::collections::BTreeMap<String, u64>>,
}

/// zswap's debugfs event counters (gauges like stored_pages are left out).
pub const ZSWAP_DEBUGFS_COUNTERS: &[&str] = zmem_kernel::zswap::EVENT_COUNTERS;

/// The counters present in /sys/kernel/debug/zswap, or `None` without debugfs.
pub fn read_zswap_debugfs(sys: &Sys) -> Option<HashMap<String, u64>> {
    let m: HashMap<String, u64> = ZSWAP_DEBUGFS_COUNTERS
        .iter()
        .filter_map(|k| {
            let v = sys
                .read(&format!("{}/{k}", zmem_kernel::zswap::DEBUGFS_DIR))
                .ok()?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect();
    (!m.is_empty()).then_some(m)
}

/// `after − before` for the counters in both.
pub fn debugfs_delta(
    before: &HashMap<String, u64>,
    after: &HashMap<String, u64>,
) -> std::collections::BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(k, a)| Some((k.clone(), a.saturating_sub(*before.get(k)?))))
        .collect()
}

/// One run's measurements.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunRecord {
    /// Configuration name (`zram:lz4`, …).
    pub config: String,
    /// Round, from 1.
    pub round: u32,
    pub outcome: Outcome,
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    /// Major page faults of the workload (rusage ru_majflt; swap-ins count here).
    pub major_faults: u64,
    pub vm: VmCounters,
    /// Peak RAM of the cgroup (bytes).
    pub cgroup_peak_bytes: Option<u64>,
    pub zram: Option<ZramStats>,
    pub zswap: Option<ZswapStats>,
    /// 1-minute load average when the run started (other work on the machine
    /// competes for CPU and disk; high values make times noisy).
    #[serde(default)]
    pub load1_start: Option<f64>,
    /// Memory pressure at the run's end (`None` without PSI).
    #[serde(default)]
    pub memory_pressure: Option<Pressure>,
    /// The cgroup v2 settings of the run's cgroup as read back after the
    /// run (empty on cgroup v1, which has none of them).
    #[serde(default)]
    pub cgroup_settings: Vec<CgroupSetting>,
    /// The workload's own figures: from `ZMEM_METRICS` and from the readers
    /// of its output.
    #[serde(default)]
    pub metrics: Vec<Metric>,
    /// What was wrong with them (bad lines, limits reached); the run still counts.
    #[serde(default)]
    pub metric_problems: Vec<String>,
    /// With `--service`: how long it took to be ready and to fill (the wall
    /// time is the load's; user, sys and faults are the service's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceTimes>,
}

/// The phases of a run with `--service`, s.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServiceTimes {
    /// From the service's start until it was ready.
    pub ready_s: f64,
    /// The `--fill` command's wall time.
    pub fill_s: Option<f64>,
}

impl RunRecord {
    /// A record for a run that never started.
    pub fn not_run(config: String, round: u32, outcome: Outcome) -> Self {
        RunRecord {
            config,
            round,
            outcome,
            wall_s: 0.0,
            user_s: 0.0,
            sys_s: 0.0,
            major_faults: 0,
            vm: VmCounters::default(),
            cgroup_peak_bytes: None,
            zram: None,
            zswap: None,
            load1_start: None,
            memory_pressure: None,
            cgroup_settings: Vec::new(),
            metrics: Vec::new(),
            metric_problems: Vec::new(),
            service: None,
        }
    }

    /// Add figures read after the run; one of the same name is replaced
    /// (what the workload wrote to `ZMEM_METRICS` wins over a reader's).
    pub fn add_metrics(&mut self, p: Parsed) {
        for m in p.metrics {
            self.metrics.retain(|x| x.name != m.name);
            self.metrics.push(m);
        }
        self.metric_problems.extend(p.problems);
    }
}

/// The 1-minute load average.
pub fn load1(sys: &Sys) -> Option<f64> {
    sys.read("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn meminfo_kib(text: &str, key: &str) -> Option<u64> {
    proc::meminfo_value(text, key).map(|v| v / 1024)
}

/// mm_stat of the zram device at `dir` (`/sys/block/zramN`), all nine fields
/// (Documentation/admin-guide/blockdev/zram.rst, "mm_stat").
fn read_mm_stat(sys: &Sys, dir: &str) -> Option<[u64; 9]> {
    let s = sys.read(&format!("{dir}/mm_stat")).ok()?;
    let v: Vec<u64> = s
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    v.try_into().ok()
}

/// Reads the compressed tier during a run and keeps its fullest state.
pub(crate) struct Sampler<'a> {
    sys: &'a Sys,
    zram_sys: Option<&'a str>,
    zswap: bool,
    zram_fullest: Option<[u64; 9]>,
    zswap_fullest: Option<(u64, u64)>,
}

impl Sampler<'_> {
    pub(crate) fn sample(&mut self) {
        if let Some(dir) = self.zram_sys {
            if let Some(m) = read_mm_stat(self.sys, dir) {
                if self.zram_fullest.filter(|f| f[0] >= m[0]).is_none() {
                    self.zram_fullest = Some(m);
                }
            }
        }
        if self.zswap {
            if let Some((pool, stored)) = self.read_zswap() {
                if self.zswap_fullest.filter(|f| f.1 >= stored).is_none() {
                    self.zswap_fullest = Some((pool, stored));
                }
            }
        }
    }

    fn read_zswap(&self) -> Option<(u64, u64)> {
        let t = self.sys.read("/proc/meminfo").ok()?;
        Some((
            meminfo_kib(&t, "Zswap")? * 1024,
            meminfo_kib(&t, "Zswapped")? * 1024,
        ))
    }
}

/// What the run environment looks like for one workload.
pub struct RunEnv<'a> {
    pub sys: &'a Sys,
    pub cgroup: &'a Cgroup,
    /// `/sys/block/zramN` of the zram tier.
    pub zram_sys: Option<&'a str>,
    pub zswap: bool,
    /// Raised by a signal: kill the workload and return.
    pub stop: &'a AtomicBool,
    /// Called every 50 ms while the workload runs (e.g. to look at its processes).
    pub observe: Option<&'a dyn Fn(&Cgroup)>,
    /// The run's metrics file, named to the workload as `ZMEM_METRICS`.
    pub metrics: Option<&'a Path>,
}

/// A started workload; killed (whole process group) and reaped if dropped
/// before it was waited for, e.g. on panic.
pub(crate) struct Running {
    pub(crate) pid: i32,
    reaped: bool,
}

impl Running {
    /// Start `cmd` (named `name` in errors); its standard output, if piped, is captured.
    pub(crate) fn spawn(cmd: &mut Command, name: &str) -> io::Result<(Running, Option<Captured>)> {
        let mut child = cmd
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("starting {name}: {e}")))?;
        let captured = child.stdout.take().map(capture);
        let running = Running {
            pid: child.id() as i32,
            reaped: false,
        };
        drop(child); // std's handle neither waits nor kills; `running` owns the process now.
        Ok((running, captured))
    }

    /// It has exited (it may not be reaped yet: then it is a zombie, and
    /// its process group id still taken).
    pub(crate) fn exited(&self) -> bool {
        if self.reaped {
            return true;
        }
        // SAFETY: siginfo_t is plain old data, all-zero is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is valid and writable across the call; WNOWAIT leaves
        // the child waitable.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: waitid filled `info` (si_pid stays 0 while it runs).
        r == 0 && unsafe { info.si_pid() } != 0
    }

    /// Send `sig` to its process group (nothing once reaped).
    pub(crate) fn signal(&self, sig: i32) {
        if !self.reaped {
            // SAFETY: as in `kill`.
            unsafe { libc::kill(-self.pid, sig) };
        }
    }

    pub(crate) fn kill(&self) {
        if !self.reaped {
            // SAFETY: kill has no memory-safety preconditions; the negative pid
            // is the process group of our not-yet-reaped child (its leader is
            // still a zombie at worst, so the group id cannot have been reused).
            unsafe { libc::kill(-self.pid, libc::SIGKILL) };
        }
    }

    /// wait4 on the child; `block` waits, else returns None while it runs.
    pub(crate) fn wait(&mut self, block: bool) -> io::Result<Option<(i32, libc::rusage)>> {
        let mut status = 0;
        // SAFETY: rusage is plain old data, all-zero is a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: status and ru are valid, writable and live across the call.
            let r = unsafe {
                libc::wait4(
                    self.pid,
                    &mut status,
                    if block { 0 } else { libc::WNOHANG },
                    &mut ru,
                )
            };
            if r == self.pid {
                self.reaped = true;
                return Ok(Some((status, ru)));
            }
            if r == 0 {
                return Ok(None);
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
            let _ = self.wait(true);
        }
    }
}

pub(crate) fn pidfd_open(pid: i32) -> Option<i32> {
    // SAFETY: pidfd_open takes two integers and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd >= 0 {
        Some(fd as i32)
    } else {
        None
    }
}

/// Wait up to `ms` for the pidfd to become readable (the process exited).
pub(crate) fn poll_pidfd(fd: Option<i32>, ms: i32) {
    match fd {
        Some(fd) => {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: `p` is one valid pollfd that lives across the call.
            unsafe { libc::poll(&mut p, 1, ms) };
        }
        None => std::thread::sleep(Duration::from_millis(ms.min(5) as u64)),
    }
}

fn tv(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 / 1e6
}

/// The workload's command: its own process group, stdin from /dev/null,
/// stdout to a pipe ([`capture`]), `ZMEM_METRICS` set, and joining `cgroup`
/// (if any) before exec.
pub(crate) fn workload_command(
    command: &[String],
    cgroup: Option<&Cgroup>,
    metrics: Option<&Path>,
) -> io::Result<Command> {
    let Some((prog, args)) = command.split_first() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty command"));
    };

    let mut cmd = Command::new(prog);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .process_group(0);
    match metrics {
        Some(p) => cmd.env(METRICS_ENV, p),
        None => cmd.env_remove(METRICS_ENV),
    };
    let Some(cgroup) = cgroup else {
        return Ok(cmd);
    };
    let procs = CString::new(cgroup.procs_file().as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "cgroup path has a NUL byte"))?;
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe system calls (open, write, close) on memory prepared
    // before the fork; it joins the cgroup ("0" = the writing process) so that
    // everything the workload allocates is charged there.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let r = libc::write(fd, b"0".as_ptr().cast(), 1);
            let e = io::Error::last_os_error();
            libc::close(fd);
            if r != 1 {
                return Err(e);
            }
            Ok(())
        });
    }
    Ok(cmd)
}

/// How the run ended: stopped by us, OOM-killed (the cgroup's counter went
/// up), or the wait status.
pub(crate) fn outcome(interrupted: bool, kills: u64, status: i32) -> Outcome {
    if interrupted {
        Outcome::Interrupted
    } else if kills > 0 {
        Outcome::OomKilled { kills }
    } else if libc::WIFEXITED(status) {
        Outcome::Exited {
            code: libc::WEXITSTATUS(status),
        }
    } else {
        Outcome::Signaled {
            signal: libc::WTERMSIG(status),
        }
    }
}

/// zswap's pool at the end and at its fullest, and the debugfs deltas.
fn zswap_stats(
    sys: &Sys,
    sampler: &Sampler<'_>,
    debugfs_before: Option<HashMap<String, u64>>,
) -> ZswapStats {
    let end = sampler.read_zswap().unwrap_or((0, 0));
    let full = sampler.zswap_fullest.unwrap_or(end);
    ZswapStats {
        pool_bytes_fullest: full.0,
        stored_bytes_fullest: full.1,
        pool_bytes_end: end.0,
        stored_bytes_end: end.1,
        debugfs: debugfs_before.and_then(|b| Some(debugfs_delta(&b, &read_zswap_debugfs(sys)?))),
    }
}

/// What is read before a run, to be subtracted or compared after it.
pub(crate) struct Before {
    vm: HashMap<String, u64>,
    pub(crate) oom: u64,
    load1: Option<f64>,
    // cgroup v1 has no memory.pressure: the system-wide file's change over the run.
    psi: Option<zmem_host::PsiFile>,
    debugfs: Option<HashMap<String, u64>>,
}

impl Before {
    pub(crate) fn read(env: &RunEnv<'_>) -> io::Result<Before> {
        Ok(Before {
            vm: vmstat(env.sys)?,
            oom: env.cgroup.oom_kills(),
            load1: load1(env.sys),
            psi: zmem_host::system_pressure(env.sys),
            debugfs: env.zswap.then(|| read_zswap_debugfs(env.sys)).flatten(),
        })
    }
}

/// How a measured process ended, and what it printed.
pub(crate) struct Ended {
    pub(crate) interrupted: bool,
    pub(crate) status: i32,
    pub(crate) ru: libc::rusage,
    pub(crate) wall: f64,
    pub(crate) stdout: Option<Captured>,
}

/// The tier's sampler for a run in `env`.
pub(crate) fn sampler<'a>(env: &RunEnv<'a>) -> Sampler<'a> {
    Sampler {
        sys: env.sys,
        zram_sys: env.zram_sys,
        zswap: env.zswap,
        zram_fullest: None,
        zswap_fullest: None,
    }
}

/// Run `command` inside `env.cgroup` and measure it. Returns the record (with
/// `Outcome::Interrupted` if the stop flag was raised).
pub fn run_workload(
    command: &[String],
    config: &str,
    round: u32,
    env: &RunEnv<'_>,
) -> io::Result<RunRecord> {
    let mut cmd = workload_command(command, Some(env.cgroup), env.metrics)?;
    let before = Before::read(env)?;
    let mut sampler = sampler(env);
    let start = Instant::now();
    let (mut running, stdout) = Running::spawn(&mut cmd, &command[0])?;
    let pidfd = pidfd_open(running.pid);
    let mut interrupted = false;
    let (status, ru) = loop {
        if let Some(r) = running.wait(false)? {
            break r;
        }
        if env.stop.load(Ordering::SeqCst) && !interrupted {
            interrupted = true;
            running.kill();
        }
        sampler.sample();
        if let Some(f) = env.observe {
            f(env.cgroup);
        }
        poll_pidfd(pidfd, 50);
    };
    close_pidfd(pidfd);
    let ended = Ended {
        interrupted,
        status,
        ru,
        wall: start.elapsed().as_secs_f64(),
        stdout,
    };
    let kills = env.cgroup.oom_kills().saturating_sub(before.oom);
    let outcome = outcome(ended.interrupted, kills, ended.status);
    finish((config, round, outcome), env, before, &sampler, ended)
}

pub(crate) fn close_pidfd(pidfd: Option<i32>) {
    if let Some(fd) = pidfd {
        // SAFETY: fd came from pidfd_open and is closed once.
        unsafe { libc::close(fd) };
    }
}

/// The record of a run that ended as `ended` says, with `outcome`.
pub(crate) fn finish(
    (config, round, outcome): (&str, u32, Outcome),
    env: &RunEnv<'_>,
    before: Before,
    sampler: &Sampler<'_>,
    ended: Ended,
) -> io::Result<RunRecord> {
    let vm_after = vmstat(env.sys)?;
    let zram = env.zram_sys.and_then(|dir| {
        let end = read_mm_stat(env.sys, dir)?;
        Some(ZramStats {
            mm_stat_end: end,
            mm_stat_fullest: sampler.zram_fullest.unwrap_or(end),
        })
    });
    let zswap = env
        .zswap
        .then(|| zswap_stats(env.sys, sampler, before.debugfs));
    // A process the workload left behind may hold the pipe open: wait a
    // little, then read what came (the cgroup's removal kills it).
    let (stdout, cut) = ended
        .stdout
        .map_or((String::new(), false), |c| c.text(Duration::from_secs(2)));
    let mut metric_problems = Vec::new();
    if cut {
        metric_problems.push(format!(
            "the workload's output is longer than {} MiB: its readers saw the first {} MiB",
            STDOUT_KEEP >> 20,
            STDOUT_KEEP >> 20
        ));
    }
    let ru = ended.ru;
    Ok(RunRecord {
        config: config.to_string(),
        round,
        outcome,
        wall_s: ended.wall,
        user_s: tv(ru.ru_utime),
        sys_s: tv(ru.ru_stime),
        major_faults: ru.ru_majflt as u64,
        vm: VmCounters::delta(&before.vm, &vm_after),
        cgroup_peak_bytes: env.cgroup.peak(),
        zram,
        zswap,
        load1_start: before.load1,
        memory_pressure: pressure(env, before.psi.as_ref()),
        cgroup_settings: Vec::new(),
        metrics: crate::readers::read_output(&stdout),
        metric_problems,
        service: None,
    })
}

/// The workload's standard output as it is being copied to our standard
/// error (our standard output is the report), the first [`STDOUT_KEEP`]
/// bytes kept.
pub(crate) struct Captured {
    done: mpsc::Receiver<()>,
    kept: Arc<Mutex<(Vec<u8>, bool)>>,
}

fn capture(mut out: ChildStdout) -> Captured {
    let (tx, done) = mpsc::channel();
    let kept = Arc::new(Mutex::new((Vec::new(), false)));
    let k = Arc::clone(&kept);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = match out.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let _ = io::stderr().write_all(&buf[..n]);
            let mut k = k.lock().unwrap_or_else(|p| p.into_inner());
            let room = STDOUT_KEEP.saturating_sub(k.0.len());
            k.1 |= n > room;
            k.0.extend_from_slice(&buf[..n.min(room)]);
        }
        let _ = tx.send(());
    });
    Captured { done, kept }
}

impl Captured {
    /// What came so far (for a readiness line).
    pub(crate) fn peek(&self) -> String {
        let k = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&k.0).into_owned()
    }

    /// What was kept, once the pipe closed or `wait` passed; and whether
    /// there was more.
    fn text(self, wait: Duration) -> (String, bool) {
        let _ = self.done.recv_timeout(wait);
        let k = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        (String::from_utf8_lossy(&k.0).into_owned(), k.1)
    }
}

/// The run's memory pressure: its cgroup's (v2), else the system's change
/// since `start`.
fn pressure(env: &RunEnv<'_>, start: Option<&zmem_host::PsiFile>) -> Option<Pressure> {
    if let Some(end) = env.cgroup.pressure() {
        return Some(Pressure::of(PsiScope::Cgroup, &end, None));
    }
    let end = zmem_host::system_pressure(env.sys)?;
    Some(Pressure::of(PsiScope::System, &end, Some(start?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn vmstat_deltas() {
        let a =
            parse_vmstat("pswpin 10\npswpout 20\nzswpin 1\nzswpout 5\nzswpwb 0\nnr_free_pages 3\n");
        let b = parse_vmstat(
            "pswpin 15\npswpout 120\nzswpin 4\nzswpout 50\nzswpwb 2\nnr_free_pages 1\n",
        );
        let d = VmCounters::delta(&a, &b);
        assert_eq!(
            d,
            VmCounters {
                pswpin: 5,
                pswpout: 100,
                zswpin: Some(3),
                zswpout: Some(45),
                zswpwb: Some(2)
            }
        );
        let no_zswap = parse_vmstat("pswpin 1\npswpout 2\n");
        let d = VmCounters::delta(&no_zswap, &no_zswap);
        assert_eq!(d.zswpout, None);
        assert_eq!(d.pswpout, 0);
    }

    #[test]
    fn zswap_debugfs_counters() {
        let root = std::env::temp_dir().join(format!("zmem-debugfs-test.{}", std::process::id()));
        let h = Sys::new(&root);
        assert!(read_zswap_debugfs(&h).is_none(), "no debugfs, no counters");
        let dir = h.path("/sys/kernel/debug/zswap");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("pool_limit_hit"), "3\n").unwrap();
        fs::write(dir.join("written_back_pages"), "10\n").unwrap();
        fs::write(dir.join("stored_pages"), "99\n").unwrap();
        let before = read_zswap_debugfs(&h).unwrap();
        assert_eq!(before.len(), 2, "gauges are not counters");
        fs::write(dir.join("written_back_pages"), "25\n").unwrap();
        let d = debugfs_delta(&before, &read_zswap_debugfs(&h).unwrap());
        assert_eq!(d.get("written_back_pages"), Some(&15));
        assert_eq!(d.get("pool_limit_hit"), Some(&0));
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn meminfo_fields() {
        let t = "MemTotal:       24683968 kB\nZswap:              1234 kB\nZswapped:          5678 kB\n";
        assert_eq!(meminfo_kib(t, "Zswap"), Some(1234));
        assert_eq!(meminfo_kib(t, "Zswapped"), Some(5678));
        assert_eq!(meminfo_kib(t, "Nope"), None);
    }

    #[test]
    fn outcome_text() {
        assert!(Outcome::Exited { code: 0 }.ok());
        assert!(!Outcome::OomKilled { kills: 1 }.ok());
        assert_eq!(Outcome::OomKilled { kills: 1 }.short(), "oom-killed");
        assert_eq!(Outcome::Exited { code: 3 }.short(), "exit 3");
    }
}
