//! The maintenance worker (zmem; the kernel leaves this to user space, as
//! Android's `mmd` and ChromeOS's `swap_management` do): every `interval`,
//! one round of
//!
//! 1. **fast-path slots back to the primary**: mark idle by `fast_idle_age`,
//!    `recompress type=idle from=FAST` (precise recompression);
//! 2. **secondary recompression** (when `recomp_algorithm` is configured):
//!    mark idle by `recompress_idle_age`, then `recompress type=T
//!    threshold=…` for each T of `recompress_types`;
//! 3. **writeback**, only through the attributes (`writeback_limit_enable`,
//!    `writeback_limit`, `idle`, `writeback T`): ENOENT, EINVAL, ENODEV or
//!    EOPNOTSUPP from them means "this device cannot write back" and the
//!    stage is skipped. The pages written (the drop of `writeback_limit`)
//!    count against a 24-hour budget.
//!
//! A stage runs only when at least `min_pages` candidate pages are idle;
//! stages 1 and 2 share `max_pages` slot attempts per round, and writeback
//! gets `min(max_pages, what is left of the daily budget)`.
//!
//! Defaults follow the published policies (shared/docs/ecosystem.md, and the
//! same values as `zmem policy`, docs/ops.md): interval 5 min (ChromeOS
//! recompression timer); recompression idle age 1 h (ChromeOS 1–6 h, Android
//! 2–4 h), threshold 1 KiB, types huge_idle, idle, huge (both); writeback
//! idle age 20 h (Android mmd / ChromeOS 20–25 h), 5–300 MiB per round and
//! 1 GiB per day (both). The fast-path idle age (60 s) is zmem's own: there
//! is no published value.
//!
//! Without access-time tracking the worker cannot mark by age; it then acts
//! on slots that stayed idle since the previous round and marks everything
//! idle at the end of each round (Android mmd's fallback, with the interval
//! as the age).
//!
//! [`Maintainer::run_once`] runs one round on the caller's thread (tests,
//! `zmem serve --maint once`); [`MaintWorker`] owns a thread that runs rounds
//! until [`MaintWorker::stop`] or drop.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::device::Zram;
use crate::recompress::{RecompressParams, RecompressReport};
use crate::streams::MAX_COMPS;
use zmem_sysfs::{AttrError, Errno};

pub use crate::maint_policy::{parse_duration, parse_size, MaintPolicy};

const DAY: Duration = Duration::from_secs(24 * 3600);

/// What a stage did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Not part of the policy (or nothing to do it with: no fast algorithm,
    /// no secondary algorithm).
    Off(String),
    /// Fewer candidates than `min_pages`, budget used up, or the device is busy.
    Skipped(String),
    /// Recompression passes ran.
    Recompressed(RecompressReport),
    /// Pages written back.
    WrittenBack(u64),
    /// The device has no (usable) writeback attributes.
    Unavailable(String),
    /// An attribute failed unexpectedly.
    Failed(String),
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stage::Off(why) => write!(f, "off ({why})"),
            Stage::Skipped(why) => write!(f, "skipped ({why})"),
            Stage::Recompressed(r) => write!(
                f,
                "{} candidates, {} attempted, {} recompressed ({} -> {} bytes), {} incompressible",
                r.candidates,
                r.attempted,
                r.recompressed,
                r.bytes_before,
                r.bytes_after,
                r.incompressible
            ),
            Stage::WrittenBack(n) => write!(f, "{n} pages written back"),
            Stage::Unavailable(why) => write!(f, "unavailable ({why})"),
            Stage::Failed(why) => write!(f, "failed ({why})"),
        }
    }
}

/// What one round did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundReport {
    /// 1 for the first round of this maintainer.
    pub round: u64,
    /// Fast-path slots back to the primary.
    pub fast: Stage,
    /// Secondary recompression.
    pub secondary: Stage,
    pub writeback: Stage,
    /// Pages still in the 24-hour writeback budget after this round.
    pub writeback_budget_left: u64,
    pub elapsed: Duration,
}

impl fmt::Display for RoundReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "round {}: fast: {}; recompress: {}; writeback: {} (daily budget left {} pages); {:.3} s",
            self.round,
            self.fast,
            self.secondary,
            self.writeback,
            self.writeback_budget_left,
            self.elapsed.as_secs_f64()
        )
    }
}

/// Runs rounds on one device and keeps the 24-hour writeback ledger.
#[derive(Debug)]
pub struct Maintainer {
    dev: Arc<Zram>,
    policy: MaintPolicy,
    rounds: u64,
    /// Pages written back per round within the last 24 h.
    ledger: VecDeque<(Instant, u64)>,
}

