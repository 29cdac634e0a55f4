//! zmem-conf: the configuration file of `zmem apply`, `zmem persist` and `zmem policy`, which
//! `zmem recommend` and `zmem tune` write: systemd's zram-generator.conf format plus zmem's
//! extensions, as one typed model ([`Config`]) that is parsed here ([`parse`], [`load`],
//! [`load_system`]) and rendered here ([`Config::render`], [`Writer`]).
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
//!
//! The quantities people type in a config file and on the command line (sizes,
//! durations, switches) have their one parser here too ([`parse_size`],
//! [`parse_duration`], [`parse_bool`]), with the way zmem prints them.

use std::fmt;
use std::path::{Path, PathBuf};

mod algorithms;
mod expressions;
mod ini;
mod render;
mod sections;
mod units;

pub use algorithms::{parse_algorithms, parse_algorithms_with_warnings, OutOfRange, LEVEL_RANGES};
pub use expressions::{
    slot_table_bytes, slot_table_refusal, SizeExpr, SLOT_TABLE_ENTRY_BYTES,
    SLOT_TABLE_ENTRY_BYTES_TRACKED, SLOT_TABLE_SHARE,
};
pub use fragments::{kernel_zram_option, load_system, locate_fragments};
pub use render::Writer;
pub use units::{
    bytes, count, duration, format_size, parse_bool, parse_duration, parse_size, ratio,
    ParseError as UnitError, DURATION_FORMS, SIZE_FORMS,
};

mod fragments;

/// zram-generator's default `zram-size` (src/config.rs: `DEFAULT_ZRAM_SIZE`).
pub const DEFAULT_ZRAM_SIZE: &str = "min(ram / 2, 4096)";

/// Algorithms the kernel's zram knows by name (any kernel version): the codec registry's.
pub static KNOWN_ALGORITHMS: std::sync::LazyLock<Vec<&'static str>> =
    std::sync::LazyLock::new(zmem_codec::kernel_names);

/// The largest zram id the kernel can create: `zram_add` (drivers/block/zram/zram_drv.c, every
/// version 6.1 to 7.3) takes the id from an unbounded idr and makes it the disk's `first_minor`,
/// and `device_add_disk` (block/genhd.c) refuses a first minor above `MINORMASK`
/// (include/linux/kdev_t.h: `(1U << MINORBITS) - 1`, `MINORBITS` 20).
pub const MAX_ZRAM_ID: u32 = (1 << 20) - 1;

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

impl Algo {
    /// An algorithm without parameters.
    pub fn named(name: impl Into<String>) -> Algo {
        Algo {
            name: name.into(),
            params: Vec::new(),
        }
    }
}

/// `compression-algorithm`: primary, recompression algorithms (priority 1, 2, 3) and the
/// global recompression parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Algorithms {
    pub primary: Algo,
    pub recompress: Vec<Algo>,
    pub recompress_params: Vec<(String, String)>,
}

impl Algorithms {
    /// `primary` alone: no recompression.
    pub fn new(primary: Algo) -> Algorithms {
        Algorithms {
            primary,
            recompress: Vec::new(),
            recompress_params: Vec::new(),
        }
    }
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

impl DeviceConfig {
    /// `[zramN]` with zram-generator's defaults (src/config.rs: `Device::new`); `line` is
    /// that of its header (0 for the device `systemd.zram` adds).
    pub fn new(id: u32, line: usize) -> DeviceConfig {
        DeviceConfig {
            name: format!("zram{id}"),
            id,
            line,
            zram_size: SizeExpr::parse(DEFAULT_ZRAM_SIZE, line).expect("default expression"),
            resident_limit: None,
            host_memory_limit: None,
            algorithms: None,
            writeback_device: None,
            swap_priority: 100,
            fs_type: "swap".into(),
            mount_point: None,
            options: None,
            raw: Vec::new(),
        }
    }

    /// A filesystem made on the device but not mounted (`fs-type` without `mount-point`:
    /// zram-generator's "plain device").
    pub fn is_plain(&self) -> bool {
        self.fs_type != "swap" && self.fs_type != "none" && self.mount_point.is_none()
    }
}

/// The `[disk-swap]` tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskSwap {
    pub device: String,
    pub priority: i32,
    pub line: usize,
}

impl DiskSwap {
    /// A disk tier to write (line 0: not read from a file).
    pub fn new(device: impl Into<String>, priority: i32) -> DiskSwap {
        DiskSwap {
            device: device.into(),
            priority,
            line: 0,
        }
    }
}

