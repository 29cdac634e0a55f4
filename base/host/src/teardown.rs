//! Teardown that waits for a busy zram device. `reset` and `hot_remove`
//! answer EBUSY while something still holds the device: udev probing it
//! right after a writer closed it, a swapoff still settling, a mount or a
//! device-mapper table on top (zram-generator #226 and #239, systemd #43015:
//! "it should retry until the device is torn down"). [`retry_busy`] retries
//! for a bounded time ([`TEARDOWN_TIMEOUT`]); when the device is still busy,
//! the error says what holds it ([`holders`]).

use std::io;
use std::time::{Duration, Instant};

use zmem_kernel::Errno;

use crate::Sys;

/// How long a reset or hot_remove of a busy device is retried.
pub const TEARDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// On a fixture tree nothing clears by itself: a short bound keeps tests quick.
const FIXTURE_TIMEOUT: Duration = Duration::from_millis(500);

const PAUSE: Duration = Duration::from_millis(50);

/// Runs `op` (a `what` of zram`id`: "reset", "hot_remove") until it does not
/// answer EBUSY or the time is up; then the error names what holds the device.
pub fn retry_busy<T>(
    sys: &Sys,
    id: u32,
    what: &str,
    mut op: impl FnMut() -> io::Result<T>,
) -> io::Result<T> {
    let limit = match sys.is_fixture() {
        true => FIXTURE_TIMEOUT,
        false => TEARDOWN_TIMEOUT,
    };
    let start = Instant::now();
    let mut retries = 0u32;
    loop {
        match op() {
            Err(e) if Errno::from_io(&e) == Errno::EBUSY => {
                if start.elapsed() >= limit {
                    return Err(io::Error::new(
                        io::ErrorKind::ResourceBusy,
                        format!(
                            "{what} zram{id}: still busy (EBUSY) after {:.1} s and {retries} retries; {}",
                            start.elapsed().as_secs_f64(),
                            holders_text(sys, id)
                        ),
                    ));
                }
                retries += 1;
                std::thread::sleep(PAUSE);
            }
            r => return r,
        }
    }
}

/// What holds zram`id`, as far as the machine shows it: swapped on, mounted,
/// a device stacked on it (`holders/`: dm, md), processes with it open.
pub fn holders(sys: &Sys, id: u32) -> Vec<String> {
    let dev = format!("/dev/zram{id}");
    let mut found = Vec::new();
    if sys
        .swaps()
        .unwrap_or_default()
        .iter()
        .any(|a| a.device == dev)
    {
        found.push(format!("swapped on (swapoff {dev})"));
    }
    for (_, at, _) in sys
        .mounts()
        .unwrap_or_default()
        .iter()
        .filter(|m| m.0 == dev)
    {
        found.push(format!("mounted at {at} (umount it)"));
    }
    if let Ok(names) = std::fs::read_dir(sys.path(&format!("/sys/block/zram{id}/holders"))) {
        for n in names.flatten() {
            found.push(format!("held by {}", n.file_name().to_string_lossy()));
        }
    }
    if !sys.is_fixture() {
        found.extend(openers(&dev));
    }
    found
}

/// The processes with `dev` open (their /proc/PID/fd links), as "pid N (comm)".
fn openers(dev: &str) -> Vec<String> {
    let mut v = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return v;
    };
    for p in procs.flatten() {
        let name = p.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        let open = fds
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == dev));
        if open {
            let comm = std::fs::read_to_string(p.path().join("comm")).unwrap_or_default();
            v.push(format!("open by pid {pid} ({})", comm.trim()));
        }
    }
    v
}

fn holders_text(sys: &Sys, id: u32) -> String {
    let h = holders(sys, id);
    match h.is_empty() {
        true => "nothing visible holds it (udev or a closing writer, probably: try again)".into(),
        false => format!("it is {}", h.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use zmem_files::testutil::ScratchDir;

    fn tree(name: &str) -> (ScratchDir, Sys) {
        let d = ScratchDir::new(name);
        let root = d.join("root");
        fs::create_dir_all(root.join("sys/block/zram1")).unwrap();
        fs::create_dir_all(root.join("sys/class/zram-control")).unwrap();
        fs::create_dir_all(root.join("proc")).unwrap();
        fs::write(root.join("sys/block/zram1/reset"), "").unwrap();
        fs::write(root.join("sys/block/zram1/disksize"), "0").unwrap();
        fs::write(root.join("sys/class/zram-control/hot_remove"), "").unwrap();
        fs::write(
            root.join("proc/swaps"),
            "Filename Type Size Used Priority\n",
        )
        .unwrap();
        fs::write(root.join("proc/mounts"), "").unwrap();
        let sys = Sys::new(&root);
        (d, sys)
    }

    #[test]
    fn a_device_busy_for_a_while_is_removed_once_it_is_free() {
        let (d, sys) = tree("teardown-transient");
        // Busy for three tries (udev probing), then free.
        fs::write(
            d.join("root/sys/class/zram-control/hot_remove.fail"),
            "EBUSY 3",
        )
        .unwrap();
        assert!(crate::knob::remove_zram(&sys, 1).unwrap());
        assert!(!d.join("root/sys/block/zram1").exists());
        let log = fs::read_to_string(d.join(&format!("root/{}", crate::FIXTURE_LOG))).unwrap();
        assert_eq!(log.matches("hot_remove zram1").count(), 4, "{log}");
    }

    #[test]
    fn a_device_that_stays_busy_is_named_with_what_holds_it() {
        let (d, sys) = tree("teardown-held");
        fs::write(
            d.join("root/proc/swaps"),
            "Filename Type Size Used Priority\n/dev/zram1 partition 1024 0 100\n",
        )
        .unwrap();
        fs::create_dir_all(d.join("root/sys/block/zram1/holders/dm-0")).unwrap();
        let e = crate::knob::remove_zram(&sys, 1).unwrap_err().to_string();
        assert!(e.contains("still busy (EBUSY)"), "{e}");
        assert!(e.contains("swapped on (swapoff /dev/zram1)"), "{e}");
        assert!(e.contains("held by dm-0"), "{e}");
        assert!(d.join("root/sys/block/zram1").exists());
    }

    #[test]
    fn other_errors_are_not_retried() {
        let (_d, sys) = tree("teardown-other");
        let mut n = 0;
        let r: io::Result<()> = retry_busy(&sys, 1, "reset", || {
            n += 1;
            Err(Errno::EINVAL.to_io())
        });
        assert_eq!(Errno::from_io(&r.unwrap_err()), Errno::EINVAL);
        assert_eq!(n, 1);
    }
}
