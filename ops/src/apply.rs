//! `zmem apply`: bring the kernel's zram devices, sysctls, zswap and the disk swap tier to
//! what a configuration file says, in the kernel's order, idempotently, with rollback on
//! failure and a saved undo list for `--revert`.
//!
//! The plan is a list of steps; each step is one operation (an attribute write, a command,
//! hot_add/hot_remove) with the operations that undo it. Executing runs the steps in order;
//! when one fails, the undo operations of the steps already done run in reverse order. After
//! a successful run the undo operations are saved (newest first) to `/run/zmem/apply.state`
//! in the tree, and `--revert` runs them.

use std::fmt;
use std::io;

use crate::config::{Config, DeviceConfig};
use crate::zram::{self, ZramDevice};
use crate::zswap;
use zmem_sysfs::{Errno, Sys};
use zmem_units::bytes;

/// Where the undo list is kept, inside the state directory (`/run/zmem` in the root tree).
pub const STATE_NAME: &str = "apply.state";

/// The undo list's path (kernel-style, inside the root).
pub fn state_file(sys: &Sys) -> String {
    format!("{}/{STATE_NAME}", sys.state_dir())
}

/// One change to the system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Write VALUE to an absolute kernel path.
    Write { path: String, value: String },
    /// Run a command.
    Run(Vec<String>),
    /// Create zramN through hot_add (fails unless hot_add returns N).
    HotAdd(u32),
    /// Remove zramN through hot_remove.
    HotRemove(u32),
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Write { path, value } => write!(f, "write {path} {value}"),
            Op::Run(argv) => write!(f, "run {}", argv.join(" ")),
            Op::HotAdd(id) => write!(f, "hot_add zram{id}"),
            Op::HotRemove(id) => write!(f, "hot_remove zram{id}"),
        }
    }
}

impl Op {
    fn write(path: impl Into<String>, value: impl Into<String>) -> Op {
        Op::Write {
            path: path.into(),
            value: value.into(),
        }
    }
    fn run(argv: &[&str]) -> Op {
        Op::Run(argv.iter().map(|s| s.to_string()).collect())
    }
    /// Tab-separated line for the state file.
    fn serialize(&self) -> String {
        match self {
            Op::Write { path, value } => format!("write\t{path}\t{value}"),
            Op::Run(argv) => format!("run\t{}", argv.join("\t")),
            Op::HotAdd(id) => format!("hot_add\t{id}"),
            Op::HotRemove(id) => format!("hot_remove\t{id}"),
        }
    }
    fn deserialize(line: &str) -> Option<Op> {
        let mut it = line.split('\t');
        match it.next()? {
            "write" => Some(Op::write(it.next()?, it.next().unwrap_or(""))),
            "run" => {
                let v: Vec<String> = it.map(str::to_string).collect();
                (!v.is_empty()).then_some(Op::Run(v))
            }
            "hot_add" => Some(Op::HotAdd(it.next()?.parse().ok()?)),
            "hot_remove" => Some(Op::HotRemove(it.next()?.parse().ok()?)),
            _ => None,
        }
    }
    /// Carry the operation out.
    pub fn execute(&self, sys: &Sys) -> Result<(), String> {
        match self {
            Op::Write { path, value } => sys
                .write(path, value)
                .map_err(|e| format!("{self}: {} ({e})", Errno::from_io(&e))),
            Op::Run(argv) => sys.run(argv).map_err(|e| format!("{self}: {e}")),
            Op::HotAdd(id) => {
                let got = sys.hot_add().map_err(|e| format!("{self}: {e}"))?;
                if got != *id {
                    let _ = sys.hot_remove(got);
                    return Err(format!(
                        "{self}: hot_add created zram{got}, not zram{id} (removed it again)"
                    ));
                }
                Ok(())
            }
            Op::HotRemove(id) => sys
                .hot_remove(*id)
                .map_err(|e| format!("{self}: {} ({e})", Errno::from_io(&e))),
        }
    }
}

/// One step: an operation and what undoes it (run in the order given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub op: Op,
    pub undo: Vec<Op>,
}

