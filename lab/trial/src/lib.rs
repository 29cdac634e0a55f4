//! `zmem trial`: run a workload under real memory pressure, once per swap
//! configuration per round, and compare.
//!
//! Each run gets a fresh memory-limited cgroup ([`zmem_host::Cgroup`]) and a
//! freshly set up swap configuration ([`setup`]): a disk swap file zmem
//! creates, a hot-added kernel zram device, zswap in front of the disk file,
//! or zram with the disk file behind it. Both are torn down after the run.
//! Every change goes through the host layer ([`zmem_host`]): its undo is
//! recorded in a [`Guard`] and the crash journal before it is made, and undone
//! in reverse order on normal exit, error, panic and (through
//! [`SignalWatch`]) Ctrl-C/SIGTERM/SIGHUP; `zmem trial --recover` replays the
//! journal of a trial that was killed. Nothing zmem did not
//! set up is touched: existing swap areas, zram devices (zram0 …) and zswap
//! settings are only read, and their presence makes the trial refuse unless
//! forced.
//!
//! Modules, and what each one uses (arrows point one way; nothing below
//! uses anything above it):
//!
//! ```text
//! lib (preflight, run, recover)
//!  ├─► setup ──► config            (and zmem_host's Guard, swap calls)
//!  ├─► learn ──► measure (one unpressured run, watched)
//!  ├─► measure                     (and zmem_host's Cgroup)
//!  ├─► cgroup_settings ──► config  (the v2 settings of a run's cgroup)
//!  ├─► report ──► measure, judge
//!  ├─► measure ──► metrics, readers (the workload's own figures)
//!  ├─► judge ──► settle ──► stats   (`--metric`; the deciding statistics)
//!  └─► config, workload            (leaves)
//! ```
//!
//! * `setup`: one swap configuration, set up with its undos;
//! * `measure` (running and measuring one workload), [`report`]
//!   (statistics, table, CSV, serde structs), [`config`] (configuration
//!   names), [`workload`] (the built-in `memalloc`), [`learn`] (one run
//!   without pressure: time and anonymous footprint, with a hook on its
//!   processes);
//! * `metrics` (the `ZMEM_METRICS` protocol and its private file),
//!   `readers` (redis-benchmark, pgbench, fio and sysbench output), `judge`
//!   (the configurations judged by one metric: leader, behind, equivalent,
//!   undecided, failed);
//! * `stats` (medians with distribution-free intervals) and `settle`
//!   (ahead / equivalent / undecided from paired differences, the error
//!   each look may spend): the one copy of the deciding statistics, which
//!   trial, tune and the verdict all use (the verdict re-exports them).

mod as_conf;
mod cgroup_settings;
mod config;
mod judge;
mod learn;
mod measure;
mod metrics;
mod readers;
pub mod report;
mod service;
mod settle;
mod setup;
mod stats;
pub mod workload;

use std::cell::RefCell;
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::rc::Rc;

pub use cgroup_settings::CgroupSetting;
pub use config::{SwapConfig, TrialConfig, DISK_PRIORITY};
pub use judge::{
    judge, judge_at, rounds_for, unit_of, value as metric_value, Judged, MarginSpec,
    MetricDecision, MetricSpec, Standing, BUILTIN_METRICS, MARGIN_SHARE,
};
pub use learn::{learn, Learned};
pub use measure::ServiceTimes;
pub use measure::{Outcome, RunRecord, VmCounters, ZramStats, ZswapStats};
pub use metrics::{
    direction_of, Direction, Metric, MetricsFile, MAX_BYTES as METRICS_MAX_BYTES,
    MAX_LINES as METRICS_MAX_LINES, METRICS_ENV,
};
pub use readers::{read_output, Reader, READERS};
pub use report::{ConfigSummary, Stats, TrialReport};
pub use service::{Ready, ServiceSpec};
pub use settle::{
    look_error, look_index, next_look, separate, Call, Separation, FIRST_LOOK, TOTAL_ERROR,
};
pub use stats::{ci_rank, interval, interval_at, Interval};
pub use zmem_host::{CgroupVersion, Guard, MemoryHierarchy, Pressure, PsiScope, SignalWatch};

use zmem_conf::format_size;
use zmem_host as host;
use zmem_host::{Action, Cgroup, HotDevice, Journal, Sys, JOURNAL_DIR};

