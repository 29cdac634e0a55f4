//! A kernel zram device that zmem hot-added itself and removes again.
//!
//! This is the only way tests, benchmarks and trials create kernel zram
//! devices: `/sys/class/zram-control/hot_add`, and on drop (also on panic or
//! error) `reset` and `hot_remove`. It never touches a device it did not create.
//! [`HotDevice::create_journaled`] also keeps a crash journal for the device
//! (`/run/zmem-trial/PID.zramN.journal`, one `zram N INODE` line), so `zmem trial
//! --recover` removes it when zmem is killed while it exists (the kernel rows
//! of `zmem bench` and `zmem verdict`).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use zmem_kernel::attr;
use zmem_kernel::MmStat;

const CONTROL: &str = "/sys/class/zram-control";

/// Set once a signal makes zmem undo its journals and exit
/// ([`crate::SignalWatch::install_undoing`]): no device is created after it.
pub(crate) static STOPPING: AtomicBool = AtomicBool::new(false);

/// Held from hot_add until the device's journal is on disk.
pub(crate) static CREATING: Mutex<()> = Mutex::new(());

/// Stop creating devices, and wait until one being created has its journal.
pub(crate) fn stop_creating() {
    STOPPING.store(true, Ordering::SeqCst);
    drop(CREATING.lock().unwrap_or_else(|e| e.into_inner()));
}

/// Why kernel zram cannot be used here; print it as the reason for a skip.
#[derive(Debug, thiserror::Error)]
#[error("kernel zram unavailable: {0}")]
pub struct KernelZramUnavailable(pub String);

/// A hot-added kernel zram device, reset and removed on drop.
#[derive(Debug)]
pub struct HotDevice {
    id: u32,
    sys: PathBuf,
    dev: PathBuf,
    /// The device's own crash journal, removed with the device.
    journal: Option<PathBuf>,
    /// Which zramN this is (`crate::zram_incarnation`, read right after hot_add).
    incarnation: Option<u64>,
}

impl HotDevice {
    /// Whether this process can create zram devices. `Err` carries the reason
    /// (not root, no zram module, no hot_add).
    pub fn available() -> Result<(), KernelZramUnavailable> {
        if !zmem_files::euid_is_root() {
            return Err(KernelZramUnavailable("not running as root".into()));
        }
        if !Path::new(CONTROL).join("hot_add").exists() {
            return Err(KernelZramUnavailable(format!(
                "{CONTROL}/hot_add not found (zram not loaded?)"
            )));
        }
        Ok(())
    }

