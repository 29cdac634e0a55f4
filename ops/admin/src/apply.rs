//! `zmem apply`: bring the kernel's zram devices, sysctls, zswap and the disk swap tier to
//! what a configuration file says, in the kernel's order, idempotently, with rollback on
//! failure and a saved undo list for `--revert`.
//!
//! The plan is a list of steps; each step is one host-layer [`Action`] (an attribute write,
//! hot_add/hot_remove, mkswap/swapon/swapoff, a command) with the actions that undo it.
//! This file makes the plan (reads only); `apply/run.rs` executes it, each step's undo written to
//! the crash journal (`/run/zmem/apply-journal/PID.journal`, fsynced) before the step is
//! made; when one fails, the undo actions of the steps already done run in reverse order.
//! After a successful run the journal's lines are added to `/run/zmem/apply.state` (the
//! same format, oldest first) and `--revert` runs them bottom to top — together with the
//! journal of an apply that was killed before it finished.

use std::collections::BTreeSet;
use std::fmt;
use std::io;

use crate::zram::{self, ZramDevice};
use crate::zswap;
use zmem_conf::{self as config, Algorithms, Config, DeviceConfig};
mod run;

pub use run::{execute, journal_dir, revert, revert_ops};
use zmem_conf::bytes;
pub use zmem_host::Action;
use zmem_host::Sys;
use zmem_kernel::SwapEntry;

/// Where the undo list is kept, inside the state directory (`/run/zmem` in the root tree).
pub const STATE_NAME: &str = "apply.state";

/// The undo list's path (kernel-style, inside the root).
pub fn state_file(sys: &Sys) -> String {
    format!("{}/{STATE_NAME}", sys.state_dir())
}

/// One step: an operation and what undoes it (run in the order given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub op: Action,
    pub undo: Vec<Action>,
}

/// What apply will do.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub steps: Vec<Step>,
    /// Things worth telling (devices already configured, skipped sections, warnings).
    pub notes: Vec<String>,
    /// `compression-algorithm` strings to record per device after success (`zram0`, text).
    pub(crate) applied_algorithms: Vec<(String, String)>,
}

/// Why apply did not happen or did not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    /// The kernel lacks a feature the config needs; nothing was changed.
    MissingFeature(String),
    /// A device is in use and would need a reset; nothing was changed.
    InUse(String),
    /// Reading the system failed; nothing was changed.
    Read(String),
    /// Applying would destroy data zmem did not create (without --force); nothing was changed.
    Refused(String),
    /// A step failed; the steps before it were rolled back.
    Failed {
        error: String,
        rolled_back: usize,
        rollback_errors: Vec<String>,
    },
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::MissingFeature(s)
            | ApplyError::InUse(s)
            | ApplyError::Read(s)
            | ApplyError::Refused(s) => {
                write!(f, "{s} (nothing was changed)")
            }
            ApplyError::Failed {
                error,
                rolled_back,
                rollback_errors,
            } if rollback_errors.is_empty() => {
                write!(
                    f,
                    "{error}; rolled back the {rolled_back} change(s) made before it"
                )
            }
            ApplyError::Failed {
                error,
                rolled_back,
                rollback_errors,
            } => write!(
                f,
                "{error}; rolling back {rolled_back} change(s) had errors: {}",
                rollback_errors.join("; ")
            ),
        }
    }
}

impl std::error::Error for ApplyError {}

fn read_err(e: io::Error) -> ApplyError {
    ApplyError::Read(e.to_string())
}

/// Options of a plan.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Allow resetting devices that are swapped on or mounted.
    pub force: bool,
}

/// zram's Kconfig option for `algo`'s backend (the codec registry's).
fn backend_config(algo: &str) -> String {
    match zmem_codec::find(algo)
        .ok()
        .and_then(|b| b.info().zram_kconfig)
    {
        Some(k) => k.to_string(),
        None => format!("CONFIG_ZRAM_BACKEND_{}", algo.to_ascii_uppercase()),
    }
}

/// The first of `algo`'s nearest kernel algorithms (the codec registry's) that
/// this kernel offers; for a name the registry lacks, zram's default and its nearest.
fn nearest(algo: &str, offered: &[String]) -> Option<String> {
    let default = zmem_codec::ZRAM_DEFAULT;
    let order: Vec<&zmem_codec::AlgorithmInfo> = match zmem_codec::find(algo) {
        Ok(b) => zmem_codec::nearest(b.info()).to_vec(),
        Err(_) => std::iter::once(default)
            .chain(zmem_codec::nearest(default).iter().copied())
            .collect(),
    };
    order
        .iter()
        .find(|a| offered.iter().any(|o| o == a.name))
        .map(|a| a.name.to_string())
}