/// What apply will do.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub steps: Vec<Step>,
    /// Things worth telling (devices already configured, skipped sections, warnings).
    pub notes: Vec<String>,
    /// `compression-algorithm` strings to record per device after success (`zram0`, text).
    applied_algorithms: Vec<(String, String)>,
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
            ApplyError::MissingFeature(s) | ApplyError::InUse(s) | ApplyError::Read(s) => {
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

fn backend_config(algo: &str) -> String {
    format!(
        "CONFIG_ZRAM_BACKEND_{}",
        algo.trim_end_matches("-rle")
            .replace('-', "_")
            .to_ascii_uppercase()
    )
}

fn nearest(algo: &str, offered: &[String]) -> Option<String> {
    let order: &[&str] = match algo {
        "zstd" => &["deflate", "lz4hc", "lzo-rle", "lzo", "lz4"],
        "deflate" => &["zstd", "lz4hc", "lzo-rle", "lzo", "lz4"],
        "lz4hc" => &["lz4", "zstd", "lzo-rle", "lzo"],
        "lz4" => &["lzo-rle", "lzo", "lz4hc", "zstd"],
        "lzo-rle" => &["lzo", "lz4", "zstd"],
        "lzo" => &["lzo-rle", "lz4", "zstd"],
        _ => &["lzo-rle", "lzo", "lz4", "zstd"],
    };
    order
        .iter()
        .find(|a| offered.iter().any(|o| o == *a))
        .map(|s| s.to_string())
}

fn missing_algo(dev: &str, algo: &str, offered: &[String], role: &str) -> ApplyError {
    let alt = match nearest(algo, offered) {
        Some(a) => format!("nearest alternative this kernel has: {a}; or "),
        None => String::new(),
    };
    ApplyError::MissingFeature(format!(
        "{dev}: this kernel's zram has no {algo} backend ({}) for the {role} algorithm; it offers {}. {alt}run {algo} in user space with `zmem serve --algorithm {algo}`",
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
fn restore_ops(cur: &ZramDevice) -> Vec<Op> {
    let dir = cur.dir();
    let mut v = vec![Op::write(format!("{dir}/reset"), "1")];
    if !cur.initialised {
        return v;
    }
    if let Some(Some(b)) = &cur.backing_dev {
        v.push(Op::write(format!("{dir}/backing_dev"), b.as_str()));
    }
    if let Some(a) = &cur.algorithm {
        v.push(Op::write(format!("{dir}/comp_algorithm"), a.as_str()));
    }
    for (p, a) in cur.recompression.clone().unwrap_or_default() {
        v.push(Op::write(
            format!("{dir}/recomp_algorithm"),
            format!("algo={a} priority={p}"),
        ));
    }
    if cur.mm.mem_limit > 0 {
        v.push(Op::write(
            format!("{dir}/mem_limit"),
            cur.mm.mem_limit.to_string(),
        ));
    }
    v.push(Op::write(
        format!("{dir}/disksize"),
        cur.disksize.to_string(),
    ));
    if cur.swap.is_some() {
        v.push(Op::Run(vec!["mkswap".into(), cur.dev_path()]));
    }
    v
}

/// Work out what has to change. Reads only; nothing is written.
pub fn plan(sys: &Sys, cfg: &Config, opts: Options) -> Result<Plan, ApplyError> {
    let mut p = Plan::default();
    let mem_total = sys
        .meminfo_get("MemTotal")
        .map_err(read_err)?
        .ok_or_else(|| ApplyError::Read("no MemTotal in /proc/meminfo".into()))?;
    let ram_mib = mem_total as f64 / 1048576.0;
    let existing = zram::list_devices(sys).map_err(read_err)?;
    let mut ids: Vec<u32> = existing
        .iter()
        .filter_map(|n| n.strip_prefix("zram")?.parse().ok())
        .collect();
    // What any existing device tells about the kernel (for devices still to be created).
    let probe = match existing.first() {
        Some(n) => Some(zram::read_device(sys, n).map_err(read_err)?),
        None => None,
    };
    for d in &cfg.devices {
        let dir = format!("/sys/block/{}", d.name);
        let dev = format!("/dev/{}", d.name);
        if let Some(limit) = d.host_memory_limit {
            if ram_mib > limit as f64 {
                p.notes.push(format!(
                    "{}: skipped, MemTotal {:.0} MiB is above host-memory-limit {limit} MiB",
                    d.name, ram_mib
                ));
                continue;
            }
        }
        let size = d.zram_size.eval_bytes(ram_mib).map_err(|e| {
            ApplyError::Read(
                cfg.err(d.zram_size.line, format!("zram-size: {e}"))
                    .to_string(),
            )
        })?;
        if size == 0 {
            p.notes.push(format!(
                "{}: skipped, zram-size `{}` is 0 on this machine",
                d.name, d.zram_size.source
            ));
            continue;
        }
        let resident = match &d.resident_limit {
            Some(e) => e.eval_bytes(ram_mib).map_err(|r| {
                ApplyError::Read(
                    cfg.err(e.line, format!("zram-resident-limit: {r}"))
                        .to_string(),
                )
            })?,
            None => 0,
        };
        let cur = if ids.contains(&d.id) {
            Some(zram::read_device(sys, &d.name).map_err(read_err)?)
        } else {
            None
        };
        // Feature checks against this device or, if it does not exist yet, any zram device.
        if let Some(k) = cur.as_ref().or(probe.as_ref()) {
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
                        "{}: compression-algorithm lists recompression algorithms ({}) but this kernel's zram has no recomp_algorithm (CONFIG_ZRAM_MULTI_COMP); keep only the primary `{}`, or use `zmem serve`, which recompresses",
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
                    "{}: writeback-device is set but this kernel's zram has no backing_dev (CONFIG_ZRAM_WRITEBACK); drop writeback-device and add a lower-priority disk swap ([disk-swap]) as the second tier, or use `zmem serve`, which writes back",
                    d.name
                )));
            }
        }
        let mut dev_undo_base: Vec<Op> = Vec::new();
        let mut configure = true;
        match &cur {
            None => {
                if !sys.exists("/sys/class/zram-control/hot_add") {
                    return Err(ApplyError::MissingFeature(format!(
                        "{} does not exist and this kernel has no /sys/class/zram-control/hot_add (is the zram module loaded? `modprobe zram`)",
                        d.name
                    )));
                }
                let next = (0..).find(|i| !ids.contains(i)).unwrap_or(0);
                if next != d.id {
                    return Err(ApplyError::MissingFeature(format!(
                        "{} does not exist and hot_add would create zram{next}; name the section [zram{next}] (zram numbers devices from the lowest free id)",
                        d.name
                    )));
                }
                ids.push(d.id);
                p.steps.push(Step {
                    op: Op::HotAdd(d.id),
                    undo: vec![Op::write(format!("{dir}/reset"), "1"), Op::HotRemove(d.id)],
                });
            }
            Some(c) if c.initialised && device_matches(sys, d, c, size) => {
                configure = false;
                p.notes.push(format!(
                    "{}: already configured ({} {}), left as it is",
                    d.name,
                    c.algorithm.as_deref().unwrap_or("?"),
                    bytes(c.disksize)
                ));
            }
            Some(c) if c.initialised => {
                if c.in_use() && !opts.force {
                    let what = match (&c.swap, &c.mount) {
                        (Some(s), _) => format!(
                            "swapped on (priority {}, {} used)",
                            s.priority,
                            bytes(s.used)
                        ),
                        (_, Some(m)) => format!("mounted on {m}"),
                        _ => unreachable!(),
                    };
                    return Err(ApplyError::InUse(format!(
                        "{} is {what} and its configuration differs; applying needs a reset, which empties it. Re-run with --force to swapoff/unmount and reset it",
                        d.name
                    )));
                }
                if let Some(s) = &c.swap {
                    p.steps.push(Step {
                        op: Op::run(&["swapoff", &dev]),
                        undo: vec![Op::Run(vec![
                            "swapon".into(),
                            "-p".into(),
                            s.priority.to_string(),
                            dev.clone(),
                        ])],
                    });
                }
                if let Some(m) = &c.mount {
                    let fstype = sys
                        .mounts()
                        .map_err(read_err)?
                        .into_iter()
                        .find(|x| x.0 == dev)
                        .map(|x| x.2)
                        .unwrap_or_else(|| "auto".into());
                    p.steps.push(Step {
                        op: Op::run(&["umount", m]),
                        undo: vec![Op::Run(vec![
                            "mount".into(),
                            "-t".into(),
                            fstype,
                            dev.clone(),
                            m.clone(),
                        ])],
                    });
                }
                p.steps.push(Step {
                    op: Op::write(format!("{dir}/reset"), "1"),
                    undo: restore_ops(c),
                });
            }
            Some(_) => {
                // An existing uninitialised device: the first write's undo resets it.
                dev_undo_base.push(Op::write(format!("{dir}/reset"), "1"));
            }
        }
        if configure {
            let mut writes: Vec<Op> = Vec::new();
            if let Some(b) = &d.writeback_device {
                writes.push(Op::write(format!("{dir}/backing_dev"), b.as_str()));
            }
            if let Some(a) = &d.algorithms {
                writes.push(Op::write(
                    format!("{dir}/comp_algorithm"),
                    a.primary.name.as_str(),
                ));
                for (i, r) in a.recompress.iter().enumerate() {
                    writes.push(Op::write(
                        format!("{dir}/recomp_algorithm"),
                        format!("algo={} priority={}", r.name, i + 1),
                    ));
                }
                if !a.primary.params.is_empty() {
                    let kv: Vec<String> = a
                        .primary
                        .params
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect();
                    writes.push(Op::write(
                        format!("{dir}/algorithm_params"),
                        format!("priority=0 {}", kv.join(" ")),
                    ));
                }
                for (i, r) in a.recompress.iter().enumerate() {
                    if !r.params.is_empty() {
                        let kv: Vec<String> =
                            r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                        writes.push(Op::write(
                            format!("{dir}/algorithm_params"),
                            format!("priority={} {}", i + 1, kv.join(" ")),
                        ));
                    }
                }
                p.applied_algorithms
                    .push((d.name.clone(), algorithms_text(d)));
                if !a.recompress_params.is_empty() {
                    let kv: Vec<String> = a
                        .recompress_params
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect();
                    p.notes.push(format!(
                        "{}: recompression parameters `{}` are not written at setup (that would recompress an empty device); `zmem policy` uses them",
                        d.name,
                        kv.join(" ")
                    ));
                }
            }
            if resident > 0 {
                writes.push(Op::write(format!("{dir}/mem_limit"), resident.to_string()));
            }
            writes.push(Op::write(format!("{dir}/disksize"), size.to_string()));
            for (i, w) in writes.into_iter().enumerate() {
                let undo = if i == 0 {
                    std::mem::take(&mut dev_undo_base)
                } else {
                    Vec::new()
                };
                p.steps.push(Step { op: w, undo });
            }
        } else {
            // Runtime knob: mem_limit.
            let c = cur.as_ref().expect("configured devices exist");
            let want = resident.div_ceil(4096) * 4096;
            if c.mm.mem_limit != want {
                p.steps.push(Step {
                    op: Op::write(format!("{dir}/mem_limit"), want.to_string()),
                    undo: vec![Op::write(
                        format!("{dir}/mem_limit"),
                        c.mm.mem_limit.to_string(),
                    )],
                });
            }
        }
        // Use of the device.
        let cur_swap = if configure {
            None
        } else {
            cur.as_ref().and_then(|c| c.swap.clone())
        };
        let cur_mount = if configure {
            None
        } else {
            cur.as_ref().and_then(|c| c.mount.clone())
        };
        match d.fs_type.as_str() {
            "none" => {}
            "swap" => {
                // zram-generator's default options are `discard` (freed swap slots free zram memory).
                let mut swapon = vec![
                    "swapon".to_string(),
                    "-p".into(),
                    d.swap_priority.to_string(),
                ];
                let opts = d.options.clone().unwrap_or_else(|| "discard".into());
                if !opts.is_empty() {
                    swapon.push("-o".into());
                    swapon.push(opts);
                }
                swapon.push(dev.clone());
                match cur_swap {
                    Some(s) if s.priority == d.swap_priority => {}
                    Some(s) => {
                        p.steps.push(Step {
                            op: Op::run(&["swapoff", &dev]),
                            undo: vec![Op::Run(vec![
                                "swapon".into(),
                                "-p".into(),
                                s.priority.to_string(),
                                dev.clone(),
                            ])],
                        });
                        p.steps.push(Step {
                            op: Op::Run(swapon),
                            undo: vec![Op::run(&["swapoff", &dev])],
                        });
                    }
                    None => {
                        if configure {
                            p.steps.push(Step {
                                op: Op::run(&["mkswap", &dev]),
                                undo: vec![],
                            });
                        }
                        p.steps.push(Step {
                            op: Op::Run(swapon),
                            undo: vec![Op::run(&["swapoff", &dev])],
                        });
                    }
                }
            }
            fs => {
                let mp = d.mount_point.clone().expect("config checks mount-point");
                if cur_mount.as_deref() != Some(mp.as_str()) {
                    if configure {
                        p.steps.push(Step {
                            op: Op::Run(vec![format!("mkfs.{fs}"), dev.clone()]),
                            undo: vec![],
                        });
                    }
                    let mut m = vec!["mount".to_string(), "-t".into(), fs.to_string()];
                    if let Some(o) = &d.options {
                        m.push("-o".into());
                        m.push(o.clone());
                    }
                    m.push(dev.clone());
                    m.push(mp.clone());
                    p.steps.push(Step {
                        op: Op::Run(m),
                        undo: vec![Op::run(&["umount", &mp])],
                    });
                }
            }
        }
    }
    // The disk tier.
    if let Some(ds) = &cfg.disk_swap {
        let cur = sys
            .swaps()
            .map_err(read_err)?
            .into_iter()
            .find(|s| s.device == ds.device);
        let on = Op::Run(vec![
            "swapon".into(),
            "-p".into(),
            ds.priority.to_string(),
            ds.device.clone(),
        ]);
        match cur {
            Some(s) if s.priority == ds.priority => {}
            Some(s) => {
                p.steps.push(Step {
                    op: Op::run(&["swapoff", &ds.device]),
                    undo: vec![Op::Run(vec![
                        "swapon".into(),
                        "-p".into(),
                        s.priority.to_string(),
                        ds.device.clone(),
                    ])],
                });
                p.steps.push(Step {
                    op: on,
                    undo: vec![Op::run(&["swapoff", &ds.device])],
                });
            }
            None => p.steps.push(Step {
                op: on,
                undo: vec![Op::run(&["swapoff", &ds.device])],
            }),
        }
    }
    // Sysctls.
    for e in &cfg.sysctls {
        let path = Sys::sysctl_path(&e.key);
        let cur = sys.read_opt(&path).map_err(read_err)?.ok_or_else(|| {
            ApplyError::MissingFeature(format!(
                "{}:{}: this kernel has no sysctl {} ({path})",
                cfg.file.display(),
                e.line,
                e.key
            ))
        })?;
        let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        if norm(&cur) != norm(&e.value) {
            p.steps.push(Step {
                op: Op::write(path.clone(), e.value.as_str()),
                undo: vec![Op::write(path, norm(&cur))],
            });
        }
    }
    // zswap.
    if !cfg.zswap.is_empty() {
        if !sys.exists("/sys/module/zswap") {
            return Err(ApplyError::MissingFeature(format!(
                "{}: [zswap] is set but this kernel has no zswap (CONFIG_ZSWAP)",
                cfg.file.display()
            )));
        }
        // The compressor before `enabled`, so the first pool is made with the right one.
        let mut entries: Vec<_> = cfg.zswap.iter().collect();
        entries.sort_by_key(|e| e.key == "enabled");
        for e in entries {
            let path = format!("{}/{}", zswap::PARAMS, e.key);
            let cur = sys.read_opt(&path).map_err(read_err)?.ok_or_else(|| {
                ApplyError::MissingFeature(format!(
                    "{}:{}: this kernel's zswap has no parameter {} ({path})",
                    cfg.file.display(),
                    e.line,
                    e.key
                ))
            })?;
            if cur.trim() != e.value {
                p.steps.push(Step {
                    op: Op::write(path.clone(), e.value.as_str()),
                    undo: vec![Op::write(path, cur.trim())],
                });
            }
        }
    }
    let zram_swap = cfg.devices.iter().any(|d| d.fs_type == "swap");
    let zswap_after = cfg
        .zswap
        .iter()
        .find(|e| e.key == "enabled")
        .map(|e| e.value == "Y")
        .unwrap_or_else(|| {
            zswap::read(sys, zswap::Debugfs::ReadIfMounted)
                .map(|z| z.enabled())
                .unwrap_or(false)
        });
    if zram_swap && zswap_after {
        p.notes.push("warning: zswap stays enabled in front of zram swap; the two compress the same pages (add `[zswap] enabled = N`)".into());
    }
    Ok(p)
}

