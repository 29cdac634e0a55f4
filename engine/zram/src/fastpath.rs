//! The fast path (zmem extension, no kernel equivalent): under write pressure
//! compress with a very fast algorithm instead of the primary, and bring those
//! slots back to the primary later with precise recompression
//! (`recompress from=ALGO`, see [`crate::recompress`]) — the scheme vivo
//! described for Android reclaim (less time in the reclaim path, no loss of
//! final ratio once the background pass has run).
//!
//! * `fast_algorithm` (RW): `algo=NAME` before `disksize` (EBUSY after,
//!   unknown name EINVAL with the list, 128 bytes or more E2BIG, as
//!   `recomp_algorithm`); `algo=` with an empty value is EINVAL; `reset`
//!   clears it. At `disksize` it becomes a fifth compressor of its own
//!   (`Meta::fast`), not one of the four priorities, and a slot it stored
//!   carries the zmem flag [`Flag::Fast`](crate::slot::Flag::Fast) (the
//!   priority bits stay 0). Read: the `comp_algorithm` list with the fast
//!   algorithm in brackets, or nothing when none is set.
//! * `fast_path` (RW): when the normal write path uses it.
//!   `mode=off|always|pressure [limit_pct=N] [rate=PAGES_PER_S]`; `limit_pct`
//!   (0..=100, default 80) compares the pool's pages with `mem_limit`
//!   (ignored while there is no mem_limit), `rate` (default 0 = off) with the
//!   write rate over the last 100 ms window. `pressure` uses the fast
//!   algorithm while either criterion holds. Settable at any time (atomics);
//!   `mode=always|pressure` on an initialised device without a fast compressor
//!   is EINVAL. Read: `mode=… limit_pct=… rate=… active=0|1 writes=N`
//!   (active: the next write would use it; writes: pages stored by the fast
//!   algorithm since `disksize`). `reset` turns it off.
//!
//! The decision on the write path reads a few atomics and, in `pressure`
//! mode, the pool's page count (an atomic in zsmalloc; zbud and z3fold take
//! their pool's read lock, as the `mem_limit` check on every write already
//! does). No lock of the device's own.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8};

use crate::device::{Meta, Zram};
use crate::idle::now_ns;
use zmem_kernel::{kstrtoull, next_args};
use zmem_kernel::{AttrError, Errno};

/// When the normal write path uses the fast algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FastMode {
    /// Never (the default); only [`Zram::write_page_fast`] does.
    Off,
    /// Every compressed write.
    Always,
    /// While the pool is above `limit_pct` of mem_limit or the write rate is
    /// above `rate`.
    Pressure,
}

impl FastMode {
    fn name(self) -> &'static str {
        match self {
            FastMode::Off => "off",
            FastMode::Always => "always",
            FastMode::Pressure => "pressure",
        }
    }
    fn from_u8(v: u8) -> FastMode {
        match v {
            1 => FastMode::Always,
            2 => FastMode::Pressure,
            _ => FastMode::Off,
        }
    }
}

/// Default pressure threshold: 80% of mem_limit.
pub const DEFAULT_LIMIT_PCT: u32 = 80;
/// Length of the write-rate window.
pub const RATE_WINDOW_NS: u64 = 100_000_000;

/// The fast-path switch of a device: all atomics.
#[derive(Debug)]
pub struct FastPath {
    mode: AtomicU8,
    limit_pct: AtomicU32,
    rate: AtomicU64,
    meter: RateMeter,
}

impl Default for FastPath {
    fn default() -> Self {
        FastPath {
            mode: AtomicU8::new(0),
            limit_pct: AtomicU32::new(DEFAULT_LIMIT_PCT),
            rate: AtomicU64::new(0),
            meter: RateMeter::default(),
        }
    }
}

impl FastPath {
    /// The current settings: mode, limit_pct, rate.
    pub fn settings(&self) -> (FastMode, u32, u64) {
        (
            FastMode::from_u8(self.mode.load(Relaxed)),
            self.limit_pct.load(Relaxed),
            self.rate.load(Relaxed),
        )
    }

    pub(crate) fn set(&self, mode: FastMode, limit_pct: u32, rate: u64) {
        self.limit_pct.store(limit_pct, Relaxed);
        self.rate.store(rate, Relaxed);
        self.mode.store(mode as u8, Relaxed);
    }

    pub(crate) fn reset(&self) {
        self.set(FastMode::Off, DEFAULT_LIMIT_PCT, 0);
    }

    /// Whether pool usage is at or above `limit_pct` of the limit (pages).
    fn usage_hot(&self, total_pages: u64, limit_pages: u64) -> bool {
        let pct = self.limit_pct.load(Relaxed) as u128;
        limit_pages != 0 && (total_pages as u128) * 100 >= (limit_pages as u128) * pct
    }