fn missing_algo(dev: &str, algo: &str, offered: &[String], role: &str) -> ApplyError {
    let alt = match nearest(algo, offered) {
        Some(a) => format!("nearest alternative this kernel has: {a}; or "),
        None => String::new(),
    };
    ApplyError::MissingFeature(format!(
        "{dev}: this kernel's zram has no {algo} backend ({}) for the {role} algorithm; it offers {}. {alt}run {algo} in user space with `zmem serve --algo {algo}` (at boot zram-generator writes it, the kernel refuses it and the device keeps its default)",
        backend_config(algo),
        offered.join(", ")
    ))
}

fn algorithms_text(d: &DeviceConfig) -> String {
    match &d.algorithms {
        None => String::new(),
        Some(a) => {
            let mut v = vec![a.primary.to_config()];
            v.extend(a.recompress.iter().map(|x| x.to_config()));
            v.join(" ")
        }
    }
}

/// Whether an initialised device already has what the section asks for.
fn device_matches(sys: &Sys, d: &DeviceConfig, cur: &ZramDevice, disksize: u64) -> bool {
    if cur.disksize != disksize.div_ceil(4096) * 4096 {
        return false;
    }
    if let Some(a) = &d.algorithms {
        if cur.algorithm.as_deref() != Some(a.primary.name.as_str()) {
            return false;
        }
        let want: Vec<(u32, String)> = a
            .recompress
            .iter()
            .enumerate()
            .map(|(i, x)| (i as u32 + 1, x.name.clone()))
            .collect();
        if cur.recompression.clone().unwrap_or_default() != want {
            return false;
        }
        // algorithm_params cannot be read back: compare with what zmem applied last.
        let has_params =
            a.primary.params.len() + a.recompress.iter().map(|x| x.params.len()).sum::<usize>() > 0;
        let recorded = sys
            .read_opt(&format!("{}/{}.algorithms", sys.state_dir(), d.name))
            .ok()
            .flatten();
        if has_params && recorded.as_deref().map(str::trim) != Some(algorithms_text(d).as_str()) {
            return false;
        }
    }
    let want_bd = d.writeback_device.clone();
    if cur.backing_dev.clone().flatten() != want_bd {
        return false;
    }
    true
}

/// Undo operations that bring an initialised device back to how it is now (after a reset).
fn restore_ops(cur: &ZramDevice) -> Vec<Action> {
    let dir = cur.dir();
    let mut v = vec![Action::write(format!("{dir}/reset"), "1")];
    if !cur.initialised {
        return v;
    }
    if let Some(Some(b)) = &cur.backing_dev {
        v.push(Action::write(format!("{dir}/backing_dev"), b.as_str()));
    }
    if let Some(a) = &cur.algorithm {
        v.push(Action::write(format!("{dir}/comp_algorithm"), a.as_str()));
    }
    for (p, a) in cur.recompression.clone().unwrap_or_default() {
        v.push(Action::write(
            format!("{dir}/recomp_algorithm"),
            format!("algo={a} priority={p}"),
        ));
    }
    if cur.mm.mem_limit > 0 {
        v.push(Action::write(
            format!("{dir}/mem_limit"),
            cur.mm.mem_limit.to_string(),
        ));
    }
    v.push(Action::write(
        format!("{dir}/disksize"),
        cur.disksize.to_string(),
    ));
    if cur.swap.is_some() {
        v.push(Action::Mkswap(cur.dev_path()));
    }
    v
}

/// Work out what has to change. Reads only; nothing is written.
pub fn plan(sys: &Sys, cfg: &Config, opts: Options) -> Result<Plan, ApplyError> {
    let mut planner = Planner::new(sys, cfg, opts)?;
    for d in &planner.devices(cfg)? {
        if let Some(mp) = &d.mount_point {
            check_mount_point(&d.name, mp, opts.force)?;
        }
        planner.device(d)?;
    }
    planner.disk_swap()?;
    planner.sysctls()?;
    planner.zswap()?;
    planner.warn_zswap_in_front_of_zram();
    Ok(planner.plan)
}

/// What `zmem apply --dry-run` prints: the configuration's warnings, the plan's notes (each
/// after `# `), then every operation in order, or that there is nothing to do.
pub fn render_dry_run(cfg: &Config, plan: &Plan) -> String {
    let mut out = String::new();
    for w in &cfg.warnings {
        out.push_str(&format!("# warning: {w}\n"));
    }
    for n in &plan.notes {
        out.push_str(&format!("# {n}\n"));
    }
    if plan.steps.is_empty() {
        out.push_str(&format!(
            "nothing to do: the system already matches {}\n",
            cfg.file.display()
        ));
    }
    for s in &plan.steps {
        out.push_str(&format!("{}\n", s.op));
    }
    out
}