fn add(total: &mut RecompressReport, r: &RecompressReport) {
    total.candidates += r.candidates;
    total.attempted += r.attempted;
    total.recompressed += r.recompressed;
    total.incompressible += r.incompressible;
    total.bytes_before += r.bytes_before;
    total.bytes_after += r.bytes_after;
}

impl Maintainer {
    pub fn new(dev: Arc<Zram>, policy: MaintPolicy) -> Self {
        Maintainer {
            dev,
            policy,
            rounds: 0,
            ledger: VecDeque::new(),
        }
    }

    pub fn policy(&self) -> &MaintPolicy {
        &self.policy
    }

    pub fn device(&self) -> &Arc<Zram> {
        &self.dev
    }

    /// Pages written back in the last 24 hours.
    pub fn written_last_day(&mut self) -> u64 {
        let now = Instant::now();
        while self
            .ledger
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) >= DAY)
        {
            self.ledger.pop_front();
        }
        self.ledger.iter().map(|(_, n)| n).sum()
    }

    /// Mark idle by `age` (or act on what stayed idle since the last round
    /// when the device keeps no access times); the number of idle slots.
    fn mark(&self, age: Duration) -> Result<u64, AttrError> {
        if self.dev.tracks_access_time() {
            self.dev.mark_idle(Some(age.as_secs()))
        } else {
            Ok(self.dev.count_slots(|s| s.idle))
        }
    }

    /// One round, on the caller's thread.
    pub fn run_once(&mut self) -> RoundReport {
        let t = Instant::now();
        self.rounds += 1;
        let mut budget = self.policy.max_pages;
        let (fast, secondary) = if self.dev.is_initialized() {
            let fast = self.fast_stage(&mut budget);
            let secondary = self.secondary_stage(&mut budget);
            (fast, secondary)
        } else {
            let off = || Stage::Skipped("device not initialised".into());
            (off(), off())
        };
        let writeback = self.writeback_stage();
        if !self.dev.tracks_access_time() && self.dev.is_initialized() {
            let _ = self.dev.mark_idle(None);
        }
        let writeback_budget_left = self
            .policy
            .daily_writeback_pages
            .saturating_sub(self.written_last_day());
        RoundReport {
            round: self.rounds,
            fast,
            secondary,
            writeback,
            writeback_budget_left,
            elapsed: t.elapsed(),
        }
    }

    fn fast_stage(&self, budget: &mut u64) -> Stage {
        if !self.policy.recompress_fast {
            return Stage::Off("recompress-fast=no".into());
        }
        let Some(fast) = self.dev.fast_algorithm() else {
            return Stage::Off("no fast algorithm".into());
        };
        if let Err(e) = self.mark(self.policy.fast_idle_age) {
            return Stage::Failed(format!("idle: {e}"));
        }
        let candidates = self.dev.count_slots(|s| s.fast && s.idle);
        if candidates == 0 || candidates < self.policy.min_pages {
            return Stage::Skipped(format!(
                "{candidates} idle fast-path pages, minimum {}",
                self.policy.min_pages
            ));
        }
        if *budget == 0 {
            return Stage::Skipped("per-round maximum reached".into());
        }
        match self
            .dev
            .recompress(&RecompressParams::new().idle().from(fast).max_pages(*budget))
        {
            Ok(r) => {
                *budget = budget.saturating_sub(r.attempted);
                Stage::Recompressed(r)
            }
            Err(e) if e.errno == Errno::EAGAIN => Stage::Skipped(format!("busy: {e}")),
            Err(e) => Stage::Failed(e.to_string()),
        }
    }

    fn secondary_stage(&self, budget: &mut u64) -> Stage {
        if !self.policy.recompress_secondary || self.policy.recompress_types.is_empty() {
            return Stage::Off("recompress=no".into());
        }
        let cfg = self.dev.config();
        if cfg.comp_algs[1..MAX_COMPS].iter().all(Option::is_none) {
            return Stage::Off("no recomp_algorithm".into());
        }
        let idle = match self.mark(self.policy.recompress_idle_age) {
            Ok(n) => n,
            Err(e) => return Stage::Failed(format!("idle: {e}")),
        };
        if idle == 0 || idle < self.policy.min_pages {
            return Stage::Skipped(format!(
                "{idle} idle pages, minimum {}",
                self.policy.min_pages
            ));
        }
        let mut total = RecompressReport::default();
        for t in &self.policy.recompress_types {
            if *budget == 0 {
                break;
            }
            let cmd = format!(
                "type={t} threshold={} max_pages={}",
                self.policy.recompress_threshold, *budget
            );
            let p = match RecompressParams::parse(&cmd) {
                Ok(p) => p,
                Err(e) => return Stage::Failed(format!("recompress {cmd}: {e}")),
            };
            match self.dev.recompress(&p) {
                Ok(r) => {
                    *budget = budget.saturating_sub(r.attempted);
                    add(&mut total, &r);
                }
                Err(e) if e.errno == Errno::EAGAIN => return Stage::Skipped(format!("busy: {e}")),
                Err(e) => return Stage::Failed(format!("recompress {cmd}: {e}")),
            }
        }
        Stage::Recompressed(total)
    }

    fn writeback_stage(&mut self) -> Stage {
        if !self.policy.writeback || self.policy.writeback_types.is_empty() {
            return Stage::Off("writeback=no".into());
        }
        let left = self
            .policy
            .daily_writeback_pages
            .saturating_sub(self.written_last_day());
        let budget = left.min(self.policy.max_pages);
        if budget == 0 || budget < self.policy.min_pages {
            return Stage::Skipped(format!(
                "budget {budget} pages (daily left {left}), minimum {}",
                self.policy.min_pages
            ));
        }
        let age = self.policy.writeback_idle_age.as_secs();
        match writeback_round(
            self.dev.as_ref(),
            budget,
            age,
            self.dev.tracks_access_time(),
            &self.policy.writeback_types,
        ) {
            Ok(written) => {
                self.ledger.push_back((Instant::now(), written));
                Stage::WrittenBack(written)
            }
            Err(s) => s,
        }
    }
}

