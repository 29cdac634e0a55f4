//! Swap configurations a trial compares, by name (`none`, `disk`,
//! `zram:ALGO[:SIZE]`, `zram:ALGO[:SIZE]+disk`, `zswap:COMPRESSOR[:POOL%]`),
//! optionally with sysctls of their own (`zram:lz4,swappiness=180,page-cluster=0`),
//! and the size syntax shared by the command line (`256M`, `1G`, `4096`).

use std::fmt;
use std::str::FromStr;

use zmem_conf::{format_size, parse_size};

/// One swap configuration a workload runs under.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SwapConfig {
    /// No swap at all: the cgroup limit is a hard wall (expect OOM kills).
    None,
    /// A swap file zmem creates on disk.
    Disk,
    /// A hot-added kernel zram device as the only swap.
    Zram { algo: String, size: Option<u64> },
    /// zram first (higher priority), the disk swap file behind it.
    ZramDisk { algo: String, size: Option<u64> },
    /// zswap in front of the disk swap file.
    Zswap {
        compressor: String,
        pool_percent: Option<u32>,
    },
}

pub use zmem_host::{DISK_PRIORITY, ZRAM_PRIORITY};

impl SwapConfig {
    /// Whether this configuration needs the disk swap file.
    pub fn uses_disk(&self) -> bool {
        matches!(
            self,
            SwapConfig::Disk | SwapConfig::ZramDisk { .. } | SwapConfig::Zswap { .. }
        )
    }

    /// The zram algorithm, if this configuration hot-adds a zram device.
    pub fn zram_algo(&self) -> Option<&str> {
        match self {
            SwapConfig::Zram { algo, .. } | SwapConfig::ZramDisk { algo, .. } => Some(algo),
            _ => None,
        }
    }

    /// The zswap compressor, if this configuration enables zswap.
    pub fn zswap_compressor(&self) -> Option<&str> {
        match self {
            SwapConfig::Zswap { compressor, .. } => Some(compressor),
            _ => None,
        }
    }
}

impl fmt::Display for SwapConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwapConfig::None => write!(f, "none"),
            SwapConfig::Disk => write!(f, "disk"),
            SwapConfig::Zram { algo, size } | SwapConfig::ZramDisk { algo, size } => {
                write!(f, "zram:{algo}")?;
                if let Some(s) = size {
                    write!(f, ":{}", format_size(*s))?;
                }
                if matches!(self, SwapConfig::ZramDisk { .. }) {
                    write!(f, "+disk")?;
                }
                Ok(())
            }
            SwapConfig::Zswap {
                compressor,
                pool_percent,
            } => {
                write!(f, "zswap:{compressor}")?;
                if let Some(p) = pool_percent {
                    write!(f, ":{p}%")?;
                }
                Ok(())
            }
        }
    }
}