/// The plan being built and what it is built from.
struct Planner<'a> {
    sys: &'a Sys,
    cfg: &'a Config,
    opts: Options,
    plan: Plan,
    /// MemTotal in whole MiB, the `ram` of size expressions (as zram-generator).
    ram_mib: f64,
    /// MemTotal in bytes, and the disksize of the devices planned so far: their slot tables'
    /// share of RAM is bounded ([`config::slot_table_refusal`]).
    mem_total: u64,
    disksize_total: u64,
    /// Ids of the zram devices that exist, or will once the plan's hot_adds run.
    ids: BTreeSet<u32>,
    /// No id below this one is free (hot_add's next id is at or above it): the planner only
    /// adds ids, so it only moves up, and planning `[zramN]` costs O(N log N), not O(N³).
    lowest_free: u32,
    /// What any existing device tells about the kernel (for devices still to be created).
    probe: Option<ZramDevice>,
    /// (device, mount point) of the devices mounted so far.
    mounts: Vec<(String, String)>,
}

impl<'a> Planner<'a> {
    fn new(sys: &'a Sys, cfg: &'a Config, opts: Options) -> Result<Planner<'a>, ApplyError> {
        let mem_total = sys
            .meminfo_get("MemTotal")
            .map_err(|e| {
                ApplyError::Read(format!(
                    "{}: {e} (the size expressions' `ram` is its MemTotal)",
                    sys.path("/proc/meminfo").display()
                ))
            })?
            .ok_or_else(|| ApplyError::Read("no MemTotal in /proc/meminfo".into()))?;
        let existing = zram::list_devices(sys).map_err(read_err)?;
        let ids = existing
            .iter()
            .filter_map(|n| n.strip_prefix("zram")?.parse().ok())
            .collect();
        let probe = match existing.first() {
            Some(n) => Some(zram::read_device(sys, n).map_err(read_err)?),
            None => None,
        };
        Ok(Planner {
            sys,
            cfg,
            opts,
            plan: Plan::default(),
            // zram-generator's `ram`: MemTotal's kB / 1024, truncated to whole MiB
            // (src/config.rs: `get_total_memory_kb(..)? / 1024`).
            ram_mib: (mem_total / 1048576) as f64,
            mem_total,
            disksize_total: 0,
            ids,
            lowest_free: 0,
            probe,
            mounts: Vec::new(),
        })
    }

    /// The devices to set up: the configuration's, unless the kernel command line's
    /// `systemd.zram` says otherwise (zram-generator's `kernel_zram_option`): `=0` sets up
    /// none, `=1` (or the bare word) adds a zram0 with the defaults when there is none.
    fn devices(&mut self, cfg: &Config) -> Result<Vec<DeviceConfig>, ApplyError> {
        let cmdline = self.sys.read_opt("/proc/cmdline").map_err(read_err)?;
        let mut devices = cfg.devices.clone();
        match cmdline.as_deref().and_then(config::kernel_zram_option) {
            Some(false) => {
                if !devices.is_empty() {
                    self.plan.notes.push(format!(
                        "systemd.zram=0 on the kernel command line: the {} zram device section(s) are not set up (as zram-generator)",
                        devices.len()
                    ));
                }
                devices.clear();
            }
            Some(true) if !devices.iter().any(|d| d.id == 0) => {
                self.plan.notes.push(
                    "systemd.zram on the kernel command line: zram0 added with zram-generator's defaults (zram-size = min(ram / 2, 4096))".into(),
                );
                devices.insert(0, DeviceConfig::new(0, 0));
            }
            _ => {}
        }
        Ok(devices)
    }

    fn step(&mut self, op: Action, undo: Vec<Action>) {
        self.plan.steps.push(Step { op, undo });
    }

    /// One `[zramN]` section: create or reset the device, configure it, swap on or mount it.
    fn device(&mut self, d: &DeviceConfig) -> Result<(), ApplyError> {
        let Some((size, resident)) = self.device_sizes(d)? else {
            return Ok(());
        };
        if d.is_plain() {
            return self.plain_device(d);
        }
        self.one_device_per_mount_point(d)?;
        if d.fs_type == "none" {
            let boot = if d.mount_point.is_some() {
                "at boot zram-generator generates a mount unit for it and its setup fails (there is no filesystem `none`)"
            } else {
                "at boot zram-generator generates no unit for a device without swap or mount point, so after a reboot it is created and left unconfigured"
            };
            self.plan.notes.push(format!(
                "warning: {}: fs-type = none (zmem's extension): configured here and neither swapped on nor mounted, but {boot}",
                d.name
            ));
        }
        let cur = if self.ids.contains(&d.id) {
            Some(zram::read_device(self.sys, &d.name).map_err(read_err)?)
        } else {
            None
        };
        // Feature checks against this device or, if it does not exist yet, any zram device.
        if let Some(k) = cur.as_ref().or(self.probe.as_ref()) {
            check_features(d, k)?;
        }
        let dir = format!("/sys/block/{}", d.name);
        let configure = match &cur {
            None => {
                self.hot_add(d)?;
                Some(Vec::new())
            }
            Some(c) if c.initialised && device_matches(self.sys, d, c, size) => {
                self.plan.notes.push(format!(
                    "{}: already configured ({} {}), left as it is",
                    d.name,
                    c.algorithm.as_deref().unwrap_or("?"),
                    bytes(c.disksize)
                ));
                None
            }
            Some(c) if c.initialised => {
                self.reset(d, c)?;
                Some(Vec::new())
            }
            // An existing uninitialised device: the first write's undo resets it.
            Some(_) => Some(vec![Action::write(format!("{dir}/reset"), "1")]),
        };
        match (configure, &cur) {
            (Some(first_undo), _) => {
                self.claim_backing(d, cur.as_ref())?;
                self.configure(d, size, resident, first_undo);
                self.device_use(d, true, None, None);
            }
            (None, Some(c)) => {
                self.mem_limit(d, c, resident);
                self.device_use(d, false, c.swap.clone(), c.mount.clone());
            }
            (None, None) => unreachable!("only existing devices are left as they are"),
        }
        Ok(())
    }

    /// Two devices set up on one mount point are refused: zram-generator writes the first's
    /// mount unit, then fails on the second's "File exists" (src/generator.rs:22-27, 335-339)
    /// and the generator stops. Devices skipped on this machine do not count, as there.
    fn one_device_per_mount_point(&mut self, d: &DeviceConfig) -> Result<(), ApplyError> {
        let Some(mp) = &d.mount_point else {
            return Ok(());
        };
        if let Some((other, _)) = self.mounts.iter().find(|(_, m)| m == mp) {
            return Err(ApplyError::Refused(
                self.cfg
                    .err(
                        d.line,
                        format!(
                            "[{other}] and [{}] both have mount-point {mp}: one mount point takes one device (at boot zram-generator fails with \"File exists\" and stops)",
                            d.name
                        ),
                    )
                    .to_string(),
            ));
        }
        self.mounts.push((d.name.clone(), mp.clone()));
        Ok(())
    }

    /// A plain device (`fs-type` without `mount-point`): zram-generator generates no unit for
    /// it (src/generator.rs: `handle_zram_mount_point` returns early), so at boot it is created
    /// by hot_add and never configured nor formatted; zmem does the same, and says so.
    fn plain_device(&mut self, d: &DeviceConfig) -> Result<(), ApplyError> {
        self.plan.notes.push(format!(
            "warning: {}: fs-type = {} without mount-point: zram-generator generates no unit for it, so it is created and left unconfigured (not formatted), at boot too; add mount-point to use it",
            d.name, d.fs_type
        ));
        if !self.ids.contains(&d.id) {
            self.hot_add(d)?;
        }
        Ok(())
    }

    /// disksize and mem_limit in bytes, or `None` (with a note) when the section is skipped
    /// on this machine.
    fn device_sizes(&mut self, d: &DeviceConfig) -> Result<Option<(u64, u64)>, ApplyError> {
        let ram_mib = self.ram_mib;
        if let Some(limit) = d.host_memory_limit {
            if ram_mib > limit as f64 {
                self.plan.notes.push(format!(
                    "{}: skipped, MemTotal {:.0} MiB is above host-memory-limit {limit} MiB",
                    d.name, ram_mib
                ));
                return Ok(None);
            }
        }
        let size = d.zram_size.eval_bytes(ram_mib).map_err(|e| {
            ApplyError::Read(
                self.cfg
                    .expr_err(&d.zram_size, format!("zram-size: {e}"))
                    .to_string(),
            )
        })?;
        if size == 0 {
            self.plan.notes.push(format!(
                "{}: skipped, zram-size `{}` is 0 on this machine",
                d.name, d.zram_size.source
            ));
            return Ok(None);
        }
        self.slot_tables(d, size)?;
        let resident = match &d.resident_limit {
            Some(e) => e.eval_bytes(ram_mib).map_err(|r| {
                ApplyError::Read(
                    self.cfg
                        .expr_err(e, format!("zram-resident-limit: {r}"))
                        .to_string(),
                )
            })?,
            None => 0,
        };
        Ok(Some((size, resident)))
    }

    /// Count `d`'s disksize into the devices' total and refuse (a note with --force) when
    /// their slot tables would take more than the bounded share of RAM.
    fn slot_tables(&mut self, d: &DeviceConfig, size: u64) -> Result<(), ApplyError> {
        self.disksize_total = self.disksize_total.saturating_add(size);
        let what = if self.disksize_total == size {
            format!("{} (zram-size = {})", d.name, d.zram_size.source)
        } else {
            format!("the devices up to {} together", d.name)
        };
        let Some(why) = config::slot_table_refusal(&what, self.disksize_total, self.mem_total)
        else {
            return Ok(());
        };
        if self.opts.force {
            self.plan.notes.push(format!("warning (--force): {why}"));
            return Ok(());
        }
        let boot = "at boot zram-generator writes such a disksize as it is, and the kernel allocates the table";
        Err(ApplyError::Refused(
            self.cfg
                .expr_err(&d.zram_size, format!("{why} ({boot})"))
                .to_string(),
        ))
    }

    /// Create the device through /sys/class/zram-control/hot_add, which takes the lowest free
    /// id: as zram-generator's `run_generator`, hot_add is read until it returns the
    /// section's number, so `[zram11]` also creates the free ids below 11 (left
    /// unconfigured; `--revert` removes them again).
    fn hot_add(&mut self, d: &DeviceConfig) -> Result<(), ApplyError> {
        if !self.sys.exists("/sys/class/zram-control/hot_add") {
            return Err(ApplyError::MissingFeature(format!(
                "{} does not exist and this kernel has no /sys/class/zram-control/hot_add (is the zram module loaded? `modprobe zram`)",
                d.name
            )));
        }
        let mut added = Vec::new();
        while let Some(next) = self.next_free().filter(|&n| n <= d.id) {
            self.ids.insert(next);
            added.push(next);
            let dir = format!("/sys/block/zram{next}");
            self.step(
                Action::HotAdd(next),
                vec![
                    Action::write(format!("{dir}/reset"), "1"),
                    Action::HotRemove(next),
                ],
            );
        }
        if added.len() > 1 {
            let below = &added[..added.len() - 1];
            let names = if below.len() <= 16 {
                let v: Vec<String> = below.iter().map(|i| format!("zram{i}")).collect();
                v.join(" ")
            } else {
                format!(
                    "{} devices, zram{} to zram{}",
                    below.len(),
                    below[0],
                    below[below.len() - 1]
                )
            };
            self.plan.notes.push(format!(
                "{}: hot_add gives the lowest free number, so it first creates {names} (left unconfigured, as zram-generator leaves them)",
                d.name
            ));
        }
        Ok(())
    }

    /// The id hot_add would return next (the lowest free one), `None` past the kernel's last.
    fn next_free(&mut self) -> Option<u32> {
        while self.ids.contains(&self.lowest_free) {
            self.lowest_free = self.lowest_free.checked_add(1)?;
        }
        Some(self.lowest_free)
    }

    /// Swapoff, unmount (only with --force when in use) and reset an initialised device whose
    /// configuration differs.
    fn reset(&mut self, d: &DeviceConfig, c: &ZramDevice) -> Result<(), ApplyError> {
        if c.in_use() && !self.opts.force {
            return Err(in_use(d, c));
        }
        let dev = format!("/dev/{}", d.name);
        if let Some(s) = &c.swap {
            self.plan.steps.push(swapoff_step(&dev, s.priority));
        }
        if let Some(m) = &c.mount {
            let fstype = self
                .sys
                .mounts()
                .map_err(read_err)?
                .into_iter()
                .find(|x| x.0 == dev)
                .map(|x| x.2)
                .unwrap_or_else(|| "auto".into());
            self.step(
                Action::run(&["umount", m]),
                vec![Action::Run(vec![
                    "mount".into(),
                    "-t".into(),
                    fstype,
                    dev.clone(),
                    m.clone(),
                ])],
            );
        }
        self.step(
            Action::write(format!("/sys/block/{}/reset", d.name), "1"),
            restore_ops(c),
        );
        Ok(())
    }

    /// The writeback-device checked as the kernel claims it (host's `backing::claim`: not
    /// mounted, swapped on or held, no data unless --force), before anything is planned on it;
    /// not when this device already has it (the kernel holds it then), nor on a fixture tree.
    fn claim_backing(&self, d: &DeviceConfig, cur: Option<&ZramDevice>) -> Result<(), ApplyError> {
        let Some(b) = &d.writeback_device else {
            return Ok(());
        };
        let held = cur.and_then(|c| c.backing_dev.clone().flatten()).as_deref() == Some(b.as_str());
        if held || self.sys.is_fixture() {
            return Ok(());
        }
        zmem_host::backing::claim(std::path::Path::new(b), self.opts.force)
            .map(drop)
            .map_err(|e| ApplyError::Refused(format!("{}: writeback-device: {e}", d.name)))
    }

    /// The attribute writes of setup, in the kernel's order (disksize last); the first one is
    /// undone by `first_undo`.
    fn configure(&mut self, d: &DeviceConfig, size: u64, resident: u64, first_undo: Vec<Action>) {
        let dir = format!("/sys/block/{}", d.name);
        let mut writes: Vec<Action> = Vec::new();
        if let Some(b) = &d.writeback_device {
            writes.push(Action::write(format!("{dir}/backing_dev"), b.as_str()));
        }
        if let Some(a) = &d.algorithms {
            writes.extend(algorithm_writes(&dir, a));
            self.plan
                .applied_algorithms
                .push((d.name.clone(), algorithms_text(d)));
            if !a.recompress_params.is_empty() {
                self.plan.notes.push(format!(
                    "{}: recompression parameters `{}` are not written at setup (that would recompress an empty device); `zmem policy` uses them",
                    d.name,
                    key_values(&a.recompress_params)
                ));
            }
        }
        if resident > 0 {
            writes.push(Action::write(
                format!("{dir}/mem_limit"),
                resident.to_string(),
            ));
        }
        writes.push(Action::write(format!("{dir}/disksize"), size.to_string()));
        let mut first_undo = Some(first_undo);
        for w in writes {
            let undo = first_undo.take().unwrap_or_default();
            self.step(w, undo);
        }
    }

    /// A device left as it is: only the runtime knob mem_limit follows the file.
    fn mem_limit(&mut self, d: &DeviceConfig, c: &ZramDevice, resident: u64) {
        let want = resident.div_ceil(4096) * 4096;
        if c.mm.mem_limit != want {
            let path = format!("/sys/block/{}/mem_limit", d.name);
            self.step(
                Action::write(path.clone(), want.to_string()),
                vec![Action::write(path, c.mm.mem_limit.to_string())],
            );
        }
    }

    /// Swap on or mount the device (`fs-type = none`: neither). `configured` when the plan
    /// sets the device up (so it needs mkswap or mkfs); otherwise `cur_swap` and `cur_mount`
    /// say how the device is used now.
    fn device_use(
        &mut self,
        d: &DeviceConfig,
        configured: bool,
        cur_swap: Option<SwapEntry>,
        cur_mount: Option<String>,
    ) {
        match d.fs_type.as_str() {
            "none" => {}
            "swap" => self.swap_on(d, configured, cur_swap),
            fs if d.mount_point.is_none() => {
                if configured {
                    self.step(mkfs(fs, &format!("/dev/{}", d.name)), vec![]);
                }
            }
            fs => self.mount(d, fs, configured, cur_mount),
        }
    }

    /// mkswap (a device set up now) and swapon with the section's priority and options.
    fn swap_on(&mut self, d: &DeviceConfig, configured: bool, cur_swap: Option<SwapEntry>) {
        let dev = format!("/dev/{}", d.name);
        // zram-generator's default options are `discard` (freed swap slots free zram memory).
        let swapon = Action::Swapon {
            path: dev.clone(),
            priority: d.swap_priority,
            options: d.options.clone().unwrap_or_else(|| "discard".into()),
        };
        match cur_swap {
            Some(s) if s.priority == d.swap_priority => {}
            Some(s) => {
                self.plan.steps.push(swapoff_step(&dev, s.priority));
                self.plan.steps.push(swapon_step(swapon, &dev));
            }
            None => {
                if configured {
                    self.step(Action::Mkswap(dev.clone()), vec![]);
                }
                self.plan.steps.push(swapon_step(swapon, &dev));
            }
        }
    }

    /// mkfs (a device set up now) and mount on the section's mount-point.
    fn mount(&mut self, d: &DeviceConfig, fs: &str, configured: bool, cur_mount: Option<String>) {
        let dev = format!("/dev/{}", d.name);
        let mp = d.mount_point.clone().expect("config checks mount-point");
        if cur_mount.as_deref() == Some(mp.as_str()) {
            return;
        }
        if configured {
            self.step(mkfs(fs, &dev), vec![]);
        }
        let mut m = vec!["mount".to_string(), "-t".into(), fs.to_string()];
        // zram-generator's default options are `discard` for mounts too (the mount unit's
        // Options=); `options =` (empty) clears them.
        let opts = d.options.clone().unwrap_or_else(|| "discard".into());
        if !opts.is_empty() {
            m.push("-o".into());
            m.push(opts);
        }
        m.push(dev);
        m.push(mp.clone());
        self.step(Action::Run(m), vec![Action::run(&["umount", &mp])]);
    }

    /// The `[disk-swap]` tier: swapon at its priority, below zram's.
    fn disk_swap(&mut self) -> Result<(), ApplyError> {
        let Some(ds) = &self.cfg.disk_swap else {
            return Ok(());
        };
        let cur = self
            .sys
            .swaps()
            .map_err(read_err)?
            .into_iter()
            .find(|s| s.device == ds.device);
        let on = Action::Swapon {
            path: ds.device.clone(),
            priority: ds.priority,
            options: String::new(),
        };
        if cur.is_none() {
            check_disk_swap(self.sys, &ds.device, self.opts.force)?;
        }
        match cur {
            Some(s) if s.priority == ds.priority => {}
            Some(s) => {
                self.plan.steps.push(swapoff_step(&ds.device, s.priority));
                self.plan.steps.push(swapon_step(on, &ds.device));
            }
            None => self.plan.steps.push(swapon_step(on, &ds.device)),
        }
        Ok(())
    }

    /// `[sysctl]`: write the values that differ from /proc/sys.
    fn sysctls(&mut self) -> Result<(), ApplyError> {
        for e in &self.cfg.sysctls {
            let path = Sys::sysctl_path(&e.key);
            let cur = self.sys.read_opt(&path).map_err(read_err)?.ok_or_else(|| {
                ApplyError::MissingFeature(format!(
                    "{}:{}: this kernel has no sysctl {} ({path})",
                    self.cfg.file.display(),
                    e.line,
                    e.key
                ))
            })?;
            let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
            if norm(&cur) != norm(&e.value) {
                self.step(
                    Action::write(path.clone(), e.value.as_str()),
                    vec![Action::write(path, norm(&cur))],
                );
            }
        }
        Ok(())
    }

    /// `[zswap]`: write the parameters that differ from /sys/module/zswap/parameters.
    fn zswap(&mut self) -> Result<(), ApplyError> {
        if self.cfg.zswap.is_empty() {
            return Ok(());
        }
        if !self.sys.exists("/sys/module/zswap") {
            return Err(ApplyError::MissingFeature(format!(
                "{}: [zswap] is set but this kernel has no zswap (CONFIG_ZSWAP)",
                self.cfg.file.display()
            )));
        }
        // The compressor before `enabled`, so the first pool is made with the right one.
        let mut entries: Vec<_> = self.cfg.zswap.iter().collect();
        entries.sort_by_key(|e| e.key == "enabled");
        for e in entries {
            let path = format!("{}/{}", zswap::PARAMS, e.key);
            let cur = self.sys.read_opt(&path).map_err(read_err)?.ok_or_else(|| {
                ApplyError::MissingFeature(format!(
                    "{}:{}: this kernel's zswap has no parameter {} ({path})",
                    self.cfg.file.display(),
                    e.line,
                    e.key
                ))
            })?;
            if cur.trim() != e.value {
                self.step(
                    Action::write(path.clone(), e.value.as_str()),
                    vec![Action::write(path, cur.trim())],
                );
            }
        }
        Ok(())
    }

    /// zswap sits in front of every swap device (Documentation/admin-guide/mm/zswap.rst):
    /// warn when it stays enabled over zram swap.
    fn warn_zswap_in_front_of_zram(&mut self) {
        let zram_swap = self.cfg.devices.iter().any(|d| d.fs_type == "swap");
        let zswap_after = self
            .cfg
            .zswap
            .iter()
            .find(|e| e.key == "enabled")
            .map(|e| e.value == "Y")
            .unwrap_or_else(|| {
                zswap::read(self.sys, zswap::Debugfs::ReadIfMounted)
                    .map(|z| z.enabled())
                    .unwrap_or(false)
            });
        if zram_swap && zswap_after {
            self.plan.notes.push("warning: zswap stays enabled in front of zram swap; the two compress the same pages (add `[zswap] enabled = N`)".into());
        }
    }
}

