//! Sections and keys of zram-generator.conf and zmem's extensions: `[zramN]`, `[sysctl]`,
//! `[zswap]`, `[disk-swap]` and `[policy]`.

use std::path::{Path, PathBuf};

use super::algorithms::parse_optional_algorithms;
use super::ini::{Item, SyntaxError};
use super::{
    Config, ConfigError, DeviceConfig, DiskSwap, Entry, SizeExpr, MAX_ZRAM_ID, ZSWAP_PARAMS,
};

const DEVICE_KEYS: [&str; 12] = [
    "zram-size",
    "zram-resident-limit",
    "host-memory-limit",
    "compression-algorithm",
    "writeback-device",
    "swap-priority",
    "fs-type",
    "mount-point",
    "options",
    "memory-limit",
    "zram-fraction",
    "max-zram-size",
];

enum Section {
    None,
    /// A section zmem does not know: its keys are skipped (after one warning).
    Ignored,
    Device(usize),
    Sysctl,
    Zswap,
    DiskSwap,
    Policy,
}

/// A `key = value` and the file it came from (drop-ins make several files).
type Keyed = (PathBuf, Entry);

/// The files read line by line: entries are checked as they come, `[zramN]` and
/// `[disk-swap]` keys are interpreted once every file is read. A section given twice (in one
/// file or in several) is merged key by key, later keys winning, as zram-generator's
/// `read_devices` does (src/config.rs: `devices.entry(name).or_insert_with(..)`).
pub(super) struct Reader {
    cfg: Config,
    /// The file being read now.
    file: PathBuf,
    /// Unknown keys and sections are errors instead of warnings.
    strict: bool,
    section: Section,
    /// Per device: raw keys collected first, interpreted at the end.
    dev_keys: Vec<Vec<Keyed>>,
    disk_swap_keys: Vec<Keyed>,
    /// Line of the first `[disk-swap]` header; 0 when there is none.
    disk_swap_line: usize,
}

impl Reader {
    pub(super) fn new(file: &Path, strict: bool) -> Reader {
        Reader {
            cfg: Config::new(file),
            file: file.to_path_buf(),
            strict,
            section: Section::None,
            dev_keys: Vec::new(),
            disk_swap_keys: Vec::new(),
            disk_swap_line: 0,
        }
    }

    /// The next file (a drop-in): sections do not carry over from the previous one.
    pub(super) fn next_file(&mut self, file: &Path) {
        self.file = file.to_path_buf();
        self.section = Section::None;
    }

