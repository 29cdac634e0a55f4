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

mod algorithms;
mod expressions;
mod sections;

pub use algorithms::parse_algorithms;
pub use expressions::SizeExpr;

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

/// The largest configuration file read (zram-generator.conf files are a
/// few hundred bytes).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Read and parse a file: a regular file (FIFOs, `/dev/zero`, directories
/// are refused by [`zmem_sysfs::input`] before anything is read), UTF-8, at
/// most [`MAX_CONFIG_BYTES`].
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let err = |reason: String| ConfigError {
        file: path.to_path_buf(),
        line: 0,
        reason,
    };
    let bytes = zmem_sysfs::input::read_input("config", path, MAX_CONFIG_BYTES).map_err(|e| {
        // The error names the path; ConfigError puts it in front already.
        let full = e.to_string();
        let prefix = format!("config {}: ", path.display());
        err(full.strip_prefix(&prefix).unwrap_or(&full).to_string())
    })?;
    let text = String::from_utf8(bytes).map_err(|e| err(format!("not UTF-8 text: {e}")))?;
    parse(&text, path)
}

/// Parse the text of a file (`file` is used in errors only).
pub fn parse(text: &str, file: &Path) -> Result<Config, ConfigError> {
    let mut reader = sections::Reader::new(file);
    for (i, l) in text.lines().enumerate() {
        reader.line(i + 1, l.trim())?;
    }
    reader.finish()
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

    /// Hostile expressions: deep nesting and long chains are refused with the
    /// expression in the error (not a stack overflow), and so are results no
    /// kernel could hold.
    #[test]
    fn expression_limits() {
        let deep = format!("{}64{}", "(".repeat(10_000), ")".repeat(10_000));
        let e = SizeExpr::parse(&deep, 1).unwrap_err();
        assert!(e.contains("((((") && e.contains("bytes long"), "{e}");
        let nested = format!("{}64{}", "(".repeat(100), ")".repeat(100));
        let e = SizeExpr::parse(&nested, 1).unwrap_err();
        assert!(e.contains("nests deeper than 64"), "{e}");
        let ok = format!("{}64{}", "(".repeat(50), ")".repeat(50));
        assert_eq!(
            SizeExpr::parse(&ok, 1).unwrap().eval_mib(1.0).unwrap(),
            64.0
        );
        let terms = vec!["1"; 100_000].join("+");
        assert!(SizeExpr::parse(&terms, 1).unwrap_err().contains("1+1+1"));
        let terms = vec!["1"; 500].join("+");
        assert_eq!(
            SizeExpr::parse(&terms, 1).unwrap().eval_mib(1.0).unwrap(),
            500.0
        );
        let signs = format!("{}1", "-".repeat(200));
        assert!(SizeExpr::parse(&signs, 1)
            .unwrap_err()
            .contains("nests deeper"));
        for (src, want) in [
            ("1e30", "more than this machine could hold"),
            ("ram * 1000", "more than this machine could hold"),
            ("-1", "gives -1 MiB"),
            ("log(-1)", "gives NaN MiB"),
            ("2^2000", "gives inf MiB"),
        ] {
            let e = SizeExpr::parse(src, 1)
                .unwrap()
                .eval_bytes(1024.0)
                .unwrap_err();
            assert!(e.contains(want) && e.contains(src), "{src}: {e}");
        }
        assert_eq!(
            SizeExpr::parse("ram * 4", 1)
                .unwrap()
                .eval_bytes(1024.0)
                .unwrap(),
            4 << 30
        );
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
        // zswap takes lzo-rle like any crypto compressor (what zmem tune may write).
        assert!(p("[zswap]\nenabled = Y\ncompressor = lzo-rle\n").is_ok());
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