    /// The write path's decision for one write (counts the write for the
    /// rate when a rate threshold is set).
    #[inline]
    pub(crate) fn use_fast(&self, meta: &Meta, limit_pages: u64) -> bool {
        self.decide(meta, limit_pages, RateMeter::note)
    }

    /// What the next write would decide, without counting a write.
    fn active(&self, meta: &Meta, limit_pages: u64) -> bool {
        self.decide(meta, limit_pages, RateMeter::peek)
    }

    /// The decision, with `rate_at` reading the write rate (counting a write
    /// or not).
    #[inline]
    fn decide(&self, meta: &Meta, limit_pages: u64, rate_at: fn(&RateMeter, u64) -> u64) -> bool {
        match FastMode::from_u8(self.mode.load(Relaxed)) {
            FastMode::Off => false,
            FastMode::Always => true,
            FastMode::Pressure => {
                let rate = self.rate.load(Relaxed);
                (rate != 0 && rate_at(&self.meter, now_ns()) >= rate)
                    || self.usage_hot(meta.pool.total_pages(), limit_pages)
            }
        }
    }
}

/// Pages per second over a window of [`RATE_WINDOW_NS`], lock-free: a window
/// start, a count in the window and the rate of the last full window.
#[derive(Debug, Default)]
pub struct RateMeter {
    start: AtomicU64,
    count: AtomicU64,
    last: AtomicU64,
}

impl RateMeter {
    /// Count one write at `now` (ns) and return the rate estimate: the last
    /// full window's rate, or what the current window already reached if that
    /// is more (n writes within one window is at least n per window).
    pub fn note(&self, now: u64) -> u64 {
        let start = self.start.load(Relaxed);
        let n = self.count.fetch_add(1, Relaxed) + 1;
        let elapsed = now.saturating_sub(start);
        if elapsed >= RATE_WINDOW_NS {
            if self
                .start
                .compare_exchange(start, now, Relaxed, Relaxed)
                .is_ok()
            {
                let n = self.count.swap(0, Relaxed);
                let rate = per_second(n, elapsed);
                self.last.store(rate, Relaxed);
                return rate;
            }
            return self.last.load(Relaxed);
        }
        self.last.load(Relaxed).max(per_second(n, RATE_WINDOW_NS))
    }

    /// The estimate at `now` without counting a write.
    pub fn peek(&self, now: u64) -> u64 {
        let start = self.start.load(Relaxed);
        let n = self.count.load(Relaxed);
        let elapsed = now.saturating_sub(start);
        if elapsed >= RATE_WINDOW_NS {
            per_second(n, elapsed)
        } else {
            self.last.load(Relaxed).max(per_second(n, RATE_WINDOW_NS))
        }
    }
}

fn per_second(n: u64, ns: u64) -> u64 {
    if ns == 0 {
        return 0;
    }
    (n as u128 * 1_000_000_000 / ns as u128).min(u64::MAX as u128) as u64
}

impl Zram {
    /// `fast_algorithm` read.
    pub(crate) fn fast_algorithm_show(&self) -> String {
        match self.lock_config().fast_alg.as_deref() {
            Some(name) => self.backends().available_show(Some(name)),
            None => String::new(),
        }
    }

    /// `fast_algorithm` write: `algo=NAME`, before `disksize`.
    pub(crate) fn fast_algorithm_store(&self, buf: &str) -> Result<(), AttrError> {
        let mut alg = None;
        for (key, val) in next_args(buf) {
            let val = match val {
                Some(v) if !v.is_empty() => v,
                _ => {
                    return Err(AttrError::new(
                        Errno::EINVAL,
                        format!("'{key}' needs a value (key=value)"),
                    ))
                }
            };
            if key == "algo" {
                alg = Some(val);
            }
        }
        let alg =
            alg.ok_or_else(|| AttrError::new(Errno::EINVAL, "fast_algorithm needs algo=NAME"))?;
        let name = self.check_algorithm_name(&alg)?;
        let mut cfg = self.lock_config();
        if self.is_initialized() {
            return Err(AttrError::new(
                Errno::EBUSY,
                "cannot change the fast algorithm of an initialized device",
            ));
        }
        cfg.fast_alg = Some(name);
        Ok(())
    }

    /// `fast_path` read.
    pub(crate) fn fast_path_show(&self) -> String {
        let (mode, pct, rate) = self.fast_path.settings();
        let g = self.meta();
        let (active, writes) = match g.as_deref() {
            Some(m) => (
                m.fast.is_some() && self.fast_path.active(m, self.limit_pages.load(Relaxed)),
                m.stats.fast_writes.load(Relaxed),
            ),
            None => (false, 0),
        };
        format!(
            "mode={} limit_pct={pct} rate={rate} active={} writes={writes}\n",
            mode.name(),
            active as u8
        )
    }

