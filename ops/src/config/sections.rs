//! Sections and keys of zram-generator.conf and zmem's extensions: `[zramN]`, `[sysctl]`,
//! `[zswap]`, `[disk-swap]` and `[policy]`.

use std::path::Path;

use super::{
    parse_algorithms, Config, ConfigError, DeviceConfig, DiskSwap, Entry, SizeExpr,
    KNOWN_ALGORITHMS, ZSWAP_PARAMS,
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
    Device(usize),
    Sysctl,
    Zswap,
    DiskSwap,
    Policy,
}

/// The file read line by line: entries are checked as they come, `[zramN]` and
/// `[disk-swap]` keys are interpreted once the whole file is read.
pub(super) struct Reader {
    cfg: Config,
    section: Section,
    /// Per device: raw keys collected first, interpreted at the end of the file.
    dev_keys: Vec<Vec<Entry>>,
    disk_swap_keys: Vec<Entry>,
    /// Line of the `[disk-swap]` header; 0 when there is none.
    disk_swap_line: usize,
}

impl Reader {
    pub(super) fn new(file: &Path) -> Reader {
        Reader {
            cfg: Config {
                file: file.to_path_buf(),
                devices: Vec::new(),
                sysctls: Vec::new(),
                zswap: Vec::new(),
                disk_swap: None,
                policy: Vec::new(),
            },
            section: Section::None,
            dev_keys: Vec::new(),
            disk_swap_keys: Vec::new(),
            disk_swap_line: 0,
        }
    }

    /// One trimmed line: blank, comment, section header or `key = value`.
    pub(super) fn line(&mut self, line: usize, l: &str) -> Result<(), ConfigError> {
        if l.is_empty() || l.starts_with('#') || l.starts_with(';') {
            return Ok(());
        }
        if let Some(rest) = l.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| {
                    self.cfg
                        .err(line, format!("section header `{l}` has no closing `]`"))
                })?
                .trim();
            self.section = self.header(line, name)?;
            return Ok(());
        }
        let (k, v) = l.split_once('=').ok_or_else(|| {
            self.cfg
                .err(line, format!("expected `key = value`, found `{l}`"))
        })?;
        let key = k.trim().to_string();
        if key.starts_with("set!") {
            return Err(self.cfg.err(line, format!("`{key}` runs a program at boot; zmem does not run programs from configuration (compute the value and write it into the size expression)")));
        }
        self.entry(Entry {
            key,
            value: v.trim().to_string(),
            line,
        })
    }

    /// The section a `[name]` header opens.
    fn header(&mut self, line: usize, name: &str) -> Result<Section, ConfigError> {
        if let Some(n) = name.strip_prefix("zram") {
            return self.device_section(line, name, n);
        }
        match name {
            "sysctl" => Ok(Section::Sysctl),
            "zswap" => Ok(Section::Zswap),
            "disk-swap" => {
                if self.disk_swap_line != 0 {
                    return Err(self.cfg.err(line, "section [disk-swap] appears twice"));
                }
                self.disk_swap_line = line;
                Ok(Section::DiskSwap)
            }
            "policy" => Ok(Section::Policy),
            _ => Err(self.cfg.err(
                line,
                format!("unknown section [{name}]: expected [zramN], [sysctl], [zswap], [disk-swap] or [policy]"),
            )),
        }
    }

    /// `[zramN]`: a new device with zram-generator's defaults.
    fn device_section(&mut self, line: usize, name: &str, n: &str) -> Result<Section, ConfigError> {
        let id: u32 = n.parse().map_err(|_| {
            self.cfg.err(
                line,
                format!("unknown section [{name}]: device sections are [zramN]"),
            )
        })?;
        if self.cfg.devices.iter().any(|d| d.id == id) {
            return Err(self
                .cfg
                .err(line, format!("section [{name}] appears twice")));
        }
        self.cfg.devices.push(DeviceConfig {
            name: name.to_string(),
            id,
            line,
            zram_size: SizeExpr::parse("min(ram / 2, 4096)", line).expect("default expression"),
            resident_limit: None,
            host_memory_limit: None,
            algorithms: None,
            writeback_device: None,
            swap_priority: 100,
            fs_type: "swap".into(),
            mount_point: None,
            options: None,
            raw: Vec::new(),
        });
        self.dev_keys.push(Vec::new());
        Ok(Section::Device(self.cfg.devices.len() - 1))
    }

    /// A `key = value` in the current section.
    fn entry(&mut self, e: Entry) -> Result<(), ConfigError> {
        let line = e.line;
        match self.section {
            Section::None => Err(self
                .cfg
                .err(line, format!("key `{}` outside any section", e.key))),
            Section::Device(i) => {
                if !DEVICE_KEYS.contains(&e.key.as_str()) {
                    return Err(self.cfg.err(
                        line,
                        format!(
                            "unknown key `{}` in [{}]; known keys: {}",
                            e.key,
                            self.cfg.devices[i].name,
                            DEVICE_KEYS.join(", ")
                        ),
                    ));
                }
                self.dev_keys[i].push(e);
                Ok(())
            }
            Section::Sysctl => {
                check_sysctl(&e).map_err(|r| self.cfg.err(line, r))?;
                self.cfg.sysctls.push(e);
                Ok(())
            }
            Section::Zswap => {
                let e = check_zswap(e).map_err(|r| self.cfg.err(line, r))?;
                self.cfg.zswap.push(e);
                Ok(())
            }
            Section::DiskSwap => {
                if e.key != "device" && e.key != "priority" {
                    return Err(self.cfg.err(
                        line,
                        format!(
                            "unknown key `{}` in [disk-swap]; known keys: device, priority",
                            e.key
                        ),
                    ));
                }
                self.disk_swap_keys.push(e);
                Ok(())
            }
            Section::Policy => {
                self.cfg.policy.push(e);
                Ok(())
            }
        }
    }

    /// The end of the file: interpret the device and disk-swap keys.
    pub(super) fn finish(mut self) -> Result<Config, ConfigError> {
        for (i, keys) in std::mem::take(&mut self.dev_keys).into_iter().enumerate() {
            device_keys(&mut self.cfg.devices[i], keys)
                .map_err(|(line, r)| self.cfg.err(line, r))?;
        }
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
    max_size: Option<(f64, usize)>,
}

