//! The maintenance worker's policy ([`MaintPolicy`]) and its `key=value`
//! syntax (`zmem serve --maint=…`), in the `zmem policy` vocabulary. The
//! defaults and their sources are listed in crate::maint's documentation.

use std::time::Duration;

use zmem_codec::PAGE_SIZE;

const MIB_PAGES: u64 = (1 << 20) / PAGE_SIZE as u64;

/// The worker's knobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaintPolicy {
    /// Time between rounds.
    pub interval: Duration,
    /// Recompress fast-path slots back to the primary.
    pub recompress_fast: bool,
    /// Idle age of fast-path slots before they go back to the primary.
    pub fast_idle_age: Duration,
    /// Recompress idle slots with the secondary algorithms.
    pub recompress_secondary: bool,
    /// Idle age for secondary recompression.
    pub recompress_idle_age: Duration,
    /// `threshold=` of secondary recompression (bytes; 0 = off).
    pub recompress_threshold: u32,
    /// `type=` values of secondary recompression, in order.
    pub recompress_types: Vec<String>,
    /// Write back idle pages (when the device can).
    pub writeback: bool,
    /// Idle age for writeback.
    pub writeback_idle_age: Duration,
    /// `writeback` modes, in order.
    pub writeback_types: Vec<String>,
    /// A stage runs only with at least this many candidate pages.
    pub min_pages: u64,
    /// At most this many pages per round (recompression attempts; writeback pages).
    pub max_pages: u64,
    /// Writeback budget per 24 hours, in pages.
    pub daily_writeback_pages: u64,
}

impl Default for MaintPolicy {
    fn default() -> Self {
        let types = || {
            vec![
                "huge_idle".to_string(),
                "idle".to_string(),
                "huge".to_string(),
            ]
        };
        MaintPolicy {
            interval: Duration::from_secs(300),
            recompress_fast: true,
            fast_idle_age: Duration::from_secs(60),
            recompress_secondary: true,
            recompress_idle_age: Duration::from_secs(3600),
            recompress_threshold: 1024,
            recompress_types: types(),
            writeback: true,
            writeback_idle_age: Duration::from_secs(20 * 3600),
            writeback_types: types(),
            min_pages: 5 * MIB_PAGES,
            max_pages: 300 * MIB_PAGES,
            daily_writeback_pages: 1024 * MIB_PAGES,
        }
    }
}

/// `600`, `30s`, `10min`, `20h`, `1d` → a duration (the `zmem policy` syntax).
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let i = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: u64 = s[..i].parse().ok()?;
    let mul = match s[i..].trim() {
        "" | "s" | "sec" => 1,
        "ms" => return Some(Duration::from_millis(n)),
        "m" | "min" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return None,
    };
    n.checked_mul(mul).map(Duration::from_secs)
}

/// `1024`, `5MiB`, `300M`, `1GiB`, `4K` → bytes (the `zmem policy` syntax).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let i = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: u64 = s[..i].parse().ok()?;
    let shift = match s[i..].trim() {
        "" | "B" => 0,
        "K" | "KiB" | "k" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        "T" | "TiB" => 40,
        _ => return None,
    };
    n.checked_mul(1 << shift)
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "1" | "true" | "on" => Some(true),
        "n" | "no" | "0" | "false" | "off" => Some(false),
        _ => None,
    }
}

impl MaintPolicy {
    /// Apply `key=value` pairs separated by commas (or spaces) on top of
    /// `self`. Keys (the `zmem policy` vocabulary where it has one):
    /// `interval`, `recompress-fast`, `fast-idle`, `recompress`,
    /// `recompress-idle`, `recompress-threshold`, `recompress-types`
    /// (`+`-separated), `writeback`, `writeback-idle`, `writeback-types`,
    /// `min-per-round`, `max-per-round`, `writeback-daily-limit` (sizes:
    /// bytes with K/M/G/T suffix, rounded down to pages).
    pub fn apply(mut self, spec: &str) -> Result<Self, String> {
        for item in spec
            .split([',', ' '])
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| format!("{item:?}: expected key=value"))?;
            let dur = || {
                parse_duration(v)
                    .ok_or_else(|| format!("{k}={v}: not a duration (600, 30s, 10min, 20h, 1d)"))
            };
            let pages = || {
                parse_size(v)
                    .map(|b| b / PAGE_SIZE as u64)
                    .ok_or_else(|| format!("{k}={v}: not a size (bytes with K/M/G/T suffix)"))
            };
            let flag = || parse_bool(v).ok_or_else(|| format!("{k}={v}: expected yes or no"));
            let types = |allowed: &[&str]| -> Result<Vec<String>, String> {
                let t: Vec<String> = v
                    .split('+')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
                match t.iter().find(|x| !allowed.contains(&x.as_str())) {
                    Some(bad) => Err(format!(
                        "{k}: unknown type {bad:?} (one of {})",
                        allowed.join(", ")
                    )),
                    None => Ok(t),
                }
            };
            match k {
                "interval" => {
                    self.interval = dur()?;
                    if self.interval.is_zero() {
                        return Err("interval must be above 0".into());
                    }
                }
                "recompress-fast" => self.recompress_fast = flag()?,
                "fast-idle" => self.fast_idle_age = dur()?,
                "recompress" => self.recompress_secondary = flag()?,
                "recompress-idle" => self.recompress_idle_age = dur()?,
                "recompress-threshold" => {
                    self.recompress_threshold = parse_size(v)
                        .and_then(|b| u32::try_from(b).ok())
                        .ok_or_else(|| format!("{k}={v}: not a size in bytes"))?
                }
                "recompress-types" => {
                    self.recompress_types = types(&["idle", "huge", "huge_idle"])?
                }
                "writeback" => self.writeback = flag()?,
                "writeback-idle" => self.writeback_idle_age = dur()?,
                "writeback-types" => {
                    self.writeback_types = types(&["idle", "huge", "huge_idle", "incompressible"])?
                }
                "min-per-round" => self.min_pages = pages()?,
                "max-per-round" => self.max_pages = pages()?,
                "writeback-daily-limit" => self.daily_writeback_pages = pages()?,
                _ => return Err(format!("unknown maintenance key {k:?}")),
            }
        }
        if self.min_pages > self.max_pages {
            return Err(format!(
                "min-per-round ({} pages) is above max-per-round ({})",
                self.min_pages, self.max_pages
            ));
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_syntax() {
        let p = MaintPolicy::default()
            .apply("interval=10s, fast-idle=0,min-per-round=0 max-per-round=4M,recompress-types=idle+huge")
            .unwrap();
        assert_eq!(p.interval, Duration::from_secs(10));
        assert_eq!(p.fast_idle_age, Duration::ZERO);
        assert_eq!((p.min_pages, p.max_pages), (0, 1024));
        assert_eq!(p.recompress_types, ["idle", "huge"]);
        for bad in [
            "interval=0",
            "interval=5x",
            "foo=1",
            "writeback=maybe",
            "recompress-types=idle+tiny",
            "min-per-round=10M,max-per-round=1M",
            "interval",
            "recompress-threshold=8G",
        ] {
            assert!(MaintPolicy::default().apply(bad).is_err(), "{bad}");
        }
        let d = MaintPolicy::default();
        assert_eq!(
            (d.min_pages, d.max_pages, d.daily_writeback_pages),
            (1280, 76800, 262144)
        );
    }
}
