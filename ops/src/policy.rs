//! `zmem policy`: idle marking, recompression and writeback on zram devices, on a policy.
//!
//! Defaults follow Android's `mmd` and ChromeOS's `swap_management` published policies
//! (shared/docs/ecosystem.md A3 and §d):
//! * writeback: backoff 10 min; idle age 20–25 h chosen from memory utilisation as
//!   `age = (max − min)·e^(−5·util) + min`; 5–300 MiB per round, growing linearly with zram
//!   fill and capped by free backing-device space; at most 1 GiB per 24 h; huge_idle, idle and
//!   huge pages.
//! * recompression: backoff 30 min (Android; ChromeOS uses 5 min); idle age 1–6 h (ChromeOS);
//!   only objects ≥ 1 KiB (`threshold=1024`); huge_idle, idle and huge.
//!
//! Devices are driven through [`AttrTarget`], so kernel devices and `zmem serve` devices
//! (control sockets) get the same actions. Without `CONFIG_ZRAM_TRACK_ENTRY_ACTIME` the
//! kernel refuses an age in `idle`; then the policy marks all pages idle and acts on them
//! only after the idle age has passed, as Android's mmd does.

use std::collections::BTreeMap;

use crate::config::{Config, ConfigError, Entry};
use zmem_sysfs::Sys;
use zmem_sysfs::{parse_recomp_algorithm, BdStat, MmStat};
use zmem_sysfs::{AttrError, AttrTarget};
use zmem_units::{bytes, duration};

/// The policy's knobs.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Time between rounds (seconds).
    pub interval: u64,
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
    /// Only these devices (labels such as `zram0`, `serve:vm1`); empty = all.
    pub devices: Vec<String>,
    /// Where `zmem serve` control sockets are.
    pub serve_sockets: String,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            interval: 300,
            writeback: true,
            writeback_backoff: 600,
            writeback_idle_min: 20 * 3600,
            writeback_idle_max: 25 * 3600,
            writeback_min_bytes: 5 << 20,
            writeback_max_bytes: 300 << 20,
            writeback_daily_bytes: 1 << 30,
            writeback_types: vec!["huge_idle".into(), "idle".into(), "huge".into()],
            recompress: true,
            recompress_backoff: 1800,
            recompress_idle_min: 3600,
            recompress_idle_max: 6 * 3600,
            recompress_threshold: 1024,
            recompress_max_pages: None,
            recompress_types: vec!["huge_idle".into(), "idle".into(), "huge".into()],
            devices: Vec::new(),
            serve_sockets: "/run/zmem".into(),
        }
    }
}

/// `600`, `30s`, `10min`, `20h`, `1d` → seconds.
pub fn parse_duration(s: &str) -> Option<u64> {
    let s = s.trim();
    let i = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: u64 = s[..i].parse().ok()?;
    let mul = match s[i..].trim() {
        "" | "s" | "sec" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return None,
    };
    n.checked_mul(mul)
}

/// `1024`, `5MiB`, `300M`, `1GiB`, `4K` → bytes.
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
    match s.to_ascii_lowercase().as_str() {
        "y" | "yes" | "1" | "true" | "on" => Some(true),
        "n" | "no" | "0" | "false" | "off" => Some(false),
        _ => None,
    }
}

fn parse_types(s: &str) -> Option<Vec<String>> {
    let v: Vec<String> = s
        .split([',', ' '])
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect();
    v.iter()
        .all(|t| ["idle", "huge", "huge_idle"].contains(&t.as_str()))
        .then_some(v)
}