    /// Create a new uninitialised device.
    pub fn create() -> Result<Self, KernelZramUnavailable> {
        Self::available()?;
        if STOPPING.load(Ordering::SeqCst) {
            return Err(KernelZramUnavailable(
                "zmem is stopping (a signal): no new device".into(),
            ));
        }
        let s = fs::read_to_string(Path::new(CONTROL).join("hot_add"))
            .map_err(|e| KernelZramUnavailable(format!("hot_add failed: {e}")))?;
        let id: u32 = s
            .trim()
            .parse()
            .map_err(|_| KernelZramUnavailable(format!("hot_add returned {s:?}")))?;
        let dev = HotDevice {
            id,
            sys: PathBuf::from(format!("/sys/block/zram{id}")),
            dev: PathBuf::from(format!("/dev/zram{id}")),
            journal: None,
            incarnation: crate::zram_incarnation(&crate::Sys::real(), id),
        };
        // udev may create the node a little later.
        for _ in 0..200 {
            if dev.dev.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        if !dev.dev.exists() {
            return Err(KernelZramUnavailable(format!(
                "{} did not appear",
                dev.dev.display()
            )));
        }
        Ok(dev)
    }

    /// Create a new uninitialised device with a crash journal of its own,
    /// written (and fsynced) right after hot_add made it.
    pub fn create_journaled() -> Result<Self, KernelZramUnavailable> {
        let d = {
            // A signal's undo waits for this: a device is never made without its journal.
            let _creating = CREATING.lock().unwrap_or_else(|e| e.into_inner());
            Self::create_with_journal()?
        };
        crate::journal::test_pause_point();
        Ok(d)
    }

    fn create_with_journal() -> Result<Self, KernelZramUnavailable> {
        let mut d = Self::create()?;
        let path = Path::new(crate::JOURNAL_DIR).join(format!(
            "{}.zram{}.journal",
            std::process::id(),
            d.id
        ));
        let line = crate::Action::RemoveZram(d.id, d.incarnation)
            .to_line()
            .expect("one line");
        crate::journal::write_file(&path, "", &[line]).map_err(|e| {
            KernelZramUnavailable(format!("writing the journal {}: {e}", path.display()))
        })?;
        d.journal = Some(path);
        Ok(d)
    }

    /// Create a device with `algo` and `disksize` bytes, initialised.
    pub fn with_config(algo: &str, disksize: u64) -> Result<Self, KernelZramUnavailable> {
        let d = Self::create()?;
        d.write_attr(attr::COMP_ALGORITHM, algo).map_err(|e| {
            KernelZramUnavailable(format!("kernel zram has no algorithm {algo}: {e}"))
        })?;
        d.write_attr(attr::DISKSIZE, &disksize.to_string())
            .map_err(|e| KernelZramUnavailable(format!("setting disksize failed: {e}")))?;
        Ok(d)
    }

    /// Which zramN this is: its sysfs directory's inode when it was made
    /// (what a journal records beside the number).
    pub fn incarnation(&self) -> Option<u64> {
        self.incarnation
    }

    /// Device number N of /dev/zramN.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// `/dev/zramN`.
    pub fn dev_path(&self) -> &Path {
        &self.dev
    }

    /// `/sys/block/zramN`.
    pub fn sys_path(&self) -> &Path {
        &self.sys
    }

    /// Read an attribute (without the trailing newline).
    pub fn read_attr(&self, name: &str) -> io::Result<String> {
        let s = fs::read_to_string(self.sys.join(name))?;
        Ok(s.strip_suffix('\n').unwrap_or(&s).to_string())
    }

    /// Write an attribute; the kernel's errno comes back as the io::Error.
    pub fn write_attr(&self, name: &str, value: &str) -> io::Result<()> {
        fs::write(self.sys.join(name), value)
    }

    /// mm_stat, parsed.
    pub fn mm_stat(&self) -> io::Result<MmStat> {
        let s = self.read_attr(attr::MM_STAT)?;
        MmStat::parse(&s)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("bad mm_stat {s:?}")))
    }

    /// Which algorithms the kernel offers (names from comp_algorithm).
    pub fn algorithms(&self) -> io::Result<Vec<String>> {
        Ok(self
            .read_attr(attr::COMP_ALGORITHM)?
            .split_whitespace()
            .map(|a| a.trim_matches(|c| c == '[' || c == ']').to_string())
            .collect())
    }
}

impl Drop for HotDevice {
    fn drop(&mut self) {
        // Reset frees the memory; hot_remove resets too, but both are made so a
        // busy remove still leaves the device empty. Right after a writer
        // closes the device, udev may still hold it open to probe it (both
        // answer EBUSY then): retried for a bounded time (crate::teardown),
        // the same way for every reset zmem makes, rather than left behind.
        let removed = crate::knob::remove_zram(&crate::Sys::real(), self.id);
        if self.sys.exists() {
            let why = match removed {
                Err(e) => e.to_string(),
                Ok(_) => "busy".into(),
            };
            eprintln!(
                "zmem: zram{} is still there after reset and hot_remove ({why}); remove it by hand",
                self.id
            );
        } else if let Some(j) = &self.journal {
            // Gone: the journal has nothing left to undo.
            crate::journal::discard(j);
        }
    }
}