    fn err(&self, line: usize, reason: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.file.clone(),
            line,
            reason: reason.into(),
        }
    }

    /// Something zram-generator ignores with a warning: a warning, or an error when strict.
    fn warn(&mut self, line: usize, reason: String) -> Result<(), ConfigError> {
        let e = self.err(line, reason);
        if self.strict {
            let reason = e.reason.replacen(", ignored", "", 1);
            return Err(ConfigError {
                reason: format!("{reason} (an error with --strict)"),
                ..e
            });
        }
        self.cfg.warnings.push(e);
        Ok(())
    }

    /// A syntax error of the file being read.
    pub(super) fn syntax_error(&self, e: SyntaxError) -> ConfigError {
        self.err(e.line, e.reason)
    }

    /// One item of the file: a section header or a `key = value`.
    pub(super) fn item(&mut self, item: Item) -> Result<(), ConfigError> {
        let (key, value, line, lines) = match item {
            Item::Section { name, line } => {
                self.section = self.header(line, &name)?;
                return Ok(());
            }
            Item::Key {
                key,
                value,
                line,
                lines,
            } => (key, value, line, lines),
        };
        if lines > 1 {
            self.glued(&key, line, lines);
            return Ok(());
        }
        if key.starts_with("set!") {
            return Err(self.err(line, format!("`{key}` runs a program at boot; zmem does not run programs from configuration (compute the value and write it into the size expression); at boot zram-generator runs it")));
        }
        self.entry(Entry { key, value, line })
    }

    /// A line without `=` glued with the lines after it into one key (zram-generator's
    /// reading): everything in it is dropped, by zram-generator at boot and here. Always a
    /// warning, also when strict: it is how zram-generator reads the file.
    fn glued(&mut self, key: &str, line: usize, lines: usize) {
        let first = key.lines().next().unwrap_or("");
        let dropped: Vec<&str> = key.lines().skip(1).map(str::trim).collect();
        let e = self.err(
            line,
            format!(
                "`{first}` has no `=`, so zram-generator reads it and the {} line(s) after it, up to the next `=`, as one unknown key; DROPPED (at boot too): `{}`",
                lines - 1,
                dropped.join("` `")
            ),
        );
        self.cfg.warnings.push(e);
    }

    /// The section a `[name]` header opens.
    fn header(&mut self, line: usize, name: &str) -> Result<Section, ConfigError> {
        if let Some(n) = name.strip_prefix("zram") {
            // zram-generator's test (src/config.rs:343): the rest parses as a u64.
            if n.parse::<u64>().is_ok() {
                return self.device_section(line, name, n);
            }
        }
        match name {
            "sysctl" => Ok(Section::Sysctl),
            "zswap" => Ok(Section::Zswap),
            "disk-swap" => {
                if self.disk_swap_line == 0 {
                    self.disk_swap_line = line;
                }
                Ok(Section::DiskSwap)
            }
            "policy" => Ok(Section::Policy),
            _ => {
                self.warn(
                    line,
                    format!("unknown section [{name}], ignored: expected [zramN], [sysctl], [zswap], [disk-swap] or [policy]"),
                )?;
                Ok(Section::Ignored)
            }
        }
    }

    /// `[zramN]`: a new device with zram-generator's defaults, or the one of an earlier
    /// `[zramN]` (merged).
    fn device_section(&mut self, line: usize, name: &str, n: &str) -> Result<Section, ConfigError> {
        let id: u32 =
            n.parse()
                .ok()
                .filter(|id: &u32| id.to_string() == n)
                .ok_or_else(|| {
                    self.err(
                        line,
                        format!(
                        "section [{name}] names no zram device the kernel creates (write [zram{}]; at boot zram-generator makes units for a /dev/{name}, which never appears)",
                        n.parse::<u64>().map(|x| x.to_string()).unwrap_or_else(|_| n.into())
                    ),
                    )
                })?;
        if id > MAX_ZRAM_ID {
            return Err(self.err(
                line,
                format!(
                    "section [{name}] names a zram device the kernel cannot create: zram_add gives a \
                     device its id as its minor number, and a block device's minor is at most \
                     {MAX_ZRAM_ID} (MINORMASK, 2^20 - 1; device_add_disk refuses a larger one), \
                     so hot_add never returns {id}"
                ),
            ));
        }
        if let Some(i) = self.cfg.devices.iter().position(|d| d.id == id) {
            return Ok(Section::Device(i));
        }
        self.cfg.devices.push(DeviceConfig::new(id, line));
        self.dev_keys.push(Vec::new());
        Ok(Section::Device(self.cfg.devices.len() - 1))
    }

    /// A `key = value` outside any section: zram-generator's `set!` is refused above; any
    /// other key is ignored with a warning there (src/config.rs: `toplevel_line`).
    fn toplevel(&mut self, e: Entry) -> Result<(), ConfigError> {
        let reason = match e.key.split_once('!') {
            Some((op, _)) => format!("unknown outside-of-section operation `{op}!`, ignored"),
            None => format!("key `{}` outside any section, ignored", e.key),
        };
        self.warn(e.line, reason)
    }

    /// A `key = value` in the current section.
    fn entry(&mut self, e: Entry) -> Result<(), ConfigError> {
        let line = e.line;
        match self.section {
            Section::None => self.toplevel(e),
            Section::Ignored => Ok(()),
            Section::Device(i) => {
                if !DEVICE_KEYS.contains(&e.key.as_str()) {
                    let reason = format!(
                        "unknown key `{}` in [{}], ignored; known keys: {}",
                        e.key,
                        self.cfg.devices[i].name,
                        DEVICE_KEYS.join(", ")
                    );
                    return self.warn(line, reason);
                }
                self.dev_keys[i].push((self.file.clone(), e));
                Ok(())
            }
            Section::Sysctl => {
                check_sysctl(&e).map_err(|r| self.err(line, r))?;
                self.cfg.sysctls.push(e);
                Ok(())
            }
            Section::Zswap => {
                if !ZSWAP_PARAMS.contains(&e.key.as_str()) {
                    let reason = format!(
                        "unknown key `{}` in [zswap], ignored; known keys: {}",
                        e.key,
                        ZSWAP_PARAMS.join(", ")
                    );
                    return self.warn(line, reason);
                }
                let e = check_zswap(e).map_err(|r| self.err(line, r))?;
                self.cfg.zswap.push(e);
                Ok(())
            }
            Section::DiskSwap => {
                if e.key != "device" && e.key != "priority" {
                    let reason = format!(
                        "unknown key `{}` in [disk-swap], ignored; known keys: device, priority",
                        e.key
                    );
                    return self.warn(line, reason);
                }
                self.disk_swap_keys.push((self.file.clone(), e));
                Ok(())
            }
            Section::Policy => {
                self.cfg.policy.push(e);
                Ok(())
            }
        }
    }

    /// The end of the files: interpret the device and disk-swap keys, devices by number.
    pub(super) fn finish(mut self) -> Result<Config, ConfigError> {
        for (i, keys) in std::mem::take(&mut self.dev_keys).into_iter().enumerate() {
            let mut warnings = Vec::new();
            device_keys(&mut self.cfg.devices[i], keys, &mut warnings)?;
            for (file, line, reason) in warnings {
                self.file = file;
                self.warn(line, reason)?;
            }
        }
        self.cfg.devices.sort_by_key(|d| d.id);
        if self.disk_swap_line != 0 {
            let keys = std::mem::take(&mut self.disk_swap_keys);
            let ds = disk_swap(&self.cfg, keys, self.disk_swap_line)?;
            self.cfg.disk_swap = Some(ds);
        }
        Ok(self.cfg)
    }
}