impl Policy {
    /// The [policy] section of a config, over the defaults. Devices whose
    /// compression-algorithm has a global `(type=…)` use that type for recompression.
    pub fn from_config(cfg: &Config) -> Result<Policy, ConfigError> {
        let mut p = Policy::default();
        for Entry { key, value, line } in &cfg.policy {
            let v = value.as_str();
            let e = |what: &str| cfg.err(*line, format!("{key} must be {what}, not `{v}`"));
            match key.as_str() {
                "interval" => {
                    p.interval = parse_duration(v)
                        .filter(|n| *n > 0)
                        .ok_or_else(|| e("a duration like 5min"))?
                }
                "writeback" => p.writeback = parse_bool(v).ok_or_else(|| e("yes or no"))?,
                "writeback-backoff" => {
                    p.writeback_backoff =
                        parse_duration(v).ok_or_else(|| e("a duration like 10min"))?
                }
                "writeback-idle-min" => {
                    p.writeback_idle_min =
                        parse_duration(v).ok_or_else(|| e("a duration like 20h"))?
                }
                "writeback-idle-max" => {
                    p.writeback_idle_max =
                        parse_duration(v).ok_or_else(|| e("a duration like 25h"))?
                }
                "writeback-min-per-round" => {
                    p.writeback_min_bytes = parse_size(v).ok_or_else(|| e("a size like 5MiB"))?
                }
                "writeback-max-per-round" => {
                    p.writeback_max_bytes = parse_size(v).ok_or_else(|| e("a size like 300MiB"))?
                }
                "writeback-daily-limit" => {
                    p.writeback_daily_bytes = parse_size(v).ok_or_else(|| e("a size like 1GiB"))?
                }
                "writeback-types" => {
                    p.writeback_types =
                        parse_types(v).ok_or_else(|| e("a list of huge_idle, idle, huge"))?
                }
                "recompress" => p.recompress = parse_bool(v).ok_or_else(|| e("yes or no"))?,
                "recompress-backoff" => {
                    p.recompress_backoff =
                        parse_duration(v).ok_or_else(|| e("a duration like 30min"))?
                }
                "recompress-idle-min" => {
                    p.recompress_idle_min =
                        parse_duration(v).ok_or_else(|| e("a duration like 1h"))?
                }
                "recompress-idle-max" => {
                    p.recompress_idle_max =
                        parse_duration(v).ok_or_else(|| e("a duration like 6h"))?
                }
                "recompress-threshold" => {
                    p.recompress_threshold = parse_size(v)
                        .filter(|n| *n < 4096)
                        .ok_or_else(|| e("a size below 4096 bytes"))?
                }
                "recompress-max-pages" => {
                    p.recompress_max_pages = Some(v.parse().map_err(|_| e("a number of pages"))?)
                }
                "recompress-types" => {
                    p.recompress_types =
                        parse_types(v).ok_or_else(|| e("a list of huge_idle, idle, huge"))?
                }
                "devices" => {
                    p.devices = v
                        .split([',', ' '])
                        .filter(|x| !x.is_empty())
                        .map(str::to_string)
                        .collect()
                }
                "serve-sockets" => p.serve_sockets = v.to_string(),
                _ => return Err(cfg.err(*line, format!("unknown key `{key}` in [policy]"))),
            }
        }
        if p.writeback_idle_min > p.writeback_idle_max
            || p.recompress_idle_min > p.recompress_idle_max
        {
            return Err(cfg.err(0, "[policy] idle-min must not be above idle-max"));
        }
        if p.writeback_min_bytes > p.writeback_max_bytes {
            return Err(cfg.err(
                0,
                "[policy] writeback-min-per-round must not be above writeback-max-per-round",
            ));
        }
        Ok(p)
    }
}

/// Idle age from memory utilisation (0..1): `(max − min)·e^(−5·util) + min`.
pub fn idle_age(min: u64, max: u64, util: f64) -> u64 {
    let u = util.clamp(0.0, 1.0);
    ((max - min) as f64 * (-5.0 * u).exp() + min as f64).round() as u64
}

/// Per-device memory of the daemon (kept in /run/zmem/policy.state).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceState {
    pub last_writeback: Option<u64>,
    pub last_recompress: Option<u64>,
    /// When all pages were marked idle (kernels without idle ages).
    pub marked_all_at: Option<u64>,
    /// (time, bytes) written back in the last 24 h.
    pub written: Vec<(u64, u64)>,
}

/// The state file inside the state directory (`/run/zmem`).
pub const STATE_NAME: &str = "policy.state";

pub fn state_file(sys: &Sys) -> String {
    format!("{}/{STATE_NAME}", sys.state_dir())
}

/// All devices' state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    pub devices: BTreeMap<String, DeviceState>,
}

