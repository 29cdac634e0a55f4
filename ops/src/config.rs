//! The configuration file of `zmem apply`, `zmem persist` and `zmem policy`:
//! systemd's zram-generator.conf format plus zmem's extensions.
//!
//! zram-generator keys (one `[zramN]` section per device): `zram-size`
//! (expression in MiB over `ram` = MemTotal in MiB), `zram-resident-limit`,
//! `host-memory-limit` (MiB or `none`), `compression-algorithm` (primary, then
//! recompression algorithms in decreasing priority, each optionally
//! `name(key=value,…)`, and a bare `(key=value,…)` for the recompression
//! trigger parameters such as `(type=huge)`), `writeback-device`,
//! `swap-priority`, `fs-type`, `mount-point`, `options`, and the obsolete
//! `memory-limit`, `zram-fraction`, `max-zram-size`.
//!
//! zmem extensions: `fs-type = none` (configure the device, do not format or
//! swap on it); `[sysctl]` (`vm.swappiness = 180`, …); `[zswap]` (`enabled`,
//! `compressor`, `max_pool_percent`, `accept_threshold_percent`,
//! `shrinker_enabled`); `[disk-swap]` (`device`, `priority`: the second tier
//! under zram); `[policy]` (keys of `zmem policy`, checked by that module).
//!
//! Every error names file, line and reason; nothing is applied from a file
//! that does not parse.

use std::fmt;
use std::path::{Path, PathBuf};

/// Algorithms the kernel's zram knows by name (any kernel version).
pub const KNOWN_ALGORITHMS: [&str; 7] =
    ["lzo-rle", "lzo", "lz4", "lz4hc", "zstd", "deflate", "842"];

/// zswap parameters zmem can set.
pub const ZSWAP_PARAMS: [&str; 5] = [
    "enabled",
    "compressor",
    "max_pool_percent",
    "accept_threshold_percent",
    "shrinker_enabled",
];

/// An error in a configuration file: `file:line: reason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.reason)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.reason)
        }
    }
}

impl std::error::Error for ConfigError {}

/// One algorithm with its parameters (`zstd(level=3)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Algo {
    pub name: String,
    pub params: Vec<(String, String)>,
}

/// `compression-algorithm`: primary, recompression algorithms (priority 1, 2, 3) and the
/// global recompression parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Algorithms {
    pub primary: Algo,
    pub recompress: Vec<Algo>,
    pub recompress_params: Vec<(String, String)>,
}

/// A `[zramN]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceConfig {
    pub name: String,
    pub id: u32,
    /// Line of the section header.
    pub line: usize,
    pub zram_size: SizeExpr,
    pub resident_limit: Option<SizeExpr>,
    /// MiB; `None` = no limit.
    pub host_memory_limit: Option<u64>,
    pub algorithms: Option<Algorithms>,
    pub writeback_device: Option<String>,
    pub swap_priority: i32,
    /// `swap` (default), a filesystem such as `ext4`, or `none` (zmem extension).
    pub fs_type: String,
    pub mount_point: Option<String>,
    pub options: Option<String>,
    /// Keys as written, in order, for persisting back to zram-generator.conf.
    pub raw: Vec<(String, String)>,
}

/// A size expression in MiB over `ram`, parsed when the file is read.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeExpr {
    pub source: String,
    pub line: usize,
    expr: Expr,
}

impl SizeExpr {
    pub fn parse(source: &str, line: usize) -> Result<SizeExpr, String> {
        let expr = parse_expr(source)?;
        Ok(SizeExpr {
            source: source.to_string(),
            line,
            expr,
        })
    }
    /// Value in MiB for a machine with `ram_mib` MiB.
    pub fn eval_mib(&self, ram_mib: f64) -> Result<f64, String> {
        eval(&self.expr, ram_mib)
    }
    /// Value in bytes (rounded down to whole 4 KiB pages).
    pub fn eval_bytes(&self, ram_mib: f64) -> Result<u64, String> {
        let mib = self.eval_mib(ram_mib)?;
        if !mib.is_finite() || mib < 0.0 {
            return Err(format!("`{}` gives {mib} MiB", self.source));
        }
        let b = (mib * 1048576.0) as u64;
        Ok(b / 4096 * 4096)
    }
}

