//! One round of the policy on one device: fast-path slots back to the primary,
//! recompression with the secondary algorithms, writeback; each stage through
//! the device's attributes only (`idle`, `recompress`, `writeback_limit`,
//! `writeback`, as drivers/block/zram/zram_drv.c defines them), and each step
//! logged as one line.

use zmem_device::AttrTarget;

use zmem_conf::{bytes, duration};
use zmem_host::Sys;
use zmem_kernel::attr;
use zmem_kernel::MmStat;
use zmem_kernel::{parse_comp_algorithm, parse_recomp_algorithm, AttrError, BdStat, Errno};

use crate::{DeviceState, Policy};

/// What a round needs to know about the machine around the device.
pub trait Env {
    /// Memory utilisation, 0..1 (1 − MemAvailable / MemTotal).
    fn mem_util(&self) -> f64;
    /// Free bytes on the backing device `backing` of `t`, when that can be known.
    fn backing_free(&self, t: &dyn AttrTarget, backing: &str) -> Option<u64>;
}

impl Env for Sys {
    fn mem_util(&self) -> f64 {
        let mi = self.meminfo().unwrap_or_default();
        let g = |k: &str| mi.iter().find(|(n, _)| n == k).map(|(_, v)| *v as f64);
        match (g("MemTotal"), g("MemAvailable")) {
            (Some(t), Some(a)) if t > 0.0 => 1.0 - a / t,
            _ => 0.0,
        }
    }

    /// A backing block device's size from /sys/class/block/NAME/size minus the
    /// blocks in use (bd_stat bd_count) and block 0, which zram ≤ 6.18 never uses.
    /// None for a backing file (its free space is the filesystem's to give).
    fn backing_free(&self, t: &dyn AttrTarget, backing: &str) -> Option<u64> {
        let name = backing.strip_prefix("/dev/")?.rsplit('/').next()?;
        let size = self.read(&format!("/sys/class/block/{name}/size")).ok()?;
        let sectors: u64 = size.trim().parse().ok()?;
        let used = t
            .read_attr(attr::BD_STAT)
            .ok()
            .and_then(|s| BdStat::parse(&s))?
            .bd_count;
        Some((sectors * 512 / 4096).saturating_sub(used + 1) * 4096)
    }
}

/// Idle age from memory utilisation (0..1): `(max − min)·e^(−5·util) + min`.
pub fn idle_age(min: u64, max: u64, util: f64) -> u64 {
    let u = util.clamp(0.0, 1.0);
    ((max - min) as f64 * (-5.0 * u).exp() + min as f64).round() as u64
}

fn result(r: &Result<(), AttrError>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(e) => format!("failed: {e}"),
    }
}

fn mm_stat(t: &dyn AttrTarget) -> Option<MmStat> {
    t.read_attr(attr::MM_STAT)
        .ok()
        .and_then(|s| MmStat::parse(&s))
}

/// One round's context on one device.
struct Round<'a> {
    p: &'a Policy,
    t: &'a dyn AttrTarget,
    dev: String,
    st: &'a mut DeviceState,
    now: u64,
    util: f64,
    log: &'a mut dyn FnMut(String),
}

/// One round on one device at time `now` (seconds since the epoch).
/// `recompress_types` overrides the policy's for this device (a device's
/// `(type=…)` recompression parameter in the configuration).
pub fn round(
    env: &dyn Env,
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
        Err(e) => return log(format!("{dev}: cannot list attributes: {e}")),
    };
    let Some(mm) = mm_stat(t) else {
        return log(format!("{dev}: no readable mm_stat, skipped"));
    };
    if mm.orig_data_size == 0 {
        return log(format!("{dev}: empty, nothing to do"));
    }
    let has = |a: &str| attrs.iter().any(|x| x == a);
    let mut r = Round {
        p,
        t,
        dev,
        st,
        now,
        util: env.mem_util(),
        log,
    };
    if p.recompress_fast && has(attr::FAST_ALGORITHM) {
        r.fast_stage();
    }
    if p.recompress {
        r.recompress_stage(
            has(attr::RECOMPRESS),
            recompress_types.unwrap_or(&p.recompress_types),
        );
    }
    if p.writeback {
        r.writeback_stage(env, &mm, has(attr::WRITEBACK));
    }
    // Compact only when the stages moved or freed objects (the holes the
    // kernel's shrinker would compact); a round that backed off leaves none.
    let moved = mm_stat(t).is_some_and(|a| {
        a.compr_data_size != mm.compr_data_size || a.mem_used_total != mm.mem_used_total
    });
    if (p.recompress_fast || p.recompress || p.writeback) && moved && has(attr::COMPACT) {
        r.compact_stage();
    }
}