fn check_algo(kind: &str, name: &str, whole: &str) -> Result<String, String> {
    if name.is_empty() {
        return Err(format!(
            "{whole:?}: {kind} needs an algorithm name, e.g. {kind}:lz4"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(format!("{whole:?}: {name:?} is not an algorithm name"));
    }
    Ok(name.to_string())
}

impl FromStr for SwapConfig {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let whole = s;
        let s = s.trim();
        match s {
            "none" => return Ok(SwapConfig::None),
            "disk" => return Ok(SwapConfig::Disk),
            _ => {}
        }
        if let Some(rest) = s.strip_prefix("zram:") {
            let (rest, two_tier) = match rest.strip_suffix("+disk") {
                Some(r) => (r, true),
                None => (rest, false),
            };
            if rest.contains('+') {
                return Err(format!(
                    "{whole:?}: the only second tier is `+disk` (zram:ALGO[:SIZE]+disk)"
                ));
            }
            let mut parts = rest.split(':');
            let algo = check_algo("zram", parts.next().unwrap_or(""), whole)?;
            let size = match parts.next() {
                None => None,
                Some(sz) => {
                    let v = parse_size(sz).map_err(|e| format!("{whole:?}: zram size: {e}"))?;
                    if v < 1 << 20 {
                        return Err(format!("{whole:?}: zram size must be at least 1M"));
                    }
                    Some(v)
                }
            };
            if parts.next().is_some() {
                return Err(format!("{whole:?}: expected zram:ALGO[:SIZE][+disk]"));
            }
            return Ok(if two_tier {
                SwapConfig::ZramDisk { algo, size }
            } else {
                SwapConfig::Zram { algo, size }
            });
        }
        if let Some(rest) = s.strip_prefix("zswap:") {
            let mut parts = rest.split(':');
            let compressor = check_algo("zswap", parts.next().unwrap_or(""), whole)?;
            let pool_percent = match parts.next() {
                None => None,
                Some(p) => {
                    let p = p.strip_suffix('%').unwrap_or(p);
                    let v: u32 = p
                        .parse()
                        .map_err(|_| format!("{whole:?}: pool percent {p:?} is not a number"))?;
                    if !(1..=100).contains(&v) {
                        return Err(format!("{whole:?}: pool percent must be 1..=100, got {v}"));
                    }
                    Some(v)
                }
            };
            if parts.next().is_some() {
                return Err(format!("{whole:?}: expected zswap:COMPRESSOR[:POOL%]"));
            }
            return Ok(SwapConfig::Zswap {
                compressor,
                pool_percent,
            });
        }
        Err(format!(
            "unknown swap configuration {whole:?}; expected none, disk, zram:ALGO[:SIZE], zram:ALGO[:SIZE]+disk or zswap:COMPRESSOR[:POOL%]"
        ))
    }
}

/// A swap configuration and the sysctls set for its runs only
/// (`zram:lz4,swappiness=180,page-cluster=0`); without them the trial's own
/// `--swappiness`/`--page-cluster` (or the machine's values) apply.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TrialConfig {
    pub swap: SwapConfig,
    /// vm.swappiness for this configuration's runs (0..=200).
    pub swappiness: Option<u32>,
    /// vm.page-cluster for this configuration's runs (0..=31).
    pub page_cluster: Option<u32>,
}

impl From<SwapConfig> for TrialConfig {
    fn from(swap: SwapConfig) -> Self {
        TrialConfig {
            swap,
            swappiness: None,
            page_cluster: None,
        }
    }
}

impl fmt::Display for TrialConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.swap)?;
        if let Some(s) = self.swappiness {
            write!(f, ",swappiness={s}")?;
        }
        if let Some(p) = self.page_cluster {
            write!(f, ",page-cluster={p}")?;
        }
        Ok(())
    }
}

/// `value` of sysctl `key` as a number in `0..=max`.
fn sysctl_value(whole: &str, key: &str, value: &str, max: u32) -> Result<u32, String> {
    match value.trim().parse::<u32>() {
        Ok(v) if v <= max => Ok(v),
        _ => Err(format!(
            "{whole:?}: {key} must be a whole number 0..={max}, not {value:?}"
        )),
    }
}

