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

/// Parse the text of a file (`file` is used in errors only).
pub(super) fn parse(text: &str, file: &Path) -> Result<Config, ConfigError> {
    let mut cfg = Config {
        file: file.to_path_buf(),
        devices: Vec::new(),
        sysctls: Vec::new(),
        zswap: Vec::new(),
        disk_swap: None,
        policy: Vec::new(),
    };
    let err = |line: usize, reason: String| ConfigError {
        file: file.to_path_buf(),
        line,
        reason,
    };
    let mut section = Section::None;
    // Per device: raw keys collected first, interpreted at the end of the file.
    let mut dev_keys: Vec<Vec<Entry>> = Vec::new();
    let mut disk_swap_keys: Vec<Entry> = Vec::new();
    let mut disk_swap_line = 0;
    for (i, raw_line) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw_line.trim();
        if l.is_empty() || l.starts_with('#') || l.starts_with(';') {
            continue;
        }
        if let Some(rest) = l.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| err(line, format!("section header `{l}` has no closing `]`")))?
                .trim();
            section = if let Some(n) = name.strip_prefix("zram") {
                let id: u32 = n.parse().map_err(|_| {
                    err(
                        line,
                        format!("unknown section [{name}]: device sections are [zramN]"),
                    )
                })?;
                if cfg.devices.iter().any(|d| d.id == id) {
                    return Err(err(line, format!("section [{name}] appears twice")));
                }
                cfg.devices.push(DeviceConfig {
                    name: name.to_string(),
                    id,
                    line,
                    zram_size: SizeExpr::parse("min(ram / 2, 4096)", line)
                        .expect("default expression"),
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
                dev_keys.push(Vec::new());
                Section::Device(cfg.devices.len() - 1)
            } else {
                match name {
                    "sysctl" => Section::Sysctl,
                    "zswap" => Section::Zswap,
                    "disk-swap" => {
                        if disk_swap_line != 0 {
                            return Err(err(line, "section [disk-swap] appears twice".into()));
                        }
                        disk_swap_line = line;
                        Section::DiskSwap
                    }
                    "policy" => Section::Policy,
                    _ => {
                        return Err(err(
                            line,
                            format!("unknown section [{name}]: expected [zramN], [sysctl], [zswap], [disk-swap] or [policy]"),
                        ))
                    }
                }
            };
            continue;
        }
        let (k, v) = l
            .split_once('=')
            .ok_or_else(|| err(line, format!("expected `key = value`, found `{l}`")))?;
        let key = k.trim().to_string();
        let value = v.trim().to_string();
        if key.starts_with("set!") {
            return Err(err(line, format!("`{key}` runs a program at boot; zmem does not run programs from configuration (compute the value and write it into the size expression)")));
        }
        let e = Entry {
            key: key.clone(),
            value,
            line,
        };
        match section {
            Section::None => return Err(err(line, format!("key `{key}` outside any section"))),
            Section::Device(i) => {
                if !DEVICE_KEYS.contains(&key.as_str()) {
                    return Err(err(
                        line,
                        format!(
                            "unknown key `{key}` in [{}]; known keys: {}",
                            cfg.devices[i].name,
                            DEVICE_KEYS.join(", ")
                        ),
                    ));
                }
                dev_keys[i].push(e);
            }
            Section::Sysctl => {
                let ok = key.contains('.')
                    && key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
                if !ok {
                    return Err(err(
                        line,
                        format!("`{key}` is not a sysctl name (like vm.swappiness)"),
                    ));
                }
                if e.value.is_empty() {
                    return Err(err(line, format!("sysctl `{key}` has no value")));
                }
                cfg.sysctls.push(e);
            }
            Section::Zswap => {
                cfg.zswap.push(check_zswap(e).map_err(|r| err(line, r))?);
            }
            Section::DiskSwap => {
                if key != "device" && key != "priority" {
                    return Err(err(
                        line,
                        format!("unknown key `{key}` in [disk-swap]; known keys: device, priority"),
                    ));
                }
                disk_swap_keys.push(e);
            }
            Section::Policy => cfg.policy.push(e),
        }
    }
    for (i, keys) in dev_keys.into_iter().enumerate() {
        let dev = &mut cfg.devices[i];
        let mut fraction: Option<(f64, usize)> = None;
        let mut max_size: Option<(f64, usize)> = None;
        for e in keys {
            let line = e.line;
            let v = e.value.as_str();
            dev.raw.push((e.key.clone(), e.value.clone()));
            match e.key.as_str() {
                "zram-size" => {
                    dev.zram_size = SizeExpr::parse(v, line)
                        .map_err(|r| err(line, format!("bad size expression `{v}`: {r}")))?
                }
                "zram-resident-limit" => {
                    dev.resident_limit = Some(
                        SizeExpr::parse(v, line)
                            .map_err(|r| err(line, format!("bad size expression `{v}`: {r}")))?,
                    )
                }
                "host-memory-limit" | "memory-limit" => {
                    dev.host_memory_limit = if v == "none" {
                        None
                    } else {
                        Some(v.parse().map_err(|_| {
                            err(
                                line,
                                format!("{} must be a number of MiB or `none`, not `{v}`", e.key),
                            )
                        })?)
                    }
                }
                "zram-fraction" => {
                    let f: f64 = v.parse().map_err(|_| {
                        err(line, format!("zram-fraction must be a number, not `{v}`"))
                    })?;
                    if !(f > 0.0 && f.is_finite()) {
                        return Err(err(
                            line,
                            format!("zram-fraction must be positive, not `{v}`"),
                        ));
                    }
                    fraction = Some((f, line));
                }
                "max-zram-size" => {
                    let f: f64 = if v == "none" {
                        f64::INFINITY
                    } else {
                        v.parse().map_err(|_| {
                            err(
                                line,
                                format!("max-zram-size must be MiB or `none`, not `{v}`"),
                            )
                        })?
                    };
                    max_size = Some((f, line));
                }
                "compression-algorithm" => {
                    dev.algorithms = Some(parse_algorithms(v).map_err(|r| err(line, r))?)
                }
                "writeback-device" => {
                    if !v.starts_with('/') {
                        return Err(err(
                            line,
                            format!("writeback-device must be an absolute path, not `{v}`"),
                        ));
                    }
                    dev.writeback_device = Some(v.to_string());
                }
                "swap-priority" => {
                    let p: i32 = v.parse().map_err(|_| {
                        err(line, format!("swap-priority must be an integer, not `{v}`"))
                    })?;
                    if !(-1..=32767).contains(&p) {
                        return Err(err(
                            line,
                            format!("swap-priority {p} out of range -1…32767"),
                        ));
                    }
                    dev.swap_priority = p;
                }
                "fs-type" => {
                    if v.is_empty()
                        || !v
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
                    {
                        return Err(err(line, format!("bad fs-type `{v}`")));
                    }
                    dev.fs_type = v.to_string();
                }
                "mount-point" => {
                    if !v.starts_with('/') {
                        return Err(err(
                            line,
                            format!("mount-point must be an absolute path, not `{v}`"),
                        ));
                    }
                    dev.mount_point = Some(v.to_string());
                }
                "options" => dev.options = Some(v.to_string()),
                _ => unreachable!("checked against DEVICE_KEYS"),
            }
        }
        if fraction.is_some() || max_size.is_some() {
            let f = fraction.map(|x| x.0).unwrap_or(0.5);
            let m = max_size.map(|x| x.0).unwrap_or(4096.0);
            let line = fraction.or(max_size).map(|x| x.1).unwrap_or(dev.line);
            let src = if m.is_infinite() {
                format!("ram * {f}")
            } else {
                format!("min(ram * {f}, {m})")
            };
            dev.zram_size = SizeExpr::parse(&src, line).map_err(|r| err(line, r))?;
        }
        if dev.mount_point.is_some() && dev.fs_type == "swap" {
            // zram-generator: a mount point without fs-type means ext2.
            let explicit = dev.raw.iter().any(|(k, _)| k == "fs-type");
            if explicit {
                return Err(err(
                    dev.line,
                    format!("[{}] has mount-point but fs-type = swap", dev.name),
                ));
            }
            dev.fs_type = "ext2".into();
        }
        if dev.fs_type != "swap" && dev.fs_type != "none" && dev.mount_point.is_none() {
            return Err(err(
                dev.line,
                format!(
                    "[{}] has fs-type = {} but no mount-point",
                    dev.name, dev.fs_type
                ),
            ));
        }
    }
    if disk_swap_line != 0 {
        let mut device = None;
        let mut priority = 10;
        for e in disk_swap_keys {
            match e.key.as_str() {
                "device" => {
                    if !e.value.starts_with('/') {
                        return Err(err(
                            e.line,
                            format!(
                                "disk-swap device must be an absolute path, not `{}`",
                                e.value
                            ),
                        ));
                    }
                    device = Some(e.value);
                }
                _ => {
                    priority = e.value.parse().map_err(|_| {
                        err(
                            e.line,
                            format!("priority must be an integer, not `{}`", e.value),
                        )
                    })?;
                    if !(-1..=32767).contains(&priority) {
                        return Err(err(
                            e.line,
                            format!("priority {priority} out of range -1…32767"),
                        ));
                    }
                }
            }
        }
        let device = device
            .ok_or_else(|| err(disk_swap_line, "[disk-swap] needs `device = /path`".into()))?;
        for d in cfg.devices.iter().filter(|d| d.fs_type == "swap") {
            if d.swap_priority <= priority {
                return Err(err(
                    disk_swap_line,
                    format!("disk-swap priority {priority} must be below the swap-priority of [{}] ({}) so zram fills first", d.name, d.swap_priority),
                ));
            }
        }
        cfg.disk_swap = Some(DiskSwap {
            device,
            priority,
            line: disk_swap_line,
        });
    }
    Ok(cfg)
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
            if !KNOWN_ALGORITHMS.contains(&v) || v == "lzo-rle" {
                return Err(format!(
                    "unknown zswap compressor `{v}`; known: lzo, lz4, lz4hc, zstd, deflate, 842"
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