    /// `fast_path` write: `mode=off|always|pressure [limit_pct=N] [rate=N]`;
    /// keys not given keep their value. A bare `off`/`always`/`pressure` is
    /// accepted as the mode.
    pub(crate) fn fast_path_store(&self, buf: &str) -> Result<(), AttrError> {
        let (mut mode, mut pct, mut rate) = self.fast_path.settings();
        let mut any = false;
        for (key, val) in next_args(buf) {
            any = true;
            let val = match (key.as_str(), val) {
                ("off" | "always" | "pressure", None) => key.clone(),
                (_, Some(v)) if !v.is_empty() => v,
                _ => {
                    return Err(AttrError::new(
                        Errno::EINVAL,
                        format!("'{key}' needs a value (key=value)"),
                    ))
                }
            };
            match key.as_str() {
                "mode" | "off" | "always" | "pressure" => {
                    mode = match val.as_str() {
                        "off" => FastMode::Off,
                        "always" => FastMode::Always,
                        "pressure" => FastMode::Pressure,
                        v => {
                            return Err(AttrError::new(
                                Errno::EINVAL,
                                format!("fast_path mode {v:?}: expected off, always or pressure"),
                            ))
                        }
                    }
                }
                "limit_pct" => {
                    pct = kstrtoull(&val, 10)?
                        .try_into()
                        .ok()
                        .filter(|&p: &u32| p <= 100)
                        .ok_or_else(|| {
                            AttrError::new(
                                Errno::EINVAL,
                                format!("limit_pct {val:?} is not in 0..=100"),
                            )
                        })?
                }
                "rate" => rate = kstrtoull(&val, 10)?,
                k => {
                    return Err(AttrError::new(
                        Errno::EINVAL,
                        format!("fast_path: unknown key '{k}' (mode=, limit_pct=, rate=)"),
                    ))
                }
            }
        }
        if !any {
            return Err(AttrError::new(
                Errno::EINVAL,
                "fast_path needs mode=off|always|pressure",
            ));
        }
        let g = self.meta();
        if mode != FastMode::Off && g.as_deref().is_some_and(|m| m.fast.is_none()) {
            return Err(AttrError::new(
                Errno::EINVAL,
                "fast_path: this device has no fast algorithm (set fast_algorithm before disksize)",
            ));
        }
        self.fast_path.set(mode, pct, rate);
        Ok(())
    }

    /// The fast algorithm's name, when the device has one (initialised).
    pub fn fast_algorithm(&self) -> Option<&'static str> {
        self.meta()
            .as_deref()
            .and_then(|m| m.fast.as_ref().map(|c| c.name))
    }

    /// The allocator's size class index for an object of `len` bytes
    /// (`zs_lookup_class_index`; None while uninitialised). Recompression
    /// compares these.
    pub fn size_class(&self, len: usize) -> Option<usize> {
        self.meta().as_deref().map(|m| m.pool.class_index(len))
    }

    /// The name of the algorithm that stored slot `index` (None: empty,
    /// same-filled, written back, out of range or uninitialised). A HUGE
    /// slot is named after the algorithm whose write stored it raw.
    pub fn slot_algorithm(&self, index: usize) -> Option<&'static str> {
        let g = self.meta();
        let m = g.as_deref()?;
        let s = m.table.get(index)?;
        let lock = s.lock();
        if lock.size() == 0
            || lock.test(crate::slot::Flag::Same)
            || lock.test(crate::slot::Flag::Wb)
        {
            return None;
        }
        m.stored_by(&lock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_meter_windows() {
        let m = RateMeter::default();
        let t0 = 10 * RATE_WINDOW_NS;
        // First write after a long quiet time (1 s since the epoch): 1 page/s.
        assert_eq!(m.note(t0), 1);
        // 50 writes inside one 100 ms window: at least 500 pages/s.
        let mut r = 0;
        for i in 0..50 {
            r = m.note(t0 + i * 1_000);
        }
        assert_eq!(r, 500, "50 writes counted in the window");
        // The write that closes the window counts in it: 51 over 100 ms.
        assert_eq!(m.note(t0 + RATE_WINDOW_NS), 510);
        assert_eq!(
            m.peek(t0 + RATE_WINDOW_NS + 1),
            510,
            "the last full window's rate"
        );
        // Long quiet time again: the next write sees a low rate.
        assert_eq!(m.note(t0 + 1_000 * RATE_WINDOW_NS), 0);
        assert_eq!(m.peek(t0 + 1_000 * RATE_WINDOW_NS + 1), 0);
    }
}