/// `[sysctl]` keys are names under /proc/sys written with dots (vm.swappiness).
fn check_sysctl(e: &Entry) -> Result<(), String> {
    let key = &e.key;
    let ok = key.contains('.')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !ok {
        return Err(format!("`{key}` is not a sysctl name (like vm.swappiness)"));
    }
    if e.value.is_empty() {
        return Err(format!("sysctl `{key}` has no value"));
    }
    Ok(())
}

/// The obsolete `zram-fraction` and `max-zram-size` (value, line), turned into a zram-size.
#[derive(Default)]
struct ObsoleteSize {
    fraction: Option<(f64, usize)>,
    /// MiB; `None` inside = `none` (no maximum).
    max_size: Option<(Option<u64>, usize)>,
}

/// (file, line, reason) of a warning found while interpreting keys.
type Warning = (PathBuf, usize, String);

/// Interpret the keys of one `[zramN]` section (all its occurrences, in reading order:
/// a later key overrides an earlier one).
fn device_keys(
    dev: &mut DeviceConfig,
    keys: Vec<Keyed>,
    warnings: &mut Vec<Warning>,
) -> Result<(), ConfigError> {
    let mut obsolete = ObsoleteSize::default();
    let mut last_file = None;
    for (file, e) in keys {
        dev.raw.push((e.key.clone(), e.value.clone()));
        let mut w = Vec::new();
        device_key(dev, &e, &mut obsolete, &mut w).map_err(|reason| ConfigError {
            file: file.clone(),
            line: e.line,
            reason,
        })?;
        warnings.extend(w.into_iter().map(|r| (file.clone(), e.line, r)));
        match e.key.as_str() {
            "zram-size" => dev.zram_size.file = Some(file.clone()),
            "zram-resident-limit" => {
                if let Some(r) = dev.resident_limit.as_mut() {
                    r.file = Some(file.clone());
                }
            }
            _ => {}
        }
        last_file = Some(file);
    }
    let file = last_file.unwrap_or_default();
    let at = |(line, reason): (usize, String)| ConfigError {
        file: file.clone(),
        line,
        reason,
    };
    obsolete_size(dev, &obsolete).map_err(at)?;
    if obsolete.fraction.is_some() || obsolete.max_size.is_some() {
        dev.zram_size.file = Some(file.clone());
    }
    check_fs_type(dev).map_err(|r| at((dev.line, r)))
}

