//! The maintenance worker of `zmem serve --maint`: a thread that runs the
//! policy's [`round`] on one served device every `interval` (the first one
//! after one interval), the same round `zmem policy` runs on kernel devices.
//! The device is driven in process through its attributes
//! ([`DeviceTarget`]); the engine's state (backoffs, daily writeback
//! ledger) lives in memory.
//!
//! [`Maintained`] serves the device with one more attribute, `maint`
//! (control socket only, not a zram attribute): reading it gives the last
//! round's log, writing `run` runs a round now.

use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use zmem_device::{AttrTarget, BlockDevice, DeviceTarget, IoError};

use zmem_host::Sys;

use zmem_kernel::{AttrError, Errno};

use crate::{round, DeviceState, Policy};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Rounds run so far and the memory between them.
struct Engine {
    target: Box<dyn AttrTarget + Send>,
    policy: Policy,
    state: DeviceState,
    rounds: u64,
}

impl Engine {
    /// One round now; its report: `round N:` and the round's log lines.
    fn run_once(&mut self) -> String {
        self.rounds += 1;
        let mut lines = vec![format!("round {}:", self.rounds)];
        let t = Instant::now();
        round(
            &Sys::real(),
            &self.policy,
            self.target.as_ref(),
            &mut self.state,
            now_secs(),
            None,
            &mut |l| lines.push(l),
        );
        lines.push(format!(
            "round {} took {:.3} s",
            self.rounds,
            t.elapsed().as_secs_f64()
        ));
        lines.join("\n")
    }
}

struct Shared {
    engine: Mutex<Engine>,
    stop: Mutex<bool>,
    wake: Condvar,
    last: Mutex<Option<String>>,
}

impl Shared {
    fn run_once(&self) -> String {
        let r = lock(&self.engine).run_once();
        *lock(&self.last) = Some(r.clone());
        r
    }

    /// Wait one interval; false when asked to stop.
    fn wait(&self, interval: std::time::Duration) -> bool {
        let mut stop = lock(&self.stop);
        let deadline = Instant::now() + interval;
        while !*stop {
            let now = Instant::now();
            if now >= deadline {
                return true;
            }
            stop = self
                .wake
                .wait_timeout(stop, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        false
    }
}

/// Each round's report goes here (stderr for `zmem serve`).
pub type Log = Box<dyn Fn(&str) + Send>;

/// A thread running rounds on one target. Stops on [`stop`](Worker::stop) or drop.
pub struct Worker {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("running", &self.thread.is_some())
            .finish()
    }
}

impl Worker {
    /// Start the thread.
    pub fn start(
        target: Box<dyn AttrTarget + Send>,
        policy: Policy,
        log: Log,
    ) -> std::io::Result<Worker> {
        let interval = policy.interval;
        let engine = Engine {
            target,
            policy,
            state: DeviceState::default(),
            rounds: 0,
        };
        let shared = Arc::new(Shared {
            engine: Mutex::new(engine),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            last: Mutex::new(None),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("zmem-maint".into())
            .spawn(move || {
                while s.wait(interval) {
                    log(&s.run_once());
                }
            })?;
        Ok(Worker {
            shared,
            thread: Some(thread),
        })
    }

    /// Run a round now on the caller's thread (between the thread's rounds); its report.
    pub fn run_once(&self) -> String {
        self.shared.run_once()
    }

    /// The report of the last round (thread or `run_once`).
    pub fn last_report(&self) -> Option<String> {
        lock(&self.shared.last).clone()
    }

    /// Rounds run so far.
    pub fn rounds(&self) -> u64 {
        lock(&self.shared.engine).rounds
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

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A served device with its maintenance worker: block I/O and attributes go
/// to the device; the attribute `maint` is answered here.
pub struct Maintained {
    dev: Arc<dyn BlockDevice>,
    worker: Mutex<Option<Worker>>,
}

impl Maintained {
    /// Start the worker on `dev` (labelled `label` in its reports), which logs each round on stderr.
    pub fn start(
        label: &str,
        dev: Arc<dyn BlockDevice>,
        policy: Policy,
    ) -> std::io::Result<Maintained> {
        let target = Box::new(DeviceTarget::new(label, dev.clone()));
        let name = label.to_string();
        let log: Log = Box::new(move |r| eprintln!("zmem maint {name}: {r}"));
        let worker = Worker::start(target, policy, log)?;
        Ok(Maintained {
            dev,
            worker: Mutex::new(Some(worker)),
        })
    }

    /// Stop the worker (waits for a round in progress).
    pub fn stop(&self) {
        let w = lock(&self.worker).take();
        drop(w);
    }

    /// `f` on the running worker; ENODEV once it has stopped.
    fn with_worker<R>(&self, f: impl FnOnce(&Worker) -> R) -> Result<R, AttrError> {
        let g = lock(&self.worker);
        let w = g
            .as_ref()
            .ok_or_else(|| AttrError::new(Errno::ENODEV, "the maintenance worker has stopped"))?;
        Ok(f(w))
    }

    fn maint_read(&self) -> Result<String, AttrError> {
        self.with_worker(|w| match w.last_report() {
            Some(r) => format!("{r}\n"),
            None => "no round yet\n".to_string(),
        })
    }

    fn maint_write(&self, value: &str) -> Result<(), AttrError> {
        if value.trim() != "run" {
            let v = value.trim();
            return Err(AttrError::new(
                Errno::EINVAL,
                format!("maint takes 'run', not {v:?}"),
            ));
        }
        let r = self.with_worker(|w| w.run_once())?;
        eprintln!("zmem maint: {r}");
        Ok(())
    }
}

impl BlockDevice for Maintained {
    fn size(&self) -> u64 {
        self.dev.size()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        self.dev.read_at(offset, buf)
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        self.dev.write_at(offset, data)
    }
    fn discard(&self, offset: u64, len: u64) -> Result<(), IoError> {
        self.dev.discard(offset, len)
    }
    fn write_zeroes(&self, offset: u64, len: u64) -> Result<(), IoError> {
        self.dev.write_zeroes(offset, len)
    }
    fn flush(&self) -> Result<(), IoError> {
        self.dev.flush()
    }
    fn attr_read(&self, name: &str) -> Result<String, AttrError> {
        match name {
            "maint" => self.maint_read(),
            n => self.dev.attr_read(n),
        }
    }
    fn attr_write(&self, name: &str, value: &str) -> Result<(), AttrError> {
        match name {
            "maint" => self.maint_write(value),
            n => self.dev.attr_write(n, value),
        }
    }
    fn attr_names(&self) -> Vec<&'static str> {
        let mut v = self.dev.attr_names();
        v.push("maint");
        v
    }
    fn attr_writable(&self) -> Vec<&'static str> {
        let mut v = self.dev.attr_writable();
        v.push("maint");
        v
    }
}