impl State {
    pub fn load(sys: &Sys) -> State {
        let mut st = State::default();
        let text = sys
            .read_opt(&state_file(sys))
            .ok()
            .flatten()
            .unwrap_or_default();
        for l in text.lines() {
            let f: Vec<&str> = l.split('\t').collect();
            if f.len() < 3 {
                continue;
            }
            let d = st.devices.entry(f[0].to_string()).or_default();
            let n = |s: &str| s.parse::<u64>().ok();
            match f[1] {
                "last_writeback" => d.last_writeback = n(f[2]),
                "last_recompress" => d.last_recompress = n(f[2]),
                "marked_all_at" => d.marked_all_at = n(f[2]),
                "written" if f.len() >= 4 => {
                    if let (Some(t), Some(b)) = (n(f[2]), n(f[3])) {
                        d.written.push((t, b));
                    }
                }
                _ => {}
            }
        }
        st
    }
    pub fn save(&self, sys: &Sys) -> std::io::Result<()> {
        let mut s = String::from("# zmem policy state\n");
        for (k, d) in &self.devices {
            if let Some(t) = d.last_writeback {
                s.push_str(&format!("{k}\tlast_writeback\t{t}\n"));
            }
            if let Some(t) = d.last_recompress {
                s.push_str(&format!("{k}\tlast_recompress\t{t}\n"));
            }
            if let Some(t) = d.marked_all_at {
                s.push_str(&format!("{k}\tmarked_all_at\t{t}\n"));
            }
            for (t, b) in &d.written {
                s.push_str(&format!("{k}\twritten\t{t}\t{b}\n"));
            }
        }
        let p = sys.path(&state_file(sys));
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(p, s)
    }
}

/// Wraps a target so writes are only logged (`--dry-run`).
pub struct DryRun<'a>(pub &'a dyn AttrTarget);

impl AttrTarget for DryRun<'_> {
    fn label(&self) -> String {
        self.0.label()
    }
    fn read_attr(&self, name: &str) -> Result<String, AttrError> {
        self.0.read_attr(name)
    }
    fn write_attr(&self, _name: &str, _value: &str) -> Result<(), AttrError> {
        Ok(())
    }
    fn list_attrs(&self) -> Result<Vec<String>, AttrError> {
        self.0.list_attrs()
    }
}

/// Mark pages idle for an action that wants `age` seconds. Returns whether the action may go on now.
fn mark_idle(
    t: &dyn AttrTarget,
    st: &mut DeviceState,
    now: u64,
    age: u64,
    log: &mut dyn FnMut(String),
) -> bool {
    let dev = t.label();
    match t.write_attr("idle", &age.to_string()) {
        Ok(()) => {
            log(format!(
                "{dev}: write idle {age} (mark pages not accessed for {})",
                duration(age)
            ));
            true
        }
        Err(e) if e.errno == zmem_sysfs::Errno::EINVAL => {
            // No CONFIG_ZRAM_TRACK_ENTRY_ACTIME: mark all now, act after `age`.
            match st.marked_all_at {
                Some(t0) if now.saturating_sub(t0) >= age => {
                    log(format!(
                        "{dev}: pages marked idle {} ago are old enough (kernel has no idle ages)",
                        duration(now - t0)
                    ));
                    true
                }
                Some(t0) => {
                    log(format!(
                        "{dev}: waiting: pages were marked idle {} ago, need {}",
                        duration(now.saturating_sub(t0)),
                        duration(age)
                    ));
                    false
                }
                None => {
                    let r = t.write_attr("idle", "all");
                    log(format!("{dev}: write idle all (kernel has no idle ages; acting on these pages after {}): {}", duration(age), result(&r)));
                    if r.is_ok() {
                        st.marked_all_at = Some(now);
                    }
                    false
                }
            }
        }
        Err(e) => {
            log(format!("{dev}: write idle {age} failed: {e}"));
            false
        }
    }
}

fn result(r: &Result<(), AttrError>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(e) => format!("failed: {e}"),
    }
}

fn mem_util(sys: &Sys) -> f64 {
    let mi = sys.meminfo().unwrap_or_default();
    let g = |k: &str| mi.iter().find(|(n, _)| n == k).map(|(_, v)| *v as f64);
    match (g("MemTotal"), g("MemAvailable")) {
        (Some(t), Some(a)) if t > 0.0 => 1.0 - a / t,
        _ => 0.0,
    }
}