/// What to run and how.
#[derive(Debug, Clone)]
pub struct TrialSpec {
    /// RAM limit of the workload's cgroup, bytes.
    pub memory_limit: u64,
    /// Configurations in run order; each round runs all of them in this order
    /// (rotated by one more place every round with `interleave`).
    pub configs: Vec<TrialConfig>,
    /// Rotate the order every round, so slow drift of the machine spreads
    /// over every configuration instead of favouring the first.
    pub interleave: bool,
    /// Rounds.
    pub repeat: u32,
    /// Configuration the ratio column compares to (default: `disk` if present,
    /// else the first configuration).
    pub baseline: Option<String>,
    /// The workload: program and arguments.
    pub command: Vec<String>,
    /// Short name of the workload for the report.
    pub workload: String,
    /// Run even if existing swap or zswap state would distort the results.
    pub force: bool,
    /// Directory of the disk swap file.
    pub swap_dir: PathBuf,
    /// Disk swap file size, and zram size where the configuration gives none.
    pub swap_size: u64,
    /// Set vm.swappiness (and v1's memory.swappiness of the trial cgroup) for the trial.
    pub swappiness: Option<u32>,
    /// Set vm.page-cluster for the trial.
    pub page_cluster: Option<u32>,
    /// `--metric`: the figures that judge the configurations, the first
    /// deciding (empty: wall time).
    pub metrics: Vec<MetricSpec>,
    /// `--service`: a server in the cgroup and its load outside it (then
    /// `command` is empty).
    pub service: Option<ServiceSpec>,
    /// Stop running a configuration once the deciding metric (the first of
    /// `metrics`, else wall time) shows it clearly behind the leader, or a
    /// run of it failed, at the verdict's looks (round 6, 8, 11, …; each
    /// look spends its share of the error). `zmem tune` sets it.
    pub stop_behind: bool,
}

/// Why a trial did not run or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    /// Bad arguments.
    #[error("{0}")]
    Invalid(String),
    /// Not root, or kernel features missing.
    #[error("refusing to run: {}", .0.join("; "))]
    Refused(Vec<String>),
    /// Existing swap/zswap state would distort the measurements.
    #[error("refusing to run because existing state would distort the results (--force runs anyway): {}", .0.join("; "))]
    Distorting(Vec<String>),
    /// Ctrl-C/SIGTERM: what completed is in the report; everything was restored.
    #[error("interrupted by a signal after {} run(s); everything zmem set up was removed and restored", .0.runs.len())]
    Interrupted(Box<TrialReport>),
    /// Restoring something failed: the messages say what to fix by hand.
    #[error("cleanup failed, fix by hand: {}", .0.join("; "))]
    Cleanup(Vec<String>),
    /// Other I/O trouble.
    #[error("{0}")]
    Io(String),
}

/// The default baseline: `disk` if it is one of the configurations, else the first.
pub fn default_baseline(configs: &[TrialConfig]) -> String {
    if let Some(d) = configs.iter().find(|c| c.swap == SwapConfig::Disk) {
        d.to_string()
    } else {
        configs.first().map(|c| c.to_string()).unwrap_or_default()
    }
}

fn validate(spec: &TrialSpec) -> Result<(), TrialError> {
    let bad = |s: String| Err(TrialError::Invalid(s));
    if spec.configs.is_empty() {
        return bad("give at least one --config (none, disk, zram:ALGO[:SIZE], zram:ALGO[:SIZE]+disk, zswap:COMPRESSOR[:POOL%])".into());
    }
    let mut seen = HashSet::new();
    for c in &spec.configs {
        if !seen.insert(c.to_string()) {
            return bad(format!("configuration {c} is given twice"));
        }
    }
    if spec.repeat == 0 {
        return bad("--repeat must be at least 1".into());
    }
    if spec.memory_limit < 8 << 20 {
        return bad(format!(
            "--memory {} is too small (at least 8M)",
            format_size(spec.memory_limit)
        ));
    }
    if spec.service.is_some() {
        if !spec.command.is_empty() {
            return bad("give either --service and --load or a COMMAND, not both".into());
        }
    } else if spec.command.is_empty() {
        return bad("no workload: give `--builtin memalloc`, `-- COMMAND [ARGS]` or `--service CMD --load CMD`".into());
    } else if find_program(&spec.command[0]).is_none() {
        return bad(format!(
            "workload {:?} not found (not a file, and not in PATH)",
            spec.command[0]
        ));
    }
    if let Some(b) = &spec.baseline {
        if !spec
            .configs
            .iter()
            .any(|c| &c.to_string() == b || b.parse::<TrialConfig>().ok().as_ref() == Some(c))
        {
            return bad(format!("--baseline {b} is not one of the configurations"));
        }
    }
    if spec.swappiness.is_some_and(|s| s > 200) {
        return bad("--swappiness must be 0..=200".into());
    }
    if spec.page_cluster.is_some_and(|s| s > 31) {
        return bad("--page-cluster must be 0..=31".into());
    }
    if spec.swap_size < 1 << 20 {
        return bad("--swap-size must be at least 1M".into());
    }
    let mut names = HashSet::new();
    for m in &spec.metrics {
        if !names.insert(&m.name) {
            return bad(format!("--metric {} is given twice", m.name));
        }
    }
    Ok(())
}