/// Run a plan; on failure roll back. `log` gets each operation as it is done.
pub fn execute(sys: &Sys, plan: &Plan, log: &mut dyn FnMut(&str)) -> Result<(), ApplyError> {
    let mut done: Vec<&Step> = Vec::new();
    for step in &plan.steps {
        log(&step.op.to_string());
        if let Err(error) = step.op.execute(sys) {
            log(&format!("failed: {error}; rolling back"));
            let mut rollback_errors = Vec::new();
            for s in done.iter().rev() {
                for u in &s.undo {
                    log(&format!("undo: {u}"));
                    if let Err(e) = u.execute(sys) {
                        log(&format!("undo failed: {e}"));
                        rollback_errors.push(e);
                    }
                }
            }
            return Err(ApplyError::Failed {
                error,
                rolled_back: done.len(),
                rollback_errors,
            });
        }
        done.push(step);
    }
    if plan.steps.is_empty() {
        return Ok(());
    }
    // Save the undo list, newest first, in front of any earlier one.
    let mut lines: Vec<String> = Vec::new();
    for s in plan.steps.iter().rev() {
        for u in &s.undo {
            lines.push(u.serialize());
        }
    }
    let old = sys
        .read_opt(&state_file(sys))
        .ok()
        .flatten()
        .unwrap_or_default();
    lines.extend(
        old.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(str::to_string),
    );
    let text = format!(
        "# zmem apply: undo operations, run top to bottom by `zmem apply --revert`\n{}\n",
        lines.join("\n")
    );
    let write_state = || -> io::Result<()> {
        std::fs::create_dir_all(sys.path(sys.state_dir()))?;
        std::fs::write(sys.path(&state_file(sys)), text)?;
        for (dev, algos) in &plan.applied_algorithms {
            std::fs::write(
                sys.path(&format!("{}/{dev}.algorithms", sys.state_dir())),
                format!("{algos}\n"),
            )?;
        }
        Ok(())
    };
    if let Err(e) = write_state() {
        log(&format!(
            "warning: could not save the undo list to {}: {e}; --revert will not know this change",
            sys.path(&state_file(sys)).display()
        ));
    }
    Ok(())
}