/// The attribute side of a device, so the writeback stage can be tested
/// against a device that has writeback.
pub trait AttrDevice {
    fn attr_read(&self, name: &str) -> Result<String, AttrError>;
    fn attr_write(&self, name: &str, value: &str) -> Result<(), AttrError>;
}

impl AttrDevice for Zram {
    fn attr_read(&self, name: &str) -> Result<String, AttrError> {
        self.show(name)
    }
    fn attr_write(&self, name: &str, value: &str) -> Result<(), AttrError> {
        self.store(name, value)
    }
}

fn unavailable(e: &AttrError) -> bool {
    matches!(
        e.errno,
        Errno::ENOENT | Errno::EINVAL | Errno::ENODEV | Errno::EOPNOTSUPP
    )
}

/// One writeback round through the attributes: limit the round to `budget`
/// pages (`writeback_limit_enable 1`, `writeback_limit N`), mark idle by age,
/// write back each type (EIO: the limit is used up), and return the pages
/// written (the drop of `writeback_limit`).
pub fn writeback_round(
    dev: &dyn AttrDevice,
    budget: u64,
    age_secs: u64,
    by_age: bool,
    types: &[String],
) -> Result<u64, Stage> {
    let step = |name: &str, value: &str| -> Result<(), Stage> {
        dev.attr_write(name, value).map_err(|e| {
            if unavailable(&e) {
                Stage::Unavailable(format!("{name}: {e}"))
            } else {
                Stage::Failed(format!("{name} {value}: {e}"))
            }
        })
    };
    step("writeback_limit_enable", "1")?;
    step("writeback_limit", &budget.to_string())?;
    if by_age {
        dev.attr_write("idle", &age_secs.to_string())
            .map_err(|e| Stage::Failed(format!("idle {age_secs}: {e}")))?;
    }
    for t in types {
        match dev.attr_write("writeback", t) {
            Ok(()) => {}
            // The limit is used up.
            Err(e) if e.errno == Errno::EIO => break,
            Err(e) if unavailable(&e) => {
                return Err(Stage::Unavailable(format!("writeback {t}: {e}")))
            }
            Err(e) => return Err(Stage::Failed(format!("writeback {t}: {e}"))),
        }
    }
    let left = dev
        .attr_read("writeback_limit")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .ok_or_else(|| Stage::Failed("writeback_limit: unreadable after the round".into()))?;
    Ok(budget.saturating_sub(left))
}