/// Interpret the keys of one `[zramN]` section; errors carry their line.
fn device_keys(dev: &mut DeviceConfig, keys: Vec<Entry>) -> Result<(), (usize, String)> {
    let mut obsolete = ObsoleteSize::default();
    for e in keys {
        dev.raw.push((e.key.clone(), e.value.clone()));
        device_key(dev, &e, &mut obsolete).map_err(|r| (e.line, r))?;
    }
    obsolete_size(dev, &obsolete)?;
    check_fs_type(dev).map_err(|r| (dev.line, r))
}

/// One key of a `[zramN]` section (checked against DEVICE_KEYS already).
fn device_key(
    dev: &mut DeviceConfig,
    e: &Entry,
    obsolete: &mut ObsoleteSize,
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
        "compression-algorithm" => dev.algorithms = Some(parse_algorithms(v)?),
        "writeback-device" => dev.writeback_device = Some(absolute_path("writeback-device", v)?),
        "swap-priority" => dev.swap_priority = swap_priority(v)?,
        "fs-type" => dev.fs_type = fs_type(v)?,
        "mount-point" => dev.mount_point = Some(absolute_path("mount-point", v)?),
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

fn zram_fraction(v: &str) -> Result<f64, String> {
    let f: f64 = v
        .parse()
        .map_err(|_| format!("zram-fraction must be a number, not `{v}`"))?;
    if !(f > 0.0 && f.is_finite()) {
        return Err(format!("zram-fraction must be positive, not `{v}`"));
    }
    Ok(f)
}

/// MiB, or `none` (infinite).
fn max_zram_size(v: &str) -> Result<f64, String> {
    if v == "none" {
        return Ok(f64::INFINITY);
    }
    v.parse()
        .map_err(|_| format!("max-zram-size must be MiB or `none`, not `{v}`"))
}

fn absolute_path(key: &str, v: &str) -> Result<String, String> {
    if !v.starts_with('/') {
        return Err(format!("{key} must be an absolute path, not `{v}`"));
    }
    Ok(v.to_string())
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
        return Err(format!("bad fs-type `{v}`"));
    }
    Ok(v.to_string())
}

/// zram-generator's obsolete keys: zram-size = min(ram * zram-fraction, max-zram-size),
/// with defaults 0.5 and 4096.
fn obsolete_size(dev: &mut DeviceConfig, o: &ObsoleteSize) -> Result<(), (usize, String)> {
    if o.fraction.is_none() && o.max_size.is_none() {
        return Ok(());
    }
    let f = o.fraction.map(|x| x.0).unwrap_or(0.5);
    let m = o.max_size.map(|x| x.0).unwrap_or(4096.0);
    let line = o.fraction.or(o.max_size).map(|x| x.1).unwrap_or(dev.line);
    let src = if m.is_infinite() {
        format!("ram * {f}")
    } else {
        format!("min(ram * {f}, {m})")
    };
    dev.zram_size = SizeExpr::parse(&src, line).map_err(|r| (line, r))?;
    Ok(())
}

/// fs-type and mount-point agree: a mount point without fs-type means ext2
/// (zram-generator), a filesystem needs a mount point.
fn check_fs_type(dev: &mut DeviceConfig) -> Result<(), String> {
    if dev.mount_point.is_some() && dev.fs_type == "swap" {
        let explicit = dev.raw.iter().any(|(k, _)| k == "fs-type");
        if explicit {
            return Err(format!("[{}] has mount-point but fs-type = swap", dev.name));
        }
        dev.fs_type = "ext2".into();
    }
    if dev.fs_type != "swap" && dev.fs_type != "none" && dev.mount_point.is_none() {
        return Err(format!(
            "[{}] has fs-type = {} but no mount-point",
            dev.name, dev.fs_type
        ));
    }
    Ok(())
}

/// The `[disk-swap]` tier: a device and a priority below every zram swap's.
fn disk_swap(cfg: &Config, keys: Vec<Entry>, line: usize) -> Result<DiskSwap, ConfigError> {
    let mut device = None;
    let mut priority = 10;
    for e in keys {
        match e.key.as_str() {
            "device" => {
                if !e.value.starts_with('/') {
                    return Err(cfg.err(
                        e.line,
                        format!(
                            "disk-swap device must be an absolute path, not `{}`",
                            e.value
                        ),
                    ));
                }
                device = Some(e.value);
            }
            _ => priority = disk_swap_priority(&e.value).map_err(|r| cfg.err(e.line, r))?,
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
            if !KNOWN_ALGORITHMS.contains(&v) {
                return Err(format!(
                    "unknown zswap compressor `{v}`; known: lzo, lzo-rle, lz4, lz4hc, zstd, deflate, 842"
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