/// The `[disk-swap]` tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskSwap {
    pub device: String,
    pub priority: i32,
    pub line: usize,
}

/// A `key = value` with its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: String,
    pub line: usize,
}

/// A parsed configuration file.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub file: PathBuf,
    pub devices: Vec<DeviceConfig>,
    pub sysctls: Vec<Entry>,
    pub zswap: Vec<Entry>,
    pub disk_swap: Option<DiskSwap>,
    pub policy: Vec<Entry>,
}

impl Config {
    pub fn err(&self, line: usize, reason: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.file.clone(),
            line,
            reason: reason.into(),
        }
    }
}

/// Read and parse a file.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: path.to_path_buf(),
        line: 0,
        reason: format!("cannot read: {e}"),
    })?;
    parse(&text, path)
}

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
pub fn parse(text: &str, file: &Path) -> Result<Config, ConfigError> {
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

/// Parse `compression-algorithm`: `lzo-rle zstd(level=3) (type=idle)`.
pub fn parse_algorithms(s: &str) -> Result<Algorithms, String> {
    // Split on whitespace outside parentheses.
    let mut tokens = Vec::new();
    let mut cur = String::new();
    let mut depth = 0;
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                if depth > 1 {
                    return Err("nested parentheses in compression-algorithm".into());
                }
                cur.push(c);
            }
            ')' => {
                if depth == 0 {
                    return Err("`)` without `(` in compression-algorithm".into());
                }
                depth -= 1;
                cur.push(c);
            }
            c if c.is_whitespace() && depth == 0 => {
                if !cur.is_empty() {
                    tokens.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if depth != 0 {
        return Err("unclosed `(` in compression-algorithm".into());
    }
    if !cur.is_empty() {
        tokens.push(cur);
    }
    let mut algos = Vec::new();
    let mut global = Vec::new();
    for t in tokens {
        let (name, params) = match t.find('(') {
            Some(i) => {
                let inner = t[i + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| format!("text after `)` in `{t}`"))?;
                (&t[..i], parse_params(inner)?)
            }
            None => (t.as_str(), Vec::new()),
        };
        if name.is_empty() {
            if !global.is_empty() {
                return Err("more than one global `(…)` parameter group".into());
            }
            for (k, v) in &params {
                match k.as_str() {
                    "type" => {
                        if !["idle", "huge", "huge_idle"].contains(&v.as_str()) {
                            return Err(format!(
                                "recompression type must be idle, huge or huge_idle, not `{v}`"
                            ));
                        }
                    }
                    "threshold" | "max_pages" => {
                        v.parse::<u64>().map_err(|_| {
                            format!("recompression {k} must be a number, not `{v}`")
                        })?;
                    }
                    _ => {
                        return Err(format!(
                        "unknown recompression parameter `{k}`; known: type, threshold, max_pages"
                    ))
                    }
                }
            }
            global = params;
            continue;
        }
        if !KNOWN_ALGORITHMS.contains(&name) {
            return Err(format!(
                "unknown algorithm `{name}`; zram knows {}",
                KNOWN_ALGORITHMS.join(", ")
            ));
        }
        for (k, v) in &params {
            match k.as_str() {
                "level" => {
                    v.parse::<i32>()
                        .map_err(|_| format!("{name} level must be an integer, not `{v}`"))?;
                }
                "dict" => {
                    if !v.starts_with('/') {
                        return Err(format!("{name} dict must be an absolute path, not `{v}`"));
                    }
                }
                "deflate.winbits" => {
                    v.parse::<i32>()
                        .map_err(|_| format!("deflate.winbits must be an integer, not `{v}`"))?;
                }
                _ => {
                    return Err(format!(
                        "unknown parameter `{k}` for {name}; known: level, dict, deflate.winbits"
                    ))
                }
            }
        }
        algos.push(Algo {
            name: name.to_string(),
            params,
        });
    }
    if algos.is_empty() {
        return Err("compression-algorithm names no algorithm".into());
    }
    if algos.len() > 4 {
        return Err(format!(
            "zram takes at most 3 recompression algorithms, {} given",
            algos.len() - 1
        ));
    }
    let primary = algos.remove(0);
    if !global.is_empty() && algos.is_empty() {
        return Err("recompression parameters given but no recompression algorithm".into());
    }
    Ok(Algorithms {
        primary,
        recompress: algos,
        recompress_params: global,
    })
}

fn parse_params(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut v = Vec::new();
    for p in s
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
    {
        let (k, val) = p
            .split_once('=')
            .ok_or_else(|| format!("parameter `{p}` is not key=value"))?;
        if k.is_empty() || val.is_empty() {
            return Err(format!("parameter `{p}` is not key=value"));
        }
        v.push((k.to_string(), val.to_string()));
    }
    Ok(v)
}

impl Algo {
    /// `zstd(level=3)` as written in the config.
    pub fn to_config(&self) -> String {
        if self.params.is_empty() {
            self.name.clone()
        } else {
            format!(
                "{}({})",
                self.name,
                self.params
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            )
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Size expressions: numbers, `ram`, + - * / % ^, parentheses, and the functions
// min max int ceil floor round abs log; constants e and pi (π).

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Num(f64),
    Ram,
    Neg(Box<Expr>),
    Bin(char, Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
    src: &'a str,
}

fn parse_expr(src: &str) -> Result<Expr, String> {
    if src.trim().is_empty() {
        return Err("empty expression".into());
    }
    let mut p = P {
        s: src.as_bytes(),
        i: 0,
        src,
    };
    let e = p.sum()?;
    p.ws();
    if p.i < p.s.len() {
        return Err(format!("unexpected `{}`", &src[p.i..]));
    }
    Ok(e)
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }
    fn sum(&mut self) -> Result<Expr, String> {
        let mut l = self.product()?;
        while let Some(c @ (b'+' | b'-')) = self.peek() {
            self.i += 1;
            let r = self.product()?;
            l = Expr::Bin(c as char, Box::new(l), Box::new(r));
        }
        Ok(l)
    }
    fn product(&mut self) -> Result<Expr, String> {
        let mut l = self.unary()?;
        while let Some(c @ (b'*' | b'/' | b'%')) = self.peek() {
            self.i += 1;
            let r = self.unary()?;
            l = Expr::Bin(c as char, Box::new(l), Box::new(r));
        }
        Ok(l)
    }
    fn unary(&mut self) -> Result<Expr, String> {
        match self.peek() {
            Some(b'-') => {
                self.i += 1;
                Ok(Expr::Neg(Box::new(self.unary()?)))
            }
            Some(b'+') => {
                self.i += 1;
                self.unary()
            }
            _ => self.power(),
        }
    }
    fn power(&mut self) -> Result<Expr, String> {
        let base = self.atom()?;
        if self.peek() == Some(b'^') {
            self.i += 1;
            let exp = self.unary()?;
            return Ok(Expr::Bin('^', Box::new(base), Box::new(exp)));
        }
        Ok(base)
    }
    fn atom(&mut self) -> Result<Expr, String> {
        match self.peek() {
            None => Err("expression ends too early".into()),
            Some(b'(') => {
                self.i += 1;
                let e = self.sum()?;
                if self.peek() != Some(b')') {
                    return Err("missing `)`".into());
                }
                self.i += 1;
                Ok(e)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => {
                let st = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_digit() || self.s[self.i] == b'.')
                {
                    self.i += 1;
                }
                // Exponent: 1e3, 2.5E-2
                if self.i < self.s.len() && (self.s[self.i] == b'e' || self.s[self.i] == b'E') {
                    let save = self.i;
                    self.i += 1;
                    if self.i < self.s.len() && (self.s[self.i] == b'-' || self.s[self.i] == b'+') {
                        self.i += 1;
                    }
                    if self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                            self.i += 1;
                        }
                    } else {
                        self.i = save;
                    }
                }
                let t = &self.src[st..self.i];
                t.parse()
                    .map(Expr::Num)
                    .map_err(|_| format!("bad number `{t}`"))
            }
            Some(_) => {
                let st = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric()
                        || self.s[self.i] == b'_'
                        || self.s[self.i] >= 0x80)
                {
                    self.i += 1;
                }
                let name = &self.src[st..self.i];
                if name.is_empty() {
                    return Err(format!("unexpected `{}`", &self.src[st..]));
                }
                if self.peek() == Some(b'(') {
                    self.i += 1;
                    let mut args = Vec::new();
                    if self.peek() == Some(b')') {
                        self.i += 1;
                    } else {
                        loop {
                            args.push(self.sum()?);
                            match self.peek() {
                                Some(b',') => self.i += 1,
                                Some(b')') => {
                                    self.i += 1;
                                    break;
                                }
                                _ => {
                                    return Err(format!("missing `)` after arguments of {name}()"))
                                }
                            }
                        }
                    }
                    let arity_ok = match name {
                        "min" | "max" => !args.is_empty(),
                        "int" | "ceil" | "floor" | "abs" => args.len() == 1,
                        "round" => args.len() == 1 || args.len() == 2,
                        "log" => args.len() == 1 || args.len() == 2,
                        _ => return Err(format!("unknown function {name}(); known: min max int ceil floor round abs log")),
                    };
                    if !arity_ok {
                        return Err(format!("wrong number of arguments to {name}()"));
                    }
                    return Ok(Expr::Call(name.to_string(), args));
                }
                match name {
                    "ram" => Ok(Expr::Ram),
                    "e" => Ok(Expr::Num(std::f64::consts::E)),
                    "pi" | "π" => Ok(Expr::Num(std::f64::consts::PI)),
                    _ => Err(format!(
                        "unknown variable `{name}` (only `ram`, MemTotal in MiB, is known)"
                    )),
                }
            }
        }
    }
}

fn eval(e: &Expr, ram: f64) -> Result<f64, String> {
    Ok(match e {
        Expr::Num(n) => *n,
        Expr::Ram => ram,
        Expr::Neg(x) => -eval(x, ram)?,
        Expr::Bin(op, a, b) => {
            let (a, b) = (eval(a, ram)?, eval(b, ram)?);
            match op {
                '+' => a + b,
                '-' => a - b,
                '*' => a * b,
                '/' if b == 0.0 => return Err("division by zero".into()),
                '/' => a / b,
                '%' if b == 0.0 => return Err("modulo by zero".into()),
                '%' => a % b,
                _ => a.powf(b),
            }
        }
        Expr::Call(f, args) => {
            let v: Vec<f64> = args
                .iter()
                .map(|a| eval(a, ram))
                .collect::<Result<_, _>>()?;
            match f.as_str() {
                "min" => v.iter().cloned().fold(f64::INFINITY, f64::min),
                "max" => v.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
                "int" => v[0].trunc(),
                "ceil" => v[0].ceil(),
                "floor" => v[0].floor(),
                "abs" => v[0].abs(),
                "round" => {
                    let m = v.get(1).copied().unwrap_or(1.0);
                    (v[0] / m).round() * m
                }
                _ => {
                    if v.len() == 2 {
                        v[1].log(v[0])
                    } else {
                        v[0].log10()
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Config, ConfigError> {
        parse(s, Path::new("t.conf"))
    }

    #[test]
    fn expressions() {
        let e = |s: &str, ram: f64| SizeExpr::parse(s, 1).unwrap().eval_mib(ram).unwrap();
        assert_eq!(e("min(ram / 2, 4096)", 24000.0), 4096.0);
        assert_eq!(e("min(ram / 2, 4096)", 2000.0), 1000.0);
        assert_eq!(e("ram * 1.5", 100.0), 150.0);
        assert_eq!(e("2^10 + -1", 0.0), 1023.0);
        assert_eq!(e("max(ram, 512) % 100", 1234.0), 34.0);
        assert_eq!(e("floor(ram / 3)", 10.0), 3.0);
        assert_eq!(e("1e3", 0.0), 1000.0);
        for bad in [
            "", "ram *", "foo", "min()", "sqrt(4)", "(ram", "ram)", "ram ram",
        ] {
            assert!(SizeExpr::parse(bad, 1).is_err(), "{bad}");
        }
    }

    #[test]
    fn algorithms_syntax() {
        let a = parse_algorithms("zstd lz4 (type=huge)").unwrap();
        assert_eq!(a.primary.name, "zstd");
        assert_eq!(a.recompress.len(), 1);
        assert_eq!(a.recompress[0].name, "lz4");
        assert_eq!(
            a.recompress_params,
            [("type".to_string(), "huge".to_string())]
        );
        let a = parse_algorithms("lzo-rle zstd(level=3, dict=/etc/d) (type=idle,threshold=1024)")
            .unwrap();
        assert_eq!(a.recompress[0].params.len(), 2);
        assert_eq!(a.recompress_params.len(), 2);
        assert!(parse_algorithms("zsdt")
            .unwrap_err()
            .contains("unknown algorithm `zsdt`"));
        assert!(parse_algorithms("zstd(level=x)").is_err());
        assert!(parse_algorithms("zstd (type=huge)").is_err());
        assert!(parse_algorithms("zstd lz4 (type=cold)").is_err());
        assert!(parse_algorithms("zstd(level=3").is_err());
    }

    #[test]
    fn full_file() {
        let c = p("# comment\n[zram0]\nzram-size = ram\ncompression-algorithm = zstd lz4 (type=huge)\nswap-priority = 100\n\n[zram1]\nmount-point = /var/tmp\n\n[sysctl]\nvm.swappiness = 180\n\n[zswap]\nenabled = no\n\n[disk-swap]\ndevice = /swapfile\npriority = 5\n").unwrap();
        assert_eq!(c.devices.len(), 2);
        assert_eq!(c.devices[1].fs_type, "ext2");
        assert_eq!(c.sysctls[0].key, "vm.swappiness");
        assert_eq!(c.zswap[0].value, "N");
        assert_eq!(c.disk_swap.as_ref().unwrap().priority, 5);
    }

    #[test]
    fn errors_carry_line_and_reason() {
        let e = p("[zram0]\nzram-size = ram\nzram-sise = 5\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.to_string()
                .starts_with("t.conf:3: unknown key `zram-sise`"),
            "{e}"
        );
        let e = p("[zram0]\n\nzram-size = ram **\n").unwrap_err();
        assert_eq!(
            (e.line, e.reason.starts_with("bad size expression")),
            (3, true),
            "{e}"
        );
        let e = p("[zram0]\ncompression-algorithm = lz5\n").unwrap_err();
        assert!(
            e.to_string().contains("t.conf:2: unknown algorithm `lz5`"),
            "{e}"
        );
        let e = p("[zramx]\n").unwrap_err();
        assert_eq!(e.line, 1);
        let e = p("[zram0]\n[disk-swap]\ndevice=/s\npriority=200\n").unwrap_err();
        assert!(e.reason.contains("must be below"), "{e}");
        let e = p("zram-size = 1\n").unwrap_err();
        assert!(e.reason.contains("outside any section"));
        let e = p("[zswap]\ncompressor = lzma\n").unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn obsolete_keys() {
        let c = p("[zram0]\nzram-fraction = 0.25\nmax-zram-size = 1000\n").unwrap();
        assert_eq!(c.devices[0].zram_size.eval_mib(8000.0).unwrap(), 1000.0);
        assert_eq!(c.devices[0].zram_size.eval_mib(2000.0).unwrap(), 500.0);
    }

    #[test]
    fn random_input_never_panics() {
        // A deterministic xorshift over config-ish bytes.
        let alphabet = b"[]=()#;, \n\tzramsizecompressionalgorithmzstdlz4ram*/+-^0123456789.!";
        for s in zmem_sysfs::testutil::random_strings(0x9E3779B97F4A7C15, alphabet, 120, 3000) {
            let _ = p(&s);
            let _ = parse_algorithms(&s);
            if let Ok(e) = SizeExpr::parse(&s, 1) {
                let _ = e.eval_bytes(1000.0);
            }
        }
    }
}