/// Undo everything applied since the last revert. Returns the number of operations run.
pub fn revert(sys: &Sys, log: &mut dyn FnMut(&str)) -> Result<usize, String> {
    let Some(text) = sys.read_opt(&state_file(sys)).map_err(|e| e.to_string())? else {
        return Err(format!(
            "nothing to revert: {} does not exist",
            sys.path(&state_file(sys)).display()
        ));
    };
    let mut ops = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.starts_with('#') || l.is_empty() {
            continue;
        }
        ops.push(Op::deserialize(l).ok_or_else(|| {
            format!(
                "{}:{}: cannot read {l:?}",
                sys.path(&state_file(sys)).display(),
                i + 1
            )
        })?);
    }
    let mut failed = Vec::new();
    for op in &ops {
        log(&op.to_string());
        if let Err(e) = op.execute(sys) {
            log(&format!("failed: {e}"));
            failed.push(op.serialize());
        }
    }
    for n in sys.list(sys.state_dir()).unwrap_or_default() {
        if n.ends_with(".algorithms") {
            let _ = std::fs::remove_file(sys.path(&format!("{}/{n}", sys.state_dir())));
        }
    }
    if failed.is_empty() {
        std::fs::remove_file(sys.path(&state_file(sys))).map_err(|e| e.to_string())?;
        Ok(ops.len())
    } else {
        let text = format!(
            "# zmem apply: undo operations that failed during --revert\n{}\n",
            failed.join("\n")
        );
        std::fs::write(sys.path(&state_file(sys)), text).map_err(|e| e.to_string())?;
        Err(format!(
            "{} of {} undo operations failed; they are kept in {}",
            failed.len(),
            ops.len(),
            sys.path(&state_file(sys)).display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip() {
        for op in [
            Op::write("/sys/block/zram0/disksize", "1024"),
            Op::run(&["swapon", "-p", "5", "/dev/zram0"]),
            Op::HotAdd(3),
            Op::HotRemove(3),
        ] {
            assert_eq!(Op::deserialize(&op.serialize()), Some(op));
        }
        assert_eq!(Op::deserialize("bogus\tx"), None);
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