/// Refuse algorithms, recompression and writeback the kernel's zram lacks (`k` is the device
/// or, before hot_add, any zram device).
fn check_features(d: &DeviceConfig, k: &ZramDevice) -> Result<(), ApplyError> {
    if let Some(a) = &d.algorithms {
        if !k.offered.is_empty() && !k.offered.contains(&a.primary.name) {
            return Err(missing_algo(
                &d.name,
                &a.primary.name,
                &k.offered,
                "primary",
            ));
        }
        if !a.recompress.is_empty() && !k.has_multi_comp() {
            return Err(ApplyError::MissingFeature(format!(
                "{}: compression-algorithm lists recompression algorithms ({}) but this kernel's zram has no recomp_algorithm (CONFIG_ZRAM_MULTI_COMP); keep only the primary `{}`, or use `zmem serve`, which recompresses (at boot zram-generator warns and sets the device up without them)",
                d.name,
                a.recompress.iter().map(|x| x.name.as_str()).collect::<Vec<_>>().join(" "),
                a.primary.to_config()
            )));
        }
        for r in &a.recompress {
            if !k.offered.is_empty() && !k.offered.contains(&r.name) {
                return Err(missing_algo(&d.name, &r.name, &k.offered, "recompression"));
            }
        }
    }
    if d.writeback_device.is_some() && !k.has_writeback() {
        return Err(ApplyError::MissingFeature(format!(
            "{}: writeback-device is set but this kernel's zram has no backing_dev (CONFIG_ZRAM_WRITEBACK); drop writeback-device and add a lower-priority disk swap ([disk-swap]) as the second tier, or use `zmem serve`, which writes back (at boot zram-generator warns and sets the device up without it)",
            d.name
        )));
    }
    Ok(())
}

