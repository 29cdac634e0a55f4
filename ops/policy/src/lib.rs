//! zmem-policy, the policy engine: idle marking, recompression and writeback on zram
//! devices, in rounds. One engine for `zmem policy` (kernel devices and
//! served ones, through their control sockets) and for the maintenance worker
//! of `zmem serve --maint` (the served device in process): both drive an
//! [`AttrTarget`](zmem_device::AttrTarget) with the same [`round`].
//!
//! Defaults follow Android's `mmd` and ChromeOS's `swap_management` published
//! policies (docs/ops.md, "Policy"):
//! * writeback: backoff 10 min; idle age 20–25 h chosen from memory utilisation as
//!   `age = (max − min)·e^(−5·util) + min`; 5–300 MiB per round, growing linearly with zram
//!   fill and capped by free backing-device space; at most 1 GiB per 24 h; huge_idle, idle and
//!   huge pages.
//! * recompression: backoff 30 min (Android; ChromeOS uses 5 min); idle age 1–6 h (ChromeOS);
//!   only objects ≥ 1 KiB (`threshold=1024`); huge_idle, idle and huge.
//! * fast-path slots (zmem devices with a `fast_algorithm`): back to the primary with
//!   `recompress type=idle from=FAST` once idle for 60 s, every round. zmem's own value:
//!   there is no published one.
//!
//! Without `CONFIG_ZRAM_TRACK_ENTRY_ACTIME` the kernel refuses an age in `idle`; then the
//! policy marks all pages idle and acts on them only after the idle age has passed, as
//! Android's mmd does.
//!
//! Files: this one (the knobs and their one syntax), [`round`](fn@round) (one round on one
//! device), `state`
//! (what the engine remembers between rounds), `worker` (a thread running rounds for
//! `zmem serve --maint`). A round over every device of a machine, for
//! `zmem policy`, is zmem-admin' `round_all`.

mod round;
mod state;
mod worker;

use std::time::Duration;

use zmem_conf::{parse_bool, parse_duration, parse_size};
use zmem_kernel::page_type;

use zmem_conf::{Config, ConfigError, Entry};

pub use round::{idle_age, round, Env};
pub use state::{state_file, DeviceState, State, STATE_NAME};
pub use worker::{Maintained, Worker};

/// The policy's knobs. Times are seconds unless they are a [`Duration`].
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Time between rounds.
    pub interval: Duration,
    pub writeback: bool,
    pub writeback_backoff: u64,
    pub writeback_idle_min: u64,
    pub writeback_idle_max: u64,
    pub writeback_min_bytes: u64,
    pub writeback_max_bytes: u64,
    pub writeback_daily_bytes: u64,
    pub writeback_types: Vec<String>,
    pub recompress: bool,
    pub recompress_backoff: u64,
    pub recompress_idle_min: u64,
    pub recompress_idle_max: u64,
    pub recompress_threshold: u64,
    pub recompress_max_pages: Option<u64>,
    pub recompress_types: Vec<String>,
    /// Recompress fast-path slots back to the primary (devices with a `fast_algorithm`).
    pub recompress_fast: bool,
    /// Idle age of fast-path slots before they go back to the primary.
    pub fast_idle: u64,
    /// Only these devices (labels such as `zram0`, `serve:vm1`); empty = all.
    pub devices: Vec<String>,
    /// Where `zmem serve` control sockets are.
    pub serve_sockets: String,
}

impl Default for Policy {
    fn default() -> Policy {
        let types = || {
            [page_type::HUGE_IDLE, page_type::IDLE, page_type::HUGE]
                .map(str::to_string)
                .to_vec()
        };
        Policy {
            interval: Duration::from_secs(300),
            writeback: true,
            writeback_backoff: 600,
            writeback_idle_min: 20 * 3600,
            writeback_idle_max: 25 * 3600,
            writeback_min_bytes: 5 << 20,
            writeback_max_bytes: 300 << 20,
            writeback_daily_bytes: 1 << 30,
            writeback_types: types(),
            recompress: true,
            recompress_backoff: 1800,
            recompress_idle_min: 3600,
            recompress_idle_max: 6 * 3600,
            recompress_threshold: 1024,
            recompress_max_pages: None,
            recompress_types: types(),
            recompress_fast: true,
            fast_idle: 60,
            devices: Vec::new(),
            serve_sockets: "/run/zmem".into(),
        }
    }
}

/// `idle,huge` or `idle+huge` (the form `--maint` takes, where commas separate keys).
fn parse_types(s: &str, allowed: &[&str]) -> Option<Vec<String>> {
    let v: Vec<String> = s
        .split([',', ' ', '+'])
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect();
    v.iter().all(|t| allowed.contains(&t.as_str())).then_some(v)
}

const RECOMPRESS_TYPES: [&str; 3] = page_type::RECOMPRESS;
const WRITEBACK_TYPES: [&str; 4] = page_type::WRITEBACK;

fn seconds(v: &str) -> Option<u64> {
    parse_duration(v).ok().map(|d| d.as_secs())
}

