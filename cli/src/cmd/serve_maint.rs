//! `zmem serve --maint`: the served zram device with its maintenance worker.
//! Block I/O and attributes go to the device; one more attribute, `maint`,
//! is answered here (control socket only, not a zram attribute):
//! reading it gives the last round's report, writing `run` runs a round now
//! (`zmem ctl SOCKET maint run`), the way `--once` would.

use std::sync::{Arc, Mutex};

use zmem_zram::{MaintPolicy, MaintWorker, Zram};

use zmem_sysfs::{AttrError, BlockDevice, Errno, IoError};

/// The served device plus its maintenance worker.
pub struct Maintained {
    dev: Arc<Zram>,
    worker: Mutex<Option<MaintWorker>>,
}

impl Maintained {
    pub fn start(dev: Arc<Zram>, policy: MaintPolicy) -> anyhow::Result<Maintained> {
        let worker = MaintWorker::start(dev.clone(), policy)
            .map_err(|e| anyhow::anyhow!("--maint: cannot start the maintenance thread: {e}"))?;
        Ok(Maintained {
            dev,
            worker: Mutex::new(Some(worker)),
        })
    }

    /// Stop the worker (waits for a round in progress).
    pub fn stop(&self) {
        let w = self.worker.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(w);
    }

    /// `f` on the running worker; ENODEV once it has stopped.
    fn with_worker<R>(&self, f: impl FnOnce(&MaintWorker) -> R) -> Result<R, AttrError> {
        let g = self.worker.lock().unwrap_or_else(|e| e.into_inner());
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
            return Err(AttrError::new(
                Errno::EINVAL,
                format!("maint takes 'run', not {:?}", value.trim()),
            ));
        }
        let r = self.with_worker(|w| w.run_once())?;
        eprintln!("zmem maint {}: {r}", self.dev.name());
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
}