/// Directories a zram filesystem must not be mounted over without --force:
/// the mount would hide the system's own files there (FHS top level).
const SYSTEM_DIRS: &[&str] = &[
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib32",
    "/lib64",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/srv",
    "/sys",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/usr/sbin",
    "/usr/share",
    "/var",
    "/var/lib",
    "/var/log",
    "/var/cache",
];

/// A mount-point that is a system directory is refused unless `force`.
fn check_mount_point(dev: &str, mp: &str, force: bool) -> Result<(), ApplyError> {
    let trimmed = mp.trim_end_matches('/');
    let norm = if trimmed.is_empty() { "/" } else { trimmed };
    if !force && SYSTEM_DIRS.contains(&norm) {
        return Err(ApplyError::Refused(format!(
            "[{dev}] mount-point = {mp} is a system directory: mounting a fresh zram filesystem \
             there hides the system's files; choose a directory of its own (e.g. /tmp, /var/tmp) \
             or re-run with --force (at boot zram-generator mounts it there without asking)"
        )));
    }
    Ok(())
}

/// A `[disk-swap]` device that is not swapped on yet must be a prepared swap
/// area (mkswap's signature); a file or device holding a filesystem, a
/// partition table or other data is refused unless `force`.
fn check_disk_swap(sys: &Sys, device: &str, force: bool) -> Result<(), ApplyError> {
    let path = sys.path(device);
    let refused = |why: String| ApplyError::Refused(format!("[disk-swap] device = {device} {why}"));
    let md = match std::fs::metadata(&path) {
        Ok(md) => md,
        Err(e) => {
            return Err(refused(format!(
                "cannot be used: {e}; create a swap area first (e.g. fallocate and mkswap)"
            )))
        }
    };
    use std::os::unix::fs::FileTypeExt;
    if !md.file_type().is_file() && !md.file_type().is_block_device() {
        return Err(refused("is not a regular file or block device".into()));
    }
    let file = std::fs::File::open(&path).map_err(read_err)?;
    match zmem_files::signature::probe(&file).map_err(read_err)? {
        Some(zmem_files::signature::Signature::Swap) => Ok(()),
        _ if force => Ok(()),
        Some(sig) => Err(refused(format!(
            "holds {sig}, not a swap area; zmem will not swap over data it did not create \
             (run mkswap on it yourself if it is yours to lose, or re-run with --force)"
        ))),
        None => Err(refused(
            "has no swap signature (all zero); run mkswap on it first".into(),
        )),
    }
}