struct Shared {
    maint: Mutex<Maintainer>,
    stop: Mutex<bool>,
    wake: Condvar,
    last: Mutex<Option<RoundReport>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A background thread running [`Maintainer`] rounds every `interval` (the
/// first one after one interval). Stops on [`stop`](MaintWorker::stop) or drop.
pub struct MaintWorker {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for MaintWorker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaintWorker")
            .field("running", &self.thread.is_some())
            .finish()
    }
}

type Log = Box<dyn Fn(&RoundReport) + Send>;

impl MaintWorker {
    /// Start the thread; each round's report is logged on stderr.
    pub fn start(dev: Arc<Zram>, policy: MaintPolicy) -> std::io::Result<MaintWorker> {
        let name = dev.name().to_string();
        Self::start_with(
            dev,
            policy,
            Box::new(move |r| eprintln!("zmem maint {name}: {r}")),
        )
    }

    /// Start the thread with a report callback instead of stderr.
    pub fn start_with(
        dev: Arc<Zram>,
        policy: MaintPolicy,
        log: Log,
    ) -> std::io::Result<MaintWorker> {
        let interval = policy.interval;
        let shared = Arc::new(Shared {
            maint: Mutex::new(Maintainer::new(dev, policy)),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            last: Mutex::new(None),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("zmem-maint".into())
            .spawn(move || loop {
                {
                    let mut stop = lock(&s.stop);
                    let deadline = Instant::now() + interval;
                    while !*stop {
                        let now = Instant::now();
                        if now >= deadline {
                            break;
                        }
                        stop = s
                            .wake
                            .wait_timeout(stop, deadline - now)
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                    }
                    if *stop {
                        return;
                    }
                }
                let r = lock(&s.maint).run_once();
                *lock(&s.last) = Some(r.clone());
                log(&r);
            })?;
        Ok(MaintWorker {
            shared,
            thread: Some(thread),
        })
    }

    /// Run a round now on the caller's thread (between the thread's rounds).
    pub fn run_once(&self) -> RoundReport {
        let r = lock(&self.shared.maint).run_once();
        *lock(&self.shared.last) = Some(r.clone());
        r
    }

    /// The report of the last round (thread or `run_once`).
    pub fn last_report(&self) -> Option<RoundReport> {
        lock(&self.shared.last).clone()
    }

    /// Rounds run so far.
    pub fn rounds(&self) -> u64 {
        lock(&self.shared.maint).rounds
    }

    /// Whether the thread is running.
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Stop the thread and wait for it (a round in progress finishes first).
    pub fn stop(&mut self) {
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for MaintWorker {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A device whose writeback writes `per_type` pages per type until the limit.
    struct FakeWb {
        limit: RefCell<u64>,
        per_type: u64,
        log: RefCell<Vec<String>>,
    }

    impl AttrDevice for FakeWb {
        fn attr_read(&self, name: &str) -> Result<String, AttrError> {
            match name {
                "writeback_limit" => Ok(format!("{}\n", self.limit.borrow())),
                _ => Err(AttrError::new(Errno::ENOENT, "no")),
            }
        }
        fn attr_write(&self, name: &str, value: &str) -> Result<(), AttrError> {
            self.log.borrow_mut().push(format!("{name} {value}"));
            match name {
                "writeback_limit" => *self.limit.borrow_mut() = value.parse().unwrap(),
                "writeback" => {
                    let mut l = self.limit.borrow_mut();
                    if *l == 0 {
                        return Err(AttrError::new(Errno::EIO, "limit"));
                    }
                    *l -= (*l).min(self.per_type);
                }
                _ => {}
            }
            Ok(())
        }
    }

    #[test]
    fn writeback_round_uses_the_limit() {
        let types: Vec<String> = ["huge_idle", "idle", "huge"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let d = FakeWb {
            limit: RefCell::new(0),
            per_type: 40,
            log: RefCell::new(Vec::new()),
        };
        assert_eq!(writeback_round(&d, 100, 72000, true, &types), Ok(100));
        assert_eq!(
            *d.log.borrow(),
            [
                "writeback_limit_enable 1",
                "writeback_limit 100",
                "idle 72000",
                "writeback huge_idle",
                "writeback idle",
                "writeback huge"
            ]
        );
        let d = FakeWb {
            limit: RefCell::new(0),
            per_type: 10,
            log: RefCell::new(Vec::new()),
        };
        assert_eq!(writeback_round(&d, 100, 1, false, &types), Ok(30));
        assert!(
            !d.log.borrow().iter().any(|l| l.starts_with("idle")),
            "no age marking without tracking"
        );
        // A device without writeback attributes.
        let z = Zram::builder().disksize(1 << 20).build().unwrap();
        assert!(matches!(
            writeback_round(&z, 100, 1, true, &types),
            Err(Stage::Unavailable(_))
        ));
    }
}