/// A `key = value` with its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: String,
    pub line: usize,
}

impl Entry {
    /// A `key = value` to write (line 0: not read from a file).
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Entry {
        Entry {
            key: key.into(),
            value: value.into(),
            line: 0,
        }
    }
}

/// A parsed configuration file, or one to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub file: PathBuf,
    pub devices: Vec<DeviceConfig>,
    pub sysctls: Vec<Entry>,
    pub zswap: Vec<Entry>,
    pub disk_swap: Option<DiskSwap>,
    pub policy: Vec<Entry>,
    /// What zram-generator ignores with a warning (unknown keys and sections) and what the
    /// kernel takes but does not do as written; errors when read with `strict`.
    pub warnings: Vec<ConfigError>,
}

impl Config {
    /// A model with nothing in it; `file` names it in errors (the file it will be, or what
    /// it was made from).
    pub fn new(file: impl Into<PathBuf>) -> Config {
        Config {
            file: file.into(),
            devices: Vec::new(),
            sysctls: Vec::new(),
            zswap: Vec::new(),
            disk_swap: None,
            policy: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// An error about a size expression, naming the file it was read from.
    pub fn expr_err(&self, e: &SizeExpr, reason: impl Into<String>) -> ConfigError {
        ConfigError {
            file: e.file.clone().unwrap_or_else(|| self.file.clone()),
            line: e.line,
            reason: reason.into(),
        }
    }

    pub fn err(&self, line: usize, reason: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.file.clone(),
            line,
            reason: reason.into(),
        }
    }
}

/// The largest configuration file read (zram-generator.conf files are a
/// few hundred bytes).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Read and parse a file: a regular file (FIFOs, `/dev/zero`, directories
/// are refused by [`zmem_files::input`] before anything is read), UTF-8, at
/// most [`MAX_CONFIG_BYTES`].
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    load_with(path, false)
}

/// [`load`], with unknown keys and sections as errors when `strict`.
pub fn load_with(path: &Path, strict: bool) -> Result<Config, ConfigError> {
    let text = read_text(path)?;
    parse_with(&text, path, strict)
}

/// The text of a configuration file (see [`load`]).
fn read_text(path: &Path) -> Result<String, ConfigError> {
    let err = |reason: String| ConfigError {
        file: path.to_path_buf(),
        line: 0,
        reason,
    };
    let bytes = zmem_files::input::read_input("config", path, MAX_CONFIG_BYTES).map_err(|e| {
        // The error names the path; ConfigError puts it in front already.
        let full = e.to_string();
        let prefix = format!("config {}: ", path.display());
        err(full.strip_prefix(&prefix).unwrap_or(&full).to_string())
    })?;
    String::from_utf8(bytes).map_err(|e| err(format!("not UTF-8 text: {e}")))
}

/// Parse the text of a file (`file` is used in errors only); unknown keys and sections are
/// warnings, as zram-generator takes them.
pub fn parse(text: &str, file: &Path) -> Result<Config, ConfigError> {
    parse_with(text, file, false)
}

/// [`parse`], with unknown keys and sections as errors when `strict`.
pub fn parse_with(text: &str, file: &Path, strict: bool) -> Result<Config, ConfigError> {
    let mut reader = sections::Reader::new(file, strict);
    read_lines(&mut reader, text)?;
    reader.finish()
}