/// One key of a `[zramN]` section (checked against DEVICE_KEYS already); `warnings` gets
/// what the kernel takes but would not do as written.
fn device_key(
    dev: &mut DeviceConfig,
    e: &Entry,
    obsolete: &mut ObsoleteSize,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let (line, v) = (e.line, e.value.as_str());
    match e.key.as_str() {
        "zram-size" => dev.zram_size = size_expr(v, line)?,
        "zram-resident-limit" => dev.resident_limit = Some(size_expr(v, line)?),
        "host-memory-limit" | "memory-limit" => {
            dev.host_memory_limit = host_memory_limit(&e.key, v)?
        }
        "zram-fraction" => obsolete.fraction = Some((zram_fraction(v)?, line)),
        "max-zram-size" => obsolete.max_size = Some((max_zram_size(v)?, line)),
        "compression-algorithm" => {
            let (a, w) = parse_optional_algorithms(v)?;
            warnings.extend(w);
            dev.algorithms = a;
        }
        "writeback-device" => dev.writeback_device = Some(normal_path("writeback-device", v)?),
        "swap-priority" => dev.swap_priority = swap_priority(v)?,
        "fs-type" => dev.fs_type = fs_type(v)?,
        "mount-point" => dev.mount_point = Some(normal_path("mount-point", v)?),
        "options" => dev.options = Some(v.to_string()),
        _ => unreachable!("checked against DEVICE_KEYS"),
    }
    Ok(())
}

fn size_expr(v: &str, line: usize) -> Result<SizeExpr, String> {
    SizeExpr::parse(v, line).map_err(|r| format!("bad size expression `{v}`: {r}"))
}

/// MiB, or `none` for no limit.
fn host_memory_limit(key: &str, v: &str) -> Result<Option<u64>, String> {
    if v == "none" {
        return Ok(None);
    }
    v.parse()
        .map(Some)
        .map_err(|_| format!("{key} must be a number of MiB or `none`, not `{v}`"))
}

/// A fraction of `ram`, >= 0 (zram-generator: `f >= 0.`; 0 makes no device).
fn zram_fraction(v: &str) -> Result<f64, String> {
    let f: f64 = v
        .parse()
        .map_err(|_| format!("zram-fraction must be a number, not `{v}`"))?;
    if !(f >= 0.0 && f.is_finite()) {
        return Err(format!("zram-fraction must be 0 or more, not `{v}`"));
    }
    Ok(f)
}

/// Whole MiB, or `none` (no maximum), as zram-generator's `parse_optional_size`.
fn max_zram_size(v: &str) -> Result<Option<u64>, String> {
    if v == "none" {
        return Ok(None);
    }
    v.parse()
        .map(Some)
        .map_err(|_| format!("max-zram-size must be whole MiB or `none`, not `{v}`"))
}

/// An absolute path without `..`, normalised as zram-generator's `verify_mount_point`
/// does (`Path::components`): `//` and `/./` collapse, a trailing `/` goes.
fn normal_path(key: &str, v: &str) -> Result<String, String> {
    if !v.starts_with('/') {
        return Err(format!("{key} must be an absolute path, not `{v}`"));
    }
    let parts: Vec<&str> = v
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.contains(&"..") {
        return Err(format!("{key} `{v}` is not normalised (it contains `..`)"));
    }
    Ok(format!("/{}", parts.join("/")))
}

/// A swap priority as swapon(8) takes it: -1…32767.
fn swap_priority(v: &str) -> Result<i32, String> {
    let p: i32 = v
        .parse()
        .map_err(|_| format!("swap-priority must be an integer, not `{v}`"))?;
    if !(-1..=32767).contains(&p) {
        return Err(format!("swap-priority {p} out of range -1…32767"));
    }
    Ok(p)
}

fn fs_type(v: &str) -> Result<String, String> {
    if v.is_empty()
        || !v
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    {
        return Err(format!("bad fs-type `{v}`: letters, digits, `_` and `.` only, as it names the command mkfs.TYPE (at boot zram-generator passes it to systemd-makefs as it is)"));
    }
    Ok(v.to_string())
}

/// zram-generator's obsolete keys: zram-size = min(whole MiB of ram * zram-fraction,
/// max-zram-size), defaults 0.5 and no maximum (src/config.rs, `set_disksize_if_enabled`:
/// `(fraction * memtotal_mb) as u64`, then `.min(max)`).
fn obsolete_size(dev: &mut DeviceConfig, o: &ObsoleteSize) -> Result<(), (usize, String)> {
    if o.fraction.is_none() && o.max_size.is_none() {
        return Ok(());
    }
    let f = o.fraction.map(|x| x.0).unwrap_or(0.5);
    // No maximum unless max-zram-size gives one: zram-generator's code has no 4096 MiB default
    // here (src/config.rs:131, `unwrap_or(None).unwrap_or(u64::MAX)`), whatever its man page says.
    let m = o.max_size.and_then(|x| x.0);
    let line = o
        .fraction
        .or(o.max_size.map(|x| (0.0, x.1)))
        .map(|x| x.1)
        .unwrap_or(dev.line);
    let src = match m {
        None => format!("int(ram * {f})"),
        Some(m) => format!("min(int(ram * {f}), {m})"),
    };
    dev.zram_size = SizeExpr::parse(&src, line).map_err(|r| (line, r))?;
    Ok(())
}