/// Free bytes on a backing block device: its size from /sys/class/block/NAME/size minus the
/// blocks in use (bd_stat bd_count) and block 0, which zram ≤ 6.18 never uses.
fn backing_free(sys: &Sys, t: &dyn AttrTarget, backing: &str) -> Option<u64> {
    let name = backing.strip_prefix("/dev/")?.rsplit('/').next()?;
    let sectors: u64 = sys
        .read(&format!("/sys/class/block/{name}/size"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let used = t
        .read_attr("bd_stat")
        .ok()
        .and_then(|s| BdStat::parse(&s))?
        .bd_count;
    Some((sectors * 512 / 4096).saturating_sub(used + 1) * 4096)
}

/// One round on one device at time `now` (seconds since the epoch).
pub fn round(
    sys: &Sys,
    p: &Policy,
    t: &dyn AttrTarget,
    st: &mut DeviceState,
    now: u64,
    recompress_types: Option<&[String]>,
    log: &mut dyn FnMut(String),
) {
    let dev = t.label();
    let attrs = match t.list_attrs() {
        Ok(a) => a,
        Err(e) => {
            log(format!("{dev}: cannot list attributes: {e}"));
            return;
        }
    };
    let mm = match t.read_attr("mm_stat").ok().and_then(|s| MmStat::parse(&s)) {
        Some(m) => m,
        None => {
            log(format!("{dev}: no readable mm_stat, skipped"));
            return;
        }
    };
    if mm.orig_data_size == 0 {
        log(format!("{dev}: empty, nothing to do"));
        return;
    }
    let util = mem_util(sys);
    let has = |a: &str| attrs.iter().any(|x| x == a);
    // Recompression.
    if p.recompress {
        let configured = t
            .read_attr("recomp_algorithm")
            .map(|s| !parse_recomp_algorithm(&s).is_empty())
            .unwrap_or(false);
        if !has("recompress") || !configured {
            log(format!(
                "{dev}: recompression skipped: {}",
                if has("recompress") {
                    "no recompression algorithm configured"
                } else {
                    "not supported (no recompress attribute; CONFIG_ZRAM_MULTI_COMP)"
                }
            ));
        } else if let Some(wait) = st
            .last_recompress
            .map(|l| (l + p.recompress_backoff).saturating_sub(now))
            .filter(|w| *w > 0)
        {
            log(format!(
                "{dev}: recompression backs off for {}",
                duration(wait)
            ));
        } else {
            let age = idle_age(p.recompress_idle_min, p.recompress_idle_max, util);
            if mark_idle(t, st, now, age, log) {
                let types = recompress_types.unwrap_or(&p.recompress_types);
                for ty in types {
                    let mut v = format!("type={ty} threshold={}", p.recompress_threshold);
                    if let Some(m) = p.recompress_max_pages {
                        v.push_str(&format!(" max_pages={m}"));
                    }
                    let before = t.read_attr("mm_stat").ok().and_then(|s| MmStat::parse(&s));
                    let r = t.write_attr("recompress", &v);
                    let after = t.read_attr("mm_stat").ok().and_then(|s| MmStat::parse(&s));
                    let gain = match (before, after) {
                        (Some(b), Some(a)) => format!(
                            ", compressed size {} → {}",
                            bytes(b.compr_data_size),
                            bytes(a.compr_data_size)
                        ),
                        _ => String::new(),
                    };
                    log(format!("{dev}: write recompress {v}: {}{gain}", result(&r)));
                }
                st.last_recompress = Some(now);
                if st.marked_all_at.is_some() {
                    st.marked_all_at = None;
                }
            }
        }
    }
    // Writeback.
    if p.writeback {
        let backing = t
            .read_attr("backing_dev")
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| s != "none" && !s.is_empty());
        st.written.retain(|(ts, _)| now.saturating_sub(*ts) < 86400);
        let used: u64 = st.written.iter().map(|(_, b)| b).sum();
        let left = p.writeback_daily_bytes.saturating_sub(used);
        let disksize: u64 = t
            .read_attr("disksize")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        let fill = if disksize > 0 {
            mm.orig_data_size as f64 / disksize as f64
        } else {
            0.0
        };
        let per_round = p.writeback_min_bytes
            + ((p.writeback_max_bytes - p.writeback_min_bytes) as f64 * fill.clamp(0.0, 1.0))
                as u64;
        let mut this_round = per_round.min(left);
        // Capped by free space on a backing block device (as ChromeOS does), when its size is known.
        let mut cap_note = None;
        if let Some(free) = backing.as_deref().and_then(|b| backing_free(sys, t, b)) {
            if free < this_round {
                cap_note = Some(format!(
                    "{dev}: backing device has {} free; this round is capped to it",
                    bytes(free)
                ));
                this_round = free;
            }
        }
        if !has("writeback") || backing.is_none() {
            log(format!(
                "{dev}: writeback skipped: {}",
                if has("writeback") {
                    "no backing device"
                } else {
                    "not supported (no writeback attribute; CONFIG_ZRAM_WRITEBACK)"
                }
            ));
        } else if let Some(wait) = st
            .last_writeback
            .map(|l| (l + p.writeback_backoff).saturating_sub(now))
            .filter(|w| *w > 0)
        {
            log(format!("{dev}: writeback backs off for {}", duration(wait)));
        } else if this_round < p.writeback_min_bytes {
            log(format!(
                "{dev}: writeback skipped: this round could write {} ({} left of the daily {}{}), below the per-round minimum {}",
                bytes(this_round),
                bytes(left),
                bytes(p.writeback_daily_bytes),
                if cap_note.is_some() { ", capped by free backing space" } else { "" },
                bytes(p.writeback_min_bytes)
            ));
        } else {
            if let Some(n) = cap_note {
                log(n);
            }
            let age = idle_age(p.writeback_idle_min, p.writeback_idle_max, util);
            if mark_idle(t, st, now, age, log) {
                let pages = this_round / 4096;
                let r1 = t.write_attr("writeback_limit_enable", "1");
                let r2 = t.write_attr("writeback_limit", &pages.to_string());
                log(format!(
                    "{dev}: write writeback_limit_enable 1: {}; writeback_limit {pages} ({}): {}",
                    result(&r1),
                    bytes(this_round),
                    result(&r2)
                ));
                let before = t.read_attr("bd_stat").ok().and_then(|s| BdStat::parse(&s));
                if r1.is_ok() && r2.is_ok() {
                    for ty in &p.writeback_types {
                        let r = t.write_attr("writeback", ty);
                        log(format!("{dev}: write writeback {ty}: {}", result(&r)));
                        if matches!(&r, Err(e) if e.errno == zmem_sysfs::Errno::EIO) {
                            log(format!("{dev}: this round's writeback budget is used up"));
                            break;
                        }
                    }
                }
                let after = t.read_attr("bd_stat").ok().and_then(|s| BdStat::parse(&s));
                let wrote = match (before, after) {
                    (Some(b), Some(a)) => a.bd_writes.saturating_sub(b.bd_writes) * 4096,
                    _ => 0,
                };
                log(format!(
                    "{dev}: wrote back {} this round; {} of the daily {} left",
                    bytes(wrote),
                    bytes(left.saturating_sub(wrote)),
                    bytes(p.writeback_daily_bytes)
                ));
                st.written.push((now, wrote));
                st.last_writeback = Some(now);
                st.marked_all_at = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_age_decays_with_utilisation() {
        assert_eq!(idle_age(72000, 90000, 0.0), 90000);
        let mid = idle_age(72000, 90000, 0.5);
        assert!(mid > 72000 && mid < 90000);
        assert_eq!(
            idle_age(72000, 90000, 1.0),
            72000 + (18000.0 * (-5.0f64).exp()).round() as u64
        );
        assert_eq!(idle_age(3600, 3600, 0.3), 3600);
    }

    #[test]
    fn units_parse() {
        assert_eq!(parse_duration("10min"), Some(600));
        assert_eq!(parse_duration("20h"), Some(72000));
        assert_eq!(parse_duration("45"), Some(45));
        assert_eq!(parse_duration("1w"), None);
        assert_eq!(parse_size("5MiB"), Some(5 << 20));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn policy_section() {
        let cfg = crate::config::parse(
            "[policy]\nwriteback-backoff = 1h\nrecompress = no\n",
            std::path::Path::new("p.conf"),
        )
        .unwrap();
        let p = Policy::from_config(&cfg).unwrap();
        assert_eq!(p.writeback_backoff, 3600);
        assert!(!p.recompress);
        let cfg = crate::config::parse(
            "[policy]\nwriteback-backof = 1h\n",
            std::path::Path::new("p.conf"),
        )
        .unwrap();
        assert_eq!(
            Policy::from_config(&cfg).unwrap_err().to_string(),
            "p.conf:2: unknown key `writeback-backof` in [policy]"
        );
    }
}