fn read_lines(reader: &mut sections::Reader, text: &str) -> Result<(), ConfigError> {
    let items = ini::items(text).map_err(|e| reader.syntax_error(e))?;
    for item in items {
        reader.item(item)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Config, ConfigError> {
        parse(s, Path::new("t.conf"))
    }

    /// The slot table's share: up to 24 bytes per page, at most 1/16 of RAM without --force.
    #[test]
    fn slot_table_share() {
        let gib = 1u64 << 30;
        assert_eq!(slot_table_bytes(16 * gib), 96 << 20);
        assert_eq!(slot_table_bytes(4097), 48, "a started page has its entry");
        assert!(slot_table_refusal("zram0", 10 * gib, gib).is_none());
        let e = slot_table_refusal("zram0", 11 * gib, gib).unwrap();
        for want in [
            "disksize 11264 MiB",
            "slot table of up to 66 MiB",
            "24 bytes per 4 KiB page where it tracks access times",
            "16 otherwise",
            "1/16 of this machine's 1024 MiB",
            "10922 MiB at most",
            "--force",
        ] {
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    /// zram-generator's grammar (fasteval): passes instead of precedence, signs on values,
    /// round(modulus, x), e() and pi(), unknown names an error only when evaluated.
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
        assert_eq!(e("ram * 3 % 4096", 2000.0), 6000.0);
        assert_eq!(e("ram - -2^10", 2000.0), 976.0);
        assert_eq!(e("-2^2 + ram", 10.0), 14.0);
        assert_eq!(e("round(10, ram / 3)", 100.0), 30.0);
        assert_eq!(e("e() * 100", 0.0), std::f64::consts::E * 100.0);
        assert_eq!(e("500k", 0.0), 500_000.0);
        assert_eq!(e("(ram > 4096) * 512 + 256", 8000.0), 768.0);
        assert_eq!(e("10 - 2 + 3", 0.0), 11.0);
        assert_eq!(e("2^3^2", 0.0), 512.0);
        for bad in [
            "", "ram *", "min()", "(ram", "ram)", "ram ram", "1e", "pi(1)",
        ] {
            assert!(SizeExpr::parse(bad, 1).is_err(), "{bad}");
        }
        for unknown in ["foo", "sqrt(4)", "e * 100", "pi"] {
            let x = SizeExpr::parse(unknown, 1).unwrap();
            assert!(
                x.eval_mib(1.0).unwrap_err().contains("unknown"),
                "{unknown}"
            );
        }
    }

    /// Hostile expressions: zram-generator's limits (4096 bytes, 32 levels, 64 parts) are
    /// refused with the expression in the error (not a stack overflow), and so are results
    /// no kernel could hold.
    #[test]
    fn expression_limits() {
        let deep = format!("{}64{}", "(".repeat(10_000), ")".repeat(10_000));
        let e = SizeExpr::parse(&deep, 1).unwrap_err();
        assert!(e.contains("((((") && e.contains("bytes long"), "{e}");
        let nested = format!("{}64{}", "(".repeat(40), ")".repeat(40));
        let e = SizeExpr::parse(&nested, 1).unwrap_err();
        assert!(e.contains("nests deeper than zram-generator's 32"), "{e}");
        let ok = format!("{}64{}", "(".repeat(30), ")".repeat(30));
        assert_eq!(
            SizeExpr::parse(&ok, 1).unwrap().eval_mib(1.0).unwrap(),
            64.0
        );
        let terms = vec!["1"; 500].join("+");
        assert_eq!(
            SizeExpr::parse(&terms, 1).unwrap().eval_mib(1.0).unwrap(),
            500.0
        );
        let groups = vec!["(1)"; 70].join("+");
        assert!(SizeExpr::parse(&groups, 1)
            .unwrap_err()
            .contains("more than 64"));
        let signs = format!("{}1", "-".repeat(200));
        assert!(SizeExpr::parse(&signs, 1)
            .unwrap_err()
            .contains("nests deeper"));
        for (src, want) in [
            ("1e30", "more than this machine could hold"),
            ("ram * 1000", "at boot zram-generator writes disksize"),
            ("-1", "gives -1 MiB"),
            ("log(-1)", "gives NaN MiB"),
            ("2^2000", "more than this machine could hold"),
        ] {
            let e = SizeExpr::parse(src, 1)
                .unwrap()
                .eval_bytes(1024.0)
                .unwrap_err();
            assert!(e.contains(want) && e.contains(src), "{src}: {e}");
        }
        // All of RAM for the slot table (16 bytes per 4 KiB page) is refused outright.
        assert!(SizeExpr::parse("ram * 256", 1)
            .unwrap()
            .eval_bytes(1024.0)
            .unwrap_err()
            .contains("more than this machine could hold"));
        assert_eq!(
            SizeExpr::parse("ram * 4", 1)
                .unwrap()
                .eval_bytes(1024.0)
                .unwrap(),
            4 << 30
        );
    }

    /// compression-algorithm split as zram-generator splits it (at every space).
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
        let (a, w) = parse_algorithms_with_warnings(
            "lzo-rle zstd(level=3,dict=/etc/d) (type=idle,threshold=1024)",
        )
        .unwrap();
        assert_eq!(a.recompress[0].params.len(), 2);
        assert_eq!(a.recompress_params.len(), 2);
        assert!(
            w[0].contains("at boot zram-generator writes them to recompress"),
            "{w:?}"
        );
        // A space after the comma: zram-generator reads `dict=/etc/d)` as an algorithm.
        let (a, w) = parse_algorithms_with_warnings("zstd(level=3, dict=/etc/d)").unwrap();
        assert_eq!(a.primary.params, [("level".to_string(), "3".to_string())]);
        assert!(
            a.recompress.is_empty() && w[0].contains("at boot zram-generator"),
            "{w:?}"
        );
        let (a, w) = parse_algorithms_with_warnings("zstd(level=max)").unwrap();
        assert!(
            a.primary.params.is_empty() && w[0].contains("not a number"),
            "{w:?}"
        );
        let (a, w) = parse_algorithms_with_warnings("lz4(fast)").unwrap();
        assert!(
            a.primary.params.is_empty() && w[0].contains("not key=value"),
            "{w:?}"
        );
        // The kernel refuses the whole write, so the level is not kept either.
        let (a, w) = parse_algorithms_with_warnings("lz4(level=4,fast)").unwrap();
        assert!(
            a.primary.params.is_empty() && w[0].contains("refuses the whole algorithm_params"),
            "{w:?}"
        );
        let (a, w) = parse_algorithms_with_warnings("zstd lz4 lzo deflate lz4hc").unwrap();
        assert_eq!(a.recompress.len(), 3);
        assert!(w[0].contains("`lz4hc`"), "{w:?}");
        assert!(parse_algorithms("zsdt")
            .unwrap_err()
            .contains("unknown algorithm `zsdt`"));
        let (a, w) = parse_algorithms_with_warnings("zstd (type=huge)").unwrap();
        assert!(a.recompress_params.is_empty() && w[0].contains("no recompression algorithm"));
        let (a, w) = parse_algorithms_with_warnings("zstd lz4 (recompargs)").unwrap();
        assert!(a.recompress_params.is_empty() && w[0].contains("`recompargs` is not key=value"));
        let e = parse_algorithms("zstd lz4 (type=cold)").unwrap_err();
        assert!(
            e.contains("`cold`") && e.contains("zram-generator keeps this group"),
            "{e}"
        );
        assert!(parse_algorithms("").is_err());
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

    fn strict(s: &str) -> Result<Config, ConfigError> {
        parse_with(s, Path::new("t.conf"), true)
    }

    #[test]
    fn errors_carry_line_and_reason() {
        let e = strict("[zram0]\nzram-size = ram\nzram-sise = 5\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.to_string()
                .starts_with("t.conf:3: unknown key `zram-sise`"),
            "{e}"
        );
        assert!(e.reason.ends_with("(an error with --strict)"), "{e}");
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
        let e = strict("[zramx]\n").unwrap_err();
        assert_eq!(e.line, 1);
        let e = p("[zram01]\n").unwrap_err();
        assert!(e.reason.contains("write [zram1]"), "{e}");
        // Ids past the kernel's largest minor are refused, naming the bound; the largest is read.
        let e = p("[zram1048576]\n").unwrap_err();
        assert!(e.reason.contains("at most 1048575 (MINORMASK"), "{e}");
        assert!(p("[zram4294967295]\n").is_err());
        assert_eq!(p("[zram1048575]\n").unwrap().devices[0].id, MAX_ZRAM_ID);
        let e = p("[zram0]\n[disk-swap]\ndevice=/s\npriority=200\n").unwrap_err();
        assert!(e.reason.contains("must be below"), "{e}");
        let e = strict("zram-size = 1\n").unwrap_err();
        assert!(e.reason.contains("outside any section"));
        let e = p("[zswap]\ncompressor = lzma\n").unwrap_err();
        assert_eq!(e.line, 2);
        // zswap takes lzo-rle like any crypto compressor (what zmem tune may write).
        assert!(p("[zswap]\nenabled = Y\ncompressor = lzo-rle\n").is_ok());
        let e = p("set!top = echo 3\n").unwrap_err();
        assert!(e.reason.contains("runs a program"), "{e}");
    }

    /// What zram-generator ignores with a warning is a warning here (an error with strict).
    #[test]
    fn unknown_keys_and_sections_are_warnings() {
        let c = p("foo = 1\nbar!x = 2\n[zram0]\nzram-sise = 5\n[zramx]\nzram-size = 1\n[other]\na = b\n[zswap]\nfoo = 1\n").unwrap();
        let w: Vec<String> = c.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(w.len(), 6, "{w:?}");
        assert!(w[0].starts_with("t.conf:1: key `foo` outside any section, ignored"));
        assert!(w[1].starts_with("t.conf:2: unknown outside-of-section operation `bar!`"));
        assert!(w[2].starts_with("t.conf:4: unknown key `zram-sise` in [zram0], ignored"));
        assert!(w[3].starts_with("t.conf:5: unknown section [zramx], ignored"));
        assert!(w[4].starts_with("t.conf:7: unknown section [other]"));
        assert!(w[5].starts_with("t.conf:10: unknown key `foo` in [zswap]"));
        assert_eq!(c.devices.len(), 1);
        assert_eq!(c.devices[0].zram_size.source, DEFAULT_ZRAM_SIZE);
    }

    /// A section given twice is one device, merged key by key (zram-generator's
    /// 11-obsolete gives [zram1] twice); devices come out by number.
    #[test]
    fn sections_merge_key_by_key() {
        let c = p("[zram2]\n[zram1]\nhost-memory-limit = 2\nzram-size = 5\n[zram1]\nmemory-limit = none\n").unwrap();
        let ids: Vec<u32> = c.devices.iter().map(|d| d.id).collect();
        assert_eq!(ids, [1, 2]);
        assert_eq!(c.devices[0].host_memory_limit, None);
        assert_eq!(c.devices[0].zram_size.source, "5");
        assert_eq!(c.devices[0].line, 2);
    }

    #[test]
    fn plain_device_and_mount_points() {
        let c = p("[zram11]\nfs-type = ext2\n[zram12]\nmount-point = /foo//bar/./baz/\n[zram13]\nmount-point = ///\n").unwrap();
        assert!(c.devices[0].is_plain());
        assert_eq!(c.devices[1].mount_point.as_deref(), Some("/foo/bar/baz"));
        assert_eq!(c.devices[1].fs_type, "ext2");
        assert_eq!(c.devices[2].mount_point.as_deref(), Some("/"));
        assert!(p("[zram0]\nmount-point = /a/../b\n").is_err());
        assert!(p("[zram0]\nmount-point = a/b\n").is_err());
        assert!(p("[zram0]\nfs-type = swap\nmount-point = /a\n").is_err());
    }

    /// Levels: the ranges of `zmem codecs`; outside them a warning where the kernel clamps
    /// (zstd 30 → 22), an error where it would fail (deflate); unknown parameters dropped.
    #[test]
    fn algorithm_levels_and_parameters() {
        let c = p("[zram0]\ncompression-algorithm = zstd(level=30)\n").unwrap();
        assert!(
            c.warnings[0]
                .reason
                .contains("zstd levels go from -131072 to 22"),
            "{:?}",
            c.warnings
        );
        assert!(strict("[zram0]\ncompression-algorithm = zstd(level=30)\n").is_err());
        assert!(p("[zram0]\ncompression-algorithm = zstd(level=22)\n")
            .unwrap()
            .warnings
            .is_empty());
        let e = p("[zram0]\ncompression-algorithm = deflate(level=10)\n").unwrap_err();
        assert!(e.reason.contains("refused by the kernel"), "{e}");
        let c = p("[zram0]\ncompression-algorithm = zstd(dictionary=/etc/d,level=9)\n").unwrap();
        let a = c.devices[0].algorithms.as_ref().unwrap();
        assert_eq!(a.primary.params, [("level".to_string(), "9".to_string())]);
        assert!(c.warnings[0]
            .reason
            .contains("`dictionary=/etc/d` is not written"));
    }

    #[test]
    fn obsolete_keys() {
        let c = p("[zram0]\nzram-fraction = 0.25\nmax-zram-size = 1000\n").unwrap();
        assert_eq!(c.devices[0].zram_size.eval_mib(8000.0).unwrap(), 1000.0);
        assert_eq!(c.devices[0].zram_size.eval_mib(2000.0).unwrap(), 500.0);
        // zram-generator truncates ram * fraction to whole MiB: 782 * 0.1 = 78.
        let c = p("[zram0]\nzram-fraction = 0.10\nmax-zram-size = none\n").unwrap();
        assert_eq!(c.devices[0].zram_size.eval_bytes(782.0).unwrap(), 78 << 20);
        assert!(p("[zram0]\nmax-zram-size = 2048.5\n").is_err());
    }

    #[test]
    fn random_input_never_panics() {
        // A deterministic xorshift over config-ish bytes.
        let alphabet =
            b"[]=()#;, \n\tzramsizecompressionalgorithmzstdlz4ram*/+-^0123456789.!/levfsytpmun:";
        for s in zmem_files::testutil::random_strings(0x9E3779B97F4A7C15, alphabet, 120, 3000) {
            let _ = p(&s);
            let _ = strict(&s);
            let _ = parse_algorithms_with_warnings(&s);
            let _ = kernel_zram_option(&s);
            if let Ok(e) = SizeExpr::parse(&s, 1) {
                let _ = e.eval_bytes(1000.0);
            }
        }
    }
}