impl Round<'_> {
    fn log(&mut self, line: String) {
        (self.log)(line)
    }

    /// Seconds left of a backoff that started at `last`, if any.
    fn backoff(&self, last: Option<u64>, backoff: u64) -> Option<u64> {
        last.map(|l| (l + backoff).saturating_sub(self.now))
            .filter(|w| *w > 0)
    }

    /// Mark pages idle for an action that wants `age` seconds. Returns whether the action may
    /// go on now.
    fn mark_idle(&mut self, age: u64) -> bool {
        let dev = self.dev.clone();
        match self.t.write_attr(attr::IDLE, &age.to_string()) {
            Ok(()) => {
                self.log(format!(
                    "{dev}: write idle {age} (mark pages not accessed for {})",
                    duration(age)
                ));
                true
            }
            Err(e) if e.errno == Errno::EINVAL => self.mark_all_and_wait(age),
            Err(e) => {
                self.log(format!("{dev}: write idle {age} failed: {e}"));
                false
            }
        }
    }

    /// No CONFIG_ZRAM_TRACK_ENTRY_ACTIME: mark all now, act after `age`.
    fn mark_all_and_wait(&mut self, age: u64) -> bool {
        let (dev, now) = (self.dev.clone(), self.now);
        match self.st.marked_all_at {
            Some(t0) if now.saturating_sub(t0) >= age => {
                self.log(format!(
                    "{dev}: pages marked idle {} ago are old enough (kernel has no idle ages)",
                    duration(now - t0)
                ));
                true
            }
            Some(t0) => {
                self.log(format!(
                    "{dev}: waiting: pages were marked idle {} ago, need {}",
                    duration(now.saturating_sub(t0)),
                    duration(age)
                ));
                false
            }
            None => {
                let r = self.t.write_attr(attr::IDLE, "all");
                self.log(format!(
                    "{dev}: write idle all (kernel has no idle ages; acting on these pages after {}): {}",
                    duration(age),
                    result(&r)
                ));
                if r.is_ok() {
                    self.st.marked_all_at = Some(now);
                }
                false
            }
        }
    }

    /// `recompress VALUE`, logged with the compressed size before and after.
    fn recompress(&mut self, v: &str) {
        let before = mm_stat(self.t);
        let r = self.t.write_attr(attr::RECOMPRESS, v);
        let gain = match (before, mm_stat(self.t)) {
            (Some(b), Some(a)) => format!(
                ", compressed size {} → {}",
                bytes(b.compr_data_size),
                bytes(a.compr_data_size)
            ),
            _ => String::new(),
        };
        let line = format!("{}: write recompress {v}: {}{gain}", self.dev, result(&r));
        self.log(line);
    }

    /// Recompression and writeback free objects and leave holes in zspages;
    /// the kernel's zsmalloc shrinker compacts such holes under memory
    /// pressure (`zs_shrinker_scan` → `zs_compact`, mm/zsmalloc.c). The round
    /// ends with `compact` and logs the pages it freed (mm_stat
    /// pages_compacted).
    fn compact_stage(&mut self) {
        let before = mm_stat(self.t).map(|m| m.pages_compacted);
        let r = self.t.write_attr(attr::COMPACT, "1");
        let freed = match (before, mm_stat(self.t)) {
            (Some(b), Some(a)) => format!(", {} pages freed", a.pages_compacted.saturating_sub(b)),
            _ => String::new(),
        };
        let line = format!("{}: write compact: {}{freed}", self.dev, result(&r));
        self.log(line);
    }

    /// zmem's fast path: slots the fast algorithm stored go back to the
    /// primary once idle for `fast-idle` (precise recompression, `from=`).
    fn fast_stage(&mut self) {
        let fast = self
            .t
            .read_attr(attr::FAST_ALGORITHM)
            .ok()
            .and_then(|s| parse_comp_algorithm(&s).1);
        let Some(fast) = fast else {
            let dev = self.dev.clone();
            return self.log(format!(
                "{dev}: fast-path recompression skipped: no fast algorithm"
            ));
        };
        if self.mark_idle(self.p.fast_idle) {
            let mut v = format!("type=idle from={fast}");
            if let Some(m) = self.p.recompress_max_pages {
                v.push_str(&format!(" max_pages={m}"));
            }
            self.recompress(&v);
        }
    }

    fn recompress_stage(&mut self, supported: bool, types: &[String]) {
        let dev = self.dev.clone();
        let configured = self
            .t
            .read_attr(attr::RECOMP_ALGORITHM)
            .map(|s| !parse_recomp_algorithm(&s).is_empty())
            .unwrap_or(false);
        if !supported || !configured {
            return self.log(format!(
                "{dev}: recompression skipped: {}",
                if supported {
                    "no recompression algorithm configured"
                } else {
                    "not supported (no recompress attribute; CONFIG_ZRAM_MULTI_COMP)"
                }
            ));
        }
        if let Some(wait) = self.backoff(self.st.last_recompress, self.p.recompress_backoff) {
            return self.log(format!(
                "{dev}: recompression backs off for {}",
                duration(wait)
            ));
        }
        let age = idle_age(
            self.p.recompress_idle_min,
            self.p.recompress_idle_max,
            self.util,
        );
        if !self.mark_idle(age) {
            return;
        }
        for ty in types {
            let mut v = format!("type={ty} threshold={}", self.p.recompress_threshold);
            if let Some(m) = self.p.recompress_max_pages {
                v.push_str(&format!(" max_pages={m}"));
            }
            self.recompress(&v);
        }
        self.st.last_recompress = Some(self.now);
        self.st.marked_all_at = None;
    }

    /// Bytes this round may write back: min..max per round growing with the
    /// device's fill, within what is left of the daily limit. Returns
    /// (this round, left today).
    fn writeback_budget(&mut self, mm: &MmStat) -> (u64, u64) {
        let p = self.p;
        let now = self.now;
        self.st
            .written
            .retain(|(ts, _)| now.saturating_sub(*ts) < 86400);
        let used: u64 = self.st.written.iter().map(|(_, b)| b).sum();
        let left = p.writeback_daily_bytes.saturating_sub(used);
        let disksize: u64 = self
            .t
            .read_attr(attr::DISKSIZE)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        let fill = if disksize > 0 {
            mm.orig_data_size as f64 / disksize as f64
        } else {
            0.0
        };
        let span = (p.writeback_max_bytes - p.writeback_min_bytes) as f64;
        let per_round = p.writeback_min_bytes + (span * fill.clamp(0.0, 1.0)) as u64;
        (per_round.min(left), left)
    }

    fn writeback_stage(&mut self, env: &dyn Env, mm: &MmStat, supported: bool) {
        let (p, dev) = (self.p, self.dev.clone());
        let backing = self
            .t
            .read_attr(attr::BACKING_DEV)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| s != "none" && !s.is_empty());
        let (mut this_round, left) = self.writeback_budget(mm);
        // Capped by free space on a backing block device (as ChromeOS does), when its size is known.
        let mut cap_note = None;
        if let Some(free) = backing.as_deref().and_then(|b| env.backing_free(self.t, b)) {
            if free < this_round {
                cap_note = Some(format!(
                    "{dev}: backing device has {} free; this round is capped to it",
                    bytes(free)
                ));
                this_round = free;
            }
        }
        if !supported || backing.is_none() {
            return self.log(format!(
                "{dev}: writeback skipped: {}",
                if supported {
                    "no backing device"
                } else {
                    "not supported (no writeback attribute; CONFIG_ZRAM_WRITEBACK)"
                }
            ));
        }
        if let Some(wait) = self.backoff(self.st.last_writeback, p.writeback_backoff) {
            return self.log(format!("{dev}: writeback backs off for {}", duration(wait)));
        }
        if this_round < p.writeback_min_bytes {
            return self.log(format!(
                "{dev}: writeback skipped: this round could write {} ({} left of the daily {}{}), below the per-round minimum {}",
                bytes(this_round),
                bytes(left),
                bytes(p.writeback_daily_bytes),
                if cap_note.is_some() { ", capped by free backing space" } else { "" },
                bytes(p.writeback_min_bytes)
            ));
        }
        if let Some(n) = cap_note {
            self.log(n);
        }
        let age = idle_age(p.writeback_idle_min, p.writeback_idle_max, self.util);
        if self.mark_idle(age) {
            let wrote = self.write_back(this_round);
            self.log(format!(
                "{dev}: wrote back {} this round; {} of the daily {} left",
                bytes(wrote),
                bytes(left.saturating_sub(wrote)),
                bytes(p.writeback_daily_bytes)
            ));
            self.st.written.push((self.now, wrote));
            self.st.last_writeback = Some(self.now);
            self.st.marked_all_at = None;
        }
    }

    /// Limit the device to `budget` bytes (`writeback_limit_enable`,
    /// `writeback_limit`), write back each type until the limit is used up
    /// (EIO), and return the bytes written (the growth of bd_writes).
    fn write_back(&mut self, budget: u64) -> u64 {
        let (t, dev) = (self.t, self.dev.clone());
        let pages = budget / 4096;
        let r1 = t.write_attr(attr::WRITEBACK_LIMIT_ENABLE, "1");
        let r2 = t.write_attr(attr::WRITEBACK_LIMIT, &pages.to_string());
        self.log(format!(
            "{dev}: write writeback_limit_enable 1: {}; writeback_limit {pages} ({}): {}",
            result(&r1),
            bytes(budget),
            result(&r2)
        ));
        let before = t
            .read_attr(attr::BD_STAT)
            .ok()
            .and_then(|s| BdStat::parse(&s));
        if r1.is_ok() && r2.is_ok() {
            for ty in &self.p.writeback_types {
                let r = t.write_attr(attr::WRITEBACK, ty);
                self.log(format!("{dev}: write writeback {ty}: {}", result(&r)));
                if matches!(&r, Err(e) if e.errno == Errno::EIO) {
                    self.log(format!("{dev}: this round's writeback budget is used up"));
                    break;
                }
            }
        }
        let after = t
            .read_attr(attr::BD_STAT)
            .ok()
            .and_then(|s| BdStat::parse(&s));
        match (before, after) {
            (Some(b), Some(a)) => a.bd_writes.saturating_sub(b.bd_writes) * 4096,
            _ => 0,
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
}