impl FromStr for TrialConfig {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut parts = s.split(',');
        let swap: SwapConfig = parts.next().unwrap_or("").parse()?;
        let mut c = TrialConfig::from(swap);
        for kv in parts {
            let Some((k, v)) = kv.split_once('=') else {
                return Err(format!(
                    "{s:?}: {kv:?} is not KEY=VALUE (keys: swappiness, page-cluster)"
                ));
            };
            let slot = match k.trim() {
                "swappiness" => (&mut c.swappiness, 200),
                "page-cluster" | "page_cluster" => (&mut c.page_cluster, 31),
                other => {
                    return Err(format!(
                        "{s:?}: unknown key {other:?} (keys: swappiness, page-cluster)"
                    ))
                }
            };
            if slot.0.is_some() {
                return Err(format!("{s:?}: {} is given twice", k.trim()));
            }
            *slot.0 = Some(sysctl_value(s, k.trim(), v, slot.1)?);
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        assert_eq!("none".parse::<SwapConfig>().unwrap(), SwapConfig::None);
        assert_eq!("disk".parse::<SwapConfig>().unwrap(), SwapConfig::Disk);
        assert_eq!(
            "zram:lz4".parse::<SwapConfig>().unwrap(),
            SwapConfig::Zram {
                algo: "lz4".into(),
                size: None
            }
        );
        assert_eq!(
            "zram:lzo-rle:512M".parse::<SwapConfig>().unwrap(),
            SwapConfig::Zram {
                algo: "lzo-rle".into(),
                size: Some(512 << 20)
            }
        );
        assert_eq!(
            "zram:lz4+disk".parse::<SwapConfig>().unwrap(),
            SwapConfig::ZramDisk {
                algo: "lz4".into(),
                size: None
            }
        );
        assert_eq!(
            "zram:lz4:1G+disk".parse::<SwapConfig>().unwrap(),
            SwapConfig::ZramDisk {
                algo: "lz4".into(),
                size: Some(1 << 30)
            }
        );
        assert_eq!(
            "zswap:lzo".parse::<SwapConfig>().unwrap(),
            SwapConfig::Zswap {
                compressor: "lzo".into(),
                pool_percent: None
            }
        );
        assert_eq!(
            "zswap:zstd:25%".parse::<SwapConfig>().unwrap(),
            SwapConfig::Zswap {
                compressor: "zstd".into(),
                pool_percent: Some(25)
            }
        );
        assert_eq!(
            "zswap:zstd:30".parse::<SwapConfig>().unwrap(),
            SwapConfig::Zswap {
                compressor: "zstd".into(),
                pool_percent: Some(30)
            }
        );
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "none",
            "disk",
            "zram:lz4",
            "zram:lzo:512M",
            "zram:lz4+disk",
            "zram:zstd:2G+disk",
            "zswap:lzo",
            "zswap:lz4:25%",
        ] {
            let c: SwapConfig = s.parse().unwrap();
            assert_eq!(c.to_string(), s);
            assert_eq!(c.to_string().parse::<SwapConfig>().unwrap(), c);
        }
    }

    #[test]
    fn rejects_bad_configs_with_reasons() {
        for (s, want) in [
            ("zram", "unknown swap configuration"),
            ("zram:", "needs an algorithm"),
            ("zram:lz4:abc", "zram size"),
            ("zram:lz4:4K", "at least 1M"),
            ("zram:lz4+zswap", "only second tier"),
            ("zram:lz4:1G:x", "expected zram"),
            ("zswap:", "needs an algorithm"),
            ("zswap:lzo:0", "1..=100"),
            ("zswap:lzo:101%", "1..=100"),
            ("zswap:lzo:x", "not a number"),
            ("zswap:lz/4", "not an algorithm"),
            ("tmpfs", "unknown swap configuration"),
        ] {
            let e = s.parse::<SwapConfig>().unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
        }
    }

    #[test]
    fn per_configuration_sysctls() {
        let c: TrialConfig = "zram:lz4,swappiness=180,page-cluster=0".parse().unwrap();
        assert_eq!(
            c,
            TrialConfig {
                swap: SwapConfig::Zram {
                    algo: "lz4".into(),
                    size: None
                },
                swappiness: Some(180),
                page_cluster: Some(0)
            }
        );
        assert_eq!(c.to_string(), "zram:lz4,swappiness=180,page-cluster=0");
        let d: TrialConfig = "disk".parse().unwrap();
        assert_eq!(d, TrialConfig::from(SwapConfig::Disk));
        assert_eq!(d.to_string(), "disk");
        for (s, want) in [
            ("zram:lz4,swappiness=201", "0..=200"),
            ("zram:lz4,page-cluster=32", "0..=31"),
            ("zram:lz4,swappiness", "KEY=VALUE"),
            ("zram:lz4,nice=3", "unknown key"),
            ("zram:lz4,swappiness=1,swappiness=2", "twice"),
            ("zram:lz4,swappiness=-1", "0..=200"),
            ("zram,swappiness=1", "unknown swap configuration"),
        ] {
            let e = s.parse::<TrialConfig>().unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
        }
    }

    #[test]
    fn arbitrary_strings_never_panic() {
        let alphabet = b"zramswpdiklno:+%0123456789MGK-_ .,=";
        for s in zmem_files::testutil::random_strings(0x9e3779b97f4a7c15, alphabet, 20, 5000) {
            let _ = s.parse::<SwapConfig>();
            let _ = s.parse::<TrialConfig>();
            let _ = parse_size(&s);
        }
    }
}
