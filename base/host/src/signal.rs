//! Ctrl-C, SIGTERM and SIGHUP. A run that checks for them (a trial, a tune's
//! trials, `bench zswap`) gets a flag: it stops at its next check and the undo
//! list ([`crate::Guard`]) runs as on any other exit. A run that never checks
//! (`bench`, `recommend`: the kernel rows' devices) gets
//! [`SignalWatch::install_undoing`]: the signal undoes what this process's
//! journals record (its hot-added devices) and exits, as Ctrl-C's default
//! would, without leaving a device full of captured memory behind.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// The signals that stop zmem.
const STOPPING: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

/// How long a signal's undo retries a device the run still holds open.
const UNDO_PATIENCE: Duration = Duration::from_secs(10);

/// Ctrl-C, SIGTERM and SIGHUP raise a flag instead of killing zmem, so the
/// run stops at its next check and restores everything. Dropping the watch
/// restores the previous behaviour.
pub struct SignalWatch {
    flag: Arc<AtomicBool>,
    /// The last signal that arrived (0: none).
    last: Arc<AtomicUsize>,
    ids: Vec<signal_hook::SigId>,
    undoer: Option<signal_hook::iterator::Handle>,
}

impl SignalWatch {
    /// Install the handlers.
    pub fn install() -> io::Result<Self> {
        let flag = Arc::new(AtomicBool::new(false));
        let last = Arc::new(AtomicUsize::new(0));
        let mut ids = Vec::new();
        for sig in STOPPING {
            ids.push(signal_hook::flag::register(sig, Arc::clone(&flag))?);
            ids.push(signal_hook::flag::register_usize(
                sig,
                Arc::clone(&last),
                sig as usize,
            )?);
        }
        Ok(SignalWatch {
            flag,
            last,
            ids,
            undoer: None,
        })
    }

    /// For a run that never checks the flag: the first of Ctrl-C, SIGTERM and
    /// SIGHUP stops new devices, undoes this process's crash journals in
    /// [`crate::JOURNAL_DIR`] (resets and removes the zram devices it
    /// hot-added, retrying while the run still has one open), says what it did
    /// on stderr and exits with 128 + the signal. What it could not undo stays
    /// in the journal for `zmem trial --recover`.
    pub fn install_undoing() -> io::Result<Self> {
        let mut w = Self::install()?;
        let mut signals = signal_hook::iterator::Signals::new(STOPPING)?;
        w.undoer = Some(signals.handle());
        std::thread::Builder::new()
            .name("zmem-signals".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    undo_and_exit(sig);
                }
            })?;
        Ok(w)
    }

    /// A watch that never fires (library use without handlers, tests).
    pub fn inert() -> Self {
        SignalWatch {
            flag: Arc::new(AtomicBool::new(false)),
            last: Arc::new(AtomicUsize::new(0)),
            ids: Vec::new(),
            undoer: None,
        }
    }

    /// Whether a signal arrived.
    pub fn fired(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// The status a run stopped by the signal exits with once it has undone
    /// everything: 128 + the signal, as its default action would report it
    /// (SIGTERM 143, SIGHUP 129, SIGINT 130); 130 when none is known.
    pub fn exit_status(&self) -> i32 {
        match self.last.load(Ordering::SeqCst) as i32 {
            0 => 128 + SIGINT,
            sig => 128 + sig,
        }
    }

    /// The flag itself (to share with a loop that polls it).
    pub fn flag(&self) -> &AtomicBool {
        &self.flag
    }

    /// Runs `f`, a step that never checks the flag (`zmem tune`'s lab step), as
    /// [`SignalWatch::install_undoing`] would: a signal that arrives before `f`
    /// returns (or arrived before it started) undoes this process's journals and
    /// exits with 128 + the signal, within [`WATCH_PERIOD`], instead of waiting
    /// for the step to end.
    pub fn undoing_while<T>(&self, f: impl FnOnce() -> T) -> T {
        let done = AtomicBool::new(false);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                while !done.load(Ordering::SeqCst) {
                    if self.fired() {
                        let sig = self.last.load(Ordering::SeqCst) as i32;
                        undo_and_exit(if sig == 0 { SIGTERM } else { sig });
                    }
                    std::thread::sleep(WATCH_PERIOD);
                }
            });
            let r = f();
            done.store(true, Ordering::SeqCst);
            r
        })
    }
}

/// How often [`SignalWatch::undoing_while`] looks at the flag.
pub const WATCH_PERIOD: Duration = Duration::from_millis(20);

/// Name of a stopping signal, for the message.
fn signal_name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

/// What [`SignalWatch::install_undoing`]'s thread does with a signal.
fn undo_and_exit(sig: i32) -> ! {
    crate::hotdev::stop_creating();
    release_own_devices();
    let sys = crate::Sys::real();
    let r = crate::undo::undo_own(&sys, crate::JOURNAL_DIR, UNDO_PATIENCE);
    let name = signal_name(sig);
    if !r.done.is_empty() {
        eprintln!("zmem: {name}: stopped; {}", r.done.join(", "));
    }
    for e in &r.errors {
        eprintln!(
            "zmem: {name}: could not undo {e}; run `zmem trial --recover` once zmem has exited"
        );
    }
    std::process::exit(128 + sig)
}

/// Points this process's own descriptors of the zram devices it hot-added
/// (its `PID.zramN.journal`s) at /dev/null, so the undo's reset and
/// hot_remove do not wait for a step that still holds one open (a `zmem tune`
/// lab round keeps its first device open while it fills the next; a frozen or
/// slow one held it past [`UNDO_PATIENCE`] and the device stayed). The process
/// exits right after the undo; until then the step's reads and writes on them
/// go to /dev/null.
fn release_own_devices() {
    use std::os::fd::AsRawFd;
    let prefix = format!("{}.zram", std::process::id());
    let devices: Vec<std::path::PathBuf> = std::fs::read_dir(crate::JOURNAL_DIR)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let id: u32 = name
                .strip_prefix(&prefix)?
                .strip_suffix(".journal")?
                .parse()
                .ok()?;
            Some(format!("/dev/zram{id}").into())
        })
        .collect();
    if devices.is_empty() {
        return;
    }
    let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    else {
        return;
    };
    for e in std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten()
    {
        let Ok(fd) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if std::fs::read_link(e.path()).is_ok_and(|t| devices.contains(&t)) {
            // SAFETY: dup2 atomically makes this process's descriptor `fd` refer to
            // /dev/null (closing its device file); no memory is involved, and `fd` stays a
            // valid descriptor for the code that holds it, so nothing else can be given it.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        if let Some(h) = self.undoer.take() {
            h.close();
        }
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}