/// The refusal to reset a device that is swapped on or mounted (without --force).
fn in_use(d: &DeviceConfig, c: &ZramDevice) -> ApplyError {
    let what = match (&c.swap, &c.mount) {
        (Some(s), _) => format!(
            "swapped on (priority {}, {} used)",
            s.priority,
            bytes(s.used)
        ),
        (_, Some(m)) => format!("mounted on {m}"),
        _ => unreachable!(),
    };
    ApplyError::InUse(format!(
        "{} is {what} and its configuration differs; applying needs a reset, which empties it. Re-run with --force to swapoff/unmount and reset it",
        d.name
    ))
}

/// comp_algorithm, recomp_algorithm (priority 1, 2, 3) and algorithm_params, in the order
/// Documentation/admin-guide/blockdev/zram.rst gives.
fn algorithm_writes(dir: &str, a: &Algorithms) -> Vec<Action> {
    let mut writes = vec![Action::write(
        format!("{dir}/comp_algorithm"),
        a.primary.name.as_str(),
    )];
    for (i, r) in a.recompress.iter().enumerate() {
        writes.push(Action::write(
            format!("{dir}/recomp_algorithm"),
            format!("algo={} priority={}", r.name, i + 1),
        ));
    }
    if !a.primary.params.is_empty() {
        writes.push(Action::write(
            format!("{dir}/algorithm_params"),
            format!("priority=0 {}", key_values(&a.primary.params)),
        ));
    }
    for (i, r) in a.recompress.iter().enumerate() {
        if !r.params.is_empty() {
            writes.push(Action::write(
                format!("{dir}/algorithm_params"),
                format!("priority={} {}", i + 1, key_values(&r.params)),
            ));
        }
    }
    writes
}

