//! Ctrl-C, SIGTERM and SIGHUP during a trial: they only raise a flag, so the
//! run stops at its next check and the undo list ([`crate::Guard`]) runs as
//! on any other exit.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Ctrl-C, SIGTERM and SIGHUP raise a flag instead of killing zmem, so the
/// run stops at its next check and restores everything. Dropping the watch
/// restores the previous behaviour.
pub struct SignalWatch {
    flag: Arc<AtomicBool>,
    ids: Vec<signal_hook::SigId>,
}

impl SignalWatch {
    /// Install the handlers.
    pub fn install() -> io::Result<Self> {
        let flag = Arc::new(AtomicBool::new(false));
        let mut ids = Vec::new();
        for sig in [
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
        ] {
            ids.push(signal_hook::flag::register(sig, Arc::clone(&flag))?);
        }
        Ok(SignalWatch { flag, ids })
    }

    /// A watch that never fires (library use without handlers, tests).
    pub fn inert() -> Self {
        SignalWatch {
            flag: Arc::new(AtomicBool::new(false)),
            ids: Vec::new(),
        }
    }

    /// Whether a signal arrived.
    pub fn fired(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// The flag itself (to share with a loop that polls it).
    pub fn flag(&self) -> &AtomicBool {
        &self.flag
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}