/// fs-type and mount-point agree: a mount point without fs-type means ext2
/// (zram-generator); a filesystem without a mount point is a formatted plain device
/// (zram-generator's 08-plain-device); a mount point with an explicit `fs-type = swap`
/// is refused (zram-generator would mkswap and then mount it, which fails).
fn check_fs_type(dev: &mut DeviceConfig) -> Result<(), String> {
    if dev.mount_point.is_some() && dev.fs_type == "swap" {
        let explicit = dev.raw.iter().any(|(k, _)| k == "fs-type");
        if explicit {
            return Err(format!("[{}] has mount-point but fs-type = swap: swap cannot be mounted (at boot zram-generator runs mkswap and its mount unit fails)", dev.name));
        }
        dev.fs_type = "ext2".into();
    }
    Ok(())
}

/// The `[disk-swap]` tier: a device and a priority below every zram swap's.
fn disk_swap(cfg: &Config, keys: Vec<Keyed>, line: usize) -> Result<DiskSwap, ConfigError> {
    let mut device = None;
    let mut priority = 10;
    let at = |file: &Path, line: usize, reason: String| ConfigError {
        file: file.to_path_buf(),
        line,
        reason,
    };
    for (file, e) in keys {
        match e.key.as_str() {
            "device" => {
                if !e.value.starts_with('/') {
                    return Err(at(
                        &file,
                        e.line,
                        format!(
                            "disk-swap device must be an absolute path, not `{}`",
                            e.value
                        ),
                    ));
                }
                device = Some(e.value);
            }
            _ => priority = disk_swap_priority(&e.value).map_err(|r| at(&file, e.line, r))?,
        }
    }
    let device = device.ok_or_else(|| cfg.err(line, "[disk-swap] needs `device = /path`"))?;
    for d in cfg.devices.iter().filter(|d| d.fs_type == "swap") {
        if d.swap_priority <= priority {
            return Err(cfg.err(
                line,
                format!("disk-swap priority {priority} must be below the swap-priority of [{}] ({}) so zram fills first", d.name, d.swap_priority),
            ));
        }
    }
    Ok(DiskSwap {
        device,
        priority,
        line,
    })
}

fn disk_swap_priority(v: &str) -> Result<i32, String> {
    let p: i32 = v
        .parse()
        .map_err(|_| format!("priority must be an integer, not `{v}`"))?;
    if !(-1..=32767).contains(&p) {
        return Err(format!("priority {p} out of range -1…32767"));
    }
    Ok(p)
}

fn check_zswap(e: Entry) -> Result<Entry, String> {
    let v = e.value.as_str();
    let value = match e.key.as_str() {
        "enabled" | "shrinker_enabled" => match v.to_ascii_lowercase().as_str() {
            "y" | "yes" | "1" | "true" | "on" => "Y".to_string(),
            "n" | "no" | "0" | "false" | "off" => "N".to_string(),
            _ => {
                return Err(format!(
                    "zswap {} must be a boolean (Y/N), not `{v}`",
                    e.key
                ))
            }
        },
        "compressor" => {
            // zswap takes any crypto API compressor the kernel has; lzo-rle
            // is one (crypto/lzo-rle.c registers "lzo-rle").
            let known = zmem_codec::zswap_names();
            if !known.contains(&v) {
                return Err(format!(
                    "unknown zswap compressor `{v}`; known: {}",
                    known.join(", ")
                ));
            }
            v.to_string()
        }
        "max_pool_percent" | "accept_threshold_percent" => {
            let n: u32 = v
                .parse()
                .map_err(|_| format!("zswap {} must be a whole percentage, not `{v}`", e.key))?;
            if n > 100 {
                return Err(format!("zswap {} = {n} is over 100", e.key));
            }
            n.to_string()
        }
        k => {
            return Err(format!(
                "unknown key `{k}` in [zswap]; known keys: {}",
                ZSWAP_PARAMS.join(", ")
            ))
        }
    };
    Ok(Entry { value, ..e })
}