/// `k=v k=v`, as algorithm_params and recompress take them.
fn key_values(params: &[(String, String)]) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `mkfs.TYPE DEV` (zram-generator runs systemd-makefs, which runs mkfs.TYPE).
fn mkfs(fs: &str, dev: &str) -> Action {
    Action::Run(vec![format!("mkfs.{fs}"), dev.to_string()])
}

/// swapoff DEV, undone by swapon at the priority it had.
fn swapoff_step(dev: &str, priority: i32) -> Step {
    Step {
        op: Action::Swapoff(dev.to_string()),
        undo: vec![Action::Swapon {
            path: dev.to_string(),
            priority,
            options: String::new(),
        }],
    }
}

/// A swapon, undone by swapoff DEV.
fn swapon_step(swapon: Action, dev: &str) -> Step {
    Step {
        op: swapon,
        undo: vec![Action::Swapoff(dev.to_string())],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip() {
        for op in [
            Action::write("/sys/block/zram0/disksize", "1024"),
            Action::run(&["swapon", "-p", "5", "/dev/zram0"]),
            Action::HotAdd(3),
            Action::HotRemove(3),
        ] {
            assert_eq!(Action::parse(&op.to_line().unwrap()), Some(op));
        }
        assert_eq!(Action::parse("bogus\tx"), None);
    }

    #[test]
    fn nearest_alternatives() {
        let offered: Vec<String> = ["lzo-rle", "lzo", "lz4"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(nearest("zstd", &offered).as_deref(), Some("lzo-rle"));
        assert_eq!(nearest("lz4hc", &offered).as_deref(), Some("lz4"));
        assert_eq!(backend_config("zstd"), "CONFIG_ZRAM_BACKEND_ZSTD");
        assert_eq!(backend_config("lzo-rle"), "CONFIG_ZRAM_BACKEND_LZO");
    }
}