/// Where `prog` would be executed from: itself if it contains a slash, else
/// the first executable file of that name in PATH.
fn find_program(prog: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let exec = |p: &Path| {
        fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if prog.is_empty() {
        return None;
    }
    if prog.contains('/') {
        let p = PathBuf::from(prog);
        return exec(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| exec(p))
}

/// Whether the kernel can give zswap this compressor (zmem-host asks /proc/crypto and
/// the module lists), naming the codec registry's compressors it has when not.
fn zswap_compressor_available(sys: &Sys, name: &str) -> Result<(), String> {
    zmem_host::zswap_compressor_available(sys, name, &zmem_codec::zswap_names())
}

/// The compressors zswap can use on this kernel, of the codec registry's crypto API names.
pub fn zswap_compressors(sys: &Sys) -> Vec<String> {
    zmem_host::zswap_compressors(sys, &zmem_codec::zswap_names())
}

/// Check everything before touching anything. Returns the objections `--force`
/// overrode (to print with the results).
pub fn preflight(
    spec: &TrialSpec,
    sys: &Sys,
) -> Result<(MemoryHierarchy, Vec<String>), TrialError> {
    validate(spec)?;
    refuse_unless_root_and_recovered(sys)?;
    let mut missing = Vec::new();
    let hierarchy = host::memory_hierarchy(sys)
        .map_err(|e| missing.push(e))
        .ok();
    let oversized = oversized_slot_tables(spec, sys);
    if !oversized.is_empty() && !spec.force {
        return Err(TrialError::Refused(oversized));
    }
    let needs_swap = spec.configs.iter().any(|c| c.swap != SwapConfig::None);
    if needs_swap && !sys.exists("/proc/swaps") {
        missing.push("the kernel has no swap support (/proc/swaps missing)".into());
    }
    missing_zram(spec, &mut missing);
    missing_zswap(spec, sys, &mut missing);
    missing_swap_dir(spec, &mut missing);
    for (knob, set) in [
        (
            host::SWAPPINESS,
            spec.swappiness.is_some() || spec.configs.iter().any(|c| c.swappiness.is_some()),
        ),
        (
            host::PAGE_CLUSTER,
            spec.page_cluster.is_some() || spec.configs.iter().any(|c| c.page_cluster.is_some()),
        ),
    ] {
        if set && !sys.exists(knob) {
            missing.push(format!("{knob} is missing"));
        }
    }
    if !missing.is_empty() {
        return Err(TrialError::Refused(missing));
    }
    let mut distorting = distorting_state(sys, needs_swap);
    if !distorting.is_empty() && !spec.force {
        return Err(TrialError::Distorting(distorting));
    }
    distorting.extend(oversized);
    let hierarchy = hierarchy.expect("checked above");
    Ok((hierarchy, distorting))
}

/// The zram configurations whose device's kernel slot table would take more than the share of
/// RAM `zmem apply` allows without `--force` (the one check, [`zmem_conf::slot_table_refusal`]);
/// nothing when MemTotal cannot be read.
fn oversized_slot_tables(spec: &TrialSpec, sys: &Sys) -> Vec<String> {
    let Some(ram) = sys.meminfo_get("MemTotal").ok().flatten() else {
        return Vec::new();
    };
    spec.configs
        .iter()
        .filter_map(|c| match &c.swap {
            SwapConfig::Zram { size, .. } | SwapConfig::ZramDisk { size, .. } => {
                let size = size.unwrap_or(spec.swap_size);
                zmem_conf::slot_table_refusal(&c.to_string(), size, ram)
            }
            _ => None,
        })
        .collect()
}

/// Not root, or a killed trial's journal still pending: refuse before anything else.
pub(crate) fn refuse_unless_root_and_recovered(sys: &Sys) -> Result<(), TrialError> {
    if !sys.is_fixture() && !zmem_files::euid_is_root() {
        return Err(TrialError::Refused(vec![
            "not running as root (a trial creates cgroups, swap areas and zram devices)".into(),
        ]));
    }
    hold_trial_lock(sys)?;
    let orphans = host::orphan_journals(sys, JOURNAL_DIR);
    if !orphans.is_empty() {
        let pids: Vec<String> = orphans.iter().map(|(p, _)| p.to_string()).collect();
        return Err(TrialError::Refused(vec![format!(
            "a previous zmem trial (pid {}) did not finish cleaning up (killed, or a cleanup step failed); run `zmem trial --recover` first (journal in {})",
            pids.join(", "),
            JOURNAL_DIR
        )]));
    }
    Ok(())
}

/// One trial (or tune, or `--recover`) at a time: two would change the same swap, zswap
/// and sysctls, each journaling the other's values as the ones to restore. Held until
/// this process exits; `--force` does not override it.
fn hold_trial_lock(sys: &Sys) -> Result<(), TrialError> {
    let path = sys.path(zmem_files::TRIAL_LOCK);
    zmem_files::hold_for_process(&path).map_err(|e| match e {
        zmem_files::LockError::Held { holder, .. } => TrialError::Refused(vec![format!(
            "another zmem that changes swap and zswap is running ({}, holding {}): two at \
             once would undo each other's swap, zswap and sysctl changes, so --force does not \
             override this; wait for it to finish (or stop it: Ctrl-C, SIGTERM)",
            zmem_files::describe_holder(holder),
            path.display()
        )]),
        e => TrialError::Io(format!("cannot take the trial lock: {e}")),
    })
}

/// The zram algorithms the configurations need, probed on a device of our
/// own (never zram0 or anyone else's).
fn missing_zram(spec: &TrialSpec, missing: &mut Vec<String>) {
    let zram_algos: Vec<&str> = spec
        .configs
        .iter()
        .filter_map(|c| c.swap.zram_algo())
        .collect();
    if zram_algos.is_empty() {
        return;
    }
    match HotDevice::create().and_then(|d| {
        d.algorithms()
            .map_err(|e| zmem_host::KernelZramUnavailable(e.to_string()))
    }) {
        Err(e) => missing.push(format!("{e} (needed by {})", zram_algos.join(", "))),
        Ok(have) => {
            for a in zram_algos {
                if !have.iter().any(|h| h == a) {
                    missing.push(format!(
                        "kernel zram has no algorithm {a} (it has: {})",
                        have.join(" ")
                    ));
                }
            }
        }
    }
}

/// zswap itself and the compressors the configurations need.
fn missing_zswap(spec: &TrialSpec, sys: &Sys, missing: &mut Vec<String>) {
    let zswap_comps: Vec<&str> = spec
        .configs
        .iter()
        .filter_map(|c| c.swap.zswap_compressor())
        .collect();
    if zswap_comps.is_empty() {
        return;
    }
    if !sys.exists(&format!("{}/enabled", host::ZSWAP_PARAMS)) {
        missing.push(format!(
            "the kernel has no zswap ({}/enabled missing)",
            host::ZSWAP_PARAMS
        ));
        return;
    }
    for c in zswap_comps {
        if let Err(e) = zswap_compressor_available(sys, c) {
            missing.push(e);
        }
    }
}

/// Room for the disk swap file, on a filesystem that can hold one.
fn missing_swap_dir(spec: &TrialSpec, missing: &mut Vec<String>) {
    if !spec.configs.iter().any(|c| c.swap.uses_disk()) {
        return;
    }
    if let Some(why) =
        host::swap_dir_refusal(&spec.swap_dir, spec.swap_size, 256 << 20, "--swap-dir")
    {
        missing.push(why);
    }
}

/// Existing swap areas and an enabled zswap: they would distort the results.
fn distorting_state(sys: &Sys, needs_swap: bool) -> Vec<String> {
    let mut distorting = Vec::new();
    match host::active_swaps(sys) {
        Ok(areas) => {
            for a in areas {
                let mut why = format!(
                    "swap is active on {} ({} of {} KiB used)",
                    a.device,
                    a.used >> 10,
                    a.size >> 10
                );
                if a.device.contains("/zmem-trial.") && a.device.ends_with(".swap") {
                    why.push_str(&format!(
                        " — left by a zmem trial that was killed with SIGKILL? remove it with `swapoff {0} && rm {0}`",
                        a.device
                    ));
                }
                distorting.push(why);
            }
        }
        Err(e) if needs_swap => distorting.push(format!("cannot read /proc/swaps: {e}")),
        Err(_) => {}
    }
    if host::read_knob(sys, &format!("{}/enabled", host::ZSWAP_PARAMS))
        .is_ok_and(|v| v == "Y" || v == "1")
    {
        distorting
            .push("zswap is enabled (it would sit in front of every swap configuration)".into());
    }
    distorting
}

/// Undo what trials that died without cleaning up (SIGKILL, crash) left
/// behind, from their crash journals. Returns what was done.
pub fn recover() -> Result<Vec<String>, TrialError> {
    if !zmem_files::euid_is_root() {
        return Err(TrialError::Refused(vec!["not running as root".into()]));
    }
    let sys = Sys::real();
    hold_trial_lock(&sys)?;
    let r = host::recover_journals(&sys, JOURNAL_DIR, "trial");
    if r.errors.is_empty() {
        Ok(r.done)
    } else {
        Err(TrialError::Cleanup(r.errors))
    }
}

/// Run the trial on this machine. `progress` gets a line per run.
pub fn run(
    spec: &TrialSpec,
    signals: &SignalWatch,
    progress: &mut dyn FnMut(&str),
) -> Result<TrialReport, TrialError> {
    let sys = Sys::real();
    let (hierarchy, forced_over) = preflight(spec, &sys)?;
    let journal = Rc::new(RefCell::new(Journal::create(&sys).map_err(|e| {
        TrialError::Io(format!("cannot create the crash journal: {e}"))
    })?));
    let trial = Trial {
        spec,
        sys: &sys,
        hierarchy: &hierarchy,
        journal: &journal,
        signals,
    };
    let mut done = Rounds::default();
    {
        let mut global = Guard::with_journal(&sys, "trial", Rc::clone(&journal));
        global
            .enable_memory_controller(&hierarchy)
            .map_err(|e| TrialError::Io(e.to_string()))?;
        set_sysctls(&mut global, spec.swappiness, spec.page_cluster).map_err(TrialError::Io)?;
        trial.run_rounds(&mut done, progress);
        done.cleanup_errors.extend(global.unwind());
    }
    if !done.cleanup_errors.is_empty() {
        return Err(TrialError::Cleanup(done.cleanup_errors));
    }
    let interrupted = done.interrupted;
    let report = build_report(spec, &sys, &hierarchy, forced_over, done);
    if interrupted {
        return Err(TrialError::Interrupted(Box::new(report)));
    }
    Ok(report)
}

/// vm.swappiness and vm.page-cluster, each when given, restored by `g`: the
/// trial's for its whole duration, a configuration's for its own runs.
fn set_sysctls(
    g: &mut Guard,
    swappiness: Option<u32>,
    page_cluster: Option<u32>,
) -> Result<(), String> {
    for (knob, value) in [
        (host::SWAPPINESS, swappiness),
        (host::PAGE_CLUSTER, page_cluster),
    ] {
        if let Some(v) = value {
            g.set_knob(knob, &v.to_string())
                .map_err(|e| format!("setting {knob} to {v}: {e}"))?;
        }
    }
    Ok(())
}

/// What the rounds produced so far.
#[derive(Default)]
struct Rounds {
    runs: Vec<RunRecord>,
    stopped: Vec<report::StoppedEarly>,
    cleanup_errors: Vec<String>,
    interrupted: bool,
}

/// Everything one trial's runs share.
struct Trial<'a> {
    spec: &'a TrialSpec,
    sys: &'a Sys,
    hierarchy: &'a MemoryHierarchy,
    journal: &'a Rc<RefCell<Journal>>,
    signals: &'a SignalWatch,
}

impl Trial<'_> {
    /// Every configuration, round after round, until done, a signal, or a
    /// cleanup failure (then the machine is not in a known state any more).
    fn run_rounds(&self, done: &mut Rounds, progress: &mut dyn FnMut(&str)) {
        let spec = self.spec;
        let pid = std::process::id();
        let mut n = 0u32;
        let k = spec.configs.len();
        let mut look_at = FIRST_LOOK;
        for round in 1..=spec.repeat {
            if spec.stop_behind && round as usize > look_at {
                look_at = next_look(round as usize - 1);
                self.stop_behind(round - 1, done, progress);
            }
            let shift = if spec.interleave {
                (round as usize - 1) % k
            } else {
                0
            };
            for cfg in (0..k).map(|j| &spec.configs[(j + shift) % k]) {
                if done.stopped.iter().any(|s| s.config == cfg.to_string()) {
                    continue;
                }
                if self.signals.fired() {
                    done.interrupted = true;
                    return;
                }
                n += 1;
                let name = cfg.to_string();
                progress(&format!("round {round}/{}: {name}", spec.repeat));
                let record = self.run_config(cfg, round, &format!("{pid}.{n}"), done);
                progress(&format!(
                    "round {round}/{}: {name}: {} in {:.2} s",
                    spec.repeat,
                    record.outcome.short(),
                    record.wall_s
                ));
                let stop = record.outcome == Outcome::Interrupted;
                done.runs.push(record);
                if stop {
                    done.interrupted = true;
                    return;
                }
                if !done.cleanup_errors.is_empty() {
                    return;
                }
            }
        }
    }

    /// A look after `rounds` rounds: the configurations clearly behind the
    /// leader in the deciding metric, or with a failed run, run no more.
    fn stop_behind(&self, rounds: u32, done: &mut Rounds, progress: &mut dyn FnMut(&str)) {
        let m = self
            .spec
            .metrics
            .first()
            .cloned()
            .unwrap_or_else(MetricSpec::wall);
        let running: Vec<String> = self
            .spec
            .configs
            .iter()
            .map(|c| c.to_string())
            .filter(|c| !done.stopped.iter().any(|s| &s.config == c))
            .collect();
        let d = judge_at(
            &done.runs,
            &running,
            &m,
            look_error(look_index(rounds as usize)),
        );
        let Some(leader) = d.leader.clone() else {
            return;
        };
        for j in d
            .judged
            .iter()
            .filter(|j| matches!(j.standing, Standing::Behind | Standing::Failed))
        {
            let why = match (j.standing, j.behind_leader) {
                (Standing::Behind, Some(i)) => format!(
                    "{leader} ahead in {} by {:.4} [{:.4}, {:.4}], beyond the margin {:.4}",
                    m.name, i.median, i.ci_low, i.ci_high, d.margin
                ),
                _ => "a run failed: it cannot win".into(),
            };
            progress(&format!("after round {rounds}: {} stops: {why}", j.config));
            done.stopped.push(report::StoppedEarly {
                config: j.config.clone(),
                after_round: rounds,
                why,
            });
        }
    }

    /// One run: set up `cfg` (and its own sysctls), run the workload in a
    /// fresh cgroup, tear down.
    fn run_config(&self, cfg: &TrialConfig, round: u32, tag: &str, done: &mut Rounds) -> RunRecord {
        let name = cfg.to_string();
        let mut g = Guard::with_journal(self.sys, name.clone(), Rc::clone(self.journal));
        if let Err(e) = set_sysctls(&mut g, cfg.swappiness, cfg.page_cluster) {
            done.cleanup_errors.extend(g.unwind());
            return RunRecord::not_run(name, round, Outcome::SetupFailed { error: e });
        }
        let params = setup::SetupParams {
            sys: self.sys,
            swap_dir: &self.spec.swap_dir,
            swap_size: self.spec.swap_size,
            tag,
        };
        let record = match setup::setup(&cfg.swap, &params, &mut g) {
            Err(e) => RunRecord::not_run(name, round, Outcome::SetupFailed { error: e }),
            Ok(prepared) => {
                let swappiness = cfg.swappiness.or(self.spec.swappiness);
                let settings = self.v2_settings(&cfg.swap);
                let run = (name.as_str(), round, tag);
                self.run_in_cgroup(run, &prepared, swappiness, &settings, done)
            }
        };
        done.cleanup_errors.extend(g.unwind());
        record
    }

    /// The cgroup v2 settings of a run of `swap` (none on v1), with zswap's
    /// `max_pool_percent` as the configuration's set-up left it.
    fn v2_settings(&self, swap: &SwapConfig) -> Vec<CgroupSetting> {
        if self.hierarchy.version != CgroupVersion::V2 {
            return Vec::new();
        }
        let pct = host::read_knob(
            self.sys,
            &format!("{}/max_pool_percent", host::ZSWAP_PARAMS),
        )
        .ok()
        .and_then(|v| v.trim().parse().ok());
        cgroup_settings::wanted(swap, self.spec.memory_limit, pct)
    }

    /// Create the run's cgroup (journaled) with its v2 settings, run the
    /// workload (`run`: name, round, tag) in it, remove it.
    fn run_in_cgroup(
        &self,
        (name, round, tag): (&str, u32, &str),
        prepared: &setup::Prepared,
        swappiness: Option<u32>,
        settings: &[CgroupSetting],
        done: &mut Rounds,
    ) -> RunRecord {
        let place = CgroupPlace {
            sys: self.sys,
            hierarchy: self.hierarchy,
            journal: self.journal,
        };
        let run = CgroupRun {
            command: &self.spec.command,
            service: self.spec.service.as_ref(),
            name,
            round,
            tag,
            limit: self.spec.memory_limit,
            swappiness,
            zram_sys: prepared.zram_sys.as_deref(),
            zswap: prepared.zswap,
            settings,
            stop: self.signals.flag(),
            observe: None,
        };
        let (record, cleanup) = place.run(&run);
        done.cleanup_errors.extend(cleanup);
        record
    }
}