impl Policy {
    /// Set one key of the `[policy]` vocabulary (docs/ops.md). The error says
    /// what the key takes.
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), String> {
        let e = |what: &str| format!("{key} must be {what}, not `{v}`");
        let dur = |what: &str| seconds(v).ok_or_else(|| e(what));
        let size = |what: &str| parse_size(v).map_err(|_| e(what));
        let flag = || parse_bool(v).map_err(|_| e("yes or no"));
        match key {
            "interval" => {
                self.interval = parse_duration(v)
                    .ok()
                    .filter(|d| !d.is_zero())
                    .ok_or_else(|| e("a duration like 5min"))?
            }
            "writeback" => self.writeback = flag()?,
            "writeback-backoff" => self.writeback_backoff = dur("a duration like 10min")?,
            "writeback-idle-min" => self.writeback_idle_min = dur("a duration like 20h")?,
            "writeback-idle-max" => self.writeback_idle_max = dur("a duration like 25h")?,
            "writeback-min-per-round" => self.writeback_min_bytes = size("a size like 5MiB")?,
            "writeback-max-per-round" => self.writeback_max_bytes = size("a size like 300MiB")?,
            "writeback-daily-limit" => self.writeback_daily_bytes = size("a size like 1GiB")?,
            "writeback-types" => {
                self.writeback_types = parse_types(v, &WRITEBACK_TYPES)
                    .ok_or_else(|| e("a list of huge_idle, idle, huge, incompressible"))?
            }
            "recompress" => self.recompress = flag()?,
            "recompress-backoff" => self.recompress_backoff = dur("a duration like 30min")?,
            "recompress-idle-min" => self.recompress_idle_min = dur("a duration like 1h")?,
            "recompress-idle-max" => self.recompress_idle_max = dur("a duration like 6h")?,
            "recompress-threshold" => {
                self.recompress_threshold = parse_size(v)
                    .ok()
                    .filter(|n| *n < 4096)
                    .ok_or_else(|| e("a size below 4096 bytes"))?
            }
            "recompress-max-pages" => {
                self.recompress_max_pages = Some(v.parse().map_err(|_| e("a number of pages"))?)
            }
            "recompress-types" => {
                self.recompress_types = parse_types(v, &RECOMPRESS_TYPES)
                    .ok_or_else(|| e("a list of huge_idle, idle, huge"))?
            }
            "recompress-fast" => self.recompress_fast = flag()?,
            "fast-idle" => self.fast_idle = dur("a duration like 60s")?,
            "devices" => {
                self.devices = v
                    .split([',', ' '])
                    .filter(|x| !x.is_empty())
                    .map(str::to_string)
                    .collect()
            }
            "serve-sockets" => self.serve_sockets = v.to_string(),
            _ => return Err(format!("unknown key `{key}` in [policy]")),
        }
        Ok(())
    }

    /// Limits that involve two keys.
    fn check(&self) -> Result<(), String> {
        if self.writeback_idle_min > self.writeback_idle_max
            || self.recompress_idle_min > self.recompress_idle_max
        {
            return Err("[policy] idle-min must not be above idle-max".into());
        }
        if self.writeback_min_bytes > self.writeback_max_bytes {
            return Err(
                "[policy] writeback-min-per-round must not be above writeback-max-per-round".into(),
            );
        }
        Ok(())
    }

    /// The [policy] section of a config, over the defaults.
    pub fn from_config(cfg: &Config) -> Result<Policy, ConfigError> {
        let mut p = Policy::default();
        for Entry { key, value, line } in &cfg.policy {
            p.set(key, value).map_err(|m| cfg.err(*line, m))?;
        }
        p.check().map_err(|m| cfg.err(0, m))?;
        Ok(p)
    }

    /// `key=value` pairs of the same vocabulary, separated by commas or spaces
    /// (`zmem serve --maint=interval=10min,recompress-idle-min=1h`), over `self`.
    pub fn with_spec(mut self, spec: &str) -> Result<Policy, String> {
        for item in spec
            .split([',', ' '])
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| format!("{item:?}: expected key=value"))?;
            self.set(k, v)?;
        }
        self.check()?;
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_section() {
        let cfg = zmem_conf::parse(
            "[policy]\nwriteback-backoff = 1h\nrecompress = no\n",
            std::path::Path::new("p.conf"),
        )
        .unwrap();
        let p = Policy::from_config(&cfg).unwrap();
        assert_eq!(p.writeback_backoff, 3600);
        assert!(!p.recompress);
        let cfg = zmem_conf::parse(
            "[policy]\nwriteback-backof = 1h\n",
            std::path::Path::new("p.conf"),
        )
        .unwrap();
        assert_eq!(
            Policy::from_config(&cfg).unwrap_err().to_string(),
            "p.conf:2: unknown key `writeback-backof` in [policy]"
        );
    }

    #[test]
    fn spec_syntax() {
        let p = Policy::default()
            .with_spec("interval=10s, fast-idle=0,writeback-min-per-round=0 writeback-max-per-round=4M,recompress-types=idle+huge")
            .unwrap();
        assert_eq!(p.interval, Duration::from_secs(10));
        assert_eq!(p.fast_idle, 0);
        assert_eq!((p.writeback_min_bytes, p.writeback_max_bytes), (0, 4 << 20));
        assert_eq!(p.recompress_types, ["idle", "huge"]);
        assert_eq!(
            Policy::default()
                .with_spec("interval=5ms")
                .unwrap()
                .interval,
            Duration::from_millis(5)
        );
        for bad in [
            "interval=0",
            "interval=5x",
            "foo=1",
            "writeback=maybe",
            "recompress-types=idle+tiny",
            "writeback-min-per-round=10M,writeback-max-per-round=1M",
            "interval",
            "recompress-threshold=8G",
            "writeback-max-per-round=12Q",
        ] {
            assert!(Policy::default().with_spec(bad).is_err(), "{bad}");
        }
        let d = Policy::default();
        assert_eq!(
            (
                d.writeback_min_bytes,
                d.writeback_max_bytes,
                d.writeback_daily_bytes
            ),
            (5 << 20, 300 << 20, 1 << 30)
        );
    }
}