/// Where workloads run: below the memory hierarchy's parent, each cgroup
/// journaled before it is created and unjournaled once it is removed.
pub(crate) struct CgroupPlace<'a> {
    pub(crate) sys: &'a Sys,
    pub(crate) hierarchy: &'a MemoryHierarchy,
    pub(crate) journal: &'a Rc<RefCell<Journal>>,
}

/// One workload run in a cgroup of its own.
pub(crate) struct CgroupRun<'a> {
    pub(crate) command: &'a [String],
    /// Instead of `command`: a service in the cgroup and its load outside.
    pub(crate) service: Option<&'a ServiceSpec>,
    pub(crate) name: &'a str,
    pub(crate) round: u32,
    /// Unique part of the cgroup's name.
    pub(crate) tag: &'a str,
    pub(crate) limit: u64,
    pub(crate) swappiness: Option<u32>,
    pub(crate) zram_sys: Option<&'a str>,
    pub(crate) zswap: bool,
    /// cgroup v2 settings written after memory.max (empty on v1).
    pub(crate) settings: &'a [CgroupSetting],
    pub(crate) stop: &'a std::sync::atomic::AtomicBool,
    pub(crate) observe: Option<&'a dyn Fn(&Cgroup)>,
}

impl CgroupPlace<'_> {
    /// Create the cgroup, run the workload in it, remove it. Returns the
    /// record and, if removing the cgroup failed, why.
    pub(crate) fn run(&self, r: &CgroupRun<'_>) -> (RunRecord, Option<String>) {
        let failed = |e: String| {
            RunRecord::not_run(r.name.into(), r.round, Outcome::SetupFailed { error: e })
        };
        let metrics_file = match metrics::MetricsFile::create(r.tag) {
            Ok(f) => f,
            Err(e) => {
                let why = format!("cannot create the run's {}: {e}", metrics::METRICS_ENV);
                return (failed(why), None);
            }
        };
        let cg_name = format!("zmem-trial.{}", r.tag);
        let cg_line =
            Action::RemoveCgroup(format!("{}/{cg_name}", self.hierarchy.parent)).to_line();
        if let Some(l) = &cg_line {
            self.journal.borrow_mut().push(l.clone());
        }
        let cg = match Cgroup::create(self.sys, self.hierarchy, &cg_name, r.limit, r.swappiness) {
            Ok(cg) => cg,
            Err(e) => {
                // `create` removed the directory again (or reported why not).
                if let Some(l) = &cg_line {
                    self.journal.borrow_mut().remove(l);
                }
                return (failed(e.to_string()), None);
            }
        };
        if let Err(e) = cgroup_settings::apply(&cg, r.settings) {
            let cleanup = cg.remove().err().map(|e| e.to_string());
            if cleanup.is_none() {
                if let Some(l) = &cg_line {
                    self.journal.borrow_mut().remove(l);
                }
            }
            return (failed(e), cleanup);
        }
        let env = measure::RunEnv {
            sys: self.sys,
            cgroup: &cg,
            zram_sys: r.zram_sys,
            zswap: r.zswap,
            stop: r.stop,
            observe: r.observe,
            metrics: Some(metrics_file.path()),
        };
        let measured = match r.service {
            Some(s) => service::run_service(s, r.name, r.round, &env),
            None => measure::run_workload(r.command, r.name, r.round, &env),
        };
        let mut record = measured.unwrap_or_else(|e| failed(e.to_string()));
        record.add_metrics(metrics_file.read());
        drop(metrics_file);
        record.cgroup_settings = cgroup_settings::read_back(&cg, r.settings);
        match cg.remove() {
            Ok(()) => {
                if let Some(l) = &cg_line {
                    self.journal.borrow_mut().remove(l);
                }
                (record, None)
            }
            Err(e) => (record, Some(e.to_string())),
        }
    }
}

/// The report of what ran.
fn build_report(
    spec: &TrialSpec,
    sys: &Sys,
    hierarchy: &MemoryHierarchy,
    forced_over: Vec<String>,
    done: Rounds,
) -> TrialReport {
    let baseline = match &spec.baseline {
        Some(b) => b
            .parse::<TrialConfig>()
            .map(|c| c.to_string())
            .unwrap_or_else(|_| b.clone()),
        None => default_baseline(&spec.configs),
    };
    let names: Vec<String> = spec.configs.iter().map(|c| c.to_string()).collect();
    let mut judged = spec.metrics.iter().map(|m| judge(&done.runs, &names, m));
    let decision = judged
        .next()
        .or_else(|| Some(judge(&done.runs, &names, &MetricSpec::wall())));
    let other_decisions = judged.collect();
    TrialReport {
        kernel: sys
            .read("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(0),
        cgroup: hierarchy.version,
        memory_limit: spec.memory_limit,
        swap_size: spec.swap_size,
        swappiness: spec.swappiness,
        page_cluster: spec.page_cluster,
        command: spec.command.clone(),
        workload: spec.workload.clone(),
        repeat: spec.repeat,
        summaries: report::summarise(&names, &baseline, &done.runs),
        baseline,
        configs: names,
        forced_over,
        interrupted: done.interrupted,
        decision,
        other_decisions,
        stopped_early: done.stopped,
        runs: done.runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> TrialSpec {
        TrialSpec {
            memory_limit: 64 << 20,
            configs: vec![SwapConfig::None.into(), SwapConfig::Disk.into()],
            interleave: false,
            repeat: 1,
            baseline: None,
            command: vec!["true".into()],
            workload: "true".into(),
            force: false,
            swap_dir: std::env::temp_dir(),
            swap_size: 128 << 20,
            swappiness: None,
            page_cluster: None,
            metrics: vec![],
            service: None,
            stop_behind: false,
        }
    }

    #[test]
    fn validation_errors() {
        let mut s = spec();
        s.configs.push(SwapConfig::Disk.into());
        assert!(validate(&s).unwrap_err().to_string().contains("twice"));
        let mut s = spec();
        s.repeat = 0;
        assert!(validate(&s).is_err());
        let mut s = spec();
        s.baseline = Some("zram:lz4".into());
        assert!(validate(&s).unwrap_err().to_string().contains("--baseline"));
        let mut s = spec();
        s.command.clear();
        assert!(validate(&s)
            .unwrap_err()
            .to_string()
            .contains("no workload"));
        let mut s = spec();
        s.command = vec!["/nonexistent/zmem-no-such-program".into()];
        assert!(validate(&s).unwrap_err().to_string().contains("not found"));
        s.command = vec!["zmem-no-such-program-in-path".into()];
        assert!(validate(&s).unwrap_err().to_string().contains("not found"));
        s.command = vec!["/bin/sh".into(), "-c".into(), "true".into()];
        assert!(validate(&s).is_ok());
        let mut s = spec();
        s.swappiness = Some(201);
        assert!(validate(&s).is_err());
        let mut s = spec();
        s.memory_limit = 1 << 20;
        assert!(validate(&s).is_err());
        let mut s = spec();
        s.metrics = vec![
            "get_max_ms".parse().unwrap(),
            "get_max_ms:5".parse().unwrap(),
        ];
        assert!(validate(&s)
            .unwrap_err()
            .to_string()
            .contains("given twice"));
        assert!(validate(&spec()).is_ok());
        assert_eq!(default_baseline(&spec().configs), "disk");
        assert_eq!(
            default_baseline(&[SwapConfig::Zram {
                algo: "lz4".into(),
                size: None
            }
            .into()]),
            "zram:lz4"
        );
    }

    /// A fake machine: cgroup v1 memory, no swap, zswap off.
    fn fake_host(tag: &str) -> (PathBuf, Sys) {
        let root =
            std::env::temp_dir().join(format!("zmem-trial-pre.{}.{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let h = Sys::new(&root);
        fs::create_dir_all(h.path("/proc/self")).unwrap();
        fs::write(
            h.path("/proc/self/mountinfo"),
            "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
        )
        .unwrap();
        fs::write(h.path("/proc/self/cgroup"), "4:memory:/\n").unwrap();
        fs::create_dir_all(h.path("/sys/fs/cgroup/memory")).unwrap();
        fs::write(
            h.path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
            "9223372036854771712\n",
        )
        .unwrap();
        fs::write(
            h.path("/proc/swaps"),
            "Filename\tType\tSize\tUsed\tPriority\n",
        )
        .unwrap();
        fs::create_dir_all(h.path(host::ZSWAP_PARAMS)).unwrap();
        fs::write(h.path(host::ZSWAP_PARAMS).join("enabled"), "N\n").unwrap();
        fs::write(
            h.path("/proc/crypto"),
            "name         : lzo\ndriver       : lzo-generic\n",
        )
        .unwrap();
        fs::create_dir_all(h.path("/proc/sys/kernel")).unwrap();
        fs::write(h.path("/proc/sys/kernel/osrelease"), "6.18.0\n").unwrap();
        (root, h)
    }

    #[test]
    fn preflight_passes_on_a_clean_machine() {
        let (root, h) = fake_host("clean");
        let mut s = spec();
        s.configs.push(
            SwapConfig::Zswap {
                compressor: "lzo".into(),
                pool_percent: None,
            }
            .into(),
        );
        let (hier, forced) = preflight(&s, &h).unwrap();
        assert_eq!(hier.version, CgroupVersion::V1);
        assert!(forced.is_empty());
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn preflight_refuses_active_swap_and_zswap_unless_forced() {
        let (root, h) = fake_host("busy");
        fs::write(
            h.path("/proc/swaps"),
            "Filename\tType\tSize\tUsed\tPriority\n/dev/vdb partition 1048572 512 -2\n",
        )
        .unwrap();
        fs::write(h.path(host::ZSWAP_PARAMS).join("enabled"), "Y\n").unwrap();
        let e = preflight(&spec(), &h).unwrap_err();
        let TrialError::Distorting(why) = e else {
            panic!("{e}")
        };
        assert_eq!(why.len(), 2);
        assert!(why[0].contains("/dev/vdb") && why[1].contains("zswap is enabled"));
        let mut s = spec();
        s.force = true;
        let (_, forced) = preflight(&s, &h).unwrap();
        assert_eq!(forced.len(), 2);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_zram_whose_slot_table_takes_a_large_share_of_ram_is_named() {
        let (root, h) = fake_host("table");
        let mut s = spec();
        s.configs = vec![
            "zram:lzo:16G".parse().unwrap(),
            "zram:lzo:1G".parse().unwrap(),
            "zram:lzo".parse().unwrap(),
        ];
        assert!(
            oversized_slot_tables(&s, &h).is_empty(),
            "MemTotal unknown: nothing to go by"
        );
        fs::write(h.path("/proc/meminfo"), "MemTotal:        1048576 kB\n").unwrap();
        let why = oversized_slot_tables(&s, &h);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(
            why[0].starts_with("zram:lzo:16G: disksize 16384 MiB"),
            "{why:?}"
        );
        assert!(why[0].contains("--force"), "{why:?}");
        s.swap_size = 64 << 30;
        assert_eq!(
            oversized_slot_tables(&s, &h).len(),
            2,
            "the default size counts too"
        );
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn preflight_names_missing_features() {
        let (root, h) = fake_host("missing");
        fs::remove_file(h.path(host::ZSWAP_PARAMS).join("enabled")).unwrap();
        let mut s = spec();
        s.configs.push(
            SwapConfig::Zswap {
                compressor: "lzo".into(),
                pool_percent: None,
            }
            .into(),
        );
        let e = preflight(&s, &h).unwrap_err().to_string();
        assert!(e.contains("no zswap"), "{e}");
        fs::write(h.path(host::ZSWAP_PARAMS).join("enabled"), "N\n").unwrap();
        s.configs[2] = SwapConfig::Zswap {
            compressor: "zstd".into(),
            pool_percent: None,
        }
        .into();
        let e = preflight(&s, &h).unwrap_err().to_string();
        assert!(
            e.contains("zswap compressor zstd is not available") && e.contains("available: lzo"),
            "{e}"
        );
        fs::write(h.path("/proc/self/mountinfo"), "").unwrap();
        let e = preflight(&spec(), &h).unwrap_err().to_string();
        assert!(e.contains("no usable memory cgroup"), "{e}");
        fs::remove_dir_all(root).unwrap();
    }
}
